"""The agent: one short loop of observe -> request -> one generation -> parse -> ground -> execute
-> record, with a step limit, a budget, a wall-time limit and a typed result.

    agent = Agent(ModelConfig.from_env(provider="anthropic", model="claude-sonnet-4-5"))
    result = agent.run("Open mousepad and write hello")          # RunResult

Callers that drive their own loop use ``start(task)``, then ``step(observation, execute=...)``
per step (a ``Step``, ``agent_s.record.step``), then ``finish(...)``; ``reset()`` forgets the task,
its
history and its notes. ``agent_s.compat.AgentS3`` is built on that per-step API.

``platform`` names the OS the screens come from when it is not this machine's (a runner that
drives a Windows or macOS machine): the prompts' hints follow it. Each request also tells the
model the date the task started (``start(task, today=...)`` fixes it) and the open windows, when
they are known: always for screens the agent captures, and for a given observation when it lists
windows.

Each step's parts have their own modules: the requests (``agent_s.loop.request``), one generation,
whose reply that is no valid action goes back to the model at most ``max_invalid_replies`` times
(``agent_s.loop.generation``), grounding the action's targets (``agent_s.grounding.locate``; a
target it cannot find is an observation for the model, not an error of the run), and carrying
the action out behind the safety gate (``agent_s.loop.act``). How a run ends is
``agent_s.record.result``'s.
Each action is executed at most once, and each model or grounding call made once per action.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import date
from pathlib import Path
from typing import Any

from agent_s.actions import ActionModel, AskUserAction, CallCodeAgentAction
from agent_s.coding.agent import runner_settings, workdir_for
from agent_s.coding.containment import ContainmentWarning, settle_sandbox
from agent_s.coding.runner import sandbox_problem
from agent_s.desktop.base import DesktopBackend
from agent_s.desktop.monitors import monitor_to_capture
from agent_s.desktop.ops import sends_input
from agent_s.errors import describe_error
from agent_s.grounding import Grounder, Located, Locator, NotLocated, Observation
from agent_s.guards.content import screen_content
from agent_s.guards.redaction import Redactor
from agent_s.images import EncodedImage, encode_screenshot, history_spec
from agent_s.loop.act import Actor, Scene
from agent_s.loop.control import RunControl
from agent_s.loop.generation import generate
from agent_s.loop.request import Requests, summary, with_snapshot
from agent_s.marks.setofmarks import Marker, MarkTable, check_marks
from agent_s.marks.setofmarks import locate as locate_marked
from agent_s.memory import MemoryStore
from agent_s.memory.runmemory import RunMemory
from agent_s.models.errors import ModelError
from agent_s.models.factory import build_provider
from agent_s.models.profiles import ProfileRegistry
from agent_s.models.retry import RetryPolicy, retry_line
from agent_s.models.types import Message, ModelReply, ModelRequest, Usage
from agent_s.models.usage import Budget, MeteredProvider, UsageMeter
from agent_s.planning.manager import (
    FAILED_ATTEMPTS_BEFORE_SWITCH,
    Manager,
    PlanReport,
    contained_command,
)
from agent_s.planning.plan import is_long
from agent_s.prompting import OS_NAMES, OsName, Platform, mark_list, today_line
from agent_s.record.result import (
    Cause,
    Ending,
    Postcondition,
    PostconditionResult,
    Refusal,
    RunEnded,
    RunResult,
    RunStatus,
    Tally,
    error_ending,
    final_ending,
    is_interrupt,
)
from agent_s.record.step import ModelCall, Step, StepOutcome, StepReport, call_text
from agent_s.record.trajectory import TrajectoryWriter, run_header
from agent_s.safety.effects import subject_for_code
from agent_s.safety.gate import Approver, SafetyGate
from agent_s.settings.config import AgentConfig, ConfigError, GroundingConfig, ModelConfig

_EXTENSIONS = {"image/png": ".png", "image/jpeg": ".jpg", "image/webp": ".webp"}


class _Draft:
    """The step being built: the frozen ``Step`` so far, replaced as each part adds to it."""

    def __init__(self, number: int) -> None:
        self.step = Step.begin(number)

    def set(self, **fields: Any) -> None:
        self.step = self.step.model_copy(update=fields)

    def add(self, **items: Sequence[Any]) -> None:
        self.step = self.step.add(**items)

    @contextlib.contextmanager
    def timed(self, part: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.step = self.step.timed(part, time.perf_counter() - start)


def _contained(settings: AgentConfig) -> AgentConfig:
    """``settings`` with ``--code-sandbox auto`` resolved here: bubblewrap where it works, else
    the reduced containment, said once as a ``ContainmentWarning`` (a command that resolved it
    already said it in its own words)."""
    code = settings.code
    if not code.enabled or code.sandbox != "auto":
        return settings

    def warn(line: str) -> None:
        warnings.warn(line, ContainmentWarning, stacklevel=4)

    return replace(settings, code=replace(code, sandbox=settle_sandbox(code.sandbox, warn)))


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
    ) -> None:
        """``approver``: asked when the safety mode wants approval; without one such actions
        are refused (see ``agent_s.safety.gate``). ``ask_user``: answers the model's ``ask_user``
        questions (None or an empty answer: the run ends as ``needs_input`` with the question).
        ``on_retry``: a progress line per model retry. ``on_plan``: each plan, check, switch
        and replan of a planned run (``agent_s.planning.manager``), as it happens.
        ``platform``: ``linux``, ``windows`` or ``darwin``, the OS the screens come from;
        None: this machine's. ``control``: pause, take over, hand back and stop the run from
        another thread (``agent_s.loop.control``). ``memory``: a memory store (``agent_s.memory``)
        whose relevant entries the prompts show and which learns from each recorded run
        (``settings.memory``); None, the default: no memory."""
        if platform is not None and platform not in OS_NAMES:
            raise ConfigError(
                f"platform must be one of {', '.join(OS_NAMES)}, not {platform!r}",
                setting="platform",
            )
        self.model = model
        self._settings = _contained(settings or AgentConfig())
        self.grounding = grounding or GroundingConfig()
        self.on_step = on_step
        self.ask_user = ask_user
        self.on_plan = on_plan
        self.control = control
        self._user_note: str | None = None  # the user acted: said in the next request
        self._backend = backend
        self._profile = (profiles or ProfileRegistry()).resolve(model.model, model.api)
        self._meter = UsageMeter(self._budget())  # one per agent, reset in place per task
        self._retries: list[str] = []
        self._retry_line = on_retry
        retry = RetryPolicy(max_attempts=self.settings.retry_attempts)
        provider = build_provider(
            model.settings(),
            profiles=profiles,
            retry=retry,
            meter=self._meter,
            on_retry=self._on_retry,
            before_retry=self._before_retry,
        )
        if not isinstance(provider, MeteredProvider):  # build_provider wraps when given a meter
            raise TypeError(f"expected a metered provider, got {provider!r}")
        self._provider = provider
        self._secrets = [model.api_key, self.grounding.api_key]  # kept from the code's env
        # every secret, redacted from all requests and records (see agent_s.guards.redaction)
        self._redactor = Redactor([*self._secrets, *self.settings.secrets], environ=os.environ)
        provider.redactor = self._redactor
        self._locator = Locator(grounder) if grounder is not None else self._build_locator(retry)
        self._requests = Requests(self.settings, self._locator, self._redactor, os_name=platform)
        # set-of-marks: numbered marks on the screenshot sent, named by mark=N
        # (agent_s.marks.setofmarks)
        self._marker = Marker(self._locator) if self.grounding.marks else None
        self._requests.marks = self._marker is not None
        self._marks: MarkTable | None = None  # the current step's
        # the redactor's secrets are never typed outside [safety] secret_apps (agent_s.safety.leaks)
        self._gate = SafetyGate(self.settings.safety, approver, redactor=self._redactor)
        # the smaller copy of each screen for later requests is made while the model thinks
        self._encoder = ThreadPoolExecutor(1, thread_name_prefix="agent-s-history")
        self._actor = Actor(
            self.settings, self._gate, self._call, secrets=self._secrets, redactor=self._redactor
        )
        self.memory = (
            RunMemory(memory, lambda: self.settings.memory) if memory is not None else None
        )
        if self.memory is not None:
            self._actor.recall = self._code_memory
        code = self.settings.code
        if code.enabled and code.sandbox == "bwrap" and (problem := sandbox_problem()):
            raise ConfigError(
                f"--code-sandbox bwrap cannot be used: {problem}", setting="--code-sandbox"
            )
        self._writer: TrajectoryWriter | None = None
        self.reset()

    # -- set-up ------

    def _budget(self) -> Budget:
        return Budget(self.settings.max_cost_usd, self.settings.max_tokens)

    def _build_locator(self, retry: RetryPolicy) -> Locator:
        ground_model, settings = None, self.grounding.settings()
        if settings is not None and self.grounding.mode in ("model", "auto"):
            provider = build_provider(
                settings, retry=retry, on_retry=self._on_retry, before_retry=self._before_retry
            )
            ground_model = MeteredProvider(provider, self._meter, redactor=self._redactor)
        mode, spec = self.grounding.mode, self._profile.image_spec
        return Locator.for_mode(mode, model=ground_model, native_spec=spec)

    def _on_retry(self, attempt: int, error: ModelError, delay: float) -> None:
        self._retries.append(
            f"{type(error).__name__} on attempt {attempt}: {error}; retried after {delay:.1f} s"
        )
        if self._retry_line is not None:
            line = retry_line(attempt, self.settings.retry_attempts, error, delay)
            self._retry_line(self._redactor.text(line))  # the server's words may quote a key

    def _before_retry(self, attempt: int, error: ModelError, seconds: float) -> None:
        """A retry that cannot finish within the run's wall-time limit is not started."""
        limit = self.settings.max_seconds
        if limit is not None and self._tally.elapsed + seconds > limit:
            raise RunEnded(
                f"the time limit of {limit:g} s would pass before model attempt {attempt + 1} "
                f"could finish (it may take {seconds:.0f} s) after: {error}",
                status=RunStatus.BUDGET_EXCEEDED,
                cause="max_seconds",
            ) from error

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

    def _desktop_name(self) -> str:
        """The desktop environment the screens come from: the backend's own environment says
        (a ``--virtual`` desktop is openbox whatever the caller runs), else the settings'."""
        env = getattr(self._backend, "env", None)
        if isinstance(env, Mapping):
            return str(env.get("XDG_CURRENT_DESKTOP") or env.get("DESKTOP_SESSION") or "")
        return self.settings.desktop_name

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
        return self._meter.total

    @property
    def notes(self) -> tuple[str, ...]:
        return tuple(self._actor.notes)

    @property
    def trajectory_dir(self) -> Path | None:
        return self._writer.folder if self._writer is not None else None

    # -- the per-step API --------------------------------------------------------------------------

    def reset(self) -> None:
        """Forget the task: history, notes, usage, timers, trajectory writer (closed)."""
        if self._writer is not None:
            self._writer.close()
        self._task = ""
        self._history: list[Step] = []
        self._steps: list[Step] = []  # every step of the task (the history is a subtask's)
        self._events: list[dict[str, Any]] = []  # the plan's events, as plan.jsonl has them
        self._writer = None
        self._draft = _Draft(0)
        self._requests.reset()
        self._actor.reset()
        self._tally = Tally()
        self._steps_taken = 0
        self._focus: str | None = None  # a subtask's text for the worker, instead of the task
        self._subtask: str | None = None
        self._plan: PlanReport | None = None
        self._refused: Refusal | None = None  # the last action tried, when the gate refused it
        self._user_note = None
        self._gate.reset()
        self._meter.reset(self._budget())

    def start(self, task: str, *, today: date | None = None) -> None:
        """Begin a task (after a reset); opens the trajectory folder when recording. ``today``:
        the date the model is told (default: the clock's, now)."""
        if not task.strip():
            raise ValueError("the task is empty")
        try:
            task.encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates: bytes that were not UTF-8
            raise ValueError(
                "the task has characters that are not valid text (lone "
                "surrogates, from bytes that were not UTF-8): pass it as UTF-8 text"
            ) from None
        self.reset()
        self._task = task.strip()
        self._gate.begin(self._task)  # the web hosts the task names may be opened
        self._requests.start(today)
        if self.settings.record_dir is not None:
            with self._tally.recording():
                self._writer = TrajectoryWriter.create(
                    self.settings.record_dir, redactor=self._redactor
                )
                header = run_header(
                    self._task, self._tally.started_at, self.model, self.grounding, self.settings
                )
                self._writer.write_run(header)

    def step(
        self,
        observation: Observation | None = None,
        *,
        execute: bool = True,
        given: ActionModel | None = None,
    ) -> Step:
        """One step. ``observation`` None: capture the backend's screen. ``execute`` False (or a
        dry run): plan and ground only; the caller carries out ``step.code`` itself. ``given``:
        carry out this action instead of asking the model for one."""
        if not self._task:
            raise RuntimeError("call start(task) before step()")
        execute = execute and not self.settings.dry_run
        self._checkpoint()
        self._draft = _Draft(self._steps_taken + 1)
        if self._subtask is not None:
            self._draft.set(subtask=self._subtask)
        try:
            step = self._step(observation, execute, given)
        except BaseException as err:
            kind: StepOutcome = "cancelled" if is_interrupt(err) else "error"
            usage = self._meter.total
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
                observation = self._capture()
        # the windows are known when captured here; a given observation may not list them
        listed = observation if captured or observation.windows else None
        window = observation.active_window
        image = observation.screenshot.image
        title = f"{window.app}: {window.title}" if window else None
        draft.set(screen=image.size, active_window=title)
        self._marks = None
        if self._marker is not None:  # the marked screenshot is the one sent
            with draft.timed("marks"):
                self._marks = self._marker.table(observation)
                image = self._marker.picture(observation, self._marks, self._profile.image_spec)
            draft.set(marks=self._marks.entries)
        with draft.timed("encode"):
            sent = encode_screenshot(image, self._profile.image_spec)
            self._locator.prepare(observation, sent)  # the a11y tree is read while the model thinks
            spec = history_spec(sent, same_size=self._locator.native)
            kept = self._encoder.submit(encode_screenshot, image, spec)
        with draft.timed("build"):
            system = self._requests.system(observation, execute, sent, desktop=self._desktop_name())
        if self._writer is not None:
            name = f"step_{draft.step.step:03d}{_EXTENSIONS[sent.media_type]}"
            with draft.timed("record"):
                draft.set(screenshot=self._writer.write_image(name, sent.data))

        if given is None:
            action, reply = self._generate(observation, system, sent, listed)
        else:  # the manager hands a subtask to the code agent: no worker call
            action, reply = given, ""
        draft.set(action=action, reply=reply, action_text=call_text(action))
        found: Located | NotLocated = Located((), ())
        if targets := action.targets():
            with draft.timed("grounding"):
                found = locate_marked(self._locator, targets, observation, sent, self._marks)
            draft.add(grounding=found.groundings)
        outcome: StepOutcome
        if isinstance(found, NotLocated):  # the model is told what is missing, and tries again
            outcome, detail = "error", found.feedback
            draft.add(errors=[detail])
        elif isinstance(action, AskUserAction):
            draft.set(code="WAIT")
            outcome, detail = "ok", self._ask_user(action.question)
        elif self.control is not None and (note := self.control.before_action()):
            self._user_note = note  # the screen it was planned on is gone
            outcome, detail = "error", "not carried out: the user used the desktop meanwhile"
        else:
            scene = self._scene(observation, execute)
            # while the agent sends input the user's is not told from it; a wait sends none
            inputs = sends_input(action.plan(found.points, os=scene.platform.os))
            with self.control.acting() if self.control and inputs else contextlib.nullcontext():
                outcome, detail = self._actor.act(action, found.points, scene, draft)
        kind: StepOutcome = "terminal" if action.is_terminal and outcome == "ok" else outcome
        detail = self._redactor.text(detail)
        with draft.timed("encode"):  # the copy kept for later requests, made meanwhile
            kept_image = kept.result()
        step = draft.step.ended(
            kind, detail, usage=self._meter.total, image=sent, history_image=kept_image
        )
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
        """The worker's request for this step and its action (reflection first, when on)."""
        draft = self._draft
        reflection = self._reflect(sent) if self.settings.reflection else None
        with draft.timed("build"):
            messages = self._requests.worker(
                system,
                self._worker_task,
                self._history,
                sent,
                self._actor.notes,
                reflection,
                listed,
            )
        a11y = None
        if self.settings.a11y_snapshot:
            with draft.timed("a11y"):
                snapshot, a11y = self._requests.snapshot(observation)
            if snapshot is not None:
                messages = with_snapshot(messages, snapshot)
        if self._user_note is not None:
            messages, self._user_note = with_snapshot(messages, self._user_note), None
        first = self.memory is not None and self._steps_taken == 0 and self._focus is None
        if first and (recalled := self._recall("planner", self._task, "worker")):  # no plan
            messages = with_snapshot(messages, recalled)
        marks = self._marks
        if marks is not None:
            listed_marks = self._redactor.text(mark_list(marks.lines(), marks.total))
            messages = with_snapshot(messages, listed_marks)
        draft.set(request=summary(messages, sent, reflection is not None, a11y))
        return generate(
            lambda asked: self._call(asked, "generate"),
            messages,
            tries=self.settings.max_invalid_replies + 1,
            policy=self.settings.context,
            on_call=lambda call: draft.add(calls=[call]),
            check=lambda action: check_marks(action, marks),
        )

    def _recall(self, role: str, query: str, purpose: str) -> str:
        """``role``'s memory section for ``query`` ("" without memory or relevant entries),
        framed as screen content: what earlier runs saw and wrote is content, not instructions."""
        if self.memory is None:
            return ""
        found = self.memory.section(
            role, query, purpose, folder=self.trajectory_dir, after_step=self._steps_taken
        )
        return self._redactor.text(screen_content("memory", found)) if found else ""

    def _code_memory(self, job: str) -> str:
        return self._recall("code_agent", job, "code")

    def _checkpoint(self) -> None:
        """Between steps: wait while the run is paused or taken over (``agent_s.loop.control``)."""
        if self.control is not None and (note := self.control.checkpoint()):
            self._user_note = note

    def _capture(self) -> Observation:
        """The screen now (the monitor the settings choose), its windows and geometry."""
        backend = self.backend
        geometry, windows = backend.geometry(), tuple(backend.windows())
        pointer = backend.pointer() if self.settings.monitor == "active" else None
        index = monitor_to_capture(self.settings.monitor, geometry, windows, pointer)
        return Observation(backend.capture(index), windows, geometry)

    def _scene(self, observation: Observation, execute: bool) -> Scene:
        return Scene(
            step=self._draft.step.step,
            task=self._worker_task,
            observation=observation,
            platform=self._requests.platform,
            backend=lambda: self.backend,
            env=self._backend.env if self._backend is not None else None,
            writer=self._writer,
            execute=execute,
            code_offered=self._requests.code_offered,
        )

    def _ask_user(self, question: str) -> str:
        """The user's answer to ``question``, for the model; with nobody to answer (no
        ``ask_user`` callback, or no answer given) the run ends as ``needs_input``."""
        question = self._redactor.text(question.strip())
        answer = self.ask_user(question) if self.ask_user is not None else None
        if answer is None or not answer.strip():
            why = "nobody can answer here" if self.ask_user is None else "no answer was given"
            raise RunEnded(
                f"the agent asked a question and {why}: {question}",
                status=RunStatus.NEEDS_INPUT,
                cause="needs_input",
                question=question,
            )
        return f"the user answered: {answer.strip()}"

    def _call(self, messages: Sequence[Message], purpose: str) -> ModelReply:
        """One model call; its retries (if any) are noted on the step."""
        self._tally.count(purpose)
        try:
            with self._draft.timed("model"):
                request = ModelRequest(tuple(messages), metadata={"purpose": purpose})
                return self._provider.complete(request)
        finally:
            self._draft.add(errors=self._retries)
            self._retries.clear()

    def _reflect(self, sent: EncodedImage) -> str | None:
        messages = self._requests.reflection(self._worker_task, self._history, sent)
        if messages is None:  # nothing to reflect on before the first step
            return None
        start = time.perf_counter()
        reply = self._call(messages, "reflect")
        call = ModelCall.of("reflect", reply.text, reply.usage, start, reply.attempts)
        self._draft.add(calls=[call])
        return reply.text.strip() or None

    def _record(self, step: Step) -> None:
        self._steps.append(step)
        self._steps_taken += 1
        if step.action is not None and step.terminal is None:  # an action tried: refused?
            self._refused = Refusal.of(step.step, step.action_text, step.safety)
        self._tally.add_step(step.seconds, step.timings)
        if self._writer is not None:
            with self._tally.recording():
                self._writer.write_step(step)

    # -- whole runs ------

    def run(self, task: str, *, postcondition: Postcondition | None = None) -> RunResult:
        """Do ``task`` until done, fail, or a limit; always returns a result (and writes it).
        With planning (``settings.plan``; never in a dry run) the manager runs the task as a
        plan of subtasks (``agent_s.planning.manager``)."""
        self.start(task)
        limit = self.settings.max_steps
        mode = "off" if self.settings.dry_run else self.settings.plan.mode
        try:
            if mode == "always" or (mode == "auto" and is_long(self._task)):
                trigger = "always" if mode == "always" else "a long task"
                return self.end(self._managed(trigger, postcondition))
            failed = 0  # steps in a row whose action failed
            while self._steps_taken < limit:
                self._check_time()
                step = self.step()
                if step.action is not None and step.terminal is not None:
                    dry_run = self.settings.dry_run
                    return self.end(final_ending(step.action, postcondition, dry_run=dry_run))
                # a refusal by the safety gate is not a failed attempt: no plan routes round it
                refused = step.safety is not None and not step.safety.get("allowed", True)
                failed = failed + 1 if step.outcome == "error" and not refused else 0
                if mode == "auto" and failed >= FAILED_ATTEMPTS_BEFORE_SWITCH:
                    return self.end(self._managed("a step failed twice", postcondition))
            reason = f"the task was not finished in {limit} steps"
            return self.finish(RunStatus.MAX_STEPS, "max_steps", reason)
        except BaseException as err:  # each way a run can end has its status: agent_s.record.result
            ending = error_ending(err)
            if ending is not None:
                return self.end(ending)
            if isinstance(err, Exception):
                self.finish(RunStatus.ERROR, "internal_error", describe_error(err), error=err)
            raise

    def _managed(self, trigger: str, postcondition: Postcondition | None) -> Ending:
        """The rest of the task as a plan (``agent_s.planning.manager``); its report goes in the
        result."""
        tries = self.settings.max_invalid_replies + 1
        manager = Manager(_PlanHost(self), self.settings.plan, tries=tries, trigger=trigger)
        self._plan = manager.report
        try:
            return manager.run(postcondition)
        finally:
            self._focus = self._subtask = None

    @property
    def _worker_task(self) -> str:
        """What the worker is asked to do: the task, or the subtask the manager is running."""
        return self._focus if self._focus is not None else self._task

    def _check_time(self) -> None:
        limit = self.settings.max_seconds
        if limit is not None and self._tally.elapsed >= limit:
            raise RunEnded(
                f"the time limit of {limit:g} s was reached",
                status=RunStatus.BUDGET_EXCEEDED,
                cause="max_seconds",
            )

    def end(self, ending: Ending) -> RunResult:
        """End the task as ``ending`` (see ``agent_s.record.result``): the result, written to
        ``result.json`` when recording."""
        ending = ending.after(self._refused)  # a failure right after a refusal: its doing
        redact = self._redactor.text
        answer = redact(ending.answer) if ending.answer is not None else None
        refusal = ending.refusal
        if refusal is not None:
            refusal = replace(refusal, action=redact(refusal.action), reason=redact(refusal.reason))
        ending = replace(ending, reason=redact(ending.reason), answer=answer, refusal=refusal)
        result = self._tally.result(
            self._task,
            ending,
            steps=self._steps_taken,
            usage=self._meter.total,
            model=self.model.model,
            trajectory_dir=self.trajectory_dir,
            plan=self._plan.to_json() if self._plan is not None else None,
        )
        if self._writer is not None:
            self._writer.write_result(result)
            self._writer.close()
            self._writer = None
        if self.memory is not None:  # after the folder is complete: it is what is learned from
            self.memory.learn(result, self._steps, self._events, self._redactor.data)
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


