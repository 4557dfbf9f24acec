"""Running one block of model-written Python or Bash: bounded in time, memory and output.

    with CodeRunner(RunnerSettings(workdir=Path("~/work").expanduser(), timeout_s=30)) as runner:
        run = runner.run("python", "print(sum(range(10)))")
    run.exit_status, run.stdout.text        # 0, "45\\n"

The code is written to a file in a scratch folder (one per runner, removed on close) and run
as that file by the interpreter: ``[python3, -u, FILE]`` or ``[bash, FILE]``, an argv list,
never a shell string. The working directory is ``workdir``; stdin is empty. The process gets a
session (and process group) of its own, an address-space limit (``prlimit``, or ``setrlimit``
in the child when prlimit is missing) and an environment without the agent's secrets. It runs
under a launcher, in a PID namespace of its own with a fresh /proc whenever this machine allows
one (``agent_s.coding.containment``): the agent's processes, and so its environment and memory, are
not visible to it, and everything the block started, double-forked daemons included, is ended
when the block's process ends. ``containment_problem()`` says when no PID namespace can be
made here (then a subreaper launcher still ends every process, but the code sees /proc).

stdout and stderr are read as they arrive and only ``head`` + ``tail`` bytes of each are kept,
so 50 MB of output never sits in memory; what was left out is marked in the text. When the time
limit passes, when the block ends while leaving processes behind, or when the caller is
interrupted (Ctrl-C), every process of the block is killed: nothing outlives a block.
``killed_leftovers`` counts the processes still running when the block's own process ended.

``sandbox="bwrap"`` runs the interpreter under bubblewrap: the whole file system read-only
except ``workdir``, the extra ``writable`` folders and the scratch folder; empty /tmp and /run
(no X display socket, no session or system bus); no network; new PID/IPC/UTS namespaces, no
capabilities; a short environment without DISPLAY, XAUTHORITY or the bus address, and HOME a
fresh empty folder (``scratch/home``; ``workdir`` stays the current, writable folder even when
it is the real home), or ``home`` when given (it is made writable: ``runner_settings`` of
``agent_s.coding.agent`` gives the working folder when that is the desktop's HOME). See
``agent_s.coding.containment`` for the details and what is not covered. ``sandbox="auto"`` (the
default) is bubblewrap where it works here and the PID namespace alone where it does not
(``resolve_sandbox``; the command that runs the code says so, ``settle_sandbox``).
``sandbox_problem()`` says why bubblewrap cannot run on this machine (``None`` when it can); a
runner asked for ``bwrap`` is never silently unsandboxed.
"""

from __future__ import annotations

import contextlib
import os
import resource
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from agent_s.coding.containment import (
    containment_argv,
    containment_problem,
    end_block,
    interpreter_roots,
    launcher_argv,
    launcher_file,
    private_homes,
    read_report,
    resolve_sandbox,
    sandbox_argv,
    sandbox_environment,
    sandbox_problem,
    user_homes,
)
from agent_s.errors import AgentSError
from agent_s.guards.redaction import without_secrets

if TYPE_CHECKING:
    from agent_s.settings.config import SandboxName

Language = Literal["python", "bash"]
LANGUAGES: tuple[Language, ...] = ("python", "bash")
_SUFFIX = {"python": ".py", "bash": ".sh"}
_CHUNK = 65536
_DRAIN_SECONDS = 0.5  # after the block's process ends, for output still in flight


class CodeRunnerError(AgentSError):
    """Code cannot be run as configured (no such working folder, no POSIX); nothing was run."""


