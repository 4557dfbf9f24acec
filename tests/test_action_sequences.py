"""Several actions per reply (``max_actions_per_reply``, ``agent_s.loop.sequence``), on the
session's virtual desktop: a GTK form filled from one reply, a dialog that stops a sequence
before the action it would have swallowed, a failed grounding that stops one, and mousepad
edited and saved through ``agent-s run``; each step of the trajectory one action, the model
called once per reply. The model is scripted and reached through the real OpenAI SDK."""

from __future__ import annotations

import html
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import atspi_texts
from scripted_cli import run_options
from typer.testing import CliRunner

from agent_s import (
    Agent,
    AgentConfig,
    GroundingConfig,
    ModelConfig,
    RunResult,
    RunStatus,
    load_trajectory,
)
from agent_s.actions import ActionParseError, parse_actions
from agent_s.cli.main import app
from agent_s.grounding import AccessibilityTree
from agent_s.loop.sequence import same_title
from agent_s.prompting import detect_platform, worker_system_prompt
from agent_s.settings.config import ConfigError, SafetyConfig, SafetyRule
from agent_s.settings.read import flag_values, load_settings
from agent_s.testing.scripted_replies import reply
from agent_s.testing.scripted_server import ScriptedModelServer

pytestmark = pytest.mark.desktop
KEY = "sk-sequence-0000"
FORM = "Dialogs and Message Boxes"  # gtk3-demo's dialog demo: two entries and dialog buttons
ENTRIES = ("Entry 1", "Entry 2")


@pytest.fixture(scope="module", autouse=True)
def _accessibility_bus(desktop: Any) -> None:
    """Bind AT-SPI in this process before ``apps`` notes the running processes."""
    AccessibilityTree().applications()


def act(*calls: str) -> str:
    lines = "\n".join(calls)
    return f"The fields are all on the screen.\n```python\n{lines}\n```"


def agent_for(
    server: ScriptedModelServer, x11: Any, tmp_path: Path, most: int, **settings: Any
) -> Agent:
    model = ModelConfig("openai-compatible", "scripted-model", server.openai_base_url, KEY)
    config = AgentConfig(
        record_dir=tmp_path / "runs", settle_seconds=0.5, max_actions_per_reply=most, **settings
    )
    return Agent(model, settings=config, grounding=GroundingConfig("auto"), backend=x11)


def _form(apps: Any, x11: Any) -> None:
    apps(["gtk3-demo", "--run=dialog"], window=FORM)
    x11.activate(FORM)


def _entries(desktop: Any) -> dict[str, str]:
    """The form's entries by their labels (the tree lists each entry just before its label)."""
    found = atspi_texts(desktop, "gtk3-demo")
    return {
        label["text"]: entry["text"]
        for entry, label in zip(found, found[1:], strict=False)
        if entry["role"] == "text" and label["role"] == "label" and label["text"] in ENTRIES
    }


def _text(request: Any) -> str:
    """The text of a request's messages (the images left out)."""
    parts = [
        part.get("text", "") if isinstance(part, dict) else ""
        for message in request.body["messages"]
        for part in (
            message["content"]
            if isinstance(message["content"], list)
            else [{"text": message["content"]}]
        )
    ]
    return "\n".join(parts)


FILL = (
    "agent.click(element_description='the \"Entry 1\" field')",
    'agent.type(text="Ada")',
    'agent.hotkey(keys=["tab"])',
    'agent.type(text="Lovelace")',
)


def on_the_form(
    apps: Any,
    x11: Any,
    tmp_path: Path,
    calls: tuple[str, ...],
    last: str = "agent.done()",
    **settings: Any,
) -> tuple[RunResult, str]:
    """A run on gtk3-demo's form with up to 4 actions per reply: the model answers ``calls``
    in one reply, then ``last``. The result, and the text of the second request."""
    _form(apps, x11)
    with ScriptedModelServer([reply(act(*calls)), reply(act(last))]) as server:
        agent = agent_for(server, x11, tmp_path, 4, **settings)
        result = agent.run("Fill in Ada Lovelace")
        return result, _text(server.requests[1])


