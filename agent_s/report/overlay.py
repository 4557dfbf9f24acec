"""Where things are on a step's screenshot (``agent_s.report.run``): screen coordinates to the
screenshot's pixels (``Frame``, fitted to the run's own groundings), and the SVG drawn over it
(``overlay``: grounded boxes, rings at clicks, drag lines, the text typed and keys pressed)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image

from agent_s.record.step import Step
from agent_s.report.html import esc


@dataclass(frozen=True)
class Axis:
    """One axis from screen coordinates to a fraction of the image: ``(v - origin) * per``."""

    per: float  # fraction of the image per screen unit
    origin: float  # the screen coordinate at the image's first pixel

    def fraction(self, value: float) -> float:
        return (value - self.origin) * self.per


@dataclass(frozen=True)
class Frame:
    """Screen coordinates to image fractions, fitted to the run's own groundings (each records
    its screen point and the pixel it falls on in the image sent, of a given size): a HiDPI
    scale and a monitor's origin come out of the fit. With fewer than two points on an axis,
    one screenshot pixel per screen unit is assumed, and the origin the one point gives."""

    x: Axis | None
    y: Axis | None

    @classmethod
    def fit(cls, steps: Iterable[Step]) -> Frame:
        xs: list[tuple[float, float]] = []
        ys: list[tuple[float, float]] = []
        for step in steps:
            for found in step.grounding:
                if found.point and found.image_point and found.image_size:
                    width, height = found.image_size
                    if width > 0 and height > 0:
                        xs.append((found.point[0], found.image_point[0] / width))
                        ys.append((found.point[1], found.image_point[1] / height))
        return cls(_fit(xs), _fit(ys))

    def place(self, step: Step, point: tuple[float, float]) -> tuple[float, float] | None:
        """Where the screen ``point`` is on ``step``'s screenshot, as fractions of its size."""
        width, height = step.screen
        x = self.x or (Axis(1 / width, 0.0) if width > 0 else None)
        y = self.y or (Axis(1 / height, 0.0) if height > 0 else None)
        if x is None or y is None:
            return None
        if self.x is None or self.y is None:  # no fitted scale: a step's own point fixes origin
            for found in step.grounding:
                if found.point and found.image_point and found.image_size:
                    fx = found.image_point[0] / max(1, found.image_size[0])
                    fy = found.image_point[1] / max(1, found.image_size[1])
                    x = Axis(x.per, found.point[0] - fx / x.per)
                    y = Axis(y.per, found.point[1] - fy / y.per)
                    break
        return x.fraction(point[0]), y.fraction(point[1])


def _fit(pairs: list[tuple[float, float]]) -> Axis | None:
    """Least squares ``fraction = per * value + b`` over distinct values; None under two."""
    if len({round(v) for v, _ in pairs}) < 2:
        return None
    n = len(pairs)
    mean_v = sum(v for v, _ in pairs) / n
    mean_f = sum(f for _, f in pairs) / n
    spread = sum((v - mean_v) ** 2 for v, _ in pairs)
    per = sum((v - mean_v) * (f - mean_f) for v, f in pairs) / spread
    if per <= 0:
        return None
    return Axis(per, mean_v - mean_f / per)


# -- one step -------------------------------------------------------------------------------------

_RED, _GREEN = "#ff0000", "#00c800"


def image_size(path: Path, fallback: tuple[int, int]) -> tuple[int, int]:
    """The image's size from its header (nothing decoded)."""
    try:
        with Image.open(path) as image:
            return image.size
    except (OSError, ValueError):
        return fallback


def op_point(value: Any) -> tuple[float, float] | None:
    if isinstance(value, dict) and "x" in value and "y" in value:
        try:
            return float(value["x"]), float(value["y"])
        except (TypeError, ValueError):
            return None
    return None


