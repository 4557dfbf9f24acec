"""The launcher: the first process of a block of code inside its wrapper
(``agent_s.coding.containment``).

Run as a file, ``python -I -S _launcher.py FD -- COMMAND...`` (``containment.launcher_argv``),
inside bubblewrap or unshare. So this file is standard library only and imports nothing from
``agent_s``: under ``-I -S`` there is no site-packages (no psutil) and the package is not on the
path, and in the sandbox only this file and the interpreter are bound in. It is also where
``end_tree``, the one SIGTERM-then-SIGKILL loop, lives; ``containment.end_block`` uses it
agent-side with a psutil process listing.

It makes itself a child subreaper (orphans, double-forked daemons included, become its
children), drops the capabilities that would let root code undo the containment or read other
processes (``CAP_SYS_ADMIN``, ``CAP_SYS_PTRACE``, ``CAP_SYS_RAWIO``, ``CAP_SYS_MODULE``,
``CAP_BPF``, ``CAP_PERFMON``; already none under the sandbox), starts the command and waits for
it. When it ends, the launcher ends its descendants still running (SIGTERM, then SIGKILL, again
until nothing is left), writes ``STATUS LEFTOVERS`` to the pipe ``FD`` the runner reads
(``containment.read_report``), and exits.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable

_KILL_GRACE = 0.3  # SIGTERM -> SIGKILL
_KILL_GIVE_UP = 5.0  # SIGKILL rounds (re-listing, for processes forked meanwhile)
_PR_CAPBSET_DROP = 24
_PR_SET_CHILD_SUBREAPER = 36
# CAP_SYS_MODULE, CAP_SYS_RAWIO, CAP_SYS_PTRACE, CAP_SYS_ADMIN, CAP_PERFMON, CAP_BPF
_DROPPED_CAPS = (16, 17, 19, 21, 38, 39)


# -- ending a tree of processes ----------------------------------------------------------------


def _send(pids: Iterable[int], sig: int, group: int | None = None) -> None:
    if group is not None:  # without a process listing, the process group is all that is known
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, sig)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def end_tree(
    root: int,
    listing: Callable[[], list[int]],
    *,
    group: int | None = None,
    between: Callable[[], None] = lambda: None,
) -> int:
    """End every process ``listing()`` returns (live ones, ``root`` included when alive):
    SIGTERM, then SIGKILL, listing them again each round so that processes forked meanwhile go
    too; ``root`` last, since a launcher (a subreaper) keeps catching orphans while it lives.
    ``group``: a process group signalled too (and alone when the listing is empty). Returns how
    many were running, ``root`` not counted. ``between``: called while waiting."""
    listed = listing()
    _send(listed, signal.SIGTERM, group)
    if not listed:  # (no process listing: the process group alone, SIGKILL after the grace)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if group is not None:
                os.killpg(group, 0)  # raises ProcessLookupError when the group is gone
                time.sleep(_KILL_GRACE)
                os.killpg(group, signal.SIGKILL)
        return 0
    give_up = time.monotonic() + _KILL_GRACE
    while time.monotonic() < give_up and set(listing()) - {root}:
        between()
        time.sleep(0.02)
    give_up = time.monotonic() + _KILL_GIVE_UP
    while (left := listing()) and time.monotonic() < give_up:
        others = [pid for pid in left if pid != root]
        _send(others or left, signal.SIGKILL, None if others else group)
        between()
        time.sleep(0.01)
    between()
    return len([pid for pid in listed if pid != root])


def _descendants(root: int) -> list[int]:
    """The live descendants of ``root``, from /proc (standard library only: see the module
    docstring; agent-side code lists processes with psutil instead). Zombies do not count."""
    children: dict[int, list[int]] = {}
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            with contextlib.suppress(OSError, IndexError, ValueError):
                with open(f"/proc/{entry.name}/stat", encoding="ascii", errors="replace") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                if fields[0] not in ("Z", "X"):
                    children.setdefault(int(fields[1]), []).append(int(entry.name))
    found: list[int] = []
    queue = list(children.get(root, ()))
    while queue:
        pid = queue.pop()
        found.append(pid)
        queue.extend(children.get(pid, ()))
    return sorted(found)


# -- the launcher --------------------------------------------------------------------------------


def _prctl(option: int, value: int) -> bool:
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        args = (ctypes.c_ulong(value), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0))
        return libc.prctl(ctypes.c_int(option), *args) == 0
    except (OSError, AttributeError):  # not Linux
        return False


class _Stopped(Exception):
    """The launcher was told to stop (SIGTERM/SIGINT/SIGHUP): the runner is ending the block."""


def _stop(signum: int, frame: object) -> None:
    raise _Stopped(signum)


def _reap() -> None:
    """Collect the exit status of every child that ended (orphans of the block included)."""
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass


def _launch(args: list[str]) -> int:
    report, command = int(args[0]), args[2:]
    os.set_inheritable(report, False)
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    for cap in _DROPPED_CAPS:  # from the bounding set: root code started below never has them
        _prctl(_PR_CAPBSET_DROP, cap)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, _stop)
    status: int | None = None
    try:
        child = subprocess.Popen(command)
        while status is None:
            done, raw = os.waitpid(-1, 0)
            status = raw if done == child.pid else None
        child.returncode = os.waitstatus_to_exitcode(status)
    except _Stopped:
        pass
    except OSError as err:
        sys.stderr.write(f"cannot run {command[0]}: {err.strerror}\n")
        status = 127 << 8
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    me = os.getpid()
    leftovers = end_tree(me, lambda: _descendants(me), between=_reap)
    with contextlib.suppress(OSError):
        os.write(report, f"{'-' if status is None else status} {leftovers}\n".encode())
    if status is None:
        return 128 + signal.SIGTERM
    code = os.waitstatus_to_exitcode(status)
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(_launch(sys.argv[1:]))
