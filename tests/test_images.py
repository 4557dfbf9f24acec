"""Screenshot encoding and the sent-image -> screenshot mapping."""

from __future__ import annotations

import io
import math

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from PIL import Image, ImageDraw

from agent_s.images import (
    EncodedImage,
    ImageSpec,
    PointOutsideImageError,
    encode_screenshot,
    png_bytes,
)
from agent_s.models.types import ImagePart


def _screenshot(width: int = 1920, height: int = 1080, mode: str = "RGB") -> Image.Image:
    image = Image.new(mode, (width, height), "white")
    draw = ImageDraw.Draw(image)
    draw.rectangle((width // 4, height // 4, width // 2, height // 2), fill="navy")
    draw.text((10, 10), "File  Edit  View", fill="black")
    return image


def _decode(encoded: EncodedImage) -> Image.Image:
    image = Image.open(io.BytesIO(encoded.data))
    image.load()
    return image


# -- fitting -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "size", "expected"),
    [
        (ImageSpec(max_long_side=1280), (1920, 1080), (1280, 720)),
        (ImageSpec(max_long_side=1280), (1080, 1920), (720, 1280)),
        (ImageSpec(max_long_side=1280), (1280, 800), (1280, 800)),
        (ImageSpec(max_long_side=4000), (1280, 800), (1280, 800)),  # never upscaled
        (ImageSpec(max_pixels=1280 * 720), (2560, 1440), (1280, 720)),
        (ImageSpec(max_pixels=1366 * 768, max_long_side=1280), (1920, 1080), (1280, 720)),
        (ImageSpec(), (3840, 2160), (3840, 2160)),
        (ImageSpec(max_long_side=1), (1920, 1080), (1, 1)),
    ],
)
def test_fit_scales_down_to_the_binding_limit(
    spec: ImageSpec, size: tuple[int, int], expected: tuple[int, int]
) -> None:
    assert spec.fit(*size) == expected


@given(
    width=st.integers(1, 6000),
    height=st.integers(1, 6000),
    long_side=st.none() | st.integers(16, 4000),
    pixels=st.none() | st.integers(256, 10_000_000),
)
@example(width=259, height=1, long_side=None, pixels=256)  # a 1-pixel side must not shrink
def test_fit_stays_within_limits_keeps_aspect_and_never_upscales(
    width: int, height: int, long_side: int | None, pixels: int | None
) -> None:
    spec = ImageSpec(max_long_side=long_side, max_pixels=pixels)
    w, h = spec.fit(width, height)
    assert 1 <= w <= width
    assert 1 <= h <= height
    if long_side is not None:
        assert max(w, h) <= long_side
    if pixels is not None and (w, h) != (1, 1):
        assert w * h <= pixels
    if (w, h) != (width, height) and min(w, h) >= 16:
        # Floor rounding moves each side by less than two pixels from the exact scaled size.
        assert abs(w / h - width / height) <= (width / height) * (2 / min(w, h) + 0.001)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"format": "gif"},
        {"quality": 0},
        {"quality": 101},
        {"max_long_side": 0},
        {"max_pixels": 0},
    ],
)
def test_spec_rejects_bad_settings(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError, match=r"format|quality|max_"):
        ImageSpec(**kwargs)  # type: ignore[arg-type]


def test_fit_rejects_an_empty_image() -> None:
    with pytest.raises(ValueError, match="positive"):
        ImageSpec().fit(0, 10)


# -- encoding ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fmt", "media_type", "pil_format"),
    [("png", "image/png", "PNG"), ("jpeg", "image/jpeg", "JPEG"), ("webp", "image/webp", "WEBP")],
)
def test_encode_writes_the_format_at_the_fitted_size(
    fmt: str, media_type: str, pil_format: str
) -> None:
    encoded = encode_screenshot(_screenshot(), ImageSpec(format=fmt, max_long_side=1280))  # type: ignore[arg-type]
    decoded = _decode(encoded)
    assert encoded.media_type == media_type
    assert decoded.format == pil_format
    assert decoded.size == (encoded.width, encoded.height) == (1280, 720)
    assert (encoded.source_width, encoded.source_height) == (1920, 1080)
    assert encoded.nbytes == len(encoded.data) > 0
    assert encoded.resized
    assert encoded.scale_x == pytest.approx(1.5)
    assert encoded.scale_y == pytest.approx(1.5)


def test_png_within_limits_is_sent_pixel_for_pixel() -> None:
    source = _screenshot(800, 600)
    encoded = encode_screenshot(source, ImageSpec(format="png", max_long_side=1280))
    assert not encoded.resized
    assert (encoded.scale_x, encoded.scale_y) == (1.0, 1.0)
    assert _decode(encoded).convert("RGB").tobytes() == source.tobytes()


@pytest.mark.parametrize(
    ("mode", "size"), [("RGB", (1920, 1080)), ("L", (37, 1)), ("RGBA", (5, 9)), ("RGB", (1, 1))]
)
def test_png_is_lossless_in_every_mode_it_writes(mode: str, size: tuple[int, int]) -> None:
    picture = Image.effect_noise(size, 90).convert(mode)
    if mode == "RGBA":
        picture.putalpha(Image.effect_noise(size, 60))  # transparency varies too
    data = png_bytes(picture)
    decoded = Image.open(io.BytesIO(data))
    assert (decoded.format, decoded.mode, decoded.size) == ("PNG", mode, size)
    assert decoded.tobytes() == picture.tobytes()


