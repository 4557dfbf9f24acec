"""The GNOME Wayland desktop backend: mutter's own ScreenCast and RemoteDesktop D-Bus interfaces.

GNOME Shell lets no Wayland client read the screen or send input, and its portals ask the user
each time; mutter's own D-Bus interfaces ask nothing of a caller on the session's bus. So this
backend holds one remote-desktop session with a screencast of every monitor (``_mutter``):

- pixels: the screencast's PipeWire streams, read by GStreamer in this process (the latest
  frame is kept: mutter sends one when the screen changes), the cursor left out;
- pointer: ``NotifyPointerMotionAbsolute`` on the stream of the monitor the point is on,
  buttons as evdev codes, the wheel as discrete axis steps;
- keys: ``NotifyKeyboardKeysym`` (mutter finds the key and the Shift level). Text in ASCII is
  typed so; a keysym with no key on the session's keymap (``é``, ``日本``) is dropped by mutter,
  so other text is pasted: put on the session's clipboard, Shift+Insert, and the clipboard
  given back what it held;
- clipboard: the remote-desktop session's own (``SetSelection`` / ``SelectionRead``);
- windows: the accessibility tree (AT-SPI), since ``org.gnome.Shell.Introspect`` answers only
  the shell's own callers. AT-SPI gives each application's windows and which one is active,
  but not where they are (extents read (0, 0) on Wayland): windows are listed with no box, and
  accessibility boxes are never used for points on this desktop (``Screenshot.
  accessibility_boxes``). Activation asks the application's accessible frame for the focus;
  toolkits that do not raise their window for it cannot be activated this way.

Quirks handled: the first shifted keysym of a session is dropped (a Shift tap at the start);
GTK4 dialogs take a click only after the pointer moved over them and a moment passed (a small
motion and pause before each press); GNOME Shell starts in the Overview (closed at the start,
``OverviewActive``). Wayland lets no client read where the pointer is: ``pointer()`` answers
where this backend put it last.
"""

from __future__ import annotations

import contextlib
import shutil
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from PIL import Image

from agent_s import lifecycle
from agent_s.desktop import gnome_windows
from agent_s.desktop._mutter import REMOTE_DESKTOP, MutterMonitor, MutterSession
from agent_s.desktop.atspi import AccessibilityUnavailable
from agent_s.desktop.base import Monitor, ScreenGeometry, Screenshot, WindowInfo
from agent_s.desktop.common import ACTIVATE_TIMEOUT, BackendBase
from agent_s.desktop.ops import Button, Point
from agent_s.errors import ActionExecutionError, DisplayUnavailableError

#: evdev button codes
BUTTON_CODES = {"left": 0x110, "right": 0x111, "middle": 0x112}
SHELL = "org.gnome.Shell"
PRESS_PAUSE = 0.05  # between the motion before a press (or a wheel) and it (GTK4 dialogs)
KEY_PAUSE = 0.004  # between typed keys: mutter's virtual keyboard takes them in order
CYCLE_WAIT = 0.5  # for the shell to activate the next window after a cycling shortcut
# mutter handles the shortcut's key releases after it switched windows: input sent sooner went
# to the shell's key grab (wheel notches were lost so), so an activation waits this long more
CYCLE_SETTLE = 0.25
PASTE_SETTLE = 0.15  # the application reads the clipboard after a paste
_SHIFT = ("Shift_L", "Shift_R")


def keysym_value(name: str) -> int:
    """The number of an X keysym name (``"less"``, ``"Return"``, ``"a"``)."""
    from Xlib import XK

    value = XK.string_to_keysym(name)
    if not value and len(name) == 1:
        value = _char_keysym(name)
    if not value:
        raise ValueError(f"the key {name!r} has no keysym")
    return int(value)


def _char_keysym(char: str) -> int:
    code = ord(char)
    if 0x20 <= code <= 0x7E or 0xA0 <= code <= 0xFF:
        return code
    return 0x01000000 | code


def _typable(char: str) -> bool:
    """Whether mutter's keymap (a US layout) has a key for ``char``."""
    return char == "\t" or 0x20 <= ord(char) <= 0x7E


@dataclass(frozen=True)
class Capability:
    """One thing the backend does on this session: whether it can, how, and the fix if not."""

    name: str
    ok: bool
    detail: str
    fix: str = ""


