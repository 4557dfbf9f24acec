"""``--ground native``: the model writes a pixel of the screenshot it was sent after each element
description, and the loop maps it to the screen through the one transform chain.

The screen here is HiDPI (a 2560x1600 screenshot of a 1280x800 screen, scale 2) and the model's
profile downscales screenshots to 1024x640, so every link of the chain changes the numbers: a
point only lands right if the prompt, the image sent and the mapping agree.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from agent_s import Agent, AgentConfig, GroundingConfig, ModelConfig, RunStatus, load_trajectory
from agent_s.desktop import RecordingBackend
from agent_s.desktop.base import Monitor, ScreenGeometry, Screenshot
from agent_s.desktop.ops import Click, Drag, MoveTo, Point
from agent_s.models.profiles import ProfileRegistry
from agent_s.testing.scripted_replies import reply
from agent_s.testing.scripted_server import ScriptedModelServer

KEY = "sk-native-SECRET-0123456789"


def act(code: str) -> str:
    return f"The dialog is open.\n```python\n{code}\n```"


def hidpi_screens(n: int) -> list[Screenshot]:
    return [
        Screenshot(Image.new("RGB", (2560, 1600), (40, 50, 60 + i)), scale=2.0) for i in range(n)
    ]


def native_agent(server: ScriptedModelServer, backend: RecordingBackend, tmp_path: Path) -> Agent:
    model = ModelConfig("openai-compatible", "scripted-model", server.openai_base_url, KEY)
    profiles = ProfileRegistry([("scripted-model", {"max_image_long_side": 1024})])
    config = AgentConfig(settle_seconds=0, record_dir=tmp_path, retry_attempts=1)
    return Agent(
        model,
        settings=config,
        grounding=GroundingConfig("native"),
        backend=backend,
        profiles=profiles,
    )


def system_text(request: Any) -> str:
    messages = request.body["messages"]
    assert messages[0]["role"] == "system"
    content = messages[0]["content"]
    return content if isinstance(content, str) else json.dumps(content)


def test_native_points_land_on_the_screen_through_downscale_and_hidpi(tmp_path: Path) -> None:
    script = [
        # 512.5 * 2.5 = 1281.25 -> screenshot pixel 1281 -> screen 640 (scale 2); y: 801 -> 400
        reply(act('agent.click(element_description="the OK button of the dialog (512, 320)")')),
        # (100, 50) -> (251, 126) -> (125, 63); (900, 600) -> (2251, 1501) -> (1125, 750)
        reply(act('agent.drag_and_drop("the file icon (100, 50)", "the bin (900, 600)")')),
        # x = 1100 is outside the 1024-pixel-wide image: an observation, nothing executed
        reply(act('agent.click("the Close button (1100, 100)")')),
        reply(act("agent.done()")),
    ]
    geometry = ScreenGeometry((Monitor(0, 0, 1280, 800, scale=2.0, primary=True),))
    backend = RecordingBackend(hidpi_screens(4), geometry=geometry)
    with ScriptedModelServer(script) as server:
        result = native_agent(server, backend, tmp_path).run("Move the file to the bin")

    assert result.status is RunStatus.SUCCEEDED, result
    parked = MoveTo(Point(64, 64))  # where no control is (agent_s.desktop.park)
    assert backend.ops == [
        Click(Point(640, 400)),
        parked,
        Drag(Point(125, 63), Point(1125, 750)),
        parked,
    ]
    backend.assert_all_screenshots_used()

    first = server.requests[0]
    ((media, data),) = first.images()
    assert media == "image/png"
    assert Image.open(io.BytesIO(data)).size == (1024, 640)  # the image the model pointed in
    system = system_text(first)
    assert "Every screenshot you are sent is 1024x640 pixels" in system
    assert "Never write coordinates" not in system
    # What the model reads of its clicks is in the image it saw, never in screen pixels.
    second = json.dumps(server.requests[1].body)
    assert "at (512, 320) via native" in second
    assert "(640, 400)" not in second
    third = json.dumps(server.requests[2].body)
    assert "at (100, 50) via native; at (900, 600) via native" in third
    assert "(125, 63)" not in third
    assert "(1125, 750)" not in third
    # The out-of-bounds point went back to the model as the result of that step.
    fourth = json.dumps(server.requests[3].body)
    assert "Result of step 3" in fourth
    assert "(1100, 100) is outside the model's pixels frame (1024x640)" in fourth

    steps = load_trajectory(result.trajectory_dir).steps
    assert [g.point for g in steps[0].grounding] == [(640, 400)]
    assert [g.grounder for g in steps[1].grounding] == ["native", "native"]
    assert steps[2].outcome == "error"
    assert steps[2].grounding[0].point is None


def test_described_grounding_keeps_the_no_coordinates_prompt(tmp_path: Path) -> None:
    model_script = [reply(act("agent.done()"))]
    backend = RecordingBackend([Image.new("RGB", (1280, 800))])
    with ScriptedModelServer(model_script) as server:
        model = ModelConfig("openai-compatible", "scripted-model", server.openai_base_url, KEY)
        agent = Agent(
            model,
            settings=AgentConfig(settle_seconds=0),
            backend=backend,
            grounding=GroundingConfig("ocr"),
        )
        assert agent.run("Nothing to do").status is RunStatus.SUCCEEDED
    system = system_text(server.requests[0])
    assert "Never write coordinates yourself" in system
    assert "Every screenshot you are sent" not in system


def test_the_prompt_follows_the_image_size_when_the_screen_changes(tmp_path: Path) -> None:
    # The screen switches to HiDPI mid-task: the default profile then sends 1920x1200, not
    # 1280x800, and the system prompt must say so, or the model's pixels would land off.
    shots = [
        Screenshot(Image.new("RGB", (1280, 800))),
        Screenshot(Image.new("RGB", (2560, 1600)), scale=2.0),
        Screenshot(Image.new("RGB", (2560, 1600), "white"), scale=2.0),
    ]
    script = [
        reply(act('agent.click("the OK button (640, 400)")')),
        # 960.5 * 4/3 = 1280.7 -> pixel 1280 -> screen 640; 600.5 * 4/3 = 800.7 -> 800 -> 400
        reply(act('agent.click("the OK button (960, 600)")')),
        reply(act("agent.done()")),
    ]
    backend = RecordingBackend(shots)
    with ScriptedModelServer(script) as server:
        model = ModelConfig("openai-compatible", "scripted-model", server.openai_base_url, KEY)
        config = AgentConfig(settle_seconds=0, retry_attempts=1)
        agent = Agent(model, settings=config, grounding=GroundingConfig("native"), backend=backend)
        assert agent.run("Press OK twice").status is RunStatus.SUCCEEDED
    assert backend.ops == [Click(Point(640, 400)), MoveTo(Point(64, 64))] * 2
    sizes = [
        system_text(r).split("Every screenshot you are sent is ")[1][:9] for r in server.requests
    ]
    assert sizes == ["1280x800 ", "1920x1200", "1920x1200"]


@pytest.mark.desktop
def test_a_native_click_lands_on_the_real_desktop(probe: Any, x11: Any, tmp_path: Path) -> None:
    """The virtual desktop's 1280x800 screen is sent at 640x400; the scripted model answers with
    the pixel of that image over the probe's canvas, and the probe logs where the press landed."""
    x, y, w, h = probe.boxes["canvas"]
    sent = ((x + w // 3) // 2, (y + h // 2) // 2)  # a pixel of the 640x400 image, on the canvas
    expected = (2 * sent[0] + 1, 2 * sent[1] + 1)  # the centre of the 2x2 block it stands for
    script = [
        reply(act(f'agent.click("the white probe area ({sent[0]}, {sent[1]})")')),
        reply(act("agent.done()")),
    ]
    with ScriptedModelServer(script) as server:
        model = ModelConfig("openai-compatible", "scripted-model", server.openai_base_url, KEY)
        profiles = ProfileRegistry([("scripted-model", {"max_image_long_side": 640})])
        config = AgentConfig(settle_seconds=0.2, record_dir=tmp_path, retry_attempts=1)
        agent = Agent(
            model,
            settings=config,
            grounding=GroundingConfig("native"),
            backend=x11,
            profiles=profiles,
        )
        result = agent.run("Click the probe area")
    assert result.status is RunStatus.SUCCEEDED, result
    assert "Every screenshot you are sent is 640x400 pixels" in system_text(server.requests[0])
    events = probe.wait_for(lambda ev: any(e["type"] == "release" for e in ev))
    presses = [(e["button"], e["x"], e["y"]) for e in events if e["type"] == "press"]
    assert presses == [(1, *expected)]
    step = load_trajectory(result.trajectory_dir).steps[0]
    assert step.grounding[0].point == expected
