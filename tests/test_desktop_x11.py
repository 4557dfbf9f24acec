"""X11Backend on a real virtual desktop: every check looks at a real effect.

The Tk probe (tests/apps/probe_tk.py) reports exactly which button, how many clicks, which
modifiers and which scroll direction arrived; mousepad, xterm and galculator show that text,
keys and the clipboard arrive as real applications see them; files on disk are the proof.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import backend_checks
import pytest
import Xlib.display
from backend_checks import mousepad
from conftest import PROBE, Probe, atspi_texts
from polling import wait_until as _wait

from agent_s.desktop import _xproto, apps
from agent_s.desktop.base import DesktopBackend, WindowInfo
from agent_s.desktop.ops import Point
from agent_s.desktop.virtual import VirtualDesktop
from agent_s.errors import AppNotFoundError, WindowNotFoundError


def _xconnect(desktop: VirtualDesktop) -> Xlib.display.Display:
    return Xlib.display.Display(desktop.display)


def _active_window_id(desktop: VirtualDesktop) -> int:
    """_NET_ACTIVE_WINDOW as xprop (not our code) reads it."""
    out = subprocess.run(
        ["xprop", "-root", "_NET_ACTIVE_WINDOW"],
        env=desktop.env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return int(out.rsplit("#", 1)[1].split(",")[0].strip(), 16)


# -- without a display: finding applications and windows, splitting text ----------------------


def _entry(folder: Path, name: str, body: str) -> None:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("[Desktop Entry]\nType=Application\n" + textwrap.dedent(body))


@pytest.fixture
def app_env(tmp_path: Path) -> dict[str, str]:
    """A HOME, XDG data dirs and PATH of our own, so the machine's applications do not count."""
    home, system, bin_dir = tmp_path / "home", tmp_path / "system", tmp_path / "bin"
    local = home / ".local/share/applications"
    for program in ("foo-edit", "vi-thing", "calcy", "onpath-only", "xterm"):
        exe = bin_dir / program
        exe.parent.mkdir(parents=True, exist_ok=True)
        exe.write_text("#!/bin/sh\n")
        exe.chmod(0o755)
    apps_dir = system / "applications"
    _entry(
        apps_dir,
        "org.example.FooEdit.desktop",
        """\
        Name=Foo Editor
        GenericName=Text Editor
        Keywords=notes;write;
        Categories=Utility;TextEditor;
        Exec=foo-edit --new %U
        """,
    )
    _entry(
        apps_dir,
        "vi-thing.desktop",
        """\
        Name=Vi
        GenericName=Text Editor
        Exec=vi-thing %F
        Terminal=true
        """,
    )
    _entry(
        apps_dir,
        "kde/calcy.desktop",
        """\
        Name=Calcy
        Exec="calcy" --mode "two words" %f --x=%%done
        """,
    )
    _entry(apps_dir, "gone.desktop", "Name=Gone\nExec=foo-edit\nHidden=true\n")
    _entry(apps_dir, "missing.desktop", "Name=Missing\nExec=not-installed-program\n")
    _entry(apps_dir, "tryexec.desktop", "Name=Tried\nExec=foo-edit\nTryExec=/no/such/bin\n")
    # The user's own copy of an id hides the system one.
    _entry(local, "kde-calcy.desktop", "Name=Calcy\nExec=calcy --user-copy\n")
    return {
        "HOME": str(home),
        "XDG_DATA_DIRS": str(system),
        "PATH": str(bin_dir),
    }


@pytest.mark.parametrize(
    ("name", "argv"),
    [
        ("Foo Editor", ["foo-edit", "--new"]),
        ("foo editor", ["foo-edit", "--new"]),
        ("org.example.FooEdit", ["foo-edit", "--new"]),
        ("FooEdit", ["foo-edit", "--new"]),  # the last part of the desktop id
        ("foo-edit", ["foo-edit", "--new"]),  # the program
        ("Text Editor", ["foo-edit", "--new"]),  # GenericName; graphical before terminal
        ("notes", ["foo-edit", "--new"]),  # a keyword
        ("texteditor", ["foo-edit", "--new"]),  # a category
        ("Foo Edtor", ["foo-edit", "--new"]),  # a typo
        ("vi", ["xterm", "-e", "vi-thing"]),  # Terminal=true runs in a terminal
        ("calcy", ["calcy", "--user-copy"]),  # the user's entry wins
    ],
)
def test_resolve_app_by_the_names_a_menu_shows(
    app_env: dict[str, str], name: str, argv: list[str]
) -> None:
    launch = apps.resolve_app(name, app_env)
    assert [Path(launch.argv[0]).name, *launch.argv[1:]] == argv


