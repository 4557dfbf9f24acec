"""The bridge between a ``run_task`` call and the run (``agent_s.mcp.server``): the agent runs in a
thread of its own; its approvals, ``ask_user`` questions and progress become events the call's
driver relays to the client (elicitation mid-call on handshake-era connections, an
``input_required`` result on 2026-07-28 ones, whose retry carries the answer back). ``Tools``
holds the server's state: the settings, the record folder (and which paths inside it may be
read), the runs going and those waiting for an answer."""

from __future__ import annotations

import contextlib
import os
import queue
import shlex
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio
import anyio.to_thread
from mcp.server.elicitation import render_elicitation_schema
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import (
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    InputRequiredResult,
)
from mcp_types.version import is_version_at_least
from pydantic import ValidationError

from agent_s.errors import AgentSError
from agent_s.guards import files
from agent_s.mcp.models import AnswerForm, ApprovalForm, McpSettings, RunOutcome
from agent_s.record.trajectory import RESULT_FILE, RUN_FILE, TRAJECTORY_FILE
from agent_s.safety.gate import Approval, ApprovalRequest

#: The first protocol revision where a server cannot send requests mid-call: questions ride an
#: ``input_required`` result instead.
_INPUT_REQUIRED_VERSION = "2026-07-28"
_WAIT_SLICE = 0.5  # seconds: how often a waiting call looks again (and can be cancelled)
AnyContext = Context[Any, Any]


@dataclass
class _Question:
    """A question a run's thread waits on; the call's driver sets ``answer``."""

    kind: Literal["approval", "question"]
    message: str
    key: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    answer: ElicitResult | None = None
    answered: threading.Event = field(default_factory=threading.Event)

    @property
    def schema(self) -> dict[str, Any]:
        form = ApprovalForm if self.kind == "approval" else AnswerForm
        return render_elicitation_schema(form)

    def reply(self, answer: ElicitResult | None) -> None:
        self.answer = answer
        self.answered.set()


@dataclass(frozen=True)
class _Progress:
    step: int
    message: str


@dataclass(frozen=True)
class _Finished:
    outcome: RunOutcome | None = None
    error: str | None = None  # a problem for the client, as a tool error


_Event = _Question | _Progress | _Finished


class _Run:
    """One ``run_task``: the agent in its own thread, and the events the call's driver reads."""

    def __init__(self, timeout: float) -> None:
        self.id = uuid.uuid4().hex
        self.events: queue.Queue[_Event] = queue.Queue()
        self.timeout = timeout
        self.can_answer = False  # whether the client declared elicitation
        self.stopped = threading.Event()
        self.control: Any = None  # agent_s.loop.control.RunControl, once the agent exists
        self.thread: threading.Thread | None = None
        self.finished = False
        self.asked: dict[str, _Question] = {}  # questions out as input_required, by key

    def ask(self, kind: Literal["approval", "question"], message: str) -> ElicitResult | None:
        """Ask the client (from the run's thread); None: it cannot answer, or did not in time."""
        if not self.can_answer or self.stopped.is_set():
            return None
        question = _Question(kind, message)
        self.events.put(question)
        deadline = time.monotonic() + self.timeout
        while not question.answered.wait(_WAIT_SLICE):
            if self.stopped.is_set() or time.monotonic() > deadline:
                return None
        return question.answer

    def approve(self, request: ApprovalRequest) -> Approval:
        answer = self.ask("approval", approval_message(request))
        by = "mcp client"
        if answer is None:
            return Approval(False, by=by, note="the MCP client cannot answer (no elicitation)")
        if answer.action != "accept":
            return Approval(False, by=by, note=f"the client's user chose {answer.action}")
        try:
            decision = ApprovalForm.model_validate(answer.content or {}).decision
        except ValidationError:
            return Approval(False, by=by, note="the client's answer was not yes, no or always")
        if decision == "no":
            return Approval(False, by=by)
        return Approval(True, by=by, always=decision == "always")

    def question(self, text: str) -> str | None:
        answer = self.ask("question", f"The desktop agent asks: {text}")
        if answer is None or answer.action != "accept":
            return None
        try:
            return AnswerForm.model_validate(answer.content or {}).answer
        except ValidationError:
            return None

    def stop(self, why: str) -> None:
        self.stopped.set()
        if self.control is not None:
            self.control.stop(why)

    def next_event(self) -> _Event | None:
        """The next event, or None after a short wait (the caller looks again)."""
        try:
            return self.events.get(timeout=_WAIT_SLICE)
        except queue.Empty:
            return None


