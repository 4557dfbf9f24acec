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

import psutil
import pytest
from conftest import AppRunner
from polling import wait_until as _wait

from agent_s.desktop import wayland as wayland_module
from agent_s.desktop.base import DesktopBackend, Screenshot, WindowInfo
from agent_s.desktop.choose import choose_backend, desktop_backend, open_backend
from agent_s.desktop.ops import Point
from agent_s.desktop.virtual import VirtualDesktop, marked_processes
from agent_s.desktop.wayland import WaylandBackend
from agent_s.errors import DisplayUnavailableError

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

# Typed literally everywhere: markup, unicode (Latin, symbols, CJK), shell metacharacters,
# both quotes, a backslash and a second line (as in test_desktop_x11.py).
TRICKY = (
    "a<b>c é ✓ 日本 $HOME; rm -rf x | & && \"dq\" 'sq' `bt` \\n (p) {b} [s] * ? ~ # %\nline 2 ~ end"
)


# -- which backend, and why: no desktop needed ---------------------------------------------------


def test_gnome_and_kde_wayland_sessions_name_the_missing_portal(tmp_path: Path) -> None:
    for desktop, family, session in (
        ("ubuntu:GNOME", "GNOME", "GNOME on Xorg"),
        ("KDE", "KDE", "Plasma (X11)"),
    ):
        env = {
            "XDG_SESSION_TYPE": "wayland",
            "WAYLAND_DISPLAY": "wayland-0",
            "XDG_RUNTIME_DIR": str(tmp_path),  # no sway socket in it
            "XDG_CURRENT_DESKTOP": desktop,
            "DISPLAY": ":0",  # XWayland is there, but sees no native window
        }
        choice = choose_backend(env)
        assert choice.kind is None
        assert f"{family} Wayland session" in choice.reason
        assert "remote-desktop portal" in choice.reason
        assert session in choice.fix
        assert "--virtual" in choice.fix
        with pytest.raises(DisplayUnavailableError, match="remote-desktop portal"):
            open_backend(env)
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
    assert "x11 or wayland" in bad.fix


def test_virtual_desktop_kind_is_checked() -> None:
    with pytest.raises(ValueError, match="'x11' or 'wayland'"):
        VirtualDesktop(kind="mir")  # type: ignore[arg-type]


# -- the desktop ------------------------------------------------------------------------------


def _own(desk: VirtualDesktop, path: Path) -> Path:
    """A file or folder the desktop's programs (its user, under root) may write."""
    user = getattr(desk, "_user", None)
    if user is not None:
        os.chown(path, user.pw_uid, user.pw_gid)
    return path


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
    before = {w.id for w in wl.windows()}
    runner = AppRunner(wl_desktop, wl)
    try:
        yield runner
    finally:
        runner.close()
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline and {w.id for w in wl.windows()} - before:
            time.sleep(0.05)


class GtkProbe:
    """The GTK probe window and its events; positions converted to screen points."""

    def __init__(self, log: Path, window: WindowInfo, backend: WaylandBackend) -> None:
        self.log, self.window, self.backend = log, window, backend
        self.mark = 0

    def all_events(self) -> list[dict[str, Any]]:
        lines = self.log.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]

    def events(self) -> list[dict[str, Any]]:
        return self.all_events()[self.mark :]

    def reset(self) -> None:
        self.mark = len(self.all_events())

    def wait_for(
        self, predicate: Callable[[list[dict[str, Any]]], bool], timeout: float = 5.0
    ) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while True:
            events = self.events()
            if predicate(events):
                return events
            if time.monotonic() > deadline:
                raise AssertionError(f"the probe did not see the expected events; got {events}")
            time.sleep(0.03)

    def origin(self) -> Point:
        """Where sway shows the window's content now (it may have been re-tiled)."""
        window = next(w for w in self.backend.windows() if w.id == self.window.id)
        return Point(window.x, window.y)

    def point(self, widget: str, fx: float = 0.5, fy: float = 0.5) -> Point:
        boxes = [e for e in self.all_events() if e["type"] == "boxes"][-1]
        x, y, w, h = boxes[widget]
        origin = self.origin()
        return Point(origin.x + x + int(w * fx), origin.y + y + int(h * fy))

    def screen(self, event: dict[str, Any]) -> tuple[int, int]:
        origin = self.origin()
        return origin.x + event["x"], origin.y + event["y"]


