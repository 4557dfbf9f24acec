"""Build a ready provider from settings: adapter, profile, retries, and (optionally) a meter.

    settings = settings_from_env("anthropic", "claude-sonnet-4-5")   # at the edge
    profiles = load_profiles()        # agent_s.settings.read, at the edge
    provider = build_provider(settings, profiles=profiles, meter=UsageMeter(Budget(2.0)))

The layers, outermost first: MeteredProvider (budget check, charge) -> RetryingProvider
(retries) -> the adapter (one HTTP attempt through the vendor SDK).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from agent_s.models.endpoints import ProviderSettings
from agent_s.models.errors import ProfileConfigError
from agent_s.models.profiles import ModelProfile, ProfileRegistry
from agent_s.models.retry import BeforeRetry, OnRetry, RetryingProvider, RetryPolicy, Sleep
from agent_s.models.types import Provider
from agent_s.models.usage import MeteredProvider, UsageMeter

if TYPE_CHECKING:
    from agent_s.models.anthropic_messages import AnthropicProvider
    from agent_s.models.openai_chat import OpenAIChatProvider
    from agent_s.models.openai_responses import OpenAIResponsesProvider

    Adapter = OpenAIChatProvider | OpenAIResponsesProvider | AnthropicProvider


def build_adapter(
    settings: ProviderSettings, profile: ModelProfile, *, http_client: Any = None
) -> Adapter:
    """The bare adapter for ``settings.api`` (no retries). Fails now if a hosted key is missing.

    Each adapter's module (and its SDK) is imported here, when it is first needed: the
    anthropic SDK alone takes 1.7 s of CPU to import, the openai one 0.7 s, and a run or a
    command uses one API at most."""
    if settings.api in ("openai_chat", "openai_compatible"):
        from agent_s.models.openai_chat import OpenAIChatProvider

        return OpenAIChatProvider(settings, profile, http_client=http_client)
    if settings.api == "openai_responses":
        from agent_s.models.openai_responses import OpenAIResponsesProvider

        return OpenAIResponsesProvider(settings, profile, http_client=http_client)
    if settings.api == "anthropic":
        from agent_s.models.anthropic_messages import AnthropicProvider

        return AnthropicProvider(settings, profile, http_client=http_client)
    raise ValueError(f"unknown API {settings.api!r}")


def build_provider(
    settings: ProviderSettings,
    *,
    profiles: ProfileRegistry | None = None,
    retry: RetryPolicy | None = None,
    meter: UsageMeter | None = None,
    sleep: Sleep = time.sleep,
    on_retry: OnRetry | None = None,
    before_retry: BeforeRetry | None = None,
    http_client: Any = None,
) -> Provider:
    """A provider with its profile resolved, retries, and budget checks when ``meter`` is given.

    A cost budget for a model whose prices are unknown is refused here, at construction,
    rather than silently never triggering.
    """
    profile = (profiles or ProfileRegistry()).resolve(settings.model, settings.api)
    if meter is not None:
        _refuse_unpriced_budget(settings, profile, meter)
    adapter = build_adapter(settings, profile, http_client=http_client)
    provider: Provider = RetryingProvider(
        adapter, retry, sleep=sleep, on_retry=on_retry, before_retry=before_retry, settings=settings
    )
    if meter is not None:
        provider = MeteredProvider(provider, meter)
    return provider


def build_metered_provider(
    settings: ProviderSettings,
    meter: UsageMeter,
    *,
    profiles: ProfileRegistry | None = None,
    retry: RetryPolicy | None = None,
    on_retry: OnRetry | None = None,
    before_retry: BeforeRetry | None = None,
) -> MeteredProvider:
    """``build_provider`` with a meter: the provider as its metered outer layer, whose
    ``redactor`` the caller may set."""
    profile = (profiles or ProfileRegistry()).resolve(settings.model, settings.api)
    _refuse_unpriced_budget(settings, profile, meter)
    inner = build_provider(
        settings, profiles=profiles, retry=retry, on_retry=on_retry, before_retry=before_retry
    )
    return MeteredProvider(inner, meter)


def _refuse_unpriced_budget(
    settings: ProviderSettings, profile: ModelProfile, meter: UsageMeter
) -> None:
    """A cost budget for a model whose prices are unknown is refused at construction, rather
    than silently never triggering."""
    if meter.budget.max_cost_usd is not None and not profile.prices_known:
        raise ProfileConfigError(
            f"a cost budget cannot be enforced for model {settings.model!r}: its prices are not "
            f'known; set input_price and output_price under [profiles."{settings.model}"] in '
            "the configuration, or use a token budget"
        )


__all__ = ["build_adapter", "build_metered_provider", "build_provider"]
