"""The loop on a recording desktop, with the model scripted and reached through the real SDKs.

Grounding here is ``native`` (the scripted model writes coordinates in its element
descriptions), so these tests need no display; the real-desktop runs are in
``test_agent_desktop.py``.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from agent_s import Agent, AgentConfig, GroundingConfig, ModelConfig, RunStatus, load_trajectory
from agent_s.actions.models import ENTER_PAUSE
from agent_s.desktop import RecordingBackend
from agent_s.desktop.ops import Click, Hotkey, MoveTo, Point, Sleep, TypeText
from agent_s.record.result import CommandCheck
from agent_s.record.trajectory import find_secrets
from agent_s.testing.scripted_replies import rate_limited, refusal, reply
from agent_s.testing.scripted_server import ScriptedModelServer

KEY = "sk-test-SECRET-0123456789abcdef"
PARKED = Point(64, 64)  # the free spot farthest from a click at the centre of 1280x800


def act(code: str, thought: str = "The screen shows the app.") -> str:
    return f"{thought}\n```python\n{code}\n```"


def screens(n: int) -> list[Image.Image]:
    return [Image.new("RGB", (1280, 800), (30 + 10 * i, 40, 50)) for i in range(n)]


def make_agent(
    server: ScriptedModelServer,
    backend: RecordingBackend,
    tmp_path: Path | None = None,
    *,
    provider: str = "openai-compatible",
    **settings: Any,
) -> Agent:
    base = server.base_url if provider == "anthropic" else server.openai_base_url
    model = ModelConfig(provider, "scripted-model", base, KEY)  # type: ignore[arg-type]
    config = AgentConfig(settle_seconds=0, record_dir=tmp_path, retry_attempts=2, **settings)
    return Agent(model, settings=config, grounding=GroundingConfig("native"), backend=backend)


def texts(request: Any) -> str:
    return json.dumps(request.body)


def test_a_task_done_in_three_steps_executes_each_action_once(tmp_path: Path) -> None:
    script = [
        reply(act('agent.click("(640, 400)")'), input_tokens=1000, output_tokens=50),
        reply(act('agent.type(text="hello", enter=True)')),
        reply(act('agent.done(answer="42")')),
    ]
    backend = RecordingBackend(screens(3))
    with ScriptedModelServer(script) as server:
        result = make_agent(server, backend, tmp_path).run("Type hello in the box")
    assert result.status is RunStatus.SUCCEEDED
    assert result.exit_code == 0
    assert result.answer == "42"
    assert result.steps == 3
    assert not result.verified
    assert backend.ops == [
        Click(Point(640, 400)),
        MoveTo(PARKED),  # the pointer rests where it covers no control (agent_s.desktop.park)
        TypeText("hello"),
        Sleep(ENTER_PAUSE),
        Hotkey(("enter",)),
    ]
    backend.assert_all_screenshots_used()
    assert result.usage.input_tokens == 1040
    assert result.model_calls == 3
    loaded = load_trajectory(result.trajectory_dir)
    assert loaded.result == result
    first = loaded.steps[0]
    assert first.grounding[0].grounder == "native"
    assert first.grounding[0].point == (640, 400)
    assert first.executed == (
        {"op": "Click", "at": {"x": 640, "y": 400}, "button": "left", "clicks": 1, "hold_keys": []},
    )
    assert first.calls[0].input_tokens == 1000
    assert "click" in first.reply
    assert (result.trajectory_dir / first.screenshot).stat().st_size > 0
    assert [s.outcome for s in loaded.steps] == ["ok", "ok", "terminal"]
    assert find_secrets(result.trajectory_dir, [KEY]) == []
    # The history goes back to the model: step 2's request carries step 1's reply and result.
    assert "Result of step 1" in texts(server.requests[1])


def test_the_model_says_fail_and_the_run_fails_with_its_reason(tmp_path: Path) -> None:
    script = [reply(act('agent.fail(reason="no such file on the desktop")'))]
    with ScriptedModelServer(script) as server:
        result = make_agent(server, RecordingBackend(screens(1)), tmp_path).run("Open x.txt")
    assert result.status is RunStatus.FAILED
    assert result.cause == "model_gave_up"
    assert result.reason == "no such file on the desktop"
    assert result.exit_code == 1


def test_bad_replies_go_back_with_the_error_then_the_run_fails_typed(tmp_path: Path) -> None:
    script = [reply("I will click it."), reply(""), reply(act('agent.clik("OK")'))]
    backend = RecordingBackend(screens(1))
    with ScriptedModelServer(script) as server:
        result = make_agent(server, backend, tmp_path, max_invalid_replies=2).run("Click OK")
    assert result.status is RunStatus.FAILED
    assert result.cause == "invalid_replies"
    assert "no usable action after 3 replies" in result.reason
    assert "clik" in result.reason
    assert backend.ops == []  # never turned into a wait, nothing executed
    second, third = texts(server.requests[1]), texts(server.requests[2])
    assert "could not be used: no action found" in second
    assert "the reply was empty" in third
    step = load_trajectory(result.trajectory_dir).steps[0]
    assert step.outcome == "error"
    assert [c.error != "" for c in step.calls] == [True] * 3


def test_a_bad_reply_then_a_good_one_is_one_step(tmp_path: Path) -> None:
    script = [
        reply("no action here"),
        reply(act('agent.hotkey(["ctrl", "s"])')),
        reply(act("agent.done()")),
    ]
    backend = RecordingBackend(screens(2))
    with ScriptedModelServer(script) as server:
        result = make_agent(server, backend, tmp_path).run("Save")
    assert result.succeeded
    assert result.steps == 2
    assert result.model_calls == 3
    assert backend.ops == [Hotkey(("ctrl", "s"))]


def test_rate_limit_then_success_is_retried_and_recorded(tmp_path: Path) -> None:
    script = [rate_limited(0), reply(act("agent.done()"))]
    with ScriptedModelServer(script) as server:
        result = make_agent(server, RecordingBackend(screens(1)), tmp_path).run("Nothing")
    assert result.succeeded
    assert len(server.requests) == 2
    assert result.model_calls == 1
    step = load_trajectory(result.trajectory_dir).steps[0]
    assert step.calls[0].http_attempts == 2
    assert any("RateLimited on attempt 1" in e for e in step.errors), step.errors


def test_provider_down_ends_with_error_and_a_clear_message(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    model = ModelConfig("openai-compatible", "m", f"http://127.0.0.1:{port}/v1", KEY)
    agent = Agent(
        model,
        settings=AgentConfig(record_dir=tmp_path, retry_attempts=1),
        grounding=GroundingConfig("native"),
        backend=RecordingBackend(screens(1)),
    )
    result = agent.run("Anything")
    assert result.status is RunStatus.ERROR
    assert result.cause == "model_error"
    assert result.error_type == "ProviderUnavailable"
    assert "127.0.0.1" in result.reason
    step = load_trajectory(result.trajectory_dir).steps[0]
    assert step.outcome == "error"
    assert "ProviderUnavailable" in step.detail


def test_max_steps_ends_the_run(tmp_path: Path) -> None:
    script = [reply(act("agent.wait(0.01)")) for _ in range(3)]
    with ScriptedModelServer(script) as server:
        result = make_agent(server, RecordingBackend(screens(3)), tmp_path, max_steps=3).run("x")
    assert result.status is RunStatus.MAX_STEPS
    assert result.steps == 3
    assert result.exit_code == 3


def test_token_budget_stops_before_the_call_that_would_overspend(tmp_path: Path) -> None:
    script = [reply(act("agent.wait(0.01)"), input_tokens=80, output_tokens=30)]
    with ScriptedModelServer(script) as server:
        agent = make_agent(server, RecordingBackend(screens(2)), tmp_path, max_tokens=100)
        result = agent.run("x")
    assert result.status is RunStatus.BUDGET_EXCEEDED
    assert result.cause == "budget_tokens"
    assert result.usage.total_tokens == 110
    assert len(server.requests) == 1


def test_refusal_is_infeasible(tmp_path: Path) -> None:
    with ScriptedModelServer([refusal("I can't do that.")]) as server:
        result = make_agent(server, RecordingBackend(screens(1)), tmp_path).run("x")
    assert result.status is RunStatus.INFEASIBLE
    assert "can't do that" in result.reason


def test_notes_last_for_the_task_and_reset_clears_them(tmp_path: Path) -> None:
    script = [
        reply(act('agent.save_to_knowledge(["the total is 318.75"])')),
        reply(act("agent.done()")),
        reply(act("agent.done()")),
    ]
    with ScriptedModelServer(script) as server:
        agent = make_agent(server, RecordingBackend(screens(3)), tmp_path)
        assert agent.run("Remember the total").succeeded
        assert agent.notes == ("the total is 318.75",)
        assert "the total is 318.75" in texts(server.requests[1])
        agent.run("Another task")  # run() starts with a reset
        assert "318.75" not in texts(server.requests[2])
        assert agent.notes == ()


def test_one_meter_counts_each_task_the_grounding_model_included(tmp_path: Path) -> None:
    """The generation and grounding models charge one meter, reset in place for each task."""
    task = [
        reply(act('agent.click("the OK button")'), input_tokens=100, output_tokens=10),
        reply("(640, 400)", input_tokens=50, output_tokens=5),  # the grounding model
        reply(act("agent.done()"), input_tokens=100, output_tokens=10),
    ]
    backend = RecordingBackend(screens(4))
    with ScriptedModelServer(task + task) as server:
        model = ModelConfig("openai-compatible", "scripted-model", server.openai_base_url, KEY)
        grounding = GroundingConfig("model", url=server.openai_base_url, model="ground-model")
        config = AgentConfig(settle_seconds=0, record_dir=tmp_path, retry_attempts=1)
        agent = Agent(model, settings=config, grounding=grounding, backend=backend)
        first, second = agent.run("Click OK"), agent.run("Click OK again")
    assert backend.ops == [Click(Point(640, 400)), MoveTo(PARKED)] * 2
    for result in (first, second):
        assert result.succeeded
        assert (result.usage.calls, result.usage.total_tokens) == (3, 275)
        assert result.model_calls == 2  # generation calls; the grounding call is metered only
    assert agent.usage == second.usage
    step = load_trajectory(second.trajectory_dir).steps[0]
    assert step.grounding[0].grounder == "model"
    assert step.usage.total_tokens == 165  # the run's total when the step ended


def test_grounding_failure_goes_back_to_the_model(tmp_path: Path) -> None:
    script = [reply(act('agent.click("(5000, 10)")')), reply(act("agent.done()"))]
    backend = RecordingBackend(screens(2))
    with ScriptedModelServer(script) as server:
        result = make_agent(server, backend, tmp_path).run("Click far away")
    assert result.succeeded
    assert backend.ops == []
    assert "could not locate '(5000, 10)'" in texts(server.requests[1])
    step = load_trajectory(result.trajectory_dir).steps[0]
    assert step.grounding[0].point is None
    assert step.outcome == "error"


def test_postcondition_command_and_callable(tmp_path: Path) -> None:
    script = [reply(act("agent.done()")), reply(act("agent.done()"))]
    with ScriptedModelServer(script) as server:
        agent = make_agent(server, RecordingBackend(screens(2)), tmp_path)
        failed = agent.run("x", postcondition=CommandCheck(("test", "-e", str(tmp_path / "no"))))
        passed = agent.run("y", postcondition=lambda: True)
    assert failed.status is RunStatus.FAILED
    assert failed.cause == "postcondition_failed"
    assert failed.postcondition is not None
    assert "exit status 1" in failed.postcondition.detail
    assert not failed.verified
    assert passed.succeeded
    assert passed.verified


def test_anthropic_wire_and_reflection_counted(tmp_path: Path) -> None:
    script = [
        reply(act('agent.click("(10, 10)")')),
        reply("ON TRACK\nThe click landed."),
        reply(act("agent.done()")),
    ]
    with ScriptedModelServer(script) as server:
        agent = make_agent(
            server, RecordingBackend(screens(2)), tmp_path, provider="anthropic", reflection=True
        )
        result = agent.run("Click the corner")
    assert result.succeeded
    assert result.model_calls == 3
    assert all(r.wire == "messages" for r in server.requests)
    assert "The click landed." in texts(server.requests[2])
    step = load_trajectory(result.trajectory_dir).steps[1]
    assert [c.purpose for c in step.calls] == ["reflect", "generate"]


def test_dry_run_draws_and_executes_nothing(tmp_path: Path) -> None:
    script = [reply(act('agent.click("(100, 200)")')), reply(act("agent.done()"))]
    backend = RecordingBackend(screens(2))
    with ScriptedModelServer(script) as server:
        result = make_agent(server, backend, tmp_path, dry_run=True).run("Click")
    assert not result.succeeded  # nothing was done: the run is planned, not succeeded
    assert (result.status, result.cause, result.exit_code) == (RunStatus.PLANNED, "dry_run", 0)
    assert "none was executed" in result.reason
    assert backend.ops == []
    step = load_trajectory(result.trajectory_dir).steps[0]
    assert step.dry_run_image
    assert step.executed == ()
    with Image.open(result.trajectory_dir / step.dry_run_image) as drawn:
        assert drawn.convert("RGB").getpixel((100 + 12, 200)) == (255, 0, 0)


def test_a_missing_model_is_a_config_error_naming_the_variable() -> None:
    from agent_s import ConfigError

    with pytest.raises(ConfigError, match="AGENT_S_MODEL"):
        ModelConfig.from_env(environ={})
    with pytest.raises(Exception, match="OPENAI_API_KEY"):
        Agent(ModelConfig.from_env(provider="openai", model="gpt-4o", environ={}))
