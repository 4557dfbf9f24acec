"""The scripted model server: wire formats, recording, strictness, faults, command line."""

from __future__ import annotations

import http.client
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import anthropic
import openai
import pytest

from agent_s.testing.scripted_replies import (
    Step,
    malformed,
    overloaded,
    rate_limited,
    refusal,
    reply,
    slow,
    truncated,
)
from agent_s.testing.scripted_server import ScriptedModelServer

HELLO = [{"role": "user", "content": "hello"}]


def _openai(server: ScriptedModelServer, timeout: float = 5.0) -> openai.OpenAI:
    return openai.OpenAI(
        api_key="sk-test", base_url=server.openai_base_url, max_retries=0, timeout=timeout
    )


def _anthropic(server: ScriptedModelServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="sk-ant-test", base_url=server.base_url, max_retries=0)


def test_one_script_answers_in_all_three_wire_formats_and_records_requests() -> None:
    script = [reply("chat says hi", input_tokens=120, cached_tokens=100, output_tokens=7)] * 3
    with ScriptedModelServer(script) as server:
        chat = _openai(server).chat.completions.create(model="m-chat", messages=HELLO)
        resp = _openai(server).responses.create(model="m-resp", input="hello")
        msg = _anthropic(server).messages.create(model="m-msg", max_tokens=50, messages=HELLO)
    assert chat.choices[0].message.content == "chat says hi"
    assert chat.choices[0].finish_reason == "stop"
    assert chat.usage.prompt_tokens == 120
    assert chat.usage.prompt_tokens_details.cached_tokens == 100
    assert resp.output_text == "chat says hi"
    assert resp.usage.input_tokens_details.cached_tokens == 100
    assert msg.content[0].text == "chat says hi"
    # Anthropic reports cache reads apart from input_tokens
    assert (msg.usage.input_tokens, msg.usage.cache_read_input_tokens) == (20, 100)
    paths = [(r.index, r.path, r.wire, r.model) for r in server.requests]
    assert paths == [
        (1, "/v1/chat/completions", "chat", "m-chat"),
        (2, "/v1/responses", "responses", "m-resp"),
        (3, "/v1/messages", "messages", "m-msg"),
    ]
    assert server.requests[0].headers["authorization"] == "Bearer sk-test"
    assert server.requests[2].body["max_tokens"] == 50


def test_an_extra_call_gets_a_500_and_fails_verify() -> None:
    server = ScriptedModelServer([reply("only one")]).start()
    try:
        client = _openai(server)
        client.chat.completions.create(model="m", messages=HELLO)
        with pytest.raises(openai.InternalServerError) as caught:
            client.chat.completions.create(model="m", messages=HELLO)
        assert "unexpected request #2" in str(caught.value)
    finally:
        server.close()
    with pytest.raises(AssertionError, match=r"unexpected request #2 .*only 1 step"):
        server.verify()


def test_an_unused_step_fails_on_leaving_the_with_block() -> None:
    with (
        pytest.raises(AssertionError, match=r"1 scripted step\(s\) never requested: refusal"),
        ScriptedModelServer([reply("used"), refusal("never asked")]) as server,
    ):
        _openai(server).chat.completions.create(model="m", messages=HELLO)


def test_a_chat_completion_streams_as_server_sent_events_through_the_sdk() -> None:
    with ScriptedModelServer([reply("hello there", input_tokens=7, output_tokens=3)]) as server:
        stream = _openai(server).chat.completions.create(
            model="m", messages=HELLO, stream=True, stream_options={"include_usage": True}
        )
        chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "hello there"
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].usage is not None
    assert (chunks[-1].usage.prompt_tokens, chunks[-1].usage.completion_tokens) == (7, 3)
    assert len([c for c in chunks if c.choices and c.choices[0].delta.content]) == 2


def test_the_with_block_does_not_hide_the_tests_own_error() -> None:
    with pytest.raises(KeyError), ScriptedModelServer([reply("unused")]):
        raise KeyError("the test's own failure")


def test_stream_unknown_path_and_non_json_are_refused_and_recorded() -> None:
    with ScriptedModelServer([]) as server:
        client = _openai(server)
        with pytest.raises(openai.BadRequestError, match="streaming was requested"):
            client.responses.create(model="m", input="hello", stream=True)
        with pytest.raises(openai.NotFoundError):
            client.embeddings.create(model="m", input="x")
        host, port = server.base_url.removeprefix("http://").split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=5)
        conn.request("POST", "/v1/messages", body=b"not json", headers={"x-api-key": "secret"})
        assert conn.getresponse().status == 400
        conn.close()
        assert len(server.errors) == 3
        assert "body is not a JSON object" in server.errors[2]
        recorded = server.requests[2]
        assert recorded.raw == b"not json"
        assert "secret" not in repr(recorded)  # keys are masked in reprs
        server._errors.clear()  # the failures above were the point of this test


