"""How a best-of-N run goes: how many attempts, how many at once, how they are judged.

    BestOfConfig(3)                                   # 3 attempts at once, one comparative call
    BestOfConfig(4, workers=2, judge="tournament")    # 2 at a time; 3 pairwise calls
    BestOfConfig(5, agree=2)                          # stop once 2 agree and their check passed
    BestOfConfig.from_environ(os.environ, n=3)        # AGENT_S_BEST_OF_* give the rest

Budgets: the run's cost limit (``max_cost``) covers every attempt and the judge: the judge's
share (``judge_share``) is kept back and the rest is split evenly between the attempts; its
time limit (``max_seconds``) is the whole run's (each attempt gets the time left when it
starts); ``max_steps`` is each attempt's, and ``max_total_steps`` (optional) all attempts'
together, split evenly.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from agent_s.bestofn.judge import JUDGE_MODES, JudgeMode

ENV_PREFIX = "AGENT_S_BEST_OF_"
MAX_ATTEMPTS = 16


@dataclass(frozen=True)
class BestOfConfig:
    """See the module docstring."""

    n: int
    workers: int | None = None  # attempts at once; None: all of them
    judge: JudgeMode = "comparative"
    captions: bool = False  # at most one captioning call per step a narrative cannot explain
    agree: int | None = None  # early stop: this many attempts succeeded, checked, same answer
    judge_share: float = 0.1  # of the cost limit, kept for the judge
    max_total_steps: int | None = None
    judge_tries: int = 3  # replies the judge may give per question (invalid ones get feedback)

    def __post_init__(self) -> None:
        if not 1 <= self.n <= MAX_ATTEMPTS:
            raise ValueError(f"--best-of takes 1 to {MAX_ATTEMPTS} attempts, not {self.n}")
        if self.workers is not None and self.workers < 1:
            raise ValueError("--workers must be at least 1")
        if self.judge not in JUDGE_MODES:
            raise ValueError(f"--judge is comparative or tournament, not {self.judge!r}")
        if self.agree is not None and not 1 <= self.agree <= self.n:
            raise ValueError(f"agree must be between 1 and the {self.n} attempts")
        if not 0 <= self.judge_share < 1:
            raise ValueError("judge_share is a fraction of the cost limit, from 0 to below 1")
        if self.max_total_steps is not None and self.max_total_steps < self.n:
            raise ValueError(f"max_total_steps must give each of the {self.n} attempts a step")
        if self.judge_tries < 1:
            raise ValueError("judge_tries must be at least 1")

    @property
    def at_once(self) -> int:
        return min(self.workers or self.n, self.n)

    def attempt_steps(self, max_steps: int) -> int:
        """Each attempt's step limit."""
        if self.max_total_steps is None:
            return max_steps
        return min(max_steps, self.max_total_steps // self.n)

    def attempt_cost(self, limit: float | None) -> float | None:
        """Each attempt's share of the cost limit ``limit`` (None: no limit)."""
        if limit is None:
            return None
        return limit * (1.0 - self.judge_share) / self.n

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None, **given: Any) -> BestOfConfig:
        """``given`` (None values dropped) over ``AGENT_S_BEST_OF_JUDGE``, ``_AGREE``,
        ``_CAPTIONS``, ``_WORKERS``, ``_JUDGE_SHARE``, ``_MAX_TOTAL_STEPS``."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        readers: dict[str, Any] = {
            "judge": str,
            "agree": int,
            "captions": _boolean,
            "workers": int,
            "judge_share": float,
            "max_total_steps": int,
        }
        for name, read in readers.items():
            raw = env.get(ENV_PREFIX + name.upper(), "").strip()
            if raw:
                try:
                    values[name] = read(raw)
                except ValueError:
                    raise ValueError(f"{ENV_PREFIX}{name.upper()}={raw!r} is not valid") from None
        values.update({k: v for k, v in given.items() if v is not None})
        if "judge" in values:
            values["judge"] = cast("JudgeMode", values["judge"])
        return cls(**values)


def _boolean(raw: str) -> bool:
    lowered = raw.lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError(raw)


__all__ = ["ENV_PREFIX", "MAX_ATTEMPTS", "BestOfConfig"]
