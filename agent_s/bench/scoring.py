"""Scoring exactly as OSWorld: postconfig first, then infeasible / fail rules, then the metrics.

1. the evaluator's ``postconfig`` steps run (saving files, exporting, closing windows);
2. ``func: "infeasible"`` scores 1 when the agent's last action was FAIL, else 0;
3. any other task scores 0 when the agent ended with FAIL;
4. each func gets ``metric(result, expected, **options)`` (``expected`` only when given);
   a list combines by ``conj``: "and" -> 0 at the first 0, else the mean; "or" -> 1 at the
   first 1, else the max.

A getter that needs the file cache raises ``NeedsFileCache``: the task is skipped, not scored.
A getter or metric that raises scores 0 for that func, with the error kept in the details
(``Score.error``); the harness then records the task as an error, not as the agent's 0.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from agent_s.bench.getters import GETTERS, GetterContext
from agent_s.bench.metrics import call_metric
from agent_s.bench.tasks import SetupStep, Task

_METRIC_ERRORS = (
    OSError,
    ValueError,
    KeyError,
    TypeError,
    IndexError,
    AttributeError,
    NotImplementedError,
    subprocess.TimeoutExpired,
)
LastAction = Literal["DONE", "FAIL", "WAIT", "OTHER"] | None


@dataclass(frozen=True)
class FuncScore:
    func: str
    score: float
    result: str = ""  # a short text of what the getter read, for the report
    error: str = ""


@dataclass(frozen=True)
class Score:
    value: float
    parts: tuple[FuncScore, ...] = ()
    note: str = ""

    @property
    def error(self) -> str:
        """The first func whose getter or metric raised, and why ("" if none did)."""
        return next((f"{p.func}: {p.error}" for p in self.parts if p.error), "")

    def to_json(self) -> dict[str, Any]:
        return {"score": self.value, "note": self.note, "parts": [asdict(p) for p in self.parts]}


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 300 else text[:297] + "..."


def _get(ctx: GetterContext, spec: Mapping[str, Any] | None) -> Any:
    if spec is None:
        return None
    kind = spec["type"]
    if kind not in GETTERS:
        raise KeyError(f"no getter {kind!r}")
    return GETTERS[kind](ctx, spec)


def combine(scores: Sequence[float], conj: str) -> float:
    """OSWorld's combination of a list of func scores (all computed)."""
    if conj == "and":
        return 0.0 if any(s == 0.0 for s in scores) else sum(scores) / len(scores)
    return 1.0 if any(s == 1.0 for s in scores) else max(scores)


def evaluate(
    task: Task,
    last_action: LastAction,
    ctx: GetterContext,
    run_postconfig: Callable[[Sequence[SetupStep]], None],
) -> Score:
    """Score a finished task (see the module docstring)."""
    ev = task.evaluator
    run_postconfig(ev.postconfig)
    if ev.infeasible:
        value = 1.0 if last_action == "FAIL" else 0.0
        return Score(
            value,
            (FuncScore("infeasible", value, str(last_action)),),
            "infeasible: 1 only when the last action was fail",
        )
    if last_action == "FAIL":
        return Score(0.0, (), "the agent ended with fail on a feasible task")
    parts: list[FuncScore] = []
    for i, func in enumerate(ev.funcs):
        try:
            result = _get(ctx, ev.results[i])
            expected = _get(ctx, ev.expected[i])
            value = call_metric(func, result, expected, dict(ev.options[i]))
            parts.append(FuncScore(func, value, _short(result)))
        except _METRIC_ERRORS as err:
            value = 0.0
            parts.append(FuncScore(func, 0.0, "", f"{type(err).__name__}: {err}"[:300]))
        if ev.conj == "and" and value == 0.0:
            return Score(0.0, tuple(parts))
        if ev.conj == "or" and value == 1.0:
            return Score(1.0, tuple(parts))
    return Score(combine([p.score for p in parts], ev.conj), tuple(parts))


__all__ = ["FuncScore", "LastAction", "Score", "combine", "evaluate"]
