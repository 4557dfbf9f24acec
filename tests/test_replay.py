"""Replay on the session's virtual desktop and on fresh ones: a recorded mousepad run carried out
again with no model call (the scripted server's script is empty: any call would fail the test),
re-grounded after its window moved, stopped with a clear report where it diverges, and healed
by the scripted model. Real apps, real grounding and input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from clean_env import clean_env
from polling import poll, wait_until
from typer.testing import CliRunner

from agent_s import Agent, AgentConfig, GroundingConfig, ModelConfig, RunStatus, load_trajectory
from agent_s.cli.main import app
from agent_s.grounding import AccessibilityTree
from agent_s.replay.player import Replayer, Script, replay, script_of, window_key
from agent_s.testing.scripted_replies import reply
from agent_s.testing.scripted_server import ScriptedModelServer

pytestmark = pytest.mark.desktop
KEY = "sk-replay-test-0000"
AGENT_S = str(Path(sys.executable).parent / "agent-s")
_CLEAN = clean_env()
TASK = "Add milk and eggs to the end of the shopping list and save it"


@pytest.fixture(scope="module", autouse=True)
def _accessibility_bus(desktop: Any) -> None:
    AccessibilityTree().applications()  # bound before ``apps`` notes the running processes


def act(code: str) -> str:
    return f"Next step.\n```python\n{code}\n```"


def model_of(server: ScriptedModelServer) -> ModelConfig:
    return ModelConfig("openai-compatible", "scripted-model", server.openai_base_url, KEY)


def settings(tmp_path: Path, **more: Any) -> AgentConfig:
    return AgentConfig(record_dir=tmp_path / "runs", settle_seconds=0.4, **more)


def record(x11: Any, tmp_path: Path, task: str, actions: list[str]) -> Path:
    """A run of ``actions`` by the scripted model on the session desktop: its folder."""
    with ScriptedModelServer([reply(act(a)) for a in actions]) as server:
        agent = Agent(
            model_of(server),
            settings=settings(tmp_path),
            grounding=GroundingConfig("auto"),
            backend=x11,
        )
        result = agent.run(task)
    assert result.status is RunStatus.SUCCEEDED, result
    assert result.trajectory_dir is not None
    return result.trajectory_dir


def open_list(apps: Any, x11: Any, doc: Path, at: tuple[int, int] | None = None) -> Any:
    doc.write_text("Shopping list\n")
    launched = apps(["mousepad", str(doc)], window=doc.name)
    if at is not None:
        window = launched.window
        subprocess.run(
            ["xdotool", "windowmove", str(window.id), str(at[0]), str(at[1])],
            env={**os.environ, **x11.env},
            check=True,
        )
        wait_until(
            lambda: any(
                w.id == window.id and (w.x, w.y) != (window.x, window.y) for w in x11.windows()
            ),
            what="the window to move",
        )
    x11.activate(doc.name)
    return launched


SHOPPING = [
    'agent.click("Shopping list")',
    'agent.hotkey(["ctrl", "end"])',
    'agent.type(text="milk and eggs")',
    'agent.hotkey(["ctrl", "s"])',
    "agent.done()",
]


def _close(launched: Any) -> None:
    launched.proc.terminate()
    launched.proc.wait(timeout=10)


def test_replay_after_the_window_moved_grounds_again_with_no_model_call(
    apps: Any, x11: Any, tmp_path: Path
) -> None:
    doc = tmp_path / "list.txt"
    first = open_list(apps, x11, doc)
    folder = record(x11, tmp_path, TASK, SHOPPING)
    assert poll(lambda: "milk and eggs" in doc.read_text())
    _close(first)
    recorded = load_trajectory(folder).steps[0].grounding[0]
    assert recorded.point is not None

    open_list(apps, x11, doc, at=(420, 260))  # the same document, somewhere else
    with ScriptedModelServer([]) as server:  # any model call fails the test
        result = replay(folder, x11, model=model_of(server), settings=settings(tmp_path))
        assert server.requests == []
    assert result.status == "replayed", result.divergence
    assert result.ok
    assert result.model_calls == 0
    assert result.replayed == 5
    text = poll(lambda: "milk and eggs" in doc.read_text() and doc.read_text())
    assert text.startswith("Shopping list\nmilk and eggs"), text
    again = result.steps[0].grounding[0]
    assert again.grounder in ("a11y", "ocr")
    assert again.point is not None
    assert again.point != recorded.point
    # the new run is a folder of its own, replayable in turn
    assert result.trajectory_dir is not None
    assert result.trajectory_dir != folder
    assert len(load_trajectory(result.trajectory_dir).steps) == 5


def test_replay_stops_where_the_window_is_not_the_recorded_one(
    apps: Any, x11: Any, tmp_path: Path
) -> None:
    doc = tmp_path / "list.txt"
    first = open_list(apps, x11, doc)
    folder = record(x11, tmp_path, TASK, SHOPPING)
    _close(first)
    doc.write_text("Shopping list\n")
    # the editor is not open: the CLI says which step diverged and why, and exits 1
    env = {**_CLEAN, **x11.env, "HOME": str(tmp_path)}
    args = ["replay", str(folder), "--safety", "auto", "--wait", "1", "--record", str(tmp_path)]
    done = CliRunner().invoke(app, args, env=env)
    assert done.exit_code == 1, done.output
    assert "diverged at step 1" in done.output, done.output
    assert "agent.click(element_description='Shopping list')" in done.output
    assert f"recorded in the window 'Mousepad: {doc} - Mousepad'" in done.output, done.output
    assert "--heal" in done.output  # the fix is named
    assert doc.read_text() == "Shopping list\n"


def test_heal_hands_the_rest_to_the_agent_and_records_the_repaired_run(
    apps: Any, x11: Any, tmp_path: Path
) -> None:
    doc = tmp_path / "list.txt"
    first = open_list(apps, x11, doc)
    folder = record(x11, tmp_path, TASK, SHOPPING)
    _close(first)
    # the document's first line is no longer there: the click cannot be grounded
    doc.write_text("Groceries\n")
    apps(["mousepad", str(doc)], window=doc.name)
    x11.activate(doc.name)
    script = [
        reply(act('agent.click("Groceries")')),
        reply(act('agent.hotkey(["ctrl", "end"])')),
        reply(act('agent.type(text="milk and eggs")')),
        reply(act('agent.hotkey(["ctrl", "s"])')),
        reply(act("agent.done()")),
    ]
    with ScriptedModelServer(script) as server:
        result = replay(folder, x11, model=model_of(server), settings=settings(tmp_path), heal=True)
        first_request = json.dumps(server.requests[0].body)
    assert result.status == "healed", result
    assert result.divergence is not None
    assert (result.divergence.step, result.divergence.kind) == (1, "not_found")
    assert "could not find 'Shopping list'" in result.divergence.reason
    assert result.healed == 5
    assert result.model_calls == 5
    text = poll(lambda: "milk and eggs" in doc.read_text() and doc.read_text())
    assert text.startswith("Groceries\nmilk and eggs"), text
    # the model was told what happened
    assert "This task is a replay of a recorded run" in first_request
    assert "diverged at step 1 (agent.click(element_description='Shopping list'))" in (
        first_request
    )
    # one new folder: the failed step, the note, the repaired steps; replayable itself
    assert result.trajectory_dir is not None
    steps = load_trajectory(result.trajectory_dir).steps
    assert [s.action_text.split("(")[0] for s in steps] == [
        "agent.click",
        "agent.save_to_knowledge",
        "agent.click",
        "agent.hotkey",
        "agent.type",
        "agent.hotkey",
        "agent.done",
    ]
    # replayed again: the repaired steps, not the note about a divergence that was this run's
    again = script_of(result.trajectory_dir)
    assert [s.step for s in again.steps] == [3, 4, 5, 6, 7]
    assert again.skipped[1] == "step 2: a replay's note to the model"


def test_window_names_compare_without_the_modified_mark_and_numbers() -> None:
    assert window_key("Mousepad: *Untitled 2 - Mousepad") == window_key(
        "Mousepad: Untitled 1 - Mousepad"
    )
    assert window_key("Mousepad: list.txt - Mousepad") != window_key("Mousepad: Save As")
    # another HOME (a fresh desktop, another machine): the same document
    assert window_key("Mousepad: */tmp/run/home/todo.txt - Mousepad") == window_key(
        "Mousepad: /home/user/todo.txt - Mousepad"
    )
    assert window_key("Mousepad: ~/todo.txt - Mousepad") == window_key(
        "Mousepad: todo.txt - Mousepad"
    )
    assert window_key("Mousepad: /tmp/todo.txt - Mousepad") != window_key(
        "Mousepad: /tmp/notes.txt - Mousepad"
    )


def test_a_replay_option_not_known_is_refused_by_name(x11: Any) -> None:
    """``replay``, ``Workflow.run`` and ``Replayer`` take the same options (``ReplayOptions``):
    a misspelt one is an error naming it, before anything is replayed."""
    with pytest.raises(TypeError, match="unexpected keyword arguments: wait$"):
        Replayer(x11, wait=1.0)
    with pytest.raises(TypeError, match="unexpected keyword arguments: heals$"):
        replay(Script(task="nothing", steps=()), x11, heals=True)


NEW_LIST = "Write milk and eggs in a new document and save it as {path}"


def new_document(x11: Any, tmp_path: Path, doc: Path, apps: Any) -> Path:
    """A run on the session desktop that types into a new mousepad document and saves it
    through the Save As dialog (the file name typed, then Enter pressed): its folder."""
    apps(["mousepad"], window="Untitled")
    x11.activate("Untitled")
    actions = [
        'agent.type(text="milk and eggs")',
        'agent.hotkey(["ctrl", "s"])',
        f"agent.type(text={str(doc)!r}, enter=True)",
        "agent.done()",
    ]
    return record(x11, tmp_path, NEW_LIST.format(path=doc), actions)


def test_a_recorded_run_replays_on_a_fresh_desktop_with_no_model_call(
    apps: Any, x11: Any, tmp_path: Path
) -> None:
    from agent_s.desktop.virtual import VirtualDesktop

    doc = tmp_path / "list.txt"
    folder = new_document(x11, tmp_path, doc, apps)
    doc.unlink(missing_ok=True)
    script = script_of(folder)
    assert [s.window for s in script.steps][2] == "Mousepad: Save As", script
    with VirtualDesktop(1280, 800, home="temp") as fresh:  # nothing of this session's
        fresh.launch(["mousepad"])
        env = {**_CLEAN, **fresh.env, "HOME": str(fresh.home)}
        args = [AGENT_S, "replay", str(folder), "--safety", "auto"]
        args += ["--record", str(tmp_path / "fresh"), "--json"]
        done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        data = json.loads(done.stdout)
        assert data["status"] == "replayed", data
        assert (data["recorded"], data["replayed"]) == (4, 5)  # Enter after typing: a step
        assert data["result"]["model_calls"] == 0  # and no model is configured to call
        assert poll(lambda: doc.is_file() and doc.read_text().startswith("milk and eggs"))
    # the file name typed, then (once the dialog's field showed it) Enter, as its own step
    steps = load_trajectory(data["result"]["trajectory_dir"]).steps
    assert [s.action_text for s in steps[2:4]] == [
        f"agent.type(text={str(doc)!r})",
        "agent.hotkey(keys=('enter',))",
    ]
