"""X protocol pieces for the X11 backend, on python-xlib: monitors, windows, the keyboard map.

- ``randr_monitors``: RandR 1.5 monitors. The GetMonitors request is defined here because the
  python3-xlib release that pyautogui depends on lacks it; a python-xlib that has it is used.
- ``read_windows`` / ``request_active``: the EWMH window list and activation (a window manager
  that speaks EWMH must run, as openbox does).
- ``WindowManagerSync``: wait until the window manager has caught up, so a click is not
  overtaken by the keys typed after it.
- ``KeyBinder``: keycodes of their own for the characters a text needs and the keyboard map
  lacks, so ``xdotool type`` never rebinds a key while an application still reads it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import Any

import Xlib.display
import Xlib.error
import Xlib.X
from Xlib.protocol import event as xevent
from Xlib.protocol import rq

from agent_s.desktop.base import Monitor, WindowInfo

# -- RandR 1.5 monitors ---------------------------------------------------------------------------


class _QueryVersion(rq.ReplyRequest):
    _request = rq.Struct(
        rq.Card8("opcode"),
        rq.Opcode(0),
        rq.RequestLength(),
        rq.Card32("major_version"),
        rq.Card32("minor_version"),
    )
    _reply = rq.Struct(
        rq.ReplyCode(),
        rq.Pad(1),
        rq.Card16("sequence_number"),
        rq.ReplyLength(),
        rq.Card32("major_version"),
        rq.Card32("minor_version"),
        rq.Pad(16),
    )


_MonitorInfo = rq.Struct(
    rq.Card32("name"),
    rq.Bool("primary"),
    rq.Bool("automatic"),
    rq.LengthOf("crtcs", 2),
    rq.Int16("x"),
    rq.Int16("y"),
    rq.Card16("width_in_pixels"),
    rq.Card16("height_in_pixels"),
    rq.Card32("width_in_millimeters"),
    rq.Card32("height_in_millimeters"),
    rq.List("crtcs", rq.Card32Obj),
)


class _GetMonitors(rq.ReplyRequest):
    _request = rq.Struct(
        rq.Card8("opcode"),
        rq.Opcode(42),
        rq.RequestLength(),
        rq.Window("window"),
        rq.Bool("is_active"),
        rq.Pad(3),
    )
    _reply = rq.Struct(
        rq.ReplyCode(),
        rq.Pad(1),
        rq.Card16("sequence_number"),
        rq.ReplyLength(),
        rq.Card32("timestamp"),
        rq.LengthOf("monitors", 4),
        rq.Card32("outputs"),
        rq.Pad(12),
        rq.List("monitors", _MonitorInfo),
    )


def randr_monitors(x: Xlib.display.Display) -> list[Monitor]:
    """The server's RandR 1.5 monitors, primary first; ``[]`` without RandR 1.5."""
    if not x.has_extension("RANDR"):
        return []
    opcode = x.display.get_extension_major("RANDR")
    version = _QueryVersion(display=x.display, opcode=opcode, major_version=1, minor_version=5)
    if (version.major_version, version.minor_version) < (1, 5):
        return []
    root = x.screen().root
    native = getattr(root, "xrandr_get_monitors", None)
    if native is not None:
        reply = native(is_active=True)
    else:
        reply = _GetMonitors(display=x.display, opcode=opcode, window=root, is_active=True)
    monitors = [
        Monitor(
            m.x,
            m.y,
            m.width_in_pixels,
            m.height_in_pixels,
            primary=bool(m.primary),
            name=x.get_atom_name(m.name) if m.name else "",
        )
        for m in reply.monitors
        if m.width_in_pixels and m.height_in_pixels
    ]
    return sorted(monitors, key=lambda m: (not m.primary, m.x, m.y))


class _SetMonitor(rq.Request):
    _request = rq.Struct(
        rq.Card8("opcode"),
        rq.Opcode(43),
        rq.RequestLength(),
        rq.Window("window"),
        # a MONITORINFO, inline
        rq.Card32("name"),
        rq.Bool("primary"),
        rq.Bool("automatic"),
        rq.LengthOf("outputs", 2),
        rq.Int16("x"),
        rq.Int16("y"),
        rq.Card16("width_in_pixels"),
        rq.Card16("height_in_pixels"),
        rq.Card32("width_in_millimeters"),
        rq.Card32("height_in_millimeters"),
        rq.List("outputs", rq.Card32Obj),
    )


