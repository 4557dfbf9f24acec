"""Per-model profiles: what differs between models, in data rather than in branches.

A profile says how big an image may be and how to encode it, whether the model accepts a
temperature (OpenAI reasoning models reject it, so adapters drop it on their own), whether it
has extended thinking, how many output tokens to ask for, and what a million tokens cost.

Resolution for a model name and API: start from the API's default profile, layer the first
built-in entry whose pattern matches, then every user override whose pattern matches (in the
order given; later wins). Patterns are case-insensitive globs tried against the full name and
against its last ``/`` segment, so ``openai/gpt-4o`` on OpenRouter matches ``gpt-4o*``.

User overrides come from the configuration file's ``[profiles."pattern"]`` tables, read with
every other setting by ``agent_s.settings.read`` (``Settings.build_profiles``), or from a dict.
Prices are list prices per million tokens at the time of writing: estimates, overridable.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from agent_s.conventions import ConventionError, PointConvention
from agent_s.images import ImageFormat, ImageSpec
from agent_s.models.errors import ProfileConfigError
from agent_s.models.types import ModelRequest, Usage

ApiKind = Literal["openai_chat", "openai_responses", "anthropic", "openai_compatible"]
ImagePricing = Literal["openai_tiles", "anthropic_pixels", "qwen_patches", "area"]
ThinkingType = Literal["enabled", "adaptive"]


def _or(value: float | None, default: float) -> float:
    return default if value is None else value


@dataclass(frozen=True)
class ModelProfile:
    """Capabilities and prices of one model. Prices are USD per million tokens."""

    name: str = "default"
    max_image_long_side: int = 1920
    max_image_pixels: int = 1920 * 1200
    image_format: ImageFormat = "png"
    image_quality: int = 85  # jpeg / webp only
    image_pricing: ImagePricing = "area"
    accepts_temperature: bool = True
    supports_thinking: bool = False
    thinking_budget_tokens: int = 0  # 0: thinking off; Anthropic needs >= 1024 when on
    thinking_type: ThinkingType = "enabled"  # Anthropic: "enabled" (with budget) or "adaptive"
    reasoning_effort: str | None = None  # OpenAI reasoning models: "low" / "medium" / "high"
    max_output_tokens: int = 4096  # used when a request names none, and the cap when it does
    input_price: float | None = None  # None: unknown (a cost budget then cannot be enforced)
    cached_input_price: float | None = None  # None: same as input_price
    cache_write_price: float | None = None  # None: same as input_price
    output_price: float | None = None  # None: unknown
    # how the model writes a point when it points (a native worker, a grounding model): a name
    # of agent_s.conventions ("grid1000-yx", "1920x1080"); None: guessed from its family
    point_convention: str | None = None

    @property
    def thinking_enabled(self) -> bool:
        return self.supports_thinking and self.thinking_budget_tokens > 0

    @property
    def prices_known(self) -> bool:
        return self.input_price is not None and self.output_price is not None

    @property
    def image_spec(self) -> ImageSpec:
        """How screenshots are encoded for this model (size limits, format, quality)."""
        return ImageSpec(
            self.image_format, self.image_quality, self.max_image_long_side, self.max_image_pixels
        )

    def estimate_image_tokens(self, width: int, height: int) -> int:
        """Input tokens an image of this size (as sent) costs, by the vendor's published rule."""
        if self.image_pricing == "openai_tiles":
            scale = min(1.0, 2048 / max(width, height))
            w, h = width * scale, height * scale
            scale = min(1.0, 768 / min(w, h))
            w, h = w * scale, h * scale
            return 85 + 170 * math.ceil(w / 512) * math.ceil(h / 512)
        if self.image_pricing == "qwen_patches":
            return max(1, round(width / 28)) * max(1, round(height / 28))
        return math.ceil(width * height / 750)  # Anthropic's rule; a fair guess for others

    def cost_usd(
        self,
        *,
        input_tokens: int,
        output_tokens: int,
        cached_input_tokens: int = 0,
        cache_write_tokens: int = 0,
    ) -> float:
        """Estimated cost (0 where prices are unknown). ``input_tokens`` includes cached ones."""
        input_price = _or(self.input_price, 0.0)
        cached_price = _or(self.cached_input_price, input_price)
        write_price = _or(self.cache_write_price, input_price)
        plain = max(0, input_tokens - cached_input_tokens - cache_write_tokens)
        total = (
            plain * input_price
            + cached_input_tokens * cached_price
            + cache_write_tokens * write_price
            + output_tokens * _or(self.output_price, 0.0)
        )
        return total / 1_000_000

    def usage(
        self,
        *,
        input_tokens: int,
        output_tokens: int,
        cached_input_tokens: int = 0,
        cache_write_tokens: int = 0,
        image_tokens: int = 0,
    ) -> Usage:
        """One call's usage with its cost estimate."""
        cost = self.cost_usd(
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cached_input_tokens=cached_input_tokens,
            cache_write_tokens=cache_write_tokens,
        )
        return Usage(input_tokens, output_tokens, cached_input_tokens, image_tokens, 1, cost)


