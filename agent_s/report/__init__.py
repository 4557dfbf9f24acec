"""Reports and exports: a recorded run (or a bench results folder) as a page to read, or in
another tool's format.

``run`` (which folder, the page of one run), ``steps`` (a card per step), ``overlay`` (the
action drawn on its screenshot), ``plan``, ``bench`` (the index of a results folder),
``bestof`` (a best-of run's pick and attempts), ``html`` (the page's parts, escaped),
``export`` (OSWorld's traj.jsonl, OpenAI and Anthropic message lists).

May use: record, guards, bench (reading results). Used by: cli, bench.
"""

from agent_s._moved import forward

# what the old module of this name held, for one release (agent_s._moved)
__getattr__ = forward(
    __name__, "agent_s.report.run", "agent_s.report.pages", "agent_s.report.attempts"
)
