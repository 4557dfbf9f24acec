"""What a finished run teaches: its summary, its lessons and, when a check verified it, skills.

    ids = learn(store, run_of_steps(run_id, steps, events, result, redactor.data), result,
                verified=result.verified, check="test -s ~/total.txt")
    ids = learn_from_run(store, run_dir, result, verified=True)   # from a folder on disk

Every run gives a ``RunSummary`` (the task, how it ended, whether a check verified it, its key
steps) and ``Lesson``\\ s: what failed and why (the result's cause and reason, actions the safety
gate refused, steps that failed, code blocks that exited non-zero, plan checks that failed, a
code agent that gave up) and what worked (the strategy that passed after a switch, the
approach of a run that ended well).

Skills come only from a run whose check passed: verified when the user wrote that check
(``verified`` with ``check_by="user"``: ``--check``, a benchmark evaluator's full score - never
the model's word); checked by a model-written check (``agent_s.guards.trust``), never verified,
when a model wrote it (a practice task's check, ``check_by="model"``) or when only a planned
subtask's own executable check passed (a file, a window or a command: ``plan.jsonl``; the
planner wrote it). Each is the exact code of each code-agent block that ran with exit
status 0, byte for byte as the trajectory holds it, and only when that code hashes to the
``code_sha256`` recorded when the block was handed to the runner (so the stored code provably
is the code that ran; a block whose text was changed on the way, e.g. redacted, is not
stored); and for GUI work, the exact action sequence of the attempt that passed. Each skill
names the check that passed and the run and steps it came from; its parameters are the
literals its task and its code share (``parameters``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from agent_s.actions import CallCodeAgentAction
from agent_s.guards.trust import TrustLevel, trust_level
from agent_s.memory.entries import ANSWER_OUTPUT, Lesson, Provenance, RunSummary, Skill
from agent_s.memory.store import MemoryStore
from agent_s.record.result import RunResult, RunStatus
from agent_s.record.step import Step, SubStep, code_digest
from agent_s.record.trajectory import PLAN_FILE, load_trajectory

KEY_STEPS = 12  # at most this many key steps in a run summary
MAX_LESSONS = 8  # per run
_TEXT = 300  # characters kept of a reason, an error, an output
_EXECUTABLE = ("file", "window", "command")  # plan checks that are not a model's judgement


def _clip(text: str, limit: int = _TEXT) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


@dataclass(frozen=True)
class _Attempt:
    """A planned subtask's attempt that passed an executable check."""

    subtask: str
    description: str
    strategy: str  # the worker that did it: "gui" or "code"
    check: str
    steps: tuple[int, ...]


@dataclass(frozen=True)
class RunRecord:
    """What a run produced, as learning reads it: its ``Step``s, its plan events, the names it
    goes by. ``of_steps``: from the loop that ran it (the steps it holds); ``read``: from its
    trajectory folder on disk (``agent-s memory learn RUN_DIR``, a harness task)."""

    run_id: str
    steps: tuple[Step, ...]
    events: tuple[dict[str, Any], ...]
    model: str
    created: datetime
    # the result as the folder holds it (redacted as written), else as given
    result: RunResult


def _events(folder: Path) -> tuple[dict[str, Any], ...]:
    path = folder / PLAN_FILE
    if not path.is_file():
        return ()
    found: list[dict[str, Any]] = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:  # a torn last line
            continue
        if isinstance(event, dict):
            found.append(event)
    return tuple(found)


def read_run(run_dir: Path, result: RunResult, model: str | None = None) -> RunRecord:
    """The run whose trajectory folder is ``run_dir``, read back."""
    steps: tuple[Step, ...] = ()
    header: dict[str, Any] = {}
    written = result
    if (run_dir / "trajectory.jsonl").is_file():
        trajectory = load_trajectory(run_dir)
        steps, header = trajectory.steps, trajectory.run
        written = trajectory.result or result
    named = header.get("model")
    from_header = named.get("model") if isinstance(named, dict) else named
    name = model or result.model or (str(from_header) if from_header else "") or "unknown"
    return RunRecord(run_dir.name, steps, _events(run_dir), name, _created(result), written)