class _PlanHost:
    """The agent as the manager sees it (``agent_s.planning.manager.PlanHost``)."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent

    @property
    def task(self) -> str:
        return self.agent._task

    @property
    def code_enabled(self) -> bool:
        return self.agent.settings.code.enabled

    @property
    def steps_left(self) -> int:
        return self.agent.settings.max_steps - self.agent._steps_taken

    def look(self) -> tuple[EncodedImage, Platform]:
        agent = self.agent
        observation = agent._capture()
        sent = encode_screenshot(observation.screenshot.image, agent._profile.image_spec)
        agent._requests.system(observation, True, sent, desktop=agent._desktop_name())
        return sent, agent._requests.platform

    def today(self) -> str:
        day = self.agent._requests.today
        return today_line(day if day is not None else date.today())

    def ask(self, messages: Sequence[Message], purpose: str) -> ModelReply:
        self.agent._checkpoint()
        self.agent._check_time()
        return self.agent._call(messages, purpose)

    def _focus(self, text: str, subtask: str) -> None:
        agent = self.agent
        agent._focus, agent._subtask, agent._history = text, subtask, []

    def work(self, text: str, subtask: str, limit: int) -> Step | None:
        self._focus(text, subtask)
        for _ in range(limit):
            self.agent._check_time()
            step = self.agent.step()
            if step.action is not None and step.terminal is not None:
                return step
        return None

    def hand_to_code(self, text: str, subtask: str) -> Step:
        self._focus(text, subtask)
        self.agent._check_time()
        return self.agent.step(given=CallCodeAgentAction(task=text))

    def windows(self) -> Sequence[str]:
        return [window.title for window in self.agent.backend.windows()]

    def _env(self) -> Mapping[str, str] | None:
        backend = self.agent._backend
        return backend.env if backend is not None else None

    def home(self) -> Path:
        return Path((self._env() or os.environ).get("HOME") or Path.home())

    def run_command(self, argv: Sequence[str]) -> tuple[bool, str]:
        agent = self.agent
        code = shlex.join(argv)
        decision = agent._gate.check(
            subject_for_code("bash", code), step=agent._steps_taken, ask=True
        )
        if not decision.allowed:
            return False, f"not run: {decision.message}"
        env = self._env()
        settings = agent.settings.code
        secrets = [s for s in agent._secrets if s]
        runner = runner_settings(settings, workdir_for(settings, env), env, secrets)
        return contained_command(argv, runner)

    def event(self, kind: str, data: dict[str, Any]) -> None:
        agent = self.agent
        if agent._writer is not None:
            agent._writer.write_event({"event": kind, "after_step": agent._steps_taken, **data})
        agent._events.append({"event": kind, "after_step": agent._steps_taken, **data})
        if agent.on_plan is not None:
            agent.on_plan(kind, data)

    def recall(self, query: str) -> str:
        return self.agent._recall("planner", query, "plan")


__all__ = ["Agent", "RunEnded", "Step", "StepReport", "call_text"]
