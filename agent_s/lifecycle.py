"""How an agent-s process ends: stop signals, lifelines to children, and the start-up sweep.

Stop signals. ``stop_signals_interrupt()`` (used by the ``agent-s`` entry point and the bench
worker) makes SIGTERM (``timeout``, systemd, Docker, CI), SIGHUP (the terminal closed) and SIGINT
(Ctrl-C) raise ``Terminated``, a ``KeyboardInterrupt`` carrying the signal number, in the main
thread. So one code path handles them all: the agent loop ends the run with a ``cancelled``
result, held keys and buttons are released, running code is killed, desktops stop. The CLI then
exits with 130 whatever the signal was (the exit code of a ``cancelled`` result; it does not
re-kill itself to report 128+signal).

Only the first signal raises. Later ones, which often follow (``timeout`` signals the process
and then its group; a terminal sends Ctrl-C to the whole group), must not break the clean-up
the first one started, so they are ignored; the third forces an exit (the desktop watchdogs
then clean up, see ``agent_s.desktop._watchdog``). After SIGHUP, stdout and stderr that are
terminals go to /dev/null: the terminal is gone, and writing to it would fail. Code that
must not be cut in half (stopping a desktop, releasing a key) runs inside ``deferred()``: a
signal arriving there is raised when the block ends.

SIGKILL cannot be caught. What a killed process leaves is found by others: each virtual
desktop has a watchdog process; each bench worker watches a pipe from its runner
(``watch_lifeline``); and ``sweep()``, run at every ``agent-s`` start, ends the desktops whose
owner is dead and releases the keys and buttons a dead process held down. Both read small
state files under ``state_dir()``, which name their owner by pid *and* start time, so a live
agent, or a pid used again, is never mistaken for a dead one.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import psutil

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
FORCE_AFTER = 3  # this many stop signals end the process at once
STATE_DIR_VAR = "AGENT_S_STATE_DIR"


class Terminated(KeyboardInterrupt):
    """A stop signal (SIGTERM, SIGHUP, SIGINT), raised like Ctrl-C so one path handles all."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    def __str__(self) -> str:
        return f"interrupted by {signal_name(self.signum)}"


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


# -- stop signals ----------------------------------------------------------------------------


@dataclass
class _Signals:
    installed: bool = False
    received: int | None = None  # the first stop signal
    count: int = 0
    raised: bool = False
    deferring: int = 0
    terminals: tuple[int, ...] = ()  # of stdout and stderr, those that were terminals


_signals = _Signals()


def _on_signal(signum: int, frame: FrameType | None) -> None:
    state = _signals
    if signum == signal.SIGHUP:
        _leave_terminal(state.terminals)
    state.count += 1
    if state.received is None:
        state.received = signum
    if state.count >= FORCE_AFTER:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return
    if state.raised or state.deferring:
        return
    state.raised = True
    raise Terminated(signum)


def _leave_terminal(fds: tuple[int, ...]) -> None:
    """The terminal hung up: writing to it would fail (EIO) and turn a clean cancellation into
    a crash, so ``fds`` (stdout, stderr if they were terminals) go to /dev/null from now on."""
    with contextlib.suppress(OSError):
        null = os.open(os.devnull, os.O_WRONLY)
        for fd in fds:
            os.dup2(null, fd)
        os.close(null)


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def stop_signals_interrupt() -> Iterator[None]:
    """SIGTERM, SIGHUP and SIGINT raise ``Terminated`` in the main thread until the block ends
    (the previous handlers come back then). Outside the main thread this does nothing."""
    if not _in_main_thread() or _signals.installed:
        yield
        return
    previous = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}
    _signals.installed, _signals.received, _signals.count, _signals.raised = True, None, 0, False
    _signals.terminals = tuple(fd for fd in (1, 2) if os.isatty(fd))  # after a hang-up: unknown
    try:
        for sig in STOP_SIGNALS:
            signal.signal(sig, _on_signal)
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
        _signals.installed = False


