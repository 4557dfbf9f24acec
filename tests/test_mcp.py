"""``agent-s mcp``: the installed command spawned as an MCP server and spoken to with the ``mcp``
SDK's own client, over stdio (both protocol eras: the initialize handshake, where questions are
sent mid-call, and 2026-07-28, where they come back as ``input_required`` results) and over
streamable HTTP on loopback; runs use the scripted model and the test desktop."""

from __future__ import annotations

import base64
import io
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import psutil
import pytest
from clean_env import clean_env
from mcp import Client, ClientSession, StdioServerParameters, stdio_client
from PIL import Image
from scripted_cli import UNREACHABLE, key_file, model_options
from test_mcp_auth import http_session

from agent_s.record.trajectory import find_secrets
from agent_s.testing.scripted_replies import reply
from agent_s.testing.scripted_server import ScriptedModelServer

AGENT_S = str(Path(sys.executable).parent / "agent-s")
README = Path(__file__).resolve().parent.parent / "README.md"
KEY = "sk-mcp-SECRET-0123456789abcdef"
TOOLS = {"run_task", "ground", "screenshot", "list_trajectories", "read_trajectory"}
_SESSION = ("DISPLAY", "XAUTHORITY", "DBUS_SESSION_BUS_ADDRESS", "WAYLAND_DISPLAY")
_CLEAN = clean_env(*_SESSION)
Elicit = Callable[[str, dict[str, Any]], types.ElicitResult]


def act(code: str) -> str:
    return f"Working.\n```python\n{code}\n```"


def _env(tmp_path: Path, desktop: Any | None, **extra: str) -> dict[str, str]:
    session = dict(desktop.env) if desktop is not None else {"DISPLAY": ":999"}
    return {**_CLEAN, **session, "AGENT_S_RECORD_DIR": str(tmp_path / "runs"), **extra}


def _model_args(tmp_path: Path, server: ScriptedModelServer | None) -> list[str]:
    url = server.openai_base_url if server is not None else UNREACHABLE
    return model_options(url, key=key_file(tmp_path, KEY))


def _elicitation(answer: Elicit, asked: list[str]) -> Any:
    async def callback(context: Any, params: Any) -> types.ElicitResult:
        asked.append(params.message)
        return answer(params.message, params.requested_schema)

    return callback


@asynccontextmanager
async def _session(
    args: list[str], env: Mapping[str, str], *, elicit: Any = None, modern: bool = False
) -> AsyncIterator[Any]:
    """A client of ``agent-s mcp ARGS``: ``modern`` the SDK's ``Client`` (2026-07-28), else a
    ``ClientSession`` over ``stdio_client`` with the initialize handshake."""
    params = StdioServerParameters(command=AGENT_S, args=["mcp", *args], env=dict(env))
    if modern:
        async with Client(params, elicitation_callback=elicit) as client:
            assert client.protocol_version == "2026-07-28"
            yield client
        return
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write, elicitation_callback=elicit) as session,
    ):
        await session.initialize()
        yield session


def _error(result: types.CallToolResult) -> str:
    assert result.is_error, result
    text = result.content[0].text  # type: ignore[union-attr]
    assert "Traceback" not in text, text
    return str(text)


