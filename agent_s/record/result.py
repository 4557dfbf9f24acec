"""What a run ends with: a status, the answer or reason, the evidence, and what it cost.

    result = agent.run("Save the note as ~/todo.txt", postcondition=["test", "-s", "todo.txt"])
    result.status        # RunStatus.SUCCEEDED
    result.verified      # True: the postcondition passed after ``done``
    result.exit_code     # 0

Statuses: ``succeeded`` (the model said done and any postcondition passed), ``failed`` (the model
said fail, kept replying with no usable action, or the postcondition failed), ``infeasible`` (the
model refused the task), ``max_steps``, ``budget_exceeded`` (cost, tokens or wall time),
``cancelled`` (interrupted), ``error`` (the provider or the desktop failed; ``reason`` says how),
``planned`` (a dry run reached done: the actions were planned and drawn, nothing was executed, so
nothing is claimed to have succeeded), ``needs_input`` (the model asked the user a question with
``ask_user`` and nobody could answer: ``question`` holds it; the run stops instead of guessing).

A run that fails right after the safety gate refused an action (the model gives up, the planner
finds no way on, the replans run out) ended because of that refusal: its cause is ``refused`` and
``refusal`` names the action, the step and why it was refused (``Refusal``).
"""

from __future__ import annotations

import enum
import os
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from agent_s.actions import ActionModel, DoneAction, FailAction
from agent_s.errors import AgentSError, DesktopSetupError, DisplayUnavailableError, describe_error
from agent_s.lifecycle import Terminated
from agent_s.models.errors import BudgetExceeded, ModelError
from agent_s.models.types import Usage


class RunStatus(str, enum.Enum):
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    INFEASIBLE = "infeasible"
    MAX_STEPS = "max_steps"
    BUDGET_EXCEEDED = "budget_exceeded"
    CANCELLED = "cancelled"
    ERROR = "error"
    PLANNED = "planned"
    NEEDS_INPUT = "needs_input"

    @property
    def exit_code(self) -> int:
        """The CLI's exit code: 0 succeeded or planned (a dry run), 1 failed / infeasible /
        error, 3 a limit, 4 needs input (the agent asked a question nobody answered), 130
        cancelled."""
        return _EXIT_CODES[self]


_EXIT_CODES = {
    RunStatus.SUCCEEDED: 0,
    RunStatus.FAILED: 1,
    RunStatus.INFEASIBLE: 1,
    RunStatus.ERROR: 1,
    RunStatus.MAX_STEPS: 3,
    RunStatus.BUDGET_EXCEEDED: 3,
    RunStatus.CANCELLED: 130,
    RunStatus.PLANNED: 0,
    RunStatus.NEEDS_INPUT: 4,
}

#: Why a run ended, finer than the status (e.g. FAILED by the model or by invalid replies).
Cause = Literal[
    "done",
    "dry_run",
    "model_gave_up",
    "invalid_replies",
    "postcondition_failed",
    "refused",
    "infeasible_gate",
    "replan_limit",
    "replay_diverged",
    "needs_input",
    "max_steps",
    "budget_cost",
    "budget_tokens",
    "max_seconds",
    "interrupted",
    "model_error",
    "desktop_error",
    "internal_error",
]


@dataclass(frozen=True)
class PostconditionResult:
    """The check run after ``done``: a command's exit status, or a callable's truth."""

    description: str  # the command line as given, or the callable's name
    passed: bool
    detail: str = ""  # exit status and the end of its output, or the exception raised
    seconds: float = 0.0


