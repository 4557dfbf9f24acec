"""One ``agent-s mcp`` process, two displays: the tools that look at the server's screen and
``run_task`` on it or on a virtual desktop of its own, called in any order. Each input reaches the
display it was meant for (pyautogui, which connects once per process, is lent each backend's own
connection while it acts: ``agent_s.desktop.x11``); accessibility, which binds to one desktop's
bus per process, serves that desktop only, and grounding on the other does without it."""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from PIL import Image
from test_mcp import _elicitation, _env, _model_args, _ok, _run, _session, _wait_for, act

from agent_s.desktop.ops import Point
from agent_s.testing.scripted_replies import reply
from agent_s.testing.scripted_server import ScriptedModelServer

pytestmark = pytest.mark.desktop


def _virtual_script(out: Path) -> list[Any]:
    """In the run's own desktop: a terminal waits for a click on a window (``xdotool
    selectwindow`` prints the id of the window clicked) and notes its display; the click
    follows. Only a click that reaches that display ends the wait."""
    command = (
        f"xdotool selectwindow > {out}.part && echo $DISPLAY >> {out}.part && mv {out}.part {out}"
    )
    return [
        reply(act('agent.open("xterm")')),
        reply(act(f"agent.type(text={command!r}, enter=True)")),
        reply(act('agent.click("(400, 300)")')),
        reply(act('agent.done(answer="clicked")')),
    ]


def _real_script() -> list[Any]:
    return [
        reply(act('agent.click("the 7 button")')),
        reply(act('agent.hotkey(["ctrl", "c"])')),
        reply(act('agent.done(answer="7")')),
    ]


def _shown(result: types.CallToolResult, box: tuple[int, int, int, int]) -> bytes:
    assert not result.is_error, result
    (image,) = result.content
    assert isinstance(image, types.ImageContent)
    with Image.open(io.BytesIO(base64.b64decode(image.data))) as picture:
        assert picture.size == (1280, 800)
        return picture.convert("RGB").crop(box).tobytes()


@pytest.mark.parametrize("virtual_first", [False, True], ids=["look-first", "virtual-first"])
def test_tools_and_runs_on_the_real_and_a_virtual_display_in_any_order(
    virtual_first: bool, tmp_path: Path, desktop: Any, apps: Any, x11: Any
) -> None:
    window = apps(["galculator"], window="galculator").window
    box = (window.x, window.y, window.x + window.width, window.y + window.height)
    x11.activate("galculator")
    x11.clipboard_set("")
    parked = Point(window.x - 40 if window.x > 80 else window.x + window.width + 40, 120)
    x11.move(parked)
    out = tmp_path / "clicked.txt"
    asked: list[str] = []

    def yes(message: str, schema: dict[str, Any]) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"decision": "yes"})

    script = [*_virtual_script(out), *_real_script()]
    with ScriptedModelServer(script) as server:

        async def main() -> dict[str, Any]:
            args, env = _model_args(tmp_path, server), _env(tmp_path, desktop)
            seen: dict[str, Any] = {}
            async with _session(args, env, elicit=_elicitation(yes, asked)) as session:

                async def look(name: str) -> None:
                    seen[f"shot {name}"] = await session.call_tool("screenshot", {})
                    seen[f"screen {name}"] = x11.capture().image.convert("RGB").crop(box)
                    expression = {"expression": "the 7 button"}
                    seen[f"ground {name}"] = _ok(await session.call_tool("ground", expression))

                async def virtual_run() -> None:
                    task = {"task": "Click the window in the terminal", "virtual": True}
                    seen["virtual"] = _ok(await session.call_tool("run_task", task))
                    seen["pointer after virtual"] = x11.pointer()

                if not virtual_first:
                    await look("before")
                await virtual_run()
                await look("after")
                task = {"task": "Press 7 on the calculator and copy it", "virtual": False}
                seen["real"] = _ok(await session.call_tool("run_task", task))
            return seen

        seen = _run(main)
    assert seen["virtual"]["status"] == "succeeded", seen["virtual"]
    # the click reached the virtual desktop: the terminal there saw it, and only there
    assert _wait_for(out.exists, 10), "the terminal on the virtual desktop saw no click"
    window_id, display = out.read_text().split()
    assert int(window_id) > 0
    assert display != desktop.display
    assert seen["pointer after virtual"] == parked  # the server's screen saw no click
    # the tools still look at the server's screen, and a run there drives it
    ground = seen["ground after"]
    assert window.x <= ground["point"]["x"] < window.x + window.width, ground
    assert _shown(seen["shot after"], box) == seen["screen after"].tobytes()
    assert seen["real"]["status"] == "succeeded", seen["real"]
    assert _wait_for(lambda: x11.clipboard_get().strip() == "7", 10), x11.clipboard_get()
