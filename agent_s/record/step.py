"""One step of the agent: the ``Step`` record.

A ``Step`` is THE step, from start to end: the loop builds it (immutably: each part of the
step returns a copy with more filled in), the trajectory writes it as one JSON line of
``trajectory.jsonl`` and loads it back (``model_dump_json`` / ``model_validate_json``), the
context policy reads the history from it, and ``on_step`` callbacks and the CLI receive it.

    step.action        the parsed action (None if the reply had none)
    step.grounding     where each target was found, by which grounder, or by whom not
    step.marks         set-of-marks runs: the mark table of the screenshot sent (number, box
                       on the screen, source, text), which the marks a reply names resolve in
    step.outcome       "ok", "error", "invalid", "terminal" (done / fail), "cancelled"
    step.detail        the error, the feedback, what was seen to happen, or e.g. the code
                       agent's summary
    step.observed      what the action was seen to do (windows, focus, the focused field), one
                       sentence each, in the model's terms (no screen pixels)
    step.code          the plan as pyautogui code, or "DONE" / "FAIL" / "WAIT"
    step.calls         the model calls (raw reply, usage, the error fed back)
    step.substeps      the code agent's turns (``call_code_agent``), each block with the sha256
                       of its code as handed to the runner (``code_sha256``)
    step.image         the encoded screenshot the model was shown (in memory only)
    step.chosen_by     who chose the action: "model" (asked at this step), "replay" (a recorded
                       step carried out again: a replay, a stored workflow reused by ``run``)
                       or "planner" (the plan's manager handed a subtask to the code agent)

A code-agent turn is a ``SubStep``; a model call is a ``ModelCall``.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agent_s.actions import Action, ActionModel, DoneAction, FailAction
from agent_s.coding.runner import Language
from agent_s.grounding.locate import TargetGrounding
from agent_s.images import EncodedImage
from agent_s.marks.setofmarks import MarkEntry
from agent_s.models.types import Usage

StepOutcome = Literal["ok", "error", "invalid", "terminal", "cancelled"]
ChosenBy = Literal["model", "replay", "planner"]
SubStepKind = Literal["block", "final", "invalid", "refused", "refused_by_model", "interrupted"]


class ModelCall(BaseModel):
    """One model call of a step (generation, reflection, a code-agent turn): the raw reply,
    its usage, or the error (the parse error fed back, or the model error that ended it)."""

    model_config = ConfigDict(frozen=True)

    purpose: str  # "generate", "reflect" or "code"
    reply: str
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    seconds: float = 0.0
    http_attempts: int = 1
    error: str = ""

    @classmethod
    def of(
        cls, purpose: str, text: str, usage: Usage, start: float, attempts: int = 1, error: str = ""
    ) -> ModelCall:
        """The record of a call that started at ``start`` (``time.perf_counter()``)."""
        return cls(
            purpose=purpose,
            reply=text,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cost_usd=round(usage.cost_usd, 6),
            seconds=round(time.perf_counter() - start, 3),
            http_attempts=attempts,
            error=error,
        )


class SubStep(BaseModel):
    """One turn of the code agent: its reply, the block and the safety gate's decision on it,
    how the block ran (exit status, bounded output), or how the turn ended the loop."""

    model_config = ConfigDict(frozen=True)

    substep: int
    started_at: float
    kind: SubStepKind
    call: ModelCall | None = None
    language: Language | None = None
    code: str = ""
    # sha256 of the code's UTF-8 bytes, taken as the block was handed to the runner (None: it
    # did not run); memory stores a skill only when its code hashes to this
    code_sha256: str | None = None
    safety: dict[str, Any] | None = None  # the safety gate's decision on the block
    run: dict[str, Any] | None = None  # the block's run: exit status, stdout, stderr, ...
    status: Literal["done", "fail"] | None = None  # a final reply's DONE or FAIL
    summary: str = ""
    error: str = ""


class Step(BaseModel):
    """One step of the agent (see the module docstring); one line of ``trajectory.jsonl``."""

    model_config = ConfigDict(frozen=True)

    step: int
    subtask: str | None = None  # the plan's subtask the step worked on (planned runs)
    started_at: float = 0.0  # unix time
    seconds: float = 0.0
    screenshot: str | None = None  # file name inside the trajectory folder
    screen: tuple[int, int] = (0, 0)  # screenshot width, height
    active_window: str | None = None
    request: dict[str, Any] = Field(default_factory=dict)  # its size, the a11y snapshot note
    calls: tuple[ModelCall, ...] = ()
    reply: str = ""  # the raw reply the action came from ("" if none)
    chosen_by: ChosenBy = "model"  # who chose the action (see the module docstring)
    action: Action | None = None
    action_text: str = ""  # the action as a compact call (``call_text``)
    grounding: tuple[TargetGrounding, ...] = ()
    marks: tuple[MarkEntry, ...] = ()  # the screenshot's numbered marks (set-of-marks runs)
    executed: tuple[dict[str, Any], ...] = ()  # the desktop operations performed, in order
    observed: tuple[str, ...] = ()  # what the action was seen to do (``agent_s.desktop.watch``)
    code: str | None = None  # the plan as pyautogui code, or "DONE" / "FAIL" / "WAIT"
    outcome: StepOutcome = "ok"
    detail: str = ""
    errors: tuple[str, ...] = ()  # what went wrong, in order (retries, refusals, feedback)
    timings: dict[str, float] = Field(default_factory=dict)
    dry_run_image: str | None = None
    safety: dict[str, Any] | None = None  # the safety gate's decision on the action
    substeps: tuple[SubStep, ...] = ()  # the code agent's turns (call_code_agent)
    usage: Usage = Field(default_factory=Usage)  # the run's total when the step ended
    image: EncodedImage | None = Field(default=None, exclude=True, repr=False)  # as sent
    # a smaller copy for later requests, where this screen is no longer the current one
    history_image: EncodedImage | None = Field(default=None, exclude=True, repr=False)

    @classmethod
    def begin(cls, number: int) -> Step:
        """Step ``number``, starting now."""
        return cls(step=number, started_at=time.time())

    @property
    def terminal(self) -> Literal["done", "fail"] | None:
        """Whether the action ends the task, and how."""
        if isinstance(self.action, DoneAction):
            return "done"
        if isinstance(self.action, FailAction):
            return "fail"
        return None

    def add(
        self,
        *,
        calls: Sequence[ModelCall] = (),
        errors: Sequence[str] = (),
        grounding: Sequence[TargetGrounding] = (),
        executed: Sequence[dict[str, Any]] = (),
        substeps: Sequence[SubStep] = (),
    ) -> Step:
        """A copy with these appended to the step's calls, errors, groundings, operations
        performed and sub-steps."""
        return self.model_copy(
            update={
                "calls": (*self.calls, *calls),
                "errors": (*self.errors, *errors),
                "grounding": (*self.grounding, *grounding),
                "executed": (*self.executed, *executed),
                "substeps": (*self.substeps, *substeps),
            }
        )

    def timed(self, part: str, seconds: float) -> Step:
        """A copy with ``seconds`` added to the time of ``part`` ("model", "grounding", ...)."""
        timings = {**self.timings, part: self.timings.get(part, 0.0) + seconds}
        return self.model_copy(update={"timings": timings})

    def ended(self, outcome: StepOutcome, detail: str = "", **updates: Any) -> Step:
        """The finished step: its outcome, its length, its timings rounded."""
        return self.model_copy(
            update={
                **updates,
                "outcome": outcome,
                "detail": detail,
                "seconds": round(max(0.0, time.time() - self.started_at), 3),
                "timings": {k: round(v, 4) for k, v in self.timings.items()},
            }
        )


def code_digest(code: str) -> str:
    """The sha256 (hex) of a block's code as it is run: its UTF-8 bytes."""
    return hashlib.sha256(code.encode("utf-8", "surrogatepass")).hexdigest()


#: ``Step`` under its earlier name: the same type.
StepReport = Step


def call_text(action: ActionModel) -> str:
    """The action as a compact call, e.g. ``agent.click('OK', num_clicks=2)``."""
    values = action.model_dump(exclude={"action"}, exclude_defaults=True)
    arguments = ", ".join(f"{name}={value!r}" for name, value in values.items())
    return f"agent.{action.action}({arguments})"


__all__ = [
    "ChosenBy",
    "ModelCall",
    "Step",
    "StepOutcome",
    "StepReport",
    "SubStep",
    "call_text",
    "code_digest",
]