def test_desktop_entries_skip_hidden_and_uninstalled_and_parse_exec(
    app_env: dict[str, str], tmp_path: Path
) -> None:
    names = sorted(e.name for e in apps.desktop_entries(app_env))
    assert names == ["Calcy", "Foo Editor", "Vi"]
    system = apps.parse_desktop_file(
        tmp_path / "system/applications/kde/calcy.desktop", "kde-calcy.desktop"
    )
    assert system is not None
    assert system.argv(app_env) == ["calcy", "--mode", "two words", "--x=%done"]


def test_resolve_falls_back_to_path_then_names_close_candidates(app_env: dict[str, str]) -> None:
    assert Path(apps.resolve_app("onpath-only", app_env).argv[0]).name == "onpath-only"
    with pytest.raises(AppNotFoundError) as caught:
        apps.resolve_app("Fo Edi", app_env)
    assert caught.value.candidates == ("Foo Editor",)
    assert "Foo Editor" in str(caught.value)


def test_match_windows_ranks_class_then_title_then_fuzzy() -> None:
    def window(wid: int, title: str, app: str) -> WindowInfo:
        return WindowInfo(wid, title, app, None, 0, 0, 10, 10)

    windows = [
        window(1, "report.ods - LibreOffice Calc", "libreoffice-calc"),
        window(2, "galculator", "Galculator"),
        window(3, "notes - Mousepad", "Mousepad"),
    ]
    assert [w.id for w in apps.match_windows("MOUSEPAD", windows, fuzzy=False)] == [3]
    assert [w.id for w in apps.match_windows("calc", windows, fuzzy=False)] == [1]
    assert [w.id for w in apps.match_windows("ula", windows, fuzzy=False)] == [2]
    assert [w.id for w in apps.match_windows("galculator", windows, fuzzy=False)] == [2]
    assert [w.id for w in apps.match_windows("mousepad editor", windows, fuzzy=False)] == [3]
    assert apps.match_windows("mousepd", windows, fuzzy=False) == []
    assert [w.id for w in apps.match_windows("mousepd", windows, fuzzy=True)] == [3]
    assert apps.match_windows("firefox", windows, fuzzy=True) == []


def test_text_chunks_bound_length_and_distinct_unusual_characters() -> None:
    text = "abc" * 10 + "日本語日本語" + "éàü"
    pieces = list(_xproto.chunks(text, 8, 2))
    assert "".join(pieces) == text
    assert all(len(p) <= 8 for p in pieces)
    assert all(len({c for c in p if not c.isascii()}) <= 2 for p in pieces)
    assert _xproto.char_keysym("a") == ord("a")
    assert _xproto.char_keysym("é") == 0xE9
    assert _xproto.char_keysym("✓") == 0x1002713


# -- screen -----------------------------------------------------------------------------------


def test_backend_satisfies_the_protocol(x11: Any) -> None:
    assert isinstance(x11, DesktopBackend)


def test_geometry_and_capture_of_the_whole_screen(x11: Any, probe: Probe) -> None:
    backend_checks.whole_screen(x11, probe)


def test_randr_monitors_and_per_monitor_capture(x11: Any, desktop: VirtualDesktop) -> None:
    def xrandr(*args: str) -> None:
        subprocess.run(["xrandr", *args], env=desktop.env, check=True, capture_output=True)

    xrandr("--setmonitor", "left", "640/169x800/211+0+0", "screen")
    try:
        xrandr("--setmonitor", "right", "640/169x800/211+640+0", "none")
        monitors = _wait(lambda: len(x11.geometry().monitors) == 2 and x11.geometry().monitors)
        assert {(m.name, m.x, m.y, m.width, m.height) for m in monitors} == {
            ("left", 0, 0, 640, 800),
            ("right", 640, 0, 640, 800),
        }
        right = next(i for i, m in enumerate(monitors) if m.name == "right")
        whole, part = x11.capture(), x11.capture(right)
        assert part.origin == Point(640, 0)
        assert part.image.size == (640, 800)
        assert part.image.tobytes() == whole.image.crop((640, 0, 1280, 800)).tobytes()
        with pytest.raises(ValueError, match="does not exist"):
            x11.capture(5)
    finally:
        subprocess.run(["xrandr", "--delmonitor", "right"], env=desktop.env, check=False)
        subprocess.run(["xrandr", "--delmonitor", "left"], env=desktop.env, check=False)
    assert x11.geometry().bounds == (0, 0, 1280, 800)


