"""Chromium for OSWorld's Chrome tasks: started with remote debugging, driven over the DevTools
HTTP endpoint on 127.0.0.1 (standard library only).

    devtools = DevTools(port)
    devtools.wait_ready(30)
    devtools.open_tab("file:///tmp/page.html")
    [tab.url for tab in devtools.tabs()]
    with devtools.page(tab) as page:                 # one tab's own DevTools session
        page.evaluate("document.title")

Reading or driving a page (its DOM, a PDF of it, a click) goes over the tab's WebSocket
(``Page``: ``Runtime.evaluate``, ``Page.printToPDF``, ``Input.*``), the same protocol OSWorld's
Playwright speaks over ``connect_over_cdp``.

Each task's Chromium gets its own free port and its own profile folder under the task's HOME,
so tasks running at once never see each other's browser. OSWorld's fixed port (1337) and its
``socat`` forward to 9222 exist for the VM's host; here the harness talks to the port directly.
"""

from __future__ import annotations

import base64
import contextlib
import json
import shutil
import socket
import sqlite3
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from urllib.parse import quote

import websocket

HOST = "127.0.0.1"
REQUEST_TIMEOUT = 5.0
_PORT_FLAG = "--remote-debugging-port="
_PROGRAMS = ("chromium", "chromium-browser", "google-chrome", "chrome")
#: How long one page operation (a navigation, a selector to appear) may take.
PAGE_TIMEOUT = 30.0
#: How long no request may be in flight for a page to count as idle (Playwright's networkidle).
IDLE_QUIET = 0.5
#: Page.printToPDF with Playwright's ``page.pdf()`` defaults: US Letter, no margins, no
#: header or footer, no backgrounds, untagged, no outline.
PDF_OPTIONS: dict[str, Any] = {
    "landscape": False,
    "displayHeaderFooter": False,
    "headerTemplate": "",
    "footerTemplate": "",
    "printBackground": False,
    "scale": 1,
    "paperWidth": 8.5,
    "paperHeight": 11,
    "marginTop": 0,
    "marginBottom": 0,
    "marginLeft": 0,
    "marginRight": 0,
    "pageRanges": "",
    "preferCSSPageSize": False,
    "generateTaggedPDF": False,
    "generateDocumentOutline": False,
}
_GONE = ("Execution context was destroyed", "Cannot find context", "Inspected target navigated")


class DevToolsError(RuntimeError):
    """The browser's DevTools endpoint did not answer, or answered with an error."""


@dataclass(frozen=True)
class Tab:
    id: str
    title: str
    url: str
    ws_url: str = field(default="", compare=False)  # the tab's own DevTools WebSocket

    def info(self) -> dict[str, str]:
        """OSWorld's ``open_tabs_info`` shape."""
        return {"title": self.title, "url": self.url}


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def is_chromium(argv: list[str]) -> bool:
    return bool(argv) and Path(argv[0]).name in _PROGRAMS


def chromium_argv(argv: list[str], port: int, profile: Path) -> list[str]:
    """``argv`` (a Chromium command line) debugging on ``port`` with the profile in ``profile``:
    any ``--remote-debugging-port`` / ``--user-data-dir`` of the task is replaced, first-run
    prompts are off."""
    keep = [a for a in argv[1:] if not a.startswith((_PORT_FLAG, "--user-data-dir="))]
    extra = [
        f"{_PORT_FLAG}{port}",
        f"--remote-debugging-address={HOST}",
        f"--user-data-dir={profile}",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-gpu",
        "--password-store=basic",
    ]
    return [argv[0], *extra, *[a for a in keep if a not in extra]]


