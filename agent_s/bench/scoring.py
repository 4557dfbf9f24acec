"""Scoring exactly as OSWorld: postconfig first, then infeasible / fail rules, then the metrics.

1. the evaluator's ``postconfig`` steps run (saving files, exporting, closing windows);
2. ``func: "infeasible"`` scores 1 when the agent's last action was FAIL, else 0;
3. any other task scores 0 when the agent ended with FAIL;
4. each func gets ``metric(result, expected, **options)``; a list combines by ``conj``:
   "and" -> 0 at the first 0, else the mean; "or" -> 1 at the first 1, else the max.

``expected`` is passed as OSWorld passes it: for a single func whenever the task has a
non-empty ``expected`` spec (even when its getter found nothing, ``None``); for a list, only
when that func's getter gave something. An empty spec (``"expected": {}``) is no spec.

A getter that needs the file cache raises ``NeedsFileCache``: the task is skipped, not scored.

A *result* getter that raises ``FileNotFoundError`` is what OSWorld's ``evaluate`` catches:
a single func, or a func of an "and" list, then scores 0 (a verdict: the file the agent
should have made is not there). Under "or" OSWorld goes on to the func's metric with the
result it last read: the previous func's, so a later func is scored on that; at the first
func there is none, OSWorld's metric call fails and the task is not scored.

Any other getter or metric that raises (an ``expected`` getter's or a metric's
``FileNotFoundError`` too, which OSWorld does not catch) ends the evaluation at once, as in
OSWorld (where the exception leaves the task without a result, to be run again): the
``Score`` carries the error (``Score.error``, value 0 but not a verdict) and the harness
records the task as an error, never as the agent's 0, even under "or" where a later func
might have passed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from agent_s.bench.getters import GetterContext, NeedsFileCache
from agent_s.bench.metrics import call_metric
from agent_s.bench.registry import GETTERS
from agent_s.bench.tasks import SetupStep, Task

LastAction = Literal["DONE", "FAIL", "WAIT", "OTHER"] | None
_NOT_READ = object()  # no result getter has given a value yet


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
    if not spec:  # no spec, or OSWorld's empty ``{}``: nothing to get
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
    result: Any = _NOT_READ  # OSWorld's result state, kept from one func to the next
    for i, func in enumerate(ev.funcs):
        reused = ""
        try:
            try:
                result = _get(ctx, ev.results[i])
            except FileNotFoundError as err:
                if not ev.is_list or ev.conj == "and":
                    parts.append(FuncScore(func, 0.0, f"no file: {err}"[:300]))
                    return Score(0.0, tuple(parts), "the result getter found no file: 0")
                if result is _NOT_READ:
                    raise  # "or" at the first func: OSWorld has no result to give the metric
                reused = "(the previous func's result) "
            expected = _get(ctx, ev.expected[i])
            # OSWorld: a single func gets ``expected`` whenever its spec is there, a func of a
            # list only when the getter gave something
            given = expected is not None if ev.is_list else bool(ev.expected[i])
            value = call_metric(func, result, expected, dict(ev.options[i]), pass_expected=given)
            parts.append(FuncScore(func, value, reused + _short(result)))
        except NeedsFileCache:
            raise  # the task is skipped, not scored
        except Exception as err:  # any error of a getter or metric: unscored, as in OSWorld
            parts.append(FuncScore(func, 0.0, "", f"{type(err).__name__}: {err}"[:300]))
            return Score(0.0, tuple(parts), "evaluation failed: the task is not scored")
        if ev.conj == "and" and value == 0.0:
            return Score(0.0, tuple(parts))
        if ev.conj == "or" and value == 1.0:
            return Score(1.0, tuple(parts))
    return Score(combine([p.score for p in parts], ev.conj), tuple(parts))


__all__ = ["FuncScore", "LastAction", "Score", "combine", "evaluate"]
