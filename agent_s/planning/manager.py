"""The manager: plan a task once, run its subtasks in order, check each, repair, replan (bounded).

    ending = Manager(host, settings).run(postcondition)      # host: the Agent

1. **Plan.** One planner call (purpose ``plan``) with the task, the screen and the entries of
   memory relevant to the task (``agent_s.memory``; advice, with provenance); its reply is a
   ``agent_s.planning.plan.Plan``. A reply that is no valid plan (no JSON, a cycle, an unknown
   dependency, an empty plan) goes back to the planner with the reason, like an invalid action.
   ``feasible: false`` ends the run as ``infeasible`` before any action: the feasibility gate.
2. **Work.** Subtasks run in dependency order, each with its own step budget
   (``PlanSettings.subtask_steps``, within the run's ``max_steps``) and a fresh history. The
   worker is told the whole task, the subtask, the evidence to reach and the results of the
   subtasks it depends on (not their histories). A ``gui`` subtask is the usual step loop; a
   ``code`` subtask is handed to the code agent in one step (when it is switched on).
3. **Verify.** When the worker says done, a check decides: the plan's executable check (a file,
   a window, a command run by the code agent's contained runner) where it gave one, else one
   verifier call (purpose ``verify``) comparing the evidence with the screen. A failed check is
   fed back to the worker as the next attempt's note.
4. **Repair.** After two failed attempts at a subtask, its strategy switches once (GUI <-> code
   agent, when the code agent is on) for one more attempt; then the rest of the graph is
   replanned (purpose ``replan``), at most ``PlanSettings.max_replans`` times; past that the
   run fails with cause ``replan_limit``.

Everything is recorded: the plan, each subtask's status, attempts, checks, switches and replans
are in ``RunResult.plan`` and in the trajectory's ``plan.jsonl``; each step names its subtask.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from agent_s.actions import DoneAction, FailAction
from agent_s.coding.runner import CodeRunner, RunnerSettings
from agent_s.images import EncodedImage
from agent_s.models.types import Message, ModelReply, TextPart
from agent_s.planning.plan import (
    Check,
    CommandCheck,
    FileCheck,
    Plan,
    PlanError,
    PlanMode,
    PlanSettings,
    Subtask,
    WindowCheck,
    Worker,
    is_long,
    parse_plan,
)
from agent_s.prompting import Platform, load_template
from agent_s.record.result import Ending, Postcondition, RunEnded, RunStatus, final_ending
from agent_s.record.step import Step

FAILED_ATTEMPTS_BEFORE_SWITCH = 2
_RESULT_CHARS = 600

SubtaskStatus = Literal["pending", "running", "done", "failed", "replaced"]


@dataclass
class CheckRecord:
    """One check of a subtask's result: by what (``file``, ``window``, ``command``, ``verifier``
    or ``worker`` when the worker itself gave up or ran out of steps), and its verdict."""

    attempt: int
    by: str
    passed: bool
    detail: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class SubtaskRecord:
    """A subtask as it went: planned worker, strategy used, attempts, checks, result."""

    id: str
    description: str
    depends_on: tuple[str, ...]
    evidence: str
    worker: Worker
    strategy: Worker
    check: dict[str, Any] | None = None
    status: SubtaskStatus = "pending"
    attempts: int = 0
    steps: int = 0
    switched: bool = False
    result: str = ""
    checks: list[CheckRecord] = field(default_factory=list)

    @classmethod
    def of(cls, subtask: Subtask, *, code: bool) -> SubtaskRecord:
        strategy: Worker = subtask.worker if code else "gui"
        check = subtask.check.model_dump(mode="json") if subtask.check is not None else None
        return cls(
            subtask.id,
            subtask.description,
            subtask.depends_on,
            subtask.evidence,
            subtask.worker,
            strategy,
            check,
        )

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["depends_on"] = list(self.depends_on)
        data["checks"] = [c.to_json() for c in self.checks]
        return data


@dataclass
class PlanReport:
    """What the manager did, for ``RunResult.plan`` (see the module docstring)."""

    mode: PlanMode
    trigger: str  # why a plan was made: "always", "a long task", "a step failed twice"
    feasible: bool = True
    reason: str = ""
    subtasks: list[SubtaskRecord] = field(default_factory=list)
    replans: int = 0
    switches: int = 0
    plans: int = 0  # plan and replan replies accepted

    def to_json(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "trigger": self.trigger,
            "feasible": self.feasible,
            "reason": self.reason,
            "subtasks": [s.to_json() for s in self.subtasks],
            "replans": self.replans,
            "switches": self.switches,
            "plans": self.plans,
        }


class PlanHost(Protocol):
    """What the manager needs of the agent (``agent_s.loop.agent.Agent`` is one)."""

    @property
    def task(self) -> str: ...

    @property
    def code_enabled(self) -> bool: ...

    @property
    def steps_left(self) -> int: ...

    def look(self) -> tuple[EncodedImage, Platform]:
        """The screen now, encoded as the model sees it, and the platform it shows."""

    def today(self) -> str: ...

    def ask(self, messages: Sequence[Message], purpose: str) -> ModelReply: ...

    def work(self, text: str, subtask: str, limit: int) -> Step | None:
        """Run the step loop on ``text`` (a fresh history) for at most ``limit`` steps; the
        step that ended it with done or fail, or None when the steps ran out."""

    def hand_to_code(self, text: str, subtask: str) -> Step:
        """One step handing ``text`` to the code agent."""

    def windows(self) -> Sequence[str]:
        """The titles of the open windows now."""

    def home(self) -> Path:
        """The task's home folder (``~`` in file checks)."""

    def run_command(self, argv: Sequence[str]) -> tuple[bool, str]:
        """Run a plan's command check in the code agent's contained runner, behind the gate."""

    def event(self, kind: str, data: dict[str, Any]) -> None:
        """One line of the trajectory's plan record."""

    def recall(self, query: str) -> str:
        """The planner's memory section for ``query`` (entries of memory relevant to it, with
        their provenance), or "" when there is no memory or nothing relevant."""


