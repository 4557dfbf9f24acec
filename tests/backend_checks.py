"""What every desktop backend must do, checked the same way on each.

``test_desktop_x11.py`` runs these on ``X11Backend`` with the Tk probe, ``test_wayland.py`` on
``WaylandBackend`` with the GTK probe (both probes log the same events; ``conftest.Probe``
reads them, in screen points). A new backend's tests call them too; what a backend does its
own way (scrolling, windows, its tools) stays in its own test file.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import AppRunner, Probe
from polling import wait_until as _wait

from agent_s.desktop.base import Screenshot
from agent_s.desktop.common import BackendBase
from agent_s.desktop.ops import Point

# Typed literally everywhere: markup, unicode (Latin, symbols, CJK), shell metacharacters,
# both quotes, a backslash and a second line.
TRICKY = (
    "a<b>c é ✓ 日本 $HOME; rm -rf x | & && \"dq\" 'sq' `bt` \\n (p) {b} [s] * ? ~ # %\nline 2 ~ end"
)


def _releases(events: list[dict[str, Any]]) -> int:
    return len([e for e in events if e["type"] == "release"])


def whole_screen(backend: BackendBase, probe: Probe) -> Screenshot:
    """One 1280x800 monitor, captured whole at scale 1; the probe's white canvas shows."""
    geometry = backend.geometry()
    assert len(geometry.monitors) == 1
    assert geometry.bounds == (0, 0, 1280, 800)
    assert geometry.monitors[0].scale == 1.0
    shot = backend.capture()
    assert isinstance(shot, Screenshot)
    assert shot.image.mode == "RGB"
    assert shot.image.size == (1280, 800)
    assert shot.origin == Point(0, 0)
    assert shot.scale == 1.0
    # The probe's canvas is white; a point in it (away from its label) is white on screen.
    spot = probe.point("canvas", 0.1, 0.1)
    assert shot.image.getpixel((spot.x, spot.y)) == (255, 255, 255)
    return shot


def click_buttons_and_counts(backend: BackendBase, probe: Probe, button: str, number: int) -> None:
    """Single, double and triple clicks of ``button`` (X button ``number``) land where asked."""
    for clicks in (1, 2, 3):
        at = probe.point("canvas", 0.2 * clicks, 0.3)
        probe.reset()
        backend.click(at, button=button, clicks=clicks)  # type: ignore[arg-type]
        events = probe.wait_for(lambda ev, n=clicks: _releases(ev) >= n)
        presses = [e for e in events if e["type"] == "press"]
        assert [p["count"] for p in presses] == list(range(1, clicks + 1))
        assert {(p["button"], *probe.screen(p)) for p in presses} == {(number, at.x, at.y)}
        assert all(p["mods"] == [] for p in presses)
        assert backend.pointer() == at


def click_with_held_modifiers(backend: BackendBase, probe: Probe) -> None:
    """Held keys come with the click and are let go after it; an unknown key is refused
    before anything is pressed."""
    at = probe.point("canvas", 0.5, 0.7)
    backend.click(at, hold_keys=["ctrl"])
    backend.click(probe.point("canvas", 0.2, 0.7), button="right", hold_keys=["shift", "ctrl"])
    events = probe.wait_for(lambda ev: _releases(ev) >= 2)
    presses = [e for e in events if e["type"] == "press"]
    assert [(p["button"], sorted(p["mods"])) for p in presses] == [
        (1, ["ctrl"]),
        (3, ["ctrl", "shift"]),
    ]
    probe.reset()  # the modifiers were let go: a later plain click carries none
    backend.click(at)
    (press,) = [
        e
        for e in probe.wait_for(lambda ev: any(e["type"] == "press" for e in ev))
        if e["type"] == "press"
    ]
    assert press["mods"] == []
    with pytest.raises(ValueError, match="unknown key"):
        backend.click(at, hold_keys=["é"])


def points_off_the_screen_are_refused(backend: BackendBase, probe: Probe) -> None:
    """A click or drag off every monitor is refused, not clamped to an edge: nothing moves."""
    backend.move(Point(640, 400))
    probe.reset()
    for bad in (Point(1280, 10), Point(10, 800), Point(-1, 5)):
        with pytest.raises(ValueError, match="off the screen"):
            backend.click(bad)
        with pytest.raises(ValueError, match="off the screen"):
            backend.drag(Point(640, 400), bad)
    assert backend.pointer() == Point(640, 400)
    time.sleep(0.2)
    assert not [e for e in probe.events() if e["type"] in ("press", "release")]


def drag_presses_moves_and_releases(backend: BackendBase, probe: Probe) -> None:
    start, end = probe.point("canvas", 0.1, 0.2), probe.point("canvas", 0.8, 0.9)
    backend.drag(start, end)
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


def scroll_both_ways(backend: BackendBase, probe: Probe) -> None:
    """Wheel notches up and down, then right and left, arrive as that scrolling where asked,
    one event per notch, with no key."""
    at = probe.point("canvas")
    backend.scroll(at, 3)
    backend.scroll(at, -2)
    events = probe.wait_for(lambda ev: len([e for e in ev if e["type"] == "scroll"]) >= 5)
    directions = [e["direction"] for e in events if e["type"] == "scroll"]
    assert directions == ["up"] * 3 + ["down"] * 2
    assert {probe.screen(e) for e in events if e["type"] == "scroll"} == {(at.x, at.y)}
    probe.reset()
    backend.scroll(at, 2, horizontal=True)
    backend.scroll(at, -1, horizontal=True)
    events = probe.wait_for(lambda ev: len([e for e in ev if e["type"] == "scroll"]) >= 3)
    sideways = [e["direction"] for e in events if e["type"] == "scroll"]
    # Horizontal notches arrive as horizontal scrolling, two one way and one the other (GTK 3
    # names a positive horizontal wheel value "left", the protocol calls it right).
    assert set(sideways) == {"left", "right"}
    assert sideways[0] == sideways[1] != sideways[2]
    assert not [e for e in events if e["type"] in ("key", "keyup")]


