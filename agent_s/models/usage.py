"""Usage accounting per call and per run, and the run's budget.

Every call's ``Usage`` (tokens as the API reported them, cost from the profile's prices) is
charged to a ``UsageMeter``. ``check()`` raises ``BudgetExceeded`` once the spend has reached a
limit, and ``MeteredProvider`` calls it before each request: a run stops with a typed reason
before the call that would overspend, never in the middle of one. Usage carried by a failed
call (a truncated or refused reply was still billed) is charged too.

``MeteredProvider`` is also where secrets are taken out: every call of a run goes through it, so
with a ``redactor`` (``agent_s.guards.redaction``) every text part of every request is redacted
before it
leaves. Images are sent as they are (a secret on the screen cannot be redacted from pixels).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agent_s.models.errors import BudgetExceeded, OutputTruncated, Refused
from agent_s.models.types import ModelReply, ModelRequest, Provider, Usage

if TYPE_CHECKING:
    from agent_s.guards.redaction import Redactor


@dataclass(frozen=True)
class Budget:
    """Limits for one run; None means unlimited."""

    max_cost_usd: float | None = None
    max_tokens: int | None = None

    def __post_init__(self) -> None:
        if self.max_cost_usd is not None and self.max_cost_usd < 0:
            raise ValueError(f"max_cost_usd must not be negative, got {self.max_cost_usd}")
        if self.max_tokens is not None and self.max_tokens < 0:
            raise ValueError(f"max_tokens must not be negative, got {self.max_tokens}")


@dataclass(frozen=True)
class Charge:
    """One charged call: which model, what for (``ModelRequest.metadata['purpose']``)."""

    model: str
    purpose: str
    usage: Usage


class UsageMeter:
    """Totals for a run, the list of charges, and the budget check. Thread-safe."""

    def __init__(self, budget: Budget | None = None) -> None:
        self.budget = budget or Budget()
        self._lock = threading.Lock()
        self._charges: list[Charge] = []
        self._total = Usage()

    @property
    def total(self) -> Usage:
        with self._lock:
            return self._total

    @property
    def charges(self) -> tuple[Charge, ...]:
        with self._lock:
            return tuple(self._charges)

    def charge(self, usage: Usage, *, model: str = "", purpose: str = "") -> None:
        with self._lock:
            self._charges.append(Charge(model, purpose, usage))
            self._total = self._total + usage

    def reset(self, budget: Budget | None = None) -> None:
        """Start over in place (a new task): no charges, and ``budget`` when given. Every
        provider charging this meter keeps doing so: nothing needs wiring again."""
        with self._lock:
            if budget is not None:
                self.budget = budget
            self._charges.clear()
            self._total = Usage()

    def by_model(self) -> dict[str, Usage]:
        totals: dict[str, Usage] = {}
        for item in self.charges:
            totals[item.model] = totals.get(item.model, Usage()) + item.usage
        return totals

    def exceeded(self) -> BudgetExceeded | None:
        """The error ``check`` would raise, or None while there is budget left."""
        total = self.total
        limit_cost, limit_tokens = self.budget.max_cost_usd, self.budget.max_tokens
        if limit_cost is not None and total.cost_usd >= limit_cost:
            return BudgetExceeded(
                f"cost budget spent: ${total.cost_usd:.4f} of ${limit_cost:.4f}",
                kind="cost",
                limit=limit_cost,
                spent=total.cost_usd,
            )
        if limit_tokens is not None and total.total_tokens >= limit_tokens:
            return BudgetExceeded(
                f"token budget spent: {total.total_tokens} of {limit_tokens} tokens",
                kind="tokens",
                limit=limit_tokens,
                spent=total.total_tokens,
            )
        return None

    def check(self) -> None:
        """Raise ``BudgetExceeded`` if a limit has been reached; call before each model call."""
        error = self.exceeded()
        if error is not None:
            raise error


class MeteredProvider:
    """Checks the budget before each call, redacts the request's text (with a ``redactor``),
    and charges the meter after the call."""

    def __init__(
        self, inner: Provider, meter: UsageMeter, *, redactor: Redactor | None = None
    ) -> None:
        self.inner = inner
        self.meter = meter
        self.redactor = redactor

    @property
    def model(self) -> str:
        return self.inner.model

    def complete(self, request: ModelRequest) -> ModelReply:
        self.meter.check()
        purpose = request.metadata.get("purpose", "")
        if self.redactor is not None:
            request = self.redactor.request(request)
        try:
            reply = self.inner.complete(request)
        except (OutputTruncated, Refused) as err:
            self.meter.charge(err.usage, model=self.model, purpose=purpose)
            raise
        self.meter.charge(reply.usage, model=self.model, purpose=purpose)
        return reply

    def __repr__(self) -> str:
        return f"MeteredProvider({self.inner!r})"


__all__ = ["Budget", "Charge", "MeteredProvider", "UsageMeter"]