def test_a_gtk_form_is_filled_from_one_reply(
    apps: Any, x11: Any, desktop: Any, tmp_path: Path
) -> None:
    result, second = on_the_form(apps, x11, tmp_path, FILL)
    assert result.status is RunStatus.SUCCEEDED, result
    assert result.model_calls == 2
    assert _entries(desktop) == {"Entry 1": "Ada", "Entry 2": "Lovelace"}
    steps = load_trajectory(result.trajectory_dir).steps
    assert [s.action_text for s in steps[:4]] == [
        "agent.click(element_description='the \"Entry 1\" field')",
        "agent.type(text='Ada')",
        "agent.hotkey(keys=('tab',))",
        "agent.type(text='Lovelace')",
    ]
    assert [(s.sequence.first, s.sequence.index, s.sequence.total) for s in steps[:4]] == [
        (1, i, 4) for i in range(1, 5)
    ]
    assert len(steps[0].calls) == 1
    assert steps[0].reply
    assert all(s.calls == () and s.reply == "" for s in steps[1:4])  # the call is step 1's
    assert steps[4].sequence is None
    assert len(steps[4].calls) == 1
    # the model is asked once more, shown what each of the four actions did, with no stop
    for step in steps[:4]:
        assert f"{step.action_text} " in second
    assert "Result of step 4: agent.type(text='Lovelace') -> ok" in second
    assert "were not carried out" not in second
    assert "up to 4 that do not depend on each other" in second


def test_a_dialog_stops_the_sequence_before_the_next_action(
    apps: Any, x11: Any, desktop: Any, tmp_path: Path
) -> None:
    calls = ('agent.click("the Message Dialog button")', 'agent.type(text="Ada", enter=True)')
    result, second = on_the_form(apps, x11, tmp_path, calls)
    assert result.status is RunStatus.SUCCEEDED, result
    # the dialog the click opened did not get the text and its Enter: it is still open
    dialogs = [w for w in x11.windows() if w.app == "Gtk3-demo" and w.title != FORM]
    assert any(w.active for w in dialogs), x11.windows()
    assert _entries(desktop) == {"Entry 1": "", "Entry 2": ""}
    steps = load_trajectory(result.trajectory_dir).steps
    assert [s.action_text for s in steps] == [
        "agent.click(element_description='the Message Dialog button')",
        "agent.done()",
    ]
    assert steps[1].errors == ("the rest of the reply of step 1 was dropped",)
    assert "held 2 actions; 1 ran, and the rest were not carried out" in second
    assert "ran: agent.click(element_description='the Message Dialog button')" in second
    assert "not run: agent.type(text='Ada', enter=True)" in second
    assert "stopped before action 2 a window appeared" in second


def test_a_target_not_found_stops_the_sequence(
    apps: Any, x11: Any, desktop: Any, tmp_path: Path
) -> None:
    calls = (
        'agent.type(element_description=\'the "Entry 1" field\', text="Ada")',
        "agent.click(\"the 'Surname' field\")",
        'agent.type(text="Lovelace")',
    )
    result, second = on_the_form(apps, x11, tmp_path, calls, "agent.fail()")
    assert result.status is RunStatus.FAILED, result
    assert _entries(desktop) == {"Entry 1": "Ada", "Entry 2": ""}  # no Lovelace anywhere
    steps = load_trajectory(result.trajectory_dir).steps
    assert [s.outcome for s in steps] == ["ok", "error", "terminal"]
    assert steps[1].sequence is not None
    assert steps[1].sequence.index == 2
    assert "failed: agent.click(element_description=\"the 'Surname' field\")" in second
    assert "not run: agent.type(text='Lovelace')" in second


