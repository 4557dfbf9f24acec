"""Replay and workflows: a recorded run carried out again, every target grounded again on the
screen as it is now, with no model unless it diverges and ``--heal`` hands the rest to the agent.

``script`` (``Script``, ``script_of``: the recorded steps to carry out again), ``player``
(``replay``, ``Replayer``, ``ReplayResult``: a script carried out on the desktop),
``workflow`` (``Workflow``: a run kept in memory with its values as parameters, run again with
new ones), ``reuse`` (``Reuse``: the ``Agent`` option that replays a verified workflow a new
task matches before the model is asked, and asks it only from the first divergence).

May use: the loop, grounding, memory, record, safety, settings, desktop. Used by: cli, mcp.
"""

from agent_s._moved import forward

# what the old module of this name held, for one release (agent_s._moved)
__getattr__ = forward(__name__, "agent_s.replay.player", "agent_s.replay.workflow")
