"""Configuration: typed settings objects, read once at the edge (CLI flags, ``AGENT_S_*``).

    model = ModelConfig.from_env(provider="anthropic", model="claude-sonnet-4-5")
    agent = Agent(model, settings=AgentConfig(max_steps=20), grounding=GroundingConfig("ocr"))

``ModelConfig.from_env`` / ``GroundingConfig.from_env`` / ``AgentConfig.from_env`` are the only
functions here that read the environment (an explicit value always wins over a variable);
everything below them receives these objects. A missing model is a ``ConfigError`` that names
the flag and the variable to set, raised before anything touches the desktop.

Environment variables: ``AGENT_S_PROVIDER``, ``AGENT_S_MODEL``, ``AGENT_S_BASE_URL``,
``AGENT_S_GROUND`` (auto|ocr|a11y|model|native), ``AGENT_S_GROUND_URL``,
``AGENT_S_GROUND_MODEL``, ``AGENT_S_MAX_STEPS``, ``AGENT_S_MAX_COST``, ``AGENT_S_MAX_TOKENS``,
``AGENT_S_MAX_SECONDS``, ``AGENT_S_REFLECTION`` (1/0), ``AGENT_S_RECORD_DIR``; API keys come
from the usual variables (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``, ...).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, cast, get_args

from agent_s.context import ContextPolicy
from agent_s.errors import AgentSError
from agent_s.models.endpoints import ProviderSettings, settings_from_env
from agent_s.models.errors import mask_secret
from agent_s.models.profiles import ApiKind

ProviderName = Literal["openai", "anthropic", "openai-compatible", "openai-responses"]
GroundModeName = Literal["auto", "ocr", "a11y", "model", "native"]

PROVIDERS: Mapping[ProviderName, ApiKind] = {
    "openai": "openai_chat",
    "anthropic": "anthropic",
    "openai-compatible": "openai_compatible",
    "openai-responses": "openai_responses",
}
DEFAULT_MAX_STEPS = 30


class ConfigError(AgentSError, ValueError):
    """The configuration is incomplete or invalid; the message says which flag or variable."""

    def __init__(self, message: str, *, setting: str) -> None:
        super().__init__(message)
        self.setting = setting


def _env(environ: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if environ is None else environ


def _number(environ: Mapping[str, str], name: str, kind: type[int] | type[float]) -> float | None:
    raw = environ.get(name, "").strip()
    if not raw:
        return None
    try:
        return kind(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a number", setting=name) from None


def _flag(environ: Mapping[str, str], name: str) -> bool | None:
    raw = environ.get(name, "").strip().lower()
    if not raw:
        return None
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"{name}={raw!r} must be 1 or 0", setting=name)


def _guess_provider(model: str, base_url: str | None) -> ProviderName | None:
    if base_url:
        return "openai-compatible"
    lowered = model.lower()
    if lowered.startswith("claude"):
        return "anthropic"
    if lowered.startswith(("gpt", "o1", "o3", "o4", "computer-use")):
        return "openai"
    return None


@dataclass(frozen=True)
class ModelConfig:
    """The generation model: which API, which model, where, with which key (never shown)."""

    provider: ProviderName
    model: str
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    key_source: str = ""
    timeout_s: float = 120.0

    def __post_init__(self) -> None:
        if self.provider not in PROVIDERS:
            raise ConfigError(
                f"unknown provider {self.provider!r}; use one of {', '.join(PROVIDERS)}",
                setting="--provider",
            )
        if not self.model:
            raise ConfigError("a model name is required (--model)", setting="--model")

    def __repr__(self) -> str:
        return (
            f"ModelConfig(provider={self.provider!r}, model={self.model!r}, "
            f"base_url={self.base_url!r}, api_key={mask_secret(self.api_key)})"
        )

    @property
    def api(self) -> ApiKind:
        return PROVIDERS[self.provider]

    def settings(self) -> ProviderSettings:
        return ProviderSettings(
            self.api, self.model, self.base_url, self.api_key, self.key_source, self.timeout_s
        )

    @classmethod
    def from_env(
        cls,
        *,
        provider: str | None = None,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> ModelConfig:
        """The edge: flags first, then ``AGENT_S_*``, then the provider's usual key variable."""
        env = _env(environ)
        model = model or env.get("AGENT_S_MODEL") or None
        base_url = base_url or env.get("AGENT_S_BASE_URL") or None
        provider = provider or env.get("AGENT_S_PROVIDER") or None
        if not model:
            raise ConfigError(
                "no model configured: pass --model NAME (and --provider "
                f"{'|'.join(PROVIDERS)}), or set AGENT_S_MODEL and AGENT_S_PROVIDER; "
                "the API key comes from --api-key or the provider's variable "
                "(OPENAI_API_KEY, ANTHROPIC_API_KEY)",
                setting="--model",
            )
        if provider is None:
            provider = _guess_provider(model, base_url)
            if provider is None:
                raise ConfigError(
                    f"cannot tell which API serves {model!r}: pass --provider "
                    f"{'|'.join(PROVIDERS)} or set AGENT_S_PROVIDER",
                    setting="--provider",
                )
        if provider not in PROVIDERS:
            raise ConfigError(
                f"unknown provider {provider!r}; use one of {', '.join(PROVIDERS)}",
                setting="--provider",
            )
        name = cast(ProviderName, provider)
        found = settings_from_env(
            PROVIDERS[name], model, base_url=base_url, api_key=api_key, environ=env
        )
        return cls(name, model, base_url, found.api_key, found.key_source)


