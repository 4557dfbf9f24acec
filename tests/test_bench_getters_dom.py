"""OSWorld's page getters (``active_tab_html_parse``, ``page_info``, ``pdf_from_url``,
``info_from_website``, the recreation.gov walk), the ``update_browse_history`` setup step and
``vm_terminal_output``, each on a task's own virtual desktop as the harness runs it: a real
Chromium (Debian's) reading pages from an HTTP server on loopback, a real terminal typed into.
"""

from __future__ import annotations

import http.server
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from agent_s.bench.browser_getters import recreation_next_available
from agent_s.bench.check import Machine, task_needs
from agent_s.bench.chrome import CHROME_EPOCH, DevTools, chrome_time, write_history
from agent_s.bench.environment import TERMINAL_ARGV, TaskEnvironment, launch_argv
from agent_s.bench.registry import GETTERS
from agent_s.bench.scoring import evaluate
from agent_s.bench.tasks import Task

HAS_CHROMIUM = shutil.which("chromium") is not None
HAS_XVFB = shutil.which("Xvfb") is not None

FLIGHTS = """<!doctype html><html><head><title>Flights</title></head><body>
<div class="when">  Tue, Jun 05, 2026 </div>
<div class="tab tab--active">Miles</div><div class="tab">Money</div>
<div class="route">SEA<div class="aura-separator"></div>NYC</div>
<span class="loc">Boston Logan,
    BOS</span><span class="loc"> Boston Logan </span>
<div class="card"><h3> Camp A </h3></div><div class="card"><p>none</p></div>
<div class="card"><h3>Camp B</h3></div>
<span class="chip">Black</span><span class="chip">On sale</span><span class="chip">Red</span>
<div class="cats"><ul>
<li class="catAllProducts"><span>Shoes</span></li><li class="catAllProducts"><span>Hats</span></li>
</ul></div>
<form><input id="who" value="typed by the agent"><textarea id="note">a note</textarea></form>
<section><div><p>Sort by: <b>Number of Seats (High to Low)</b></p></div></section>
<div class="late"></div>
<script>
setTimeout(() => fetch('/late.json').then((r) => r.json()).then((d) => {
    document.querySelector('.late').textContent = d.text;
}), 200);
</script>
</body></html>"""

SCHOLAR = """<!doctype html><html><head><title>Scholar</title></head><body>
<div id="gsc_prf_in">Ada Lovelace</div>
<table id="gsc_rsb_st"><tbody>
<tr><td>Citations</td><td>1843</td></tr><tr><td>h-index</td><td>12</td></tr>
</tbody></table>
<table><tbody id="gsc_a_b">
<tr><td class="gsc_a_t"><a href="/paper.html">Notes on the Engine</a></td></tr>
</tbody></table>
<a id="home" href="https://example.org/ada" data-kind="homepage">home</a>
</body></html>"""

PAPER = """<!doctype html><html><head><title>Paper</title></head><body>
<div id="gsc_oci_title_gg"><div><a href="/notes.pdf">[PDF] notes.pdf</a></div></div>
</body></html>"""

ARTICLE = """<!doctype html><html><head><title>Article</title></head><body>
<h1>Analytical Engine</h1><p>The engine weaves algebraic patterns.</p></body></html>"""

REC_HOME = """<!doctype html><html><head><title>Recreation</title></head><body>
<input id="hero-search-input"><button class="nav-search-button">Search</button>
<div id="results"></div>
<script>
document.querySelector('.nav-search-button').addEventListener('click', () => {
    const q = document.querySelector('#hero-search-input').value;
    const a = document.createElement('a');
    a.className = 'search-result-highlight--success';
    a.href = '/camp.html?q=' + encodeURIComponent(q);
    a.target = '_blank';
    a.textContent = q + ' Campground';
    document.querySelector('#results').appendChild(a);
});
</script></body></html>"""

REC_CAMP = """<!doctype html><html><head><title>Camp</title></head><body>
<button class="next-available">Next Available</button><table><tr id="head"></tr></table>
<script>
document.querySelector('.next-available').addEventListener('click', () => {
    const q = new URLSearchParams(location.search).get('q');
    for (const text of ['Site', 'Loop', 'Next: ' + q + ' Jun 12']) {
        const th = document.createElement('th');
        th.className = 'camp-sortable-column-header';
        th.textContent = ' ' + text + ' ';
        document.querySelector('#head').appendChild(th);
    }
});
</script></body></html>"""


