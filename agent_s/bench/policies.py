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

import io
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from agent_s.bench.scoring import LastAction
from agent_s.bench.tasks import Task
from agent_s.guards import files

if TYPE_CHECKING:
    from agent_s.memory import MemoryStore
    from agent_s.record.step import Step
    from agent_s.settings.read import Settings

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
        files.output_folder(self.folder)
        self._file = files.open_append(folder / "traj.jsonl")

    def step(self, n: int, action: str, response: str, done: bool, info: Mapping[str, Any]) -> None:
        stamp = datetime.now().strftime("%Y%m%d@%H%M%S%f")
        name = f"step_{n}_{stamp}.png"
        try:
            buffer = io.BytesIO()
            self.backend.capture().image.save(buffer, "PNG")
            files.write_bytes(self.folder / name, buffer.getvalue())
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
    match code:
        case "DONE" | "FAIL" | "WAIT":
            return code
        case None:
            return None
        case _:
            return "OTHER"


# -- reference and noop ---------------------------------------------------------------------------


def run_reference(
    task: Task, backend: Any, folder: Path, lines: tuple[str, ...], *, policy: str = "reference"
) -> PolicyOutcome:
    """Replay ``lines`` (action calls in our syntax) with live grounding (``Locator.locate``,
    as the agent grounds): a target not yet on the screen is looked for again after a pause."""
    from agent_s.actions import ActionParseError, parse_action
    from agent_s.desktop.base import perform
    from agent_s.errors import AgentSError
    from agent_s.grounding import GroundingError, Locator
    from agent_s.record.result import RunResult, RunStatus
    from agent_s.record.step import Step, call_text
    from agent_s.record.trajectory import TrajectoryWriter

    locator = Locator.for_mode("auto")
    recorder = OSWorldRecorder(folder, backend)
    writer = TrajectoryWriter(folder / "trajectory")
    writer.write_run({"task": task.instruction, "policy": policy, "task_id": task.id})
    start, last, status, reason, n = time.monotonic(), None, "max_steps", "", 0
    try:
        for n, line in enumerate(lines, 1):
            step = Step.begin(n).model_copy(update={"reply": line})
            try:
                action = parse_action(line)
                step = step.model_copy(update={"action": action, "action_text": call_text(action)})
                points, groundings = _ground(action, backend, locator)
                step = step.add(grounding=groundings)
                plan = action.plan(points)
                step = step.model_copy(update={"code": action.to_pyautogui(points)})
                if plan:
                    perform(backend, plan)
                    time.sleep(SETTLE)
            except (ActionParseError, GroundingError, AgentSError, ValueError) as err:
                step = step.add(errors=[f"{type(err).__name__}: {err}"])
                writer.write_step(step.ended("error", str(err)[:500]))
                recorder.step(n, step.code or "", line, True, {"error": str(err)[:500]})
                status, reason = "error", f"reference step {n} ({line}): {err}"
                break
            last = _last(step.code)
            terminal = last in ("DONE", "FAIL")
            writer.write_step(step.ended("terminal" if terminal else "ok"))
            recorder.step(n, step.code or "", line, terminal, {})
            if last in ("DONE", "FAIL"):  # terminal (and `last` not None)
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


def _ground(action: Any, backend: Any, locator: Any) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """(the screen points of the action's targets, how each was grounded), on a fresh
    screenshot per try; raises the last try's ``GroundingError``."""
    from agent_s.desktop.base import extents_on_screen
    from agent_s.grounding import NotLocated, Observation

    targets = action.targets()
    if not targets:
        return (), ()
    for attempt in range(GROUND_TRIES):
        shot = backend.capture()
        found = locator.locate(
            targets,
            Observation(
                shot, tuple(backend.windows()), backend.geometry(), extents_on_screen(backend)
            ),
        )
        if not isinstance(found, NotLocated):
            return found.points, found.groundings
        if attempt == GROUND_TRIES - 1:
            raise found.error
        time.sleep(1.0)
    return (), ()


def run_noop(task: Task, backend: Any, folder: Path) -> PolicyOutcome:
    """Do nothing and say done: every feasible task must score 0 with this."""
    return run_reference(task, backend, folder, ("agent.done()",), policy="noop")


# -- the agent ----------------------------------------------------------------------------------


def run_agent(
    task: Task,
    backend: Any,
    folder: Path,
    settings: Settings,
    *,
    api_key: str | None = None,
    memory: MemoryStore | None = None,
    frozen: bool = False,
) -> PolicyOutcome:
    """The model-driven agent: ``Agent.run`` with a step callback that writes OSWorld's lines.
    ``settings``: as ``bench run`` resolved them; ``api_key``: else the provider's variable.
    This process's environment gives the values of the variables marked secret. ``memory``:
    the store its prompts retrieve from (the agent learns nothing itself: the worker does, with
    the evaluator's verdict); ``frozen``: the store is only read."""
    from agent_s.loop.agent import Agent

    model = settings.build_model(api_key)
    grounding = settings.build_grounding()
    # a benchmark task is always executed: a dry run would claim done with nothing done
    config = settings.build_agent_config(record_dir=folder, dry_run=False)
    config = replace(config, memory=replace(config.memory, learn=False, write=not frozen))
    recorder = OSWorldRecorder(folder, backend)
    last: list[LastAction] = [None]

    def on_step(step: Step) -> None:
        last[0] = _last(step.code)
        outcome = "ok" if step.outcome == "terminal" else step.outcome
        info = {"outcome": outcome, "grounding": [g.grounder for g in step.grounding]}
        recorder.step(step.step, step.code or "", step.action_text, step.terminal is not None, info)

    from agent_s.view.bench import TaskView

    view = TaskView.open(task.id, backend, folder)  # bench run --view TASK_ID: this task's page
    agent = Agent(
        model,
        settings=config,
        grounding=grounding,
        backend=backend,
        profiles=settings.build_profiles(),
        on_step=view.on_step(on_step) if view is not None else on_step,
        on_plan=view.live.on_plan if view is not None else None,
        memory=memory,
        control=view.control if view is not None else None,
    )
    try:
        result = agent.run(task.instruction)
        if view is not None:
            view.live.finished(result)
        if result.cause == "infeasible_gate":  # the planner declared it before any action:
            last[0] = "FAIL"  # OSWorld's agents declare infeasible tasks with FAIL
            info = {"outcome": "ok", "planner": result.reason}
            recorder.step(result.steps + 1, "FAIL", "agent.fail()", True, info)
    finally:
        recorder.close()
        if view is not None:
            view.close()
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