@dataclass(frozen=True)
class Timings:
    """Where the run's time went, in seconds (model time includes retries and waits).

    The parts add up to ``total`` but for the loop's own bookkeeping (a few percent): each
    step's timed parts, and what is written between steps (``record``)."""

    total: float = 0.0
    observe: float = 0.0  # the screenshot and windows, set-of-marks, the accessibility snapshot
    encode: float = 0.0
    build: float = 0.0
    model: float = 0.0
    grounding: float = 0.0
    execute: float = 0.0
    effects: float = 0.0  # seeing what actions did, ``open``'s wait for its window included
    settle: float = 0.0  # after an action, waiting for the screen and the program to be still
    code: float = 0.0  # the code agent's turns (its model calls are in ``model`` too)
    record: float = 0.0  # the trajectory: screenshots, steps and the run's header

    def __add__(self, other: Timings) -> Timings:
        return Timings(*(a + b for a, b in zip(_values(self), _values(other), strict=True)))

    @classmethod
    def of_step(cls, seconds: float, parts: Mapping[str, float]) -> Timings:
        """One step's timings: its length and the time of its parts ("model", ...)."""
        names = ("encode", "build", "model", "grounding", "execute", "settle", "record")
        timed = {name: parts.get(name, 0.0) for name in names}
        observe = sum(parts.get(name, 0.0) for name in ("observe", "marks", "a11y"))
        effects = parts.get("effects", 0.0) + parts.get("open", 0.0)
        code = parts.get("code", 0.0)
        return cls(total=seconds, observe=observe, effects=effects, code=code, **timed)

    def rounded(self) -> Timings:
        return Timings(*(round(value, 3) for value in _values(self)))


def _values(timings: Timings) -> tuple[float, ...]:
    return tuple(asdict(timings).values())


@dataclass(frozen=True)
class BestOfAttempt:
    """One attempt of a best-of-N run (``agent_s.bestofn``): how it ended and its narrative."""

    number: int  # 1-based
    status: str  # a RunStatus value, or "cancelled" for one stopped early
    reason: str = ""
    steps: int = 0
    cost_usd: float = 0.0
    narrative: tuple[str, ...] = ()  # one line per step, then how it ended
    trajectory_dir: str | None = None
    score: float | None = None  # bench: the task's evaluator's score


@dataclass(frozen=True)
class BestOf:
    """A best-of-N run: which attempt was picked, by whom and why, and every attempt."""

    picked: int  # the attempt's number
    reason: str
    by: str  # "comparative", "tournament", "agreement" (early stop) or "only" (one left)
    attempts: tuple[BestOfAttempt, ...] = ()
    judge_calls: int = 0
    judge_cost_usd: float = 0.0

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BestOf:
        attempts = tuple(
            BestOfAttempt(**{**a, "narrative": tuple(a.get("narrative", ()))})
            for a in data.get("attempts", ())
        )
        return cls(**{**data, "attempts": attempts})


@dataclass(frozen=True)
class Refusal:
    """An action the safety gate refused: which, at which step, why, and who decided."""

    step: int
    action: str  # the action as a call, e.g. "agent.open(app_or_filename='galculator')"
    reason: str  # why, for the user: "it needs the user's approval (...) and nobody can ..."
    decided_by: str  # "nobody (no approver)", "approver", "rule 2", "mode deny-risky", ...
    verdict: str = "ask"  # the policy's: "ask" (approval was needed) or "deny"

    @classmethod
    def of(cls, step: int, action: str, safety: Mapping[str, Any] | None) -> Refusal | None:
        """The refusal a step's safety record tells of; None when its action was allowed."""
        if safety is None or safety.get("allowed", True):
            return None
        # records written before the gate kept its reason carry only the model's message
        reason = str(safety.get("reason") or safety.get("message") or "the safety gate said no")
        decided_by, verdict = str(safety.get("decided_by", "")), str(safety.get("verdict", "ask"))
        return cls(step, action, reason, decided_by, verdict)

    def describe(self) -> str:
        return f"the safety gate refused {self.action} at step {self.step}: {self.reason}"


# A failure these causes name, right after a refusal, is the refusal's doing.
_FAILED_AFTER_REFUSAL = frozenset({"model_gave_up", "invalid_replies", "replan_limit"})


