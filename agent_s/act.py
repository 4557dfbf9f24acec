"""Carrying out one grounded action: the safety gate, then notes, the code agent or the desktop.

Every action passes the safety gate (``agent_s.safety``) first, judged against the windows as
they are now; a refused action goes back to the model as the step's error, with no code (a
caller executing code would bypass the gate). ``save_to_knowledge`` keeps its notes;
``call_code_agent`` runs the code agent once (``agent_s.code_agent``), whose turns become the
step's sub-steps, and only when it was offered; any other action's plan is performed on the
desktop (each operation judged again just before it runs) unless the caller executes it or it is
a dry run, which draws the plan instead.

``Actor.act`` puts what it does on the step as it goes (``StepLog``: the code, the gate's
decision, the operations performed, the sub-steps, the time), so a step cut short by an error or
Ctrl-C still records them; it returns how it went.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from PIL import Image, ImageChops

from agent_s.actions import ActionModel, CallCodeAgentAction, SaveToKnowledgeAction
from agent_s.code_agent import CodeAgent
from agent_s.config import AgentConfig
from agent_s.desktop.base import DesktopBackend, WindowInfo, perform
from agent_s.desktop.ops import Point
from agent_s.errors import ActionExecutionError, AgentSError
from agent_s.grounding import Observation
from agent_s.models.types import Message, ModelReply
from agent_s.prompting import Platform
from agent_s.redact import Redactor
from agent_s.safety import SafetyGate, approval_image, subject_for_action
from agent_s.step import call_text
from agent_s.trajectory import TrajectoryWriter, draw_plan

CODE_AGENT_MISSING = (
    "call_code_agent is not available in this run (the code agent is switched off, or the "
    "actions are executed by the caller): no code was run. Do the job with the other actions."
)


Acted = tuple[Literal["ok", "error"], str]  # how it went, and the detail (error, summary)


class StepLog(Protocol):
    """The step being built, as carrying out an action adds to it (the loop keeps it)."""

    def set(self, **fields: Any) -> None: ...

    def add(self, **items: Sequence[Any]) -> None: ...

    def timed(self, part: str) -> AbstractContextManager[None]: ...


@dataclass(frozen=True)
class Scene:
    """Where an action is carried out: the step, the screen the model saw, the desktop."""

    step: int
    task: str
    observation: Observation
    platform: Platform
    backend: Callable[[], DesktopBackend]  # the desktop, made on first use
    env: Mapping[str, str] | None  # the environment for the code agent's programs
    writer: TrajectoryWriter | None
    execute: bool  # False: the caller carries out the code itself
    code_offered: bool  # call_code_agent was in the catalogue


class Actor:
    """Carries out actions (see the module docstring). ``complete`` makes one model call for
    the code agent (``purpose`` "code"), counted and timed by the loop."""

    def __init__(
        self,
        settings: AgentConfig,
        gate: SafetyGate,
        complete: Callable[[Sequence[Message], str], ModelReply],
        *,
        secrets: Sequence[str | None],
        redactor: Redactor,
    ) -> None:
        self.settings = settings
        self.gate = gate
        self.complete = complete
        self.secrets = secrets
        self.redactor = redactor
        self.notes: list[str] = []  # what save_to_knowledge kept, for every later request

    def reset(self) -> None:
        """A new task: no notes."""
        self.notes = []

    def act(
        self, action: ActionModel, points: Sequence[Point], scene: Scene, log: StepLog
    ) -> Acted:
        """Carry out ``action`` at ``points``; what it did goes on ``log`` as it happens."""
        settings = self.settings
        if isinstance(action, CallCodeAgentAction) and not (scene.execute and scene.code_offered):
            log.set(code=action.to_pyautogui(points))
            return _failed(log, CODE_AGENT_MISSING)
        # Judged against the windows as they are now, not as the model saw them seconds ago: a
        # window that appeared meanwhile (a slow `open`) gets the keys, so it decides.
        windows: Sequence[WindowInfo] = scene.observation.windows
        fresh = False
        if scene.execute:
            with contextlib.suppress(AgentSError):  # unavailable: judge by the observation's
                windows, fresh = scene.backend().windows(), True
        subject = subject_for_action(action, points, windows, call_text(action))
        decision = self.gate.check(
            subject,
            step=scene.step,
            ask=not settings.dry_run,
            image=lambda: self._approval_image(scene, points, subject.window),
        )
        log.set(safety=decision.to_json())
        if not decision.allowed:  # no code either: a caller executing it would bypass the gate
            return _failed(log, decision.message)
        plan = action.plan(points)
        log.set(code=action.to_pyautogui(points))
        if isinstance(action, SaveToKnowledgeAction):
            self.notes.extend(action.text)
            return "ok", f"{len(action.text)} note(s) saved"
        if isinstance(action, CallCodeAgentAction):
            return self._run_code_agent(action, scene, log)
        if settings.dry_run and scene.writer is not None and plan:
            name = f"step_{scene.step:03d}_plan.png"
            picture = draw_plan(scene.observation.screenshot, plan)
            log.set(dry_run_image=scene.writer.write_image(name, picture))
        if not scene.execute or not plan:
            return "ok", "not executed (dry run)" if settings.dry_run else ""
        with log.timed("execute"):
            try:
                backend = scene.backend()
                guard = self.gate.guard(
                    subject,
                    decision,
                    backend.windows,
                    order=backend.window_order,
                    listed=windows if fresh else None,
                )
                perform(backend, plan, before=guard)
            except (ActionExecutionError, ValueError) as err:
                log.add(errors=[f"{type(err).__name__}: {err}"])
                return "error", str(err)
            finally:
                log.add(executed=[{"op": type(op).__name__, **asdict(op)} for op in plan])
        if settings.settle_seconds:
            with log.timed("settle"):
                settle(scene.backend(), settings.settle_seconds)
        return "ok", ""

    def _approval_image(
        self, scene: Scene, points: Sequence[Point], window: WindowInfo | None
    ) -> tuple[bytes, Path | None]:
        """The screen around the action's target, marked, for an approver (saved if recording)."""
        data = approval_image(scene.observation.screenshot, points, window)
        if scene.writer is None:
            return data, None
        name = scene.writer.write_image(f"step_{scene.step:03d}_approval.png", data)
        return data, scene.writer.folder / name

    def _run_code_agent(self, action: CallCodeAgentAction, scene: Scene, log: StepLog) -> Acted:
        """Run the code agent once; its turns become the step's sub-steps. Its code runs with
        the desktop's environment (HOME, DISPLAY) when the backend has one (X11Backend.env)."""
        agent = CodeAgent(
            lambda messages: self.complete(messages, "code"),
            self.settings.code,
            scene.platform,
            self.gate,
            env=scene.env,
            secrets=self.secrets,
            redactor=self.redactor,
            step=scene.step,
        )
        with log.timed("code"):
            report = agent.run(
                action.task or scene.task, on_substep=lambda turn: log.add(substeps=[turn])
            )
        if report.succeeded:
            return "ok", report.worker_text
        return _failed(log, report.worker_text)


