"""GnomeBackend on a real headless GNOME Shell: the shared action tests, through mutter's own
ScreenCast and RemoteDesktop D-Bus interfaces.

The GTK probe (tests/apps/probe_gtk.py, full screen: GNOME tells no client where windows are)
reports which button, clicks, modifiers, scroll directions and text arrived; mousepad shows
that text, keys and the clipboard arrive as real applications see them, with the file on disk
as the proof; the accessibility tree and the shell's window cycling show windows listed and
activated. Skipped, saying why, only when GNOME Shell, PipeWire or GStreamer's PipeWire source
is not installed (scripts/setup.sh --desktops installs them).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import backend_checks
import psutil
import pytest
from clean_env import clean_env
from conftest import AppRunner, Probe, app_runner
from polling import wait_until as _wait
from scripted_cli import model_options

from agent_s.desktop.base import DesktopBackend
from agent_s.desktop.choose import choose_backend, desktop_backend
from agent_s.desktop.gnome import GnomeBackend
from agent_s.desktop.ops import Point
from agent_s.desktop.virtual import VirtualDesktop, marked_processes
from agent_s.testing.scripted_replies import reply
from agent_s.testing.scripted_server import ScriptedModelServer

PROBE = Path(__file__).parent / "apps" / "probe_gtk.py"
AGENT_S = str(Path(sys.executable).with_name("agent-s"))
_TOOLS = ("gnome-shell", "pipewire", "wireplumber", "dbus-daemon", "mousepad", "galculator")


def _missing() -> list[str]:
    missing = [tool for tool in _TOOLS if shutil.which(tool) is None]
    try:
        from agent_s.desktop._mutter import gi_modules

        gi_modules()
    except Exception:
        missing.append("gstreamer1.0-pipewire / gir1.2-gstreamer-1.0")
    return missing


_MISSING = _missing()
NO_GNOME = (
    f"{', '.join(_MISSING)} not installed: GNOME tests need a headless GNOME Shell "
    "(scripts/setup.sh --desktops)"
)
pytestmark = [pytest.mark.desktop, pytest.mark.skipif(bool(_MISSING), reason=NO_GNOME)]
_CLEAN = clean_env("DISPLAY", "XAUTHORITY", "WAYLAND_DISPLAY", "OPENAI_API_KEY")


def act(code: str) -> str:
    return f"Working.\n```python\n{code}\n```"


@pytest.fixture(scope="module")
def gnome_desktop() -> Iterator[VirtualDesktop]:
    with VirtualDesktop(1280, 800, home="temp", kind="gnome") as desk, desk.exported():
        config = desk.home / ".config"
        (config / "mimeapps.list").write_text(
            "[Default Applications]\ntext/plain=org.xfce.mousepad.desktop\n", encoding="utf-8"
        )
        yield desk


@pytest.fixture(scope="module")
def gnome(gnome_desktop: VirtualDesktop) -> Iterator[GnomeBackend]:
    backend = desktop_backend(gnome_desktop)
    assert isinstance(backend, GnomeBackend)
    yield backend
    backend.close()


@pytest.fixture
def gnome_apps(gnome_desktop: VirtualDesktop, gnome: GnomeBackend) -> Iterator[AppRunner]:
    with app_runner(gnome_desktop, gnome) as runner:
        yield runner


@pytest.fixture
def work(gnome_desktop: VirtualDesktop) -> Iterator[Path]:
    folder = gnome_desktop.home / f"work-{time.monotonic_ns()}"
    folder.mkdir()
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


class FullScreenProbe(Probe):
    """The GTK probe full screen: its content starts at the screen's top-left corner."""

    def origin(self) -> Point:
        return Point(0, 0)

    def ready(self, events: list[dict[str, Any]]) -> bool:
        boxes = [e for e in events if e["type"] == "boxes"]
        return bool(boxes) and tuple(boxes[-1]["window"][2:]) == (1280, 800)


@pytest.fixture
def probe(
    gnome_apps: AppRunner, gnome: GnomeBackend, gnome_desktop: VirtualDesktop
) -> FullScreenProbe:
    log = gnome_desktop.home / f"probe-{time.monotonic_ns()}.jsonl"
    log.touch()
    title = f"probe-{time.monotonic_ns()}"
    launched = gnome_apps(
        [sys.executable, str(PROBE), str(log), "--title", title, "--fullscreen"], window=title
    )
    assert launched.window is not None
    found = FullScreenProbe(log, launched.window, gnome)
    found.wait_for(found.ready, timeout=10)
    gnome.activate(title)
    found.reset()
    return found


# -- which backend ------------------------------------------------------------------------------


