"""Which endpoint a provider talks to, which key it needs, and where that key comes from.

``settings_from_env`` is the edge: it is the one function here that reads the environment,
and the CLI / SDK call it once. Everything below it receives a ``ProviderSettings``.

A hosted API (OpenAI, Anthropic, OpenRouter, Azure OpenAI, ...) needs a key, and a missing one
fails at construction. A local OpenAI-compatible server (vLLM, Ollama, LM Studio, anything not
on the hosted list) gets a placeholder key it ignores; the user's real OpenAI key is never sent
to it unless they pass it on purpose.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import urlsplit

from agent_s.models.errors import AuthenticationError, mask_secret
from agent_s.models.profiles import ApiKind

# a model call's timeout by default: this base, plus an allowance per image and per 100 KB of
# request (``agent_s.models.retry.request_timeout``); a timeout the user sets is used as given
DEFAULT_TIMEOUT_S = 60.0
NO_KEY_PLACEHOLDER = "agent-s-no-key"  # what a keyless local server receives

# the provider names users give (--provider, AGENT_S_PROVIDER, [model] provider) -> their API
ProviderName = Literal["openai", "anthropic", "openai-compatible", "openai-responses"]
PROVIDERS: Mapping[ProviderName, ApiKind] = {
    "openai": "openai_chat",
    "anthropic": "anthropic",
    "openai-compatible": "openai_compatible",
    "openai-responses": "openai_responses",
}
PROVIDER_NAMES: Mapping[ApiKind, ProviderName] = {api: name for name, api in PROVIDERS.items()}

DEFAULT_BASE_URLS: Mapping[ApiKind, str] = {
    "openai_chat": "https://api.openai.com/v1",
    "openai_responses": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
    "openai_compatible": "http://localhost:8000/v1",  # vLLM's default
}

# host suffix -> (label in messages, environment variable that normally holds its key)
_HOSTED: tuple[tuple[str, str, str], ...] = (
    ("api.openai.com", "the OpenAI API", "OPENAI_API_KEY"),
    ("api.anthropic.com", "the Anthropic API", "ANTHROPIC_API_KEY"),
    ("openrouter.ai", "OpenRouter", "OPENROUTER_API_KEY"),
    (".openai.azure.com", "Azure OpenAI", "AZURE_OPENAI_API_KEY"),
    ("generativelanguage.googleapis.com", "the Gemini API", "GEMINI_API_KEY"),
    ("api.together.xyz", "Together AI", "TOGETHER_API_KEY"),
    ("api.groq.com", "Groq", "GROQ_API_KEY"),
    ("api.deepseek.com", "DeepSeek", "DEEPSEEK_API_KEY"),
    ("api.mistral.ai", "Mistral", "MISTRAL_API_KEY"),
    ("api.fireworks.ai", "Fireworks AI", "FIREWORKS_API_KEY"),
    ("api.parasail.io", "Parasail", "PARASAIL_API_KEY"),
    ("router.huggingface.co", "Hugging Face", "HF_TOKEN"),
    ("api-inference.huggingface.co", "Hugging Face", "HF_TOKEN"),
    ("endpoints.huggingface.cloud", "a Hugging Face endpoint", "HF_TOKEN"),
)
COMPATIBLE_KEY_ENV = "AGENT_S_COMPATIBLE_API_KEY"  # for a self-hosted server that wants a key


@dataclass(frozen=True)
class Endpoint:
    api: ApiKind
    base_url: str
    label: str  # for messages: "the OpenAI API", "the server at http://localhost:11434/v1"
    hosted: bool  # a hosted API needs a key
    key_env: str  # the environment variable that normally holds its key

    @property
    def is_azure(self) -> bool:
        return (urlsplit(self.base_url).hostname or "").endswith(".openai.azure.com")


def endpoint_for(api: ApiKind, base_url: str | None = None) -> Endpoint:
    url = (base_url or DEFAULT_BASE_URLS[api]).rstrip("/")
    host = (urlsplit(url).hostname or "").lower()
    for suffix, label, key_env in _HOSTED:
        domain = suffix.lstrip(".")
        if host == domain or host.endswith("." + domain):
            return Endpoint(api, url, label, True, key_env)
    fallback_env = "ANTHROPIC_API_KEY" if api == "anthropic" else COMPATIBLE_KEY_ENV
    return Endpoint(api, url, f"the server at {url}", False, fallback_env)


@dataclass(frozen=True)
class ProviderSettings:
    """Everything needed to build one provider. The key never appears in its repr."""

    api: ApiKind
    model: str
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    key_source: str = ""  # where the key came from, for messages: a variable or a flag name
    timeout_s: float = DEFAULT_TIMEOUT_S
    # True: ``timeout_s`` is a base that grows with the request (``request_timeout``); False:
    # every attempt gets exactly ``timeout_s`` (a timeout the user set)
    scale_timeout: bool = False
    # a temperature the user fixed: sent with every request as given (a request's own
    # temperature is used only when this is None, and only where the profile accepts one)
    temperature: float | None = None
    # set: ``base_url`` is an Azure OpenAI resource (``https://NAME.openai.azure.com``) reached
    # through the SDK's ``AzureOpenAI`` client with this ``api-version``; the model is the
    # deployment's name
    azure_api_version: str | None = None

    def __post_init__(self) -> None:
        if not self.model:
            raise ValueError("a model name is required")
        if not self.timeout_s > 0:
            raise ValueError(f"timeout_s must be positive, got {self.timeout_s}")
        if self.temperature is not None and not 0 <= self.temperature <= 2:
            raise ValueError(f"temperature must be between 0 and 2, got {self.temperature}")
        if self.azure_api_version is not None and not self.base_url:
            raise ValueError("an Azure OpenAI deployment needs its endpoint as base_url")

    def temperature_for(self, requested: float | None, accepted: bool) -> float | None:
        """The temperature to send: the one fixed here, else ``requested`` if ``accepted``."""
        if self.temperature is not None:
            return self.temperature
        return requested if accepted else None

    @property
    def endpoint(self) -> Endpoint:
        return endpoint_for(self.api, self.base_url)

    def __repr__(self) -> str:
        return (
            f"ProviderSettings(api={self.api!r}, model={self.model!r}, "
            f"base_url={self.endpoint.base_url!r}, api_key={mask_secret(self.api_key)}, "
            f"key_source={self.key_source!r}, timeout_s={self.timeout_s}, "
            f"scale_timeout={self.scale_timeout}, temperature={self.temperature}, "
            f"azure_api_version={self.azure_api_version!r})"
        )

    def key_or_placeholder(self) -> str:
        """The key to send; raises ``AuthenticationError`` when a hosted API has none."""
        if self.api_key:
            return self.api_key
        endpoint = self.endpoint
        if endpoint.hosted:
            source = self.key_source or endpoint.key_env
            raise AuthenticationError(
                f"{source} is not set: {endpoint.label} needs an API key", key_source=source
            )
        return NO_KEY_PLACEHOLDER


def settings_from_env(
    api: ApiKind,
    model: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    key_flag: str = "--api-key",
    timeout_s: float = DEFAULT_TIMEOUT_S,
    environ: Mapping[str, str] | None = None,
) -> ProviderSettings:
    """The edge: an explicit key (from ``key_flag``) wins, else the endpoint's variable."""
    if api_key:
        return ProviderSettings(api, model, base_url, api_key, key_flag, timeout_s)
    env = os.environ if environ is None else environ
    key_env = endpoint_for(api, base_url).key_env
    return ProviderSettings(api, model, base_url, env.get(key_env) or None, key_env, timeout_s)


__all__ = [
    "COMPATIBLE_KEY_ENV",
    "DEFAULT_TIMEOUT_S",
    "DEFAULT_BASE_URLS",
    "NO_KEY_PLACEHOLDER",
    "PROVIDERS",
    "PROVIDER_NAMES",
    "Endpoint",
    "ProviderName",
    "ProviderSettings",
    "endpoint_for",
    "settings_from_env",
]
