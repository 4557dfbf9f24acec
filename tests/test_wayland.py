"""WaylandBackend on a real headless sway desktop: the X11 backend's action tests, on Wayland.

The GTK probe (tests/apps/probe_gtk.py, a native Wayland client) reports which button, how many
clicks, which modifiers and which scroll direction arrived; mousepad (GTK, GDK_BACKEND=wayland)
and foot (a Wayland-only terminal) show that text, keys and the clipboard arrive as real
applications see them; files on disk are the proof. These tests run as root in CI, so the
desktop runs sway and its applications as its own unprivileged user, and the files they write
live in that user's folders.

Skipped, saying why, only when sway, grim, wtype or wl-clipboard is not installed
(scripts/setup.sh installs them); any other failure to start sway is an error.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import backend_checks
import psutil
import pytest
from clean_env import clean_env
from conftest import AppRunner, Probe, app_runner, start_probe
from polling import wait_until as _wait
from test_settle_screen import COUNT, assert_shows
from test_settle_screen import LIMIT as SETTLE_LIMIT

from agent_s.desktop.base import DesktopBackend
from agent_s.desktop.choose import choose_backend, desktop_backend
from agent_s.desktop.ops import Point
from agent_s.desktop.settle import until_still
from agent_s.desktop.virtual import VirtualDesktop, marked_processes
from agent_s.desktop.wayland import WaylandBackend

PROBE = Path(__file__).parent / "apps" / "probe_gtk.py"
AGENT_S = str(Path(sys.executable).with_name("agent-s"))
_TOOLS = ("sway", "grim", "wtype", "wl-copy", "wl-paste")
_MISSING = [tool for tool in _TOOLS if shutil.which(tool) is None]
NO_SWAY = (
    f"{', '.join(_MISSING)} not installed: Wayland tests need a headless sway "
    "(apt-get install sway grim wtype wl-clipboard foot gir1.2-gtk-3.0 python3-gi-cairo, "
    "or run scripts/setup.sh)"
)
on_sway = [pytest.mark.desktop, pytest.mark.skipif(bool(_MISSING), reason=NO_SWAY)]


# -- which backend, and why: no desktop needed ---------------------------------------------------


def test_gnome_and_kde_wayland_sessions_choose_their_own_backends(tmp_path: Path) -> None:
    for desktop, kind in (("ubuntu:GNOME", "gnome"), ("KDE", "kde")):
        env = {
            "XDG_SESSION_TYPE": "wayland",
            "WAYLAND_DISPLAY": "wayland-0",
            "XDG_RUNTIME_DIR": str(tmp_path),  # no sway socket in it
            "XDG_CURRENT_DESKTOP": desktop,
            "DISPLAY": ":0",  # XWayland is there, but sees no native window
        }
        choice = choose_backend(env)
        assert choice.kind == kind, choice
    # Forcing X11 drives the XWayland windows, as asked.
    forced = choose_backend({**env, "AGENT_S_BACKEND": "x11"})
    assert forced.kind == "x11"
    assert "AGENT_S_BACKEND=x11" in forced.reason


def test_backend_choice_by_session(tmp_path: Path) -> None:
    sock = tmp_path / "sway-ipc.0.1.sock"
    sock.touch()
    sway = {"WAYLAND_DISPLAY": "wayland-1", "XDG_RUNTIME_DIR": str(tmp_path)}
    choice = choose_backend(sway)
    assert choice.kind == "wayland"
    assert str(sock) in choice.reason
    assert choose_backend({**sway, "SWAYSOCK": "/elsewhere.sock"}).reason.count("/elsewhere")
    assert choose_backend({"DISPLAY": ":3"}).kind == "x11"
    other = choose_backend({"WAYLAND_DISPLAY": "wayland-0", "XDG_RUNTIME_DIR": "/nonexistent"})
    assert other.kind is None
    assert "SWAYSOCK" in other.reason
    nothing = choose_backend({})
    assert nothing.kind is None
    assert "--virtual" in nothing.fix
    bad = choose_backend({"AGENT_S_BACKEND": "mir"})
    assert bad.kind is None
    assert "x11, wayland, gnome or kde" in bad.fix


def test_virtual_desktop_kind_is_checked() -> None:
    with pytest.raises(ValueError, match="one of 'x11', 'wayland', 'gnome', 'kde'"):
        VirtualDesktop(kind="mir")  # type: ignore[arg-type]


# -- the desktop ------------------------------------------------------------------------------


def _own(desk: VirtualDesktop, path: Path) -> Path:
    """A file or folder the desktop's programs (its user, under root) may write."""
    user = getattr(desk, "_user", None)
    if user is not None:
        os.chown(path, user.pw_uid, user.pw_gid)
    return path


