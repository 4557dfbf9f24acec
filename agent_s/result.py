"""What a run ends with: a status, the answer or reason, the evidence, and what it cost.

    result = agent.run("Save the note as ~/todo.txt", postcondition=["test", "-s", "todo.txt"])
    result.status        # RunStatus.SUCCEEDED
    result.verified      # True: the postcondition passed after ``done``
    result.exit_code     # 0

Statuses: ``succeeded`` (the model said done and any postcondition passed), ``failed`` (the model
said fail, kept replying with no usable action, or the postcondition failed), ``infeasible`` (the
model refused the task), ``max_steps``, ``budget_exceeded`` (cost, tokens or wall time),
``cancelled`` (interrupted), ``error`` (the provider or the desktop failed; ``reason`` says how).
"""

from __future__ import annotations

import enum
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from agent_s.errors import describe_error
from agent_s.models.types import Usage


class RunStatus(str, enum.Enum):
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    INFEASIBLE = "infeasible"
    MAX_STEPS = "max_steps"
    BUDGET_EXCEEDED = "budget_exceeded"
    CANCELLED = "cancelled"
    ERROR = "error"

    @property
    def exit_code(self) -> int:
        """The CLI's exit code: 0 succeeded, 1 failed / infeasible / error, 3 a limit, 130."""
        return _EXIT_CODES[self]


_EXIT_CODES = {
    RunStatus.SUCCEEDED: 0,
    RunStatus.FAILED: 1,
    RunStatus.INFEASIBLE: 1,
    RunStatus.ERROR: 1,
    RunStatus.MAX_STEPS: 3,
    RunStatus.BUDGET_EXCEEDED: 3,
    RunStatus.CANCELLED: 130,
}

#: Why a run ended, finer than the status (e.g. FAILED by the model or by invalid replies).
Cause = Literal[
    "done",
    "model_gave_up",
    "invalid_replies",
    "postcondition_failed",
    "refused",
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
    """Where the run's time went, in seconds (model time includes retries and waits)."""

    total: float = 0.0
    observe: float = 0.0
    encode: float = 0.0
    build: float = 0.0
    model: float = 0.0
    grounding: float = 0.0
    execute: float = 0.0

    def __add__(self, other: Timings) -> Timings:
        return Timings(*(a + b for a, b in zip(_values(self), _values(other), strict=True)))


def _values(timings: Timings) -> tuple[float, ...]:
    return tuple(asdict(timings).values())


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
    model_calls: int = 0  # generation + reflection calls (HTTP retries not counted)
    timings: Timings = field(default_factory=Timings)
    trajectory_dir: Path | None = None
    verified: bool = False  # True only when a postcondition ran after ``done`` and passed
    postcondition: PostconditionResult | None = None
    model: str = ""
    started_at: float = 0.0  # unix time
    error_type: str | None = None  # the exception class for status ``error``

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
            timings=Timings(**data.get("timings", {})),
            trajectory_dir=Path(folder) if folder else None,
            verified=bool(data.get("verified", False)),
            postcondition=PostconditionResult(**check) if check else None,
            model=data.get("model", ""),
            started_at=float(data.get("started_at", 0.0)),
            error_type=data.get("error_type"),
        )


# -- postconditions ---------------------------------------------------------------------------


@dataclass(frozen=True)
class CommandCheck:
    """A postcondition command: an argv list (never a shell string) whose exit status decides."""

    argv: tuple[str, ...]
    env: Mapping[str, str] | None = None
    timeout_s: float = 60.0


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
            list(command.argv),
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
    "Cause",
    "CommandCheck",
    "Postcondition",
    "PostconditionResult",
    "RunResult",
    "RunStatus",
    "Timings",
    "check_postcondition",
]