@dataclass(frozen=True)
class RunResult:
    """The outcome of one run (see the module docstring)."""

    task: str
    status: RunStatus
    cause: Cause
    reason: str = ""  # why it ended, in a sentence: the model's fail reason, the error, ...
    answer: str | None = None  # what ``done`` answered, if the task asked a question
    steps: int = 0
    usage: Usage = field(default_factory=Usage)
    model_calls: int = 0  # every model call of the run (HTTP retries not counted)
    calls: dict[str, int] = field(default_factory=dict)  # model calls per purpose
    timings: Timings = field(default_factory=Timings)
    trajectory_dir: Path | None = None
    verified: bool = False  # True only when a postcondition ran after ``done`` and passed
    postcondition: PostconditionResult | None = None
    model: str = ""
    started_at: float = 0.0  # unix time
    error_type: str | None = None  # the exception class for status ``error``
    # the manager's report when the run was planned (``agent_s.planning.manager.PlanReport``): the
    # feasibility decision, each subtask's status, attempts and checks, switches, replans
    plan: dict[str, Any] | None = None
    question: str | None = None  # status needs_input: the question nobody answered
    best_of: BestOf | None = None  # a best-of-N run: the pick, its reason, every attempt
    refusal: Refusal | None = None  # cause ``refused``: the action refused, and why
    # a run that reused a stored workflow (``agent_s.replay.reuse``): its name, the steps
    # replayed, the steps the model chose, and the divergence where the model took over
    reused: dict[str, Any] | None = None

    @property
    def succeeded(self) -> bool:
        return self.status is RunStatus.SUCCEEDED

    @property
    def exit_code(self) -> int:
        return self.status.exit_code

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["status"] = self.status.value
        data["trajectory_dir"] = str(self.trajectory_dir) if self.trajectory_dir else None
        data["usage"]["total_tokens"] = self.usage.total_tokens
        data["usage"]["cost_usd"] = round(self.usage.cost_usd, 6)
        data["timings"] = {k: round(v, 3) for k, v in data["timings"].items()}
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunResult:
        usage = {k: v for k, v in data.get("usage", {}).items() if k != "total_tokens"}
        check = data.get("postcondition")
        folder = data.get("trajectory_dir")
        return cls(
            task=data["task"],
            status=RunStatus(data["status"]),
            cause=data["cause"],
            reason=data.get("reason", ""),
            answer=data.get("answer"),
            steps=int(data.get("steps", 0)),
            usage=Usage(**usage),
            model_calls=int(data.get("model_calls", 0)),
            calls={str(k): int(v) for k, v in data.get("calls", {}).items()},
            timings=Timings(**data.get("timings", {})),
            trajectory_dir=Path(folder) if folder else None,
            verified=bool(data.get("verified", False)),
            postcondition=PostconditionResult(**check) if check else None,
            model=data.get("model", ""),
            started_at=float(data.get("started_at", 0.0)),
            error_type=data.get("error_type"),
            plan=data.get("plan"),
            question=data.get("question"),
            best_of=BestOf.from_json(data["best_of"]) if data.get("best_of") else None,
            refusal=Refusal(**data["refusal"]) if data.get("refusal") else None,
            reused=data.get("reused"),
        )


# -- how a run ends ---------------------------------------------------------------------------


