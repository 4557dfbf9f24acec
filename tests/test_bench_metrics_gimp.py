"""OSWorld's picture and PDF metrics (GIMP tasks, OCR, PDF images and pages) on pictures and
PDFs made here: an edited picture against its original, scored as OSWorld's code scores it.

The pinned SSIM numbers were computed with scikit-image 0.26 (``structural_similarity(a, b,
win_size=7, channel_axis=2)``), the library OSWorld calls; the pinned perceptual-hash
distances with imagehash 4.3 (``phash(a) - phash(b)``)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageEnhance, ImageFont, UnidentifiedImageError
from pypdf import PdfWriter

from agent_s.bench.metrics import METRICS, call_metric
from agent_s.bench.metrics.gimp import (
    check_brightness_decrease_and_structure_sim,
    check_contrast_increase_and_structure_sim,
    check_file_exists_and_structure_sim,
    check_green_background,
    check_image_mirror,
    check_palette_and_structure_sim,
    check_saturation_increase_and_structure_sim,
    check_structure_sim,
    check_structure_sim_resized,
    check_structure_sim_with_threshold,
)
from agent_s.bench.metrics.images import check_image_size, compare_image_text, ssim
from agent_s.bench.metrics.pdf import check_pdf_pages, compare_pdf_images, phash

MONO = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"


def _photo(width: int = 96, height: int = 64, variant: int = 0) -> Image.Image:
    """A deterministic 'photo': colour gradients, a texture and two shapes."""
    y, x = np.mgrid[0:height, 0:width]
    texture = ((x // 6 + y // 5 + variant) % 5) * 8 - 16  # blocks, to survive resizing
    red = x * 255 // (width - 1) + texture
    green = y * 255 // (height - 1) - texture
    blue = (x + y) * 127 // (width + height - 2) + texture // 2
    pixels = np.clip(np.stack([red, green, blue], axis=-1), 0, 255).astype(np.uint8)
    image = Image.fromarray(pixels)
    draw = ImageDraw.Draw(image)
    draw.ellipse([width // 5, height // 5, width // 2, height // 2], fill=(200, 40, 60))
    draw.rectangle([width // 2, height // 2, 4 * width // 5, 9 * height // 10], fill=(30, 90, 220))
    return image


def _other() -> Image.Image:
    """A different picture of the same size."""
    return _photo(variant=3).transpose(Image.Transpose.ROTATE_180).rotate(25)


def _save(folder: Path, name: str, image: Image.Image, **params: object) -> str:
    path = folder / name
    image.save(path, **params)
    return str(path)


@pytest.fixture
def pics(tmp_path: Path) -> dict[str, str]:
    base = _photo()
    made = {
        "base": base,
        "base_copy": base.copy(),
        "darker": ImageEnhance.Brightness(base).enhance(0.6),
        "brighter": ImageEnhance.Brightness(base).enhance(1.5),
        "other_darker": ImageEnhance.Brightness(_other()).enhance(0.6),
        "contrast": ImageEnhance.Contrast(base).enhance(1.4),  # SSIM 0.75
        "flat": ImageEnhance.Contrast(base).enhance(0.6),
        "saturated": ImageEnhance.Color(base).enhance(1.2),  # H, V SSIM 0.997, 0.949
        "desaturated": ImageEnhance.Color(base).enhance(0.4),
        "mirror": base.transpose(Image.Transpose.FLIP_LEFT_RIGHT),
        "upside_down": base.transpose(Image.Transpose.FLIP_TOP_BOTTOM),
        "palette": base.convert("P", palette=Image.Palette.ADAPTIVE, colors=256),
        "half": base.resize((48, 32), Image.Resampling.LANCZOS),
        "other": _other(),
        "black": Image.new("RGB", (96, 64)),
    }
    return {name: _save(tmp_path, f"{name}.png", image) for name, image in made.items()}


# -- SSIM ----------------------------------------------------------------------------------


def test_colour_ssim_is_the_mean_of_the_channels_and_matches_scikit_image() -> None:
    a = np.array(_photo())
    b = np.array(ImageEnhance.Brightness(_photo()).enhance(0.6))
    per_channel = [ssim(a[..., c], b[..., c]) for c in range(3)]
    assert ssim(a, b) == pytest.approx(float(np.mean(per_channel)), abs=1e-12)
    # scikit-image: structural_similarity(a, b, win_size=7, channel_axis=2)
    assert ssim(a, b) == pytest.approx(0.820202840628948, abs=1e-9)
    assert ssim(a, np.array(_other())) == pytest.approx(0.09804750414855788, abs=1e-9)
    assert ssim(a, a) == pytest.approx(1.0)


def test_ssim_windows_for_small_pictures() -> None:
    a = np.array(_photo().resize((6, 5)))
    b = np.array(ImageEnhance.Brightness(_photo()).enhance(0.6).resize((6, 5)))
    # scikit-image with win_size=5 (the largest odd size that fits 5 rows)
    assert ssim(a, b, 5) == pytest.approx(0.7776951161257122, abs=1e-9)
    with pytest.raises(ValueError, match="window"):
        ssim(a, b)  # 7 does not fit
    with pytest.raises(ValueError, match="odd"):
        ssim(a, b, 1)  # scikit-image divides by zero there
    with pytest.raises(ValueError, match="shape"):
        ssim(a, b[:4])


# -- structure --------------------------------------------------------------------------------


def test_check_structure_sim(pics: dict[str, str], tmp_path: Path) -> None:
    assert check_structure_sim(pics["base"], pics["base_copy"]) == 1.0
    # different sizes score 0 before any SSIM; a different picture is not the same structure
    assert check_structure_sim(pics["half"], pics["base"]) == 0.0
    assert check_structure_sim(pics["other"], pics["base"]) == 0.0
    # the darker version is similar but under 0.9 (0.8202, see above)
    assert check_structure_sim(pics["darker"], pics["base"]) == 0.0
    # OSWorld catches everything here: a missing or broken file scores 0
    broken = tmp_path / "broken.png"
    broken.write_bytes(b"not a png")
    assert check_structure_sim(str(broken), pics["base"]) == 0.0
    assert check_structure_sim(str(tmp_path / "missing.png"), pics["base"]) == 0.0
    assert check_structure_sim(None, pics["base"]) == 0.0


def test_check_structure_sim_resized_crops_transparent_margins(
    pics: dict[str, str], tmp_path: Path
) -> None:
    # a layer scaled down and back up (PIL's default filter) keeps the structure
    assert check_structure_sim_resized(pics["half"], pics["base"]) == 1.0
    assert check_structure_sim_resized(pics["other"], pics["base"]) == 0.0
    # transparent margins are cut before resizing: the content matches the crop
    base = Image.open(pics["base"])
    layer = Image.new("RGBA", (150, 110), (0, 0, 0, 0))
    layer.paste(base.convert("RGBA"), (30, 20))
    layered = _save(tmp_path, "layered.png", layer)
    assert check_structure_sim_resized(layered, pics["base"]) == 1.0
    # the same pixels without transparency are not cut, and then do not match
    flat = _save(tmp_path, "flat_layer.png", layer.convert("RGB"))
    assert check_structure_sim_resized(flat, pics["base"]) == 0.0
    clear = _save(tmp_path, "clear.png", Image.new("RGBA", (40, 40), (0, 0, 0, 0)))
    assert check_structure_sim_resized(clear, pics["base"]) == 0.0
    # no try/except in OSWorld's: a broken file raises (the task is left unscored)
    broken = tmp_path / "broken.png"
    broken.write_bytes(b"junk")
    with pytest.raises(UnidentifiedImageError):
        check_structure_sim_resized(str(broken), pics["base"])


def test_check_structure_sim_with_threshold(pics: dict[str, str], tmp_path: Path) -> None:
    # src is resized (Lanczos) to tgt's size; the threshold defaults to 0.85
    assert check_structure_sim_with_threshold(pics["half"], pics["base"]) == 1.0
    assert check_structure_sim_with_threshold(pics["darker"], pics["base"]) == 0.0  # 0.8202
    assert (
        check_structure_sim_with_threshold(pics["darker"], pics["base"], ssim_threshold=0.8) == 1.0
    )
    assert (
        check_structure_sim_with_threshold(pics["other"], pics["base"], ssim_threshold=0.5) == 0.0
    )
    # tiny pictures use a smaller odd window; a 1-pixel side leaves a 1-pixel window: 0
    small = _save(tmp_path, "small.png", _photo().resize((6, 5)))
    darker = ImageEnhance.Brightness(_photo()).enhance(0.6).resize((6, 5))
    small_too = _save(tmp_path, "small_too.png", darker)  # SSIM 0.7777 with a 5x5 window
    assert check_structure_sim_with_threshold(small_too, small, ssim_threshold=0.77) == 1.0
    assert check_structure_sim_with_threshold(small_too, small, ssim_threshold=0.78) == 0.0
    line = _save(tmp_path, "line.png", _photo().resize((20, 1)))
    assert check_structure_sim_with_threshold(line, line) == 0.0
    assert check_structure_sim_with_threshold(str(tmp_path / "none.png"), pics["base"]) == 0.0


def test_check_file_exists_and_structure_sim(pics: dict[str, str], tmp_path: Path) -> None:
    gold = _save(tmp_path, "photo.jpg", Image.open(pics["base"]), quality=95)
    exported = tmp_path / "export.jpg"
    shutil.copy(gold, exported)
    assert check_file_exists_and_structure_sim(str(exported), gold) == 1.0
    assert check_file_exists_and_structure_sim(str(tmp_path / "no.jpg"), gold) == 0.0
    assert check_file_exists_and_structure_sim(pics["other"], gold) == 0.0
    assert check_file_exists_and_structure_sim(pics["half"], gold) == 0.0  # not resized
    assert check_file_exists_and_structure_sim(None, gold) == 0.0


# -- edits: brightness, contrast, saturation, mirror, palette, background ---------------------


def test_check_brightness_decrease(pics: dict[str, str]) -> None:
    assert check_brightness_decrease_and_structure_sim(pics["darker"], pics["base"]) == 1.0
    assert check_brightness_decrease_and_structure_sim(pics["brighter"], pics["base"]) == 0.0
    # darker, but another picture: the brightness-normalised MSE is over 0.03
    assert check_brightness_decrease_and_structure_sim(pics["other_darker"], pics["base"]) == 0.0
    # the multi-app task passes the original as src and the brightened picture as tgt, 0.15
    assert (
        check_brightness_decrease_and_structure_sim(pics["base"], pics["brighter"], threshold=0.15)
        == 1.0
    )
    # a black picture has no brightness to normalise: OSWorld divides by zero
    with pytest.raises(ZeroDivisionError):
        check_brightness_decrease_and_structure_sim(pics["black"], pics["base"])


def test_check_contrast_increase(pics: dict[str, str]) -> None:
    assert check_contrast_increase_and_structure_sim(pics["contrast"], pics["base"]) == 1.0
    assert check_contrast_increase_and_structure_sim(pics["flat"], pics["base"]) == 0.0
    assert check_contrast_increase_and_structure_sim(pics["base"], pics["base_copy"]) == 0.0


def test_check_saturation_increase(pics: dict[str, str]) -> None:
    assert check_saturation_increase_and_structure_sim(pics["saturated"], pics["base"]) == 1.0
    assert check_saturation_increase_and_structure_sim(pics["desaturated"], pics["base"]) == 0.0
    assert check_saturation_increase_and_structure_sim(pics["base"], pics["base_copy"]) == 0.0


def test_check_image_mirror(pics: dict[str, str]) -> None:
    assert check_image_mirror(pics["base"], pics["mirror"]) == 1.0
    assert check_image_mirror(pics["base"], pics["upside_down"]) == 0.0
    assert check_image_mirror(pics["base"], pics["base_copy"]) == 0.0


def test_check_palette_and_structure_sim(pics: dict[str, str], tmp_path: Path) -> None:
    assert check_palette_and_structure_sim(pics["palette"], pics["base"]) == 1.0
    assert check_palette_and_structure_sim(pics["base_copy"], pics["base"]) == 0.0  # RGB
    other = _save(tmp_path, "other_p.png", Image.open(pics["other"]).convert("P"))
    assert check_palette_and_structure_sim(other, pics["base"]) == 0.0
    empty = tmp_path / "empty.png"
    empty.write_bytes(b"")
    assert check_palette_and_structure_sim(str(empty), pics["base"]) == 0.0
    assert check_palette_and_structure_sim(pics["palette"], str(tmp_path / "gone.png")) == 0.0


def _object_on(background: tuple[int, int, int], size: tuple[int, int] = (64, 64)) -> Image.Image:
    image = Image.new("RGB", size, background)
    ImageDraw.Draw(image).ellipse([20, 20, 40, 40], fill=(0, 0, 0))
    return image


def test_check_green_background(tmp_path: Path) -> None:
    white = _save(tmp_path, "white.png", _object_on((255, 255, 255)))
    green = _save(tmp_path, "green.png", _object_on((20, 200, 30)))
    assert check_green_background(green, white) == 1.0
    spotted = _object_on((20, 200, 30))
    ImageDraw.Draw(spotted).rectangle([0, 50, 10, 60], fill=(200, 30, 30))
    assert check_green_background(_save(tmp_path, "spotted.png", spotted), white) == 0.0
    assert check_green_background(white, white) == 0.0


def test_check_green_background_reads_pixels_as_osworld_does(tmp_path: Path) -> None:
    # OSWorld indexes the arrays [x, y] (row x): a wider picture runs off the rows and raises
    wide_white = _save(tmp_path, "wide_white.png", Image.new("RGB", (80, 50), "white"))
    wide_green = _save(tmp_path, "wide_green.png", Image.new("RGB", (80, 50), (0, 255, 0)))
    with pytest.raises(IndexError):
        check_green_background(wide_green, wide_white)
    # ... a taller one runs off the columns of its first row, unless a pixel there fails first
    tall_white = _save(tmp_path, "tall_white.png", Image.new("RGB", (50, 80), "white"))
    tall_green = _save(tmp_path, "tall_green.png", Image.new("RGB", (50, 80), (0, 255, 0)))
    with pytest.raises(IndexError):
        check_green_background(tall_green, tall_white)
    top_red = Image.new("RGB", (50, 80), (0, 255, 0))
    ImageDraw.Draw(top_red).rectangle([0, 0, 5, 5], fill=(255, 0, 0))
    assert check_green_background(_save(tmp_path, "top.png", top_red), tall_white) == 0.0
    # a grey target has no channels to read
    grey = _save(tmp_path, "grey.png", Image.new("L", (64, 64), 255))
    with pytest.raises(IndexError):
        check_green_background(_save(tmp_path, "g.png", _object_on((0, 255, 0))), grey)


# -- image size with transparency -----------------------------------------------------------


def test_check_image_size_can_ignore_transparent_margins(tmp_path: Path) -> None:
    layer = Image.new("RGBA", (200, 700), (0, 0, 0, 0))
    layer.paste(Image.new("RGBA", (120, 512), (10, 200, 10, 255)), (40, 100))
    path = _save(tmp_path, "resized.png", layer)
    assert check_image_size(path, {"height": 512, "ignore_transparent": True}) == 1.0
    assert check_image_size(path, {"height": 512}) == 0.0  # the canvas is 700 high
    assert check_image_size(path, {"height": 700}) == 1.0
    assert check_image_size(path, {"width": 121, "ignore_transparent": True}) == 0.0
    # a declared transparent colour (tRNS) measures the content even unasked, as OSWorld's
    # `ignore and alpha or transparency` reads
    palette = Image.new("P", (100, 100), 0)
    palette.putpalette([0, 0, 0, 255, 0, 0] + [0] * 762)
    ImageDraw.Draw(palette).rectangle([10, 10, 39, 59], fill=1)
    trns = _save(tmp_path, "trns.png", palette, transparency=0)
    assert check_image_size(trns, {"width": 30, "height": 50}) == 1.0
    assert check_image_size(trns, {"width": 100}) == 0.0


# -- OCR ------------------------------------------------------------------------------------


def _terminal(path: Path, lines: list[str], background: tuple[int, int, int]) -> str:
    image = Image.new("RGB", (640, 160), background)
    draw = ImageDraw.Draw(image)
    font = ImageFont.truetype(MONO, 16)
    for i, line in enumerate(lines):
        draw.text((10, 10 + 26 * i), line, font=font, fill=(230, 230, 230))
    image.save(path)
    return str(path)


def test_compare_image_text_reads_a_terminal_screenshot(tmp_path: Path) -> None:
    listing = _terminal(
        tmp_path / "ls.png", ["user@ubuntu:~$ ls", "Desktop  Documents  Music"], (48, 10, 36)
    )
    black = _terminal(tmp_path / "pwd.png", ["user@ubuntu:~$ pwd", "/home/user"], (0, 0, 0))
    rule = {"type": "text", "text": "Documents"}
    assert compare_image_text(listing, rule) == 1.0
    assert compare_image_text(black, rule) == 0.0
    assert compare_image_text(black, {"type": "text", "text": "/home/user"}) == 1.0
    assert compare_image_text(None, rule) == 0.0
    with pytest.raises(ValueError, match="rule type"):
        compare_image_text(listing, {"type": "regex", "text": "D.*"})
    with pytest.raises(FileNotFoundError):
        compare_image_text(str(tmp_path / "missing.png"), rule)


# -- PDF --------------------------------------------------------------------------------------


def _pdf(path: Path, pages: list[Image.Image]) -> str:
    pages[0].save(path, save_all=True, append_images=pages[1:])
    return str(path)


def _blank_pdf(path: Path, pages: int) -> str:
    writer = PdfWriter()
    for _ in range(pages):
        writer.add_blank_page(200, 200)
    writer.write(path)
    return str(path)


def test_phash_matches_imagehash() -> None:
    base = _photo()
    # imagehash.phash(a) - imagehash.phash(b)
    assert int(np.count_nonzero(phash(base) != phash(base.convert("L")))) == 0
    darker = ImageEnhance.Brightness(base).enhance(0.9)
    assert int(np.count_nonzero(phash(base) != phash(darker))) == 2
    assert int(np.count_nonzero(phash(base) != phash(_other()))) == 38
    assert phash(base).shape == (8, 8)


def test_compare_pdf_images(tmp_path: Path) -> None:
    receipt = _photo(120, 200)
    gold = _pdf(tmp_path / "gold.pdf", [receipt])
    # the same picture saved again, as a JPEG, still hashes alike
    again = _pdf(tmp_path / "receipt.pdf", [receipt.convert("L").convert("RGB")])
    assert compare_pdf_images(again, gold) == 1.0
    wrong = _pdf(tmp_path / "wrong.pdf", [_other().resize((120, 200))])
    assert compare_pdf_images(wrong, gold) == 0.0
    # images are paired in order; the score is the share that match
    two = _pdf(tmp_path / "two.pdf", [receipt, _photo(96, 64)])
    half = _pdf(tmp_path / "half.pdf", [receipt, _other()])
    assert compare_pdf_images(half, two) == 0.5
    assert compare_pdf_images(two, gold) == 0.0  # 2 images against 1
    blank = _blank_pdf(tmp_path / "blank.pdf", 1)
    assert compare_pdf_images(blank, _blank_pdf(tmp_path / "blank2.pdf", 2)) == 1.0  # no images
    junk = tmp_path / "junk.pdf"
    junk.write_bytes(b"not a pdf")
    assert compare_pdf_images(str(junk), gold) == 0.0
    assert compare_pdf_images(str(tmp_path / "missing.pdf"), gold) == 0.0
    assert compare_pdf_images(None, gold) == 0.0


def test_check_pdf_pages(tmp_path: Path) -> None:
    one = _pdf(tmp_path / "one.pdf", [_photo()])
    three = _blank_pdf(tmp_path / "three.pdf", 3)
    assert check_pdf_pages(one, {"relation": "eq", "ref_value": 1}) == 1.0
    assert check_pdf_pages(three, {"relation": "eq", "ref_value": 1}) == 0.0
    assert check_pdf_pages(three, {"relation": "ge", "ref_value": 2}) == 1.0
    assert check_pdf_pages(three, {"relation": "lt", "ref_value": 3}) == 0.0
    assert check_pdf_pages(None, {"relation": "eq", "ref_value": 1}) == 0.0
    with pytest.raises(ValueError, match="relation"):
        check_pdf_pages(one, {"relation": "add", "ref_value": 1})


# -- registry ---------------------------------------------------------------------------------


NAMES = [
    "check_structure_sim",
    "check_structure_sim_resized",
    "check_structure_sim_with_threshold",
    "check_brightness_decrease_and_structure_sim",
    "check_contrast_increase_and_structure_sim",
    "check_saturation_increase_and_structure_sim",
    "check_file_exists_and_structure_sim",
    "check_green_background",
    "check_image_mirror",
    "check_palette_and_structure_sim",
    "compare_image_text",
    "compare_pdf_images",
    "check_pdf_pages",
]


def test_metrics_are_registered_under_osworld_names(pics: dict[str, str], tmp_path: Path) -> None:
    for name in NAMES:
        assert name in METRICS, name
    # as a task calls them: result first, expected second, options as keywords
    assert call_metric("check_image_mirror", pics["base"], pics["mirror"], {}) == 1.0
    copied = tmp_path / "copied.png"
    shutil.copy(pics["base"], copied)
    assert (
        call_metric(
            "check_structure_sim_with_threshold",
            str(copied),
            pics["base"],
            {"ssim_threshold": 0.85},
        )
        == 1.0
    )
