"""Per-model profiles: matching, image limits, token and cost rules, overrides from TOML."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from agent_s.models import (
    Message,
    ModelProfile,
    ModelRequest,
    ProfileConfigError,
    ProfileRegistry,
    ProviderSettings,
    build_provider,
    registry_from_dict,
)
from agent_s.models.anthropic_messages import AnthropicProvider
from agent_s.models.profiles import API_DEFAULTS
from agent_s.settings.read import load_profiles
from agent_s.testing.scripted_replies import reply
from agent_s.testing.scripted_server import ScriptedModelServer

REGISTRY = ProfileRegistry()


@pytest.mark.parametrize(
    ("model", "api", "temperature", "input_price"),
    [
        ("gpt-4o-2024-08-06", "openai_chat", True, 2.5),
        ("GPT-4o-mini", "openai_chat", True, 0.15),  # case-insensitive
        ("o1", "openai_chat", False, 15.0),
        ("o3-mini", "openai_responses", False, 1.1),
        ("gpt-5", "openai_responses", False, 1.25),
        ("gpt-5.4-mini", "openai_chat", False, None),  # a newer reasoning model: price unknown
        ("openai/gpt-4o", "openai_compatible", True, 2.5),  # OpenRouter names match on the tail
        ("claude-3-5-haiku-20241022", "anthropic", True, 0.8),
        ("claude-opus-4-1-20250805", "anthropic", True, 15.0),
        ("claude-opus-5", "anthropic", False, None),  # unknown: the API default
        ("qwen2.5vl:7b", "openai_compatible", True, 0.0),
    ],
)
def test_builtin_profiles_match_by_pattern(model, api, temperature, input_price) -> None:
    profile = REGISTRY.resolve(model, api)
    assert profile.accepts_temperature is temperature
    assert profile.input_price == input_price


def test_unknown_models_get_their_apis_default() -> None:
    for api, default in API_DEFAULTS.items():
        profile = REGISTRY.resolve("totally-unknown", api)
        assert profile == default
    assert REGISTRY.resolve("x", "openai_compatible").prices_known  # local: free, not unknown
    assert not REGISTRY.resolve("x", "anthropic").prices_known
    with pytest.raises(ValueError, match="unknown API"):
        REGISTRY.resolve("x", "gemini")  # type: ignore[arg-type]


def test_ui_tars_profile_keeps_pixels_exact_and_counts_qwen_patches() -> None:
    profile = REGISTRY.resolve("ByteDance-Seed/UI-TARS-1.5-7B", "openai_compatible")
    assert profile.image_format == "png"
    assert profile.image_spec.fit(1920, 1080) == (1920, 1080)  # within 16384*28*28 pixels
    assert profile.estimate_image_tokens(1932, 1092) == 69 * 39


def test_image_token_rules_match_the_vendors_published_examples() -> None:
    openai = REGISTRY.resolve("gpt-4o", "openai_chat")
    assert openai.estimate_image_tokens(1024, 1024) == 765
    assert openai.estimate_image_tokens(2048, 4096) == 1105
    claude = REGISTRY.resolve("claude-3-5-haiku", "anthropic")
    assert claude.estimate_image_tokens(1092, 1092) == 1590
    assert claude.image_spec.fit(1920, 1080) == (1429, 804)  # <= 1.15 MP and <= 1568 px


@given(
    width=st.integers(1, 8000),
    height=st.integers(1, 8000),
    long_side=st.integers(16, 4096),
    pixels=st.integers(256, 20_000_000),
)
@example(width=1, height=259, long_side=257, pixels=256)  # a 1-pixel side cannot shrink
def test_fit_image_respects_limits_keeps_aspect_and_never_upscales(
    width, height, long_side, pixels
) -> None:
    profile = ModelProfile(max_image_long_side=long_side, max_image_pixels=pixels)
    w, h = profile.image_spec.fit(width, height)
    assert 1 <= w <= width
    assert 1 <= h <= height
    if (w, h) == (width, height):
        assert max(width, height) <= long_side
        assert width * height <= pixels
        return
    assert max(w, h) <= long_side
    assert w * h <= pixels
    # Same aspect ratio: one scale s gives both sides by flooring (w = floor(width * s), ...;
    # a side clamped up to 1 pixel only bounds s from above).
    low = max(w / width if w > 1 else 0.0, h / height if h > 1 else 0.0)
    high = min((w + 1) / width, (h + 1) / height)
    assert low < high


def test_cost_uses_cached_and_cache_write_prices() -> None:
    profile = ModelProfile(
        input_price=3.0, cached_input_price=0.3, cache_write_price=3.75, output_price=15.0
    )
    cost = profile.cost_usd(
        input_tokens=10_000, cached_input_tokens=6_000, cache_write_tokens=1_000, output_tokens=500
    )
    assert cost == pytest.approx((3_000 * 3.0 + 6_000 * 0.3 + 1_000 * 3.75 + 500 * 15.0) / 1e6)
    unknown = ModelProfile()
    assert unknown.cost_usd(input_tokens=10, output_tokens=10) == 0.0
    usage = profile.usage(input_tokens=100, output_tokens=10, image_tokens=40)
    assert (usage.calls, usage.image_tokens) == (1, 40)


def test_user_overrides_layer_on_top_in_order() -> None:
    registry = registry_from_dict(
        {
            "profiles": {
                "gpt-4o*": {"input_price": 2.0, "image_format": "png"},
                "gpt-4o-mini*": {"input_price": 0.1},  # later and more specific: wins
                "my-vlm": {"max_output_tokens": 512, "accepts_temperature": False},
            },
            "other_section": {"ignored": True},
        }
    )
    mini = registry.resolve("gpt-4o-mini", "openai_chat")
    assert (mini.input_price, mini.image_format, mini.output_price) == (0.1, "png", 0.6)
    assert "config:gpt-4o-mini*" in mini.name
    assert registry.resolve("gpt-4o", "openai_chat").input_price == 2.0
    mine = registry.resolve("my-vlm", "openai_compatible")
    assert (mine.max_output_tokens, mine.accepts_temperature) == (512, False)


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"m": {"temprature": True}}, "unknown setting"),
        ({"m": {"accepts_temperature": "yes"}}, "expected true or false"),
        ({"m": {"max_output_tokens": 1.5}}, "non-negative integer"),
        ({"m": {"max_output_tokens": 0}}, "positive integer"),
        ({"m": {"input_price": -1}}, "non-negative number"),
        ({"m": {"image_format": "gif"}}, "one of png, jpeg, webp"),
        ({"m": {"image_quality": 101}}, "1 to 100"),
        ({"m": {"thinking_budget_tokens": 100}}, "at least 1024"),
        ({"m": "not a table"}, "must be a table"),
    ],
)
def test_invalid_overrides_name_the_pattern_and_key(table, message) -> None:
    with pytest.raises(ProfileConfigError, match=message) as caught:
        registry_from_dict({"profiles": table})
    assert caught.value.pattern == "m"


TOML = """
[profiles."gpt-4o*"]
input_price = 1.0
output_price = 4.0

