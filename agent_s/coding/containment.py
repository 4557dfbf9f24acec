"""Keeping a block of code in: what it can see and reach, and that nothing it starts outlives it.

``code_runner`` runs each block as ``[prlimit ..., WRAPPER ..., LAUNCHER ..., python3 -u FILE]``.
This module builds the WRAPPER and LAUNCHER parts (argv lists) and ends what is left of a block.

The wrapper, one of two:

* the sandbox (``--code-sandbox bwrap``, ``sandbox_argv``): bubblewrap with the file system
  read-only except the working folder, the extra writable folders and the runner's scratch
  folder; the user's home (``user_homes``: the desktop's HOME, the agent's, the account's)
  under an empty read-only tmpfs unless it is a writable folder or inside one
  (``private_homes``; writable folders and the interpreters inside it are bound back), so
  code on a virtual desktop, in a practice check or a Best-of-N attempt neither reads nor
  writes the real home; fresh tmpfs over ``/tmp`` and ``/run`` (so the X server's socket folder
  ``/tmp/.X11-unix``, the session bus under ``/run/user``, the system bus, systemd's and
  container engines' sockets are not there), the session's own sockets named in the
  environment (``XDG_RUNTIME_DIR``, ``DBUS_SESSION_BUS_ADDRESS``, ``SSH_AUTH_SOCK``) and the home's
  ``.ssh``/``.gnupg``/``.docker`` hidden too; new user/PID/IPC/UTS/network/cgroup namespaces
  (no network, and the X server's abstract socket lives in another network namespace), a
  fresh /dev and /proc, a new session (no TIOCSTI), no capabilities (as root: no unmounting
  the tmpfs to look under it), and only a short, explicit environment (``sandbox_environment``):
  no DISPLAY, XAUTHORITY or D-Bus address. HOME is a fresh empty folder inside the scratch
  folder, or the working folder when that is the desktop's HOME (the code agent's default:
  ``~`` then means what the task means; a virtual desktop's HOME is itself fresh, one per
  desktop, task or attempt). The working folder stays writable as the current folder (also
  when it is the real home, the default of the code agent on the user's desktop). When the
  real home is writable that way, its shell and session start-up files that exist
  (``.bashrc``, ``.profile``, ``.config/autostart``, ...) are bound read-only over themselves;
  ones that do not exist yet could still be created there.

* containment only (no sandbox, ``containment_argv``): a new PID namespace with its own /proc,
  nothing else changed (the whole file system, the network and the variables the runner was
  given stay reachable: that is the unsandboxed mode). ``bwrap --dev-bind / / --unshare-pid
  --proc /proc --die-with-parent`` when bubblewrap works, else util-linux ``unshare --pid --fork
  --mount-proc --kill-child`` (with ``--user --map-current-user`` or ``--map-root-user`` when
  not root), whichever works first here (probed once per executable).

Which wrapper: ``--code-sandbox auto`` (the default) is the sandbox wherever bubblewrap works
here (``sandbox_problem``, a real probe), else containment only; ``settle_sandbox`` resolves
it at a command's edge and says, once, when it falls back.

The launcher is ``agent_s/coding/launcher.py`` run as a file (``launcher_argv``, ``python -I -S``,
standard library only) as the first process inside the wrapper: a child subreaper (orphans,
double-forked daemons included, become its children) without the capabilities that would let
root code undo the containment, it starts the interpreter and waits for it. When it ends, the
launcher ends what is still running, writes ``STATUS LEFTOVERS`` to a pipe the runner reads
(``read_report``), and exits. In a PID namespace its exit (or bubblewrap's init's, which
follows) makes the kernel kill whatever remains; a timeout or Ctrl-C in the runner kills the
whole tree from outside (``end_block``, which lists processes with psutil), and killing the
namespace's first process ends the namespace.

Fallback: when no PID namespace can be made (``containment_problem()`` says why), the launcher
runs directly, still as a subreaper that ends every process the block started, but the code
sees the machine's /proc: a process of the same user (not root: the code has fewer
capabilities than the agent) can read the agent's environment through
``/proc/<agent pid>/environ``, and code that kills the launcher first can leave a daemon behind.

Not covered, in any mode: reading files outside the hidden folders (secrets kept elsewhere
stay readable; in the real home when that is the working folder too), and anything the user's
own writable folders allow. An interpreter under a hidden folder is bound back read-only with
its virtual environment and installation (``interpreter_roots``); other programs there (a
``~/.local/bin`` tool) are not.
"""