@pytest.fixture
def probe(wl_apps: AppRunner, wl: WaylandBackend, wl_desktop: VirtualDesktop) -> GtkProbe:
    log = wl_desktop.home / f"probe-{time.monotonic_ns()}.jsonl"
    log.touch()
    _own(wl_desktop, log)
    title = f"probe-{time.monotonic_ns()}"
    launched = wl_apps([sys.executable, str(PROBE), str(log), "--title", title], window=title)
    assert launched.window is not None
    result = GtkProbe(log, launched.window, wl)
    size = (launched.window.width, launched.window.height)

    def settled(events: list[dict[str, Any]]) -> bool:  # boxes for the window's tiled size
        boxes = [e for e in events if e["type"] == "boxes"]
        return bool(boxes) and tuple(boxes[-1]["window"][2:]) == size

    result.wait_for(settled, timeout=10)
    wl.activate(title)
    result.reset()
    return result


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
    geometry = wl.geometry()
    assert len(geometry.monitors) == 1
    assert geometry.bounds == (0, 0, 1280, 800)
    assert geometry.monitors[0].scale == 1.0
    shot = wl.capture()
    assert isinstance(shot, Screenshot)
    assert shot.image.mode == "RGB"
    assert shot.image.size == (1280, 800)
    assert shot.origin == Point(0, 0)
    assert shot.scale == 1.0
    spot = probe.point("canvas", 0.1, 0.1)  # the probe's canvas is white
    assert shot.image.getpixel((spot.x, spot.y)) == (255, 255, 255)
    part = wl.capture(0)  # the one output: the same pixels (the entry's caret may blink)
    assert part.origin == Point(0, 0)
    assert part.image.size == shot.image.size
    x, y, w, h = [e for e in probe.all_events() if e["type"] == "boxes"][-1]["canvas"]
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
    for clicks in (1, 2, 3):
        at = probe.point("canvas", 0.2 * clicks, 0.3)
        probe.reset()
        wl.click(at, button=button, clicks=clicks)  # type: ignore[arg-type]
        events = probe.wait_for(
            lambda ev, n=clicks: len([e for e in ev if e["type"] == "release"]) >= n
        )
        presses = [e for e in events if e["type"] == "press"]
        assert [p["count"] for p in presses] == list(range(1, clicks + 1))
        assert {(p["button"], *probe.screen(p)) for p in presses} == {(number, at.x, at.y)}
        assert all(p["mods"] == [] for p in presses)
        assert wl.pointer() == at


@_marks
def test_click_with_held_modifiers(wl: WaylandBackend, probe: GtkProbe) -> None:
    at = probe.point("canvas", 0.5, 0.7)
    wl.click(at, hold_keys=["ctrl"])
    wl.click(probe.point("canvas", 0.2, 0.7), button="right", hold_keys=["shift", "ctrl"])
    events = probe.wait_for(lambda ev: len([e for e in ev if e["type"] == "release"]) >= 2)
    presses = [e for e in events if e["type"] == "press"]
    assert [(p["button"], sorted(p["mods"])) for p in presses] == [
        (1, ["ctrl"]),
        (3, ["ctrl", "shift"]),
    ]
    probe.reset()  # the modifiers were let go: a later plain click carries none
    wl.click(at)
    (press,) = [
        e
        for e in probe.wait_for(lambda ev: any(e["type"] == "press" for e in ev))
        if e["type"] == "press"
    ]
    assert press["mods"] == []
    with pytest.raises(ValueError, match="unknown key"):  # refused before anything is pressed
        wl.click(at, hold_keys=["é"])


@_marks
def test_points_off_the_screen_are_refused_not_clamped(wl: WaylandBackend, probe: GtkProbe) -> None:
    wl.move(Point(640, 400))
    probe.reset()
    for bad in (Point(1280, 10), Point(10, 800), Point(-1, 5)):
        with pytest.raises(ValueError, match="off the screen"):
            wl.click(bad)
        with pytest.raises(ValueError, match="off the screen"):
            wl.drag(Point(640, 400), bad)
    assert wl.pointer() == Point(640, 400)
    time.sleep(0.2)
    assert not [e for e in probe.events() if e["type"] in ("press", "release")]