class _Site(http.server.BaseHTTPRequestHandler):
    pages: dict[str, str] = {
        "/flights.html": FLIGHTS,
        "/scholar.html": SCHOLAR,
        "/paper.html": PAPER,
        "/article.html": ARTICLE,
        "/rec.html": REC_HOME,
        "/camp.html": REC_CAMP,
    }

    def do_GET(self) -> None:  # noqa: N802  (the handler's API)
        path = self.path.split("?")[0]
        if path == "/late.json":
            time.sleep(1.0)  # the page is not idle until this arrives
            self._send("application/json", json.dumps({"text": "arrived late"}))
        elif path == "/cart/":
            cookies = self.headers.get("Cookie", "")
            items = [c.split("=", 1)[1] for c in cookies.split("; ") if c.startswith("item")]
            body = "".join(f"<li>{item}</li>" for item in items)
            self._send("text/html", f"<html><head><title>Cart</title></head><ul>{body}</ul></html>")
        elif path in self.pages:
            self._send("text/html", self.pages[path])
        else:
            self.send_error(404)

    def _send(self, kind: str, body: str) -> None:
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", f"{kind}; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def site() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Site)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _task(config: list[dict[str, Any]], evaluator: dict[str, Any], tid: str = "t") -> Task:
    return Task.from_json(
        {"id": tid, "instruction": "x", "config": config, "evaluator": evaluator},
        domain="chrome",
    )


CHROME = {
    "type": "launch",
    "parameters": {"command": ["google-chrome", "--remote-debugging-port=1337"]},
}


def _alone(request: pytest.FixtureRequest, tmp_path: Path) -> bool:
    """Run the test in a fresh process when pyautogui is bound to another desktop already
    (one task desktop per process, as the harness runs tasks). True: it ran there."""
    if "pyautogui" not in sys.modules:
        return False
    node = f"{Path(__file__).resolve()}::{request.node.name}"
    alone = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", node],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert alone.returncode == 0, alone.stdout[-4000:] + alone.stderr[-2000:]
    assert "1 passed" in alone.stdout
    return True


def _own_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("DISPLAY", "XAUTHORITY", "DBUS_SESSION_BUS_ADDRESS", "AT_SPI_BUS_ADDRESS"):
        monkeypatch.delenv(key, raising=False)  # restored after the test; the task sets them


def _until(read: Callable[[], Any], ok: Callable[[Any], bool], timeout: float = 20) -> Any:
    deadline = time.monotonic() + timeout
    value = read()
    while not ok(value) and time.monotonic() < deadline:
        time.sleep(0.3)
        value = read()
    return value


# -- no desktop -----------------------------------------------------------------------------------


def test_check_counts_the_new_getters_and_google_drive_as_a_google_need() -> None:
    machine = Machine(which=lambda _: "/usr/bin/x")
    drive = _task(
        [],
        {
            "func": "compare_table",
            "result": {"type": "googledrive_file", "path": ["a.xlsx"], "dest": "a.xlsx"},
            "expected": {"type": "vm_file", "path": "/home/user/a.xlsx", "dest": "b.xlsx"},
        },
    )
    needs = task_needs(drive, machine)
    assert [(n.category, n.met) for n in needs if n.category in ("getter", "google")] == [
        ("getter", True),
        ("google", False),
    ]
    terminal = _task(
        [],
        {
            "func": "check_include_exclude",
            "result": {"type": "vm_terminal_output"},
            "expected": {"type": "rule", "rules": {"include": ["54"], "exclude": []}},
        },
    )
    needs = task_needs(terminal, Machine(which=lambda name: None if name == "lxterminal" else "/x"))
    assert [n.category for n in needs if not n.met] == ["app"]  # the terminal, never GNOME
    assert [n.detail for n in needs if not n.met] == [TERMINAL_ARGV[0]]
    for name in (
        "active_tab_html_parse",
        "page_info",
        "pdf_from_url",
        "info_from_website",
        "gotoRecreationPage_and_get_html_content",
        "vm_terminal_output",
    ):
        assert name in GETTERS
    assert "googledrive_file" not in GETTERS  # it needs Google's API and a real account


