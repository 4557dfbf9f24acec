"""Wait until a program has handled what it was sent, and until the screen shows it.

Two waits. ``until_idle``: a program's event thread stops running (below). ``until_still``:
after an action, until the application reacted and the part of the screen it owns is still
(at the end of this docstring).

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

After an action, ``until_still`` looks at the screen frame by frame (``capture``, about every
``FRAME`` seconds) and watches only what the action can have changed: the screen but for the
other windows (a blinking cursor, a clock or a film playing in another window never holds it
up; the acted-on windows are the front one and those under the action's points, and a window
that appears is watched from then on). It ends when

- the application has reacted: the watched part differs from the screen the action was chosen
  on (``before``), or, when it does not (an action with nothing to show, a reaction drawn
  before the first look), its program has run since (it took the action's events from its
  queue) or has been idle for ``QUIET`` seconds;
- the watched part has not changed for ``STILL_FRAMES`` frames, and the front window's program
  did not run meanwhile (a repaint may be pending while it works: a dialog being built), nor,
  for the first ``WORKERS`` seconds, any of its other threads (a worker's result is drawn by
  the main thread after), nor after typed text its main thread to the nanosecond (a file
  chooser checking a typed name: an Enter sent before it is done does nothing);
- the windows stopped coming and going (``window_order``: one that opened is waited for), and
  if the front window's program started a program since the action (``since``), a new window
  has come (a program that opens its window in a process of its own).

It works on every backend with the primitives they all have (``capture``, ``windows``,
``window_order``; the program's pid through ``/proc`` where the windows name it); the limit
stays a bound. Where the windows' places are unknown (GNOME on Wayland lists them 0 by 0),
the whole screen is watched: there, something moving in another window holds the wait to it.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from PIL import Image, ImageChops, ImageDraw

from agent_s.errors import AgentSError

if TYPE_CHECKING:
    from agent_s.desktop.base import DesktopBackend, Screenshot, WindowInfo
    from agent_s.desktop.ops import Point

#: seconds the main thread must stay idle
QUIET = 0.15
#: seconds between two looks at the thread
POLL = 0.025
#: the longest wait
LIMIT = 5.0
#: seconds between two looks at the screen (a capture takes part of it)
FRAME = 0.02
#: unchanged looks in a row that make the screen still
STILL_FRAMES = 2
#: seconds after the first look during which the program's other threads count as its work:
#: long enough for a worker thread's quick check (a typed file name), short enough that one
#: that never rests (a file dialog's monitors) does not hold the wait to its limit
WORKERS = 0.5


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


def _runtime(pid: int) -> int | None:
    """The nanoseconds the main thread has run (``schedstat``), or None if unreadable."""
    try:
        with open(f"/proc/{pid}/task/{pid}/schedstat", encoding="ascii") as stat:
            return int(stat.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _threads_runtime(pid: int, *, main: bool) -> int | None:
    """The nanoseconds the program's threads have run (``schedstat``), the main one's only
    with ``main``, or None if unreadable: work a toolkit hands to a worker thread shows here
    while the main thread sleeps, and, counted to the nanosecond, the main thread's handling
    of typed text (a file chooser checks a typed name for about 0.4 s, a millisecond a frame,
    too little for its clock ticks). Not after other actions: a galculator button runs its
    main thread as much, every frame for 0.25 s, with nothing more to show."""
    total = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for task in tasks:
        if task == str(pid) and not main:
            continue
        path = f"/proc/{pid}/task/{task}/schedstat"
        with contextlib.suppress(OSError, ValueError, IndexError), open(path, "rb") as f:
            total += int(f.read().split()[0])
    return total


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


class _Program:
    """A program, looked at again and again: did it run since the last look (its main thread,
    or any other: a worker thread's result is drawn by the main thread after)?"""

    def __init__(self, pid: int | None, *, text: bool = False) -> None:
        self.pid = pid if pid and pid > 0 else None
        self.text = text  # the action typed text: the main thread's handling of it counts
        first = _sample(self.pid) if self.pid is not None else None
        self.readable = first is not None
        self.ticks = first[1] if first is not None else 0
        self.quiet_since: float | None = None
        if first is not None and first[0] != "R":
            self.quiet_since = time.monotonic()
        self._started = _runtime(self.pid) if self.pid is not None else None
        self.total = _threads_runtime(self.pid, main=text) if self.pid is not None else None
        self._first = time.monotonic()

    def woke(self) -> bool:
        """Whether it has run at all since it was first looked at (after the action was sent:
        so it has taken the action's events from its queue)."""
        if self._started is None or self.pid is None:
            return False
        now = _runtime(self.pid)
        return now is not None and now != self._started

    def ran(self) -> bool:
        """Whether it ran (or waits for a CPU) since the last look; False when unreadable."""
        if not self.readable or self.pid is None:
            return False
        now = _sample(self.pid)
        if now is None:
            self.readable = False
            return False
        state, ticks = now
        total = _threads_runtime(self.pid, main=self.text)
        workers = total != self.total and time.monotonic() - self._first < WORKERS
        ran = state == "R" or ticks != self.ticks or workers
        self.ticks, self.total = ticks, total
        if ran:
            self.quiet_since = None
        elif self.quiet_since is None:
            self.quiet_since = time.monotonic()
        return ran

    def quiet_for(self, seconds: float) -> bool:
        """Whether it has been idle for the last ``seconds``."""
        return self.quiet_since is not None and time.monotonic() - self.quiet_since >= seconds


class _Spawned:
    """Whether a program has started another since a moment (its children's start times)."""

    def __init__(self, pid: int | None, since: float | None) -> None:
        self.pid = pid
        self.seen = False
        # the moment as /proc counts start times: seconds since boot
        offset = time.clock_gettime(time.CLOCK_BOOTTIME) - time.monotonic()
        self.since = None if since is None else since + offset

    def any(self) -> bool:
        """Whether a child of any of its threads started after the moment (once seen, kept)."""
        if self.seen or self.pid is None or self.since is None:
            return self.seen
        tick = os.sysconf("SC_CLK_TCK")
        with contextlib.suppress(OSError):
            for task in os.listdir(f"/proc/{self.pid}/task"):
                with contextlib.suppress(OSError, ValueError):
                    with open(f"/proc/{self.pid}/task/{task}/children", encoding="ascii") as f:
                        children = [int(child) for child in f.read().split()]
                    for child in children:
                        started = _started(child)
                        if started is not None and started / tick >= self.since - 1 / tick:
                            self.seen = True
                            return True
        return False


def _started(pid: int) -> int | None:
    """When ``pid`` started, in clock ticks since boot; None if unreadable."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            text = stat.read()
        return int(text[text.rfind(")") + 2 :].split()[19])
    except (OSError, ValueError, IndexError):
        return None


@dataclass
class _Watch:
    """What part of the screen an action can have changed, as a mask over a capture."""

    order: tuple[int, tuple[int, ...]] | None  # window_order when the windows were read
    windows: tuple[WindowInfo, ...]
    acted: frozenset[int]  # ids of the acted-on windows
    _masks: dict[tuple[int, int, int, int, float], Image.Image]

    @classmethod
    def read(cls, backend: DesktopBackend, at: Sequence[Point]) -> _Watch:
        try:
            order: tuple[int, tuple[int, ...]] | None = backend.window_order()
            windows = tuple(backend.windows())
        except AgentSError:
            return cls(None, (), frozenset(), {})
        acted = {w.id for w in windows if w.active}
        for point in at:  # the front-most window under each point
            under = next((w for w in windows if _inside(w, point)), None)
            if under is not None:
                acted.add(under.id)
        return cls(order, windows, frozenset(acted), {})

    def mask(self, shot: Screenshot) -> Image.Image | None:
        """White where ``shot`` shows what is watched; None: everything is."""
        others = [w for w in self.windows if w.id not in self.acted]
        if not others:
            return None
        key = (*shot.image.size, shot.origin.x, shot.origin.y, shot.scale)
        if key not in self._masks:
            mask = Image.new("L", shot.image.size, 255)
            draw = ImageDraw.Draw(mask)
            for window in reversed(self.windows):  # back to front: what is on top wins
                left = (window.x - shot.origin.x) * shot.scale
                top = (window.y - shot.origin.y) * shot.scale
                right = left + window.width * shot.scale - 1
                bottom = top + window.height * shot.scale - 1
                if right >= left and bottom >= top:
                    fill = 255 if window.id in self.acted else 0
                    draw.rectangle((left, top, right, bottom), fill=fill)
            self._masks[key] = mask
        return self._masks[key]


def _inside(window: WindowInfo, point: Point) -> bool:
    return (
        window.x <= point.x < window.x + window.width
        and window.y <= point.y < window.y + window.height
    )


def _grey(shot: Screenshot) -> Image.Image:
    return shot.image.convert("L")


def _changed(before: Image.Image, now: Image.Image, mask: Image.Image | None) -> bool:
    """Whether any watched pixel differs between two grey looks of the same size."""
    if before.size != now.size:
        return True
    difference = ImageChops.difference(before, now)
    if mask is not None:
        difference = ImageChops.darker(difference, mask)
    return difference.getbbox() is not None


def _differs(
    before: Screenshot | None, shot: Screenshot, look: Image.Image, mask: Image.Image | None
) -> bool:
    """Whether the watched part of ``shot`` (grey: ``look``) differs from ``before``, the
    whole screen or one monitor of it; False when the two do not line up (another scale)."""
    if before is None or before.scale != shot.scale:
        return False
    left = round((before.origin.x - shot.origin.x) * shot.scale)
    top = round((before.origin.y - shot.origin.y) * shot.scale)
    box = (left, top, left + before.image.width, top + before.image.height)
    if left < 0 or top < 0 or box[2] > look.width or box[3] > look.height:
        return False
    if box != (0, 0, *look.size):
        look = look.crop(box)
        mask = mask.crop(box) if mask is not None else None
    return _changed(_grey(before), look, mask)


def _capture(backend: DesktopBackend) -> Screenshot | None:
    try:
        return backend.capture()
    except AgentSError:
        return None


def until_still(
    backend: DesktopBackend,
    limit: float,
    *,
    before: Screenshot | None = None,
    at: Sequence[Point] = (),
    since: float | None = None,
    listed: Sequence[WindowInfo] = (),
    text: bool = False,
) -> Screenshot | None:
    """After an action (sent at ``since``, ``time.monotonic()``; at the points ``at``;
    ``before``: the screen it was chosen on, ``listed``: the windows then; ``text``: it typed
    text), wait until the application reacted and the part of the screen it owns is still, at
    most ``limit`` seconds (see the module docstring). Returns the last look, None if the
    screen could not be read."""
    deadline = time.monotonic() + limit
    watch = _Watch.read(backend, at)
    program = _Program(next((w.pid for w in watch.windows if w.active), None), text=text)
    spawned = _Spawned(program.pid, since)
    known = {w.id for w in listed or watch.windows}  # a window not among them came
    began = looked = time.monotonic()
    shot = _capture(backend)
    if shot is None:
        until_idle(program.pid, max(0.0, deadline - time.monotonic()))
        return None
    look = _grey(shot)
    reacted = _differs(before, shot, look, watch.mask(shot))
    calm = 0
    while time.monotonic() + FRAME <= deadline:
        time.sleep(max(0.0, FRAME - (time.monotonic() - looked)))
        looked = time.monotonic()
        order: tuple[int, tuple[int, ...]] | None = watch.order
        with contextlib.suppress(AgentSError):
            order = backend.window_order()
        if order != watch.order:  # a window came, went or took the focus: watch it
            watch = _Watch.read(backend, at)
            front = next((w.pid for w in watch.windows if w.active), program.pid)
            program = _Program(front, text=text)
            reacted, calm = True, 0
        now = _capture(backend)
        if now is None:
            return shot
        grey = _grey(now)
        moved = _changed(look, grey, watch.mask(now))
        shot, look = now, grey
        if moved:
            reacted, calm = True, 0
        else:
            calm += 1
        if program.ran():
            calm = 0
        if calm >= STILL_FRAMES and (reacted or _no_reaction_coming(program, began)):
            came = watch.order is not None and bool(set(watch.order[1]) - known)
            if came or not spawned.any():  # a program it started may still open a window
                return shot
    return shot


def _no_reaction_coming(program: _Program, began: float) -> bool:
    """Nothing changed yet (the screen being still meanwhile): whether to stop waiting for
    it. When the program has run since the action was sent, so it has handled it (a reaction
    would be drawn in the frame after), or has been idle for ``QUIET`` seconds; if it cannot
    be watched, when that long has passed."""
    if program.readable:
        return program.woke() or program.quiet_for(QUIET)
    return time.monotonic() - began >= QUIET


__all__ = [
    "FRAME",
    "LIMIT",
    "POLL",
    "QUIET",
    "STILL_FRAMES",
    "front_pid",
    "until_front_idle",
    "until_idle",
    "until_still",
]
