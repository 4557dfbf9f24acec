"""What the desktop backends share: ``BackendBase``, which carries out every action of the
``DesktopBackend`` interface on a few primitives a backend provides, and the helpers it uses
(environment juggling, the agent's own processes, URLs and key names).

A backend (``x11``, ``wayland``) writes only what differs: how it reads the screen, moves the
pointer, presses buttons and keys, types a line, lists and focuses windows, reaches the
clipboard and tells that its display went away (``agent_s.desktop`` lists them). Checking the
arguments, clicks and drags built from moves and presses, held keys let go whatever happens,
text split into lines, opening files and programs, waiting for windows and for the clipboard,
and sleeping happen here, once.
"""

from __future__ import annotations

import abc
import contextlib
import os
import shutil
import subprocess
import time
import unicodedata
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

from agent_s import lifecycle
from agent_s.desktop import apps
from agent_s.desktop.base import Monitor, ScreenGeometry, Screenshot, WindowInfo, check_pointer
from agent_s.desktop.ops import Button, Point
from agent_s.desktop.settle import until_front_idle
from agent_s.errors import ActionExecutionError, DesktopSetupError, WindowNotFoundError
from agent_s.guards.redaction import without_secrets
from agent_s.keys import x_keysym

TYPE_CHUNK = 200  # characters per typing call, so each call has a bounded duration
DRAG_STEP_PX = 25  # a drag moves in steps of about this many pixels, so apps see motion
CLICK_INTERVAL = 0.03  # between the clicks of a double or triple click
# After a hotkey: shortcuts move focus, open boxes and menus, and an application may handle
# that after the next keys have already arrived (Calc's ctrl+shift+F5 to its Name Box does).
KEY_SETTLE = 0.1
ACTIVATE_TIMEOUT = 3.0
CLIPBOARD_TIMEOUT = 2.0
_TYPABLE_CONTROLS = {repr(c) for c in "\t\n\r"}

_Backend = TypeVar("_Backend", bound="BackendBase")


@contextlib.contextmanager
def temporary_environ(**values: str | None) -> Iterator[None]:
    """Set (or, for ``None``, unset) process environment variables until the block ends."""
    saved = {key: os.environ.get(key) for key in values}
    try:
        for key, value in values.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def ancestors() -> set[int]:
    """This process and its parents' pids (the terminal emulator agent-s runs in among them)."""
    found: set[int] = set()
    pid = os.getpid()
    while pid > 1 and pid not in found:
        found.add(pid)
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            break
        pid = int(stat.rsplit(")", 1)[1].split()[1])  # the field after the state: the ppid
    return found


def is_url(text: str) -> bool:
    scheme, sep, rest = text.partition("://")
    return bool(sep and rest and scheme.isascii() and scheme.isalpha())


def keysyms(keys: Sequence[str]) -> list[str]:
    """X keysyms for pyautogui key names; every name is checked before anything is pressed."""
    if isinstance(keys, str):
        raise TypeError("keys must be a sequence of key names, not one string")
    return [x_keysym(key) for key in keys]


