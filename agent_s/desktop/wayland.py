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
lists; typed text goes to wtype on stdin.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import socket
import struct
import subprocess
import time
import unicodedata
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from PIL import Image

from agent_s import lifecycle
from agent_s.desktop import apps
from agent_s.desktop._wlwire import BUTTON_CODES, WaylandConnection
from agent_s.desktop.base import Monitor, ScreenGeometry, Screenshot, WindowInfo
from agent_s.desktop.common import ancestors, is_url, keysyms
from agent_s.desktop.ops import Button, Point
from agent_s.desktop.settle import until_front_idle
from agent_s.errors import (
    ActionExecutionError,
    DesktopSetupError,
    DisplayUnavailableError,
    WindowNotFoundError,
)
from agent_s.guards.redaction import without_secrets

TYPE_DELAY_MS = 2  # between typed characters
TYPE_CHUNK = 200  # characters per wtype call, so each call has a bounded duration
DRAG_STEP_PX = 25
CLICK_INTERVAL = 0.03
KEY_SETTLE = 0.1  # after a hotkey, as on X11: focus moves and menus open after it
ACTIVATE_TIMEOUT = 3.0
CLIPBOARD_TIMEOUT = 2.0
_TYPABLE_CONTROLS = {repr(c) for c in "\t\n\r"}
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


