"""How each fault is handled: typed errors, retries, Retry-After, timeouts, keys."""

from __future__ import annotations

import re
from datetime import datetime, timezone

import pytest

from agent_s.models import (
    AuthenticationError,
    BadRequest,
    IncompleteReply,
    MalformedResponse,
    Message,
    ModelError,
    ModelRequest,
    OutputTruncated,
    ProfileRegistry,
    ProviderSettings,
    ProviderUnavailable,
    RateLimited,
    Refused,
    RetryingProvider,
    RetryPolicy,
    Timeout,
    build_adapter,
    build_provider,
)
from agent_s.models._common import _reach_fix
from agent_s.models.endpoints import endpoint_for, settings_from_env
from agent_s.models.retry import call_with_retries, parse_retry_after, retry_line
from agent_s.testing.scripted_replies import (
    bad_request,
    garbage,
    malformed,
    overloaded,
    rate_limited,
    raw,
    refusal,
    reply,
    server_error,
    slow,
    truncated,
    unauthorized,
)
from agent_s.testing.scripted_server import ScriptedModelServer

KEY = "sk-secret-key-0123456789"
REQUEST = ModelRequest((Message.text("user", "next action?"),))
APIS = ["openai_chat", "openai_responses", "anthropic"]
MODEL = {"openai_chat": "gpt-4o", "openai_responses": "gpt-4.1", "anthropic": "claude-3-5-haiku"}