def drag_path(start: Point, end: Point) -> list[Point]:
    """The points a drag moves through after ``start``, ending at ``end``: 4 to 40 steps of
    about ``DRAG_STEP_PX``, so that applications see the pointer move with the button down."""
    distance = max(abs(end.x - start.x), abs(end.y - start.y))
    steps = max(4, min(40, distance // DRAG_STEP_PX))
    return [
        Point(start.x + (end.x - start.x) * i // steps, start.y + (end.y - start.y) * i // steps)
        for i in range(1, steps + 1)
    ]


class BackendBase(abc.ABC):
    """A ``DesktopBackend`` built on the primitives below (the abstract methods, and the
    overridable defaults ``window_order``, ``_newline`` and ``_sync``).

    ``env`` is what every program the backend starts gets (secrets left out); ``launcher``
    an argv prefix for the applications ``open`` starts (empty: started as they are).
    """

    env: dict[str, str]
    display: str
    launcher: Sequence[str] = ()
    type_chunk = TYPE_CHUNK  # characters per ``_type_line`` call at most
    window_manager = "the window manager"  # what brings windows to the front, for errors

    def __init__(self, env: Mapping[str, str] | None) -> None:
        self.env = without_secrets(os.environ if env is None else env)

    def _require(self, tools: Mapping[str, str], kind: str) -> None:
        """``DesktopSetupError`` naming the packages when a program (name -> Debian package)
        this backend runs is not on the desktop's PATH."""
        missing = [
            f"{tool} (apt-get install {package})"
            for tool, package in tools.items()
            if shutil.which(tool, path=self.env.get("PATH", os.defpath)) is None
        ]
        if missing:
            raise DesktopSetupError(f"the {kind} backend needs {', '.join(missing)}")

    # -- life cycle ---------------------------------------------------------------------------

    @abc.abstractmethod
    def close(self) -> None:
        """Let go of what the backend holds (connections; keys still down)."""

    def __enter__(self: _Backend) -> _Backend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @abc.abstractmethod
    def _check_alive(self) -> None:
        """Raise ``DisplayUnavailableError`` if the display went away (called after a program
        this backend ran failed, to tell which of the two it was)."""

    # -- pixels -------------------------------------------------------------------------------

    @abc.abstractmethod
    def geometry(self) -> ScreenGeometry: ...

    @abc.abstractmethod
    def _grab(self, geometry: ScreenGeometry, monitor: Monitor | None) -> Screenshot:
        """The pixels of ``monitor``, or of the box around all of ``geometry``'s (``None``)."""

    def capture(self, monitor: int | None = None) -> Screenshot:
        """The whole screen (``None``: the box around all monitors) or monitor ``monitor``."""
        geometry = self.geometry()
        if monitor is None:
            return self._grab(geometry, None)
        if not 0 <= monitor < len(geometry.monitors):
            raise ValueError(
                f"monitor {monitor} does not exist; there are {len(geometry.monitors)}"
            )
        return self._grab(geometry, geometry.monitors[monitor])

    # -- mouse --------------------------------------------------------------------------------

    @abc.abstractmethod
    def pointer(self) -> Point:
        """Where the mouse pointer is now."""

    @abc.abstractmethod
    def _pointer_to(self, at: Point) -> None:
        """Put the pointer at ``at`` (a point on the screen, already checked)."""

    @abc.abstractmethod
    def _button(self, button: Button, down: bool) -> None:
        """Press or release ``button`` where the pointer is."""

    @abc.abstractmethod
    def _wheel(self, clicks: int, horizontal: bool) -> None:
        """``clicks`` wheel notches where the pointer is: positive is up, or right."""

    def _sync(self) -> None:  # noqa: B027 - a backend whose events arrive in order needs none
        """Return once what was sent has reached the applications (after a click or a drag,
        so that keys sent next cannot overtake it)."""

    @contextlib.contextmanager
    def _button_down(self, button: Button) -> Iterator[None]:
        """``button`` held down for the block; released whatever happens."""
        self._button(button, True)
        try:
            yield
        finally:
            with lifecycle.deferred():  # a stop signal must not leave the button down
                self._button(button, False)

    def move(self, at: Point) -> None:
        check_pointer(self.geometry(), at)
        self._pointer_to(at)

    def click(
        self, at: Point, button: Button = "left", clicks: int = 1, hold_keys: Sequence[str] = ()
    ) -> None:
        check_pointer(self.geometry(), at, button=button, clicks=clicks)
        with self._holding(keysyms(hold_keys)):
            self._pointer_to(at)
            for index in range(clicks):
                if index:
                    time.sleep(CLICK_INTERVAL)
                with self._button_down(button):
                    pass
            self._sync()  # the click reached the application before what comes next

    def drag(
        self, start: Point, end: Point, button: Button = "left", hold_keys: Sequence[str] = ()
    ) -> None:
        """Press at ``start``, move there in steps (apps see the motion), release at ``end``."""
        check_pointer(self.geometry(), start, end, button=button)
        with self._holding(keysyms(hold_keys)):
            self._pointer_to(start)
            with self._button_down(button):
                for point in drag_path(start, end):
                    self._pointer_to(point)
                    time.sleep(0.01)
                time.sleep(0.05)  # let the app handle the last motion before the release
            self._sync()

    def scroll(self, at: Point, clicks: int, horizontal: bool = False) -> None:
        """``clicks`` wheel notches at ``at``: positive is up, or right when ``horizontal``."""
        check_pointer(self.geometry(), at)
        self._pointer_to(at)
        self._wheel(clicks, horizontal)

    # -- keyboard -----------------------------------------------------------------------------

    @abc.abstractmethod
    def _holding(self, syms: Sequence[str]) -> contextlib.AbstractContextManager[None]:
        """Hold the keys (X keysyms) down for the block, in order; release them in reverse
        whatever happens, a stop signal included (``lifecycle.deferred``)."""

    @abc.abstractmethod
    def _press(self, held: Sequence[str], pressed: Sequence[str]) -> None:
        """Press and release each of ``pressed`` in turn while ``held`` are held down."""

    @abc.abstractmethod
    def _type_line(self, line: str) -> None:
        """Type ``line`` (no control characters but tabs) literally, unicode included, in
        calls of at most ``type_chunk`` characters."""

    def _newline(self) -> None:
        """A press of Return between two typed lines."""
        self._press([], ["Return"])

    def hotkey(self, keys: Sequence[str]) -> None:
        """Press keys together in order, release in reverse (``["ctrl", "shift", "t"]``)."""
        syms = keysyms(keys)
        if not syms:
            raise ValueError("hotkey needs at least one key")
        self._press(syms[:-1], syms[-1:])
        time.sleep(KEY_SETTLE)

    def hold_and_press(self, hold_keys: Sequence[str], press_keys: Sequence[str]) -> None:
        held, pressed = keysyms(hold_keys), keysyms(press_keys)
        if not pressed:
            raise ValueError("hold_and_press needs at least one key to press")
        self._press(held, pressed)
        time.sleep(KEY_SETTLE)

    def type_text(self, text: str) -> None:
        """Type ``text`` literally, unicode included; a newline ("\\n", "\\r\\n" or "\\r") is a
        press of Return (applications ignore the Linefeed key a typed "\\n" would send)."""
        bad = sorted({repr(c) for c in text if unicodedata.category(c) == "Cc"} - _TYPABLE_CONTROLS)
        if bad:
            raise ValueError(f"cannot type control characters {', '.join(bad)}")
        lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        for index, line in enumerate(lines):
            if index:
                self._newline()
            if line:
                self._type_line(line)

    # -- clipboard ----------------------------------------------------------------------------

    @abc.abstractmethod
    def _clipboard_readers(self) -> list[list[str]]:
        """Commands that print the clipboard's text, tried in turn until one succeeds."""

    @abc.abstractmethod
    def _clipboard_writer(self, text: str) -> list[str]:
        """The command that puts ``text`` (given on its stdin) on the clipboard."""

    def clipboard_get(self) -> str:
        """The clipboard as text; ``""`` when nothing (or no text) is on it."""
        for argv in self._clipboard_readers():
            result = subprocess.run(
                argv, env=self.env, capture_output=True, timeout=10, check=False
            )
            if result.returncode == 0:
                return result.stdout.decode("utf-8", "replace")
        self._check_alive()
        return ""

    def clipboard_set(self, text: str) -> None:
        """Put ``text`` on the clipboard; return once the clipboard serves it."""
        argv = self._clipboard_writer(text)
        # The writer leaves a child behind that serves the clipboard; it must not hold our
        # pipes open, or waiting for the writer would wait for the next owner of the clipboard.
        result = subprocess.run(
            argv,
            input=text.encode("utf-8"),
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=10,
            check=False,
        )
        if result.returncode != 0:
            self._check_alive()
            raise ActionExecutionError(
                f"{argv[0]} could not set the clipboard (status {result.returncode})"
            )
        # The child claims the clipboard a moment after the writer exits; a paste in that
        # moment would get the previous owner's text.
        deadline = time.monotonic() + CLIPBOARD_TIMEOUT
        while self.clipboard_get() != text:
            if time.monotonic() > deadline:
                raise ActionExecutionError("the clipboard did not take the new text")
            time.sleep(0.01)

    # -- windows ------------------------------------------------------------------------------

    @abc.abstractmethod
    def windows(self) -> list[WindowInfo]:
        """Top-level application windows, the front-most (or focused) one first."""

    @abc.abstractmethod
    def _request_focus(self, window: WindowInfo) -> None:
        """Ask for ``window`` to become the active one (``activate`` waits until it is)."""

    def window_order(self) -> tuple[int, tuple[int, ...]]:
        """(active window id or 0, window ids front-most first): ``windows()`` in brief."""
        windows = self.windows()
        active = next((w.id for w in windows if w.active), 0)
        return active, tuple(w.id for w in windows)

    def activate(self, app: str) -> WindowInfo:
        """Bring the window best matching ``app`` (class or app id, then title, then fuzzy)
        to the front."""
        windows = self.windows()
        matches = apps.match_windows(app, windows, fuzzy=True)
        if not matches:
            listing = tuple(f"{w.app}: {w.title}" for w in windows)
            shown = "; ".join(listing) if listing else "none"
            raise WindowNotFoundError(
                f"no open window matches {app!r}; open windows: {shown}",
                name=app,
                open_windows=listing,
            )
        return self._bring_forward(matches[0], app)

    def _bring_forward(self, target: WindowInfo, name: str) -> WindowInfo:
        """Ask for ``target`` to be activated; wait until it is the active window."""
        self._request_focus(target)
        deadline = time.monotonic() + ACTIVATE_TIMEOUT
        while time.monotonic() < deadline:
            current = next((w for w in self.windows() if w.id == target.id), None)
            if current is None:
                raise WindowNotFoundError(
                    f"the window {target.title!r} closed while being activated", name=name
                )
            if current.active:
                return current
            time.sleep(0.03)
        raise ActionExecutionError(
            f"{self.window_manager} did not activate {target.title!r} within {ACTIVATE_TIMEOUT} s"
        )

    def wait_for_window(
        self, match: str | Callable[[WindowInfo], bool], timeout: float = 10.0
    ) -> WindowInfo:
        """Wait until a window matching ``match`` (a name, or a predicate) is open; return it.

        A name matches a window's class exactly or as a substring of its class or title (no
        fuzzy matching: a test waiting for a window must not accept a look-alike).
        """
        deadline = time.monotonic() + timeout
        while True:
            windows = self.windows()
            if callable(match):
                found = [w for w in windows if match(w)]
            else:
                found = apps.match_windows(match, windows, fuzzy=False)
            if found:
                return found[0]
            if time.monotonic() >= deadline:
                listing = tuple(f"{w.app}: {w.title}" for w in windows)
                raise WindowNotFoundError(
                    f"no window matching {match!r} appeared within {timeout:g} s; "
                    f"open windows: {'; '.join(listing) or 'none'}",
                    name=str(match),
                    open_windows=listing,
                )
            time.sleep(0.05)

    # -- programs -----------------------------------------------------------------------------

    def open(self, target: str) -> WindowInfo | None:
        """Open a file or URL with its default application, or start an application by name.

        An existing path (``~`` expanded: the desktop's HOME) or a URL goes to ``xdg-open``;
        otherwise the name is looked up in the desktop entries, then on PATH
        (``AppNotFoundError`` if neither). An application that already has a window is not
        started a second time: that window is brought to the front and returned. ``None``: a
        program was started (its window, if any, appears later).
        """
        if not target.strip():
            raise ValueError("open needs an application name or a file path")
        path = Path(target).expanduser()
        home = self.env.get("HOME")
        if target.startswith("~") and home:
            path = Path(home) / target[1:].lstrip("/")  # the desktop's HOME, not ours
        if is_url(target) or path.exists():
            where = target if is_url(target) else str(path.resolve())
            self._spawn([*self._opener(), where], cwd=None)
            return None
        launch = apps.resolve_app(target, self.env)
        # The terminal this process runs in is not offered: the model would type into it.
        ours = ancestors()
        running = [w for w in apps.windows_of(launch, target, self.windows()) if w.pid not in ours]
        if running:
            return self._bring_forward(running[0], target)
        self._spawn(launch.argv, cwd=launch.cwd)
        return None

    def _opener(self) -> list[str]:
        """The command that opens a file or URL with its default application."""
        if shutil.which("xdg-open", path=self.env.get("PATH", os.defpath)):
            return ["xdg-open"]
        return ["gio", "open"]

    def _spawn(self, argv: list[str], cwd: str | None) -> None:
        """Start a program detached from us (own session, no pipes), with the desktop's env."""
        try:
            proc = subprocess.Popen(
                [*self.launcher, *argv],
                env=self.env,
                cwd=cwd or self.env.get("HOME"),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError as err:
            raise ActionExecutionError(f"could not start {argv[0]}: {err}") from err
        # A program that fails at once (bad arguments, no display) says so within moments.
        with contextlib.suppress(subprocess.TimeoutExpired):
            status = proc.wait(0.3)
            if status != 0:
                raise ActionExecutionError(f"{' '.join(argv)} exited at once with status {status}")

    def _run(
        self,
        argv: list[str],
        *,
        stdin: str | None = None,
        timeout: float = 10.0,
        what: str | None = None,
    ) -> subprocess.CompletedProcess[bytes]:
        """Run one of the backend's tools to its end; ``what`` names it in errors."""
        what = what or argv[0]
        try:
            result = subprocess.run(
                argv,
                input=None if stdin is None else stdin.encode("utf-8"),
                env=self.env,
                capture_output=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired as err:
            raise ActionExecutionError(f"{what} took over {timeout:.0f} s") from err
        if result.returncode != 0:
            self._check_alive()
            detail = (
                result.stderr.decode("utf-8", "replace").strip() or f"status {result.returncode}"
            )
            raise ActionExecutionError(f"{what} failed: {detail}")
        return result

    def sleep(self, seconds: float, settle: bool = False) -> None:
        if seconds < 0:
            raise ValueError(f"cannot sleep a negative time ({seconds})")
        time.sleep(seconds)
        if settle:
            until_front_idle(self)


__all__ = [
    "BackendBase",
    "ancestors",
    "drag_path",
    "is_url",
    "keysyms",
    "temporary_environ",
]
