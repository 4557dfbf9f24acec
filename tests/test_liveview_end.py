"""The live view tells the truth once the run has ended, read in headless Chromium: the badge
says how the run ended (not "running"), every button is off, the answer is shown, and the
picture is the desktop after the last action (a frame taken then, sent with the result).
Pausing and resuming from the page is also said on the terminal (``agent-s run --view``)."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest
import Xlib.display
from polling import wait_until
from test_liveview import (  # noqa: F401 - chromium and screen are fixtures
    _agent,
    _page_state,
    _press,
    act,
    chromium,
    screen,
    start_cli_view,
)

from agent_s.bench.chrome import DevTools, Page
from agent_s.loop.control import RunControl
from agent_s.testing.scripted_replies import Step, reply
from agent_s.testing.scripted_server import RecordedRequest, ScriptedModelServer
from agent_s.view import LiveView

pytestmark = pytest.mark.desktop

_PIXELS = """() => {
  const c = document.getElementById('screen');
  const g = c.getContext('2d');
  const at = [[3, 3], [c.width - 4, 3], [3, c.height - 4], [c.width - 4, c.height - 4]];
  return at.map(([x, y]) => Array.from(g.getImageData(x, y, 1, 1).data.slice(0, 3)));
}"""


def _root_background(desktop: Any, pixel: int) -> None:
    """Paint the desktop's root window one colour (what no window covers shows it)."""
    with_auth = {**os.environ, **desktop.env}
    old = os.environ.get("XAUTHORITY")
    os.environ["XAUTHORITY"] = with_auth.get("XAUTHORITY", "")
    try:
        x = Xlib.display.Display(desktop.display)
    finally:
        if old is None:
            os.environ.pop("XAUTHORITY", None)
        else:
            os.environ["XAUTHORITY"] = old
    root = x.screen().root
    root.change_attributes(background_pixel=pixel)
    root.clear_area(0, 0, 0, 0)
    x.sync()
    x.close()


def _buttons(page: Page) -> dict[str, bool]:
    found = page.evaluate(
        "Object.fromEntries(['pause','resume','take_over','hand_back','stop']"
        ".map((id) => [id, document.getElementById(id).disabled]))"
    )
    return dict(found)


def test_the_page_shows_the_end_its_answer_and_the_desktop_after_the_last_action(
    desktop: Any,
    x11: Any,
    screen: Any,  # noqa: F811
    chromium: DevTools,  # noqa: F811
    tmp_path: Path,
) -> None:
    _root_background(desktop, 0x000000)
    asked = threading.Event()

    def script(request: RecordedRequest) -> Step:
        if request.index == 1:
            asked.set()
            return reply(act("agent.wait(0.5)"))
        # the last thing that happens to the screen, after which no frame is asked for
        _root_background(desktop, 0xFF00FF)
        return reply(act('agent.done(answer="42")'))

    control = RunControl()
    with ScriptedModelServer(script) as server:
        view = LiveView(control, screen).start()
        try:
            with chromium.new_page(view.url) as page:
                wait_until(lambda: _page_state(page)["frames"] > 0, 20, "a frame")
                assert _page_state(page)["state"] == "running"
                agent = _agent(server, x11, tmp_path, control, on_step=view.on_step)
                view.finished(agent.run("Compute 6*7"))
                view.close()  # at once, as run --view does
                wait_until(lambda: page.evaluate("agentView.lastFrame"), 15, "the last frame")
                badge = page.evaluate("document.getElementById('state').textContent")
                shown = str(page.evaluate("document.getElementById('result').innerText"))
                buttons = _buttons(page)
                corners = page.call_function(_PIXELS)
        finally:
            view.close()
            _root_background(desktop, 0x000000)
    assert badge == "succeeded"
    assert "answer: 42" in shown
    assert buttons == dict.fromkeys(buttons, True), buttons  # every button off
    magenta = [c for c in corners if c[0] > 200 and c[1] < 60 and c[2] > 200]
    assert len(magenta) >= 3, corners  # the screen after the last action (a window may cover one)


@pytest.mark.usefixtures("desktop")
def test_pausing_and_resuming_from_the_page_is_said_on_the_terminal(
    tmp_path: Path,
    chromium: DevTools,  # noqa: F811
) -> None:
    steps = threading.Event()

    def script(request: RecordedRequest) -> Step:
        steps.set()
        return reply(act("agent.wait(0.3)"))

    with ScriptedModelServer(script) as server:
        proc, url, lines = start_cli_view(server, tmp_path, "60")
        try:
            assert steps.wait(60)
            with chromium.new_page(url) as page:
                wait_until(lambda: _page_state(page)["state"] == "running", 20, "the stream")
                _press(page, "pause")
                wait_until(lambda: _page_state(page)["state"] == "paused", 10, "paused")
                _press(page, "resume")
                wait_until(lambda: _page_state(page)["state"] == "running", 10, "resumed")
                _press(page, "stop")
                out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    said = "".join(lines) + err
    assert "paused: paused from the live view" in said, said
    assert "running: resumed from the live view" in said, said
    assert "stopped: stopped from the live view" in said, said
    assert out.startswith("cancelled:"), out  # the result was printed
    assert proc.returncode == 130
