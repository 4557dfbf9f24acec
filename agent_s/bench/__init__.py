"""The benchmark harness: OSWorld task files run on local virtual desktops, scored as OSWorld.

Modules: ``tasks`` (task files, index files, suites), ``environment`` (one task's desktop and
its setup steps), ``getters`` and ``metrics`` (what is read and how it is scored),
``scoring`` (OSWorld's rules), ``policies`` (agent, reference, noop), ``worker`` (one task per
process), ``runner`` (parallel runs, resume, results layout), ``report``, ``check``.

May use: the loop, bestofn, view, memory, grounding and everything below them. Used by: cli,
practice (its desktops), report (reading a results folder).
"""

from agent_s.bench.tasks import Suite, Task, load_index, load_suite, load_task

__all__ = ["Suite", "Task", "load_index", "load_suite", "load_task"]
