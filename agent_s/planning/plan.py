"""A task's plan: a graph of subtasks, read from the model's reply and checked before use.

    plan = parse_plan(reply_text)          # PlanError (with feedback for the model) if invalid
    plan.feasible, plan.reason             # the feasibility gate's decision
    for subtask in plan.order(): ...       # dependencies first, the listed order otherwise

The planner answers with one JSON object (prompts/planner.md)::

    {"feasible": true, "reason": "",
     "subtasks": [{"id": "note", "description": "...", "depends_on": [],
                   "evidence": "what shows it is done", "worker": "gui",
                   "check": {"kind": "file", "path": "~/notes.txt", "contains": "42"}}]}

A plan is refused, with a sentence the model can act on, when it is empty (and feasible), names
an id twice, depends on an id it does not list, or has a cycle (the cycle is named). Checks are
data, never code run by us: ``file`` (a file exists, optionally containing a text), ``window``
(a window whose title contains a text is open) and ``command`` (an argv list, run only by the
code agent's contained runner, behind the safety gate, when the code agent is switched on).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    model_validator,
)

from agent_s.settings.config import PLAN_MODES, PlanMode, PlanSettings

Worker = Literal["gui", "code"]
#: ``auto`` plans up front when the task has at least this many words.
LONG_TASK_WORDS = 30
MAX_SUBTASKS = 12
_ID = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$"


class PlanError(ValueError):
    """The reply is no usable plan; ``str(err)`` is the feedback sent back to the model."""


class FileCheck(BaseModel):
    """Done when the file exists (``~`` is the task's home) and, if given, contains ``contains``."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: Literal["file"]
    path: str = Field(min_length=1, max_length=500)
    contains: str | None = Field(default=None, max_length=2000)


class WindowCheck(BaseModel):
    """Done when an open window's title contains ``title_contains`` (case-insensitive)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: Literal["window"]
    title_contains: str = Field(min_length=1, max_length=300)


class CommandCheck(BaseModel):
    """Done when this command exits 0 (run by the code agent's contained runner only)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: Literal["command"]
    argv: tuple[str, ...] = Field(min_length=1, max_length=64)


Check = Annotated[FileCheck | WindowCheck | CommandCheck, Field(discriminator="kind")]


class Subtask(BaseModel):
    """One node of the plan: what to do, what shows it is done, and who should do it."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    id: str = Field(pattern=_ID)
    description: str = Field(min_length=1, max_length=1000)
    depends_on: tuple[str, ...] = ()
    evidence: str = Field(default="", max_length=1000)
    worker: Worker = "gui"
    check: Check | None = None


class Plan(BaseModel):
    """The planner's answer: the feasibility decision and, when feasible, the subtask graph."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    feasible: bool = True
    reason: str = Field(default="", max_length=2000)
    subtasks: tuple[Subtask, ...] = Field(default=(), max_length=MAX_SUBTASKS)

    @model_validator(mode="after")
    def _graph(self, info: ValidationInfo) -> Plan:
        if not self.feasible:
            if not self.reason.strip():
                raise ValueError("an infeasible plan must give its reason")
            return self
        done = (info.context or {}).get("done", ())  # a replan's finished subtasks
        problem = graph_problem(self.subtasks, done)
        if problem:
            raise ValueError(problem)
        return self

    def order(self) -> list[Subtask]:
        """The subtasks with every dependency before its dependents; ties in listed order."""
        return topological(self.subtasks)

    def ids(self) -> tuple[str, ...]:
        return tuple(s.id for s in self.subtasks)


def graph_problem(subtasks: Sequence[Subtask], done: Iterable[str] = ()) -> str | None:
    """Why ``subtasks`` is no usable graph (None when it is); ``done``: ids of finished
    subtasks a replan may still depend on."""
    if not subtasks:
        return "the plan has no subtasks; give at least one, or set feasible to false"
    finished = set(done)
    seen: set[str] = set()
    for subtask in subtasks:
        if subtask.id in seen or subtask.id in finished:
            return f"the subtask id {subtask.id!r} is used twice; give each subtask its own id"
        seen.add(subtask.id)
    for subtask in subtasks:
        for dep in subtask.depends_on:
            if dep == subtask.id:
                return f"subtask {subtask.id!r} depends on itself"
            if dep not in seen and dep not in finished:
                return (
                    f"subtask {subtask.id!r} depends on {dep!r}, which is not in the plan; "
                    "depend only on listed ids"
                )
    cycle = find_cycle(subtasks)
    if cycle:
        return "the dependencies form a cycle: " + " -> ".join([*cycle, cycle[0]])
    return None


def find_cycle(subtasks: Sequence[Subtask]) -> list[str]:
    """One dependency cycle among ``subtasks`` (ids in order), or [] when there is none."""
    deps = {s.id: [d for d in s.depends_on if d in {t.id for t in subtasks}] for s in subtasks}
    state: dict[str, int] = {}  # 1: on the current path, 2: finished
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for dep in deps[node]:
            if state.get(dep) == 1:
                return path[path.index(dep) :]
            if dep not in state and (found := visit(dep)):
                return found
        path.pop()
        state[node] = 2
        return []

    for subtask in subtasks:
        if subtask.id not in state and (found := visit(subtask.id)):
            return found
    return []


def topological(subtasks: Sequence[Subtask]) -> list[Subtask]:
    """Kahn's order, taking the earliest listed ready subtask each time (deps outside the list
    count as met)."""
    ids = {s.id for s in subtasks}
    waiting = {s.id: {d for d in s.depends_on if d in ids} for s in subtasks}
    ordered: list[Subtask] = []
    placed: set[str] = set()
    while len(ordered) < len(subtasks):
        ready = [s for s in subtasks if s.id not in placed and waiting[s.id] <= placed]
        if not ready:
            raise PlanError("the dependencies form a cycle")
        ordered.append(ready[0])
        placed.add(ready[0].id)
    return ordered


def is_long(task: str) -> bool:
    """Whether ``auto`` plans ``task`` before its first action."""
    return len(task.split()) >= LONG_TASK_WORDS


_FENCE = re.compile(r"```(?:json)?\s*\n(.*?)```", re.DOTALL)


def _json_text(text: str) -> str:
    fenced = _FENCE.findall(text)
    if fenced:
        return str(fenced[-1]).strip()
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        raise PlanError(
            "the reply has no JSON object; answer with the plan as one JSON object in a "
            "```json block"
        )
    return text[start : end + 1]


def parse_plan(text: str, *, done: Iterable[str] = ()) -> Plan:
    """The plan in a planner reply; ``done``: ids of subtasks already finished (a replan may
    depend on them but not reuse them). Raises ``PlanError`` with feedback for the model."""
    try:
        data = json.loads(_json_text(text))
    except json.JSONDecodeError as err:
        raise PlanError(f"the plan is not valid JSON ({err.msg} at char {err.pos})") from None
    if not isinstance(data, dict):
        raise PlanError("the plan must be one JSON object with feasible, reason and subtasks")
    try:
        return Plan.model_validate(data, context={"done": tuple(done)})
    except ValidationError as err:
        raise PlanError(_first_problem(err)) from None


def _first_problem(err: ValidationError) -> str:
    first = err.errors()[0]
    where = ".".join(str(part) for part in first["loc"])
    message = str(first["msg"]).removeprefix("Value error, ")
    return f"{where}: {message}" if where else message


__all__ = [
    "LONG_TASK_WORDS",
    "PLAN_MODES",
    "PlanMode",
    "PlanSettings",
    "is_long",
    "Check",
    "CommandCheck",
    "FileCheck",
    "Plan",
    "PlanError",
    "Subtask",
    "WindowCheck",
    "Worker",
    "find_cycle",
    "graph_problem",
    "parse_plan",
    "topological",
]
