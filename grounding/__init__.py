"""Grounding: from a referring expression ("the Save button") to a point on the screen.

    from agent_s.grounding import Observation, build_grounder

    grounder = build_grounder("auto")                  # accessibility, then OCR
    result = grounder.ground("the Save button", Observation(shot, windows, geometry))
    result.point, result.box, result.grounder, result.evidence

    found = Locator(grounder).locate(action.targets(), observation, sent)   # Located | NotLocated

Modules: ``types`` (results, observations, typed failures), ``transform`` (the one coordinate
chain), ``query`` and ``matching`` (reading expressions, matching text), ``ocr`` (with
``tesseract``, the engine, and ``controls``, the control detector), ``accessibility``,
``model`` and ``replies`` (a grounding model and its reply formats), ``native`` (the
generation model's own coordinates), ``chain`` (``auto``), and ``locate``: the one entry point
that grounds an action's targets (``Locator.locate``), which the agent and the benchmark's
reference policy both use.

May use: actions, desktop, models, settings, images, prompting. Used by: the loop (ground),
marks, record, replay, bench, mcp, cli.
"""

from __future__ import annotations

from agent_s.grounding.accessibility import AccessibilityGrounder, AccessibilityTree
from agent_s.grounding.chain import GroundingChain, GroundMode
from agent_s.grounding.locate import (
    AttemptRecord,
    Located,
    Locator,
    NotLocated,
    Outline,
    TargetGrounding,
    build_grounder,
)
from agent_s.grounding.model import ModelGrounder, convention_for_model
from agent_s.grounding.native import NativeGrounder, native_result
from agent_s.grounding.ocr import OcrGrounder, OcrReader
from agent_s.grounding.tesseract import TesseractEngine, TesseractOptions
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

__all__ = [
    "AccessibilityGrounder",
    "AccessibilityTree",
    "Attempt",
    "AttemptRecord",
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
    "Located",
    "Locator",
    "ModelGrounder",
    "NativeGrounder",
    "NotFound",
    "NotLocated",
    "Observation",
    "OcrGrounder",
    "OcrReader",
    "Outline",
    "TesseractEngine",
    "TargetGrounding",
    "TesseractOptions",
    "TextSpan",
    "build_grounder",
    "convention_for_model",
    "native_result",
    "smart_resize",
]
