"""Chromium for OSWorld's Chrome tasks: started with remote debugging, driven over the DevTools
HTTP endpoint on 127.0.0.1 (standard library only).

    devtools = DevTools(port)
    devtools.wait_ready(30)
    devtools.open_tab("file:///tmp/page.html")
    [tab.url for tab in devtools.tabs()]

Each task's Chromium gets its own free port and its own profile folder under the task's HOME,
so tasks running at once never see each other's browser. OSWorld's fixed port (1337) and its
``socat`` forward to 9222 exist for the VM's host; here the harness talks to the port directly.
"""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

HOST = "127.0.0.1"
REQUEST_TIMEOUT = 5.0
_PORT_FLAG = "--remote-debugging-port="
_PROGRAMS = ("chromium", "chromium-browser", "google-chrome", "chrome")


class DevToolsError(RuntimeError):
    """The browser's DevTools endpoint did not answer, or answered with an error."""


@dataclass(frozen=True)
class Tab:
    id: str
    title: str
    url: str

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
            Tab(str(t.get("id", "")), str(t.get("title", "")), str(t.get("url", "")))
            for t in self._request("/json/list")
            if t.get("type") == "page"
        ]

    def open_tab(self, url: str) -> Tab:
        target = self._request(f"/json/new?{quote(url, safe=':/?&=#%@+,;~')}", method="PUT")
        if not isinstance(target, dict):
            raise DevToolsError(f"DevTools did not open {url}: {target!r}")
        return Tab(str(target.get("id", "")), str(target.get("title", "")), url)

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


__all__ = [
    "DevTools",
    "DevToolsError",
    "HOST",
    "Tab",
    "chromium_argv",
    "free_port",
    "is_chromium",
]
