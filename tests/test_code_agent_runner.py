"""Running one block of code: argv and files, time and memory limits, bounded output, nothing
outliving a block, secrets kept out, Ctrl-C, and the bubblewrap sandbox (real processes).

Blocks run in a PID namespace of their own, so the pids they see mean nothing out here: a
block's processes are found by their working folder instead (``running_in``). The attacks on
the sandbox and the containment are in test_code_sandbox.py."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from agent_s.coding.containment import block_processes, end_block
from agent_s.coding.runner import CodeRunner, RunnerSettings, SandboxUnavailable, sandbox_problem


def settings(workdir: Path, **values: object) -> RunnerSettings:
    values.setdefault("python", sys.executable)
    return RunnerSettings(workdir=workdir, **values)  # type: ignore[arg-type]


@pytest.fixture
def work(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


def running_in(folder: Path) -> list[int]:
    """Live processes (not zombies: this container's init may not reap) working in ``folder``."""
    found = []
    for proc in psutil.process_iter():
        with contextlib.suppress(psutil.Error, OSError):
            live = proc.status() not in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD)
            if live and Path(proc.cwd()).resolve() == folder.resolve():
                found.append(proc.pid)
    return found


def test_python_and_bash_run_as_files_in_the_working_folder(work: Path) -> None:
    with CodeRunner(settings(work)) as runner:
        py = runner.run(
            "python",
            "import os, sys\nprint(os.getcwd())\nprint(sys.argv[0])\n"
            "print('oops', file=sys.stderr)\nsys.exit(3)",
        )
        sh = runner.run("bash", 'echo "$0"; pwd; printf "%s\\n" "$BASH_VERSION" >&2')
        scratch = runner.scratch
    assert py.exit_status == 3
    cwd, script = py.stdout.text.splitlines()
    assert Path(cwd) == work.resolve()
    assert script.endswith("block_001.py")
    assert Path(script).parent == scratch
    assert py.stderr.text == "oops\n"
    assert py.stopped == "exit status 3"
    assert sh.ok
    assert sh.stdout.text.splitlines()[0].endswith("block_002.sh")
    assert sh.stderr.text.strip()  # the bash version, on stderr
    assert not scratch.exists()  # the scratch folder goes with the runner


def test_stdin_is_empty_so_reading_it_does_not_hang(work: Path) -> None:
    with CodeRunner(settings(work, timeout_s=10)) as runner:
        run = runner.run("python", "input()")
    assert run.exit_status == 1
    assert "EOFError" in run.stderr.text
    assert run.seconds < 5


@pytest.mark.parametrize("language", ["python", "bash"])
def test_a_hanging_block_is_killed_at_its_timeout_with_its_children(
    work: Path, language: str
) -> None:
    code = {
        "python": textwrap.dedent("""
            import subprocess, time
            child = subprocess.Popen(["sleep", "300"], start_new_session=True)  # its own session
            print("started", flush=True)
            time.sleep(300)
        """),
        "bash": "sleep 300 &\necho started\nsleep 300\n",
    }[language]
    with CodeRunner(settings(work, timeout_s=1.5)) as runner:
        start = time.monotonic()
        run = runner.run(language, code)  # type: ignore[arg-type]
        elapsed = time.monotonic() - start
    assert run.timed_out
    assert run.exit_status is None
    assert run.stopped == "stopped at the time limit"
    assert run.stdout.text == "started\n"  # what it printed before it was killed
    assert 1.4 < elapsed < 4
    assert not running_in(work)


def test_processes_left_behind_by_a_finished_block_are_killed_at_once(work: Path) -> None:
    with CodeRunner(settings(work, timeout_s=30)) as runner:
        start = time.monotonic()
        run = runner.run("bash", "sleep 300 &\necho done")
        elapsed = time.monotonic() - start
    assert run.ok
    assert run.stdout.text == "done\n"
    assert run.killed_leftovers == 1
    assert elapsed < 5  # not the 30 s limit, though the background job held the output pipe
    assert not running_in(work)


def test_fifty_megabytes_of_output_are_cut_head_and_tail_without_being_held(work: Path) -> None:
    code = textwrap.dedent("""
        import sys
        sys.stdout.write("FIRST LINE\\n")
        line = "x" * 999 + "\\n"
        for _ in range(50_000):
            sys.stdout.write(line)
        sys.stdout.write("LAST LINE\\n")
        sys.stderr.write("err " * 10)
    """)
    with CodeRunner(settings(work, output_bytes=20_000)) as runner:
        tracemalloc.start()
        try:
            run = runner.run("python", code)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert run.ok
    assert run.stdout.total_bytes == 11 + 50_000 * 1000 + 10
    assert run.stdout.truncated
    text = run.stdout.text
    assert text.startswith("FIRST LINE\n")
    assert text.endswith("LAST LINE\n")
    assert f"[... {50_000_021 - 20_000:,} bytes of output left out ...]" in text
    assert len(text) < 21_000
    assert run.stderr.text == "err " * 10
    assert not run.stderr.truncated
    assert peak < 5_000_000, f"{peak:,} bytes held while reading 50 MB"