def test_chrome_time_counts_microseconds_from_1601() -> None:
    assert chrome_time(CHROME_EPOCH) == 0
    assert chrome_time(datetime(1970, 1, 1, tzinfo=timezone.utc)) == 11644473600 * 1_000_000


@pytest.mark.skipif(not HAS_CHROMIUM, reason="chromium is not installed")
def test_write_history_fills_a_history_chromium_made_and_keeps(tmp_path: Path) -> None:
    browser = launch_argv(["google-chrome"])
    profile = tmp_path / "profile"
    (profile / "Default").mkdir(parents=True)
    (profile / "Default" / "History").write_bytes(b"an old history, replaced")
    now = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)
    entries = [
        {
            "url": "https://www.youtube.com/watch?v=a",
            "title": "A",
            "visit_time_from_now_in_seconds": 60,
        },
        {"url": "https://www.bbc.co.uk/", "title": "BBC", "visit_time_from_now_in_seconds": 3600},
    ]
    target = write_history(
        profile, entries, browser=browser, env=os.environ, scratch=tmp_path / "s", now=now
    )
    assert target == profile / "Default" / "History"
    assert not (tmp_path / "s").exists()
    with sqlite3.connect(target) as db:
        rows = db.execute("SELECT url, title, last_visit_time FROM urls ORDER BY id").fetchall()
        visits = db.execute("SELECT url, visit_time, transition FROM visits ORDER BY id").fetchall()
        version = db.execute("SELECT value FROM meta WHERE key = 'version'").fetchone()
    stamp = chrome_time(now - timedelta(seconds=60))
    assert rows == [
        ("https://www.youtube.com/watch?v=a", "A", stamp),
        ("https://www.bbc.co.uk/", "BBC", chrome_time(now - timedelta(hours=1))),
    ]
    assert visits[0] == (1, stamp, 805306368)
    assert int(version[0]) > 40  # Chromium's own schema, not a hand-made one
    # Chromium opens the profile and keeps the entries (a History it did not accept it razes)
    subprocess.run(
        [*browser, "--headless", f"--user-data-dir={profile}", "--dump-dom", "about:blank"],
        capture_output=True,
        timeout=60,
        check=False,
    )
    with sqlite3.connect(target) as db:
        kept = [r[0] for r in db.execute("SELECT url FROM urls ORDER BY id")]
    assert kept == ["https://www.youtube.com/watch?v=a", "https://www.bbc.co.uk/"]


def test_page_getters_without_a_browser(tmp_path: Path) -> None:
    from agent_s.bench.getters import GetterContext

    ctx = GetterContext(home=tmp_path, env={}, cache_dir=tmp_path)
    config = {"type": "active_tab_html_parse", "category": "class", "class_singleObject": {}}
    assert GETTERS["active_tab_html_parse"](ctx, config) is None


# -- on a task's desktop ---------------------------------------------------------------------------


