"""Model providers: one interface, one adapter per API.

- ``types``: provider-neutral messages, requests, replies, usage; the ``Provider`` protocol.
- ``endpoints``: which URL and key (``settings_from_env`` reads the environment, once).
- ``profiles``: per-model capabilities and prices (``agent_s.settings.read.load_profiles``
  reads them from the configuration file).
- ``openai_chat`` / ``openai_responses`` / ``anthropic_messages``: the adapters.
- ``retry``: the only retry layer. ``usage``: accounting and budgets. ``errors``: typed errors.
- ``factory.build_provider``: all of the above put together.

Names are loaded lazily, so ``import agent_s.models.types`` does not pull in the vendor SDKs.

May use: images, errors (and the vendor SDKs). Used by: settings and every stage that asks a
model (request -> model); the loop, planning and the rest are above it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_HOME = {
    "endpoints": ("ProviderSettings", "settings_from_env"),
    "errors": (
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
    ),
    "factory": ("build_adapter", "build_provider"),
    "profiles": (
        "ApiKind",
        "ModelProfile",
        "ProfileRegistry",
        "registry_from_dict",
    ),
    "retry": ("RetryPolicy", "RetryingProvider"),
    "types": (
        "ImagePart",
        "Message",
        "ModelReply",
        "ModelRequest",
        "Provider",
        "TextPart",
        "Usage",
    ),
    "usage": ("Budget", "MeteredProvider", "UsageMeter"),
}
_WHERE = {name: module for module, names in _HOME.items() for name in names}
__all__ = [
    "ApiKind",
    "AuthenticationError",
    "BadRequest",
    "Budget",
    "BudgetExceeded",
    "ImagePart",
    "IncompleteReply",
    "MalformedResponse",
    "Message",
    "MeteredProvider",
    "ModelError",
    "ModelProfile",
    "ModelReply",
    "ModelRequest",
    "OutputTruncated",
    "ProfileConfigError",
    "ProfileRegistry",
    "Provider",
    "ProviderSettings",
    "ProviderUnavailable",
    "RateLimited",
    "Refused",
    "RetryPolicy",
    "RetryingProvider",
    "TextPart",
    "Timeout",
    "Usage",
    "UsageMeter",
    "build_adapter",
    "build_provider",
    "registry_from_dict",
    "settings_from_env",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if TYPE_CHECKING:
    from agent_s.models.endpoints import ProviderSettings, settings_from_env
    from agent_s.models.errors import (
        AuthenticationError,
        BadRequest,
        BudgetExceeded,
        IncompleteReply,
        MalformedResponse,
        ModelError,
        OutputTruncated,
        ProfileConfigError,
        ProviderUnavailable,
        RateLimited,
        Refused,
        Timeout,
    )
    from agent_s.models.factory import build_adapter, build_provider
    from agent_s.models.profiles import (
        ApiKind,
        ModelProfile,
        ProfileRegistry,
        registry_from_dict,
    )
    from agent_s.models.retry import RetryingProvider, RetryPolicy
    from agent_s.models.types import (
        ImagePart,
        Message,
        ModelReply,
        ModelRequest,
        Provider,
        TextPart,
        Usage,
    )
    from agent_s.models.usage import Budget, MeteredProvider, UsageMeter
