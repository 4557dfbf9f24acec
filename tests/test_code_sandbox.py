"""Attacks on the code runner, each one real code run through ``CodeRunner``, judged by its effect.

Under the bubblewrap sandbox: the desktop's X server and session bus, the agent's environment,
the real home, folders that are not allowed, the network, the machine's processes, and
unmounting what hides them. In every mode (the sandbox; containment by bubblewrap, by
util-linux unshare, and the subreaper fallback): a daemon that double-forks, starts a session
and ignores SIGTERM does not outlive its block (ended normally, at the timeout, by Ctrl-C), and
outside the sandbox the agent's own environment is not readable through /proc. As root, the
daemon and the environment attacks also run as an ordinary user (``setpriv``), where user
namespaces do the work (and where the fallback does show the agent's environment: its
documented limit, which ``containment_problem()`` reports).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from polling import wait_until

from agent_s.coding.containment import (
    containment_argv,
    containment_problem,
    launcher_argv,
    read_report,
)
from agent_s.coding.runner import CodeRun, CodeRunner, RunnerSettings, sandbox_problem

BWRAP = sandbox_problem()
needs_bwrap = pytest.mark.skipif(BWRAP is not None, reason=f"bubblewrap cannot run: {BWRAP}")
MODES = ("sandbox", "bwrap", "unshare", "subreaper")
SECRET = "sk-fake-0123456789abcdef"  # noqa: S105 - a fake API key in the agent's environment
_TOOLS = ("bash", "prlimit", "sleep", "env", "cat", "true", "umount")
SETPRIV = shutil.which("setpriv")


@pytest.fixture
def work(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


@pytest.fixture
def visible(tmp_path: Path) -> Iterator[Path]:
    """A folder outside /tmp (the sandbox puts an empty tmpfs over /tmp): there the sandbox
    sees the real files, read-only."""
    if not os.access("/var/tmp", os.W_OK):  # noqa: S108 - a test folder, removed after
        pytest.skip("/var/tmp is not writable")
    folder = Path(tempfile.mkdtemp(prefix="agent-s-test-", dir="/var/tmp"))  # noqa: S108
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def use_mode(mode: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Runner settings for ``mode``; for unshare and the fallback, PATH without bubblewrap
    (and without unshare), as on a machine that lacks them."""
    if mode in ("sandbox", "bwrap") and BWRAP is not None:
        pytest.skip(f"bubblewrap cannot run: {BWRAP}")
    if mode in ("unshare", "subreaper"):
        tools = tmp_path / f"bin-{mode}"
        tools.mkdir(exist_ok=True)
        for name in _TOOLS + (("unshare",) if mode == "unshare" else ()):
            if (found := shutil.which(name)) and not (tools / name).exists():
                (tools / name).symlink_to(found)
        monkeypatch.setenv("PATH", str(tools))
    wrapper = containment_argv()
    used = Path(wrapper[0]).name if wrapper else "subreaper"
    if used != ("bwrap" if mode == "sandbox" else mode):
        pytest.skip(f"{mode} containment does not work here ({containment_problem()})")
    sandbox = "bwrap" if mode == "sandbox" else "none"
    return {"sandbox": sandbox, "env": dict(os.environ), "python": sys.executable}


def marked(token: str) -> list[int]:
    """Live processes (not zombies) whose command line holds ``token``."""
    found = []
    for proc in psutil.process_iter():
        with contextlib.suppress(psutil.Error):
            live = proc.status() not in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD)
            if live and proc.pid != os.getpid() and token in "\0".join(proc.cmdline()):
                found.append(proc.pid)
    return found


def report(run: CodeRun) -> dict[str, Any]:
    assert run.ok, f"{run.stopped}\n{run.stdout.text}\n{run.stderr.text}"
    return json.loads(run.stdout.text.splitlines()[-1])