class Manager:
    """Runs one task as a plan (see the module docstring)."""

    def __init__(self, host: PlanHost, settings: PlanSettings, *, tries: int, trigger: str):
        self.host = host
        self.settings = settings
        self.tries = tries
        self.report = PlanReport(settings.mode, trigger)
        self._done: dict[str, str] = {}  # finished subtask id -> its result

    # -- the run ------

    def run(self, postcondition: Postcondition | None) -> Ending:
        plan = self._plan(replan=None)
        if not plan.feasible:
            return Ending(
                RunStatus.INFEASIBLE,
                "infeasible_gate",
                f"the planner found the task infeasible: {plan.reason}",
            )
        queue = self._adopt(plan)
        last: Step | None = None
        while queue:
            record = queue.pop(0)
            outcome = self._subtask(record)
            if outcome is not None:
                last = outcome
                continue
            # the subtask failed after its repairs: replan the rest
            if self.report.replans >= self.settings.max_replans:
                raise RunEnded(
                    f"subtask {record.id!r} failed and the replan limit "
                    f"({self.settings.max_replans}) was reached: {_last_detail(record)}",
                    status=RunStatus.FAILED,
                    cause="replan_limit",
                )
            remaining = [record, *queue]
            for left in queue:
                left.status = "replaced"
            record.status = "failed"
            plan = self._plan(replan=(record, remaining))
            if not plan.feasible:
                return Ending(
                    RunStatus.FAILED, "model_gave_up", f"the planner gave up: {plan.reason}"
                )
            queue = self._adopt(plan)
        answer = None
        if last is not None and isinstance(last.action, DoneAction):
            answer = last.action.answer
        return final_ending(DoneAction(answer=answer), postcondition)

    # -- planning ------

    def _plan(self, replan: tuple[SubtaskRecord, Sequence[SubtaskRecord]] | None) -> Plan:
        image, platform = self.host.look()
        template = load_template("planner")
        workers = template.render("workers_both" if self.host.code_enabled else "workers_gui")
        system = template.render(
            "system",
            platform_summary=platform.summary(),
            workers=workers,
            example=EXAMPLE_PLAN,
        )
        if replan is None:
            memory = self.host.recall(self.host.task)
            text = template.render(
                "request", today=self.host.today(), task=self.host.task, memory=memory
            )
            purpose = "plan"
        else:
            failed, remaining = replan
            finished = "\n".join(
                f"- {key}: {value or '(no result)'}" for key, value in self._done.items()
            )
            text = template.render(
                "replan",
                today=self.host.today(),
                task=self.host.task,
                finished=finished or "(none)",
                failed=f"{failed.id} ({failed.description}): {_last_detail(failed)}",
                remaining=", ".join(r.id for r in remaining),
            )
            purpose = "replan"
            self.report.replans += 1
        messages: list[Message] = [
            Message.text("system", system),
            Message("user", (TextPart(text), image.to_part())),
        ]
        problem = ""
        for _ in range(self.tries):
            reply = self.host.ask(messages, purpose)
            try:
                plan = parse_plan(reply.text, done=self._done)
            except PlanError as err:
                problem = str(err)
                self.host.event(
                    purpose, {"accepted": False, "reply": reply.text, "problem": problem}
                )
                messages += [
                    Message.text("assistant", reply.text or "(empty)"),
                    Message.text(
                        "user",
                        f"That plan cannot be used: {problem}. Answer again with the whole "
                        "plan as one JSON object in a ```json block.",
                    ),
                ]
                continue
            self.report.plans += 1
            if replan is None:
                self.report.feasible, self.report.reason = plan.feasible, plan.reason
            self.host.event(purpose, {"accepted": True, "plan": plan.model_dump(mode="json")})
            return plan
        raise RunEnded(
            f"the planner gave no usable plan in {self.tries} replies: {problem}",
            status=RunStatus.FAILED,
            cause="invalid_replies",
        )

    def _adopt(self, plan: Plan) -> list[SubtaskRecord]:
        records = [SubtaskRecord.of(s, code=self.host.code_enabled) for s in plan.order()]
        self.report.subtasks.extend(records)
        return records

    # -- one subtask ------

    def _subtask(self, record: SubtaskRecord) -> Step | None:
        """Run ``record`` with its repairs; its final step when it passed its check, else None."""
        record.status = "running"
        note = ""
        failures = 0
        while True:
            if self.host.steps_left < 1:
                raise RunEnded(
                    "the task was not finished in the step limit",
                    status=RunStatus.MAX_STEPS,
                    cause="max_steps",
                )
            record.attempts += 1
            text = self._worker_text(record, note)
            if record.strategy == "code":
                step: Step | None = self.host.hand_to_code(text, record.id)
                record.steps += 1
            else:
                limit = min(self.settings.subtask_steps, self.host.steps_left)
                step = self.host.work(text, record.id, limit)
            passed, by, detail = self._judge(record, step)
            record.checks.append(CheckRecord(record.attempts, by, passed, detail))
            self.host.event(
                "check",
                {
                    "subtask": record.id,
                    "attempt": record.attempts,
                    "by": by,
                    "passed": passed,
                    "detail": detail,
                },
            )
            if passed:
                record.status = "done"
                record.result = _result_text(step)
                self._done[record.id] = record.result
                return step
            failures += 1
            note = detail
            if record.switched:
                return None
            if failures >= FAILED_ATTEMPTS_BEFORE_SWITCH:
                if not self.host.code_enabled:
                    return None
                record.strategy = "code" if record.strategy == "gui" else "gui"
                record.switched = True
                self.report.switches += 1
                self.host.event(
                    "switch", {"subtask": record.id, "to": record.strategy, "after": detail}
                )

    def _worker_text(self, record: SubtaskRecord, note: str) -> str:
        template = load_template("planner")
        inputs = "\n".join(
            f"- {dep}: {self._done.get(dep) or '(no result)'}" for dep in record.depends_on
        )
        return template.render(
            "subtask",
            task=self.host.task,
            subtask=record.description,
            evidence=record.evidence or "(not given)",
            inputs=inputs or "(none)",
            note=note,
        )

    def _judge(self, record: SubtaskRecord, step: Step | None) -> tuple[bool, str, str]:
        """(passed, by what, why) for the attempt that ended at ``step``."""
        if step is None:
            return False, "worker", "the subtask's steps ran out before it was done"
        if isinstance(step.action, FailAction):
            return False, "worker", f"the worker gave up: {step.action.reason or 'no reason given'}"
        if step.outcome != "terminal" and step.outcome != "ok":
            return False, "worker", step.detail or f"the step ended {step.outcome}"
        if record.strategy == "code" and step.outcome != "ok":
            return False, "worker", step.detail
        check = record.check
        if check is not None:
            return self._executable(check, _as_check(check))
        return self._verify(record, step)

    def _executable(self, data: dict[str, Any], check: Check) -> tuple[bool, str, str]:
        if isinstance(check, FileCheck):
            path = _home_path(check.path, self.host.home())
            if not path.is_file():
                return False, "file", f"{check.path} does not exist"
            if check.contains is None:
                return True, "file", f"{check.path} exists"
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
            except OSError as err:
                return False, "file", f"{check.path} cannot be read: {err.strerror}"
            if check.contains in text:
                return True, "file", f"{check.path} contains {check.contains!r}"
            return False, "file", f"{check.path} does not contain {check.contains!r}"
        if isinstance(check, WindowCheck):
            titles = self.host.windows()
            wanted = check.title_contains.casefold()
            if any(wanted in title.casefold() for title in titles):
                return True, "window", f"a window titled with {check.title_contains!r} is open"
            shown = "; ".join(titles[:8]) or "none"
            return (
                False,
                "window",
                f"no window title contains {check.title_contains!r} (open: {shown})",
            )
        if not self.host.code_enabled:  # model-written commands run only in the code runner
            return False, "command", "command checks need the code agent; it is switched off"
        passed, detail = self.host.run_command(check.argv)
        return passed, "command", f"{shlex.join(check.argv)}: {detail}"

    def _verify(self, record: SubtaskRecord, step: Step) -> tuple[bool, str, str]:
        image, platform = self.host.look()
        template = load_template("verifier")
        system = template.render("system", platform_summary=platform.summary())
        text = template.render(
            "request",
            subtask=record.description,
            evidence=record.evidence or "the subtask is visibly done",
            result=_result_text(step) or "(nothing)",
        )
        messages = (
            Message.text("system", system),
            Message("user", (TextPart(text), image.to_part())),
        )
        reply = self.host.ask(messages, "verify").text.strip()
        verified, reason = read_verdict(reply)
        if verified is None:
            return False, "verifier", f"the verifier's reply had no verdict: {reply[:200]}"
        return verified, "verifier", reason[:_RESULT_CHARS]