def _ok(result: types.CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert result.structured_content is not None, result
    return dict(result.structured_content)


def _run(coroutine: Callable[[], Any]) -> Any:
    return anyio.run(coroutine)


# -- without a desktop: the tools, the errors, the record folder ------------------------------


def test_the_tools_are_listed_and_problems_come_back_naming_the_fix(tmp_path: Path) -> None:
    (runs := tmp_path / "runs").mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "trajectory.jsonl").write_text("")
    (runs / "escape").symlink_to(elsewhere)  # a link inside the folder that leads out of it

    async def main() -> None:
        async with _session([], _env(tmp_path, None)) as session:
            listed = await session.list_tools()
            assert {t.name for t in listed.tools} == TOOLS
            run_task = next(t for t in listed.tools if t.name == "run_task")
            for option in ("model", "provider", "grounding", "max_steps", "max_cost"):
                assert option in run_task.input_schema["properties"]
            for option in ("max_seconds", "virtual", "check", "plan"):
                assert option in run_task.input_schema["properties"]
            assert "status" in run_task.output_schema["properties"]

            no_model = _error(await session.call_tool("run_task", {"task": "open the calculator"}))
            assert "--model" in no_model, no_model
            assert "AGENT_S_MODEL" in no_model, no_model
            empty = _error(await session.call_tool("run_task", {"task": "  ", "model": "m"}))
            assert "the task is empty" in empty
            screen = _error(await session.call_tool("screenshot", {}))
            assert "virtual=true" in screen, screen
            for outside in ("../elsewhere", str(elsewhere), "escape", "/etc", "runs/../.."):
                refused = _error(await session.call_tool("read_trajectory", {"run": outside}))
                assert "outside the record folder" in refused, (outside, refused)
            missing = _error(await session.call_tool("read_trajectory", {"run": "run-none"}))
            assert "list_trajectories" in missing
            listed_runs = _ok(await session.call_tool("list_trajectories", {}))
            assert listed_runs["trajectories"] == []  # the link out is not listed either

    _run(main)


# -- runs on the test desktop -----------------------------------------------------------------


def _wait_for(predicate: Callable[[], Any], timeout: float = 5.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.1)


def test_run_task_saves_a_document_and_the_trajectory_reads_back(
    tmp_path: Path, desktop: Any, apps: Any, x11: Any
) -> None:
    doc = tmp_path / "note.txt"
    doc.write_text("Shopping list\n")
    apps(["mousepad", str(doc)], window="note.txt")
    x11.activate("note.txt")
    script = [
        reply(act('agent.click("Shopping list")')),
        reply(act('agent.hotkey(["ctrl", "end"])')),
        reply(act('agent.type(text="milk and eggs")')),
        reply(act('agent.hotkey(["ctrl", "s"])')),
        reply(act('agent.done(answer="saved")')),
    ]
    progress: list[tuple[float, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, message))

    with ScriptedModelServer(script) as server:

        async def main() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
            async with _session(_model_args(tmp_path, server), _env(tmp_path, desktop)) as session:
                done = await session.call_tool(
                    "run_task",
                    {"task": "Add milk and eggs to the list and save", "max_steps": 8},
                    progress_callback=on_progress,
                )
                outcome = _ok(done)
                listed = _ok(await session.call_tool("list_trajectories", {"limit": 5}))
                read = _ok(
                    await session.call_tool("read_trajectory", {"run": outcome["trajectory_id"]})
                )
                return outcome, listed, read

        outcome, listed, read = _run(main)
    assert outcome["status"] == "succeeded", outcome
    assert outcome["answer"] == "saved"
    assert outcome["steps"] == 5
    saved = _wait_for(lambda: "milk and eggs" in doc.read_text() and doc.read_text())
    assert saved.startswith("Shopping list\nmilk and eggs"), saved
    assert [value for value, _ in progress] == [1, 2, 3, 4, 5]
    assert "type" in str(progress[2][1]), progress
    folder = Path(outcome["trajectory_dir"])
    assert folder.parent == tmp_path / "runs"
    assert find_secrets(folder, [KEY]) == []
    assert [t["id"] for t in listed["trajectories"]] == [folder.name]
    assert listed["trajectories"][0]["status"] == "succeeded"
    assert read["result"]["status"] == "succeeded"
    assert [s["step"] for s in read["steps"]] == [1, 2, 3, 4, 5]
    assert read["steps"][2]["action"] == "agent.type(text='milk and eggs')", read["steps"][2]
    first = read["steps"][0]["grounding"][0]
    assert first["point"] is not None
    assert first["source"] in ("a11y", "ocr")


def _galculator_script() -> list[Any]:
    return [
        reply(act('agent.ask_user("Which digit should I press?")')),
        reply(act('agent.open("galculator")')),
        reply(act('agent.click("the 7 button")')),
        reply(act('agent.hotkey(["ctrl", "c"])')),
        reply(act('agent.done(answer="7")')),
    ]


