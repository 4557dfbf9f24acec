"""Grounding an action: the one place that decides how each of its targets is found.

    locator = Locator.for_mode("auto")
    found = locator.locate(action.targets(), observation, sent)
    if isinstance(found, Located):
        action.plan(found.points)
    else:                                   # NotLocated: what is missing, and why
        feedback = found.feedback           # for the model: the closest things seen
    found.groundings                        # what grounded each target, for the trajectory

The decision, per action: with ``native`` grounding the generation model wrote the coordinates
itself, so every target is read over ``sent``, the very image it was shown; otherwise an element
is found by the grounder (the ``auto`` chain, accessibility, OCR or a grounding model) and a text
span (``text_start`` / ``text_end``) by one OCR call for both ends. In every mode, a target that
is a literal point (one ``(x, y)`` in parentheses ending the description, as the parser writes
coordinate replies: ``element_description="(412, 300)"``) is that pixel of ``sent``, mapped to
the screen through the one ``CoordinateChain`` (grounder ``point``); a point off the image is
refused in the image's own terms. Each target is grounded once; the first that cannot be found
ends the action's grounding.

What the model is told (``TargetGrounding.describe``, ``NotLocated.feedback``) is in the frame of
the image it was sent, never in screen pixels: the coordinates it wrote itself (``model_point``),
or, for a described target, what was matched (``matched``: ``push button 'Save'``). The screen
point stays on the record (``point``) for people and tools, with the sent-image pixel beside it
(``image_point``).

``outline`` lists the active window's named elements for the request's accessibility snapshot,
from the same accessibility grounder (and its cached walk of the tree) that grounds elements.
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict

from agent_s.actions.models import Target, TargetKind
from agent_s.conventions import PointConvention, point_convention
from agent_s.desktop.base import WindowInfo
from agent_s.desktop.ops import Point
from agent_s.grounding.accessibility import AccessibilityGrounder, window_outline
from agent_s.grounding.chain import GroundingChain, GroundMode
from agent_s.grounding.model import ModelGrounder
from agent_s.grounding.native import NativeGrounder, native_result
from agent_s.grounding.ocr import OcrGrounder
from agent_s.grounding.transform import Convention, CoordinateChain
from agent_s.grounding.types import (
    AttemptOutcome,
    Candidate,
    CoordinateError,
    Grounder,
    GroundingError,
    GroundingResult,
    NotFound,
    Observation,
)
from agent_s.images import EncodedImage, ImageSpec
from agent_s.models.profiles import ModelProfile
from agent_s.models.types import Provider
from agent_s.settings.config import GroundingConfig


class AttemptRecord(BaseModel):
    """What one grounder of a chain did for a target (its reason clipped)."""

    model_config = ConfigDict(frozen=True)

    grounder: str
    outcome: AttemptOutcome
    reason: str = ""


class TargetGrounding(BaseModel):
    """One target of an action: where it was found (screen point, box) and by which grounder,
    with its confidence and evidence; or, with ``point`` None, by whom it was not found.

    In the frame of the image the generation model was sent: ``model_point``, the coordinates
    it wrote itself (native grounding, a literal point), as it wrote them; ``image_point``, the
    sent-image pixel of the screen point, of an image ``image_size``. ``matched`` is what a
    described target was matched to (``push button 'Save'``, ``text 'Save'``)."""

    model_config = ConfigDict(frozen=True)

    target: str
    kind: TargetKind
    grounder: str
    point: tuple[int, int] | None
    box: tuple[int, int, int, int] | None = None
    confidence: float | None = None
    evidence: str = ""
    seconds: float = 0.0
    attempts: tuple[AttemptRecord, ...] = ()
    model_point: tuple[float, float] | None = None
    image_point: tuple[int, int] | None = None
    image_size: tuple[int, int] | None = None
    matched: str = ""

    @classmethod
    def of(
        cls, kind: TargetKind, result: GroundingResult, chain: CoordinateChain | None = None
    ) -> TargetGrounding:
        """The record of a grounder's answer; ``chain`` (over the image the generation model
        was sent) places it in that image too."""
        image_point, image_size = _in_image(result.point, chain)
        return cls(
            target=result.expression,
            kind=kind,
            grounder=result.grounder,
            point=(result.point.x, result.point.y),
            box=result.box.as_tuple() if result.box is not None else None,
            confidence=round(result.confidence, 3),
            evidence=result.evidence[:500],
            seconds=round(result.seconds, 3),
            attempts=tuple(
                AttemptRecord(grounder=a.grounder, outcome=a.outcome, reason=a.reason[:300])
                for a in result.attempts
            ),
            # a grounding model's own point is in its frame, not the generation model's
            model_point=_model_point(result.details) if result.grounder in _WRITTEN else None,
            image_point=image_point,
            image_size=image_size,
            matched=_matched(result.details),
        )

    def describe(self) -> str:
        """For the model, in the frame of the image it was sent: ``at (412, 300) via native``
        (the coordinates it wrote), ``on push button 'Save' via a11y`` (what its description
        was matched to), ``via model`` (a grounding model's point, which it did not write), or
        ``not found by ocr``. A record with no image frame (built by hand, or from an older
        trajectory) gives its screen point."""
        if self.point is None:
            return f"not found by {self.grounder}"
        if self.model_point is not None:
            return f"at ({_number(self.model_point[0])}, {_number(self.model_point[1])}) via " + (
                self.grounder
            )
        if self.matched:
            return f"on {self.matched} via {self.grounder}"
        if self.image_point is not None:
            return f"via {self.grounder}"
        return f"at ({self.point[0]}, {self.point[1]}) via {self.grounder}"


_WRITTEN = frozenset({"native", "point"})  # grounders reading coordinates the model wrote


def _number(value: float) -> str:
    """A coordinate as the model would write it: ``412``, ``0.52``."""
    return f"{value:g}" if value != int(value) else str(int(value))


def _model_point(details: Mapping[str, Any]) -> tuple[float, float] | None:
    point = details.get("model_point")
    if isinstance(point, (list, tuple)) and len(point) == 2:
        return float(point[0]), float(point[1])
    return None


def _matched(details: Mapping[str, Any]) -> str:
    """What a described target was matched to, in a few words (for the model)."""
    name = details.get("name")
    if isinstance(name, str) and name:
        role = details.get("role")
        return f"{role} {name[:60]!r}" if isinstance(role, str) and role else repr(name[:60])
    words = details.get("words")
    if isinstance(words, (list, tuple)) and words:
        return f"text {' '.join(str(w) for w in words)[:60]!r}"
    return ""


def _in_image(
    point: Point, chain: CoordinateChain | None
) -> tuple[tuple[int, int] | None, tuple[int, int] | None]:
    """The pixel of the image the model was sent that shows screen ``point``, and its size."""
    if chain is None:
        return None, None
    size = (chain.sent.width, chain.sent.height) if chain.sent else (chain.width, chain.height)
    try:
        return chain.screenshot_to_sent(*chain.screen_to_screenshot(point)), size
    except CoordinateError:
        return None, size


_LITERAL = re.compile(r"\(\s*(-?\d+(?:\.\d+)?)\s*,\s*(-?\d+(?:\.\d+)?)\s*\)")


def literal_point(description: str) -> str | None:
    """The point ``(x, y)`` a description consists of or ends with (text before it allowed:
    ``the OK button (412, 300)``), when it holds exactly one; None for a description proper.
    The parser writes every coordinate reply in this form (UI-TARS, Qwen JSON, pyautogui)."""
    found = list(_LITERAL.finditer(description))
    if len(found) != 1:
        return None
    (match,) = found
    if description[match.end() :].strip(" \t\n.;:!\"'`"):
        return None
    return match.group(0)


@dataclass(frozen=True)
class Located:
    """Every target found: one screen point per target, in order, and how each was found."""

    points: tuple[Point, ...]
    groundings: tuple[TargetGrounding, ...]


@dataclass(frozen=True)
class NotLocated:
    """A target that could not be found: the error (``NotFound`` carries the candidates seen),
    and the groundings so far, the missing target's last."""

    target: Target
    error: GroundingError
    groundings: tuple[TargetGrounding, ...]

    @property
    def feedback(self) -> str:
        """What the model is told: what was not found, why, and the closest things seen."""
        expression, err = self.target.text, self.error
        if isinstance(err, NotFound) and err.reason == "ambiguous" and err.candidates:
            # the grounder's own message places the ties in screen pixels; the model is told
            # how to pick one in words, never in a frame it was not sent
            kinds = sorted({_seen(c) for c in err.candidates})
            return (
                f"{expression!r} fits {len(err.candidates)} elements on the screen equally "
                f"({', '.join(kinds[:4])}); say which one: an ordinal counted in reading order "
                "(top to bottom, left to right), e.g. 'the second ...', its position "
                "('at the top right', 'in the dialog'), or a neighbour's label "
                "('below \"Subject\"', 'next to \"Photo.jpg\"')"
            )
        if isinstance(err, NotFound):
            # named, not placed: screen pixels would mislead a model that sees a scaled image
            seen = ", ".join(_seen(c) for c in err.candidates[:8])
            text = f"could not find {expression!r} on the screen ({err.reason})"
            return text + (f"; closest things seen: {seen}" if seen else "")
        return f"could not locate {expression!r}: {err}"


def _seen(candidate: Candidate) -> str:
    """A candidate as the model is told of it: ``'Save' push button`` (no screen pixels)."""
    return f"{candidate.text!r} {candidate.role}" if candidate.role else repr(candidate.text)


@dataclass(frozen=True)
class Outline:
    """The active window's named elements as lines (``- push button "Save"``), of ``total``."""

    window: WindowInfo | None
    lines: tuple[str, ...]
    total: int


def _as_sent(observation: Observation) -> EncodedImage:
    """The screenshot itself as the image sent: its pixels are the model's frame."""
    width, height = observation.screenshot.image.size
    return EncodedImage(b"", "image/png", width, height, width, height)


def _chain(observation: Observation, sent: EncodedImage | None) -> CoordinateChain | None:
    """The transform chain over the image the model was sent (None if it does not fit)."""
    try:
        return CoordinateChain(observation.screenshot, sent, observation.geometry)
    except ValueError:
        return None


def build_grounder(
    mode: GroundMode = "auto",
    *,
    model: Provider | None = None,
    model_convention: Convention | PointConvention | None = None,
    native_spec: ImageSpec | None = None,
    native_convention: PointConvention | None = None,
    ocr: OcrGrounder | None = None,
    a11y: AccessibilityGrounder | None = None,
) -> Grounder:
    """The grounder for ``mode``. ``auto``: accessibility, OCR, then ``model`` when given.

    ``model`` is the grounding model's provider (required for ``mode="model"``); pass an
    ``ocr`` grounder to share its OCR cache with other users of the same screenshots.
    ``model_convention`` / ``native_convention``: how the grounding model / the generation
    model (``native``) write a point (None: the family's / the image's pixels).
    """
    if mode == "a11y":
        return a11y or AccessibilityGrounder()
    if mode == "ocr":
        return ocr or OcrGrounder()
    if mode == "native":
        return NativeGrounder(native_spec, native_convention or "pixels")
    if mode == "model":
        if model is None:
            raise ValueError(
                "--ground model needs a grounding model (--ground-url, --ground-model)"
            )
        return ModelGrounder(model, convention=model_convention)
    if mode == "auto":
        chain: list[Grounder] = [a11y or AccessibilityGrounder(), ocr or OcrGrounder()]
        if model is not None:
            chain.append(ModelGrounder(model, convention=model_convention))
        return GroundingChain(chain)
    raise ValueError(f"unknown grounding mode {mode!r}; use auto, a11y, ocr, model or native")


class Locator:
    """Grounds an action's targets with ``grounder`` (see the module docstring)."""

    def __init__(self, grounder: Grounder) -> None:
        self.grounder = grounder
        members = grounder.grounders if isinstance(grounder, GroundingChain) else (grounder,)
        # a text span is read by OCR: the grounder's own when it has one (its cache is shared)
        self._ocr = next((g for g in members if isinstance(g, OcrGrounder)), None) or OcrGrounder()
        self._a11y = next((g for g in members if isinstance(g, AccessibilityGrounder)), None)

    @classmethod
    def for_mode(
        cls,
        mode: GroundMode = "auto",
        *,
        model: Provider | None = None,
        model_convention: Convention | PointConvention | None = None,
        native_spec: ImageSpec | None = None,
        native_convention: PointConvention | None = None,
    ) -> Locator:
        """The locator over ``build_grounder(mode, ...)``."""
        return cls(
            build_grounder(
                mode,
                model=model,
                model_convention=model_convention,
                native_spec=native_spec,
                native_convention=native_convention,
            )
        )

    @classmethod
    def for_config(
        cls,
        grounding: GroundingConfig,
        model: Provider | None,
        worker: ModelProfile,
        grounder: ModelProfile | None = None,
    ) -> Locator:
        """The locator a run's settings ask for: ``model`` is the grounding model's provider,
        ``worker`` / ``grounder`` the generation / grounding model's profiles. A convention
        set (``--ground-convention``) wins over a profile's ``point_convention``, which wins
        over the grounding model family's (or, for a native worker, the image's pixels)."""
        said = grounding.convention
        ground = grounder.point_convention if grounder is not None else None
        return cls.for_mode(
            grounding.mode,
            model=model,
            model_convention=said or point_convention(ground),
            native_spec=worker.image_spec,
            native_convention=said or point_convention(worker.point_convention),
        )

    @property
    def name(self) -> str:
        return self.grounder.name

    @property
    def native(self) -> bool:
        """Whether the generation model writes the coordinates itself (in the image it saw)."""
        return isinstance(self.grounder, NativeGrounder)

    def read_ahead(self, observation: Observation) -> None:
        """Start reading the accessibility tree for ``observation`` in the background, as soon
        as the screen is captured (it runs while the image is encoded and the model thinks)."""
        if self._a11y is not None:
            self._a11y.prefetch(observation)

    def prepare(self, observation: Observation, sent: EncodedImage) -> None:
        """Start, while the model thinks, what grounding ``observation`` will need: the
        accessibility tree is read in the background (``read_ahead``, if not started yet), and
        a grounding model is offered the image already encoded for the generation model (taken
        when it has the same pixels)."""
        members = (
            self.grounder.grounders
            if isinstance(self.grounder, GroundingChain)
            else (self.grounder,)
        )
        for member in members:
            if isinstance(member, ModelGrounder):
                member.offer(observation, sent)
        self.read_ahead(observation)  # once per observation: a second start is none

    def locate(
        self,
        targets: Sequence[Target],
        observation: Observation,
        sent: EncodedImage | None = None,
    ) -> Located | NotLocated:
        """Screen points for ``targets`` on ``observation``; ``sent`` is the image the
        generation model was shown (its coordinates, native or literal, are read over it, and
        what it is told is placed in it; without it, the screenshot is that image)."""
        start = time.perf_counter()
        found: list[TargetGrounding] = []
        points: list[Point] = []
        chain = _chain(observation, sent)
        literal = [literal_point(t.text) if not self.native else None for t in targets]
        try:
            spans = targets and targets[0].kind != "element" and not self.native
            if spans and not any(literal):
                span = self._ocr.span(targets[0].text, targets[1].text, observation)
                for target, at in zip(targets, (span.start, span.end), strict=True):
                    image_point, image_size = _in_image(at, chain)
                    found.append(
                        TargetGrounding(
                            target=target.text,
                            kind=target.kind,
                            grounder=self._ocr.name,
                            point=(at.x, at.y),
                            confidence=span.confidence,
                            evidence=span.evidence,
                            seconds=round(time.perf_counter() - start, 3),
                            image_point=image_point,
                            image_size=image_size,
                            matched=f"text {target.text[:60]!r}",
                        )
                    )
                    points.append(at)
            else:
                for target, point in zip(targets, literal, strict=True):
                    if point is not None:
                        result = self._literal(target.text, point, observation, sent)
                    elif target.kind != "element" and not self.native:
                        result = self._span_end(target, observation)
                    else:
                        result = self._ground(target.text, observation, sent)
                    found.append(TargetGrounding.of(target.kind, result, chain))
                    points.append(result.point)
        except GroundingError as err:
            missing = targets[len(found)]
            found.append(
                TargetGrounding(
                    target=missing.text,
                    kind=missing.kind,
                    grounder=err.grounder or self.grounder.name,
                    point=None,
                    evidence=str(err)[:500],
                    seconds=round(time.perf_counter() - start, 3),
                )
            )
            return NotLocated(missing, err, tuple(found))
        return Located(tuple(points), tuple(found))

    def _ground(
        self, text: str, observation: Observation, sent: EncodedImage | None
    ) -> GroundingResult:
        grounder = self.grounder
        if isinstance(grounder, NativeGrounder) and sent is not None:
            return native_result(
                text, text, sent=sent, observation=observation, convention=grounder.convention
            )
        return grounder.ground(text, observation)

    def _literal(
        self, text: str, point: str, observation: Observation, sent: EncodedImage | None
    ) -> GroundingResult:
        """A literal point the model wrote, in the pixels of the image it was sent."""
        image = sent or _as_sent(observation)
        result = native_result(text, point, sent=image, observation=observation, source="the model")
        return dataclasses.replace(result, grounder="point")

    def _span_end(self, target: Target, observation: Observation) -> GroundingResult:
        """One end of a text span whose other end is a literal point: the words' own span."""
        span = self._ocr.span(target.text, target.text, observation)
        at = span.start if target.kind == "text_start" else span.end
        return GroundingResult(
            expression=target.text,
            point=at,
            grounder=self._ocr.name,
            confidence=span.confidence,
            evidence=span.evidence,
            details={"words": span.words},
        )

    def outline(self, observation: Observation) -> Outline:
        """The active window's named elements. The walk of the tree is the accessibility
        grounder's, cached per observation, so grounding on it does not walk it again.
        Raises ``GroundingError`` (``GrounderUnavailable``) when there is no tree to read."""
        if self._a11y is None:
            self._a11y = AccessibilityGrounder()
        elements = self._a11y.snapshot(observation)
        lines, total = window_outline(elements, observation)
        return Outline(observation.active_window, tuple(lines), total)


__all__ = [
    "AttemptRecord",
    "Located",
    "Locator",
    "NotLocated",
    "Outline",
    "TargetGrounding",
    "build_grounder",
]