class DevTools:
    """The DevTools HTTP endpoint of one browser (``/json/...`` on 127.0.0.1)."""

    def __init__(self, port: int, *, timeout: float = REQUEST_TIMEOUT) -> None:
        self.port = port
        self.timeout = timeout

    def _request(self, path: str, method: str = "GET") -> Any:
        url = f"http://{HOST}:{self.port}{path}"
        request = urllib.request.Request(url, method=method)  # noqa: S310  (fixed http URL)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as reply:  # noqa: S310
                body = reply.read().decode("utf-8", errors="replace")
        except (urllib.error.URLError, OSError) as err:
            raise DevToolsError(f"DevTools on port {self.port}: {method} {path}: {err}") from err
        try:
            return json.loads(body)
        except json.JSONDecodeError:
            return body  # /json/close answers with plain text

    def version(self) -> dict[str, Any]:
        return dict(self._request("/json/version"))

    def ready(self) -> bool:
        try:
            self.version()
        except DevToolsError:
            return False
        return True

    def wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not self.ready():
            if time.monotonic() >= deadline:
                raise DevToolsError(f"no DevTools endpoint on port {self.port} after {timeout:g} s")
            time.sleep(0.2)

    def tabs(self) -> list[Tab]:
        """The open pages (not workers or extensions), most recently active first (the
        order the browser lists them in)."""
        return [
            Tab(
                str(t.get("id", "")),
                str(t.get("title", "")),
                str(t.get("url", "")),
                str(t.get("webSocketDebuggerUrl", "")),
            )
            for t in self._request("/json/list")
            if t.get("type") == "page"
        ]

    def open_tab(self, url: str) -> Tab:
        target = self._request(f"/json/new?{quote(url, safe=':/?&=#%@+,;~')}", method="PUT")
        if not isinstance(target, dict):
            raise DevToolsError(f"DevTools did not open {url}: {target!r}")
        return Tab(
            str(target.get("id", "")),
            str(target.get("title", "")),
            url,
            str(target.get("webSocketDebuggerUrl", "")),
        )

    def active_tab(self) -> Tab | None:
        """The tab the user sees: the most recently active page."""
        tabs = self.tabs()
        return tabs[0] if tabs else None

    def activate(self, tab_id: str) -> None:
        self._request(f"/json/activate/{quote(tab_id, safe='')}")

    def close_tab(self, tab_id: str) -> None:
        self._request(f"/json/close/{quote(tab_id, safe='')}")

    def wait_closed(self, tab_ids: set[str], timeout: float) -> None:
        """Closing is asynchronous: wait until none of ``tab_ids`` is listed any more."""
        deadline = time.monotonic() + timeout
        while tab_ids & {tab.id for tab in self.tabs()}:
            if time.monotonic() >= deadline:
                raise DevToolsError(f"tabs still open after {timeout:g} s: {sorted(tab_ids)}")
            time.sleep(0.1)

    @contextmanager
    def page(self, tab: Tab, *, timeout: float = PAGE_TIMEOUT) -> Iterator[Page]:
        """A DevTools session with one tab (closed on leaving)."""
        ws_url = tab.ws_url or next((t.ws_url for t in self.tabs() if t.id == tab.id), "")
        if not ws_url:
            raise DevToolsError(
                f"tab {tab.id} has no DevTools WebSocket (another client holds it?)"
            )
        session = Page(ws_url, timeout=timeout)
        try:
            yield session
        finally:
            session.close()

    @contextmanager
    def new_page(self, url: str = "about:blank") -> Iterator[Page]:
        """A new tab for the harness's own reading (OSWorld's ``new_page()``), closed on
        leaving, with the tab that was active before made active again."""
        before = self.active_tab()
        tab = self.open_tab("about:blank")
        try:
            with self.page(tab) as page:
                if url != "about:blank":
                    page.goto(url)
                yield page
        finally:
            try:
                self.close_tab(tab.id)
                self.wait_closed({tab.id}, 10)
                if before is not None and before.id in {t.id for t in self.tabs()}:
                    self.activate(before.id)
            except DevToolsError:
                pass


