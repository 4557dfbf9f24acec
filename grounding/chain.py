"""Grounders tried in order until one answers: ``auto`` is accessibility, OCR, then the model.

Each grounder either answers, finds nothing (``NotFound``), cannot look (``GrounderUnavailable``)
or fails (a grounding model's bad reply, or a model call error); the chain records every attempt
with its reason and time, and the answer carries them (``GroundingResult.attempts``). When no
grounder answers, the chain raises ``NotFound`` with every attempt and all candidates seen, so
the caller (and the model, as feedback) learns what was on the screen and why nothing matched.

A grounder answering below ``min_confidence`` does not end the chain when a later one may do
better: its answer is kept and returned only if no later grounder answers more confidently.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence

from agent_s.config import GroundMode as GroundMode  # re-exported: the names live with the settings
from agent_s.grounding.types import (
    Attempt,
    AttemptOutcome,
    Candidate,
    Grounder,
    GrounderUnavailable,
    GroundingError,
    GroundingReplyError,
    GroundingResult,
    NotFound,
    Observation,
)
from agent_s.models.errors import ModelError


class GroundingChain:
    """A ``Grounder`` made of grounders tried in order (see the module docstring)."""

    name = "auto"

    def __init__(self, grounders: Sequence[Grounder], *, min_confidence: float = 0.7) -> None:
        if not grounders:
            raise ValueError("a grounding chain needs at least one grounder")
        self.grounders = tuple(grounders)
        self.min_confidence = min_confidence

    def ground(self, expression: str, observation: Observation) -> GroundingResult:
        attempts: list[Attempt] = []
        candidates: list[Candidate] = []
        weak: GroundingResult | None = None
        for grounder in self.grounders:
            start = time.perf_counter()
            try:
                result = grounder.ground(expression, observation)
            except NotFound as err:
                candidates.extend(err.candidates)
                attempts.append(_attempt(grounder, "not_found", str(err), start))
                continue
            except GrounderUnavailable as err:
                attempts.append(_attempt(grounder, "unavailable", str(err), start))
                continue
            except (GroundingReplyError, ModelError, GroundingError) as err:
                attempts.append(_attempt(grounder, "error", f"{type(err).__name__}: {err}", start))
                continue
            reason = f"{result.evidence} (confidence {result.confidence:.2f})"
            attempts.append(_attempt(grounder, "answered", reason, start))
            if result.confidence >= self.min_confidence:
                return dataclasses.replace(result, attempts=tuple(attempts))
            if weak is None or result.confidence > weak.confidence:
                weak = result
        if weak is not None:
            return dataclasses.replace(weak, attempts=tuple(attempts))
        tried = "; ".join(f"{a.grounder}: {a.reason}" for a in attempts)
        ranked = sorted({(c.text, c.role): c for c in candidates}.values(), key=lambda c: -c.score)
        raise NotFound(
            f"no grounder found {expression!r} ({tried})",
            expression=expression,
            grounder=self.name,
            reason="; ".join(f"{a.grounder} {a.outcome.replace('_', ' ')}" for a in attempts),
            candidates=tuple(ranked[:10]),
            attempts=tuple(attempts),
        )


def _attempt(grounder: Grounder, outcome: AttemptOutcome, reason: str, start: float) -> Attempt:
    return Attempt(grounder.name, outcome, reason, time.perf_counter() - start)
