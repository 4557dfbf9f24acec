"""A minimal Wayland client in pure Python: a virtual pointer and keyboard, or KWin's fake input.

The Wayland wire protocol is small: each message is the object id (u32), then the message size
(high 16 bits) and opcode (low 16 bits), then 32-bit arguments (strings length-prefixed and
padded to 4 bytes; file descriptors travel beside the bytes, as SCM_RIGHTS). This module speaks
just enough of it for ``WaylandBackend``:

- ``zwlr_virtual_pointer_manager_v1`` (wlroots compositors: sway, river, labwc, Hyprland): one
  virtual pointer, which also gives the seat a pointer when the compositor has no real mouse
  (a headless sway has none, and then no application would receive a click);
- ``zwp_virtual_keyboard_manager_v1``: a keyboard with the default XKB keymap (a US layout),
  for shortcuts and keys held across calls (a click with Ctrl). Text goes through wtype, whose
  keymap holds exactly the text's characters; but applications look shortcuts up in their
  keymap, and GTK finds no Ctrl+A in a keymap made of one text's characters.

``FakeInputConnection`` speaks KWin's ``org_kde_kwin_fake_input`` (version 4) instead, for
``KdeBackend``: absolute motion, buttons, wheel axes and evdev key codes, on a connection KWin's
authorised helper made (``kde_access``); ``Keymap`` finds the codes in the default keymap.

Every request is followed by ``wl_display.sync`` before a call returns: once the callback is
done, the compositor has handled what came before, so input sent next (by wtype, on another
connection) cannot overtake it.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import select
import socket
import struct
import time
from collections.abc import Sequence
from pathlib import Path

from agent_s.errors import ActionExecutionError, DisplayUnavailableError

_DISPLAY_ID = 1
# linux/input-event-codes.h
BUTTON_CODES = {"left": 0x110, "right": 0x111, "middle": 0x112}
SHIFT_CODE = 42  # KEY_LEFTSHIFT
# evdev codes of modifier keys -> their modifier bits in the default XKB keymap
# (Shift, Control, Mod1 = Alt, Mod4 = Super, Mod5 = AltGr)
MODIFIER_MASKS = {42: 0x1, 54: 0x1, 29: 0x4, 97: 0x4, 56: 0x8, 125: 0x40, 126: 0x40, 100: 0x80}
_UNUSED_MOD = 0x20  # Mod3: no key of the default keymap sets it
WHEEL_STEP = 15.0  # what one wheel notch scrolls, in the axis's units (libinput's convention)
_ROUNDTRIP_TIMEOUT = 5.0


def socket_path(env: dict[str, str]) -> Path:
    """The compositor's socket: WAYLAND_DISPLAY, absolute or under XDG_RUNTIME_DIR."""
    name = env.get("WAYLAND_DISPLAY", "")
    if not name:
        raise DisplayUnavailableError("WAYLAND_DISPLAY is not set: no Wayland compositor to use")
    if os.path.isabs(name):
        return Path(name)
    runtime = env.get("XDG_RUNTIME_DIR", "")
    if not runtime:
        raise DisplayUnavailableError(
            "XDG_RUNTIME_DIR is not set, so the Wayland socket "
            f"{name!r} cannot be found; set it to the session's runtime folder"
        )
    return Path(runtime) / name


def _string(text: str) -> bytes:
    data = text.encode("utf-8") + b"\0"
    padded = data + b"\0" * (-len(data) % 4)
    return struct.pack("=I", len(data)) + padded


def _fixed(value: float) -> int:
    return int(round(value * 256))


def _now_ms() -> int:
    return int(time.monotonic() * 1000) & 0xFFFFFFFF