def test_the_safety_gate_judges_each_action_of_a_sequence(
    apps: Any, x11: Any, desktop: Any, tmp_path: Path
) -> None:
    safety = SafetyConfig(rules=(SafetyRule("deny", actions=("type",), text="Lovelace"),))
    calls = (FILL[0], FILL[3], FILL[2], FILL[1])  # Lovelace first: refused, and the rest with it
    result, second = on_the_form(apps, x11, tmp_path, calls, "agent.fail()", safety=safety)
    assert result.status is RunStatus.FAILED, result
    assert _entries(desktop) == {"Entry 1": "", "Entry 2": ""}  # neither name was typed
    steps = load_trajectory(result.trajectory_dir).steps
    assert [s.outcome for s in steps] == ["ok", "error", "terminal"]
    assert steps[1].safety is not None
    assert steps[1].safety["allowed"] is False
    assert "failed: agent.type(text='Lovelace')" in second
    assert "not run: agent.hotkey(keys=('tab',))" in second
    assert "not run: agent.type(text='Ada')" in second


def test_mousepad_edited_and_saved_from_one_reply_through_the_command_line(
    apps: Any, x11: Any, tmp_path: Path
) -> None:
    doc = tmp_path / "todo.txt"
    doc.write_text("call the bank\n")
    editor = apps(["mousepad", str(doc)], window="todo.txt")
    x11.activate("todo.txt")
    edit = ('agent.hotkey(["ctrl", "a"])', "agent.type(text='buy milk')")
    save = 'agent.hotkey(["ctrl", "s"])'
    script = [
        # five actions where four are allowed: refused whole, and said why
        reply(act(*edit, save, "agent.wait(seconds=0.5)", "agent.wait(seconds=0.5)")),
        reply(act(*edit, save)),
        reply(act("agent.done()")),
    ]
    record = tmp_path / "runs"
    with ScriptedModelServer(script) as server:
        options = [*run_options(server.openai_base_url, record, key=KEY), "--safety", "auto"]
        task = "Replace the text of todo.txt with buy milk and save it"
        done = CliRunner().invoke(app, [*options, "--max-actions-per-reply", "4", task])
        second = _text(server.requests[1])
    assert done.exit_code == 0, done.output
    assert doc.read_text().rstrip("\n") == "buy milk"
    assert "reply with at most 4 actions per turn" in second
    assert "up to 4 one per line" in second
    (folder,) = record.iterdir()
    steps = load_trajectory(folder).steps
    assert [(s.step, s.sequence.index if s.sequence else None) for s in steps] == [
        (1, 1),
        (2, 2),
        (3, 3),
        (4, None),
    ]
    assert len(steps[0].calls) == 2  # the refused reply and the one carried out
    # the report and the replay see each action
    shown = CliRunner().invoke(app, ["report", str(folder)])
    assert shown.exit_code == 0, shown.output
    page = html.unescape(Path(shown.output.strip()).read_text())
    for call in [s.action_text for s in steps]:
        assert call in page, call
    assert "action 3 of 3 of step 1's reply (its model call is recorded there)" in page
    # a workflow kept from the run has each action as a step, and buy milk as a parameter
    db = ["--db", str(tmp_path / "memory.sqlite3")]
    saved = CliRunner().invoke(app, ["workflow", "save", str(folder), "milk", *db])
    assert saved.exit_code == 0, saved.output
    assert "saved workflow milk: 4 steps" in saved.output
    assert "--set text_1=buy milk" in saved.output
    editor.proc.terminate()  # the file as it was, in a fresh editor
    editor.proc.wait(5)
    doc.write_text("call the bank\n")
    apps(["mousepad", str(doc)], window="todo.txt")
    x11.activate("todo.txt")
    replayed = CliRunner().invoke(
        app, ["replay", str(folder), "--safety", "auto", "--record", str(tmp_path / "again")]
    )
    assert replayed.exit_code == 0, replayed.output
    deadline = time.monotonic() + 5
    while doc.read_text().rstrip("\n") != "buy milk" and time.monotonic() < deadline:
        time.sleep(0.1)
    assert doc.read_text().rstrip("\n") == "buy milk"


