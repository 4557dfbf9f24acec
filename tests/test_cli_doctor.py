"""``agent-s doctor``: real checks on a real virtual desktop, clear failures without one."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from scripted_cli import model_options
from typer.testing import CliRunner

from agent_s.cli.main import app
from agent_s.doctor import ModelOptions, provider_checks
from agent_s.testing.scripted_replies import reply, slow, unauthorized
from agent_s.testing.scripted_server import ScriptedModelServer

AGENT_S = str(Path(sys.executable).with_name("agent-s"))
_MODEL_VARIABLES = (
    "AGENT_S_PROVIDER",
    "AGENT_S_MODEL",
    "AGENT_S_BASE_URL",
    "AGENT_S_GROUND",
    "AGENT_S_GROUND_URL",
    "AGENT_S_GROUND_MODEL",
    "AGENT_S_COMPATIBLE_API_KEY",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
)


def _env_without_display() -> dict[str, str]:
    env = dict(os.environ)
    for key in ("DISPLAY", "XAUTHORITY", "DBUS_SESSION_BUS_ADDRESS", "WAYLAND_DISPLAY"):
        env.pop(key, None)
    for key in _MODEL_VARIABLES:  # no model configured, whatever this shell has
        env.pop(key, None)
    return env


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.desktop
def test_doctor_on_a_virtual_desktop_passes_every_check() -> None:
    result = subprocess.run(
        [AGENT_S, "doctor", "--virtual", "--json"],
        env=_env_without_display(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    statuses = {c["name"]: c["status"] for c in report["checks"]}
    assert statuses == {
        "tools": "ok",
        "display": "ok",
        "screen": "ok",
        "capture": "ok",
        "input": "ok",
        "ocr": "ok",
        "accessibility": "ok",
        "code sandbox": "ok",
        "model": "warn",
    }
    details = {c["name"]: c["detail"] for c in report["checks"]}
    assert "1280x800" in details["screen"]
    assert "1280x800 screenshot" in details["capture"]


def test_doctor_without_a_display_says_what_to_do() -> None:
    result = subprocess.run(
        [AGENT_S, "doctor"],
        env=_env_without_display(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert "DISPLAY is not set" in result.stdout
    assert "--virtual" in result.stdout
    assert "Traceback" not in result.stdout + result.stderr


def test_doctor_with_a_dead_display_fails_cleanly() -> None:
    env = _env_without_display()
    env["DISPLAY"] = ":4093"
    result = subprocess.run(
        [AGENT_S, "doctor", "--json"], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stdout + result.stderr
    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    assert checks["display"]["status"] == "fail"
    assert ":4093" in checks["display"]["detail"]


# -- model providers, against the scripted model server ----------------------------------------


def test_a_reachable_model_and_grounding_model_with_their_keys_are_ok() -> None:
    with ScriptedModelServer([reply("OK"), reply("O")]) as server:
        options = ModelOptions(
            provider="openai-compatible",
            model="scripted-model",
            base_url=server.openai_base_url,
            ground_model="ui-tars-1.5-7b",
            ground_url=server.openai_base_url,
        )
        environ = {"AGENT_S_COMPATIBLE_API_KEY": "sk-doctor-SECRET-1"}
        checks = provider_checks(options, environ, timeout_s=5)
    assert [(c.name, c.status) for c in checks] == [("model", "ok"), ("grounding model", "ok")]
    assert f"scripted-model at {server.openai_base_url}" in checks[0].detail
    assert "key from AGENT_S_COMPATIBLE_API_KEY" in checks[0].detail
    assert "ui-tars-1.5-7b" in checks[1].detail
    first, second = server.requests
    assert first.body["max_tokens"] == 1  # a one-token request, nothing more
    assert first.headers["authorization"] == "Bearer sk-doctor-SECRET-1"
    assert second.model == "ui-tars-1.5-7b"
    assert all("sk-doctor-SECRET" not in c.detail + c.fix for c in checks)


def test_a_rejected_key_fails_and_names_where_it_came_from() -> None:
    with ScriptedModelServer([unauthorized()]) as server:
        options = ModelOptions(
            provider="openai-compatible", model="scripted-model", base_url=server.openai_base_url
        )
        environ = {"AGENT_S_COMPATIBLE_API_KEY": "sk-wrong-SECRET-2"}
        (check,) = provider_checks(options, environ, timeout_s=5)
    assert check.status == "fail"
    assert "rejected the API key from AGENT_S_COMPATIBLE_API_KEY (401)" in check.detail
    assert "AGENT_S_COMPATIBLE_API_KEY" in check.fix
    assert "sk-wrong-SECRET" not in check.detail + check.fix
    assert len(server.requests) == 1  # one attempt: the doctor does not retry


def test_an_unreachable_server_fails_with_its_url() -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    options = ModelOptions(provider="openai-compatible", model="scripted-model", base_url=url)
    (check,) = provider_checks(options, {}, timeout_s=5)
    assert check.status == "fail"
    assert check.detail.startswith(f"cannot reach {url}")
    assert "--base-url" in check.fix


def test_a_missing_key_fails_and_names_the_variable_without_a_request() -> None:
    options = ModelOptions(provider="anthropic", model="claude-sonnet-4-5")
    (check,) = provider_checks(options, {"AGENT_S_COMPATIBLE_API_KEY": "other"}, timeout_s=5)
    assert check.status == "fail"
    assert "ANTHROPIC_API_KEY is not set" in check.detail
    assert "https://api.anthropic.com" in check.detail
    assert "ANTHROPIC_API_KEY" in check.fix


def test_no_model_configured_is_a_warning_naming_the_flag_and_variables() -> None:
    (check,) = provider_checks(ModelOptions(), {})
    assert check.status == "warn"
    assert "no model configured" in check.detail
    assert "--model" in check.fix
    assert "AGENT_S_MODEL" in check.fix


def test_a_bad_model_setting_fails_with_the_configuration_error() -> None:
    checks = provider_checks(ModelOptions(model="mystery-model", ground="model"), {})
    assert [(c.name, c.status) for c in checks] == [("model", "fail"), ("grounding model", "fail")]
    assert "--provider" in checks[0].detail
    assert "--ground-model" in checks[1].detail


def test_the_doctor_command_reads_the_model_from_the_environment() -> None:
    with ScriptedModelServer([reply("OK")]) as server:
        env: dict[str, str | None] = {key: None for key in _MODEL_VARIABLES}
        env.update(
            DISPLAY=None,
            DBUS_SESSION_BUS_ADDRESS=None,
            AGENT_S_MODEL="scripted-model",
            AGENT_S_PROVIDER="openai-compatible",
            AGENT_S_BASE_URL=server.openai_base_url,
        )
        result = CliRunner().invoke(app, ["doctor", "--json", "--timeout", "5"], env=env)
    assert result.exit_code == 1, result.output  # no display here: that check fails
    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    assert checks["display"]["status"] == "fail"
    assert checks["model"]["status"] == "ok", checks["model"]
    assert "no key needed" in checks["model"]["detail"]


def test_the_doctor_command_prints_one_line_per_model_check() -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    env: dict[str, str | None] = {key: None for key in _MODEL_VARIABLES}
    env.update(DISPLAY=None, DBUS_SESSION_BUS_ADDRESS=None, COLUMNS="300")  # no wrapping
    args = ["doctor", *model_options(url), "--timeout", "5"]
    result = CliRunner().invoke(app, args, env=env)
    assert result.exit_code == 1
    lines = [line for line in result.stdout.splitlines() if " model " in f" {line} "]
    assert len(lines) == 1, result.stdout
    assert "FAIL" in lines[0]
    assert f"cannot reach {url}" in lines[0]


def test_a_server_that_does_not_answer_in_time_fails_with_the_timeout() -> None:
    with ScriptedModelServer([slow(3.0, reply("OK"))]) as server:
        options = ModelOptions(ground_model="ui-tars-1.5-7b", ground_url=server.openai_base_url)
        model, check = provider_checks(options, {"AGENT_S_MODEL": ""}, timeout_s=0.5)
        assert (model.name, model.status) == ("model", "warn")
        assert check.name == "grounding model"
        assert check.status == "fail"
        assert check.detail == f"no reply from {server.openai_base_url} within 0.5 s"
        assert "--ground-url" in check.fix


def test_doctor_says_when_model_code_cannot_be_contained(tmp_path: Path) -> None:
    """Without bubblewrap and unshare on PATH, code gets no PID namespace: a warning naming
    what it means and the fix."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("python3", "prlimit"):
        found = shutil.which(tool)
        if found:
            (bin_dir / tool).symlink_to(found)
    env = {**_env_without_display(), "PATH": str(bin_dir)}
    result = subprocess.run(
        [AGENT_S, "doctor", "--json"], env=env, capture_output=True, text=True, timeout=120
    )
    check = next(c for c in json.loads(result.stdout)["checks"] if c["name"] == "code sandbox")
    assert check["status"] == "warn"
    assert "may read the agent's environment" in check["detail"]
    assert "bubblewrap" in check["fix"]
