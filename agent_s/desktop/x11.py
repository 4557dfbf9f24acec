"""The X11 desktop backend: mss for pixels, pyautogui for the mouse, xdotool for the keyboard.

Why three tools: pyautogui's X11 keyboard types '<' as '>' and drops non-ASCII text, so keys
and text go through ``xdotool`` (keysyms, and ``xdotool type`` for text); pyautogui's screenshot
needs gnome-screenshot, so pixels come from ``mss``. Windows and monitors are read with
python-xlib (EWMH properties, RandR monitors); the clipboard goes through ``xclip``. These are
the X11 primitives; the actions built on them are ``common.BackendBase``'s.

pyautogui connects to ``$DISPLAY`` when it is imported, once per process, and moves the mouse
through that one connection. So that one process can drive several displays (an MCP server's
real screen and the virtual desktop of a run, say), each backend hands pyautogui its own
connection for each move, press and wheel turn (``_PyautoguiOn``), under a lock: what pyautogui
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
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from types import ModuleType
from typing import Any

import Xlib.display
import Xlib.error
from PIL import Image

from agent_s import lifecycle
from agent_s.desktop import _held, _xproto
from agent_s.desktop.base import Monitor, ScreenGeometry, Screenshot, WindowInfo
from agent_s.desktop.common import BackendBase, temporary_environ
from agent_s.desktop.ops import Button, Point
from agent_s.desktop.xauth import cookie_file, no_cookie_file
from agent_s.errors import (
    ActionExecutionError,
    DisplayAuthorizationError,
    DisplayUnavailableError,
)

PAUSE = 0.02  # pyautogui's pause after each call: short, but lets apps see separate events
TYPE_DELAY_MS = 4  # between typed characters (keycodes are bound beforehand, see _type_line)

_BUTTON_NUMBERS = {"left": 1, "middle": 2, "right": 3}
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


class X11Backend(BackendBase):
    """A real X11 desktop (``DesktopBackend``, the actions of ``BackendBase``).

    ``display``: an X display name such as ``":1"``; by default ``env["DISPLAY"]``.
    ``env``: the environment for the programs this backend starts (xdotool, xclip, opened
    applications); by default this process's. Raises ``DisplayUnavailableError`` when the
    display cannot be reached, ``DesktopSetupError`` when xdotool or xclip is missing.
    """

    def __init__(self, display: str | None = None, env: Mapping[str, str] | None = None) -> None:
        super().__init__(env)  # what every program it starts gets: no secrets
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
        self._require(_REQUIRED_TOOLS, "X11")
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

    def _check_alive(self) -> None:
        if self._server_gone():
            raise DisplayUnavailableError(f"the X display {self.display} went away")

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

    def _grab(self, geometry: ScreenGeometry, monitor: Monitor | None) -> Screenshot:
        if monitor is None:
            left, top, width, height = geometry.bounds
        else:
            left, top, width, height = monitor.x, monitor.y, monitor.width, monitor.height
        region = {"left": left, "top": top, "width": width, "height": height}
        with self._x_errors():
            shot = self._screen_grabber().grab(region)
        image = Image.frombuffer("RGB", shot.size, shot.raw, "raw", "BGRX", 0, 1)
        return Screenshot(image=image, origin=Point(left, top), scale=1.0)

    # -- mouse ----------------------------------------------------------------------------------

    def _mouse(self) -> _PyautoguiOn:
        """pyautogui driving this backend's display, for a ``with`` block."""
        return _PyautoguiOn(self._pyautogui, self._x)

    def pointer(self) -> Point:
        with self._x_errors():
            reply = self._x.screen().root.query_pointer()
        return Point(reply.root_x, reply.root_y)

    def _pointer_to(self, at: Point) -> None:
        with self._x_errors(), self._mouse() as gui:
            gui.moveTo(at.x, at.y, _pause=False)

    def _button(self, button: Button, down: bool) -> None:
        """Through pyautogui (its fail-safe stays a person's emergency stop); noted in
        ``_held`` while down. A release pyautogui refuses (the pointer in a fail-safe corner)
        is made with xdotool, and the refusal raised."""
        number = str(_BUTTON_NUMBERS[button])
        if down:
            self._held.add(buttons=[number])
            with self._x_errors(), self._mouse() as gui:
                gui.mouseDown(button=button, _pause=False)
            return
        try:
            with self._x_errors(), self._mouse() as gui:
                gui.mouseUp(button=button, _pause=False)
        except BaseException:
            with contextlib.suppress(Exception):
                self._xdotool("mouseup", number)
            raise
        finally:
            self._held.discard(buttons=[number])

    def _wheel(self, clicks: int, horizontal: bool) -> None:
        with self._x_errors(), self._mouse() as gui:
            if horizontal:
                gui.hscroll(clicks)  # buttons 6/7
            else:
                gui.scroll(clicks)  # buttons 4/5

    def _sync(self) -> None:
        """Until the window manager has let what was sent through to the application (it
        holds the pointer at each press on a window until it has handled it)."""
        with self._x_errors():
            self._wm.wait()

    # -- keyboard -------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _holding(self, syms: Sequence[str]) -> Iterator[None]:
        """Hold keys down for the body; they are released in reverse order whatever happens."""
        if not syms:
            yield
            return
        self._held.add(keys=syms)
        try:
            self._xdotool("keydown", *syms)
            yield
        finally:
            with lifecycle.deferred():  # a stop signal must not leave the keys down
                self._xdotool("keyup", *reversed(syms))
                self._held.discard(keys=syms)

    def _press(self, held: Sequence[str], pressed: Sequence[str]) -> None:
        with self._holding(held):
            self._xdotool("key", *pressed)

    def _type_line(self, line: str) -> None:
        """Characters the keyboard map lacks get keycodes of their own first
        (``_xproto.KeyBinder``); the text goes to ``xdotool type`` on stdin, in chunks of at
        most as many distinct unusual characters as keycodes can be bound."""
        with self._x_errors():
            budget = self._keys.capacity()
        for chunk in _xproto.chunks(line, self.type_chunk, budget):
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
            for part in _xproto.chunks(piece, self.type_chunk, smaller):
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
        self._run(["xdotool", *args], stdin=stdin, timeout=timeout, what=f"xdotool {args[0]}")

    # -- clipboard (the CLIPBOARD selection, through xclip) ------------------------------------

    def _clipboard_readers(self) -> list[list[str]]:
        base = ["xclip", "-o", "-selection", "clipboard"]
        return [[*base, "-t", "UTF8_STRING"], base]

    def _clipboard_writer(self, text: str) -> list[str]:
        return ["xclip", "-i", "-selection", "clipboard", "-t", "UTF8_STRING"]

    # -- windows --------------------------------------------------------------------------------

    def windows(self) -> list[WindowInfo]:
        """Top-level application windows, front-most first (EWMH, so a window manager must run)."""
        with self._x_errors():
            return _xproto.read_windows(self._x)

    def window_order(self) -> tuple[int, tuple[int, ...]]:
        """(active window id or 0, window ids front-most first): ``windows()`` in brief, cheap."""
        with self._x_errors():
            return _xproto.window_order(self._x)

    def _request_focus(self, window: WindowInfo) -> None:
        with self._x_errors():
            _xproto.request_active(self._x, window.id)
