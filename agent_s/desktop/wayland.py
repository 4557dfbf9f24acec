"""The Wayland desktop backend for wlroots compositors (sway): grim, wtype, a virtual pointer.

X11 tools see nothing of a Wayland session, and Wayland lets no client read the screen or
send input through the core protocol, so this backend uses what wlroots compositors offer:

- pixels: ``grim`` (the screencopy protocol), as PPM on a pipe;
- text: ``wtype`` (the virtual-keyboard protocol; it builds a keymap holding every character
  of the text, so ``<`` and non-ASCII text arrive as typed);
- shortcuts and held keys: a virtual keyboard of our own with the default (US) keymap, as a
  person's keyboard sends them (GTK finds no Ctrl+A in a keymap made of one text's
  characters, so wtype's shortcuts do nothing there); wtype only for keysyms not on it;
- pointer: a virtual pointer of our own (``_wlwire``: the wlr virtual-pointer protocol, spoken
  directly), which also gives a headless compositor's seat the pointer it otherwise lacks;
- monitors, windows and focus: sway's IPC socket (``SWAYSOCK``), in its JSON;
- clipboard: ``wl-copy`` / ``wl-paste`` (wl-clipboard).

Wayland does not let a client read where the pointer is: ``pointer()`` answers where this
backend last put it (the middle of the screen before its first move). Subprocesses take argv
lists; typed text goes to wtype on stdin. These are the Wayland primitives; the actions built
on them are ``common.BackendBase``'s.
"""

from __future__ import annotations

import contextlib
import io
import json
import socket
import struct
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from PIL import Image

from agent_s import lifecycle
from agent_s.desktop._wlwire import BUTTON_CODES, WaylandConnection
from agent_s.desktop.base import Monitor, ScreenGeometry, Screenshot, WindowInfo
from agent_s.desktop.common import BackendBase
from agent_s.desktop.ops import Button, Point
from agent_s.errors import ActionExecutionError, DesktopSetupError, DisplayUnavailableError

TYPE_DELAY_MS = 2  # between typed characters
#: program -> Debian package
REQUIRED_TOOLS = {"grim": "grim", "wtype": "wtype", "wl-copy": "wl-clipboard"}
# X keysyms of modifiers -> wtype's modifier names, and our modifier masks' names
_WTYPE_MODIFIERS = {
    "Shift_L": "shift",
    "Shift_R": "shift",
    "Control_L": "ctrl",
    "Control_R": "ctrl",
    "Alt_L": "alt",
    "Alt_R": "alt",
    "Meta_L": "alt",
    "Meta_R": "alt",
    "Super_L": "logo",
    "Super_R": "logo",
    "ISO_Level3_Shift": "altgr",
    "Caps_Lock": "capslock",
}
_SHIFT = 42  # evdev KEY_LEFTSHIFT

_IPC_MAGIC = b"i3-ipc"
_IPC_COMMAND, _IPC_OUTPUTS, _IPC_TREE, _IPC_VERSION, _IPC_INPUTS = 0, 3, 4, 7, 100


def find_sway_socket(env: Mapping[str, str]) -> Path | None:
    """sway's IPC socket: ``SWAYSOCK``, else the only ``sway-ipc.*.sock`` in the runtime dir."""
    named = env.get("SWAYSOCK")
    if named:
        return Path(named)
    runtime = env.get("XDG_RUNTIME_DIR")
    if not runtime:
        return None
    found = sorted(Path(runtime).glob("sway-ipc.*.sock"))
    return found[0] if len(found) == 1 else None