def overlay(step: Step, frame: Frame, size: tuple[int, int]) -> str:
    """The SVG drawn over ``step``'s screenshot of ``size`` pixels: grounded boxes (green,
    labelled with the grounder), rings at clicks and grounded points (red), a line for each
    drag, and the text typed and keys pressed in the top-left corner."""
    width, height = size
    if width <= 0 or height <= 0:
        return ""
    unit = max(width, height) / 100  # marks scale with the picture
    ring, stroke, font = max(6.0, unit * 1.2), max(2.0, unit / 4), max(11.0, unit * 1.3)
    shapes: list[str] = []
    labels: list[str] = []

    def at(point: tuple[float, float]) -> tuple[float, float] | None:
        placed = frame.place(step, point)
        return None if placed is None else (placed[0] * width, placed[1] * height)

    def circle(point: tuple[float, float], color: str, title: str, r: float = ring) -> None:
        where = at(point)
        if where is None:
            return
        x, y = where
        shapes.append(
            f'<g><title>{esc(title)}</title><circle cx="{x:.1f}" cy="{y:.1f}" r="{r:.1f}" '
            f'fill="none" stroke="{color}" stroke-width="{stroke:.1f}"/>'
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{stroke:.1f}" fill="{color}"/></g>'
        )

    for found in step.grounding:
        source = found.grounder + (f" {found.matched}" if found.matched else "")
        title = f"{found.target}: {source}; {found.evidence}"
        if found.box is not None:
            bx, by, bw, bh = found.box
            corner, far = at((bx, by)), at((bx + bw, by + bh))
            if corner is not None and far is not None:
                x0, y0 = corner
                w, h = far[0] - x0, far[1] - y0
                label_y = y0 - 4 if y0 - font - 4 > 0 else y0 + h + font + 2
                shapes.append(
                    f'<g><title>{esc(title)}</title><rect x="{x0:.1f}" y="{y0:.1f}" '
                    f'width="{w:.1f}" height="{h:.1f}" fill="none" stroke="{_GREEN}" '
                    f'stroke-width="{stroke:.1f}"/>'
                    f'<text x="{x0:.1f}" y="{label_y:.1f}" font-size="{font:.0f}" '
                    f'font-family="sans-serif" fill="{_GREEN}" stroke="#fff" '
                    f'stroke-width="{font / 5:.1f}" paint-order="stroke">{esc(source[:60])}</text>'
                    "</g>"
                )
        if found.point is not None and not step.executed:
            circle((found.point[0], found.point[1]), _RED, title)
    for op in step.executed:
        kind = str(op.get("op", ""))
        if kind in ("Click", "MoveTo", "Scroll"):
            point = op_point(op.get("at"))
            if point is None:
                continue
            what = kind.lower()
            if kind == "Click":
                clicks, button = op.get("clicks", 1), op.get("button", "left")
                what = f"click ({button}, {clicks}x)" if (clicks, button) != (1, "left") else what
            if kind == "Scroll":
                what = f"scroll {op.get('clicks', 0)}"
                labels.append(what)
            circle(point, _RED, what, ring if kind != "MoveTo" else ring / 2)
        elif kind == "Drag":
            start, end = op_point(op.get("start")), op_point(op.get("end"))
            if start is None or end is None:
                continue
            a, b = at(start), at(end)
            if a is not None and b is not None:
                shapes.append(
                    f'<g><title>drag</title><line x1="{a[0]:.1f}" y1="{a[1]:.1f}" '
                    f'x2="{b[0]:.1f}" y2="{b[1]:.1f}" stroke="{_RED}" '
                    f'stroke-width="{stroke:.1f}"/></g>'
                )
            circle(start, _RED, "drag from")
            circle(end, _RED, "drag to")
        elif kind == "TypeText":
            labels.append(f"type {str(op.get('text', ''))[:80]!r}")
        elif kind == "Hotkey":
            labels.append("keys " + "+".join(map(str, op.get("keys") or ())))
        elif kind == "HoldAndPress":
            hold = "+".join(map(str, op.get("hold_keys") or ()))
            labels.append(f"hold {hold}, press " + " ".join(map(str, op.get("press_keys") or ())))
        elif kind in ("Open", "Activate"):
            rest = ", ".join(f"{v}" for k, v in op.items() if k != "op")
            labels.append(f"{kind.lower()} {rest}"[:100])
    for row, text in enumerate(labels[:8]):
        y = 6 + row * (font + 8)
        shapes.append(
            f'<rect x="6" y="{y:.1f}" width="{len(text) * font * 0.6 + 12:.1f}" '
            f'height="{font + 6:.1f}" fill="#ffffc8" fill-opacity="0.92"/>'
            f'<text x="12" y="{y + font:.1f}" font-size="{font:.0f}" font-family="monospace" '
            f'fill="#c80000">{esc(text)}</text>'
        )
    if not shapes:
        return ""
    return (
        f'<svg viewBox="0 0 {width} {height}" preserveAspectRatio="none" '
        f'xmlns="http://www.w3.org/2000/svg" aria-hidden="true">{"".join(shapes)}</svg>'
    )


__all__ = ["Axis", "Frame", "image_size", "op_point", "overlay"]
