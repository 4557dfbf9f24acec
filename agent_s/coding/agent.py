"""The coding sub-agent behind ``call_code_agent``: a bounded loop of write code -> run -> read.

    report = CodeAgent(complete, CodeAgentConfig(max_steps=10), platform, gate).run(
        "add a total column to ~/data.csv", on_substep=print
    )
    report.status        # "done", "fail" or "max_steps"
    report.worker_text   # what the GUI worker is told (bounded): outcome, summary, changes, output

Each turn the model (``prompts/code_agent.md``) writes brief reasoning and exactly one ```python
or ```bash block; the block goes through the safety gate, then runs once (``code_runner``),
and the model sees its exit status and output (head and tail, bounded). A reply without a block
whose last line is DONE or FAIL ends the loop; anything else is sent back with the reason. The
budget is ``max_steps`` model replies, whatever they were.

What the GUI worker gets is built from what happened, not only from the model's own words: how
it ended, the model's summary, the files created / modified / deleted in the working folder
(compared before and after), and the real output of the last blocks. Every turn is handed to
``on_substep`` as it ends, as a ``SubStep`` (``agent_s.record.step``; the trajectory's sub-steps).

Given ``memory``, the first message also holds the entries of memory relevant to the job, with
their provenance (verified skills' exact code among them): advice, which the prompt says.

The code model is also told what is on the screen when the job is handed over (``screen``):
the active window's title and application, and the file that window shows when the title names
one that exists (an absolute or ``~`` path, ``name (folder)``, or a name found once in the
working folder), so "this file" in a job means something to it.

Secrets the code prints (a key read from a file, a password from the environment) never leave:
the turns handed to ``on_substep``, the output fed back to the code model and the text for the
GUI worker are redacted (``agent_s.guards.redaction``) before they go anywhere.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from agent_s.coding.containment import resolve_sandbox
from agent_s.coding.runner import (
    LANGUAGES,
    CodeRun,
    CodeRunner,
    CodeRunnerError,
    Language,
    RunnerSettings,
    clip_middle,
)
from agent_s.guards.content import screen_content
from agent_s.guards.redaction import Redactor
from agent_s.models.errors import OutputTruncated, Refused
from agent_s.models.types import Message, ModelReply
from agent_s.prompting import Platform, code_agent_system_prompt, load_template
from agent_s.record.step import ModelCall, SubStep, code_digest
from agent_s.safety.gate import SafetyGate, subject_for_code
from agent_s.settings.config import CodeAgentConfig

if TYPE_CHECKING:
    from agent_s.desktop.base import WindowInfo

Complete = Callable[[Sequence[Message]], ModelReply]
Status = Literal["done", "fail", "max_steps"]

_FENCE = re.compile(
    r"^[ \t]*```[ \t]*([A-Za-z0-9_+.-]*)[^\n]*\n(.*?)^[ \t]*```[ \t]*$", re.DOTALL | re.MULTILINE
)
_FENCE_LINE = re.compile(r"^[ \t]*```", re.MULTILINE)
_ALIASES: dict[str, Language] = {
    "python": "python",
    "py": "python",
    "python3": "python",
    "bash": "bash",
    "sh": "bash",
    "shell": "bash",
}
_SKIPPED_DIRS = frozenset({".git", ".cache", "__pycache__", "node_modules", ".venv"})
SNAPSHOT_LIMIT = 5000  # files compared before and after, breadth first


# -- reading a reply -----------------------------------------------------------------------------


@dataclass(frozen=True)
class CodeReply:
    """A code-model reply read: one block to run, the final word, or why it cannot be used."""

    kind: Literal["block", "final", "invalid"]
    language: Language | None = None
    code: str = ""
    status: Literal["done", "fail"] | None = None
    summary: str = ""
    error: str = ""


def parse_code_reply(text: str) -> CodeReply:
    """Read a reply: exactly one python/bash block, or no block and DONE / FAIL last."""
    if len(_FENCE_LINE.findall(text)) % 2:
        return CodeReply("invalid", error="a ``` code block is not closed (was the reply cut off?)")
    blocks = _FENCE.findall(text)
    runnable = [(_ALIASES[tag.lower()], body) for tag, body in blocks if tag.lower() in _ALIASES]
    if len(runnable) > 1:
        return CodeReply(
            "invalid",
            error=f"it has {len(runnable)} code blocks; write exactly "
            "one per turn and look at its output before the next",
        )
    if runnable:
        language, code = runnable[0]
        if not code.strip():
            return CodeReply("invalid", error="the code block is empty")
        return CodeReply("block", language, code)
    lines = [line for line in text.strip().splitlines() if line.strip()]
    last = lines[-1].strip().strip("*`_.!# ").upper() if lines else ""
    if last in ("DONE", "FAIL"):
        summary = "\n".join(lines[:-1]).strip()
        return CodeReply("final", status="done" if last == "DONE" else "fail", summary=summary)
    if blocks:
        tags = ", ".join(sorted({f"```{tag or '(none)'}" for tag, _ in blocks}))
        return CodeReply("invalid", error=f"only ```python and ```bash blocks are run, not {tags}")
    return CodeReply(
        "invalid",
        error="it has no ```python or ```bash block, and its last line is not DONE or FAIL",
    )


# -- what changed on disk ------------------------------------------------------------------------

Snapshot = dict[str, tuple[int, int]]  # relative path -> (size, mtime in ns)


def snapshot(folder: Path, limit: int = SNAPSHOT_LIMIT) -> tuple[Snapshot, bool]:
    """Files under ``folder``, breadth first, at most ``limit``; (files, complete)."""
    found: Snapshot = {}
    queue = [folder]
    while queue:
        current = queue.pop(0)
        try:
            entries = sorted(os.scandir(current), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name not in _SKIPPED_DIRS:
                        queue.append(Path(entry.path))
                    continue
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if len(found) >= limit:
                return found, False
            found[os.path.relpath(entry.path, folder)] = (info.st_size, info.st_mtime_ns)
    return found, True


@dataclass(frozen=True)
class FileChanges:
    folder: Path
    created: tuple[str, ...] = ()
    modified: tuple[tuple[str, int, int], ...] = ()  # path, size before, size after
    deleted: tuple[str, ...] = ()
    complete: bool = True

    @classmethod
    def between(
        cls, folder: Path, before: tuple[Snapshot, bool], after: tuple[Snapshot, bool]
    ) -> FileChanges:
        old, new = before[0], after[0]
        modified = tuple(
            (p, old[p][0], new[p][0]) for p in sorted(old.keys() & new.keys()) if old[p] != new[p]
        )
        return cls(
            folder,
            tuple(sorted(new.keys() - old.keys())),
            modified,
            tuple(sorted(old.keys() - new.keys())),
            before[1] and after[1],
        )

    def describe(self, limit: int = 8) -> str:
        parts = [f"modified {p} ({a} -> {b} bytes)" for p, a, b in self.modified[:limit]]
        parts += [f"created {p}" for p in self.created[:limit]]
        parts += [f"deleted {p}" for p in self.deleted[:limit]]
        more = len(self.modified) + len(self.created) + len(self.deleted) - len(parts)
        if more > 0:
            parts.append(f"and {more} more")
        partial = "" if self.complete else f" (only the first {SNAPSHOT_LIMIT} files compared)"
        if not parts:
            return f"No files changed in {self.folder}{partial}."
        return f"Files changed in {self.folder}{partial}: " + "; ".join(parts) + "."


# -- what is on the screen ---------------------------------------------------------------------

_TITLE_SEPARATORS = re.compile(r"\s+[-\u2013\u2014|]\s+")
_IN_FOLDER = re.compile(r"^(?P<name>.+?)\s+\((?P<folder>[~/].*|[A-Za-z]:\\.*)\)$")
_MARKS = "*\u25cf\u2022 "  # an unsaved-changes mark before the name: "*notes.txt", "● x.py"
_FILE_NAME = re.compile(r"^[^/\\]+\.[A-Za-z0-9]{1,8}$")


@dataclass(frozen=True)
class ScreenContext:
    """The active window when a job is handed over: its title and application."""

    title: str
    app: str = ""

    @classmethod
    def of(cls, window: WindowInfo | None) -> ScreenContext | None:
        if window is None or not (window.title.strip() or window.app.strip()):
            return None
        return cls(" ".join(window.title.split()), " ".join(window.app.split()))

    def candidates(self) -> list[tuple[str, str]]:
        """(name or path, folder or "") pairs the title may name as the file it shows."""
        found: list[tuple[str, str]] = []
        segments = _TITLE_SEPARATORS.split(self.title)
        if len(segments) > 2:  # a name with " - " in it: "draft - v2.txt - Mousepad"
            segments.append(self.title[: self.title.rfind(segments[-1])].rstrip(" -\u2013\u2014|"))
        for segment in segments:
            text = segment.strip().lstrip(_MARKS).strip()
            match = _IN_FOLDER.match(text)
            if match:
                found.append((match["name"].strip().lstrip(_MARKS), match["folder"].strip()))
            elif text:
                found.append((text, ""))
        return found

    def file(self, workdir: Path, files: Sequence[str] = ()) -> Path | None:
        """The file the window shows, when its title names one that exists: an absolute or
        ``~`` path, ``name (folder)``, or a name that exactly one of ``files`` (paths relative
        to ``workdir``) ends with."""
        for name, folder in self.candidates():
            if folder:
                path = Path(folder).expanduser() / name
            elif name.startswith(("/", "~")) or re.match(r"^[A-Za-z]:\\", name):
                path = Path(name).expanduser()
            elif _FILE_NAME.match(name):
                matches = [f for f in files if Path(f).name == name]
                if len(matches) != 1:
                    continue
                path = workdir / matches[0]
            else:
                continue
            try:
                if path.is_file():
                    return path
            except OSError:
                continue
        return None


# -- the loop --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CodeAgentReport:
    status: Status
    task: str
    summary: str  # the model's own closing words
    turns: int
    runs: tuple[tuple[int, CodeRun], ...]  # (turn, what the block did), blocks that ran
    changes: FileChanges
    worker_text: str  # what the GUI worker is told

    @property
    def succeeded(self) -> bool:
        return self.status == "done"


def workdir_for(settings: CodeAgentConfig, env: Mapping[str, str] | None) -> Path:
    """Where the code runs: the setting, else the desktop's HOME (``env``'s, else ours)."""
    home = (env or os.environ).get("HOME") or str(Path.home())
    return Path(settings.workdir or home).expanduser().resolve()


def runner_settings(
    settings: CodeAgentConfig,
    workdir: Path,
    env: Mapping[str, str] | None,
    secrets: Sequence[str],
) -> RunnerSettings:
    """The contained runner's settings for the code agent's blocks (and plans' command checks,
    practice's checks). When ``workdir`` is the desktop's HOME (the default), it is HOME in the
    sandbox too, so that ``~`` means what the task means; else the sandbox's HOME is fresh."""
    home = (env or os.environ).get("HOME")
    return RunnerSettings(
        workdir=workdir,
        timeout_s=settings.timeout_s,
        memory_mb=settings.memory_mb,
        output_bytes=settings.output_bytes,
        sandbox=settings.sandbox,
        writable=tuple(settings.writable),
        python=settings.python,
        env=dict(env) if env is not None else None,
        secrets=tuple(secrets),
        home=workdir if home and Path(home).expanduser().resolve() == workdir.resolve() else None,
    )


class CodeAgent:
    """One ``call_code_agent``: ``run()`` once per call. ``complete`` makes one model call."""

    def __init__(
        self,
        complete: Complete,
        settings: CodeAgentConfig,
        platform: Platform,
        gate: SafetyGate,
        *,
        env: Mapping[str, str] | None = None,
        secrets: Sequence[str | None] = (),
        redactor: Redactor | None = None,
        step: int | None = None,
        ask: bool = True,
        screen: ScreenContext | None = None,
        memory: Callable[[str], str] | None = None,
    ) -> None:
        """``secrets``: values kept out of the code's environment (and redacted); ``redactor``:
        the run's, for everything the code agent reports (default: one for ``secrets``).
        ``screen``: the active window when the job was handed over, if known. ``memory``:
        given the job, the memory section of its first message ("" for none;
        ``agent_s.memory.runmemory``)."""
        self.complete = complete
        self.settings = settings
        self.platform = platform
        self.gate = gate
        self.env = dict(env) if env is not None else None
        self.secrets = tuple(s for s in secrets if s)
        self.redactor = redactor if redactor is not None else Redactor(self.secrets)
        self.step = step
        self.ask = ask
        self.screen = screen
        self.memory = memory
        self.workdir = workdir_for(settings, self.env)

    def runner_settings(self) -> RunnerSettings:
        return runner_settings(self.settings, self.workdir, self.env, self.secrets)

    def _opening(self, task: str, files: Sequence[str] = ()) -> list[Message]:
        """The system prompt and the first user message; ``files``: the working folder's."""
        template = load_template("code_agent")
        system = code_agent_system_prompt(
            self.platform,
            max_steps=self.settings.max_steps,
            timeout_seconds=round(self.settings.timeout_s),
        )
        parts = [
            template.render("task", task=task),
            template.render("workdir", workdir=str(self.workdir)),
        ]
        if self.screen is not None:
            window = f'"{self.screen.title}" ({self.screen.app})'
            parts.append(template.render("screen", window=screen_content("window titles", window)))
            shown = self.screen.file(self.workdir, files)
            if shown is not None:
                parts.append(template.render("screen_file", path=str(shown)))
        if resolve_sandbox(self.settings.sandbox) == "bwrap":
            folders = [self.workdir, *(Path(w).expanduser() for w in self.settings.writable)]
            writable = ", ".join(map(str, folders))
            parts.append(template.render("sandbox", writable=writable))
            if self.runner_settings().home is None:
                parts.append(template.render("sandbox_home", writable=writable))
        if self.memory is not None and (recalled := self.memory(task)):
            parts.append(recalled)
        return [Message.text("system", system), Message.text("user", "\n".join(parts))]

    def run(
        self, task: str, *, on_substep: Callable[[SubStep], None] = lambda _: None
    ) -> CodeAgentReport:
        """The loop (see the module docstring). Model and budget errors propagate; Ctrl-C
        kills the running block and propagates."""
        limit = self.settings.max_steps
        before = snapshot(self.workdir)
        messages = self._opening(task, tuple(before[0]))
        runs: list[tuple[int, CodeRun]] = []
        status: Status = "max_steps"
        summary = ""
        turn = 0
        redact = self.redactor.text
        try:
            runner = CodeRunner(self.runner_settings())
        except CodeRunnerError as err:  # e.g. a working folder that does not exist
            text = redact(f"The code agent could not start, so no code was run: {err}.")
            return CodeAgentReport(
                "fail", task, redact(str(err)), 0, (), FileChanges(self.workdir), text
            )
        with runner:
            for turn in range(1, limit + 1):
                started = round(time.time(), 3)
                text, reply, call = self._ask(messages)
                if reply is None:  # the model refused: the code agent cannot go on
                    summary = f"the model refused: {call.reply[:300]}"
                    refused = SubStep(
                        substep=turn,
                        started_at=started,
                        kind="refused_by_model",
                        call=call,
                        error=summary,
                    )
                    status = "fail"
                    on_substep(self._clean(refused))
                    break
                sub = SubStep(substep=turn, started_at=started, kind=reply.kind, call=call)
                feedback, sub = self._turn(turn, limit - turn, reply, sub, runner, runs, on_substep)
                on_substep(self._clean(sub))
                if reply.kind == "final":
                    status, summary = reply.status or "fail", reply.summary
                    break
                messages += [
                    Message.text("assistant", redact(text) or "(empty reply)"),
                    Message.text("user", redact(feedback)),
                ]
        changes = FileChanges.between(self.workdir, before, snapshot(self.workdir))
        summary = redact(summary)
        limit = self.settings.summary_chars
        text = redact(worker_text(status, turn, summary, runs, changes, limit))
        return CodeAgentReport(status, task, summary, turn, tuple(runs), changes, text)

    def _clean(self, sub: SubStep) -> SubStep:
        """The turn with every string in it redacted, as it is handed on."""
        return SubStep.model_validate(self.redactor.data(sub.model_dump()))

    def _ask(self, messages: list[Message]) -> tuple[str, CodeReply | None, ModelCall]:
        """One model call: (its text, the reply read, or None for a refusal; the call)."""
        start = time.perf_counter()
        try:
            answer = self.complete(messages)
        except OutputTruncated as err:
            text = err.partial_text
            return (
                text,
                CodeReply(
                    "invalid",
                    error="the reply was cut off at the output limit; "
                    "keep the reasoning and the block short",
                ),
                ModelCall.of("code", text, err.usage, start, 1, "cut off"),
            )
        except Refused as err:
            return (
                err.refusal,
                None,
                ModelCall.of("code", err.refusal, err.usage, start, 1, "refused"),
            )
        call = ModelCall.of("code", answer.text, answer.usage, start, answer.attempts)
        return answer.text, parse_code_reply(answer.text), call

    def _turn(
        self,
        turn: int,
        remaining: int,
        reply: CodeReply,
        sub: SubStep,
        runner: CodeRunner,
        runs: list[tuple[int, CodeRun]],
        on_substep: Callable[[SubStep], None],
    ) -> tuple[str, SubStep]:
        """Act on one reply: the text the model is sent back, and the turn's record."""
        template = load_template("code_agent")
        if reply.kind == "final":
            return "", sub.model_copy(update={"status": reply.status, "summary": reply.summary})
        if reply.kind == "invalid" or reply.language is None:
            feedback = template.render(
                "invalid_reply", step=turn, error=reply.error, remaining=remaining
            )
            return feedback, sub.model_copy(update={"error": reply.error})
        sub = sub.model_copy(update={"language": reply.language, "code": reply.code})
        try:
            decision = self.gate.check(
                subject_for_code(reply.language, reply.code),
                step=self.step,
                substep=turn,
                ask=self.ask,
            )
            sub = sub.model_copy(update={"safety": decision.to_json()})
            if not decision.allowed:
                feedback = template.render(
                    "refused", step=turn, reason=decision.message, remaining=remaining
                )
                return feedback, sub.model_copy(update={"kind": "refused"})
            # the hash of exactly the text handed to the runner, recorded with the turn
            sub = sub.model_copy(update={"code_sha256": code_digest(reply.code)})
            run = self._redacted(runner.run(reply.language, reply.code))  # before any clipping
        except KeyboardInterrupt:  # the kill switch: the block is dead; say what it was
            on_substep(self._clean(sub.model_copy(update={"kind": "interrupted"})))
            raise
        runs.append((turn, run))
        sub = sub.model_copy(update={"run": run.to_json()})
        output = screen_content("code output", model_output(run, self.settings.model_output_chars))
        if run.exit_status is None:
            feedback = template.render(
                "stopped",
                step=turn,
                language=run.language,
                reason=_stopped_reason(run, self.settings.timeout_s),
                output=output,
                remaining=remaining,
            )
            return feedback, sub
        feedback = template.render(
            "result",
            step=turn,
            language=run.language,
            exit_status=run.exit_status,
            output=output,
            remaining=remaining,
        )
        return feedback, sub

    def _redacted(self, run: CodeRun) -> CodeRun:
        redact = self.redactor.text
        return replace(
            run,
            stdout=replace(run.stdout, text=redact(run.stdout.text)),
            stderr=replace(run.stderr, text=redact(run.stderr.text)),
            error=redact(run.error),
        )


def _stopped_reason(run: CodeRun, timeout_s: float) -> str:
    if run.timed_out:
        return f"it was still running at the {timeout_s:g} s time limit, so it was killed"
    return run.stopped


def model_output(run: CodeRun, limit: int) -> str:
    """stdout and stderr of a block for the code model: labelled, each at most half ``limit``."""
    parts = []
    for name, stream in (("stdout", run.stdout), ("stderr", run.stderr)):
        if stream.total_bytes:
            size = f" ({stream.total_bytes:,} bytes in all)" if stream.truncated else ""
            parts.append(f"[{name}{size}]\n{clip_middle(stream.text, limit // 2).rstrip()}")
    if run.error:
        parts.append(f"[error] {run.error}")
    return "\n".join(parts) if parts else "(no output)"


def worker_text(
    status: Status,
    turns: int,
    summary: str,
    runs: Sequence[tuple[int, CodeRun]],
    changes: FileChanges,
    limit: int,
) -> str:
    """What the GUI worker is told: how it ended, the summary, the file changes, and the real
    output of the last blocks (newest first until ``limit`` characters are used)."""
    ending = {
        "done": "finished (DONE)",
        "fail": "gave up (FAIL)",
        "max_steps": "ran out of turns without finishing",
    }[status]
    head = f"The code agent {ending} after {turns} turn(s); {len(runs)} block(s) ran"
    if runs:
        head += f", the last one ended with {runs[-1][1].stopped}"
    lines = [head + "."]
    if summary:  # written from what the code read: content, like the output
        lines.append(
            screen_content("code output", "Its summary: " + clip_middle(summary, limit // 3))
        )
    lines.append(changes.describe())
    text = "\n".join(lines)
    for turn, run in reversed(runs):
        room = limit - len(text) - 80
        if room < 120:
            break
        output = screen_content("code output", model_output(run, room))
        text += f"\nOutput of the {run.language} block of turn {turn} ({run.stopped}):\n{output}"
    return clip_middle(text, limit)


__all__ = [
    "LANGUAGES",
    "CodeAgent",
    "ScreenContext",
    "CodeAgentReport",
    "CodeReply",
    "FileChanges",
    "model_output",
    "parse_code_reply",
    "snapshot",
    "worker_text",
]