def _written(desk: VirtualDesktop, path: Path, text: str) -> Path:
    """``path`` holding ``text``, which the desktop's programs may write."""
    path.write_text(text)
    return _own(desk, path)


@pytest.fixture(scope="module")
def wl_desktop() -> Iterator[VirtualDesktop]:
    if _MISSING:
        pytest.skip(NO_SWAY)
    with VirtualDesktop(1280, 800, home="temp", kind="wayland") as desk:
        config = desk.home / ".config"
        (config / "mimeapps.list").write_text(
            "[Default Applications]\ntext/plain=org.xfce.mousepad.desktop\n", encoding="utf-8"
        )
        _own(desk, config / "mimeapps.list")
        yield desk


@pytest.fixture(scope="module")
def wl(wl_desktop: VirtualDesktop) -> Iterator[WaylandBackend]:
    backend = desktop_backend(wl_desktop)
    assert isinstance(backend, WaylandBackend)
    yield backend
    backend.close()


@pytest.fixture
def work(wl_desktop: VirtualDesktop) -> Iterator[Path]:
    """A folder of this test's in the desktop's HOME, which its applications can write."""
    folder = wl_desktop.home / f"work-{time.monotonic_ns()}"
    folder.mkdir()
    _own(wl_desktop, folder)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def wl_apps(wl_desktop: VirtualDesktop, wl: WaylandBackend) -> Iterator[AppRunner]:
    with app_runner(wl_desktop, wl) as runner:
        yield runner


class GtkProbe(Probe):
    """The GTK probe window: positions in its window, which sway places (and may re-tile)."""

    def origin(self) -> Point:
        """Where sway shows the window's content now."""
        window = next(w for w in self.backend.windows() if w.id == self.window.id)
        return Point(window.x, window.y)

    def ready(self, events: list[dict[str, Any]]) -> bool:
        """Its widgets reported for the window's tiled size."""
        boxes = [e for e in events if e["type"] == "boxes"]
        size = (self.window.width, self.window.height)
        return bool(boxes) and tuple(boxes[-1]["window"][2:]) == size


@pytest.fixture
def probe(wl_apps: AppRunner, wl: WaylandBackend, wl_desktop: VirtualDesktop) -> GtkProbe:
    log = wl_desktop.home / f"probe-{time.monotonic_ns()}.jsonl"
    log.touch()
    _own(wl_desktop, log)
    return start_probe(wl_apps, wl, log, GtkProbe, PROBE)


# -- screen -----------------------------------------------------------------------------------


def _marks(test: Callable[..., None]) -> Callable[..., None]:
    for mark in on_sway:
        test = mark(test)
    return test


@_marks
def test_backend_satisfies_the_protocol(wl: WaylandBackend) -> None:
    assert isinstance(wl, DesktopBackend)
    assert wl.env.get("WAYLAND_DISPLAY")
    assert "DISPLAY" not in wl.env
    assert {"pointer", "keyboard"} <= set(wl.input_devices())


@_marks
def test_geometry_and_capture_of_the_whole_screen(wl: WaylandBackend, probe: GtkProbe) -> None:
    shot = backend_checks.whole_screen(wl, probe)
    part = wl.capture(0)  # the one output: the same pixels (the entry's caret may blink)
    assert part.origin == Point(0, 0)
    assert part.image.size == shot.image.size
    x, y, w, h = probe.boxes["canvas"]
    origin = probe.origin()
    canvas = (origin.x + x, origin.y + y, origin.x + x + w, origin.y + y + h)
    assert part.image.crop(canvas).tobytes() == shot.image.crop(canvas).tobytes()
    with pytest.raises(ValueError, match="does not exist"):
        wl.capture(3)


# -- mouse ------------------------------------------------------------------------------------


@_marks
@pytest.mark.parametrize(("button", "number"), [("left", 1), ("middle", 2), ("right", 3)])
def test_click_buttons_and_counts(
    wl: WaylandBackend, probe: GtkProbe, button: str, number: int
) -> None:
    backend_checks.click_buttons_and_counts(wl, probe, button, number)


@_marks
def test_click_with_held_modifiers(wl: WaylandBackend, probe: GtkProbe) -> None:
    backend_checks.click_with_held_modifiers(wl, probe)


@_marks
def test_points_off_the_screen_are_refused_not_clamped(wl: WaylandBackend, probe: GtkProbe) -> None:
    backend_checks.points_off_the_screen_are_refused(wl, probe)


