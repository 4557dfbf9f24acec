"""After a click the pointer rests where it covers no control, so no tooltip or hover state
hides what the next screenshot must show (``agent_s.desktop.park``): on galculator, whose "Save
to memory" tooltip over MS covers the 8 and 9 when the pointer stays there."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import Xlib.display
import Xlib.X

from agent_s import Agent, AgentConfig, GroundingConfig, ModelConfig, RunStatus
from agent_s.desktop.base import Monitor, ScreenGeometry, WindowInfo
from agent_s.desktop.common import temporary_environ
from agent_s.desktop.ops import Click, Drag, Point, TypeText
from agent_s.desktop.park import MARGIN, moves_pointer, park_point
from agent_s.grounding import AccessibilityTree
from agent_s.testing.scripted_replies import Step, reply
from agent_s.testing.scripted_server import RecordedRequest, ScriptedModelServer

SCREEN = ScreenGeometry((Monitor(0, 0, 1280, 800, primary=True),))


def act(code: str) -> str:
    return f"Working.\n```python\n{code}\n```"


def _window(x: int, y: int, w: int, h: int, active: bool = False) -> WindowInfo:
    return WindowInfo(1, "t", "App", None, x, y, w, h, active=active)


def test_the_spot_is_on_no_window_away_from_the_edges_and_the_click() -> None:
    window = _window(400, 200, 400, 300, active=True)
    spot = park_point(SCREEN, [window], Point(600, 350))
    assert spot is not None
    assert not (370 <= spot.y < 504 and 396 <= spot.x < 804)  # not on the window or its frame
    assert MARGIN <= spot.x <= 1280 - MARGIN
    assert MARGIN <= spot.y <= 800 - MARGIN
    whole = _window(0, 0, 1280, 800, active=True)  # nothing free, no title bar on the screen
    assert park_point(SCREEN, [whole], Point(600, 350)) is None
    under_panel = _window(0, 60, 1280, 740, active=True)  # free nowhere: its title bar
    assert park_point(SCREEN, [under_panel], Point(600, 350)) == Point(640, 45)
    unknown = _window(0, 0, 0, 0, active=True)  # positions unknown (Wayland): stay
    assert park_point(SCREEN, [unknown], Point(600, 350)) is None


def test_only_actions_that_move_the_pointer_are_followed_by_a_rest() -> None:
    assert moves_pointer([TypeText("x")]) is None
    assert moves_pointer([Click(Point(5, 6))]) == Point(5, 6)
    assert moves_pointer([Drag(Point(1, 1), Point(9, 9))]) == Point(9, 9)


def _tooltips(desktop: Any) -> list[tuple[int, int, int, int]]:
    """The mapped tooltip windows of the desktop (override-redirect, type TOOLTIP)."""
    with temporary_environ(XAUTHORITY=desktop.env.get("XAUTHORITY")):
        x = Xlib.display.Display(desktop.display)
    try:
        kind, tooltip = (
            x.intern_atom("_NET_WM_WINDOW_TYPE"),
            x.intern_atom("_NET_WM_WINDOW_TYPE_TOOLTIP"),
        )
        found = []
        for child in x.screen().root.query_tree().children:
            attributes = child.get_attributes()
            if attributes.map_state != Xlib.X.IsViewable or not attributes.override_redirect:
                continue
            value = child.get_full_property(kind, Xlib.X.AnyPropertyType)
            if value is not None and tooltip in list(value.value):
                g = child.get_geometry()
                found.append((g.x, g.y, g.width, g.height))
        return found
    finally:
        x.close()


@pytest.mark.desktop
def test_after_a_click_on_galculator_no_tooltip_covers_the_next_screenshot(
    desktop: Any, x11: Any, apps: Any, tmp_path: Path
) -> None:
    apps(["galculator"], window="galculator")
    x11.activate("galculator")
    seen: list[Any] = []

    def script(request: RecordedRequest) -> Step:
        if request.index == 1:
            return reply(act('agent.click("the MS button")'))
        time.sleep(1.5)  # galculator shows a tooltip after the pointer rests ~0.5 s on a button
        seen.append((_tooltips(desktop), x11.pointer()))
        return reply(act("agent.done()"))

    with ScriptedModelServer(script) as server:
        url = server.openai_base_url
        model = ModelConfig("openai-compatible", "scripted-model", url, "sk-park-SECRET-123456")
        config = AgentConfig(record_dir=tmp_path / "runs", settle_seconds=0.3)
        agent = Agent(model, settings=config, grounding=GroundingConfig("a11y"), backend=x11)
        result = agent.run("Save the display to memory")
    assert result.status is RunStatus.SUCCEEDED, result
    ((tips, pointer),) = seen
    assert tips == [], f"a tooltip is on the screen at {tips}; the pointer rests at {pointer}"
    (window,) = [w for w in x11.windows() if w.app.lower() == "galculator"]
    inside = window.x <= pointer.x < window.x + window.width and (
        window.y <= pointer.y < window.y + window.height
    )
    assert not inside, f"the pointer rests on galculator at {pointer}"


@pytest.mark.desktop
def test_the_tooltip_check_sees_a_tooltip(desktop: Any, x11: Any, apps: Any) -> None:
    """The check above can fail: with the pointer left on MS, galculator's tooltip shows."""
    apps(["galculator"], window="galculator")
    (ms,) = [e for e in AccessibilityTree().elements() if e.app == "galculator" and e.name == "MS"]
    x11.move(Point(ms.box.x + ms.box.width // 2, ms.box.y + ms.box.height // 2))
    time.sleep(1.5)
    assert _tooltips(desktop), "no tooltip showed with the pointer resting on MS"