class Page:
    """One tab's DevTools session over its WebSocket: commands and their answers, and the
    events the browser sends meanwhile (kept for ``wait_event``)."""

    def __init__(self, ws_url: str, *, timeout: float = PAGE_TIMEOUT) -> None:
        self.timeout = timeout
        self._next = 0
        self._events: list[dict[str, Any]] = []
        self._inflight: set[str] = set()  # requests seen starting and not yet done
        self._network = False
        try:  # no Origin header: Chromium refuses origins not given --remote-allow-origins
            self._ws = websocket.create_connection(ws_url, timeout=timeout, suppress_origin=True)
        except (OSError, websocket.WebSocketException) as err:
            raise DevToolsError(f"DevTools WebSocket {ws_url}: {err}") from err

    def close(self) -> None:
        self._ws.close()

    def _receive(self, timeout: float) -> dict[str, Any] | None:
        """The next message, or ``None`` when none came within ``timeout``."""
        self._ws.settimeout(max(timeout, 0.01))
        try:
            message = dict(json.loads(self._ws.recv()))
        except websocket.WebSocketTimeoutException:
            return None
        finally:
            self._ws.settimeout(self.timeout)
        method = message.get("method", "")
        if method.startswith("Network."):  # requests in flight, for ``wait_idle``
            request = str(message.get("params", {}).get("requestId", ""))
            if method == "Network.requestWillBeSent":
                self._inflight.add(request)
            elif method in ("Network.loadingFinished", "Network.loadingFailed"):
                self._inflight.discard(request)
            return {}  # nothing waits for these themselves
        return message

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        """Send one command and wait for its answer (``DevToolsError`` when it fails)."""
        self._next += 1
        ident = self._next
        try:
            self._ws.send(json.dumps({"id": ident, "method": method, "params": params}))
            while True:
                message = self._receive(self.timeout)
                if message is None:
                    raise DevToolsError(f"DevTools {method}: no answer in {self.timeout:g} s")
                if message.get("id") == ident:
                    break
                if "method" in message:
                    self._events = [*self._events[-999:], message]
        except (OSError, ValueError, websocket.WebSocketException) as err:
            raise DevToolsError(f"DevTools {method}: {err}") from err
        if "error" in message:
            raise DevToolsError(f"DevTools {method}: {message['error'].get('message', '')}")
        return dict(message.get("result", {}))

    def wait_event(
        self, method: str, matches: Callable[[dict[str, Any]], bool], timeout: float
    ) -> dict[str, Any]:
        """The first event ``method`` (kept since the last call, or still to come) whose
        ``params`` ``matches``; ``DevToolsError`` after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            for index, event in enumerate(self._events):
                params = dict(event.get("params", {}))
                if event.get("method") == method and matches(params):
                    del self._events[: index + 1]
                    return params
            self._events.clear()
            left = deadline - time.monotonic()
            if left <= 0:
                raise DevToolsError(f"no {method} within {timeout:g} s")
            try:
                message = self._receive(left)
            except (OSError, ValueError, websocket.WebSocketException) as err:
                raise DevToolsError(f"DevTools while waiting for {method}: {err}") from err
            if message and "method" in message:
                self._events.append(message)

    def evaluate(self, expression: str) -> Any:
        """The JSON value of a JavaScript expression in the page (promises awaited); an
        exception in the page raises ``DevToolsError``."""
        reply = self.call(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in reply:
            details = reply["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text", "")
            raise DevToolsError(f"in the page: {text}")
        return reply.get("result", {}).get("value")

    def call_function(self, function: str, *args: Any) -> Any:
        """``function`` (JavaScript source of the harness's own) applied to ``args``, which
        go in as JSON literals (task data never becomes code)."""
        literals = ", ".join(json.dumps(a) for a in args)
        return self.evaluate(f"({function})({literals})")

    def settled_value(self, function: str, *args: Any, timeout: float | None = None) -> Any:
        """``call_function``, retried while the page is between two documents."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            try:
                return self.call_function(function, *args)
            except DevToolsError as err:
                if not any(s in str(err) for s in _GONE) or time.monotonic() >= deadline:
                    raise
            time.sleep(0.1)

    @property
    def url(self) -> str:
        return str(self.settled_value("() => location.href"))

    def title(self) -> str:
        return str(self.settled_value("() => document.title"))

    def content(self) -> str:
        """The page's HTML as serialized now (Playwright's ``page.content()``)."""
        script = """() => {
            let html = '';
            if (document.doctype) html = new XMLSerializer().serializeToString(document.doctype);
            if (document.documentElement) html += document.documentElement.outerHTML;
            return html;
        }"""
        return str(self.settled_value(script))

    def wait_load(self, timeout: float | None = None) -> None:
        """Until the document has loaded (``readyState`` complete)."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while self.settled_value("() => document.readyState", timeout=timeout) != "complete":
            if time.monotonic() >= deadline:
                raise DevToolsError(
                    f"the page did not finish loading in {timeout or self.timeout:g} s"
                )
            time.sleep(0.1)

    def _lifecycle(self, name: str, loader: str, timeout: float) -> None:
        """Until the top frame's document ``loader`` reaches lifecycle event ``name`` as
        Chromium reports it (events are on: ``_lifecycle_on`` before the navigation)."""
        frame = self.call("Page.getFrameTree")["frameTree"]["frame"]["id"]

        def matches(params: dict[str, Any]) -> bool:
            return (params.get("frameId"), params.get("loaderId"), params.get("name")) == (
                frame,
                loader,
                name,
            )

        self.wait_event("Page.lifecycleEvent", matches, timeout)

    def _lifecycle_on(self) -> None:
        self.call("Page.enable")
        self.call("Page.setLifecycleEventsEnabled", enabled=False)
        self._events.clear()
        self.call("Page.setLifecycleEventsEnabled", enabled=True)

    def _watch_network(self) -> None:
        if not self._network:
            self.call("Network.enable")
            self._network = True

    def wait_idle(self, timeout: float | None = None) -> None:
        """Until the page has loaded and no request it made (of those seen since this
        session watches) was in flight for ``IDLE_QUIET`` seconds: Playwright's
        ``networkidle``, which also counts the requests it sees from when it connects."""
        limit = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + limit
        self._watch_network()
        self.wait_load(limit)
        quiet_since: float | None = None
        while True:
            now = time.monotonic()
            if self._inflight:
                quiet_since = None
            elif quiet_since is None:
                quiet_since = now
            elif now - quiet_since >= IDLE_QUIET:
                return
            if now >= deadline:
                raise DevToolsError(f"the page's network was not idle within {limit:g} s")
            try:
                message = self._receive(0.1)
            except (OSError, ValueError, websocket.WebSocketException) as err:
                raise DevToolsError(f"DevTools while waiting for the network: {err}") from err
            if message and "method" in message:
                self._events = [*self._events[-999:], message]

    def goto(self, url: str, timeout: float | None = None, *, until: str = "load") -> None:
        """Navigate and wait for the new document's ``load`` event (``until="networkidle"``:
        then for the network to be idle too), as Playwright's ``goto``; a page that cannot
        load (no such host, refused) raises ``DevToolsError``."""
        self._watch_network()
        self._lifecycle_on()
        reply = self.call("Page.navigate", url=url)
        if reply.get("errorText"):
            raise DevToolsError(f"cannot load {url}: {reply['errorText']}")
        loader = reply.get("loaderId")  # absent for a move within the same document
        if loader:
            self._lifecycle("load", str(loader), self.timeout if timeout is None else timeout)
        else:
            self.wait_load(timeout)
        if until == "networkidle":
            self.wait_idle(timeout)

    def wait_for_selector(self, selector: str, timeout: float | None = None) -> None:
        """Until an element matches the CSS ``selector`` (Playwright's ``state='attached'``)."""
        limit = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + limit
        script = "(s) => document.querySelector(s) !== null"
        while not self.settled_value(script, selector, timeout=limit):
            if time.monotonic() >= deadline:
                raise DevToolsError(f"no element matches {selector!r} after {limit:g} s")
            time.sleep(0.1)

    def click(self, selector: str, timeout: float | None = None) -> None:
        """A left click with the mouse in the middle of the first element matching
        ``selector``, scrolled into view (Playwright's ``click``)."""
        limit = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + limit
        script = """(s) => {
            const el = document.querySelector(s);
            if (!el) return null;
            el.scrollIntoView({block: 'center', inline: 'center'});
            const r = el.getBoundingClientRect();
            if (r.width <= 0 || r.height <= 0) return null;
            return [r.left + r.width / 2, r.top + r.height / 2];
        }"""
        while (point := self.settled_value(script, selector, timeout=limit)) is None:
            if time.monotonic() >= deadline:
                raise DevToolsError(f"no visible element matches {selector!r} after {limit:g} s")
            time.sleep(0.1)
        x, y = float(point[0]), float(point[1])
        self.call("Input.dispatchMouseEvent", type="mouseMoved", x=x, y=y)
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1)

    def fill(self, selector: str, text: str, timeout: float | None = None) -> None:
        """Focus the field matching ``selector``, select what it holds and type ``text`` over
        it (Playwright's ``fill``)."""
        self.wait_for_selector(selector, timeout)
        script = """(s) => {
            const el = document.querySelector(s);
            el.focus();
            if (typeof el.select === 'function') el.select();
            return true;
        }"""
        self.settled_value(script, selector, timeout=timeout)
        self.call("Input.insertText", text=text)

    def pdf(self, **options: Any) -> bytes:
        """The page printed to PDF (``PDF_OPTIONS``, overridden by ``options``)."""
        reply = self.call("Page.printToPDF", **{**PDF_OPTIONS, **options})
        return base64.b64decode(reply.get("data", ""))


