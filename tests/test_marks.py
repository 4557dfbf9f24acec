"""Marks on screenshots, and the coordinate chain every picture and the accessibility grounder
go through.

The screenshot here is a HiDPI second monitor: 2560x1600 pixels of a 1280x800 screen area whose
top-left corner is the screen point (-1280, 200). Screen point (-1000, 400) is the block of
pixels (560..561, 400..401); its centre pixel, where marks are centred, is (561, 401). Each
picture (dry-run plan, approval crop, ``ground --annotate``) must put its mark there.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from agent_s.cli.ground import annotate
from agent_s.desktop import ops
from agent_s.desktop.base import Screenshot, WindowInfo
from agent_s.desktop.ops import Point
from agent_s.grounding import (
    AccessibilityGrounder,
    AccessibilityTree,
    CoordinateChain,
    GroundingResult,
    Observation,
    OcrGrounder,
)
from agent_s.grounding.accessibility import Element, toolkit_scales, window_outline
from agent_s.grounding.transform import extents_to_screen
from agent_s.grounding.types import Box
from agent_s.marks import drawing as marks
from agent_s.record.trajectory import draw_plan
from agent_s.safety.gate import approval_image

RED, GREEN, WHITE = (255, 0, 0), (0, 200, 0), (255, 255, 255)
TARGET = Point(-1000, 400)
CENTRE = (561, 401)


def hidpi_shot() -> Screenshot:
    return Screenshot(Image.new("RGB", (2560, 1600), WHITE), Point(-1280, 200), 2.0)


def opened(data: bytes, tmp_path: Path) -> Image.Image:
    path = tmp_path / "picture.png"
    path.write_bytes(data)
    with Image.open(path) as image:
        return image.convert("RGB")


def test_the_chain_places_screen_points_and_boxes_on_a_hidpi_screenshot() -> None:
    chain = CoordinateChain(hidpi_shot())
    assert chain.screen_to_pixel(TARGET) == CENTRE == chain.screen_to_screenshot(TARGET)
    assert chain.screen_to_pixel(Point(-1300, 100)) == (-39, -199)  # off it, unchecked
    assert (chain.shows(Point(-1280, 200)), chain.shows(Point(0, 400))) == (True, False)
    assert chain.screen_box_to_pixels(Box(-1290, 190, 20, 20)) == Box(-20, -20, 40, 40)
    assert chain.screen_box_to_screenshot(Box(-1290, 190, 20, 20)) == Box(0, 0, 20, 20)


def test_the_dry_run_plan_marks_the_point_where_the_chain_puts_it(tmp_path: Path) -> None:
    drawn = opened(draw_plan(hidpi_shot(), [ops.Click(TARGET)]), tmp_path)
    x, y = CENTRE  # a dot at the centre, the ring 12 pixels out, nothing between them
    assert [drawn.getpixel(p) for p in ((x, y), (x + 12, y), (x + 6, y))] == [RED, RED, WHITE]


def test_the_approval_crop_centres_on_the_target_where_the_chain_puts_it(tmp_path: Path) -> None:
    crop = opened(approval_image(hidpi_shot(), [TARGET], None), tmp_path)
    # 240 x 160 pixels each side of the target's centre pixel, which is marked
    assert (crop.size, crop.getpixel((240, 160))) == ((480, 320), RED)


def test_the_approval_crop_frames_the_window_where_the_chain_puts_it(tmp_path: Path) -> None:
    window = WindowInfo(1, "t", "XTerm", 1, -1200, 250, 300, 200)  # pixels 160, 100, 600x400
    framed = opened(approval_image(hidpi_shot(), [], window), tmp_path)
    assert (framed.size, framed.getpixel((9, 208))) == ((616, 416), RED)  # 8 around; outlined


def test_ground_annotate_marks_point_and_box_where_the_chain_puts_them(tmp_path: Path) -> None:
    result = GroundingResult(
        expression="OK",
        point=TARGET,
        grounder="ocr",
        confidence=0.9,
        evidence="test",
        box=Box(-1010, 390, 21, 21),  # pixels 540..581 x 380..421
    )
    out = tmp_path / "annotated.png"
    annotate(Observation(hidpi_shot()), result, out)
    with Image.open(out) as image:
        drawn = image.convert("RGB")
    assert [drawn.getpixel(p) for p in (CENTRE, (540, 401), (581, 401))] == [RED, GREEN, GREEN]


def test_marks_off_the_picture_are_cut_off_not_refused() -> None:
    shot = hidpi_shot()
    picture = marks.draw(shot, [marks.Ring(Point(5000, 5000)), marks.Line(TARGET, Point(9, 9))])
    assert picture.size == shot.image.size
    assert picture.getpixel(CENTRE) == RED  # the line starts at the target
    assert marks.crop(picture, (5000, 5000, 6000, 6000)).size == picture.size


# -- accessibility -------------------------------------------------------------------------------


def element(name: str, box: Box, role: str = "push button", pid: int = 7) -> Element:
    return Element(name, role, "", box, pid, "calc", "Calc")


def test_unscaled_gtk_extents_are_scaled_to_the_screen() -> None:
    frame = element("Calc", Box(154, 22, 332, 356), "frame")  # GDK_SCALE=2: half size
    window = WindowInfo(1, "Calc", "Calc", 7, 309, 64, 662, 686)  # the WM's, device pixels
    at_scale_1 = WindowInfo(2, "Other", "Other", 8, 150, 40, 330, 330)
    other = element("Other", Box(150, 20, 330, 352), "frame", pid=8)
    assert toolkit_scales([frame, other], [window, at_scale_1]) == {7: 2}
    assert extents_to_screen(Box(420, 215, 59, 34), 2) == Box(840, 430, 118, 68)
    assert extents_to_screen(Box(420, 215, 59, 34), 1) == Box(420, 215, 59, 34)


def test_the_outline_keeps_elements_on_a_hidpi_screenshot_through_the_chain() -> None:
    active = WindowInfo(1, "Calc", "Calc", 7, -1300, 300, 400, 300, active=True)
    elements = [
        element("Off", Box(-1300, 390, 20, 20)),  # left of the screenshot's screen area
        element("On", Box(-1210, 390, 20, 20)),
    ]
    observation = Observation(hidpi_shot(), (active,))
    assert window_outline(elements, observation) == (['- push button "On"'], 1)


@pytest.fixture(scope="module")
def accessibility_bus(desktop: Any) -> None:
    """This process's AT-SPI bound to the desktop's bus before ``apps`` notes the running
    processes (see tests/test_grounding_desktop.py)."""
    AccessibilityTree().applications()


def test_gtk_at_gdk_scale_2_is_grounded_on_the_screen(
    accessibility_bus: None, apps: Any, x11: Any, tmp_path: Path
) -> None:
    apps(
        ["galculator"],
        window="galculator",
        env={"GDK_SCALE": "2", "XDG_CONFIG_HOME": str(tmp_path)},  # its settings stay here
    )
    x11.move(Point(1270, 790))  # no tooltip
    previous, deadline = None, time.monotonic() + 4
    while True:
        shot = x11.capture()
        if shot.image.tobytes() == previous or time.monotonic() > deadline:
            break
        previous = shot.image.tobytes()
        time.sleep(0.15)
    observation = Observation(shot, tuple(x11.windows()), x11.geometry())
    extents = next(
        e.box for e in AccessibilityTree().elements() if e.app == "galculator" and e.name == "sqrt"
    )
    found = AccessibilityGrounder().ground("the sqrt button", observation)
    read = OcrGrounder().ground("sqrt", observation)  # where the label is drawn
    assert (found.box, found.box.contains(read.point)) == (extents_to_screen(extents, 2), True)
