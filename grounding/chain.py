"""Grounders tried in order until one answers: ``auto`` is accessibility, OCR, then the model.

Each grounder either answers, finds nothing (``NotFound``), cannot look (``GrounderUnavailable``)
or fails (a grounding model's bad reply, or a model call error); the chain records every attempt
with its reason and time, and the answer carries them (``GroundingResult.attempts``). When no
grounder answers, the chain raises ``NotFound`` with every attempt and all candidates seen, so
the caller (and the model, as feedback) learns what was on the screen and why nothing matched.

A grounder answering below ``min_confidence`` does not end the chain when a later one may do
better: its answer is kept and returned only if no later grounder answers more confidently.

``explain`` asks every grounder of a chain and lists the candidates each saw, with scores
(``agent-s ground --explain``).

A grounder that found several elements fitting the description equally says so (``NotFound``
with reason ``ambiguous``); a later model-free grounder that then answers with one of those same
elements has only guessed, so its answer is refused too and the chain reports the ambiguity.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass

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
from agent_s.settings.config import (
    GroundMode as GroundMode,
)  # re-exported: the names live with the settings

_MODEL_FREE = frozenset({"a11y", "ocr"})


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
        tied: list[Candidate] = []  # what an earlier grounder could not tell apart
        for grounder in self.grounders:
            start = time.perf_counter()
            try:
                result = grounder.ground(expression, observation)
            except NotFound as err:
                candidates.extend(err.candidates)
                if err.reason == "ambiguous":
                    tied.extend(err.candidates)
                attempts.append(_attempt(grounder, "not_found", str(err), start))
                continue
            except GrounderUnavailable as err:
                attempts.append(_attempt(grounder, "unavailable", str(err), start))
                continue
            except (GroundingReplyError, ModelError, GroundingError) as err:
                attempts.append(_attempt(grounder, "error", f"{type(err).__name__}: {err}", start))
                continue
            if grounder.name in _MODEL_FREE and any(
                c.box is not None and c.box.contains(result.point) for c in tied
            ):
                reason = f"answered {result.evidence}, one of the elements found ambiguous before"
                attempts.append(_attempt(grounder, "not_found", reason, start))
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
        seen = tied or candidates  # an ambiguity lists the elements it could not tell apart
        unique = {(c.text, c.role, c.box if tied else None): c for c in seen}
        ranked = sorted(unique.values(), key=lambda c: -c.score)
        what = f"{expression!r} is ambiguous" if tied else f"no grounder found {expression!r}"
        raise NotFound(
            f"{what} ({tried})",
            expression=expression,
            grounder=self.name,
            reason="ambiguous"
            if tied
            else "; ".join(f"{a.grounder} {a.outcome.replace('_', ' ')}" for a in attempts),
            candidates=tuple(ranked[:10]),
            attempts=tuple(attempts),
        )


@dataclass(frozen=True)
class Explanation:
    """What one grounder saw for an expression: its ``candidates`` (best first, with scores),
    whether and where it answered (``result``), or why not (``reason``)."""

    grounder: str
    outcome: AttemptOutcome
    candidates: tuple[Candidate, ...]
    result: GroundingResult | None = None
    reason: str = ""


def explain(grounder: Grounder, expression: str, observation: Observation) -> list[Explanation]:
    """Every grounder of ``grounder`` (a chain's members, in order) asked for ``expression``,
    each with the candidates it saw: a grounder that can list its candidates (OCR: every word
    and detected control matching a phrase) lists them all; the others give their answer or
    the candidates their ``NotFound`` named. For ``agent-s ground --explain``."""
    members = grounder.grounders if isinstance(grounder, GroundingChain) else (grounder,)
    out = []
    for member in members:
        listed: list[Candidate] = []
        lister = getattr(member, "candidates", None)
        try:
            if callable(lister):
                listed = list(lister(expression, observation))
            result = member.ground(expression, observation)
        except NotFound as err:
            seen = listed or list(err.candidates)
            out.append(Explanation(member.name, "not_found", tuple(seen), reason=str(err)))
            continue
        except GrounderUnavailable as err:
            out.append(Explanation(member.name, "unavailable", tuple(listed), reason=str(err)))
            continue
        except (GroundingReplyError, ModelError, GroundingError) as err:
            reason = f"{type(err).__name__}: {err}"
            out.append(Explanation(member.name, "error", tuple(listed), reason=reason))
            continue
        if not listed:
            listed = [Candidate(expression, result.confidence, result.box, "")]
        out.append(Explanation(member.name, "answered", tuple(listed), result, result.evidence))
    return out


def _attempt(grounder: Grounder, outcome: AttemptOutcome, reason: str, start: float) -> Attempt:
    return Attempt(grounder.name, outcome, reason, time.perf_counter() - start)