[profiles."local-vlm*"]
max_image_long_side = 1280
image_format = "jpeg"
image_quality = 70
"""


def test_load_profiles_reads_the_file_named_by_agent_s_config(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(TOML)
    registry = load_profiles(environ={"AGENT_S_CONFIG": str(path)})
    assert registry.resolve("gpt-4o", "openai_chat").input_price == 1.0
    local = registry.resolve("local-vlm-7b", "openai_compatible")
    assert (local.max_image_long_side, local.image_format, local.image_quality) == (
        1280,
        "jpeg",
        70,
    )


def test_load_profiles_default_path_and_errors(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))  # ~/.config/agent-s/config.toml under tmp
    assert load_profiles(environ={}).overrides == ()  # no default file: no overrides
    default = tmp_path / ".config" / "agent-s" / "config.toml"
    default.parent.mkdir(parents=True)
    default.write_text('[profiles."o3*"]\nreasoning_effort = "high"\n')
    assert load_profiles(environ={}).resolve("o3", "openai_chat").reasoning_effort == "high"
    with pytest.raises(ProfileConfigError, match="does not exist"):
        load_profiles(environ={"AGENT_S_CONFIG": str(tmp_path / "missing.toml")})
    broken = tmp_path / "broken.toml"
    broken.write_text("[profiles\n")
    with pytest.raises(ProfileConfigError, match="cannot read configuration file"):
        load_profiles(broken)
    wrong = tmp_path / "wrong.toml"
    wrong.write_text('[profiles."x"]\nmax_output_tokens = "lots"\n')
    with pytest.raises(ProfileConfigError, match=r"wrong\.toml.*max_output_tokens"):
        load_profiles(wrong)


def test_a_toml_override_changes_what_goes_on_the_wire_and_the_cost(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(
        '[profiles."gpt-4o*"]\naccepts_temperature = false\nmax_output_tokens = 700\n'
        "input_price = 10.0\noutput_price = 20.0\n"
    )
    profiles = load_profiles(path)
    request = ModelRequest((Message.text("user", "hi"),), temperature=0.7)
    with ScriptedModelServer([reply("ok", input_tokens=1000, output_tokens=100)]) as server:
        settings = ProviderSettings("openai_chat", "gpt-4o", server.openai_base_url, "k", "K")
        out = build_provider(settings, profiles=profiles).complete(request)
    body = server.requests[0].body
    assert "temperature" not in body
    assert body["max_completion_tokens"] == 700
    assert out.usage.cost_usd == pytest.approx((1000 * 10.0 + 100 * 20.0) / 1e6)


def test_adaptive_thinking_is_sent_as_the_profile_says() -> None:
    profile = ModelProfile(
        supports_thinking=True, thinking_budget_tokens=2048, thinking_type="adaptive"
    )
    settings = ProviderSettings("anthropic", "claude-x", "http://127.0.0.1:9", "k")
    kwargs = AnthropicProvider(settings, profile).request_kwargs(
        ModelRequest((Message.text("user", "hi"),), temperature=0.5, max_output_tokens=100)
    )
    assert kwargs["thinking"] == {"type": "adaptive"}
    assert kwargs["max_tokens"] == 2148
    assert "temperature" not in kwargs
    no_support = ModelProfile(thinking_budget_tokens=2048)  # budget without support: off
    kwargs = AnthropicProvider(settings, no_support).request_kwargs(ModelRequest(()))
    assert "thinking" not in kwargs