@pytest.mark.parametrize("modern", [False, True], ids=["handshake", "2026-07-28"])
def test_approvals_and_questions_go_to_the_client_and_its_answers_are_used(
    modern: bool, tmp_path: Path, desktop: Any, apps: Any, x11: Any
) -> None:
    x11.clipboard_set("")
    asked: list[str] = []

    def answer(message: str, schema: dict[str, Any]) -> types.ElicitResult:
        if "decision" in schema["properties"]:
            return types.ElicitResult(action="accept", content={"decision": "yes"})
        return types.ElicitResult(action="accept", content={"answer": "the 7"})

    with ScriptedModelServer(_galculator_script()) as server:

        async def main() -> dict[str, Any]:
            args = _model_args(tmp_path, server)
            elicit = _elicitation(answer, asked)
            async with _session(args, _env(tmp_path, desktop), elicit=elicit, modern=modern) as s:
                return _ok(await s.call_tool("run_task", {"task": "Press 7 on the calculator"}))

        outcome = _run(main)
        requests = list(server.requests)
    assert outcome["status"] == "succeeded", outcome
    assert len(asked) == 2, asked
    assert "Which digit should I press?" in asked[0]
    assert "galculator" in asked[1], asked[1]
    assert "allow list" in asked[1], asked[1]
    assert "the user answered: the 7" in json.dumps(requests[1].body)
    # the approved open happened: galculator came up, 7 was pressed and its display copied
    assert _wait_for(lambda: x11.clipboard_get().strip() == "7", 10), x11.clipboard_get()


def test_without_elicitation_approvals_are_refused_and_nothing_runs(
    tmp_path: Path, desktop: Any, apps: Any, x11: Any
) -> None:
    script = [
        reply(act('agent.open("galculator")')),
        reply(act('agent.fail(reason="I was not allowed to open the calculator")')),
    ]
    with ScriptedModelServer(script) as server:

        async def main() -> tuple[dict[str, Any], dict[str, Any]]:
            args = _model_args(tmp_path, server)
            async with _session(args, _env(tmp_path, desktop)) as session:
                task = {"task": "Open the calculator"}
                outcome = _ok(await session.call_tool("run_task", task))
                read = _ok(
                    await session.call_tool("read_trajectory", {"run": outcome["trajectory_id"]})
                )
                checked = await session.call_tool("run_task", {**task, "check": "true"})
                return outcome, read | {"check_error": _error(checked)}

        outcome, read = _run(main)
        second = json.dumps(server.requests[1].body)
    assert outcome["status"] == "failed", outcome
    assert read["steps"][0]["safety"].startswith("refused by nobody"), read["steps"][0]
    assert "nobody can approve" in second
    assert not [w for w in x11.windows() if "galculator" in w.app.casefold()]
    # the check command is code the client wants run: with nobody to approve it, nothing runs
    assert "check command was not run" in read["check_error"], read["check_error"]


def test_a_planned_run_ended_by_a_refusal_names_the_refused_action_as_its_cause(
    tmp_path: Path, desktop: Any, x11: Any
) -> None:
    """A client without elicitation; the run is planned; its one subtask's action is refused,
    the worker gives up twice, and the replanner has nothing usable to say. The cause is the
    refusal, not "the planner gave no usable plan"."""
    subtask = {"id": "calc", "description": "Open the calculator and press 7"}
    plan = {"feasible": True, "reason": "", "subtasks": [subtask]}
    script = [
        reply("The plan:\n```json\n" + json.dumps(plan) + "\n```"),
        reply(act('agent.open("galculator")')),
        reply(act('agent.fail(reason="I was not allowed to open the calculator")')),
        reply(act('agent.fail(reason="the calculator cannot be opened")')),
        *[reply("Without the calculator there is no way to do it.")] * 3,  # the replan: no plan
    ]
    config = tmp_path / "config.toml"
    config.write_text("[code_agent]\nenabled = false\n")
    with ScriptedModelServer(script) as server:

        async def main() -> tuple[dict[str, Any], dict[str, Any]]:
            args = _model_args(tmp_path, server)
            async with _session(args, _env(tmp_path, desktop, AGENT_S_CONFIG=str(config))) as s:
                task = {"task": "Open the calculator and press 7", "plan": "always"}
                outcome = _ok(await s.call_tool("run_task", task))
                run = {"run": outcome["trajectory_id"]}
                return outcome, _ok(await s.call_tool("read_trajectory", run))

        outcome, read = _run(main)
    assert not [w for w in x11.windows() if "galculator" in w.app.casefold()]
    assert (outcome["status"], outcome["cause"]) == ("failed", "refused"), outcome
    refusal = outcome["refusal"]
    assert refusal["step"] == 1, refusal
    assert refusal["action"] == "agent.open(app_or_filename='galculator')", refusal
    assert refusal["decided_by"] == "nobody (no approver)"
    assert "nobody can approve actions in this run" in refusal["reason"]
    reason = outcome["reason"]
    assert reason.startswith(f"the safety gate refused {refusal['action']} at step 1: "), reason
    assert "(after it: the planner gave no usable plan in 3 replies" in reason, reason
    assert "this MCP client cannot answer approvals" in reason  # and what to do about it
    assert read["result"]["refusal"] == refusal  # the recorded result says so too
    assert read["result"]["cause"] == "refused"