# -- the profile's History ----------------------------------------------------------------------

#: Chromium's timestamps: microseconds since 1601-01-01 (UTC).
CHROME_EPOCH = datetime(1601, 1, 1, tzinfo=timezone.utc)
#: The transition OSWorld records its visits with (a link, a whole redirect chain).
VISIT_TRANSITION = 805306368
HISTORY_TIMEOUT = 60.0


def chrome_time(moment: datetime) -> int:
    return int((moment - CHROME_EPOCH) / timedelta(microseconds=1))


def empty_history(browser: Sequence[str], scratch: Path, env: Mapping[str, str]) -> Path:
    """A History database with no entries, made by ``browser`` itself (headless, on a
    throw-away profile in ``scratch``), so its tables are the ones this Chromium reads."""
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    argv = [
        *browser,
        "--headless",
        "--disable-gpu",
        f"--user-data-dir={scratch}",
        "--no-first-run",
        "--dump-dom",
        "about:blank",
    ]
    try:
        subprocess.run(  # noqa: S603  (our own argv)
            argv,
            env=dict(env),
            capture_output=True,
            timeout=HISTORY_TIMEOUT,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        raise DevToolsError(f"{browser[0]} could not make an empty History: {err}") from err
    made = scratch / "Default" / "History"
    if not made.is_file():
        raise DevToolsError(f"{browser[0]} --headless wrote no History in {scratch}")
    return made


def write_history(
    profile: Path,
    entries: Sequence[Mapping[str, Any]],
    *,
    browser: Sequence[str],
    env: Mapping[str, str],
    scratch: Path,
    now: datetime | None = None,
) -> Path:
    """OSWorld's ``update_browse_history``: the profile's History replaced by an empty one
    holding ``entries`` (``url``, ``title``, ``visit_time_from_now_in_seconds``), each one
    visit. Returns the History file (``profile/Default/History``)."""
    source = empty_history(browser, scratch, env)
    when = now or datetime.now(timezone.utc)
    with contextlib.closing(sqlite3.connect(source)) as db, db:
        for entry in entries:
            stamp = chrome_time(
                when - timedelta(seconds=float(entry["visit_time_from_now_in_seconds"]))
            )
            cursor = db.execute(
                "INSERT INTO urls (url, title, visit_count, typed_count, last_visit_time, hidden)"
                " VALUES (?, ?, 1, 0, ?, 0)",
                (str(entry["url"]), str(entry["title"]), stamp),
            )
            db.execute(
                "INSERT INTO visits (url, visit_time, from_visit, transition, segment_id,"
                " visit_duration) VALUES (?, ?, 0, ?, 0, 0)",
                (cursor.lastrowid, stamp, VISIT_TRANSITION),
            )
    target = profile / "Default" / "History"
    target.parent.mkdir(parents=True, exist_ok=True)
    for stale in (target, target.with_name("History-journal")):
        stale.unlink(missing_ok=True)
    shutil.copyfile(source, target)
    shutil.rmtree(scratch, ignore_errors=True)
    return target


__all__ = [
    "CHROME_EPOCH",
    "PDF_OPTIONS",
    "DevTools",
    "DevToolsError",
    "Page",
    "HOST",
    "Tab",
    "chrome_time",
    "chromium_argv",
    "empty_history",
    "free_port",
    "is_chromium",
    "write_history",
]