@dataclass(frozen=True)
class GroundingConfig:
    """How referring expressions become points; ``model`` mode needs ``model`` (and ``url``)."""

    mode: GroundModeName = "auto"
    url: str | None = None
    model: str | None = None
    api_key: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.mode not in get_args(GroundModeName):
            raise ConfigError(
                f"unknown grounding mode {self.mode!r}; use auto, ocr, a11y, model or native",
                setting="--ground",
            )
        if self.mode == "model" and not self.model:
            raise ConfigError(
                "--ground model needs a grounding model: pass --ground-model NAME and "
                "--ground-url URL (or set AGENT_S_GROUND_MODEL / AGENT_S_GROUND_URL)",
                setting="--ground-model",
            )

    def settings(self) -> ProviderSettings | None:
        """The grounding model's endpoint (an OpenAI-compatible server), if one is set."""
        if not self.model:
            return None
        return ProviderSettings("openai_compatible", self.model, self.url, self.api_key)

    @classmethod
    def from_env(
        cls,
        *,
        mode: str | None = None,
        url: str | None = None,
        model: str | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> GroundingConfig:
        env = _env(environ)
        mode = mode or env.get("AGENT_S_GROUND") or "auto"
        url = url or env.get("AGENT_S_GROUND_URL") or None
        model = model or env.get("AGENT_S_GROUND_MODEL") or None
        key = None
        if model:
            key = settings_from_env("openai_compatible", model, base_url=url, environ=env).api_key
        return cls(cast(GroundModeName, mode), url, model, key)


@dataclass(frozen=True)
class AgentConfig:
    """How a run behaves: limits, retries, reflection, recording. Plain values, no I/O."""

    max_steps: int = DEFAULT_MAX_STEPS
    max_cost_usd: float | None = None
    max_tokens: int | None = None
    max_seconds: float | None = None  # wall time for the whole run
    max_invalid_replies: int = 2  # re-asks per step after a reply that does not parse
    reflection: bool = False
    record_dir: Path | None = None  # None: no trajectory folder
    dry_run: bool = False  # predict and ground, draw the plan, execute nothing
    settle_seconds: float = 0.4  # after an action, before the next screenshot
    retry_attempts: int = 4  # HTTP attempts per model call (the retry layer)
    context: ContextPolicy = field(default_factory=ContextPolicy)
    desktop_name: str = ""  # the desktop environment, for prompt hints ("gnome", "openbox")

    def __post_init__(self) -> None:
        if self.max_steps < 1:
            raise ConfigError(
                f"max_steps must be at least 1, got {self.max_steps}", setting="--max-steps"
            )
        if self.max_invalid_replies < 0:
            raise ConfigError(
                "max_invalid_replies must not be negative", setting="max_invalid_replies"
            )
        if self.max_seconds is not None and self.max_seconds <= 0:
            raise ConfigError("max_seconds must be positive", setting="AGENT_S_MAX_SECONDS")
        if self.max_cost_usd is not None and self.max_cost_usd < 0:
            raise ConfigError("--max-cost must not be negative", setting="--max-cost")
        if self.settle_seconds < 0:
            raise ConfigError("settle_seconds must not be negative", setting="settle_seconds")
        if self.retry_attempts < 1:
            raise ConfigError("retry_attempts must be at least 1", setting="retry_attempts")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **explicit: object) -> AgentConfig:
        """Settings from ``AGENT_S_*`` variables; keyword arguments that are not None win."""
        env = _env(environ)
        values: dict[str, object] = {}
        steps = _number(env, "AGENT_S_MAX_STEPS", int)
        if steps is not None:
            values["max_steps"] = int(steps)
        for name, key, kind in (
            ("AGENT_S_MAX_COST", "max_cost_usd", float),
            ("AGENT_S_MAX_TOKENS", "max_tokens", int),
            ("AGENT_S_MAX_SECONDS", "max_seconds", float),
        ):
            number = _number(env, name, kind)
            if number is not None:
                values[key] = number
        reflection = _flag(env, "AGENT_S_REFLECTION")
        if reflection is not None:
            values["reflection"] = reflection
        if env.get("AGENT_S_RECORD_DIR"):
            values["record_dir"] = Path(env["AGENT_S_RECORD_DIR"]).expanduser()
        desktop = env.get("XDG_CURRENT_DESKTOP") or env.get("DESKTOP_SESSION") or ""
        values["desktop_name"] = desktop
        values.update({k: v for k, v in explicit.items() if v is not None})
        return cls(**values)  # type: ignore[arg-type]


__all__ = [
    "DEFAULT_MAX_STEPS", "PROVIDERS", "AgentConfig", "ConfigError", "GroundModeName",
    "GroundingConfig", "ModelConfig", "ProviderName",
]  # fmt: skip
