"""What agent-s's MCP tools take and return (``agent_s.mcp.server``): the server's settings, the
structured outputs of ``run_task``, ``ground``, ``list_trajectories`` and ``read_trajectory``, and
the forms a client answers an approval or the agent's question with."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field

from agent_s.record.result import RunResult


@dataclass(frozen=True)
class McpSettings:
    """How the server runs tasks. ``flags``: the flags ``agent-s mcp`` was given, as ``agent-s
    run`` takes them (``{"--model": "gpt-4o", "--record": None}``; None: not given);
    ``defaults``: the command's defaults under the file (``agent-s run``'s); ``api_key``: the
    generation model's key (else the provider's variable); ``environ``: the session's variables
    (None: this process's); ``answer_timeout``: seconds a question waits for the client."""

    flags: Mapping[str, Any] = field(default_factory=dict)
    defaults: Mapping[str, Any] = field(default_factory=dict)
    api_key: str | None = None
    environ: Mapping[str, str] | None = None
    answer_timeout: float = 600.0


class CheckOutcome(BaseModel):
    """The check command run after ``done``."""

    command: str
    passed: bool
    detail: str = ""


class RefusalOutcome(BaseModel):
    """The action the safety gate refused, when the run ended because of it."""

    step: int
    action: str
    reason: str
    decided_by: str
    verdict: str = Field(description="ask: it needed approval; deny: the safety settings forbid it")


class RunOutcome(BaseModel):
    """How a run ended (``agent_s.record.result.RunResult``, as data)."""

    task: str
    status: str = Field(
        description="succeeded, failed, infeasible, max_steps, budget_exceeded, cancelled, "
        "error, planned or needs_input"
    )
    cause: str = Field(description="why it ended, finer than the status")
    reason: str = ""
    answer: str | None = None
    question: str | None = Field(None, description="needs_input: the question nobody answered")
    refusal: RefusalOutcome | None = Field(
        None, description="cause refused: the action the safety gate refused, and why"
    )
    verified: bool = Field(False, description="a check command ran after done and passed")
    check: CheckOutcome | None = None
    steps: int = 0
    model_calls: int = 0
    total_tokens: int = 0
    cost_usd: float = 0.0
    seconds: float = 0.0
    model: str = ""
    trajectory_id: str | None = Field(None, description="for read_trajectory")
    trajectory_dir: str | None = None

    @classmethod
    def of(cls, result: RunResult) -> RunOutcome:
        check = result.postcondition
        folder = result.trajectory_dir
        return cls(
            task=result.task,
            status=result.status.value,
            cause=result.cause,
            reason=result.reason,
            answer=result.answer,
            question=result.question,
            refusal=RefusalOutcome(**asdict(result.refusal)) if result.refusal else None,
            verified=result.verified,
            check=CheckOutcome(command=check.description, passed=check.passed, detail=check.detail)
            if check is not None
            else None,
            steps=result.steps,
            model_calls=result.model_calls,
            total_tokens=result.usage.total_tokens,
            cost_usd=round(result.usage.cost_usd, 6),
            seconds=round(result.timings.total, 3),
            model=result.model,
            trajectory_id=folder.name if folder else None,
            trajectory_dir=str(folder) if folder else None,
        )


class ScreenPoint(BaseModel):
    x: int
    y: int


class ScreenBox(BaseModel):
    x: int
    y: int
    width: int
    height: int


class GroundOutcome(BaseModel):
    """Where the expression is on the screen, and which grounder found it."""

    expression: str
    point: ScreenPoint
    box: ScreenBox | None = None
    source: str = Field(description="the grounder that answered: a11y, ocr, model")
    confidence: float
    evidence: str


class TrajectoryEntry(BaseModel):
    id: str = Field(description="the trajectory folder's name, for read_trajectory")
    task: str = ""
    status: str | None = Field(None, description="None while the run has not ended")
    steps: int = 0
    started_at: float | None = None
    folder: str


_SKIPPED = "files the record names that lead out of its folder: not read"


class TrajectoryList(BaseModel):
    record_folder: str
    trajectories: list[TrajectoryEntry]
    skipped: list[str] = Field([], description=_SKIPPED)


class StepGrounding(BaseModel):
    target: str
    point: ScreenPoint | None = None
    source: str


class StepSummary(BaseModel):
    step: int
    action: str
    outcome: str
    detail: str = ""
    grounding: list[StepGrounding] = []
    safety: str | None = Field(None, description="the safety gate's decision, when it judged")
    screenshot: str | None = None
    cost_usd: float = 0.0


class TrajectoryOutcome(BaseModel):
    id: str
    folder: str
    task: str = ""
    model: str = ""
    steps: list[StepSummary]
    result: RunOutcome | None = Field(None, description="None while the run has not ended")
    torn_last_line: bool = False
    skipped: list[str] = Field([], description=_SKIPPED)


class ApprovalForm(BaseModel):
    """What the client answers to an approval."""

    decision: Literal["yes", "no", "always"] = Field(
        description="yes: allow it once; no: refuse it; always: allow it and everything with "
        "the same risks for the rest of this run"
    )


class AnswerForm(BaseModel):
    """What the client answers to the agent's question."""

    answer: str = Field(description="the answer for the agent (empty: no answer, the run stops)")


__all__ = [
    "AnswerForm",
    "ApprovalForm",
    "CheckOutcome",
    "GroundOutcome",
    "McpSettings",
    "RefusalOutcome",
    "RunOutcome",
    "ScreenBox",
    "ScreenPoint",
    "StepGrounding",
    "StepSummary",
    "TrajectoryEntry",
    "TrajectoryList",
    "TrajectoryOutcome",
]
