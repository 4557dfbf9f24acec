"""Carrying out one grounded action: the safety gate, then notes, the code agent or the desktop.

Every action passes the safety gate (``agent_s.safety.gate``) first, judged against the windows as
they are now; a refused action goes back to the model as the step's error, with no code (a
caller executing code would bypass the gate). ``save_to_knowledge`` keeps its notes;
``call_code_agent`` runs the code agent once (``agent_s.coding.agent``), whose turns become the
step's sub-steps, and only when it was offered; any other action's plan is performed on the
desktop (each operation judged again just before it runs) unless the caller executes it or it is
a dry run, which draws the plan instead.

``Actor.act`` puts what it does on the step as it goes (``StepLog``: the code, the gate's
decision, the operations performed, the sub-steps, the time), so a step cut short by an error or
Ctrl-C still records them; it returns how it went.

What the model is told of an action that ran is what was seen to happen, not only that it ran
(``agent_s.desktop.watch``): windows that appeared or closed, the focus moving, a title
changing, the focused field's text changing (AT-SPI), or that the screen did not change at all.
``open`` waits (at most ``OPEN_WAIT`` seconds, returning as soon as it appears) for the new
window and names it, or says that none is shown yet; an application already open is brought to
the front by the backend, and the model is told so. The sentences go on the step
(``Step.observed``) and make up the detail of a step that went well. Plans are made with the
platform's key names (``scene.platform.os``: command+a on macOS).
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
from agent_s.coding.agent import CodeAgent, ScreenContext
from agent_s.desktop import ops
from agent_s.desktop.base import DesktopBackend, ScreenGeometry, WindowInfo, perform
from agent_s.desktop.ops import Point
from agent_s.desktop.park import moves_pointer, park_point
from agent_s.desktop.settle import until_still
from agent_s.desktop.watch import (
    FieldReader,
    Glimpse,
    active,
    await_typed,
    field_change,
    new_windows,
    window_changes,
    window_name,
)
from agent_s.errors import ActionExecutionError, AgentSError
from agent_s.grounding import Observation
from agent_s.guards.redaction import Redactor
from agent_s.models.types import Message, ModelReply
from agent_s.prompting import Platform
from agent_s.record.result import RunEnded, RunStatus
from agent_s.record.step import call_text
from agent_s.record.trajectory import TrajectoryWriter, draw_plan
from agent_s.safety.gate import SafetyGate, approval_image, subject_for_action
from agent_s.settings.config import AgentConfig

CODE_AGENT_MISSING = (
    "call_code_agent is not available in this run (the code agent is switched off, or the "
    "actions are executed by the caller): no code was run. Do the job with the other actions."
)


Acted = tuple[Literal["ok", "error"], str]  # how it went, and the detail (error, summary)

OPEN_WAIT = 10.0  # seconds ``open`` waits for the new window before saying none is shown yet
_OPEN_POLL = 0.05
ENTER_WAIT = 2.0  # seconds an Enter after typed text waits for the field to show the text
_STALE = 0.5  # a window list older than this (an approver was asked) is read again
# operations after which "the screen did not change" is news: input the model expected to act
_INPUT_OPS = (ops.Click, ops.Drag, ops.Scroll, ops.Hotkey, ops.HoldAndPress, ops.TypeText)


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
        self.open_wait = OPEN_WAIT
        self.fields = FieldReader()
        # the code agent's memory section for a job (agent_s.memory.runmemory); None: none
        self.recall: Callable[[str], str] | None = None

    def reset(self) -> None:
        """A new task: no notes."""
        self.notes = []

    def act(
        self, action: ActionModel, points: Sequence[Point], scene: Scene, log: StepLog
    ) -> Acted:
        """Carry out ``action`` at ``points``; what it did goes on ``log`` as it happens."""
        settings = self.settings
        os = scene.platform.os
        if isinstance(action, CallCodeAgentAction) and not (scene.execute and scene.code_offered):
            log.set(code=action.to_pyautogui(points, os=os))
            return _failed(log, CODE_AGENT_MISSING)
        # Judged against the windows as they are now, not as the model saw them seconds ago: a
        # window that appeared meanwhile (a slow `open`) gets the keys, so it decides.
        windows: Sequence[WindowInfo] = scene.observation.windows
        fresh = False
        if scene.execute:
            with contextlib.suppress(AgentSError):  # unavailable: judge by the observation's
                windows, fresh = scene.backend().windows(), True
        listed_at = time.monotonic()
        subject = subject_for_action(action, points, windows, call_text(action), os=os)
        decision = self.gate.check(
            subject,
            step=scene.step,
            ask=not settings.dry_run,
            image=lambda: self._approval_image(scene, points, subject.window),
        )
        log.set(safety=decision.to_json())
        if not decision.allowed:  # no code either: a caller executing it would bypass the gate
            return _failed(log, decision.message)
        plan = action.plan(points, os=os)
        log.set(code=action.to_pyautogui(points, os=os))
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
        backend = scene.backend()
        before = None
        with log.timed("effects"), contextlib.suppress(AgentSError):
            if not fresh or time.monotonic() - listed_at > _STALE:
                windows, fresh = backend.windows(), True
            before = Glimpse(tuple(windows), self.fields.read(windows)) if fresh else None
        raised: list[WindowInfo] = []
        failure: str | None = None
        acted_at = time.monotonic()
        with log.timed("execute"):
            try:
                guard = self.gate.guard(
                    subject,
                    decision,
                    backend.windows,
                    order=backend.window_order,
                    listed=windows if fresh else None,
                )
                perform(backend, plan, before=self._paced(guard, backend), raised=raised)
            except (ActionExecutionError, ValueError) as err:
                log.add(errors=[f"{type(err).__name__}: {err}"])
                failure = str(err)
            finally:
                log.add(executed=[{"op": type(op).__name__, **asdict(op)} for op in plan])
        opened = next((op for op in plan if isinstance(op, ops.Open)), None)
        if opened is not None and failure is None and before is not None:
            with log.timed("open"):
                self._await_window(backend, opened.target, before.windows, raised)
        if failure is None:
            with log.timed("execute"):
                _park(backend, plan, scene.observation.geometry)
        glance = None
        if settings.settle_seconds and failure is None:
            with log.timed("settle"):  # until the screen shows what the action did
                shot = until_still(
                    backend,
                    settings.settle_seconds,
                    before=scene.observation.screenshot,
                    at=points,
                    since=acted_at,
                    listed=scene.observation.windows,
                    text=any(isinstance(op, ops.TypeText) for op in plan),
                )
                glance = None if shot is None else _glance_of(shot.image)
        observed: list[str] = []
        if before is not None:
            with log.timed("effects"):
                observed = self._observe(backend, before, opened, raised, scene, plan, glance)
            log.set(observed=tuple(observed))
        if failure is not None:
            seen = f" (seen after it: {'; '.join(observed)})" if observed else ""
            return "error", failure + seen
        return "ok", "; ".join(observed)

    def _paced(
        self, guard: Callable[[ops.Op], None], backend: DesktopBackend
    ) -> Callable[[ops.Op], None]:
        """Before an Enter that follows typed text, a wait (at most ``ENTER_WAIT`` s) until
        the focused field shows the text (the fixed pause in the plan is not always enough for
        a dialog still taking a path; fields that cannot be read are not waited for); then,
        before every operation, ``guard``, which judges the desktop as it is at that moment."""
        typed: list[str] = []

        def before(op: ops.Op) -> None:
            if isinstance(op, ops.Hotkey) and op.keys == ("enter",) and typed:
                await_typed(self.fields, backend.windows, typed.pop(), ENTER_WAIT)
            guard(op)
            if isinstance(op, ops.TypeText):
                typed[:] = [op.text]
            elif not isinstance(op, ops.Sleep):
                typed.clear()

        return before

    def _await_window(
        self,
        backend: DesktopBackend,
        target: str,
        before: Sequence[WindowInfo],
        raised: Sequence[WindowInfo],
    ) -> None:
        """After ``open``: wait until a window appears that was not there ``before`` (or, for
        a file or URL, until any window changes: it may open in a window already there), at
        most ``open_wait`` seconds."""
        if raised:  # the application was open already: brought forward, nothing to wait for
            return
        document = _names_a_document(target)
        deadline = time.monotonic() + self.open_wait
        while True:
            try:
                now = backend.windows()
            except AgentSError:
                return
            if new_windows(before, now) or (document and window_changes(before, now)):
                return
            if time.monotonic() >= deadline:
                return
            time.sleep(_OPEN_POLL)

    def _observe(
        self,
        backend: DesktopBackend,
        before: Glimpse,
        opened: ops.Open | None,
        raised: Sequence[WindowInfo],
        scene: Scene,
        plan: Sequence[ops.Op],
        glance: Image.Image | None,
    ) -> list[str]:
        """What the action was seen to do, as sentences for the model (see the module
        docstring): the window list and the focused field are read once more."""
        try:
            windows = backend.windows()
        except AgentSError:
            return []
        sentences: list[str] = []
        reported: set[int] = set()
        if opened is not None:
            sentence, reported = self._open_sentence(opened.target, before.windows, windows, raised)
            sentences.append(sentence)
        sentences += window_changes(before.windows, windows, reported=reported)
        field = field_change(before.field, self.fields.read(windows))
        if field is not None:
            sentences.append(field)
        typed = any(isinstance(op, _INPUT_OPS) for op in plan)
        if not sentences and glance is not None and typed:
            shown = _glance_of(scene.observation.screenshot.image)
            if _still(shown, glance):
                sentences.append("nothing on the screen changed")
        return sentences

    def _open_sentence(
        self,
        target: str,
        before: Sequence[WindowInfo],
        windows: Sequence[WindowInfo],
        raised: Sequence[WindowInfo],
    ) -> tuple[str, set[int]]:
        """What ``open`` did, and the windows it names (not reported again as changes)."""
        if raised:
            window = next((w for w in windows if w.id == raised[-1].id), raised[-1])
            return (
                f"{target!r} was already open: its window {window_name(window)} was brought "
                "to the front, not started again (for another window, use the application's "
                "New Window command)",
                {window.id},
            )
        fresh = new_windows(before, windows)
        if not fresh:
            return (
                f"{target!r} was launched, but no new window is shown yet after "
                f"{self.open_wait:g} s (it may still be starting: wait, then look again)",
                set(),
            )
        names = ", ".join(window_name(w) for w in fresh[:3])
        plural = "s" if len(fresh) > 1 else ""
        focused = active(windows)
        where = ", focused" if focused is not None and focused.id in {w.id for w in fresh} else ""
        return f"opened: new window{plural} {names}{where}", {w.id for w in fresh}

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
            screen=ScreenContext.of(scene.observation.active_window),
            memory=self.recall,
        )
        with log.timed("code"):
            report = agent.run(
                action.task or scene.task, on_substep=lambda turn: log.add(substeps=[turn])
            )
        if report.succeeded:
            return "ok", report.worker_text
        return _failed(log, report.worker_text)


def _park(backend: DesktopBackend, plan: Sequence[ops.Op], geometry: ScreenGeometry | None) -> None:
    """After an action that moved the pointer, or opened a window that may now lie under it,
    rest it where it covers no control, so that the next screenshot shows no tooltip or hover
    state there (``agent_s.desktop.park``)."""
    left_at = moves_pointer(plan)
    try:
        if left_at is None and any(isinstance(op, ops.Open) for op in plan):
            left_at = backend.pointer()
        if left_at is None:
            return
        spot = park_point(geometry or backend.geometry(), backend.windows(), left_at)
        if spot is not None:
            backend.move(spot)
    except (AgentSError, ValueError):  # no window list, a point off every monitor: it stays
        return


def _names_a_document(target: str) -> bool:
    """Whether ``open``'s target is a file or URL rather than an application name."""
    return "/" in target or target.startswith("~") or "://" in target


def _glance_of(image: Image.Image) -> Image.Image:
    return image.convert("L").reduce(8)


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


def answer_question(
    question: str, ask_user: Callable[[str], str | None] | None, redactor: Redactor
) -> str:
    """The user's answer to the model's ``question``, for the model; with nobody to answer (no
    ``ask_user`` callback, or no answer given) the run ends as ``needs_input``."""
    question = redactor.text(question.strip())
    answer = ask_user(question) if ask_user is not None else None
    if answer is None or not answer.strip():
        why = "nobody can answer here" if ask_user is None else "no answer was given"
        raise RunEnded(
            f"the agent asked a question and {why}: {question}",
            status=RunStatus.NEEDS_INPUT,
            cause="needs_input",
            question=question,
        )
    return f"the user answered: {answer.strip()}"


__all__ = ["answer_question", "CODE_AGENT_MISSING", "Acted", "Actor", "Scene", "StepLog"]
