"""A virtual GNOME desktop: GNOME Shell headless, with its own buses and PipeWire.

``VirtualDesktop(kind="gnome")`` makes one of these:

- a private system bus (``dbus-daemon`` with a system-bus configuration of its own, named by
  ``DBUS_SYSTEM_BUS_ADDRESS``: GNOME Shell will not start without one) and a session bus;
- PipeWire and WirePlumber (mutter's screencast streams go through PipeWire);
- ``gnome-shell --headless --wayland --no-x11 --virtual-monitor WxH``, one virtual monitor per
  monitor asked for, laid out left to right as mutter places them.

``GnomeBackend`` drives it through mutter's D-Bus interfaces. Unlike sway, GNOME Shell and
PipeWire run as root, so the desktop runs as this process's user whoever that is (its
accessibility bus then answers this process too). Everything else is the X11
``VirtualDesktop``'s: the marker in every program's environment (the buses start what they
activate with it), the watchdog, and ``stop()``, which ends them all and removes the files.

    with VirtualDesktop(kind="gnome", home="temp") as desk:
        backend = GnomeBackend(desk.env, launcher=desk.launcher)
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from agent_s.desktop.common import temporary_environ
from agent_s.desktop.virtual import VirtualDesktop
from agent_s.errors import DesktopSetupError

#: program -> Debian package
REQUIRED = {
    "gnome-shell": "gnome-shell",
    "dbus-daemon": "dbus-daemon",
    "pipewire": "pipewire",
    "wireplumber": "wireplumber",
}
#: What a client needs to reach the desktop: its Wayland socket, buses and runtime folder.
GNOME_SESSION_VARS = (
    "WAYLAND_DISPLAY",
    "XDG_RUNTIME_DIR",
    "DBUS_SESSION_BUS_ADDRESS",
    "DBUS_SYSTEM_BUS_ADDRESS",
)
_SYSTEM_BUS_CONFIG = """\
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path={path}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"""
#: settings of the desktop's own HOME: no animations (screens settle at once) and no banners
#: over the windows (GNOME Shell greets a root session with one)
_SETTINGS = (
    ("org.gnome.desktop.interface", "enable-animations", "false"),
    ("org.gnome.desktop.notifications", "show-banners", "false"),
)
_NAMES = ("org.gnome.Shell", "org.gnome.Mutter.RemoteDesktop", "org.gnome.Mutter.ScreenCast")


class GnomeDesktop(VirtualDesktop):
    """A headless GNOME Shell desktop, started and stopped by this object (see the module)."""

    kind = "gnome"

    def _check_installed(self) -> None:
        missing = sorted({pkg for exe, pkg in REQUIRED.items() if shutil.which(exe) is None})
        if missing:
            raise DesktopSetupError(
                f"cannot start a virtual GNOME desktop: apt-get install {' '.join(missing)} "
                "gstreamer1.0-pipewire gir1.2-gstreamer-1.0 (or run scripts/setup.sh --desktops)"
            )
        x = 0
        for m in self.monitors:
            if (m.x, m.y) != (x, 0) or m.scale != 1.0:
                raise DesktopSetupError(
                    "GNOME Shell places its virtual monitors side by side, top-aligned, at "
                    "scale 1: give monitors without positions (e.g. 1280x800,1024x768)"
                )
            x += m.width

    def _start_session(self) -> None:
        """The buses, PipeWire and GNOME Shell (``window_manager`` and ``depth`` change
        nothing: the shell is the window manager)."""
        runtime = self._workdir / "runtime"
        runtime.mkdir(mode=0o700)
        env = self._base_env()
        env.update(
            XDG_RUNTIME_DIR=str(runtime),
            XDG_SESSION_TYPE="wayland",
            XDG_CURRENT_DESKTOP="GNOME",
            XDG_SESSION_DESKTOP="gnome",
            GDK_BACKEND="wayland",
            QT_QPA_PLATFORM="wayland",
            MOZ_ENABLE_WAYLAND="1",
            SDL_VIDEODRIVER="wayland",
        )
        self.env = env
        self._setup_home()
        self._start_system_bus(runtime)
        self._start_dbus()
        self._start_pipewire(runtime)
        self._start_shell(runtime)

    def exported(self) -> contextlib.AbstractContextManager[None]:
        """This desktop's session variables in ``os.environ`` (and no X display) until the
        block ends."""
        values: dict[str, str | None] = {key: self.env.get(key) for key in GNOME_SESSION_VARS}
        values.update(
            DISPLAY=None, XAUTHORITY=None, XDG_SESSION_TYPE="wayland", XDG_CURRENT_DESKTOP="GNOME"
        )
        return temporary_environ(**values)

    # -- start-up steps -------------------------------------------------------------------------

    def _start_system_bus(self, runtime: Path) -> None:
        socket = runtime / "system_bus_socket"
        config = self._workdir / "system-bus.conf"
        config.write_text(_SYSTEM_BUS_CONFIG.format(path=socket), encoding="utf-8")
        address = self._spawn_reporting(
            lambda fd: [
                "dbus-daemon",
                f"--config-file={config}",
                "--nofork",
                "--nopidfile",
                f"--print-address={fd}",
            ],
            self.env,
            "the system bus's dbus-daemon",
        )
        self.env["DBUS_SYSTEM_BUS_ADDRESS"] = address

    def _start_pipewire(self, runtime: Path) -> None:
        pipewire = self.launch(["pipewire"])
        self._wait(lambda: (runtime / "pipewire-0").exists(), pipewire, "PipeWire")
        self.launch(["wireplumber"])

    def _start_shell(self, runtime: Path) -> None:
        outputs = self.monitors or ()
        sizes = [f"{m.width}x{m.height}" for m in outputs] or [f"{self.width}x{self.height}"]
        argv = ["gnome-shell", "--headless", "--wayland", "--no-x11"]
        for size in sizes:
            argv += ["--virtual-monitor", size]
        log = (self._workdir / "gnome-shell.log").open("wb")
        with log:
            shell = self.launch(argv, stdout=log, stderr=log)
        self._wait(lambda: self._names_owned(_NAMES), shell, "GNOME Shell")
        sockets = [p for p in runtime.glob("wayland-*") if not p.name.endswith(".lock")]
        if not sockets:
            raise DesktopSetupError("GNOME Shell started but made no Wayland socket")
        self.display = sockets[0].name
        self.env["WAYLAND_DISPLAY"] = self.display
        if self._home is not None:  # the desktop's own HOME: its settings are ours to choose
            for schema, key, value in _SETTINGS:
                subprocess.run(
                    ["gsettings", "set", schema, key, value],
                    env=self.env,
                    capture_output=True,
                    timeout=10,
                    check=False,
                )

    def _names_owned(self, names: tuple[str, ...]) -> bool:
        """Whether every name in ``names`` has an owner on the desktop's session bus."""
        result = subprocess.run(
            [
                "dbus-send",
                "--session",
                "--print-reply",
                "--dest=org.freedesktop.DBus",
                "/org/freedesktop/DBus",
                "org.freedesktop.DBus.ListNames",
            ],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
        return all(f'"{name}"' in result.stdout for name in names)

    def _wait(self, ready: Callable[[], bool], proc: subprocess.Popen[bytes], what: str) -> None:
        deadline = time.monotonic() + self._start_timeout
        while time.monotonic() < deadline:
            if ready():
                return
            if proc.poll() is not None:
                raise DesktopSetupError(
                    f"{what} exited during start-up (status {proc.returncode}){self._log_tail()}"
                )
            time.sleep(0.03)
        raise DesktopSetupError(
            f"{what} was not ready in {self._start_timeout:.0f} s{self._log_tail()}"
        )

    def _log_tail(self) -> str:
        log = self._workdir / "gnome-shell.log"
        with contextlib.suppress(OSError):
            lines = log.read_text("utf-8", "replace").strip().splitlines()[-5:]
            return ": " + " | ".join(lines) if lines else ""
        return ""


__all__ = ["GNOME_SESSION_VARS", "GnomeDesktop"]
