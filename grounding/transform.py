"""THE coordinate transform chain: model frame -> sent image -> screenshot -> screen.

Every coordinate that reaches the desktop passes through here, whoever produced it:

1. **model frame -> sent image.** A model answers in its own frame (``Frame``), derived from the
   image it was actually sent and its family (``Convention``), never from hand-set sizes:

   - ``pixels``: pixels of the sent image (Claude and OpenAI computer use, most VLMs);
   - ``grid1000``: a 0-1000 grid over the image (UI-TARS 1.0, Seed / Doubao);
   - ``smart_resize``: pixels of the image after Qwen2.5-VL's ``smart_resize`` (UI-TARS-1.5,
     Qwen2.5-VL, GTA1): both sides multiples of 28, total pixels within
     [100*28*28, 16384*28*28], aspect ratio kept;
   - ``unit``: 0-1 fractions of the image;
   - a fixed ``W x H`` pixel frame over the image (a model told another size);

   and in either order: ``(x, y)`` or ``[y, x]`` (``Frame.order``). The names are
   ``agent_s.conventions.PointConvention``'s (``grid1000-yx``, ``1920x1080``), one setting.

2. **sent image -> screenshot** undoes the downscaling of the encoder; it is
   ``EncodedImage.to_screenshot`` (``agent_s.images``), used here, not re-implemented.
3. **screenshot -> screen**: ``Screenshot.origin`` is the screen point of pixel (0, 0) and
   ``Screenshot.scale`` is screenshot pixels per screen coordinate (2.0 on HiDPI), so
   ``screen = origin + floor(pixel / scale)``; with a ``ScreenGeometry`` the point must lie
   on a monitor.

Every link is bounds-checked and raises ``CoordinateError`` naming the stage. Continuous frame
coordinates name the sent pixel they fall in; a sent pixel maps to the centre of the block of
screenshot pixels it stands for.

The other way, screen -> screenshot, serves the pictures drawn for people
(``agent_s.marks.drawing``:
the dry-run plan, the approval crop, ``agent-s ground --annotate``), which may place a mark
off the picture (``CoordinateChain.screen_to_pixel``, unchecked), and the accessibility
grounder's "is it on this screenshot" test (``CoordinateChain.shows``). Accessibility extents
come in the toolkit's units: GTK at ``GDK_SCALE=2`` on X11 reports unscaled (half-size)
extents, which ``extents_to_screen`` scales to screen coordinates first.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from agent_s.conventions import FRAME_NAMES, FrameName, Order, PointConvention
from agent_s.desktop.base import ScreenGeometry, Screenshot
from agent_s.desktop.ops import Point
from agent_s.grounding.types import Box, CoordinateError
from agent_s.images import EncodedImage, PointOutsideImageError

Convention = FrameName
CONVENTIONS: tuple[Convention, ...] = FRAME_NAMES

QWEN_FACTOR = 28
QWEN_MIN_PIXELS = 100 * 28 * 28
QWEN_MAX_PIXELS = 16384 * 28 * 28


def smart_resize(
    width: int,
    height: int,
    *,
    factor: int = QWEN_FACTOR,
    min_pixels: int = QWEN_MIN_PIXELS,
    max_pixels: int = QWEN_MAX_PIXELS,
) -> tuple[int, int]:
    """The size Qwen2.5-VL's processor resizes a ``width`` x ``height`` image to.

    Each side is rounded to a multiple of ``factor``; if the area then exceeds ``max_pixels``
    (or falls below ``min_pixels``) both sides are scaled by the same factor first, rounding
    down (up) to multiples of ``factor`` so the bound holds.
    """
    if width < 1 or height < 1:
        raise ValueError(f"image size must be positive, not {width}x{height}")
    if max(width, height) / min(width, height) > 200:
        raise ValueError(f"aspect ratio of {width}x{height} is over 200, which Qwen refuses")
    w = max(factor, round(width / factor) * factor)
    h = max(factor, round(height / factor) * factor)
    if w * h > max_pixels:
        beta = math.sqrt(width * height / max_pixels)
        w = max(factor, math.floor(width / beta / factor) * factor)
        h = max(factor, math.floor(height / beta / factor) * factor)
    elif w * h < min_pixels:
        beta = math.sqrt(min_pixels / (width * height))
        w = math.ceil(width * beta / factor) * factor
        h = math.ceil(height * beta / factor) * factor
    return w, h


def screen_to_pixel(screenshot: Screenshot, x: float, y: float) -> tuple[float, float]:
    """Where screen position (x, y) falls on ``screenshot``, in pixels, neither rounded nor
    bounds-checked: ``(x - origin.x) * scale``. The chain's screen -> screenshot link."""
    origin, scale = screenshot.origin, screenshot.scale
    return (x - origin.x) * scale, (y - origin.y) * scale