class SwayIPC:
    """sway's IPC (the i3 protocol): one request, one JSON reply, on a fresh connection."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def request(self, kind: int, payload: str = "", timeout: float = 10.0) -> Any:
        data = payload.encode("utf-8")
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout)
            try:
                sock.connect(str(self.path))
                sock.sendall(_IPC_MAGIC + struct.pack("=II", len(data), kind) + data)
                header = _recv_exactly(sock, 14)
                if header[:6] != _IPC_MAGIC:
                    raise ActionExecutionError(f"{self.path} does not speak sway's IPC")
                length, _kind = struct.unpack("=II", header[6:])
                body = _recv_exactly(sock, length)
            except (OSError, EOFError) as err:
                raise DisplayUnavailableError(
                    f"cannot reach sway's IPC socket {self.path}: {err}. Is sway running, and "
                    "is SWAYSOCK right?"
                ) from err
        return json.loads(body.decode("utf-8"))

    def command(self, text: str) -> None:
        """Run sway commands; raise if any failed."""
        replies = self.request(_IPC_COMMAND, text)
        failed = [r.get("error", "failed") for r in replies if not r.get("success")]
        if failed:
            raise ActionExecutionError(f"sway refused {text!r}: {'; '.join(failed)}")


def _recv_exactly(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise EOFError("the connection closed early")
        data += chunk
    return data


class WaylandBackend(BackendBase):
    """A sway (wlroots) Wayland desktop (``DesktopBackend``, the actions of ``BackendBase``).

    ``env``: the environment of the session (WAYLAND_DISPLAY, XDG_RUNTIME_DIR, SWAYSOCK) and of
    the programs this backend starts; by default this process's. ``launcher``: an argv prefix
    for the applications it opens (``VirtualDesktop(kind="wayland")`` started as root runs
    them as its own user: ``setpriv ...``). Raises ``DisplayUnavailableError`` when the
    compositor cannot be reached, ``DesktopSetupError`` when grim, wtype or wl-clipboard is
    missing or the compositor is not sway.
    """

    window_manager = "sway"

    def __init__(
        self, env: Mapping[str, str] | None = None, *, launcher: Sequence[str] = ()
    ) -> None:
        super().__init__(env)
        self.env.pop("DISPLAY", None)  # programs it starts are Wayland clients of this session
        self.launcher = list(launcher)
        if not self.env.get("WAYLAND_DISPLAY"):
            raise DisplayUnavailableError(
                "no Wayland session: WAYLAND_DISPLAY is not set. Run inside a sway session, "
                "or let agent-s start a virtual one (--virtual)."
            )
        self._require(REQUIRED_TOOLS, "Wayland")
        sock = find_sway_socket(self.env)
        if sock is None:
            raise DesktopSetupError(
                "the Wayland backend drives sway through its IPC socket, and none was found: "
                "set SWAYSOCK (sway sets it in its session), or run agent-s in a sway session"
            )
        self.display = self.env["WAYLAND_DISPLAY"]
        self._ipc = SwayIPC(sock)
        self._ipc.request(_IPC_VERSION)  # reachable, and sway
        self._wl = WaylandConnection(self.env)
        self._layout = (0, 0, 0, 0)  # the layout's bounds, as ``geometry()`` last read them
        left, top, width, height = self.geometry().bounds
        self._pointer = Point(left + width // 2, top + height // 2)
        self._down: list[int] = []  # evdev codes of the keys our keyboard holds down

    # -- life cycle -----------------------------------------------------------------------------

    def close(self) -> None:
        with contextlib.suppress(Exception):
            for code in reversed(self._down):
                self._wl.key(code, False)
            self._wl.roundtrip(1.0)
        self._wl.close()

    def input_devices(self) -> list[str]:
        """The kinds of sway's input devices ("pointer", "keyboard", ...): with this backend's
        virtual pointer and keyboard, both are there."""
        return sorted({str(d.get("type", "")) for d in self._ipc.request(_IPC_INPUTS)})

    def _check_alive(self) -> None:
        try:
            self._ipc.request(_IPC_VERSION, timeout=2.0)
        except DisplayUnavailableError as err:
            raise DisplayUnavailableError(f"the Wayland compositor went away: {err}") from err

    # -- pixels ---------------------------------------------------------------------------------

    def _outputs(self) -> list[dict[str, Any]]:
        outputs = self._ipc.request(_IPC_OUTPUTS)
        return [o for o in outputs if o.get("active") and o.get("rect")]

    def geometry(self) -> ScreenGeometry:
        """sway's active outputs in layout coordinates (logical points; ``scale`` pixels each)."""
        outputs = self._outputs()
        if not outputs:
            raise DisplayUnavailableError("the compositor has no active output to show")
        focused = next((i for i, o in enumerate(outputs) if o.get("focused")), 0)
        monitors = tuple(
            Monitor(
                o["rect"]["x"],
                o["rect"]["y"],
                o["rect"]["width"],
                o["rect"]["height"],
                scale=float(o.get("scale") or 1.0),
                primary=i == focused,
                name=str(o.get("name", "")),
            )
            for i, o in enumerate(outputs)
        )
        geometry = ScreenGeometry(monitors)
        # Pointer motion is given within the layout's box: every action checks its points
        # against a fresh geometry first, and moves within the box read then.
        self._layout = geometry.bounds
        return geometry

    def _grab(self, geometry: ScreenGeometry, monitor: Monitor | None) -> Screenshot:
        """Pixels at the largest output scale (``grim``, as PPM on a pipe)."""
        if monitor is None:
            left, top, _w, _h = geometry.bounds
            argv = ["grim", "-t", "ppm", "-"]
            scale = max(m.scale for m in geometry.monitors)
        else:
            left, top, scale = monitor.x, monitor.y, monitor.scale
            argv = ["grim", "-t", "ppm", "-o", monitor.name, "-"]
        result = self._run(argv, timeout=20)
        try:
            image = Image.open(io.BytesIO(result.stdout))
            image.load()
        except OSError as err:
            raise ActionExecutionError(f"grim gave no readable image: {err}") from err
        return Screenshot(image=image.convert("RGB"), origin=Point(left, top), scale=scale)

    # -- mouse (our virtual pointer) ------------------------------------------------------------

    def pointer(self) -> Point:
        """Where this backend last put the pointer (Wayland lets no client ask)."""
        return self._pointer

    def _pointer_to(self, at: Point) -> None:
        self._wl.move(at.x, at.y, self._layout)
        self._pointer = at
        self._wl.roundtrip()

    def _button(self, button: Button, down: bool) -> None:
        self._wl.button(BUTTON_CODES[button], down)
        if down:
            self._wl.roundtrip()

    def _wheel(self, clicks: int, horizontal: bool) -> None:
        self._wl.refresh_modifiers()  # not a state another keyboard left behind
        # Wayland's axes grow down and right: a notch up is negative.
        self._wl.wheel(clicks if horizontal else -clicks, horizontal)
        self._wl.roundtrip()

    def _sync(self) -> None:
        self._wl.roundtrip()

    # -- keyboard -------------------------------------------------------------------------------

    def _code(self, sym: str) -> tuple[int, int] | None:
        return self._wl.keymap.lookup(sym)

    @contextlib.contextmanager
    def _holding(self, syms: Sequence[str]) -> Iterator[None]:
        """Hold keys down on our virtual keyboard for the body; released in reverse order
        whatever happens (a key that needs Shift gets Shift held with it). Applications are
        told the modifiers held now, whatever state another keyboard left behind."""
        codes = self._wl.keymap.codes_to_hold(syms)
        if not codes:
            self._wl.refresh_modifiers()
            yield
            return
        self._down = list(codes)
        try:
            for code in codes:
                self._wl.key(code, True)
            self._wl.roundtrip()
            self._wl.refresh_modifiers()
            yield
        finally:
            with lifecycle.deferred():  # a stop signal must not leave the keys down
                for code in reversed(codes):
                    self._wl.key(code, False)
                self._down = []
                self._wl.roundtrip()

    def _tap(self, sym: str, held: Sequence[str]) -> None:
        found = self._code(sym)
        if found is None:
            raise ValueError(f"the key {sym!r} is not on the keyboard")
        code, level = found
        shift = level > 0 and not any(h in ("Shift_L", "Shift_R") for h in held)
        if shift:
            self._wl.key(_SHIFT, True)
        self._wl.key(code, True)
        self._wl.key(code, False)
        if shift:
            self._wl.key(_SHIFT, False)
        self._wl.roundtrip()

    def _press(self, held: Sequence[str], pressed: Sequence[str]) -> None:
        """Keys on the US keyboard go through our virtual keyboard, so that applications see
        the keys a person's keyboard sends; any other keysym goes through wtype."""
        if all(self._code(sym) is not None for sym in (*held, *pressed)):
            with self._holding(held):
                for sym in pressed:
                    self._tap(sym, held)
        else:
            taps = [arg for sym in pressed for arg in ("-k", _shifted(sym, held))]
            self._wtype([*_hold(held), *taps, *_release(held)])

    def _type_line(self, line: str) -> None:
        """Through wtype, whose keymap holds every character of the text."""
        for start in range(0, len(line), self.type_chunk):
            chunk = line[start : start + self.type_chunk]
            self._wtype(
                ["-d", str(TYPE_DELAY_MS), "-"],
                stdin=chunk,
                timeout=10 + len(chunk) * (TYPE_DELAY_MS + 20) / 1000,
            )

    def _newline(self) -> None:
        self._wtype(["-k", "Return"])

    def _wtype(self, args: list[str], *, stdin: str | None = None, timeout: float = 10.0) -> None:
        if self._down:  # a new keyboard takes over the seat's modifiers: none are held then
            raise ActionExecutionError("cannot type with wtype while keys are held down")
        self._run(["wtype", *args], stdin=stdin, timeout=timeout)

    # -- clipboard (wl-clipboard) ---------------------------------------------------------------

    def _clipboard_readers(self) -> list[list[str]]:
        plain = ["wl-paste", "--no-newline"]
        return [[*plain, "--type", "text/plain;charset=utf-8"], plain]

    def _clipboard_writer(self, text: str) -> list[str]:
        if not text:
            return ["wl-copy", "--clear"]
        return ["wl-copy", "--type", "text/plain;charset=utf-8"]

    # -- windows --------------------------------------------------------------------------------

    def windows(self) -> list[WindowInfo]:
        """Application windows, the focused one first, then in sway's focus order."""
        tree = self._ipc.request(_IPC_TREE)
        found: list[tuple[int, WindowInfo]] = []
        _collect(tree, found, [0])
        found.sort(key=lambda item: (not item[1].active, item[0]))
        return [window for _, window in found]

    def _request_focus(self, window: WindowInfo) -> None:
        self._ipc.command(f"[con_id={int(window.id)}] focus")


