"""OSWorld's GIMP picture metrics: an edited picture against the original or a gold one.

Each function gives the verdict of OSWorld's function of the same name (its
``desktop_env/evaluators/metrics/gimp.py``) on the same files, failing where it fails:

- "same structure" is SSIM over the RGB channels (scikit-image's ``channel_axis=2`` with its
  defaults, ``agent_s.bench.metrics.images.ssim``) at or above a threshold (0.9 unless said),
  on pictures of the same size, both sides at least 7 pixels; anything else is "not the
  same" (OSWorld's ``structure_check_by_ssim`` does not resize, except where noted);
- brightness is the mean of the picture in grey (PIL's "L"); saturation the mean of HSV's S;
  contrast the standard deviation of all the picture's values (alpha included, as OSWorld).

Metrics that OSWorld wraps in ``try``/``except`` score 0 on unreadable files; the others raise
(the task is then left unscored), as OSWorld's raise. ``src`` is the task's ``result`` and
``tgt`` its ``expected`` unless the task swaps them (one brightness task does).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
from PIL import Image, ImageStat

from agent_s.bench.metrics.images import WINDOW, ssim

SSIM_THRESHOLD = 0.9
_MIN_SIDE = 7


def _brightness(image: Image.Image) -> float:
    return float(ImageStat.Stat(image.convert("L")).mean[0])


def _normalized_brightness(image: Image.Image, target: float = 128) -> Image.Image:
    """Every band's values scaled by ``target / brightness`` (truncated, clamped to 0..255),
    through PIL's ``point`` as OSWorld does; a black picture raises ``ZeroDivisionError``."""
    factor = target / _brightness(image)

    def scale(value: int) -> int:
        return min(255, max(0, int(value * factor)))

    return image.point(scale)


def _rgb(image: Image.Image) -> Image.Image:
    return image if image.mode == "RGB" else image.convert("RGB")


def same_by_mse(image1: Image.Image, image2: Image.Image, threshold: float = 0.03) -> bool:
    """Mean squared difference of the RGB values in 0..1 (float32) below ``threshold``,
    ``image1`` first resized (Lanczos) to ``image2``'s size when they differ."""
    if image1.size != image2.size:
        image1 = image1.resize(image2.size, Image.Resampling.LANCZOS)
    a = np.array(_rgb(image1), dtype=np.float32) / 255
    b = np.array(_rgb(image2), dtype=np.float32) / 255
    return bool(np.mean((a - b) ** 2) < threshold)


def _window(height: int, width: int) -> int:
    """scikit-image's 7, or the largest odd size that fits a smaller picture."""
    side = min(height, width)
    if side >= WINDOW:
        return WINDOW
    return side if side % 2 == 1 else side - 1


def same_by_ssim(
    image1: Image.Image, image2: Image.Image, threshold: float = SSIM_THRESHOLD
) -> bool:
    """RGB SSIM >= ``threshold``; False for pictures of different sizes or under 7 pixels."""
    if min(image1.size) < _MIN_SIDE or min(image2.size) < _MIN_SIDE:
        return False
    if image1.size != image2.size:
        return False
    a, b = np.array(_rgb(image1)), np.array(_rgb(image2))
    if a.shape != b.shape:
        return False
    try:
        similarity = ssim(a, b, _window(a.shape[0], a.shape[1]))
    except ValueError:  # OSWorld: an SSIM that fails is "not the same"
        return False
    return similarity >= threshold


def check_brightness_decrease_and_structure_sim(
    src_path: Any, tgt_path: Any, threshold: float = 0.03, **_: Any
) -> float:
    """``src`` is darker than ``tgt`` and, both brought to brightness 128, they differ by a
    mean squared error under ``threshold`` (0.03)."""
    if src_path is None or tgt_path is None:
        return 0.0
    with Image.open(src_path) as src, Image.open(tgt_path) as tgt:
        darker = _brightness(tgt) > _brightness(src)
        same = same_by_mse(_normalized_brightness(src), _normalized_brightness(tgt), threshold)
    return 1.0 if darker and same else 0.0