class GnomeBackend(BackendBase):
    """A GNOME Shell (mutter) Wayland desktop (see the module).

    ``env``: the session's environment (``DBUS_SESSION_BUS_ADDRESS``, ``XDG_RUNTIME_DIR`` with
    PipeWire's socket, ``WAYLAND_DISPLAY``), and that of the programs it starts; ``launcher``:
    an argv prefix for the applications it opens. Raises ``DisplayUnavailableError`` when
    mutter cannot be reached and ``DesktopSetupError`` when GStreamer's PipeWire source or
    PipeWire itself is missing.
    """

    window_manager = "GNOME Shell"
    #: why windows cannot be listed here (no accessibility bus), or "" when they can
    window_problem = ""

    def __init__(
        self, env: Mapping[str, str] | None = None, *, launcher: Sequence[str] = ()
    ) -> None:
        super().__init__(env)
        self.env.pop("DISPLAY", None)  # programs it starts are Wayland clients of this session
        self.launcher = list(launcher)
        self.display = self.env.get("WAYLAND_DISPLAY", "")
        self._session = MutterSession(self.env)
        self._windows = gnome_windows.WindowReader(self.env)
        self._monitors: list[MutterMonitor] = []
        self._down: list[int] = []  # keysyms held down
        try:
            geometry = self.geometry()
            left, top, width, height = geometry.bounds
            self._pointer = Point(left + width // 2, top + height // 2)
            self._leave_overview()
            self._key(keysym_value("Shift_L"), True)  # mutter drops a session's first shifted
            self._key(keysym_value("Shift_L"), False)  # keysym: this tap takes its place
        except BaseException:
            self._session.close()
            raise

    # -- life cycle -----------------------------------------------------------------------------

    def close(self) -> None:
        with contextlib.suppress(Exception):
            for sym in reversed(self._down):
                self._key(sym, False)
        self._down = []
        self._windows.close()
        self._session.close()

    def _check_alive(self) -> None:
        if self._session.closed:
            raise DisplayUnavailableError("mutter ended the remote-desktop session")
        try:
            self._session.monitors()
        except (DisplayUnavailableError, ActionExecutionError) as err:
            raise DisplayUnavailableError(f"GNOME Shell went away: {err}") from err

    def _leave_overview(self) -> None:
        """GNOME Shell starts in the Overview, which hides the windows: close it."""
        with contextlib.suppress(ActionExecutionError, DisplayUnavailableError):
            self._session.call(
                SHELL,
                "/org/gnome/Shell",
                "org.freedesktop.DBus.Properties",
                "Set",
                "(ssv)",
                SHELL,
                "OverviewActive",
                self._session._glib.Variant("b", False),
            )

    # -- pixels ---------------------------------------------------------------------------------

    def geometry(self) -> ScreenGeometry:
        """mutter's logical monitors, in logical points (``scale`` pixels each)."""
        self._monitors = self._session.monitors()
        if not self._monitors:
            raise DisplayUnavailableError("GNOME Shell has no monitor to show")
        return ScreenGeometry(
            tuple(
                Monitor(
                    m.x, m.y, m.width, m.height, scale=m.scale, primary=m.primary, name=m.connector
                )
                for m in self._monitors
            )
        )

    def _grab(self, geometry: ScreenGeometry, monitor: Monitor | None) -> Screenshot:
        shown = geometry.monitors if monitor is None else (monitor,)
        scale = max(m.scale for m in shown)
        frames = {}
        for stream in self._session.streams:
            if any(m.name == stream.monitor.connector for m in shown):
                width, height, data = self._session.frame(stream)
                frames[stream.monitor.connector] = Image.frombytes(
                    "RGB", (width, height), data, "raw", "RGBX"
                )
        if monitor is not None:
            image = frames.get(monitor.name)
            if image is None:
                raise ActionExecutionError(f"no screencast of monitor {monitor.name}")
            return Screenshot(
                image=image,
                origin=Point(monitor.x, monitor.y),
                scale=scale,
                accessibility_boxes=False,  # AT-SPI puts every window at (0, 0) here
            )
        left, top, width, height = geometry.bounds
        whole = Image.new("RGB", (round(width * scale), round(height * scale)))
        for m in shown:
            part = frames.get(m.name)
            if part is None:
                continue
            size = (round(m.width * scale), round(m.height * scale))
            if part.size != size:
                part = part.resize(size)
            whole.paste(part, (round((m.x - left) * scale), round((m.y - top) * scale)))
        return Screenshot(
            image=whole, origin=Point(left, top), scale=scale, accessibility_boxes=False
        )

    # -- mouse ----------------------------------------------------------------------------------

    def pointer(self) -> Point:
        """Where this backend last put the pointer (Wayland lets no client ask)."""
        return self._pointer

    def _pointer_to(self, at: Point) -> None:
        monitor, stream = self._stream_at(at)
        self._session.session_call(
            "NotifyPointerMotionAbsolute",
            "(sdd)",
            stream,
            (at.x - monitor.x) * monitor.scale,
            (at.y - monitor.y) * monitor.scale,
        )
        self._pointer = at

    def _stream_at(self, at: Point) -> tuple[MutterMonitor, str]:
        for stream in self._session.streams:
            m = stream.monitor
            if m.x <= at.x < m.x + m.width and m.y <= at.y < m.y + m.height:
                return m, stream.path
        raise ActionExecutionError(f"no monitor of this session shows {at}")

    def _button(self, button: Button, down: bool) -> None:
        if down:
            # GTK4 takes a press only after a motion over it and a moment (its dialogs drop
            # a click that arrives with no motion first).
            self._pointer_to(self._pointer)
            time.sleep(PRESS_PAUSE)
        self._session.session_call("NotifyPointerButton", "(ib)", BUTTON_CODES[button], down)

    def _wheel(self, clicks: int, horizontal: bool) -> None:
        # As a press: wheel notches sent with the motion that brought the pointer over a
        # window reached it before the window knew the pointer was there, and were lost.
        self._pointer_to(self._pointer)
        time.sleep(PRESS_PAUSE)
        # The axis grows down and right: a notch up is negative.
        self._session.session_call(
            "NotifyPointerAxisDiscrete",
            "(ui)",
            1 if horizontal else 0,
            clicks if horizontal else -clicks,
        )

    def _sync(self) -> None:
        # Calls on one connection arrive in order; a round trip to mutter sees them handled.
        self._session.call(
            REMOTE_DESKTOP, self._session.session, "org.freedesktop.DBus.Peer", "Ping"
        )

    # -- keyboard -------------------------------------------------------------------------------

    def _key(self, sym: int, down: bool) -> None:
        self._session.session_call("NotifyKeyboardKeysym", "(ub)", sym, down)

    @contextlib.contextmanager
    def _holding(self, syms: Sequence[str]) -> Iterator[None]:
        values = [keysym_value(s) for s in syms]
        self._down = list(values)
        try:
            for value in values:
                self._key(value, True)
            yield
        finally:
            with lifecycle.deferred():  # a stop signal must not leave the keys down
                for value in reversed(values):
                    with contextlib.suppress(Exception):
                        self._key(value, False)
                self._down = []

    def _press(self, held: Sequence[str], pressed: Sequence[str]) -> None:
        shifted = any(h in _SHIFT for h in held)
        values = []
        for sym in pressed:
            # With Shift held a letter is its capital, as a keyboard gives it.
            name = sym.upper() if shifted and len(sym) == 1 and sym.isalpha() else sym
            values.append(keysym_value(name))
        with self._holding(held):
            for value in values:
                self._key(value, True)
                self._key(value, False)
        self._sync()

    def _type_line(self, line: str) -> None:
        """ASCII as keysyms; a run of other characters pasted (mutter drops keysyms with no
        key on its keymap)."""
        start = 0
        while start < len(line):
            typable = _typable(line[start])
            end = start
            while end < len(line) and _typable(line[end]) == typable:
                end += 1
            if typable:
                self._type_keys(line[start:end])
            else:
                self._paste(line[start:end])
            start = end

    def _type_keys(self, text: str) -> None:
        for char in text:
            value = keysym_value("Tab") if char == "\t" else _char_keysym(char)
            self._key(value, True)
            self._key(value, False)
            time.sleep(KEY_PAUSE)
        self._sync()

    def _paste(self, text: str) -> None:
        """Put ``text`` on the clipboard, paste it (Shift+Insert: GTK, Qt and terminals take
        it), then give the clipboard back what it held."""
        before = self.clipboard_get()
        self._session.offer(text)
        self._press(["Shift_L"], ["Insert"])
        time.sleep(PASTE_SETTLE)
        self._session.offer(before)

    # -- clipboard ------------------------------------------------------------------------------

    def _clipboard_readers(self) -> list[list[str]]:  # pragma: no cover - not used here
        return []

    def _clipboard_writer(self, text: str) -> list[str]:  # pragma: no cover - not used here
        return []

    def clipboard_get(self) -> str:
        """The clipboard's text, through the remote-desktop session's selection."""
        offered = self._session.offered()
        if offered is not None:
            return offered
        return self._session.read_selection()

    def clipboard_set(self, text: str) -> None:
        """Offer ``text`` on the clipboard (served while this backend lives)."""
        self._session.offer(text)

    # -- what this session allows (``agent-s doctor``) ------------------------------------------

    def capabilities(self) -> list[Capability]:
        """Each capability of this backend on this session, and what is missing where the
        session refuses it."""
        streams = ", ".join(s.monitor.connector for s in self._session.streams)
        found = [
            Capability("capture", True, f"mutter's ScreenCast, PipeWire streams of {streams}"),
            Capability(
                "input",
                True,
                "mutter's RemoteDesktop session: absolute pointer, buttons, wheel, keysyms",
            ),
            Capability(
                "text",
                self._session.clipboard,
                "ASCII as keysyms; other text pasted through the session's clipboard"
                if self._session.clipboard
                else "ASCII only: mutter refused the session's clipboard, so text with no key "
                "on the keymap (é, 日本) cannot be typed",
                "" if self._session.clipboard else "use GNOME 42 or newer",
            ),
            Capability(
                "clipboard",
                self._session.clipboard,
                "the RemoteDesktop session's selection"
                if self._session.clipboard
                else f"mutter refused the session's clipboard ({self._session.clipboard_error})",
                "" if self._session.clipboard else "use GNOME 42 or newer",
            ),
        ]
        listed = self.windows()
        if self.window_problem:
            found.append(
                Capability(
                    "windows",
                    False,
                    f"no window list: {self.window_problem}",
                    "apt-get install at-spi2-core (GNOME's accessibility bus); "
                    "org.gnome.Shell.Introspect answers only the shell's own callers",
                )
            )
        else:
            found.append(
                Capability(
                    "windows",
                    True,
                    f"{len(listed)} window(s) through AT-SPI (applications without an "
                    "accessibility tree are not listed; window positions are unknown on "
                    "GNOME Wayland); activated by the shell's Shift+Alt+Escape",
                )
            )
        opener = next(
            (t for t in ("xdg-open", "gio") if shutil.which(t, path=self.env.get("PATH"))), ""
        )
        found.append(
            Capability(
                "open",
                bool(opener),
                f"applications by desktop entry or PATH, files and URLs by {opener}"
                if opener
                else "applications by desktop entry or PATH; no xdg-open or gio for files",
                "" if opener else "apt-get install xdg-utils",
            )
        )
        return found

    # -- windows --------------------------------------------------------------------------------

    def windows(self) -> list[WindowInfo]:
        """The applications' windows from the accessibility tree, the active one first; their
        boxes are unknown on GNOME Wayland (0 by 0). None when there is no accessibility bus
        (``window_problem`` says why)."""
        try:
            found = self._windows.windows()
        except AccessibilityUnavailable as err:
            self.window_problem = f"{err}; screenshots, clicks, keys and text still work"
            return []
        self.window_problem = ""
        return found

    def _request_focus(self, window: WindowInfo) -> None:
        """Cycle the shell's windows (Shift+Alt+Escape) until ``window`` is the active one,
        going round them up to three times within ``ACTIVATE_TIMEOUT``: a window that opened
        just before may take the focus after a press has moved it (a loaded machine: the target
        was passed once round, and activating failed)."""
        if self.window_problem:
            raise ActionExecutionError(f"cannot list or activate windows: {self.window_problem}")
        listed = self.windows()
        give_up = time.monotonic() + ACTIVATE_TIMEOUT
        for _ in range(3 * len(listed)):
            if next((w.id for w in listed if w.active), 0) == window.id:
                return
            if time.monotonic() >= give_up:
                return  # _bring_forward says it was not activated
            before = next((w.id for w in listed if w.active), 0)
            self._press(*gnome_windows.CYCLE_KEYS)
            deadline = time.monotonic() + CYCLE_WAIT
            while time.monotonic() < deadline:  # until the shell moved on to another window
                listed = self.windows()
                now = next((w.id for w in listed if w.active), 0)
                if now == window.id:
                    time.sleep(CYCLE_SETTLE)
                    return
                if now not in (0, before):
                    break
                time.sleep(0.02)


__all__ = ["BUTTON_CODES", "Capability", "GnomeBackend", "keysym_value"]
