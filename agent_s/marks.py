"""Marks on screenshots: every picture drawn for people is drawn here.

    picture = draw(shot, [Ring(Point(640, 400)), Outline(box, GREEN, label="a11y")])
    png(crop(picture, (100, 100, 700, 500)))

Marks are placed in screen coordinates, the coordinates of actions and grounders, and land where
the transform chain (``agent_s.grounding.transform.CoordinateChain``) puts them on the
screenshot, so a HiDPI scale and a monitor's origin are handled there and only there. A mark that
falls off the screenshot is cut off, not refused: a picture never fails for it.

- ``Ring``: a point (a click, a drag's ends): a ring with four ticks outside it, so the target
  itself stays readable, and a dot at its centre;
- ``Line``: a drag, from its start to its end;
- ``Outline``: a box (a grounded element, labelled with the grounder that found it; the window
  an action goes to), clipped to the screenshot;
- ``Label``: a line of text; labels are stacked in the top-left corner.

Three pictures are made of them: ``plan_picture`` (a dry run's planned operations),
``approval_picture`` (the crop an approver sees) and ``grounding_picture`` (``agent-s ground
--annotate``).
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass

from PIL import Image, ImageDraw
from typing_extensions import assert_never

from agent_s.desktop import ops
from agent_s.desktop.base import Screenshot, WindowInfo
from agent_s.desktop.ops import Point
from agent_s.grounding.transform import CoordinateChain
from agent_s.grounding.types import Box

Color = tuple[int, int, int]
RED: Color = (255, 0, 0)
GREEN: Color = (0, 200, 0)
_LABEL_FILL: Color = (255, 255, 200)
_LABEL_TEXT: Color = (200, 0, 0)
_LABEL_ROW = 18  # pixels from one stacked label to the next


@dataclass(frozen=True)
class Ring:
    """A point: a ring of ``radius`` pixels, ticks outside it, a dot at its centre."""

    at: Point
    radius: int = 12
    width: int = 3
    color: Color = RED


@dataclass(frozen=True)
class Line:
    """A straight line between two screen points (a drag)."""

    start: Point
    end: Point
    width: int = 3
    color: Color = RED


@dataclass(frozen=True)
class Outline:
    """A screen box outlined, with ``label`` (e.g. the grounder's name) written beside it."""

    box: Box
    color: Color = RED
    width: int = 2
    label: str = ""


@dataclass(frozen=True)
class Label:
    """A line of text, stacked with the other labels in the top-left corner."""

    text: str


Mark = Ring | Line | Outline | Label


def draw(screenshot: Screenshot, marks: Sequence[Mark]) -> Image.Image:
    """A copy of the screenshot (RGB) with ``marks`` drawn on it, in order."""
    image = screenshot.image.convert("RGB")
    pen = ImageDraw.Draw(image)
    chain = CoordinateChain(screenshot)
    rows = 0
    for mark in marks:
        if isinstance(mark, Ring):
            _ring(pen, chain.screen_to_pixel(mark.at), mark)
        elif isinstance(mark, Line):
            ends = (*chain.screen_to_pixel(mark.start), *chain.screen_to_pixel(mark.end))
            pen.line(ends, fill=mark.color, width=mark.width)
        elif isinstance(mark, Outline):
            box = chain.screen_box_to_screenshot(mark.box)
            if box is not None:
                corners = (box.x, box.y, box.right, box.bottom)
                pen.rectangle(corners, outline=mark.color, width=mark.width)
                if mark.label:
                    _box_label(pen, box, mark.label, mark.color, image.height)
        elif isinstance(mark, Label):
            _text(pen, (8, 8 + rows * _LABEL_ROW), mark.text, _LABEL_FILL, _LABEL_TEXT)
            rows += 1
        else:
            assert_never(mark)
    return image


def crop(image: Image.Image, around: tuple[float, float, float, float]) -> Image.Image:
    """``image`` cut to ``around`` (left, top, right, bottom; clamped to the image), or the
    whole image when less than 8 pixels of it would be left either way."""
    left, top = max(0, int(around[0])), max(0, int(around[1]))
    right, bottom = min(image.width, int(around[2])), min(image.height, int(around[3]))
    if right - left >= 8 and bottom - top >= 8:
        return image.crop((left, top, right, bottom))
    return image


def png(image: Image.Image) -> bytes:
    """The picture as PNG bytes."""
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", compress_level=3)
    return buffer.getvalue()


# -- the pictures --------------------------------------------------------------------------------


def plan_picture(screenshot: Screenshot, plan: Sequence[ops.Op]) -> Image.Image:
    """A dry run's planned operations: a ring at each point, a line for a drag, and the text
    to type and the keys to press written in the top-left corner (at most 8 lines)."""
    marks: list[Mark] = []
    labels: list[Label] = []
    for op in plan:
        points = [getattr(op, name) for name in ("at", "start", "end") if hasattr(op, name)]
        marks.extend(Ring(at) for at in points)
        if isinstance(op, ops.Drag):
            marks.append(Line(op.start, op.end))
        if isinstance(op, ops.TypeText):
            labels.append(Label(f"type {op.text[:80]!r}"))
        elif isinstance(op, (ops.Hotkey, ops.HoldAndPress)):
            labels.append(Label(f"keys {op}"[:100]))
        elif isinstance(op, (ops.Open, ops.Activate, ops.Sleep)):
            labels.append(Label(repr(op)[:100]))
    return draw(screenshot, [*marks, *labels[:8]])


def approval_picture(
    screenshot: Screenshot,
    points: Sequence[Point],
    window: WindowInfo | None,
    *,
    max_side: int = 1280,
) -> Image.Image:
    """What an approver sees: the screen around the action's targets (each ringed, with at
    least 240 x 160 pixels around them), or else the window it goes to (outlined, with 8
    pixels around it), or else the whole screen; at most ``max_side`` pixels."""
    chain = CoordinateChain(screenshot)
    around: tuple[float, float, float, float] | None = None
    if points:
        image = draw(screenshot, [Ring(p, radius=30) for p in points])
        centres = [chain.screen_to_pixel(p) for p in points]
        xs, ys = [c[0] for c in centres], [c[1] for c in centres]
        margin_x = max(240, (max(xs) - min(xs)) * 0.2)
        margin_y = max(160, (max(ys) - min(ys)) * 0.2)
        around = (min(xs) - margin_x, min(ys) - margin_y, max(xs) + margin_x, max(ys) + margin_y)
    elif window is not None:
        box = Box(window.x, window.y, max(1, window.width), max(1, window.height))
        image = draw(screenshot, [Outline(box, RED, width=4)])
        shown = chain.screen_box_to_screenshot(box)
        if shown is not None:
            around = (shown.x - 8, shown.y - 8, shown.right + 9, shown.bottom + 9)
    else:
        image = draw(screenshot, [])
    if around is not None:
        image = crop(image, around)
    image.thumbnail((max_side, max_side), Image.Resampling.LANCZOS)
    return image


def grounding_picture(
    screenshot: Screenshot, point: Point, box: Box | None = None, label: str = ""
) -> Image.Image:
    """Where a grounder found an element: its box outlined in green, labelled (``label``:
    the grounder's name), and its point ringed in red."""
    marks: list[Mark] = [] if box is None else [Outline(box, GREEN, width=2, label=label)]
    return draw(screenshot, [*marks, Ring(point, radius=9, width=2)])


# -- drawing -------------------------------------------------------------------------------------


def _ring(pen: ImageDraw.ImageDraw, centre: tuple[int, int], ring: Ring) -> None:
    x, y, r = centre[0], centre[1], ring.radius
    pen.ellipse((x - r, y - r, x + r, y + r), outline=ring.color, width=ring.width)
    near, far = r + 3, r + 3 + max(4, r // 2)
    for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1)):
        tick = (x + dx * near, y + dy * near, x + dx * far, y + dy * far)
        pen.line(tick, fill=ring.color, width=ring.width)
    pen.point((x, y), fill=ring.color)


