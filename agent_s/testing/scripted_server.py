"""A strict scripted model server on 127.0.0.1, spoken to with the real vendor SDKs.

    with ScriptedModelServer([reply("ok"), rate_limited(2)]) as server:
        client = openai.OpenAI(base_url=server.openai_base_url, api_key="k")
        ...
        assert server.requests[0].body["model"] == "gpt-4o"

It serves ``POST .../chat/completions`` (OpenAI Chat Completions), ``POST .../responses``
(OpenAI Responses) and ``POST .../messages`` (Anthropic Messages), answering each request with
the next step of its script (see ``scripted_replies``), or with ``script(request)`` when the
script is a function. Every request is recorded (path, query, headers, parsed JSON).

It is strict: a request beyond the script, to an unknown path, with a body that is not JSON, or
asking the Responses or Messages API to stream is answered with an error status *and* recorded
as an error; ``verify()`` (called on leaving the ``with`` block) raises AssertionError for
those errors and for any scripted step never requested. A Chat Completions request asking to
stream (only ``agent-s model check`` does, to time the first token) gets its reply as
server-sent events.
"""

from __future__ import annotations

import base64
import binascii
import json
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from agent_s.testing.scripted_replies import Step, Wire, chat_stream, error_body, render

ScriptFunction = Callable[["RecordedRequest"], "Step | str | Mapping[str, Any]"]
Script = Sequence["Step | str | Mapping[str, Any]"] | ScriptFunction
_SECRET_HEADERS = ("authorization", "x-api-key", "api-key")
_WIRES: tuple[tuple[str, Wire], ...] = (
    ("/chat/completions", "chat"),
    ("/responses", "responses"),
    ("/messages", "messages"),
)


def _walk(value: Any) -> Iterator[Mapping[str, Any]]:
    if isinstance(value, Mapping):
        yield value
        for item in value.values():
            yield from _walk(item)
    elif isinstance(value, list):
        for item in value:
            yield from _walk(item)


def _data_url(url: str) -> tuple[str, bytes] | None:
    head, sep, payload = url.partition(",")
    if not (sep and head.startswith("data:") and head.endswith(";base64")):
        return None
    return head[5:-7], base64.b64decode(payload, validate=True)


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it. Keys are masked in the repr."""

    index: int  # 1-based, in arrival order
    method: str
    path: str
    wire: Wire | None
    headers: Mapping[str, str]  # lower-case names
    body: Any  # the parsed JSON, or None
    raw: bytes = field(repr=False)
    query: str = ""  # the URL's query string (Azure's ``api-version=...``), without the "?"

    def __repr__(self) -> str:
        shown = {k: ("***" if k in _SECRET_HEADERS else v) for k, v in self.headers.items()}
        where = f"#{self.index} {self.method} {self.path}"
        return f"RecordedRequest({where}, model={self.model!r}, headers={shown})"

    @property
    def model(self) -> str | None:
        return self.body.get("model") if isinstance(self.body, dict) else None

    def read(self) -> str:
        """The body's text as the model reads it: every string value, JSON escapes undone,
        one per line, in order (images' data URLs included as they are)."""
        found: list[str] = []
        for node in _walk(self.body):
            found += [v for v in node.values() if isinstance(v, str)]
            for items in node.values():
                if isinstance(items, list):
                    found += [v for v in items if isinstance(v, str)]
        return "\n".join(found)

    def images(self) -> list[tuple[str, bytes]]:
        """Every base64 image in the body as (media type, bytes), in order, in any wire format."""
        found: list[tuple[str, bytes]] = []
        try:
            for node in _walk(self.body):
                if node.get("type") == "image_url" and isinstance(node.get("image_url"), Mapping):
                    image = _data_url(str(node["image_url"].get("url", "")))
                elif node.get("type") == "input_image":
                    image = _data_url(str(node.get("image_url", "")))
                elif node.get("type") == "base64" and "media_type" in node:
                    image = (str(node["media_type"]), base64.b64decode(node["data"], validate=True))
                else:
                    continue
                if image is None:
                    raise AssertionError(f"request #{self.index}: an image that is not base64")
                found.append(image)
        except (binascii.Error, ValueError) as err:
            raise AssertionError(f"request #{self.index}: an image is not valid base64") from err
        return found


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    owner: ScriptedModelServer
    server_address: tuple[str, int]  # bound to an IPv4 host: getsockname() gives (str, int)


class _Handler(BaseHTTPRequestHandler):
    server: _HTTPServer
    protocol_version = "HTTP/1.0"  # one request per connection: simple and leak-free

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        """Quiet: requests are recorded, not logged."""

    def do_POST(self) -> None:  # noqa: N802 - stdlib naming
        self.server.owner._handle(self)

    def do_GET(self) -> None:  # noqa: N802
        self.server.owner._handle(self)

    def send(self, status: int, headers: Mapping[str, str], body: bytes) -> None:
        try:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a "slow" step past its timeout): expected