class WaylandConnection:
    """One connection to a compositor, with a virtual pointer and a virtual keyboard.

    ``sock``: a connection made already (by KWin's authorised helper), else one is made to
    the compositor ``env`` names."""

    #: what the compositor must offer, named when it does not
    needs = "agent-s drives wlroots compositors such as sway"

    def __init__(self, env: dict[str, str], sock: socket.socket | None = None) -> None:
        if sock is None:
            path = socket_path(env)
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.connect(str(path))
            except OSError as err:
                sock.close()
                raise DisplayUnavailableError(
                    f"cannot reach the Wayland compositor at {path}: {err}. Is it running, and "
                    "are WAYLAND_DISPLAY and XDG_RUNTIME_DIR right?"
                ) from err
        self._sock = sock
        self._next_id = 2
        self._buffer = b""
        self._globals: dict[str, tuple[int, int]] = {}
        self._held: set[int] = set()  # modifier keys down on our keyboard
        self._done: set[int] = set()
        self._registry = self._new_id()
        self._send(_DISPLAY_ID, 1, struct.pack("=I", self._registry))  # get_registry
        self.roundtrip()
        self.keymap = Keymap()
        self._make_devices()
        self.roundtrip()

    def _make_devices(self) -> None:
        self.pointer = self._make_pointer()
        self.keyboard = self._make_keyboard()

    # -- the wire -----------------------------------------------------------------------------

    def _new_id(self) -> int:
        new = self._next_id
        self._next_id += 1
        return new

    def _send(
        self, target: int, opcode: int, payload: bytes = b"", fds: Sequence[int] = ()
    ) -> None:
        header = struct.pack("=II", target, ((8 + len(payload)) << 16) | opcode)
        data = header + payload
        try:
            if fds:
                ancillary = [
                    (socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack(f"={len(fds)}i", *fds))
                ]
                self._sock.sendmsg([data], ancillary)
            else:
                self._sock.sendall(data)
        except OSError as err:
            raise DisplayUnavailableError(f"the Wayland compositor went away: {err}") from err

    def roundtrip(self, timeout: float = _ROUNDTRIP_TIMEOUT) -> None:
        """Wait until the compositor has handled every request sent so far."""
        callback = self._new_id()
        self._send(_DISPLAY_ID, 0, struct.pack("=I", callback))  # sync
        deadline = time.monotonic() + timeout
        while callback not in self._done:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ActionExecutionError(f"the Wayland compositor did not answer in {timeout} s")
            ready, _, _ = select.select([self._sock], [], [], remaining)
            if not ready:
                continue
            try:
                chunk = self._sock.recv(65536)
            except OSError as err:
                raise DisplayUnavailableError(f"the Wayland compositor went away: {err}") from err
            if not chunk:
                raise DisplayUnavailableError("the Wayland compositor closed the connection")
            self._buffer += chunk
            self._dispatch()
        self._done.discard(callback)

    def _dispatch(self) -> None:
        while len(self._buffer) >= 8:
            target, word = struct.unpack_from("=II", self._buffer)
            size, opcode = word >> 16, word & 0xFFFF
            if size < 8 or len(self._buffer) < size:
                return
            body = self._buffer[8:size]
            self._buffer = self._buffer[size:]
            if target == _DISPLAY_ID and opcode == 0:  # error(object, code, message)
                _obj, code, length = struct.unpack_from("=III", body)
                message = body[12 : 12 + length - 1].decode("utf-8", "replace")
                raise ActionExecutionError(f"the Wayland compositor refused a request: {message}")
            if target == self._registry and opcode == 0:  # global(name, interface, version)
                name, length = struct.unpack_from("=II", body)
                interface = body[8 : 8 + length - 1].decode("utf-8", "replace")
                offset = 8 + length + (-length % 4)
                (version,) = struct.unpack_from("=I", body, offset)
                self._globals.setdefault(interface, (name, version))
            elif opcode == 0 and target not in (_DISPLAY_ID, self._registry):
                self._done.add(target)  # wl_callback.done (no other object of ours has events)

    def _bind(self, interface: str, version: int) -> int:
        if interface not in self._globals:
            raise ActionExecutionError(
                f"this Wayland compositor does not offer {interface}; {self.needs}"
            )
        name, offered = self._globals[interface]
        new = self._new_id()
        payload = struct.pack("=I", name) + _string(interface)
        payload += struct.pack("=II", min(version, offered), new)
        self._send(self._registry, 0, payload)
        return new

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.close()

    def fileno(self) -> int:
        return self._sock.fileno()

    # -- the devices --------------------------------------------------------------------------

    def _make_pointer(self) -> int:
        manager = self._bind("zwlr_virtual_pointer_manager_v1", 1)
        pointer = self._new_id()
        self._send(manager, 0, struct.pack("=II", 0, pointer))  # create_virtual_pointer(null)
        return pointer

    def _make_keyboard(self) -> int:
        seat = self._bind("wl_seat", 1)
        manager = self._bind("zwp_virtual_keyboard_manager_v1", 1)
        keyboard = self._new_id()
        self._send(manager, 0, struct.pack("=II", seat, keyboard))  # create_virtual_keyboard
        keymap = self.keymap.text
        fd = os.memfd_create("agent-s-keymap", os.MFD_CLOEXEC)
        try:
            os.write(fd, keymap)
            # keymap(format xkb_v1, fd, size)
            self._send(keyboard, 0, struct.pack("=II", 1, len(keymap)), fds=[fd])
        finally:
            os.close(fd)
        return keyboard

    def move(self, x: int, y: int, extent: tuple[int, int, int, int]) -> None:
        """Put the pointer at layout point (x, y); ``extent``: the layout's (left, top, w, h)."""
        left, top, width, height = extent
        payload = struct.pack("=IIIII", _now_ms(), x - left, y - top, width, height)
        self._send(self.pointer, 1, payload)  # motion_absolute
        self._send(self.pointer, 4)  # frame

    def refresh_modifiers(self) -> None:
        """Make applications see this keyboard's modifier state now. After another keyboard
        (wtype's, a killed agent's) went away, the focused application keeps the modifiers it
        last heard of, and a click would carry a Ctrl nobody holds; the compositor passes on
        only changes, so the state is sent with an unused modifier (Mod3) and then as it is."""
        mask = 0
        for held in self._held:
            mask |= MODIFIER_MASKS[held]
        self._send(self.keyboard, 2, struct.pack("=IIII", mask | _UNUSED_MOD, 0, 0, 0))
        self._send(self.keyboard, 2, struct.pack("=IIII", mask, 0, 0, 0))

    def button(self, code: int, pressed: bool) -> None:
        self._send(self.pointer, 2, struct.pack("=III", _now_ms(), code, 1 if pressed else 0))
        self._send(self.pointer, 4)

    def wheel(self, notches: int, horizontal: bool) -> None:
        """``notches`` wheel steps: positive is down, or right when ``horizontal``."""
        axis = 1 if horizontal else 0
        step = 1 if notches > 0 else -1
        for _ in range(abs(notches)):
            self._send(self.pointer, 5, struct.pack("=I", 0))  # axis_source(wheel)
            payload = struct.pack("=IIii", _now_ms(), axis, _fixed(step * WHEEL_STEP), step)
            self._send(self.pointer, 7, payload)  # axis_discrete
            self._send(self.pointer, 4)

    def key(self, code: int, pressed: bool) -> None:
        """Press or release the key with evdev code ``code`` on this keyboard. A virtual
        keyboard states its modifiers itself (wlroots does not work them out from the keys):
        pressing a modifier key also sends the new modifier state."""
        if code in MODIFIER_MASKS:
            if pressed:
                self._held.add(code)
            else:
                self._held.discard(code)
            mask = 0
            for held in self._held:
                mask |= MODIFIER_MASKS[held]
            if pressed:  # the key, then the state it makes (and the reverse on release)
                self._send(self.keyboard, 1, struct.pack("=III", _now_ms(), code, 1))
                self._send(self.keyboard, 2, struct.pack("=IIII", mask, 0, 0, 0))
            else:
                self._send(self.keyboard, 2, struct.pack("=IIII", mask, 0, 0, 0))
                self._send(self.keyboard, 1, struct.pack("=III", _now_ms(), code, 0))
            return
        self._send(self.keyboard, 1, struct.pack("=III", _now_ms(), code, 1 if pressed else 0))