def set_randr_monitors(x: Xlib.display.Display, monitors: Sequence[Monitor]) -> None:
    """Define RandR 1.5 monitors (what ``xrandr --setmonitor`` does), so that one X screen
    shows as several monitors to clients (RandR, and Xinerama, which the X server answers
    from the same list: window managers place and maximise windows on them).

    The first monitor takes over the screen's first output (which replaces the server's
    automatic monitor for it) and is primary unless another is marked so; the others have no
    output. Monitors are named by ``Monitor.name`` (``monitor-N`` when empty).
    """
    if not monitors:
        raise ValueError("no monitors to set")
    if not x.has_extension("RANDR"):
        raise ValueError("the X server has no RandR extension")
    opcode = x.display.get_extension_major("RANDR")
    version = _QueryVersion(display=x.display, opcode=opcode, major_version=1, minor_version=5)
    if (version.major_version, version.minor_version) < (1, 5):
        raise ValueError(
            f"the X server's RandR is {version.major_version}.{version.minor_version}; "
            "monitors need 1.5"
        )
    root = x.screen().root
    outputs = list(root.xrandr_get_screen_resources().outputs)
    primary = next((i for i, m in enumerate(monitors) if m.primary), 0)
    for index, m in enumerate(monitors):
        # physical size at 96 dpi, so toolkits that read it see an ordinary screen
        _SetMonitor(
            display=x.display,
            opcode=opcode,
            window=root,
            name=x.intern_atom(m.name or f"monitor-{index}"),
            primary=index == primary,
            automatic=False,
            x=m.x,
            y=m.y,
            width_in_pixels=m.width,
            height_in_pixels=m.height,
            width_in_millimeters=round(m.width * 25.4 / 96),
            height_in_millimeters=round(m.height * 25.4 / 96),
            outputs=outputs[:1] if index == 0 else [],
        )
    x.sync()


# -- EWMH windows ---------------------------------------------------------------------------------


def _cardinals(x: Xlib.display.Display, window: Any, name: str) -> list[int]:
    prop = window.get_full_property(x.get_atom(name), Xlib.X.AnyPropertyType)
    return [int(v) for v in prop.value] if prop is not None and prop.format == 32 else []


def _text(x: Xlib.display.Display, window: Any, name: str) -> str:
    prop = window.get_full_property(x.get_atom(name), Xlib.X.AnyPropertyType)
    if prop is None or prop.format != 8:
        return ""
    value = prop.value
    if isinstance(value, str):
        return value
    # _NET_WM_NAME is UTF-8; WM_NAME is Latin-1 or compound text, close enough for names.
    return bytes(value).decode("utf-8", "replace")


def window_order(x: Xlib.display.Display) -> tuple[int, tuple[int, ...]]:
    """The active window's id (0: none) and the top-level window ids, front-most first: two
    round trips (``read_windows`` takes several per window)."""
    root = x.screen().root
    stacking = _cardinals(x, root, "_NET_CLIENT_LIST_STACKING")  # bottom to top
    ids = tuple(reversed(stacking)) if stacking else tuple(_cardinals(x, root, "_NET_CLIENT_LIST"))
    return next(iter(_cardinals(x, root, "_NET_ACTIVE_WINDOW")), 0), ids


def read_windows(x: Xlib.display.Display) -> list[WindowInfo]:
    """Top-level application windows, front-most first, with their client area on screen."""
    root = x.screen().root
    active, ids = window_order(x)
    found = []
    for wid in ids:
        window = x.create_resource_object("window", wid)
        try:
            title = _text(x, window, "_NET_WM_NAME") or _text(x, window, "WM_NAME")
            wm_class = window.get_wm_class() or ("", "")
            pid = next(iter(_cardinals(x, window, "_NET_WM_PID")), None)
            size = window.get_geometry()
            origin = root.translate_coords(window, 0, 0)
        except Xlib.error.XError:
            continue  # it closed while we looked
        found.append(
            WindowInfo(
                id=wid,
                title=title,
                app=wm_class[1] or wm_class[0],
                pid=pid,
                x=origin.x,
                y=origin.y,
                width=size.width,
                height=size.height,
                active=wid == active,
            )
        )
    return found