@_marks
def test_drag_presses_at_start_moves_and_releases_at_end(
    wl: WaylandBackend, probe: GtkProbe
) -> None:
    start, end = probe.point("canvas", 0.1, 0.2), probe.point("canvas", 0.8, 0.9)
    wl.drag(start, end)
    events = probe.wait_for(lambda ev: any(e["type"] == "release" for e in ev))
    kinds = [e["type"] for e in events]
    press, release = events[kinds.index("press")], events[kinds.index("release")]
    assert (press["button"], *probe.screen(press)) == (1, start.x, start.y)
    assert (release["button"], *probe.screen(release)) == (1, end.x, end.y)
    motion = [e for e in events if e["type"] == "drag"]
    assert len(motion) >= 3, "apps need to see the pointer move while the button is down"
    xs = [m["x"] for m in motion]
    assert xs == sorted(xs)
    assert probe.screen(motion[-1]) == (end.x, end.y)


@_marks
def test_scroll_vertical_and_horizontal(wl: WaylandBackend, probe: GtkProbe) -> None:
    at = probe.point("canvas")
    wl.scroll(at, 3)
    wl.scroll(at, -2)
    events = probe.wait_for(lambda ev: len([e for e in ev if e["type"] == "scroll"]) >= 5)
    directions = [e["direction"] for e in events if e["type"] == "scroll"]
    assert directions == ["up"] * 3 + ["down"] * 2
    assert {probe.screen(e) for e in events if e["type"] == "scroll"} == {(at.x, at.y)}
    probe.reset()
    wl.scroll(at, 2, horizontal=True)
    wl.scroll(at, -1, horizontal=True)
    events = probe.wait_for(lambda ev: len([e for e in ev if e["type"] == "scroll"]) >= 3)
    sideways = [e["direction"] for e in events if e["type"] == "scroll"]
    # Horizontal notches arrive as horizontal scrolling, two one way and one the other (GTK 3
    # names a positive horizontal wheel value "left", the protocol calls it right).
    assert set(sideways) == {"left", "right"}
    assert sideways[0] == sideways[1] != sideways[2]
    assert not [e for e in events if e["type"] in ("key", "keyup")]


# -- keyboard ---------------------------------------------------------------------------------


@_marks
def test_hold_and_press_and_hotkey_reach_the_focused_widget(
    wl: WaylandBackend, probe: GtkProbe
) -> None:
    wl.click(probe.point("entry"))
    wl.type_text("ab")
    wl.hold_and_press(["shift"], ["x", "y"])
    probe.wait_for(lambda ev: any(e.get("text") == "abXY" for e in ev))
    wl.hotkey(["ctrl", "a"])  # GTK entry: ctrl+a selects everything, so "<" replaces it
    wl.type_text("<")
    events = probe.wait_for(lambda ev: any(e.get("text") == "<" for e in ev))
    keys = [(e["keysym"], e["mods"]) for e in events if e["type"] == "key"]
    assert ("X", ["shift"]) in keys
    assert ("Y", ["shift"]) in keys
    assert ("a", ["ctrl"]) in keys