def received() -> int | None:
    """The first stop signal this process received (while ``stop_signals_interrupt`` was on):
    code that caught the interrupt to finish cleanly asks this before starting anything new."""
    return _signals.received


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Hold a stop signal back until the block ends (then ``Terminated`` is raised)."""
    if not _in_main_thread():
        yield
        return
    _signals.deferring += 1
    try:
        yield
    finally:
        _signals.deferring -= 1
    state = _signals
    if state.installed and not state.deferring and state.received is not None and not state.raised:
        state.raised = True
        raise Terminated(state.received)


def watch_lifeline(fd: int) -> None:
    """Stop this process as SIGTERM would once ``fd`` reaches end of file: it is the read end
    of a pipe whose write end only the parent holds, so the parent died (even by SIGKILL)."""

    def watch() -> None:
        with contextlib.suppress(OSError):
            while os.read(fd, 4096):
                pass
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="agent-s-lifeline", daemon=True).start()


# -- who owns what ----------------------------------------------------------------------------


def state_dir() -> Path:
    """Where running agents note what they own: ``$AGENT_S_STATE_DIR``, else
    ``$XDG_RUNTIME_DIR/agent-s`` (cleared at log-out), else ``~/.local/state/agent-s``."""
    explicit = os.environ.get(STATE_DIR_VAR)
    if explicit:
        return Path(explicit)
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and Path(runtime).is_dir():
        return Path(runtime) / "agent-s"
    return Path("~/.local/state/agent-s").expanduser()


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8").strip()
    except OSError:
        return ""


def start_time(pid: int) -> float | None:
    """When ``pid`` started, in seconds since boot (``since_boot``), ``None`` if it is gone or
    a zombie."""
    try:
        proc = psutil.Process(pid)
        with proc.oneshot():
            if proc.status() in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD):
                return None
            return since_boot(proc)
    except psutil.Error:
        return None


def since_boot(proc: psutil.Process) -> float:
    """When ``proc`` started, in seconds since boot, to the clock tick (1/100 s): a value that
    names one process for as long as the machine runs, whatever happens to the clock.

    psutil's ``create_time()`` is the start in ticks since boot plus the boot time, and the
    boot time it reads moves when the clock is set (NTP); taking it off again gives back the
    ticks, the same in every process. Raises ``psutil.Error`` when ``proc`` is gone.
    """
    boot = psutil.boot_time()
    for _ in range(3):  # the clock was set between the two reads: read again
        created = proc.create_time()
        again = psutil.boot_time()
        if again == boot:
            break
        boot = again
    return round(created - boot, 2)


def session_of(pid: int) -> int | None:
    """The session ``pid`` belongs to, ``None`` if it is gone."""
    try:
        return os.getsid(pid)
    except OSError:
        return None


def owner() -> dict[str, Any]:
    """This process, as state files name their owner."""
    pid = os.getpid()
    return {
        "pid": pid,
        "start": start_time(pid),
        "boot": _read("/proc/sys/kernel/random/boot_id"),
        "ns": _pid_namespace(),
    }


def _pid_namespace() -> str:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""


def ours(who: Any) -> bool:
    """Whether an owner record was written in this machine's pid namespace (elsewhere its pid
    means nothing here, so it is left alone)."""
    return isinstance(who, dict) and who.get("ns", "") == _pid_namespace()


def alive(who: Any) -> bool:
    """Whether the owner a state file names is still running (same boot, pid and start)."""
    if not isinstance(who, dict) or not isinstance(who.get("pid"), int):
        return False
    if who.get("boot") != _read("/proc/sys/kernel/random/boot_id"):
        return False
    return who["start"] is not None and start_time(who["pid"]) == who["start"]


__all__ = [
    "STOP_SIGNALS",
    "Terminated",
    "alive",
    "deferred",
    "owner",
    "received",
    "signal_name",
    "state_dir",
    "stop_signals_interrupt",
    "watch_lifeline",
]