def test_the_launcher_runs_without_site_packages_and_reports() -> None:
    """The launcher runs as ``python -I -S`` (inside the sandbox too): standard library only,
    no psutil, no agent_s. It runs the command and reports its status and leftovers."""
    read_fd, write_fd = os.pipe()
    try:
        script = "import subprocess; subprocess.Popen(['sleep', '60']); raise SystemExit(3)"
        argv = launcher_argv(write_fd, [sys.executable, "-c", script])
        assert argv[1:3] == ["-I", "-S"]
        done = subprocess.run(argv, pass_fds=(write_fd,), capture_output=True, timeout=30)
        os.close(write_fd)
        write_fd = -1
        assert done.returncode == 3, done.stderr.decode()
        status, leftovers = read_report(read_fd)
        assert status is not None
        assert os.waitstatus_to_exitcode(status) == 3
        assert leftovers == 1  # the sleep, ended by the launcher
    finally:
        os.close(read_fd)
        if write_fd >= 0:
            os.close(write_fd)


# -- a daemon that tries to outlive its block ----------------------------------------------------

_BEAT = (
    "import signal, sys, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "while True:\n"
    "    open(sys.argv[1], 'a').write('beat\\n')\n"
    "    time.sleep(0.05)\n"
)


def daemon_block(heart: Path, token: str, then: str = "") -> str:
    """Python: double fork, setsid, stdio away from the block's pipes, SIGTERM ignored, a
    heartbeat file written every 50 ms; ``token`` on its command line. The block waits for
    the first beat, says so, then does ``then``."""
    return textwrap.dedent(f"""
        import os, sys, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                null = os.open(os.devnull, os.O_RDWR)
                for fd in (0, 1, 2):
                    os.dup2(null, fd)
                os.execv(sys.executable, [sys.executable, "-c", {_BEAT!r}, {str(heart)!r},
                                          {token!r}])
            os._exit(0)
        os.wait()
        deadline = time.monotonic() + 10
        while not os.path.exists({str(heart)!r}) and time.monotonic() < deadline:
            time.sleep(0.02)
        print("daemon beating:", os.path.exists({str(heart)!r}), flush=True)
        {then}
    """)


def assert_dead(heart: Path, token: str) -> None:
    assert heart.exists(), "the daemon never ran"
    assert not marked(token), "the daemon outlived its block"
    size = heart.stat().st_size
    time.sleep(0.3)
    assert heart.stat().st_size == size, "the heartbeat goes on"