def nothing_held_after_a_kill(backend: BackendBase, probe: Probe) -> None:
    """After a process holding Ctrl, Shift and the left button was killed: a click carries no
    modifier and typed keys none either."""
    probe.reset()
    backend.click(probe.point("canvas", 0.6, 0.6))
    events = probe.wait_for(lambda ev: any(e["type"] == "release" for e in ev))
    presses = [e for e in events if e["type"] == "press"]
    assert [(p["button"], p["mods"], p["count"]) for p in presses] == [(1, [], 1)]
    backend.click(probe.point("entry"))
    backend.hold_and_press([], ["o"])
    backend.type_text("k")
    events = probe.wait_for(lambda ev: any(e.get("text") == "ok" for e in ev))
    assert [e["mods"] for e in events if e["type"] == "key" and e["keysym"] == "o"] == [[]]


def hold_and_press_and_hotkey(backend: BackendBase, probe: Probe, after_ctrl_a: str) -> None:
    """Shifted letters and ctrl+a reach the probe's entry as keys with their modifiers;
    ``after_ctrl_a``: the entry's text once "<" is typed after ctrl+a (toolkits differ)."""
    backend.click(probe.point("entry"))
    backend.type_text("ab")
    backend.hold_and_press(["shift"], ["x", "y"])
    probe.wait_for(lambda ev: any(e.get("text") == "abXY" for e in ev))
    backend.hotkey(["ctrl", "a"])
    backend.type_text("<")
    events = probe.wait_for(lambda ev: any(e.get("text") == after_ctrl_a for e in ev))
    keys = [(e["keysym"], e["mods"]) for e in events if e["type"] == "key"]
    assert ("X", ["shift"]) in keys
    assert ("Y", ["shift"]) in keys
    assert ("a", ["ctrl"]) in keys


def type_text_in_chunks(
    backend: BackendBase, probe: Probe, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(backend, "type_chunk", 4)
    backend.click(probe.point("entry"))
    text = "chunked: é✓日本 <tag> 'q' \"dq\" $x"
    backend.type_text(text)
    probe.wait_for(lambda ev: any(e.get("text") == text for e in ev))


def refuses_control_characters(backend: BackendBase) -> None:
    with pytest.raises(ValueError, match="control characters"):
        backend.type_text("a\x1bb")


def mousepad(apps: AppRunner, path: Path) -> Any:
    """mousepad showing ``path``, its window found."""
    launched = apps(["mousepad", str(path)], window=path.name)
    assert launched.window is not None
    return launched.window


def type_into_mousepad(backend: BackendBase, apps: AppRunner, path: Path) -> None:
    """``TRICKY`` typed into mousepad and saved is exactly that text (``path``: empty)."""
    backend.activate(mousepad(apps, path).title)
    backend.type_text(TRICKY)
    backend.hotkey(["ctrl", "s"])
    _wait(lambda: path.read_text(encoding="utf-8") == TRICKY, what=f"{path} to hold the text")


def type_into_terminal(
    backend: BackendBase, apps: AppRunner, terminal: Callable[[str], list[str]], out: Path
) -> None:
    """``TRICKY`` typed into ``cat > out`` in a terminal arrives as the same bytes;
    ``terminal(title)``: its argv up to the command it runs."""
    title = f"typing-{time.monotonic_ns()}"
    apps(
        [*terminal(title), "sh", "-c", 'cat > "$0"', str(out)],
        window=title,
        env={"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"},
    )
    backend.activate(title)
    backend.type_text(TRICKY)
    backend.hotkey(["ctrl", "d"])  # ends the unfinished last line
    backend.hotkey(["ctrl", "d"])  # end of input: cat exits
    _wait(lambda: out.exists() and out.read_bytes() == TRICKY.encode(), what=f"{out}")


def hotkeys_in_mousepad(backend: BackendBase, apps: AppRunner, path: Path) -> None:
    """Select all, copy, move, select with shift, copy again, type over, save: ``path`` holds
    "first line\\nsecond line" before."""
    backend.activate(mousepad(apps, path).title)
    backend.hotkey(["ctrl", "a"])
    backend.hotkey(["ctrl", "c"])
    _wait(lambda: backend.clipboard_get() == "first line\nsecond line", what="the clipboard")
    backend.hotkey(["ctrl", "end"])
    backend.hold_and_press(["shift"], ["left"] * 4)
    backend.hotkey(["ctrl", "c"])
    _wait(lambda: backend.clipboard_get() == "line", what="the selected word")
    backend.type_text("LINE!")
    backend.hotkey(["ctrl", "s"])
    _wait(lambda: path.read_text() == "first line\nsecond LINE!", what="the saved file")


def clipboard_round_trip(backend: BackendBase) -> None:
    for text in ("plain", TRICKY, "tabs\tand\nnewlines\n", "日本語 ✓ é"):
        backend.clipboard_set(text)
        assert backend.clipboard_get() == text
    backend.clipboard_set("")
    assert backend.clipboard_get() == ""


def clipboard_feeds_a_paste(backend: BackendBase, probe: Probe) -> None:
    backend.clipboard_set("pasted ✓ <ok>")
    backend.click(probe.point("entry"))
    backend.hotkey(["ctrl", "v"])
    probe.wait_for(lambda ev: any(e.get("text") == "pasted ✓ <ok>" for e in ev))