class FakeInputConnection(WaylandConnection):
    """A connection to KWin speaking its fake-input protocol (``org_kde_kwin_fake_input``,
    version 4: absolute motion and evdev key codes), which KWin offers only to an authorised
    client. KWin works out the modifiers from the keys, with its own keymap (US by default:
    ``keymap`` is the default one, to find a key's code)."""

    needs = "KWin offers it only to an authorised program (agent-s setup kde installs the entry)"

    def _make_devices(self) -> None:
        self.fake = self._bind("org_kde_kwin_fake_input", 4)
        name, version = self._globals["org_kde_kwin_fake_input"]
        if version < 4:
            raise ActionExecutionError(
                f"KWin offers fake input version {version}; agent-s needs 4 (KWin 5.23 or newer)"
            )
        # authenticate(application, reason): KWin grants it to an authorised client
        self._send(self.fake, 0, _string("agent-s") + _string("desktop automation"))

    def move(self, x: int, y: int, extent: tuple[int, int, int, int]) -> None:
        """Put the pointer at the global point (x, y) (``extent`` unused: KWin's coordinates
        are the layout's own)."""
        self._send(self.fake, 9, struct.pack("=ii", _fixed(x), _fixed(y)))

    def button(self, code: int, pressed: bool) -> None:
        self._send(self.fake, 2, struct.pack("=II", code, 1 if pressed else 0))

    def wheel(self, notches: int, horizontal: bool) -> None:
        """``notches`` wheel steps: positive is down, or right when ``horizontal``."""
        step = 1 if notches > 0 else -1
        for _ in range(abs(notches)):
            self._send(
                self.fake, 3, struct.pack("=Ii", 1 if horizontal else 0, _fixed(step * WHEEL_STEP))
            )

    def key(self, code: int, pressed: bool) -> None:
        self._send(self.fake, 10, struct.pack("=II", code, 1 if pressed else 0))

    def refresh_modifiers(self) -> None:
        """KWin keeps one keyboard state for every device: nothing to refresh."""