def test_a_question_nobody_can_answer_ends_the_run_as_needs_input(
    tmp_path: Path, desktop: Any
) -> None:
    script = [reply(act('agent.ask_user("Which report, March or April?")'))]
    with ScriptedModelServer(script) as server:

        async def main() -> dict[str, Any]:
            async with _session(_model_args(tmp_path, server), _env(tmp_path, desktop)) as s:
                return _ok(await s.call_tool("run_task", {"task": "Delete the report"}))

        outcome = _run(main)
    assert outcome["status"] == "needs_input", outcome
    assert outcome["question"] == "Which report, March or April?"


def test_ground_finds_a_named_button_and_the_point_presses_it(
    tmp_path: Path, desktop: Any, apps: Any, x11: Any
) -> None:
    launched = apps(["galculator"], window="galculator")
    x11.activate("galculator")
    x11.clipboard_set("")

    async def main() -> dict[str, Any]:
        async with _session([], _env(tmp_path, desktop)) as session:
            found = _ok(await session.call_tool("ground", {"expression": "the 7 button"}))
            missing = await session.call_tool("ground", {"expression": "the Launch Rocket button"})
            assert "not found" in _error(missing)
            return found

    found = _run(main)
    assert found["source"] == "a11y", found
    point, box, window = found["point"], found["box"], launched.window
    assert box["x"] <= point["x"] < box["x"] + box["width"], found
    assert box["y"] <= point["y"] < box["y"] + box["height"], found
    assert window.x <= point["x"] < window.x + window.width, (found, window)
    from agent_s.desktop.ops import Point

    x11.click(Point(point["x"], point["y"]))
    x11.hotkey(["ctrl", "c"])
    assert _wait_for(lambda: x11.clipboard_get().strip() == "7", 5), x11.clipboard_get()


def test_screenshot_is_a_png_of_the_screen(
    tmp_path: Path, desktop: Any, apps: Any, x11: Any
) -> None:
    window = apps(["galculator"], window="galculator").window

    async def main() -> types.CallToolResult:
        async with _session([], _env(tmp_path, desktop)) as session:
            result: types.CallToolResult = await session.call_tool("screenshot", {})
            return result

    result = _run(main)
    assert not result.is_error, result
    (image,) = result.content
    assert isinstance(image, types.ImageContent)
    assert image.mime_type == "image/png"
    data = base64.b64decode(image.data)
    assert data.startswith(b"\x89PNG")
    box = (window.x, window.y, window.x + window.width, window.y + window.height)
    with Image.open(io.BytesIO(data)) as picture:
        assert picture.size == (1280, 800)
        shown = picture.convert("RGB").crop(box)
    # the calculator's window, as the desktop itself shows it
    assert shown.tobytes() == x11.capture().image.convert("RGB").crop(box).tobytes()
    assert len(shown.getcolors(maxcolors=1 << 16) or ()) > 3  # not a blank frame


# -- streamable HTTP on loopback --------------------------------------------------------------


