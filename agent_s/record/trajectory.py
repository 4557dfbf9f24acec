"""The trajectory folder: a durable record written as the run goes, loadable back.

    run-20250101-120000-ab12/
      run.json            task, model, settings (written first; no secrets)
      trajectory.jsonl    one JSON line per step, flushed and fsynced when the step ends
      plan.jsonl          planned runs: each plan, check, strategy switch and replan, in order
      step_001.png        the screenshot the model was shown at each step (as sent; with
                          set-of-marks, with its numbered marks drawn: the step's ``marks``
                          line lists each mark's number, screen box, source and text)
      step_001_plan.png   dry runs: the intended action drawn on the screenshot
      step_001_approval.png   the screen crop an approver was shown (safety mode confirm)
      result.json         the RunResult, written (atomically) when the run ends

Each line is one ``agent_s.record.step.Step`` as pydantic dumps it, and is loaded back the same way
(``Step.model_validate_json``); trajectories written before ``Step`` (``StepEntry`` lines) have
the same fields and load as they are. Each step records the safety gate's decision (``safety``:
allowed or refused, by the policy, a user rule, an approver and who, or nobody) and, for
``call_code_agent``, the code agent's turns (``substeps``: each reply, the code, its gate
decision, exit status and bounded output).

A run killed with SIGKILL keeps every finished step readable: each line is written whole and
synced before the next step starts. ``load_trajectory`` skips only a torn last line. The
screenshot sent at a step is written meanwhile, in the background (``queue_image``, while the
model answers and the action runs), and synced before the line that names it.

Secrets never reach the folder's text: nothing secret is put into an entry, and the writer
redacts (``agent_s.guards.redaction``) every string of every record, and the JSON line as written,
before
anything reaches the disk. Screenshots are written as they were sent: pixels cannot be redacted.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from agent_s.desktop import ops
from agent_s.desktop.base import Screenshot
from agent_s.guards import files
from agent_s.guards.redaction import Redactor
from agent_s.marks import drawing as marks
from agent_s.record.result import RunResult
from agent_s.record.step import Step

if TYPE_CHECKING:
    from agent_s.settings.config import AgentConfig, GroundingConfig, ModelConfig

TRAJECTORY_FILE = "trajectory.jsonl"
RESULT_FILE = "result.json"
RUN_FILE = "run.json"
PLAN_FILE = "plan.jsonl"


@dataclass(frozen=True)
class Trajectory:
    """A trajectory folder loaded back: the run's header, its steps, its result (if it ended)."""

    folder: Path
    run: dict[str, Any]
    steps: tuple[Step, ...]
    result: RunResult | None
    torn_last_line: bool = False


def run_header(
    task: str,
    started_at: float,
    model: ModelConfig,
    grounding: GroundingConfig,
    settings: AgentConfig,
) -> dict[str, Any]:
    """What ``run.json`` holds: the task, the models, the settings (secrets counted, never
    shown), the Python version."""
    values = asdict(settings)
    values["record_dir"] = str(settings.record_dir) if settings.record_dir else None
    values["secrets"] = len(settings.secrets)  # how many, never which
    return {
        "task": task,
        "started_at": started_at,
        "model": model.model,
        "provider": model.provider,
        "base_url": model.base_url,
        "grounding": grounding.mode,
        "grounding_model": grounding.model,
        "settings": values,
        "python": sys.version.split()[0],
    }


