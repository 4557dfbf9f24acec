"""The KDE Plasma Wayland backend: KWin's screenshot interface, its fake input, its scripts.

KWin offers a client no way to read the screen or send input through the core Wayland
protocol; it has its own interfaces, given only to a program the user authorised once
(``kde_access``: a small helper of ours makes the connections, agent-s speaks on them):

- pixels: ``org.kde.KWin.ScreenShot2.CaptureArea`` (D-Bus), the raw image written to a pipe
  whose end goes with the call (its size, stride and format in the reply);
- pointer and keys: the ``org_kde_kwin_fake_input`` Wayland protocol (``_wlwire``): absolute
  motion, buttons, wheel axes, and evdev key codes, found through the default (US) keymap;
  KWin works out the modifiers from the keys as for a real keyboard;
- text: the keys of that keymap for what is on it (``<`` included); anything else (``é``,
  ``✓``, ``日本``) has no key there, so it goes through the clipboard and a paste (Ctrl+V, or
  Ctrl+Shift+V in a terminal), the clipboard's text put back afterwards;
- monitors, windows and focus: a KWin script (``org.kde.kwin.Scripting``) that reports
  ``workspace``'s screens and windows (stacking order, active, pid, geometry) back to us over
  D-Bus, and activates a window;
- clipboard: ``wl-copy`` / ``wl-paste`` (KWin offers the wlroots data-control protocol). KWin
  5.27 announces no empty clipboard, on which wl-paste would wait for ever: reads are bounded.

Wayland lets no client read where the pointer is: ``pointer()`` answers where this backend
last put it (the middle of the screen before its first move). Accessibility extents: KWin
gives Wayland clients no global position, so toolkits report window-relative boxes
(its screenshots say ``accessibility_boxes=False``: they are not used for points here).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from PIL import Image

from agent_s import lifecycle
from agent_s.desktop import kde_access
from agent_s.desktop._wlwire import (
    BUTTON_CODES,
    MODIFIER_MASKS,
    SHIFT_CODE,
    FakeInputConnection,
    socket_path,
)
from agent_s.desktop.base import Monitor, ScreenGeometry, Screenshot, WindowInfo
from agent_s.desktop.common import BackendBase
from agent_s.desktop.ops import Button, Point
from agent_s.errors import ActionExecutionError, DesktopSetupError, DisplayUnavailableError

REQUIRED_TOOLS = {"wl-copy": "wl-clipboard", "wl-paste": "wl-clipboard"}

_CALL_TIMEOUT_MS = 10_000
_SCRIPT_TIMEOUT = 5.0
PASTE_SETTLE = 0.3  # after a paste, before the clipboard's text is put back
CLIPBOARD_READ_TIMEOUT = "1"  # seconds: KWin 5.27 never says the clipboard is empty
#: window classes of terminals, where a paste is Ctrl+Shift+V
TERMINALS = {
    "foot",
    "konsole",
    "org.kde.konsole",
    "xterm",
    "uxterm",
    "urxvt",
    "rxvt",
    "lxterminal",
    "kitty",
    "alacritty",
    "gnome-terminal",
    "gnome-terminal-server",
    "org.gnome.terminal",
    "org.gnome.console",
    "xfce4-terminal",
    "terminator",
    "tilix",
    "com.gexperts.tilix",
    "org.wezfurlong.wezterm",
    "yakuake",
}
# QImage formats KWin writes -> PIL's raw mode for them (little-endian memory order)
_FORMATS = {4: "BGRX", 5: "BGRA", 6: "BGRA", 16: "RGBX", 17: "RGBA", 18: "RGBA"}
_REPORT_IFACE = "org.agent_s.KWinScript"
_REPORT_XML = (
    f"<node><interface name='{_REPORT_IFACE}'><method name='Report'>"
    "<arg type='s' name='json' direction='in'/></method></interface></node>"
)
# KWin 5 names windows "clients" and counts screens; KWin 6 has windowList(), activeWindow
# and Output objects (with their scale): the scripts take whichever this KWin has.
_WINDOWS_JS = """
var shown = [];
var six = typeof workspace.windowList === "function";
var list = six ? workspace.windowList() : workspace.clientList();
var front = six ? workspace.activeWindow : workspace.activeClient;
for (var i = 0; i < list.length; i++) {
    var w = list[i];
    if (!(w.normalWindow || w.dialog) || w.deleted) continue;
    var g = w.clientGeometry || {x: w.x, y: w.y, width: w.width, height: w.height};
    shown.push({id: String(w.internalId), title: String(w.caption), app: String(w.resourceClass),
        pid: w.pid, x: g.x, y: g.y, width: g.width, height: g.height,
        active: w === front, minimized: w.minimized, stack: w.stackingOrder});
}
var screens = [];
var active = 0;
if (six) {
    for (var s = 0; s < workspace.screens.length; s++) {
        var o = workspace.screens[s];
        screens.push({x: o.geometry.x, y: o.geometry.y, width: o.geometry.width,
            height: o.geometry.height, scale: o.devicePixelRatio});
        if (o === workspace.activeScreen) active = s;
    }
} else {
    for (var s = 0; s < workspace.numScreens; s++) {
        var r = workspace.clientArea(KWin.ScreenArea, s, workspace.currentDesktop);
        screens.push({x: r.x, y: r.y, width: r.width, height: r.height});
    }
    active = workspace.activeScreen;
}
report({windows: shown, screens: screens, active: active});
"""
_ACTIVATE_JS = """
var six = typeof workspace.windowList === "function";
var list = six ? workspace.windowList() : workspace.clientList();
var done = false;
for (var i = 0; i < list.length; i++) {
    if (String(list[i].internalId) === WANTED) {
        list[i].minimized = false;
        if (six) {
            workspace.activeWindow = list[i];
        } else {
            workspace.activeClient = list[i];
        }
        done = true;
    }
}
report({done: done});
"""


def _gio() -> tuple[Any, Any]:
    import gi

    gi.require_version("Gio", "2.0")
    from gi.repository import Gio, GLib

    return Gio, GLib


class KWinSession:
    """The authorised D-Bus connection to KWin: screenshots and scripts."""

    def __init__(self, bus_socket: Any) -> None:
        Gio, GLib = _gio()
        self._Gio, self._GLib = Gio, GLib
        self._context = GLib.MainContext.new()
        self._context.push_thread_default()
        try:
            gsock = Gio.Socket.new_from_fd(bus_socket.detach())
            stream = gsock.connection_factory_create_connection()
            flags = (
                Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT
                | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION
            )
            self.bus = Gio.DBusConnection.new_sync(stream, None, flags, None, None)
            info = Gio.DBusNodeInfo.new_for_xml(_REPORT_XML).interfaces[0]
            self._reports: dict[str, str] = {}
            self._path = "/org/agent_s/KWinScript"
            self._registration = self.bus.register_object(
                self._path, info, self._on_call, None, None
            )
        except GLib.Error as err:
            raise DisplayUnavailableError(f"cannot use the session bus: {err.message}") from err
        finally:
            self._context.pop_thread_default()
        self._folder = Path(tempfile.mkdtemp(prefix="agent-s-kwin-"))
        self._names = itertools.count()
        self._lock = threading.Lock()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.bus.unregister_object(self._registration)
            self.bus.close_sync(None)
        shutil.rmtree(self._folder, ignore_errors=True)

    def _on_call(
        self,
        _conn: Any,
        _sender: str,
        _path: str,
        _iface: str,
        _method: str,
        params: Any,
        invocation: Any,
    ) -> None:
        token, _, body = params.unpack()[0].partition("\n")
        self._reports[token] = body
        invocation.return_value(None)

    def call(
        self,
        path: str,
        interface: str,
        method: str,
        args: Any = None,
        *,
        fds: Sequence[int] = (),
    ) -> Any:
        Gio, GLib = self._Gio, self._GLib
        try:
            fd_list = Gio.UnixFDList.new()
            for fd in fds:
                fd_list.append(fd)  # a copy: the caller closes its own
            reply, _out = self.bus.call_with_unix_fd_list_sync(
                "org.kde.KWin",
                path,
                interface,
                method,
                args,
                None,
                Gio.DBusCallFlags.NONE,
                _CALL_TIMEOUT_MS,
                fd_list,
                None,
            )
        except GLib.Error as err:
            remote = Gio.DBusError.get_remote_error(err) or ""
            if "NoAuthorized" in remote or "NotAuthorized" in remote:
                raise DesktopSetupError(
                    f"KWin refused {method}: agent-s is not authorised for {interface}"
                ) from err
            if "ServiceUnknown" in remote or err.matches(
                Gio.io_error_quark(), Gio.IOErrorEnum.CLOSED
            ):
                raise DisplayUnavailableError(f"KWin went away: {err.message}") from err
            raise ActionExecutionError(f"KWin's {method} failed: {err.message}") from err
        return reply.unpack() if reply is not None else ()

    def script(self, body: str, **values: str) -> Any:
        """Run a KWin script whose ``report(value)`` sends ``value`` back; return it."""
        GLib = self._GLib
        with self._lock:
            token = uuid.uuid4().hex
            name = f"agent-s-{os.getpid()}-{next(self._names)}"
            head = "".join(f"var {k} = {json.dumps(v)};\n" for k, v in values.items())
            report = (
                "function report(value) {\n"
                f"    callDBus({json.dumps(self.bus.get_unique_name())}, "
                f"{json.dumps(self._path)}, {json.dumps(_REPORT_IFACE)}, 'Report', "
                f"{json.dumps(token)} + '\\n' + JSON.stringify(value));\n"
                "}\n"
            )
            path = self._folder / f"{name}.js"
            path.write_text(head + report + body, encoding="utf-8")
            try:
                loaded = self.call(
                    "/Scripting",
                    "org.kde.kwin.Scripting",
                    "loadScript",
                    GLib.Variant("(ss)", (str(path), name)),
                )
                if loaded[0] < 0:
                    raise ActionExecutionError("KWin did not load agent-s's script")
                self.call("/Scripting", "org.kde.kwin.Scripting", "start")
                deadline = time.monotonic() + _SCRIPT_TIMEOUT
                while token not in self._reports:
                    if time.monotonic() > deadline:
                        raise ActionExecutionError(
                            f"KWin's script did not answer within {_SCRIPT_TIMEOUT:.0f} s"
                        )
                    if not self._context.iteration(False):
                        time.sleep(0.002)
                return json.loads(self._reports.pop(token))
            finally:
                with contextlib.suppress(Exception):
                    self.call(
                        "/Scripting",
                        "org.kde.kwin.Scripting",
                        "unloadScript",
                        GLib.Variant("(s)", (name,)),
                    )
                path.unlink(missing_ok=True)

    def capture(self, x: int, y: int, width: int, height: int) -> tuple[Image.Image, float]:
        """The pixels of the area (logical points) at the outputs' own resolution."""
        GLib = self._GLib
        read_fd, write_fd = os.pipe()
        chunks: list[bytes] = []

        def drain() -> None:
            with os.fdopen(read_fd, "rb", buffering=0) as pipe:
                while chunk := pipe.read(1 << 20):
                    chunks.append(chunk)

        reader = threading.Thread(target=drain, daemon=True)
        reader.start()
        options = {
            "native-resolution": GLib.Variant("b", True),
            "include-cursor": GLib.Variant("b", False),
        }
        try:
            (meta,) = self.call(
                "/org/kde/KWin/ScreenShot2",
                "org.kde.KWin.ScreenShot2",
                "CaptureArea",
                GLib.Variant("(iiuua{sv}h)", (x, y, width, height, options, 0)),
                fds=[write_fd],
            )
        finally:
            os.close(write_fd)  # the call took its own copy: EOF once KWin is done
        reader.join(20.0)
        data = b"".join(chunks)
        w, h, stride = (
            int(meta.get("width", 0)),
            int(meta.get("height", 0)),
            int(meta.get("stride", 0)),
        )
        mode = _FORMATS.get(int(meta.get("format", -1)))
        if mode is None or not w or not h or len(data) < stride * h:
            raise ActionExecutionError(
                f"KWin's screenshot was not a raw image agent-s reads: {dict(meta)} "
                f"({len(data)} bytes)"
            )
        image = Image.frombuffer("RGBA", (w, h), data, "raw", mode, stride, 1)
        return image.convert("RGB"), float(meta.get("scale", w / max(width, 1)))