def test_png_of_a_screen_is_much_smaller_than_its_pixels() -> None:
    encoded = encode_screenshot(_screenshot(), ImageSpec(format="png"))
    assert encoded.nbytes < 1920 * 1080 * 3 // 50


def test_jpeg_quality_changes_the_size() -> None:
    source = _screenshot()
    low = encode_screenshot(source, ImageSpec(format="jpeg", quality=20))
    high = encode_screenshot(source, ImageSpec(format="jpeg", quality=95))
    assert low.nbytes < high.nbytes


def test_jpeg_flattens_transparency_onto_white() -> None:
    source = Image.new("RGBA", (64, 64), (255, 0, 0, 0))  # fully transparent red
    encoded = encode_screenshot(source, ImageSpec(format="jpeg", quality=95))
    decoded = _decode(encoded)
    assert decoded.mode == "RGB"
    assert all(channel > 245 for channel in decoded.getpixel((32, 32)))  # type: ignore[union-attr]


def test_png_keeps_transparency_and_palette_images_become_rgb() -> None:
    rgba = encode_screenshot(Image.new("RGBA", (8, 8), (0, 0, 0, 10)), ImageSpec())
    assert _decode(rgba).mode == "RGBA"
    palette = encode_screenshot(Image.new("P", (8, 8), 3), ImageSpec(format="jpeg"))
    assert _decode(palette).mode == "RGB"


def test_downscaling_filters_instead_of_dropping_pixels() -> None:
    # One-pixel black and white columns: a nearest-neighbour resize keeps pure black or white,
    # a proper filter averages them to grey.
    stripes = Image.frombytes("L", (400, 100), bytes(255 * (x % 2) for x in range(400)) * 100)
    encoded = encode_screenshot(stripes.convert("RGB"), ImageSpec(max_long_side=200))
    values = list(_decode(encoded).convert("L").tobytes())
    assert 100 < sum(values) / len(values) < 155
    assert max(values) - min(values) < 60


def test_to_part_carries_the_bytes_and_the_sent_size() -> None:
    encoded = encode_screenshot(_screenshot(), ImageSpec(format="jpeg", max_long_side=1024))
    part = encoded.to_part()
    assert part == ImagePart(encoded.data, "image/jpeg", 1024, 576)
    assert "bytes" in repr(part)
    assert "b'" not in repr(encoded)


# -- mapping points back -----------------------------------------------------------------------


def _encoded(sent: tuple[int, int], source: tuple[int, int]) -> EncodedImage:
    return EncodedImage(b"", "image/png", sent[0], sent[1], source[0], source[1])


def test_unscaled_points_map_to_themselves() -> None:
    image = _encoded((1280, 800), (1280, 800))
    for point in [(0, 0), (640, 400), (1279, 799)]:
        assert image.to_screenshot(*point) == point


def test_scaled_points_map_to_the_centre_of_their_block() -> None:
    image = _encoded((1280, 720), (1920, 1080))  # 1.5 screenshot pixels per sent pixel
    assert image.to_screenshot(0, 0) == (0, 0)
    assert image.to_screenshot(100, 200) == (150, 300)
    assert image.to_screenshot(1279, 719) == (1919, 1079)
    half = _encoded((960, 540), (1920, 1080))  # each sent pixel covers 2x2 screenshot pixels
    assert half.to_screenshot(10, 20) == (21, 41)
    assert half.to_screenshot(959.9, 539.9) == (1919, 1079)  # clamped to the last pixel


@pytest.mark.parametrize(
    "point", [(-1, 0), (0, -0.5), (1280, 0), (0, 720), (float("nan"), 3), (3, float("inf"))]
)
def test_points_outside_the_sent_image_are_refused(point: tuple[float, float]) -> None:
    image = _encoded((1280, 720), (1920, 1080))
    with pytest.raises(PointOutsideImageError) as caught:
        image.to_screenshot(*point)
    assert (caught.value.width, caught.value.height) == (1280, 720)


def test_screenshot_points_outside_are_refused() -> None:
    with pytest.raises(PointOutsideImageError, match="screenshot"):
        _encoded((1280, 720), (1920, 1080)).from_screenshot(1920, 5)


@given(
    source_w=st.integers(1, 4000),
    source_h=st.integers(1, 3000),
    divisor=st.floats(1.0, 8.0),
    fx=st.floats(0, 1, exclude_max=True),
    fy=st.floats(0, 1, exclude_max=True),
)
def test_mapping_round_trips_and_stays_in_bounds(
    source_w: int, source_h: int, divisor: float, fx: float, fy: float
) -> None:
    sent_w = max(1, math.floor(source_w / divisor))
    sent_h = max(1, math.floor(source_h / divisor))
    image = _encoded((sent_w, sent_h), (source_w, source_h))
    x, y = math.floor(fx * sent_w), math.floor(fy * sent_h)
    sx, sy = image.to_screenshot(x, y)
    assert 0 <= sx < source_w
    assert 0 <= sy < source_h
    # The screenshot pixel contains the centre of the block the sent pixel stands for...
    assert sx <= (x + 0.5) * image.scale_x < sx + 1
    assert sy <= (y + 0.5) * image.scale_y < sy + 1
    # ...and maps back to the same sent pixel.
    assert image.from_screenshot(sx, sy) == (x, y)
