"""Every way an agent-s process ends leaves nothing behind, and a result or a clear trace.

Real ``agent-s`` processes (a scripted model answering), real signals: SIGTERM, SIGHUP and
SIGINT end ``run --virtual`` mid-step with a ``cancelled`` result, exit 130, and no process,
desktop or temp folder left; after SIGKILL the desktop's watchdog ends the desktop, or, when the
watchdog died too, the next ``agent-s`` start does. ``bench run`` stopped by SIGTERM stops its
worker and the worker's desktop, and a resumed run does the interrupted task again; killed, its
worker notices and stops. A key held down by a process killed mid-hold is released by the next
backend on that display, or by the next ``agent-s`` start.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
import Xlib.display
import Xlib.XK
from clean_env import clean_env
from scripted_cli import model_options

from agent_s import lifecycle
from agent_s.bench.tasks import load_suite
from agent_s.desktop.virtual import VirtualDesktop, marked_processes
from agent_s.record.trajectory import load_trajectory
from agent_s.testing.scripted_replies import reply
from agent_s.testing.scripted_server import RecordedRequest, ScriptedModelServer

needs_desktop = pytest.mark.desktop  # conftest skips these, saying why, when Xvfb is missing
AGENT_S = str(Path(sys.executable).parent / "agent-s")
_CLEAN = clean_env()
for _name in ("DISPLAY", "XAUTHORITY", "DBUS_SESSION_BUS_ADDRESS"):
    _CLEAN.pop(_name, None)  # a --virtual run needs no display of ours


def act(code: str) -> str:
    return f"Next.\n```python\n{code}\n```"


def _wait_until(condition: Callable[[], Any], what: str, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def _descendants(root: int) -> set[int]:
    """Every live process below ``root`` (by parent pid)."""
    try:
        return {p.pid for p in psutil.Process(root).children(recursive=True) if _alive(p.pid)}
    except psutil.Error:
        return set()


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _cmdline(pid: int) -> str:
    try:
        return " ".join(psutil.Process(pid).cmdline())
    except psutil.Error:
        return ""


class Sandbox:
    """A state folder and a TMPDIR of the test's own, so what a run leaves is easy to see.
    (TMPDIR is short: the D-Bus socket goes in it, and socket paths have at most 107 bytes.)"""

    def __init__(self, root: Path) -> None:
        self.state, self.tmp = root / "state", Path(tempfile.mkdtemp(prefix="lc-", dir="/tmp"))
        self.env = {**_CLEAN, "AGENT_S_STATE_DIR": str(self.state), "TMPDIR": str(self.tmp)}

    def desktops(self) -> list[dict[str, Any]]:
        return [json.loads(p.read_text()) for p in (self.state / "desktops").glob("*.json")]

    def desktop(self) -> dict[str, Any]:
        found = _wait_until(self.desktops, "the virtual desktop's state file")
        assert len(found) == 1, found
        return found[0]

    def assert_clean(self, desktop: dict[str, Any], pids: set[int]) -> None:
        assert marked_processes(desktop["token"]) == []
        assert [(p, _cmdline(p)) for p in pids if _alive(p)] == []
        assert not any(Path(p).exists() for p in desktop["paths"])
        assert list(self.tmp.iterdir()) == []
        assert self.desktops() == []


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[Sandbox]:
    made = Sandbox(tmp_path)
    yield made
    shutil.rmtree(made.tmp, ignore_errors=True)


# -- signals in this process ---------------------------------------------------------------------


def _signal_self(sig: signal.Signals, done: list[str]) -> None:
    os.kill(os.getpid(), sig)
    time.sleep(5)  # the handler raises in here
    done.append("after the signal")


def _signal_in_deferred_block(done: list[str]) -> None:
    with lifecycle.deferred():
        os.kill(os.getpid(), signal.SIGHUP)
        time.sleep(0.1)
        done.append("the deferred block")
    done.append("after it")


def test_a_stop_signal_raises_terminated_once_and_waits_for_deferred_blocks() -> None:
    previous = signal.getsignal(signal.SIGTERM)
    finished: list[str] = []
    with lifecycle.stop_signals_interrupt():
        with pytest.raises(lifecycle.Terminated) as caught:
            _signal_self(signal.SIGTERM, finished)
        assert isinstance(caught.value, KeyboardInterrupt)
        assert caught.value.signum == signal.SIGTERM
        assert str(caught.value) == "interrupted by SIGTERM"
        os.kill(os.getpid(), signal.SIGHUP)  # a second signal must not cut the clean-up short
        time.sleep(0.1)
        assert lifecycle.received() == signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) is previous
    with lifecycle.stop_signals_interrupt(), pytest.raises(lifecycle.Terminated) as caught:
        _signal_in_deferred_block(finished)
    assert caught.value.signum == signal.SIGHUP
    assert finished == ["the deferred block"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_an_owner_is_known_by_pid_and_start_time_and_a_zombie_is_dead() -> None:
    """State files name an owner by pid and start time: the same in every process that reads
    it, not matched by another start (a pid used again), and dead once the process is."""
    child = subprocess.Popen(["sleep", "30"])
    try:
        record = {**lifecycle.owner(), "pid": child.pid, "start": lifecycle.start_time(child.pid)}
        assert isinstance(record["start"], float)
        assert lifecycle.alive(record)
        assert lifecycle.session_of(child.pid) == os.getsid(0)
        elsewhere = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys; from agent_s import lifecycle as l; "
                "print(l.start_time(int(sys.argv[1])))",
                str(child.pid),
            ],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        )
        assert float(elsewhere.stdout) == record["start"]
        assert not lifecycle.alive({**record, "start": record["start"] - 0.01})
        child.kill()
        _wait_until(lambda: lifecycle.start_time(child.pid) is None, "the child to be a zombie")
        assert psutil.Process(child.pid).status() == psutil.STATUS_ZOMBIE  # not reaped yet
        assert not lifecycle.alive(record)
    finally:
        child.kill()
        child.wait()
    assert lifecycle.start_time(child.pid) is None
    assert lifecycle.session_of(child.pid) is None


@needs_desktop
def test_the_start_sweep_leaves_a_live_agents_desktop_alone(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_S_STATE_DIR", str(sandbox.state))
    with VirtualDesktop(320, 240, window_manager=False, accessibility=False) as desk:
        before = sorted(marked_processes(desk.token))
        start = subprocess.run(
            [AGENT_S, "--version"],
            env=sandbox.env,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        assert "cleaned up" not in start.stderr
        assert sorted(marked_processes(desk.token)) == before
        assert [d["token"] for d in sandbox.desktops()] == [desk.token]
    assert sandbox.desktops() == []


# -- agent-s run --virtual ----------------------------------------------------------------------


def _run_argv(server: ScriptedModelServer, runs: Path) -> list[str]:
    return [
        AGENT_S,
        "run",
        "--virtual",
        *model_options(server.openai_base_url, key="sk-lifecycle-key"),
        "--ground",
        "native",
        "--record",
        str(runs),
        "--safety",
        "auto",
        "--code-timeout",
        "60",
        "--json",
        "Wait a long time",
    ]


def _long_wait(request: RecordedRequest) -> Any:
    """One short step (so a step is on record), then steps that wait 30 s."""
    return reply(act("agent.wait(0.1)" if request.index == 1 else "agent.wait(30)"))


def _long_code(request: RecordedRequest) -> Any:
    """A short step, then the code agent runs a shell command that sleeps for minutes."""
    if request.index == 1:
        return reply(act("agent.wait(0.1)"))
    if request.index == 2:
        return reply(act('agent.call_code_agent("Wait for the export")'))
    return reply("Run this.\n```bash\nsleep 317\n```")


def _running_code(pid: int) -> bool:
    return any("sleep 317" in _cmdline(p) for p in _descendants(pid))


def _start_run(
    server: ScriptedModelServer, sandbox: Sandbox, tmp_path: Path
) -> tuple[subprocess.Popen[str], Path]:
    work = tmp_path / "work"
    work.mkdir()
    config = tmp_path / "config.toml"
    config.write_text(f'[code_agent]\nworkdir = "{work}"\npython = "{sys.executable}"\n')
    env = {**sandbox.env, "AGENT_S_CONFIG": str(config)}
    proc = subprocess.Popen(
        _run_argv(server, tmp_path / "runs"),
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    return proc, tmp_path / "runs"


def _mid_step(proc: subprocess.Popen[str], runs: Path, server: ScriptedModelServer) -> Path:
    """The run has finished one step and is inside the next one's long action; its folder."""

    def ready() -> Path | None:
        assert proc.poll() is None, proc.communicate()
        for lines in runs.glob("*/trajectory.jsonl"):
            if lines.read_text().strip() and len(server.requests) >= 2:
                return lines.parent
        return None

    folder = _wait_until(ready, "the first step")
    time.sleep(0.8)  # the second reply is parsed and its action started
    return folder


