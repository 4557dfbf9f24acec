"""Typed errors of model calls. Adapters translate every vendor exception into one of these.

Who must act:
- the run / retry layer: ``RateLimited``, ``ProviderUnavailable``, ``Timeout``,
  ``IncompleteReply`` (``retryable``);
- the caller: ``AuthenticationError``, ``BadRequest``, ``ProfileConfigError`` (fix the key, the
  request or the configuration; retrying cannot help);
- the agent loop: ``Refused``, ``OutputTruncated``, ``MalformedResponse`` (the call completed but
  gave nothing usable; the loop decides whether to re-ask);
- the run: ``BudgetExceeded`` (end it with a typed reason).

Exceptions store their data and do nothing else; messages never contain a key, only the name of
the variable or flag it came from.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from agent_s.errors import AgentSError
from agent_s.models.types import Usage


class ModelError(AgentSError):
    """A model call failed. ``attempts`` is set by the retry layer when it gives up."""

    retryable: ClassVar[bool] = False
    attempts: int = 1


class RateLimited(ModelError):
    """HTTP 429. ``retry_after`` is the server's requested wait in seconds, if it gave one."""

    retryable: ClassVar[bool] = True

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class ProviderUnavailable(ModelError):
    """5xx, 529 overloaded, or no connection at all (``status`` is None then)."""

    retryable: ClassVar[bool] = True

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        fix: str = "",
    ) -> None:
        super().__init__(f"{message}: {fix}" if fix else message)
        self.summary = message  # without the fix: what a retry's progress line shows
        self.status = status
        self.retry_after = retry_after


class Timeout(ModelError):
    """No complete reply within ``timeout_s`` seconds."""

    retryable: ClassVar[bool] = True

    def __init__(self, message: str, *, timeout_s: float | None = None) -> None:
        super().__init__(message)
        self.timeout_s = timeout_s


class AuthenticationError(ModelError):
    """The key is missing (``status`` None: raised at construction) or was rejected (401/403)."""

    def __init__(self, message: str, *, key_source: str, status: int | None = None) -> None:
        super().__init__(message)
        self.key_source = key_source
        self.status = status


class BadRequest(ModelError):
    """The API rejected the request itself (400, 404 unknown model, 413, 422)."""

    def __init__(self, message: str, *, status: int, api_message: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.api_message = api_message


class Refused(ModelError):
    """The model declined to answer (OpenAI ``refusal`` / content filter, Anthropic "refusal")."""

    def __init__(self, message: str, *, refusal: str, usage: Usage | None = None) -> None:
        super().__init__(message)
        self.refusal = refusal
        self.usage = usage or Usage()


class OutputTruncated(ModelError):
    """The reply hit the output-token limit; ``partial_text`` is what arrived before it."""

    def __init__(
        self,
        message: str,
        *,
        partial_text: str,
        max_output_tokens: int | None = None,
        usage: Usage | None = None,
    ) -> None:
        super().__init__(message)
        self.partial_text = partial_text
        self.max_output_tokens = max_output_tokens
        self.usage = usage or Usage()


class MalformedResponse(ModelError):
    """The body was not valid JSON or lacked the fields of the API's reply shape."""

    def __init__(self, message: str, *, detail: str = "") -> None:
        super().__init__(message)
        self.detail = detail


class IncompleteReply(MalformedResponse):
    """The body stopped mid-JSON (a connection or proxy cut it): transient, so retried."""

    retryable: ClassVar[bool] = True


class ProfileConfigError(AgentSError, ValueError):
    """A model-profile override in configuration is invalid (unknown key, wrong type)."""

    def __init__(self, message: str, *, pattern: str = "", key: str = "") -> None:
        super().__init__(message)
        self.pattern = pattern
        self.key = key


class BudgetExceeded(AgentSError):
    """The run's budget is spent; raised before a call that would spend more.

    Not a ModelError: no call was made. ``kind`` says which limit, ``spent`` how much went.
    """

    def __init__(
        self, message: str, *, kind: Literal["cost", "tokens"], limit: float, spent: float
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.limit = limit
        self.spent = spent


def mask_secret(secret: str | None) -> str:
    """A key as it may appear in a repr: never more than its last four characters."""
    if not secret:
        return "<none>"
    if len(secret) < 12:
        return "***"
    return f"***{secret[-4:]}"


__all__ = [
    "AuthenticationError",
    "BadRequest",
    "BudgetExceeded",
    "IncompleteReply",
    "MalformedResponse",
    "ModelError",
    "OutputTruncated",
    "ProfileConfigError",
    "ProviderUnavailable",
    "RateLimited",
    "Refused",
    "Timeout",
    "mask_secret",
]
