"""``agent-s run``: configuration errors, the result on stdout, exit codes, and a real process
interrupted (SIGINT -> cancelled, 130) or killed (SIGKILL -> every finished step readable)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from clean_env import clean_env
from scripted_cli import run_options
from typer.testing import CliRunner

from agent_s.cli.main import app
from agent_s.record.trajectory import find_secrets, load_trajectory
from agent_s.testing.scripted_replies import reply
from agent_s.testing.scripted_server import ScriptedModelServer

KEY = "sk-cli-SECRET-abcdef0123456789"
AGENT_S = str(Path(sys.executable).parent / "agent-s")
_CLEAN = clean_env()


def act(code: str) -> str:
    return f"Working.\n```python\n{code}\n```"


def test_without_a_model_it_says_what_to_set_and_exits_2() -> None:
    env = {**_CLEAN, "DISPLAY": ":999"}  # a display that does not exist: never touched
    result = CliRunner().invoke(app, ["run", "do something"], env=env)
    assert result.exit_code == 2
    assert "AGENT_S_MODEL" in result.output
    assert "--model" in result.output


def test_without_a_key_for_a_hosted_api_it_exits_2() -> None:
    env = {**_CLEAN, "OPENAI_API_KEY": "", "DISPLAY": ":999"}
    result = CliRunner().invoke(
        app, ["run", "x", "--provider", "openai", "--model", "gpt-4o"], env=env
    )
    assert result.exit_code == 2
    assert "OPENAI_API_KEY is not set" in result.output


def _cli(server: ScriptedModelServer, tmp_path: Path, *extra: str) -> list[str]:
    return [*run_options(server.openai_base_url, tmp_path, key=KEY), *extra]


@pytest.mark.usefixtures("desktop")
def test_json_result_on_stdout_and_exit_code_1_for_fail(tmp_path: Path) -> None:
    script = [reply(act('agent.fail(reason="the app is not installed")'))]
    with ScriptedModelServer(script) as server:
        result = CliRunner().invoke(app, [*_cli(server, tmp_path), "--json", "Open Foo"])
    assert result.exit_code == 1, result.output
    data = json.loads(result.stdout)
    assert data["status"] == "failed"
    assert data["reason"] == "the app is not installed"
    assert find_secrets(Path(data["trajectory_dir"]), [KEY]) == []


@pytest.mark.usefixtures("desktop")
def test_max_steps_exits_3_and_tasks_are_asked_for_without_one(tmp_path: Path) -> None:
    script = [reply(act("agent.wait(0.01)")), reply(act("agent.done()"))]
    with ScriptedModelServer(script) as server:
        args = [*_cli(server, tmp_path), "--max-steps", "1"]
        result = CliRunner().invoke(app, args, input="first task\nsecond task\n\n")
    assert result.exit_code == 0, result.output  # the last run (second task) succeeded
    assert "max_steps" in result.stdout
    assert "succeeded" in result.stdout
    assert result.stdout.count("trajectory:") == 2


def _start(server: ScriptedModelServer, tmp_path: Path, desktop: Any) -> subprocess.Popen[str]:
    env = {**_CLEAN, **desktop.env}
    return subprocess.Popen(
        [AGENT_S, *_cli(server, tmp_path), "--json", "Wait forever"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _steps_written(tmp_path: Path, count: int, proc: subprocess.Popen[str]) -> Path:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for lines in tmp_path.glob("*/trajectory.jsonl"):
            if len(lines.read_text().splitlines()) >= count:
                return lines.parent
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    raise AssertionError("the run did not write its steps in time")


def _waiting(request: Any) -> Any:
    return reply(act("agent.wait(0.3)"))


def test_sigint_cancels_writes_the_result_and_exits_130(tmp_path: Path, desktop: Any) -> None:
    with ScriptedModelServer(_waiting) as server:
        proc = _start(server, tmp_path, desktop)
        folder = _steps_written(tmp_path, 2, proc)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130, stderr
    assert json.loads(stdout)["status"] == "cancelled"
    loaded = load_trajectory(folder)
    assert loaded.result is not None
    assert loaded.result.status.value == "cancelled"
    assert not loaded.torn_last_line
    assert len(loaded.steps) >= 2
    finished = [s for s in loaded.steps if s.outcome == "ok"]
    assert len(finished) >= 2
    assert all(s.action_text == "agent.wait(seconds=0.3)" for s in finished)
    assert loaded.steps[-1].outcome in ("ok", "cancelled")
    assert find_secrets(folder, [KEY]) == []


def test_sigkill_keeps_every_finished_step(tmp_path: Path, desktop: Any) -> None:
    with ScriptedModelServer(_waiting) as server:
        proc = _start(server, tmp_path, desktop)
        folder = _steps_written(tmp_path, 3, proc)
        proc.kill()
        proc.communicate(timeout=30)
    loaded = load_trajectory(folder)
    assert loaded.result is None  # it never got to write one
    assert len(loaded.steps) >= 3
    assert [s.step for s in loaded.steps] == list(range(1, len(loaded.steps) + 1))
    for step in loaded.steps:
        assert step.outcome == "ok"
        assert step.calls
        assert step.screenshot
        assert (folder / step.screenshot).stat().st_size > 0
    assert loaded.run["task"] == "Wait forever"
    assert KEY not in json.dumps(loaded.run)


@pytest.mark.usefixtures("desktop")
def test_a11y_snapshot_flag_reaches_the_agent(tmp_path: Path) -> None:
    notes = []
    for flag in ("--a11y-snapshot", "--no-a11y-snapshot"):
        with ScriptedModelServer([reply(act("agent.done()"))]) as server:
            args = [*_cli(server, tmp_path / flag), flag, "--json", "Look around"]
            result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, result.output
        folder = Path(json.loads(result.stdout)["trajectory_dir"])
        notes.append(load_trajectory(folder).steps[0].request["a11y"])
    on, off = notes
    assert isinstance(on, str)
    assert on  # elements listed, none in the active window, or why the tree is unavailable
    assert off is None


def test_prompts_read_each_piped_line_while_the_pipe_stays_open() -> None:
    """Lines a program writes to agent-s's stdin at once are answered at once, each prompt in
    turn, though the program keeps the pipe open for more (the prompt's wait for Ctrl-C
    applies to terminals only: a pipe's next line may already be in Python's buffer)."""
    code = (
        "from rich.console import Console\n"
        "from agent_s.cli.output import ask_line\n"
        "err = Console(stderr=True)\n"
        "for n in range(3):\n"
        "    print(ask_line(err, f'{n}: '), flush=True)\n"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", code],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert child.stdin is not None
    assert child.stdout is not None
    answers: list[str] = []
    reader = threading.Thread(target=lambda: answers.extend(child.stdout), daemon=True)
    reader.start()
    try:
        child.stdin.write("first\nsecond\nthird\n")
        child.stdin.flush()  # and left open
        assert child.wait(20) == 0  # with the pipe still open: every line was answered
        reader.join(5)
        assert [a.strip() for a in answers] == ["first", "second", "third"]
    finally:
        child.kill()
        child.wait()


def test_the_json_timings_cover_every_part_of_the_run(tmp_path: Path) -> None:
    """The buckets (settle and the recording included) add up to the total within 5%."""
    script = [reply(act('agent.hotkey(["escape"])'))] * 3
    script += [reply(act("agent.wait(0.5)")), reply(act('agent.done(answer="ok")'))]
    with ScriptedModelServer(script) as server:
        args = [*_cli(server, tmp_path), "--virtual", "--safety", "auto", "--plan", "off"]
        done = subprocess.run(
            [AGENT_S, *args, "--json", "press escape three times"],
            env=_CLEAN,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    timings = json.loads(done.stdout)["timings"]
    assert timings["settle"] > 0  # each key waited for a still screen
    assert timings["record"] > 0
    parts = sum(seconds for name, seconds in timings.items() if name != "total")
    assert abs(timings["total"] - parts) <= 0.05 * timings["total"], timings
    on_disk = json.loads((next(tmp_path.glob("run-*")) / "result.json").read_text())
    assert on_disk["timings"] == timings
