"""Model timeouts and bounded replies, as the user sees them: a server that never answers
(progress per retry, a bounded end naming the fix, the wall-time limit), the timeout from the
file / the variable / the flag, a body cut mid-JSON (retried), and a 5 MB reply (capped)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from clean_env import clean_env
from scripted_cli import run_options

from agent_s.models import Message, ModelRequest, RetryPolicy, Timeout, build_provider
from agent_s.models._common import MAX_TEXT_CHARS, clip_text
from agent_s.models.retry import request_timeout
from agent_s.settings.read import flag_values, load_settings
from agent_s.testing.scripted_replies import garbage, hang, malformed, reply
from agent_s.testing.scripted_server import ScriptedModelServer

KEY = "sk-timeouts-SECRET-0123456789"
AGENT_S = str(Path(sys.executable).parent / "agent-s")
_CLEAN = clean_env()
REQUEST = ModelRequest((Message.text("user", "next action?"),))


def act(code: str) -> str:
    return f"Working.\n```python\n{code}\n```"


def _agent_s(
    server: ScriptedModelServer, tmp_path: Path, desktop: Any, *extra: str, env: Any = None
) -> tuple[subprocess.CompletedProcess[str], float]:
    args = [
        AGENT_S,
        *run_options(server.openai_base_url, tmp_path),
        *("--no-reflection", "--json", *extra, "Open the editor"),
    ]
    start = time.monotonic()
    done = subprocess.run(
        args,
        env={**_CLEAN, **desktop.env, "AGENT_S_COMPATIBLE_API_KEY": KEY, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return done, time.monotonic() - start


def _progress(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("waiting for the model")]


# -- a server that accepts and never answers ------------------------------------------------------


@pytest.mark.usefixtures("desktop")
def test_a_silent_server_shows_each_retry_and_ends_naming_the_fix(
    tmp_path: Path, desktop: Any
) -> None:
    with ScriptedModelServer(hang(4)) as server:
        done, seconds = _agent_s(server, tmp_path, desktop, "--model-timeout", "1")
        assert len(server.requests) == 4
    assert done.returncode == 1, done.stderr
    assert _progress(done.stderr) == [
        f"waiting for the model: attempt {n}/4 after a timeout of 1 s" for n in (2, 3, 4)
    ]
    # four attempts of 1 s and at most 1 + 2 + 4 s of backoff, plus start-up
    assert seconds < 40
    result = json.loads(done.stdout)
    assert result["status"] == "error"
    assert "within 1s" in result["reason"]
    assert "--model-timeout SECONDS" in result["reason"]


@pytest.mark.usefixtures("desktop")
def test_a_retry_that_cannot_finish_within_max_seconds_is_not_started(
    tmp_path: Path, desktop: Any
) -> None:
    with ScriptedModelServer(hang(1)) as server:
        done, seconds = _agent_s(
            server, tmp_path, desktop, "--model-timeout", "3", env={"AGENT_S_MAX_SECONDS": "5"}
        )
        assert len(server.requests) == 1  # attempt 2 could not end before the limit
    assert done.returncode == 3, done.stderr
    assert _progress(done.stderr) == []
    assert seconds < 30
    result = json.loads(done.stdout)
    assert result["status"] == "budget_exceeded"
    assert result["cause"] == "max_seconds"
    assert "the time limit of 5 s would pass before model attempt 2" in result["reason"]


# -- where the timeout comes from -----------------------------------------------------------------


def _measured_wait(
    server: ScriptedModelServer, path: Path, environ: Any = None, flag: float | None = None
) -> float:
    flags = {"--model": "scripted-model", "--base-url": server.openai_base_url}
    settings = load_settings(
        flag_values({**flags, "--model-timeout": flag}), environ=environ or {}, path=path
    )
    provider = build_provider(settings.build_model(KEY, {}).settings(), retry=RetryPolicy(1))
    start = time.monotonic()
    with pytest.raises(Timeout):
        provider.complete(REQUEST)
    return time.monotonic() - start


def test_the_timeout_from_the_file_the_variable_and_the_flag_reaches_the_provider(
    tmp_path: Path,
) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[model]\ntimeout = 0.6\n", encoding="utf-8")
    env = {"AGENT_S_MODEL_TIMEOUT": "1.4"}
    with ScriptedModelServer(hang(3)) as server:
        from_file = _measured_wait(server, path=config)
        from_env = _measured_wait(server, path=config, environ=env)
        from_flag = _measured_wait(server, path=config, environ=env, flag=2.2)
    assert 0.6 <= from_file < 1.2
    assert 1.4 <= from_env < 2.0
    assert 2.2 <= from_flag < 2.8


def test_the_default_timeout_grows_with_the_request() -> None:
    settings = load_settings(flag_values({"--model": "m", "--base-url": "http://h/v1"}), environ={})
    model = settings.build_model(None, {}).settings()
    text_only = request_timeout(model, REQUEST)
    big = ModelRequest((Message.text("user", "x" * 1_000_000),))
    assert text_only == 60.0
    assert request_timeout(model, big) == 70.0
    given = load_settings(
        flag_values({"--model": "m", "--base-url": "http://h/v1", "--model-timeout": 5}),
        environ={},
    )
    assert request_timeout(given.build_model(None, {}).settings(), big) == 5.0


@pytest.mark.usefixtures("desktop")
def test_a_bad_timeout_is_refused_naming_the_setting(tmp_path: Path, desktop: Any) -> None:
    with ScriptedModelServer([]) as server:
        done, _ = _agent_s(server, tmp_path, desktop, env={"AGENT_S_MODEL_TIMEOUT": "-1"})
    assert done.returncode == 2
    assert "AGENT_S_MODEL_TIMEOUT" in done.stderr


# -- replies cut off, or far too long -------------------------------------------------------------


@pytest.mark.usefixtures("desktop")
def test_a_body_cut_mid_json_is_retried_and_the_run_goes_on(tmp_path: Path, desktop: Any) -> None:
    with ScriptedModelServer([malformed(), reply(act("agent.done()"))]) as server:
        done, _ = _agent_s(server, tmp_path, desktop)
        assert len(server.requests) == 2
    assert done.returncode == 0, done.stderr
    (line,) = _progress(done.stderr)
    assert line.startswith("waiting for the model: attempt 2/4 after ")
    assert "cut off mid-JSON" in line
    assert json.loads(done.stdout)["status"] == "succeeded"


def _largest_record(folder: Path) -> int:
    return max(p.stat().st_size for p in folder.rglob("*") if p.suffix in (".jsonl", ".json"))


@pytest.mark.usefixtures("desktop")
def test_a_5_mb_reply_is_capped_in_the_trajectory_and_the_feedback(
    tmp_path: Path, desktop: Any
) -> None:
    huge = "no action here " * 350_000  # 5.25 MB of text that is no action
    with ScriptedModelServer([reply(huge), reply(act("agent.done()"))]) as server:
        done, _ = _agent_s(server, tmp_path, desktop)
        assert len(server.requests) == 2
        feedback = json.dumps(server.requests[1].body["messages"][-2:])
    assert done.returncode == 0, done.stderr
    assert len(feedback) < 2 * MAX_TEXT_CHARS
    folder = Path(json.loads(done.stdout)["trajectory_dir"])
    assert _largest_record(folder) < 100_000


@pytest.mark.usefixtures("desktop")
def test_a_5_mb_body_that_is_no_json_ends_the_run_with_small_records(
    tmp_path: Path, desktop: Any
) -> None:
    with ScriptedModelServer([garbage(5_000_000)]) as server:
        done, _ = _agent_s(server, tmp_path, desktop)
    assert done.returncode == 1, done.stderr
    result = json.loads(done.stdout)
    assert "not valid JSON" in result["reason"]
    assert len(done.stdout) < 100_000
    assert _largest_record(Path(result["trajectory_dir"])) < 100_000


def test_clipping_keeps_the_head_and_the_tail_and_says_how_much_went() -> None:
    text = "H" * 30_000 + "T" * 30_000
    clipped = clip_text(text)
    assert len(clipped) < MAX_TEXT_CHARS + 100
    assert clipped.startswith("H" * 10_000)
    assert clipped.endswith("T" * 10_000)
    assert "[... 40000 characters left out ...]" in clipped
    assert clip_text("short") == "short"
