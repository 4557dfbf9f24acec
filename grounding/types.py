"""What grounding takes and gives: observations, results, candidates, and typed failures.

A grounder turns a referring expression ("the Save button") and an ``Observation`` (the
screenshot of this step, with the windows and monitors when known) into a ``GroundingResult``:
a point in *screen* coordinates, the element's box when known, a confidence, the grounder's name
and its evidence. When it cannot, it raises, and never makes a point up:

- ``NotFound``: it looked and the element is not there; ``candidates`` are the closest things it
  saw (feedback for the model: "not found; the screen shows: ...").
- ``GrounderUnavailable``: it could not look at all (no accessibility bus, an app without a
  tree, no grounding model configured); the chain moves on to the next grounder.
- ``GroundingReplyError``: a grounding model answered, but the answer is unparseable or lies
  outside the image it was sent.
- ``CoordinateError``: a point fell outside a frame of the transform chain.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal, Protocol, runtime_checkable

from agent_s.desktop.base import ScreenGeometry, Screenshot, WindowInfo
from agent_s.desktop.ops import Point
from agent_s.errors import AgentSError

GrounderName = Literal["a11y", "ocr", "model", "native"]
AttemptOutcome = Literal["answered", "not_found", "unavailable", "error"]


@dataclass(frozen=True)
class Box:
    """An axis-aligned rectangle; ``x``/``y`` is its top-left pixel, sizes are positive."""

    x: int
    y: int
    width: int
    height: int

    def __post_init__(self) -> None:
        if self.width < 1 or self.height < 1:
            raise ValueError(f"a box needs a positive size, not {self.width}x{self.height}")

    @classmethod
    def from_corners(cls, left: int, top: int, right: int, bottom: int) -> Box:
        """The box from (left, top) to (right, bottom), both corners inclusive."""
        return cls(min(left, right), min(top, bottom), abs(right - left) + 1, abs(bottom - top) + 1)

    @property
    def right(self) -> int:
        """The last column inside the box."""
        return self.x + self.width - 1

    @property
    def bottom(self) -> int:
        """The last row inside the box."""
        return self.y + self.height - 1

    @property
    def center(self) -> Point:
        return Point(self.x + (self.width - 1) // 2, self.y + (self.height - 1) // 2)

    def contains(self, point: Point) -> bool:
        return self.x <= point.x <= self.right and self.y <= point.y <= self.bottom

    def union(self, other: Box) -> Box:
        return Box.from_corners(
            min(self.x, other.x),
            min(self.y, other.y),
            max(self.right, other.right),
            max(self.bottom, other.bottom),
        )

    def intersects(self, other: Box) -> bool:
        return not (
            other.x > self.right
            or other.right < self.x
            or other.y > self.bottom
            or other.bottom < self.y
        )

    def as_tuple(self) -> tuple[int, int, int, int]:
        return (self.x, self.y, self.width, self.height)


@dataclass(frozen=True, eq=False)
class Observation:
    """The screen at one step, as grounding sees it.

    ``windows`` (front-most first, as ``DesktopBackend.windows()`` lists them) lets grounders
    crop to the active window, resolve "in the dialog" and skip covered elements; ``geometry``
    lets the transform chain check that a point lies on a monitor. Both are optional.
    ``extents_on_screen``: False where the session's accessibility boxes are not screen
    coordinates (KWin on Wayland: relative to their window), so they are not used for points.
    """

    screenshot: Screenshot
    windows: tuple[WindowInfo, ...] = ()
    geometry: ScreenGeometry | None = None
    extents_on_screen: bool = True

    @cached_property
    def key(self) -> str:
        """A digest of the pixels and their placement: the cache key for per-step work."""
        image = self.screenshot.image
        digest = hashlib.blake2b(digest_size=16)
        digest.update(f"{image.mode}:{image.size}:{self.screenshot.origin}:".encode())
        digest.update(f"{self.screenshot.scale}:".encode())
        digest.update(image.tobytes())
        return digest.hexdigest()

    @property
    def active_window(self) -> WindowInfo | None:
        return next((w for w in self.windows if w.active), None)


@dataclass(frozen=True)
class Candidate:
    """Something a grounder saw that might have been meant: text or an element, and where."""

    text: str
    score: float  # 0..1, how well it matched the expression
    box: Box | None = None  # screen coordinates
    role: str = ""  # accessibility role, or "" for OCR text

    def describe(self) -> str:
        where = f" at ({self.box.center.x}, {self.box.center.y})" if self.box else ""
        role = f" {self.role}" if self.role else ""
        return f"{self.text!r}{role}{where}"


@dataclass(frozen=True)
class Attempt:
    """What one grounder of a chain did: answered, found nothing, could not look, or failed."""

    grounder: str
    outcome: AttemptOutcome
    reason: str
    seconds: float


@dataclass(frozen=True)
class GroundingResult:
    """Where a referring expression is: ``point`` (screen coordinates) and how we know.

    ``evidence`` is one line for people and logs; ``details`` holds the same facts for
    machines (matched words and their indices, the element's role and name, the model's raw
    reply). ``attempts`` lists, for a chain, every grounder tried in order.
    """

    expression: str
    point: Point
    grounder: str
    confidence: float
    evidence: str
    box: Box | None = None
    details: Mapping[str, Any] = field(default_factory=dict)
    attempts: tuple[Attempt, ...] = ()
    seconds: float = 0.0

    def __post_init__(self) -> None:
        if not 0.0 <= self.confidence <= 1.0:
            raise ValueError(f"confidence must be within 0..1, not {self.confidence}")

    def to_json(self) -> dict[str, Any]:
        return {
            "expression": self.expression,
            "point": [self.point.x, self.point.y],
            "box": list(self.box.as_tuple()) if self.box else None,
            "grounder": self.grounder,
            "confidence": round(self.confidence, 3),
            "evidence": self.evidence,
            "details": dict(self.details),
            "attempts": [
                {
                    "grounder": a.grounder,
                    "outcome": a.outcome,
                    "reason": a.reason,
                    "seconds": round(a.seconds, 3),
                }
                for a in self.attempts
            ],
            "seconds": round(self.seconds, 3),
        }


@dataclass(frozen=True)
class TextSpan:
    """The words from a starting phrase to an ending phrase, for ``highlight_text_span``.

    ``start_word`` / ``end_word`` are indices into the OCR words in reading order (inclusive);
    ``start`` is just inside the left edge of the first word, ``end`` a third of a character
    past the right edge of the last, in screen coordinates: a drag between them selects the
    span (in terminals too, which end a selection at the boundary left of the pointer).
    """

    start: Point
    end: Point
    start_word: int
    end_word: int
    words: tuple[str, ...]
    confidence: float
    evidence: str


# -- errors ------------------------------------------------------------------------------------


class GroundingError(AgentSError):
    """Grounding produced no point. Subclasses say why; ``grounder`` names the grounder that
    failed, when known (``NotFound`` and ``GrounderUnavailable`` always say)."""

    grounder: str = ""


class NotFound(GroundingError, LookupError):
    """The grounder looked and did not find the element; ``candidates`` are what it saw."""

    def __init__(
        self,
        message: str,
        *,
        expression: str,
        grounder: str,
        reason: str,
        candidates: tuple[Candidate, ...] = (),
        attempts: tuple[Attempt, ...] = (),
    ) -> None:
        super().__init__(message)
        self.expression = expression
        self.grounder = grounder
        self.reason = reason
        self.candidates = candidates
        self.attempts = attempts


class GrounderUnavailable(GroundingError):
    """The grounder cannot look here (no accessibility bus, no tree for this app, ...)."""

    def __init__(self, message: str, *, grounder: str, reason: str) -> None:
        super().__init__(message)
        self.grounder = grounder
        self.reason = reason


class GroundingReplyError(GroundingError, ValueError):
    """A model's coordinate reply is unparseable or out of bounds; ``reply`` is what it said."""

    def __init__(self, message: str, *, reply: str, reason: str) -> None:
        super().__init__(message)
        self.reply = reply
        self.reason = reason


class CoordinateError(GroundingError, ValueError):
    """A point lies outside a frame of the transform chain (``stage`` names which)."""

    def __init__(
        self, message: str, *, stage: str, x: float, y: float, bounds: tuple[float, ...]
    ) -> None:
        super().__init__(message)
        self.stage = stage
        self.x = x
        self.y = y
        self.bounds = bounds


@runtime_checkable
class Grounder(Protocol):
    """Turns a referring expression on an observation into a screen point, or raises."""

    name: str

    def ground(self, expression: str, observation: Observation) -> GroundingResult: ...
