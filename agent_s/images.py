"""Screenshot encoding: what a model is sent, and the first link of the coordinate chain.

A screenshot is encoded once per step according to an ``ImageSpec`` (each model profile holds
one): downscaled if it exceeds the spec's limits (never upscaled, aspect ratio kept, LANCZOS),
then saved as PNG, JPEG or WebP. The result, an ``EncodedImage``, records the size sent, the
size of the screenshot it came from and the scale factors between the two, so a point a model
gives in the image it saw maps back to screenshot pixels exactly:

    screenshot_x = sent_x * scale_x        (scale_x = screenshot width / sent width)

``EncodedImage.to_screenshot`` does that mapping for a pixel, bounds-checked. Screenshot pixels
to screen coordinates (HiDPI, several monitors) is the next link, done by the desktop layer.

PNG is written by ``png_bytes``, not by Pillow's encoder: Pillow tries five row filters per row
and keeps the best, which costs 50-70 ms on a 1920x1080 desktop (and over 500 ms on a photo).
Here every row gets the "up" filter (the difference to the row above, one numpy subtraction)
and zlib runs at level 3: 12-16 ms on the same screens, from 15% smaller to 30% larger than
Pillow's file (``scripts/bench_step.py`` measures a step). It is an ordinary, lossless PNG.
"""

from __future__ import annotations

import io
import math
import struct
import time
import zlib
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from PIL import Image

from agent_s.models.types import ImageMediaType, ImagePart

ImageFormat = Literal["png", "jpeg", "webp"]

_MEDIA_TYPES: dict[ImageFormat, ImageMediaType] = {
    "png": "image/png",
    "jpeg": "image/jpeg",
    "webp": "image/webp",
}


@dataclass(frozen=True)
class ImageSpec:
    """How to encode screenshots for one model.

    ``max_long_side`` bounds the longer side and ``max_pixels`` the width x height product of
    the image sent (``None``: no bound). ``quality`` (1-100) applies to JPEG and WebP only.
    """

    format: ImageFormat = "png"
    quality: int = 85
    max_long_side: int | None = None
    max_pixels: int | None = None

    def __post_init__(self) -> None:
        if self.format not in _MEDIA_TYPES:
            raise ValueError(f"image format must be png, jpeg or webp, not {self.format!r}")
        if not 1 <= self.quality <= 100:
            raise ValueError(f"image quality must be 1-100, not {self.quality}")
        if self.max_long_side is not None and self.max_long_side < 1:
            raise ValueError(f"max_long_side must be at least 1, not {self.max_long_side}")
        if self.max_pixels is not None and self.max_pixels < 1:
            raise ValueError(f"max_pixels must be at least 1, not {self.max_pixels}")

    @property
    def media_type(self) -> ImageMediaType:
        return _MEDIA_TYPES[self.format]

    def fit(self, width: int, height: int) -> tuple[int, int]:
        """The size a ``width`` x ``height`` image is sent at: within both limits, never larger."""
        if width < 1 or height < 1:
            raise ValueError(f"image size must be positive, not {width}x{height}")
        factor = 1.0
        if self.max_long_side is not None:
            factor = min(factor, self.max_long_side / max(width, height))
        if self.max_pixels is not None:
            factor = min(factor, math.sqrt(self.max_pixels / (width * height)))
        if factor >= 1.0:
            return width, height
        # The epsilon keeps an exact fit (1920 * 2/3 = 1280) from flooring to 1279.
        w = max(1, math.floor(width * factor + 1e-6))
        h = max(1, math.floor(height * factor + 1e-6))
        while not self._within(w, h) and (w > 1 or h > 1):
            if (w / width >= h / height and w > 1) or h == 1:
                w -= 1
            else:
                h -= 1
        return w, h

    def _within(self, w: int, h: int) -> bool:
        long_ok = self.max_long_side is None or max(w, h) <= self.max_long_side
        pixels_ok = self.max_pixels is None or w * h <= self.max_pixels
        return long_ok and pixels_ok


class PointOutsideImageError(ValueError):
    """A point given in an image's frame lies outside that image."""

    def __init__(self, message: str, *, x: float, y: float, width: int, height: int) -> None:
        super().__init__(message)
        self.x = x
        self.y = y
        self.width = width
        self.height = height


