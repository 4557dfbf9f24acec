"""A virtual desktop: Xvfb on a free display, openbox, a D-Bus session (for accessibility).

Used by ``agent-s run --virtual``, by the benchmark harness (one per parallel worker) and by the
tests. Every program it starts, and every program those start, carries a marker in its
environment; ``stop()`` ends them all (process groups first, then a sweep for the marker) and
removes the desktop's files, so nothing is left behind: no process, no socket, no lock file.
If the process that started it dies without stopping it (SIGKILL, a crash), its watchdog
process does the same (see ``_watchdog``); a stop signal arriving during ``stop()`` waits
until it is done (``lifecycle.deferred``).

    with VirtualDesktop(1280, 800, home="temp") as desk:
        desk.launch(["xterm"])
        ...  # desk.env has DISPLAY, XAUTHORITY, DBUS_SESSION_BUS_ADDRESS, HOME for clients

Several monitors: ``VirtualDesktop(monitors="1280x800,1024x768+1280+300")`` (or a sequence of
``Monitor``) makes one X screen the size of the box around them and defines the monitors in
it with RandR 1.5 (as ``xrandr --setmonitor`` does). Debian's Xvfb can also join several
``-screen``s with ``+xinerama``, but only side by side and without RandR; monitors defined
this way can have any offset and size, and clients see them both through RandR and through
Xinerama (which the server answers from the same list), so openbox places and maximises
windows on them. The area of the screen outside every monitor exists but shows nothing.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, Literal, TypeVar

from agent_s import lifecycle
from agent_s.desktop._watchdog import (
    DESKTOPS,
    MARKER,
    STOPPED,
    _desktop_processes,
    end_processes,
    marked_processes,
    write_state,
)
from agent_s.desktop.base import Monitor
from agent_s.desktop.common import temporary_environ
from agent_s.desktop.locales import session_locale
from agent_s.desktop.shells import session_shell
from agent_s.errors import DesktopSetupError
from agent_s.guards.redaction import without_secrets

_MARKER = MARKER
_PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # the folder agent_s/ is in
#: What a client needs to reach the desktop: the X server and the session (accessibility) bus.
SESSION_VARS = ("DISPLAY", "XAUTHORITY", "DBUS_SESSION_BUS_ADDRESS")
#: The caller's own session, which the desktop's programs must not see: its display, bus and
#: runtime folder, and what tells toolkits to use Wayland or a particular desktop (GTK with
#: GDK_BACKEND=wayland cannot open an X display at all; a desktop name makes GTK and xdg-open
#: reach for that desktop's services, which this session bus does not have).
HOST_SESSION_VARS = (
    *SESSION_VARS,
    "WAYLAND_DISPLAY",
    "XDG_RUNTIME_DIR",
    "XDG_SESSION_ID",
    "XDG_SESSION_TYPE",
    "XDG_SESSION_DESKTOP",
    "XDG_SESSION_CLASS",
    "XDG_CURRENT_DESKTOP",
    "XDG_MENU_PREFIX",
    "XDG_SEAT",
    "XDG_VTNR",
    "DESKTOP_SESSION",
    "GNOME_DESKTOP_SESSION_ID",
    "GNOME_SETUP_DISPLAY",
    "KDE_FULL_SESSION",
    "KDE_SESSION_VERSION",
    "SESSION_MANAGER",
    "GDK_BACKEND",
    "QT_QPA_PLATFORM",
    "QT_WAYLAND_DISABLE_WINDOWDECORATION",
    "CLUTTER_BACKEND",
    "SDL_VIDEODRIVER",
    "MOZ_ENABLE_WAYLAND",
    "ELECTRON_OZONE_PLATFORM_HINT",
    "SWAYSOCK",
    "I3SOCK",
    "HYPRLAND_INSTANCE_SIGNATURE",
    "NO_AT_BRIDGE",
)
_REQUIRED = ("Xvfb", "xauth")
DesktopKind = Literal["x11", "wayland", "gnome", "kde"]
#: the class of each kind of virtual desktop but X11's, as (module, class): each module builds
#: on this one, so it is imported by name when such a desktop is made
KIND_CLASSES: dict[str, tuple[str, str]] = {
    "wayland": ("agent_s.desktop.wayland_virtual", "WaylandDesktop"),
    "gnome": ("agent_s.desktop.gnome_virtual", "GnomeDesktop"),
    "kde": ("agent_s.desktop.kde_virtual", "KdeDesktop"),
}
_Desktop = TypeVar("_Desktop", bound="VirtualDesktop")
_LAYOUT_HELP = (
    "monitors are given as WxH or WxH+X+Y, comma-separated (e.g. 1280x800,1024x768+1280+300); "
    "a monitor without a position goes right of the one before it, top-aligned"
)


def parse_monitors(text: str) -> tuple[Monitor, ...]:
    """Monitors from ``"1280x800,1024x768+1280+300"``: each ``WxH`` or ``WxH+X+Y``; one
    without a position goes right of the one before it, top-aligned (the first at 0, 0). The
    first is primary. Raises ``ValueError`` naming the format for anything else."""
    found: list[Monitor] = []
    for index, part in enumerate(p.strip() for p in text.split(",")):
        size, plus, place = part.partition("+")
        w, x_sep, h = size.lower().partition("x")
        try:
            width, height = int(w), int(h)
            if plus:
                px, _, py = place.partition("+")
                left, top = int(px), int(py)
            elif found:
                left, top = found[-1].x + found[-1].width, found[-1].y
            else:
                left, top = 0, 0
        except ValueError:
            raise ValueError(f"bad monitor {part!r} in {text!r}: {_LAYOUT_HELP}") from None
        if not x_sep:
            raise ValueError(f"bad monitor {part!r} in {text!r}: {_LAYOUT_HELP}")
        found.append(Monitor(left, top, width, height, primary=index == 0, name=f"VM-{index}"))
    return _checked_monitors(found)


def _checked_monitors(monitors: Sequence[Monitor]) -> tuple[Monitor, ...]:
    """Monitors a virtual screen can hold: sizes 64..16384, positions from 0, at most 16."""
    if not monitors:
        raise ValueError(f"no monitors given: {_LAYOUT_HELP}")
    if len(monitors) > 16:
        raise ValueError(f"at most 16 monitors, not {len(monitors)}")
    for m in monitors:
        if not (64 <= m.width <= 16384 and 64 <= m.height <= 16384):
            raise ValueError(f"monitor size {m.width}x{m.height} is outside 64..16384")
        if m.x < 0 or m.y < 0 or m.x + m.width > 16384 or m.y + m.height > 16384:
            raise ValueError(
                f"monitor {m.width}x{m.height}+{m.x}+{m.y} must lie within 0..16384 on both axes "
                "(positions are from the top-left corner of the screen, never negative)"
            )
    names = [m.name or f"VM-{i}" for i, m in enumerate(monitors)]
    if len(set(names)) != len(names):
        raise ValueError(f"monitor names must differ, got {names}")
    return tuple(
        Monitor(m.x, m.y, m.width, m.height, primary=m.primary, name=name)
        for m, name in zip(monitors, names, strict=True)
    )


def _read_line(fd: int, timeout: float, what: str) -> str:
    """Read one line from a pipe written by a child, failing clearly if none comes in time."""
    import selectors

    data = b""
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while not data.endswith(b"\n"):
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not sel.select(remaining):
                raise DesktopSetupError(f"{what} did not report in {timeout:.0f} s")
            chunk = os.read(fd, 256)
            if not chunk:
                raise DesktopSetupError(f"{what} exited before it was ready")
            data += chunk
    return data.decode().strip()


class VirtualDesktop:
    """An X11 desktop that exists only in memory, started and stopped by this object
    (``kind="wayland"``: a headless sway desktop, see ``wayland_virtual``).

    ``home``: ``None`` keeps the caller's HOME; ``"temp"`` makes a fresh HOME that ``stop()``
    deletes; a path uses (and creates) that folder and leaves it in place. ``monitors``: several
    monitors (``"1280x800,1024x768+1280+300"`` or ``Monitor``s, see ``parse_monitors``); the
    screen is then the box from 0, 0 around them, and ``width``/``height`` must be left as
    they are or give that size.
    """

    #: which desktop this is (``kind`` chooses the class; see ``__new__``)
    kind: DesktopKind = "x11"
    #: argv prefix that runs a program as the desktop's user (empty: as this process)
    launcher: Sequence[str] = ()

    def __new__(cls, *args: Any, kind: DesktopKind = "x11", **kwargs: Any) -> VirtualDesktop:
        """``kind="wayland"`` makes a headless sway desktop instead (``wayland_virtual``),
        ``"gnome"`` a headless GNOME Shell, ``"kde"`` a virtual KWin (``KIND_CLASSES``)."""
        if kind != "x11" and kind not in KIND_CLASSES:
            kinds = ", ".join(repr(k) for k in ("x11", *KIND_CLASSES))
            raise ValueError(f"kind must be one of {kinds}, got {kind!r}")
        if kind != "x11" and cls is VirtualDesktop:
            module_name, class_name = KIND_CLASSES[kind]
            module = importlib.import_module(module_name)
            return super().__new__(getattr(module, class_name))
        return super().__new__(cls)

    def __init__(
        self,
        width: int = 1280,
        height: int = 800,
        *,
        depth: int = 24,
        home: str | os.PathLike[str] | Literal["temp"] | None = None,
        window_manager: bool = True,
        accessibility: bool = True,
        start_timeout: float = 20.0,
        monitors: str | Sequence[Monitor] | None = None,
        kind: DesktopKind = "x11",
    ) -> None:
        del kind  # it chose the class (``__new__``), whose ``kind`` this desktop is
        self.monitors: tuple[Monitor, ...] = ()
        if monitors is not None:
            self.monitors = (
                parse_monitors(monitors)
                if isinstance(monitors, str)
                else _checked_monitors(monitors)
            )
            right = max(m.x + m.width for m in self.monitors)
            bottom = max(m.y + m.height for m in self.monitors)
            if (width, height) not in ((1280, 800), (right, bottom)):
                raise ValueError(
                    f"a {width}x{height} screen does not fit the monitors, whose box is "
                    f"{right}x{bottom}: leave width and height out when giving monitors"
                )
            width, height = right, bottom
        if not (64 <= width <= 16384 and 64 <= height <= 16384):
            raise ValueError(f"screen size {width}x{height} is outside 64..16384")
        if depth not in (16, 24):
            raise ValueError(f"depth must be 16 or 24, got {depth}")
        self.width, self.height, self.depth = width, height, depth
        self._home_arg = home
        self._window_manager = window_manager
        self._accessibility = accessibility
        self._start_timeout = start_timeout
        self._token = secrets.token_hex(8)
        self._dir: Path | None = None
        self._home: Path | None = None
        self._children: list[subprocess.Popen[bytes]] = []
        self._sessions: list[tuple[int, float]] = []  # (leader pid, start) of each child's session
        self._state_file: Path | None = None
        self._watchdog: subprocess.Popen[bytes] | None = None
        self._lifeline = -1  # the pipe's write end: the watchdog acts when it closes unannounced
        self.display: str = ""
        self.env: dict[str, str] = {}

    # -- life cycle ---------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return bool(self._children) and self._children[0].poll() is None

    def __enter__(self) -> VirtualDesktop:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self: _Desktop) -> _Desktop:
        """Start the desktop's programs (``stop()`` ends them); return the desktop."""
        if self._children:
            raise DesktopSetupError("this virtual desktop is already started")
        self._check_installed()
        self._dir = Path(tempfile.mkdtemp(prefix="agent-s-desktop-"))
        try:
            self._start_watchdog()
            self._start_session()
        except BaseException:
            self.stop()
            raise
        return self

    def _check_installed(self) -> None:
        """``DesktopSetupError`` naming what to install when a program it needs is missing."""
        missing = [name for name in _REQUIRED if shutil.which(name) is None]
        if missing:
            raise DesktopSetupError(
                f"cannot start a virtual desktop: {', '.join(missing)} not installed "
                "(Debian/Ubuntu: apt-get install xvfb xauth openbox dbus-x11, "
                "or run scripts/setup.sh)"
            )

    def _start_session(self) -> None:
        """The display server and what runs in it (its watchdog runs already)."""
        self._start_x()
        self._setup_home()
        if self._accessibility:
            self._start_dbus()
        if self._window_manager:
            self._start_window_manager()

    def stop(self) -> None:
        """End every program of this desktop and remove its files. Safe to call twice."""
        with lifecycle.deferred():
            for proc in reversed(self._children):
                _kill_group(proc)
            self._children.clear()
            token, sessions = self._token, list(self._sessions)
            end_processes(lambda: _desktop_processes(token, sessions))
            self._sessions.clear()
            if self._dir is not None:
                shutil.rmtree(self._dir, ignore_errors=True)
                self._dir = None
            if self._home is not None and self._home_arg == "temp":
                shutil.rmtree(self._home, ignore_errors=True)
            self._home = None
            self._stop_watchdog()

    # -- programs on the desktop ----------------------------------------------------------------

    def launch(
        self,
        argv: Sequence[str],
        *,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        stdout: int | IO[bytes] | None = subprocess.DEVNULL,
        stderr: int | IO[bytes] | None = subprocess.DEVNULL,
    ) -> subprocess.Popen[bytes]:
        """Start a program on this desktop (through ``launcher``: as the desktop's user);
        ``stop()`` ends it and everything it started."""
        if not self.running:
            raise DesktopSetupError("the virtual desktop is not running")
        if isinstance(argv, str):
            raise TypeError("argv must be a list of arguments, not a shell string")
        proc = subprocess.Popen(
            [*self.launcher, *argv],
            cwd=self._launch_cwd() if cwd is None else cwd,
            env={**self.env, **(env or {})},
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
        )
        self._adopt(proc)
        return proc

    def _launch_cwd(self) -> str | None:
        """Where a program ``launch`` starts runs when no folder is given (None: here)."""
        return None

    def exported(self) -> contextlib.AbstractContextManager[None]:
        """This desktop's session variables in ``os.environ`` until the block ends: pyautogui,
        mss and AT-SPI read them from the process environment when first used."""
        return temporary_environ(**{key: self.env.get(key) for key in SESSION_VARS})

    @property
    def token(self) -> str:
        """The marker value every process of this desktop carries in its environment."""
        return self._token

    @property
    def home(self) -> Path:
        return Path(self.env["HOME"])

    # -- the watchdog and its state file --------------------------------------------------------

    def _start_watchdog(self) -> None:
        """Note this desktop in a state file and start its watchdog (see ``_watchdog``)."""
        self._state_file = lifecycle.state_dir() / DESKTOPS / f"{self._token}.json"
        try:
            self._note()
        except OSError as err:
            self._state_file = None
            raise DesktopSetupError(
                f"cannot write the virtual desktop's state file: {err} (set "
                f"{lifecycle.STATE_DIR_VAR} to a writable folder)"
            ) from err
        # Only what Python needs: no keys, and not the marker (it is no program of the desktop).
        env = {key: os.environ[key] for key in ("PATH", "PYTHONHOME", "LANG") if key in os.environ}
        path = (str(_PACKAGE_ROOT), os.environ.get("PYTHONPATH", ""))
        env["PYTHONPATH"] = os.pathsep.join(p for p in path if p)
        read_fd, write_fd = os.pipe()  # neither end is inherited by the desktop's programs
        try:
            self._watchdog = subprocess.Popen(
                [sys.executable, "-m", "agent_s.desktop._watchdog", str(self._state_file)],
                stdin=read_fd,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                cwd="/",
                env=env,
                start_new_session=True,  # Ctrl-C to our process group spares it
            )
        except OSError as err:
            os.close(write_fd)
            raise DesktopSetupError(f"cannot start the desktop's watchdog: {err}") from err
        finally:
            os.close(read_fd)
        self._lifeline = write_fd

    def _note(self) -> None:
        """Write what the watchdog (or the next ``agent-s`` start) needs to end this desktop."""
        if self._state_file is None:
            return
        paths = [str(p) for p in (self._dir,) if p is not None]
        if self._home is not None and self._home_arg == "temp":
            paths.append(str(self._home))
        write_state(
            self._state_file,
            {
                "token": self._token,
                "owner": lifecycle.owner(),
                "display": self.display,
                "paths": paths,
                "sessions": self._sessions,
            },
        )

    def _adopt(self, proc: subprocess.Popen[bytes]) -> None:
        """A child started in a session of its own: ``stop()`` (or the watchdog) ends it."""
        self._children.append(proc)
        start = lifecycle.start_time(proc.pid)
        if start is not None:
            self._sessions.append((proc.pid, start))
        with contextlib.suppress(OSError):
            self._note()

    def _stop_watchdog(self) -> None:
        """Everything is gone: remove the state file, tell the watchdog, wait for it to exit."""
        if self._state_file is not None:
            self._state_file.unlink(missing_ok=True)
            self._state_file = None
        if self._lifeline >= 0:
            with contextlib.suppress(OSError):
                os.write(self._lifeline, STOPPED)
            os.close(self._lifeline)
            self._lifeline = -1
        if self._watchdog is not None:
            try:
                self._watchdog.wait(5.0)
            except subprocess.TimeoutExpired:
                self._watchdog.kill()
                self._watchdog.wait()
            self._watchdog = None

    # -- start-up steps -------------------------------------------------------------------------

    @property
    def _workdir(self) -> Path:
        if self._dir is None:
            raise DesktopSetupError("the virtual desktop is not started")
        return self._dir

    def _base_env(self) -> dict[str, str]:
        env = without_secrets(os.environ)  # the desktop's programs never see the agent's keys
        for key in HOST_SESSION_VARS:
            env.pop(key, None)
        session_locale(env)  # a locale the machine lacks stops some programs from starting
        session_shell(env)  # terminals run $SHELL; without one, the user's may be nologin
        env[_MARKER] = self._token
        env["XDG_SESSION_TYPE"] = "x11"
        if self._window_manager:  # what the agent's prompt names as the desktop
            env["XDG_CURRENT_DESKTOP"] = "openbox"
        return env

    def _start_x(self) -> None:
        auth = self._workdir / "Xauthority"
        cookie = secrets.token_hex(16)
        # The server loads every cookie in its -auth file whatever display it names; the
        # client entry for the real display number is added once the server has chosen it.
        _run(["xauth", "-q", "-f", str(auth), "add", ":0", "MIT-MAGIC-COOKIE-1", cookie])
        number = self._spawn_reporting(
            lambda fd: [
                "Xvfb",
                "-displayfd",
                str(fd),
                "-screen",
                "0",
                f"{self.width}x{self.height}x{self.depth}",
                "-nolisten",
                "tcp",
                "-auth",
                str(auth),
                "-noreset",
                "+extension",
                "RANDR",
            ],
            self._base_env(),
            "Xvfb",
        )
        self.display = f":{number}"
        _run(["xauth", "-q", "-f", str(auth), "add", self.display, "MIT-MAGIC-COOKIE-1", cookie])
        runtime = self._workdir / "runtime"  # the session's own XDG_RUNTIME_DIR (bus, dconf)
        runtime.mkdir(mode=0o700)
        self.env = self._base_env()
        self.env.update(DISPLAY=self.display, XAUTHORITY=str(auth), XDG_RUNTIME_DIR=str(runtime))
        if len(self.monitors) > 1:
            self._set_monitors()

    def _set_monitors(self) -> None:
        """Define the monitors on the X screen (RandR 1.5) before any client starts."""
        import Xlib.display
        import Xlib.error

        from agent_s.desktop import _xproto

        try:
            with temporary_environ(XAUTHORITY=self.env["XAUTHORITY"]):
                x = Xlib.display.Display(self.display)
            try:
                _xproto.set_randr_monitors(x, self.monitors)
                got = {(m.x, m.y, m.width, m.height) for m in _xproto.randr_monitors(x)}
            finally:
                x.close()
        except (Xlib.error.XError, Xlib.error.DisplayError, OSError, ValueError) as err:
            raise DesktopSetupError(f"cannot set the virtual desktop's monitors: {err}") from err
        wanted = {(m.x, m.y, m.width, m.height) for m in self.monitors}
        if got != wanted:
            raise DesktopSetupError(
                f"the X server shows monitors {sorted(got)}, not the {sorted(wanted)} asked for"
            )

    def _spawn_reporting(
        self, argv: Callable[[int], list[str]], env: dict[str, str], what: str
    ) -> str:
        """Start a daemon (through ``launcher``) that reports readiness by writing a line to a
        pipe; return the line."""
        read_fd, write_fd = os.pipe()
        try:
            proc = subprocess.Popen(
                [*self.launcher, *argv(write_fd)],
                env=env,
                pass_fds=(write_fd,),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
            self._adopt(proc)
            os.close(write_fd)
            write_fd = -1
            return _read_line(read_fd, self._start_timeout, what)
        finally:
            os.close(read_fd)
            if write_fd >= 0:
                os.close(write_fd)

    def _setup_home(self) -> None:
        if self._home_arg is None:
            return
        if self._home_arg == "temp":
            self._home = Path(tempfile.mkdtemp(prefix="agent-s-home-"))
        else:
            self._home = Path(self._home_arg).expanduser().resolve()
            self._home.mkdir(parents=True, exist_ok=True)
        self.env["HOME"] = str(self._home)
        self._note()
        for sub in (".config", ".local/share", ".cache"):
            (self._home / sub).mkdir(parents=True, exist_ok=True)
        for key in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
            self.env.pop(key, None)
        gtk = self._home / ".config" / "gtk-3.0" / "settings.ini"
        if not gtk.exists():
            # A blinking caret keeps the screen changing; a still screen is easier to compare.
            gtk.parent.mkdir(parents=True, exist_ok=True)
            gtk.write_text("[Settings]\ngtk-cursor-blink = false\n")

    def _start_dbus(self) -> None:
        if shutil.which("dbus-daemon") is None:
            raise DesktopSetupError(
                "accessibility needs a D-Bus session: dbus-daemon is not installed "
                "(apt-get install dbus-x11 at-spi2-core), or pass accessibility=False"
            )
        runtime = Path(self.env["XDG_RUNTIME_DIR"])
        address = self._spawn_reporting(
            lambda fd: [
                "dbus-daemon",
                "--session",
                "--nofork",
                "--nopidfile",
                f"--address=unix:path={runtime / 'bus'}",
                f"--print-address={fd}",
            ],
            self.env,
            "dbus-daemon",
        )
        self.env["DBUS_SESSION_BUS_ADDRESS"] = address
        # Ask toolkits to expose their accessibility tree (GTK does by default; Qt needs this).
        self.env.update(QT_ACCESSIBILITY="1", QT_LINUX_ACCESSIBILITY_ALWAYS_ON="1")

    def _start_window_manager(self) -> None:
        if shutil.which("openbox") is None:
            raise DesktopSetupError(
                "no window manager: openbox is not installed (apt-get install openbox), "
                "or pass window_manager=False"
            )
        self.launch(["openbox", "--sm-disable"])
        # openbox announces itself on the root window (_NET_SUPPORTING_WM_CHECK) when ready.
        deadline = time.monotonic() + self._start_timeout
        while time.monotonic() < deadline:
            probe = subprocess.run(
                ["xprop", "-root", "_NET_SUPPORTING_WM_CHECK"],
                env=self.env,
                capture_output=True,
                text=True,
                check=False,
            )
            if probe.returncode == 0 and "window id" in probe.stdout:
                return
            if self._children[-1].poll() is not None:
                raise DesktopSetupError("openbox exited during start-up")
            time.sleep(0.05)
        raise DesktopSetupError(f"openbox was not ready in {self._start_timeout:.0f} s")


def _run(argv: list[str]) -> None:
    result = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=30)
    if result.returncode != 0:
        raise DesktopSetupError(f"{argv[0]} failed: {result.stderr.strip() or result.returncode}")


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Ask a child's process group to end, then force it after a short grace period."""
    for sig, grace in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 2.0)):
        if proc.poll() is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, sig)  # the leader is gone; its group may not be
            if sig == signal.SIGKILL:
                return
            continue
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(grace)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(1.0)


__all__ = [
    "HOST_SESSION_VARS",
    "SESSION_VARS",
    "VirtualDesktop",
    "marked_processes",
    "parse_monitors",
]
