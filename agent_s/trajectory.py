"""The trajectory folder: a durable record written as the run goes, loadable back.

    run-20250101-120000-ab12/
      run.json            task, model, settings (written first; no secrets)
      trajectory.jsonl    one JSON line per step, flushed and fsynced when the step ends
      step_001.png        the screenshot the model was shown at each step (as sent)
      step_001_plan.png   dry runs: the intended action drawn on the screenshot
      step_001_approval.png   the screen crop an approver was shown (safety mode confirm)
      result.json         the RunResult, written (atomically) when the run ends

Each step records the safety gate's decision (``safety``: allowed or refused, by the policy, a
user rule, an approver and who, or nobody) and, for ``call_code_agent``, the code agent's turns
(``substeps``: each reply, the code, its gate decision, exit status and bounded output).

A run killed with SIGKILL keeps every finished step readable: each line is written whole and
synced before the next step starts. ``load_trajectory`` skips only a torn last line.

Secrets never reach the folder's text: nothing secret is put into an entry, and the writer
redacts (``agent_s.redact``) every string of every record, and the JSON line as written, before
anything reaches the disk. Screenshots are written as they were sent: pixels cannot be redacted.
"""

from __future__ import annotations

import io
import json
import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from PIL import ImageDraw

from agent_s.actions import ActionModel
from agent_s.desktop import ops
from agent_s.desktop.base import Screenshot
from agent_s.grounding.types import GroundingResult
from agent_s.models.types import Usage
from agent_s.redact import Redactor
from agent_s.result import RunResult

TRAJECTORY_FILE = "trajectory.jsonl"
RESULT_FILE = "result.json"
RUN_FILE = "run.json"


@dataclass(frozen=True)
class GroundingEntry:
    """One target of the step's action: where it was found and by which grounder, or why not."""

    target: str
    kind: str  # "element", "text_start", "text_end"
    grounder: str
    point: tuple[int, int] | None
    box: tuple[int, int, int, int] | None = None
    confidence: float | None = None
    evidence: str = ""
    seconds: float = 0.0
    attempts: tuple[dict[str, Any], ...] = ()

    @classmethod
    def of(cls, kind: str, result: GroundingResult) -> GroundingEntry:
        """The entry for a grounder's answer."""
        box = result.box.as_tuple() if result.box is not None else None
        attempts = tuple(
            {"grounder": a.grounder, "outcome": a.outcome, "reason": a.reason[:300]}
            for a in result.attempts
        )
        return cls(
            result.expression,
            kind,
            result.grounder,
            (result.point.x, result.point.y),
            box,
            round(result.confidence, 3),
            result.evidence[:500],
            round(result.seconds, 3),
            attempts,
        )


@dataclass(frozen=True)
class ModelCall:
    """One generation (or reflection) call of the step: the raw reply, usage, or the error."""

    purpose: str  # "generate" or "reflect"
    reply: str
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    seconds: float = 0.0
    http_attempts: int = 1
    error: str = ""  # parse error fed back, or the model error that ended the call

    @classmethod
    def of(
        cls, purpose: str, text: str, usage: Usage, start: float, attempts: int = 1, error: str = ""
    ) -> ModelCall:
        """The record of a call that started at ``start`` (``time.perf_counter()``)."""
        return cls(
            purpose,
            text,
            usage.input_tokens,
            usage.output_tokens,
            round(usage.cost_usd, 6),
            round(time.perf_counter() - start, 3),
            attempts,
            error,
        )


@dataclass(frozen=True)
class StepEntry:
    """One line of ``trajectory.jsonl``."""

    step: int
    started_at: float  # unix time
    seconds: float
    screenshot: str | None  # file name inside the folder
    screen: tuple[int, int]  # screenshot width, height
    active_window: str | None
    request: dict[str, Any]  # a summary: messages, images, text characters, image bytes, size
    calls: tuple[ModelCall, ...]
    reply: str  # the raw reply the action came from ("" if none)
    action: dict[str, Any] | None  # the parsed action, its fields
    action_text: str
    grounding: tuple[GroundingEntry, ...]
    executed: tuple[dict[str, Any], ...]  # the desktop operations performed, in order
    code: str | None  # the same plan as pyautogui code, when one was planned
    outcome: str  # "ok", "error", "invalid", "terminal", "cancelled"
    detail: str = ""
    errors: tuple[str, ...] = ()
    timings: dict[str, float] = field(default_factory=dict)
    dry_run_image: str | None = None
    safety: dict[str, Any] | None = None  # the safety gate's decision on the action
    substeps: tuple[dict[str, Any], ...] = ()  # the code agent's turns (call_code_agent)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> StepEntry:
        values = dict(data)
        values["substeps"] = tuple(values.get("substeps", ()))
        values["screen"] = tuple(values["screen"])
        values["calls"] = tuple(ModelCall(**c) for c in values["calls"])
        values["grounding"] = tuple(
            GroundingEntry(
                **{
                    **g,
                    "point": tuple(g["point"]) if g.get("point") else None,
                    "box": tuple(g["box"]) if g.get("box") else None,
                    "attempts": tuple(g.get("attempts", ())),
                }
            )
            for g in values["grounding"]
        )
        values["executed"] = tuple(values["executed"])
        values["errors"] = tuple(values["errors"])
        return cls(**values)