def run_of_steps(
    run_id: str,
    steps: Sequence[Step],
    events: Sequence[dict[str, Any]],
    result: RunResult,
    redact: Callable[[Any], Any],
) -> RunRecord:
    """The run a loop just ended, from the ``Step``s and plan events it holds. ``redact``: the
    run's redaction (``Redactor.data``), applied to every string as the trajectory's writer
    applies it: what memory keeps is what the folder keeps."""
    clean = tuple(Step.model_validate(redact(step.model_dump(mode="json"))) for step in steps)
    kept = tuple(redact(dict(event)) for event in events)
    written = replace(
        result,
        task=redact(result.task),
        reason=redact(result.reason),
        answer=redact(result.answer),
        plan=redact(result.plan),
    )
    return RunRecord(run_id, clean, kept, result.model or "unknown", _created(result), written)


def _created(result: RunResult) -> datetime:
    if result.started_at > 0:
        return datetime.fromtimestamp(result.started_at, timezone.utc)
    return datetime.now(timezone.utc)


# -- the summary -----------------------------------------------------------------------------------


def _step_line(step: Step) -> str:
    action = step.action_text or "(no action)"
    line = f"step {step.step}: {action} -> {step.outcome}"
    if step.outcome in ("error", "invalid") and step.detail:
        line += f" ({_clip(step.detail, 120)})"
    ran = [s for s in step.substeps if s.run is not None]
    if ran:
        statuses = ", ".join(str(s.run.get("stopped", "?")) for s in ran if s.run)
        line += f"; code blocks: {_clip(statuses, 120)}"
    return _clip(line, 240)


def _summary(result: RunResult, run: RunRecord, level: TrustLevel, check: str | None) -> RunSummary:
    how = f"The run ended {result.status.value} ({result.cause}) after {result.steps} step(s)"
    if level == "user":
        proof = f"its success was verified by a check: {check}" if check else "verified"
    elif level == "model-check":
        proof = f"a check a model wrote passed ({check or 'its check'}); no check of the user's"
    elif result.status is RunStatus.SUCCEEDED:
        proof = "the model said it was done; no check verified it"
    else:
        proof = "not verified"
    reason = f" Reason: {_clip(result.reason)}." if result.reason else ""
    answer = f" Answer: {_clip(result.answer, 200)}." if result.answer else ""
    steps = run.steps
    if len(steps) > KEY_STEPS:  # the start and the end of a long run
        head = KEY_STEPS // 2
        steps = (*steps[:head], *steps[-(KEY_STEPS - head) :])
    return RunSummary(
        status=result.status.value,
        summary=f"{how}; {proof}.{reason}{answer}",
        key_steps=tuple(_step_line(s) for s in steps),
    )


# -- the lessons -----------------------------------------------------------------------------------


class _Lessons:
    """Lessons with the steps they come from, each text once, at most ``MAX_LESSONS``."""

    def __init__(self) -> None:
        self.items: list[tuple[Lesson, tuple[int, ...]]] = []
        self._seen: set[str] = set()

    def add(
        self, steps: Iterable[int], *, worked: str = "", failed: str = "", why: str = ""
    ) -> None:
        lesson = Lesson(worked=_clip(worked), failed=_clip(failed), why=_clip(why))
        key = lesson.text()
        if not key or key in self._seen or len(self.items) >= MAX_LESSONS:
            return
        self._seen.add(key)
        self.items.append((lesson, tuple(sorted(set(steps)))))


def _refusal(safety: dict[str, Any] | None) -> str | None:
    if safety is None or safety.get("allowed", True):
        return None
    return str(safety.get("message") or safety.get("verdict") or "refused")


