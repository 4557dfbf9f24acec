"""The accessibility snapshot in worker requests: the active window's named elements, bounded,
off by default; listed from a real application's AT-SPI tree on the virtual desktop."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from agent_s import Agent, AgentConfig, GroundingConfig, ModelConfig, RunStatus, load_trajectory
from agent_s.desktop import RecordingBackend
from agent_s.desktop.base import Screenshot, WindowInfo
from agent_s.grounding import AccessibilityTree, Box, Observation
from agent_s.grounding.accessibility import Element, window_outline
from agent_s.prompting import accessibility_snapshot
from agent_s.testing.scripted_replies import reply
from agent_s.testing.scripted_server import ScriptedModelServer

KEY = "sk-a11y-SECRET-0123456789"
EDITOR = WindowInfo(1, "notes.txt - Editor", "Editor", 100, 0, 0, 800, 600, active=True)
OTHER = WindowInfo(2, "Terminal", "Terminal", 200, 820, 0, 400, 600)


def element(
    name: str,
    role: str = "push button",
    x: int = 10,
    y: int = 10,
    *,
    pid: int = 100,
    description: str = "",
) -> Element:
    return Element(name, role, description, Box(x, y, 40, 20), pid, "editor", "notes.txt")


def observation(windows: tuple[WindowInfo, ...] = (EDITOR, OTHER)) -> Observation:
    return Observation(Screenshot(Image.new("RGB", (1280, 800))), windows, None)


def test_the_outline_lists_only_the_active_windows_named_elements_once() -> None:
    elements = [
        element("notes.txt", "frame"),  # a container: left out
        element("Save", description="Save the document"),
        element("Save"),  # the same role and name again: listed once
        element("File", "menu"),
        element("Save", "menu item"),  # another role: listed
        element("Run", pid=200, x=900),  # the terminal's: another application
        element("Hidden", x=850, y=10),  # this pid, but outside the active window
        element("Line 1   of\nthe text " * 20, "paragraph", y=100),
    ]
    lines, total = window_outline(elements, observation())
    assert total == 4
    assert lines[:3] == [
        '- push button "Save" (Save the document)',
        '- menu "File"',
        '- menu item "Save"',
    ]
    assert lines[3].startswith('- paragraph "Line 1 of the text Line 1')
    assert lines[3].endswith('…"')
    assert len(lines[3]) == len('- paragraph ""') + 80


def test_the_outline_is_bounded_and_empty_without_an_active_window() -> None:
    many = [element(f"Button {i}", x=10 + i, y=10 + i) for i in range(200)]
    lines, total = window_outline(many, observation(), max_elements=25)
    assert (len(lines), total) == (25, 200)
    assert lines[-1] == '- push button "Button 24"'
    inactive = (WindowInfo(1, "notes.txt", "Editor", 100, 0, 0, 800, 600), OTHER)
    assert window_outline(many, observation(inactive)) == ([], 0)
    text = accessibility_snapshot("Editor: notes.txt", lines, total)
    assert "\nwindow: Editor: notes.txt\n" in text  # inside the frame: a title is screen content
    assert "25 of 200 listed" in text
    with pytest.raises(ValueError, match="at least one element"):
        accessibility_snapshot("Editor: notes.txt", [], 0)


def _run(tmp_path: Path, backend: Any, **settings: Any) -> tuple[Any, ScriptedModelServer]:
    with ScriptedModelServer([reply("Finished.\n```python\nagent.done()\n```")]) as server:
        model = ModelConfig("openai-compatible", "scripted-model", server.openai_base_url, KEY)
        config = AgentConfig(settle_seconds=0, record_dir=tmp_path, **settings)
        agent = Agent(model, settings=config, grounding=GroundingConfig("ocr"), backend=backend)
        result = agent.run("Look at the editor")
    assert result.status is RunStatus.SUCCEEDED, result
    return result, server


def test_off_by_default_and_quiet_when_the_tree_is_unavailable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result, server = _run(tmp_path / "off", RecordingBackend([Image.new("RGB", (1280, 800))]))
    assert "accessibility tree of the active window" not in json.dumps(server.requests[0].body)
    assert load_trajectory(result.trajectory_dir).steps[0].request["a11y"] is None

    monkeypatch.delenv("DBUS_SESSION_BUS_ADDRESS", raising=False)
    backend = RecordingBackend([Image.new("RGB", (1280, 800))], windows=[EDITOR])
    result, server = _run(tmp_path / "on", backend, a11y_snapshot=True)
    assert "accessibility tree of the active window" not in json.dumps(server.requests[0].body)
    note = load_trajectory(result.trajectory_dir).steps[0].request["a11y"]
    assert note.startswith("unavailable: accessibility needs a D-Bus session bus")


@pytest.mark.desktop
def test_a_real_windows_elements_reach_the_request(apps: Any, x11: Any, tmp_path: Path) -> None:
    AccessibilityTree().applications()  # bind AT-SPI before apps notes the running processes
    doc = tmp_path / "note.txt"
    doc.write_text("Shopping list\n")
    apps(["mousepad", str(doc)], window="note.txt")
    x11.activate("note.txt")
    result, server = _run(tmp_path / "runs", x11, a11y_snapshot=True)
    request = server.requests[0].body["messages"][-1]["content"]
    texts = [part["text"] for part in request if part["type"] == "text"]
    snapshot = next(t for t in texts if "accessibility tree of the active window" in t)
    joined = "\n".join(texts)  # the snapshot comes before the closing instruction
    assert joined.index("accessibility tree of the active window") < joined.index("This is step 1")
    assert "This is step 1" in texts[-1]
    assert 'menu "File"' in snapshot
    assert len(snapshot) < 8000
    note = load_trajectory(result.trajectory_dir).steps[0].request["a11y"]
    assert note.endswith("elements")
