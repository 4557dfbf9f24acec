"""OSWorld's picture metrics: ``compare_images`` (structural similarity, SSIM), sizes, OCR.

SSIM here is the classic definition with scikit-image's defaults (7x7 uniform window, sample
covariance, K1 = 0.01, K2 = 0.03, data range 255, mean over the windows that fit inside the
image), computed with numpy box sums instead of a scikit-image dependency. Colour images
(``channel_axis=2`` in scikit-image) score the mean of their channels' SSIMs.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np

WINDOW = 7
_K1, _K2, _RANGE = 0.01, 0.03, 255.0


def _box_mean(a: np.ndarray, size: int) -> np.ndarray:
    """The mean of every ``size`` x ``size`` window that fits inside ``a``."""
    total = np.pad(a, ((1, 0), (1, 0))).cumsum(axis=0).cumsum(axis=1)
    sums = total[size:, size:] - total[:-size, size:] - total[size:, :-size] + total[:-size, :-size]
    return sums / float(size * size)


def ssim(a: np.ndarray, b: np.ndarray, win_size: int = WINDOW) -> float:
    """Mean SSIM of two equally sized images of 0..255 values: grey (2-D) or with channels
    last (3-D, the mean of the channels' SSIMs, as scikit-image's ``channel_axis=2``).

    ``win_size`` is odd, at least 3 (scikit-image divides by zero at 1) and at most the
    smaller side; anything else raises ``ValueError``."""
    if a.shape != b.shape:
        raise ValueError(f"images differ in shape: {a.shape} vs {b.shape}")
    if a.ndim == 3:
        return float(np.mean([ssim(a[..., c], b[..., c], win_size) for c in range(a.shape[2])]))
    if a.ndim != 2:
        raise ValueError(f"SSIM needs a 2-D image or one with channels last, not {a.shape}")
    if win_size < 3 or win_size % 2 == 0:
        raise ValueError(f"SSIM window size must be odd and at least 3, not {win_size}")
    if min(a.shape) < win_size:
        raise ValueError(f"images smaller than the {win_size}x{win_size} window: {a.shape}")
    x, y = a.astype(np.float64), b.astype(np.float64)
    ux, uy = _box_mean(x, win_size), _box_mean(y, win_size)
    uxx, uyy = _box_mean(x * x, win_size), _box_mean(y * y, win_size)
    uxy = _box_mean(x * y, win_size)
    n = win_size * win_size
    norm = n / (n - 1.0)  # sample covariance
    vx, vy, vxy = norm * (uxx - ux * ux), norm * (uyy - uy * uy), norm * (uxy - ux * uy)
    c1, c2 = (_K1 * _RANGE) ** 2, (_K2 * _RANGE) ** 2
    s = ((2 * ux * uy + c1) * (2 * vxy + c2)) / ((ux * ux + uy * uy + c1) * (vx + vy + c2))
    return float(s.mean())


def compare_images(image1: Any, image2: Any, **options: Any) -> float:
    """SSIM of the two images in grey, both resized (Lanczos) to the smaller size as OSWorld
    picks it (the lesser (width, height) tuple). ``reference_base_result`` b: the score is
    (ssim - b) / (1 - b) when ssim >= b + 0.01, else 0 (b is what the unedited file gets).

    As OSWorld's, the plain score is the SSIM itself, negative for anti-correlated images
    (not clamped), and images smaller than the 7x7 window raise ``ValueError`` (the task is
    then not scored)."""
    from PIL import Image, UnidentifiedImageError

    if not image1 or not image2:
        return 0.0
    try:
        with Image.open(image1) as im1, Image.open(image2) as im2:
            grey1, grey2 = im1.convert("L"), im2.convert("L")
    except (OSError, UnidentifiedImageError):
        return 0.0
    size = min(grey1.size, grey2.size)
    grey1 = grey1.resize(size, Image.Resampling.LANCZOS)
    grey2 = grey2.resize(size, Image.Resampling.LANCZOS)
    similarity = ssim(np.asarray(grey1), np.asarray(grey2))
    base = options.get("reference_base_result")
    if base is None:
        return similarity
    if similarity >= base + 0.01:
        return (similarity - base) / (1 - base)
    return 0.0


def compare_image_list(pred_paths: Any, gold_paths: Any, **_: Any) -> float:
    """Each predicted image equals its gold image pixel for pixel (a list of pairs, or one
    pair; a missing one scores 0; images of other sizes or modes raise, as in OSWorld)."""
    from PIL import Image, ImageChops

    if not isinstance(pred_paths, list):
        pred_paths, gold_paths = [pred_paths], [gold_paths]
    for pred, gold in zip(pred_paths, gold_paths, strict=False):
        if not pred or not gold:
            return 0.0
        with Image.open(pred) as image1, Image.open(gold) as image2:
            if ImageChops.difference(image1, image2).getbbox():
                return 0.0
    return 1.0


def check_image_size(src_path: Any, rule: Mapping[str, Any], **_: Any) -> float:
    """The image is ``rule["width"]`` wide and ``rule["height"]`` high (each if given).

    As OSWorld's, the size is that of the non-transparent content (the bounding box of alpha
    > 0; 0 x 0 when all is transparent) when ``rule["ignore_transparent"]`` is set and the
    image has an alpha channel (RGBA, LA), and also, whatever the rule says, when the file
    declares a transparent colour (a palette or RGB PNG with a tRNS chunk): OSWorld's test
    reads ``ignore and alpha or transparency``."""
    from PIL import Image

    if src_path is None:
        return 0.0
    with Image.open(src_path) as image:
        has_alpha = image.mode in ("RGBA", "LA")
        if (bool(rule.get("ignore_transparent", False)) and has_alpha) or (
            "transparency" in image.info
        ):
            rgba = image if image.mode == "RGBA" else image.convert("RGBA")
            box = rgba.getchannel("A").getbbox()
            width, height = (0, 0) if box is None else (box[2] - box[0], box[3] - box[1])
        else:
            width, height = image.size
    same_height = rule.get("height") is None or height == rule["height"]
    same_width = rule.get("width") is None or width == rule["width"]
    return 1.0 if same_height and same_width else 0.0


def check_image_file_size(src_path: Any, rule: Mapping[str, Any], **_: Any) -> float:
    """The file is smaller than ``rule["max_size"]`` bytes."""
    if src_path is None:
        return 0.0
    return 1.0 if os.path.getsize(src_path) < rule["max_size"] else 0.0


def check_textbox_on_leftside(src_path: Any, **_: Any) -> float:
    """The leftmost dark pixel (grey below 128) is within the left 5 % of the image."""
    from PIL import Image

    if src_path is None:
        return 0.0
    with Image.open(src_path) as image:
        grey = np.asarray(image.convert("L"))
    width = grey.shape[1]
    columns = np.nonzero(grey < 128)[1]
    leftmost = int(columns.min()) if columns.size else width
    return 1.0 if leftmost < width * 0.05 else 0.0


def check_triangle_position(tgt_path: Any, **_: Any) -> float:
    """The triangle is in the middle: the pixels of the image's second-rarest colour (which
    OSWorld takes for the triangle's) have their centroid within 5 % of the image's size
    from its centre on both axes."""
    from PIL import Image

    if tgt_path is None:
        return 0.0
    with Image.open(tgt_path) as image:
        pixels = np.array(image)
    colours, counts = np.unique(pixels.reshape(-1, pixels.shape[2]), axis=0, return_counts=True)
    triangle = colours[np.argsort(counts)][1]
    coords = np.argwhere(np.all(pixels == triangle, axis=2))
    centroid = coords.mean(axis=0)
    centre = np.array(pixels.shape[:2]) / 2
    tolerance = 0.05 * np.array(pixels.shape[:2])
    return 1.0 if bool(np.all(np.abs(centroid - centre) < tolerance)) else 0.0


def compare_image_text(image_path: Any, rule: Mapping[str, Any], **_: Any) -> float:
    """``rule["text"]`` is a substring of the text read from the picture (``rule["type"]``
    must be ``"text"``, else ``ValueError`` as in OSWorld; no path scores 0; an unreadable
    file raises, so the task is left unscored).

    OSWorld reads with EasyOCR (English), joining its text boxes with spaces; EasyOCR needs
    torch and downloads its models, so this reads with tesseract instead (through
    ``agent_s.grounding.ocr``: greyscale, coloured regions inverted, 2x, sparse text) and joins
    the words with spaces. EasyOCR reads light-on-dark text as well as dark-on-light, which
    tesseract does not, so when the first reading lacks the text the inverted picture is read
    too. The verdicts can differ where the two engines read a glyph differently (OSWorld's
    own tasks accept "1s" for "ls" for that reason)."""
    from PIL import Image, ImageOps

    from agent_s.grounding.ocr import TesseractEngine

    if not image_path:
        return 0.0
    if rule["type"] != "text":
        raise ValueError(f"compare_image_text supports rule type 'text' only, not {rule['type']!r}")
    target = str(rule["text"])
    with Image.open(image_path) as image:
        picture = image.convert("RGB")
    engine = TesseractEngine()
    for variant in (picture, ImageOps.invert(picture)):
        text = " ".join(word for word, _box, _conf, _line in engine.read(variant))
        if target in text:
            return 1.0
    return 0.0
