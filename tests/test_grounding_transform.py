"""The one transform chain: model frame -> sent image -> screenshot -> screen.

Property tests over the screens that matter (16:9, 16:10, 4K, HiDPI scale 2, a second monitor
with an offset) and every model frame: round trips land within one sent pixel of where they
started, every in-frame point lands on the monitor, every out-of-frame point is refused.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from agent_s.desktop.base import Monitor, ScreenGeometry, Screenshot
from agent_s.desktop.ops import Point
from agent_s.grounding.transform import CONVENTIONS, CoordinateChain, Frame, smart_resize
from agent_s.grounding.types import Box, CoordinateError
from agent_s.images import EncodedImage, ImageSpec

# (monitor rectangle in screen coordinates, screenshot pixels per screen coordinate)
SCREENS = {
    "16:9 1920x1080": (Monitor(0, 0, 1920, 1080, primary=True), 1.0),
    "16:10 1280x800": (Monitor(0, 0, 1280, 800, primary=True), 1.0),
    "4K 3840x2160": (Monitor(0, 0, 3840, 2160, primary=True), 1.0),
    "HiDPI 1440x900 @2x": (Monitor(0, 0, 1440, 900, scale=2.0, primary=True), 2.0),
    "second monitor at +1920+0": (Monitor(1920, 0, 2560, 1440), 1.0),
    "second monitor at -1280+200 @2x": (Monitor(-1280, 200, 1280, 800, scale=2.0), 2.0),
}
SPECS = {
    "as is": ImageSpec(),
    "Claude-size (1280 long side)": ImageSpec(max_long_side=1280, max_pixels=1280 * 800),
    "OpenAI-size (~1 MP)": ImageSpec(max_long_side=2048, max_pixels=1365 * 768),
    "Qwen max pixels": ImageSpec(max_pixels=16384 * 28 * 28),
}
_SHOTS: dict[str, Screenshot] = {}


def _setup(screen: str, spec: str) -> tuple[CoordinateChain, Monitor]:
    """A chain for one monitor captured at its scale and sent through ``spec`` (sizes only)."""
    monitor, scale = SCREENS[screen]
    if screen not in _SHOTS:
        size = (round(monitor.width * scale), round(monitor.height * scale))
        _SHOTS[screen] = Screenshot(Image.new("RGB", size), Point(monitor.x, monitor.y), scale)
    shot = _SHOTS[screen]
    w, h = shot.image.size
    sent_w, sent_h = SPECS[spec].fit(w, h)
    sent = EncodedImage(b"", "image/png", sent_w, sent_h, w, h)
    others = (Monitor(0, 0, 1920, 1080, primary=True),) if monitor.x or monitor.y else ()
    return CoordinateChain(shot, sent, ScreenGeometry((monitor, *others))), monitor


screens = st.sampled_from(sorted(SCREENS))
specs = st.sampled_from(sorted(SPECS))
conventions = st.sampled_from(CONVENTIONS)
fractions = st.floats(min_value=0.0, max_value=0.999999, allow_nan=False)


@settings(max_examples=300, deadline=None)
@given(screens, specs, conventions, fractions, fractions)
def test_screen_to_model_and_back_lands_within_one_sent_pixel(
    screen: str, spec: str, convention: str, fx: float, fy: float
) -> None:
    chain, monitor = _setup(screen, spec)
    frame = chain.frame(convention)  # type: ignore[arg-type]
    start = Point(monitor.x + int(fx * monitor.width), monitor.y + int(fy * monitor.height))
    mx, my = chain.screen_to_model(start, frame)
    back = chain.model_to_screen(mx, my, frame)
    assert monitor.contains(back)
    # One sent pixel covers this many screen coordinates; the round trip stays inside it.
    assert chain.sent is not None
    shot = chain.screenshot
    tolerance_x = math.ceil(chain.sent.scale_x / shot.scale) + 1
    tolerance_y = math.ceil(chain.sent.scale_y / shot.scale) + 1
    assert abs(back.x - start.x) <= tolerance_x
    assert abs(back.y - start.y) <= tolerance_y
    # ... and going round again moves it by at most the same quantisation, not further.
    again = chain.model_to_screen(*chain.screen_to_model(back, frame), frame)
    assert abs(again.x - start.x) <= tolerance_x
    assert abs(again.y - start.y) <= tolerance_y


@settings(max_examples=300, deadline=None)
@given(screens, specs, conventions, fractions, fractions)
def test_every_point_of_a_frame_lands_on_the_monitor(
    screen: str, spec: str, convention: str, fx: float, fy: float
) -> None:
    chain, monitor = _setup(screen, spec)
    frame = chain.frame(convention)  # type: ignore[arg-type]
    point = chain.model_to_screen(fx * frame.width, fy * frame.height, frame)
    assert monitor.contains(point)
    if frame.relative:  # the far edge of a grid is the last pixel, still on the monitor
        assert monitor.contains(chain.model_to_screen(frame.width, frame.height, frame))


@settings(max_examples=200, deadline=None)
@given(
    screens,
    specs,
    conventions,
    st.floats(min_value=1.0001, max_value=50, allow_nan=False),
    st.sampled_from(["x", "y", "-x", "-y"]),
)
def test_points_outside_the_frame_are_refused(
    screen: str, spec: str, convention: str, factor: float, axis: str
) -> None:
    chain, _ = _setup(screen, spec)
    frame = chain.frame(convention)  # type: ignore[arg-type]
    x, y = frame.width / 2, frame.height / 2
    if axis == "x":
        x = frame.width * factor
    elif axis == "y":
        y = frame.height * factor
    elif axis == "-x":
        x = -factor
    else:
        y = -factor
    with pytest.raises(CoordinateError) as err:
        chain.model_to_screen(x, y, frame)
    assert err.value.stage == "model frame"


@pytest.mark.parametrize("convention", CONVENTIONS)
def test_pixel_frames_exclude_their_far_edge_and_nan(convention: str) -> None:
    chain, _ = _setup("16:9 1920x1080", "as is")
    frame = chain.frame(convention)  # type: ignore[arg-type]
    for bad in ((math.nan, 1.0), (1.0, math.inf)):
        with pytest.raises(CoordinateError):
            chain.model_to_screen(*bad, frame)
    if not frame.relative:
        with pytest.raises(CoordinateError):
            chain.model_to_screen(frame.width, 0, frame)


@settings(max_examples=300, deadline=None)
@given(st.integers(28, 8000), st.integers(28, 8000))
def test_smart_resize_is_multiples_of_28_within_the_pixel_budget(width: int, height: int) -> None:
    if max(width, height) / min(width, height) > 200:
        return
    w, h = smart_resize(width, height)
    assert w % 28 == 0
    assert h % 28 == 0
    assert 100 * 28 * 28 <= w * h <= 16384 * 28 * 28
    # The aspect ratio is kept to within the rounding of each side to 28 pixels.
    assert abs(w / h - width / height) <= (width / height) * (28 / min(w, h)) * 2 + 1e-9


def test_known_model_frames_on_a_1920x1080_screen() -> None:
    chain, _ = _setup("16:9 1920x1080", "as is")
    # UI-TARS 1.0: a 0-1000 grid, screen_x = round(W * x / 1000).
    assert chain.model_to_screen(500, 500, chain.frame("grid1000")) == Point(960, 540)
    assert chain.model_to_screen(250, 100, chain.frame("grid1000")) == Point(480, 108)
    # UI-TARS-1.5: pixels of the smart-resized image, 1932x1092 for 1920x1080.
    frame = chain.frame("smart_resize")
    assert (frame.width, frame.height) == (1932, 1092)
    assert chain.model_to_screen(966, 546, frame) == Point(960, 540)
    assert chain.model_to_screen(0.5, 0.5, chain.frame("unit")) == Point(960, 540)
    assert chain.model_to_screen(100, 200, chain.frame("pixels")) == Point(100, 200)


def test_a_downscaled_hidpi_second_monitor_maps_to_its_screen_coordinates() -> None:
    # A 2x monitor left of the primary: 2560x1600 screenshot pixels, sent at 1280x800.
    chain, monitor = _setup("second monitor at -1280+200 @2x", "Claude-size (1280 long side)")
    assert chain.sent is not None
    assert (chain.sent.width, chain.sent.height) == (1280, 800)
    frame = chain.frame("pixels")
    # Sent pixel (640, 400) is screenshot block (1280..1281, 800..801): screen (-640, 600).
    assert chain.model_to_screen(640, 400, frame) == Point(-640, 600)
    assert chain.model_to_screen(0, 0, frame) == Point(monitor.x, monitor.y)
    assert chain.model_to_screen(1279, 799, frame) == Point(-1, 999)


def test_screen_points_off_every_monitor_are_refused() -> None:
    # The screenshot covers a 2x2 block of monitors but one corner has no monitor.
    shot = Screenshot(Image.new("RGB", (200, 200)))
    geometry = ScreenGeometry((Monitor(0, 0, 100, 200, primary=True), Monitor(100, 0, 100, 100)))
    chain = CoordinateChain(shot, geometry=geometry)
    assert chain.screenshot_to_screen(150, 50) == Point(150, 50)
    with pytest.raises(CoordinateError) as err:
        chain.screenshot_to_screen(150, 150)
    assert err.value.stage == "screen"
    with pytest.raises(CoordinateError):
        chain.screenshot_to_screen(200, 0)


def test_a_frame_for_another_image_is_refused() -> None:
    chain, _ = _setup("16:9 1920x1080", "Claude-size (1280 long side)")
    with pytest.raises(ValueError, match="image sent"):
        chain.model_to_screen(10, 10, Frame.for_image("pixels", 1920, 1080))
    sent = EncodedImage(b"", "image/png", 100, 100, 400, 400)
    with pytest.raises(ValueError, match="screenshot"):
        CoordinateChain(Screenshot(Image.new("RGB", (300, 300))), sent)


def test_boxes_map_between_screenshot_and_screen() -> None:
    shot = Screenshot(Image.new("RGB", (400, 300)), Point(1000, 50), 2.0)
    chain = CoordinateChain(shot)
    screen_box = chain.box_to_screen(Box(100, 60, 40, 20))
    assert screen_box == Box(1050, 80, 20, 10)
    assert chain.screen_box_to_screenshot(screen_box) == Box(100, 60, 40, 20)
    assert chain.screen_box_to_screenshot(Box(0, 0, 10, 10)) is None
