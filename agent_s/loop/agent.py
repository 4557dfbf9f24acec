"""The agent: one short loop of observe -> request -> one generation -> parse -> ground -> gate
-> act -> record, with a step limit, a budget, a wall-time limit and a typed result.

    agent = Agent(ModelConfig.from_env(provider="anthropic", model="claude-sonnet-4-5"))
    result = agent.run("Open mousepad and write hello")          # RunResult

Callers that drive their own loop use ``start(task)``, then ``step(observation, execute=...)``
per step, then ``finish(...)`` (``agent_s.compat.AgentS3`` is built on that). Each part of a
step has its module in this package (``observe``, ``request``, ``generation``, ``calls``,
``act``); planning (``planhost``), recording, memory, set-of-marks, run control, a reply's later
actions (``sequence``) and refusals are collaborators called at named points (``collaborators``).
Each action is executed at most once and grounded once; the model is called once per reply.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import date
from pathlib import Path
from typing import Any

from agent_s.actions import ActionModel, AskUserAction
from agent_s.coding.containment import settle_agent_config
from agent_s.desktop.base import DesktopBackend, desktop_name
from agent_s.desktop.ops import sends_input
from agent_s.errors import describe_error
from agent_s.grounding import Grounder, Located, Locator, NotLocated, Observation
from agent_s.guards.redaction import Redactor
from agent_s.images import EncodedImage
from agent_s.loop.act import Actor, Scene, answer_question
from agent_s.loop.calls import ModelCalls
from agent_s.loop.collaborators import (
    Collaborator,
    MarkedLocator,
    Marks,
    Recording,
    Remembering,
    RequestPoint,
    assemble,
)
from agent_s.loop.control import RunControl
from agent_s.loop.draft import Draft
from agent_s.loop.generation import generate
from agent_s.loop.observe import Observer, capture
from agent_s.loop.planhost import PlanHost
from agent_s.loop.request import Requests, checked_task, summary, with_snapshot
from agent_s.loop.sequence import ActionSequence
from agent_s.marks.setofmarks import Marker
from agent_s.memory import MemoryStore
from agent_s.memory.runmemory import RunMemory
from agent_s.models.profiles import ProfileRegistry
from agent_s.models.types import Usage
from agent_s.planning.manager import Manager, PlanReport, Trigger
from agent_s.prompting import OsName
from agent_s.record.result import (
    Cause,
    Ending,
    Postcondition,
    PostconditionResult,
    RunEnded,
    RunResult,
    RunStatus,
    Tally,
    error_ending,
    final_ending,
    is_interrupt,
)
from agent_s.record.step import ChosenBy, Step, StepOutcome, StepReport, call_text
from agent_s.record.trajectory import run_header
from agent_s.safety.gate import Approver, SafetyGate
from agent_s.settings.config import AgentConfig, GroundingConfig, ModelConfig


class Agent:
    """The GUI agent (see the module docstring). Construction fails fast on a missing key."""

    def __init__(
        self,
        model: ModelConfig,
        *,
        settings: AgentConfig | None = None,
        grounding: GroundingConfig | None = None,
        backend: DesktopBackend | None = None,
        grounder: Grounder | None = None,
        profiles: ProfileRegistry | None = None,
        on_step: Callable[[Step], None] | None = None,
        approver: Approver | None = None,
        on_retry: Callable[[str], None] | None = None,
        platform: OsName | None = None,
        ask_user: Callable[[str], str | None] | None = None,
        on_plan: Callable[[str, dict[str, Any]], None] | None = None,
        control: RunControl | None = None,
        memory: MemoryStore | None = None,
        reuse: Collaborator | None = None,
    ) -> None:
        """``approver``: asked when the safety mode wants approval (none: such actions are
        refused, ``agent_s.safety.gate``). ``ask_user``: answers the model's questions (None or
        empty: the run ends ``needs_input``). ``on_retry``: a line per model retry. ``on_plan``:
        each plan, check, switch and replan (``agent_s.planning.manager``). ``platform``: the OS
        the screens come from (None: this machine's). ``control``: pause, take over, hand back
        and stop from another thread (``agent_s.loop.control``). ``memory``: a store whose
        entries the prompts show and which learns from each run (None: no memory). ``reuse``: a
        stored workflow replayed first (``agent_s.replay.reuse``)."""
        self.model = model
        self._settings = settle_agent_config(settings or AgentConfig())
        self.grounding = grounding or GroundingConfig()
        self.on_step, self.ask_user = on_step, ask_user
        self.on_plan, self.control = on_plan, control
        self._backend = backend
        self._profile = (profiles or ProfileRegistry()).resolve(model.model, model.api)
        self._secrets = [model.api_key, self.grounding.api_key]  # kept from the code's env
        # every secret, redacted from all requests and records (see agent_s.guards.redaction)
        self._redactor = Redactor([*self._secrets, *self.settings.secrets], environ=os.environ)
        self._calls = ModelCalls(
            model, lambda: self.settings, self._redactor, profiles=profiles, on_retry=on_retry
        )
        self._locator = Locator(grounder) if grounder is not None else self._build_locator()
        self._requests = Requests(self.settings, self._locator, self._redactor, os_name=platform)
        # set-of-marks: numbered marks on the screenshot sent, named by mark=N
        marker = Marker(self._locator) if self.grounding.marks else None
        self._requests.marks = marker is not None
        marks = Marks(marker, self._profile.image_spec, self._redactor)
        self._ground = MarkedLocator(self._locator, marks)
        # the redactor's secrets are never typed outside [safety] secret_apps (agent_s.safety.leaks)
        self._gate = SafetyGate(self.settings.safety, approver, redactor=self._redactor)
        secrets, redactor, call = self._secrets, self._redactor, self._calls.call
        self._actor = Actor(self.settings, self._gate, call, secrets=secrets, redactor=redactor)
        self.memory = RunMemory(memory, lambda: self.settings.memory) if memory else None
        self._memory = Remembering(self.memory, self._redactor) if self.memory else None
        if self._memory is not None:
            self._actor.recall = lambda job: self._recall("code_agent", job, "code")
        self._recording = Recording(lambda: self.settings.record_dir, self._redactor, self._header)
        self._sequence = ActionSequence()  # a reply's later actions (max_actions_per_reply)
        parts = (self._recording, control, self._memory, marks, redactor, self._sequence)
        self._points = assemble(*parts, reuse=reuse)
        self._observer = Observer(self._profile.image_spec, self._locator, self._points)
        self.reset()

    def _build_locator(self) -> Locator:
        model, calls = self._calls.grounding_model(self.grounding), self._calls
        return Locator.for_config(
            self.grounding, model, self._profile, calls.grounding_profile(self.grounding)
        )

    @property
    def backend(self) -> DesktopBackend:
        """The desktop acted on; unless one was given, this session's (the X11 display in
        ``$DISPLAY``, or sway on Wayland: ``agent_s.desktop.choose``)."""
        if self._backend is None:
            from agent_s.desktop.choose import open_backend

            self._backend = open_backend()
        return self._backend

    @backend.setter
    def backend(self, backend: DesktopBackend) -> None:
        self._backend = backend

    def _env(self) -> Mapping[str, str] | None:
        """The environment of the desktop's programs (HOME, DISPLAY), when the backend has one."""
        return self._backend.env if self._backend is not None else None

    def _desktop_name(self) -> str:
        """The desktop the screens come from: the backend's environment says, else settings'."""
        return desktop_name(self._env(), self.settings.desktop_name)

    @property
    def settings(self) -> AgentConfig:
        return self._settings

    @settings.setter
    def settings(self, settings: AgentConfig) -> None:
        """New settings, for the parts of a step too (the safety mode stays as constructed)."""
        self._settings = self._requests.settings = self._actor.settings = settings

    @property
    def usage(self) -> Usage:
        """Tokens and cost of the current task so far."""
        return self._calls.meter.total

    @property
    def notes(self) -> tuple[str, ...]:
        return tuple(self._actor.notes)

    @property
    def trajectory_dir(self) -> Path | None:
        return self._recording.folder

    def _header(self, task: str, started_at: float) -> dict[str, Any]:
        return run_header(task, started_at, self.model, self.grounding, self.settings)

    # -- the per-step API --------------------------------------------------------------------------

    def reset(self) -> None:
        """Forget the task: history, notes, usage, timers, trajectory writer (closed)."""
        self._points.reset()
        self._task = ""
        self._history: list[Step] = []  # the steps the worker is shown (a subtask's, planned)
        self._steps: list[Step] = []  # every step of the task
        self._draft = self._calls.draft = Draft(0)
        self._requests.reset()
        self._actor.reset()
        self._tally = self._recording.tally = Tally()
        self._calls.reset(self._tally)
        self._focus: str | None = None  # a subtask's text for the worker, instead of the task
        self._subtask: str | None = None
        self._plan: PlanReport | None = None
        self._gate.reset()

    def start(self, task: str, *, today: date | None = None) -> None:
        """Begin a task (after a reset); opens the trajectory folder when recording. ``today``:
        the date the model is told (default: the clock's, now)."""
        task = checked_task(task)
        self.reset()
        self._task = task
        self._gate.begin(self._task)  # the web hosts the task names may be opened
        self._requests.start(today)
        self._points.started(self._task)

    def step(
        self,
        observation: Observation | None = None,
        *,
        execute: bool = True,
        given: ActionModel | None = None,
        by: ChosenBy = "planner",
    ) -> Step:
        """One step. ``observation`` None: capture the backend's screen. ``execute`` False (or a
        dry run): plan and ground only; the caller carries out ``step.code`` itself. ``given``:
        carry out this action instead of asking the model, chosen ``by`` (``Step.chosen_by``)."""
        if not self._task:
            raise RuntimeError("call start(task) before step()")
        self._calls.check_time()  # every step's, a replayed or a given one's too
        execute = execute and not self.settings.dry_run
        self._points.before_step()
        self._draft = self._calls.draft = Draft(len(self._steps) + 1)
        self._draft.set(chosen_by="model" if given is None else by)
        if self._subtask is not None:
            self._draft.set(subtask=self._subtask)
        try:
            step = self._step(observation, execute, given)
        except BaseException as err:
            kind: StepOutcome = "cancelled" if is_interrupt(err) else "error"
            usage = self._calls.meter.total
            self._record(self._draft.step.ended(kind, describe_error(err), usage=usage))
            raise
        self._record(step)
        if self.on_step is not None:
            self.on_step(step)
        return step

    def _step(
        self, observation: Observation | None, execute: bool, given: ActionModel | None
    ) -> Step:
        draft = self._draft
        with draft.timed("observe"):
            captured = observation is None
            if observation is None:
                observation = capture(self.backend, self.settings.monitor)
        # the windows are known when captured here; a given observation may not list them
        listed = observation if captured or observation.windows else None
        window = observation.active_window
        title = f"{window.app}: {window.title}" if window else None
        draft.set(screen=observation.screenshot.image.size, active_window=title)
        seen = self._observer.look(observation, draft)
        sent = seen.sent
        with draft.timed("build"):
            system = self._requests.system(observation, execute, sent, desktop=self._desktop_name())
        self._recording.image(sent, draft)
        if given is None:  # the rest of the last reply's actions first, while the screen holds
            queued = self._sequence.next(observation, draft)
            action, reply = queued or self._generate(observation, system, sent, listed)
        else:  # the manager hands a subtask to the code agent, a replay its steps: no call
            action, reply = given, ""
        draft.set(action=action, reply=reply, action_text=call_text(action))
        found: Located | NotLocated = Located((), ())
        if targets := action.targets():
            with draft.timed("grounding"):
                found = self._ground.locate(targets, observation, sent)
            draft.add(grounding=found.groundings)
        outcome: StepOutcome
        if isinstance(found, NotLocated):  # the model is told what is missing, and tries again
            outcome, detail = "error", found.feedback
            draft.add(errors=[detail])
        elif isinstance(action, AskUserAction):
            draft.set(code="WAIT")
            outcome, detail = "ok", answer_question(action.question, self.ask_user, self._redactor)
        elif (why := self._points.before_action()) is not None:
            outcome, detail = "error", why
        else:
            scene = self._scene(observation, execute)
            inputs = sends_input(action.plan(found.points, os=scene.platform.os))
            with self._points.acting(inputs):
                outcome, detail = self._actor.act(action, found.points, scene, draft)
        kind: StepOutcome = "terminal" if action.is_terminal and outcome == "ok" else outcome
        detail = self._redactor.text(detail)
        with draft.timed("encode"):  # the copy kept for later requests, made meanwhile
            kept_image = seen.kept.result()
        usage = self._calls.meter.total
        step = draft.step.ended(kind, detail, usage=usage, image=sent, history_image=kept_image)
        self._history.append(step)
        return step

    # -- the parts of a step ------

    def _generate(
        self,
        observation: Observation,
        system: str,
        sent: EncodedImage,
        listed: Observation | None,
    ) -> tuple[ActionModel, str]:
        """The worker's request for this step and its action (reflection first, when on); a
        reply's later actions wait in the sequence (``agent_s.loop.sequence``)."""
        draft = self._draft
        reflection = None
        if self.settings.reflection:
            asked = self._requests.reflection(self._worker_task, self._history, sent)
            reflection = self._calls.reflect(asked)
        with draft.timed("build"):
            task, notes = self._worker_task, self._actor.notes
            messages = self._requests.worker(
                system, task, self._history, sent, notes, reflection, listed
            )
        a11y = None
        if self.settings.a11y_snapshot:
            with draft.timed("a11y"):
                snapshot, a11y = self._requests.snapshot(observation)
            if snapshot is not None:
                messages = with_snapshot(messages, snapshot)
        first = not self._steps and self._focus is None  # a plan recalls memory itself
        point = RequestPoint(self._task, first, self.trajectory_dir, len(self._steps))
        for note in self._points.notes(point):
            messages = with_snapshot(messages, note)
        draft.set(request=summary(messages, sent, reflection is not None, a11y))
        actions, reply = generate(
            lambda asked: self._calls.call(asked, "generate"),
            messages,
            tries=self.settings.max_invalid_replies + 1,
            policy=self.settings.context,
            on_call=lambda call: draft.add(calls=[call]),
            check=self._points.check,
            most=self.settings.max_actions_per_reply,
        )
        return self._sequence.begin(actions, observation, draft), reply

    def _recall(self, role: str, query: str, purpose: str) -> str:
        """``role``'s memory section for ``query`` ("" without memory or relevant entries)."""
        if self._memory is None:
            return ""
        return self._memory.recall(role, query, purpose, self.trajectory_dir, len(self._steps))

    def _scene(self, observation: Observation, execute: bool) -> Scene:
        return Scene(
            step=self._draft.step.step,
            task=self._worker_task,
            observation=observation,
            platform=self._requests.platform,
            backend=lambda: self.backend,
            env=self._env(),
            writer=self._recording.writer,
            execute=execute,
            code_offered=self._requests.code_offered,
        )

    def _record(self, step: Step) -> None:
        self._steps.append(step)
        self._points.after_step(step)
        self._tally.add_step(step.seconds, step.timings)

    # -- whole runs ------

    def run(self, task: str, *, postcondition: Postcondition | None = None) -> RunResult:
        """Do ``task`` until done, fail, or a limit; always returns a result (and writes it).
        With planning (``settings.plan``; never in a dry run) the manager runs the task as a
        plan of subtasks (``agent_s.planning.manager``)."""
        self.start(task)
        limit = self.settings.max_steps
        trigger = Trigger("off" if self.settings.dry_run else self.settings.plan.mode)
        try:
            if (ending := self._points.lead(self, postcondition)) is not None:
                return self.end(ending)  # a stored workflow replayed did it (replay.reuse)
            if why := trigger.at_start(self._task):
                return self.end(self._managed(why, postcondition))
            while len(self._steps) < limit:
                step = self.step()
                if step.action is not None and step.terminal is not None:
                    dry_run = self.settings.dry_run
                    return self.end(final_ending(step.action, postcondition, dry_run=dry_run))
                if why := trigger.after(step):
                    return self.end(self._managed(why, postcondition))
            reason = f"the task was not finished in {limit} steps"
            return self.finish(RunStatus.MAX_STEPS, "max_steps", reason)
        except BaseException as err:  # each way a run can end has its status: agent_s.record.result
            if (ending := error_ending(err)) is not None:
                return self.end(ending)
            if isinstance(err, Exception):
                self.finish(RunStatus.ERROR, "internal_error", describe_error(err), error=err)
            raise

    def _managed(self, trigger: str, postcondition: Postcondition | None) -> Ending:
        """The rest of the task as a plan (``agent_s.planning.manager``), reported in the result."""
        tries = self.settings.max_invalid_replies + 1
        manager = Manager(PlanHost(self), self.settings.plan, tries=tries, trigger=trigger)
        self._plan = manager.report
        try:
            return manager.run(postcondition)
        finally:
            self._focus = self._subtask = None

    @property
    def _worker_task(self) -> str:
        """What the worker is asked to do: the task, or the subtask the manager is running."""
        return self._focus if self._focus is not None else self._task

    def end(self, ending: Ending) -> RunResult:
        """End the task as ``ending`` (``agent_s.record.result``): the result, kept if recording."""
        ending = self._points.ending(ending)
        answer = self._redactor.text(ending.answer) if ending.answer is not None else None
        ending = replace(ending, reason=self._redactor.text(ending.reason), answer=answer)
        result = self._tally.result(
            self._task,
            ending,
            steps=len(self._steps),
            usage=self._calls.meter.total,
            model=self.model.model,
            trajectory_dir=self.trajectory_dir,
            plan=self._plan.to_json() if self._plan is not None else None,
        )
        self._points.ended(result, self._steps, self._recording.events)
        return result

    def finish(
        self,
        status: RunStatus,
        cause: Cause,
        reason: str,
        *,
        answer: str | None = None,
        check: PostconditionResult | None = None,
        error: BaseException | None = None,
    ) -> RunResult:
        """``end`` the task with this status, cause and reason."""
        return self.end(Ending(status, cause, reason, answer, check, error))


__all__ = ["Agent", "RunEnded", "Step", "StepReport", "call_text"]