_OPENAI_IMAGES: dict[str, Any] = {
    # OpenAI scales images to fit 2048 and then to a 768 short side; ~1 MP is what it keeps.
    "max_image_long_side": 2048,
    "max_image_pixels": 1365 * 768,
    "image_format": "jpeg",
    "image_quality": 85,
    "image_pricing": "openai_tiles",
    # An unknown OpenAI model is most likely a reasoning model, which rejects a temperature;
    # dropping it never fails a request, sending it might.
    "accepts_temperature": False,
}

API_DEFAULTS: Mapping[ApiKind, ModelProfile] = {
    "openai_chat": ModelProfile(name="default:openai_chat", **_OPENAI_IMAGES),
    "openai_responses": ModelProfile(name="default:openai_responses", **_OPENAI_IMAGES),
    "anthropic": ModelProfile(
        name="default:anthropic",
        # Anthropic resizes anything over 1568 px or ~1.15 MP; send what it would keep.
        max_image_long_side=1568,
        max_image_pixels=1_150_000,
        image_format="jpeg",
        image_quality=85,
        image_pricing="anthropic_pixels",
        # The newest SDK no longer names sampling parameters: only known models get one.
        accepts_temperature=False,
    ),
    # A local server: pixels cost nothing to send and exact pixels help grounding; no price.
    "openai_compatible": ModelProfile(
        name="default:openai_compatible",
        max_image_long_side=1920,
        max_image_pixels=1920 * 1200,
        image_format="png",
        max_output_tokens=2048,
        input_price=0.0,
        output_price=0.0,
    ),
}

_REASONING = {"accepts_temperature": False, "max_output_tokens": 16384}
_SAMPLING = {"accepts_temperature": True}
_QWEN_VL = {
    "max_image_long_side": 4096,
    "max_image_pixels": 16384 * 28 * 28,
    "image_format": "png",
    "image_pricing": "qwen_patches",
    "max_output_tokens": 1024,
    "accepts_temperature": True,
}


def _claude(inp: float | None, out: float | None, *, thinking: bool) -> dict[str, Any]:
    return {
        "input_price": inp,
        "output_price": out,
        "supports_thinking": thinking,
        "cached_input_price": None if inp is None else inp / 10,
        "cache_write_price": None if inp is None else inp * 1.25,
        "accepts_temperature": True,
    }


def _openai(inp: float, cached: float | None, out: float) -> dict[str, Any]:
    return {"input_price": inp, "cached_input_price": cached, "output_price": out}


