"""What one step of the agent produces, and how a step's failures are put into words."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from agent_s.actions import ActionModel, DoneAction, FailAction
from agent_s.context import Outcome
from agent_s.errors import AgentSError
from agent_s.grounding import GroundingError, NotFound
from agent_s.models.types import Usage
from agent_s.result import Cause, RunStatus
from agent_s.trajectory import GroundingEntry, StepEntry


@dataclass(frozen=True)
class StepReport:
    """One finished step: what the model chose, where it was grounded, what happened."""

    step: int
    action: ActionModel
    action_text: str
    grounding: tuple[GroundingEntry, ...]
    outcome: Outcome
    code: str | None  # the plan as pyautogui code, or "DONE" / "FAIL" / "WAIT"
    executed: bool
    usage: Usage  # the run's total so far
    entry: StepEntry

    @property
    def terminal(self) -> Literal["done", "fail"] | None:
        if isinstance(self.action, DoneAction):
            return "done"
        if isinstance(self.action, FailAction):
            return "fail"
        return None


class RunEnded(AgentSError):
    """The run cannot go on (no usable reply, a refusal, the time limit): status and cause."""

    def __init__(self, message: str, *, status: RunStatus, cause: Cause) -> None:
        super().__init__(message)
        self.status = status
        self.cause = cause


def not_found_feedback(expression: str, err: GroundingError) -> str:
    if isinstance(err, NotFound):
        seen = ", ".join(c.describe() for c in err.candidates[:8])
        text = f"could not find {expression!r} on the screen ({err.reason})"
        return text + (f"; closest things seen: {seen}" if seen else "")
    return f"could not locate {expression!r}: {err}"


def is_interrupt(err: BaseException) -> bool:
    """Ctrl-C, or pyautogui's fail-safe (matched by type; importing pyautogui needs a display)."""
    kind = type(err)
    failsafe = kind.__name__ == "FailSafeException" and kind.__module__.startswith("pyautogui")
    return isinstance(err, KeyboardInterrupt) or failsafe