def _box_label(pen: ImageDraw.ImageDraw, box: Box, text: str, color: Color, height: int) -> None:
    """``text`` on a patch of ``color`` just above the box, or below it when there is no room,
    so the outline itself is never covered."""
    tall = _text_size(pen, text)[1] + 4
    top = box.y - 2 - tall if box.y - 2 - tall >= 0 else min(box.bottom + 3, height - tall)
    _text(pen, (box.x, top), text, color, (255, 255, 255))


def _text(
    pen: ImageDraw.ImageDraw, at: tuple[int, int], text: str, fill: Color, ink: Color
) -> None:
    width, height = _text_size(pen, text)
    pen.rectangle((at[0], at[1], at[0] + width + 8, at[1] + height + 4), fill=fill)
    pen.text((at[0] + 4, at[1] + 1), text, fill=ink)


def _text_size(pen: ImageDraw.ImageDraw, text: str) -> tuple[int, int]:
    left, top, right, bottom = pen.textbbox((0, 0), text)
    return int(right - left), max(11, int(bottom))


__all__ = [
    "GREEN",
    "RED",
    "Color",
    "Label",
    "Line",
    "Mark",
    "Outline",
    "Ring",
    "approval_picture",
    "crop",
    "draw",
    "grounding_picture",
    "plan_picture",
    "png",
]
