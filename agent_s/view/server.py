"""The live view: a page on 127.0.0.1 that shows the agent's desktop as it works, its steps as
they happen, and buttons to pause, take over, hand back and stop the run.

    control = RunControl()
    with LiveView(control, screen) as view:          # screen: a backend of its own (below)
        print(view.url)                              # http://127.0.0.1:PORT/?token=...
        agent = Agent(model, control=control, on_step=view.on_step, on_plan=view.on_plan,
                      backend=backend)
        view.finished(agent.run(task))

The desktop is shown as a stream of JPEG frames the page fetches (``/frame.jpg``), captured
from ``screen``: a backend with its own connection to the desktop (never the agent's, which
is busy on the agent's thread). While the user has taken over, the page's clicks, drags,
scrolls and keys are carried out on the desktop through the same backend (``/input``); at any
other time input is refused (409), so the user and the agent never act at once. The step log
(with a planned run's plan, subtasks, checks, switches and replans: ``agent_s.view.planlog``)
and the run's state reach the page as Server-Sent Events (``/events``). The buttons only call
the ``RunControl`` (``/control``).

Why frames from the backend and not VNC: nothing beyond this package runs (no x11vnc or
websockify to start, watch and end on every exit path), it works offline, on the X11 and the
Wayland virtual desktops alike, and every request passes the servers' lock
(``agent_s.guards.servers``) here: the token (403 without it), the Host header (a page elsewhere
cannot reach the view through DNS rebinding), the Origin header (a page elsewhere that learnt the
token still cannot pause, take over, type or stop: 403) and, on every POST, a JSON body (a form
or ``text/plain`` post, which a page elsewhere can send without asking first, gets 415; the
page's own script sends ``application/json``).
"""

from __future__ import annotations

import base64
import io
import json
import socket
import threading
import time
from collections.abc import Callable, Generator
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, urlsplit

from agent_s.desktop.base import DesktopBackend
from agent_s.guards.servers import Door, loopback_address, new_token
from agent_s.loop.control import ControlEvent, RunControl
from agent_s.view.inputs import InputError, apply_input
from agent_s.view.planlog import PlanLog

HOST = "127.0.0.1"
FRAME_SECONDS = 0.2  # a frame is captured at most this often, however many pages ask
JPEG_QUALITY = 70
MAX_BODY = 64 * 1024
KEEPALIVE = 10.0  # seconds between comments on an idle event stream
LINGER = 3.0  # at most this long, on close, for open pages to receive the last events
_STATIC = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/view.js": ("view.js", "text/javascript; charset=utf-8"),
    "/view.css": ("view.css", "text/css; charset=utf-8"),
}
# why the run changed state, when a button of the page changed it (the terminal says so too)
_FROM_THE_PAGE = {
    "pause": "paused from the live view",
    "resume": "resumed from the live view",
    "take_over": "taken over from the live view",
    "hand_back": "handed back from the live view",
    "stop": "stopped from the live view",
}
_CSP = "default-src 'self'; img-src 'self' blob:; connect-src 'self'; frame-ancestors 'none'"


def _static(name: str) -> bytes:
    return resources.files("agent_s.view").joinpath("static").joinpath(name).read_bytes()


def step_event(step: Any) -> dict[str, Any]:
    """What the page shows of a step (``agent_s.record.step.Step``): its action, where it was
    grounded, how it ended, and the run's tokens and cost so far."""
    from agent_s.loop.context import describe_outcome

    points = [
        {"point": list(g.point) if g.point else None, "grounder": g.grounder}
        for g in step.grounding
    ]
    return {
        "step": step.step,
        "subtask": step.subtask,
        "action": step.action_text[:300],
        "grounding": points,
        "outcome": step.outcome,
        "detail": describe_outcome(step, 200) if step.outcome not in ("ok", "terminal") else "",
        "window": step.active_window,
        "tokens": step.usage.total_tokens,
        "cost_usd": round(step.usage.cost_usd, 6),
    }


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    view: LiveView
    server_address: tuple[str, int]


class _Server6(_Server):
    address_family = socket.AF_INET6


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.0"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        """Quiet: the terminal belongs to the run's own lines."""

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        self.server.view._serve(self, "GET")

    def do_POST(self) -> None:  # noqa: N802
        self.server.view._serve(self, "POST")


