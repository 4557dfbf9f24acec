"""Practice: tasks the model proposes for an application, each decided by a command, grow memory.

    report = practice("mousepad", settings=load_settings(), store=MemoryStore(),
                      budget=PracticeBudget(tasks=5, max_steps=15, max_cost=1.0))
    report.passed, report.skills, report.lessons        # counts, and the entry ids learned

``target`` is an application (``mousepad``, ``galculator``: what ``open`` would start) or a
suite (``smoke``, or a suite folder; its tasks' ``related_apps`` are practised in turn). For each
of ``budget.tasks`` proposals:

1. **Propose.** One call to the generation model (purpose ``practice``, ``prompts/practice.md``)
   asks for the next task for the application, harder than the ones that passed, with a check:
   an argument list (``{"argv": [...]}``) or a short Bash script (``{"bash": "..."}``) whose exit
   status decides. The reply is read strictly (one JSON object, ``Proposal``); a reply that is
   no valid proposal goes back to the model with the reason (``generation.generate_parsed``), at
   most ``budget.tries - 1`` times.
2. **Validate.** The check passes the safety gate (``settings.safety``, the ``approver``) and
   is run in a fresh virtual desktop where only the application was started, contained as
   every check is: under bubblewrap (``--code-sandbox auto``, the default, or ``bwrap``; without
   a working bubblewrap practice does not start unless ``--code-sandbox none`` is given), it
   writes only in that desktop's HOME (its ``~``) and reaches no display, bus or network.
   It must fail there: a check that passes on the untouched desktop, cannot be run (not
   started, stopped at its time limit) or names a program that is not installed (status 126,
   127) rejects the task, and the next request tells the model why.
3. **Attempt.** The agent does the task in another fresh virtual desktop (its own HOME, the
   application started), with ``budget.max_steps``; the check is its postcondition: it runs
   after ``done``, in the code agent's contained runner, on that desktop.
4. **Learn.** ``agent_s.memory.learn_from_run`` stores the run's summary and lessons; skills only
   when the check passed. The model wrote that check, so what it passed is stored as "checked
   by a model-written check", never as verified (``agent_s.guards.trust``). A failed attempt's
   lessons are marked unverified.

Each desktop lives in a worker process of its own (``agent_s.practice.worker``: pyautogui and
AT-SPI bind to one display per process), started with a lifeline: a worker whose parent is
gone stops as on SIGTERM, and each desktop's watchdog ends it if even that fails. Everything
goes under one folder per session (``practice-<time>`` in ``record_dir``): ``curriculum.jsonl``
(one record per proposal) and per task its workers' specs, logs and the attempt's trajectory.

Budgets: ``tasks`` (proposals, the rejected and invalid ones included), ``max_steps`` per
attempt, ``max_cost`` (USD: the proposals' calls and the attempts' ``RunResult.usage``) and
``max_time`` (seconds of the whole session), checked before each proposal and each attempt; an
attempt gets what is left of both as its own limits. Ctrl-C (or SIGTERM) stops the worker, which
stops its desktop; ``practice`` returns the report so far with ``stopped == "cancelled"``.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from agent_s.coding.containment import settle_settings
from agent_s.errors import AgentSError
from agent_s.loop.generation import generate_parsed
from agent_s.models.types import Message, ModelReply, ModelRequest
from agent_s.practice.curriculum import (
    EXAMPLE,
    CheckOutcome,
    CheckSpec,
    PracticeError,
    Proposal,
    clip,
    parse_proposal,
)
from agent_s.practice.worker import resolve, run_worker
from agent_s.prompting import Platform, render
from agent_s.record.result import RunEnded, RunResult, RunStatus

if TYPE_CHECKING:
    from agent_s.memory import MemoryStore
    from agent_s.models.usage import UsageMeter
    from agent_s.record.step import ModelCall
    from agent_s.safety.gate import Approver, SafetyGate
    from agent_s.settings.read import Settings

SETUP_SECONDS = 180.0  # a worker's time beyond its run: desktop, application, check
_NOT_RUNNABLE = (126, 127)  # bash: not executable, command not found

TaskStatus = Literal["invalid", "rejected", "skipped", "passed", "failed", "error", "cancelled"]
StopReason = Literal["tasks", "max_cost", "max_time", "cancelled", "error"]
EventKind = Literal["propose", "invalid", "rejected", "attempt", "step", "done", "stopped"]


# -- what a session did ---------------------------------------------------------------------------


@dataclass
class PracticeTask:
    """One proposal and what became of it; ``skills``/``lessons``/``runs``: the memory entries
    stored from its attempt (``verified``: its model-written check passed; memory keeps what it
    learned as checked by a model-written check, never as verified by the user)."""

    number: int
    app: str
    status: TaskStatus = "invalid"
    task: str = ""
    difficulty: int = 0
    check: str = ""
    reason: str = ""
    steps: int = 0
    cost_usd: float = 0.0
    run_dir: Path | None = None
    verified: bool = False
    skills: list[int] = field(default_factory=list)
    lessons: list[int] = field(default_factory=list)
    runs: list[int] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["run_dir"] = str(self.run_dir) if self.run_dir else None
        data["cost_usd"] = round(self.cost_usd, 6)
        return data


@dataclass
class PracticeReport:
    """What a practice session did and learned (see the module docstring)."""

    target: str
    apps: tuple[str, ...]
    folder: Path
    tasks: list[PracticeTask] = field(default_factory=list)
    stopped: StopReason = "tasks"
    reason: str = ""
    cost_usd: float = 0.0
    seconds: float = 0.0

    def _count(self, *statuses: TaskStatus) -> int:
        return sum(t.status in statuses for t in self.tasks)

    @property
    def proposed(self) -> int:
        return len(self.tasks)

    @property
    def rejected(self) -> int:
        return self._count("rejected", "invalid")

    @property
    def attempted(self) -> int:
        return self._count("passed", "failed", "error", "cancelled")

    @property
    def passed(self) -> int:
        return self._count("passed")

    @property
    def skills(self) -> list[int]:
        return [i for t in self.tasks for i in t.skills]

    @property
    def lessons(self) -> list[int]:
        return [i for t in self.tasks for i in t.lessons]

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "apps": list(self.apps),
            "folder": str(self.folder),
            "stopped": self.stopped,
            "reason": self.reason,
            "proposed": self.proposed,
            "rejected": self.rejected,
            "attempted": self.attempted,
            "passed": self.passed,
            "skills": self.skills,
            "lessons": self.lessons,
            "cost_usd": round(self.cost_usd, 6),
            "seconds": round(self.seconds, 2),
            "tasks": [t.to_json() for t in self.tasks],
        }


@dataclass(frozen=True)
class PracticeBudget:
    """``tasks``: proposals; ``max_steps``: per attempt; ``max_cost`` (USD) and ``max_time``
    (seconds): for the whole session, None for no limit; ``tries``: replies per proposal."""

    tasks: int = 5
    max_steps: int = 15
    max_cost: float | None = None
    max_time: float | None = None
    tries: int = 3

    def __post_init__(self) -> None:
        if self.tasks < 1 or self.max_steps < 1 or self.tries < 1:
            raise PracticeError("--tasks, --max-steps and the tries must be at least 1")
        if self.max_cost is not None and self.max_cost <= 0:
            raise PracticeError("--max-cost must be positive")
        if self.max_time is not None and self.max_time <= 0:
            raise PracticeError("--max-time must be positive")


@dataclass(frozen=True)
class PracticeEvent:
    """Progress: ``propose`` (asking), ``invalid`` (a reply fed back), ``rejected``,
    ``attempt`` (the agent starts), ``step`` (one of its steps), ``done`` (a task ended, with
    what it taught), ``stopped`` (the session ends)."""

    kind: EventKind
    number: int
    text: str
    task: PracticeTask | None = None


# -- the applications -----------------------------------------------------------------------------


def practice_apps(target: str) -> tuple[str, ...]:
    """The applications of ``target``: a suite's (built-in name or folder: its tasks'
    ``related_apps``, in order, once each), else ``target`` itself."""
    from agent_s.bench.tasks import TaskFormatError, builtin_suites, load_suite

    name = target.strip()
    if not name:
        raise PracticeError("name an application (e.g. mousepad) or a suite (e.g. smoke)")
    if name in builtin_suites() or Path(name).expanduser().exists():
        try:
            tasks, _ = load_suite(name).load()
        except (OSError, TaskFormatError) as err:
            raise PracticeError(f"cannot read the suite {name!r}: {err}") from None
        apps = tuple(dict.fromkeys(a for t in tasks for a in t.related_apps if a.strip()))
        if not apps:
            raise PracticeError(f"the suite {name!r} names no applications (related_apps)")
        return apps
    return (name,)


# -- the session ----------------------------------------------------------------------------------


def practice(
    target: str,
    *,
    settings: Settings,
    store: MemoryStore,
    budget: PracticeBudget | None = None,
    api_key: str | None = None,
    approver: Approver | None = None,
    record_dir: Path | None = None,
    on_event: Callable[[PracticeEvent], None] | None = None,
) -> PracticeReport:
    """Run a practice session (see the module docstring). ``settings``: the resolved settings
    (model, grounding, safety, code agent); ``api_key``: else the provider's variable;
    ``approver``: asked when the safety mode wants approval for a check; ``record_dir``: where
    the session's folder goes (default: the settings' ``record_dir``, else
    ``~/.local/share/agent-s/runs``). Raises ``PracticeError`` or ``ConfigError`` before
    anything starts; otherwise always returns the report."""
    from agent_s.coding.runner import sandbox_problem
    from agent_s.desktop.choose import virtual_kind
    from agent_s.guards.redaction import Redactor
    from agent_s.models.factory import build_provider
    from agent_s.models.retry import RetryPolicy
    from agent_s.models.usage import MeteredProvider, UsageMeter
    from agent_s.safety.gate import SafetyGate

    budget = budget or PracticeBudget()
    apps = practice_apps(target)
    programs: dict[str, str] = {}
    for app in apps:  # a suite's names that start nothing here ("os") are left out
        try:
            programs[app] = resolve(app, os.environ).program or app
        except PracticeError:
            if len(apps) == 1:
                raise
    if not programs:
        raise PracticeError(
            f"none of the applications of {target!r} ({', '.join(apps)}) is installed"
        )
    apps = tuple(programs)
    model = settings.build_model(api_key)
    settings.build_grounding()
    config = settings.build_agent_config(max_steps=budget.max_steps)
    profiles = settings.build_profiles()
    if budget.max_cost is not None and not profiles.resolve(model.model, model.api).prices_known:
        raise PracticeError(
            f"--max-cost cannot be kept for model {model.model!r}: its prices are not known; "
            f'set input_price and output_price under [profiles."{model.model}"] in the '
            "configuration, or use --max-time"
        )
    if config.code.sandbox != "none" and (problem := sandbox_problem()):
        raise PracticeError(
            f"practice runs the model's checks in the bubblewrap sandbox, which cannot run "
            f"here: {problem}; install bubblewrap, or pass --code-sandbox none to run them "
            "without it"
        )
    settings = settle_settings(settings, lambda line: None)  # the workers get bwrap or none
    meter = UsageMeter()
    provider = build_provider(
        model.settings(),
        profiles=profiles,
        retry=RetryPolicy(max_attempts=config.retry_attempts),
        meter=meter,
    )
    if isinstance(provider, MeteredProvider):
        provider.redactor = Redactor([model.api_key, *config.secrets], environ=os.environ)
    base = Path(record_dir or config.record_dir or "~/.local/share/agent-s/runs").expanduser()
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    folder = base / f"practice-{stamp}-{secrets.token_hex(2)}"
    try:
        folder.mkdir(parents=True)
    except OSError as err:
        raise PracticeError(f"cannot create {folder}: {err.strerror}; choose --record") from None
    kind = virtual_kind(os.environ)
    session = _Session(
        report=PracticeReport(target, apps, folder),
        budget=budget,
        settings=settings,
        store=store,
        api_key=api_key,
        model=model.model,
        complete=provider.complete,
        meter=meter,
        gate=SafetyGate(config.safety, approver),
        programs=programs,
        platform=Platform("linux", 1280, 800, desktop="sway" if kind == "wayland" else "openbox"),
        emit=on_event or (lambda event: None),
    )
    return session.run()


@dataclass
class _Session:
    report: PracticeReport
    budget: PracticeBudget
    settings: Settings
    store: MemoryStore
    api_key: str | None
    model: str
    complete: Callable[[ModelRequest], ModelReply]
    meter: UsageMeter
    gate: SafetyGate
    programs: dict[str, str]
    platform: Platform
    emit: Callable[[PracticeEvent], None]
    attempts_cost: float = 0.0
    started: float = field(default_factory=time.monotonic)

    @property
    def spent(self) -> float:
        return float(self.meter.total.cost_usd) + self.attempts_cost

    def _limit(self) -> tuple[StopReason, str] | None:
        cost, seconds = self.budget.max_cost, self.budget.max_time
        if cost is not None and self.spent >= cost:
            return "max_cost", f"the cost budget was spent: ${self.spent:.4f} of ${cost:.4f}"
        if seconds is not None and time.monotonic() - self.started >= seconds:
            return "max_time", f"the time limit of {seconds:g} s was reached"
        return None

    def run(self) -> PracticeReport:
        report = self.report
        try:
            for number in range(1, self.budget.tasks + 1):
                if (limit := self._limit()) is not None:
                    report.stopped, report.reason = limit
                    break
                app = report.apps[(number - 1) % len(report.apps)]
                task = PracticeTask(number, app)
                report.tasks.append(task)
                try:
                    self._one(task)
                except KeyboardInterrupt:
                    if task.status in ("invalid", "cancelled"):
                        task.status, task.reason = "cancelled", task.reason or "interrupted"
                    raise
                finally:
                    self._note(task)
            else:
                report.reason = f"all {self.budget.tasks} tasks were proposed"
        except KeyboardInterrupt:
            report.stopped, report.reason = "cancelled", "interrupted"
        except AgentSError as err:  # the model's provider failed (a key, the network)
            report.stopped, report.reason = "error", str(err)
        report.cost_usd = self.spent
        report.seconds = time.monotonic() - self.started
        self.emit(PracticeEvent("stopped", len(report.tasks), report.reason))
        return report

    def _note(self, task: PracticeTask) -> None:
        with (self.report.folder / "curriculum.jsonl").open("a", encoding="utf-8") as out:
            out.write(json.dumps(task.to_json()) + "\n")

    # -- one task ------

    def _one(self, task: PracticeTask) -> None:
        self.emit(PracticeEvent("propose", task.number, f"proposing a task for {task.app}"))
        try:
            proposal = self._propose(task)
        except RunEnded as err:  # no usable proposal in the tries, or a refusal
            task.status, task.reason = "invalid", str(err)
            self.emit(PracticeEvent("rejected", task.number, task.reason, task))
            return
        task.task, task.difficulty = proposal.task, proposal.difficulty
        task.check = proposal.check.text()
        probe = self._probe(task, proposal.check)
        if probe is not None:
            task.status, task.reason = "rejected", probe
            self.emit(PracticeEvent("rejected", task.number, probe, task))
            return
        if (limit := self._limit()) is not None:
            task.status, task.reason = "skipped", f"not attempted: {limit[1]}"
            return
        self.emit(PracticeEvent("attempt", task.number, task.task, task))
        self._attempt(task, proposal.check)
        self.emit(PracticeEvent("done", task.number, task.reason, task))

    def _propose(self, task: PracticeTask) -> Proposal:
        earlier = [t for t in self.report.tasks if t is not task and t.task]
        passed = [t.difficulty for t in earlier if t.app == task.app and t.status == "passed"]
        least = max(passed, default=1)
        system = render(
            "practice",
            "system",
            platform_summary=self.platform.summary(),
            max_steps=self.budget.max_steps,
            example=EXAMPLE,
        )
        lines = [_history_line(t) for t in earlier[-20:]]
        history = (
            render("practice", "history", lines="\n".join(lines))
            if lines
            else render("practice", "no_history")
        )
        text = render(
            "practice",
            "request",
            app=task.app,
            program=self.programs[task.app],
            number=task.number,
            total=self.budget.tasks,
            min_difficulty=least,
            history=history,
        )
        messages = (Message.text("system", system), Message.text("user", text))
        seen = [t.task for t in earlier]

        def on_call(call: ModelCall) -> None:
            if call.error:
                self.emit(PracticeEvent("invalid", task.number, call.error))

        def feedback(sent: Sequence[Message], reply: str, problem: str) -> Sequence[Message]:
            again = render("practice", "invalid", problem=problem)
            answer = Message.text("assistant", reply.strip() or "(empty)")
            return (*sent, answer, Message.text("user", again))

        proposal, _ = generate_parsed(
            lambda sent: self.complete(ModelRequest(tuple(sent), metadata={"purpose": "practice"})),
            messages,
            lambda reply: parse_proposal(reply, min_difficulty=least, seen=seen),
            tries=self.budget.tries,
            purpose="practice",
            on_call=on_call,
            feedback=feedback,
            what="task proposal",
        )
        return proposal

    def _gate(self, check: CheckSpec) -> str | None:
        """Why the check may not run (the safety gate's word), or None."""
        from agent_s.safety.effects import subject_for_code

        decision = self.gate.check(subject_for_code("bash", check.code("~")), ask=True)
        return None if decision.allowed else f"the check was not allowed to run: {decision.message}"

    def _probe(self, task: PracticeTask, check: CheckSpec) -> str | None:
        """Why the task is rejected, or None: its check ran and failed on the untouched desktop."""
        refused = self._gate(check)
        if refused is not None:
            return refused
        out = self._worker(task, "probe", {"check": check.model_dump(mode="json")})
        if out.get("status") != "done" or not isinstance(out.get("check"), dict):
            return f"the check could not be tried: {out.get('detail') or 'the worker failed'}"
        outcome = CheckOutcome(**out["check"])
        if outcome.passed:
            return f"its check already passes on the untouched desktop ({outcome.detail})"
        if outcome.exit_status is None:
            return (
                f"its check ended without an exit status on the untouched desktop: {outcome.detail}"
            )
        if outcome.exit_status in _NOT_RUNNABLE:
            return f"its check cannot run here ({outcome.detail}); use installed programs"
        return None

    def _attempt(self, task: PracticeTask, check: CheckSpec) -> None:
        from agent_s.memory.learn import learn_from_run

        cost, seconds = self.budget.max_cost, self.budget.max_time
        left_cost = None if cost is None else max(cost - self.spent, 0.0)
        left_time = None if seconds is None else seconds - (time.monotonic() - self.started)
        spec = {
            "task": task.task,
            "check": check.model_dump(mode="json"),
            "max_steps": self.budget.max_steps,
            "max_cost": left_cost,
            "max_seconds": left_time,
        }
        out = self._worker(task, "attempt", spec, run_seconds=left_time)
        data = out.get("result")
        if out.get("status") != "done" or not isinstance(data, dict):
            task.status = "cancelled" if out.get("status") == "cancelled" else "error"
            task.reason = str(out.get("detail") or "the worker ended without a result")
            return
        result = RunResult.from_json(data)
        self.attempts_cost += result.usage.cost_usd
        task.steps, task.cost_usd = result.steps, result.usage.cost_usd
        task.run_dir = result.trajectory_dir
        task.verified = result.succeeded and result.verified
        if result.status is RunStatus.CANCELLED:
            task.status, task.reason = "cancelled", result.reason
            raise KeyboardInterrupt
        task.status = "passed" if task.verified else "failed"
        task.reason = result.reason
        if result.trajectory_dir is None:
            return
        ids = learn_from_run(
            self.store,
            result.trajectory_dir,
            result,
            verified=task.verified,
            check=task.check,
            check_by="model",  # the model proposed the check: never stored as verified
            model=self.model,
        )
        for entry_id in ids:
            kind = self.store.get(entry_id).kind
            {"skill": task.skills, "lesson": task.lessons, "run": task.runs}[kind].append(entry_id)

    def _worker(
        self,
        task: PracticeTask,
        job: Literal["probe", "attempt"],
        extra: Mapping[str, Any],
        run_seconds: float | None = None,
    ) -> dict[str, Any]:
        folder = self.report.folder / f"task-{task.number:02d}" / job
        folder.mkdir(parents=True, exist_ok=True)
        spec = {
            "job": job,
            "app": task.app,
            "settings": self.settings.to_json(),
            "record_dir": str(folder.resolve()),
            **extra,
        }
        timeout = SETUP_SECONDS + (run_seconds if run_seconds is not None else 3600.0)

        def on_line(data: Mapping[str, Any]) -> None:
            if data.get("kind") == "step":
                self.emit(PracticeEvent("step", task.number, str(data.get("text", ""))))

        return run_worker(spec, folder, self.api_key, timeout, on_line)


def _history_line(task: PracticeTask) -> str:
    what = {
        "passed": "passed: its check passed after the attempt",
        "failed": f"failed: {task.reason}",
        "rejected": f"rejected before any attempt: {task.reason}",
        "error": f"could not be attempted: {task.reason}",
        "cancelled": "not finished",
        "skipped": "not attempted",
        "invalid": "no usable proposal",
    }[task.status]
    check = f" Check: {task.check}." if task.check else ""
    return clip(f"- [{task.app}, difficulty {task.difficulty}] {task.task}{check} -> {what}", 600)


__all__ = [
    "PracticeBudget",
    "PracticeError",
    "PracticeEvent",
    "PracticeReport",
    "PracticeTask",
    "practice",
    "practice_apps",
]