def request_active(x: Xlib.display.Display, window_id: int) -> None:
    """Ask the window manager to activate a window (raise, focus, un-minimise)."""
    message = xevent.ClientMessage(
        window=x.create_resource_object("window", window_id),
        client_type=x.get_atom("_NET_ACTIVE_WINDOW"),
        data=(32, [2, Xlib.X.CurrentTime, 0, 0, 0]),  # 2: asked for by a pager or user tool
    )
    mask = Xlib.X.SubstructureRedirectMask | Xlib.X.SubstructureNotifyMask
    x.screen().root.send_event(message, event_mask=mask)
    x.flush()


class WindowManagerSync:
    """Waits until the window manager has handled every event that reached it before.

    The window manager holds the pointer at each button press on a window (to focus and raise
    it) until it has handled the press; key events meanwhile go straight to the application.
    So when the window manager lags (it regrabs its shortcut keys after every keyboard map
    change, for one), keys typed after a click can reach the application BEFORE the click.
    ``wait()`` sends the window manager a request it answers in turn (an EWMH frame-extents
    request for a window of our own) and waits for the answer. Without a window manager that
    supports the request, it returns at once.
    """

    def __init__(self, x: Xlib.display.Display, timeout: float = 2.0) -> None:
        self._x = x
        self._timeout = timeout
        self._window: Any = None
        self._supported: bool | None = None

    def _usable(self) -> bool:
        if self._supported is None:
            root = self._x.screen().root
            wanted = self._x.get_atom("_NET_REQUEST_FRAME_EXTENTS")
            self._supported = bool(_cardinals(self._x, root, "_NET_SUPPORTING_WM_CHECK")) and (
                wanted in _cardinals(self._x, root, "_NET_SUPPORTED")
            )
        return self._supported

    def wait(self) -> bool:
        """True once the window manager has answered; False without one (or on time-out)."""
        if not self._usable():
            return False
        x = self._x
        root = x.screen().root
        if self._window is None:
            self._window = root.create_window(-10, -10, 1, 1, 0, x.screen().root_depth)
        extents = x.get_atom("_NET_FRAME_EXTENTS")
        self._window.delete_property(extents)
        message = xevent.ClientMessage(
            window=self._window,
            client_type=x.get_atom("_NET_REQUEST_FRAME_EXTENTS"),
            data=(32, [0, 0, 0, 0, 0]),
        )
        mask = Xlib.X.SubstructureRedirectMask | Xlib.X.SubstructureNotifyMask
        root.send_event(message, event_mask=mask)
        x.flush()
        deadline = time.monotonic() + self._timeout
        while self._window.get_full_property(extents, Xlib.X.AnyPropertyType) is None:
            if time.monotonic() > deadline:
                self._supported = False  # it does not answer: stop asking
                return False
            time.sleep(0.001)
        return True


# -- keyboard map ---------------------------------------------------------------------------------


def char_keysym(char: str) -> int:
    """The X keysym that types ``char``: Latin-1 keysyms are the code point, others Unicode."""
    code = ord(char)
    if char == "\t":
        return 0xFF09  # Tab
    return code if 0x20 <= code <= 0x7E or 0xA0 <= code <= 0xFF else 0x1000000 | code


def is_spare_binding(syms: tuple[int, ...]) -> bool:
    """A keycode row as ``KeyBinder`` (and rendered code) binds one: one character in every
    column, a character no keyboard key has as its only symbol (Latin-1 above ASCII, or a
    Unicode keysym)."""
    if len(syms) < 2 or syms[0] != syms[1] or set(syms) - {0} != {syms[0]}:
        return False
    return 0xA0 <= syms[0] <= 0xFF or 0x1000100 <= syms[0] <= 0x110FFFF