def approval_message(request: ApprovalRequest) -> str:
    """The approval as the client's user reads it: the action, why it is held, what exactly."""
    subject = request.subject
    where = "" if request.step is None else f" at step {request.step}"
    lines = [f"The desktop agent wants to act{where} (safety mode {request.mode}):"]
    lines.append(f"  {subject.description}")
    lines.extend(f"  - it {risk.reason}" for risk in request.risks)
    if subject.app and subject.action not in ("open", "switch_applications"):
        lines.append(f"  in the window of: {subject.app}")
    if subject.shown:
        lines.append("  exactly:")
        lines.extend(f"    {line}" for line in subject.shown[:4000].split("\n"))
    if request.image_path is not None:
        lines.append(f"  the screen, target marked: {request.image_path}")
    lines.append("Allow it? yes (once), no, or always (for the rest of this run)")
    return "\n".join(lines)


class Tools:
    """The tools' state: the settings, the record folder, the runs waiting for an answer."""

    def __init__(self, settings: McpSettings) -> None:
        from agent_s.settings.read import flag_values, load_settings

        self.settings = settings
        self.environ = dict(os.environ if settings.environ is None else settings.environ)
        resolved = load_settings(
            flag_values(settings.flags), environ=self.environ, defaults=settings.defaults
        )  # a bad file or variable: the server does not start
        record = resolved.run.record_dir
        self.record_dir = Path(record).expanduser() if record is not None else None
        self.busy = threading.Lock()  # one run at a time: runs share the screen and os.environ
        self.waiting: dict[str, _Run] = {}  # runs whose question went out as input_required
        self.runs: set[_Run] = set()

    # -- run_task ------

    def resolve(self, given: Mapping[str, Any]) -> Any:
        from agent_s.settings.read import flag_values, load_settings

        flags = {**self.settings.flags, **{k: v for k, v in given.items() if v is not None}}
        values = flag_values({k: v for k, v in flags.items() if k != "max_seconds"})
        if flags.get("max_seconds") is not None:
            values.setdefault("limits", {})["max_seconds"] = flags["max_seconds"]
        return load_settings(values, environ=self.environ, defaults=self.settings.defaults)

    def start(
        self, task: str, given: Mapping[str, Any], virtual: bool, check: str | None, ctx: AnyContext
    ) -> _Run:
        """Check everything that can be checked before the desktop is touched, then start the
        run's thread. Problems raise ToolError."""
        from agent_s.loop.agent import Agent
        from agent_s.loop.control import RunControl

        if not task.strip():
            raise ToolError('the task is empty: give one, e.g. "open the calculator"')
        try:
            resolved = self.resolve(given)
            model = resolved.build_model(self.settings.api_key, self.environ)
            grounding = resolved.build_grounding(self.environ)
            config = resolved.build_agent_config(self.environ)
        except (AgentSError, ValueError) as error:
            raise ToolError(f"{error} {WHERE_SETTINGS}") from None
        argv = _check_argv(check)
        if config.record_dir is not None:
            _writable(Path(config.record_dir).expanduser())
        run = _Run(self.settings.answer_timeout)
        run.can_answer = _can_elicit(ctx)
        run.control = RunControl()
        try:
            agent = Agent(
                model,
                settings=config,
                grounding=grounding,
                profiles=resolved.build_profiles(),
                # a client that cannot answer: nobody can approve (refused), nor answer
                approver=run.approve if run.can_answer else None,
                ask_user=run.question if run.can_answer else None,
                on_step=lambda step: run.events.put(
                    _Progress(step.step, f"step {step.step}: {step.action_text[:200]}")
                ),
                control=run.control,
            )
        except (AgentSError, ValueError) as error:
            raise ToolError(f"{error} {WHERE_SETTINGS}") from None
        if not self.busy.acquire(blocking=False):
            raise ToolError(
                "another run_task is running (runs share the screen): wait for its result, "
                "then call again"
            )

        def work() -> None:
            try:
                run.events.put(self._work(agent, run, task, virtual, argv, config.safety))
            except BaseException as error:  # never a traceback for the client: the reason
                run.events.put(_Finished(error=f"the run failed: {_describe(error)}"))
            finally:
                self.busy.release()

        run.thread = threading.Thread(target=work, name=f"agent-s-mcp-run-{run.id[:8]}")
        self.runs.add(run)
        run.thread.start()
        return run

    def _work(
        self,
        agent: Any,
        run: _Run,
        task: str,
        virtual: bool,
        argv: tuple[str, ...] | None,
        safety: Any,
    ) -> _Finished:
        from agent_s.record.result import CommandCheck
        from agent_s.safety.effects import subject_for_code
        from agent_s.safety.gate import SafetyGate

        if argv is not None:  # the client's command is code to run: the gate judges it first
            gate = SafetyGate(safety, run.approve)
            decision = gate.check(subject_for_code("bash", shlex.join(argv)))
            if not decision.allowed:
                return _Finished(
                    error=f"the check command was not run, nor the task: {decision.message} "
                    "(leave out check, or have the client's user approve it)"
                )
        with self._desktop(virtual) as (backend, env):
            agent.backend = backend
            check = CommandCheck(argv, env=env) if argv else None
            result = agent.run(task, postcondition=check)
        outcome = RunOutcome.of(result)
        if result.refusal is not None and result.refusal.verdict == "ask" and not run.can_answer:
            outcome.reason += f" {_CANNOT_APPROVE}"
        return _Finished(outcome)

    @contextlib.contextmanager
    def _desktop(self, virtual: bool) -> Iterator[tuple[Any, dict[str, str] | None]]:
        from agent_s.desktop.choose import desktop_backend, open_backend, virtual_kind

        if not virtual:
            with open_backend(self.environ) as backend:
                yield backend, None
            return
        from agent_s.desktop.virtual import VirtualDesktop

        with (
            VirtualDesktop(home="temp", kind=virtual_kind(self.environ)) as desk,
            desk.exported(),
            desktop_backend(desk) as backend,
        ):
            yield backend, dict(desk.env)

    async def drive(self, run: _Run, ctx: AnyContext) -> RunOutcome | InputRequiredResult:
        """Relay the run's events to the client until it ends or a question must go out as an
        ``input_required`` result. The client cancelling the call stops the run."""
        try:
            while True:
                event = await anyio.to_thread.run_sync(run.next_event)
                if event is None:
                    continue
                if isinstance(event, _Progress):
                    await ctx.report_progress(event.step, None, event.message)
                elif isinstance(event, _Finished):
                    run.finished = True
                    self.runs.discard(run)
                    if event.outcome is None:
                        raise ToolError(event.error or "the run ended without a result")
                    return event.outcome
                elif _back_channel(ctx):
                    event.reply(await _elicit(ctx, event))
                else:  # 2026-07-28: the question is this call's result; the retry answers it
                    self.waiting[run.id] = run
                    run.asked[event.key] = event
                    request = ElicitRequest(
                        params=ElicitRequestFormParams(
                            message=event.message, requested_schema=event.schema
                        )
                    )
                    return InputRequiredResult(
                        input_requests={event.key: request},
                        request_state=f"{run.id}:{event.key}",
                    )
        except anyio.get_cancelled_exc_class():
            run.stop("the MCP client cancelled the call")
            raise

    def resume(self, ctx: AnyContext) -> _Run | None:
        """The run a retried call answers (2026-07-28), given the client's answer; None: a
        first call."""
        state = ctx.request_state
        if not state:
            return None
        run_id, _, key = state.partition(":")
        run = self.waiting.pop(run_id, None)
        question = run.asked.pop(key, None) if run is not None else None
        if run is None or question is None or run.finished:
            raise ToolError(
                "this run is no longer waiting for an answer (it ended, or the server restarted): "
                "call run_task again"
            )
        answer = (ctx.input_responses or {}).get(key)
        question.reply(answer if isinstance(answer, ElicitResult) else None)
        return run

    def stop_all(self) -> None:
        for run in list(self.runs):
            run.stop("the MCP server is shutting down")
        for run in list(self.runs):
            if run.thread is not None:
                run.thread.join(timeout=30)

    # -- trajectories ------

    def root(self) -> Path:
        if self.record_dir is None:
            raise ToolError(
                "no record folder is set: start agent-s mcp with --record DIR (or set "
                "AGENT_S_RECORD_DIR) to keep and read trajectories"
            )
        return self.record_dir

    def folder(self, given: str) -> Path:
        """The trajectory folder ``given`` names (its id, or a path), inside the record folder
        only: what leads out of it, by ``..``, an absolute path or a symbolic link, is refused."""
        root = self.root()
        text = given.strip()
        if not text:
            raise ToolError("give a trajectory id: list_trajectories lists them")
        candidate = Path(text).expanduser()
        name = os.path.relpath(candidate, root) if candidate.is_absolute() else text
        outside = ToolError(
            f"{given!r} is outside the record folder {root}: only trajectories under it can be "
            "read; give an id that list_trajectories lists"
        )
        try:
            real = files.inside(root, name)
        except files.OutsideFolder:
            raise outside from None
        if real == root.resolve():
            raise outside
        if not real.is_dir():
            raise ToolError(f"no trajectory {given!r} in {root}: list_trajectories lists them")
        for own in (TRAJECTORY_FILE, RUN_FILE, RESULT_FILE):
            if os.path.lexists(real / own):
                try:
                    files.inside(real, own)
                except files.OutsideFolder:
                    raise outside from None
        return real


