"""Which coordinate convention a model's answers fit: each answer to "where is the 7 button?"
is read in every convention agent-s accepts (``agent_s.conventions``), through the one
transform chain, and the convention that puts most points inside the truth boxes wins (ties:
the nearer to the boxes' centres, by a pixel or more, then the one agent-s would use without a
setting).

Frames of another size are found from the answers themselves: if a model answers in pixels of
a fixed W x H image (one it was told of, or the screen's), each answer estimates W and H; their
median, snapped to a usual screen size, is tried like any other convention.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from PIL import Image

from agent_s.conventions import Order, PointConvention
from agent_s.desktop.base import Screenshot
from agent_s.desktop.ops import Point
from agent_s.grounding.replies import ParsedLocation
from agent_s.grounding.transform import CONVENTIONS, CoordinateChain
from agent_s.grounding.types import Box, CoordinateError
from agent_s.images import EncodedImage

_ORDERS: tuple[Order, ...] = ("xy", "yx")
# screen sizes a fixed frame is snapped to when the estimate is within 3% of one
_USUAL_SIZES = (
    (1024, 768),
    (1280, 720),
    (1280, 800),
    (1280, 1024),
    (1366, 768),
    (1440, 900),
    (1600, 900),
    (1680, 1050),
    (1920, 1080),
    (1920, 1200),
    (2560, 1440),
    (2560, 1600),
    (3840, 2160),
)


@dataclass(frozen=True)
class Answer:
    """One answer to a pointing question of known truth: the control's ``truth`` box in the
    screenshot's pixels, the sizes of the screenshot and of the image sent, and the location
    read from the reply (None: no usable location; ``error`` says why)."""

    screen: str
    target: str
    truth: Box
    screenshot: tuple[int, int]
    sent: tuple[int, int]
    location: ParsedLocation | None
    error: str = ""


@dataclass(frozen=True)
class Fit:
    """How well ``convention`` reads the answers: ``hits`` of ``total`` inside their boxes;
    ``offset``: the mean (dx, dy) of the points read from the boxes' centres (screenshot
    pixels; None without a point); ``distance``: their mean distance."""

    convention: PointConvention
    hits: int
    total: int
    offset: tuple[float, float] | None
    distance: float

    @property
    def rate(self) -> float:
        return self.hits / self.total if self.total else 0.0

    def to_json(self) -> dict[str, object]:
        return {
            "convention": str(self.convention),
            "hits": self.hits,
            "total": self.total,
            "offset": None if self.offset is None else [round(v, 1) for v in self.offset],
            "distance": round(self.distance, 1) if math.isfinite(self.distance) else None,
        }


@cache
def _blank(width: int, height: int) -> Screenshot:
    return Screenshot(Image.new("1", (width, height)), Point(0, 0), 1.0)


def read_point(answer: Answer, convention: PointConvention) -> Point | None:
    """The screenshot pixel ``answer`` names when read in ``convention`` (None: off its frame)."""
    if answer.location is None:
        return None
    sent = EncodedImage(b"", "image/png", *answer.sent, *answer.screenshot)
    chain = CoordinateChain(_blank(*answer.screenshot), sent)
    reading = convention.reading("unit") if answer.location.unit else convention
    try:
        return chain.model_to_screen(*answer.location.point, chain.frame(reading))
    except CoordinateError:
        return None


def score(convention: PointConvention, answers: Sequence[Answer]) -> Fit:
    hits, shifts = 0, []
    for answer in answers:
        point = read_point(answer, convention)
        if point is None:
            continue
        hits += answer.truth.contains(point)
        centre = answer.truth.center
        shifts.append((point.x - centre.x, point.y - centre.y))
    if not shifts:
        return Fit(convention, 0, len(answers), None, math.inf)
    dx = statistics.fmean(s[0] for s in shifts)
    dy = statistics.fmean(s[1] for s in shifts)
    distance = statistics.fmean(math.hypot(*s) for s in shifts)
    return Fit(convention, hits, len(answers), (dx, dy), distance)


def _snapped(width: float, height: float) -> tuple[int, int]:
    for size in _USUAL_SIZES:
        if abs(width / size[0] - 1) < 0.03 and abs(height / size[1] - 1) < 0.03:
            return size
    return round(width / 10) * 10, round(height / 10) * 10


def _fixed_frames(answers: Sequence[Answer]) -> list[PointConvention]:
    """Fixed pixel frames the answers suggest, one per order, when unlike the sent size."""
    found = []
    pixels = [(a, a.location) for a in answers if a.location is not None and not a.location.unit]
    for order in _ORDERS:
        widths, heights, near_sent = [], [], True
        for answer, location in pixels:
            first, second = location.point
            x, y = (second, first) if order == "yx" else (first, second)
            centre = answer.truth.center
            scale_x = answer.sent[0] / answer.screenshot[0]
            scale_y = answer.sent[1] / answer.screenshot[1]
            cx, cy = (centre.x + 0.5) * scale_x, (centre.y + 0.5) * scale_y
            if cx < 1 or cy < 1:
                continue
            widths.append(x * answer.sent[0] / cx)
            heights.append(y * answer.sent[1] / cy)
            near_sent = near_sent and abs(x / cx - 1) < 0.03 and abs(y / cy - 1) < 0.03
        if len(widths) >= 2 and not near_sent:
            width, height = statistics.median(widths), statistics.median(heights)
            if 16 <= width <= 20000 and 16 <= height <= 20000:
                size = _snapped(width, height)
                found.append(PointConvention("pixels", order, size))
    return found


def candidates(answers: Sequence[Answer]) -> list[PointConvention]:
    """Every convention tried: each frame in each order, then the fixed frames suggested;
    answers that are all 0-1 fractions are read in ``unit`` whatever the frame, so then only
    its two orders are."""
    located = [a.location for a in answers if a.location is not None]
    frames = ("unit",) if located and all(loc.unit for loc in located) else CONVENTIONS
    named = [PointConvention(frame, order) for order in _ORDERS for frame in frames]
    return named + _fixed_frames(answers)


def best_fit(answers: Sequence[Answer], preferred: PointConvention) -> Fit | None:
    """The convention the answers fit best (None when no answer has a location)."""
    if not any(a.location is not None for a in answers):
        return None
    fits = [score(c, answers) for c in candidates(answers)]
    # nearer by a pixel or more wins (Qwen's resized frame is within 1% of the image's own)
    return min(
        fits,
        key=lambda f: (-f.hits, math.floor(min(f.distance, 1e9)), f.convention != preferred),
    )


__all__ = ["Answer", "Fit", "best_fit", "candidates", "read_point", "score"]
