"""RecordingBackend: the strict fake the unit tests of actions and the agent loop run against."""

from __future__ import annotations

import pytest
from PIL import Image

from agent_s.desktop import ops
from agent_s.desktop.base import (
    DesktopBackend,
    Monitor,
    ScreenGeometry,
    Screenshot,
    WindowInfo,
    perform,
)
from agent_s.desktop.ops import Point
from agent_s.desktop.recording import (
    Capture,
    Query,
    RecordingBackend,
    ScreenshotsExhausted,
    SetClipboard,
)
from agent_s.errors import AppNotFoundError, WindowNotFoundError

EDITOR = WindowInfo(1, "notes.txt - Mousepad", "Mousepad", 100, 0, 0, 640, 480, active=True)
CALC = WindowInfo(2, "galculator", "Galculator", 101, 640, 0, 300, 400)


def test_it_is_a_desktop_backend() -> None:
    assert isinstance(RecordingBackend(), DesktopBackend)


def test_perform_records_every_operation_in_order() -> None:
    backend = RecordingBackend(windows=[EDITOR, CALC])
    plan = [
        ops.MoveTo(Point(1, 2)),
        ops.Click(Point(3, 4), "right", 2, ("ctrl",)),
        ops.Drag(Point(5, 6), Point(7, 8), "left", ("shift",)),
        ops.Scroll(Point(9, 10), -3, horizontal=True),
        ops.Hotkey(("ctrl", "s")),
        ops.HoldAndPress(("shift",), ("left", "left")),
        ops.TypeText("a<b> é ✓"),
        ops.Sleep(0.5),
        ops.Open("mousepad"),
        ops.Activate("galculator"),
    ]
    perform(backend, plan)
    assert backend.ops == plan
    assert backend.pointer() == Point(9, 10)  # where the last pointer operation left it


def test_screenshots_are_served_in_order_and_strictly() -> None:
    first = Image.new("RGB", (800, 600), "red")
    second = Screenshot(Image.new("RGB", (800, 600), "blue"), origin=Point(0, 0))
    backend = RecordingBackend([first, second])
    shot = backend.capture()
    assert shot.image is first
    assert shot.origin == Point(0, 0)
    with pytest.raises(AssertionError, match="1 of 2"):
        backend.assert_all_screenshots_used()
    assert backend.capture() is second
    backend.assert_all_screenshots_used()
    with pytest.raises(ScreenshotsExhausted, match="called 3 times, but only 2"):
        backend.capture()
    assert backend.calls == [Capture(None), Capture(None), Capture(None)]
    assert backend.ops == []  # capturing does not act on the desktop


def test_geometry_defaults_to_the_first_screenshot() -> None:
    backend = RecordingBackend([Image.new("RGB", (1920, 1080))])
    assert backend.geometry().bounds == (0, 0, 1920, 1080)
    assert RecordingBackend().geometry().bounds == (0, 0, 1280, 800)
    assert backend.calls == [Query("geometry")]


def test_two_monitors_and_points_off_the_screen() -> None:
    geometry = ScreenGeometry(
        (Monitor(0, 0, 1280, 800, primary=True), Monitor(1280, 0, 1920, 1080))
    )
    backend = RecordingBackend(geometry=geometry)
    backend.click(Point(2000, 1000))  # on the second monitor
    with pytest.raises(ValueError, match="off the screen"):
        backend.click(Point(100, 900))  # below the smaller, left monitor
    with pytest.raises(ValueError, match="off the screen"):
        backend.drag(Point(10, 10), Point(-1, 10))
    with pytest.raises(ValueError, match="does not exist"):
        backend.capture(2)
    assert backend.ops == [ops.Click(Point(2000, 1000))]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda b: b.click(Point(1, 1), button="back"), "button"),
        (lambda b: b.click(Point(1, 1), clicks=4), "clicks"),
        (lambda b: b.click(Point(1, 1), hold_keys=["hyper"]), "unknown key"),
        (lambda b: b.hotkey([]), "at least one key"),
        (lambda b: b.hotkey(["ctrl", "nokey"]), "unknown key"),
        (lambda b: b.hold_and_press(["shift"], []), "at least one key"),
        (lambda b: b.sleep(-1), "negative"),
        (lambda b: b.open("  "), "application name"),
    ],
)
def test_bad_arguments_fail_like_the_real_backend(call: object, message: str) -> None:
    backend = RecordingBackend()
    with pytest.raises(ValueError, match=message):
        call(backend)  # type: ignore[operator]
    assert backend.ops == []  # nothing half-done is recorded


def test_keys_as_one_string_are_refused() -> None:
    with pytest.raises(TypeError, match="sequence of key names"):
        RecordingBackend().hotkey("ctrl+c")


def test_activate_matches_like_the_real_backend_and_moves_focus() -> None:
    backend = RecordingBackend(windows=[EDITOR, CALC])
    got = backend.activate("GALCULATOR")
    assert got.id == CALC.id
    assert got.active
    listed = backend.windows()
    assert [w.id for w in listed] == [CALC.id, EDITOR.id]
    assert [w.active for w in listed] == [True, False]
    assert backend.activate("notes").id == EDITOR.id  # part of a title
    assert backend.activate("mousepd").id == EDITOR.id  # fuzzy
    with pytest.raises(WindowNotFoundError) as caught:
        backend.activate("firefox")
    assert caught.value.open_windows == ("Mousepad: notes.txt - Mousepad", "Galculator: galculator")


def test_open_can_be_restricted_to_known_names() -> None:
    backend = RecordingBackend(openable=["mousepad", "/tmp/a.txt"])
    backend.open("mousepad")
    with pytest.raises(AppNotFoundError) as caught:
        backend.open("mousepd")
    assert caught.value.candidates == ("mousepad",)
    assert backend.ops == [ops.Open("mousepad"), ops.Open("mousepd")]


def test_clipboard_round_trip() -> None:
    backend = RecordingBackend(clipboard="before")
    assert backend.clipboard_get() == "before"
    backend.clipboard_set("日本 ✓")
    assert backend.clipboard_get() == "日本 ✓"
    assert backend.calls == [Query("clipboard_get"), SetClipboard("日本 ✓"), Query("clipboard_get")]
    assert backend.ops == [SetClipboard("日本 ✓")]
