"""Colour difference as OSWorld measures it: sRGB to CIELAB (D65, 2° observer) and the
CIEDE2000 difference, as scikit-image's ``rgb2lab`` and ``deltaE_ciede2000`` compute them."""

from __future__ import annotations

import math
from collections.abc import Sequence

_XYZ_FROM_RGB = (
    (0.412453, 0.357580, 0.180423),
    (0.212671, 0.715160, 0.072169),
    (0.019334, 0.119193, 0.950227),
)
_D65 = (0.95047, 1.0, 1.08883)


def rgb_to_lab(rgb: Sequence[float]) -> tuple[float, float, float]:
    """CIELAB of an sRGB colour given as 0..255 channels."""
    linear = []
    for channel in rgb:
        c = channel / 255.0
        linear.append(((c + 0.055) / 1.055) ** 2.4 if c > 0.04045 else c / 12.92)
    xyz = [sum(m * c for m, c in zip(row, linear, strict=True)) for row in _XYZ_FROM_RGB]
    f = []
    for value, white in zip(xyz, _D65, strict=True):
        t = value / white
        f.append(t ** (1.0 / 3.0) if t > 0.008856 else 7.787 * t + 16.0 / 116.0)
    return 116.0 * f[1] - 16.0, 500.0 * (f[0] - f[1]), 200.0 * (f[1] - f[2])


def _polar(x: float, y: float) -> tuple[float, float]:
    angle = math.atan2(y, x)
    return math.hypot(x, y), angle + 2 * math.pi if angle < 0 else angle


def delta_e_ciede2000(lab1: Sequence[float], lab2: Sequence[float]) -> float:
    """The CIEDE2000 difference of two CIELAB colours (kL = kC = kH = 1)."""
    l1, a1, b1 = lab1
    l2, a2, b2 = lab2
    c7 = (0.5 * (math.hypot(a1, b1) + math.hypot(a2, b2))) ** 7
    scale = 1 + 0.5 * (1 - math.sqrt(c7 / (c7 + 25.0**7)))
    c1, h1 = _polar(a1 * scale, b1)
    c2, h2 = _polar(a2 * scale, b2)
    l_bar = 0.5 * (l1 + l2)
    tmp = (l_bar - 50) ** 2
    l_term = (l2 - l1) / (1 + 0.015 * tmp / math.sqrt(20 + tmp))
    c_bar = 0.5 * (c1 + c2)
    c_term = (c2 - c1) / (1 + 0.045 * c_bar)
    h_diff, h_sum, cc = h2 - h1, h1 + h2, c1 * c2
    dh = h_diff
    if h_diff > math.pi:
        dh -= 2 * math.pi
    elif h_diff < -math.pi:
        dh += 2 * math.pi
    if cc == 0.0:
        dh = 0.0
    dh_term = 2 * math.sqrt(cc) * math.sin(dh / 2)
    h_bar = h_sum
    if cc != 0.0 and abs(h_diff) > math.pi:
        h_bar += 2 * math.pi if h_sum < 2 * math.pi else -2 * math.pi
    if cc == 0.0:
        h_bar *= 2
    h_bar *= 0.5
    t = (
        1
        - 0.17 * math.cos(h_bar - math.radians(30))
        + 0.24 * math.cos(2 * h_bar)
        + 0.32 * math.cos(3 * h_bar + math.radians(6))
        - 0.20 * math.cos(4 * h_bar - math.radians(63))
    )
    h_term = dh_term / (1 + 0.015 * c_bar * t)
    c7 = c_bar**7
    rc = 2 * math.sqrt(c7 / (c7 + 25.0**7))
    dtheta = math.radians(30) * math.exp(-(((math.degrees(h_bar) - 275) / 25) ** 2))
    r_term = -math.sin(2 * dtheta) * rc * c_term * h_term
    return math.sqrt(max(l_term**2 + c_term**2 + h_term**2 + r_term, 0.0))


def colour_difference(rgb1: Sequence[float], rgb2: Sequence[float]) -> float:
    """CIEDE2000 difference of two sRGB colours (0..255 channels)."""
    return delta_e_ciede2000(rgb_to_lab(rgb1), rgb_to_lab(rgb2))
