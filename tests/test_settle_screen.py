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
import sys
import time
from dataclasses import dataclass
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
# A window whose Start button starts another program, which shows its own window a second later.
LATE = """\
import time
time.sleep(1.0)
import gi
gi.require_version("Gtk", "3.0")
from gi.repository import Gtk
window = Gtk.Window(title="late-window")
window.add(Gtk.Label(label="shown late"))
window.set_default_size(400, 300)
window.connect("destroy", Gtk.main_quit)
window.show_all()
Gtk.main()
"""
STARTER = """\
import subprocess, sys
import gi
gi.require_version("Gtk", "3.0")
from gi.repository import Gtk
window = Gtk.Window(title=sys.argv[1])
button = Gtk.Button(label="Start")
button.connect("clicked", lambda _: subprocess.Popen([sys.executable, "-c", sys.argv[2]]))
window.add(button)
window.set_default_size(300, 200)
window.connect("destroy", Gtk.main_quit)
window.show_all()
Gtk.main()
"""


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


@dataclass(frozen=True)
class NextLook:
    """One action by the agent, then what its next request to the model held."""

    settle: float  # the step's settle wait, as recorded
    seen: Image.Image  # the screenshot the model got next
    windows: list[WindowInfo]  # the windows then
    settled: Image.Image  # the screen a second later, as it stays
    before: Image.Image  # the screen before the action


def _act(x11: Any, tmp_path: Path, grounding: str, code: str) -> NextLook:
    """The agent carries out ``code`` (its settle limit ``LIMIT``), then is done."""
    before = x11.capture().image
    shown: list[tuple[Image.Image, list[WindowInfo], Image.Image]] = []

    def script(request: RecordedRequest) -> Step:
        if request.index == 1:
            return reply(answer(code))
        seen, windows = _observation(request), x11.windows()
        time.sleep(1.0)
        shown.append((seen, windows, x11.capture().image))
        return reply(answer("agent.done()"))

    with ScriptedModelServer(script) as server:
        model = ModelConfig("openai-compatible", "scripted-model", server.openai_base_url, "k")
        config = AgentConfig(record_dir=tmp_path / "runs", settle_seconds=LIMIT, retry_attempts=1)
        agent = Agent(model, settings=config, grounding=GroundingConfig(grounding), backend=x11)  # type: ignore[arg-type]
        result = agent.run("Act once")
    assert result.status is RunStatus.SUCCEEDED, result
    step = load_trajectory(result.trajectory_dir).steps[0]
    ((seen, windows, settled),) = shown
    return NextLook(step.timings["settle"], seen, windows, settled, before)


def test_a_click_is_waited_for_until_its_window_is_still_not_for_another_window(
    apps: Any, x11: Any, tmp_path: Path, counter: WindowInfo
) -> None:
    calc = apps(["galculator"], window="galculator").window
    x11.activate("galculator")
    look = _act(x11, tmp_path, "a11y", 'agent.click("the 7 button")')
    assert look.settle < LIMIT / 2, look.settle  # not held by the counter
    window = next(w for w in look.windows if w.id == calc.id)
    assert_shows(window, look.seen, look.settled, look.before)  # 0 became 7: the model sees 7


def test_a_key_that_opens_a_window_is_waited_for_until_it_is_shown(
    apps: Any, x11: Any, tmp_path: Path, counter: WindowInfo
) -> None:
    editor = apps(["mousepad"], window="mousepad").window
    assert editor is not None
    x11.activate("mousepad")
    look = _act(x11, tmp_path, "native", 'agent.hotkey(["ctrl", "o"])')
    dialog = next((w for w in look.windows if w.id != editor.id and w.app == editor.app), None)
    assert dialog is not None, f"no dialog by the next look: {look.windows}"
    assert dialog.active, look.windows
    assert look.settle < LIMIT / 2, look.settle  # not held by the counter
    assert_shows(dialog, look.seen, look.settled, look.before)  # the model sees it, drawn


def test_a_click_whose_program_starts_another_is_waited_for_until_its_window_is_shown(
    apps: Any, x11: Any, tmp_path: Path, counter: WindowInfo
) -> None:
    title = f"starter-{time.monotonic_ns()}"
    apps([sys.executable, "-c", STARTER, title, LATE], window=title)
    x11.activate(title)
    look = _act(x11, tmp_path, "a11y", 'agent.click("the Start button")')
    late = next((w for w in look.windows if w.title == "late-window"), None)
    assert late is not None, f"no window of the started program by the next look: {look.windows}"
    assert look.settle < LIMIT / 2, look.settle  # not held by the counter
    assert_shows(late, look.seen, look.settled, look.before)  # the model sees it, drawn
