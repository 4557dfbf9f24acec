"""Memory as one agent uses it: the prompts' memory sections, and learning when a run ends.

    memory = RunMemory(store, lambda: agent.settings.memory)
    memory.section("planner", task, "plan", folder=run_dir)   # "" when nothing relevant
    memory.learn(result, steps, events, redactor.data)        # when the run has ended

The planner's request, the code agent's first message and (when no plan is made) the worker's
first request get at most ``MemoryConfig.k`` entries each (``agent_s.memory.recall``), in the
template's ``memory`` section, which says they are data and advice, not instructions, between
lines that carry a nonce fresh for each request (``agent_s.memory.recall``). When a run ends
with a trajectory folder, ``learn`` stores its summary, lessons and, when its ``--check``
passed (``RunResult.verified``: the user's check), skills (``agent_s.memory.learn``), from the
``Step``s the loop holds (redacted as its trajectory is), not by reading the folder back. A
harness that verifies runs itself (an evaluator's score) turns ``MemoryConfig.learn`` off and calls
``learn_from_run`` with its own verdict.

A memory file that cannot be read or written never ends a run: ``problems`` says what failed.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agent_s.guards.trust import nonce
from agent_s.memory.entries import Kind, MemoryStoreError
from agent_s.memory.learn import learn, run_of_steps
from agent_s.memory.recall import Recall
from agent_s.memory.store import MemoryStore
from agent_s.prompting import load_template
from agent_s.record.result import RunResult
from agent_s.record.step import Step
from agent_s.settings.config import MemoryConfig


class RunMemory:
    """One agent's use of a memory store (see the module docstring)."""

    def __init__(self, store: MemoryStore, config: Callable[[], MemoryConfig]) -> None:
        self.store = store
        self._config = config
        self.problems: list[str] = list(store.notices)  # e.g. entries a migration unverified
        self.learned: list[int] = []  # the ids the last run stored

    @property
    def config(self) -> MemoryConfig:
        return self._config()

    def section(
        self,
        role: str,
        query: str,
        purpose: str,
        *,
        folder: Path | None = None,
        after_step: int = 0,
        kinds: Sequence[Kind] | None = None,
    ) -> str:
        """``role``'s ``memory`` section with the entries relevant to ``query``, or "". The
        code agent is shown skills first, then lessons (a summary of a whole run is for the
        planner and the worker)."""
        recall = Recall(self.store, self.config)
        mark = nonce()  # fresh for this request: no stored text can imitate its headers
        code = role == "code_agent"
        if code and kinds is None:
            kinds = ("skill", "lesson")
        count, items = recall.items(
            query,
            purpose,
            folder=folder,
            after_step=after_step,
            kinds=kinds,
            first=("skill",) if code else (),
            mark=mark,
        )
        self.problems += recall.problems
        if not count:
            return ""
        return load_template(role).render("memory", count=count, items=items, nonce=mark)

    def learn(
        self,
        result: RunResult,
        steps: Sequence[Step],
        events: Sequence[dict[str, Any]],
        redact: Callable[[Any], Any],
    ) -> list[int]:
        """Store what the run that ended as ``result`` teaches, from its ``steps`` and plan
        ``events`` (``redact``: the run's redaction); the ids."""
        self.learned = []
        config = self.config
        if not (config.learn and config.write) or result.trajectory_dir is None:
            return []
        run = run_of_steps(result.trajectory_dir.name, steps, events, result, redact)
        try:
            self.learned = learn(self.store, run, result, verified=result.verified)
        except (MemoryStoreError, sqlite3.Error, OSError, ValueError) as err:
            self.problems.append(f"memory could not learn from the run: {err}")
        return self.learned


__all__ = ["RunMemory"]
