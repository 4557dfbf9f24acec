"""KWin's authorisation for agent-s: the helper program, its desktop entry, and the two
connections it hands over.

KWin lets a client use its screenshot interface (``org.kde.KWin.ScreenShot2``, D-Bus) and its
fake-input protocol (``org_kde_kwin_fake_input``, Wayland) only when the client's executable
(``/proc/PID/exe``) has an installed ``.desktop`` entry whose ``Exec`` is that file and which
names the interfaces (``X-KDE-DBUS-Restricted-Interfaces``, ``X-KDE-Wayland-Interfaces``).
For agent-s the executable would be the Python interpreter, and authorising it would
authorise every Python program. So a small helper of our own is authorised instead
(``kwin_access.c``, built with the system's C compiler): it connects to the compositor and to
the session bus, hands both sockets to agent-s and stays alive, so KWin sees the helper at
the end of both connections; agent-s speaks the protocols on them (``_wlwire``, Gio).

The user grants this once with ``agent-s setup kde``: the helper goes to
``$XDG_DATA_HOME/agent-s/agent-s-kwin-access``, its entry to
``$XDG_DATA_HOME/applications/agent-s-kwin-access.desktop`` (KWin reads new entries without a
restart). A virtual KDE desktop builds its own helper and entry in its private folder
(``AGENT_S_KWIN_ACCESS`` names the helper then).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from agent_s.errors import DesktopSetupError, DisplayUnavailableError
from agent_s.guards import files

HELPER_NAME = "agent-s-kwin-access"
ENTRY_NAME = f"{HELPER_NAME}.desktop"
HELPER_VAR = "AGENT_S_KWIN_ACCESS"  # the helper to run, when not the user's installed one
DBUS_INTERFACE = "org.kde.KWin.ScreenShot2"
WAYLAND_INTERFACE = "org_kde_kwin_fake_input"
SETUP_COMMAND = "agent-s setup kde"
_SOURCE = Path(__file__).with_name("kwin_access.c")


def data_home(env: Mapping[str, str]) -> Path:
    """``$XDG_DATA_HOME``, or ``~/.local/share`` of the session's HOME."""
    named = env.get("XDG_DATA_HOME")
    if named:
        return Path(named)
    return Path(env.get("HOME") or Path.home()) / ".local" / "share"


def helper_path(env: Mapping[str, str]) -> Path:
    """The helper this session runs: ``AGENT_S_KWIN_ACCESS``, else the user's installed one."""
    named = env.get(HELPER_VAR)
    if named:
        return Path(named)
    return data_home(env) / "agent-s" / HELPER_NAME


def entry_path(applications: Path) -> Path:
    return applications / ENTRY_NAME


def entry_text(helper: Path) -> str:
    """The desktop entry that authorises ``helper`` (an absolute path) in KWin."""
    return (
        "[Desktop Entry]\n"
        "Type=Application\n"
        "Name=agent-s KWin access\n"
        "Comment=Lets agent-s read the screen and send input on KDE Plasma (Wayland)\n"
        f"Exec={helper}\n"
        "NoDisplay=true\n"
        f"X-KDE-DBUS-Restricted-Interfaces={DBUS_INTERFACE}\n"
        f"X-KDE-Wayland-Interfaces={WAYLAND_INTERFACE}\n"
    )