def test_the_virtual_desktop_is_a_gnome_wayland_session(gnome_desktop: VirtualDesktop) -> None:
    choice = choose_backend(os.environ)  # exported: what agent-s in this session chooses
    assert choice.kind == "gnome", choice
    assert os.environ["XDG_CURRENT_DESKTOP"] == "GNOME"
    assert "DISPLAY" not in os.environ
    shell = [p for p in marked_processes(gnome_desktop.token) if _name(p) == "gnome-shell"]
    assert shell, "no gnome-shell runs on the desktop"
    assert "--headless" in psutil.Process(shell[0]).cmdline()


def _name(pid: int) -> str:
    try:
        return psutil.Process(pid).name()
    except psutil.Error:
        return ""


# -- screen and mouse -------------------------------------------------------------------------


def test_backend_satisfies_the_protocol_and_captures(
    gnome: GnomeBackend, probe: FullScreenProbe
) -> None:
    assert isinstance(gnome, DesktopBackend)
    shot = backend_checks.whole_screen(gnome, probe)
    assert shot.accessibility_boxes is False  # GNOME Wayland hides where windows are
    part = gnome.capture(0)
    assert part.image.size == (1280, 800)
    with pytest.raises(ValueError, match="does not exist"):
        gnome.capture(2)


@pytest.mark.parametrize(("button", "number"), [("left", 1), ("middle", 2), ("right", 3)])
def test_click_buttons_and_counts(
    gnome: GnomeBackend, probe: FullScreenProbe, button: str, number: int
) -> None:
    backend_checks.click_buttons_and_counts(gnome, probe, button, number)


def test_click_with_held_modifiers(gnome: GnomeBackend, probe: FullScreenProbe) -> None:
    backend_checks.click_with_held_modifiers(gnome, probe)


def test_points_off_the_screen_are_refused(gnome: GnomeBackend, probe: FullScreenProbe) -> None:
    backend_checks.points_off_the_screen_are_refused(gnome, probe)


def test_drag_presses_moves_and_releases(gnome: GnomeBackend, probe: FullScreenProbe) -> None:
    backend_checks.drag_presses_moves_and_releases(gnome, probe)


def test_scroll_vertical_and_horizontal(gnome: GnomeBackend, probe: FullScreenProbe) -> None:
    backend_checks.scroll_both_ways(gnome, probe)


# -- keyboard and text ------------------------------------------------------------------------


def test_hold_and_press_and_hotkey(gnome: GnomeBackend, probe: FullScreenProbe) -> None:
    backend_checks.hold_and_press_and_hotkey(gnome, probe, "<")