@needs_desktop
@pytest.mark.parametrize(
    ("sig", "script"),
    [(signal.SIGTERM, _long_code), (signal.SIGHUP, _long_wait), (signal.SIGINT, _long_wait)],
    ids=["SIGTERM-in-code", "SIGHUP-in-wait", "SIGINT-in-wait"],
)
def test_a_stop_signal_cancels_the_run_and_leaves_nothing(
    sig: signal.Signals,
    script: Callable[[RecordedRequest], Any],
    tmp_path: Path,
    sandbox: Sandbox,
) -> None:
    with ScriptedModelServer(script) as server:
        proc, runs = _start_run(server, sandbox, tmp_path)
        try:
            folder = _mid_step(proc, runs, server)
            desktop = sandbox.desktop()
            if script is _long_code:
                _wait_until(lambda: _running_code(proc.pid), "the code agent's command")
            pids = _descendants(proc.pid)
            assert len(pids) >= 4  # Xvfb, dbus-daemon, openbox, the watchdog (and more)
            proc.send_signal(sig)
            stdout, stderr = proc.communicate(timeout=40)
        finally:
            proc.kill()
    assert proc.returncode == 130, stderr
    assert json.loads(stdout)["status"] == "cancelled"
    loaded = load_trajectory(folder)
    assert loaded.result is not None
    assert loaded.result.status.value == "cancelled"
    assert loaded.result.reason == f"interrupted by {sig.name}"
    assert json.loads((folder / "result.json").read_text())["status"] == "cancelled"
    sandbox.assert_clean(desktop, pids)  # the code agent's sleep too


