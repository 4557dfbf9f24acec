"""``agent-s export`` on a run recorded on the session's virtual desktop (the scripted model in a
real xterm): OSWorld's ``traj.jsonl`` with its runner's fields and the screenshots it names, and
message lists that the real OpenAI and Anthropic SDKs' request types accept and that the SDKs
send as they are (to the scripted server, which records what arrived). Bad input: a clear
error, no traceback."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from anthropic.types import MessageParam
from clean_env import clean_env
from openai.types.chat import ChatCompletionMessageParam
from PIL import Image
from pydantic import TypeAdapter
from test_workflow import terminal, write_note
from typer.testing import CliRunner

from agent_s import load_trajectory
from agent_s.cli.main import app
from agent_s.testing.scripted_replies import reply
from agent_s.testing.scripted_server import ScriptedModelServer

pytestmark = pytest.mark.desktop
_CLEAN = clean_env()
# what OSWorld's runner (lib_run_single) writes per step
OSWORLD_FIELDS = {
    "step_num",
    "action_timestamp",
    "action",
    "response",
    "reward",
    "done",
    "info",
    "screenshot_file",
}


@pytest.fixture(scope="module")
def recorded(
    desktop: Any, x11: Any, tmp_path_factory: pytest.TempPathFactory
) -> Path:  # one real run for every test here
    from conftest import AppRunner

    tmp_path = tmp_path_factory.mktemp("export")
    runner = AppRunner(desktop, x11)
    try:
        work = tmp_path / "notes"
        work.mkdir()
        terminal(runner, x11, work)
        return write_note(x11, tmp_path, work / "note.txt", "hello there")
    finally:
        runner.close()


def _plain(value: Any) -> Any:
    """A validated value as plain lists and dicts (the SDK types' ``Iterable`` fields validate
    as they are read: reading them all validates them)."""
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, str | bytes):
        return value
    if isinstance(value, Iterable):
        return [_plain(item) for item in value]
    return value


def cli(*args: str) -> Any:
    return CliRunner().invoke(app, ["export", *args], env=_CLEAN)


def test_osworld_traj_jsonl_has_the_runner_fields_and_screenshots(
    recorded: Path, tmp_path: Path
) -> None:
    out = tmp_path / "osworld"
    done = cli(str(recorded), "--format", "osworld", "--out", str(out))
    assert done.exit_code == 0, done.output
    assert done.output.strip() == str(out)
    lines = [json.loads(line) for line in (out / "traj.jsonl").read_text().splitlines()]
    steps = load_trajectory(recorded).steps
    assert len(lines) == len(steps) == 2
    for number, (line, step) in enumerate(zip(lines, steps, strict=True), 1):
        assert set(line) == OSWORLD_FIELDS, line
        assert line["step_num"] == number
        assert len(line["action_timestamp"]) == 21  # %Y%m%d@%H%M%S%f
        assert line["action_timestamp"][8] == "@"
        assert line["response"] == step.reply
        assert line["reward"] == 0
        assert line["screenshot_file"] == f"step_{number}_{line['action_timestamp']}.png"
        with Image.open(out / line["screenshot_file"]) as image:
            assert image.format == "PNG"
            assert image.size == (1280, 800)
    first, last = lines
    assert "hello there" in first["action"]  # the step's pyautogui code
    assert first["done"] is False
    assert first["info"]["outcome"] == "ok"
    assert last["action"] == "DONE"
    assert last["done"] is True


def test_message_lists_are_what_the_sdks_accept(recorded: Path, tmp_path: Path) -> None:
    for fmt in ("openai", "anthropic"):
        done = cli(str(recorded), "--format", fmt, "--out", str(tmp_path))
        assert done.exit_code == 0, done.output
        assert done.output.strip() == str(tmp_path / f"messages-{fmt}.json")
    chat = json.loads((tmp_path / "messages-openai.json").read_text())
    claude = json.loads((tmp_path / "messages-anthropic.json").read_text())
    assert chat["task"].startswith("In the terminal, write the text 'hello there'")
    assert chat["model"] == claude["model"] == "scripted-model"

    # the SDKs' own request types, validated strictly: nothing dropped, nothing missing
    for messages, kind in (
        (chat["messages"], ChatCompletionMessageParam),
        (claude["messages"], MessageParam),
    ):
        assert _plain(TypeAdapter(list[kind]).validate_python(messages)) == messages
        assert [m["role"] for m in messages] == ["user", "assistant"] * 2
    first = chat["messages"][0]["content"]
    assert first[0] == {"type": "text", "text": f"Task: {chat['task']}"}
    shot = first[2]["image_url"]["url"]
    assert shot.startswith("data:image/")
    assert "echo 'hello there'" in chat["messages"][1]["content"]
    assert claude["messages"][1]["content"][0]["text"] == chat["messages"][1]["content"]
    image = claude["messages"][0]["content"][2]["source"]
    assert base64.b64decode(image["data"]) == base64.b64decode(shot.split(",", 1)[1])

    # and the real SDKs send them as they are
    script = [reply("seen"), reply("seen")]
    with ScriptedModelServer(script) as server:
        oa = openai.OpenAI(base_url=server.openai_base_url, api_key="sk-export-0000")
        answer = oa.chat.completions.create(model="gpt-4o", messages=chat["messages"])
        assert answer.choices[0].message.content == "seen"
        an = anthropic.Anthropic(base_url=server.base_url, api_key="sk-export-0000")
        said = an.messages.create(model="claude", max_tokens=64, messages=claude["messages"])
        assert said.content[0].type == "text"
        sent = [request.body["messages"] for request in server.requests]
    assert sent == [chat["messages"], claude["messages"]]
    assert len(server.requests[0].images()) == 2  # each step's screenshot went along


def test_bad_input_is_a_clear_error(recorded: Path, tmp_path: Path) -> None:
    unknown = cli(str(recorded), "--format", "csv")
    assert unknown.exit_code == 2
    assert "Traceback" not in unknown.output
    assert "unknown export format 'csv'; use one of osworld, openai, anthropic" in unknown.output

    nowhere = cli(str(tmp_path / "nowhere"), "--format", "osworld")
    assert nowhere.exit_code == 2
    assert "Traceback" not in nowhere.output
    assert nowhere.output.startswith("error: "), nowhere.output

    empty = tmp_path / "empty"
    empty.mkdir()
    stray = cli(str(empty), "--format", "openai")
    assert stray.exit_code == 2
    assert "Traceback" not in stray.output
    assert stray.output.startswith("error: "), stray.output
