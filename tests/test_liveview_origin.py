"""The live view's state-changing requests come from its own page only: a page served from
another origin that knows the token (a leaked URL) tries, in headless Chromium, every request a
page can send without a CORS preflight (``text/plain`` fetches, a beacon, a form post whose
``text/plain`` body is valid JSON, URL-encoded and multipart bodies), and the run is neither
paused, taken over nor stopped; the view's own page still drives it. Single requests with
crafted headers (``urllib``) show each refusal by its status and by the run's state."""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from polling import poll, wait_until
from test_liveview import _page_state, _press, chromium, screen  # noqa: F401 - fixtures

from agent_s.bench.chrome import DevTools
from agent_s.loop.control import RunControl
from agent_s.view import LiveView

_ATTACK = """<!doctype html>
<html><body>
<iframe name="sink"></iframe>
<form id="form" method="POST" enctype="text/plain" target="sink"
      action="TARGET/control?token=TOKEN">
<input name='{"command": "stop", "x": "' value='"}'>
</form>
<script>
window.tried = [];
async function attack() {
  const control = "TARGET/control?token=TOKEN";
  const input = "TARGET/input?token=TOKEN";
  const json = (data) => JSON.stringify(data);
  const tries = [
    ["text/plain fetch", () => fetch(control, {method: "POST", mode: "no-cors",
                                               body: json({command: "pause"})})],
    ["typed text/plain", () => fetch(control, {method: "POST", mode: "no-cors",
        headers: {"Content-Type": "text/plain;charset=UTF-8"},
        body: json({command: "take_over"})})],
    ["url-encoded", () => fetch(control, {method: "POST", mode: "no-cors",
        body: new URLSearchParams({command: "stop"})})],
    ["multipart", () => { const f = new FormData(); f.append("command", "stop");
        return fetch(control, {method: "POST", mode: "no-cors", body: f}); }],
    ["input", () => fetch(input, {method: "POST", mode: "no-cors",
                                  body: json({kind: "key", keys: ["ctrl", "alt", "t"]})})],
    ["json with preflight", () => fetch(control, {method: "POST",
        headers: {"Content-Type": "application/json"}, body: json({command: "pause"})})],
  ];
  for (const [name, send] of tries) {
    try { await send(); window.tried.push(name + ": sent"); }
    catch (e) { window.tried.push(name + ": blocked"); }
  }
  window.tried.push("beacon: " + navigator.sendBeacon(control, json({command: "stop"})));
  const sink = document.querySelector("iframe");
  await new Promise((done) => { sink.onload = done; document.getElementById("form").submit(); });
  window.tried.push("form: sent");
}
window.finished = attack().then(() => true);
</script>
</body></html>
"""