@pytest.mark.parametrize("how", ["prlimit", "setrlimit in the child"])
def test_the_memory_limit_stops_a_block_that_allocates_too_much(
    work: Path, how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = dict(os.environ)
    if how != "prlimit":  # prlimit not on PATH: the limit is set between fork and exec
        monkeypatch.setenv("PATH", str(work))
    with CodeRunner(settings(work, memory_mb=200, env=env)) as runner:
        big = runner.run("python", "block = bytearray(600 * 1024 * 1024)\nprint('allocated')")
        small = runner.run("python", "block = bytearray(50 * 1024 * 1024)\nprint('allocated')")
    assert big.exit_status == 1
    assert "MemoryError" in big.stderr.text
    assert small.stdout.text == "allocated\n"


def test_secrets_in_the_environment_do_not_reach_the_code(work: Path) -> None:
    env = {
        **os.environ,
        "OPENAI_API_KEY": "sk-one",
        "GITHUB_TOKEN": "gh-two",
        "HARMLESS": "visible",
        "ODD_NAME": "sk-three",
    }
    # outside the sandbox, where the runner passes the environment on (the sandbox keeps only
    # a short list of variables: test_code_sandbox)
    with CodeRunner(settings(work, env=env, secrets=("sk-three",), sandbox="none")) as runner:
        run = runner.run("bash", "env")
    assert "HARMLESS=visible" in run.stdout.text
    for secret in ("sk-one", "gh-two", "sk-three"):
        assert secret not in run.stdout.text


def test_a_missing_working_folder_or_interpreter_is_reported(tmp_path: Path) -> None:
    with pytest.raises(Exception, match="does not exist"):
        CodeRunner(settings(tmp_path / "nope"))
    with CodeRunner(settings(tmp_path, python=str(tmp_path / "no-python"))) as runner:
        run = runner.run("python", "print(1)")
    assert run.exit_status is None
    assert run.stopped.startswith("not started:")


_DRIVER = """
import sys
from pathlib import Path
from agent_s.coding.runner import CodeRunner, RunnerSettings
work = Path(sys.argv[1])
with CodeRunner(RunnerSettings(workdir=work, timeout_s=120, python=sys.executable)) as runner:
    runner.run("bash", "sleep 300 &\\necho started > ready\\nsleep 300")
"""


def test_ctrl_c_kills_the_running_block_and_everything_it_started(work: Path) -> None:
    driver = subprocess.Popen(
        [sys.executable, "-c", _DRIVER, str(work)], stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 20
    while not (work / "ready").exists() or not (work / "ready").read_text().strip():
        assert driver.poll() is None, driver.stderr.read() if driver.stderr else ""
        assert time.monotonic() < deadline, "the block never started"
        time.sleep(0.05)
    assert len(running_in(work)) >= 2  # bash and its sleep (and the wrappers)
    driver.send_signal(signal.SIGINT)
    _, stderr = driver.communicate(timeout=15)
    assert "KeyboardInterrupt" in stderr
    assert not running_in(work)


def test_end_block_ends_every_descendant_and_counts_them() -> None:
    """``block_processes`` finds a block's descendants, one in a session of its own too;
    ``end_block`` ends them all and counts them, the block's first process not counted."""
    root = subprocess.Popen(
        ["bash", "-c", "sleep 61 & setsid sleep 62 & wait"], start_new_session=True
    )

    def started() -> list[str]:
        found = block_processes(root.pid)
        return sorted(" ".join(psutil.Process(p).cmdline()) for p in found if p != root.pid)

    try:
        deadline = time.monotonic() + 10
        while started() != ["sleep 61", "sleep 62"]:
            assert time.monotonic() < deadline, started()
            time.sleep(0.02)
        assert root.pid in block_processes(root.pid)
        assert end_block(root.pid) == 2
        assert block_processes(root.pid) == []  # the root is a zombie until waited for
    finally:
        root.kill()
        root.wait()


# -- the sandbox -----------------------------------------------------------------------------------

BWRAP = sandbox_problem()
needs_bwrap = pytest.mark.skipif(BWRAP is not None, reason=f"bubblewrap cannot run: {BWRAP}")


@pytest.fixture
def listener() -> Iterator[int]:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(5)
        yield server.getsockname()[1]


@needs_bwrap
def test_under_bwrap_a_write_outside_the_allowed_folders_fails(
    tmp_path: Path, work: Path, listener: int
) -> None:
    outside = tmp_path / "outside"
    extra = tmp_path / "extra"
    outside.mkdir()
    extra.mkdir()
    code = textwrap.dedent(f"""
        import socket, tempfile
        from pathlib import Path
        for path in ("inside.txt", "{extra}/extra.txt", "{outside}/outside.txt"):
            try:
                Path(path).write_text("written")
                print(path, "ok")
            except OSError as err:
                print(path, "failed:", err.strerror)
        with tempfile.NamedTemporaryFile() as temp:
            print("tempfile ok")
        try:
            socket.create_connection(("127.0.0.1", {listener}), timeout=3).close()
            print("network ok")
        except OSError as err:
            print("network failed:", err.strerror)
    """)
    with CodeRunner(settings(work, sandbox="bwrap", writable=(extra,))) as runner:
        sandboxed = runner.run("python", code)
    lines = sandboxed.stdout.text.splitlines()
    assert sandboxed.ok, sandboxed.stderr.text
    assert lines[0] == "inside.txt ok"
    assert lines[1] == f"{extra}/extra.txt ok"
    assert lines[2].startswith(f"{outside}/outside.txt failed")  # under /tmp: not even there
    assert lines[3] == "tempfile ok"
    assert lines[4].startswith("network failed")
    assert not (outside / "outside.txt").exists()

    with CodeRunner(settings(work, sandbox="none")) as runner:
        free = runner.run("python", code)
    assert free.stdout.text.splitlines()[2] == f"{outside}/outside.txt ok"
    assert free.stdout.text.splitlines()[4] == "network ok"
    assert (outside / "outside.txt").read_text() == "written"


def test_an_unusable_sandbox_is_refused_never_silently_dropped(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(work))  # no bwrap on PATH
    sandbox_problem.cache_clear()
    try:
        with pytest.raises(SandboxUnavailable, match="bubblewrap is not installed"):
            CodeRunner(settings(work, sandbox="bwrap"))
    finally:
        sandbox_problem.cache_clear()