# First match wins; more specific patterns come first. Prices only where they are known.
BUILTIN_PROFILES: Sequence[tuple[tuple[str, ...], Mapping[str, Any]]] = (
    (("gpt-5-nano", "gpt-5-nano-20*"), {**_REASONING, **_openai(0.05, 0.005, 0.40)}),
    (("gpt-5-mini", "gpt-5-mini-20*"), {**_REASONING, **_openai(0.25, 0.025, 2.00)}),
    (
        ("gpt-5", "gpt-5-20*", "gpt-5.1", "gpt-5.1-20*"),
        {**_REASONING, **_openai(1.25, 0.125, 10.00)},
    ),
    (("gpt-5*", "gpt-6*"), _REASONING),  # newer reasoning models: prices unknown here
    (("o4-mini*", "o3-mini*", "o1-mini*"), {**_REASONING, **_openai(1.10, 0.275, 4.40)}),
    (("o3-pro*",), {**_REASONING, **_openai(20.00, None, 80.00)}),
    (("o3*",), {**_REASONING, **_openai(2.00, 0.50, 8.00)}),
    (("o1*",), {**_REASONING, **_openai(15.00, 7.50, 60.00)}),
    (("computer-use-preview*",), {**_REASONING, **_openai(3.00, None, 12.00)}),
    (("gpt-4.1-nano*",), {**_SAMPLING, **_openai(0.10, 0.025, 0.40)}),
    (("gpt-4.1-mini*",), {**_SAMPLING, **_openai(0.40, 0.10, 1.60)}),
    (("gpt-4.1*",), {**_SAMPLING, **_openai(2.00, 0.50, 8.00)}),
    (("gpt-4o-mini*",), {**_SAMPLING, **_openai(0.15, 0.075, 0.60)}),
    (("gpt-4o*",), {**_SAMPLING, **_openai(2.50, 1.25, 10.00)}),
    (("gpt-4*", "gpt-3.5*"), _SAMPLING),
    (("claude-opus-4-5*",), _claude(5.00, 25.00, thinking=True)),
    (
        ("claude-opus-4-1*", "claude-opus-4-2025*", "claude-opus-4-0*", "claude-4-opus*"),
        _claude(15.00, 75.00, thinking=True),
    ),
    (("claude-3-opus*",), _claude(15.00, 75.00, thinking=False)),
    (
        (
            "claude-sonnet-4-5*",
            "claude-sonnet-4-2025*",
            "claude-sonnet-4-0*",
            "claude-4-sonnet*",
            "claude-3-7-sonnet*",
        ),
        _claude(3.00, 15.00, thinking=True),
    ),
    (("claude-3-5-sonnet*",), _claude(3.00, 15.00, thinking=False)),
    (("claude-haiku-4-5*",), _claude(1.00, 5.00, thinking=True)),
    (("claude-3-5-haiku*",), _claude(0.80, 4.00, thinking=False)),
    (("claude-3-haiku*",), _claude(0.25, 1.25, thinking=False)),
    (("*ui-tars*", "*qwen*vl*", "*gta1*"), _QWEN_VL),
)

_FIELDS = {f.name: f for f in dataclasses.fields(ModelProfile) if f.name != "name"}
_CHOICES: dict[str, tuple[str, ...]] = {
    "image_format": get_args(ImageFormat),
    "image_pricing": get_args(ImagePricing),
    "thinking_type": get_args(ThinkingType),
}


def _matches(pattern: str, model: str) -> bool:
    pattern, model = pattern.lower(), model.lower()
    tail = model.rsplit("/", 1)[-1]
    return fnmatch.fnmatchcase(model, pattern) or fnmatch.fnmatchcase(tail, pattern)


