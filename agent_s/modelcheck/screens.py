"""The screens the check shows a model: real applications captured on a virtual desktop at
several screen sizes (``scripts/make_modelcheck_screens.py``), shipped as palette PNGs with
``data/screens.json``, which holds each screen's controls and their truth boxes (from AT-SPI, in
the screen's pixels) and the word typed into the editor (the word only the image holds)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from importlib.abc import Traversable

from PIL import Image

from agent_s.desktop.base import Screenshot
from agent_s.desktop.ops import Point
from agent_s.grounding.types import Box, Observation


@dataclass(frozen=True)
class Control:
    """One control of a screen: its accessible ``name`` and ``role``, how a task names it
    (``target``: "the 7 button") and its box in the screen's pixels."""

    name: str
    role: str
    target: str
    box: Box


@dataclass(frozen=True)
class Screen:
    name: str
    file: str
    app: str
    size: tuple[int, int]
    controls: tuple[Control, ...]
    word: str = ""  # a word typed into the application, shown only in the image

    def image(self) -> Image.Image:
        with _data().joinpath(self.file).open("rb") as handle:
            picture = Image.open(handle)
            picture.load()
        return picture.convert("RGB")

    def observation(self) -> Observation:
        """The screen as a screenshot of a single monitor at (0, 0), scale 1."""
        return Observation(Screenshot(self.image(), Point(0, 0), 1.0))


def _data() -> Traversable:
    return resources.files("agent_s.modelcheck").joinpath("data")


@cache
def screens() -> tuple[Screen, ...]:
    """Every shipped screen, in the order of ``screens.json``."""
    data = json.loads(_data().joinpath("screens.json").read_text("utf-8"))
    return tuple(
        Screen(
            name=item["name"],
            file=item["file"],
            app=item["app"],
            size=(item["size"][0], item["size"][1]),
            controls=tuple(
                Control(c["name"], c["role"], c["target"], Box(*c["box"])) for c in item["controls"]
            ),
            word=item.get("word", ""),
        )
        for item in data["screens"]
    )


__all__ = ["Control", "Screen", "screens"]