def _substep_lessons(lessons: _Lessons, step: Step, sub: SubStep) -> None:
    block = f"a {sub.language or 'code'} block (code agent turn {sub.substep})"
    refused = _refusal(sub.safety)
    if refused is not None:
        lessons.add([step.step], failed=f"{block} was not run", why=refused)
    elif sub.kind == "refused_by_model":
        lessons.add([step.step], failed="the code model refused the job", why=sub.error)
    elif sub.run is not None and sub.run.get("exit_status") != 0:
        stderr = sub.run.get("stderr") or {}
        output = stderr.get("text", "") if isinstance(stderr, dict) else ""
        first = sub.code.strip().splitlines()[0] if sub.code.strip() else ""
        lessons.add(
            [step.step],
            failed=f"{block} ended with {sub.run.get('stopped', 'an error')}: {first}",
            why=str(output).strip()[-_TEXT:] or str(sub.run.get("error") or ""),
        )
    elif sub.kind == "final" and sub.status == "fail":
        lessons.add([step.step], failed="the code agent gave up", why=sub.summary)


def _lessons(result: RunResult, run: RunRecord, level: TrustLevel, check: str | None) -> _Lessons:
    lessons = _Lessons()
    numbers = [s.step for s in run.steps]
    if result.status is not RunStatus.SUCCEEDED:
        lessons.add(
            numbers[-1:],
            failed=f"the task ended {result.status.value} ({result.cause})",
            why=result.reason,
        )
    for step in run.steps:
        refused = _refusal(step.safety)
        if refused is not None:
            lessons.add([step.step], failed=f"{step.action_text} was refused", why=refused)
        elif step.outcome in ("error", "invalid") and step.detail:
            lessons.add(
                [step.step], failed=f"{step.action_text or 'the reply'} failed", why=step.detail
            )
        for sub in step.substeps:
            _substep_lessons(lessons, step, sub)
    after = 0
    for event in run.events:
        kind = event.get("event")
        at = int(event.get("after_step", after) or 0)
        if kind == "check" and not event.get("passed", False):
            lessons.add(
                [at] if at else [],
                failed=f"subtask {event.get('subtask')} attempt {event.get('attempt')} did not "
                f"pass its {event.get('by')} check",
                why=str(event.get("detail", "")),
            )
        elif kind == "switch":
            lessons.add(
                [at] if at else [],
                failed=f"subtask {event.get('subtask')} failed twice as it was done",
                why=str(event.get("after", "")),
                worked=f"switching it to the {event.get('to')} worker was tried next",
            )
        elif kind in ("plan", "replan") and not event.get("accepted", True):
            lessons.add(
                [at] if at else [],
                failed=f"a {kind} reply was unusable",
                why=str(event.get("problem", "")),
            )
        after = at
    if result.status is RunStatus.SUCCEEDED:
        approach = "; ".join(s.action_text for s in run.steps if s.outcome in ("ok", "terminal"))
        how = {
            "user": f"verified by {check}" if check else "verified",
            "model-check": f"a model-written check passed: {check}",
            "none": "unverified",
        }[level]
        lessons.add(numbers, worked=f"this approach finished the task ({how}): {approach}")
    return lessons


# -- the skills ------------------------------------------------------------------------------------


def _passed_attempts(run: RunRecord, result: RunResult) -> list[_Attempt]:
    """Planned subtasks whose attempt passed an executable check, with that attempt's steps."""
    records = {str(s.get("id")): s for s in (result.plan or {}).get("subtasks", [])}
    found: list[_Attempt] = []
    previous: dict[str, int] = {}  # subtask -> after_step of its last check
    for event in run.events:
        if event.get("event") != "check":
            continue
        subtask, at = str(event.get("subtask")), int(event.get("after_step") or 0)
        start = previous.get(subtask, 0)
        previous[subtask] = at
        if not event.get("passed") or event.get("by") not in _EXECUTABLE:
            continue
        steps = tuple(s.step for s in run.steps if s.subtask == subtask and start < s.step <= at)
        record = records.get(subtask, {})
        switched = record.get("strategy") if record.get("status") == "done" else None
        kinds = {_is_code(s) for s in run.steps if s.step in steps}
        strategy = str(switched or ("code" if kinds == {True} else "gui"))
        found.append(
            _Attempt(
                subtask,
                str(record.get("description") or subtask),
                strategy,
                f"{event.get('by')} check: {event.get('detail', '')}",
                steps,
            )
        )
    return found


