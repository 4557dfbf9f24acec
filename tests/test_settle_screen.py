"""After an action the loop waits until the application reacted and its part of the screen is
still, never for the rest of the screen (``agent_s.desktop.settle.until_still``).

On the session desktop an xterm in a corner shows a new number every 20 ms, all the time (an
animation in another window, like a blinking cursor or a clock): the wait after a click on
galculator, or after a key that opens mousepad's Open dialog, ends long before its limit, and
the screenshot the model gets next shows what the action did (galculator's display as it
stays; the dialog, drawn); on sway too (test_wayland.py, a key pressed on galculator). The
limit is set high so that a wait held up by the counter shows plainly."""

from __future__ import annotations

import io
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from PIL import Image, ImageChops, ImageStat

from agent_s import Agent, AgentConfig, GroundingConfig, ModelConfig, RunStatus
from agent_s.desktop.base import WindowInfo
from agent_s.record.trajectory import load_trajectory
from agent_s.testing.scripted_replies import Step, reply
from agent_s.testing.scripted_server import RecordedRequest, ScriptedModelServer

LIMIT = 6.0  # the settle limit of these runs: a wait held to it is plain to see
# a number that never repeats, every 20 ms: an animation (a clock, a progress bar, a cursor)
COUNT = "i=1; while :; do i=$((i * 7919 % 999983)); printf '\\r%06d' $i; sleep 0.02; done"

pytestmark = pytest.mark.desktop


def answer(code: str) -> str:
    return f"Working.\n```python\n{code}\n```"


@pytest.fixture
def counter(apps: Any) -> WindowInfo:
    """An xterm in the bottom right corner, its number changing every 20 ms."""
    launched = apps(
        [
            *("xterm", "-fa", "DejaVu Sans Mono", "-fs", "40", "-geometry", "8x2-0-0"),
            *("-title", "counter", "-e", "sh", "-c", COUNT),
        ],
        window="counter",
    )
    assert launched.window is not None
    return launched.window


def _observation(request: RecordedRequest) -> Image.Image:
    """The newest screenshot in a request to the model."""
    _, data = request.images()[-1]
    return Image.open(io.BytesIO(data)).convert("RGB")


def _region(image: Image.Image, window: WindowInfo) -> Image.Image:
    box = (window.x, window.y, window.x + window.width, window.y + window.height)
    return image.crop(box).convert("L")


def _distance(a: Image.Image, b: Image.Image) -> float:
    return float(ImageStat.Stat(ImageChops.difference(a, b)).mean[0])


def assert_shows(
    window: WindowInfo, seen: Image.Image, settled: Image.Image, old: Image.Image
) -> None:
    """``window``'s part of the screen changed from ``old`` to ``settled`` (where it stays),
    and the look ``seen`` shows it changed: it is far closer to ``settled`` than to ``old``."""
    seen, after, before = (_region(i, window) for i in (seen, settled, old))
    assert _distance(after, before) > 0.05, "the action changed nothing in the window"
    assert _distance(seen, after) < _distance(seen, before) / 4, "the look misses the change"


def _run(
    x11: Any, tmp_path: Path, grounding: str, script: Callable[[RecordedRequest], Step], task: str
) -> Any:
    with ScriptedModelServer(script) as server:
        model = ModelConfig("openai-compatible", "scripted-model", server.openai_base_url, "k")
        config = AgentConfig(record_dir=tmp_path / "runs", settle_seconds=LIMIT, retry_attempts=1)
        agent = Agent(model, settings=config, grounding=GroundingConfig(grounding), backend=x11)  # type: ignore[arg-type]
        result = agent.run(task)
    assert result.status is RunStatus.SUCCEEDED, result
    return load_trajectory(result.trajectory_dir).steps


def test_a_click_is_waited_for_until_its_window_is_still_not_for_another_window(
    apps: Any, x11: Any, tmp_path: Path, counter: WindowInfo
) -> None:
    calc = apps(["galculator"], window="galculator").window
    x11.activate("galculator")
    before = x11.capture().image
    shown: list[Image.Image] = []

    def script(request: RecordedRequest) -> Step:
        if request.index == 1:
            return reply(answer('agent.click("the 7 button")'))
        shown.append(_observation(request))
        return reply(answer("agent.done()"))

    steps = _run(x11, tmp_path, "a11y", script, "Press 7")
    settled = x11.capture().image  # long after: galculator shows what it will show
    assert steps[0].timings["settle"] < LIMIT / 2, steps[0].timings  # not held by the counter
    window = next(w for w in x11.windows() if w.id == calc.id)
    assert_shows(window, shown[0], settled, before)  # 0 became 7, and the model sees the 7


def test_a_key_that_opens_a_window_is_waited_for_until_it_is_shown(
    apps: Any, x11: Any, tmp_path: Path, counter: WindowInfo
) -> None:
    editor = apps(["mousepad"], window="mousepad").window
    assert editor is not None
    x11.activate("mousepad")
    before = x11.capture().image
    shown: list[tuple[Image.Image, list[WindowInfo], Image.Image]] = []

    def script(request: RecordedRequest) -> Step:
        if request.index == 1:
            return reply(answer('agent.hotkey(["ctrl", "o"])'))
        seen, windows = _observation(request), x11.windows()
        time.sleep(1.0)  # the dialog as it stays
        shown.append((seen, windows, x11.capture().image))
        return reply(answer("agent.done()"))

    steps = _run(x11, tmp_path, "native", script, "Open a file")
    image, windows, settled = shown[0]
    dialog = next((w for w in windows if w.id != editor.id and w.app == editor.app), None)
    assert dialog is not None, f"no dialog by the next look: {windows}"
    assert dialog.active, windows
    assert steps[0].timings["settle"] < LIMIT / 2, steps[0].timings  # not held by the counter
    assert_shows(dialog, image, settled, before)  # the model sees the dialog, drawn
