"""Planning: a task's plan as a graph of subtasks, and the manager that runs it.

``plan`` (the plan read from the model's reply and checked before use), ``manager`` (plan once,
run the subtasks in order, check each, repair, replan: bounded).

May use: actions, models, record, coding, prompting. Used by: the loop, the live view, cli.
"""

from agent_s._moved import forward

# what the old module of this name held, for one release (agent_s._moved)
__getattr__ = forward(__name__, "agent_s.planning.plan")
