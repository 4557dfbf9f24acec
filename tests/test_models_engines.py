"""Settings Agent S3's engines need: a fixed temperature, Azure OpenAI through the SDK's Azure
client, and the hosted endpoints whose keys are named when missing."""

from __future__ import annotations

import pytest

from agent_s.models import Message, ModelRequest, ProviderSettings, build_provider
from agent_s.models.errors import AuthenticationError
from agent_s.settings.config import ConfigError, ModelConfig
from agent_s.testing.scripted_replies import reply
from agent_s.testing.scripted_server import ScriptedModelServer


def _request(temperature: float | None) -> ModelRequest:
    return ModelRequest((Message.text("user", "hello"),), temperature=temperature)


@pytest.mark.parametrize(
    ("api", "model", "fixed", "asked", "sent"),
    [
        # a fixed temperature wins over the request's, even where the profile drops one
        ("openai_compatible", "qwen", 0.7, 0.0, 0.7),
        ("openai_chat", "gpt-5", 1.0, None, 1.0),
        ("openai_responses", "gpt-5", 1.0, 0.2, 1.0),
        ("anthropic", "claude-opus-9", 0.5, None, 0.5),
        # none fixed: the request's, where the profile accepts one
        ("openai_compatible", "qwen", None, 0.3, 0.3),
        ("openai_chat", "gpt-5", None, 0.3, None),
        ("openai_chat", "gpt-4o", None, None, None),
    ],
)
def test_a_fixed_temperature_is_sent_as_given(
    api: str, model: str, fixed: float | None, asked: float | None, sent: float | None
) -> None:
    with ScriptedModelServer([reply("ok")]) as server:
        url = server.base_url if api == "anthropic" else server.openai_base_url
        settings = ProviderSettings(api, model, url, "k-1234567890", temperature=fixed)
        assert build_provider(settings).complete(_request(asked)).text == "ok"
    assert server.requests[0].body.get("temperature") == sent


def test_azure_deployments_through_the_azure_client() -> None:
    with ScriptedModelServer([reply("ok")] * 2) as server:
        for model in ("gpt-4o-mini", "gpt-5"):
            config = ModelConfig(
                "openai", model, server.base_url, "az-key-123456", azure_api_version="2024-10-21"
            )
            assert build_provider(config.settings()).complete(_request(None)).text == "ok"
    sampling, reasoning = server.requests
    assert sampling.path == "/openai/deployments/gpt-4o-mini/chat/completions"
    assert sampling.query == "api-version=2024-10-21"
    assert sampling.headers["api-key"] == "az-key-123456"
    assert "max_tokens" in sampling.body  # every api-version takes it
    assert reasoning.path == "/openai/deployments/gpt-5/chat/completions"
    assert "max_completion_tokens" in reasoning.body  # reasoning deployments need it
    assert "azure_api_version='2024-10-21'" in repr(config)
    assert "az-key" not in repr(config)


def test_invalid_engine_settings_are_refused() -> None:
    with pytest.raises(ConfigError, match="temperature must be between 0 and 2"):
        ModelConfig("openai", "gpt-4o", temperature=3.0)
    with pytest.raises(ConfigError, match="Azure OpenAI deployment"):
        ModelConfig("openai", "gpt-4o", azure_api_version="2024-10-21")
    with pytest.raises(ConfigError, match="Azure OpenAI deployment"):
        ModelConfig("anthropic", "c", "https://x.openai.azure.com", azure_api_version="v")


@pytest.mark.parametrize(
    ("url", "variable"),
    [
        ("https://api.parasail.io/v1", "PARASAIL_API_KEY"),
        ("https://router.huggingface.co/v1", "HF_TOKEN"),
        ("https://abc.us-east-1.aws.endpoints.huggingface.cloud/v1", "HF_TOKEN"),
        ("https://generativelanguage.googleapis.com/v1beta/openai/", "GEMINI_API_KEY"),
        ("https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
    ],
)
def test_hosted_endpoints_name_their_key_variable(url: str, variable: str) -> None:
    with pytest.raises(AuthenticationError, match=variable):
        build_provider(ProviderSettings("openai_compatible", "m", url))
