"""Several monitors: the monitor setting, the virtual desktop's monitors, and whole runs that
click named controls on each monitor of a desktop whose monitors sit side by side, or at an
offset and of different sizes (the session desktop's screen split with RandR 1.5 monitors, as
a real X server with two outputs shows it), with the real effect checked."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import Xlib.display
import Xlib.error
import Xlib.X
from clean_env import clean_env
from scripted_cli import key_file, model_options
from typer.testing import CliRunner

from agent_s import Agent, AgentConfig, GroundingConfig, ModelConfig, RunStatus, load_trajectory
from agent_s.cli.main import app as cli_app
from agent_s.desktop import _xproto
from agent_s.desktop.base import Monitor, ScreenGeometry, WindowInfo
from agent_s.desktop.monitors import monitor_to_capture, parse_monitor_choice
from agent_s.desktop.ops import Point
from agent_s.desktop.virtual import (
    VirtualDesktop,
    marked_processes,
    parse_monitors,
    temporary_environ,
)
from agent_s.errors import DesktopSetupError
from agent_s.grounding import AccessibilityTree
from agent_s.settings.config import ConfigError
from agent_s.settings.read import load_settings
from agent_s.testing.scripted_replies import reply
from agent_s.testing.scripted_server import ScriptedModelServer

KEY = "sk-monitors-SECRET-0123456789"
SIDE_BY_SIDE = (Monitor(0, 0, 640, 800, name="left"), Monitor(640, 0, 640, 800, name="right"))
# a smaller second monitor below-right of the first, leaving parts of the screen on no monitor
OFFSET = (Monitor(0, 0, 700, 560, name="main"), Monitor(700, 300, 580, 500, name="side"))


# -- the setting ----------------------------------------------------------------------------------


def test_monitor_choices_parse_and_refuse_what_is_not_one() -> None:
    assert [parse_monitor_choice(v) for v in ("all", " Active ", "0", "2", 1)] == [
        "all",
        "active",
        0,
        2,
        1,
    ]
    for bad in ("left", "-1", -1, True, "1.5", ""):
        with pytest.raises(ValueError, match="monitor"):
            parse_monitor_choice(bad)


def test_the_setting_comes_from_flag_variable_and_file(tmp_path: Path) -> None:
    assert load_settings(environ={}, read_env=False).build_agent_config({}).monitor == "all"
    config = tmp_path / "config.toml"
    config.write_text("[run]\nmonitor = 1\n")
    assert load_settings(environ={}, path=config).run.monitor == 1
    assert load_settings(environ={"AGENT_S_MONITOR": "active"}, path=config).run.monitor == (
        "active"
    )
    flagged = load_settings({"run": {"monitor": "0"}}, environ={"AGENT_S_MONITOR": "active"})
    assert flagged.build_agent_config({}).monitor == 0
    with pytest.raises(ConfigError, match="AGENT_S_MONITOR") as err:
        load_settings(environ={"AGENT_S_MONITOR": "left"})
    assert "all, active or a number" in str(err.value)
    with pytest.raises(ConfigError, match="monitor"):
        AgentConfig(monitor="second")  # type: ignore[arg-type]


def test_which_monitor_is_captured() -> None:
    geometry = ScreenGeometry(OFFSET)
    on_side = WindowInfo(1, "Calc", "calc", 7, 760, 350, 300, 300, active=True)
    straddling = WindowInfo(2, "Big", "big", 8, 500, 320, 500, 200, active=True)  # mostly side
    in_the_gap = WindowInfo(3, "Lost", "lost", 9, 900, 10, 100, 100, active=True)
    assert monitor_to_capture("all", geometry, [on_side]) is None
    assert monitor_to_capture("active", geometry, [on_side]) == 1
    assert monitor_to_capture("active", geometry, [straddling]) == 1
    # no active window on any monitor: the pointer's monitor, else the primary one
    assert monitor_to_capture("active", geometry, [in_the_gap], Point(10, 10)) == 0
    assert monitor_to_capture("active", geometry, [], Point(800, 700)) == 1
    primary_side = ScreenGeometry((OFFSET[0], Monitor(700, 300, 580, 500, primary=True)))
    assert monitor_to_capture("active", primary_side, [], Point(900, 10)) == 1
    assert monitor_to_capture(0, geometry, []) == 0
    with pytest.raises(DesktopSetupError, match=r"monitor 2 does not exist.*1: 580x500\+700\+300"):
        monitor_to_capture(2, geometry, [])
    single = ScreenGeometry((Monitor(0, 0, 1280, 800),))
    assert monitor_to_capture("active", single, [on_side]) is None
    assert monitor_to_capture(0, single, []) is None


# -- the virtual desktop's monitors ----------------------------------------------------------------


def test_monitor_layouts_parse_and_refuse_bad_ones() -> None:
    assert parse_monitors("1280x800,1024x768+1280+300") == (
        Monitor(0, 0, 1280, 800, primary=True, name="VM-0"),
        Monitor(1280, 300, 1024, 768, name="VM-1"),
    )
    assert [(m.x, m.y) for m in parse_monitors("800x600, 640x480, 320x240+0+600")] == [
        (0, 0),
        (800, 0),
        (0, 600),
    ]
    for bad, message in (
        ("1280", "WxH or WxH\\+X\\+Y"),
        ("1280x800+10", "WxH or WxH\\+X\\+Y"),
        ("1280x800,", "WxH"),
        ("10x10", "outside 64..16384"),
        ("800x600-5+0", "WxH"),
        ("800x600+-5+0", "never negative"),
    ):
        with pytest.raises(ValueError, match=message):
            parse_monitors(bad)
    with pytest.raises(ValueError, match="does not fit the monitors"):
        VirtualDesktop(1920, 1080, monitors="800x600,800x600")
    assert VirtualDesktop(monitors="800x600,640x480+800+300").width == 1440


def test_a_virtual_desktop_starts_with_monitors_at_an_offset(tmp_path: Path) -> None:
    """RandR and Xinerama (what openbox reads) both show the monitors; a window maximised
    on the second monitor fills that monitor, not the screen."""
    with VirtualDesktop(monitors="800x600,640x480+800+300", accessibility=False) as desk:
        assert (desk.width, desk.height) == (1440, 780)
        heads = subprocess.run(
            ["xdpyinfo", "-ext", "XINERAMA"],
            env=desk.env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert "head #0: 800x600 @ 0,0" in heads
        assert "head #1: 640x480 @ 800,300" in heads
        with temporary_environ(XAUTHORITY=desk.env["XAUTHORITY"]):
            x = Xlib.display.Display(desk.display)
        try:
            monitors = _xproto.randr_monitors(x)
            assert [(m.x, m.y, m.width, m.height, m.primary) for m in monitors] == [
                (0, 0, 800, 600, True),
                (800, 300, 640, 480, False),
            ]
            log = tmp_path / "xterm.log"
            with log.open("wb") as out:
                term_proc = desk.launch(
                    ["xterm", "-title", "on-the-side", "-geometry", "40x10+850+350"], stderr=out
                )

            def window() -> WindowInfo | None:
                found = [w for w in _xproto.read_windows(x) if w.title == "on-the-side"]
                return found[0] if found else None

            term = _wait(window)
            assert term is not None, _not_shown(desk, term_proc, log)
            assert term.width < 400  # 40 columns
            maximise(x, term.id)
            big = _wait(lambda: (w := window()) is not None and w.width > 400 and w)
            assert big, window()
        finally:
            x.close()
        # its monitor's width, not the screen's 1440; under openbox's title bar, to the bottom
        assert (big.x, big.width) == (800, 640), big
        assert 300 < big.y < big.y + big.height <= 780, big
        assert big.height > 400, big


def _not_shown(desk: VirtualDesktop, proc: subprocess.Popen[bytes], log: Path) -> str:
    """Why no window was listed: the program's state and words, the desktop's programs and
    what its X server holds."""
    with temporary_environ(XAUTHORITY=desk.env["XAUTHORITY"]):
        x = Xlib.display.Display(desk.display)
    try:
        mapped = []
        for child in x.screen().root.query_tree().children:
            with contextlib.suppress(Xlib.error.XError):
                if child.get_attributes().map_state == Xlib.X.IsViewable:
                    mapped.append(f"{child.id:#x} {child.get_wm_name()!r}")
        managed = _xproto.read_windows(x)
    finally:
        x.close()
    programs = []
    for pid in marked_processes(desk.token):
        with contextlib.suppress(OSError):
            programs.append(Path(f"/proc/{pid}/comm").read_text().strip())
    return (
        f"xterm {'running' if proc.poll() is None else f'exited {proc.returncode}'}, said "
        f"{log.read_text(errors='replace')!r}; the desktop's programs {sorted(programs)}; "
        f"managed windows {managed}; mapped top-level windows {mapped}"
    )


def maximise(x: Xlib.display.Display, window_id: int) -> None:
    """Ask the window manager to maximise a window (EWMH _NET_WM_STATE, as wmctrl does)."""
    from Xlib.protocol import event

    message = event.ClientMessage(
        window=x.create_resource_object("window", window_id),
        client_type=x.get_atom("_NET_WM_STATE"),
        data=(
            32,
            [
                1,
                x.get_atom("_NET_WM_STATE_MAXIMIZED_VERT"),
                x.get_atom("_NET_WM_STATE_MAXIMIZED_HORZ"),
                1,
                0,
            ],
        ),
    )
    mask = Xlib.X.SubstructureRedirectMask | Xlib.X.SubstructureNotifyMask
    x.screen().root.send_event(message, event_mask=mask)
    x.flush()


# -- whole runs on a desktop with two monitors -----------------------------------------------------


@pytest.fixture(scope="module", autouse=True)
def _accessibility_bus(desktop: Any) -> None:
    """Bind AT-SPI in this process before ``apps`` notes the running processes."""
    AccessibilityTree().applications()


@contextlib.contextmanager
def monitors_on(desktop: Any, x11: Any, layout: Sequence[Monitor]) -> Iterator[None]:
    """The session desktop's screen shown as ``layout``'s monitors until the block ends."""
    with temporary_environ(XAUTHORITY=desktop.env["XAUTHORITY"]):
        x = Xlib.display.Display(desktop.display)
    try:
        _xproto.set_randr_monitors(x, layout)
        wanted = {(m.x, m.y, m.width, m.height) for m in layout}
        _wait(lambda: {(m.x, m.y, m.width, m.height) for m in x11.geometry().monitors} == wanted)
        yield
    finally:
        x.close()
        for m in layout:
            subprocess.run(
                ["xrandr", "--delmonitor", m.name],
                env=desktop.env,
                check=False,
                capture_output=True,
            )
        _wait(
            lambda: x11.geometry().bounds == (0, 0, 1280, 800) and len(x11.geometry().monitors) == 1
        )


def _wait(predicate: Any, timeout: float = 15.0) -> Any:
    """``predicate()`` once true, else its last value after ``timeout`` (as long as other tests
    wait for a program's first window: a loaded machine is slow, a passing wait returns early)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.05)


def calculator_on(apps: Any, x11: Any, desktop: Any, monitor: Monitor, config: Path) -> WindowInfo:
    """A galculator window moved onto ``monitor`` (its settings kept in ``config``)."""
    launched = apps(["galculator"], window="galculator", env={"XDG_CONFIG_HOME": str(config)})
    window = launched.window
    subprocess.run(
        ["xdotool", "windowmove", str(window.id), str(monitor.x + 20), str(monitor.y + 40)],
        env=desktop.env,
        check=True,
        capture_output=True,
    )

    def inside() -> WindowInfo | None:
        now = next((w for w in x11.windows() if w.id == window.id), None)
        if now is None:
            return None
        fits = now.x >= monitor.x and now.x + now.width <= monitor.x + monitor.width
        fits = fits and now.y >= monitor.y and now.y + now.height <= monitor.y + monitor.height
        return now if fits else None

    moved = _wait(inside)
    assert moved, (monitor, x11.windows())
    return moved


def compute(server: ScriptedModelServer, x11: Any, tmp_path: Path, monitor: Any) -> Any:
    model = ModelConfig("openai-compatible", "scripted-model", server.openai_base_url, KEY)
    config = AgentConfig(record_dir=tmp_path / "runs", settle_seconds=0.4, monitor=monitor)
    agent = Agent(model, settings=config, grounding=GroundingConfig("a11y"), backend=x11)
    return agent.run("What is 7 times 6?")


def act(code: str) -> str:
    return f"Next step.\n```python\n{code}\n```"


SCRIPT = [
    reply(act('agent.click("the AC button")')),
    reply(act('agent.click("the 7 button")')),
    reply(act('agent.click("the * button")')),
    reply(act('agent.click("the 6 button")')),
    reply(act('agent.click("the = button")')),
    reply(act('agent.hotkey(["ctrl", "c"])')),
    reply(act('agent.done(answer="42")')),
]


def check_clicks_on(result: Any, monitor: Monitor, size: tuple[int, int]) -> None:
    """Every click of the run landed on ``monitor``; every screenshot was ``size``."""
    steps = load_trajectory(result.trajectory_dir).steps
    clicks = [e for s in steps for e in s.executed if e["op"] == "Click"]
    assert len(clicks) == 5, [s.executed for s in steps]
    for click in clicks:
        x, y = click["at"]["x"], click["at"]["y"]
        assert monitor.contains(Point(x, y)), (click, monitor)
    assert {tuple(s.screen) for s in steps} == {size}
    assert all(s.grounding[0].grounder == "a11y" for s in steps[:5])


@pytest.mark.parametrize("index", [0, 1], ids=["left", "right"])
def test_side_by_side_monitors_a_click_lands_on_each(
    desktop: Any, apps: Any, x11: Any, tmp_path: Path, index: int
) -> None:
    with monitors_on(desktop, x11, SIDE_BY_SIDE):
        target = SIDE_BY_SIDE[index]
        window = calculator_on(apps, x11, desktop, target, tmp_path / "config")
        x11.activate(window.title)
        x11.move(Point(target.x + target.width - 5, target.y + target.height - 5))
        x11.clipboard_set("")
        with ScriptedModelServer(SCRIPT) as server:
            result = compute(server, x11, tmp_path, "all")
        assert result.status is RunStatus.SUCCEEDED, result
        assert _wait(lambda: x11.clipboard_get().strip() == "42"), x11.clipboard_get()
        check_clicks_on(result, target, (1280, 800))


@pytest.mark.parametrize(("index", "choice"), [(0, "active"), (1, "active"), (1, 1)])
def test_offset_monitors_of_different_sizes_a_click_lands_on_each(
    desktop: Any, apps: Any, x11: Any, tmp_path: Path, index: int, choice: Any
) -> None:
    """The monitor the task is on is captured (by the active window, or by number): only its
    calculator is seen, though one stands on the other monitor too, and the clicks land on it."""
    with monitors_on(desktop, x11, OFFSET):
        target, other = OFFSET[index], OFFSET[1 - index]
        bystander = calculator_on(apps, x11, desktop, other, tmp_path / "other")
        window = calculator_on(apps, x11, desktop, target, tmp_path / "config")
        activate(desktop, x11, window)
        x11.move(Point(target.x + target.width - 5, target.y + target.height - 5))
        x11.clipboard_set("")
        with ScriptedModelServer(SCRIPT) as server:
            result = compute(server, x11, tmp_path, choice)
        assert result.status is RunStatus.SUCCEEDED, result
        assert _wait(lambda: x11.clipboard_get().strip() == "42"), x11.clipboard_get()
        check_clicks_on(result, target, (target.width, target.height))
        # the calculator on the other monitor was not touched: it still shows 0
        activate(desktop, x11, bystander)
        x11.hotkey(["ctrl", "c"])
        assert _wait(lambda: x11.clipboard_get().strip() == "0"), x11.clipboard_get()


def activate(desktop: Any, x11: Any, window: WindowInfo) -> None:
    subprocess.run(
        ["xdotool", "windowactivate", "--sync", str(window.id)],
        env=desktop.env,
        check=True,
        capture_output=True,
    )
    assert _wait(lambda: any(w.active and w.id == window.id for w in x11.windows()))


def test_a_monitor_that_does_not_exist_ends_the_run_saying_so(
    desktop: Any, x11: Any, tmp_path: Path
) -> None:
    with monitors_on(desktop, x11, OFFSET), ScriptedModelServer([]) as server:
        result = compute(server, x11, tmp_path, 3)
    assert result.status is RunStatus.ERROR, result
    assert "monitor 3 does not exist" in result.reason, result
    assert "--monitor all, active" in result.reason


def test_the_cli_refuses_a_bad_virtual_layout_before_starting_anything() -> None:
    runner = CliRunner()
    bad = runner.invoke(
        cli_app,
        [
            "run",
            "x",
            *model_options(),
            "--virtual",
            "--virtual-monitors",
            "800",
        ],
        env={"OPENAI_API_KEY": "k"},
    )
    assert bad.exit_code == 2, bad.output
    assert "WxH or WxH+X+Y" in bad.output
    bad_monitor = runner.invoke(
        cli_app,
        [
            "run",
            "x",
            *model_options(),
            "--monitor",
            "left",
        ],
        env={"OPENAI_API_KEY": "k"},
    )
    assert bad_monitor.exit_code == 2, bad_monitor.output
    assert "all, active or a number" in bad_monitor.output


def test_agent_s_run_on_a_virtual_desktop_with_two_monitors(tmp_path: Path) -> None:
    """``--virtual --virtual-monitors`` starts the monitors; ``--monitor active`` captures the
    calculator's; the click by name lands on it: the check reads 7 off the clipboard."""
    key = key_file(tmp_path, "sk-monitors-SECRET")
    script = [
        reply(act('agent.open("galculator")')),
        reply(act("agent.wait(2)")),
        reply(act('agent.click("the 7 button")')),
        reply(act('agent.hotkey(["ctrl", "c"])')),
        reply(act('agent.done(answer="7")')),
    ]
    env = clean_env()
    env.pop("DISPLAY", None)
    with ScriptedModelServer(script) as server:
        done = subprocess.run(
            [
                str(Path(sys.executable).parent / "agent-s"),
                "run",
                *model_options(server.openai_base_url, key=key),
                "--virtual",
                "--virtual-monitors",
                "900x700,700x500+900+260",
                "--monitor",
                "active",
                "--safety",
                "auto",
                "--record",
                str(tmp_path / "runs"),
                "--check",
                "sh -c 'test \"$(xclip -o -selection clipboard)\" = 7'",
                "Press 7 on the calculator and copy the result",
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert "(900x700+0+0, 700x500+900+260)" in done.stderr
    (folder,) = (tmp_path / "runs").iterdir()
    steps = load_trajectory(folder).steps
    (click,) = [e for s in steps for e in s.executed if e["op"] == "Click"]
    on = next(
        m
        for m in parse_monitors("900x700,700x500+900+260")
        if m.contains(Point(click["at"]["x"], click["at"]["y"]))
    )
    # every step after the calculator opened saw its monitor only
    assert {tuple(s.screen) for s in steps[2:]} == {(on.width, on.height)}
