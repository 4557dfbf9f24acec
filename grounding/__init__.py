"""Grounding: from a referring expression ("the Save button") to a point on the screen.

    from agent_s.grounding import Observation, build_grounder

    grounder = build_grounder("auto")                  # accessibility, then OCR
    result = grounder.ground("the Save button", Observation(shot, windows, geometry))
    result.point, result.box, result.grounder, result.evidence

Modules: ``types`` (results, observations, typed failures), ``transform`` (the one coordinate
chain), ``query`` and ``matching`` (reading expressions, matching text), ``ocr``,
``accessibility``, ``model`` and ``replies`` (a grounding model and its reply formats),
``native`` (the generation model's own coordinates), ``chain`` (``auto``).
"""

from __future__ import annotations

from agent_s.grounding.accessibility import AccessibilityGrounder, AccessibilityTree
from agent_s.grounding.chain import GroundingChain, GroundMode
from agent_s.grounding.model import ModelGrounder, convention_for_model
from agent_s.grounding.native import NativeGrounder, native_call_result, native_result
from agent_s.grounding.ocr import OcrGrounder, OcrReader, TesseractEngine, TesseractOptions
from agent_s.grounding.transform import Convention, CoordinateChain, Frame, smart_resize
from agent_s.grounding.types import (
    Attempt,
    Box,
    Candidate,
    CoordinateError,
    Grounder,
    GrounderUnavailable,
    GroundingError,
    GroundingReplyError,
    GroundingResult,
    NotFound,
    Observation,
    TextSpan,
)
from agent_s.images import ImageSpec
from agent_s.models.types import Provider


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


__all__ = [
    "AccessibilityGrounder",
    "AccessibilityTree",
    "Attempt",
    "Box",
    "Candidate",
    "Convention",
    "CoordinateChain",
    "CoordinateError",
    "Frame",
    "GroundMode",
    "Grounder",
    "GrounderUnavailable",
    "GroundingChain",
    "GroundingError",
    "GroundingReplyError",
    "GroundingResult",
    "ModelGrounder",
    "NativeGrounder",
    "NotFound",
    "Observation",
    "OcrGrounder",
    "OcrReader",
    "TesseractEngine",
    "TesseractOptions",
    "TextSpan",
    "build_grounder",
    "convention_for_model",
    "native_call_result",
    "native_result",
    "smart_resize",
]