class KdeBackend(BackendBase):
    """A KDE Plasma (KWin) Wayland desktop (``DesktopBackend``, the actions of
    ``BackendBase``); see the module. ``launcher``: an argv prefix for the applications it
    opens. Raises ``DisplayUnavailableError`` when KWin cannot be reached,
    ``DesktopSetupError`` when agent-s is not authorised (naming the fix) or wl-clipboard is
    missing."""

    window_manager = "KWin"

    def __init__(
        self, env: Mapping[str, str] | None = None, *, launcher: Sequence[str] = ()
    ) -> None:
        super().__init__(env)
        self.env.pop("DISPLAY", None)
        self.launcher = list(launcher)
        if not self.env.get("WAYLAND_DISPLAY"):
            raise DisplayUnavailableError(
                "no Wayland session: WAYLAND_DISPLAY is not set. Run inside a KDE Plasma "
                "Wayland session, or let agent-s start a virtual one (--virtual --desktop kde)."
            )
        self._require(REQUIRED_TOOLS, "KDE")
        self.display = self.env["WAYLAND_DISPLAY"]
        self._access = kde_access.connect(self.env, socket_path(self.env))
        try:
            self._kwin = KWinSession(self._access.bus)
            self._wl = self._fake_input()
            self._layout = self.geometry().bounds
        except BaseException:
            self._access.close()
            raise
        left, top, width, height = self._layout
        self._pointer = Point(left + width // 2, top + height // 2)
        self._down: list[int] = []
        self._release_modifiers()

    def _release_modifiers(self) -> None:
        """KWin keeps the keys a fake-input client held when it dies (a SIGKILLed agent-s):
        its modifiers would come with every later click. Releasing them here lets go of
        them; KWin passes no release of a key that is not down on to applications."""
        for code in MODIFIER_MASKS:
            self._wl.key(code, False)
        self._wl.roundtrip()

    def _fake_input(self) -> FakeInputConnection:
        try:
            return FakeInputConnection(self.env, sock=self._access.wayland)
        except ActionExecutionError as err:
            state = kde_access.authorisation(self.env)
            raise DesktopSetupError(
                "KWin does not let agent-s send input (the fake-input protocol is not offered "
                f"to its helper{': ' + state.missing if state.missing else ''}); {state.fix}"
            ) from err

    # -- life cycle -----------------------------------------------------------------------------

    def close(self) -> None:
        with contextlib.suppress(Exception):
            for code in reversed(self._down):
                self._wl.key(code, False)
            self._wl.roundtrip(1.0)
        with contextlib.suppress(Exception):
            self._wl.close()
        self._kwin.close()
        self._access.close()

    def _check_alive(self) -> None:
        try:
            self._wl.roundtrip(2.0)
        except (DisplayUnavailableError, ActionExecutionError) as err:
            raise DisplayUnavailableError(f"KWin went away: {err}") from err

    # -- pixels ---------------------------------------------------------------------------------

    def _state(self) -> dict[str, Any]:
        return self._kwin.script(_WINDOWS_JS)

    def geometry(self) -> ScreenGeometry:
        state = self._state()
        screens = state["screens"]
        if not screens:
            raise DisplayUnavailableError("KWin shows no screen")
        monitors = tuple(
            Monitor(
                int(s["x"]),
                int(s["y"]),
                int(s["width"]),
                int(s["height"]),
                scale=float(s.get("scale") or 1.0),  # KWin 5's scripts do not tell it
                primary=i == int(state.get("active", 0)),
                name=f"screen-{i}",
            )
            for i, s in enumerate(screens)
        )
        geometry = ScreenGeometry(monitors)
        self._layout = geometry.bounds
        return geometry

    def _grab(self, geometry: ScreenGeometry, monitor: Monitor | None) -> Screenshot:
        if monitor is None:
            left, top, width, height = geometry.bounds
        else:
            left, top, width, height = monitor.x, monitor.y, monitor.width, monitor.height
        image, scale = self._kwin.capture(left, top, width, height)
        # toolkits on KWin Wayland report accessibility boxes relative to their window
        return Screenshot(
            image=image, origin=Point(left, top), scale=scale, accessibility_boxes=False
        )

    # -- mouse ----------------------------------------------------------------------------------

    def pointer(self) -> Point:
        """Where this backend last put the pointer (Wayland lets no client ask)."""
        return self._pointer

    def _pointer_to(self, at: Point) -> None:
        self._wl.move(at.x, at.y, self._layout)
        self._pointer = at
        self._wl.roundtrip()

    def _button(self, button: Button, down: bool) -> None:
        self._wl.button(BUTTON_CODES[button], down)
        self._wl.roundtrip()

    def _wheel(self, clicks: int, horizontal: bool) -> None:
        # Wayland's axes grow down and right: a notch up is negative. KWin passes these on
        # as axis values with no wheel steps: GTK delivers them as smooth scrolling (which
        # scrollable widgets take), Qt as angle deltas.
        self._wl.wheel(clicks if horizontal else -clicks, horizontal)
        self._wl.roundtrip()

    def _sync(self) -> None:
        self._wl.roundtrip()

    # -- keyboard -------------------------------------------------------------------------------

    def _code(self, sym: str) -> tuple[int, int] | None:
        return self._wl.keymap.lookup(sym)

    @contextlib.contextmanager
    def _holding(self, syms: Sequence[str]) -> Iterator[None]:
        codes = self._wl.keymap.codes_to_hold(syms)
        self._down = list(codes)
        try:
            for code in codes:
                self._wl.key(code, True)
            self._wl.roundtrip()
            yield
        finally:
            with lifecycle.deferred():  # a stop signal must not leave the keys down
                for code in reversed(codes):
                    self._wl.key(code, False)
                self._down = []
                self._wl.roundtrip()

    def _tap_code(self, code: int, level: int, shift_held: bool) -> None:
        shift = level > 0 and not shift_held
        if shift:
            self._wl.key(SHIFT_CODE, True)
        self._wl.key(code, True)
        self._wl.key(code, False)
        if shift:
            self._wl.key(SHIFT_CODE, False)

    def _press(self, held: Sequence[str], pressed: Sequence[str]) -> None:
        missing = [sym for sym in (*held, *pressed) if self._code(sym) is None]
        if missing:
            raise ActionExecutionError(
                f"the key {missing[0]!r} is not on KWin's keyboard (US layout), so it cannot be "
                "pressed there"
            )
        shift_held = any(h in ("Shift_L", "Shift_R") for h in held)
        with self._holding(held):
            for sym in pressed:
                code, level = self._code(sym) or (0, 0)
                self._tap_code(code, level, shift_held)
                self._wl.roundtrip()

    def _type_line(self, line: str) -> None:
        """Runs of characters on the keymap as keys; the others through a paste."""
        keymap = self._wl.keymap
        for on_keys, run in itertools.groupby(line, key=lambda c: keymap.of_char(c) is not None):
            text = "".join(run)
            if on_keys:
                for start in range(0, len(text), self.type_chunk):
                    for char in text[start : start + self.type_chunk]:
                        code, level = keymap.of_char(char) or (0, 0)
                        self._tap_code(code, level, False)
                    self._wl.roundtrip()
            else:
                self._paste(text)

    def _paste(self, text: str) -> None:
        """Type ``text`` through the clipboard: set it, paste, put the old text back."""
        if self._down:
            raise ActionExecutionError("cannot paste text while keys are held down")
        before = self.clipboard_get()
        self.clipboard_set(text)
        try:
            active = next((w for w in self.windows() if w.active), None)
            terminal = active is not None and active.app.casefold() in TERMINALS
            self._press(["Control_L", "Shift_L"] if terminal else ["Control_L"], ["v"])
            time.sleep(PASTE_SETTLE)  # the application reads the clipboard after the keys
        finally:
            self.clipboard_set(before)

    # -- clipboard (wl-clipboard, reads bounded) --------------------------------------------------

    def _clipboard_readers(self) -> list[list[str]]:
        # one reader: an empty clipboard costs its timeout once, not once per reader
        return [["timeout", CLIPBOARD_READ_TIMEOUT, "wl-paste", "--no-newline", "--type", "text"]]

    def _clipboard_writer(self, text: str) -> list[str]:
        if not text:
            return ["wl-copy", "--clear"]
        return ["wl-copy", "--type", "text/plain;charset=utf-8"]

    def _opener(self) -> list[str]:
        """xdg-open hands files to KDE's own opener in a KDE session (kde-open5, kfmclient);
        where none is installed (KWin without Plasma, as on a virtual desktop), gio opens
        them by the same MIME settings."""
        path = self.env.get("PATH", os.defpath)
        kde_openers = ("kde-open5", "kde-open", "kfmclient", "kde-open6")
        if any(shutil.which(name, path=path) for name in kde_openers):
            return ["xdg-open"]
        if shutil.which("gio", path=path):
            return ["gio", "open"]
        return super()._opener()

    # -- windows (a KWin script) ----------------------------------------------------------------

    def windows(self) -> list[WindowInfo]:
        """Application windows, the active one first, then front-most first."""
        found = self._state()["windows"]
        found.sort(key=lambda w: (not w["active"], -int(w["stack"])))
        return [
            WindowInfo(
                id=_window_id(w["id"]),
                title=str(w["title"]),
                app=str(w["app"]),
                pid=int(w["pid"]) or None,
                x=round(w["x"]),
                y=round(w["y"]),
                width=round(w["width"]),
                height=round(w["height"]),
                active=bool(w["active"]),
            )
            for w in found
        ]

    def _request_focus(self, window: WindowInfo) -> None:
        wanted = next(
            (w["id"] for w in self._state()["windows"] if _window_id(w["id"]) == window.id), None
        )
        if wanted is None or not self._kwin.script(_ACTIVATE_JS, WANTED=wanted).get("done"):
            raise ActionExecutionError(f"KWin has no window {window.title!r} to activate")


def _window_id(internal: str) -> int:
    """A number for KWin's window uuid (WindowInfo ids are numbers)."""
    return uuid.UUID(internal.strip("{}")).int & 0x7FFF_FFFF_FFFF_FFFF


__all__ = ["KWinSession", "KdeBackend", "TERMINALS"]
