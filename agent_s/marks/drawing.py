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
- ``Label``: a line of text; labels are stacked in the top-left corner;
- ``Numbered``: a control with its set-of-marks number (``agent_s.marks.setofmarks``): a thin
outline
  just outside the box and the number on a small tag at one of its corners, inside or just
  outside, wherever the pixels under it are plainest (no text, no edges) and no other tag is,
  so the control's own text stays readable.

Four pictures are made of them: ``plan_picture`` (a dry run's planned operations),
``approval_picture`` (the crop an approver sees), ``grounding_picture`` (``agent-s ground
--annotate``) and ``numbered_picture`` (the screenshot the generation model is sent when the run
shows marks; its tags are sized for the image as sent, after any downscaling).
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass

from PIL import Image, ImageDraw, ImageFont, ImageStat
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
#: set-of-marks tags: white digits on a deep magenta, which few interfaces use for text
MARK_TAG: Color = (190, 0, 140)
_MARK_INK: Color = (255, 255, 255)
MARK_TEXT_PIXELS = 12  # the height of a tag's digits in the image as sent
_PLAIN = 15.0  # grey levels of spread: a place this much busier than the plainest is as good


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


@dataclass(frozen=True)
class Numbered:
    """A control marked with its number: thin outline, number tag at the top-left corner."""

    box: Box
    number: int
    color: Color = MARK_TAG


Mark = Ring | Line | Outline | Label | Numbered


def draw(screenshot: Screenshot, marks: Sequence[Mark], *, tag_scale: float = 1.0) -> Image.Image:
    """A copy of the screenshot (RGB) with ``marks`` drawn on it, in order. ``tag_scale``:
    screenshot pixels per pixel of the image that will be sent, so that ``Numbered`` tags keep
    their size once the picture is scaled down."""
    image = screenshot.image.convert("RGB")
    pen = ImageDraw.Draw(image)
    chain = CoordinateChain(screenshot)
    rows = 0
    tags = [m for m in marks if isinstance(m, Numbered)]
    if tags:  # outlines first, then every tag, so that no outline crosses a number
        _numbered(image, chain, tags, max(1.0, tag_scale))
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
        elif isinstance(mark, Numbered):
            pass  # drawn above, all together
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


def numbered_picture(
    screenshot: Screenshot, controls: Sequence[tuple[int, Box]], *, tag_scale: float = 1.0
) -> Image.Image:
    """The screenshot with each control (number, screen box) outlined and its number tagged;
    ``tag_scale``: screenshot pixels per pixel of the image as sent (see ``draw``)."""
    return draw(
        screenshot, [Numbered(box, number) for number, box in controls], tag_scale=tag_scale
    )


Rect = tuple[int, int, int, int]  # left, top, right, bottom pixels, inclusive


def tag_places(box: Box, size: tuple[int, int], image: tuple[int, int]) -> list[Rect]:
    """Where the ``size`` (width, height) tag of the screenshot box ``box`` may go, in order of
    preference, each kept on an ``image`` (width, height): inside the top-left corner (when the
    box is at least twice the tag each way), just above the box at its left (below it at the
    top of the image), inside the top-right corner, just above at its right, just left of it."""
    width, height = size
    above = box.y - height if box.y - height >= 0 else box.bottom + 1
    places = []
    if box.width >= 2 * width + 4 and box.height >= 2 * height:
        places.append((box.x + 1, box.y + 1))
    places.append((box.x, above))
    if box.width >= 2 * width + 4 and box.height >= 2 * height:
        places.append((box.right - width, box.y + 1))
    places += [(box.right + 1 - width, above), (box.x - width - 1, box.y)]
    found: list[Rect] = []
    for left, top in places:
        left = min(max(0, left), max(0, image[0] - width))
        top = min(max(0, top), max(0, image[1] - height))
        found.append((left, top, left + width - 1, top + height - 1))
    return found


def _place(base: Image.Image, places: Sequence[Rect], taken: Sequence[Rect]) -> Rect:
    """The first place, in order of preference, whose pixels in ``base`` are about as plain as
    the plainest one's (the spread of their grey levels: text and edges raise it), away from
    the tags already placed where one is."""

    def spread(rect: Rect) -> float:
        crop = base.crop((rect[0], rect[1], rect[2] + 1, rect[3] + 1))
        return float(ImageStat.Stat(crop).stddev[0])

    free = [rect for rect in places if not any(_overlap(rect, other) for other in taken)]
    candidates = free or list(places)
    spreads = [spread(rect) for rect in candidates]
    plainest = min(spreads)
    return next(r for r, s in zip(candidates, spreads, strict=True) if s <= plainest + _PLAIN)


def _overlap(a: Rect, b: Rect, gap: int = 3) -> bool:
    """Whether two tags touch or come within ``gap`` pixels (two numbers would read as one)."""
    return a[0] <= b[2] + gap and b[0] <= a[2] + gap and a[1] <= b[3] + gap and b[1] <= a[3] + gap


# -- drawing -------------------------------------------------------------------------------------


def _numbered(
    image: Image.Image, chain: CoordinateChain, tags: Sequence[Numbered], scale: float
) -> None:
    """Outlines first, then each tag where it hides the least (``_place``), measured on the
    pixels as they were before any mark was drawn."""
    pen = ImageDraw.Draw(image)
    base = image.convert("L")
    font = _font(max(8, round(MARK_TEXT_PIXELS * scale)))
    line = max(1, round(scale))
    shown = [(tag, chain.screen_box_to_screenshot(tag.box)) for tag in tags]
    for tag, box in shown:  # just outside the box, so that the outline crosses none of its text
        if box is not None:
            around = (box.x - line, box.y - line, box.right + line, box.bottom + line)
            pen.rectangle(around, outline=tag.color, width=line)
    pad = max(1, round(2 * scale))
    taken: list[Rect] = []
    for tag, box in shown:
        if box is None:
            continue
        text = str(tag.number)
        left, top, right, bottom = pen.textbbox((0, 0), text, font=font)
        size = (int(right - left) + 2 * pad, int(bottom - top) + 2 * pad)
        x0, y0, x1, y1 = _place(base, tag_places(box, size, (chain.width, chain.height)), taken)
        taken.append((x0, y0, x1, y1))
        pen.rectangle((x0, y0, x1, y1), fill=tag.color, outline=_MARK_INK)
        pen.text((x0 + pad - left, y0 + pad - top), text, fill=_MARK_INK, font=font)


def _font(pixels: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    """Pillow's own scalable font at ``pixels`` (its bitmap font where FreeType is missing)."""
    try:
        return ImageFont.load_default(size=pixels)
    except (ImportError, OSError, TypeError):  # pragma: no cover - Pillow without FreeType
        return ImageFont.load_default()


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
    "MARK_TAG",
    "MARK_TEXT_PIXELS",
    "RED",
    "Color",
    "Label",
    "Line",
    "Mark",
    "Numbered",
    "Outline",
    "Ring",
    "approval_picture",
    "crop",
    "draw",
    "grounding_picture",
    "numbered_picture",
    "plan_picture",
    "png",
    "tag_places",
]
