"""A virtual desktop's watchdog: it ends the desktop when the agent that started it dies.

SIGKILL (or a crash) gives an agent no chance to stop its desktop, and Xvfb, openbox, the D-Bus
session and the apps run in sessions of their own, so nothing else would end them. So
``VirtualDesktop.start()`` writes a state file (its marker token, its owner, its temp folders,
the sessions it started; updated as it goes) and starts

    python -m agent_s.desktop._watchdog STATE.json

in a session of its own, with stdin the read end of a pipe whose write end only the agent holds.
The watchdog just waits on it. ``stop()`` ends the desktop, then writes ``stopped`` and closes
the pipe: the watchdog exits. End of file without ``stopped`` means the agent died, whatever
killed it: the watchdog ends every process carrying the desktop's marker and every process of
the sessions the desktop started (Chromium overwrites its environment, marker included),
removes the desktop's temp folders and the state file, and exits.

``reap_stale`` does the same at the next ``agent-s`` start for every state file whose owner is
dead (when the watchdog died too, e.g. in a kill of the whole cgroup). Only processes with the
desktop's own random marker, or in the sessions it started (checked by start time, so a pid used
again is not mistaken), are touched; only folders with agent-s's temp prefixes are removed.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import psutil

from agent_s import lifecycle
from agent_s.guards import files

MARKER = "AGENT_S_VIRTUAL_DESKTOP"
DESKTOPS = "desktops"  # the state files' folder under lifecycle.state_dir()
TEMP_PREFIXES = ("agent-s-desktop-", "agent-s-home-")
STOPPED = b"stopped\n"


# -- finding and ending a desktop's processes -------------------------------------------------


def marked_processes(token: str) -> list[int]:
    """Pids of live processes whose environment carries this desktop's marker."""
    return [proc.pid for proc in _desktop_processes(token, ())]


def _desktop_processes(token: str, sessions: Iterable[Any]) -> list[psutil.Process]:
    """Live processes with the marker ``token``, or in one of ``sessions`` ([leader pid, leader
    start time] pairs) and started no earlier than its leader. Never this process's own."""
    me = os.getpid()
    own_session = lifecycle.session_of(me)
    leaders = {}
    for item in sessions:
        pid, start = item
        now = lifecycle.start_time(pid)
        if now is None or now == start:  # gone (its session may live on), or the same process
            leaders[pid] = start
    found = []
    for proc in psutil.process_iter():
        if proc.pid == me:
            continue
        try:
            with proc.oneshot():
                if proc.status() in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD):
                    continue
                session = os.getsid(proc.pid)
                in_session = session in leaders and session != own_session
                if (in_session and lifecycle.since_boot(proc) >= leaders[session]) or (
                    proc.environ().get(MARKER) == token
                ):
                    found.append(proc)
        except (psutil.Error, OSError):  # gone meanwhile, or another user's
            continue
    return found


def end_processes(find: Callable[[], list[psutil.Process]], grace: float = 2.0) -> None:
    """SIGTERM what ``find()`` returns, then SIGKILL what is left after ``grace`` seconds.
    psutil signals a process only if it is still the one found (not a pid used again)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        procs = find()
        if not procs:
            return
        for proc in procs:
            with contextlib.suppress(psutil.Error):
                proc.send_signal(sig)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and find():
            time.sleep(0.05)


# -- the state file ---------------------------------------------------------------------------


def write_state(path: Path, state: dict[str, Any]) -> None:
    """Write atomically: a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    files.write_text(path, json.dumps(state))


def read_state(path: Path) -> dict[str, Any] | None:
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) else None


def _removable(path: Any) -> bool:
    """Only our own temp folders: whatever a state file says, nothing else is deleted."""
    if not isinstance(path, str) or not os.path.isabs(path):
        return False
    folder = Path(path)
    return folder.name.startswith(TEMP_PREFIXES) and not folder.is_symlink()


def reap(state: dict[str, Any]) -> None:
    """End a desktop whose agent is gone: its processes, then its temp folders."""
    token = state.get("token")
    sessions = [s for s in state.get("sessions", []) if _is_pair(s)]
    if isinstance(token, str) and len(token) >= 8:
        end_processes(lambda: _desktop_processes(token, sessions))
    for path in state.get("paths", []):
        if _removable(path):
            shutil.rmtree(path, ignore_errors=True)


def _is_pair(item: Any) -> bool:
    """[leader pid, leader start time (seconds since boot)], as ``VirtualDesktop`` notes it."""
    if not isinstance(item, list) or len(item) != 2:
        return False
    pid, start = item
    numbers = isinstance(pid, int) and isinstance(start, (int, float))
    return numbers and not isinstance(pid, bool) and not isinstance(start, bool)


def reap_stale(folder: Path) -> list[str]:
    """Reap every desktop in ``folder``'s state files whose owner is dead; their displays."""
    ended = []
    for path in sorted((folder / DESKTOPS).glob("*.json")):
        state = read_state(path)
        if state is None or not lifecycle.ours(state.get("owner")):
            continue
        if lifecycle.alive(state.get("owner")):
            continue
        reap(state)
        path.unlink(missing_ok=True)
        ended.append(str(state.get("display") or state.get("token")))
    return ended


# -- the watchdog process ---------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        sys.stderr.write("usage: python -m agent_s.desktop._watchdog STATE.json  (stdin: pipe)\n")
        return 2
    for sig in (signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    said = b""
    with contextlib.suppress(OSError):
        while chunk := os.read(0, 256):
            said += chunk
    if STOPPED in said:
        return 0
    path = Path(args[0])
    state = read_state(path)
    if state is not None:
        reap(state)
        path.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