class Keymap:
    """The default XKB keymap (libxkbcommon's, the one every Wayland compositor starts with):
    its text, to upload, and which key gives which keysym."""

    def __init__(self) -> None:
        name = ctypes.util.find_library("xkbcommon")
        if name is None:
            raise ActionExecutionError("libxkbcommon is missing (apt-get install libxkbcommon0)")
        lib = ctypes.CDLL(name)
        lib.xkb_context_new.restype = ctypes.c_void_p
        lib.xkb_context_new.argtypes = [ctypes.c_int]
        lib.xkb_keymap_new_from_names.restype = ctypes.c_void_p
        lib.xkb_keymap_new_from_names.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int]
        lib.xkb_keymap_get_as_string.restype = ctypes.c_void_p
        lib.xkb_keymap_get_as_string.argtypes = [ctypes.c_void_p, ctypes.c_int]
        lib.xkb_keymap_unref.argtypes = [ctypes.c_void_p]
        lib.xkb_context_unref.argtypes = [ctypes.c_void_p]
        lib.xkb_keymap_min_keycode.restype = ctypes.c_uint32
        lib.xkb_keymap_min_keycode.argtypes = [ctypes.c_void_p]
        lib.xkb_keymap_max_keycode.restype = ctypes.c_uint32
        lib.xkb_keymap_max_keycode.argtypes = [ctypes.c_void_p]
        lib.xkb_keymap_num_levels_for_key.restype = ctypes.c_uint32
        lib.xkb_keymap_num_levels_for_key.argtypes = [
            ctypes.c_void_p,
            ctypes.c_uint32,
            ctypes.c_uint32,
        ]
        lib.xkb_keymap_key_get_syms_by_level.restype = ctypes.c_int
        lib.xkb_keymap_key_get_syms_by_level.argtypes = [
            ctypes.c_void_p,
            ctypes.c_uint32,
            ctypes.c_uint32,
            ctypes.c_uint32,
            ctypes.POINTER(ctypes.POINTER(ctypes.c_uint32)),
        ]
        lib.xkb_keysym_from_name.restype = ctypes.c_uint32
        lib.xkb_keysym_from_name.argtypes = [ctypes.c_char_p, ctypes.c_int]
        libc = ctypes.CDLL(None)
        libc.free.argtypes = [ctypes.c_void_p]
        context = lib.xkb_context_new(0)
        if not context:
            raise ActionExecutionError("libxkbcommon could not make a context")
        self._lib = lib
        self._keys: dict[int, tuple[int, int]] = {}  # keysym -> (evdev code, level)
        try:
            keymap = lib.xkb_keymap_new_from_names(context, None, 0)
            if not keymap:
                raise ActionExecutionError("libxkbcommon has no default keymap (xkb-data missing?)")
            try:
                text = lib.xkb_keymap_get_as_string(keymap, 1)  # XKB_KEYMAP_FORMAT_TEXT_V1
                try:
                    self.text = ctypes.string_at(text) + b"\0"
                finally:
                    libc.free(text)
                self._index(keymap)
            finally:
                lib.xkb_keymap_unref(keymap)
        finally:
            lib.xkb_context_unref(context)

    def _index(self, keymap: int) -> None:
        lib = self._lib
        syms = ctypes.POINTER(ctypes.c_uint32)()
        for code in range(
            lib.xkb_keymap_min_keycode(keymap), lib.xkb_keymap_max_keycode(keymap) + 1
        ):
            for level in range(min(2, lib.xkb_keymap_num_levels_for_key(keymap, code, 0))):
                count = lib.xkb_keymap_key_get_syms_by_level(
                    keymap, code, 0, level, ctypes.byref(syms)
                )
                for i in range(count):
                    found = self._keys.get(syms[i])
                    if found is None or (level, code) < (found[1], found[0] + 8):
                        self._keys[syms[i]] = (code - 8, level)  # evdev codes are XKB's - 8

    def codes_to_hold(self, keysyms: Sequence[str]) -> list[int]:
        """The evdev codes to press, in order, to hold ``keysyms`` (Shift first for a key on
        its shifted level); ``ValueError`` for a keysym on no key."""
        codes: list[int] = []
        for sym in keysyms:
            found = self.lookup(sym)
            if found is None:
                raise ValueError(f"the key {sym!r} is not on the keyboard and cannot be held")
            code, level = found
            if level and SHIFT_CODE not in codes:
                codes.append(SHIFT_CODE)
            if code not in codes:
                codes.append(code)
        return codes

    def of_char(self, char: str) -> tuple[int, int] | None:
        """(evdev key code, shift level) of the key typing ``char``, or None when no key of
        this keymap does (keysyms of Latin-1 characters are their code points, the others'
        0x01000000 more)."""
        point = ord(char)
        if char == "\t":
            value = 0xFF09
        elif 0x20 <= point <= 0x7E or 0xA0 <= point <= 0xFF:
            value = point
        else:
            value = 0x0100_0000 + point
        return self._keys.get(value)

    def lookup(self, keysym: str) -> tuple[int, int] | None:
        """(evdev key code, shift level 0 or 1) of the key giving ``keysym``, or None."""
        value = self._lib.xkb_keysym_from_name(keysym.encode("utf-8"), 0)
        return self._keys.get(value) if value else None
