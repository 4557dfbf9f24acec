"""Every model call of one agent: the provider (metered, redacted, retried in one place), the
budget it is held to, the run's wall-time limit over retries, and each call noted on its step.

The worker's and reflection's calls go through ``call``; a grounding model gets its own
provider on the same meter (``grounding_model``), so one budget covers both.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from agent_s.guards.redaction import Redactor
from agent_s.loop.draft import Draft
from agent_s.models.errors import ModelError
from agent_s.models.factory import build_metered_provider, build_provider
from agent_s.models.profiles import ModelProfile, ProfileRegistry
from agent_s.models.retry import RetryPolicy, retry_line
from agent_s.models.types import Message, ModelReply, ModelRequest
from agent_s.models.usage import Budget, MeteredProvider, UsageMeter
from agent_s.record.result import RunEnded, RunStatus, Tally
from agent_s.record.step import ModelCall
from agent_s.settings.config import AgentConfig, GroundingConfig, ModelConfig


class ModelCalls:
    """The agent's model calls (see the module docstring). ``settings``: the agent's current
    settings; ``on_retry``: a progress line per retry."""

    def __init__(
        self,
        model: ModelConfig,
        settings: Callable[[], AgentConfig],
        redactor: Redactor,
        *,
        profiles: ProfileRegistry | None = None,
        on_retry: Callable[[str], None] | None = None,
    ) -> None:
        self._settings, self._redactor, self._retry_line = settings, redactor, on_retry
        self._profiles = profiles or ProfileRegistry()
        self.meter = UsageMeter(self.budget())  # one per agent, reset in place per task
        self.retry = RetryPolicy(max_attempts=settings().retry_attempts)
        self.provider = build_metered_provider(
            model.settings(),
            self.meter,
            profiles=profiles,
            retry=self.retry,
            on_retry=self._on_retry,
            before_retry=self._before_retry,
        )
        self.provider.redactor = redactor
        self._retries: list[str] = []
        self.tally = Tally()
        self.draft = Draft(0)

    def budget(self) -> Budget:
        settings = self._settings()
        return Budget(settings.max_cost_usd, settings.max_tokens)

    def reset(self, tally: Tally) -> None:
        """A new task: its tally, and the budget from the settings."""
        self.tally = tally
        self.meter.reset(self.budget())

    def grounding_model(self, grounding: GroundingConfig) -> MeteredProvider | None:
        """The grounding model's provider, on this meter, when the grounding uses one."""
        settings = grounding.settings()
        if settings is None or grounding.mode not in ("model", "auto"):
            return None
        provider = build_provider(
            settings, retry=self.retry, on_retry=self._on_retry, before_retry=self._before_retry
        )
        return MeteredProvider(provider, self.meter, redactor=self._redactor)

    def grounding_profile(self, grounding: GroundingConfig) -> ModelProfile | None:
        """The grounding model's profile (its ``point_convention``), when one is set."""
        settings = grounding.settings()
        return None if settings is None else self._profiles.resolve(settings.model, settings.api)

    def call(self, messages: Sequence[Message], purpose: str) -> ModelReply:
        """One model call; its retries (if any) are noted on the step."""
        self.tally.count(purpose)
        try:
            with self.draft.timed("model"):
                request = ModelRequest(tuple(messages), metadata={"purpose": purpose})
                return self.provider.complete(request)
        finally:
            self.draft.add(errors=self._retries)
            self._retries.clear()

    def reflect(self, messages: Sequence[Message] | None) -> str | None:
        """The reflection's text (None before the first step: nothing to reflect on)."""
        if messages is None:
            return None
        start = time.perf_counter()
        reply = self.call(messages, "reflect")
        call = ModelCall.of("reflect", reply.text, reply.usage, start, reply.attempts)
        self.draft.add(calls=[call])
        return reply.text.strip() or None

    def _on_retry(self, attempt: int, error: ModelError, delay: float) -> None:
        self._retries.append(
            f"{type(error).__name__} on attempt {attempt}: {error}; retried after {delay:.1f} s"
        )
        if self._retry_line is not None:
            line = retry_line(attempt, self._settings().retry_attempts, error, delay)
            self._retry_line(self._redactor.text(line))  # the server's words may quote a key

    def _before_retry(self, attempt: int, error: ModelError, seconds: float) -> None:
        """A retry that cannot finish within the run's wall-time limit is not started."""
        limit = self._settings().max_seconds
        if limit is not None and self.tally.elapsed + seconds > limit:
            raise RunEnded(
                f"the time limit of {limit:g} s would pass before model attempt {attempt + 1} "
                f"could finish (it may take {seconds:.0f} s) after: {error}",
                status=RunStatus.BUDGET_EXCEEDED,
                cause="max_seconds",
            ) from error

    def check_time(self) -> None:
        """``RunEnded`` once the run's wall-time limit has passed."""
        limit = self._settings().max_seconds
        if limit is not None and self.tally.elapsed >= limit:
            raise RunEnded(
                f"the time limit of {limit:g} s was reached",
                status=RunStatus.BUDGET_EXCEEDED,
                cause="max_seconds",
            )


__all__ = ["ModelCalls"]
