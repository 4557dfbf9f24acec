"""Usage per call and per run, and budgets that stop a run before it overspends."""

from __future__ import annotations

import pytest

from agent_s.models import (
    Budget,
    BudgetExceeded,
    Message,
    ModelRequest,
    OutputTruncated,
    ProfileConfigError,
    ProviderSettings,
    Usage,
    UsageMeter,
    build_provider,
)
from agent_s.testing.scripted_replies import reply, truncated
from agent_s.testing.scripted_server import ScriptedModelServer

REQUEST = ModelRequest((Message.text("user", "step"),), metadata={"purpose": "worker"})


def _provider(server, meter, model="gpt-4o", api="openai_chat"):
    url = server.base_url if api == "anthropic" else server.openai_base_url
    settings = ProviderSettings(api, model, url, "sk-test-key", "K", 5.0)
    return build_provider(settings, meter=meter, sleep=lambda s: None)


def test_usage_adds_up() -> None:
    a = Usage(10, 5, 2, 1, 1, 0.5)
    b = Usage(1, 1, 0, 0, 1, 0.25)
    assert a + b == Usage(11, 6, 2, 1, 2, 0.75)
    assert (a + b).total_tokens == 17


def test_cost_budget_stops_the_run_before_the_call_that_would_overspend() -> None:
    # each call: 1000 in + 500 out at gpt-4o prices = 0.0025 + 0.005 = $0.0075
    meter = UsageMeter(Budget(max_cost_usd=0.01))
    step = reply("ok", input_tokens=1000, output_tokens=500)
    with ScriptedModelServer([step, step]) as server:  # strict: a third request would fail
        provider = _provider(server, meter)
        provider.complete(REQUEST)
        provider.complete(REQUEST)  # $0.0075 spent < $0.01: allowed, ends at $0.015
        with pytest.raises(BudgetExceeded) as caught:
            provider.complete(REQUEST)
        assert len(server.requests) == 2  # the third call never started
    error = caught.value
    assert (error.kind, error.limit) == ("cost", 0.01)
    assert error.spent == pytest.approx(0.015)
    assert meter.total.calls == 2
    assert [c.purpose for c in meter.charges] == ["worker", "worker"]
    assert meter.by_model()["gpt-4o"].input_tokens == 2000


def test_token_budget_counts_input_and_output() -> None:
    meter = UsageMeter(Budget(max_tokens=100))
    with ScriptedModelServer([reply("a", input_tokens=60, output_tokens=40)]) as server:
        provider = _provider(server, meter, "claude-3-5-haiku", "anthropic")
        provider.complete(REQUEST)
        with pytest.raises(BudgetExceeded, match="token budget spent: 100 of 100") as caught:
            provider.complete(REQUEST)
    assert (caught.value.kind, caught.value.spent) == ("tokens", 100)


def test_a_truncated_reply_is_still_charged() -> None:
    meter = UsageMeter()
    with (
        ScriptedModelServer([truncated("part", output_tokens=4096)]) as server,
        pytest.raises(OutputTruncated),
    ):
        _provider(server, meter).complete(REQUEST)
    assert meter.total.output_tokens == 4096
    assert meter.total.cost_usd == pytest.approx((20 * 2.5 + 4096 * 10) / 1e6)


def test_a_cost_budget_for_a_model_without_prices_is_refused_at_construction() -> None:
    meter = UsageMeter(Budget(max_cost_usd=1.0))
    settings = ProviderSettings("anthropic", "claude-opus-9", "http://127.0.0.1:9", "k")
    with pytest.raises(ProfileConfigError, match=r'prices are not known.*"claude-opus-9"'):
        build_provider(settings, meter=meter)
    build_provider(settings, meter=UsageMeter(Budget(max_tokens=10_000)))  # tokens: fine


def test_budget_limits_are_validated_and_exceeded_is_side_effect_free() -> None:
    with pytest.raises(ValueError, match="max_cost_usd"):
        Budget(max_cost_usd=-1)
    meter = UsageMeter(Budget(max_cost_usd=0.0))
    assert meter.exceeded() is not None  # a zero budget allows no call at all
    meter.charge(Usage(cost_usd=0.0))
    assert UsageMeter().exceeded() is None


def test_a_meter_reset_in_place_keeps_its_providers_charging_it() -> None:
    meter = UsageMeter(Budget(max_tokens=100))
    script = [reply("a", input_tokens=60, output_tokens=30), reply("b", input_tokens=5)]
    with ScriptedModelServer(script) as server:
        provider = _provider(server, meter)
        provider.complete(REQUEST)
        meter.reset(Budget(max_tokens=50))  # a new task: nothing is wired again
        assert (meter.total, meter.charges) == (Usage(), ())
        provider.complete(REQUEST)
    assert (meter.total.input_tokens, meter.total.output_tokens) == (5, 10)
    assert meter.budget == Budget(max_tokens=50)
    assert [c.purpose for c in meter.charges] == ["worker"]