_CANNOT_APPROVE = (
    "(this MCP client cannot answer approvals: it did not declare elicitation. Use a client "
    "that does, or allow the action where agent-s mcp starts: --safety, or [safety] allow_apps, "
    "allow_paths or an allow rule in the configuration file)"
)
WHERE_SETTINGS = (
    "(run_task takes model, provider, grounding and the limits as arguments; the rest is set "
    "where agent-s mcp starts: its flags, AGENT_S_* variables or the configuration file)"
)


def _describe(error: BaseException) -> str:
    from agent_s.errors import describe_error

    if isinstance(error, Exception):
        return describe_error(error)
    return type(error).__name__


def _check_argv(check: str | None) -> tuple[str, ...] | None:
    if check is None:
        return None
    try:
        argv = tuple(shlex.split(check))
    except ValueError as error:
        raise ToolError(f"check {check!r}: {str(error).lower()}; quote it as in a shell") from None
    if not argv:
        raise ToolError('check needs a command, e.g. "test -f ~/out.txt"')
    return argv


def _writable(folder: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ToolError(
            f"the record folder {folder} cannot be created ({error.strerror or error}): start "
            "agent-s mcp with --record DIR, a writable folder"
        ) from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ToolError(
            f"the record folder {folder} is not writable: start agent-s mcp with --record DIR, "
            "a writable folder"
        )


def _can_elicit(ctx: AnyContext) -> bool:
    """Whether the client declared form elicitation (a bare ``elicitation: {}`` is form)."""
    capabilities = ctx.client_capabilities
    elicitation = capabilities.elicitation if capabilities is not None else None
    return elicitation is not None and (elicitation.form is not None or elicitation.url is None)


def _back_channel(ctx: AnyContext) -> bool:
    """Whether a question can be sent mid-call (handshake-era connections)."""
    version = ctx.protocol_version
    modern = version is not None and is_version_at_least(version, _INPUT_REQUIRED_VERSION)
    return not modern and ctx.session.can_send_request


async def _elicit(ctx: AnyContext, question: _Question) -> ElicitResult | None:
    """Ask over the back channel; None when the client fails to answer."""
    try:
        return await ctx.session.elicit_form(
            message=question.message,
            requested_schema=question.schema,
            related_request_id=ctx.request_id,
        )
    except Exception:  # a client that errs cannot answer: refused, or needs_input
        return None


__all__ = ["WHERE_SETTINGS", "AnyContext", "Tools", "approval_message"]