def _is_code(step: Step) -> bool:
    return isinstance(step.action, CallCodeAgentAction)


def _proven(sub: SubStep) -> bool:
    """The block ran, exited 0, and its recorded code is the code that was run."""
    return (
        sub.kind == "block"
        and sub.language is not None
        and sub.run is not None
        and sub.run.get("exit_status") == 0
        and sub.code_sha256 is not None
        and code_digest(sub.code) == sub.code_sha256
    )


def _output_lines(step: Step, sub: SubStep) -> tuple[str, ...]:
    outputs = [f"exit status 0 in {sub.run.get('seconds', 0) if sub.run else 0} s"]
    stdout = (sub.run or {}).get("stdout") or {}
    text = str(stdout.get("text", "")).strip() if isinstance(stdout, dict) else ""
    if text:
        outputs.append("stdout: " + _clip(text[-_TEXT:]))
    changed = [line for line in step.detail.splitlines() if line.startswith("Files changed in")]
    outputs += [_clip(line) for line in changed[:1]]
    return tuple(outputs)


def _code_skills(step: Step, task: str, check: str) -> list[Skill]:
    job = step.action.task if isinstance(step.action, CallCodeAgentAction) else None
    job = job or task
    proven = [s for s in step.substeps if _proven(s)]
    skills = []
    for sub in proven:
        which = f" (block {sub.substep})" if len(proven) > 1 else ""
        skills.append(
            Skill(
                description=_clip(f"code for: {job}{which}", 500),
                language=sub.language or "python",
                code=sub.code,
                inputs=(f"job: {_clip(job, 500)}",),
                outputs=_output_lines(step, sub),
                check=_clip(check, 500),
            )
        )
    return skills


def _action_skill(
    steps: Sequence[Step], description: str, check: str, answer: str | None = None
) -> Skill | None:
    """The action sequence of ``steps``; ``answer``: the one the run ended with (kept as an
    output line, so a replay knows the run answered: ``Skill.answer``)."""
    done = [s for s in steps if s.outcome in ("ok", "terminal") and s.action_text]
    acted = [s for s in done if s.terminal is None]
    actions = tuple(s.action_text for s in acted)
    if not actions or all(_is_code(s) for s in acted):
        return None
    outputs = [f"{len(actions)} action(s), each executed once"]
    outputs += [ANSWER_OUTPUT + _clip(answer, 500)] if answer and answer.strip() else []
    return Skill(
        description=_clip(f"actions for: {description}", 500),
        language="actions",
        actions=actions,
        windows=tuple(_clip(s.active_window or "", 500) for s in acted),
        inputs=(f"task: {_clip(description, 500)}",),
        outputs=tuple(outputs),
        check=_clip(check, 500),
    )


