"""How a model writes a point over the image it was sent: its coordinate convention, by name.

A convention is a frame and an order, written as one setting (``--ground-convention``,
``[grounding] convention``, a model profile's ``point_convention``) and reported the same way
by ``agent-s model check``:

- the frame: ``pixels`` (pixels of the image sent), ``grid1000`` (a 0-1000 grid over it),
  ``smart_resize`` (pixels of the image as Qwen2.5-VL's processor resizes it), ``unit`` (0-1
  fractions), or ``WxH`` (pixels of a W x H image, whatever size was sent: a model told the
  screen's size, or Agent S3's ``grounding_width`` / ``grounding_height``);
- then ``-yx`` when the model writes ``[y, x]`` (Gemini's order), nothing (or ``-xy``) for the
  usual ``(x, y)``.

So ``grid1000-yx`` reads ``[500, 250]`` as the point a quarter across and half-way down. The
chain that applies it is ``agent_s.grounding.transform`` (``Frame``); this module only names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, get_args

FrameName = Literal["pixels", "grid1000", "smart_resize", "unit"]
FRAME_NAMES: tuple[FrameName, ...] = get_args(FrameName)
Order = Literal["xy", "yx"]
_SIZE = re.compile(r"^([1-9]\d{0,4})x([1-9]\d{0,4})$")
CHOICES = "pixels, grid1000, smart_resize, unit or WxH (e.g. 1920x1080), each optionally -yx"


class ConventionError(ValueError):
    """A convention name that is none of ``CHOICES``; the message lists them."""


@dataclass(frozen=True)
class PointConvention:
    """A model's coordinate convention: ``frame`` (with ``size`` for a fixed pixel frame) and
    ``order``. ``str()`` is its setting name; ``PointConvention.parse`` reads one."""

    frame: FrameName = "pixels"
    order: Order = "xy"
    size: tuple[int, int] | None = None  # frame "pixels" of this W x H instead of the sent size

    def __post_init__(self) -> None:
        if self.frame not in FRAME_NAMES or self.order not in get_args(Order):
            raise ConventionError(f"unknown convention {self.frame!r}/{self.order!r}")
        if self.size is not None and (self.frame != "pixels" or min(self.size) < 1):
            raise ConventionError(f"a fixed frame is pixels of at least 1x1, not {self.size}")

    @classmethod
    def parse(cls, text: str) -> PointConvention:
        """``"grid1000-yx"`` -> PointConvention("grid1000", "yx"); ``ConventionError`` else."""
        name = text.strip().lower().replace("_yx", "-yx").replace("_xy", "-xy")
        order: Order = "yx" if name.endswith("-yx") else "xy"
        name = name.removesuffix("-yx").removesuffix("-xy")
        size = _SIZE.match(name)
        if size:
            return cls("pixels", order, (int(size.group(1)), int(size.group(2))))
        for frame in FRAME_NAMES:
            if name == frame:
                return cls(frame, order)
        raise ConventionError(f"unknown coordinate convention {text!r}; use {CHOICES}")

    def __str__(self) -> str:
        frame = f"{self.size[0]}x{self.size[1]}" if self.size else self.frame
        return frame + ("-yx" if self.order == "yx" else "")

    def reading(self, frame: FrameName) -> PointConvention:
        """This convention with another frame, the order kept (a reply in 0-1 fractions is
        read in ``unit`` whatever the model's frame)."""
        return PointConvention(frame, self.order)


def point_convention(value: object) -> PointConvention | None:
    """A setting's value (None, a name or a ``PointConvention``) as a convention."""
    if value is None or isinstance(value, PointConvention):
        return value
    if isinstance(value, str):
        return PointConvention.parse(value)
    raise ConventionError(f"a coordinate convention is a name ({CHOICES}), not {value!r}")


__all__ = [
    "CHOICES",
    "FRAME_NAMES",
    "ConventionError",
    "FrameName",
    "Order",
    "PointConvention",
    "point_convention",
]