def read_verdict(reply: str) -> tuple[bool | None, str]:
    """A verifier's reply (the ``verifier`` prompt's format): VERIFIED (True) or NOT VERIFIED
    (False) on its first line, and the reason; None when the first line is neither."""
    verdict, _, reason = reply.strip().partition("\n")
    head = verdict.strip().strip("*").strip().upper()
    reason = reason.strip() or verdict.strip()
    if head.startswith("VERIFIED"):
        return True, reason
    if head.startswith("NOT VERIFIED"):
        return False, reason
    return None, reason


EXAMPLE_PLAN = """```json
{"feasible": true, "reason": "",
 "subtasks": [
  {"id": "write", "description": "Open the text editor and type the list, one item per line",
   "depends_on": [], "evidence": "the editor shows the three items", "worker": "gui"},
  {"id": "save", "description": "Save the document as ~/list.txt", "depends_on": ["write"],
   "evidence": "the title bar shows list.txt",
   "check": {"kind": "file", "path": "~/list.txt", "contains": "milk"}, "worker": "gui"}
 ]}
```"""


def _as_check(data: dict[str, Any]) -> Check:
    kinds: dict[str, Callable[..., Check]] = {
        "file": FileCheck,
        "window": WindowCheck,
        "command": CommandCheck,
    }
    return kinds[data["kind"]](**data)


