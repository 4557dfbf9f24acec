"""The X11 desktop backend: mss for pixels, pyautogui for the mouse, xdotool for the keyboard.

Why three tools: pyautogui's X11 keyboard types '<' as '>' and drops non-ASCII text, so keys
and text go through ``xdotool`` (keysyms, and ``xdotool type`` for text); pyautogui's screenshot
needs gnome-screenshot, so pixels come from ``mss``. Windows and monitors are read with
python-xlib (EWMH properties, RandR monitors); the clipboard goes through ``xclip``.

pyautogui connects to ``$DISPLAY`` when it is imported, once per process, and moves the mouse
through that one connection. So that one process can drive several displays (an MCP server's
real screen and the virtual desktop of a run, say), each backend hands pyautogui its own
connection for the length of each mouse action (``_PyautoguiOn``), under a lock: what pyautogui
sends, reads (the pointer, the screen size) and takes for its fail-safe corners is always the
display of the backend that is acting.

Every key and mouse button this backend presses is released before the call returns, also when
the call fails half-way or a stop signal arrives. What it holds down is also noted in a file
until released (``_held``), so that after a SIGKILL the next backend on the display (or the
next ``agent-s`` start) releases it. Subprocesses take argv lists; text goes on stdin.

Ordering: a click returns only once the window manager has let it through to the application
(``_xproto.WindowManagerSync``), so keys typed next cannot overtake it; characters missing from
the keyboard map get keycodes of their own before a text is typed (``_xproto.KeyBinder``); the
clipboard is set only once it serves the new text. Each guards against a race seen on Xvfb
with openbox.

pyautogui's fail-safe stays on, as a person's emergency stop: while the pointer sits exactly in
a screen corner, every pyautogui call raises ``pyautogui.FailSafeException`` (held keys and
buttons are released first). Points off every monitor raise ``ValueError`` instead of being
clamped to an edge, as pyautogui would.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import threading
import time
import unicodedata
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import Xlib.display
import Xlib.error
import Xlib.X
from PIL import Image

from agent_s import lifecycle
from agent_s.desktop import _held, _xproto, apps
from agent_s.desktop.base import Monitor, ScreenGeometry, Screenshot, WindowInfo
from agent_s.desktop.common import ancestors, is_url, keysyms, temporary_environ
from agent_s.desktop.ops import Button, Point
from agent_s.desktop.settle import until_front_idle
from agent_s.desktop.xauth import cookie_file, no_cookie_file
from agent_s.errors import (
    ActionExecutionError,
    DesktopSetupError,
    DisplayAuthorizationError,
    DisplayUnavailableError,
    WindowNotFoundError,
)
from agent_s.guards.redaction import without_secrets

PAUSE = 0.02  # pyautogui's pause after each call: short, but lets apps see separate events
TYPE_DELAY_MS = 4  # between typed characters (keycodes are bound beforehand, see type_text)
TYPE_CHUNK = 200  # characters per ``xdotool type`` call, so each call has a bounded duration
DRAG_STEP_PX = 25  # a drag moves in steps of about this many pixels, so apps see motion
ACTIVATE_TIMEOUT = 3.0
CLIPBOARD_TIMEOUT = 2.0
CLICK_INTERVAL = 0.03  # between the clicks of a double or triple click
# After a hotkey: shortcuts move focus, open boxes and menus, and an application may handle
# that after the next keys have already arrived (Calc's ctrl+shift+F5 to its Name Box does).
KEY_SETTLE = 0.1

_BUTTON_NUMBERS = {"left": 1, "middle": 2, "right": 3}
_BUTTON_MASKS = {
    1: Xlib.X.Button1Mask,
    2: Xlib.X.Button2Mask,
    3: Xlib.X.Button3Mask,
    4: Xlib.X.Button4Mask,
    5: Xlib.X.Button5Mask,
}
_TYPABLE_CONTROLS = {repr(c) for c in "\t\n\r"}
_REQUIRED_TOOLS = {"xdotool": "xdotool", "xclip": "xclip"}  # program -> Debian package


def _connect(display: str, xauthority: str | None) -> Xlib.display.Display:
    cookies = cookie_file(xauthority)
    try:
        with temporary_environ(XAUTHORITY=cookies):
            return Xlib.display.Display(display)
    except Xlib.error.XauthError as err:  # a cookie file that cannot be parsed
        raise DisplayUnavailableError(
            f"cannot reach the X display {display!r}: {err}; set XAUTHORITY to its cookie file"
        ) from err
    except Xlib.error.DisplayConnectionError as err:
        said = str(err).lower()
        if any(word in said for word in ("authoriz", "authenticat", "cookie")):
            looked = f"{xauthority!r} (XAUTHORITY)" if xauthority else "~/.Xauthority"
            where = (
                f"none was found: {looked} cannot be read"
                if cookies == no_cookie_file()
                else f"the cookies in {cookies} were not accepted"
            )
            raise DisplayAuthorizationError(
                f"the X display {display!r} asks for a cookie and {where}: set XAUTHORITY to "
                "the cookie file of that server (the one it was started with -auth, or the "
                "session's own), or run `agent-s run --virtual` for a display of its own"
            ) from err
        raise _unreachable(display, err) from err
    except (Xlib.error.DisplayError, Xlib.error.ConnectionClosedError, OSError) as err:
        raise _unreachable(display, err) from err


def _unreachable(display: str, err: Exception) -> DisplayUnavailableError:
    return DisplayUnavailableError(
        f"cannot reach the X display {display!r}: {err}. Is the X server running, and are "
        "DISPLAY and XAUTHORITY right? (agent-s can start its own: `agent-s run --virtual`)"
    )


def _import_pyautogui(display: str, xauthority: str | None) -> ModuleType:
    """pyautogui, imported (the first time) while ``display`` is ``$DISPLAY``: it connects to
    ``$DISPLAY`` at import, and fails to import without a display it can reach."""
    with contextlib.ExitStack() as stack:
        if "pyautogui" not in sys.modules:
            stack.enter_context(temporary_environ(DISPLAY=display))
        stack.enter_context(temporary_environ(XAUTHORITY=cookie_file(xauthority)))
        try:
            import pyautogui
        except Exception as err:  # Xlib raises several kinds while connecting at import time
            raise DisplayUnavailableError(
                f"pyautogui cannot use display {display!r}: {err}"
            ) from err
    pyautogui.PAUSE = PAUSE
    pyautogui.FAILSAFE = True  # a human can still stop the agent by moving the mouse to a corner
    return pyautogui


#: pyautogui's connection is one per process; a backend swaps its own in while it acts.
_PYAUTOGUI_LOCK = threading.RLock()


class _PyautoguiOn:
    """pyautogui driving the display of ``x`` for the length of a ``with`` block.

    pyautogui's X11 module sends the mouse events through its module-level ``_display`` and
    reads the pointer and the screen size there; its fail-safe corners are those of the
    screen it saw at import. For the block, under a process-wide lock (re-entrant: a drag is
    one block of several calls), both are this backend's; afterwards they are put back.
    """

    def __init__(self, gui: ModuleType, x: Xlib.display.Display) -> None:
        self._gui: Any = gui  # its X11 module's internals, which its type stubs do not name
        self._x = x
        self._saved: tuple[Any, Any] = (None, None)

    def __enter__(self) -> ModuleType:
        _PYAUTOGUI_LOCK.acquire()
        try:
            platform = self._gui.platformModule
            screen = self._x.screen()
            right, bottom = screen.width_in_pixels - 1, screen.height_in_pixels - 1
            self._saved = (platform._display, self._gui.FAILSAFE_POINTS)
            platform._display = self._x
            self._gui.FAILSAFE_POINTS = [(0, 0), (0, bottom), (right, 0), (right, bottom)]
        except BaseException:
            _PYAUTOGUI_LOCK.release()
            raise
        return self._gui

    def __exit__(self, *exc: object) -> None:
        try:
            self._gui.platformModule._display, self._gui.FAILSAFE_POINTS = self._saved
        finally:
            _PYAUTOGUI_LOCK.release()


class X11Backend:
    """A real X11 desktop (``DesktopBackend``).

    ``display``: an X display name such as ``":1"``; by default ``env["DISPLAY"]``.
    ``env``: the environment for the programs this backend starts (xdotool, xclip, opened
    applications); by default this process's. Raises ``DisplayUnavailableError`` when the
    display cannot be reached, ``DesktopSetupError`` when xdotool or xclip is missing.
    """

    def __init__(self, display: str | None = None, env: Mapping[str, str] | None = None) -> None:
        # what every program it starts gets (xdotool, xclip, the apps it opens): no secrets
        self.env: dict[str, str] = without_secrets(os.environ if env is None else env)
        if display is not None:
            self.env["DISPLAY"] = display
        name = self.env.get("DISPLAY", "")
        if not name:
            raise DisplayUnavailableError(
                "no X display: DISPLAY is not set and no display was given. Run inside an X "
                "session, pass display=':N', or let agent-s start a virtual one (--virtual on the "
                "command line; in Python, an Agent with backend= on a VirtualDesktop, as the "
                "README shows)."
            )
        self.display = name
        missing = [
            f"{tool} (apt-get install {package})"
            for tool, package in _REQUIRED_TOOLS.items()
            if shutil.which(tool, path=self.env.get("PATH", os.defpath)) is None
        ]
        if missing:
            raise DesktopSetupError(f"the X11 backend needs {', '.join(missing)}")
        xauthority = self.env.get("XAUTHORITY")
        _held.release_stale(display=name, env=self.env)  # what a killed process held down here
        self._held = _held.HeldInputs(name, xauthority)
        self._x = _connect(name, xauthority)
        self._pyautogui = _import_pyautogui(name, xauthority)
        self._mss: Any = None
        self._wm = _xproto.WindowManagerSync(self._x)
        self._keys = _xproto.KeyBinder(self._x, self._wm)
        self._gone = False  # the X server went away: every later call fails at once
        # Pillow frees image memory to the system, so each 8 MB capture cost ~10 ms of page faults
        Image.core.set_blocks_max(max(Image.core.get_blocks_max(), 4))  # reuse a few blocks

    # -- life cycle ---------------------------------------------------------------------------

    def close(self) -> None:
        """Close this backend's own X connections (pyautogui's stays: it is per process, and
        each backend lends it one of its own only while it acts)."""
        if self._mss is not None:
            self._mss.close()
            self._mss = None
        with contextlib.suppress(Exception):
            self._keys.release()  # the keycodes bound for typing
            self._x.close()

    def __enter__(self) -> X11Backend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def _x_errors(self) -> Iterator[None]:
        """Turn a lost X server into ``DisplayUnavailableError``, now and on every later call.

        python-xlib reports a broken connection in several ways (even a ``TypeError`` from
        its own error handling) and can block for ever on the next request, so once the
        server is found gone this backend refuses further calls instead of trying again.
        """
        if self._gone:
            raise DisplayUnavailableError(f"the X display {self.display} went away")
        try:
            yield
        except (DisplayUnavailableError, ActionExecutionError, ValueError):
            raise
        except Exception as err:
            if self._server_gone():
                raise DisplayUnavailableError(
                    f"the X display {self.display} went away: {type(err).__name__}: {err}"
                ) from err
            raise

    def _server_gone(self) -> bool:
        """Whether the X server has stopped answering (asked on a fresh connection)."""
        try:
            _connect(self.display, self.env.get("XAUTHORITY")).close()
        except DisplayUnavailableError:
            self._gone = True
        return self._gone

    # -- pixels ---------------------------------------------------------------------------------

    def geometry(self) -> ScreenGeometry:
        """Monitors from RandR 1.5 (what the server calls monitors), else mss's CRTC list."""
        with self._x_errors():
            monitors = _xproto.randr_monitors(self._x)
        if not monitors:
            shots = self._screen_grabber().monitors
            monitors = [
                Monitor(m["left"], m["top"], m["width"], m["height"], primary=i == 0)
                for i, m in enumerate(shots[1:] or shots[:1])
            ]
        return ScreenGeometry(tuple(monitors))

    def _screen_grabber(self) -> Any:
        if self._mss is None:
            import mss

            factory = getattr(mss, "MSS", None) or mss.mss  # mss >= 10.2 deprecates mss.mss
            with temporary_environ(XAUTHORITY=self.env.get("XAUTHORITY")):
                self._mss = factory(display=self.display)
        return self._mss

    def capture(self, monitor: int | None = None) -> Screenshot:
        """The whole screen (``None``: the box around all monitors) or monitor ``monitor``."""
        if monitor is None:
            left, top, width, height = self.geometry().bounds
        else:
            monitors = self.geometry().monitors
            if not 0 <= monitor < len(monitors):
                raise ValueError(f"monitor {monitor} does not exist; there are {len(monitors)}")
            m = monitors[monitor]
            left, top, width, height = m.x, m.y, m.width, m.height
        region = {"left": left, "top": top, "width": width, "height": height}
        with self._x_errors():
            shot = self._screen_grabber().grab(region)
        image = Image.frombuffer("RGB", shot.size, shot.raw, "raw", "BGRX", 0, 1)
        return Screenshot(image=image, origin=Point(left, top), scale=1.0)

    # -- mouse ----------------------------------------------------------------------------------

    def _on_screen(self, *points: Point) -> None:
        """Refuse points off every monitor (pyautogui would clamp them to an edge and act
        somewhere else)."""
        geometry = self.geometry()
        for at in points:
            if not geometry.contains(at):
                raise ValueError(f"point ({at.x}, {at.y}) is off the screen {geometry.bounds}")

    def _mouse(self) -> _PyautoguiOn:
        """pyautogui driving this backend's display, for a ``with`` block."""
        return _PyautoguiOn(self._pyautogui, self._x)

    def move(self, at: Point) -> None:
        self._on_screen(at)
        with self._x_errors(), self._mouse() as gui:
            gui.moveTo(at.x, at.y)

    def pointer(self) -> Point:
        with self._x_errors():
            reply = self._x.screen().root.query_pointer()
        return Point(reply.root_x, reply.root_y)

    def click(
        self, at: Point, button: Button = "left", clicks: int = 1, hold_keys: Sequence[str] = ()
    ) -> None:
        self._on_screen(at)
        _button_number(button)
        if not 1 <= clicks <= 3:
            raise ValueError(f"clicks must be 1, 2 or 3, got {clicks}")
        held = keysyms(hold_keys)
        with self._x_errors(), self._holding(held), self._buttons_released():
            interval = CLICK_INTERVAL if clicks > 1 else 0.0  # pyautogui sleeps it after each
            with self._mouse() as gui:
                gui.click(at.x, at.y, clicks=clicks, interval=interval, button=button)
            self._wm.wait()  # the click reached the application before what comes next

    def drag(
        self, start: Point, end: Point, button: Button = "left", hold_keys: Sequence[str] = ()
    ) -> None:
        """Press at ``start``, move there in steps (apps see the motion), release at ``end``."""
        self._on_screen(start, end)
        number = str(_button_number(button))
        held = keysyms(hold_keys)
        with self._x_errors(), self._holding(held), self._buttons_released(), self._mouse() as gui:
            gui.moveTo(start.x, start.y)
            self._held.add(buttons=[number])
            gui.mouseDown(start.x, start.y, button=button)
            distance = max(abs(end.x - start.x), abs(end.y - start.y))
            steps = max(4, min(40, distance // DRAG_STEP_PX))
            for i in range(1, steps + 1):
                x = start.x + (end.x - start.x) * i // steps
                y = start.y + (end.y - start.y) * i // steps
                gui.moveTo(x, y, _pause=False)
                time.sleep(0.01)
            time.sleep(0.05)  # let the app handle the last motion before the release
            gui.mouseUp(end.x, end.y, button=button)
            self._held.discard(buttons=[number])
            self._wm.wait()

    def scroll(self, at: Point, clicks: int, horizontal: bool = False) -> None:
        """``clicks`` wheel notches at ``at``: positive is up, or right when ``horizontal``."""
        self._on_screen(at)
        with self._x_errors(), self._mouse() as gui:
            gui.moveTo(at.x, at.y)
            if horizontal:
                gui.hscroll(clicks, at.x, at.y)  # buttons 6/7
            else:
                gui.scroll(clicks, at.x, at.y)  # buttons 4/5

    @contextlib.contextmanager
    def _buttons_released(self) -> Iterator[None]:
        """If the body fails, release any mouse button still down (bypassing pyautogui's
        fail-safe, which may be the very reason the body failed)."""
        try:
            yield
        except BaseException:
            with contextlib.suppress(Exception):
                mask = self._x.screen().root.query_pointer().mask
                down = [str(n) for n, bit in _BUTTON_MASKS.items() if mask & bit]
                for number in down:
                    self._xdotool("mouseup", number)
                self._held.discard(buttons=[str(n) for n in _BUTTON_MASKS])
            raise

    # -- keyboard -------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _holding(self, keysyms: Sequence[str]) -> Iterator[None]:
        """Hold keys down for the body; they are released in reverse order whatever happens."""
        if not keysyms:
            yield
            return
        self._held.add(keys=keysyms)
        try:
            self._xdotool("keydown", *keysyms)
            yield
        finally:
            with lifecycle.deferred():  # a stop signal must not leave the keys down
                self._xdotool("keyup", *reversed(keysyms))
                self._held.discard(keys=keysyms)

    def hotkey(self, keys: Sequence[str]) -> None:
        """Press keys together in order, release in reverse (``["ctrl", "shift", "t"]``)."""
        syms = keysyms(keys)
        if not syms:
            raise ValueError("hotkey needs at least one key")
        with self._holding(syms[:-1]):
            self._xdotool("key", syms[-1])
        time.sleep(KEY_SETTLE)

    def hold_and_press(self, hold_keys: Sequence[str], press_keys: Sequence[str]) -> None:
        held, pressed = keysyms(hold_keys), keysyms(press_keys)
        if not pressed:
            raise ValueError("hold_and_press needs at least one key to press")
        with self._holding(held):
            self._xdotool("key", *pressed)
        time.sleep(KEY_SETTLE)

    def type_text(self, text: str) -> None:
        """Type ``text`` literally, unicode included; a newline is a press of Return.

        Lines are typed separately with Return between them, because ``xdotool type`` sends
        the Linefeed keysym for "\\n", which most applications ignore ("\\r\\n" and "\\r"
        count as one newline). Characters the keyboard map lacks get keycodes of their own
        first (``_xproto.KeyBinder``). Text goes to xdotool on stdin, in chunks.
        """
        bad = sorted({repr(c) for c in text if unicodedata.category(c) == "Cc"} - _TYPABLE_CONTROLS)
        if bad:
            raise ValueError(f"cannot type control characters {', '.join(bad)}")
        lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        with self._x_errors():
            budget = self._keys.capacity()
        for index, line in enumerate(lines):
            if index:
                self._xdotool("key", "Return")
            for chunk in _xproto.chunks(line, TYPE_CHUNK, budget):
                self._type_piece(chunk, budget)

    def _type_piece(self, piece: str, budget: int) -> None:
        """Type one line's piece once its characters have keycodes. Should another client
        have taken keycodes since ``budget`` was counted, the piece is typed in smaller ones;
        a character with no keycode at all is an error, never left to ``xdotool type``'s own
        rebinding, which loses characters in a busy application."""
        with self._x_errors():
            left = self._keys.bind(set(piece))
        if left:
            distinct = len({char for char in piece if not char.isascii()})
            if distinct <= 1 or not budget:
                raise ActionExecutionError(
                    f"no spare keycode is left to type {''.join(sorted(left))!r}: every "
                    "keycode of this display's keyboard map is in use, by its keys or by "
                    "other programs"
                )
            smaller = max(1, min(budget, distinct) // 2)
            for part in _xproto.chunks(piece, TYPE_CHUNK, smaller):
                self._type_piece(part, smaller)
            return
        self._xdotool(
            "type",
            "--delay",
            str(TYPE_DELAY_MS),
            "--file",
            "-",
            stdin=piece,
            timeout=10 + len(piece) * (TYPE_DELAY_MS + 20) / 1000,
        )

    def _xdotool(self, *args: str, stdin: str | None = None, timeout: float = 10.0) -> None:
        self._run(["xdotool", *args], stdin=stdin, timeout=timeout)

    def _run(
        self, argv: list[str], *, stdin: str | None = None, timeout: float = 10.0
    ) -> subprocess.CompletedProcess[bytes]:
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
            raise ActionExecutionError(f"{argv[0]} {argv[1]} took over {timeout:.0f} s") from err
        if result.returncode != 0:
            if self._server_gone():
                raise DisplayUnavailableError(f"the X display {self.display} went away")
            detail = (
                result.stderr.decode("utf-8", "replace").strip() or f"status {result.returncode}"
            )
            raise ActionExecutionError(f"{argv[0]} {argv[1]} failed: {detail}")
        return result

    # -- clipboard ------------------------------------------------------------------------------

    def clipboard_get(self) -> str:
        """The CLIPBOARD selection as text; ``""`` when nothing (or no text) is on it."""
        for target in (["-t", "UTF8_STRING"], []):
            result = subprocess.run(
                ["xclip", "-o", "-selection", "clipboard", *target],
                env=self.env,
                capture_output=True,
                timeout=10,
                check=False,
            )
            if result.returncode == 0:
                return result.stdout.decode("utf-8", "replace")
        if self._server_gone():
            raise DisplayUnavailableError(f"the X display {self.display} went away")
        return ""

    def clipboard_set(self, text: str) -> None:
        """Put ``text`` on the CLIPBOARD selection (xclip keeps serving it in the background)."""
        # xclip forks a child that owns the selection; it must not hold our pipes open, or
        # waiting for xclip would wait for the next owner of the clipboard.
        result = subprocess.run(
            ["xclip", "-i", "-selection", "clipboard", "-t", "UTF8_STRING"],
            input=text.encode("utf-8"),
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=10,
            check=False,
        )
        if result.returncode != 0:
            if self._server_gone():
                raise DisplayUnavailableError(f"the X display {self.display} went away")
            raise ActionExecutionError(
                f"xclip could not set the clipboard (status {result.returncode})"
            )
        # xclip claims the selection in a request its background child sends a moment after
        # the parent exits; a paste in that moment would get the previous owner's text.
        deadline = time.monotonic() + CLIPBOARD_TIMEOUT
        while self.clipboard_get() != text:
            if time.monotonic() > deadline:
                raise ActionExecutionError("the clipboard did not take the new text")
            time.sleep(0.01)

    # -- windows --------------------------------------------------------------------------------

    def windows(self) -> list[WindowInfo]:
        """Top-level application windows, front-most first (EWMH, so a window manager must run)."""
        with self._x_errors():
            return _xproto.read_windows(self._x)

    def window_order(self) -> tuple[int, tuple[int, ...]]:
        """(active window id or 0, window ids front-most first): ``windows()`` in brief, cheap."""
        with self._x_errors():
            return _xproto.window_order(self._x)

    def activate(self, app: str) -> WindowInfo:
        """Bring the window best matching ``app`` (class, then title, then fuzzy) to the front."""
        with self._x_errors():
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
        """Ask the window manager to activate ``target``; wait until it is the active window."""
        with self._x_errors():
            _xproto.request_active(self._x, target.id)
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
            f"the window manager did not activate {target.title!r} within {ACTIVATE_TIMEOUT} s"
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

    # -- programs -------------------------------------------------------------------------------

    def open(self, target: str) -> WindowInfo | None:
        """Open a file or URL with its default application, or start an application by name.

        An existing path (``~`` expanded) or a URL goes to ``xdg-open``; otherwise the name is
        looked up in the desktop entries, then on PATH (``AppNotFoundError`` if neither). An
        application that already has a window is not started a second time: that window is
        brought to the front and returned. ``None``: a program was started (its window, if
        any, appears later).
        """
        if not target.strip():
            raise ValueError("open needs an application name or a file path")
        path = Path(target).expanduser()
        home = self.env.get("HOME")
        if target.startswith("~") and home:
            path = Path(home) / target[1:].lstrip("/")  # the desktop's HOME, not ours
        if is_url(target) or path.exists():
            where = target if is_url(target) else str(path.resolve())
            if shutil.which("xdg-open", path=self.env.get("PATH", os.defpath)):
                self._spawn(["xdg-open", where], cwd=None)
            else:
                self._spawn(["gio", "open", where], cwd=None)
            return None
        launch = apps.resolve_app(target, self.env)
        # The terminal this process runs in is not offered: the model would type into it.
        ours = ancestors()
        running = [w for w in apps.windows_of(launch, target, self.windows()) if w.pid not in ours]
        if running:
            return self._bring_forward(running[0], target)
        self._spawn(launch.argv, cwd=launch.cwd)
        return None

    def _spawn(self, argv: list[str], cwd: str | None) -> None:
        """Start a program detached from us (own session, no pipes), with the desktop's env."""
        try:
            proc = subprocess.Popen(
                argv,
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

    def sleep(self, seconds: float, settle: bool = False) -> None:
        if seconds < 0:
            raise ValueError(f"cannot sleep a negative time ({seconds})")
        time.sleep(seconds)
        if settle:
            until_front_idle(self)


def _button_number(button: str) -> int:
    if button not in _BUTTON_NUMBERS:
        raise ValueError(f"button must be 'left', 'middle' or 'right', got {button!r}")
    return _BUTTON_NUMBERS[button]
