"""OSWorld's Chrome setup steps with a real Chromium on a task's own virtual desktop.

The task is OSWorld-shaped (``google-chrome --remote-debugging-port=1337``, the ``socat``
forward, ``chrome_open_tabs``), on local file pages; tabs are read back over DevTools by the
``open_tabs_info`` getter and scored with ``is_expected_tabs``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent_s.bench.check import classify
from agent_s.bench.chrome import DevTools, chromium_argv, free_port, is_chromium
from agent_s.bench.environment import TaskEnvironment
from agent_s.bench.metrics.apps import is_expected_active_tab
from agent_s.bench.registry import GETTERS
from agent_s.bench.scoring import evaluate
from agent_s.bench.tasks import Task


def _page(name: str) -> str:
    return f"file:///home/user/{name}.html"


def _task(expected: list[str]) -> Task:
    return Task.from_json(
        {
            "id": "chrome-local-tabs",
            "instruction": "Keep the two pages open.",
            "related_apps": ["chrome"],
            "config": [
                {
                    "type": "launch",
                    "parameters": {"command": ["google-chrome", "--remote-debugging-port=1337"]},
                },
                {
                    "type": "launch",
                    "parameters": {
                        "command": ["socat", "tcp-listen:9222,fork", "tcp:localhost:1337"]
                    },
                },
                {
                    "type": "chrome_open_tabs",
                    "parameters": {"urls_to_open": [_page("alpha"), _page("beta"), _page("gamma")]},
                },
                {"type": "chrome_close_tabs", "parameters": {"urls_to_close": [_page("gamma")]}},
            ],
            "evaluator": {
                "func": "is_expected_tabs",
                "result": {"type": "open_tabs_info"},
                "expected": {"type": "rule", "rules": {"type": "url", "urls": expected}},
            },
        },
        domain="chrome",
    )


def test_chromium_argv_takes_its_own_port_and_profile(tmp_path: Path) -> None:
    task_argv = [
        "chromium",
        "--no-sandbox",
        "--remote-debugging-port=1337",
        "--user-data-dir=/home/user/x",
        "https://a.com",
    ]
    argv = chromium_argv(task_argv, 4242, tmp_path)
    assert argv[0] == "chromium"
    assert "--remote-debugging-port=4242" in argv
    assert "--remote-debugging-port=1337" not in argv
    assert f"--user-data-dir={tmp_path}" in argv
    assert not any(a == "--user-data-dir=/home/user/x" for a in argv)
    assert argv[-1] == "https://a.com"
    assert "--no-sandbox" in argv
    assert is_chromium(["/usr/bin/chromium"])
    assert not is_chromium(["xterm"])
    assert 0 < free_port() < 65536


def test_check_treats_chrome_steps_as_setup_and_web_pages_as_web() -> None:
    local = _task([_page("alpha")])
    assert [r for r in classify(local, which=lambda _: "/usr/bin/x")] == []
    web = Task.from_json(
        {
            "id": "w",
            "instruction": "x",
            "config": [
                {
                    "type": "chrome_open_tabs",
                    "parameters": {"urls_to_open": ["https://www.delta.com/"]},
                }
            ],
            "evaluator": {
                "func": "is_expected_tabs",
                "result": {"type": "open_tabs_info"},
                "expected": {"type": "rule", "rules": {"type": "url", "urls": []}},
            },
        }
    )
    reasons = classify(web, which=lambda _: "/usr/bin/x")
    assert [r.category for r in reasons] == ["internet"]
    assert "open_tabs_info" in GETTERS


@pytest.mark.desktop
@pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is not installed")
@pytest.mark.skipif(shutil.which("chromium") is None, reason="chromium is not installed")
def test_chrome_steps_open_and_close_tabs_over_devtools(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    if "pyautogui" in sys.modules:
        # pyautogui binds one display per process and an earlier test bound it to the session
        # desktop: run this test alone in a fresh process, as the harness runs each task.
        node = f"{Path(__file__).resolve()}::{request.node.name}"
        alone = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", node],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert alone.returncode == 0, alone.stdout[-4000:] + alone.stderr[-2000:]
        assert "1 passed" in alone.stdout
        return
    for key in ("DISPLAY", "XAUTHORITY", "DBUS_SESSION_BUS_ADDRESS"):
        monkeypatch.delenv(key, raising=False)  # restored after the test; the task sets them
        if key in os.environ:
            monkeypatch.setenv(key, os.environ[key])
    task = _task([_page("alpha"), _page("beta")])
    env = TaskEnvironment(task, tmp_path / "task").start(run_config=False)
    try:
        for name in ("alpha", "beta", "gamma"):
            (env.home / f"{name}.html").write_text(
                f"<html><head><title>{name}</title></head><body>{name}</body></html>",
                encoding="utf-8",
            )
        env.run_steps(task.config)
        assert env.chrome_port is not None
        assert env.chrome_port != 1337  # a port of its own, never OSWorld's fixed one
        ctx = env.context
        assert ctx is not None
        tabs = GETTERS["open_tabs_info"](ctx, {"type": "open_tabs_info"})
        assert tabs is not None
        urls = [tab["url"] for tab in tabs]
        home_url = env.home.as_uri()
        assert f"{home_url}/alpha.html" in urls
        assert f"{home_url}/beta.html" in urls
        assert f"{home_url}/gamma.html" not in urls  # closed by chrome_close_tabs
        # the active tab: the most recently activated page
        devtools = DevTools(env.chrome_port)
        for name in ("alpha", "beta"):
            tab = next(t for t in devtools.tabs() if t.url == f"{home_url}/{name}.html")
            devtools.activate(tab.id)
            deadline = time.monotonic() + 5
            while devtools.tabs()[0].id != tab.id and time.monotonic() < deadline:
                time.sleep(0.1)
            # the title arrives when the page has loaded; until then chromium shows the file name
            active = GETTERS["active_tab_info"](ctx, {"goto_prefix": "https://"})
            while active and active["title"] != name and time.monotonic() < deadline + 5:
                time.sleep(0.1)
                active = GETTERS["active_tab_info"](ctx, {"goto_prefix": "https://"})
            assert active == {"title": name, "url": f"{home_url}/{name}.html"}
            url = GETTERS["active_url_from_accessTree"](ctx, {"goto_prefix": "https://www."})
            rule = {"type": "url", "url": f"{home_url}/{name}.html"}
            assert is_expected_active_tab(url, rule) == 1.0
            assert is_expected_active_tab(url, {"type": "url", "url": "https://x.org"}) == 0.0
        expected_here = _task([f"{home_url}/alpha.html", f"{home_url}/beta.html"])
        score = evaluate(expected_here, "DONE", ctx, env.run_steps)
        # chromium's own start page is one more tab, so "exactly these two" fails...
        assert score.value == (1.0 if len(urls) == 2 else 0.0)
        others = {tab.id for tab in devtools.tabs() if not tab.url.startswith("file:")}
        for tab_id in others:
            devtools.close_tab(tab_id)
        devtools.wait_closed(others, 10)
        # ...and holds once only the two pages are left
        assert evaluate(expected_here, "DONE", ctx, env.run_steps).value == 1.0
        assert evaluate(expected_here, "FAIL", ctx, env.run_steps).value == 0.0
        # OSWorld's "pkill chrome" ends this desktop's browser only
        env.run_steps(
            Task.from_json(
                {
                    "id": "k",
                    "instruction": "k",
                    "config": [{"type": "launch", "parameters": {"command": ["pkill", "chrome"]}}],
                    "evaluator": {"func": "infeasible"},
                }
            ).config
        )
        deadline = time.monotonic() + 10
        while DevTools(env.chrome_port).ready() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not DevTools(env.chrome_port).ready()
        assert GETTERS["open_tabs_info"](ctx, {}) is None
    finally:
        env.stop()