def settle(backend: DesktopBackend, limit: float, *, first: float = 0.15) -> None:
    """Wait for the screen to react to an action: at least ``first`` seconds, then until two
    looks 50 ms apart show the same screen (a blinking cursor aside), at most ``limit`` seconds
    in all. Most actions are answered within a frame or two; a slow one uses the whole limit."""
    deadline = time.monotonic() + limit
    time.sleep(min(first, limit))
    before = _glance(backend)
    while time.monotonic() + _GLANCE_EVERY <= deadline:
        time.sleep(_GLANCE_EVERY)
        now = _glance(backend)
        if before is not None and now is not None and _still(before, now):
            return
        before = now
    time.sleep(max(0.0, deadline - time.monotonic()))


_GLANCE_EVERY = 0.05


def _glance(backend: DesktopBackend) -> Image.Image | None:
    """The screen at an eighth of its size, in grey (a few milliseconds); None if unavailable."""
    try:
        return backend.capture().image.convert("L").reduce(8)
    except AgentSError:
        return None


def _still(before: Image.Image, now: Image.Image) -> bool:
    """Whether two glances show the same screen: under 0.1% of their pixels changed."""
    if before.size != now.size:
        return False
    changed = ImageChops.difference(before, now).point(lambda v: 255 if v > 8 else 0)
    histogram = changed.histogram()
    return histogram[255] <= 0.001 * before.width * before.height


def _failed(log: StepLog, message: str) -> Acted:
    log.add(errors=[message])
    return "error", message


__all__ = ["CODE_AGENT_MISSING", "Acted", "Actor", "Scene", "StepLog"]