class WaylandBackend:
    """A sway (wlroots) Wayland desktop (``DesktopBackend``).

    ``env``: the environment of the session (WAYLAND_DISPLAY, XDG_RUNTIME_DIR, SWAYSOCK) and of
    the programs this backend starts; by default this process's. ``launcher``: an argv prefix
    for the applications it opens (``VirtualDesktop(kind="wayland")`` started as root runs
    them as its own user: ``setpriv ...``). Raises ``DisplayUnavailableError`` when the
    compositor cannot be reached, ``DesktopSetupError`` when grim, wtype or wl-clipboard is
    missing or the compositor is not sway.
    """

    def __init__(
        self, env: Mapping[str, str] | None = None, *, launcher: Sequence[str] = ()
    ) -> None:
        self.env: dict[str, str] = without_secrets(os.environ if env is None else env)
        self.env.pop("DISPLAY", None)  # programs it starts are Wayland clients of this session
        self.launcher = list(launcher)
        if not self.env.get("WAYLAND_DISPLAY"):
            raise DisplayUnavailableError(
                "no Wayland session: WAYLAND_DISPLAY is not set. Run inside a sway session, "
                "or let agent-s start a virtual one (--virtual)."
            )
        missing = [
            f"{tool} (apt-get install {package})"
            for tool, package in REQUIRED_TOOLS.items()
            if shutil.which(tool, path=self.env.get("PATH", os.defpath)) is None
        ]
        if missing:
            raise DesktopSetupError(f"the Wayland backend needs {', '.join(missing)}")
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

    def __enter__(self) -> WaylandBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def input_devices(self) -> list[str]:
        """The kinds of sway's input devices ("pointer", "keyboard", ...): with this backend's
        virtual pointer and keyboard, both are there."""
        return sorted({str(d.get("type", "")) for d in self._ipc.request(_IPC_INPUTS)})

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
        return ScreenGeometry(monitors)

    def capture(self, monitor: int | None = None) -> Screenshot:
        """The whole layout (``None``) or one output; pixels at the largest output scale."""
        geometry = self.geometry()
        if monitor is None:
            left, top, _w, _h = geometry.bounds
            argv = ["grim", "-t", "ppm", "-"]
            scale = max(m.scale for m in geometry.monitors)
        else:
            if not 0 <= monitor < len(geometry.monitors):
                raise ValueError(
                    f"monitor {monitor} does not exist; there are {len(geometry.monitors)}"
                )
            m = geometry.monitors[monitor]
            left, top, scale = m.x, m.y, m.scale
            argv = ["grim", "-t", "ppm", "-o", m.name, "-"]
        result = self._run(argv, timeout=20)
        try:
            image = Image.open(io.BytesIO(result.stdout))
            image.load()
        except OSError as err:
            raise ActionExecutionError(f"grim gave no readable image: {err}") from err
        return Screenshot(image=image.convert("RGB"), origin=Point(left, top), scale=scale)

    # -- mouse ----------------------------------------------------------------------------------

    def _on_screen(self, *points: Point) -> tuple[int, int, int, int]:
        """Refuse points off every output; the layout's bounds otherwise."""
        geometry = self.geometry()
        for at in points:
            if not geometry.contains(at):
                raise ValueError(f"point ({at.x}, {at.y}) is off the screen {geometry.bounds}")
        return geometry.bounds

    def _move(self, at: Point, bounds: tuple[int, int, int, int]) -> None:
        self._wl.move(at.x, at.y, bounds)
        self._pointer = at

    def move(self, at: Point) -> None:
        bounds = self._on_screen(at)
        self._move(at, bounds)
        self._wl.roundtrip()

    def pointer(self) -> Point:
        """Where this backend last put the pointer (Wayland lets no client ask)."""
        return self._pointer

    def _code(self, sym: str) -> tuple[int, int] | None:
        return self._wl.keymap.lookup(sym)

    @contextlib.contextmanager
    def _holding(self, syms: Sequence[str]) -> Iterator[None]:
        """Hold keys down on our virtual keyboard for the body; released in reverse order
        whatever happens (a key that needs Shift gets Shift held with it)."""
        codes: list[int] = []
        for sym in syms:
            found = self._code(sym)
            if found is None:
                raise ValueError(f"the key {sym!r} is not on the keyboard and cannot be held")
            code, level = found
            if level and _SHIFT not in codes:
                codes.append(_SHIFT)
            if code not in codes:
                codes.append(code)
        if not codes:
            yield
            return
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

    @contextlib.contextmanager
    def _button_down(self, code: int) -> Iterator[None]:
        self._wl.button(code, True)
        try:
            yield
        finally:
            with lifecycle.deferred():
                self._wl.button(code, False)

    def click(
        self, at: Point, button: Button = "left", clicks: int = 1, hold_keys: Sequence[str] = ()
    ) -> None:
        bounds = self._on_screen(at)
        code = _button_code(button)
        if not 1 <= clicks <= 3:
            raise ValueError(f"clicks must be 1, 2 or 3, got {clicks}")
        with self._holding(keysyms(hold_keys)):
            self._wl.refresh_modifiers()
            self._move(at, bounds)
            for index in range(clicks):
                if index:
                    self._wl.roundtrip()
                    time.sleep(CLICK_INTERVAL)
                with self._button_down(code):
                    pass
            self._wl.roundtrip()

    def drag(
        self, start: Point, end: Point, button: Button = "left", hold_keys: Sequence[str] = ()
    ) -> None:
        """Press at ``start``, move in steps (apps see the motion), release at ``end``."""
        bounds = self._on_screen(start, end)
        code = _button_code(button)
        with self._holding(keysyms(hold_keys)):
            self._wl.refresh_modifiers()
            self._move(start, bounds)
            self._wl.roundtrip()
            with self._button_down(code):
                self._wl.roundtrip()
                distance = max(abs(end.x - start.x), abs(end.y - start.y))
                steps = max(4, min(40, distance // DRAG_STEP_PX))
                for i in range(1, steps + 1):
                    x = start.x + (end.x - start.x) * i // steps
                    y = start.y + (end.y - start.y) * i // steps
                    self._move(Point(x, y), bounds)
                    self._wl.roundtrip()
                    time.sleep(0.01)
                time.sleep(0.05)  # let the app handle the last motion before the release
            self._wl.roundtrip()

    def scroll(self, at: Point, clicks: int, horizontal: bool = False) -> None:
        """``clicks`` wheel notches at ``at``: positive is up, or right when ``horizontal``."""
        bounds = self._on_screen(at)
        self._wl.refresh_modifiers()
        self._move(at, bounds)
        # Wayland's axes grow down and right: a notch up is negative.
        self._wl.wheel(clicks if horizontal else -clicks, horizontal)
        self._wl.roundtrip()

    # -- keyboard -------------------------------------------------------------------------------

    def hotkey(self, keys: Sequence[str]) -> None:
        """Press keys together in order, release in reverse (``["ctrl", "shift", "t"]``)."""
        syms = keysyms(keys)
        if not syms:
            raise ValueError("hotkey needs at least one key")
        self.hold_and_press_syms(syms[:-1], syms[-1:])

    def hold_and_press(self, hold_keys: Sequence[str], press_keys: Sequence[str]) -> None:
        held, pressed = keysyms(hold_keys), keysyms(press_keys)
        if not pressed:
            raise ValueError("hold_and_press needs at least one key to press")
        self.hold_and_press_syms(held, pressed)

    def hold_and_press_syms(self, held: Sequence[str], pressed: Sequence[str]) -> None:
        """Keys on the US keyboard go through our virtual keyboard, so that applications see
        the keys a person's keyboard sends; any other keysym goes through wtype."""
        if all(self._code(sym) is not None for sym in (*held, *pressed)):
            with self._holding(held):
                self._wl.refresh_modifiers()  # not a state another keyboard left behind
                for sym in pressed:
                    self._tap(sym, held)
        else:
            taps = [arg for sym in pressed for arg in ("-k", _shifted(sym, held))]
            self._wtype([*_hold(held), *taps, *_release(held)])
        time.sleep(KEY_SETTLE)

    def type_text(self, text: str) -> None:
        """Type ``text`` literally, unicode included; a newline is a press of Return."""
        bad = sorted({repr(c) for c in text if unicodedata.category(c) == "Cc"} - _TYPABLE_CONTROLS)
        if bad:
            raise ValueError(f"cannot type control characters {', '.join(bad)}")
        lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        for index, line in enumerate(lines):
            if index:
                self._wtype(["-k", "Return"])
            for start in range(0, len(line), TYPE_CHUNK):
                chunk = line[start : start + TYPE_CHUNK]
                self._wtype(
                    ["-d", str(TYPE_DELAY_MS), "-"],
                    stdin=chunk,
                    timeout=10 + len(chunk) * (TYPE_DELAY_MS + 20) / 1000,
                )

    def _wtype(self, args: list[str], *, stdin: str | None = None, timeout: float = 10.0) -> None:
        if self._down:  # a new keyboard takes over the seat's modifiers: none are held then
            raise ActionExecutionError("cannot type with wtype while keys are held down")
        self._run(["wtype", *args], stdin=stdin, timeout=timeout)

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
            raise ActionExecutionError(f"{argv[0]} took over {timeout:.0f} s") from err
        if result.returncode != 0:
            self._check_alive()
            detail = (
                result.stderr.decode("utf-8", "replace").strip() or f"status {result.returncode}"
            )
            raise ActionExecutionError(f"{argv[0]} failed: {detail}")
        return result

    def _check_alive(self) -> None:
        try:
            self._ipc.request(_IPC_VERSION, timeout=2.0)
        except DisplayUnavailableError as err:
            raise DisplayUnavailableError(f"the Wayland compositor went away: {err}") from err

    # -- clipboard ------------------------------------------------------------------------------

    def clipboard_get(self) -> str:
        """The clipboard as text; ``""`` when nothing (or no text) is on it."""
        result = subprocess.run(
            ["wl-paste", "--no-newline", "--type", "text/plain;charset=utf-8"],
            env=self.env,
            capture_output=True,
            timeout=10,
            check=False,
        )
        if result.returncode != 0:
            result = subprocess.run(
                ["wl-paste", "--no-newline"],
                env=self.env,
                capture_output=True,
                timeout=10,
                check=False,
            )
        if result.returncode == 0:
            return result.stdout.decode("utf-8", "replace")
        self._check_alive()
        return ""

    def clipboard_set(self, text: str) -> None:
        """Put ``text`` on the clipboard (wl-copy keeps serving it in the background)."""
        argv = ["wl-copy", "--type", "text/plain;charset=utf-8"]
        if not text:
            argv = ["wl-copy", "--clear"]
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
                f"wl-copy could not set the clipboard (status {result.returncode})"
            )
        deadline = time.monotonic() + CLIPBOARD_TIMEOUT
        while self.clipboard_get() != text:
            if time.monotonic() > deadline:
                raise ActionExecutionError("the clipboard did not take the new text")
            time.sleep(0.01)

    # -- windows --------------------------------------------------------------------------------

    def windows(self) -> list[WindowInfo]:
        """Application windows, the focused one first, then in sway's focus order."""
        tree = self._ipc.request(_IPC_TREE)
        found: list[tuple[int, WindowInfo]] = []
        _collect(tree, found, [0])
        found.sort(key=lambda item: (not item[1].active, item[0]))
        return [window for _, window in found]

    def window_order(self) -> tuple[int, tuple[int, ...]]:
        windows = self.windows()
        active = next((w.id for w in windows if w.active), 0)
        return active, tuple(w.id for w in windows)

    def activate(self, app: str) -> WindowInfo:
        """Focus the window best matching ``app`` (app id, then title, then fuzzy)."""
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
        self._ipc.command(f"[con_id={int(target.id)}] focus")
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
            f"sway did not focus {target.title!r} within {ACTIVATE_TIMEOUT} s"
        )

    def wait_for_window(
        self, match: str | Callable[[WindowInfo], bool], timeout: float = 10.0
    ) -> WindowInfo:
        """Wait until a window matching ``match`` (a name, or a predicate) is open; return it."""
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
        """Open a file or URL with its default application, or start an application by name
        (as ``X11Backend.open``: an application with a window open already is focused)."""
        if not target.strip():
            raise ValueError("open needs an application name or a file path")
        path = Path(target).expanduser()
        home = self.env.get("HOME")
        if target.startswith("~") and home:
            path = Path(home) / target[1:].lstrip("/")
        if is_url(target) or path.exists():
            where = target if is_url(target) else str(path.resolve())
            if shutil.which("xdg-open", path=self.env.get("PATH", os.defpath)):
                self._spawn(["xdg-open", where], cwd=None)
            else:
                self._spawn(["gio", "open", where], cwd=None)
            return None
        launch = apps.resolve_app(target, self.env)
        ours = ancestors()
        running = [w for w in apps.windows_of(launch, target, self.windows()) if w.pid not in ours]
        if running:
            return self._bring_forward(running[0], target)
        self._spawn(launch.argv, cwd=launch.cwd)
        return None

    def _spawn(self, argv: list[str], cwd: str | None) -> None:
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


def _button_code(button: str) -> int:
    if button not in BUTTON_CODES:
        raise ValueError(f"button must be 'left', 'middle' or 'right', got {button!r}")
    return BUTTON_CODES[button]


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