def extents_to_screen(box: Box, toolkit_scale: float) -> Box:
    """An accessibility box, in the units of a toolkit drawing at ``toolkit_scale``, as a
    screen box: GTK at ``GDK_SCALE=2`` on X11 reports extents in unscaled units (half the
    size on the screen), so they are multiplied by 2; at scale 1 the box is returned as is."""
    if toolkit_scale <= 0 or not math.isfinite(toolkit_scale):
        raise ValueError(f"toolkit scale must be positive, not {toolkit_scale}")
    if toolkit_scale == 1:
        return box
    left, top = round(box.x * toolkit_scale), round(box.y * toolkit_scale)
    right = round((box.x + box.width) * toolkit_scale) - 1
    bottom = round((box.y + box.height) * toolkit_scale) - 1
    return Box.from_corners(left, top, max(left, right), max(top, bottom))


@dataclass(frozen=True)
class Frame:
    """A model's coordinate frame over a sent image of ``sent_width`` x ``sent_height``.

    ``width`` x ``height`` is the extent of the model's coordinates: the sent size for
    ``pixels``, 1000 x 1000 for ``grid1000``, the smart-resized size for ``smart_resize``,
    1 x 1 for ``unit``, or a fixed size. Pixel frames accept ``0 <= x < width``; relative
    frames (grid, unit) accept the closed range ``0 <= x <= width``, whose far edge is the last
    pixel. ``order`` "yx": the model writes ``[y, x]``, and every method here takes and gives
    the two values in the model's order.
    """

    convention: Convention
    width: float
    height: float
    sent_width: int
    sent_height: int
    order: Order = "xy"

    @classmethod
    def of(cls, convention: PointConvention, sent_width: int, sent_height: int) -> Frame:
        """The frame of a named convention (``agent_s.conventions``) over the image sent."""
        return cls.for_image(
            convention.frame,
            sent_width,
            sent_height,
            order=convention.order,
            size=convention.size,
        )

    @classmethod
    def for_image(
        cls,
        convention: Convention,
        sent_width: int,
        sent_height: int,
        *,
        order: Order = "xy",
        size: tuple[int, int] | None = None,
    ) -> Frame:
        """The frame a model of ``convention`` answers in, for an image of the size it saw;
        ``size``: a fixed pixel frame instead of the sent size."""
        if sent_width < 1 or sent_height < 1:
            raise ValueError(f"sent image size must be positive, not {sent_width}x{sent_height}")
        if size is not None and convention == "pixels":
            w, h = float(size[0]), float(size[1])
        elif convention == "pixels":
            w, h = float(sent_width), float(sent_height)
        elif convention == "grid1000":
            w, h = 1000.0, 1000.0
        elif convention == "smart_resize":
            rw, rh = smart_resize(sent_width, sent_height)
            w, h = float(rw), float(rh)
        elif convention == "unit":
            w, h = 1.0, 1.0
        else:
            raise ValueError(f"unknown coordinate convention {convention!r}")
        return cls(convention, w, h, sent_width, sent_height, order)

    @property
    def relative(self) -> bool:
        return self.convention in ("grid1000", "unit")

    def _xy(self, first: float, second: float) -> tuple[float, float]:
        """The values as the model wrote them, as (x, y)."""
        return (second, first) if self.order == "yx" else (first, second)

    def check(self, first: float, second: float) -> None:
        """Raise ``CoordinateError`` unless the point is a finite point inside this frame."""
        x, y = self._xy(first, second)
        finite = math.isfinite(x) and math.isfinite(y)
        if self.relative:
            inside = finite and 0 <= x <= self.width and 0 <= y <= self.height
            shape = f"0..{self.width:g} x 0..{self.height:g}"
        else:
            inside = finite and 0 <= x < self.width and 0 <= y < self.height
            shape = f"{self.width:g}x{self.height:g}"
        if not inside:
            raise CoordinateError(
                f"({x:g}, {y:g}) is outside the model's {self.convention} frame ({shape})",
                stage="model frame",
                x=x,
                y=y,
                bounds=(self.width, self.height),
            )

    def to_sent(self, first: float, second: float) -> tuple[int, int]:
        """The sent-image pixel under the model's point (in its order); bounds-checked."""
        self.check(first, second)
        x, y = self._xy(first, second)
        sx = math.floor(x * self.sent_width / self.width)
        sy = math.floor(y * self.sent_height / self.height)
        # The far edge of a relative frame (x == 1000) belongs to the last pixel.
        return min(sx, self.sent_width - 1), min(sy, self.sent_height - 1)

    def from_sent(self, x: int, y: int) -> tuple[float, float]:
        """The model coordinates (in its order) of the centre of sent pixel (x, y): the inverse
        of ``to_sent``."""
        if not (0 <= x < self.sent_width and 0 <= y < self.sent_height):
            raise CoordinateError(
                f"({x}, {y}) is outside the {self.sent_width}x{self.sent_height} sent image",
                stage="sent image",
                x=x,
                y=y,
                bounds=(self.sent_width, self.sent_height),
            )
        return self._xy(
            (x + 0.5) * self.width / self.sent_width,
            (y + 0.5) * self.height / self.sent_height,
        )