@_marks
def test_drag_presses_at_start_moves_and_releases_at_end(
    wl: WaylandBackend, probe: GtkProbe
) -> None:
    backend_checks.drag_presses_moves_and_releases(wl, probe)


@_marks
def test_scroll_vertical_and_horizontal(wl: WaylandBackend, probe: GtkProbe) -> None:
    backend_checks.scroll_both_ways(wl, probe)


# -- keyboard ---------------------------------------------------------------------------------


@_marks
def test_hold_and_press_and_hotkey_reach_the_focused_widget(
    wl: WaylandBackend, probe: GtkProbe
) -> None:
    # GTK entry: ctrl+a selects everything, so "<" replaces it
    backend_checks.hold_and_press_and_hotkey(wl, probe, "<")


@_marks
def test_type_text_in_chunks(
    wl: WaylandBackend, probe: GtkProbe, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend_checks.type_text_in_chunks(wl, probe, monkeypatch)


@_marks
def test_type_text_refuses_control_characters(wl: WaylandBackend) -> None:
    backend_checks.refuses_control_characters(wl)


@_marks
def test_type_text_into_mousepad_saves_exactly_that_text(
    wl: WaylandBackend, wl_apps: AppRunner, work: Path, wl_desktop: VirtualDesktop
) -> None:
    path = _written(wl_desktop, work / "typed.txt", "")
    backend_checks.type_into_mousepad(wl, wl_apps, path)


@_marks
def test_type_text_into_foot_gives_the_same_bytes(
    wl: WaylandBackend, wl_apps: AppRunner, work: Path
) -> None:
    out = work / "from_foot.txt"
    backend_checks.type_into_terminal(wl, wl_apps, lambda title: ["foot", "--title", title], out)


@_marks
def test_hotkeys_select_copy_and_save_in_mousepad(
    wl: WaylandBackend, wl_apps: AppRunner, work: Path, wl_desktop: VirtualDesktop
) -> None:
    path = _written(wl_desktop, work / "keys.txt", "first line\nsecond line")
    backend_checks.hotkeys_in_mousepad(wl, wl_apps, path)


# -- clipboard --------------------------------------------------------------------------------


@_marks
def test_clipboard_round_trip_with_unicode(wl: WaylandBackend) -> None:
    backend_checks.clipboard_round_trip(wl)


@_marks
def test_clipboard_feeds_a_real_paste(wl: WaylandBackend, probe: GtkProbe) -> None:
    backend_checks.clipboard_feeds_a_paste(wl, probe)


# -- windows and programs ---------------------------------------------------------------------


def _focused_in_sway(desk: VirtualDesktop) -> int:
    """The focused window's id as swaymsg (not our code) reads it."""
    tree = json.loads(
        subprocess.run(
            ["swaymsg", "-r", "-t", "get_tree"],
            env=desk.env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    stack = [tree]
    while stack:
        node = stack.pop()
        if node.get("focused"):
            return int(node["id"])
        stack += node.get("nodes", []) + node.get("floating_nodes", [])
    return 0


@_marks
def test_windows_and_activate(
    wl: WaylandBackend, wl_apps: AppRunner, wl_desktop: VirtualDesktop, probe: GtkProbe
) -> None:
    title = f"second-{time.monotonic_ns()}"
    foot = wl_apps(["foot", "--title", title], window=title).window
    assert foot is not None
    assert foot.app == "foot"
    assert foot.pid
    for name, wanted in ((probe.window.title, probe.window.id), (title, foot.id)):
        window = wl.activate(name)
        assert window.id == wanted
        assert window.active
        assert _focused_in_sway(wl_desktop) == wanted
        listed = wl.windows()
        assert listed[0].id == wanted  # the focused window first
        assert wl.window_order() == (wanted, tuple(w.id for w in listed))
    with pytest.raises(Exception, match="no open window matches"):
        wl.activate("no-such-window-anywhere")


@_marks
def test_open_application_by_name_and_again_brings_it_forward(
    wl: WaylandBackend, wl_apps: AppRunner, wl_desktop: VirtualDesktop
) -> None:
    before = {w.id for w in wl.windows()}
    assert wl.open("foot") is None  # started (wl_apps ends it: it carries the marker)
    window = wl.wait_for_window(lambda w: w.id not in before and w.app == "foot", timeout=15)
    assert window.pid is not None
    user = getattr(wl_desktop, "_user", None)  # as root: run as the desktop's own user
    wanted_uid = user.pw_uid if user is not None else os.getuid()
    assert psutil.Process(window.pid).uids().real == wanted_uid
    wl.activate(
        next(w.title for w in wl.windows() if w.id != window.id)
        if len(wl.windows()) > 1
        else window.title
    )
    again = wl.open("foot")
    assert again is not None
    assert again.id == window.id
    assert again.active


@_marks
def test_open_file_uses_its_default_application(
    wl: WaylandBackend, wl_apps: AppRunner, work: Path, wl_desktop: VirtualDesktop
) -> None:
    path = work / f"notes-{time.monotonic_ns()}.txt"
    _written(wl_desktop, path, "opened by its default application\n")
    assert wl.open(str(path)) is None
    window = wl.wait_for_window(path.name, timeout=20)
    assert window.app == "mousepad"  # its Wayland app id
    assert window.pid is not None
    assert psutil.Process(window.pid).name() == "mousepad"


# -- life cycle -------------------------------------------------------------------------------


@_marks
def test_a_terminal_runs_commands_when_the_session_names_no_shell(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A CI job or a service may have no SHELL; as root the desktop's user is a system user
    # whose shell is nologin, and foot would run that and exit 1 at once.
    monkeypatch.delenv("SHELL", raising=False)
    desk = VirtualDesktop(800, 600, home="temp", kind="wayland").start()
    try:
        backend = desktop_backend(desk)
        title = f"shell-{time.monotonic_ns()}"
        desk.launch(["foot", "--title", title])
        backend.wait_for_window(title, timeout=15)
        backend.activate(title)
        out = desk.home / "from-shell.txt"
        backend.type_text("echo ran in $0 > from-shell.txt\n")
        _wait(lambda: out.exists() and out.read_text().startswith("ran in "), what="the file")
        shell = out.read_text().split()[-1]
        assert Path(shell).name not in ("nologin", "false"), shell
        backend.close()
    finally:
        desk.stop()


@_marks
def test_a_wayland_desktop_stops_everything_it_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A machine that names a locale it lacks (CI machines often do): foot refuses to start in
    # it ("setlocale() failed"); the desktop's programs get one the machine has instead.
    monkeypatch.setenv("LANG", "en_ZZ.UTF-8")
    monkeypatch.setenv("LC_CTYPE", "en_ZZ.UTF-8")
    monkeypatch.delenv("LC_ALL", raising=False)
    desk = VirtualDesktop(800, 600, home="temp", kind="wayland").start()
    try:
        assert desk.kind == "wayland"
        assert desk.running
        backend = desktop_backend(desk)
        assert backend.geometry().bounds == (0, 0, 800, 600)
        desk.launch(["foot", "--title", "leftover"])
        backend.wait_for_window("leftover", timeout=15)
        backend.clipboard_set("served by wl-copy")  # a background server, also marked
        backend.close()
        workdir, home = Path(desk.env["XDG_RUNTIME_DIR"]).parent, desk.home
        token = desk.token
        assert marked_processes(token)
    finally:
        desk.stop()
    running = [
        p for p in marked_processes(token) if psutil.Process(p).status() != psutil.STATUS_ZOMBIE
    ]
    assert running == []
    assert not workdir.exists()
    assert not home.exists()
    desk.stop()  # twice is fine


@_marks
def test_two_monitors_on_sway(tmp_path: Path) -> None:
    with VirtualDesktop(monitors="640x480,800x600+640+0", kind="wayland") as desk:
        backend = desktop_backend(desk)
        try:
            monitors = backend.geometry().monitors
            assert {(m.x, m.y, m.width, m.height) for m in monitors} == {
                (0, 0, 640, 480),
                (640, 0, 800, 600),
            }
            whole = backend.capture()
            assert whole.image.size == (1440, 600)
            right = next(i for i, m in enumerate(monitors) if m.x == 640)
            part = backend.capture(right)
            assert part.origin == Point(640, 0)
            assert part.image.size == (800, 600)
            assert part.image.tobytes() == whole.image.crop((640, 0, 1440, 600)).tobytes()
        finally:
            backend.close()


@_marks
def test_doctor_on_a_virtual_wayland_desktop_says_which_backend() -> None:
    env = clean_env()
    for key in ("DISPLAY", "XAUTHORITY", "WAYLAND_DISPLAY", "SWAYSOCK", "OPENAI_API_KEY"):
        env.pop(key, None)
    env["AGENT_S_BACKEND"] = "wayland"
    result = subprocess.run(
        [AGENT_S, "doctor", "--virtual", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Traceback" not in result.stdout + result.stderr
    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    for name in ("tools", "display", "screen", "capture", "input"):
        assert checks[name]["status"] == "ok", checks[name]
    assert "wayland backend" in checks["display"]["detail"]
    assert "sway" in checks["display"]["detail"]
    assert "1280x800" in checks["capture"]["detail"]
    assert "virtual pointer and keyboard" in checks["input"]["detail"]


_HOLD_AND_DIE = """
import sys, time
from agent_s.desktop.wayland import WaylandBackend
from agent_s.desktop.ops import Point
env = dict(arg.split("=", 1) for arg in sys.argv[3:])
backend = WaylandBackend(env)
x, y = int(sys.argv[1]), int(sys.argv[2])
backend.move(Point(x, y))
with backend._holding(["Control_L", "Shift_L"]), backend._button_down("left"):
    backend._wl.roundtrip()
    print("down", flush=True)
    time.sleep(60)
"""


@_marks
def test_keys_and_buttons_of_a_killed_process_do_not_stay_down(
    wl: WaylandBackend, probe: GtkProbe
) -> None:
    """SIGKILL skips every ``finally``: the compositor drops the dead client's virtual
    keyboard and pointer, so nothing it held stays down for the next client."""
    at = probe.point("canvas", 0.3, 0.3)
    env = [f"{k}={v}" for k, v in wl.env.items() if k in ("WAYLAND_DISPLAY", "XDG_RUNTIME_DIR")]
    env.append(f"SWAYSOCK={wl.env['SWAYSOCK']}")
    child = subprocess.Popen(
        [sys.executable, "-c", _HOLD_AND_DIE, str(at.x), str(at.y), *env],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "down"
        events = probe.wait_for(lambda ev: any(e["type"] == "press" for e in ev))
        (press,) = [e for e in events if e["type"] == "press"]
        assert sorted(press["mods"]) == ["ctrl", "shift"]
    finally:
        child.kill()
        child.wait()
    backend_checks.nothing_held_after_a_kill(wl, probe)


@_marks
def test_a_scale_2_output_clicks_in_points_and_captures_in_pixels() -> None:
    """sway at scale 2: the layout is in logical points (what clicks take), screenshots have
    two pixels per point, and the GTK probe (drawn at scale 2) gets the click where asked."""
    with VirtualDesktop(1280, 800, home="temp", kind="wayland") as desk:
        subprocess.run(
            ["swaymsg", "output", "HEADLESS-1", "scale", "2"],
            env=desk.env,
            capture_output=True,
            check=True,
        )
        backend = desktop_backend(desk)
        assert isinstance(backend, WaylandBackend)
        try:
            (monitor,) = backend.geometry().monitors
            assert (monitor.width, monitor.height, monitor.scale) == (640, 400, 2.0)
            shot = backend.capture()
            assert shot.image.size == (1280, 800)
            assert shot.scale == 2.0
            log = desk.home / "probe.jsonl"
            log.touch()
            _own(desk, log)
            desk.launch([sys.executable, str(PROBE), str(log), "--title", "scaled"])
            window = backend.wait_for_window("scaled", timeout=15)
            probe = GtkProbe(log, window, backend)
            probe.wait_for(lambda ev: any(e["type"] == "boxes" for e in ev), timeout=10)
            at = probe.point("canvas", 0.25, 0.25)
            backend.click(at)
            events = probe.wait_for(lambda ev: any(e["type"] == "release" for e in ev))
            (press,) = [e for e in events if e["type"] == "press"]
            assert probe.screen(press) == (at.x, at.y)
        finally:
            backend.close()


@_marks
def test_the_wait_after_a_key_is_not_held_by_another_window(
    wl: WaylandBackend, wl_apps: AppRunner
) -> None:
    """As on X11 (test_settle_screen.py): a counter in foot beside galculator."""
    big = ("-o", "font=monospace:size=40")
    wl_apps(["foot", *big, "--title", "counter", "sh", "-c", COUNT], window="counter")
    wl_apps(["galculator"], window="galculator")
    calc = wl.activate("galculator")
    time.sleep(0.5)  # tiled beside the counter, and drawn at its new size
    before = wl.capture().image
    began = time.monotonic()
    wl.hotkey(["7"])
    until_still(wl, SETTLE_LIMIT)
    waited = time.monotonic() - began
    shown = wl.capture().image
    time.sleep(1.0)
    settled = wl.capture().image
    assert waited < SETTLE_LIMIT / 2  # not held by the counter
    assert_shows(calc, shown, settled, before)  # 0 became 7, and the look after the wait shows it