def _skills(
    result: RunResult, run: RunRecord, level: TrustLevel, check: str | None
) -> list[tuple[Skill, tuple[int, ...], str, TrustLevel]]:
    """(skill, its steps, the task its check passed for, who wrote that check)."""
    found: list[tuple[Skill, tuple[int, ...], str, TrustLevel]] = []
    if level != "none":
        proof = check or "a check the caller ran"
        attempts = _passed_attempts(run, result) if result.plan else []
        by_subtask: dict[str, _Attempt] = {a.subtask: a for a in attempts}
        for step in run.steps:
            for code in _code_skills(step, result.task, proof):
                found.append((code, (step.step,), result.task, level))
        subtasks = {s.subtask for s in run.steps if s.subtask}
        if not subtasks:
            skill = _action_skill(run.steps, result.task, proof, result.answer)
            if skill is not None:
                found.append((skill, tuple(s.step for s in run.steps), result.task, level))
        for name in sorted(subtasks):
            attempt = by_subtask.get(name)
            steps = [s for s in run.steps if s.subtask == name]
            if attempt is not None:
                steps = [s for s in steps if s.step in attempt.steps]
            description = attempt.description if attempt else name
            skill = _action_skill(steps, description, proof)
            if skill is not None:
                found.append((skill, tuple(s.step for s in steps), result.task, level))
        return found
    # no check passed for the whole run: a subtask whose own executable check passed still
    # teaches, but the planner (a model) wrote that check: checked by a model-written check
    for attempt in _passed_attempts(run, result) if result.plan else []:
        steps = [s for s in run.steps if s.step in attempt.steps]
        for step in steps:
            for code in _code_skills(step, attempt.description, attempt.check):
                found.append((code, (step.step,), attempt.description, "model-check"))
        if attempt.strategy == "gui":
            skill = _action_skill(steps, attempt.description, attempt.check)
            if skill is not None:
                found.append((skill, attempt.steps, attempt.description, "model-check"))
    return found


# -- the whole -------------------------------------------------------------------------------------


def learn_from_run(
    store: MemoryStore,
    run_dir: Path,
    result: RunResult,
    *,
    verified: bool,
    check: str | None = None,
    check_by: Literal["user", "model"] = "user",
    model: str | None = None,
    run_id: str | None = None,
) -> list[int]:
    """``learn`` from the run whose trajectory folder is ``run_dir``, read back (see ``learn``;
    ``model``: the model's name, default: the result's)."""
    if result.status is RunStatus.PLANNED:  # a dry run executed nothing: nothing to learn
        return []
    run = read_run(Path(run_dir), result, model)
    return learn(
        store, run, result, verified=verified, check=check, check_by=check_by, run_id=run_id
    )


def learn(
    store: MemoryStore,
    run: RunRecord,
    result: RunResult,
    *,
    verified: bool,
    check: str | None = None,
    check_by: Literal["user", "model"] = "user",
    run_id: str | None = None,
) -> list[int]:
    """Store what ``run`` teaches: its summary and
    lessons always, skills only when a check passed (see the module docstring). ``verified``:
    the run's check passed; ``check``: that check, in words (a command line, "OSWorld evaluator
    score 1.0"); ``check_by``: who wrote it - ``user`` (the user's ``--check``, a harness's
    evaluator: stored as verified) or ``model`` (a practice task's check: stored as checked by
    a model-written check, never as verified);
    ``run_id``: what the provenance calls the run (default: the record's, the folder's name).
    The ids stored, in order."""
    if result.status is RunStatus.PLANNED:  # a dry run executed nothing: nothing to learn
        return []
    written = run.result  # its text as the folder holds it: redacted
    result = replace(
        result, task=written.task, reason=written.reason, answer=written.answer, plan=written.plan
    )
    passed = bool(verified)
    level = trust_level(
        user_check_passed=passed and check_by == "user",
        model_check_passed=passed and check_by == "model",
    )
    if passed and check is None and result.postcondition is not None:
        check = result.postcondition.description

    def provenance(
        steps: Iterable[int], *, task: str = result.task, by: TrustLevel = level
    ) -> Provenance:
        return Provenance(
            run_id=run_id or run.run_id,
            steps=tuple(steps),
            created=run.created,
            model=run.model,
            checked_by=by,
            task=task,
        )

    ids = [store.add(_summary(result, run, level, check), provenance(s.step for s in run.steps))]
    for lesson, steps in _lessons(result, run, level, check).items:
        ids.append(store.add(lesson, provenance(steps)))
    for skill, steps, task, by in _skills(result, run, level, check):
        ids.append(store.add(skill, provenance(steps, task=task, by=by)))
    return ids


__all__ = [
    "KEY_STEPS",
    "MAX_LESSONS",
    "RunRecord",
    "learn",
    "learn_from_run",
    "read_run",
    "run_of_steps",
]