class SandboxUnavailable(CodeRunnerError):
    """The sandbox asked for cannot run here; ``reason`` says why (nothing was run)."""

    def __init__(self, message: str, *, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class RunnerSettings:
    """How blocks run. ``memory_mb`` None: no limit. ``output_bytes``: kept per stream."""

    workdir: Path
    timeout_s: float = 60.0
    memory_mb: int | None = 2048
    output_bytes: int = 32_000
    sandbox: SandboxName = "auto"
    writable: tuple[Path, ...] = ()
    home: Path | None = None  # the sandbox's HOME; None: a fresh empty one per runner
    python: str | None = None
    env: Mapping[str, str] | None = None  # None: this process's environment
    secrets: tuple[str, ...] = field(default=(), repr=False)  # values never passed on


@dataclass(frozen=True)
class Captured:
    """One output stream: its start and end (``text``), and how much there was in all."""

    text: str
    total_bytes: int
    truncated: bool


@dataclass(frozen=True)
class CodeRun:
    """What one block did. ``exit_status`` None: it did not end by itself (see ``stopped``)."""

    language: Language
    exit_status: int | None
    stdout: Captured
    stderr: Captured
    seconds: float
    timed_out: bool = False
    signal_number: int | None = None  # the signal that ended it, if one did
    error: str = ""  # the block could not be started at all
    killed_leftovers: int = 0  # processes it left running that were killed after it ended

    @property
    def ok(self) -> bool:
        return self.exit_status == 0

    @property
    def stopped(self) -> str:
        """Why it ended, in words: "exit status 0", "stopped at the 60 s time limit", ..."""
        if self.error:
            return f"not started: {self.error}"
        if self.timed_out:
            return "stopped at the time limit"
        number = self.signal_number
        if number is not None:
            name = signal.Signals(number).name if number in _SIGNALS else "?"
            hint = " (possibly out of memory)" if number == signal.SIGKILL else ""
            return f"killed by signal {number} ({name}){hint}"
        return f"exit status {self.exit_status}"

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["stopped"] = self.stopped
        return data


_SIGNALS = {int(s) for s in signal.Signals}


class _HeadTail:
    """Keeps the first ``head`` and the last ``tail`` bytes of a stream fed in chunks."""

    def __init__(self, head: int, tail: int) -> None:
        self.head_limit, self.tail_limit = head, tail
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            excess = len(self.tail) - self.tail_limit
            if excess > 0:
                del self.tail[:excess]

    def captured(self) -> Captured:
        left_out = self.total - len(self.head) - len(self.tail)
        head = self.head.decode("utf-8", "replace")
        tail = self.tail.decode("utf-8", "replace")
        if left_out <= 0:
            return Captured((self.head + self.tail).decode("utf-8", "replace"), self.total, False)
        marker = f"\n[... {left_out:,} bytes of output left out ...]\n"
        return Captured(head + marker + tail, self.total, True)


def clip_middle(text: str, limit: int) -> str:
    """``text`` cut to about ``limit`` characters, keeping its start and end, the cut marked."""
    if len(text) <= limit:
        return text
    keep = max(limit - 60, 20)
    head, tail = text[: keep // 2], text[len(text) - keep // 2 :]
    return f"{head}\n[... {len(text) - 2 * (keep // 2):,} characters left out ...]\n{tail}"


def code_environment(
    base: Mapping[str, str], secrets: Iterable[str] = (), **extra: str
) -> dict[str, str]:
    """``base`` without variables that look secret (by name) or hold one of ``secrets``."""
    env = without_secrets(base, secrets)
    env.update(extra)
    return env


class CodeRunner:
    """Runs blocks (see the module docstring). Use as a context manager, or call ``close()``."""

    def __init__(self, settings: RunnerSettings) -> None:
        if os.name != "posix":
            raise CodeRunnerError("running code needs a POSIX system (process groups, rlimits)")
        if settings.sandbox == "bwrap":
            problem = sandbox_problem()
            if problem is not None:
                raise SandboxUnavailable(f"--code-sandbox bwrap: {problem}", reason=problem)
        self.settings = settings
        self.sandbox = resolve_sandbox(settings.sandbox)  # auto: bwrap where it works
        self.workdir = Path(settings.workdir).expanduser().resolve()
        if not self.workdir.is_dir():
            raise CodeRunnerError(f"the code working folder {self.workdir} does not exist")
        home = Path(settings.home).expanduser().resolve() if settings.home else None
        if home is not None and not home.is_dir():
            raise CodeRunnerError(f"the code's home folder {home} does not exist")
        self.scratch = Path(tempfile.mkdtemp(prefix="agent-s-code-"))
        (self.scratch / "home").mkdir()  # the sandbox's HOME, unless one is given
        self.home = home or self.scratch / "home"
        self._count = 0

    def __enter__(self) -> CodeRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        shutil.rmtree(self.scratch, ignore_errors=True)

    # -- one block --------------------------------------------------------------------------------

    def run(self, language: Language, code: str) -> CodeRun:
        """Run one block and wait for it (at most the time limit)."""
        if language not in LANGUAGES:
            raise ValueError(f"language must be python or bash, not {language!r}")
        self._count += 1
        script = self.scratch / f"block_{self._count:03d}{_SUFFIX[language]}"
        script.write_text(code, encoding="utf-8")
        interpreter = self._interpreter(language)
        empty = Captured("", 0, False)
        if interpreter is None:
            missing = (self.settings.python or "python3") if language == "python" else "bash"
            return CodeRun(language, None, empty, empty, 0.0, error=f"{missing} is not installed")
        argv = [*interpreter, str(script)]
        start = time.monotonic()
        report, report_w = os.pipe()  # the launcher's "status leftovers" line
        try:
            proc = subprocess.Popen(
                self._wrap(argv, report_w),
                cwd=self.workdir,
                env=self._env(),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                preexec_fn=self._preexec(),
                pass_fds=(report_w,),
            )
        except OSError as exc:
            os.close(report)
            return CodeRun(language, None, empty, empty, 0.0, error=str(exc))
        finally:
            os.close(report_w)
        half = self.settings.output_bytes // 2
        out, err = _HeadTail(half, half), _HeadTail(half, half)
        try:
            timed_out, leftovers = self._collect(proc, out, err, start)
            raw, reported = read_report(report)
        except BaseException:  # Ctrl-C (the kill switch) or anything else: nothing survives
            end_block(proc.pid)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(5)
            raise
        finally:
            os.close(report)
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()
        status = proc.returncode
        if raw is not None and not timed_out:  # the block's own status, not the wrapper's
            status, leftovers = os.waitstatus_to_exitcode(raw), leftovers + reported
        killed_by = -status if status is not None and status < 0 else None
        if timed_out:
            killed_by = None
        return CodeRun(
            language,
            None if (timed_out or killed_by) else status,
            out.captured(),
            err.captured(),
            round(time.monotonic() - start, 3),
            timed_out=timed_out,
            signal_number=killed_by,
            killed_leftovers=leftovers,
        )

    def _collect(
        self, proc: subprocess.Popen[bytes], out: _HeadTail, err: _HeadTail, start: float
    ) -> tuple[bool, int]:
        """Read both pipes until they close; kill at the deadline, or after the block's own
        process ended but something it started still holds the pipes. (timed out, leftovers)"""
        deadline = start + self.settings.timeout_s
        timed_out, leftovers = False, 0
        ended_at: float | None = None
        give_up: float | None = None  # after a kill: stop waiting for pipes held elsewhere
        with selectors.DefaultSelector() as selector:
            for stream, sink in ((proc.stdout, out), (proc.stderr, err)):
                if stream is None:
                    raise RuntimeError("the block's output pipes are missing")
                os.set_blocking(stream.fileno(), False)
                selector.register(stream, selectors.EVENT_READ, sink)
            while selector.get_map():
                now = time.monotonic()
                if give_up is not None and now >= give_up:
                    break
                if not timed_out and now >= deadline:
                    timed_out = True
                    end_block(proc.pid)
                    give_up = now + 1.0
                if ended_at is None and proc.poll() is not None:
                    ended_at = now
                if ended_at is not None and give_up is None and now - ended_at > _DRAIN_SECONDS:
                    leftovers = end_block(proc.pid)
                    give_up = now + 1.0
                wait = min(0.2, max(deadline - now, 0.01))
                for key, _ in selector.select(wait):
                    try:
                        chunk = os.read(key.fd, _CHUNK)
                    except BlockingIOError:
                        continue
                    if chunk:
                        key.data.feed(chunk)
                    else:
                        selector.unregister(key.fileobj)
        try:
            proc.wait(max(deadline - time.monotonic(), 0) + 0.5 if not timed_out else 5)
        except subprocess.TimeoutExpired:  # pipes closed early but the process goes on
            timed_out = True
            end_block(proc.pid)
            proc.wait(5)
        leftovers += end_block(proc.pid)  # whatever it started, once it is gone
        return timed_out, leftovers

    # -- how it is started ----------------------------------------------------------------------

    def _interpreter(self, language: Language) -> list[str] | None:
        path = (self.settings.env or os.environ).get("PATH")
        if language == "bash":
            bash = shutil.which("bash", path=path)
            return [bash] if bash else None
        if self.settings.python is not None:
            python = shutil.which(self.settings.python, path=path)
        else:
            python = shutil.which("python3", path=path) or sys.executable
        return [python, "-u"] if python else None

    def _wrap(self, argv: list[str], report_fd: int) -> list[str]:
        """The argv with the launcher, the sandbox (bwrap) or the PID namespace, and the
        memory limit (prlimit) around it."""
        argv = launcher_argv(report_fd, argv)
        if self.sandbox == "bwrap":
            folders = [self.workdir, *(Path(w).expanduser() for w in self.settings.writable)]
            folders += [self.home] if self.home != self.scratch / "home" else []
            private = private_homes(user_homes(self._base()), [*folders, self.scratch])
            argv = [
                *sandbox_argv(
                    shutil.which("bwrap") or "bwrap",
                    writable=[*folders, self.scratch],
                    env=self._env(),
                    session=self._base(),
                    kept=[argv[0], launcher_file(), *interpreter_roots(argv, private)],
                    private=private,
                ),
                *argv,
            ]
        else:
            argv = [*containment_argv(), *argv]
        limit = self.settings.memory_mb
        prlimit = shutil.which("prlimit")
        if limit is not None and prlimit is not None:
            argv = [prlimit, f"--as={limit * 1024 * 1024}", "--core=0", "--", *argv]
        return argv

    def _preexec(self) -> Any:
        """Without prlimit, set the limits in the child before it runs the interpreter."""
        limit = self.settings.memory_mb
        if limit is None or shutil.which("prlimit") is not None:
            return None
        size = limit * 1024 * 1024

        def limit_memory() -> None:  # runs in the child between fork and exec
            resource.setrlimit(resource.RLIMIT_AS, (size, size))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

        return limit_memory

    def _base(self) -> Mapping[str, str]:
        return self.settings.env if self.settings.env is not None else os.environ

    def _env(self) -> dict[str, str]:
        env = code_environment(
            self._base(),
            self.settings.secrets,
            PYTHONUNBUFFERED="1",
            PYTHONIOENCODING="utf-8",
            PYTHONDONTWRITEBYTECODE="1",
            TMPDIR=str(self.scratch),
        )
        if self.sandbox == "bwrap":
            return sandbox_environment(env, home=self.home, tmpdir=self.scratch)
        return env


__all__ = [
    "LANGUAGES",
    "Captured",
    "CodeRun",
    "CodeRunner",
    "CodeRunnerError",
    "Language",
    "RunnerSettings",
    "SandboxUnavailable",
    "clip_middle",
    "code_environment",
    "containment_problem",
    "sandbox_problem",
]
