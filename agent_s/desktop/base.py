"""The desktop backend interface: every side effect the agent has on a desktop goes through it."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, get_args, runtime_checkable

from PIL import Image

from agent_s.desktop import ops
from agent_s.desktop.ops import Button, Point
from agent_s.errors import ActionExecutionError


@dataclass(frozen=True)
class Monitor:
    """One monitor: its rectangle in screen coordinates and its scale.

    ``scale`` is screenshot pixels per screen coordinate (2.0 on a HiDPI screen whose input
    coordinates are logical points; 1.0 on X11, where both are device pixels).
    """

    x: int
    y: int
    width: int
    height: int
    scale: float = 1.0
    primary: bool = False
    name: str = ""

    def contains(self, point: Point) -> bool:
        return self.x <= point.x < self.x + self.width and self.y <= point.y < self.y + self.height


@dataclass(frozen=True)
class ScreenGeometry:
    """All monitors; the screen is their bounding box."""

    monitors: tuple[Monitor, ...]

    @property
    def bounds(self) -> tuple[int, int, int, int]:
        """(left, top, width, height) of the box around every monitor."""
        left = min(m.x for m in self.monitors)
        top = min(m.y for m in self.monitors)
        right = max(m.x + m.width for m in self.monitors)
        bottom = max(m.y + m.height for m in self.monitors)
        return left, top, right - left, bottom - top

    @property
    def primary(self) -> Monitor:
        return next((m for m in self.monitors if m.primary), self.monitors[0])

    def contains(self, point: Point) -> bool:
        return any(m.contains(point) for m in self.monitors)


@dataclass(frozen=True)
class Screenshot:
    """A captured image and where it sits: image pixel (0, 0) is screen point ``origin``.

    ``accessibility_boxes``: whether the accessibility tree's extents are screen coordinates
    on this screen; False where the session hides where windows are (GNOME Wayland reports
    every window at (0, 0)), and accessibility boxes must then never become points.
    """

    image: Image.Image
    origin: Point = field(default_factory=lambda: Point(0, 0))
    scale: float = 1.0
    accessibility_boxes: bool = True


@dataclass(frozen=True)
class WindowInfo:
    """A top-level window as the window manager lists it."""

    id: int
    title: str
    app: str  # the application's class name (WM_CLASS), e.g. "Mousepad"
    pid: int | None
    x: int
    y: int
    width: int
    height: int
    active: bool = False


@runtime_checkable
class DesktopBackend(Protocol):
    """What a desktop can do. Coordinates are screen coordinates; keys are pyautogui names."""

    @property
    def env(self) -> Mapping[str, str] | None:
        """The environment programs run for this desktop get (HOME, DISPLAY), or None: this
        process's own."""
        ...

    def capture(self, monitor: int | None = None) -> Screenshot:
        """The whole screen (``None``) or one monitor by index."""
        ...

    def geometry(self) -> ScreenGeometry: ...

    def move(self, at: Point) -> None: ...

    def pointer(self) -> Point:
        """Where the mouse pointer is now."""
        ...

    def click(
        self, at: Point, button: Button = "left", clicks: int = 1, hold_keys: Sequence[str] = ()
    ) -> None: ...

    def drag(
        self, start: Point, end: Point, button: Button = "left", hold_keys: Sequence[str] = ()
    ) -> None: ...

    def scroll(self, at: Point, clicks: int, horizontal: bool = False) -> None: ...

    def hotkey(self, keys: Sequence[str]) -> None: ...

    def hold_and_press(self, hold_keys: Sequence[str], press_keys: Sequence[str]) -> None: ...

    def type_text(self, text: str) -> None: ...

    def clipboard_get(self) -> str: ...

    def clipboard_set(self, text: str) -> None: ...

    def windows(self) -> list[WindowInfo]: ...

    def window_order(self) -> tuple[int, tuple[int, ...]]:
        """(the active window's id or 0, the window ids front-most first): a cheap sign of
        whether ``windows()`` would answer differently than last time."""
        ...

    def activate(self, app: str) -> WindowInfo:
        """Bring the best-matching window to the front; raise ``WindowNotFoundError`` if none."""
        ...

    def open(self, target: str) -> WindowInfo | None:
        """Open an application by name or a file by path; raise ``AppNotFoundError`` if neither.
        An application whose window is already open may be brought to the front instead of
        started again: that window is returned (None: something was started)."""
        ...

    def sleep(self, seconds: float, settle: bool = False) -> None:
        """Wait ``seconds``; with ``settle``, then until the front window's program is idle."""
        ...