def _home_path(path: str, home: Path) -> Path:
    if path == "~" or path.startswith("~/"):
        return home / path[2:]
    return Path(os.path.normpath(path)) if os.path.isabs(path) else home / path


def _result_text(step: Step | None) -> str:
    if step is None:
        return ""
    if isinstance(step.action, DoneAction) and step.action.answer:
        return str(step.action.answer)[:_RESULT_CHARS]
    return step.detail[:_RESULT_CHARS]


def _last_detail(record: SubtaskRecord) -> str:
    return record.checks[-1].detail if record.checks else "no attempt was made"


def contained_command(argv: Sequence[str], settings: RunnerSettings) -> tuple[bool, str]:
    """Run a plan's command check as one Bash block in the code agent's contained runner: the
    arguments quoted one by one (``shlex.join``), so no word of them is read as shell syntax."""
    with CodeRunner(settings) as runner:
        run = runner.run("bash", shlex.join(argv))
    output = (run.stdout.text + run.stderr.text).strip()[-300:]
    return run.ok, run.stopped + (f": {output}" if output else "")


class Trigger:
    """When a run turns to a plan, by the plan mode (``off`` in a dry run): up front under
    ``always``, or under ``auto`` for a long task (``is_long``); under ``auto`` also once steps
    failed ``FAILED_ATTEMPTS_BEFORE_SWITCH`` times in a row. A refusal by the safety gate is
    not a failed attempt: no plan routes round it."""

    def __init__(self, mode: PlanMode) -> None:
        self.mode, self.failed = mode, 0

    def at_start(self, task: str) -> str | None:
        """Why to plan ``task`` before its first step, or None."""
        if self.mode == "always":
            return "always"
        return "a long task" if self.mode == "auto" and is_long(task) else None

    def after(self, step: Step) -> str | None:
        """Why to plan the rest of the task after ``step`` (not its last), or None."""
        refused = step.safety is not None and not step.safety.get("allowed", True)
        self.failed = self.failed + 1 if step.outcome == "error" and not refused else 0
        if self.mode == "auto" and self.failed >= FAILED_ATTEMPTS_BEFORE_SWITCH:
            return "a step failed twice"
        return None


__all__ = [
    "EXAMPLE_PLAN",
    "CheckRecord",
    "Manager",
    "PlanHost",
    "PlanReport",
    "SubtaskRecord",
    "Trigger",
    "contained_command",
    "read_verdict",
]
