"""What each adapter sends and how it reads replies: real SDKs against the scripted server."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest
from PIL import Image

from agent_s.models import (
    ImagePart,
    Message,
    ModelRequest,
    ProfileRegistry,
    ProviderSettings,
    TextPart,
    build_provider,
)
from agent_s.models.endpoints import NO_KEY_PLACEHOLDER, settings_from_env
from agent_s.testing.scripted_replies import reply
from agent_s.testing.scripted_server import ScriptedModelServer

KEY = "sk-test-0123456789abcdef"
BASE_FOR = {"anthropic": "base_url", "openai_chat": "openai_base_url"}


def _image(width: int, height: int, fmt: str = "PNG") -> ImagePart:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (200, 30, 30)).save(buffer, fmt)
    media = {"PNG": "image/png", "JPEG": "image/jpeg", "WEBP": "image/webp"}[fmt]
    return ImagePart(buffer.getvalue(), media, width, height)


def _url(server: ScriptedModelServer, api: str) -> str:
    return server.base_url if api == "anthropic" else server.openai_base_url


def _provider(server, api, model, *, key=KEY, profiles=None):
    settings = ProviderSettings(api, model, _url(server, api), key, "TEST_API_KEY", 5.0)
    return build_provider(settings, profiles=profiles, sleep=lambda s: None)


def _request(*images: ImagePart, temperature: float | None = 0.3, **kw) -> ModelRequest:
    return ModelRequest(
        (
            Message.text("system", "You operate a desktop."),
            Message("user", (TextPart("What is on screen?"), *images)),
        ),
        temperature=temperature,
        **kw,
    )


def _auth_key(headers) -> str:
    """The key as sent, whichever header this SDK version uses."""
    if "x-api-key" in headers:
        return headers["x-api-key"]
    return headers["authorization"].removeprefix("Bearer ")


APIS = ["openai_chat", "openai_responses", "anthropic", "openai_compatible"]


@pytest.mark.parametrize("api", APIS)
def test_images_go_out_as_sent_with_model_key_and_system_prompt(api: str) -> None:
    png, jpeg = _image(64, 40), _image(30, 20, "JPEG")
    with ScriptedModelServer([reply("a red window")]) as server:
        out = _provider(server, api, "some-vision-model").complete(_request(png, jpeg))
    assert out.text == "a red window"
    sent = server.requests[0]
    assert sent.model == "some-vision-model"  # passed through untouched
    assert _auth_key(sent.headers) == KEY
    images = sent.images()
    assert [media for media, _ in images] == ["image/png", "image/jpeg"]
    assert images[0][1] == png.data
    assert images[1][1] == jpeg.data
    decoded = [Image.open(io.BytesIO(data)) for _, data in images]
    assert [(i.format, i.size) for i in decoded] == [("PNG", (64, 40)), ("JPEG", (30, 20))]
    body = sent.body
    if api == "anthropic":
        assert body["system"] == "You operate a desktop."
        assert [m["role"] for m in body["messages"]] == ["user"]
    elif api == "openai_responses":
        assert body["instructions"] == "You operate a desktop."
        assert body["store"] is False
    else:
        assert body["messages"][0] == {"role": "system", "content": "You operate a desktop."}


@pytest.mark.parametrize(
    ("api", "model", "temperature_sent", "limit_field", "limit"),
    [
        ("openai_chat", "gpt-4o", True, "max_completion_tokens", 4096),
        ("openai_chat", "o3-2025-04-16", False, "max_completion_tokens", 16384),
        ("openai_chat", "gpt-5-mini", False, "max_completion_tokens", 16384),
        ("openai_chat", "gpt-6-astra", False, "max_completion_tokens", 16384),
        ("openai_chat", "ft:unknown-model", False, "max_completion_tokens", 4096),
        ("openai_responses", "o4-mini", False, "max_output_tokens", 16384),
        ("openai_responses", "gpt-4.1", True, "max_output_tokens", 4096),
        ("anthropic", "claude-sonnet-4-20250514", True, "max_tokens", 4096),
        ("anthropic", "claude-sonnet-5-5", False, "max_tokens", 4096),
        ("openai_compatible", "ByteDance-Seed/UI-TARS-1.5-7B", True, "max_tokens", 1024),
        ("openai_compatible", "openai/o3", False, "max_tokens", 16384),  # via OpenRouter
    ],
)
def test_temperature_and_output_limit_follow_the_profile(
    api, model, temperature_sent, limit_field, limit
) -> None:
    with ScriptedModelServer([reply("ok")]) as server:
        _provider(server, api, model).complete(_request(temperature=0.4))
    body = server.requests[0].body
    assert ("temperature" in body) is temperature_sent
    if temperature_sent:
        assert body["temperature"] == 0.4
    assert body[limit_field] == limit
    assert {"max_tokens", "max_completion_tokens", "max_output_tokens"} & set(body) == {limit_field}


def test_request_limit_is_used_but_capped_by_the_profile() -> None:
    with ScriptedModelServer([reply("a"), reply("b")]) as server:
        provider = _provider(server, "openai_chat", "gpt-4o")
        provider.complete(_request(max_output_tokens=300))
        provider.complete(_request(max_output_tokens=999_999))
    assert [r.body["max_completion_tokens"] for r in server.requests] == [300, 4096]


def test_hosted_openai_asks_for_high_detail_images_local_servers_get_plain_ones() -> None:
    with ScriptedModelServer([reply("a"), reply("b")]) as server:
        _provider(server, "openai_chat", "gpt-4o").complete(_request(_image(8, 8)))
        _provider(server, "openai_compatible", "llava").complete(_request(_image(8, 8)))
    hosted, local = (r.body["messages"][1]["content"][1]["image_url"] for r in server.requests)
    assert hosted["detail"] == "high"
    assert "detail" not in local


def test_local_server_needs_no_key_and_never_gets_the_users_openai_key() -> None:
    environ = {"OPENAI_API_KEY": "sk-real-user-key-do-not-leak"}
    with ScriptedModelServer([reply("local")]) as server:
        settings = settings_from_env(
            "openai_compatible", "qwen2.5vl:7b", base_url=server.openai_base_url, environ=environ
        )
        assert settings.api_key is None
        out = build_provider(settings).complete(_request())
    assert out.text == "local"
    headers = server.requests[0].headers
    assert _auth_key(headers) == NO_KEY_PLACEHOLDER
    assert "sk-real-user-key" not in repr(dict(headers))


def test_anthropic_merges_turns_and_thinking_replaces_temperature() -> None:
    profiles = ProfileRegistry().with_overrides(
        {"claude-sonnet-4-2025*": {"thinking_budget_tokens": 2048}}
    )
    request = ModelRequest(
        (
            Message.text("system", "sys"),
            Message.text("user", "first"),
            Message.text("user", "second"),
            Message.text("assistant", "noted"),
            Message("user", (_image(10, 10),)),
        ),
        temperature=0.2,
        max_output_tokens=1000,
    )
    with ScriptedModelServer([reply("thought about it")]) as server:
        _provider(server, "anthropic", "claude-sonnet-4-20250514", profiles=profiles).complete(
            request
        )
    body = server.requests[0].body
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert [b["text"] for b in body["messages"][0]["content"]] == ["first", "second"]
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["max_tokens"] == 3048
    assert "temperature" not in body


@pytest.mark.parametrize(
    ("api", "model", "expected_cost"),
    [
        # 1000 in (800 cached), 200 out at gpt-4o prices: 200*2.5 + 800*1.25 + 200*10 per 1M
        ("openai_chat", "gpt-4o", (200 * 2.5 + 800 * 1.25 + 200 * 10) / 1e6),
        ("openai_responses", "o3", (200 * 2.0 + 800 * 0.5 + 200 * 8) / 1e6),
        ("anthropic", "claude-sonnet-4-20250514", (200 * 3.0 + 800 * 0.3 + 200 * 15) / 1e6),
        ("openai_compatible", "llava:13b", 0.0),
    ],
)
def test_usage_and_cost_per_call(api: str, model: str, expected_cost: float) -> None:
    step = reply("x", input_tokens=1000, cached_tokens=800, output_tokens=200, image_tokens=765)
    with ScriptedModelServer([step]) as server:
        out = _provider(server, api, model).complete(_request())
    usage = out.usage
    assert (usage.input_tokens, usage.cached_input_tokens, usage.output_tokens) == (1000, 800, 200)
    assert usage.image_tokens == (765 if api in ("openai_chat", "openai_compatible") else 0)
    assert usage.calls == 1
    assert usage.cost_usd == pytest.approx(expected_cost)
    assert out.request_id == "req_scripted_1"
    assert out.attempts == 1


def test_settings_repr_and_provider_repr_mask_the_key() -> None:
    with ScriptedModelServer([]) as server:
        provider = _provider(server, "openai_chat", "gpt-4o")
        settings = ProviderSettings("anthropic", "claude-3-5-haiku", api_key=KEY)
        for text in (repr(provider), repr(settings), str(settings)):
            assert KEY not in text
            assert KEY[:8] not in text
        assert "***cdef" in repr(settings)


def test_only_the_sdk_of_the_api_in_use_is_imported() -> None:
    """Every agent-s command, bench worker and practice worker starts by importing the agent:
    the anthropic SDK costs 1.7 s of CPU to import and openai 0.7 s, so each is imported only
    when a provider of its API is built."""
    code = (
        "import sys\n"
        "import agent_s, agent_s.loop.agent, agent_s.cli.main, agent_s.cli.run\n"
        "from agent_s.models.endpoints import ProviderSettings\n"
        "from agent_s.models.factory import build_provider\n"
        "before = sorted(m for m in ('openai', 'anthropic') if m in sys.modules)\n"
        "build_provider(ProviderSettings('openai_compatible', 'm', 'http://127.0.0.1:9/v1', 'k'))\n"
        "after = sorted(m for m in ('openai', 'anthropic') if m in sys.modules)\n"
        "print(before, after)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.split("\n")[0] == "[] ['openai']", done.stdout + done.stderr