from __future__ import annotations

import contextlib
import functools
import os
import select
import shutil
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal
from urllib.parse import unquote

import psutil

from agent_s.coding import launcher as _launcher
from agent_s.coding.launcher import end_tree
from agent_s.settings.config import ConfigError

if TYPE_CHECKING:
    from agent_s.settings.config import AgentConfig
    from agent_s.settings.read import Settings

_MASKED = ("/tmp", "/run")  # noqa: S108 - hidden from the sandbox under empty tmpfs
_RUN_KEPT = ("current-system", "booted-system", "wrappers", "opengl-driver", "opengl-driver-32")
_X11 = ("/tmp/.X11-unix", "/tmp/.ICE-unix")  # noqa: S108 - the X server's socket folders
_HOME_HIDDEN = (".ssh", ".gnupg", ".docker")  # agent sockets and keys
_HOME_STARTUP = (
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshenv",
    ".zshrc",
    ".zprofile",
    ".xprofile",
    ".xsessionrc",
    ".xinitrc",
    ".pam_environment",
    ".config/autostart",
    ".config/environment.d",
    ".config/systemd",
)
_KEPT_VARIABLES = ("PATH", "LANG", "LC_ALL", "USER", "LOGNAME")


# -- which containment works here --------------------------------------------------------------


@functools.cache
def _probe(argv: tuple[str, ...]) -> str | None:
    """Why ``argv`` (a wrapper, run with ``true`` inside) does not work; None when it does."""
    true = shutil.which("true") or "/bin/true"
    try:
        done = subprocess.run([*argv, true], capture_output=True, timeout=15, check=False)
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"{Path(argv[0]).name} could not be run: {err}"
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", "replace").strip() or f"status {done.returncode}"
        return f"{Path(argv[0]).name}: {detail}"
    return None


def _candidates() -> list[list[str]]:
    found = []
    if bwrap := shutil.which("bwrap"):
        found.append(
            [
                bwrap,
                "--dev-bind",
                "/",
                "/",
                "--unshare-pid",
                "--proc",
                "/proc",
                "--die-with-parent",
                "--new-session",
                "--",
            ]
        )
    if unshare := shutil.which("unshare"):
        tail = ["--pid", "--fork", "--mount-proc", "--kill-child", "--"]
        if os.geteuid() == 0:
            found.append([unshare, *tail])
        found += [
            [unshare, "--user", "--map-current-user", *tail],
            [unshare, "--user", "--map-root-user", *tail],
        ]
    return found


def containment_argv() -> list[str]:
    """The wrapper that gives a block its own PID namespace (see the module docstring);
    ``[]`` when none works here (the launcher alone then: ``containment_problem()``)."""
    for argv in _candidates():
        if _probe(tuple(argv)) is None:
            return argv
    return []


def containment_problem() -> str | None:
    """Why blocks outside the sandbox cannot get a PID namespace here, and what that means;
    None when they can (probed once per executable)."""
    candidates = _candidates()
    problems = [p for argv in candidates if (p := _probe(tuple(argv))) is not None]
    if candidates and len(problems) < len(candidates):
        return None
    why = "; ".join(dict.fromkeys(problems)) or "neither bubblewrap nor util-linux unshare found"
    return (
        f"no PID namespace for code ({why}): every process a block starts is still ended "
        "with it, but the code can see the machine's processes and may read the agent's "
        "environment through /proc"
    )


# -- which sandbox is in force -------------------------------------------------------------------

Sandbox = Literal["bwrap", "none"]


class ContainmentWarning(UserWarning):
    """Model-written code will run with less containment than the default asks for."""


_told: list[str] = []  # the fallback line, once said in this process


