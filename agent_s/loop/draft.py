"""The step being built: the frozen ``Step`` so far, replaced as each part of the step adds to
it, with the time each part took."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Sequence
from typing import Any

from agent_s.record.step import Step


class Draft:
    """One step as it is built (``agent_s.record.step.Step``)."""

    def __init__(self, number: int) -> None:
        self.step = Step.begin(number)

    def set(self, **fields: Any) -> None:
        self.step = self.step.model_copy(update=fields)

    def add(self, **items: Sequence[Any]) -> None:
        self.step = self.step.add(**items)

    @contextlib.contextmanager
    def timed(self, part: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.step = self.step.timed(part, time.perf_counter() - start)


__all__ = ["Draft"]