class RunEnded(AgentSError):
    """The run cannot go on (no usable reply, a refusal, the time limit): status and cause."""

    def __init__(
        self, message: str, *, status: RunStatus, cause: Cause, question: str | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.cause = cause
        self.question = question


@dataclass(frozen=True)
class Ending:
    """Why a run ends, before its result is put together."""

    status: RunStatus
    cause: Cause
    reason: str
    answer: str | None = None
    check: PostconditionResult | None = None
    error: BaseException | None = None
    question: str | None = None  # status needs_input: what the agent asked
    refusal: Refusal | None = None  # cause refused: the action the safety gate refused
    reused: dict[str, Any] | None = None  # the stored workflow the run reused (RunResult)

    def after(self, refusal: Refusal | None) -> Ending:
        """This ending, when the last action tried before it was ``refusal`` (None: the last
        action was carried out): a failure by the model, its replies or its plans is the
        refusal's doing, and says so (cause ``refused``)."""
        if refusal is None or self.status is not RunStatus.FAILED:
            return self
        if self.cause not in _FAILED_AFTER_REFUSAL:
            return self
        reason = f"{refusal.describe()} (after it: {self.reason})"
        return replace(self, cause="refused", reason=reason, refusal=refusal)


class Tally:
    """A task's running totals, from its start: the steps' timings and the model calls."""

    def __init__(self) -> None:
        self.started_at = time.time()  # unix time
        self.model_calls = 0
        self.calls: dict[str, int] = {}  # model calls per purpose
        self.timings = Timings()
        self._clock = time.monotonic()

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self._clock

    def count(self, purpose: str) -> None:
        """One model call for ``purpose`` ("generate", "reflect", "code", "plan", ...)."""
        self.model_calls += 1
        self.calls[purpose] = self.calls.get(purpose, 0) + 1

    def add_step(self, seconds: float, parts: Mapping[str, float]) -> None:
        self.timings = self.timings + Timings.of_step(seconds, parts)

    @contextmanager
    def recording(self) -> Iterator[None]:
        """Time what is written outside a step (its trajectory line, the run's header)."""
        start = time.monotonic()
        try:
            yield
        finally:
            spent = time.monotonic() - start
            self.timings = replace(self.timings, record=self.timings.record + spent)

    def result(
        self,
        task: str,
        ending: Ending,
        *,
        steps: int,
        usage: Usage,
        model: str,
        trajectory_dir: Path | None,
        plan: dict[str, Any] | None = None,
    ) -> RunResult:
        """The run's result, ended as ``ending`` now; ``plan``: the manager's report."""
        check, error = ending.check, ending.error
        return RunResult(
            task=task,
            status=ending.status,
            cause=ending.cause,
            reason=ending.reason,
            answer=ending.answer,
            steps=steps,
            usage=usage,
            model_calls=self.model_calls,
            calls=dict(self.calls),
            timings=replace(self.timings, total=self.elapsed).rounded(),
            trajectory_dir=trajectory_dir,
            verified=bool(check and check.passed),
            postcondition=check,
            model=model,
            started_at=self.started_at,
            error_type=type(error).__name__ if error is not None else None,
            plan=plan,
            question=ending.question,
            refusal=ending.refusal,
            reused=ending.reused,
        )


def is_interrupt(err: BaseException) -> bool:
    """Ctrl-C, or pyautogui's fail-safe (matched by type; importing pyautogui needs a display)."""
    kind = type(err)
    failsafe = kind.__name__ == "FailSafeException" and kind.__module__.startswith("pyautogui")
    return isinstance(err, KeyboardInterrupt) or failsafe


def error_ending(err: BaseException) -> Ending | None:
    """How an exception ends a run: a limit, a stop, a provider or desktop failure. None for
    anything else (a bug: the run ends as ``internal_error`` and the exception propagates)."""
    if isinstance(err, RunEnded):
        return Ending(err.status, err.cause, str(err), question=err.question)
    if isinstance(err, BudgetExceeded):
        cause: Cause = "budget_cost" if err.kind == "cost" else "budget_tokens"
        return Ending(RunStatus.BUDGET_EXCEEDED, cause, str(err))
    if isinstance(err, KeyboardInterrupt):  # Ctrl-C, or a stop signal: "interrupted by SIGTERM"
        reason = str(err) if isinstance(err, Terminated) else "interrupted by the user"
        return Ending(RunStatus.CANCELLED, "interrupted", reason)
    if isinstance(err, ModelError):
        reason = f"the model call failed: {err}"
        return Ending(RunStatus.ERROR, "model_error", reason, error=err)
    if isinstance(err, (DisplayUnavailableError, DesktopSetupError)):
        return Ending(RunStatus.ERROR, "desktop_error", str(err), error=err)
    if is_interrupt(err):  # pyautogui's fail-safe: the user took the mouse to a corner
        reason = "stopped by the fail-safe: the mouse was moved into a screen corner"
        return Ending(RunStatus.CANCELLED, "interrupted", reason)
    return None


def final_ending(
    action: ActionModel, postcondition: Postcondition | None = None, *, dry_run: bool = False
) -> Ending:
    """How a ``done`` or ``fail`` ends the run; after ``done`` the postcondition decides. In a
    dry run nothing was executed: ``done`` ends it as ``planned``, never ``succeeded``."""
    if isinstance(action, FailAction):
        return Ending(RunStatus.FAILED, "model_gave_up", action.reason or "the model gave up")
    answer = action.answer if isinstance(action, DoneAction) else None
    if dry_run:
        reason = "dry run: the model said done; its actions were planned, none was executed"
        return Ending(RunStatus.PLANNED, "dry_run", reason, answer)
    if postcondition is None:
        return Ending(RunStatus.SUCCEEDED, "done", "the model said the task is done", answer)
    check = check_postcondition(postcondition)
    if check.passed:
        return Ending(RunStatus.SUCCEEDED, "done", "done, and the check passed", answer, check)
    reason = f"the model said done, but the check failed: {check.detail}"
    return Ending(RunStatus.FAILED, "postcondition_failed", reason, answer, check)


# -- postconditions ---------------------------------------------------------------------------


@dataclass(frozen=True)
class CommandCheck:
    """A postcondition command: an argv list (never a shell string) whose exit status decides."""

    argv: tuple[str, ...]
    env: Mapping[str, str] | None = None
    timeout_s: float = 60.0

    def expanded(self) -> tuple[str, ...]:
        """``argv`` with a leading ``~`` or ``~/`` in each argument turned into the check's HOME
        (``env``'s, else this process's), as a shell would; nothing else is interpreted."""
        home = (self.env or os.environ).get("HOME") or os.path.expanduser("~")
        return tuple(
            home + arg[1:] if arg == "~" or arg.startswith("~/") else arg for arg in self.argv
        )


Postcondition = CommandCheck | Sequence[str] | Callable[[], bool]


def check_postcondition(check: Postcondition) -> PostconditionResult:
    """Run the postcondition: a command (exit status 0 passes) or a callable (truthy passes)."""
    start = time.perf_counter()
    if callable(check):
        name = getattr(check, "__name__", repr(check))
        try:
            passed = bool(check())
        except Exception as err:  # the user's check failing is its verdict, with the reason
            return PostconditionResult(
                name, False, describe_error(err), time.perf_counter() - start
            )
        detail = "returned True" if passed else "returned False"
        return PostconditionResult(name, passed, detail, time.perf_counter() - start)
    command = check if isinstance(check, CommandCheck) else CommandCheck(tuple(check))
    if not command.argv:
        raise ValueError("the postcondition command is empty")
    shown = subprocess.list2cmdline(command.argv)
    try:
        done = subprocess.run(
            list(command.expanded()),
            env=None if command.env is None else dict(command.env),
            capture_output=True,
            text=True,
            timeout=command.timeout_s,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        return PostconditionResult(shown, False, describe_error(err), time.perf_counter() - start)
    output = (done.stdout + done.stderr).strip()[-300:]
    detail = f"exit status {done.returncode}" + (f": {output}" if output else "")
    return PostconditionResult(shown, done.returncode == 0, detail, time.perf_counter() - start)


__all__ = [
    "BestOf",
    "BestOfAttempt",
    "Cause",
    "CommandCheck",
    "Ending",
    "Postcondition",
    "PostconditionResult",
    "Refusal",
    "RunEnded",
    "RunResult",
    "RunStatus",
    "Tally",
    "Timings",
    "check_postcondition",
    "error_ending",
    "final_ending",
    "is_interrupt",
]
