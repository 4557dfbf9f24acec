"""Who acts in a benchmark task: ``agent`` (the model), ``reference`` (the task's reference
solution, replayed with live grounding), ``noop`` (ends at once with done).

Each policy acts on the task's desktop and records two things as it goes: OSWorld's
``traj.jsonl`` (step_num, action_timestamp, action, response, reward, done, info,
screenshot_file) with a ``step_<n>_<timestamp>.png`` taken after each action, and our own
trajectory folder (``trajectory/``: trajectory.jsonl, screenshots, result.json).

The reference solution is data: each line is parsed with ``agent_s.actions.parse_action``
(never evaluated), its targets are grounded on the live screen, and its plan is performed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from agent_s.bench.scoring import LastAction
from agent_s.bench.tasks import Task

PolicyName = Literal["agent", "reference", "noop"]
POLICIES: tuple[PolicyName, ...] = ("agent", "reference", "noop")
GROUND_TRIES = 3  # a reference target not yet on screen is looked for again after a pause
SETTLE = 0.5


@dataclass
class PolicyOutcome:
    """How the acting ended: the last action (for scoring), a status, and what it cost."""

    last_action: LastAction
    status: str  # the RunResult status: succeeded, failed, max_steps, error, ...
    steps: int
    reason: str = ""
    cost_usd: float = 0.0
    tokens: int = 0
    model_calls: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


class OSWorldRecorder:
    """OSWorld's per-task record: traj.jsonl lines and a screenshot after each step."""

    def __init__(self, folder: Path, backend: Any) -> None:
        self.folder = folder
        self.backend = backend
        self.folder.mkdir(parents=True, exist_ok=True)
        self._file = open(folder / "traj.jsonl", "a", encoding="utf-8")  # noqa: SIM115

    def step(self, n: int, action: str, response: str, done: bool, info: Mapping[str, Any]) -> None:
        stamp = datetime.now().strftime("%Y%m%d@%H%M%S%f")
        name = f"step_{n}_{stamp}.png"
        try:
            self.backend.capture().image.save(self.folder / name)
        except Exception as err:  # a failed capture must not lose the step's line
            name = ""
            info = {**info, "screenshot_error": f"{type(err).__name__}: {err}"}
        line = {
            "step_num": n,
            "action_timestamp": stamp,
            "action": action,
            "response": response,
            "reward": 0,
            "done": done,
            "info": dict(info),
            "screenshot_file": name,
        }
        self._file.write(json.dumps(line, ensure_ascii=False) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def _last(code: str | None) -> LastAction:
    if code in ("DONE", "FAIL", "WAIT"):
        return code  # type: ignore[return-value]
    return "OTHER" if code is not None else None


# -- reference and noop ---------------------------------------------------------------------------


def run_reference(
    task: Task, backend: Any, folder: Path, lines: tuple[str, ...], *, policy: str = "reference"
) -> PolicyOutcome:
    """Replay ``lines`` (action calls in our syntax) with live grounding."""
    from agent_s.actions import ActionParseError, parse_action
    from agent_s.desktop.base import perform
    from agent_s.errors import AgentSError
    from agent_s.grounding import GroundingError, Observation, OcrGrounder, build_grounder
    from agent_s.result import RunResult, RunStatus
    from agent_s.trajectory import GroundingEntry, StepDraft, TrajectoryWriter

    ocr = OcrGrounder()
    grounder = build_grounder("auto", ocr=ocr)
    recorder = OSWorldRecorder(folder, backend)
    writer = TrajectoryWriter(folder / "trajectory")
    writer.write_run({"task": task.instruction, "policy": policy, "task_id": task.id})
    start, last, status, reason, n = time.monotonic(), None, "max_steps", "", 0
    try:
        for n, line in enumerate(lines, 1):
            draft = StepDraft(step=n, started_at=time.time())
            draft.reply = line
            try:
                action = parse_action(line)
                draft.action = action
                points = _ground(action, backend, grounder, ocr, draft, GroundingEntry, Observation)
                plan = action.plan(points)
                draft.code = action.to_pyautogui(points)
                if plan:
                    perform(backend, plan)
                    time.sleep(SETTLE)
            except (ActionParseError, GroundingError, AgentSError, ValueError) as err:
                draft.errors.append(f"{type(err).__name__}: {err}")
                writer.write_step(draft.entry("error", str(err)[:500]))
                recorder.step(n, draft.code or "", line, True, {"error": str(err)[:500]})
                status, reason = "error", f"reference step {n} ({line}): {err}"
                break
            last = _last(draft.code)
            terminal = last in ("DONE", "FAIL")
            writer.write_step(draft.entry("terminal" if terminal else "ok", ""))
            recorder.step(n, draft.code or "", line, terminal, {})
            if terminal:
                status = "succeeded" if last == "DONE" else "failed"
                reason = f"the {policy} policy ended with {last.lower()}"
                break
    finally:
        recorder.close()
        result = RunResult(
            task.instruction,
            RunStatus(status),
            _cause(status),
            reason,
            steps=n,
            model=policy,
            started_at=time.time(),
        )
        writer.write_result(result)
        writer.close()
    return PolicyOutcome(last, status, n, reason, extra={"seconds": time.monotonic() - start})


def _cause(status: str) -> Any:
    return {"succeeded": "done", "failed": "model_gave_up", "error": "desktop_error"}.get(
        status, "max_steps"
    )


def _ground(
    action: Any, backend: Any, grounder: Any, ocr: Any, draft: Any, entry: Any, observation: Any
) -> list[Any]:
    from agent_s.grounding import GroundingError

    targets = action.targets()
    if not targets:
        return []
    for attempt in range(GROUND_TRIES):
        shot = backend.capture()
        obs = observation(shot, tuple(backend.windows()), backend.geometry())
        try:
            if targets[0].kind != "element":
                span = ocr.span(targets[0].text, targets[1].text, obs)
                found = [span.start, span.end]
                for target, at in zip(targets, found, strict=True):
                    draft.grounding.append(entry(target.text, target.kind, "ocr", (at.x, at.y)))
                return found
            points = []
            for target in targets:
                result = grounder.ground(target.text, obs)
                draft.grounding.append(entry.of(target.kind, result))
                points.append(result.point)
            return points
        except GroundingError:
            draft.grounding.clear()
            if attempt == GROUND_TRIES - 1:
                raise
            time.sleep(1.0)
    return []


def run_noop(task: Task, backend: Any, folder: Path) -> PolicyOutcome:
    """Do nothing and say done: every feasible task must score 0 with this."""
    return run_reference(task, backend, folder, ("agent.done()",), policy="noop")


# -- the agent ----------------------------------------------------------------------------------


def _safety(options: Mapping[str, Any]) -> dict[str, Any]:
    """The run's safety and code-agent settings (``bench run`` sends them; without them: mode
    auto, as nobody can approve here, and model-written code under bubblewrap where it works),
    and the secrets to redact."""
    from agent_s.code_runner import sandbox_problem
    from agent_s.config import CodeAgentConfig, SafetyConfig, read_secrets

    safety = SafetyConfig.from_mapping(options.get("safety") or {}, "auto")
    if options.get("code_agent") is not None:
        code = CodeAgentConfig.from_mapping(options["code_agent"])
    else:
        code = CodeAgentConfig(sandbox="bwrap" if sandbox_problem() is None else "none")
    # the values the user marked secret: this machine's configuration file and variables
    return {"safety": safety, "code": code, "secrets": read_secrets()}


def run_agent(task: Task, backend: Any, folder: Path, options: Mapping[str, Any]) -> PolicyOutcome:
    """The model-driven agent: ``Agent.run`` with a step callback that writes OSWorld's lines."""
    from agent_s.agent import Agent
    from agent_s.config import AgentConfig, GroundingConfig, ModelConfig

    model = ModelConfig.from_env(
        provider=options.get("provider"),
        model=options.get("model"),
        base_url=options.get("base_url"),
        api_key=options.get("api_key"),
    )
    grounding = GroundingConfig.from_env(
        mode=options.get("ground"),
        url=options.get("ground_url"),
        model=options.get("ground_model"),
    )
    settings = AgentConfig.from_env(
        max_steps=options.get("max_steps"),
        max_cost_usd=options.get("max_cost_usd"),
        record_dir=folder,
        reflection=options.get("reflection"),
        **_safety(options),
    )
    recorder = OSWorldRecorder(folder, backend)
    last: list[LastAction] = [None]

    def on_step(report: Any) -> None:
        last[0] = _last(report.code)
        info = {"outcome": report.outcome.kind, "grounding": [g.grounder for g in report.grounding]}
        recorder.step(
            report.step, report.code or "", report.action_text, report.terminal is not None, info
        )

    agent = Agent(model, settings=settings, grounding=grounding, backend=backend, on_step=on_step)
    try:
        result = agent.run(task.instruction)
    finally:
        recorder.close()
    if result.trajectory_dir is not None and result.trajectory_dir.name != "trajectory":
        result.trajectory_dir.rename(folder / "trajectory")
    return PolicyOutcome(
        last[0],
        result.status.value,
        result.steps,
        result.reason,
        cost_usd=result.usage.cost_usd,
        tokens=result.usage.total_tokens,
        model_calls=result.model_calls,
    )


__all__ = [
    "POLICIES",
    "OSWorldRecorder",
    "PolicyName",
    "PolicyOutcome",
    "run_agent",
    "run_noop",
    "run_reference",
]