@dataclass(frozen=True)
class Trajectory:
    """A trajectory folder loaded back: the run's header, its steps, its result (if it ended)."""

    folder: Path
    run: dict[str, Any]
    steps: tuple[StepEntry, ...]
    result: RunResult | None
    torn_last_line: bool = False


@dataclass
class StepDraft:
    """A step being built; written to the trajectory even if the step is cut short."""

    step: int
    started_at: float
    start: float = field(default_factory=time.perf_counter)
    screenshot: str | None = None
    screen: tuple[int, int] = (0, 0)
    active_window: str | None = None
    request: dict[str, Any] = field(default_factory=dict)
    calls: list[ModelCall] = field(default_factory=list)
    reply: str = ""
    action: ActionModel | None = None
    grounding: list[GroundingEntry] = field(default_factory=list)
    executed: list[dict[str, Any]] = field(default_factory=list)
    code: str | None = None
    errors: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    dry_run_image: str | None = None
    safety: dict[str, Any] | None = None
    substeps: list[dict[str, Any]] = field(default_factory=list)

    def entry(self, outcome: str, detail: str) -> StepEntry:
        action = self.action
        return StepEntry(
            step=self.step,
            started_at=self.started_at,
            seconds=round(time.perf_counter() - self.start, 3),
            screenshot=self.screenshot,
            screen=self.screen,
            active_window=self.active_window,
            request=self.request,
            calls=tuple(self.calls),
            reply=self.reply,
            action=action.model_dump(mode="json") if action is not None else None,
            action_text=call_text(action) if action is not None else "",
            grounding=tuple(self.grounding),
            executed=tuple(self.executed),
            code=self.code,
            outcome=outcome,
            detail=detail,
            errors=tuple(self.errors),
            timings={k: round(v, 4) for k, v in self.timings.items()},
            dry_run_image=self.dry_run_image,
            safety=self.safety,
            substeps=tuple(self.substeps),
        )


def call_text(action: ActionModel) -> str:
    """The action as a compact call, e.g. ``agent.click('OK', num_clicks=2)``."""
    values = action.model_dump(exclude={"action"}, exclude_defaults=True)
    arguments = ", ".join(f"{name}={value!r}" for name, value in values.items())
    return f"agent.{action.action}({arguments})"


class TrajectoryWriter:
    """Writes one run's folder. Every write is flushed and fsynced before it returns."""

    def __init__(
        self,
        folder: Path,
        *,
        secrets: Iterable[str | None] = (),
        redactor: Redactor | None = None,
    ) -> None:
        """``secrets``: values to redact; ``redactor``: a run's redactor (both may be given)."""
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        given = list(secrets)
        if redactor is None or given:
            redactor = Redactor([*(redactor.values if redactor else ()), *given])
        self.redactor = redactor
        self._lines = open(self.folder / TRAJECTORY_FILE, "a", encoding="utf-8")  # noqa: SIM115
        self.steps_written = 0

    @classmethod
    def create(
        cls,
        parent: Path,
        *,
        secrets: Iterable[str | None] = (),
        redactor: Redactor | None = None,
        prefix: str = "run",
    ) -> TrajectoryWriter:
        """A new, uniquely named folder under ``parent``."""
        stamp = time.strftime("%Y%m%d-%H%M%S")
        parent = Path(parent)
        for n in range(1000):
            folder = parent / (f"{prefix}-{stamp}-{os.getpid()}" + ("" if n == 0 else f"-{n}"))
            if not folder.exists():
                return cls(folder, secrets=secrets, redactor=redactor)
        raise FileExistsError(f"cannot find a free trajectory folder name under {parent}")

    def _text(self, data: Any) -> str:
        """The record as JSON, redacted twice: each string, then the line (paths and enums
        become strings only while dumping)."""
        text = json.dumps(self.redactor.data(data), ensure_ascii=False, default=_default)
        return self.redactor.text(text)

    def write_run(self, header: dict[str, Any]) -> None:
        self._atomic(RUN_FILE, (self._text(header) + "\n").encode("utf-8"))

    def write_step(self, entry: StepEntry) -> None:
        self._lines.write(self._text(entry.to_json()) + "\n")
        self._lines.flush()
        os.fsync(self._lines.fileno())
        self.steps_written += 1

    def write_image(self, name: str, data: bytes) -> str:
        self._atomic(name, data)
        return name

    def write_result(self, result: RunResult) -> None:
        self._atomic(RESULT_FILE, (self._text(result.to_json()) + "\n").encode("utf-8"))

    def close(self) -> None:
        self._lines.close()

    def _atomic(self, name: str, data: bytes) -> None:
        path = self.folder / name
        temp = path.with_name(f".{name}.tmp")
        with open(temp, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)