# -- mouse ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("button", "number"), [("left", 1), ("middle", 2), ("right", 3)])
def test_click_buttons_and_counts(x11: Any, probe: Probe, button: str, number: int) -> None:
    backend_checks.click_buttons_and_counts(x11, probe, button, number)


def test_click_with_held_modifiers(x11: Any, probe: Probe) -> None:
    backend_checks.click_with_held_modifiers(x11, probe)


def test_move_puts_the_pointer_there(x11: Any, desktop: VirtualDesktop) -> None:
    display = _xconnect(desktop)
    try:
        for target in (Point(10, 20), Point(1000, 700)):
            x11.move(target)
            pointer = display.screen().root.query_pointer()
            assert (pointer.root_x, pointer.root_y) == (target.x, target.y)
            assert x11.pointer() == target
    finally:
        display.close()


def test_points_off_the_screen_are_refused_not_clamped(x11: Any, probe: Probe) -> None:
    backend_checks.points_off_the_screen_are_refused(x11, probe)


def test_drag_presses_at_start_moves_and_releases_at_end(x11: Any, probe: Probe) -> None:
    backend_checks.drag_presses_moves_and_releases(x11, probe)


def test_drag_selects_text_in_mousepad(
    x11: Any, apps: Any, desktop: VirtualDesktop, tmp_path: Path
) -> None:
    content = "hello brave new world"
    path = tmp_path / "drag.txt"
    path.write_text(content)
    x11.activate(mousepad(apps, path).title)
    # Where each character is on screen, from the accessibility tree.
    texts = _wait(
        lambda: [t for t in atspi_texts(desktop, "mousepad") if t["text"] == content],
        what="mousepad's text in the accessibility tree",
    )
    chars = texts[0]["chars"]
    first, last = chars[6], chars[10]  # "brave"
    start = Point(first[0] + 1, first[1] + first[3] // 2)
    end = Point(last[0] + last[2] - 1, last[1] + last[3] // 2)
    x11.drag(start, end)

    def primary() -> str:
        return subprocess.run(
            ["xclip", "-o", "-selection", "primary"],
            env=desktop.env,
            capture_output=True,
            text=True,
            check=False,
        ).stdout

    _wait(lambda: primary() == "brave", what="the dragged selection")
    assert _copy(x11) == "brave"


def test_scroll_vertical_and_horizontal(x11: Any, probe: Any) -> None:
    at = probe.point("canvas")
    x11.scroll(at, 3)
    x11.scroll(at, -2)
    x11.scroll(at, 2, horizontal=True)
    x11.scroll(at, -1, horizontal=True)
    events = probe.wait_for(lambda ev: len([e for e in ev if e["type"] == "scroll"]) >= 8)
    directions = [e["direction"] for e in events if e["type"] == "scroll"]
    assert directions == ["up"] * 3 + ["down"] * 2 + ["right"] * 2 + ["left"]
    # Horizontal came from wheel buttons 6/7, not from a Shift key held over a vertical wheel.
    assert not [e for e in events if e["type"] in ("key", "keyup")]
    assert {(e["x"], e["y"]) for e in events if e["type"] == "scroll"} == {(at.x, at.y)}


def test_keys_and_buttons_are_released_when_an_action_fails(
    x11: Any, probe: Any, desktop: VirtualDesktop
) -> None:
    import pyautogui

    display = _xconnect(desktop)
    try:
        # pyautogui's fail-safe fires when the pointer sits in a screen corner: the click
        # fails after Shift went down, the drag after the button went down.
        x11.move(Point(0, 0))
        with pytest.raises(pyautogui.FailSafeException):
            x11.click(probe.point("canvas"), hold_keys=["shift", "ctrl"])
        assert not any(display.query_keymap()), "a key is still held down"
        with pytest.raises(pyautogui.FailSafeException):
            x11.drag(probe.point("canvas"), Point(0, 0), hold_keys=["alt"])
        assert not any(display.query_keymap()), "a key is still held down"
        assert display.screen().root.query_pointer().mask & 0x1F00 == 0, "a button is down"
        events = probe.events()
        pressed = [e["keysym"] for e in events if e["type"] == "key"]
        assert pressed == ["Shift_L", "Control_L", "Alt_L"]
        assert sorted(e["keysym"] for e in events if e["type"] == "keyup") == sorted(pressed)
    finally:
        # Out of the corner without pyautogui, whose fail-safe would refuse to move.
        subprocess.run(["xdotool", "mousemove", "640", "400"], env=desktop.env, check=True)
        display.close()


# -- keyboard ---------------------------------------------------------------------------------


def test_hold_and_press_and_hotkey_reach_the_focused_widget(x11: Any, probe: Probe) -> None:
    # Tk entry: ctrl+a moves to the line start
    backend_checks.hold_and_press_and_hotkey(x11, probe, "<abXY")


def test_type_text_in_chunks(x11: Any, probe: Probe, monkeypatch: pytest.MonkeyPatch) -> None:
    backend_checks.type_text_in_chunks(x11, probe, monkeypatch)


def test_type_text_with_more_distinct_characters_than_spare_keycodes(
    x11: Any, probe: Any, desktop: VirtualDesktop
) -> None:
    display = _xconnect(desktop)
    try:
        first = display.display.info.min_keycode
        keymap = display.get_keyboard_mapping(first, display.display.info.max_keycode - first + 1)
        spare = sum(1 for syms in keymap if not any(syms))
    finally:
        display.close()
    # More distinct non-ASCII characters than the keyboard map has room for at once: bindings
    # are reused, least recently used first, between chunks.
    text = "".join(chr(0x4E00 + 7 * i) for i in range(spare + 25)) + " ÀÉÎÕÜ ñ ✓ €"
    x11.click(probe.point("entry"))
    x11.type_text(text)
    probe.wait_for(lambda ev: any(e.get("text") == text for e in ev), timeout=20)


def test_type_text_into_mousepad_saves_exactly_that_text(
    x11: Any, apps: Any, tmp_path: Path
) -> None:
    path = tmp_path / "typed.txt"
    path.write_text("")
    backend_checks.type_into_mousepad(x11, apps, path)


def test_type_text_into_xterm_gives_the_same_bytes(x11: Any, apps: Any, tmp_path: Path) -> None:
    xterm = ["xterm", "-u8", "-T"]
    out = tmp_path / "from_xterm.txt"
    backend_checks.type_into_terminal(x11, apps, lambda title: [*xterm, title, "-e"], out)


def test_hotkeys_select_copy_and_save_in_mousepad(x11: Any, apps: Any, tmp_path: Path) -> None:
    path = tmp_path / "keys.txt"
    path.write_text("first line\nsecond line")
    backend_checks.hotkeys_in_mousepad(x11, apps, path)


# -- clipboard --------------------------------------------------------------------------------


def test_clipboard_round_trip_with_unicode(x11: Any, apps: Any) -> None:
    backend_checks.clipboard_round_trip(x11)


def test_clipboard_feeds_a_real_paste(x11: Any, probe: Probe) -> None:
    backend_checks.clipboard_feeds_a_paste(x11, probe)


# -- windows ----------------------------------------------------------------------------------


def test_windows_and_activate(x11: Any, apps: Any, desktop: VirtualDesktop) -> None:
    calc = apps(["galculator"], window="galculator").window
    term_title = f"term-{time.monotonic_ns()}"
    term = apps(["xterm", "-T", term_title], window=term_title).window
    listed = {w.id: w for w in x11.windows()}
    assert listed[calc.id].app == "Galculator"
    assert listed[calc.id].pid == calc.pid
    assert listed[term.id].app == "XTerm"
    assert listed[term.id].title == term_title
    assert listed[calc.id].width > 50
    assert listed[calc.id].height > 50
    assert sum(w.active for w in listed.values()) <= 1

    got = x11.activate("galculator")  # exact class, any case
    assert got.id == calc.id
    assert got.active
    assert _active_window_id(desktop) == calc.id
    assert x11.activate("XTERM").id == term.id  # class, upper case
    assert _active_window_id(desktop) == term.id
    assert x11.activate("galculater").id == calc.id  # fuzzy
    assert x11.activate(term_title[:8]).id == term.id  # part of the title
    assert _active_window_id(desktop) == term.id
    # window_order is windows() in brief: the active id and the ids front-most first
    assert x11.window_order() == (term.id, tuple(w.id for w in x11.windows()))
    assert x11.window_order()[1][0] == term.id

    with pytest.raises(WindowNotFoundError) as caught:
        x11.activate("firefox")
    assert "Galculator: galculator" in caught.value.open_windows
    assert "galculator" in str(caught.value)


# -- opening applications and files -----------------------------------------------------------


def _new_window(x11: Any, before: set[int], name: str) -> Any:
    return x11.wait_for_window(lambda w: w.id not in before and name in w.app.casefold(), 15)


def test_open_application_by_name_and_by_desktop_entry_name(x11: Any, apps: Any) -> None:
    before = {w.id for w in x11.windows()}
    x11.open("galculator")
    _new_window(x11, before, "galculator")
    before = {w.id for w in x11.windows()}
    x11.open("Text Editor")  # mousepad's GenericName
    _new_window(x11, before, "mousepad")


def test_open_brings_an_application_already_open_to_the_front(x11: Any, apps: Any) -> None:
    """A second ``open`` of an application with a window does not start another copy: its
    window comes to the front and is returned (by class, by desktop-entry name)."""
    before = {w.id for w in x11.windows()}
    assert x11.open("galculator") is None  # started
    calc = _new_window(x11, before, "galculator")
    apps(["xterm", "-title", "open-front-xterm"], window="open-front-xterm")
    x11.activate("open-front-xterm")
    raised = x11.open("Galculator")
    assert raised is not None
    assert raised.id == calc.id
    assert raised.active
    assert [w.id for w in x11.windows() if w.app == "Galculator"] == [calc.id]
    assert next(w for w in x11.windows() if w.active).id == calc.id


def test_open_file_uses_its_default_application(
    x11: Any, apps: Any, desktop: VirtualDesktop
) -> None:
    path = desktop.home / "notes for open.txt"
    path.write_text("open me")
    try:
        x11.open("~/notes for open.txt")
        window = x11.wait_for_window(lambda w: "notes for open.txt" in w.title, 15)
        assert window.app == "Mousepad"
    finally:
        path.unlink()


def test_open_unknown_application_names_close_candidates(x11: Any) -> None:
    with pytest.raises(AppNotFoundError) as caught:
        x11.open("galcalc")
    assert "Galculator" in caught.value.candidates
    with pytest.raises(AppNotFoundError):
        x11.open("/no/such/file.txt")


def _copy(x11: Any) -> str:
    """Press ctrl+c and read the clipboard (the app copies when it gets to the key)."""
    x11.hotkey(["ctrl", "c"])
    time.sleep(0.05)
    return x11.clipboard_get().strip()


def test_galculator_computes_what_the_keys_say(
    x11: Any, apps: Any, desktop: VirtualDesktop
) -> None:
    apps(["galculator"], window="galculator")
    x11.activate("galculator")
    x11.type_text("12+30")
    x11.hotkey(["enter"])
    _wait(lambda: _copy(x11) == "42", what="galculator's result")
    x11.hotkey(["escape"])
    x11.type_text("7*6-1=")
    _wait(lambda: _copy(x11) == "41", what="galculator's second result")
    # The display, read without the clipboard: the accessibility tree.
    _wait(
        lambda: any(t["text"].strip() == "41" for t in atspi_texts(desktop, "galculator")),
        what="galculator's display in the accessibility tree",
    )


# -- errors when there is no display ----------------------------------------------------------

_MAKE_BACKEND = textwrap.dedent(
    """
    import sys
    from agent_s.desktop.x11 import X11Backend
    from agent_s.errors import DisplayUnavailableError
    try:
        X11Backend()
    except DisplayUnavailableError as err:
        print("DisplayUnavailableError:", err)
        sys.exit(3)
    """
)


def _free_display_number() -> int:
    number = 180
    while Path(f"/tmp/.X11-unix/X{number}").exists() or Path(f"/tmp/.X{number}-lock").exists():
        number += 1
    return number


@pytest.mark.parametrize("display", [None, "dead"])
def test_no_display_gives_a_clear_error_not_a_key_error(display: str | None) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "XAUTHORITY")}
    if display == "dead":
        env["DISPLAY"] = f":{_free_display_number()}"
    result = subprocess.run(
        [sys.executable, "-c", _MAKE_BACKEND], env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 3, result.stdout + result.stderr
    assert "KeyError" not in result.stdout + result.stderr
    message = result.stdout
    assert "DISPLAY" in message if display is None else env["DISPLAY"] in message


_USE_AFTER_DEATH = textwrap.dedent(
    """
    import sys
    from agent_s.desktop.ops import Point
    from agent_s.desktop.x11 import X11Backend
    from agent_s.errors import DisplayUnavailableError
    backend = X11Backend()
    print("ready", flush=True)
    sys.stdin.readline()
    calls = {
        "windows": backend.windows,
        "capture": backend.capture,
        "clipboard_get": backend.clipboard_get,
        "hotkey": lambda: backend.hotkey(["a"]),
        "type_text": lambda: backend.type_text("hi"),
    }
    for name, call in calls.items():
        try:
            call()
            print(name, "no error")
        except DisplayUnavailableError:
            print(name, "DisplayUnavailableError")
        except Exception as err:
            print(name, type(err).__name__, err)
    """
)


def test_a_display_that_goes_away_gives_display_unavailable(desktop: VirtualDesktop) -> None:
    other = VirtualDesktop(320, 240, window_manager=False, accessibility=False).start()
    # Not launched on that desktop (stopping it would end this process too): just pointed at it.
    env = {k: v for k, v in other.env.items() if k != "AGENT_S_VIRTUAL_DESKTOP"}
    proc = subprocess.Popen(
        [sys.executable, "-c", _USE_AFTER_DEATH],
        env=env,
        text=True,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
    finally:
        other.stop()
    out, err = proc.communicate("go\n", timeout=60)
    assert out.splitlines() == [
        f"{name} DisplayUnavailableError"
        for name in ("windows", "capture", "clipboard_get", "hotkey", "type_text")
    ], out + err


def test_one_process_drives_two_displays_each_with_its_own_input(
    x11: Any, probe: Any, tmp_path: Path
) -> None:
    """pyautogui connects once per process, at import (here: to the session desktop); each
    backend lends it its own connection while it acts. So two backends on two displays, alive
    together in one process (an MCP server's screen and a run's virtual desktop), each click
    and type on their own display, however their calls interleave."""
    from agent_s.desktop.x11 import X11Backend

    with VirtualDesktop(800, 600, home="temp", accessibility=False) as other:
        second = X11Backend(other.display, env=other.env)
        try:
            log = tmp_path / "other.jsonl"
            other.launch([sys.executable, str(PROBE), str(log), "--title", "other-probe"])
            window = second.wait_for_window("other-probe", timeout=20)
            there = Probe(log, window, second)
            there.wait_for(lambda events: any(e["type"] == "boxes" for e in events), 10)
            second.activate("other-probe")
            here_at, there_at = probe.point("entry", 0.3), there.point("entry", 0.6)
            x11.click(here_at)
            second.click(there_at)
            x11.type_text("typed on the first")
            second.type_text("typed on the second")
            for at, on in ((here_at, probe), (there_at, there)):
                pressed = on.wait_for(lambda ev: any(e["type"] == "entry_press" for e in ev))
                press = next(e for e in pressed if e["type"] == "entry_press")
                assert (press["x"], press["y"]) == (at.x, at.y), pressed
            for text, on in (("typed on the first", probe), ("typed on the second", there)):
                on.wait_for(lambda events, t=text: {"type": "entry", "text": t} in _texts(events))
            assert (x11.pointer(), second.pointer()) == (here_at, there_at)
        finally:
            second.close()


def _texts(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"type": e["type"], "text": e["text"]} for e in events if e["type"] == "entry"]


_REBIND = """
from agent_s.desktop.virtual import VirtualDesktop
from agent_s.desktop.x11 import X11Backend
from agent_s.desktop.ops import Point
with VirtualDesktop(800, 600, home="temp") as first:
    name = first.display
    backend = X11Backend(first.display, env=first.env)
    backend.click(Point(10, 10))
    backend.close()
with VirtualDesktop(800, 600, home="temp") as second:
    if second.display != name:
        raise SystemExit(3)  # another display number: nothing to show
    backend = X11Backend(second.display, env=second.env)
    backend.click(Point(20, 20))
    at = backend.pointer()
    print(at.x, at.y)
    backend.close()
"""


@pytest.mark.desktop
def test_a_new_server_under_the_name_of_an_ended_one_is_driven() -> None:
    """pyautogui connects once per process: when a desktop ends and the next one gets its
    display number, the new backend's mouse goes through its own connection, not the dead one
    pyautogui made at import (python-xlib spun there for ever, seen in a loaded whole-suite
    run)."""
    done = subprocess.run(
        [sys.executable, "-c", _REBIND], capture_output=True, text=True, timeout=60, check=False
    )
    if done.returncode == 3:
        pytest.skip("the second desktop got another display number")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "20 20"