def build_helper(dest: Path, env: Mapping[str, str] | None = None) -> Path:
    """Compile the helper to ``dest`` with the system's C compiler (built in a private
    folder, then written in place following no link)."""
    path = (env or os.environ).get("PATH", os.defpath)
    compiler = next((c for c in ("cc", "gcc", "clang") if shutil.which(c, path=path)), None)
    if compiler is None:
        raise DesktopSetupError(
            "the KDE backend builds a small helper that KWin authorises, and no C compiler was "
            "found: apt-get install gcc (or dnf install gcc), then run " + SETUP_COMMAND
        )
    files.output_folder(dest.parent)
    with tempfile.TemporaryDirectory(prefix="agent-s-kwin-") as private:
        built = Path(private) / HELPER_NAME
        result = subprocess.run(
            [compiler, "-O2", "-o", str(built), str(_SOURCE)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if result.returncode != 0:
            raise DesktopSetupError(
                f"{compiler} could not build {HELPER_NAME}: {result.stderr.strip()[-400:]} "
                "(the C library headers are in libc6-dev)"
            )
        files.write_bytes(dest, files.read_bytes(built), mode=0o755)
    return dest


def install(helper: Path, applications: Path, env: Mapping[str, str] | None = None) -> Path:
    """Build the helper at ``helper`` and authorise it with an entry in ``applications``;
    return the entry's path."""
    build_helper(helper, env)
    files.output_folder(applications)
    entry = entry_path(applications)
    files.write_text(entry, entry_text(helper.resolve()))
    return entry


def install_for_user(env: Mapping[str, str]) -> tuple[Path, Path]:
    """What ``agent-s setup kde`` does: (helper, entry) in the user's data folder."""
    home = data_home(env)
    helper = home / "agent-s" / HELPER_NAME
    return helper, install(helper, home / "applications", env)


@dataclass(frozen=True)
class Authorisation:
    """Whether this session's helper is built and authorised; ``missing``: what is not."""

    helper: Path
    entry: Path
    missing: str = ""

    @property
    def ok(self) -> bool:
        return not self.missing

    @property
    def fix(self) -> str:
        return (
            f"run `{SETUP_COMMAND}` once (it builds {self.helper} and writes {self.entry}:\n"
            + entry_text(self.helper)
            + "); KWin reads it without a restart"
        )


def authorisation(env: Mapping[str, str]) -> Authorisation:
    """Read what is in place: the helper, and an entry naming it with both interfaces."""
    helper = helper_path(env)
    applications = (
        helper.parent / "applications" if env.get(HELPER_VAR) else data_home(env) / "applications"
    )
    entry = entry_path(applications)
    if not os.access(helper, os.X_OK):
        return Authorisation(helper, entry, f"the helper {helper} is not installed")
    try:
        text = entry.read_text(encoding="utf-8")
    except OSError:
        return Authorisation(helper, entry, f"the desktop entry {entry} is missing")
    lines = {line.strip() for line in text.splitlines()}
    for wanted in entry_text(helper.resolve()).splitlines():
        if wanted.startswith(("Exec=", "X-KDE-")) and wanted not in lines:
            return Authorisation(helper, entry, f"{entry} lacks the line {wanted}")
    return Authorisation(helper, entry)


def bus_socket(env: Mapping[str, str]) -> str:
    """The session bus's socket (a path, or ``@name`` for an abstract one)."""
    address = env.get("DBUS_SESSION_BUS_ADDRESS", "")
    for part in address.split(";"):
        transport, _, params = part.partition(":")
        if transport != "unix":
            continue
        values = dict(p.split("=", 1) for p in params.split(",") if "=" in p)
        if "path" in values:
            return _unescape(values["path"])
        if "abstract" in values:
            return "@" + _unescape(values["abstract"])
    raise DisplayUnavailableError(
        "the KDE backend needs the session bus: DBUS_SESSION_BUS_ADDRESS is "
        f"{address or 'not set'} (a unix socket is needed); run agent-s inside the Plasma session"
    )


def _unescape(value: str) -> str:
    """D-Bus address values escape bytes as %XX."""
    out, index = bytearray(), 0
    raw = value.encode("utf-8")
    while index < len(raw):
        if raw[index : index + 1] == b"%" and index + 2 < len(raw) + 1:
            out.append(int(raw[index + 1 : index + 3], 16))
            index += 3
        else:
            out.append(raw[index])
            index += 1
    return out.decode("utf-8")


@dataclass
class Connections:
    """The compositor and session-bus sockets the helper connected, and the helper (which
    must live while they are used: ``close()`` ends it)."""

    wayland: socket.socket
    bus: socket.socket
    helper: subprocess.Popen[bytes]
    _ours: socket.socket

    def close(self) -> None:
        for sock in (self.wayland, self.bus, self._ours):
            sock.close()
        try:
            self.helper.wait(2.0)  # its standard input closed: it exits
        except subprocess.TimeoutExpired:
            self.helper.kill()
            self.helper.wait()


def connect(env: Mapping[str, str], wayland_socket: Path) -> Connections:
    """Run the helper; return the connections it made (``DesktopSetupError`` when it is not
    there or cannot connect)."""
    helper = helper_path(env)
    if not os.access(helper, os.X_OK):
        raise DesktopSetupError(
            f"KWin lets agent-s read the screen and send input only through its helper, which "
            f"is not installed ({helper}): {authorisation(env).fix}"
        )
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        proc = subprocess.Popen(
            [str(helper), str(wayland_socket), bus_socket(env)],
            stdin=theirs.fileno(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env={"PATH": os.defpath},
            close_fds=True,
        )
    except OSError as err:
        ours.close()
        raise DesktopSetupError(f"cannot run {helper}: {err}") from err
    finally:
        theirs.close()
    ours.settimeout(10.0)
    try:
        _data, fds, _flags, _addr = socket.recv_fds(ours, 1, 2)
    except (OSError, TimeoutError):
        fds = []
    if len(fds) != 2:
        for fd in fds:
            os.close(fd)
        ours.close()
        proc.kill()
        _out, said = proc.communicate()
        detail = said.decode("utf-8", "replace").strip() or f"status {proc.returncode}"
        raise DisplayUnavailableError(f"{helper.name} could not connect: {detail}")
    ours.settimeout(None)
    if proc.stderr is not None:
        proc.stderr.close()  # it writes only when it fails to connect
    return Connections(socket.socket(fileno=fds[0]), socket.socket(fileno=fds[1]), proc, ours)


__all__ = [
    "DBUS_INTERFACE",
    "HELPER_VAR",
    "SETUP_COMMAND",
    "WAYLAND_INTERFACE",
    "Authorisation",
    "Connections",
    "authorisation",
    "build_helper",
    "connect",
    "entry_text",
    "install",
    "install_for_user",
]