class CoordinateChain:
    """The transform chain for one screenshot (and the image made from it, when one was sent).

    ``sent`` is the ``EncodedImage`` a model saw (``None`` when only screenshot pixels are
    involved, as for OCR); ``geometry`` adds the check that screen points lie on a monitor.
    """

    def __init__(
        self,
        screenshot: Screenshot,
        sent: EncodedImage | None = None,
        geometry: ScreenGeometry | None = None,
    ) -> None:
        if screenshot.scale <= 0 or not math.isfinite(screenshot.scale):
            raise ValueError(f"screenshot scale must be positive, not {screenshot.scale}")
        width, height = screenshot.image.size
        if sent is not None and (sent.source_width, sent.source_height) != (width, height):
            raise ValueError(
                f"the sent image was made from a {sent.source_width}x{sent.source_height} "
                f"screenshot, not this {width}x{height} one"
            )
        self.screenshot = screenshot
        self.sent = sent
        self.geometry = geometry
        self.width, self.height = width, height

    def frame(self, convention: Convention | PointConvention) -> Frame:
        """The frame a model of ``convention`` answers in for the image it was sent."""
        spec = (
            convention if isinstance(convention, PointConvention) else PointConvention(convention)
        )
        if self.sent is None:
            return Frame.of(spec, self.width, self.height)
        return Frame.of(spec, self.sent.width, self.sent.height)

    # -- sent image <-> screenshot -------------------------------------------------------------

    def sent_to_screenshot(self, x: int, y: int) -> tuple[int, int]:
        if self.sent is None:
            self._check_pixel(x, y)
            return x, y
        try:
            return self.sent.to_screenshot(x, y)
        except PointOutsideImageError as err:
            raise CoordinateError(
                str(err), stage="sent image", x=x, y=y, bounds=(self.sent.width, self.sent.height)
            ) from err

    def screenshot_to_sent(self, x: int, y: int) -> tuple[int, int]:
        self._check_pixel(x, y)
        return (x, y) if self.sent is None else self.sent.from_screenshot(x, y)

    # -- screenshot <-> screen -----------------------------------------------------------------

    def screenshot_to_screen(self, x: int, y: int) -> Point:
        """The screen point shown at screenshot pixel (x, y)."""
        self._check_pixel(x, y)
        shot = self.screenshot
        point = Point(
            shot.origin.x + math.floor(x / shot.scale), shot.origin.y + math.floor(y / shot.scale)
        )
        if self.geometry is not None and not self.geometry.contains(point):
            raise CoordinateError(
                f"screen point ({point.x}, {point.y}) is on no monitor "
                f"(screen bounds {self.geometry.bounds})",
                stage="screen",
                x=point.x,
                y=point.y,
                bounds=self.geometry.bounds,
            )
        return point

    def screen_to_pixel(self, point: Point) -> tuple[int, int]:
        """The screenshot pixel at the centre of screen point ``point``, unchecked: it may lie
        off the screenshot (a mark drawn there is cut off)."""
        x, y = screen_to_pixel(self.screenshot, point.x + 0.5, point.y + 0.5)
        return math.floor(x), math.floor(y)

    def shows(self, point: Point) -> bool:
        """Whether screen point ``point`` is on this screenshot."""
        x, y = self.screen_to_pixel(point)
        return 0 <= x < self.width and 0 <= y < self.height

    def screen_to_screenshot(self, point: Point) -> tuple[int, int]:
        """The screenshot pixel at the centre of screen point ``point``."""
        if not self.shows(point):
            shot = self.screenshot
            raise CoordinateError(
                f"screen point ({point.x}, {point.y}) is outside this screenshot",
                stage="screen",
                x=point.x,
                y=point.y,
                bounds=(
                    shot.origin.x,
                    shot.origin.y,
                    self.width / shot.scale,
                    self.height / shot.scale,
                ),
            )
        return self.screen_to_pixel(point)

    def box_to_screen(self, box: Box) -> Box:
        """A box in screenshot pixels as a box in screen coordinates."""
        top_left = self.screenshot_to_screen(box.x, box.y)
        bottom_right = self.screenshot_to_screen(
            min(box.right, self.width - 1), min(box.bottom, self.height - 1)
        )
        return Box.from_corners(top_left.x, top_left.y, bottom_right.x, bottom_right.y)

    def screen_box_to_pixels(self, box: Box) -> Box:
        """A screen box as the screenshot pixels it covers, unclipped (it may reach off the
        screenshot)."""
        left, top = screen_to_pixel(self.screenshot, box.x, box.y)
        right, bottom = screen_to_pixel(self.screenshot, box.x + box.width, box.y + box.height)
        return Box.from_corners(
            math.floor(left), math.floor(top), math.ceil(right) - 1, math.ceil(bottom) - 1
        )

    def screen_box_to_screenshot(self, box: Box) -> Box | None:
        """A screen box as screenshot pixels, clipped to the screenshot (``None`` if outside)."""
        pixels = self.screen_box_to_pixels(box)
        left, top = max(pixels.x, 0), max(pixels.y, 0)
        right, bottom = min(pixels.right, self.width - 1), min(pixels.bottom, self.height - 1)
        if left > right or top > bottom:
            return None
        return Box.from_corners(left, top, right, bottom)

    # -- the whole chain -----------------------------------------------------------------------

    def model_to_screen(self, x: float, y: float, frame: Frame) -> Point:
        """A model's point, in ``frame``, as a screen point: every link checked."""
        self._check_frame(frame)
        sx, sy = frame.to_sent(x, y)
        px, py = self.sent_to_screenshot(sx, sy)
        return self.screenshot_to_screen(px, py)

    def screen_to_model(self, point: Point, frame: Frame) -> tuple[float, float]:
        """Where a model in ``frame`` would point to hit screen point ``point``."""
        self._check_frame(frame)
        px, py = self.screen_to_screenshot(point)
        return frame.from_sent(*self.screenshot_to_sent(px, py))

    def model_box_to_screen(self, x1: float, y1: float, x2: float, y2: float, frame: Frame) -> Box:
        """A model's box (two corners in ``frame``) as a screen box."""
        a = self.model_to_screen(x1, y1, frame)
        b = self.model_to_screen(x2, y2, frame)
        return Box.from_corners(a.x, a.y, b.x, b.y)

    def _check_frame(self, frame: Frame) -> None:
        sent = (self.sent.width, self.sent.height) if self.sent else (self.width, self.height)
        if (frame.sent_width, frame.sent_height) != sent:
            raise ValueError(
                f"the frame is over a {frame.sent_width}x{frame.sent_height} image, but the "
                f"image sent was {sent[0]}x{sent[1]}"
            )

    def _check_pixel(self, x: int, y: int) -> None:
        if not (0 <= x < self.width and 0 <= y < self.height):
            raise CoordinateError(
                f"({x}, {y}) is outside the {self.width}x{self.height} screenshot",
                stage="screenshot",
                x=x,
                y=y,
                bounds=(self.width, self.height),
            )