@_marks
def test_type_text_in_chunks(
    wl: WaylandBackend, probe: GtkProbe, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(wayland_module, "TYPE_CHUNK", 4)
    wl.click(probe.point("entry"))
    text = "chunked: é✓日本 <tag> 'q' \"dq\" $x"
    wl.type_text(text)
    probe.wait_for(lambda ev: any(e.get("text") == text for e in ev))


@_marks
def test_type_text_refuses_control_characters(wl: WaylandBackend) -> None:
    with pytest.raises(ValueError, match="control characters"):
        wl.type_text("a\x1bb")


def _mousepad(wl_apps: AppRunner, path: Path) -> WindowInfo:
    launched = wl_apps(["mousepad", str(path)], window=path.name)
    assert launched.window is not None
    return launched.window


@_marks
def test_type_text_into_mousepad_saves_exactly_that_text(
    wl: WaylandBackend, wl_apps: AppRunner, work: Path, wl_desktop: VirtualDesktop
) -> None:
    path = work / "typed.txt"
    path.write_text("")
    _own(wl_desktop, path)
    window = _mousepad(wl_apps, path)
    wl.activate(window.title)
    wl.type_text(TRICKY)
    wl.hotkey(["ctrl", "s"])
    _wait(lambda: path.read_text(encoding="utf-8") == TRICKY, what=f"{path} to hold the text")


@_marks
def test_type_text_into_foot_gives_the_same_bytes(
    wl: WaylandBackend, wl_apps: AppRunner, work: Path
) -> None:
    out = work / "from_foot.txt"
    title = f"typing-{time.monotonic_ns()}"
    wl_apps(
        ["foot", "--title", title, "sh", "-c", 'cat > "$0"', str(out)],
        window=title,
        env={"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"},
    )
    wl.activate(title)
    wl.type_text(TRICKY)
    wl.hotkey(["ctrl", "d"])  # ends the unfinished last line
    wl.hotkey(["ctrl", "d"])  # end of input: cat exits
    _wait(lambda: out.exists() and out.read_bytes() == TRICKY.encode(), what="foot's file")


@_marks
def test_hotkeys_select_copy_and_save_in_mousepad(
    wl: WaylandBackend, wl_apps: AppRunner, work: Path, wl_desktop: VirtualDesktop
) -> None:
    path = work / "keys.txt"
    path.write_text("first line\nsecond line")
    _own(wl_desktop, path)
    window = _mousepad(wl_apps, path)
    wl.activate(window.title)
    wl.hotkey(["ctrl", "a"])
    wl.hotkey(["ctrl", "c"])
    _wait(lambda: wl.clipboard_get() == "first line\nsecond line", what="the clipboard")
    wl.hotkey(["ctrl", "end"])
    wl.hold_and_press(["shift"], ["left"] * 4)
    wl.hotkey(["ctrl", "c"])
    _wait(lambda: wl.clipboard_get() == "line", what="the selected word")
    wl.type_text("LINE!")
    wl.hotkey(["ctrl", "s"])
    _wait(lambda: path.read_text() == "first line\nsecond LINE!", what="the saved file")


# -- clipboard --------------------------------------------------------------------------------


@_marks
def test_clipboard_round_trip_with_unicode(wl: WaylandBackend) -> None:
    for text in ("plain", TRICKY, "tabs\tand\nnewlines\n", "日本語 ✓ é"):
        wl.clipboard_set(text)
        assert wl.clipboard_get() == text
    wl.clipboard_set("")
    assert wl.clipboard_get() == ""


@_marks
def test_clipboard_feeds_a_real_paste(wl: WaylandBackend, probe: GtkProbe) -> None:
    wl.clipboard_set("pasted ✓ <ok>")
    wl.click(probe.point("entry"))
    wl.hotkey(["ctrl", "v"])
    probe.wait_for(lambda ev: any(e.get("text") == "pasted ✓ <ok>" for e in ev))


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
    path.write_text("opened by its default application\n")
    _own(wl_desktop, path)
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
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_S_")}
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


def test_doctor_in_a_gnome_wayland_session_names_the_portal(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_S_")}
    env.update(
        XDG_SESSION_TYPE="wayland",
        WAYLAND_DISPLAY="wayland-0",
        XDG_RUNTIME_DIR=str(tmp_path),
        XDG_CURRENT_DESKTOP="GNOME",
    )
    env.pop("DISPLAY", None)
    env.pop("SWAYSOCK", None)
    result = subprocess.run(
        [AGENT_S, "doctor", "--json"], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stdout + result.stderr
    display = {c["name"]: c for c in json.loads(result.stdout)["checks"]}["display"]
    assert display["status"] == "fail"
    assert "GNOME Wayland session" in display["detail"]
    assert "remote-desktop portal" in display["detail"]
    assert "GNOME on Xorg" in display["fix"]


_HOLD_AND_DIE = """
import sys, time
from agent_s.desktop.wayland import WaylandBackend
from agent_s.desktop.ops import Point
env = dict(arg.split("=", 1) for arg in sys.argv[3:])
backend = WaylandBackend(env)
x, y = int(sys.argv[1]), int(sys.argv[2])
backend.move(Point(x, y))
with backend._holding(["Control_L", "Shift_L"]), backend._button_down(0x110):
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
    probe.reset()
    wl.click(probe.point("canvas", 0.6, 0.6))
    events = probe.wait_for(lambda ev: any(e["type"] == "release" for e in ev))
    presses = [e for e in events if e["type"] == "press"]
    assert [(p["button"], p["mods"], p["count"]) for p in presses] == [(1, [], 1)]
    wl.click(probe.point("entry"))
    wl.hold_and_press([], ["o"])  # our own keyboard: no modifier left over either
    wl.type_text("k")
    events = probe.wait_for(lambda ev: any(e.get("text") == "ok" for e in ev))
    assert [e["mods"] for e in events if e["type"] == "key" and e["keysym"] == "o"] == [[]]


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