class Sleeps(list):
    """An injected sleep: records each wait instead of waiting."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def _provider(server, api="openai_chat", *, timeout=5.0, policy=None, sleep=None, key=KEY):
    url = server.base_url if api == "anthropic" else server.openai_base_url
    settings = ProviderSettings(api, MODEL[api], url, key, "TEST_API_KEY", timeout)
    policy = policy or RetryPolicy(max_attempts=3, base_delay_s=0.5, max_delay_s=4)
    return build_provider(settings, retry=policy, sleep=sleep if sleep is not None else Sleeps())


@pytest.mark.parametrize("api", APIS)
def test_rate_limit_waits_as_long_as_retry_after_then_succeeds(api: str) -> None:
    sleeps = Sleeps()
    with ScriptedModelServer([rate_limited(7), reply("after the wait")]) as server:
        out = _provider(server, api, sleep=sleeps).complete(REQUEST)
    assert out.text == "after the wait"
    assert out.attempts == 2
    assert sleeps == [7.0]
    assert len(server.requests) == 2


def test_retry_after_ms_is_preferred_and_http_dates_are_understood() -> None:
    sleeps = Sleeps()
    with ScriptedModelServer([rate_limited(9, retry_after_ms=1500), reply("ok")]) as server:
        _provider(server, sleep=sleeps).complete(REQUEST)
    assert sleeps == [1.5]
    now = datetime(2030, 1, 1, 12, 0, 0, tzinfo=timezone.utc)
    assert parse_retry_after({"Retry-After": "Tue, 01 Jan 2030 12:00:30 GMT"}, now=now) == 30
    assert parse_retry_after({"Retry-After": "Tue, 01 Jan 2030 11:00:00 GMT"}, now=now) == 0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({"retry-after": "-3"}) is None
    assert parse_retry_after({}) is None


def test_a_retry_after_beyond_the_cap_is_not_sat_out() -> None:
    sleeps = Sleeps()
    policy = RetryPolicy(max_attempts=5, max_retry_after_s=60)
    with ScriptedModelServer([rate_limited(3600)]) as server:
        provider = _provider(server, policy=policy, sleep=sleeps)
        with pytest.raises(RateLimited) as caught:
            provider.complete(REQUEST)
    assert caught.value.retry_after == 3600
    assert caught.value.attempts == 1
    assert sleeps == []


@pytest.mark.parametrize(
    ("api", "fault", "status"),
    [
        ("openai_chat", server_error(500), 500),
        ("openai_responses", server_error(503), 503),
        ("anthropic", overloaded(), 529),
    ],
)
def test_server_errors_back_off_with_jitter_then_give_up(api, fault, status) -> None:
    sleeps = Sleeps()
    with ScriptedModelServer([fault] * 3) as server:
        url = server.base_url if api == "anthropic" else server.openai_base_url
        settings = ProviderSettings(api, MODEL[api], url, KEY, "TEST_API_KEY", 5.0)
        adapter = build_adapter(settings, ProfileRegistry().resolve(MODEL[api], api))
        policy = RetryPolicy(max_attempts=3, base_delay_s=0.5, max_delay_s=4)
        # rng 1.0: the top of each full-jitter window
        provider = RetryingProvider(adapter, policy, sleep=sleeps, rng=lambda: 1.0)
        with pytest.raises(ProviderUnavailable) as caught:
            provider.complete(REQUEST)
    assert caught.value.status == status
    assert caught.value.attempts == 3
    assert sleeps == [0.5, 1.0]  # base * 2**(n-1), full jitter at its maximum; none after last
    assert len(server.requests) == 3


def test_backoff_is_capped_and_jittered() -> None:
    policy = RetryPolicy(max_attempts=10, base_delay_s=1, max_delay_s=8)
    assert [policy.backoff(n, lambda: 1.0) for n in range(1, 7)] == [1, 2, 4, 8, 8, 8]
    assert policy.backoff(3, lambda: 0.25) == 1.0


def test_a_reply_slower_than_the_timeout_is_retried_then_reported() -> None:
    with ScriptedModelServer([slow(5), reply("fast enough")]) as server:
        out = _provider(server, timeout=0.3).complete(REQUEST)
    assert out.text == "fast enough"
    assert out.attempts == 2
    with ScriptedModelServer([slow(5), slow(5)]) as server:
        provider = _provider(server, "anthropic", timeout=0.3, policy=RetryPolicy(max_attempts=2))
        with pytest.raises(Timeout) as caught:
            provider.complete(REQUEST)
    assert caught.value.timeout_s == 0.3
    assert caught.value.attempts == 2
    assert "0.3s" in str(caught.value)


@pytest.mark.parametrize(
    ("api", "expected"),
    [
        ("openai_chat", "rejected the key in TEST_API_KEY (401)"),
        ("anthropic", "rejected the key in TEST_API_KEY (401)"),
    ],
)
def test_a_rejected_key_fails_at_once_naming_the_key(api: str, expected: str) -> None:
    with ScriptedModelServer([unauthorized()]) as server:
        with pytest.raises(AuthenticationError) as caught:
            _provider(server, api).complete(REQUEST)
        assert len(server.requests) == 1  # never retried
    assert expected in str(caught.value)
    assert caught.value.key_source == "TEST_API_KEY"
    assert caught.value.status == 401
    assert KEY not in str(caught.value)


def test_a_local_server_that_wants_a_key_says_which_variable_to_set() -> None:
    with ScriptedModelServer([unauthorized()]) as server:
        settings = settings_from_env(
            "openai_compatible", "llava", base_url=server.openai_base_url, environ={}
        )
        with pytest.raises(AuthenticationError, match="none was given: set AGENT_S_COMPATIBLE"):
            build_provider(settings).complete(REQUEST)


@pytest.mark.parametrize(
    ("api", "variable"),
    [
        ("openai_chat", "OPENAI_API_KEY"),
        ("openai_responses", "OPENAI_API_KEY"),
        ("anthropic", "ANTHROPIC_API_KEY"),
    ],
)
def test_a_missing_key_for_a_hosted_api_fails_at_construction(api: str, variable: str) -> None:
    settings = settings_from_env(api, "any-model", environ={"UNRELATED": "x"})
    with pytest.raises(AuthenticationError, match=f"^{variable} is not set") as caught:
        build_provider(settings)
    assert caught.value.status is None


def test_hosted_openrouter_and_azure_need_their_own_keys() -> None:
    for base_url, variable in [
        ("https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
        ("https://myres.openai.azure.com/openai/v1", "AZURE_OPENAI_API_KEY"),
    ]:
        settings = settings_from_env("openai_compatible", "m", base_url=base_url, environ={})
        with pytest.raises(AuthenticationError, match=f"{variable} is not set"):
            build_provider(settings)
    flagged = settings_from_env("anthropic", "m", api_key=KEY, key_flag="--model-api-key")
    assert flagged.key_source == "--model-api-key"


@pytest.mark.parametrize("api", APIS)
def test_a_body_cut_mid_json_is_retried_then_reported(api: str) -> None:
    with ScriptedModelServer([malformed(), reply("whole")]) as server:
        assert _provider(server, api).complete(REQUEST).text == "whole"
    with ScriptedModelServer([malformed()] * 3) as server:
        with pytest.raises(IncompleteReply, match="cut off mid-JSON") as caught:
            _provider(server, api).complete(REQUEST)
        assert len(server.requests) == 3
    assert caught.value.attempts == 3


@pytest.mark.parametrize("api", APIS)
def test_a_body_that_is_no_json_is_malformed_and_not_retried(api: str) -> None:
    with ScriptedModelServer([garbage(2000)]) as server:
        with pytest.raises(MalformedResponse, match="not valid JSON") as caught:
            _provider(server, api).complete(REQUEST)
        assert len(server.requests) == 1
    assert not isinstance(caught.value, IncompleteReply)


@pytest.mark.parametrize(
    ("api", "body", "complaint"),
    [
        ("openai_chat", {"choices": []}, "no choices"),
        ("openai_chat", {"choices": [{"message": "text"}]}, "choices[0].message"),
        ("openai_responses", {"output": "nope"}, "reply.output"),
        (
            "openai_responses",
            {"output": [{"type": "message", "content": ["text"]}]},
            "output[0].content has a non-object",
        ),
        ("anthropic", {"content": ["text"]}, "content[0] is not an object"),
        ("anthropic", [1, 2, 3], "not a JSON object"),
    ],
)
def test_a_reply_of_the_wrong_shape_is_malformed(api: str, body, complaint: str) -> None:
    with (
        ScriptedModelServer([raw(body)]) as server,
        pytest.raises(MalformedResponse, match=re.escape(complaint)),
    ):
        _provider(server, api).complete(REQUEST)


@pytest.mark.parametrize("api", APIS)
def test_truncated_reply_keeps_the_partial_text(api: str) -> None:
    with ScriptedModelServer([truncated("click(elem", output_tokens=50)]) as server:
        with pytest.raises(OutputTruncated) as caught:
            _provider(server, api).complete(REQUEST)
        assert len(server.requests) == 1
    assert caught.value.partial_text == "click(elem"
    assert caught.value.usage.output_tokens == 50
    assert caught.value.max_output_tokens == 4096


@pytest.mark.parametrize("api", APIS)
def test_refusal_is_typed_with_its_text(api: str) -> None:
    with (
        ScriptedModelServer([refusal("I can't do that.")]) as server,
        pytest.raises(Refused) as caught,
    ):
        _provider(server, api).complete(REQUEST)
    assert caught.value.refusal == "I can't do that."
    assert caught.value.usage.input_tokens == 20


@pytest.mark.parametrize("api", APIS)
def test_bad_request_carries_the_api_message_and_is_not_retried(api: str) -> None:
    with ScriptedModelServer([bad_request("image too large", status=413)]) as server:
        with pytest.raises(BadRequest) as caught:
            _provider(server, api).complete(REQUEST)
        assert len(server.requests) == 1
    assert (caught.value.status, caught.value.api_message) == (413, "image too large")


def test_no_server_at_all_is_provider_unavailable() -> None:
    server = ScriptedModelServer([]).start()
    url = server.openai_base_url
    server.close()  # the port is now closed: connection refused
    settings = ProviderSettings("openai_compatible", "llava", url, None, "", 2.0)
    sleeps = Sleeps()
    provider = build_provider(settings, retry=RetryPolicy(max_attempts=2), sleep=sleeps)
    with pytest.raises(ProviderUnavailable, match="cannot reach the server at") as caught:
        provider.complete(REQUEST)
    assert caught.value.status is None
    assert caught.value.attempts == 2
    assert len(sleeps) == 1
    # the error names the fix; a retry's progress line names only the cause
    message = str(caught.value)
    assert message.endswith(
        "is the model server running and listening there? Start it, or "
        "give its address with --base-url"
    ), message
    line = retry_line(1, 2, caught.value, 1.0)
    assert line == f"waiting for the model: attempt 2/2 after {caught.value.summary}", line
    assert "Start it" not in line
    assert url in line


def test_the_fix_for_an_unreachable_endpoint_suits_where_it_is() -> None:
    local = _reach_fix(endpoint_for("openai_compatible", "http://localhost:11434/v1"))
    assert "is the model server running" in local
    assert "--base-url" in local
    hosted = _reach_fix(endpoint_for("openai_chat", "https://api.openai.com/v1"))
    assert "network connection" in hosted
    assert "HTTPS_PROXY" in hosted
    remote = _reach_fix(endpoint_for("openai_compatible", "http://10.1.2.3:8000/v1"))
    assert "this machine can reach it" in remote
    assert "correct --base-url" in remote


def test_only_retryable_errors_are_retried() -> None:
    calls = []

    def fail_with(error: ModelError):
        def fn():
            calls.append(error)
            raise error

        return fn

    for error, attempts in [
        (RateLimited("r"), 3),
        (ProviderUnavailable("u"), 3),
        (Timeout("t"), 3),
        (AuthenticationError("a", key_source="K"), 1),
        (BadRequest("b", status=400), 1),
        (Refused("no", refusal="no"), 1),
        (OutputTruncated("cut", partial_text=""), 1),
        (MalformedResponse("m"), 1),
    ]:
        calls.clear()
        with pytest.raises(type(error)):
            call_with_retries(fail_with(error), RetryPolicy(max_attempts=3), sleep=lambda s: None)
        assert len(calls) == attempts, error
    with pytest.raises(ZeroDivisionError):  # not a ModelError: a bug, never retried
        call_with_retries(lambda: 1 / 0, RetryPolicy(), sleep=lambda s: None)


def test_on_retry_reports_each_wait() -> None:
    seen = []
    with ScriptedModelServer([server_error(502), reply("ok")]) as server:
        url = server.openai_base_url
        settings = ProviderSettings("openai_chat", "gpt-4o", url, KEY, "K", 5.0)
        provider = build_provider(
            settings, sleep=lambda s: None, on_retry=lambda n, err, d: seen.append((n, err.status))
        )
        provider.complete(REQUEST)
    assert seen == [(1, 502)]


def test_azure_gets_its_key_in_the_api_key_header_too() -> None:
    from agent_s.models.openai_chat import openai_client

    url = "https://myres.openai.azure.com/openai/v1"
    client = openai_client(
        ProviderSettings("openai_chat", "gpt-4o", url, KEY, "AZURE_OPENAI_API_KEY")
    )
    assert client.default_headers["api-key"] == KEY
    plain = openai_client(ProviderSettings("openai_chat", "gpt-4o", None, KEY, "OPENAI_API_KEY"))
    assert "api-key" not in plain.default_headers