@pytest.mark.desktop
@pytest.mark.skipif(not HAS_XVFB, reason="Xvfb is not installed")
@pytest.mark.skipif(not HAS_CHROMIUM, reason="chromium is not installed")
def test_page_getters_read_the_task_browser(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest, site: str
) -> None:
    if _alone(request, tmp_path):
        return
    _own_environment(monkeypatch)
    history = [
        {
            "url": "https://www.youtube.com/watch?v=x",
            "title": "X",
            "visit_time_from_now_in_seconds": 90,
        },
        {"url": "https://www.cnn.com/", "title": "CNN", "visit_time_from_now_in_seconds": 30},
    ]
    config = [
        {"type": "update_browse_history", "parameters": {"history": history}},
        CHROME,
        {"type": "chrome_open_tabs", "parameters": {"urls_to_open": [f"{site}/flights.html"]}},
    ]
    task = _task(config, {"func": "infeasible"}, "dom")
    env = TaskEnvironment(task, tmp_path / "task").start()
    try:
        ctx = env.context
        assert ctx is not None
        assert env.chrome_port is not None
        devtools = DevTools(env.chrome_port)
        flights = f"{site}/flights.html"
        tab = _until(devtools.active_tab, lambda t: t is not None and t.url == flights)
        assert tab.url == flights

        # the History written before Chromium started is the one it runs with
        rows = GETTERS["history"](ctx, {"type": "history", "dest": "history.sqlite"})
        assert {r[0] for r in rows} >= {"https://www.youtube.com/watch?v=x", "https://www.cnn.com/"}

        parse = GETTERS["active_tab_html_parse"]
        by_class = parse(
            ctx,
            {
                "type": "active_tab_html_parse",
                "goto_prefix": "https://www.",
                "category": "class",
                "class_singleObject": {"when": "time", "tab--active": "category"},
                "class_multiObject": {"loc": {"0": "start", "1": "end", "5": "missing"}},
                "class_multiObject_child": {"route": {"0": "from", "1": "to"}},
                "class_multiObject_only_child": {"card": {"0": "first", "1": "second"}},
                "class_multiObject_search_exist": {
                    "chip": ["Black", "On sale", "Blue", "is_other_exist"]
                },
            },
        )
        assert by_class == {
            "time": "Tue, Jun 05, 2026",
            "category": "Miles",
            "start": "Boston Logan,\n    BOS",
            "end": "Boston Logan",
            "missing": "",
            "from": "SEA",
            "to": "NYC",
            "first": "Camp A",
            "second": "Camp B",
            "Black": True,
            "On sale": True,
            "Blue": False,
            "is_other_exist": True,  # "Red" is shown too
        }
        by_xpath = parse(
            ctx,
            {
                "type": "active_tab_html_parse",
                "category": "xpath",
                "xpathObject": {
                    "/html/body/section/div/p/b": "rank",
                    "/html/body/section/div/p/i": "absent",
                },
            },
        )
        assert by_xpath == {"rank": "Number of Seats (High to Low)", "absent": ""}
        fields = parse(
            ctx,
            {
                "type": "active_tab_html_parse",
                "category": "input",
                "inputObject": {
                    "//*[@id='who']": "who",
                    "//*[@id='note']": "note",
                    "/html/body/section": "not_a_field",
                },
            },
        )
        assert fields == {"who": "typed by the agent", "note": "a note", "not_a_field": ""}
        label = parse(
            ctx,
            {
                "type": "active_tab_html_parse",
                "category": "label",
                "labelObject": {"number of seats": "sort"},
            },
        )
        assert label == {"sort": "Number of Seats (High to Low)"}
        with devtools.page(tab) as page:  # the agent goes on to another page of the shop
            page.goto(f"{flights}?sort=seats&color=black")
        choices = parse(
            ctx,
            {
                "type": "active_tab_html_parse",
                "category": "class&url",
                "class_multiObject": {"chip": ["black", "on sale", "red"]},
                "class_multiObject_li": {"cats": ["Shoes", "Hats"]},
                "url_include_expected": ["sort=seats", "size=9"],
                "url_include_expected_multichoice": {"color=black": "Black"},
            },
        )
        assert choices == {
            "black": True,
            "on sale": True,
            "red": True,
            "shoes": True,
            "hats": True,
            "is_other_exist": False,
            "sort=seats": True,
            "size=9": False,
        }

        # page_info: a new tab of the same browser, so the cart shows what the session holds
        with devtools.page(tab) as page:
            page.evaluate("document.cookie = 'item1=The Soundtrack; path=/'")
        info = GETTERS["page_info"](ctx, {"type": "page_info", "url": f"{site}/cart/"})
        assert info["title"] == "Cart"
        assert info["url"] == f"{site}/cart/"
        assert "<li>The Soundtrack</li>" in info["content"]
        assert devtools.active_tab().id == tab.id  # the reading tab is gone again
        # loaded until the network is idle: what the page fetched after loading is in
        late = GETTERS["page_info"](ctx, {"type": "page_info", "url": flights})
        assert '<div class="late">arrived late</div>' in late["content"]
        assert late["title"] == "Flights"
        failed = GETTERS["page_info"](ctx, {"type": "page_info", "url": "http://127.0.0.1:9/"})
        assert failed == {"title": "Connection failed", "url": "http://127.0.0.1:9/", "content": ""}

        # pdf_from_url: Playwright's page.pdf() -- US Letter, no margins
        from pypdf import PdfReader

        path = GETTERS["pdf_from_url"](
            ctx, {"type": "pdf_from_url", "path": f"{site}/article.html", "dest": "gold.pdf"}
        )
        assert path == str(ctx.cache_dir / "gold.pdf")
        reader = PdfReader(path)
        text = reader.pages[0].extract_text()
        assert "Analytical Engine" in text
        assert "algebraic patterns" in text
        box = reader.pages[0].mediabox
        assert (round(float(box.width)), round(float(box.height))) == (612, 792)

        # info_from_website: texts, an attribute, and a link followed to another page
        infos = [
            {"action": "inner_text", "selector": "#gsc_prf_in"},
            {
                "action": "inner_text",
                "selector": "#gsc_rsb_st > tbody > tr:nth-child(1) > td:nth-child(2)",
            },
            {"action": "attribute", "selector": "#home", "attribute": "data-kind"},
            {
                "action": "click_and_attribute",
                "selector": [
                    "#gsc_a_b > tr:nth-child(1) > td.gsc_a_t > a",
                    "#gsc_oci_title_gg > div:nth-child(1) > a",
                ],
                "attribute": "href",
            },
            {
                "action": "inner_text",
                "selector": "#gsc_rsb_st > tbody > tr:nth-child(2) > td:nth-child(2)",
            },
        ]
        spec = {
            "type": "info_from_website",
            "url": f"{site}/scholar.html",
            "infos": infos,
            "backups": ["b"],
        }
        assert GETTERS["info_from_website"](ctx, spec) == [
            "Ada Lovelace",
            "1843",
            "homepage",
            "/notes.pdf",
            "12",  # read after going back to the page
        ]
        broken = {**spec, "infos": [{"action": "inner_text", "selector": "#nowhere"}]}
        assert GETTERS["info_from_website"](ctx, broken) == ["b"]

        # the recreation.gov walk, on a local copy of its steps
        walked = recreation_next_available(
            devtools,
            f"{site}/rec.html",
            {"selector": "class", "class": "camp-sortable-column-header", "order": "2"},
        )
        assert walked == {"expected": {"camp-sortable-column-header": "Next: Albion Basin Jun 12"}}
        assert not [t for t in devtools.tabs() if "/camp.html" in t.url or "/rec.html" in t.url]
    finally:
        env.stop()


