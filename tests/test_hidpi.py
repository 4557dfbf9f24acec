"""Scale factors do not move clicks: a GTK application drawing at GDK_SCALE=2 (whose AT-SPI
extents come in unscaled, half-size units on X11), or with its text scaled as Xft.dpi=192 does
(GDK_DPI_SCALE=2: bigger widgets, extents in screen pixels), is clicked by name through the
accessibility grounder, and the real effect is checked: the calculator computes 7 * 6."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from agent_s import Agent, AgentConfig, GroundingConfig, ModelConfig, RunStatus, load_trajectory
from agent_s.desktop.base import WindowInfo
from agent_s.desktop.ops import Point
from agent_s.grounding import AccessibilityTree, Box
from agent_s.grounding.accessibility import Element, toolkit_scales
from agent_s.testing.scripted_replies import reply
from agent_s.testing.scripted_server import ScriptedModelServer

KEY = "sk-hidpi-SECRET-0123456789"


def frame(name: str, box: Box, pid: int = 7) -> Element:
    return Element(name, "frame", "", box, pid, "calc", name)


def test_the_scale_is_told_by_geometry_not_by_a_title_alone() -> None:
    window = WindowInfo(1, "Calculator - 7", "calc", 7, 309, 64, 662, 686)
    # the frame's name is an older title: its application's one window, and the scaled frame
    # starts just up and left of the window's client area (the decorations)
    assert toolkit_scales([frame("Calculator", Box(154, 22, 332, 356))], [window]) == {7: 2}
    # a half-size frame inside a window of scale 1 (a panel, a popup) is no scale
    popup = frame("Popup", Box(400, 250, 331, 343))
    assert toolkit_scales([popup], [window]) == {}
    # two windows: only a frame named as one of them is compared
    second = WindowInfo(2, "Preferences", "calc", 7, 0, 0, 300, 300)
    assert toolkit_scales([frame("Calculator", Box(154, 22, 332, 356))], [window, second]) == {}
    assert toolkit_scales([frame("Calculator - 7", Box(154, 22, 332, 356))], [window, second]) == {
        7: 2
    }


@pytest.fixture(scope="module")
def _accessibility_bus(desktop: Any) -> None:
    """Bind AT-SPI in this process before ``apps`` notes the running processes."""
    AccessibilityTree().applications()


def act(code: str) -> str:
    return f"Next step.\n```python\n{code}\n```"


def _wait(predicate: Any, timeout: float = 5.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.1)


@pytest.mark.usefixtures("_accessibility_bus")
@pytest.mark.parametrize(
    ("env", "scale"),
    [({"GDK_SCALE": "2"}, 2), ({"GDK_DPI_SCALE": "2"}, None)],
    ids=["gdk-scale-2", "text-scale-2"],
)
def test_a_scaled_gtk_calculator_is_clicked_by_name(
    apps: Any,
    x11: Any,
    tmp_path: Path,
    env: dict[str, str],
    scale: int | None,
) -> None:
    launched = apps(
        ["galculator"], window="galculator", env={**env, "XDG_CONFIG_HOME": str(tmp_path)}
    )
    window = launched.window
    x11.activate(window.title)
    x11.move(Point(1275, 795))  # no tooltip
    x11.clipboard_set("")
    # the scale is told from the window's extents against its X geometry
    elements = AccessibilityTree().elements()
    found = toolkit_scales(elements, x11.windows())
    assert found.get(window.pid) == scale, (found, window)

    script = [
        reply(act('agent.click("the AC button")')),
        reply(act('agent.click("the 7 button")')),
        reply(act('agent.click("the * button")')),
        reply(act('agent.click("the 6 button")')),
        reply(act('agent.click("the = button")')),
        reply(act('agent.hotkey(["ctrl", "c"])')),
        reply(act('agent.done(answer="42")')),
    ]
    with ScriptedModelServer(script) as server:
        model = ModelConfig("openai-compatible", "scripted-model", server.openai_base_url, KEY)
        config = AgentConfig(record_dir=tmp_path / "runs", settle_seconds=0.4)
        agent = Agent(model, settings=config, grounding=GroundingConfig("a11y"), backend=x11)
        result = agent.run("What is 7 times 6?")
    assert result.status is RunStatus.SUCCEEDED, result
    assert _wait(lambda: x11.clipboard_get().strip() == "42"), x11.clipboard_get()
    steps = load_trajectory(result.trajectory_dir).steps
    # unscaled extents would put most clicks up and left of the window (at half the position)
    for step in steps[:5]:
        assert step.grounding[0].grounder == "a11y"
        (click,) = [e for e in step.executed if e["op"] == "Click"]
        x, y = click["at"]["x"], click["at"]["y"]
        assert window.x <= x < window.x + window.width, (click, window)
        assert window.y <= y < window.y + window.height, (click, window)
