"""The coding sub-agent and what keeps its code in.

``agent`` (``CodeAgent``: write code -> run -> read, bounded), ``runner`` (one block of Python
or Bash, bounded in time, memory and output), ``containment`` (bubblewrap by default: what the
code can see and reach, and that nothing it starts outlives it), ``launcher`` (the first process
inside the wrapper; run as a file, it imports nothing of agent_s).

May use: models, settings, guards, safety. Used by: the loop, practice, planning, doctor.
"""