@pytest.fixture
def elsewhere() -> Iterator[tuple[str, list[str]]]:
    """A web server of another origin (127.0.0.1, another port): its URL, and the page it
    serves (filled in by the test)."""
    page: list[str] = [""]

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - stdlib naming
            data = page[0].encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            """Quiet."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/", page
    finally:
        server.shutdown()
        server.server_close()


def test_a_page_elsewhere_with_the_token_cannot_drive_the_run(
    screen: Any,  # noqa: F811
    chromium: DevTools,  # noqa: F811
    elsewhere: tuple[str, list[str]],
) -> None:
    control = RunControl()
    url, page_text = elsewhere
    with LiveView(control, screen) as view:
        target = f"http://127.0.0.1:{view.port}"
        page_text[0] = _ATTACK.replace("TARGET", target).replace("TOKEN", view.token)
        with chromium.new_page(url) as attacker:
            assert attacker.evaluate("window.finished") is True
            tried = attacker.evaluate("window.tried")
        # every request a page may send without asking left the browser ...
        assert [t for t in tried if t.endswith("sent") or t == "beacon: true"] == [
            "text/plain fetch: sent",
            "typed text/plain: sent",
            "url-encoded: sent",
            "multipart: sent",
            "input: sent",
            "beacon: true",
            "form: sent",
        ], tried
        # ... and none changed the run; the one that needs a preflight never left it
        assert "json with preflight: blocked" in tried
        changed = poll(lambda: control.state != "running", 2.0)  # a beacon may arrive late
        assert not changed, control.state
        # the view's own page, same origin, still drives it
        with chromium.new_page(view.url) as page:
            wait_until(lambda: _page_state(page)["state"] == "running", 15, "the page")
            _press(page, "pause")
            wait_until(lambda: control.state == "paused", 10, "paused by the page")
            # the page enables Resume once the view told it the run is paused
            wait_until(lambda: _page_state(page)["state"] == "paused", 10, "the page paused")
            _press(page, "resume")
            wait_until(lambda: control.state == "running", 10, "resumed by the page")


def _post(
    view: LiveView, path: str, body: bytes, headers: dict[str, str], host: str | None = None
) -> tuple[int, str]:
    """One POST with exactly these headers (no type added when none is given)."""
    connection = http.client.HTTPConnection("127.0.0.1", view.port, timeout=10)
    try:
        sent = {"Host": host or f"127.0.0.1:{view.port}", **headers}
        connection.request("POST", f"{path}?token={view.token}", body, sent)
        answer = connection.getresponse()
        return answer.status, answer.read().decode()
    finally:
        connection.close()


PAUSE = json.dumps({"command": "pause"}).encode()


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"Content-Type": "application/json", "Origin": "http://evil.example"}, 403),
        ({"Content-Type": "application/json", "Origin": "null"}, 403),
        ({"Content-Type": "application/json", "Origin": "http://127.0.0.1:1"}, 403),
        ({"Content-Type": "application/json", "Origin": "https://127.0.0.1:PORT"}, 403),
        ({"Content-Type": "text/plain;charset=UTF-8", "Origin": "http://127.0.0.1:PORT"}, 415),
        ({"Content-Type": "Text/Plain"}, 415),
        ({"Content-Type": "application/x-www-form-urlencoded"}, 415),
        ({"Content-Type": "multipart/form-data; boundary=x"}, 415),
        ({}, 415),  # no type: what a page's Blob without a type sends
    ],
    ids=["foreign", "null", "other-port", "https", "text", "Text", "form", "multipart", "none"],
)
def test_a_cross_origin_or_simple_post_is_refused_and_nothing_changes(
    screen: Any,  # noqa: F811
    headers: dict[str, str],
    status: int,
) -> None:
    control = RunControl()
    with LiveView(control, screen) as view:
        given = {k: v.replace("PORT", str(view.port)) for k, v in headers.items()}
        answer, text = _post(view, "/control", PAUSE, given)
        assert answer == status, text
        assert control.state == "running"
        # the same request from the page's own origin, as JSON, is served
        own = {"Content-Type": "application/json", "Origin": f"http://127.0.0.1:{view.port}"}
        assert _post(view, "/control", PAUSE, own)[0] == 200
        assert control.state == "paused"


def test_the_custom_header_or_json_from_the_views_own_names_is_served(
    screen: Any,  # noqa: F811
) -> None:
    control = RunControl()
    with LiveView(control, screen) as view:
        port = view.port
        text = {"Content-Type": "text/plain", "X-Agent-S": "1"}
        assert _post(view, "/control", PAUSE, text)[0] == 200
        assert control.state == "paused"
        resume = json.dumps({"command": "resume"}).encode()
        local = {"Content-Type": "application/json", "Origin": f"http://localhost:{port}"}
        assert _post(view, "/control", resume, local, host=f"localhost:{port}")[0] == 200
        assert control.state == "running"
        # a Host that is not the view's is refused whatever else is right
        foreign = {"Content-Type": "application/json"}
        assert _post(view, "/control", PAUSE, foreign, host=f"evil.example:{port}")[0] == 403
        assert control.state == "running"