def test_streamable_http_serves_on_loopback_only(tmp_path: Path, desktop: Any) -> None:
    proc = subprocess.Popen(
        [AGENT_S, "mcp", "--transport", "http", "--port", "0"],
        env=_env(tmp_path, desktop),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        found = re.search(r"(http://127\.0\.0\.1:(\d+)/mcp)", line)
        assert found, line
        url, port = found.group(1), int(found.group(2))
        said = re.search(r"Authorization: Bearer ([\w-]+)", proc.stderr.readline())
        assert said, "the token is printed on stderr"
        token = said.group(1)
        listening = [
            c.laddr
            for c in psutil.Process(proc.pid).net_connections("inet")
            if c.status == psutil.CONN_LISTEN
        ]
        assert listening
        assert all(addr.ip == "127.0.0.1" for addr in listening), listening
        assert {addr.port for addr in listening} == {port}

        async def main() -> tuple[set[str], types.CallToolResult]:
            async with http_session(url, f"Bearer {token}") as session:
                names = {t.name for t in (await session.list_tools()).tools}
                shot: types.CallToolResult = await session.call_tool("screenshot", {})
                return names, shot

        names, shot = _run(main)
        assert names == TOOLS
        (image,) = shot.content
        assert isinstance(image, types.ImageContent)
        with Image.open(io.BytesIO(base64.b64decode(image.data))) as picture:
            assert picture.size == (1280, 800)
    finally:
        proc.terminate()
        proc.wait(20)
        if proc.stderr is not None:
            rest = proc.stderr.read()
            assert "Traceback" not in rest, rest


# -- the README's client configuration ---------------------------------------------------------


def _readme_config() -> dict[str, Any]:
    text = README.read_text()
    section = text.split("### MCP", 1)[1].split("\n#", 1)[0]
    bodies = re.findall(r"^```json\n(.*?)^```$", section, re.MULTILINE | re.DOTALL)
    # the stdio one (a command to start); the HTTP one is tests/test_mcp_auth.py's
    (config,) = [c for c in map(json.loads, bodies) if "command" in c["mcpServers"]["agent-s"]]
    return dict(config)


def test_the_readme_client_configuration_starts_the_server_it_describes(
    tmp_path: Path, desktop: Any
) -> None:
    server_entry = _readme_config()["mcpServers"]["agent-s"]
    assert Path(server_entry["command"]).name == "agent-s"
    given_env: dict[str, str] = server_entry.get("env", {})
    model = given_env["AGENT_S_MODEL"]
    script = [reply(act('agent.done(answer="hello")'))]
    with ScriptedModelServer(script) as server:
        # the README's variables as written, the scripted server standing in for the provider
        env = {**_env(tmp_path, desktop), **given_env, "AGENT_S_BASE_URL": server.openai_base_url}

        async def main() -> dict[str, Any]:
            params = StdioServerParameters(command=AGENT_S, args=server_entry["args"], env=env)
            async with Client(params) as client:
                assert {t.name for t in (await client.list_tools()).tools} == TOOLS
                return _ok(await client.call_tool("run_task", {"task": "Say hello"}))

        outcome = _run(main)
        first = server.requests[0]
    assert outcome["status"] == "succeeded", outcome
    assert first.model == model


def test_list_trajectories_is_newest_first_by_when_each_run_started(tmp_path: Path) -> None:
    """A report written later into an older run's folder (its folder time moves) does not
    make it the newest: the order is the runs' start."""
    from agent_s.record.trajectory import TrajectoryWriter

    folders = {}
    for name, started in (("older", 1_000_000.0), ("newer", 2_000_000.0)):
        writer = TrajectoryWriter.create(tmp_path / "runs")
        writer.write_run({"task": f"the {name} run", "started_at": started})
        writer.close()
        folders[name] = writer.folder
    (folders["older"] / "report.html").write_text("<p>written afterwards</p>")
    os.utime(folders["newer"], (1, 1))  # and the newer folder's own time is old

    async def main() -> dict[str, Any]:
        async with _session(_model_args(tmp_path, None), _env(tmp_path, None)) as session:
            return _ok(await session.call_tool("list_trajectories", {}))

    listed = _run(main)
    tasks = [entry["task"] for entry in listed["trajectories"]]
    assert tasks == ["the newer run", "the older run"], listed