def _default(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    if hasattr(value, "value"):  # enums
        return value.value
    raise TypeError(f"cannot record {type(value).__name__} in a trajectory")


def draw_plan(screenshot: Screenshot, plan: Sequence[ops.Op]) -> bytes:
    """The screenshot with the planned operations drawn on it (PNG): a ring at each point, a
    line for a drag, the text to type and the keys to press written near the top."""
    image = screenshot.image.convert("RGB")
    draw = ImageDraw.Draw(image)
    scale = screenshot.scale

    def pixel(at: ops.Point) -> tuple[float, float]:
        return ((at.x - screenshot.origin.x) * scale, (at.y - screenshot.origin.y) * scale)

    labels: list[str] = []
    for op in plan:
        points = [getattr(op, name) for name in ("at", "start", "end") if hasattr(op, name)]
        for at in points:
            x, y = pixel(at)
            draw.ellipse((x - 12, y - 12, x + 12, y + 12), outline=(255, 0, 0), width=3)
            draw.line((x - 18, y, x + 18, y), fill=(255, 0, 0), width=1)
            draw.line((x, y - 18, x, y + 18), fill=(255, 0, 0), width=1)
        if isinstance(op, ops.Drag):
            draw.line((*pixel(op.start), *pixel(op.end)), fill=(255, 0, 0), width=3)
        if isinstance(op, ops.TypeText):
            labels.append(f"type {op.text[:80]!r}")
        elif isinstance(op, (ops.Hotkey, ops.HoldAndPress)):
            labels.append(f"keys {op}"[:100])
        elif isinstance(op, (ops.Open, ops.Activate, ops.Sleep)):
            labels.append(repr(op)[:100])
    for row, label in enumerate(labels[:8]):
        box = (8, 8 + row * 18, 8 + 7 * len(label) + 8, 8 + row * 18 + 16)
        draw.rectangle(box, fill=(255, 255, 200))
        draw.text((12, 9 + row * 18), label, fill=(200, 0, 0))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", compress_level=3)
    return buffer.getvalue()


def load_trajectory(folder: Path | str) -> Trajectory:
    """A trajectory folder back as typed objects. A torn last line (killed mid-write) is
    skipped and reported; a bad line anywhere else is an error naming its line number."""
    folder = Path(folder)
    lines_path = folder / TRAJECTORY_FILE
    if not lines_path.is_file():
        raise FileNotFoundError(f"{folder} is not a trajectory folder: no {TRAJECTORY_FILE}")
    raw = lines_path.read_text(encoding="utf-8").split("\n")
    steps: list[StepEntry] = []
    torn = False
    for number, line in enumerate(raw, start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as err:
            if all(not rest.strip() for rest in raw[number:]):
                torn = True
                break
            raise ValueError(f"{lines_path}:{number}: not a JSON line ({err})") from err
        steps.append(StepEntry.from_json(data))
    run_path, result_path = folder / RUN_FILE, folder / RESULT_FILE
    run = json.loads(run_path.read_text(encoding="utf-8")) if run_path.is_file() else {}
    result = None
    if result_path.is_file():
        result = RunResult.from_json(json.loads(result_path.read_text(encoding="utf-8")))
    return Trajectory(folder, run, tuple(steps), result, torn)


def find_secrets(folder: Path, secrets: Sequence[str]) -> list[str]:
    """Files under ``folder`` that contain any of ``secrets`` (for audits and tests)."""
    found = []
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            data = path.read_bytes()
            if any(s.encode() in data for s in secrets if s):
                found.append(str(path.relative_to(folder)))
    return found


__all__ = [
    "GroundingEntry",
    "ModelCall",
    "StepDraft",
    "StepEntry",
    "Trajectory",
    "TrajectoryWriter",
    "call_text",
    "draw_plan",
    "find_secrets",
    "load_trajectory",
]