def test_type_text_in_chunks_with_unicode(
    gnome: GnomeBackend, probe: FullScreenProbe, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend_checks.type_text_in_chunks(gnome, probe, monkeypatch)


def test_type_text_refuses_control_characters(gnome: GnomeBackend) -> None:
    backend_checks.refuses_control_characters(gnome)


def test_typed_text_in_mousepad_is_saved_exactly(
    gnome: GnomeBackend, gnome_apps: AppRunner, work: Path
) -> None:
    path = work / "typed.txt"
    path.write_text("")
    backend_checks.type_into_mousepad(gnome, gnome_apps, path)


def test_hotkeys_select_copy_and_save_in_mousepad(
    gnome: GnomeBackend, gnome_apps: AppRunner, work: Path
) -> None:
    path = work / "keys.txt"
    path.write_text("first line\nsecond line")
    backend_checks.hotkeys_in_mousepad(gnome, gnome_apps, path)


def test_typing_gives_the_clipboard_back(gnome: GnomeBackend, probe: FullScreenProbe) -> None:
    gnome.clipboard_set("kept")
    gnome.click(probe.point("entry"))
    gnome.type_text("x é y")
    probe.wait_for(lambda ev: any(e.get("text") == "x é y" for e in ev))
    assert gnome.clipboard_get() == "kept"


# -- clipboard --------------------------------------------------------------------------------


def test_clipboard_round_trip_with_unicode(gnome: GnomeBackend) -> None:
    backend_checks.clipboard_round_trip(gnome)


def test_clipboard_feeds_a_real_paste(gnome: GnomeBackend, probe: FullScreenProbe) -> None:
    backend_checks.clipboard_feeds_a_paste(gnome, probe)


# -- windows and programs ---------------------------------------------------------------------


def test_windows_listed_and_activated(
    gnome: GnomeBackend, gnome_apps: AppRunner, probe: FullScreenProbe, work: Path
) -> None:
    path = work / "second.txt"
    path.write_text("second window\n")
    pad = backend_checks.mousepad(gnome_apps, path)
    assert pad.app == "mousepad"
    assert (pad.x, pad.y, pad.width, pad.height) == (0, 0, 0, 0)  # positions unknown here
    for name, wanted in ((probe.window.title, probe.window.id), (path.name, pad.id)):
        window = gnome.activate(name)
        assert window.id == wanted
        listed = gnome.windows()
        assert listed[0].id == wanted
        assert listed[0].active
        assert [w.id for w in listed if w.active] == [wanted]
    # The keys go to the window activated last: mousepad's text, not the probe's entry.
    gnome.hotkey(["ctrl", "end"])
    gnome.type_text("typed after activation")
    gnome.hotkey(["ctrl", "s"])
    _wait(lambda: path.read_text().endswith("typed after activation"), what="the saved file")
    with pytest.raises(Exception, match="no open window matches"):
        gnome.activate("no-such-window-anywhere")


def test_open_application_by_name_then_again_brings_it_forward(
    gnome: GnomeBackend, gnome_apps: AppRunner, probe: FullScreenProbe
) -> None:
    before = {w.id for w in gnome.windows()}
    assert gnome.open("galculator") is None
    window = gnome.wait_for_window(lambda w: w.id not in before and w.app == "galculator", 15)
    assert window.pid is not None
    gnome.activate(probe.window.title)
    again = gnome.open("galculator")
    assert again is not None
    assert again.id == window.id
    assert [w.id for w in gnome.windows() if w.active] == [window.id]


def test_open_file_uses_its_default_application(
    gnome: GnomeBackend, gnome_apps: AppRunner, work: Path
) -> None:
    path = work / f"notes-{time.monotonic_ns()}.txt"
    path.write_text("opened by its default application\n")
    assert gnome.open(str(path)) is None
    window = gnome.wait_for_window(path.name, timeout=20)
    assert window.pid is not None
    assert psutil.Process(window.pid).name() == "mousepad"


# -- grounding --------------------------------------------------------------------------------


def test_accessibility_boxes_are_not_grounding_points_here(
    gnome: GnomeBackend, gnome_apps: AppRunner
) -> None:
    from agent_s.grounding import AccessibilityGrounder, GrounderUnavailable, Observation

    gnome.open("galculator")
    gnome.wait_for_window("galculator", timeout=15)
    observation = Observation(gnome.capture(), tuple(gnome.windows()), gnome.geometry())
    with pytest.raises(GrounderUnavailable, match="every window the position 0, 0"):
        AccessibilityGrounder().ground("the 7 button", observation)


_BOUND_ELSEWHERE = """
import sys
from agent_s.desktop.atspi import bindings
from agent_s.desktop.choose import desktop_backend
from agent_s.desktop.virtual import VirtualDesktop

with VirtualDesktop(home="temp") as x11, x11.exported():
    bindings()  # this process's AT-SPI now reads the X11 desktop's bus, for good
    with VirtualDesktop(home="temp", kind="gnome") as desk, desk.exported():
        with desktop_backend(desk) as backend:
            backend.open("galculator")
            window = backend.wait_for_window("galculator", timeout=30)
            print("listed", window.app, backend.window_problem or "-")
"""


def test_windows_are_listed_where_accessibility_read_another_desktop_first() -> None:
    """libatspi binds the first bus it reads for good: a process that read an X11 desktop's
    tree first (an MCP server, a test session) still lists a GNOME desktop's windows."""
    done = subprocess.run(
        [sys.executable, "-c", _BOUND_ELSEWHERE],
        env=_CLEAN,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
    assert "listed galculator -" in done.stdout, done.stdout


# -- doctor -----------------------------------------------------------------------------------


def test_doctor_names_the_backend_and_each_capability(gnome_desktop: VirtualDesktop) -> None:
    env = {**_CLEAN, **{k: v for k, v in os.environ.items() if k.startswith("XDG_")}}
    env.update({k: gnome_desktop.env[k] for k in ("WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS")})
    result = subprocess.run(
        [AGENT_S, "doctor", "--json"], env=env, capture_output=True, text=True, timeout=120
    )
    assert "Traceback" not in result.stdout + result.stderr
    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    assert "gnome backend" in checks["display"]["detail"]
    for name in ("capture", "input", "text", "clipboard", "windows", "open"):
        assert checks[name]["status"] == "ok", checks[name]
    assert "ScreenCast" in checks["capture"]["detail"]
    assert "RemoteDesktop" in checks["input"]["detail"]
    assert "AT-SPI" in checks["windows"]["detail"]


def test_doctor_on_a_gnome_session_without_mutter_names_what_is_missing(tmp_path: Path) -> None:
    """A GNOME Wayland session whose session bus has no mutter on it (another bus, or a GNOME
    too old): doctor says what it needs and how to get it, with no traceback."""
    bus = subprocess.Popen(
        ["dbus-daemon", "--session", "--nofork", "--print-address=1", "--nopidfile"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert bus.stdout is not None
        address = bus.stdout.readline().strip()
        env = {
            **_CLEAN,
            "XDG_SESSION_TYPE": "wayland",
            "XDG_CURRENT_DESKTOP": "GNOME",
            "WAYLAND_DISPLAY": "wayland-0",
            "XDG_RUNTIME_DIR": str(tmp_path),
            "DBUS_SESSION_BUS_ADDRESS": address,
        }
        result = subprocess.run(
            [AGENT_S, "doctor", "--json"], env=env, capture_output=True, text=True, timeout=60
        )
    finally:
        bus.terminate()
        bus.wait(5)
    assert "Traceback" not in result.stdout + result.stderr
    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    display = checks["display"]
    assert display["status"] == "fail"
    assert "org.gnome.Mutter.RemoteDesktop is not on the session bus" in display["detail"]
    assert "inside the GNOME Wayland session" in display["fix"]
    assert "--virtual --desktop gnome" in display["fix"]


# -- a run with the scripted model, and its ending --------------------------------------------

_READ_DISPLAY = """
import gi, sys
gi.require_version("Atspi", "2.0")
from gi.repository import Atspi
def walk(node, depth=0):
    if node is None or depth > 25:
        return
    try:
        if node.get_role_name() == "label" and node.get_name():
            print(node.get_name())
    except Exception:
        pass
    for i in range(node.get_child_count()):
        walk(node.get_child_at_index(i), depth + 1)
d = Atspi.get_desktop(0)
for i in range(d.get_child_count()):
    app = d.get_child_at_index(i)
    if app is not None and app.get_name() == "galculator":
        walk(app)
"""


def _run_on_gnome(url: str, runs: Path) -> list[str]:
    """``agent-s run`` with the scripted model at ``url`` on a fresh virtual GNOME desktop,
    recording in ``runs``."""
    return [
        AGENT_S,
        "run",
        *model_options(url, key="sk-gnome"),
        "--ground",
        "native",
        "--virtual",
        "--desktop",
        "gnome",
        "--safety",
        "auto",
        "--record",
        str(runs),
    ]


def test_a_galculator_task_on_a_virtual_gnome_desktop(tmp_path: Path) -> None:
    """``agent-s run --virtual --desktop gnome``: the scripted model opens galculator, types
    a sum and presses =; the check reads galculator's display through its accessibility
    tree while the desktop still runs: the number on screen is the effect."""
    reader = tmp_path / "read_display.py"
    reader.write_text(_READ_DISPLAY)
    script = [
        reply(act('agent.open("galculator")')),
        reply(act("agent.wait(2)")),
        reply(act('agent.type("6*7=")')),
        reply(act('agent.done(answer="42")')),
    ]
    with ScriptedModelServer(script) as server:
        done = subprocess.run(
            [
                *_run_on_gnome(server.openai_base_url, tmp_path / "runs"),
                "--check",
                f"{sys.executable} {reader} | grep -qx 42",
                "Compute 6*7 on the calculator",
            ],
            env=_CLEAN,
            capture_output=True,
            text=True,
            timeout=180,
        )
    assert "Traceback" not in done.stdout + done.stderr
    assert done.returncode == 0, done.stdout + done.stderr
    assert "check passed" in done.stdout


def _session_token(proc: subprocess.Popen[str], timeout: float = 60) -> str:
    """The marker of the GNOME desktop ``proc`` started (its child gnome-shell carries it)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            children = psutil.Process(proc.pid).children(recursive=True)
        except psutil.Error:
            children = []
        for child in children:
            try:
                if child.name() == "gnome-shell":
                    return child.environ()["AGENT_S_VIRTUAL_DESKTOP"]
            except (psutil.Error, KeyError):
                continue
        time.sleep(0.1)
    raise AssertionError("the run's GNOME desktop did not start")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_a_signal_ending_leaves_nothing_of_the_session_running(
    tmp_path: Path, sig: signal.Signals
) -> None:
    asked: list[Any] = []

    def script(request: Any) -> Any:  # galculator, then waiting until the signal comes
        asked.append(request)
        return reply(act('agent.open("galculator")' if len(asked) == 1 else "agent.wait(5)"))

    with ScriptedModelServer(script) as server:
        run = subprocess.Popen(
            [*_run_on_gnome(server.openai_base_url, tmp_path / "runs"), "Wait"],
            env=_CLEAN,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        try:
            token = _session_token(run)
            _wait(
                lambda: (
                    {"pipewire", "wireplumber", "galculator"}
                    <= {_name(p) for p in marked_processes(token)}
                ),
                timeout=30,
                what="the session's programs",
            )
            run.send_signal(sig)
            run.wait(30)
        finally:
            if run.poll() is None:
                run.kill()
                run.wait()
    _wait(lambda: not _alive(marked_processes(token)), timeout=20, what="the session to end")


def _alive(pids: list[int]) -> list[int]:
    return [p for p in pids if _name(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
