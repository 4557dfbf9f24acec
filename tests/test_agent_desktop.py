"""Whole runs on the session's virtual desktop: real apps, real grounders (accessibility, OCR),
real input; the model is scripted and reached through the OpenAI SDK."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from agent_s import Agent, AgentConfig, GroundingConfig, ModelConfig, RunStatus, load_trajectory
from agent_s.desktop.ops import Point
from agent_s.grounding import AccessibilityTree
from agent_s.record.trajectory import find_secrets
from agent_s.testing.scripted_replies import reply
from agent_s.testing.scripted_server import ScriptedModelServer

pytestmark = pytest.mark.desktop
KEY = "sk-desktop-SECRET-9876543210"


@pytest.fixture(scope="module", autouse=True)
def _accessibility_bus(desktop: Any) -> None:
    """Bind AT-SPI in this process before ``apps`` notes the running processes (see
    test_grounding_desktop.py: the bus launcher must not be ended with a test's programs)."""
    AccessibilityTree().applications()


def act(code: str) -> str:
    return f"Next step.\n```python\n{code}\n```"


def agent_for(server: ScriptedModelServer, x11: Any, tmp_path: Path, **settings: Any) -> Agent:
    model = ModelConfig("openai-compatible", "scripted-model", server.openai_base_url, KEY)
    config = AgentConfig(record_dir=tmp_path / "runs", settle_seconds=0.5, **settings)
    return Agent(model, settings=config, grounding=GroundingConfig("auto"), backend=x11)


def _wait_for(predicate: Any, timeout: float = 5.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.1)


def test_mousepad_type_and_save(apps: Any, x11: Any, tmp_path: Path) -> None:
    doc = tmp_path / "note.txt"
    doc.write_text("Shopping list\n")
    apps(["mousepad", str(doc)], window="note.txt")
    x11.activate("note.txt")
    x11.move(Point(1270, 790))
    script = [
        reply(act('agent.click("Shopping list")')),  # document text: accessibility -> OCR
        reply(act('agent.hotkey(["ctrl", "end"])')),
        reply(act('agent.type(text="milk and eggs")')),
        reply(act('agent.hotkey(["ctrl", "s"])')),
        reply(act("agent.done()")),
    ]
    with ScriptedModelServer(script) as server:
        result = agent_for(server, x11, tmp_path).run("Add milk and eggs to the list and save")
    assert result.status is RunStatus.SUCCEEDED, result
    saved = _wait_for(lambda: "milk and eggs" in doc.read_text() and doc.read_text())
    assert saved.startswith("Shopping list\nmilk and eggs"), saved
    steps = load_trajectory(result.trajectory_dir).steps
    assert steps[0].grounding[0].grounder == "ocr"
    assert [a.outcome for a in steps[0].grounding[0].attempts] == ["not_found", "answered"]
    assert find_secrets(result.trajectory_dir, [KEY]) == []


def test_galculator_computes_and_the_display_is_copied(apps: Any, x11: Any, tmp_path: Path) -> None:
    apps(["galculator"], window="galculator")
    x11.activate("galculator")
    x11.clipboard_set("")
    script = [
        reply(act('agent.click("the AC button")')),
        reply(act('agent.click("the 7 button")')),
        reply(act('agent.type(text="*6", enter=True)')),
        reply(act('agent.hotkey(["ctrl", "c"])')),
        reply(act('agent.done(answer="42")')),
    ]
    with ScriptedModelServer(script) as server:
        result = agent_for(server, x11, tmp_path).run("What is 7 times 6?")
    assert result.succeeded
    assert result.answer == "42"
    assert _wait_for(lambda: x11.clipboard_get().strip() == "42"), x11.clipboard_get()
    first = load_trajectory(result.trajectory_dir).steps[1]
    assert first.grounding[0].grounder == "a11y"
    assert first.executed[0]["op"] == "Click"


def test_xterm_command_with_a_verifying_check(apps: Any, x11: Any, tmp_path: Path) -> None:
    out = tmp_path / "listing.txt"
    apps(
        [
            "xterm",
            "-fa",
            "DejaVu Sans Mono",
            "-fs",
            "12",
            "-geometry",
            "80x12+100+100",
            "-title",
            "agent-xterm",
            "-e",
            "sh",
            "-c",
            "echo READY TO WORK; exec sh",
        ],
        window="agent-xterm",
    )
    x11.activate("agent-xterm")
    script = [
        reply(act('agent.click("READY TO WORK")')),  # no accessibility tree: OCR answers
        reply(act(f'agent.type(text="echo computed-$((6*7)) > {out}", enter=True)')),
        reply(act("agent.done()")),
    ]
    with ScriptedModelServer(script) as server:
        agent = agent_for(server, x11, tmp_path)
        result = agent.run(
            "Write 6*7 to a file", postcondition=["grep", "-q", "computed-42", str(out)]
        )
    assert result.status is RunStatus.SUCCEEDED, result
    assert result.verified
    assert out.read_text().strip() == "computed-42"
    step = load_trajectory(result.trajectory_dir).steps[0]
    assert step.grounding[0].grounder == "ocr"
    data = json.loads((result.trajectory_dir / "result.json").read_text())
    assert data["postcondition"]["passed"] is True
