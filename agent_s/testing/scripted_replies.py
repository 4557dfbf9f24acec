"""What the scripted model server answers: steps, and how each looks in each wire format.

A step is one scripted answer to one request: a reply (text, with usage), a
truncated reply, a refusal, or a fault (429 with Retry-After, 5xx, 529 overloaded, 401, 400,
JSON cut off mid-body, a large body that is no JSON at all, a reply slower than the client's
timeout or none at all, any raw JSON body). Build steps with
the functions below, or from JSON (``Step.from_json``) for the command line:

    ["plain text reply",
     {"kind": "reply", "text": "hi", "input_tokens": 1200, "cached_tokens": 1000},
     {"kind": "rate_limited", "retry_after": "2"},
     {"kind": "slow", "delay_s": 1.5, "then": {"kind": "reply", "text": "late"}}]

The same step renders as OpenAI Chat Completions, OpenAI Responses or Anthropic Messages,
whichever endpoint the request came to.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

Wire = Literal["chat", "responses", "messages"]
StepKind = Literal[
    "reply",
    "truncated",
    "refusal",
    "rate_limited",
    "server_error",
    "overloaded",
    "unauthorized",
    "bad_request",
    "malformed",
    "garbage",
    "slow",
    "raw",
]
MALFORMED_BODY = b'{"id": "scripted-broken", "choices": [{"message": {"content": "cut off'


@dataclass(frozen=True)
class Step:
    kind: StepKind = "reply"
    text: str = ""  # reply text, partial text (truncated) or refusal text
    input_tokens: int = 20  # all input tokens, cached ones included
    output_tokens: int = 10
    cached_tokens: int = 0
    image_tokens: int | None = None  # Chat Completions only, when given
    status: int | None = None  # server_error / bad_request status
    retry_after: str | None = None  # Retry-After header value: seconds or an HTTP date
    retry_after_ms: int | None = None  # retry-after-ms header value
    delay_s: float = 0.0  # slow: wait this long before answering
    then: Step | None = None  # slow: the answer sent after the wait
    message: str = ""  # error message in fault bodies
    body: Any = None  # raw: this JSON value is the whole body (any shape, right or wrong)
    size: int = 0  # garbage: the body's length in bytes

    def __post_init__(self) -> None:
        if self.kind not in get_args(StepKind):
            raise ValueError(f"unknown step kind {self.kind!r}; known: {get_args(StepKind)}")
        if self.then is not None and (self.kind != "slow" or self.then.kind == "slow"):
            raise ValueError("only a slow step has a 'then', and it must not be slow itself")

    def describe(self) -> str:
        if self.kind in ("reply", "truncated", "refusal"):
            return f"{self.kind}({self.text[:40]!r})"
        if self.kind == "slow":
            return f"slow({self.delay_s}s)"
        return self.kind

    @classmethod
    def from_json(cls, value: Any) -> Step:
        """A step from its JSON form: a string (a text reply) or an object of Step fields."""
        if isinstance(value, str):
            return cls(text=value)
        if not isinstance(value, Mapping):
            raise ValueError(f"a script step must be a string or an object, got {value!r}")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(value) - known)
        if unknown:
            raise ValueError(f"unknown step field(s) {unknown}; known: {sorted(known)}")
        fields = dict(value)
        if fields.get("then") is not None:
            fields["then"] = cls.from_json(fields["then"])
        if isinstance(fields.get("retry_after"), (int, float)):
            fields["retry_after"] = f"{fields['retry_after']:g}"
        return cls(**fields)


def reply(
    text: str = "",
    *,
    input_tokens: int = 20,
    output_tokens: int = 10,
    cached_tokens: int = 0,
    image_tokens: int | None = None,
) -> Step:
    return Step(
        "reply",
        text,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cached_tokens=cached_tokens,
        image_tokens=image_tokens,
    )


def truncated(partial_text: str, *, input_tokens: int = 20, output_tokens: int = 10) -> Step:
    return Step("truncated", partial_text, input_tokens=input_tokens, output_tokens=output_tokens)


def refusal(text: str = "I can't help with that.", *, input_tokens: int = 20) -> Step:
    return Step("refusal", text, input_tokens=input_tokens, output_tokens=len(text.split()))


def rate_limited(retry_after: float | str | None = 1, *, retry_after_ms: int | None = None) -> Step:
    header = f"{retry_after:g}" if isinstance(retry_after, (int, float)) else retry_after
    return Step("rate_limited", retry_after=header, retry_after_ms=retry_after_ms)


def server_error(status: int = 500, message: str = "The server had an error.") -> Step:
    return Step("server_error", status=status, message=message)


def overloaded() -> Step:
    return Step("overloaded", status=529, message="Overloaded")


def unauthorized() -> Step:
    return Step("unauthorized", status=401, message="invalid x-api-key")


def bad_request(message: str = "Invalid request.", *, status: int = 400) -> Step:
    return Step("bad_request", status=status, message=message)


def malformed() -> Step:
    return Step("malformed")


def garbage(size: int = 5_000_000) -> Step:
    """A 200 whose body of ``size`` bytes is not JSON at all (an HTML page, a proxy's noise)."""
    return Step("garbage", size=size)


def hang(count: int = 1) -> list[Step]:
    """``count`` requests accepted and never answered (until the server closes)."""
    return [Step("slow", delay_s=3600.0, then=reply("never sent")) for _ in range(count)]


def raw(body: Any, *, status: int = 200) -> Step:
    """Any JSON body as it is, e.g. a reply missing the fields of its API's shape."""
    return Step("raw", status=status, body=body)


def slow(delay_s: float, then: Step | None = None) -> Step:
    return Step("slow", delay_s=delay_s, then=then or reply("a reply that arrived too late"))


# ---- rendering -------------------------------------------------------------------------------

_ERRORS: Mapping[str, tuple[int, str, str]] = {  # kind -> (status, OpenAI type, Anthropic type)
    "rate_limited": (429, "rate_limit_exceeded", "rate_limit_error"),
    "server_error": (500, "server_error", "api_error"),
    "overloaded": (529, "server_error", "overloaded_error"),
    "unauthorized": (401, "invalid_request_error", "authentication_error"),
    "bad_request": (400, "invalid_request_error", "invalid_request_error"),
}


def error_body(wire: Wire | None, anthropic_type: str, openai_type: str, message: str) -> bytes:
    if wire == "messages":
        body: dict[str, Any] = {
            "type": "error",
            "error": {"type": anthropic_type, "message": message},
        }
    else:
        body = {"error": {"message": message, "type": openai_type, "param": None, "code": None}}
    return json.dumps(body).encode()


def _usage(step: Step, wire: Wire) -> dict[str, Any]:
    inp, out, cached = step.input_tokens, step.output_tokens, step.cached_tokens
    if wire == "chat":
        details: dict[str, int] = {"cached_tokens": cached}
        if step.image_tokens is not None:
            details["image_tokens"] = step.image_tokens
        return {
            "prompt_tokens": inp,
            "completion_tokens": out,
            "total_tokens": inp + out,
            "prompt_tokens_details": details,
        }
    if wire == "responses":
        return {
            "input_tokens": inp,
            "output_tokens": out,
            "total_tokens": inp + out,
            "input_tokens_details": {"cached_tokens": cached},
            "output_tokens_details": {"reasoning_tokens": 0},
        }
    return {  # Anthropic counts cache reads apart from input_tokens
        "input_tokens": max(0, inp - cached),
        "output_tokens": out,
        "cache_read_input_tokens": cached,
        "cache_creation_input_tokens": 0,
    }


def _chat(step: Step, model: str, n: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": step.text, "refusal": None}
    finish = {"reply": "stop", "truncated": "length", "refusal": "stop"}[step.kind]
    if step.kind == "refusal":
        message.update(content=None, refusal=step.text)
    return {
        "id": f"chatcmpl-scripted-{n}",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": _usage(step, "chat"),
    }


def chat_stream(step: Step, model: str, n: int) -> bytes:
    """``step`` as a streamed Chat Completions reply (server-sent events): the role, the text
    in two pieces, the finish reason, the usage (``stream_options.include_usage``), [DONE]."""
    whole = _chat(step, model, n)
    choice = whole["choices"][0]
    message = choice["message"]
    head = {k: whole[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
        choices = [{"index": 0, "delta": delta, "finish_reason": finish}]
        body = {**head, "choices": choices if delta or finish else [], **extra}
        return b"data: " + json.dumps(body).encode() + b"\n\n"

    text = message["content"] or ""
    parts = [chunk({"role": "assistant", "content": ""})]
    half = len(text) // 2
    parts += [chunk({"content": piece}) for piece in (text[:half], text[half:]) if piece]
    if message["refusal"]:
        parts.append(chunk({"refusal": message["refusal"]}))
    parts.append(chunk({}, choice["finish_reason"]))
    parts.append(chunk({}, usage=whole["usage"]))
    return b"".join(parts) + b"data: [DONE]\n\n"


def _responses(step: Step, model: str, n: int) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if step.kind == "refusal":
        content.append({"type": "refusal", "refusal": step.text})
    elif step.text:
        content.append({"type": "output_text", "text": step.text, "annotations": []})
    output: list[dict[str, Any]] = []
    if content:
        output.append(
            {
                "type": "message",
                "id": f"msg_scripted_{n}",
                "role": "assistant",
                "status": "completed",
                "content": content,
            }
        )
    incomplete = step.kind == "truncated"
    return {
        "id": f"resp_scripted_{n}",
        "object": "response",
        "created_at": 1_700_000_000,
        "model": model,
        "status": "incomplete" if incomplete else "completed",
        "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
        "output": output,
        "usage": _usage(step, "responses"),
    }


def _messages(step: Step, model: str, n: int) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": step.text}] if step.text else []
    stop = {"reply": "end_turn", "truncated": "max_tokens", "refusal": "refusal"}[step.kind]
    return {
        "id": f"msg_scripted_{n}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": _usage(step, "messages"),
    }


def render(step: Step, wire: Wire, model: str, n: int) -> tuple[int, dict[str, str], bytes]:
    """(status, headers, body) answering request number ``n`` with ``step`` (not "slow")."""
    headers = {
        "content-type": "application/json",
        "x-request-id": f"req_scripted_{n}",  # OpenAI's header
        "request-id": f"req_scripted_{n}",  # Anthropic's header
    }
    if step.kind == "malformed":
        return 200, headers, MALFORMED_BODY
    if step.kind == "garbage":
        page = b"<html><body>" + b"x" * max(0, step.size - 26) + b"</body></html>"
        return 200, headers, page  # still labelled JSON, as a misconfigured proxy would
    if step.kind == "raw":
        return step.status or 200, headers, json.dumps(step.body).encode()
    if step.kind in _ERRORS:
        status, openai_type, anthropic_type = _ERRORS[step.kind]
        status = step.status or status
        if step.retry_after is not None:
            headers["retry-after"] = step.retry_after
        if step.retry_after_ms is not None:
            headers["retry-after-ms"] = str(step.retry_after_ms)
        message = step.message or f"scripted {step.kind}"
        return status, headers, error_body(wire, anthropic_type, openai_type, message)
    build = {"chat": _chat, "responses": _responses, "messages": _messages}[wire]
    return 200, headers, json.dumps(build(step, model, n)).encode()


__all__ = [
    "Step",
    "StepKind",
    "Wire",
    "bad_request",
    "chat_stream",
    "error_body",
    "garbage",
    "hang",
    "malformed",
    "overloaded",
    "rate_limited",
    "raw",
    "refusal",
    "render",
    "reply",
    "server_error",
    "slow",
    "truncated",
    "unauthorized",
]
