"""A virtual Wayland desktop: sway, headless, with its own runtime folder and session bus.

``VirtualDesktop(kind="wayland")`` makes one of these. sway runs with no GPU and no input
devices (``WLR_BACKENDS=headless WLR_RENDERER=pixman WLR_LIBINPUT_NO_DEVICES=1``), one headless
output per monitor; ``WaylandBackend`` drives it (grim, wtype, a virtual pointer, sway's IPC).

sway refuses to run as root ("Unable to drop root"), so when this process is root, sway, the
session bus and every program ``launch`` starts run as a dedicated unprivileged user
(``agent-s-wayland``, made with ``useradd`` the first time; ``AGENT_S_WAYLAND_USER`` names
another), through ``setpriv``. The runtime folder and a temporary HOME belong to that user.
Everything else is the X11 ``VirtualDesktop``'s: the marker in every program's environment,
the watchdog, and ``stop()``, which ends them all and removes the desktop's files.

    with VirtualDesktop(kind="wayland", home="temp") as desk:
        backend = WaylandBackend(desk.env, launcher=desk.launcher)
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import time
from pathlib import Path

from agent_s.desktop.base import Monitor
from agent_s.desktop.common import temporary_environ
from agent_s.desktop.virtual import VirtualDesktop
from agent_s.desktop.wayland import _IPC_OUTPUTS, REQUIRED_TOOLS, SwayIPC
from agent_s.errors import DesktopSetupError

USER_VAR = "AGENT_S_WAYLAND_USER"
DEFAULT_USER = "agent-s-wayland"
#: What a Wayland client of the desktop needs (and the session bus, for accessibility).
WAYLAND_SESSION_VARS = (
    "WAYLAND_DISPLAY",
    "XDG_RUNTIME_DIR",
    "SWAYSOCK",
    "DBUS_SESSION_BUS_ADDRESS",
)
_SWAY_CONFIG = """\
xwayland disable
default_border none
default_floating_border none
focus_follows_mouse no
mouse_warping none
focus_on_window_activation focus
"""


def desktop_user() -> pwd.struct_passwd:
    """The unprivileged user a root process runs sway as; made with useradd if missing."""
    name = os.environ.get(USER_VAR) or DEFAULT_USER
    with contextlib.suppress(KeyError):
        return _unprivileged(pwd.getpwnam(name))
    if os.environ.get(USER_VAR):
        raise DesktopSetupError(f"{USER_VAR} names the user {name!r}, which does not exist")
    if shutil.which("useradd") is None:
        raise DesktopSetupError(
            f"sway cannot run as root and the user {name!r} does not exist; create an "
            f"unprivileged user and name it in {USER_VAR}"
        )
    result = subprocess.run(
        [
            "useradd",
            "--system",
            "--user-group",
            "--create-home",
            "--home-dir",
            f"/var/lib/{name}",
            "--shell",
            "/usr/sbin/nologin",
            "--comment",
            "agent-s virtual Wayland desktops",
            name,
        ],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    try:  # another desktop may have made it at the same moment
        return _unprivileged(pwd.getpwnam(name))
    except KeyError:
        raise DesktopSetupError(
            f"cannot create the user {name!r} for sway: {result.stderr.strip()}; create an "
            f"unprivileged user and name it in {USER_VAR}"
        ) from None


def _unprivileged(user: pwd.struct_passwd) -> pwd.struct_passwd:
    if user.pw_uid == 0:
        raise DesktopSetupError(f"{user.pw_name!r} is root: sway needs an unprivileged user")
    return user


class WaylandDesktop(VirtualDesktop):
    """A headless sway desktop, started and stopped by this object (see the module)."""

    kind = "wayland"
    _user: pwd.struct_passwd | None = None  # whom sway runs as, when this process is root

    # -- life cycle ---------------------------------------------------------------------------

    def _check_installed(self) -> None:
        needed = {"sway": "sway", **REQUIRED_TOOLS}
        if os.geteuid() == 0:
            needed["setpriv"] = "util-linux"
        missing = sorted({pkg for exe, pkg in needed.items() if shutil.which(exe) is None})
        if missing:
            raise DesktopSetupError(
                f"cannot start a virtual Wayland desktop: apt-get install {' '.join(missing)} "
                "(or run scripts/setup.sh)"
            )

    def _start_session(self) -> None:
        """sway, as the desktop's own user when this process is root, and the session bus;
        ``window_manager`` and ``depth`` change nothing (sway is the window manager)."""
        if os.geteuid() == 0:
            self._user = desktop_user()
            self.launcher = [
                "setpriv",
                f"--reuid={self._user.pw_uid}",
                f"--regid={self._user.pw_gid}",
                "--init-groups",
                "--",
            ]
        self._start_sway()
        self._setup_home()
        self._give_home()
        if self._accessibility:
            self._start_dbus()

    # -- programs on the desktop ----------------------------------------------------------------

    def _launch_cwd(self) -> str | None:
        if self._user is None:
            return None
        return self.env.get("HOME") or self._user.pw_dir  # ours may be closed to that user

    def exported(self) -> contextlib.AbstractContextManager[None]:
        """This desktop's session variables in ``os.environ`` (and no X display) until the
        block ends."""
        values: dict[str, str | None] = {key: self.env.get(key) for key in WAYLAND_SESSION_VARS}
        values.update(DISPLAY=None, XAUTHORITY=None, XDG_SESSION_TYPE="wayland")
        return temporary_environ(**values)

    # -- start-up steps -------------------------------------------------------------------------

    def _chown(self, path: Path) -> None:
        if self._user is not None:
            os.chown(path, self._user.pw_uid, self._user.pw_gid)

    def _outputs(self) -> tuple[Monitor, ...]:
        if self.monitors:
            return self.monitors
        return (Monitor(0, 0, self.width, self.height, primary=True),)

    def _start_sway(self) -> None:
        workdir = self._workdir
        workdir.chmod(0o711)  # the desktop's user reaches its runtime folder and config inside
        runtime = workdir / "runtime"
        runtime.mkdir(mode=0o700)
        self._chown(runtime)
        outputs = self._outputs()
        config = workdir / "sway.config"
        lines = [_SWAY_CONFIG]
        for index, m in enumerate(outputs, start=1):
            lines.append(
                f"output HEADLESS-{index} resolution {m.width}x{m.height} "
                f"position {m.x} {m.y} scale {m.scale:g}\n"
            )
        config.write_text("".join(lines), encoding="utf-8")
        config.chmod(0o644)
        env = self._base_env()
        env.update(
            XDG_SESSION_TYPE="wayland",
            XDG_CURRENT_DESKTOP="sway",
            XDG_RUNTIME_DIR=str(runtime),
            WLR_BACKENDS="headless",
            WLR_RENDERER="pixman",
            WLR_LIBINPUT_NO_DEVICES="1",
            WLR_HEADLESS_OUTPUTS=str(len(outputs)),
            GDK_BACKEND="wayland",
            QT_QPA_PLATFORM="wayland",
            MOZ_ENABLE_WAYLAND="1",
            SDL_VIDEODRIVER="wayland",
        )
        if self._user is not None:  # sway's own HOME; the session's comes with _setup_home
            env["HOME"] = self._user.pw_dir
        log = workdir / "sway.log"
        with log.open("wb") as out:
            try:
                proc = subprocess.Popen(
                    [*self.launcher, "sway", "--config", str(config)],
                    env=env,
                    cwd=env.get("HOME") if self._user is not None else None,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=out,
                    start_new_session=True,
                )
            except OSError as err:
                raise DesktopSetupError(f"cannot start sway: {err}") from err
        self._adopt(proc)
        display, ipc = self._wait_for_sway(proc, runtime, log, outputs)
        self.display = display
        env.update(WAYLAND_DISPLAY=display, SWAYSOCK=str(ipc.path))
        for key in ("WLR_BACKENDS", "WLR_RENDERER", "WLR_LIBINPUT_NO_DEVICES"):
            env.pop(key)  # the compositor's settings, not its clients'
        env.pop("WLR_HEADLESS_OUTPUTS")
        self.env = env

    def _wait_for_sway(
        self,
        proc: subprocess.Popen[bytes],
        runtime: Path,
        log: Path,
        outputs: tuple[Monitor, ...],
    ) -> tuple[str, SwayIPC]:
        """The Wayland socket's name and sway's IPC once every output has its size."""
        wanted = {(m.x, m.y, m.width, m.height) for m in outputs}
        seen: set[tuple[int, int, int, int]] = set()
        deadline = time.monotonic() + self._start_timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                tail = log.read_text("utf-8", "replace").strip().splitlines()[-5:]
                raise DesktopSetupError(
                    f"sway exited during start-up (status {proc.returncode}): " + " | ".join(tail)
                )
            sockets = [p for p in runtime.glob("wayland-*") if not p.name.endswith(".lock")]
            ipcs = list(runtime.glob("sway-ipc.*.sock"))
            if sockets and ipcs:
                ipc = SwayIPC(ipcs[0])
                with contextlib.suppress(Exception):
                    reply = ipc.request(_IPC_OUTPUTS, timeout=2.0)
                    seen = {
                        (o["rect"]["x"], o["rect"]["y"], o["rect"]["width"], o["rect"]["height"])
                        for o in reply
                        if o.get("active")
                    }
                    if seen == wanted:
                        return sockets[0].name, ipc
            time.sleep(0.05)
        raise DesktopSetupError(
            f"sway was not ready in {self._start_timeout:.0f} s (outputs {sorted(seen)}, "
            f"wanted {sorted(wanted)})"
        )

    def _give_home(self) -> None:
        """A HOME this desktop made belongs to its user (its programs write their settings)."""
        if self._user is None or self._home is None:
            return
        if self._home_arg == "temp":
            for folder, dirs, files in os.walk(self._home):
                self._chown(Path(folder))
                for name in (*dirs, *files):
                    with contextlib.suppress(OSError):
                        os.chown(
                            Path(folder) / name,
                            self._user.pw_uid,
                            self._user.pw_gid,
                            follow_symlinks=False,
                        )
        else:
            for sub in ("", ".config", ".local", ".local/share", ".cache", ".config/gtk-3.0"):
                with contextlib.suppress(OSError):
                    if (self._home / sub).stat().st_uid == 0:
                        self._chown(self._home / sub)


__all__ = ["DEFAULT_USER", "USER_VAR", "WAYLAND_SESSION_VARS", "WaylandDesktop", "desktop_user"]
