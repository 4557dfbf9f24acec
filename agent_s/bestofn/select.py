"""Choosing among finished attempts: early agreement, the judge, the ``BestOf`` record.

Used by both ``agent-s run --virtual --best-of N`` (``live``) and ``agent-s bench run
--best-of N`` (``bench``): each attempt ends as an ``Attempt`` (its result, its narrative,
its folder); ``agreed`` finds an early stop, ``judge`` asks the model.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from agent_s.bestofn.judge import Candidate, Judge, Verdict
from agent_s.bestofn.narrative import Narrative
from agent_s.guards import files
from agent_s.record.result import BestOf, BestOfAttempt

if TYPE_CHECKING:
    from agent_s.bestofn.config import BestOfConfig
    from agent_s.settings.read import Settings


@dataclass(frozen=True)
class Attempt:
    """One finished (or stopped) attempt."""

    number: int
    status: str  # a RunStatus value; "error" when it left no result
    reason: str
    narrative: Narrative
    trajectory: Path | None = None
    steps: int = 0
    cost_usd: float = 0.0
    verified: bool = False  # its check ran after done and passed
    answer: str | None = None
    score: float | None = None  # bench: the evaluator's

    @property
    def judged(self) -> bool:
        """Whether the judge sees it: it ran (a cancelled or crashed attempt is left out)."""
        return self.status not in ("cancelled", "error") or bool(self.narrative.steps)

    def candidate(self) -> Candidate:
        final = None
        if self.trajectory is not None and self.narrative.final_screenshot:
            name, what = self.narrative.final_screenshot, f"attempt {self.number}'s final screen"
            final = files.contained(self.trajectory, name, what)  # shown to the judge
        return Candidate(
            number=self.number,
            narrative=tuple(s.line() for s in self.narrative.steps),
            ending=f"{self.status}: {self.reason}"[:300],
            steps=self.steps,
            final_screenshot=final,
        )

    def record(self) -> BestOfAttempt:
        return BestOfAttempt(
            number=self.number,
            status=self.status,
            reason=self.reason,
            steps=self.steps,
            cost_usd=round(self.cost_usd, 6),
            narrative=tuple(self.narrative.lines()),
            trajectory_dir=str(self.trajectory) if self.trajectory else None,
            score=self.score,
        )


def agreed(attempts: Sequence[Attempt], k: int | None) -> Attempt | None:
    """The first of ``k`` attempts that succeeded with their check passed and gave the same
    answer (None: no such ``k``, or no early stop asked for)."""
    if not k:
        return None
    groups: dict[str | None, list[Attempt]] = {}
    for attempt in sorted(attempts, key=lambda a: a.number):
        if attempt.status == "succeeded" and attempt.verified:
            groups.setdefault((attempt.answer or "").strip() or None, []).append(attempt)
    for group in groups.values():
        if len(group) >= k:
            return group[0]
    return None


def judge(
    task: str,
    attempts: Sequence[Attempt],
    config: BestOfConfig,
    settings: Settings,
    api_key: str | None,
    cost_left: float | None,
) -> Verdict:
    """The judge's pick among the attempts that ran (``RunEnded`` if it gave no usable
    reply; a ``BudgetExceeded`` when ``cost_left`` is spent)."""
    from agent_s.models.factory import build_provider
    from agent_s.models.usage import Budget, UsageMeter
    from agent_s.prompting import detect_platform

    ran = [a for a in attempts if a.judged]
    if not ran:
        raise ValueError("no attempt ran far enough to be judged")
    model = settings.build_model(api_key)
    meter = UsageMeter(Budget(cost_left, settings.limits.max_tokens))
    provider = build_provider(model.settings(), profiles=settings.build_profiles(), meter=meter)
    width, height = _screen(ran)
    platform = detect_platform(width, height, system=sys.platform, environ={})
    chooser = Judge(provider, platform, mode=config.judge, tries=config.judge_tries)
    return chooser.pick(task, [a.candidate() for a in ran])


def _screen(attempts: Sequence[Attempt]) -> tuple[int, int]:
    """The size of the first final screenshot that can be read (the desktop's screen)."""
    from PIL import Image

    for attempt in attempts:
        if attempt.trajectory is None or not attempt.narrative.final_screenshot:
            continue
        try:
            final = files.inside(attempt.trajectory, attempt.narrative.final_screenshot)
            with Image.open(final) as shot:
                return shot.size
        except (OSError, files.OutsideFolder):
            continue
    return 1280, 800


def best_of(verdict: Verdict, attempts: Sequence[Attempt]) -> BestOf:
    return BestOf(
        picked=verdict.picked,
        reason=verdict.reason,
        by=verdict.by,
        attempts=tuple(a.record() for a in sorted(attempts, key=lambda a: a.number)),
        judge_calls=len(verdict.calls),
        judge_cost_usd=round(verdict.usage.cost_usd, 6),
    )


__all__ = ["Attempt", "agreed", "best_of", "judge"]
