"""A virtual KDE Plasma desktop: KWin on a virtual output, with its own session bus.

``VirtualDesktop(kind="kde")`` makes one of these: ``kwin_wayland --virtual --width W
--height H --no-lockscreen`` (no GPU needed: it renders with llvmpipe; no Xwayland), a
private session bus (KWin serves its interfaces there, and accessibility too), and the
authorisation KWin asks for, made for this session only: the helper of ``kde_access`` built
into the desktop's private folder and its desktop entry in a data folder only KWin reads
(``XDG_DATA_DIRS`` of KWin's own environment), never the user's HOME. ``KdeBackend`` drives
it through that real authorisation (no permission check is switched off).

Debian installs ``kwin_wayland`` with a file capability (``cap_sys_resource``, to raise its
scheduling limits) that a container refuses to run ("Operation not permitted"); a copy
without it runs the same, so the desktop runs a copy made in its private folder (1.8 MB).

KWin runs as root when this process is root (unlike sway it does not refuse); the
applications then do too. Everything else is the X11 ``VirtualDesktop``'s: the marker in every
program's environment, the watchdog, and ``stop()``, which ends them all (KWin, the bus and
what it started, the applications) and removes the desktop's files.

    with VirtualDesktop(kind="kde", home="temp") as desk:
        backend = KdeBackend(desk.env, launcher=desk.launcher)
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import time
from pathlib import Path

from agent_s.desktop import kde_access
from agent_s.desktop.common import temporary_environ
from agent_s.desktop.kde import REQUIRED_TOOLS
from agent_s.desktop.virtual import VirtualDesktop
from agent_s.errors import DesktopSetupError

#: What a client of the desktop needs: the compositor, the bus, and the authorised helper.
KDE_SESSION_VARS = (
    "WAYLAND_DISPLAY",
    "XDG_RUNTIME_DIR",
    "DBUS_SESSION_BUS_ADDRESS",
    kde_access.HELPER_VAR,
)
_SOCKET = "wayland-0"  # the runtime folder is the desktop's own


class KdeDesktop(VirtualDesktop):
    """A virtual KWin desktop, started and stopped by this object (see the module)."""

    kind = "kde"

    def _check_installed(self) -> None:
        needed = {"kwin_wayland": "kwin-wayland", "dbus-daemon": "dbus", **REQUIRED_TOOLS}
        missing = sorted({pkg for exe, pkg in needed.items() if shutil.which(exe) is None})
        if not any(shutil.which(c) for c in ("cc", "gcc", "clang")):
            missing.append("gcc")
        if missing:
            raise DesktopSetupError(
                f"cannot start a virtual KDE desktop: apt-get install {' '.join(missing)} "
                "(or run scripts/setup.sh --desktops)"
            )
        if len(self.monitors) > 1:
            raise DesktopSetupError(
                "the virtual KDE desktop has one monitor; give one size (--size WxH)"
            )

    def _start_session(self) -> None:
        """The session bus, the authorisation, KWin; ``window_manager`` and ``depth`` change
        nothing (KWin is the window manager)."""
        workdir = self._workdir
        runtime = workdir / "runtime"
        runtime.mkdir(mode=0o700)
        self.env = self._base_env()
        self.env.update(
            XDG_SESSION_TYPE="wayland",
            XDG_CURRENT_DESKTOP="KDE",
            XDG_RUNTIME_DIR=str(runtime),
            GDK_BACKEND="wayland",
            QT_QPA_PLATFORM="wayland",
            MOZ_ENABLE_WAYLAND="1",
            SDL_VIDEODRIVER="wayland",
        )
        self._setup_home()
        access = workdir / "kwin-access"
        helper = access / kde_access.HELPER_NAME
        kde_access.install(helper, access / "applications", self.env)
        self.env[kde_access.HELPER_VAR] = str(helper)
        self._start_dbus()  # always: KWin serves its interfaces on it
        self._start_kwin(access)

    def _start_kwin(self, data_dir: Path) -> None:
        workdir = self._workdir
        installed = shutil.which("kwin_wayland")
        if installed is None:  # checked before; the PATH may have changed since
            raise DesktopSetupError("kwin_wayland is not installed (apt-get install kwin-wayland)")
        kwin = workdir / "kwin_wayland"
        shutil.copyfile(installed, kwin)  # the file only: no capability comes with it
        kwin.chmod(0o755)
        env = dict(self.env)
        dirs = env.get("XDG_DATA_DIRS") or "/usr/local/share:/usr/share"
        env["XDG_DATA_DIRS"] = f"{data_dir}:{dirs}"  # the entry, for KWin's eyes only
        log = workdir / "kwin.log"
        argv = [
            str(kwin),
            "--virtual",
            "--width",
            str(self.width),
            "--height",
            str(self.height),
            "--no-lockscreen",
            "--socket",
            _SOCKET,
        ]
        with log.open("wb") as out:
            try:
                proc = subprocess.Popen(
                    [*self.launcher, *argv],
                    env=env,
                    cwd=str(workdir),
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=out,
                    start_new_session=True,
                )
            except OSError as err:
                raise DesktopSetupError(f"cannot start kwin_wayland: {err}") from err
        self._adopt(proc)
        self._wait_for_kwin(proc, log)
        self.display = _SOCKET
        self.env["WAYLAND_DISPLAY"] = _SOCKET

    def _wait_for_kwin(self, proc: subprocess.Popen[bytes], log: Path) -> None:
        """Until KWin's socket is there and its screenshot interface answers on the bus."""
        socket = Path(self.env["XDG_RUNTIME_DIR"]) / _SOCKET
        deadline = time.monotonic() + self._start_timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                tail = log.read_text("utf-8", "replace").strip().splitlines()[-5:]
                raise DesktopSetupError(
                    f"kwin_wayland exited during start-up (status {proc.returncode}): "
                    + " | ".join(tail)
                )
            if socket.exists() and self._kwin_serves():
                return
            time.sleep(0.05)
        raise DesktopSetupError(f"KWin was not ready in {self._start_timeout:.0f} s")

    def _kwin_serves(self) -> bool:
        probe = subprocess.run(
            [
                "dbus-send",
                "--session",
                "--print-reply",
                "--dest=org.kde.KWin",
                "/org/kde/KWin/ScreenShot2",
                "org.freedesktop.DBus.Introspectable.Introspect",
            ],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
        return probe.returncode == 0 and "CaptureArea" in probe.stdout

    def exported(self) -> contextlib.AbstractContextManager[None]:
        """This desktop's session variables in ``os.environ`` (and no X display) until the
        block ends."""
        values: dict[str, str | None] = {key: self.env.get(key) for key in KDE_SESSION_VARS}
        values.update(
            DISPLAY=None,
            XAUTHORITY=None,
            SWAYSOCK=None,
            XDG_SESSION_TYPE="wayland",
            XDG_CURRENT_DESKTOP="KDE",
        )
        return temporary_environ(**values)


__all__ = ["KDE_SESSION_VARS", "KdeDesktop"]