@needs_desktop
@pytest.mark.parametrize("watchdog_too", [False, True], ids=["watchdog", "next-start"])
def test_sigkill_the_desktop_dies_with_the_agent(
    watchdog_too: bool, tmp_path: Path, sandbox: Sandbox
) -> None:
    with ScriptedModelServer(_long_wait) as server:
        proc, runs = _start_run(server, sandbox, tmp_path)
        try:
            _mid_step(proc, runs, server)
            desktop = sandbox.desktop()
            pids = _descendants(proc.pid)
            (watchdog,) = [p for p in pids if "agent_s.desktop._watchdog" in _cmdline(p)]
            if watchdog_too:  # as a kill of the whole cgroup would
                os.kill(watchdog, signal.SIGKILL)
        finally:
            proc.kill()
            proc.communicate(timeout=10)
    if watchdog_too:
        time.sleep(1.0)
        assert marked_processes(desktop["token"])  # nobody cleaned up yet
        start = subprocess.run(
            [AGENT_S, "--version"],
            env=sandbox.env,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        assert f"ended virtual desktop(s) {desktop['display']}" in start.stderr
    else:
        _wait_until(lambda: not marked_processes(desktop["token"]), "the watchdog", 10)
        _wait_until(lambda: not _alive(watchdog), "the watchdog to exit", 10)
    sandbox.assert_clean(desktop, pids)


# -- agent-s bench run --------------------------------------------------------------------------


def _slow_suite(root: Path, wait: float) -> Path:
    """A one-task suite: the smoke suite's notes.txt task, its reference waiting ``wait`` s."""
    task = next(t for t in load_suite("smoke").tasks(["os"]) if "notes.txt" in t.instruction)
    data = json.loads(Path(str(task.path)).read_text())
    data["reference"] = [data["reference"][0], f"agent.wait(seconds={wait})", "agent.done()"]
    folder = root / "suite" / "examples" / "os"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{task.id}.json").write_text(json.dumps(data))
    index = root / "suite" / "test_one.json"
    index.write_text(json.dumps({"os": [task.id]}))
    return index


def _bench(index: Path, results: Path, sandbox: Sandbox) -> subprocess.Popen[str]:
    argv = [
        AGENT_S,
        "bench",
        "run",
        str(index),
        "--policy",
        "reference",
        "--results",
        str(results),
        "--json",
    ]
    return subprocess.Popen(
        argv, env=sandbox.env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


def _bench_mid_task(proc: subprocess.Popen[str], results: Path) -> Path:
    """The worker has done the reference's first step and waits in the second; its folder."""

    def ready() -> Path | None:
        assert proc.poll() is None, proc.communicate()
        for lines in results.glob("*/*/*/os/*/traj.jsonl"):
            if lines.read_text().strip():
                return lines.parent
        return None

    return _wait_until(ready, "the worker's first step", 60)


@needs_desktop
def test_bench_sigterm_stops_the_worker_and_resume_reruns_the_task(
    tmp_path: Path, sandbox: Sandbox
) -> None:
    index, results = _slow_suite(tmp_path, 30), tmp_path / "results"
    proc = _bench(index, results, sandbox)
    try:
        folder = _bench_mid_task(proc, results)
        desktop = sandbox.desktop()
        pids = _descendants(proc.pid)
        assert [p for p in pids if "agent_s.bench.worker" in _cmdline(p)]
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, stderr
    report = json.loads(stdout)
    assert report["status"] == "cancelled"
    assert [r["status"] for r in report["records"]] == ["cancelled"]
    assert report["records"][0]["reason"] == "interrupted by SIGTERM"
    assert json.loads((folder / "result.json").read_text())["status"] == "cancelled"
    assert not (folder / "result.txt").exists()  # not done: a resumed run does it again
    sandbox.assert_clean(desktop, pids)

    _slow_suite(tmp_path, 0.5)
    again = _bench(index, results, sandbox)
    stdout, stderr = again.communicate(timeout=120)
    assert again.returncode == 0, stderr
    (record,) = json.loads(stdout)["records"]
    assert not record.get("resumed")
    assert record["score"] == 1.0
    assert (folder / "result.txt").read_text() == "1.0\n"


@needs_desktop
def test_bench_sigkill_its_worker_notices_and_stops(tmp_path: Path, sandbox: Sandbox) -> None:
    index, results = _slow_suite(tmp_path, 30), tmp_path / "results"
    proc = _bench(index, results, sandbox)
    try:
        folder = _bench_mid_task(proc, results)
        desktop = sandbox.desktop()
        pids = _descendants(proc.pid)
        (worker,) = [p for p in pids if "agent_s.bench.worker" in _cmdline(p)]
    finally:
        proc.kill()
        proc.communicate(timeout=10)
    _wait_until(lambda: not _alive(worker), "the worker to stop", 30)
    assert json.loads((folder / "result.json").read_text())["status"] == "cancelled"
    assert not (folder / "result.txt").exists()
    sandbox.assert_clean(desktop, pids)


# -- keys held down -----------------------------------------------------------------------------

_HOLD_SHIFT = """
import time
from agent_s.desktop.x11 import X11Backend

backend = X11Backend()
with backend._holding(["Shift_L"]):
    print("held", flush=True)
    time.sleep(120)
"""


def _shift_down(display: Xlib.display.Display) -> bool:
    code = display.keysym_to_keycode(Xlib.XK.string_to_keysym("Shift_L"))
    return bool(display.query_keymap()[code // 8] & (1 << (code % 8)))


def _hold_shift_and_die(env: dict[str, str]) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLD_SHIFT],
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline() == "held\n", proc.communicate()
    finally:
        proc.kill()
        proc.communicate(timeout=10)


@needs_desktop
def test_a_key_held_by_a_killed_process_is_released_next_time(
    desktop: VirtualDesktop, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent_s.desktop.x11 import X11Backend

    state = tmp_path / "state"
    env = {**_CLEAN, **desktop.env, "AGENT_S_STATE_DIR": str(state)}
    monkeypatch.setenv("AGENT_S_STATE_DIR", str(state))
    x = Xlib.display.Display(desktop.display)
    try:
        # The next backend on the display releases it.
        _hold_shift_and_die(env)
        assert _shift_down(x)  # SIGKILL skipped the finally block
        assert len(list((state / "held").glob("*.json"))) == 1
        X11Backend(desktop.display, env=desktop.env).close()
        assert not _shift_down(x)
        assert list((state / "held").glob("*.json")) == []

        # So does the next agent-s start, whatever display it will use.
        _hold_shift_and_die(env)
        assert _shift_down(x)
        bare = {**_CLEAN, "AGENT_S_STATE_DIR": str(state)}  # no DISPLAY: the note names it
        start = subprocess.run(
            [AGENT_S, "--version"], env=bare, capture_output=True, text=True, timeout=60, check=True
        )
        assert f"released Shift_L on {desktop.display}" in start.stderr
        assert not _shift_down(x)
    finally:
        subprocess.run(["xdotool", "keyup", "Shift_L"], env=desktop.env, check=False)
        x.close()