def test_a_calc_row_is_typed_from_one_reply(apps: Any, x11: Any, tmp_path: Path) -> None:
    apps(["localc", "--norestore"], window="LibreOffice Calc", timeout=60)
    x11.activate("LibreOffice Calc")
    script = [
        reply(act('agent.type(text="Ada")', 'agent.hotkey(keys=["tab"])')),
        reply(act('agent.type(text="Lovelace")', 'agent.hotkey(keys=["tab"])')),
        reply(act('agent.type(text="1815")', 'agent.hotkey(keys=["enter"])')),
        reply(act("agent.done()")),
    ]
    with ScriptedModelServer(script) as server:
        result = agent_for(server, x11, tmp_path, 4).run("Type the row Ada, Lovelace, 1815")
    assert result.status is RunStatus.SUCCEEDED, result
    assert result.model_calls == 4
    assert result.steps == 7
    # the row as Calc copies it: every value in its cell (the focused-field query that would
    # stop Calc taking input is not made: agent_s.desktop.watch.UNASKED)
    x11.clipboard_set("")
    for keys in (["ctrl", "home"], ["ctrl", "shift", "end"], ["ctrl", "c"]):
        x11.hotkey(keys)
        time.sleep(0.3)
    deadline = time.monotonic() + 5
    while not x11.clipboard_get().strip() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert x11.clipboard_get().strip().split("\t") == ["Ada", "Lovelace", "1815"]


def test_a_reply_holds_at_most_the_allowed_actions_and_ends_alone() -> None:
    reply_text = act(*FILL)
    assert len(parse_actions(reply_text, 4)) == 4
    with pytest.raises(ActionParseError, match="at most 3 actions") as info:
        parse_actions(reply_text, 3)
    assert info.value.kind == "several"
    with pytest.raises(ActionParseError, match="done must be the only action"):
        parse_actions(act(FILL[1], "agent.done()"), 4)
    with pytest.raises(ActionParseError, match="exactly one action"):
        parse_actions(reply_text, 1)


def test_a_modified_mark_is_no_change_of_title() -> None:
    assert same_title("todo.txt - Mousepad", "*todo.txt - Mousepad")
    assert not same_title("todo.txt - Mousepad", "Save As")


def test_the_setting_is_read_from_the_file_the_variable_and_the_flag(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[run]\nmax_actions_per_reply = 3\n")
    environ = {"AGENT_S_CONFIG": str(config)}
    assert load_settings(environ=environ).build_agent_config().max_actions_per_reply == 3
    environ["AGENT_S_MAX_ACTIONS_PER_REPLY"] = "4"
    assert load_settings(environ=environ).build_agent_config().max_actions_per_reply == 4
    flags = flag_values({"--max-actions-per-reply": 2})
    assert load_settings(flags, environ=environ).build_agent_config().max_actions_per_reply == 2
    assert AgentConfig().max_actions_per_reply == 1
    with pytest.raises(ConfigError, match="less than or equal to 10") as info:
        load_settings(flag_values({"--max-actions-per-reply": 11}), environ={})
    assert info.value.setting == "--max-actions-per-reply"


def test_the_prompt_offers_several_actions_only_when_allowed_with_an_example_that_parses() -> None:
    linux = detect_platform(1280, 800, system="linux", environ={"XDG_CURRENT_DESKTOP": "openbox"})
    assert "Several actions in one reply" not in worker_system_prompt(linux)
    offered = worker_system_prompt(linux, most=4)
    assert "you may write up to 4 of them" in offered
    section = offered[offered.index("Several actions in one reply") :]
    block = section[section.index("```python") : section.index("```\n\n") + 3]
    assert [a.action for a in parse_actions(block, 4)] == ["click", "type", "type"]
    assert [a.action for a in parse_actions(block, 3)] == ["click", "type", "type"]
