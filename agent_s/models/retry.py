"""Retries and timeouts: the one place that decides how long one attempt at a model call may
take, and whether and when a failed attempt is tried again.

Each attempt's timeout is ``request_timeout``: the settings' ``timeout_s`` as given when the
user set it; by default (``scale_timeout``) a base of ``DEFAULT_TIMEOUT_S`` (60 s) plus
``PER_IMAGE_S`` (5 s) per image and ``PER_100KB_S`` (1 s) per 100 KB of request, at most
``MAX_TIMEOUT_S`` (600 s): a request with two screenshots of 400 KB waits about 78 s.

Only errors whose type says ``retryable`` (rate limit, 5xx / overloaded / no connection,
timeout, a reply body cut off mid-JSON) are retried, at most ``max_attempts`` times in all,
with exponential backoff and full jitter, or after the server's ``Retry-After`` when it sent
one. A wait longer than ``max_retry_after_s`` is not sat out: the error is raised at once,
carrying ``retry_after``.
The SDK clients are built with ``max_retries=0`` so no other layer retries. ``on_retry`` hears
of each retry before its wait; ``before_retry`` is told how long the next attempt may take (its
wait plus its timeout) and may raise to stop it from starting (a run's wall-time limit).
"""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import TypeVar

from agent_s.models.endpoints import ProviderSettings
from agent_s.models.errors import ModelError
from agent_s.models.types import ImagePart, ModelReply, ModelRequest, Provider, TextPart

T = TypeVar("T")
Sleep = Callable[[float], None]
OnRetry = Callable[[int, ModelError, float], None]  # (attempt that failed, its error, delay)
# (attempt that failed, its error, seconds the next attempt may take); raises to stop it
BeforeRetry = Callable[[int, ModelError, float], None]

PER_IMAGE_S = 5.0
PER_100KB_S = 1.0
MAX_TIMEOUT_S = 600.0


def request_timeout(settings: ProviderSettings, request: ModelRequest) -> float:
    """How long one attempt at ``request`` may take (see the module docstring)."""
    if not settings.scale_timeout:
        return settings.timeout_s
    images = size = 0
    for message in request.messages:
        for part in message.parts:
            if isinstance(part, ImagePart):
                images += 1
                size += len(part.data) * 4 // 3  # base64 on the wire
            elif isinstance(part, TextPart):
                size += len(part.text)
    allowance = images * PER_IMAGE_S + size / 100_000 * PER_100KB_S
    return round(min(MAX_TIMEOUT_S, settings.timeout_s + allowance), 1)


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 4
    base_delay_s: float = 1.0
    max_delay_s: float = 30.0
    max_retry_after_s: float = 120.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, got {self.max_attempts}")
        if self.base_delay_s < 0 or self.max_delay_s < 0 or self.max_retry_after_s < 0:
            raise ValueError("retry delays must not be negative")

    def backoff(self, attempt: int, rng: Callable[[], float] = random.random) -> float:
        """Full jitter: uniform in [0, min(max_delay, base * 2**(attempt-1))]."""
        ceiling = min(self.max_delay_s, self.base_delay_s * 2 ** (attempt - 1))
        return rng() * ceiling


def parse_retry_after(headers: Mapping[str, str], *, now: datetime | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date)."""
    lowered = {k.lower(): v for k, v in headers.items()}
    millis = lowered.get("retry-after-ms")
    if millis is not None:
        try:
            value = float(millis) / 1000
        except ValueError:
            value = -1.0
        if value >= 0 and value == value:  # not NaN
            return value
    raw = lowered.get("retry-after")
    if raw is None:
        return None
    raw = raw.strip()
    try:
        seconds = float(raw)
    except ValueError:
        pass
    else:
        return seconds if seconds >= 0 and seconds == seconds else None
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    now = now or datetime.now(timezone.utc)
    return max(0.0, (when - now).total_seconds())


def _delay_for(
    err: ModelError, attempt: int, policy: RetryPolicy, rng: Callable[[], float]
) -> float | None:
    """The wait before the next attempt, or None when the server asked for too long a wait."""
    retry_after = getattr(err, "retry_after", None)
    if retry_after is None:
        return policy.backoff(attempt, rng)
    if retry_after > policy.max_retry_after_s:
        return None
    return float(retry_after)


def retry_line(attempt: int, max_attempts: int, error: ModelError, delay: float) -> str:
    """The progress line for a retry: "waiting for the model: attempt 2/4 after a timeout of
    60 s" (the attempt about to start, after what ended the one before)."""
    timeout_s = getattr(error, "timeout_s", None)
    said = getattr(error, "summary", None) or str(error)  # the cause, not the fix again
    why = f"a timeout of {timeout_s:g} s" if timeout_s is not None else said[:200]
    return f"waiting for the model: attempt {attempt + 1}/{max_attempts} after {why}"


def call_with_retries(
    fn: Callable[[], T],
    policy: RetryPolicy,
    *,
    sleep: Sleep = time.sleep,
    rng: Callable[[], float] = random.random,
    on_retry: OnRetry | None = None,
    before_retry: BeforeRetry | None = None,
    attempt_timeout: float = 0.0,
) -> tuple[T, int]:
    """Run ``fn`` until it returns, a non-retryable error, or the attempts run out.

    Returns ``(result, attempts)``. The error that ends it propagates with ``attempts`` set.
    """
    for attempt in range(1, policy.max_attempts + 1):
        try:
            return fn(), attempt
        except ModelError as err:
            err.attempts = attempt
            if not err.retryable or attempt == policy.max_attempts:
                raise
            delay = _delay_for(err, attempt, policy, rng)
            if delay is None:
                raise
            if before_retry is not None:
                before_retry(attempt, err, delay + attempt_timeout)  # may raise: not started
            if on_retry is not None:
                on_retry(attempt, err, delay)
            sleep(delay)
    raise AssertionError("unreachable: the last attempt returns or raises")  # pragma: no cover


class RetryingProvider:
    """Wraps any provider so each ``complete`` is retried per ``policy``."""

    def __init__(
        self,
        inner: Provider,
        policy: RetryPolicy | None = None,
        *,
        sleep: Sleep = time.sleep,
        rng: Callable[[], float] = random.random,
        on_retry: OnRetry | None = None,
        before_retry: BeforeRetry | None = None,
        settings: ProviderSettings | None = None,
    ) -> None:
        """``settings``: the inner provider's, for each attempt's timeout (``before_retry``)."""
        self.inner = inner
        self.policy = policy or RetryPolicy()
        self._sleep = sleep
        self._rng = rng
        self._on_retry = on_retry
        self._before_retry = before_retry
        self._settings = settings

    @property
    def model(self) -> str:
        return self.inner.model

    def complete(self, request: ModelRequest) -> ModelReply:
        reply, attempts = call_with_retries(
            lambda: self.inner.complete(request),
            self.policy,
            sleep=self._sleep,
            rng=self._rng,
            on_retry=self._on_retry,
            before_retry=self._before_retry,
            attempt_timeout=request_timeout(self._settings, request) if self._settings else 0.0,
        )
        return replace(reply, attempts=attempts)

    def __repr__(self) -> str:
        return f"RetryingProvider({self.inner!r}, {self.policy})"


__all__ = [
    "BeforeRetry",
    "OnRetry",
    "RetryPolicy",
    "RetryingProvider",
    "call_with_retries",
    "parse_retry_after",
    "request_timeout",
    "retry_line",
]