def check_pointer(
    geometry: ScreenGeometry, *points: Point, button: str = "left", clicks: int = 1
) -> None:
    """What every backend checks before a pointer action, raising ``ValueError``: each point
    is on a monitor (an action off the screen is refused, never clamped to an edge, where it
    would act somewhere else), the button is one ``Button`` names, and 1 to 3 clicks."""
    for at in points:
        if not geometry.contains(at):
            raise ValueError(f"point ({at.x}, {at.y}) is off the screen {geometry.bounds}")
    if button not in get_args(Button):
        raise ValueError(f"button must be 'left', 'middle' or 'right', got {button!r}")
    if not 1 <= clicks <= 3:
        raise ValueError(f"clicks must be 1, 2 or 3, got {clicks}")


def perform(
    backend: DesktopBackend,
    plan: Sequence[ops.Op],
    before: Callable[[ops.Op], None] | None = None,
    *,
    raised: list[WindowInfo] | None = None,
) -> None:
    """Carry out a planned list of operations in order on ``backend``. ``before`` is called
    with each operation just before it is carried out, and may stop the plan by raising (the
    safety gate's guard: ``agent_s.safety.gate.SafetyGate.guard``). ``raised`` collects the
    windows that ``Open`` brought to the front instead of starting an application again."""
    for op in plan:
        if before is not None:
            before(op)
        match op:
            case ops.MoveTo(at=at):
                backend.move(at)
            case ops.Click(at=at, button=button, clicks=clicks, hold_keys=hold):
                backend.click(at, button, clicks, hold)
            case ops.Drag(start=start, end=end, button=button, hold_keys=hold):
                backend.drag(start, end, button, hold)
            case ops.Scroll(at=at, clicks=clicks, horizontal=horizontal):
                backend.scroll(at, clicks, horizontal)
            case ops.Hotkey(keys=keys):
                backend.hotkey(keys)
            case ops.HoldAndPress(hold_keys=hold, press_keys=press):
                backend.hold_and_press(hold, press)
            case ops.TypeText(text=text):
                backend.type_text(text)
            case ops.Sleep(name_box=True):
                _await_name_box(backend, op)
            case ops.Sleep(seconds=seconds, settle=settle):
                backend.sleep(seconds, settle)
            case ops.Open(target=target):
                window = backend.open(target)
                if window is not None and raised is not None:
                    raised.append(window)
            case ops.Activate(app=app):
                backend.activate(app)
            case _:
                raise TypeError(f"not a desktop operation: {op!r}")


def desktop_home(backend: DesktopBackend) -> Path:
    """The desktop's HOME, what ``~`` means there: its environment's (a virtual desktop has one
    of its own), else this process's."""
    return Path((backend.env or os.environ).get("HOME") or Path.home())


def _await_name_box(backend: DesktopBackend, op: ops.Sleep) -> None:
    """Until Calc's Name Box has the focus; as a settling sleep where the tree cannot tell."""
    from agent_s.desktop import namebox
    from agent_s.desktop.settle import front_pid

    focused = namebox.wait_focused(front_pid(backend))
    if focused is None:
        backend.sleep(op.seconds, op.settle)
    elif not focused:
        where = f" before {op.cell} (the cells before it were written)" if op.cell else ""
        raise ActionExecutionError(
            f"Calc's Name Box did not take the focus after ctrl+shift+F5 within "
            f"{namebox.LIMIT:g} s, so nothing more was typed{where}: Calc may be busy, just "
            "started, or showing a dialog; look at the screen, then try again"
        )


def desktop_name(env: Mapping[str, str] | None, default: str = "") -> str:
    """The desktop environment a desktop's programs are told they run in
    (``XDG_CURRENT_DESKTOP``, else ``DESKTOP_SESSION``), from its environment; ``default``
    without one."""
    if env is None:
        return default
    return str(env.get("XDG_CURRENT_DESKTOP") or env.get("DESKTOP_SESSION") or "")