def _collect(node: dict[str, Any], found: list[tuple[int, WindowInfo]], counter: list[int]) -> None:
    """Windows of sway's tree (views have a pid), each with its rank in the focus order."""
    children = [*node.get("nodes", []), *node.get("floating_nodes", [])]
    focus = list(node.get("focus", []))
    children.sort(key=lambda c: focus.index(c["id"]) if c.get("id") in focus else len(focus))
    if node.get("pid") and node.get("type") in ("con", "floating_con"):
        rect, inner = node.get("rect", {}), node.get("window_rect", {})
        props = node.get("window_properties") or {}
        found.append(
            (
                counter[0],
                WindowInfo(
                    id=int(node["id"]),
                    title=str(node.get("name") or ""),
                    app=str(node.get("app_id") or props.get("class") or ""),
                    pid=int(node["pid"]),
                    x=int(rect.get("x", 0)) + int(inner.get("x", 0)),
                    y=int(rect.get("y", 0)) + int(inner.get("y", 0)),
                    width=int(inner.get("width") or rect.get("width", 0)),
                    height=int(inner.get("height") or rect.get("height", 0)),
                    active=bool(node.get("focused")),
                ),
            )
        )
        counter[0] += 1
    for child in children:
        _collect(child, found, counter)


def _shifted(sym: str, held: Sequence[str]) -> str:
    """The keysym a keyboard gives for ``sym`` with ``held`` down: Shift makes a letter a
    capital (wtype's keymap has one keysym per key, so it would stay lower case)."""
    if any(h in ("Shift_L", "Shift_R") for h in held) and len(sym) == 1 and sym.isalpha():
        return sym.upper()
    return sym


def _hold(syms: Sequence[str]) -> list[str]:
    args: list[str] = []
    for sym in syms:
        name = _WTYPE_MODIFIERS.get(sym)
        args += ["-M", name] if name else ["-P", sym]
    return args


def _release(syms: Sequence[str]) -> list[str]:
    args: list[str] = []
    for sym in reversed(syms):
        name = _WTYPE_MODIFIERS.get(sym)
        args += ["-m", name] if name else ["-p", sym]
    return args
