"""OSWorld's ``compare_images``: the structural similarity (SSIM) of two pictures.

SSIM here is the classic definition with scikit-image's defaults (7x7 uniform window, sample
covariance, K1 = 0.01, K2 = 0.03, data range 255, mean over the windows that fit inside the
image), computed with numpy box sums instead of a scikit-image dependency.
"""

from __future__ import annotations

from typing import Any

import numpy as np

WINDOW = 7
_K1, _K2, _RANGE = 0.01, 0.03, 255.0


def _box_mean(a: np.ndarray, size: int) -> np.ndarray:
    """The mean of every ``size`` x ``size`` window that fits inside ``a``."""
    total = np.pad(a, ((1, 0), (1, 0))).cumsum(axis=0).cumsum(axis=1)
    sums = total[size:, size:] - total[:-size, size:] - total[size:, :-size] + total[:-size, :-size]
    return sums / float(size * size)


def ssim(a: np.ndarray, b: np.ndarray) -> float:
    """Mean SSIM of two equally sized grey images (uint8 values); both sides >= 7 pixels."""
    if a.shape != b.shape:
        raise ValueError(f"images differ in shape: {a.shape} vs {b.shape}")
    if min(a.shape) < WINDOW:
        raise ValueError(f"images smaller than the {WINDOW}x{WINDOW} window: {a.shape}")
    x, y = a.astype(np.float64), b.astype(np.float64)
    ux, uy = _box_mean(x, WINDOW), _box_mean(y, WINDOW)
    uxx, uyy, uxy = _box_mean(x * x, WINDOW), _box_mean(y * y, WINDOW), _box_mean(x * y, WINDOW)
    n = WINDOW * WINDOW
    norm = n / (n - 1.0)  # sample covariance
    vx, vy, vxy = norm * (uxx - ux * ux), norm * (uyy - uy * uy), norm * (uxy - ux * uy)
    c1, c2 = (_K1 * _RANGE) ** 2, (_K2 * _RANGE) ** 2
    s = ((2 * ux * uy + c1) * (2 * vxy + c2)) / ((ux * ux + uy * uy + c1) * (vx + vy + c2))
    return float(s.mean())


def compare_images(image1: Any, image2: Any, **options: Any) -> float:
    """SSIM of the two images in grey, both resized (Lanczos) to the smaller size as OSWorld
    picks it (the lesser (width, height) tuple). ``reference_base_result`` b: the score is
    (ssim - b) / (1 - b) when ssim >= b + 0.01, else 0 (b is what the unedited file gets)."""
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
    try:
        similarity = ssim(np.asarray(grey1), np.asarray(grey2))
    except ValueError:  # too small for the window
        return 0.0
    base = options.get("reference_base_result")
    if base is None:
        return max(0.0, similarity)
    if similarity >= base + 0.01:
        return (similarity - base) / (1 - base)
    return 0.0
