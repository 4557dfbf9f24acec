"""The plan of a planned run as the live view's page shows it: each plan and replan with its
subtasks, each subtask as it starts, is done or fails, each check, and each strategy switch.

The manager (``agent_s.planning.manager``) reports plans, checks, switches and replans as they
happen
(``Agent(on_plan=...)``, the same events as the trajectory's ``plan.jsonl``); when a subtask
starts, is done or fails follows from them, the way the manager works through a plan: the
subtasks in dependency order, the first as soon as the plan is made, the next once a subtask's
check passed; a replan means the subtask being worked on failed, as does the run ending while
one is being worked on. ``PlanLog`` turns them into the page's ``plan`` events, each with its
``kind``: ``plan`` / ``replan`` (the subtasks, or why the reply was refused or the task found
infeasible), ``subtask`` (``status``: started, done, failed or stopped), ``check`` and
``switch``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from agent_s.planning.plan import PlanError, Subtask, topological

_TEXT = 300  # characters of a description, a detail or a reason the page shows


class PlanLog:
    """Hears the manager's events (``event``) and the run's end (``finished``); ``publish``:
    the view's, called with ``("plan", data)``."""

    def __init__(self, publish: Callable[[str, dict[str, Any]], None]) -> None:
        self._publish = publish
        self._lock = threading.Lock()
        self._queue: list[str] = []  # the current plan's subtasks not yet started, in order
        self._current: str | None = None  # the subtask being worked on

    def event(self, kind: str, data: dict[str, Any]) -> None:
        """One event of the manager (``Agent(on_plan=...)``)."""
        with self._lock:
            if kind in ("plan", "replan"):
                self._plan(kind, data)
            elif kind == "check":
                self._check(data)
            elif kind == "switch":
                self._send(
                    "switch",
                    subtask=str(data.get("subtask", "")),
                    to=str(data.get("to", "")),
                    after=_cut(data.get("after")),
                )
            else:
                self._send(kind)

    def finished(self, status: str) -> None:
        """The run ended with ``status`` (``RunStatus.value``): the subtask being worked on,
        if any, failed (or was stopped, when the run was cancelled)."""
        with self._lock:
            if self._current is not None:
                ended = "stopped" if status == "cancelled" else "failed"
                self._subtask(self._current, ended, f"the run ended: {status}")
            self._queue = []

    # -- the events ------

    def _plan(self, kind: str, data: dict[str, Any]) -> None:
        if kind == "replan" and self._current is not None:  # the subtask failed after repairs
            self._subtask(self._current, "failed", "its attempts failed: the rest is replanned")
        if not data.get("accepted"):
            self._send(kind, accepted=False, problem=_cut(data.get("problem")))
            return
        plan = data.get("plan") or {}
        if not plan.get("feasible", True):
            self._send(kind, accepted=True, feasible=False, reason=_cut(plan.get("reason")))
            return
        try:
            subtasks = topological([Subtask.model_validate(s) for s in plan.get("subtasks", ())])
        except (ValidationError, PlanError, TypeError) as err:  # not what the manager sends
            self._send(kind, accepted=True, feasible=True, subtasks=[], problem=_cut(err))
            return
        listed = [
            {
                "id": s.id,
                "description": _cut(s.description),
                "worker": s.worker,
                "depends_on": list(s.depends_on),
            }
            for s in subtasks
        ]
        self._send(kind, accepted=True, feasible=True, subtasks=listed)
        self._queue = [s.id for s in subtasks]
        self._start_next()

    def _check(self, data: dict[str, Any]) -> None:
        subtask, passed = str(data.get("subtask", "")), bool(data.get("passed"))
        self._send(
            "check",
            subtask=subtask,
            attempt=data.get("attempt"),
            by=str(data.get("by", "")),
            passed=passed,
            detail=_cut(data.get("detail")),
        )
        if passed:
            self._subtask(subtask, "done", "")
            self._start_next()

    def _start_next(self) -> None:
        if self._queue:
            self._subtask(self._queue.pop(0), "started", "")

    def _subtask(self, subtask: str, status: str, detail: str) -> None:
        self._current = subtask if status == "started" else None
        self._send("subtask", subtask=subtask, status=status, detail=detail)

    def _send(self, kind: str, **data: Any) -> None:
        self._publish("plan", {"kind": kind, **data})


def _cut(value: Any) -> str:
    text = "" if value is None else str(value)
    return text if len(text) <= _TEXT else text[: _TEXT - 1] + "…"


__all__ = ["PlanLog"]
