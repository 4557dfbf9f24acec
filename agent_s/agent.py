"""The agent: one short loop of observe -> request -> one generation -> parse -> ground -> execute
-> record, with a step limit, a budget, a wall-time limit and a typed result.

    agent = Agent(ModelConfig.from_env(provider="anthropic", model="claude-sonnet-4-5"))
    result = agent.run("Open mousepad and write hello")          # RunResult

Callers that drive their own loop use ``start(task)``, then ``step(observation, execute=...)``
per step (``StepReport``), then ``finish(...)``; ``reset()`` forgets the task, its history and its
notes. ``agent_s.compat.AgentS3`` is built on that per-step API.

Every action passes the safety gate (``agent_s.safety``) before it is executed: refused actions
go back to the model as the step's result, and each decision (and who approved) is recorded on
the step. ``call_code_agent`` runs the coding sub-agent (``agent_s.code_agent``) once, whose
turns are the step's sub-steps; it is offered only when the agent executes actions itself.

Rules the loop keeps: each action is executed at most once, and each model or grounding call is
made once per action (nothing is executed or grounded to validate it). A reply that is not one
valid action goes back to the model with the parse error, at most ``max_invalid_replies`` times;
then the run ends as ``failed`` (cause ``invalid_replies``). A target grounding cannot find is an
observation for the model, not an error of the run.

With ``--ground native`` the model gives each element's centre pixel in the image it was sent
(whose size the prompt states), mapped back through that very ``EncodedImage``. With
``a11y_snapshot``, each request also lists the active window's named elements.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from agent_s.actions import (
    ActionModel,
    ActionParseError,
    CallCodeAgentAction,
    SaveToKnowledgeAction,
    action_catalogue,
    parse_action,
)
from agent_s.code_agent import CodeAgent
from agent_s.code_runner import sandbox_problem
from agent_s.config import AgentConfig, ConfigError, GroundingConfig, ModelConfig
from agent_s.context import (
    Grounding,
    Outcome,
    StepRecord,
    build_messages,
    build_reflection_messages,
    measure,
    with_feedback,
)
from agent_s.desktop.base import DesktopBackend, WindowInfo, perform
from agent_s.desktop.ops import Point
from agent_s.errors import (
    ActionExecutionError,
    AgentSError,
    DesktopSetupError,
    DisplayUnavailableError,
    describe_error,
)
from agent_s.grounding import (
    AccessibilityGrounder,
    Grounder,
    GroundingError,
    GroundingResult,
    NativeGrounder,
    Observation,
    OcrGrounder,
    build_grounder,
    native_result,
)
from agent_s.grounding.accessibility import window_outline
from agent_s.images import EncodedImage, encode_screenshot
from agent_s.lifecycle import Terminated
from agent_s.models.errors import BudgetExceeded, ModelError, OutputTruncated, Refused
from agent_s.models.factory import build_provider
from agent_s.models.profiles import ProfileRegistry
from agent_s.models.retry import RetryPolicy
from agent_s.models.types import Message, ModelRequest, TextPart, Usage
from agent_s.models.usage import Budget, MeteredProvider, UsageMeter
from agent_s.prompting import (
    Platform,
    accessibility_snapshot,
    detect_platform,
    reflection_system_prompt,
    worker_system_prompt,
)
from agent_s.redact import Redactor
from agent_s.result import (
    Cause,
    Postcondition,
    PostconditionResult,
    RunResult,
    RunStatus,
    Timings,
    check_postcondition,
)
from agent_s.safety import Approver, SafetyGate, approval_image, subject_for_action
from agent_s.step import RunEnded, StepReport, is_interrupt, not_found_feedback
from agent_s.trajectory import (
    GroundingEntry,
    ModelCall,
    StepDraft,
    StepEntry,
    TrajectoryWriter,
    call_text,
    draw_plan,
)

CODE_AGENT = ("call_code_agent",)
CODE_AGENT_MISSING = (
    "call_code_agent is not available in this run (the code agent is switched off, or the "
    "actions are executed by the caller): no code was run. Do the job with the other actions."
)
_EXTENSIONS = {"image/png": ".png", "image/jpeg": ".jpg", "image/webp": ".webp"}


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
        on_step: Callable[[StepReport], None] | None = None,
        approver: Approver | None = None,
    ) -> None:
        """``approver``: asked when the safety mode wants approval; without one such actions
        are refused (see ``agent_s.safety``)."""
        self.model = model
        self.settings = settings or AgentConfig()
        self.grounding = grounding or GroundingConfig()
        self.on_step = on_step
        self._backend = backend
        self._profile = (profiles or ProfileRegistry()).resolve(model.model, model.api)
        self._meter = self._new_meter()
        self._retries: list[str] = []
        retry = RetryPolicy(max_attempts=self.settings.retry_attempts)
        provider = build_provider(
            model.settings(),
            profiles=profiles,
            retry=retry,
            meter=self._meter,
            on_retry=self._on_retry,
        )
        if not isinstance(provider, MeteredProvider):  # build_provider wraps when given a meter
            raise TypeError(f"expected a metered provider, got {provider!r}")
        self._provider = provider
        self._secrets = [model.api_key, self.grounding.api_key]  # kept from the code's env
        # every secret, redacted from all requests and records (see agent_s.redact)
        self._redactor = Redactor([*self._secrets, *self.settings.secrets], environ=os.environ)
        provider.redactor = self._redactor
        self._ocr = OcrGrounder()
        self._grounder = grounder or self._build_grounder(retry)
        self._own_a11y: AccessibilityGrounder | None = None  # when the grounder has none
        self._gate = SafetyGate(self.settings.safety, approver)
        code = self.settings.code
        if code.enabled and code.sandbox == "bwrap" and (problem := sandbox_problem()):
            raise ConfigError(
                f"--code-sandbox bwrap cannot be used: {problem}", setting="--code-sandbox"
            )
        self.reset()

    # -- set-up ------

    def _new_meter(self) -> UsageMeter:
        return UsageMeter(Budget(self.settings.max_cost_usd, self.settings.max_tokens))

    def _build_grounder(self, retry: RetryPolicy) -> Grounder:
        ground_model = None
        settings = self.grounding.settings()
        if settings is not None and self.grounding.mode in ("model", "auto"):
            ground_model = MeteredProvider(
                build_provider(settings, retry=retry, on_retry=self._on_retry),
                self._meter,
                redactor=self._redactor,
            )
        return build_grounder(
            self.grounding.mode,
            model=ground_model,
            native_spec=self._profile.image_spec,
            ocr=self._ocr,
        )

    def _on_retry(self, attempt: int, error: ModelError, delay: float) -> None:
        self._retries.append(
            f"{type(error).__name__} on attempt {attempt}: {error}; retried after {delay:.1f} s"
        )

    @property
    def backend(self) -> DesktopBackend:
        """The desktop acted on; the X11 display in ``$DISPLAY`` unless one was given."""
        if self._backend is None:
            from agent_s.desktop.x11 import X11Backend

            self._backend = X11Backend()
        return self._backend

    @backend.setter
    def backend(self, backend: DesktopBackend) -> None:
        self._backend = backend

    @property
    def usage(self) -> Usage:
        """Tokens and cost of the current task so far."""
        return self._meter.total

    @property
    def notes(self) -> tuple[str, ...]:
        return tuple(self._notes)

    # -- the per-step API --------------------------------------------------------------------------

    def reset(self) -> None:
        """Forget the task: history, notes, usage, timers, trajectory writer (closed)."""
        if getattr(self, "_writer", None) is not None:
            self._writer.close()
        self._task = ""
        self._records: list[StepRecord] = []
        self._notes: list[str] = []
        self._writer: TrajectoryWriter | None = None
        self._system: tuple[Platform, str] | None = None
        self._native_frame: tuple[int, int] | None = None  # the image size the prompt states
        self._code_offered = False  # call_code_agent is in the catalogue (set with the prompt)
        self._timings = Timings()
        self._gate.reset()
        self._calls = 0
        self._started_at = time.time()
        self._clock = time.monotonic()
        self._meter = self._new_meter()
        self._provider.meter = self._meter
        for part in _grounding_models(self._grounder):
            part.meter = self._meter

    def start(self, task: str) -> None:
        """Begin a task (after a reset); opens the trajectory folder when recording."""
        if not task.strip():
            raise ValueError("the task is empty")
        self.reset()
        self._task = task.strip()
        if self.settings.record_dir is not None:
            self._writer = TrajectoryWriter.create(
                self.settings.record_dir, redactor=self._redactor
            )
            self._writer.write_run(
                {
                    "task": self._task,
                    "started_at": self._started_at,
                    "model": self.model.model,
                    "provider": self.model.provider,
                    "base_url": self.model.base_url,
                    "grounding": self.grounding.mode,
                    "grounding_model": self.grounding.model,
                    "settings": _settings_json(self.settings),
                    "python": sys.version.split()[0],
                }
            )

    @property
    def trajectory_dir(self) -> Path | None:
        return self._writer.folder if self._writer is not None else None

    def step(self, observation: Observation | None = None, *, execute: bool = True) -> StepReport:
        """One step. ``observation`` None: capture the backend's screen. ``execute`` False (or a
        dry run): plan and ground only; the caller carries out ``report.code`` itself."""
        if not self._task:
            raise RuntimeError("call start(task) before step()")
        execute = execute and not self.settings.dry_run
        draft = StepDraft(step=len(self._records) + 1, started_at=time.time())
        try:
            report = self._step(draft, observation, execute)
        except BaseException as err:
            self._write(
                draft.entry("cancelled" if is_interrupt(err) else "error", describe_error(err))
            )
            raise
        self._write(report.entry)
        if self.on_step is not None:
            self.on_step(report)
        return report

    def _step(self, draft: StepDraft, observation: Observation | None, execute: bool) -> StepReport:
        times = draft.timings
        mark = time.perf_counter()
        if observation is None:
            observation = self._observe()
        image = observation.screenshot.image
        draft.screen = image.size
        window = observation.active_window
        draft.active_window = f"{window.app}: {window.title}" if window else None
        times["observe"] = time.perf_counter() - mark

        mark = time.perf_counter()
        sent = encode_screenshot(image, self._profile.image_spec)
        times["encode"] = time.perf_counter() - mark
        platform, system = self._prompts(observation, execute, sent)
        if self._writer is not None:
            name = f"step_{draft.step:03d}{_EXTENSIONS[sent.media_type]}"
            draft.screenshot = self._writer.write_image(name, sent.data)

        reflection = self._reflect(draft, platform, sent) if self.settings.reflection else None
        mark = time.perf_counter()
        messages = build_messages(
            system,
            self._task,
            self._records,
            sent,
            self._notes,
            policy=self.settings.context,
            reflection=reflection,
            max_steps=self.settings.max_steps,
        )
        times["build"] = time.perf_counter() - mark
        a11y = None
        if self.settings.a11y_snapshot:
            snapshot, a11y = self._accessibility(draft, observation)
            if snapshot is not None:
                messages = _before_last_part(messages, snapshot)
        size = measure(messages)
        draft.request = {
            "messages": size.messages,
            "images": size.images,
            "text_chars": size.text_chars,
            "image_bytes": size.image_bytes,
            "sent_size": [sent.width, sent.height],
            "reflection": reflection is not None,
            "a11y": a11y,
        }

        action, reply = self._generate(draft, messages)
        draft.action, draft.reply = action, reply
        points = self._ground(draft, action, observation, sent)
        outcome, executed = self._act(draft, action, points, execute, observation)
        outcome = replace(outcome, detail=self._redactor.text(outcome.detail))

        groundings = tuple(
            Grounding(g.target, g.grounder, Point(*g.point) if g.point else None)
            for g in draft.grounding
        )
        self._records.append(
            StepRecord(draft.step, sent, reply, call_text(action), outcome, groundings)
        )
        kind = "terminal" if action.is_terminal else outcome.kind
        detail = outcome.detail
        return StepReport(
            step=draft.step,
            action=action,
            action_text=call_text(action),
            grounding=tuple(draft.grounding),
            outcome=outcome,
            code=draft.code,
            executed=executed,
            usage=self._meter.total,
            entry=draft.entry(kind, detail),
        )

    # -- the parts of a step ------

    def _observe(self) -> Observation:
        backend = self.backend
        shot = backend.capture()
        return Observation(shot, tuple(backend.windows()), backend.geometry())

    def _prompts(
        self, observation: Observation, execute: bool, sent: EncodedImage
    ) -> tuple[Platform, str]:
        """The platform and system prompt, fixed for a task at its first observation; the
        code agent is offered when it is on and this agent executes the actions. With native
        grounding the prompt states the size of the image sent, and is rebuilt if that changes."""
        native = (sent.width, sent.height) if isinstance(self._grounder, NativeGrounder) else None
        if self._system is None or native != self._native_frame:
            geometry = observation.geometry
            if geometry is not None:
                _, _, width, height = geometry.bounds
                monitors = len(geometry.monitors)
            else:
                (width, height), monitors = observation.screenshot.image.size, 1
            platform = detect_platform(
                width,
                height,
                system=sys.platform,
                environ={"XDG_CURRENT_DESKTOP": self.settings.desktop_name},
                monitors=monitors,
            )
            exclude = () if self.settings.code.enabled and execute else CODE_AGENT
            self._code_offered = not exclude
            catalogue = action_catalogue(exclude=exclude)
            prompt = worker_system_prompt(platform, catalogue=catalogue, native_image=native)
            self._system, self._native_frame = (platform, prompt), native
        return self._system

    def _accessibility(self, draft: StepDraft, observation: Observation) -> tuple[str | None, str]:
        """The active window's named elements as request text (None when there are none or the
        tree is unavailable), and a note for the trajectory. The walk is the a11y grounder's,
        cached per observation, so grounding this step does not walk the tree again."""
        parts = getattr(self._grounder, "grounders", (self._grounder,))
        a11y = next((p for p in parts if isinstance(p, AccessibilityGrounder)), self._own_a11y)
        if a11y is None:
            a11y = self._own_a11y = AccessibilityGrounder()
        start = time.perf_counter()
        try:
            elements = a11y.snapshot(observation)
        except GroundingError as err:  # GrounderUnavailable: no bus, no bindings, no apps
            return None, f"unavailable: {err}"[:300]
        finally:
            draft.timings["a11y"] = time.perf_counter() - start
        lines, total = window_outline(elements, observation)
        window = observation.active_window
        if window is None or not lines:
            return None, "no named elements in the active window"
        text = self._redactor.text(
            accessibility_snapshot(f"{window.app}: {window.title}", lines, total)
        )
        return text, f"{len(lines)} of {total} elements"

    def _call(self, draft: StepDraft, messages: Sequence[Message], purpose: str) -> Any:
        """One model call; its retries (if any) are noted on the step."""
        start = time.perf_counter()
        self._calls += 1
        try:
            return self._provider.complete(
                ModelRequest(tuple(messages), metadata={"purpose": purpose})
            )
        finally:
            spent = time.perf_counter() - start
            draft.timings["model"] = draft.timings.get("model", 0.0) + spent
            draft.errors.extend(self._retries)
            self._retries.clear()

    def _reflect(self, draft: StepDraft, platform: Platform, sent: EncodedImage) -> str | None:
        if not self._records:
            return None
        messages = build_reflection_messages(
            reflection_system_prompt(platform),
            self._task,
            self._records,
            sent,
            policy=self.settings.context,
        )
        start = time.perf_counter()
        reply = self._call(draft, messages, "reflect")
        draft.calls.append(ModelCall.of("reflect", reply.text, reply.usage, start, reply.attempts))
        return reply.text.strip() or None

    def _generate(self, draft: StepDraft, messages: Sequence[Message]) -> tuple[ActionModel, str]:
        """One generation call per try; a reply that is no valid action is sent back with the
        reason, at most ``max_invalid_replies`` times. Never turned into a wait."""
        tries = self.settings.max_invalid_replies + 1
        problem = ""
        for _ in range(tries):
            start = time.perf_counter()
            try:
                reply = self._call(draft, messages, "generate")
            except OutputTruncated as err:
                text = err.partial_text
                problem = "the reply was cut off at the output limit; keep the reasoning short"
                draft.calls.append(ModelCall.of("generate", text, err.usage, start, 1, problem))
            except Refused as err:
                draft.calls.append(
                    ModelCall.of("generate", err.refusal, err.usage, start, 1, "refused")
                )
                raise RunEnded(
                    f"the model refused the task: {err.refusal.strip()[:300]}",
                    status=RunStatus.INFEASIBLE,
                    cause="refused",
                ) from err
            else:
                text = reply.text
                try:
                    if not text.strip():
                        raise ActionParseError(
                            "the reply was empty. Reply with brief reasoning, then exactly one "
                            "action in a ```python block.",
                            kind="none",
                        )
                    action = parse_action(text)
                except ActionParseError as err:
                    problem = str(err)
                    draft.calls.append(
                        ModelCall.of("generate", text, reply.usage, start, reply.attempts, problem)
                    )
                else:
                    draft.calls.append(
                        ModelCall.of("generate", text, reply.usage, start, reply.attempts)
                    )
                    return action, text
            messages = with_feedback(messages, text, problem, policy=self.settings.context)
        raise RunEnded(
            f"no usable action after {tries} replies; the last problem: {problem}",
            status=RunStatus.FAILED,
            cause="invalid_replies",
        )

    def _ground(
        self, draft: StepDraft, action: ActionModel, observation: Observation, sent: EncodedImage
    ) -> list[Point] | None:
        """One grounding call per target (a text span: one OCR call for both ends); None when
        a target was not found (the reason is in ``draft.errors`` for the model). Native
        coordinates are read over ``sent``, the very image the model saw."""
        targets = action.targets()
        if not targets:
            return []
        start = time.perf_counter()
        points: list[Point] = []
        try:
            if targets[0].kind != "element" and self._grounder.name != "native":
                span = self._ocr.span(targets[0].text, targets[1].text, observation)
                for target, at in zip(targets, (span.start, span.end), strict=True):
                    draft.grounding.append(
                        GroundingEntry(
                            target.text,
                            target.kind,
                            "ocr",
                            (at.x, at.y),
                            None,
                            span.confidence,
                            span.evidence,
                            round(time.perf_counter() - start, 3),
                        )
                    )
                    points.append(at)
            else:
                for target in targets:
                    result = self._ground_one(target.text, observation, sent)
                    draft.grounding.append(GroundingEntry.of(target.kind, result))
                    points.append(result.point)
        except GroundingError as err:
            missing = next(t for t in targets if t.text not in [g.target for g in draft.grounding])
            draft.grounding.append(
                GroundingEntry(
                    missing.text,
                    missing.kind,
                    getattr(err, "grounder", self._grounder.name),
                    None,
                    evidence=str(err)[:500],
                    seconds=round(time.perf_counter() - start, 3),
                )
            )
            draft.errors.append(not_found_feedback(missing.text, err))
            return None
        finally:
            draft.timings["grounding"] = time.perf_counter() - start
        return points

    def _ground_one(
        self, text: str, observation: Observation, sent: EncodedImage
    ) -> GroundingResult:
        grounder = self._grounder
        if isinstance(grounder, NativeGrounder):
            return native_result(
                text, text, sent=sent, observation=observation, convention=grounder.convention
            )
        return grounder.ground(text, observation)

    def _act(
        self,
        draft: StepDraft,
        action: ActionModel,
        points: list[Point] | None,
        execute: bool,
        observation: Observation,
    ) -> tuple[Outcome, bool]:
        if points is None:
            return Outcome.failure(draft.errors[-1]), False
        if isinstance(action, CallCodeAgentAction) and not (execute and self._code_offered):
            draft.code = action.to_pyautogui(points)
            draft.errors.append(CODE_AGENT_MISSING)
            return Outcome.failure(CODE_AGENT_MISSING), False
        # Judged against the windows as they are now, not as the model saw them seconds ago: a
        # window that appeared meanwhile (a slow `open`) gets the keys, so it decides.
        windows = self._current_windows(observation) if execute else observation.windows
        subject = subject_for_action(action, points, windows, call_text(action))
        decision = self._gate.check(
            subject,
            step=draft.step,
            ask=not self.settings.dry_run,
            image=lambda: self._approval_image(draft, observation, points, subject.window),
        )
        draft.safety = decision.to_json()
        if not decision.allowed:  # no code either: a caller executing it would bypass the gate
            draft.errors.append(decision.message)
            return Outcome.failure(decision.message), False
        if isinstance(action, SaveToKnowledgeAction):
            self._notes.extend(action.text)
            draft.code = action.to_pyautogui(points)
            return Outcome.success(f"{len(action.text)} note(s) saved"), False
        if isinstance(action, CallCodeAgentAction):
            draft.code = action.to_pyautogui(points)
            return self._run_code_agent(draft, action)
        plan = action.plan(points)
        draft.code = action.to_pyautogui(points)
        if self.settings.dry_run and self._writer is not None and plan:
            name = f"step_{draft.step:03d}_plan.png"
            image = draw_plan(observation.screenshot, plan)
            draft.dry_run_image = self._writer.write_image(name, image)
        if not execute or not plan:
            return Outcome.success("not executed (dry run)" if self.settings.dry_run else ""), False
        start = time.perf_counter()
        try:
            guard = self._gate.guard(subject, decision, self.backend.windows)
            perform(self.backend, plan, before=guard)
        except (ActionExecutionError, ValueError) as err:
            draft.errors.append(f"{type(err).__name__}: {err}")
            return Outcome.failure(str(err)), False
        finally:
            draft.executed.extend(_op_json(op) for op in plan)
            draft.timings["execute"] = time.perf_counter() - start
        if self.settings.settle_seconds:
            time.sleep(self.settings.settle_seconds)
        return Outcome.success(), True

    def _current_windows(self, observation: Observation) -> Sequence[WindowInfo]:
        try:
            return self.backend.windows()
        except AgentSError:  # the window list is unavailable: judge by the observation's
            return observation.windows

    def _approval_image(
        self, draft: StepDraft, observation: Observation, points: list[Point], window: Any
    ) -> tuple[bytes, Path | None]:
        """The screen around the action's target, marked, for an approver (saved if recording)."""
        data = approval_image(observation.screenshot, points, window)
        if self._writer is None:
            return data, None
        name = self._writer.write_image(f"step_{draft.step:03d}_approval.png", data)
        return data, self._writer.folder / name

    def _run_code_agent(
        self, draft: StepDraft, action: CallCodeAgentAction
    ) -> tuple[Outcome, bool]:
        """Run the code agent once; its turns become the step's sub-steps. Its code runs with
        the desktop's environment (HOME, DISPLAY) when the backend has one (X11Backend.env)."""
        if self._system is None:
            raise RuntimeError("the platform is known only after the first observation")
        agent = CodeAgent(
            lambda messages: self._call(draft, messages, "code"),
            self.settings.code,
            self._system[0],
            self._gate,
            env=getattr(self._backend, "env", None),
            secrets=self._secrets,
            redactor=self._redactor,
            step=draft.step,
        )
        start = time.perf_counter()
        try:
            report = agent.run(action.task or self._task, on_substep=draft.substeps.append)
        finally:
            draft.timings["code"] = time.perf_counter() - start
        if report.succeeded:
            return Outcome.success(report.worker_text), bool(report.runs)
        draft.errors.append(report.worker_text)
        return Outcome.failure(report.worker_text), bool(report.runs)

    def _write(self, entry: StepEntry) -> None:
        t = entry.timings
        self._timings = self._timings + Timings(
            entry.seconds,
            t.get("observe", 0.0),
            t.get("encode", 0.0),
            t.get("build", 0.0),
            t.get("model", 0.0),
            t.get("grounding", 0.0),
            t.get("execute", 0.0),
        )
        if self._writer is not None:
            self._writer.write_step(entry)

    # -- whole runs ------

    def run(self, task: str, *, postcondition: Postcondition | None = None) -> RunResult:
        """Do ``task`` until done, fail, or a limit; always returns a result (and writes it)."""
        self.start(task)
        limit = self.settings.max_steps
        try:
            for _ in range(limit):
                self._check_time()
                report = self.step()
                if report.terminal == "done":
                    return self._finish_done(report.action, postcondition)
                if report.terminal == "fail":
                    reason = getattr(report.action, "reason", None) or "the model gave up"
                    return self.finish(RunStatus.FAILED, "model_gave_up", reason)
            return self.finish(
                RunStatus.MAX_STEPS, "max_steps", f"the task was not finished in {limit} steps"
            )
        except RunEnded as end:
            return self.finish(end.status, end.cause, str(end))
        except BudgetExceeded as err:
            cause: Cause = "budget_cost" if err.kind == "cost" else "budget_tokens"
            return self.finish(RunStatus.BUDGET_EXCEEDED, cause, str(err))
        except KeyboardInterrupt as stop:  # Ctrl-C, or a stop signal: "interrupted by SIGTERM"
            reason = str(stop) if isinstance(stop, Terminated) else "interrupted by the user"
            return self.finish(RunStatus.CANCELLED, "interrupted", reason)
        except ModelError as err:
            reason = f"the model call failed: {err}"
            return self.finish(RunStatus.ERROR, "model_error", reason, error=err)
        except (DisplayUnavailableError, DesktopSetupError) as err:
            return self.finish(RunStatus.ERROR, "desktop_error", str(err), error=err)
        except Exception as err:
            if is_interrupt(err):  # pyautogui's fail-safe: the user took the mouse to a corner
                reason = "stopped by the fail-safe: the mouse was moved into a screen corner"
                return self.finish(RunStatus.CANCELLED, "interrupted", reason)
            self.finish(RunStatus.ERROR, "internal_error", describe_error(err), error=err)
            raise

    def _check_time(self) -> None:
        limit = self.settings.max_seconds
        if limit is not None and time.monotonic() - self._clock >= limit:
            raise RunEnded(
                f"the time limit of {limit:g} s was reached",
                status=RunStatus.BUDGET_EXCEEDED,
                cause="max_seconds",
            )

    def _finish_done(self, action: ActionModel, postcondition: Postcondition | None) -> RunResult:
        answer = getattr(action, "answer", None)
        if postcondition is None:
            return self.finish(
                RunStatus.SUCCEEDED, "done", "the model said the task is done", answer=answer
            )
        check = check_postcondition(postcondition)
        if check.passed:
            return self.finish(
                RunStatus.SUCCEEDED,
                "done",
                "done, and the check passed",
                answer=answer,
                check=check,
            )
        reason = f"the model said done, but the check failed: {check.detail}"
        return self.finish(
            RunStatus.FAILED, "postcondition_failed", reason, answer=answer, check=check
        )

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
        """End the task: the result, written to ``result.json`` when recording."""
        reason = self._redactor.text(reason)
        answer = self._redactor.text(answer) if answer is not None else None
        result = RunResult(
            task=self._task,
            status=status,
            cause=cause,
            reason=reason,
            answer=answer,
            steps=len(self._records),
            usage=self._meter.total,
            model_calls=self._calls,
            timings=_rounded(replace(self._timings, total=time.monotonic() - self._clock)),
            trajectory_dir=self.trajectory_dir,
            verified=bool(check and check.passed),
            postcondition=check,
            model=self.model.model,
            started_at=self._started_at,
            error_type=type(error).__name__ if error is not None else None,
        )
        if self._writer is not None:
            self._writer.write_result(result)
            self._writer.close()
            self._writer = None
        return result


# -- helpers -------------------------------------------------------------------------------------


def _grounding_models(grounder: Grounder) -> list[MeteredProvider]:
    parts = getattr(grounder, "grounders", (grounder,))
    found = [getattr(p, "provider", None) for p in parts]
    return [p for p in found if isinstance(p, MeteredProvider)]


def _before_last_part(messages: Sequence[Message], text: str) -> tuple[Message, ...]:
    """``messages`` with ``text`` added to the last message, before its closing instruction."""
    last = messages[-1]
    parts = (*last.parts[:-1], TextPart(text), last.parts[-1])
    return (*messages[:-1], replace(last, parts=parts))


def _op_json(op: Any) -> dict[str, Any]:
    return {"op": type(op).__name__, **asdict(op)}


def _rounded(timings: Timings) -> Timings:
    return Timings(*(round(value, 3) for value in asdict(timings).values()))


def _settings_json(settings: AgentConfig) -> dict[str, Any]:
    data = asdict(settings)
    data["record_dir"] = str(settings.record_dir) if settings.record_dir else None
    data["secrets"] = len(settings.secrets)  # how many, never which
    return data


__all__ = [
    "Agent",
    "RunEnded",
    "StepReport",
    "call_text",
]