@functools.cache
def sandbox_problem() -> str | None:
    """Why bubblewrap cannot sandbox code on this machine, or None when it can: a real probe
    (a contained ``true`` with every namespace the sandbox makes), run once per process."""
    exe = shutil.which("bwrap")
    if exe is None:
        return "bubblewrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
    argv = [exe, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-all"]
    argv += ["--die-with-parent", *(["--cap-drop", "ALL"] if os.geteuid() == 0 else []), "--"]
    problem = _probe(tuple(argv))
    if problem is None:
        return None
    detail = problem.removeprefix("bwrap: ")
    return f"bwrap cannot create a sandbox here (user namespaces may be disabled): {detail}"


def resolve_sandbox(name: str) -> Sandbox:
    """The sandbox ``--code-sandbox NAME`` means here: ``auto`` (the default) is bubblewrap
    where it works (``sandbox_problem``), else ``none``, the reduced containment (a PID
    namespace of its own, module docstring); ``bwrap`` and ``none`` as given."""
    if name == "auto":
        return "bwrap" if sandbox_problem() is None else "none"
    if name in ("bwrap", "none"):
        return "bwrap" if name == "bwrap" else "none"
    raise ValueError(f"unknown code sandbox {name!r}; use auto, bwrap or none")


def fallback_line() -> str:
    """What ``--code-sandbox auto`` falling back means, and the fix, in one line."""
    return (
        "model-written code and checks run without the bubblewrap sandbox (only in a PID "
        f"namespace of their own, able to write wherever you can): {sandbox_problem()}; "
        "install bubblewrap, or pass --code-sandbox none to accept this"
    )


def settle_sandbox(name: str, say: Callable[[str], None]) -> Sandbox:
    """``resolve_sandbox(name)``, at a command's edge: when ``auto`` falls back to ``none``,
    ``say`` gets ``fallback_line()``, once per process (later callers stay quiet)."""
    sandbox = resolve_sandbox(name)
    if name == "auto" and sandbox == "none" and not _told:
        _told.append(line := fallback_line())
        say(line)
    return sandbox


def settle_settings(settings: Settings, say: Callable[[str], None]) -> Settings:
    """``settings`` with ``--code-sandbox auto`` resolved on this machine, at a command's edge
    (``settle_sandbox``: bubblewrap where it works, else ``none`` and ``say`` gets one line
    naming the fix, once); workers started with them need not probe again."""
    code = settings.code_agent
    sandbox = settle_sandbox(code.sandbox, say)
    return settings.model_copy(update={"code_agent": replace(code, sandbox=sandbox)})


def settle_agent_config(settings: AgentConfig) -> AgentConfig:
    """``settings`` with ``--code-sandbox auto`` resolved here, for the SDK: bubblewrap where it
    works, else the reduced containment, said once as a ``ContainmentWarning`` (a command that
    resolved it already said it in its own words); ``bwrap`` where it cannot work is a
    ``ConfigError``."""
    code = settings.code
    if code.enabled and code.sandbox == "bwrap" and (problem := sandbox_problem()):
        raise ConfigError(
            f"--code-sandbox bwrap cannot be used: {problem}", setting="--code-sandbox"
        )
    if not code.enabled or code.sandbox != "auto":
        return settings

    def warn(line: str) -> None:
        warnings.warn(line, ContainmentWarning, stacklevel=4)

    return replace(settings, code=replace(code, sandbox=settle_sandbox(code.sandbox, warn)))


def sandbox_in_force(name: str) -> tuple[bool, str]:
    """Which containment ``--code-sandbox NAME`` gives code here, in one line; False when it
    is less than the sandbox (``agent-s doctor``)."""
    sandbox, namespace = resolve_sandbox(name), containment_problem()
    if name == "bwrap" and (problem := sandbox_problem()) is not None:
        return False, f"--code-sandbox bwrap cannot be used, so code will not run: {problem}"
    if sandbox == "bwrap":
        return True, (
            f"bubblewrap (--code-sandbox {name}): no network, no display or session bus, "
            "writes only in the working folder"
        )
    given = "none" if name == "none" else f"auto, but {sandbox_problem()}"
    reach = namespace or "code runs in a PID namespace of its own"
    return False, f"no sandbox (--code-sandbox {given}): {reach}; it can write wherever you can"


# -- the sandbox -----------------------------------------------------------------------------


def hidden_in_sandbox(path: Path, also: Sequence[Path] = ()) -> bool:
    """Whether ``path`` lies in a folder the sandbox covers with an empty tmpfs (/tmp, /run,
    and ``also``: the user's home when it is not writable, ``private_homes``)."""
    return any(path.is_relative_to(folder) for folder in (*map(Path, _MASKED), *also))


def user_homes(session: Mapping[str, str]) -> list[Path]:
    """The home folders a block may be near: the ``HOME`` of the variables the runner was
    given (a virtual desktop's, or the user's), this process's ``HOME`` and the account's
    (``pwd``): the real user's, whatever the desktop is."""
    found = [session.get("HOME", ""), os.environ.get("HOME", "")]
    with contextlib.suppress(KeyError, ImportError):
        import pwd

        found.append(pwd.getpwuid(os.getuid()).pw_dir)
    homes = [Path(os.path.realpath(h)) for h in found if h.startswith("/")]
    return [h for h in dict.fromkeys(homes) if h != Path("/") and h.is_dir()]


def private_homes(homes: Sequence[Path], writable: Sequence[Path]) -> list[Path]:
    """The ``homes`` the sandbox hides under an empty tmpfs: each one that is not a writable
    folder nor inside one (the code agent on the user's own desktop works in the real home;
    on a virtual desktop, in a practice check or a Best-of-N attempt it has a HOME of its own,
    and the real one is not there at all). Writable folders inside a hidden home are bound
    back over it."""
    folders = [Path(os.path.realpath(f)) for f in writable]
    kept = [h for h in homes if not hidden_in_sandbox(h)]  # under /tmp or /run: gone anyway
    return [h for h in kept if not any(h.is_relative_to(f) for f in folders)]


def interpreter_roots(argv: Sequence[str], private: Sequence[Path]) -> list[str]:
    """The folders the interpreters in ``argv`` live in, when the sandbox would hide them (a
    checkout or virtual environment under /tmp or /run, or under a ``private`` home): the whole
    virtual environment (its pyvenv.cfg and site-packages) and the installation it was made
    from, else the interpreter's folder and its prefix; bound back read-only."""
    roots = []
    for arg in [*argv, os.path.realpath(sys.executable)]:
        path = Path(arg)
        if not path.is_absolute() or not path.is_file() or not os.access(path, os.X_OK):
            continue
        folder = path.parent
        found = [folder.parent]  # a virtual environment's root, or an installation's prefix
        config = folder.parent / "pyvenv.cfg"
        with contextlib.suppress(OSError, UnicodeDecodeError):
            for line in config.read_text(encoding="utf-8").splitlines():
                key, _, value = line.partition("=")
                if key.strip() == "home" and value.strip().startswith("/"):
                    found.append(Path(value.strip()).parent)
        tops = {Path("/"), *map(Path, _MASKED), *private}
        for root in found:
            if hidden_in_sandbox(root, private):
                roots.append(str(root if root not in tops else path.parent))
    return list(dict.fromkeys(roots))


def _inside(path: Path, folder: Path) -> bool:
    return path != folder and path.is_relative_to(folder)


def _session_sockets(env: Mapping[str, str]) -> list[Path]:
    """Sockets and socket folders of the desktop session that ``env`` points at."""
    found = [Path(p) for p in _X11]
    for name in ("XDG_RUNTIME_DIR", "SSH_AUTH_SOCK", "WAYLAND_DISPLAY"):
        if env.get(name, "").startswith("/"):
            found.append(Path(env[name]))
    for address in env.get("DBUS_SESSION_BUS_ADDRESS", "").split(";"):
        kind, _, keys = address.partition(":")
        for pair in keys.split(",") if kind == "unix" else ():
            key, _, value = pair.partition("=")
            if key == "path" and value:
                found.append(Path(unquote(value)))
    return found


def _hide(path: Path) -> list[str]:
    if path.is_dir():
        return ["--tmpfs", str(path)]
    return ["--ro-bind", "/dev/null", str(path)]  # a socket or file: nothing to connect to


def sandbox_argv(
    bwrap: str,
    *,
    writable: Sequence[Path],
    env: Mapping[str, str],
    session: Mapping[str, str],
    kept: Iterable[str] = (),
    private: Sequence[Path] = (),
) -> list[str]:
    """The bubblewrap wrapper (see the module docstring). ``writable``: the folders bound
    read-write (the working folder first); ``env``: all the block's variables; ``session``:
    the variables the runner was given, to find the session's sockets and the real home;
    ``kept``: files bound back read-only when under a hidden folder (the launcher);
    ``private``: folders hidden whole under an empty tmpfs (``private_homes``)."""
    argv = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    for masked in [*map(Path, _MASKED), *private]:
        if masked.is_dir():
            argv += ["--tmpfs", str(masked)]
    for name in _RUN_KEPT:
        if (kept_path := Path("/run", name)).exists():
            argv += ["--ro-bind", str(kept_path), str(kept_path)]
    home = Path(os.path.realpath(session["HOME"])) if session.get("HOME") else None
    hidden = [Path(os.path.realpath(p)) for p in _session_sockets(session)]
    hidden += [Path(os.path.realpath(home / name)) for name in _HOME_HIDDEN] if home else []
    hidden = [p for p in dict.fromkeys(hidden) if os.path.lexists(p)]
    for path in hidden:
        if not hidden_in_sandbox(path, private):
            argv += _hide(path)
    argv += ["--unshare-all", "--die-with-parent", "--new-session"]
    if os.geteuid() == 0:  # bubblewrap keeps root's capabilities unless told
        argv += ["--cap-drop", "ALL"]
    argv.append("--clearenv")
    for key, value in env.items():
        argv += ["--setenv", key, value]
    folders = list(dict.fromkeys(Path(os.path.realpath(f)) for f in writable if Path(f).is_dir()))
    for folder in folders:
        argv += ["--bind", str(folder), str(folder)]
    # A writable folder that holds a hidden path or the real home's start-up files: again.
    for path in hidden:
        if any(_inside(path, folder) for folder in folders):
            argv += _hide(path)
    startup = [Path(os.path.realpath(home / name)) for name in _HOME_STARTUP] if home else []
    for path in startup:
        if path.exists() and any(_inside(path, folder) for folder in folders):
            argv += ["--ro-bind", str(path), str(path)]
    for kept_file in kept:
        argv += ["--ro-bind", kept_file, kept_file]
    for folder in private:  # once what is bound back into it is there: nothing can be added
        if folder.is_dir():
            argv += ["--remount-ro", str(folder)]
    return [*argv, "--chdir", str(folders[0]) if folders else "/", "--"]


def sandbox_environment(base: Mapping[str, str], *, home: Path, tmpdir: Path) -> dict[str, str]:
    """The short environment of sandboxed code: from ``base`` (already without secrets) only
    PATH, LANG/LC_ALL, USER/LOGNAME and PYTHON* settings; HOME and TMPDIR given; TERM=dumb."""
    env = {k: v for k, v in base.items() if k in _KEPT_VARIABLES or k.startswith("PYTHON")}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.setdefault("LANG", "C.UTF-8")
    env.update(HOME=str(home), TMPDIR=str(tmpdir), TERM="dumb")
    return env


# -- the launcher ------------------------------------------------------------------------------


def launcher_argv(report_fd: int, command: Sequence[str]) -> list[str]:
    """The launcher run as the block's first process (module docstring): it runs ``command``
    and writes its wait status and the count of leftovers to ``report_fd``."""
    python = os.path.realpath(sys.executable)
    return [python, "-I", "-S", launcher_file(), str(report_fd), "--", *command]


def launcher_file() -> str:
    """``agent_s/coding/launcher.py``, run as a file: it must not import psutil or ``agent_s``."""
    return os.path.realpath(_launcher.__file__)


def read_report(fd: int, timeout: float = 1.0) -> tuple[int | None, int]:
    """The launcher's report: (the wait status of the block's process or None, leftovers)."""
    data = b""
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0 and select.select([fd], [], [], left)[0]:
        chunk = os.read(fd, 256)
        if not chunk:
            break
        data += chunk
    fields = data.decode("ascii", "replace").split()
    if len(fields) != 2 or not fields[1].isdigit():
        return None, 0
    return (int(fields[0]) if fields[0].lstrip("-").isdigit() else None), int(fields[1])


# -- ending a block ----------------------------------------------------------------------------


def block_processes(root: int, *, session: bool = True) -> list[int]:
    """The live processes of the block whose first process is ``root``: every descendant
    (also one that started a session of its own) and, with ``session``, every member of
    ``root``'s session or process group. ``root`` itself is included; this process is not.
    Zombies do not count (they are dead; their parent may just not have reaped them yet)."""
    found: set[int] = set()
    if session:
        for pid in psutil.pids():
            with contextlib.suppress(OSError):
                if root in (os.getpgid(pid), os.getsid(pid)):
                    found.add(pid)
    with contextlib.suppress(psutil.Error):
        top = psutil.Process(root)
        found |= {proc.pid for proc in [top, *top.children(recursive=True)]}
    found.discard(os.getpid())
    return sorted(pid for pid in found if _live(pid))


def _live(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() not in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD)
    except psutil.Error:
        return False


def end_block(
    root: int, *, session: bool = True, between: Callable[[], None] = lambda: None
) -> int:
    """End every process of a block (``block_processes``): SIGTERM, then SIGKILL, listing them
    again each round so that processes forked meanwhile go too; ``root`` last, since a
    launcher (a subreaper) keeps catching orphans while it lives. Killing a PID namespace's
    first process ends the namespace. Returns how many were running, ``root`` not counted.
    ``between``: called while waiting."""
    return end_tree(
        root,
        lambda: block_processes(root, session=session),
        group=root if session else None,
        between=between,
    )