@pytest.mark.desktop
@pytest.mark.skipif(not HAS_XVFB, reason="Xvfb is not installed")
@pytest.mark.skipif(shutil.which(TERMINAL_ARGV[0]) is None, reason="the task terminal is missing")
def test_terminal_output_is_what_the_terminal_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    if _alone(request, tmp_path):
        return
    _own_environment(monkeypatch)
    snippet = "import pyautogui; import time; pyautogui.hotkey('ctrl', 'alt', 't'); time.sleep(0.5)"
    config = [{"type": "execute", "parameters": {"command": ["python", "-c", snippet]}}]
    evaluator = {
        "func": "check_include_exclude",
        "result": {"type": "vm_terminal_output"},
        "expected": {"type": "rule", "rules": {"include": ["typed-42"], "exclude": ["typed-41"]}},
    }
    task = _task(config, evaluator, "term")
    env = TaskEnvironment(task, tmp_path / "task").start()
    try:
        ctx = env.context
        assert ctx is not None
        read = lambda: GETTERS["vm_terminal_output"](ctx, {"type": "vm_terminal_output"})  # noqa: E731
        prompt = _until(read, lambda text: bool(text))
        assert prompt
        assert "typed" not in prompt
        assert evaluate(task, "DONE", ctx, env.run_steps).value == 0.0
        for argv in (
            ["xdotool", "type", "--delay", "40", "echo typed-$((6*7))"],
            ["xdotool", "key", "Return"],
        ):
            subprocess.run(argv, env=env.context.env, check=True, timeout=30)
        text = _until(read, lambda t: bool(t) and "\ntyped-42" in t)
        assert "echo typed-$((6*7))\ntyped-42" in text
        assert text == text.rstrip()
        assert evaluate(task, "DONE", ctx, env.run_steps).value == 1.0
        # another window in front: no terminal has the focus, so nothing is read (OSWorld's None)
        env.desktop.launch(["xterm", "-title", "not a VTE terminal"], cwd=env.home)
        assert _until(read, lambda t: t is None) is None
    finally:
        env.stop()