def check_saturation_increase_and_structure_sim(src_path: Any, tgt_path: Any, **_: Any) -> float:
    """``src`` is more saturated than ``tgt`` (mean of HSV's S) and their hue and value
    channels each have the same structure (SSIM >= 0.9)."""
    if src_path is None or tgt_path is None:
        return 0.0
    with Image.open(src_path) as src, Image.open(tgt_path) as tgt:
        hsv_src, hsv_tgt = src.convert("HSV"), tgt.convert("HSV")
    h1, s1, v1 = hsv_src.split()
    h2, s2, v2 = hsv_tgt.split()
    more_saturated = float(np.mean(np.array(s2))) < float(np.mean(np.array(s1)))
    same = same_by_ssim(h1, h2) and same_by_ssim(v1, v2)
    return 1.0 if more_saturated and same else 0.0


def check_file_exists_and_structure_sim(src_path: Any, tgt_path: Any, **_: Any) -> float:
    """``src`` is a file and has the same structure as ``tgt`` (SSIM >= 0.9, same size)."""
    if src_path is None or tgt_path is None:
        return 0.0
    if not os.path.isfile(src_path):
        return 0.0
    with Image.open(src_path) as src, Image.open(tgt_path) as tgt:
        return 1.0 if same_by_ssim(src, tgt) else 0.0


def check_structure_sim(src_path: Any, tgt_path: Any, **_: Any) -> float:
    """The two pictures have the same size and structure (SSIM >= 0.9); an unreadable file
    scores 0 (OSWorld catches every error here)."""
    if src_path is None or tgt_path is None:
        return 0.0
    try:
        with Image.open(src_path) as src, Image.open(tgt_path) as tgt:
            if src.size != tgt.size:
                return 0.0
            return 1.0 if same_by_ssim(src, tgt) else 0.0
    except Exception:  # noqa: BLE001  (OSWorld: any error scores 0)
        return 0.0


def check_structure_sim_resized(src_path: Any, tgt_path: Any, **_: Any) -> float:
    """``src`` resized to ``tgt``'s size (PIL's default filter) has ``tgt``'s structure.

    A picture with transparency (RGBA, LA, or a declared transparent colour) is first cut to
    the bounding box of its non-transparent pixels (all transparent scores 0)."""
    if src_path is None or tgt_path is None:
        return 0.0
    with Image.open(src_path) as src, Image.open(tgt_path) as tgt:
        if src.mode in ("RGBA", "LA") or "transparency" in src.info:
            rgba = src if src.mode == "RGBA" else src.convert("RGBA")
            box = rgba.getchannel("A").getbbox()
            if box is None:
                return 0.0
            resized = rgba.crop(box).convert("RGB").resize(tgt.size)
        else:
            resized = src.resize(tgt.size)
        return 1.0 if same_by_ssim(resized, _rgb(tgt)) else 0.0


def _contrast(image: Image.Image) -> np.floating[Any]:
    return np.std(np.asarray(image, dtype=np.float32))


def check_contrast_increase_and_structure_sim(src_path: Any, tgt_path: Any, **_: Any) -> float:
    """``src`` has more contrast than ``tgt`` (standard deviation of its values) and the same
    structure at a lower bar (SSIM >= 0.65, same size)."""
    if src_path is None or tgt_path is None:
        return 0.0
    with Image.open(src_path) as src, Image.open(tgt_path) as tgt:
        higher = bool(_contrast(tgt) < _contrast(src))
        same = same_by_ssim(src, tgt, threshold=0.65)
    return 1.0 if higher and same else 0.0


def check_image_mirror(src_path: Any, tgt_path: Any, **_: Any) -> float:
    """``src`` flipped left to right has ``tgt``'s structure at SSIM >= 0.99."""
    if src_path is None or tgt_path is None:
        return 0.0
    with Image.open(src_path) as src, Image.open(tgt_path) as tgt:
        flipped = src.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
        return 1.0 if same_by_ssim(flipped, tgt, threshold=0.99) else 0.0


