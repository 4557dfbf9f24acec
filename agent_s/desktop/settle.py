"""Wait until a program has handled what it was sent: its event thread stops running.

Keys sent to a busy program queue up behind the work it is doing. A program that answers one
key by moving the focus (LibreOffice Calc's ctrl+shift+F5 to its Name Box) may do so only
after it has read the keys sent next, which then land where the focus was. A fixed pause is
too short on a loaded machine and wasted on an idle one; this waits for the program itself.

The program's main thread (its pid; where GUI toolkits handle input) is watched through
``/proc``: the program is settled when, over ``QUIET`` seconds, that thread was never
running or waiting for a CPU (state ``R``) and used no CPU time. A program starved of CPU by
others is runnable, so it is not mistaken for idle. Waiting is bounded (``limit``); a pid that
cannot be read (another machine's, gone) is not waited for, nor a window whose program does
not name its pid (``_NET_WM_PID``: GTK, Qt, LibreOffice, Chromium and xterm do; Tk does not).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from agent_s.errors import AgentSError

if TYPE_CHECKING:
    from agent_s.desktop.base import DesktopBackend

#: seconds the main thread must stay idle
QUIET = 0.15
#: seconds between two looks at the thread
POLL = 0.025
#: the longest wait
LIMIT = 5.0


def _sample(pid: int) -> tuple[str, int] | None:
    """The main thread's state letter and CPU time (clock ticks), or None if unreadable."""
    try:
        with open(f"/proc/{pid}/task/{pid}/stat", encoding="ascii", errors="replace") as stat:
            text = stat.read()
    except OSError:
        return None
    # "pid (comm) state ppid ...": comm may hold spaces and parentheses; the last ')' ends it
    fields = text[text.rfind(")") + 2 :].split()
    if len(fields) < 13:
        return None
    try:
        return fields[0], int(fields[11]) + int(fields[12])  # utime + stime
    except ValueError:
        return None


def until_idle(pid: int | None, limit: float = LIMIT) -> bool:
    """Wait until ``pid``'s main thread has been idle for ``QUIET`` seconds; False if it was
    still busy after ``limit`` seconds or cannot be watched."""
    if not pid or pid <= 0:
        return False
    deadline = time.monotonic() + limit
    first = _sample(pid)
    if first is None:
        return False
    quiet_since: float | None = None if first[0] == "R" else time.monotonic()
    ticks = first[1]
    while time.monotonic() < deadline:
        time.sleep(POLL)
        now = _sample(pid)
        if now is None:
            return False
        state, used = now
        if state == "R" or used != ticks:
            quiet_since, ticks = None, used
        elif quiet_since is None:
            quiet_since = time.monotonic()
        if quiet_since is not None and time.monotonic() - quiet_since >= QUIET:
            return True
    return False


def front_pid(backend: DesktopBackend) -> int | None:
    """The pid of ``backend``'s front window's program; None when there is no front window,
    it names no pid, or the windows cannot be listed."""
    try:
        front = next((w for w in backend.windows() if w.active), None)
    except AgentSError:
        return None
    return front.pid if front is not None else None


def until_front_idle(backend: DesktopBackend, limit: float = LIMIT) -> bool:
    """``until_idle`` for the program of ``backend``'s front window; False at once when there
    is none or the windows cannot be listed (the wait is a courtesy, never a failure)."""
    return until_idle(front_pid(backend), limit)


__all__ = ["LIMIT", "POLL", "QUIET", "front_pid", "until_front_idle", "until_idle"]