def _check_field(pattern: str, key: str, value: Any) -> Any:
    """One override value, type-checked against the ModelProfile field it sets."""
    where = f'[profiles."{pattern}"] {key}'
    if key not in _FIELDS:
        known = ", ".join(sorted(_FIELDS))
        raise ProfileConfigError(
            f"{where}: unknown setting; known settings are {known}", pattern=pattern, key=key
        )
    kind = str(_FIELDS[key].type)

    def bad(expected: str) -> ProfileConfigError:
        return ProfileConfigError(
            f"{where}: expected {expected}, got {value!r}", pattern=pattern, key=key
        )

    if kind == "bool":
        if not isinstance(value, bool):
            raise bad("true or false")
    elif kind == "int":
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise bad("a non-negative integer")
    elif "float" in kind:
        if value is None and "None" in kind:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise bad("a non-negative number")
        value = float(value)
    elif key in _CHOICES:
        if value not in _CHOICES[key]:
            raise bad("one of " + ", ".join(_CHOICES[key]))
    elif not (value is None or isinstance(value, str)):
        raise bad("a string")
    elif key == "point_convention" and value is not None:
        try:
            value = str(PointConvention.parse(value))
        except ConventionError as err:
            raise ProfileConfigError(f"{where}: {err}", pattern=pattern, key=key) from None
    if key == "image_quality" and not 1 <= value <= 100:
        raise bad("a quality from 1 to 100")
    if key in ("max_image_long_side", "max_image_pixels", "max_output_tokens") and value < 1:
        raise bad("a positive integer")
    if key == "thinking_budget_tokens" and 0 < value < 1024:
        raise bad("0 (off) or at least 1024 tokens")
    return value


def _check_table(pattern: str, table: Any) -> dict[str, Any]:
    if not isinstance(pattern, str) or not pattern:
        raise ProfileConfigError(f"profile pattern must be a non-empty string, got {pattern!r}")
    if not isinstance(table, Mapping):
        raise ProfileConfigError(
            f'[profiles."{pattern}"] must be a table of settings, got {table!r}', pattern=pattern
        )
    return {key: _check_field(pattern, key, value) for key, value in table.items()}


class ProfileRegistry:
    """Resolves a model name to its profile: API default < built-in < user overrides."""

    def __init__(
        self,
        overrides: Sequence[tuple[str, Mapping[str, Any]]] = (),
        *,
        builtins: Sequence[tuple[tuple[str, ...], Mapping[str, Any]]] = BUILTIN_PROFILES,
        defaults: Mapping[ApiKind, ModelProfile] = API_DEFAULTS,
    ) -> None:
        self._overrides = tuple((p, _check_table(p, t)) for p, t in overrides)
        self._builtins = tuple(builtins)
        self._defaults = dict(defaults)

    @property
    def overrides(self) -> tuple[tuple[str, Mapping[str, Any]], ...]:
        return self._overrides

    def with_overrides(self, profiles: Mapping[str, Mapping[str, Any]]) -> ProfileRegistry:
        """A new registry with these ``{pattern: {setting: value}}`` layered on top."""
        return ProfileRegistry(
            (*self._overrides, *profiles.items()), builtins=self._builtins, defaults=self._defaults
        )

    def resolve(self, model: str, api: ApiKind) -> ModelProfile:
        if api not in self._defaults:
            raise ValueError(f"unknown API {api!r}; expected one of {', '.join(self._defaults)}")
        base = self._defaults[api]
        fields: dict[str, Any] = {}
        names = [base.name]
        for patterns, values in self._builtins:
            if any(_matches(p, model) for p in patterns):
                fields.update(values)
                names.append(patterns[0])
                break
        for pattern, values in self._overrides:
            if _matches(pattern, model):
                fields.update(values)
                names.append(f"config:{pattern}")
        return dataclasses.replace(base, name=" < ".join(names), **fields)


def registry_from_dict(config: Mapping[str, Any]) -> ProfileRegistry:
    """A registry from a parsed configuration: its ``profiles`` table, other keys ignored."""
    profiles = config.get("profiles", {})
    if not isinstance(profiles, Mapping):
        raise ProfileConfigError(f"[profiles] must be a table, got {profiles!r}")
    return ProfileRegistry(tuple(profiles.items()))


def output_limit(request: ModelRequest, profile: ModelProfile) -> int:
    """The request's output-token limit, capped by the profile; the profile's when unset."""
    if request.max_output_tokens is None:
        return profile.max_output_tokens
    return max(1, min(request.max_output_tokens, profile.max_output_tokens))


__all__ = [
    "API_DEFAULTS",
    "BUILTIN_PROFILES",
    "ApiKind",
    "ImageFormat",
    "ImagePricing",
    "ModelProfile",
    "ProfileRegistry",
    "ThinkingType",
    "output_limit",
    "registry_from_dict",
]