@dataclass(frozen=True)
class EncodedImage:
    """A screenshot as sent to a model, with what is needed to map points back.

    ``width`` x ``height`` are the pixels of ``data``; ``source_width`` x ``source_height`` the
    pixels of the screenshot it was made from.
    """

    data: bytes = field(repr=False)
    media_type: ImageMediaType
    width: int
    height: int
    source_width: int
    source_height: int
    encode_seconds: float = 0.0

    @property
    def nbytes(self) -> int:
        return len(self.data)

    @property
    def scale_x(self) -> float:
        """Screenshot pixels per sent pixel, horizontally (1.0 when not resized)."""
        return self.source_width / self.width

    @property
    def scale_y(self) -> float:
        return self.source_height / self.height

    @property
    def resized(self) -> bool:
        return (self.width, self.height) != (self.source_width, self.source_height)

    def to_part(self) -> ImagePart:
        return ImagePart(self.data, self.media_type, self.width, self.height)

    def to_screenshot(self, x: float, y: float) -> tuple[int, int]:
        """The screenshot pixel under pixel (``x``, ``y``) of the image sent.

        ``x`` and ``y`` are pixel coordinates in the sent image, ``0 <= x < width`` (integers
        name pixels; fractions are allowed). The result is the screenshot pixel containing the
        centre of that sent pixel, so a point in a downscaled image maps to the middle of the
        block of screenshot pixels it stands for. Raises ``PointOutsideImageError`` for a point
        outside the sent image, or one that is not a finite number.
        """
        for value, name in ((x, "x"), (y, "y")):
            if not math.isfinite(value):
                raise PointOutsideImageError(
                    f"{name}={value} is not a finite number",
                    x=x,
                    y=y,
                    width=self.width,
                    height=self.height,
                )
        if not (0 <= x < self.width and 0 <= y < self.height):
            raise PointOutsideImageError(
                f"point ({x:g}, {y:g}) is outside the {self.width}x{self.height} image",
                x=x,
                y=y,
                width=self.width,
                height=self.height,
            )
        sx = min(self.source_width - 1, math.floor((x + 0.5) * self.scale_x))
        sy = min(self.source_height - 1, math.floor((y + 0.5) * self.scale_y))
        return sx, sy

    def from_screenshot(self, x: int, y: int) -> tuple[int, int]:
        """The sent-image pixel showing screenshot pixel (``x``, ``y``): the inverse mapping."""
        if not (0 <= x < self.source_width and 0 <= y < self.source_height):
            raise PointOutsideImageError(
                f"point ({x}, {y}) is outside the {self.source_width}x{self.source_height} "
                "screenshot",
                x=x,
                y=y,
                width=self.source_width,
                height=self.source_height,
            )
        return (
            min(self.width - 1, math.floor((x + 0.5) / self.scale_x)),
            min(self.height - 1, math.floor((y + 0.5) / self.scale_y)),
        )


def history_spec(sent: EncodedImage, *, same_size: bool) -> ImageSpec:
    """How a screenshot is kept for later requests, once it is no longer the current screen:
    JPEG at quality 60 and half the size it was sent at (``same_size``: at that size, for models
    that give coordinates in the images they see). A tenth of the bytes of the PNG or less: the
    newest screen carries the detail, the older ones what changed."""
    side = max(sent.width, sent.height)
    return ImageSpec("jpeg", 60, max_long_side=side if same_size else max(side // 2, 1))


def encode_screenshot(image: Image.Image, spec: ImageSpec) -> EncodedImage:
    """Encode ``image`` for sending per ``spec``: resize if over its limits, then compress."""
    start = time.perf_counter()
    source_width, source_height = image.size
    width, height = spec.fit(source_width, source_height)
    prepared = _prepare_mode(image, spec.format)
    if (width, height) != prepared.size:
        prepared = prepared.resize((width, height), Image.Resampling.LANCZOS, reducing_gap=3.0)
    buffer = io.BytesIO()
    if spec.format == "png":
        data = png_bytes(prepared)
    elif spec.format == "jpeg":
        prepared.save(buffer, format="JPEG", quality=spec.quality)
        data = buffer.getvalue()
    else:
        prepared.save(buffer, format="WEBP", quality=spec.quality, method=4)
        data = buffer.getvalue()
    return EncodedImage(
        data=data,
        media_type=spec.media_type,
        width=width,
        height=height,
        source_width=source_width,
        source_height=source_height,
        encode_seconds=time.perf_counter() - start,
    )


_PNG_COLOUR_TYPES = {"L": (0, 1), "RGB": (2, 3), "RGBA": (6, 4)}  # mode -> (type, channels)
_PNG_UP_FILTER = 2
PNG_ZLIB_LEVEL = 3


def png_bytes(image: Image.Image, *, level: int = PNG_ZLIB_LEVEL) -> bytes:
    """``image`` (mode L, RGB or RGBA; others go through Pillow) as a PNG file: each row
    "up"-filtered, the whole compressed with zlib at ``level`` (see the module docstring)."""
    if image.mode not in _PNG_COLOUR_TYPES:
        buffer = io.BytesIO()
        image.save(buffer, format="PNG", compress_level=level)
        return buffer.getvalue()
    colour_type, channels = _PNG_COLOUR_TYPES[image.mode]
    width, height = image.size
    rows = np.asarray(image, dtype=np.uint8).reshape(height, width * channels)
    filtered = np.empty((height, width * channels + 1), dtype=np.uint8)
    filtered[:, 0] = _PNG_UP_FILTER
    filtered[0, 1:] = rows[0]
    np.subtract(rows[1:], rows[:-1], out=filtered[1:, 1:])  # wraps modulo 256, as PNG wants
    header = struct.pack(">IIBBBBB", width, height, 8, colour_type, 0, 0, 0)
    return b"".join(
        (
            b"\x89PNG\r\n\x1a\n",
            _png_chunk(b"IHDR", header),
            _png_chunk(b"IDAT", zlib.compress(filtered.data, level)),
            _png_chunk(b"IEND", b""),
        )
    )


def _png_chunk(kind: bytes, body: bytes) -> bytes:
    checksum = zlib.crc32(body, zlib.crc32(kind))
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", checksum)


def _prepare_mode(image: Image.Image, fmt: ImageFormat) -> Image.Image:
    """Convert to a mode the format stores: RGB for JPEG (any alpha flattened onto white)."""
    has_alpha = image.mode in ("RGBA", "LA", "PA") or (
        image.mode == "P" and "transparency" in image.info
    )
    if has_alpha and fmt == "jpeg":
        rgba = image.convert("RGBA")
        flat = Image.new("RGB", image.size, (255, 255, 255))
        flat.paste(rgba, mask=rgba.getchannel("A"))
        return flat
    if has_alpha:
        return image if image.mode == "RGBA" else image.convert("RGBA")
    return image if image.mode in ("RGB", "L") else image.convert("RGB")