def test_a_function_script_sees_each_request() -> None:
    def answer(request):
        return {"text": f"you sent {len(request.body['messages'])} message(s)"}

    with ScriptedModelServer(answer) as server:
        out = _openai(server).chat.completions.create(model="m", messages=HELLO * 3)
    assert out.choices[0].message.content == "you sent 3 message(s)"


def test_a_failing_script_function_is_reported() -> None:
    def broken(request):
        raise RuntimeError("boom")

    server = ScriptedModelServer(broken).start()
    with pytest.raises(openai.InternalServerError):
        _openai(server).chat.completions.create(model="m", messages=HELLO)
    server.close()
    with pytest.raises(AssertionError, match="script function failed.*boom"):
        server.verify()


def test_fault_shapes_on_the_wire() -> None:
    script = [rate_limited(7, retry_after_ms=1500), overloaded(), malformed(), truncated("half")]
    with ScriptedModelServer(script) as server:
        client = _openai(server)
        with pytest.raises(openai.RateLimitError) as limited:
            client.chat.completions.create(model="m", messages=HELLO)
        assert limited.value.response.headers["retry-after"] == "7"
        assert limited.value.response.headers["retry-after-ms"] == "1500"
        with pytest.raises(anthropic.InternalServerError) as busy:
            _anthropic(server).messages.create(model="m", max_tokens=5, messages=HELLO)
        assert busy.value.status_code == 529
        assert busy.value.body["error"]["type"] == "overloaded_error"
        with pytest.raises(json.JSONDecodeError):
            client.chat.completions.create(model="m", messages=HELLO)
        cut = client.responses.create(model="m", input="x")
        assert (cut.status, cut.incomplete_details.reason) == ("incomplete", "max_output_tokens")
        assert cut.output_text == "half"


def test_a_slow_step_outlasts_the_client_timeout_and_close_cuts_it_short() -> None:
    server = ScriptedModelServer([slow(30)]).start()
    with pytest.raises(openai.APITimeoutError):
        _openai(server, timeout=0.2).chat.completions.create(model="m", messages=HELLO)
    started = time.monotonic()
    server.close()
    assert time.monotonic() - started < 2
    server.verify()  # the slow step was requested: nothing unused, nothing unexpected


def test_steps_from_json() -> None:
    assert Step.from_json("plain") == reply("plain")
    step = Step.from_json({"kind": "slow", "delay_s": 2, "then": {"text": "late"}})
    assert step.then == reply("late")
    assert Step.from_json({"kind": "rate_limited", "retry_after": 3}).retry_after == "3"
    with pytest.raises(ValueError, match="unknown step field"):
        Step.from_json({"txt": "typo"})
    with pytest.raises(ValueError, match="unknown step kind"):
        Step.from_json({"kind": "explode"})
    with pytest.raises(ValueError, match="only a slow step"):
        Step.from_json({"kind": "reply", "then": "x"})


def _serve(script: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "agent_s.testing", "serve", str(script), "--port", "0"],
        cwd=script.parent,  # not the checkout: its agent_s/ folder would shadow the install
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_command_line_serves_until_interrupted_and_verifies(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["from the command line", {"kind": "refusal", "text": "no"}]))
    proc = _serve(script)
    try:
        base_url = proc.stdout.readline().strip()
        assert base_url.startswith("http://127.0.0.1:")
        client = openai.OpenAI(api_key="k", base_url=base_url + "/v1", max_retries=0, timeout=5)
        out = client.chat.completions.create(model="m", messages=HELLO)
        assert out.choices[0].message.content == "from the command line"
    finally:
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=10)
    assert proc.returncode == 1  # the refusal step was never requested
    assert "never requested: refusal" in stderr


def test_command_line_exit_codes(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": ["one"]}))
    proc = _serve(script)
    base_url = proc.stdout.readline().strip()
    client = anthropic.Anthropic(api_key="k", base_url=base_url, max_retries=0, timeout=5)
    assert client.messages.create(model="m", max_tokens=5, messages=HELLO).content[0].text == "one"
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=10)
    assert proc.returncode == 0, stderr
    bad = tmp_path / "bad.json"
    bad.write_text('[{"kind": "nonsense"}]')
    proc = _serve(bad)
    _, stderr = proc.communicate(timeout=10)
    assert proc.returncode == 2
    assert "unknown step kind" in stderr