class ScriptedModelServer:
    """See the module docstring. ``port=0`` picks a free port; read it from ``base_url``."""

    def __init__(self, script: Script, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self._function: ScriptFunction | None = script if callable(script) else None
        steps = () if callable(script) else script
        self._steps = [s if isinstance(s, Step) else Step.from_json(s) for s in steps]
        self._host, self._port = host, port
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._errors: list[str] = []
        self._used = 0
        self._stop = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> ScriptedModelServer:
        if self._httpd is not None:
            raise RuntimeError("the scripted server is already running")
        httpd = _HTTPServer((self._host, self._port), _Handler)
        httpd.owner = self
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.01},
            daemon=True,
            name=f"scripted-model-server:{httpd.server_address[1]}",
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving; cuts short any "slow" step still waiting. Safe to call twice."""
        self._stop.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> ScriptedModelServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
        if exc_type is None:  # don't hide the test's own failure behind ours
            self.verify()

    # -- what tests read ---------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT``: the Anthropic SDK's base_url."""
        if self._httpd is None:
            raise RuntimeError("the scripted server is not started")
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def openai_base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``: the OpenAI SDK's base_url."""
        return self.base_url + "/v1"

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def errors(self) -> list[str]:
        with self._lock:
            return list(self._errors)

    @property
    def unused(self) -> list[Step]:
        with self._lock:
            return self._steps[self._used :]

    def verify(self) -> None:
        """AssertionError if any request broke the script or any scripted step went unused."""
        problems = self.errors
        unused = self.unused
        if unused:
            listed = ", ".join(s.describe() for s in unused)
            problems.append(f"{len(unused)} scripted step(s) never requested: {listed}")
        if problems:
            raise AssertionError("scripted model server: " + "; ".join(problems))

    # -- serving -----------------------------------------------------------------------------

    def _fail(self, handler: _Handler, wire: Wire | None, status: int, message: str) -> None:
        with self._lock:
            self._errors.append(message)
        body = error_body(wire, "invalid_request_error", "scripted_server_error", message)
        handler.send(status, {"content-type": "application/json"}, body)

    def _record(self, handler: _Handler) -> RecordedRequest:
        length = int(handler.headers.get("content-length") or 0)
        raw = handler.rfile.read(length) if length else b""
        path, _, query = handler.path.partition("?")
        wire = next((w for suffix, w in _WIRES if path.endswith(suffix)), None)
        try:
            body = json.loads(raw) if raw else None
        except (json.JSONDecodeError, UnicodeDecodeError):
            body = None
        headers = {k.lower(): v for k, v in handler.headers.items()}
        with self._lock:
            request = RecordedRequest(
                len(self._requests) + 1, handler.command, path, wire, headers, body, raw, query
            )
            self._requests.append(request)
        return request

    def _next_step(self, request: RecordedRequest) -> Step | str:
        """The step for this request, or an error message when the script does not allow it."""
        if self._function is not None:
            try:
                answer = self._function(request)
                return answer if isinstance(answer, Step) else Step.from_json(answer)
            except Exception as err:  # noqa: BLE001 - reported through verify()
                return f"the script function failed on request #{request.index}: {err!r}"
        with self._lock:
            if self._used >= len(self._steps):
                return (
                    f"unexpected request #{request.index} ({request.method} {request.path}, "
                    f"model {request.model!r}): the script has only {len(self._steps)} step(s)"
                )
            step = self._steps[self._used]
            self._used += 1
            return step

    def _handle(self, handler: _Handler) -> None:
        request = self._record(handler)
        where = f"request #{request.index} ({request.method} {request.path})"
        if len(request.raw) < int(handler.headers.get("content-length") or 0):
            return  # the client went away in the middle of sending (killed): nobody to answer
        if request.method != "POST" or request.wire is None:
            self._fail(handler, request.wire, 404, f"{where}: no such endpoint")
            return
        if not isinstance(request.body, dict):
            self._fail(handler, request.wire, 400, f"{where}: the body is not a JSON object")
            return
        streamed = bool(request.body.get("stream"))
        if streamed and request.wire != "chat":
            message = f"{where}: streaming was requested; only Chat Completions streams here"
            self._fail(handler, request.wire, 400, message)
            return
        step = self._next_step(request)
        if isinstance(step, str):
            self._fail(handler, request.wire, 500, step)
            return
        if step.kind == "slow":
            if self._stop.wait(step.delay_s):
                return  # shutting down: drop the connection
            step = step.then or Step(text="late")
        model = str(request.body.get("model") or "scripted-model")
        if streamed and step.kind in ("reply", "truncated", "refusal"):
            body = chat_stream(step, model, request.index)
            handler.send(200, {"content-type": "text/event-stream"}, body)
            return
        handler.send(*render(step, request.wire, model, request.index))


__all__ = ["RecordedRequest", "Script", "ScriptedModelServer"]
