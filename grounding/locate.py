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
span (``text_start`` / ``text_end``) by one OCR call for both ends. Each target is grounded once;
the first that cannot be found ends the action's grounding.

``outline`` lists the active window's named elements for the request's accessibility snapshot,
from the same accessibility grounder (and its cached walk of the tree) that grounds elements.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

from agent_s.actions.models import Target, TargetKind
from agent_s.desktop.base import WindowInfo
from agent_s.desktop.ops import Point
from agent_s.grounding.accessibility import AccessibilityGrounder, window_outline
from agent_s.grounding.chain import GroundingChain, GroundMode
from agent_s.grounding.model import ModelGrounder
from agent_s.grounding.native import NativeGrounder, native_result
from agent_s.grounding.ocr import OcrGrounder
from agent_s.grounding.transform import Convention
from agent_s.grounding.types import (
    AttemptOutcome,
    Grounder,
    GroundingError,
    GroundingResult,
    NotFound,
    Observation,
)
from agent_s.images import EncodedImage, ImageSpec
from agent_s.models.types import Provider


class AttemptRecord(BaseModel):
    """What one grounder of a chain did for a target (its reason clipped)."""

    model_config = ConfigDict(frozen=True)

    grounder: str
    outcome: AttemptOutcome
    reason: str = ""


class TargetGrounding(BaseModel):
    """One target of an action: where it was found (screen point, box) and by which grounder,
    with its confidence and evidence; or, with ``point`` None, by whom it was not found."""

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

    @classmethod
    def of(cls, kind: TargetKind, result: GroundingResult) -> TargetGrounding:
        """The record of a grounder's answer."""
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
        )

    def describe(self) -> str:
        """``at (x, y) via ocr``, or ``not found by ocr``."""
        if self.point is None:
            return f"not found by {self.grounder}"
        return f"at ({self.point[0]}, {self.point[1]}) via {self.grounder}"


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
        if isinstance(err, NotFound):
            seen = ", ".join(c.describe() for c in err.candidates[:8])
            text = f"could not find {expression!r} on the screen ({err.reason})"
            return text + (f"; closest things seen: {seen}" if seen else "")
        return f"could not locate {expression!r}: {err}"


@dataclass(frozen=True)
class Outline:
    """The active window's named elements as lines (``- push button "Save"``), of ``total``."""

    window: WindowInfo | None
    lines: tuple[str, ...]
    total: int


def build_grounder(
    mode: GroundMode = "auto",
    *,
    model: Provider | None = None,
    model_convention: Convention | None = None,
    native_spec: ImageSpec | None = None,
    ocr: OcrGrounder | None = None,
    a11y: AccessibilityGrounder | None = None,
) -> Grounder:
    """The grounder for ``mode``. ``auto``: accessibility, OCR, then ``model`` when given.

    ``model`` is the grounding model's provider (required for ``mode="model"``); pass an
    ``ocr`` grounder to share its OCR cache with other users of the same screenshots.
    """
    if mode == "a11y":
        return a11y or AccessibilityGrounder()
    if mode == "ocr":
        return ocr or OcrGrounder()
    if mode == "native":
        return NativeGrounder(native_spec)
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
        model_convention: Convention | None = None,
        native_spec: ImageSpec | None = None,
    ) -> Locator:
        """The locator over ``build_grounder(mode, ...)``."""
        return cls(
            build_grounder(
                mode, model=model, model_convention=model_convention, native_spec=native_spec
            )
        )

    @property
    def name(self) -> str:
        return self.grounder.name

    @property
    def native(self) -> bool:
        """Whether the generation model writes the coordinates itself (in the image it saw)."""
        return isinstance(self.grounder, NativeGrounder)

    def prepare(self, observation: Observation, sent: EncodedImage) -> None:
        """Start, while the model thinks, what grounding ``observation`` will need: the
        accessibility tree is read in the background, and a grounding model is offered the
        image already encoded for the generation model (taken when it has the same pixels)."""
        members = (
            self.grounder.grounders
            if isinstance(self.grounder, GroundingChain)
            else (self.grounder,)
        )
        for member in members:
            if isinstance(member, ModelGrounder):
                member.offer(observation, sent)
        if self._a11y is not None:
            self._a11y.prefetch(observation)

    def locate(
        self,
        targets: Sequence[Target],
        observation: Observation,
        sent: EncodedImage | None = None,
    ) -> Located | NotLocated:
        """Screen points for ``targets`` on ``observation``; ``sent`` is the image the
        generation model was shown (native coordinates are read over it)."""
        start = time.perf_counter()
        found: list[TargetGrounding] = []
        points: list[Point] = []
        try:
            if targets and targets[0].kind != "element" and not self.native:
                span = self._ocr.span(targets[0].text, targets[1].text, observation)
                for target, at in zip(targets, (span.start, span.end), strict=True):
                    found.append(
                        TargetGrounding(
                            target=target.text,
                            kind=target.kind,
                            grounder=self._ocr.name,
                            point=(at.x, at.y),
                            confidence=span.confidence,
                            evidence=span.evidence,
                            seconds=round(time.perf_counter() - start, 3),
                        )
                    )
                    points.append(at)
            else:
                for target in targets:
                    result = self._ground(target.text, observation, sent)
                    found.append(TargetGrounding.of(target.kind, result))
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