class TrajectoryWriter:
    """Writes one run's folder. Every write is flushed and fsynced before it returns, but for
    ``queue_image``'s, which are before the next step line, event or result is written."""

    def __init__(
        self,
        folder: Path,
        *,
        secrets: Iterable[str | None] = (),
        redactor: Redactor | None = None,
    ) -> None:
        """``secrets``: values to redact; ``redactor``: a run's redactor (both may be given)."""
        self.folder = files.output_folder(Path(folder))
        given = list(secrets)
        if redactor is None or given:
            redactor = Redactor([*(redactor.values if redactor else ()), *given])
        self.redactor = redactor
        self._lines = files.open_append(self.folder / TRAJECTORY_FILE)
        self.steps_written = 0
        self._writer: ThreadPoolExecutor | None = None  # queue_image's, made on first use
        self._queued: list[Future[None]] = []

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
            if not os.path.lexists(folder):  # a link planted at the name: the next name
                return cls(folder, secrets=secrets, redactor=redactor)
        raise FileExistsError(f"cannot find a free trajectory folder name under {parent}")

    def _text(self, data: Any) -> str:
        """The record as JSON, redacted twice: each string, then the line (paths and enums
        become strings only while dumping)."""
        text = json.dumps(self.redactor.data(data), ensure_ascii=False, default=_default)
        return self.redactor.text(text)

    def write_run(self, header: dict[str, Any]) -> None:
        self._atomic(RUN_FILE, (self._text(header) + "\n").encode("utf-8"))

    def write_step(self, step: Step) -> None:
        """One line: the step as pydantic dumps it to JSON (its image left out), redacted."""
        self._written_queued()
        self._lines.write(self._text(step.model_dump(mode="json")) + "\n")
        self._lines.flush()
        os.fsync(self._lines.fileno())
        self.steps_written += 1

    def write_event(self, event: dict[str, Any]) -> None:
        """One line of ``plan.jsonl``: a plan, a check, a strategy switch or a replan."""
        self._written_queued()
        with files.open_append(self.folder / PLAN_FILE) as handle:
            handle.write(self._text(event) + "\n")
            handle.flush()
            os.fsync(handle.fileno())

    def write_image(self, name: str, data: bytes) -> str:
        self._atomic(name, data)
        return name

    def queue_image(self, name: str, data: bytes) -> str:
        """``write_image`` in the background: it returns at once, and the file is written and
        synced before the next line (step or event) or the result is; an error writing it is
        raised there."""
        if self._writer is None:
            self._writer = ThreadPoolExecutor(1, thread_name_prefix="trajectory")
        self._queued.append(self._writer.submit(self._atomic, name, data))
        return name

    def write_result(self, result: RunResult) -> None:
        self._written_queued()
        self._atomic(RESULT_FILE, (self._text(result.to_json()) + "\n").encode("utf-8"))

    def close(self) -> None:
        try:
            self._written_queued()
        finally:
            if self._writer is not None:
                self._writer.shutdown()
                self._writer = None
            self._lines.close()

    def _written_queued(self) -> None:
        """Wait until every queued image is on disk (raising the first error writing one)."""
        queued, self._queued = self._queued, []
        for future in queued:
            future.result()

    def _atomic(self, name: str, data: bytes) -> None:
        files.write_bytes(self.folder / name, data, sync=True)


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
    return marks.png(marks.plan_picture(screenshot, plan))


def load_trajectory(folder: Path | str) -> Trajectory:
    """A trajectory folder back as typed objects. A torn last line (killed mid-write) is
    skipped and reported; a bad line anywhere else is an error naming its line number. The
    folder's own files are read only where they are inside it: one that is a link leading out
    is skipped, with a line naming it (``agent_s.guards.files``)."""
    folder = Path(folder)
    lines_path = folder / TRAJECTORY_FILE
    real = _own_file(folder, TRAJECTORY_FILE)
    if real is None or not real.is_file():
        raise FileNotFoundError(
            f"{folder} is not a trajectory folder: no {TRAJECTORY_FILE} (give the folder "
            "agent-s run printed as trajectory:, under ~/.local/share/agent-s/runs by default)"
        )
    raw = files.read_text(real).split("\n")
    steps: list[Step] = []
    torn = False
    for number, line in enumerate(raw, start=1):
        if not line.strip():
            continue
        try:
            steps.append(Step.model_validate_json(line))
        except ValidationError as err:
            cut = any(e["type"] == "json_invalid" for e in err.errors())
            if cut and all(not rest.strip() for rest in raw[number:]):
                torn = True
                break
            problem = "not a JSON line" if cut else "not a step"
            raise ValueError(f"{lines_path}:{number}: {problem} ({err})") from err
    run_path, result_path = _own_file(folder, RUN_FILE), _own_file(folder, RESULT_FILE)
    run = json.loads(files.read_text(run_path)) if run_path and run_path.is_file() else {}
    result = None
    if result_path is not None and result_path.is_file():
        result = RunResult.from_json(json.loads(files.read_text(result_path)))
    return Trajectory(folder, run, tuple(steps), result, torn)


def started_at(folder: Path) -> float | None:
    """When the run in ``folder`` started (its ``run.json``), without reading its steps; None
    when that cannot be read."""
    path = _own_file(folder, RUN_FILE)
    try:
        header = json.loads(files.read_text(path)) if path is not None else None
    except (OSError, ValueError):
        return None
    value = header.get("started_at") if isinstance(header, dict) else None
    return float(value) if isinstance(value, (int, float)) else None


def _own_file(folder: Path, name: str) -> Path | None:
    """``folder/name`` as a real path inside ``folder``; None when there is none, or when it
    leads out of the folder (skipped, said on a line)."""
    if not os.path.lexists(folder / name):
        return None
    return files.contained(folder, name, f"the run's {name}")


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
    "Trajectory",
    "TrajectoryWriter",
    "draw_plan",
    "find_secrets",
    "load_trajectory",
    "run_header",
]
