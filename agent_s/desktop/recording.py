"""A desktop backend for unit tests: it records every call and serves scripted screenshots.

It is strict in both directions, like a scripted model: asking for more screenshots than were
given fails, and ``assert_all_screenshots_used()`` fails when some were never asked for. It
checks its arguments the way the real backends do (key names; buttons, click counts and points
off the screen with the same ``base.check_pointer``), so a test that passes here does not pass
only because the fake is lenient.

    backend = RecordingBackend(screenshots=[image1, image2])
    perform(backend, action.plan(points))
    assert backend.ops == [Click(Point(10, 20))]
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from PIL import Image

from agent_s.desktop import apps, ops
from agent_s.desktop.base import Monitor, ScreenGeometry, Screenshot, WindowInfo, check_pointer
from agent_s.desktop.ops import Button, Point
from agent_s.errors import AppNotFoundError, WindowNotFoundError
from agent_s.keys import normalize_key


@dataclass(frozen=True)
class Capture:
    """``capture(monitor)`` was called."""

    monitor: int | None


@dataclass(frozen=True)
class Query:
    """A call that only reads: ``"geometry"``, ``"pointer"``, ``"windows"``, ``"clipboard_get"``."""

    name: str


@dataclass(frozen=True)
class SetClipboard:
    text: str


Call = ops.Op | Capture | Query | SetClipboard


class ScreenshotsExhausted(AssertionError):
    """``capture()`` was called more often than screenshots were given."""


class RecordingBackend:
    """A ``DesktopBackend`` that performs nothing and remembers everything.

    ``screenshots``: served by ``capture()`` in order (PIL images or ``Screenshot`` objects).
    ``geometry``: the screen; by default one monitor the size of the first screenshot
    (1280x800 without screenshots). ``windows``: what ``windows()`` lists and ``activate()``
    matches against. ``openable``: names and paths ``open()`` accepts (``None``: any).
    """

    env: Mapping[str, str] | None = None  # programs started for it get this process's environment

    def __init__(
        self,
        screenshots: Iterable[Image.Image | Screenshot] = (),
        *,
        geometry: ScreenGeometry | None = None,
        windows: Sequence[WindowInfo] = (),
        openable: Collection[str] | None = None,
        clipboard: str = "",
    ) -> None:
        self._screenshots = [
            shot if isinstance(shot, Screenshot) else Screenshot(image=shot) for shot in screenshots
        ]
        self._served = 0
        if geometry is None:
            width, height = self._screenshots[0].image.size if self._screenshots else (1280, 800)
            geometry = ScreenGeometry((Monitor(0, 0, width, height, primary=True),))
        self._geometry = geometry
        self._windows = list(windows)
        self._openable = None if openable is None else tuple(openable)
        self.clipboard = clipboard
        self.position = _center(geometry)
        self.calls: list[Call] = []

    # -- what happened ----------------------------------------------------------------------------

    @property
    def ops(self) -> list[ops.Op | SetClipboard]:
        """The recorded calls that act on the desktop, clipboard writes included (reads and
        captures left out)."""
        return [call for call in self.calls if not isinstance(call, (Capture, Query))]

    @property
    def screenshots_left(self) -> int:
        return len(self._screenshots) - self._served

    def assert_all_screenshots_used(self) -> None:
        if self.screenshots_left:
            raise AssertionError(
                f"{self.screenshots_left} of {len(self._screenshots)} scripted screenshots "
                "were never captured"
            )

    # -- pixels -----------------------------------------------------------------------------------

    def capture(self, monitor: int | None = None) -> Screenshot:
        if monitor is not None and not 0 <= monitor < len(self._geometry.monitors):
            raise ValueError(
                f"monitor {monitor} does not exist; there are {len(self._geometry.monitors)}"
            )
        self.calls.append(Capture(monitor))
        if self._served >= len(self._screenshots):
            raise ScreenshotsExhausted(
                f"capture() called {self._served + 1} times, but only "
                f"{len(self._screenshots)} screenshot(s) were scripted"
            )
        shot = self._screenshots[self._served]
        self._served += 1
        return shot

    def geometry(self) -> ScreenGeometry:
        self.calls.append(Query("geometry"))
        return self._geometry

    # -- mouse ------------------------------------------------------------------------------------

    def move(self, at: Point) -> None:
        check_pointer(self._geometry, at)
        self.calls.append(ops.MoveTo(at))
        self.position = at

    def pointer(self) -> Point:
        self.calls.append(Query("pointer"))
        return self.position

    def click(
        self, at: Point, button: Button = "left", clicks: int = 1, hold_keys: Sequence[str] = ()
    ) -> None:
        check_pointer(self._geometry, at, button=button, clicks=clicks)
        held = _check_keys(hold_keys)
        self.calls.append(ops.Click(at, button, clicks, held))
        self.position = at

    def drag(
        self, start: Point, end: Point, button: Button = "left", hold_keys: Sequence[str] = ()
    ) -> None:
        check_pointer(self._geometry, start, end, button=button)
        held = _check_keys(hold_keys)
        self.calls.append(ops.Drag(start, end, button, held))
        self.position = end

    def scroll(self, at: Point, clicks: int, horizontal: bool = False) -> None:
        check_pointer(self._geometry, at)
        self.calls.append(ops.Scroll(at, clicks, horizontal))
        self.position = at

    # -- keyboard ---------------------------------------------------------------------------------

    def hotkey(self, keys: Sequence[str]) -> None:
        checked = _check_keys(keys)
        if not checked:
            raise ValueError("hotkey needs at least one key")
        self.calls.append(ops.Hotkey(checked))

    def hold_and_press(self, hold_keys: Sequence[str], press_keys: Sequence[str]) -> None:
        held, pressed = _check_keys(hold_keys), _check_keys(press_keys)
        if not pressed:
            raise ValueError("hold_and_press needs at least one key to press")
        self.calls.append(ops.HoldAndPress(held, pressed))

    def type_text(self, text: str) -> None:
        self.calls.append(ops.TypeText(text))

    # -- clipboard --------------------------------------------------------------------------------

    def clipboard_get(self) -> str:
        self.calls.append(Query("clipboard_get"))
        return self.clipboard

    def clipboard_set(self, text: str) -> None:
        self.calls.append(SetClipboard(text))
        self.clipboard = text

    # -- windows and programs ---------------------------------------------------------------------

    def windows(self) -> list[WindowInfo]:
        self.calls.append(Query("windows"))
        return list(self._windows)

    def window_order(self) -> tuple[int, tuple[int, ...]]:
        active = next((w.id for w in self._windows if w.active), 0)
        return active, tuple(w.id for w in self._windows)

    def activate(self, app: str) -> WindowInfo:
        self.calls.append(ops.Activate(app))
        matches = apps.match_windows(app, self._windows, fuzzy=True)
        if not matches:
            listing = tuple(f"{w.app}: {w.title}" for w in self._windows)
            raise WindowNotFoundError(
                f"no open window matches {app!r}; open windows: {'; '.join(listing) or 'none'}",
                name=app,
                open_windows=listing,
            )
        target = replace(matches[0], active=True)
        # The activated window comes to the front; the others lose focus.
        others = [replace(w, active=False) for w in self._windows if w.id != target.id]
        self._windows = [target, *others]
        return target

    def open(self, target: str) -> None:
        if not target.strip():
            raise ValueError("open needs an application name or a file path")
        self.calls.append(ops.Open(target))
        if self._openable is not None and target not in self._openable:
            close = tuple(difflib.get_close_matches(target, self._openable, n=5, cutoff=0.5))
            raise AppNotFoundError(
                f"no application or file named {target!r}", name=target, candidates=close
            )

    def sleep(self, seconds: float, settle: bool = False) -> None:
        if seconds < 0:
            raise ValueError(f"cannot sleep a negative time ({seconds})")
        self.calls.append(ops.Sleep(seconds, settle))


def _center(geometry: ScreenGeometry) -> Point:
    m = geometry.primary
    return Point(m.x + m.width // 2, m.y + m.height // 2)


def _check_keys(keys: Sequence[str]) -> tuple[str, ...]:
    if isinstance(keys, str):
        raise TypeError("keys must be a sequence of key names, not one string")
    for key in keys:
        normalize_key(key)  # raises ValueError naming an unknown key
    return tuple(keys)