def check_green_background(src_path: Any, tgt_path: Any, **_: Any) -> float:
    """Wherever ``tgt`` is not black, ``src`` is green (G above both R and B).

    OSWorld walks x over ``tgt``'s width and y over its height but reads the pixel arrays as
    ``[x, y]``, i.e. row x, column y: on a square picture that is every pixel; on any other
    it raises ``IndexError`` on reaching a row (wider) or column (taller) that is not there,
    unless it found a non-green pixel first. A grey ``tgt`` (no channels) raises, as does a
    ``src`` without three channels, or smaller, where it is read. This walks the same pixels
    in the same order, a row of the array at a time."""
    if src_path is None or tgt_path is None:
        return 0.0
    with Image.open(src_path) as src_image, Image.open(tgt_path) as tgt_image:
        source, target = np.array(src_image), np.array(tgt_image)
        width, height = tgt_image.size
    for x in range(width):
        if height == 0:
            break
        if x >= target.shape[0]:
            raise IndexError(f"index {x} is out of bounds for axis 0 with size {target.shape[0]}")
        if target.ndim < 3:
            raise IndexError("invalid index to scalar variable (the target picture is grey)")
        inside = min(height, target.shape[1])
        row = target[x, :inside]
        if row.shape[1] < 3:  # a 2-tuple never equals (0, 0, 0)
            background = np.ones(inside, dtype=bool)
        else:
            background = np.any(row[:, :3] != 0, axis=1)
        ys = np.flatnonzero(background)
        if ys.size:
            if x >= source.shape[0]:
                raise IndexError(f"index {x} is out of bounds for the source's {source.shape[0]}")
            if source.ndim < 3:
                raise IndexError("invalid index to scalar variable (the source picture is grey)")
            if source.shape[2] < 3:
                raise ValueError(f"not enough values to unpack (expected 3, got {source.shape[2]})")
            readable = ys < source.shape[1]
            pixels = source[x, ys[readable], :3].astype(np.int64)
            green = np.zeros(ys.size, dtype=bool)
            green[readable] = (pixels[:, 1] > pixels[:, 0]) & (pixels[:, 1] > pixels[:, 2])
            failing = np.flatnonzero(~readable | ~green)
            if failing.size:
                if not readable[failing[0]]:
                    raise IndexError(
                        f"index {ys[failing[0]]} is out of bounds for the source's width"
                    )
                return 0.0
        if inside < height:
            raise IndexError(f"index {inside} is out of bounds for axis 1 with size {inside}")
    return 1.0


def _open_verified(path: Any) -> Image.Image | None:
    """The picture, fully decoded; ``None`` when missing, empty or unreadable."""
    try:
        if not os.path.exists(path) or os.path.getsize(path) == 0:
            return None
        image = Image.open(path)
        image.load()
    except Exception:  # noqa: BLE001  (OSWorld: any failure to open is "no picture")
        return None
    return image


def check_palette_and_structure_sim(src_path: Any, tgt_path: Any, **_: Any) -> float:
    """``src`` is a palette picture (mode P) with ``tgt``'s structure (SSIM >= 0.9, same size).

    A missing, empty or unreadable file scores 0, as does any error (OSWorld retries the
    opening three times, 0.5 s apart, for a file still being written; the file here has been
    fetched whole already, so it is opened once)."""
    if src_path is None or tgt_path is None:
        return 0.0
    source = _open_verified(src_path)
    if source is None:
        return 0.0
    try:
        palette = source.mode == "P"
        target = _open_verified(tgt_path)
        if target is None:
            return 0.0
        try:
            same = same_by_ssim(source.convert("RGB"), target)
        finally:
            target.close()
        return 1.0 if palette and same else 0.0
    except Exception:  # noqa: BLE001  (OSWorld: any error scores 0)
        return 0.0
    finally:
        source.close()


def check_structure_sim_with_threshold(src_path: Any, tgt_path: Any, **options: Any) -> float:
    """``src`` resized (Lanczos) to ``tgt``'s size has SSIM >= ``ssim_threshold`` (0.85) with
    it over the RGB channels; pictures under 7 pixels use the largest odd window that fits
    (a 1-pixel window fails). Any error scores 0, as in OSWorld."""
    if src_path is None or tgt_path is None:
        return 0.0
    threshold = options.get("ssim_threshold", 0.85)
    try:
        with Image.open(src_path) as src, Image.open(tgt_path) as tgt:
            source = src if src.size == tgt.size else src.resize(tgt.size, Image.Resampling.LANCZOS)
            a, b = np.array(_rgb(source)), np.array(_rgb(tgt))
        window = _window(a.shape[0], a.shape[1])
        if window < 1:
            return 0.0
        return 1.0 if ssim(a, b, window) >= threshold else 0.0
    except Exception:  # noqa: BLE001  (OSWorld: any error scores 0)
        return 0.0