class LiveView:
    """The page's server (see the module docstring). ``screen``: the backend frames come from
    and the user's input goes to; ``port`` 0: a free one."""

    def __init__(
        self, control: RunControl, screen: DesktopBackend, *, host: str = HOST, port: int = 0
    ) -> None:
        self.control = control
        self.screen = screen
        self.token = new_token()
        self._screen_lock = threading.Lock()  # one capture or input at a time
        self._frame: tuple[float, bytes] | None = None
        self._origin, self._scale = (0, 0), 1.0  # the last frame's: image pixel -> screen point
        self._events: list[str] = []  # every event so far, as SSE text; pages replay them
        self._cond = threading.Condition()
        self._closing = False
        self._behind = 0  # open event streams that have not yet sent every event
        address = loopback_address(host, "LiveView host")
        self._server = (_Server6 if ":" in address else _Server)((address, port), _Handler)
        self._server.view = self
        self._door = Door(self.token, self.port, address)
        self._address = f"[{address}]" if ":" in address else address
        self._thread: threading.Thread | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self._plan = PlanLog(self.publish)

    # -- life ------

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://{self._address}:{self.port}/?token={self.token}"

    def start(self) -> LiveView:
        self._unsubscribe = self.control.subscribe(self._on_control)
        self.publish("state", {"state": self.control.state, "reason": self.control.reason})
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="agent-s-view", daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving. Open event streams first send what they have not yet sent (the run's
        result, published just before: ``finished``), for at most ``LINGER`` seconds, then end."""
        with self._cond:
            if self._closing:
                return
            self._closing = True
            self._cond.notify_all()
            self._cond.wait_for(lambda: self._behind == 0, LINGER)
        if self._unsubscribe is not None:
            self._unsubscribe()
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(5)
        self._server.server_close()

    def __enter__(self) -> LiveView:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- what the page hears ------

    def publish(self, kind: str, data: dict[str, Any]) -> None:
        """One event for every page, now and later (a page opened late replays them all; one
        that reconnects, only those after the last it had: the events' ids)."""
        with self._cond:
            if self._closing:
                return
            text = f"id: {len(self._events) + 1}\nevent: {kind}\ndata: {json.dumps(data)}\n\n"
            self._events.append(text)
            self._cond.notify_all()

    def on_step(self, step: Any) -> None:
        """The agent's step callback (``Agent(on_step=view.on_step)``)."""
        self.publish("step", step_event(step))

    def on_plan(self, kind: str, data: dict[str, Any]) -> None:
        """The agent's plan callback (``Agent(on_plan=view.on_plan)``): the plan, its subtasks
        as they start and end, checks, switches and replans (``agent_s.view.planlog``)."""
        self._plan.event(kind, data)

    def finished(self, result: Any) -> None:
        """The run's result (``agent_s.record.result.RunResult``): the page says how it ended, turns
        its buttons off, and shows the desktop as the run left it (a frame taken now, after
        the last action, sent with the result: the view may close right after)."""
        self._plan.finished(result.status.value)
        with self._screen_lock:
            self._frame = None  # the next capture is fresh
        try:
            last = base64.b64encode(self._capture()).decode("ascii")
        except Exception:  # noqa: BLE001 - the desktop is gone: the page keeps its last frame
            last = ""
        self.publish(
            "result",
            {
                "status": result.status.value,
                "reason": str(result.reason)[:500],
                "answer": str(result.answer or "")[:500],
                "steps": result.steps,
                "cost_usd": round(result.usage.cost_usd, 6),
                "frame": last,
            },
        )

    def _on_control(self, event: ControlEvent) -> None:
        if event.kind == "state":
            self.publish("state", {"state": event.state, "reason": event.reason})
        else:
            self.publish("acting", {"acting": event.acting})

    def _stream(self, seen: int = 0) -> Generator[str, None, None]:
        """The event stream of one page, from the event after ``seen``. Each chunk is sent
        before the next is asked for, so a stream is only done once it asks again: until then
        it counts as ``_behind`` and ``close`` waits for it (briefly)."""
        behind = False
        try:
            while True:
                with self._cond:
                    if behind:  # the chunk asked for last time has been sent
                        behind = False
                        self._behind -= 1
                        self._cond.notify_all()
                    if len(self._events) <= seen and not self._closing:
                        self._cond.wait(KEEPALIVE)
                    fresh, seen = self._events[seen:], max(seen, len(self._events))
                    if not fresh and self._closing:
                        return
                    if fresh:
                        behind = True
                        self._behind += 1
                yield "".join(fresh) if fresh else ": keepalive\n\n"
        finally:
            if behind:  # the page went away before it had the chunk
                with self._cond:
                    self._behind -= 1
                    self._cond.notify_all()

    # -- requests ------

    def _serve(self, handler: _Handler, method: str) -> None:
        parts = urlsplit(handler.path)
        given = parse_qs(parts.query).get("token", [""])[0]
        refusal = self._door.check(method, handler.headers.items(), given)
        if refusal is not None:
            if refusal.kind in ("host", "token"):
                self._reply(
                    handler, HTTPStatus.FORBIDDEN, b"forbidden: open the URL with its token"
                )
            else:
                self._reply(handler, HTTPStatus(refusal.status), refusal.reason.encode())
            return
        route = (method, parts.path)
        try:
            if method == "GET" and parts.path in _STATIC:
                self._page(handler, parts.path)
            elif route == ("GET", "/frame.jpg"):
                self._frame_reply(handler)
            elif route == ("GET", "/events"):
                self._events_stream(handler)
            elif route == ("GET", "/state"):
                self._json(handler, {"state": self.control.state, "reason": self.control.reason})
            elif route == ("POST", "/control"):
                command = str(self._body(handler).get("command", ""))
                state = self.control.command(command, _FROM_THE_PAGE.get(command, ""))
                self._json(handler, {"state": state})
            elif route == ("POST", "/input"):
                self._input(handler, self._body(handler))
            else:
                self._reply(handler, HTTPStatus.NOT_FOUND, b"not found")
        except (ValueError, InputError) as err:
            self._reply(handler, HTTPStatus.BAD_REQUEST, str(err).encode())
        except (BrokenPipeError, ConnectionResetError):
            pass  # the page went away

    def _page(self, handler: _Handler, path: str) -> None:
        name, kind = _STATIC[path]
        data = _static(name)
        if name == "index.html":  # the page's own requests carry the token
            data = data.replace(b"__TOKEN__", self.token.encode())
        self._reply(handler, HTTPStatus.OK, data, kind)

    def _capture(self) -> bytes:
        with self._screen_lock:
            now = time.monotonic()
            if self._frame is not None and now - self._frame[0] < FRAME_SECONDS:
                return self._frame[1]
            shot = self.screen.capture(None)
            self._origin, self._scale = (shot.origin.x, shot.origin.y), shot.scale or 1.0
            image = shot.image.convert("RGB")
            out = io.BytesIO()
            image.save(out, "JPEG", quality=JPEG_QUALITY)
            self._frame = (time.monotonic(), out.getvalue())
            return self._frame[1]

    def _frame_reply(self, handler: _Handler) -> None:
        try:
            frame = self._capture()
        except Exception as err:  # noqa: BLE001 - the desktop went away: the page says so
            message = f"the desktop cannot be captured: {err}"
            self._reply(handler, HTTPStatus.SERVICE_UNAVAILABLE, message.encode())
            return
        self._reply(handler, HTTPStatus.OK, frame, "image/jpeg")

    def _input(self, handler: _Handler, body: dict[str, Any]) -> None:
        if self.control.state != "taken_over":
            self._reply(handler, HTTPStatus.CONFLICT, b"take over first: the agent has the desktop")
            return
        with self._screen_lock:  # the page sends frame pixels; the desktop wants screen points
            for name, axis in (("x", 0), ("y", 1), ("to_x", 0), ("to_y", 1)):
                value = body.get(name)
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    body[name] = self._origin[axis] + round(value / self._scale)
            apply_input(self.screen, body)
            self._frame = None  # the next frame shows the effect
        self._json(handler, {"ok": True})

    def _events_stream(self, handler: _Handler) -> None:
        last = handler.headers.get("Last-Event-ID", "")  # a page reconnecting: what it had
        seen = int(last) if last.isdigit() else 0
        handler.send_response(HTTPStatus.OK)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Cache-Control", "no-store")
        handler.end_headers()
        chunks = self._stream(seen)
        try:
            for chunk in chunks:
                handler.wfile.write(chunk.encode())
                handler.wfile.flush()
        finally:
            chunks.close()

    @staticmethod
    def _body(handler: _Handler) -> dict[str, Any]:
        length = int(handler.headers.get("Content-Length") or 0)
        if not 0 < length <= MAX_BODY:
            raise ValueError("the request needs a JSON body")
        try:
            body = json.loads(handler.rfile.read(length))
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            raise ValueError(f"the body is not JSON: {err}") from None
        if not isinstance(body, dict):
            raise ValueError("the body must be a JSON object")
        return body

    def _json(self, handler: _Handler, data: dict[str, Any]) -> None:
        self._reply(handler, HTTPStatus.OK, json.dumps(data).encode(), "application/json")

    @staticmethod
    def _reply(
        handler: _Handler, status: HTTPStatus, data: bytes, kind: str = "text/plain; charset=utf-8"
    ) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", kind)
        handler.send_header("Content-Length", str(len(data)))
        handler.send_header("Cache-Control", "no-store")
        handler.send_header("Content-Security-Policy", _CSP)
        handler.send_header("X-Content-Type-Options", "nosniff")
        handler.send_header("Referrer-Policy", "no-referrer")
        handler.end_headers()
        handler.wfile.write(data)


__all__ = ["HOST", "LiveView", "step_event"]