@pytest.mark.parametrize("mode", MODES)
def test_a_double_forked_daemon_ignoring_sigterm_dies_with_its_block(
    mode: str, work: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    values = use_mode(mode, tmp_path, monkeypatch)
    token = f"daemon-{os.getpid()}-{time.monotonic_ns()}"
    heart = work / "heart"
    with CodeRunner(RunnerSettings(workdir=work, timeout_s=20, **values)) as runner:
        run = runner.run("python", daemon_block(heart, token))
    assert run.ok, run.stderr.text
    assert run.stdout.text == "daemon beating: True\n"
    assert run.killed_leftovers == 1
    assert run.seconds < 5
    assert_dead(heart, token)


@pytest.mark.parametrize("mode", MODES)
def test_a_daemon_is_killed_with_a_block_that_times_out(
    mode: str, work: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    values = use_mode(mode, tmp_path, monkeypatch)
    token = f"daemon-{os.getpid()}-{time.monotonic_ns()}"
    heart = work / "heart"
    with CodeRunner(RunnerSettings(workdir=work, timeout_s=2, **values)) as runner:
        run = runner.run("python", daemon_block(heart, token, then="time.sleep(300)"))
    assert run.timed_out
    assert run.stdout.text == "daemon beating: True\n"
    assert run.seconds < 6
    assert_dead(heart, token)


_CTRL_C_DRIVER = """
import sys
from pathlib import Path
from agent_s.coding.runner import CodeRunner, RunnerSettings
work, code = Path(sys.argv[1]), sys.argv[2]
with CodeRunner(RunnerSettings(workdir=work, timeout_s=120, python=sys.executable,
                               sandbox=sys.argv[3])) as runner:
    runner.run("python", code)
"""


@pytest.mark.parametrize("mode", MODES)
def test_ctrl_c_in_the_agent_kills_a_daemon_of_the_running_block(
    mode: str, work: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    values = use_mode(mode, tmp_path, monkeypatch)
    token = f"daemon-{os.getpid()}-{time.monotonic_ns()}"
    heart = work / "heart"
    code = daemon_block(heart, token, then="time.sleep(300)")
    driver = subprocess.Popen(
        [sys.executable, "-c", _CTRL_C_DRIVER, str(work), code, values["sandbox"]],
        stderr=subprocess.PIPE,
        text=True,
        env=values["env"],
    )
    wait_until(lambda: heart.exists() or driver.poll() is not None, 20, "the daemon's heartbeat")
    assert driver.poll() is None, driver.communicate()
    assert marked(token)
    driver.send_signal(signal.SIGINT)
    _, stderr = driver.communicate(timeout=20)
    assert "KeyboardInterrupt" in stderr
    assert_dead(heart, token)


# -- the agent's environment -------------------------------------------------------------------

_ENVIRON_SCAN = """
import json, os, subprocess, sys, time
secret, mark = sys.argv[1], sys.argv[2]
# Undo the fresh /proc if we can (root: CAP_SYS_ADMIN), then look through every process.
try:
    unmounted = subprocess.run(["umount", "-l", "/proc"], capture_output=True).returncode == 0
except OSError:
    unmounted = False
# A process of our own holding the secret shows the scan would find it.
bait = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"],
                        env={"BAIT": secret})
time.sleep(0.2)
found, marked, readable = [], [], 0
for entry in os.listdir("/proc"):
    if entry.isdigit():
        try:
            data = open(f"/proc/{entry}/environ", "rb").read()
        except OSError:
            continue
        readable += 1
        if secret.encode() in data:
            found.append(int(entry))
        if mark.encode() in data:
            marked.append(int(entry))
try:  # the launcher, or the agent itself in the fallback
    parent = secret.encode() in open(f"/proc/{os.getppid()}/environ", "rb").read()
except OSError as err:
    parent = err.strerror
bait.kill()
print(json.dumps({"found": found, "marked": marked, "bait": bait.pid, "readable": readable,
                  "parent_has_secret": parent,
                  "own": {k: v for k, v in os.environ.items() if secret in v or mark in v},
                  "unmounted": unmounted}))
"""

_AGENT_DRIVER = """
import sys
from pathlib import Path
from agent_s.coding.runner import CodeRunner, RunnerSettings
work, code, sandbox = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
with CodeRunner(RunnerSettings(workdir=work, python=sys.executable, sandbox=sandbox)) as runner:
    run = runner.run("python", code)
print(run.stdout.text, end="")
print(run.stderr.text, end="", file=sys.stderr)
"""


def run_in_an_agent(
    work: Path, code: str, sandbox: str, env: dict[str, str], user: list[str] | None = None
) -> str:
    """The stdout of the python block ``code`` run by an agent process (a child python with
    ``env``, as ``user`` when given)."""
    done = subprocess.run(
        [*(user or []), sys.executable, "-c", _AGENT_DRIVER, str(work), code, sandbox],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip(), done.stderr
    return done.stdout


def scan_from_an_agent(
    work: Path, sandbox: str, env: dict[str, str], user: list[str] | None = None
) -> dict[str, Any]:
    """Run the /proc scan as a block of an agent process whose own environment holds the
    secret (``FAKE_API_KEY``) and a marker under an innocent name (``AGENT_PRIVATE_MARK``,
    which only the sandbox keeps from unsandboxed code)."""
    mark = f"mark-{time.monotonic_ns()}"
    code = _ENVIRON_SCAN.replace("sys.argv[1], sys.argv[2]", f"{SECRET!r}, {mark!r}")
    agent_env = {**env, "FAKE_API_KEY": SECRET, "AGENT_PRIVATE_MARK": mark}
    result = json.loads(run_in_an_agent(work, code, sandbox, agent_env, user).splitlines()[-1])
    assert result["readable"] >= 1
    result["found"] = [pid for pid in result["found"] if pid != result["bait"]]
    result["mark"] = mark
    return result


@pytest.mark.parametrize("mode", MODES)
def test_the_agents_own_environment_is_not_readable_through_proc(
    mode: str, work: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    values = use_mode(mode, tmp_path, monkeypatch)
    result = scan_from_an_agent(work, values["sandbox"], values["env"])
    assert not result["unmounted"]  # no capability to take away the fresh /proc
    assert result["found"] == []  # not the agent, not any process the code can see
    assert result["parent_has_secret"] in (False, "Permission denied")
    if mode == "sandbox":
        assert result["own"] == {}
        assert result["marked"] == []
    else:  # unsandboxed code gets the agent's variables, minus the secrets
        assert result["own"] == {"AGENT_PRIVATE_MARK": result["mark"]}
    # (subreaper as root: the agent's environ is refused because the code lacks capabilities
    # the agent has; as an ordinary user it is readable, see the next test)


_NOBODY = [SETPRIV or "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


@pytest.mark.skipif(
    os.geteuid() != 0 or SETPRIV is None, reason="needs root and setpriv to become an ordinary user"
)
@pytest.mark.parametrize("mode", MODES)
def test_as_an_ordinary_user_daemons_die_and_the_environment_is_hidden_but_in_the_fallback(
    mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = Path(tempfile.mkdtemp(prefix="agent-s-nobody-"))  # where nobody can go
    try:
        shared.chmod(0o755)
        values = use_mode(mode, shared, monkeypatch)
        work = shared / "work"
        work.mkdir(mode=0o777)
        work.chmod(0o777)
        env = {**values["env"], "HOME": str(work)}
        result = scan_from_an_agent(work, values["sandbox"], env, user=_NOBODY)
        token, heart = f"daemon-{os.getpid()}-{time.monotonic_ns()}", work / "heart"
        said = run_in_an_agent(work, daemon_block(heart, token), values["sandbox"], env, _NOBODY)
        assert said == "daemon beating: True\n"
        assert_dead(heart, token)
    finally:
        shutil.rmtree(shared, ignore_errors=True)
    assert not result["unmounted"]
    if mode == "subreaper":  # the fallback's documented limit, and why it is reported
        assert result["found"], "the fallback was expected to show the agent's environment"
        assert "/proc" in (containment_problem() or "")
    else:
        assert result["found"] == []


# -- the sandbox: environment, home, folders, network, processes --------------------------------


@needs_bwrap
def test_the_sandbox_gets_a_short_environment_and_none_of_the_agents_variables(
    work: Path,
) -> None:
    env = {
        **os.environ,
        "FAKE_API_KEY": SECRET,
        "AGENT_PRIVATE_MARK": "mark-123",
        "DISPLAY": ":7",
        "XAUTHORITY": "/x/auth",
        "DBUS_SESSION_BUS_ADDRESS": "unix:path=/x",
        "XDG_RUNTIME_DIR": "/run/user/1000",
        "SSH_AUTH_SOCK": "/x/ssh",
    }
    code = "import json, os\nprint(json.dumps(dict(os.environ)))"
    with CodeRunner(
        RunnerSettings(workdir=work, sandbox="bwrap", env=env, python=sys.executable)
    ) as runner:
        inside = report(runner.run("python", code))
        home = runner.scratch / "home"
    allowed = {
        "PATH",
        "LANG",
        "LC_ALL",
        "LC_CTYPE",
        "HOME",
        "TMPDIR",
        "TERM",
        "USER",
        "LOGNAME",
        "PWD",
    }
    assert {k for k in inside if not k.startswith("PYTHON")} <= allowed
    assert inside["HOME"] == str(home)
    assert inside["TERM"] == "dumb"
    assert inside["PATH"] == env["PATH"]
    assert SECRET not in json.dumps(inside)
    assert "mark-123" not in json.dumps(inside)


_PROCESSES = """
import json, os
seen = {}
for entry in os.listdir("/proc"):
    if entry.isdigit():
        try:
            seen[entry] = open(f"/proc/{entry}/cmdline", "rb").read().replace(b"\\0", b" ").decode()
        except OSError:
            pass
print(json.dumps(seen))
"""


@pytest.mark.parametrize("mode", ["sandbox", "bwrap", "unshare"])
def test_proc_shows_only_the_blocks_own_processes(
    mode: str, work: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    values = use_mode(mode, tmp_path, monkeypatch)
    with CodeRunner(RunnerSettings(workdir=work, **values)) as runner:
        seen = report(runner.run("python", _PROCESSES))
    assert len(seen) <= 3, seen  # (bwrap's init,) the launcher, this python
    assert all("block_001.py" in command for command in seen.values()), seen


_HOME_ATTACK = """
import json, os
from pathlib import Path
real = Path(REAL)
home = Path.home()
result = {"home": str(home), "fresh": sorted(os.listdir(home))}
for target in (home / ".bashrc", home / ".config/autostart/x.desktop", real / ".bashrc",
               real / ".config/autostart/x.desktop", real / "notes.txt"):
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "a") as f:
            f.write("planted\\n")
        result[str(target)] = "written"
    except OSError as err:
        result[str(target)] = err.strerror
print(json.dumps(result))
"""


def snapshot(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): p.read_text() if p.is_file() else "<dir>"
        for p in sorted(folder.rglob("*"))
    }


@needs_bwrap
def test_the_sandbox_home_is_fresh_and_the_real_home_is_not_writable(
    work: Path, visible: Path
) -> None:
    real = visible / "home"
    (real / ".config").mkdir(parents=True)
    (real / ".bashrc").write_text("# the user's own\n")
    before = snapshot(real)
    env = {**os.environ, "HOME": str(real)}
    code = _HOME_ATTACK.replace("REAL", repr(str(real)))
    with CodeRunner(
        RunnerSettings(workdir=work, sandbox="bwrap", env=env, python=sys.executable)
    ) as runner:
        result = report(runner.run("python", code))
        fresh_home = runner.scratch / "home"
    assert result["home"] == str(fresh_home)
    assert result["fresh"] == []
    assert result[str(fresh_home / ".bashrc")] == "written"  # it plants only in the fresh home
    assert result[str(fresh_home / ".config/autostart/x.desktop")] == "written"
    for name in (".bashrc", ".config/autostart/x.desktop", "notes.txt"):
        assert result[str(real / name)] == "Read-only file system", name
    assert snapshot(real) == before
    assert not fresh_home.exists()  # gone with the runner


_READ_HOME = """
import json, os
from pathlib import Path
real = Path(REAL)
result = {}
for name in ("secret.txt", ".ssh/id_rsa"):
    try:
        result[name] = (real / name).read_text()
    except OSError as err:
        result[name] = err.strerror
try:
    result["listed"] = sorted(os.listdir(real))
except OSError as err:
    result["listed"] = err.strerror
try:
    (real / "planted.txt").write_text("planted")
    result["planted"] = "written"
except OSError as err:
    result["planted"] = err.strerror
open("mine.txt", "w").write("mine")
print(json.dumps(result))
"""


@needs_bwrap
def test_the_real_home_is_not_there_when_the_code_has_a_home_of_its_own(
    tmp_path: Path, visible: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A virtual desktop's HOME (a practice check's, a Best-of-N attempt's) is the working
    folder: the real user's home (the agent's HOME) is neither read nor written."""
    real = visible / "home"
    (real / ".ssh").mkdir(parents=True)
    (real / "secret.txt").write_text("the user's secret")
    (real / ".ssh" / "id_rsa").write_text("PRIVATE KEY")
    (real / "project").mkdir()
    monkeypatch.setenv("HOME", str(real))  # the agent runs as the real user
    desk = visible / "desktop-home"
    desk.mkdir()
    code = _READ_HOME.replace("REAL", repr(str(real)))
    for workdir, home in ((desk, desk), (real / "project", real)):
        env = {**os.environ, "HOME": str(home)}
        with CodeRunner(
            RunnerSettings(workdir=workdir, sandbox="bwrap", env=env, python=sys.executable)
        ) as runner:
            result = report(runner.run("python", code))
        assert result["secret.txt"] == "No such file or directory", workdir
        assert result[".ssh/id_rsa"] == "No such file or directory", workdir
        assert result["listed"] == ([] if workdir == desk else ["project"]), workdir
        assert result["planted"] == "Read-only file system", workdir
        assert (workdir / "mine.txt").read_text() == "mine"  # its own folder stays writable
    assert not (real / "planted.txt").exists()


@needs_bwrap
def test_with_the_real_home_as_working_folder_its_startup_files_stay_read_only(
    visible: Path,
) -> None:
    real = visible / "home"
    (real / ".config").mkdir(parents=True)
    (real / ".bashrc").write_text("# the user's own\n")
    env = {**os.environ, "HOME": str(real)}
    code = _HOME_ATTACK.replace("REAL", repr(str(real)))
    with CodeRunner(
        RunnerSettings(workdir=real, sandbox="bwrap", env=env, python=sys.executable)
    ) as runner:
        result = report(runner.run("python", code))
    assert result[str(real / "notes.txt")] == "written"  # the working folder is writable
    assert (real / "notes.txt").read_text() == "planted\n"
    assert result[str(real / ".bashrc")] == "Read-only file system"
    assert (real / ".bashrc").read_text() == "# the user's own\n"
    # A start-up folder that did not exist yet can be created there (documented limit).
    assert result[str(real / ".config/autostart/x.desktop")] == "written"


_REACH = """
import json, socket, subprocess
TCP, BUS, FOLDERS = ARGS
result = {}
for name, family, address in (("tcp", socket.AF_INET, TCP), ("bus", socket.AF_UNIX, BUS)):
    s = socket.socket(family)
    s.settimeout(3)
    try:
        s.connect(address)
        result[name] = "connected"
    except OSError as err:
        result[name] = err.strerror or type(err).__name__
    finally:
        s.close()
for folder in FOLDERS:
    try:
        open(folder + "/written.txt", "w").write("x")
        result[folder] = "written"
    except OSError as err:
        result[folder] = err.strerror
unmount = subprocess.run(["umount", "-l", "/tmp"], capture_output=True, text=True)
result["unmount /tmp"] = unmount.returncode
print(json.dumps(result))
"""


@pytest.fixture
def unix_listener(visible: Path) -> Iterator[Path]:
    """A listening socket in a read-only-visible folder (a socket on a read-only mount can
    still be connected to): the kind the sandbox must hide when the session names it."""
    path = visible / "runtime" / "bus"
    path.parent.mkdir()
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        server.listen(5)
        yield path


@needs_bwrap
def test_the_sandbox_reaches_no_network_no_named_socket_and_no_folder_not_allowed(
    work: Path, visible: Path, unix_listener: Path
) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(5)
        port = server.getsockname()[1]
        allowed, denied = visible / "allowed", visible / "denied"
        allowed.mkdir()
        denied.mkdir()
        env = {
            **os.environ,
            "XDG_RUNTIME_DIR": str(unix_listener.parent),
            "DBUS_SESSION_BUS_ADDRESS": f"unix:path={unix_listener},guid=00",
        }
        args = (("127.0.0.1", port), str(unix_listener), [str(allowed), str(denied)])
        code = _REACH.replace("ARGS", repr(args))
        results = {}
        for sandbox in ("bwrap", "none"):
            with CodeRunner(
                RunnerSettings(
                    workdir=work,
                    sandbox=sandbox,
                    env=env,  # type: ignore[arg-type]
                    writable=(allowed,),
                    python=sys.executable,
                )
            ) as runner:
                results[sandbox] = report(runner.run("python", code))
    inside, outside = results["bwrap"], results["none"]
    for name in ("tcp", "bus"):
        assert inside[name] != "connected", name
        assert outside[name] == "connected", name  # the control: reachable unsandboxed
    assert inside[str(allowed)] == "written"
    assert inside[str(denied)] == "Read-only file system"
    assert outside[str(denied)] == "written"  # the control: the attack works unsandboxed
    if os.geteuid() == 0:  # root without capabilities cannot unmount the empty /tmp
        assert inside["unmount /tmp"] != 0


# -- the sandbox and the desktop -------------------------------------------------------------


_X_ATTACK = """
import json, os, socket
SOCKET, BUS = ARGS
result = {name: os.environ.get(name) for name in
          ("DISPLAY", "XAUTHORITY", "DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR")}
result["x11 folder"] = os.path.exists("/tmp/.X11-unix")
for name, address in (("x socket", SOCKET), ("x abstract", "\\0" + SOCKET), ("bus", BUS)):
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(address)
        result[name] = "connected"
    except OSError as err:
        result[name] = err.strerror
    finally:
        s.close()
print(json.dumps(result))
"""


@needs_bwrap
def test_the_sandbox_cannot_reach_the_desktops_x_server_or_session_bus(
    desktop: Any, work: Path
) -> None:
    x_socket = f"/tmp/.X11-unix/X{desktop.display.lstrip(':')}"  # noqa: S108
    address = desktop.env["DBUS_SESSION_BUS_ADDRESS"]
    bus = address.split("path=", 1)[1].split(",")[0]
    code = _X_ATTACK.replace("ARGS", repr((x_socket, bus)))
    env = {**desktop.env, "FAKE_API_KEY": SECRET}
    results = {}
    for sandbox in ("bwrap", "none"):
        with CodeRunner(
            RunnerSettings(
                workdir=work,
                sandbox=sandbox,
                env=env,  # type: ignore[arg-type]
                python=sys.executable,
            )
        ) as runner:
            results[sandbox] = report(runner.run("python", code))
    inside, outside = results["bwrap"], results["none"]
    assert (inside["DISPLAY"], inside["XAUTHORITY"]) == (None, None)
    assert (inside["DBUS_SESSION_BUS_ADDRESS"], inside["XDG_RUNTIME_DIR"]) == (None, None)
    assert not inside["x11 folder"]
    for name in ("x socket", "x abstract", "bus"):
        assert inside[name] != "connected", name
        assert outside[name] == "connected", name  # the control: unsandboxed, all reachable
    assert outside["DISPLAY"] == desktop.display


@needs_bwrap
@pytest.mark.skipif(
    shutil.which("xdotool") is None or shutil.which("xterm") is None,
    reason="needs xdotool and xterm",
)
def test_the_sandbox_cannot_type_into_a_terminal_on_the_desktop(
    desktop: Any, apps: Any, x11: Any, work: Path, tmp_path: Path
) -> None:
    shell = tmp_path / "shell"
    shell.mkdir()
    title = f"victim-{time.monotonic_ns()}"
    apps(["xterm", "-title", title, "-e", "sh"], window=title, cwd=shell)
    x11.activate(title)
    auth = desktop.env["XAUTHORITY"]

    def attack(name: str) -> str:
        return (
            f"export DISPLAY={desktop.display} XAUTHORITY={auth}\n"
            f"xdotool type --delay 5 'touch {name}' && xdotool key Return\n"
            "echo status $?"
        )

    with CodeRunner(
        RunnerSettings(workdir=work, sandbox="bwrap", env=desktop.env, python=sys.executable)
    ) as runner:
        blocked = runner.run("bash", attack("from-the-sandbox"))
    assert blocked.stdout.text.strip() != "status 0", blocked.stderr.text
    assert "display" in blocked.stderr.text.lower()  # xdotool: cannot open the display
    with CodeRunner(
        RunnerSettings(workdir=work, sandbox="none", env=desktop.env, python=sys.executable)
    ) as runner:
        free = runner.run("bash", attack("from-outside"))
    assert free.stdout.text.strip() == "status 0", free.stderr.text
    wait_until(lambda: (shell / "from-outside").exists(), 10, "the control's file")
    assert not (shell / "from-the-sandbox").exists()