class KeyBinder:
    """Binds characters the keyboard map lacks to spare keycodes, one keycode each.

    Left to itself, ``xdotool type`` rebinds one scratch keycode for every such character, and
    an application that reads the keyboard map a moment late decodes an earlier key press with
    a later binding: wrong, doubled or lost characters. Bindings made here stay (a later text
    reuses them; ``release()`` removes them); the least recently used one is rebound when no
    keycode is free, after a pause that lets applications finish with it. The live keyboard
    map is the truth, not this object's memory: another client on the display (a second
    backend, rendered pyautogui code, another agent) may rebind or free a keycode bound here,
    or leave bindings behind; a keycode that holds a character of the text being typed is
    never taken.
    """

    def __init__(self, x: Xlib.display.Display, wm: WindowManagerSync) -> None:
        self._x = x
        self._wm = wm
        self._bound: dict[str, int] = {}  # character -> keycode, least recently used first

    def _keymap(self) -> tuple[int, list[tuple[int, ...]]]:
        """The live keyboard map, after forgetting bindings another client changed."""
        first = self._x.display.info.min_keycode
        count = self._x.display.info.max_keycode - first + 1
        keymap = [tuple(syms) for syms in self._x.get_keyboard_mapping(first, count)]
        for char, code in list(self._bound.items()):
            syms = keymap[code - first]
            if set(syms) - {0} != {char_keysym(char)}:
                del self._bound[char]
        return first, keymap

    def _left_behind(self, first: int, keymap: list[tuple[int, ...]]) -> list[int]:
        """Keycodes holding a character bound the way this class binds, by another client:
        most often one that ended without giving them back (a killed agent; rendered code,
        whose bindings stay). Taken after the free ones and ours, or the map fills up."""
        ours = set(self._bound.values())
        return [
            first + i
            for i, syms in enumerate(keymap)
            if first + i not in ours and is_spare_binding(syms)
        ]

    def capacity(self) -> int:
        """How many characters can be bound at once: unused keycodes, ours, and bindings
        other clients left behind."""
        first, keymap = self._keymap()
        free = sum(1 for syms in keymap if not any(syms))
        return free + len(self._bound) + len(self._left_behind(first, keymap))

    def bind(self, chars: set[str]) -> set[str]:
        """Make every one of ``chars`` typable without touching the keyboard map while typing;
        return those that found no keycode (none free and none of ours left to rebind)."""
        first, keymap = self._keymap()
        holder: dict[int, int] = {}  # keysym -> the first keycode that types it
        for index, syms in enumerate(keymap):
            for sym in syms:
                if sym:
                    holder.setdefault(sym, first + index)
        for char in chars & self._bound.keys():  # mark as recently used
            self._bound[char] = self._bound.pop(char)
        missing = sorted(c for c in chars if char_keysym(c) not in holder)
        if not missing:
            return set()
        needed = {holder[char_keysym(c)] for c in chars if char_keysym(c) in holder}
        free = [first + i for i, syms in enumerate(keymap) if not any(syms)]
        reusable = [
            code
            for code in [*self._bound.values(), *self._left_behind(first, keymap)]
            if code not in needed
        ]
        if len(free) < len(missing) and reusable:
            time.sleep(0.2)
        owner = {code: char for char, code in self._bound.items()}
        changes: dict[int, int] = {}
        for char, code in zip(missing, free + reusable, strict=False):
            self._bound.pop(owner.get(code, ""), None)
            self._bound[char] = code
            changes[code] = char_keysym(char)
        self._write(first, keymap, changes)
        return set(missing[len(changes) :])

    def release(self) -> None:
        """Give the bound keycodes back (unbound, as they were)."""
        if not self._bound:
            return
        first, keymap = self._keymap()
        self._write(first, keymap, dict.fromkeys(self._bound.values(), 0))
        self._bound.clear()

    def _write(self, first: int, keymap: list[tuple[int, ...]], changes: dict[int, int]) -> None:
        """Rebind keycodes in ONE request: each change makes every client (the window
        manager too, which then grabs its shortcut keys again) reread the keyboard map."""
        if not changes:
            return
        low, high = min(changes), max(changes)
        width = len(keymap[0])
        rows = [
            (changes[code],) * width if code in changes else keymap[code - first]
            for code in range(low, high + 1)
        ]
        self._x.change_keyboard_mapping(low, rows)
        self._x.sync()
        self._wm.wait()  # the window manager reloads its key grabs; let it finish first


def chunks(line: str, size: int, budget: int) -> Iterator[str]:
    """Pieces of ``line`` of at most ``size`` characters and at most ``budget`` distinct
    non-ASCII ones (each may need a keycode of its own while its piece is typed)."""
    chunk: list[str] = []
    unusual: set[str] = set()
    for char in line:
        new = not char.isascii() and char not in unusual
        if len(chunk) >= size or (new and budget and len(unusual) >= budget):
            yield "".join(chunk)
            chunk, unusual = [], set()
        if not char.isascii():
            unusual.add(char)
        chunk.append(char)
    if chunk:
        yield "".join(chunk)
