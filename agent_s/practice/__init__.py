"""Practice: the model proposes tasks for an application, the agent attempts them on a
virtual desktop, and checks decide what memory learns.

``session`` (the practice run), ``worker`` (one desktop per worker process), ``curriculum``
(the proposals and their checks, contained).

May use: the loop, memory, bench (desktops), coding, safety. Used by: cli.
"""

from agent_s._moved import forward

# what the old module of this name held, for one release (agent_s._moved)
__getattr__ = forward(__name__, "agent_s.practice.session")
