"""The live view and the run's controls, for real: the page in headless Chromium (driven over
the DevTools protocol, its buttons clicked and its canvas clicked with real input events), the
agent on the test desktop with real apps, the model scripted and strict (a request while the
run is paused or taken over fails the test). On the user's own desktop, a pointer moved by
someone else (xdotool, from the test) pauses the run before its next action."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from io import StringIO
from pathlib import Path
from typing import Any

import psutil
import pytest
from clean_env import clean_env
from polling import wait_until
from scripted_cli import model_options

from agent_s import Agent, AgentConfig, GroundingConfig, ModelConfig, RunStatus, load_trajectory
from agent_s.bench.chrome import DevTools, Page, free_port
from agent_s.grounding import AccessibilityTree
from agent_s.loop.control import USER_ACTED, RunControl
from agent_s.record.result import RunEnded, RunResult
from agent_s.testing.scripted_replies import Step, reply
from agent_s.testing.scripted_server import RecordedRequest, ScriptedModelServer
from agent_s.view import InputGuard, LiveView
from agent_s.view.guard import GRACE
from agent_s.view.session import terminal_waiter

KEY = "sk-liveview-SECRET-1234567890"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
AGENT_S = str(Path(sys.executable).parent / "agent-s")
USER_ACTED_WORDS = USER_ACTED.split("(")[0].strip()  # the line's fixed start


def act(code: str) -> str:
    return f"Next step.\n```python\n{code}\n```"


# -- the control alone --------------------------------------------------------------------------


def test_control_pauses_resumes_and_says_when_the_user_acted() -> None:
    control = RunControl()
    seen: list[tuple[str, str]] = []
    control.subscribe(lambda event: seen.append((event.kind, event.state)))
    assert control.checkpoint() is None  # running: no wait, nothing to say
    control.pause()
    waited = threading.Event()

    def agent_side() -> None:
        control.checkpoint()
        waited.set()

    worker = threading.Thread(target=agent_side)
    worker.start()
    assert not waited.wait(0.5), "checkpoint must wait while paused"
    assert control.before_action() is None  # a plain pause lets the step finish
    control.resume()
    assert waited.wait(2)
    worker.join()
    control.take_over()
    assert control.state == "taken_over"
    threading.Timer(0.3, control.hand_back).start()
    note = control.before_action()  # the user took over meanwhile: wait, then say so
    assert note is not None
    assert "took over the desktop" in note
    assert control.checkpoint() is None  # said once
    with control.acting():
        control.user_input("you moved the mouse")  # the agent's own doing: ignored
    assert control.state == "running"
    control.stop()
    with pytest.raises(RunEnded) as ended:
        control.checkpoint()
    assert ended.value.status is RunStatus.CANCELLED
    assert ("state", "paused") in seen
    assert ("state", "stopped") in seen
    assert ("acting", "running") in seen
    with pytest.raises(ValueError, match="unknown command"):
        control.command("explode")


@pytest.mark.parametrize(
    ("typed", "state"), [("\n", "running"), ("stop\n", "stopped"), ("", "stopped")]
)
def test_the_terminal_resumes_or_stops_a_paused_run(typed: str, state: str) -> None:
    control = RunControl(waiter=terminal_waiter(StringIO(typed), err := StringIO()))
    control.user_input("you moved the mouse")
    assert control.state == "paused"
    if state == "running":
        assert control.checkpoint() is not None  # resumed, and the model is told
    else:
        with pytest.raises(RunEnded):
            control.checkpoint()
    assert control.state == state
    assert "paused: you moved the mouse; press Enter to resume" in err.getvalue()


# -- the page in headless Chromium ----------------------------------------------------------------


@pytest.fixture
def chromium(tmp_path: Path) -> Iterator[DevTools]:
    if not Path(CHROMIUM).exists():
        pytest.skip("chromium is not installed")
    port = free_port()
    argv = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--no-first-run",
        f"--user-data-dir={tmp_path / 'chromium'}",
        f"--remote-debugging-port={port}",
        "--remote-debugging-address=127.0.0.1",
        "--window-size=1600,1000",
        "about:blank",
    ]
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    proc = subprocess.Popen(
        argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        devtools = DevTools(port)
        devtools.wait_ready(60)
        yield devtools
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


def _page_state(page: Page) -> dict[str, Any]:
    return dict(
        page.evaluate(
            "({frames: agentView.frames, state: agentView.state, steps: agentView.steps, "
            "result: agentView.result, inputs: agentView.inputs})"
        )
    )


_DIGEST = """() => {
  const data = document.getElementById('screen').toDataURL('image/png');
  let hash = 2166136261;
  for (let i = 0; i < data.length; i++) { hash = Math.imul(hash ^ data.charCodeAt(i), 16777619); }
  return (hash >>> 0).toString(16) + ':' + data.length;
}"""


def _digest(page: Page) -> str:
    return str(page.call_function(_DIGEST))


def _fresh_frames(page: Page, count: int = 2) -> None:
    start = _page_state(page)["frames"]
    wait_until(lambda: _page_state(page)["frames"] >= start + count, 15, "new frames")


def _press(page: Page, button: str) -> None:
    """Click one of the page's buttons as the user would (a real mouse event)."""
    box = page.call_function(
        "(id) => { const b = document.getElementById(id); const r = b.getBoundingClientRect(); "
        "return [r.left + r.width / 2, r.top + r.height / 2, b.disabled]; }",
        button,
    )
    assert box[2] is False, f"the {button} button is disabled"
    _mouse_click(page, box[0], box[1])


def _mouse_click(page: Page, x: float, y: float) -> None:
    for kind in ("mousePressed", "mouseReleased"):
        page.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1)


def _click_screen_point(page: Page, point: tuple[int, int]) -> None:
    """A real click on the page's canvas where it shows the desktop's ``point``."""
    x, y = page.call_function(
        "(p) => { const c = document.getElementById('screen'); const r = c.getBoundingClientRect();"
        " return [r.left + (p[0] + 0.5) * r.width / c.width,"
        " r.top + (p[1] + 0.5) * r.height / c.height]; }",
        list(point),
    )
    _mouse_click(page, x, y)


def _get(url: str, host: str | None = None) -> int:
    assert url.startswith("http://127.0.0.1:")
    request = urllib.request.Request(url, headers={"Host": host} if host else {})  # noqa: S310
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:  # noqa: S310
            return int(answer.status)
    except urllib.error.HTTPError as err:
        return int(err.code)
    except urllib.error.URLError:  # nothing listens there
        return 0


class Strict:
    """Script functions that fail the test when the model is asked while the run waits."""

    def __init__(self, control: RunControl) -> None:
        self.control = control
        self.violations: list[str] = []

    def check(self, request: RecordedRequest) -> None:
        if self.control.state != "running":
            self.violations.append(f"request #{request.index} while {self.control.state}")


@pytest.fixture(scope="module", autouse=True)
def _accessibility_bus(desktop: Any) -> None:
    AccessibilityTree().applications()  # bound before ``apps`` notes the running processes


def _agent(
    server: ScriptedModelServer, backend: Any, tmp_path: Path, control: RunControl, **kw: Any
) -> Agent:
    model = ModelConfig("openai-compatible", "scripted-model", server.openai_base_url, KEY)
    config = AgentConfig(record_dir=tmp_path / "runs", settle_seconds=0.3)
    return Agent(
        model,
        settings=config,
        grounding=GroundingConfig("auto"),
        backend=backend,
        control=control,
        **kw,
    )


def _in_thread(run: Callable[[], RunResult]) -> tuple[threading.Thread, list[RunResult]]:
    results: list[RunResult] = []
    thread = threading.Thread(target=lambda: results.append(run()), daemon=True)
    thread.start()
    return thread, results


@pytest.fixture
def screen(desktop: Any) -> Iterator[Any]:
    """The view's own connection to the test desktop (the agent's is busy on its thread)."""
    from agent_s.desktop.x11 import X11Backend

    backend = X11Backend(desktop.display, env=desktop.env)
    yield backend
    backend.close()


def test_the_page_needs_its_token(screen: Any, chromium: DevTools) -> None:
    control = RunControl()
    with LiveView(control, screen) as view:
        base = f"http://127.0.0.1:{view.port}"
        assert _get(view.url) == 200
        for path in ("/", "/frame.jpg", "/events", "/view.js", "/state"):
            assert _get(base + path) == 403, path
            assert _get(base + path + "?token=wrong") == 403, path
        assert _get(view.url, host=f"evil.example:{view.port}") == 403  # DNS rebinding
        with chromium.new_page(base + "/") as page:
            assert "forbidden" in str(page.evaluate("document.body.innerText"))
        with chromium.new_page(view.url) as page:
            wait_until(lambda: _page_state(page)["frames"] > 0, 15, "a frame")
            assert _page_state(page)["state"] == "running"
            refused = page.evaluate(
                "fetch('/control', {method: 'POST', body: JSON.stringify({command: 'stop'})})"
                ".then(r => r.status)"
            )
            assert refused == 403
            assert control.state == "running"
            # input is refused unless the user has taken over
            status = page.evaluate(
                f"fetch('/input?token={view.token}', {{method: 'POST', headers: "
                "{'Content-Type': 'application/json'}, "
                "body: JSON.stringify({kind: 'click', x: 5, y: 5})}).then(r => r.status)"
            )
            assert status == 409


def test_watch_pause_take_over_and_hand_back(
    apps: Any, x11: Any, screen: Any, chromium: DevTools, tmp_path: Path
) -> None:
    apps(["galculator"], window="galculator")
    x11.activate("galculator")
    x11.clipboard_set("")
    control = RunControl()
    strict = Strict(control)
    asked_second, paused = threading.Event(), threading.Event()
    told: list[bool] = []

    def script(request: RecordedRequest) -> Step:
        strict.check(request)
        n = request.index
        if n == 1:
            return reply(act('agent.click("the 7 button")'))
        if n == 2:
            asked_second.set()  # the test presses Pause while the model "thinks"
            assert paused.wait(60)
            return reply(act('agent.click("the + button")'))
        if n == 3:
            told.append(USER_ACTED_WORDS in json.dumps(request.body))
            return reply(act('agent.hotkey(["enter"])'))
        if n == 4:
            return reply(act('agent.hotkey(["ctrl", "c"])'))
        return reply(act('agent.done(answer="84")'))

    with ScriptedModelServer(script) as server, LiveView(control, screen) as view:
        agent = _agent(server, x11, tmp_path, control, on_step=view.on_step)
        with chromium.new_page(view.url) as page:
            wait_until(lambda: _page_state(page)["frames"] > 0, 15, "a frame")
            before = _digest(page)
            thread, results = _in_thread(lambda: agent.run("Add 7 and 77"))
            wait_until(lambda: len(_page_state(page)["steps"]) >= 1, 60, "step 1 on the page")
            _fresh_frames(page)
            assert _digest(page) != before, "the frame did not change after clicking 7"
            step1 = _page_state(page)["steps"][0]
            assert step1["action"].startswith("agent.click")
            assert step1["grounding"][0]["point"]
            seven = tuple(step1["grounding"][0]["point"])
            assert asked_second.wait(60)
            _press(page, "pause")
            wait_until(lambda: _page_state(page)["state"] == "paused", 10, "paused on the page")
            paused.set()
            wait_until(lambda: len(_page_state(page)["steps"]) >= 2, 60, "step 2 finishing")
            time.sleep(2.0)  # paused: no model call (Strict), no step
            assert len(server.requests) == 2
            assert control.state == "paused"
            _press(page, "take_over")
            wait_until(lambda: _page_state(page)["state"] == "taken_over", 10, "taken over")
            _fresh_frames(page)
            for _ in range(2):  # 7 + 77: the user's two clicks reach galculator
                _click_screen_point(page, seven)
                time.sleep(0.6)
            wait_until(lambda: _page_state(page)["inputs"] >= 2, 10, "the clicks carried out")
            time.sleep(1.0)
            assert len(server.requests) == 2  # taken over: the agent waits
            _press(page, "hand_back")
            thread.join(120)
            assert not thread.is_alive()
            (result,) = results
            view.finished(result)
            wait_until(lambda: _page_state(page)["result"], 10, "the result on the page")
            shown = _page_state(page)
    assert strict.violations == []
    assert told == [True], "the request after hand back must say the user acted"
    assert result.status is RunStatus.SUCCEEDED, result
    assert wait_until(lambda: x11.clipboard_get().strip() == "84", 5, "84 copied")
    assert [s["step"] for s in shown["steps"]] == [1, 2, 3, 4, 5]
    assert shown["result"]["status"] == "succeeded"
    assert shown["steps"][-1]["tokens"] > 0


def test_stop_ends_the_run_cancelled_with_its_result_written(
    apps: Any, x11: Any, screen: Any, chromium: DevTools, tmp_path: Path
) -> None:
    apps(["galculator"], window="galculator")
    x11.activate("galculator")
    control = RunControl()
    strict = Strict(control)
    asked, stopped = threading.Event(), threading.Event()

    def script(request: RecordedRequest) -> Step:
        strict.check(request)
        if request.index == 1:
            return reply(act("agent.wait(0.5)"))
        asked.set()
        assert stopped.wait(60)
        return reply(act('agent.click("the 9 button")'))  # planned, never carried out

    with ScriptedModelServer(script) as server, LiveView(control, screen) as view:
        agent = _agent(server, x11, tmp_path, control, on_step=view.on_step)
        with chromium.new_page(view.url) as page:
            wait_until(lambda: _page_state(page)["frames"] > 0, 15, "a frame")
            thread, results = _in_thread(lambda: agent.run("Wait, then press 9"))
            assert asked.wait(60)
            _press(page, "stop")
            wait_until(lambda: control.state == "stopped", 10, "stopped")
            stopped.set()
            thread.join(60)
            (result,) = results
            view.finished(result)
            wait_until(lambda: _page_state(page)["result"], 10, "the result on the page")
            assert _page_state(page)["state"] == "stopped"
    assert strict.violations == []
    assert len(server.requests) == 2
    assert result.status is RunStatus.CANCELLED
    assert result.trajectory_dir is not None
    written = json.loads((result.trajectory_dir / "result.json").read_text())
    assert written["status"] == "cancelled"
    steps = load_trajectory(result.trajectory_dir).steps
    assert steps[-1].executed == ()  # the 9 was never clicked


def test_the_result_reaches_the_page_when_the_view_closes_at_once(
    x11: Any, screen: Any, chromium: DevTools, tmp_path: Path
) -> None:
    """A run's command closes the view as soon as the run ends: the page still gets the
    result (published just before), once."""
    control = RunControl()
    with ScriptedModelServer([reply(act("agent.done()"))]) as server:
        view = LiveView(control, screen).start()
        try:
            with chromium.new_page(view.url) as page:
                wait_until(lambda: _page_state(page)["state"] == "running", 15, "the stream")
                agent = _agent(server, x11, tmp_path, control, on_step=view.on_step)
                view.finished(agent.run("Say done"))
                view.close()  # at once, as ``run --view`` and ``bench run --view`` do
                wait_until(lambda: _page_state(page)["result"], 10, "the result on the page")
                shown = _page_state(page)
                text = str(page.evaluate("document.getElementById('result').innerText"))
        finally:
            view.close()
    assert shown["result"]["status"] == "succeeded"
    assert text.startswith("succeeded:")
    assert [s["step"] for s in shown["steps"]] == [1]
    assert _get(view.url) != 200


# -- the user's own desktop ---------------------------------------------------------------------


def test_moving_the_pointer_pauses_the_run_before_its_next_action(
    desktop: Any, x11: Any, apps: Any, tmp_path: Path
) -> None:
    apps(["galculator"], window="galculator")
    x11.activate("galculator")
    control = RunControl()
    strict = Strict(control)
    moved = threading.Event()
    told: list[bool] = []

    def script(request: RecordedRequest) -> Step:
        strict.check(request)
        if request.index == 1:
            return reply(act('agent.click("the 5 button")'))
        if request.index == 2:  # the user moves the mouse while the model "thinks"
            time.sleep(2 * GRACE)
            subprocess.run(["xdotool", "mousemove", "300", "300"], env=desktop.env, check=True)
            moved.set()
            time.sleep(0.5)
            return reply(act('agent.click("the 8 button")'))  # not carried out: paused
        told.append(USER_ACTED_WORDS in json.dumps(request.body))
        return reply(act("agent.done()"))

    with ScriptedModelServer(script) as server, InputGuard(control, env=desktop.env) as guard:
        agent = _agent(server, x11, tmp_path, control)
        thread, results = _in_thread(lambda: agent.run("Press 5"))
        assert moved.wait(60)
        wait_until(lambda: control.state == "paused", 10, "paused by the pointer")
        assert control.reason == "you moved the mouse"
        time.sleep(2.0)
        assert len(server.requests) == 2
        assert thread.is_alive()
        control.resume()
        thread.join(60)
    (result,) = results
    assert strict.violations == []
    assert guard.noticed[0] == "you moved the mouse"
    assert result.status is RunStatus.SUCCEEDED, result
    assert told == [True]
    steps = load_trajectory(result.trajectory_dir).steps
    assert steps[0].executed
    assert steps[0].outcome == "ok"
    assert steps[1].executed == ()
    assert "not carried out" in steps[1].detail


def test_moving_the_pointer_during_a_wait_pauses_the_run(
    desktop: Any, x11: Any, tmp_path: Path
) -> None:
    """A wait sends no input, so the user's input during one is theirs: the run pauses, and
    the model is not asked again until it is resumed."""
    control = RunControl()
    strict = Strict(control)
    waiting = threading.Event()

    def script(request: RecordedRequest) -> Step:
        strict.check(request)
        if request.index == 1:
            waiting.set()
            return reply(act("agent.wait(2)"))
        return reply(act("agent.done()"))

    with ScriptedModelServer(script) as server, InputGuard(control, env=desktop.env) as guard:
        agent = _agent(server, x11, tmp_path, control)
        thread, results = _in_thread(lambda: agent.run("Wait a little"))
        assert waiting.wait(60)
        time.sleep(0.5 + GRACE)  # inside the 2 s wait, past the guard's grace after a request
        subprocess.run(["xdotool", "mousemove_relative", "60", "60"], env=desktop.env, check=True)
        wait_until(lambda: control.state == "paused", 5, "paused during the wait")
        assert control.reason == "you moved the mouse"
        time.sleep(2.5)  # the wait is over: the run stays paused, the model is not asked
        assert len(server.requests) == 1
        control.resume()
        thread.join(60)
    (result,) = results
    assert strict.violations == []
    assert guard.noticed == ["you moved the mouse"]
    assert result.status is RunStatus.SUCCEEDED, result


# -- the command line ----------------------------------------------------------------------------


def cli_view_env(server: ScriptedModelServer, tmp_path: Path) -> dict[str, str]:
    """The environment of an ``agent-s run`` whose model is ``server``: no session display,
    no AGENT_S_* of the caller's, HOME in ``tmp_path``."""
    env = clean_env("DISPLAY", "XAUTHORITY")
    env.update(
        AGENT_S_BASE_URL=server.openai_base_url,
        AGENT_S_PROVIDER="openai-compatible",
        AGENT_S_MODEL="scripted-model",
        OPENAI_API_KEY=KEY,
        HOME=str(tmp_path),
        COLUMNS="300",
    )
    return env


def start_cli_view(
    server: ScriptedModelServer, tmp_path: Path, max_steps: str
) -> tuple[subprocess.Popen[str], str, list[str]]:
    """``agent-s run --virtual --view`` against ``server``, and the view's URL once printed
    (with the stderr lines up to it)."""
    env = cli_view_env(server, tmp_path)
    proc = subprocess.Popen(
        [AGENT_S, "run", "wait a while", "--virtual", "--view", "--max-steps", max_steps],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []
    assert proc.stderr is not None
    for line in proc.stderr:
        lines.append(line)
        found = re.search(r"http://127\.0\.0\.1:\d+/\?token=[\w-]+", line)
        if found:
            return proc, found.group(0), lines
    proc.kill()
    proc.wait()
    raise AssertionError("no live view URL was printed:\n" + "".join(lines))


def test_cli_view_prints_a_url_and_stop_ends_everything(tmp_path: Path, chromium: DevTools) -> None:
    started = threading.Event()

    def script(request: RecordedRequest) -> Step:
        started.set()
        return reply(act("agent.wait(1)"))

    with ScriptedModelServer(script) as server:
        proc, url, lines = start_cli_view(server, tmp_path, "50")
        try:
            assert started.wait(60)
            children = {p.pid for p in psutil.Process(proc.pid).children(recursive=True)}
            assert children, "the virtual desktop's processes"
            with chromium.new_page(url) as page:
                wait_until(lambda: _page_state(page)["frames"] > 0, 20, "a frame")
                wait_until(lambda: _page_state(page)["steps"], 60, "a step on the page")
                _press(page, "stop")
                out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == 130, out + err
    assert out.startswith("cancelled:"), out
    assert "Traceback" not in err
    wait_until(
        lambda: not [p for p in children if psutil.pid_exists(p) and _alive(p)],
        10,
        "every process of the run ended",
    )
    assert _get(url) != 200  # the view is gone with the run


def _plan_reply(*subtasks: dict[str, Any]) -> str:
    body = {"feasible": True, "reason": "", "subtasks": list(subtasks)}
    return "The plan:\n```json\n" + json.dumps(body, indent=1) + "\n```"


def test_cli_view_shows_the_plan_its_subtasks_checks_switch_and_replan(
    tmp_path: Path, chromium: DevTools
) -> None:
    """``run --plan always --view``: a subtask whose file check fails twice is switched to the
    code agent, fails again and is replanned; the new plan's first subtask passes its check and
    the next one is being worked on when Stop is pressed. The page shows every part of it."""
    out = tmp_path / "report.csv"
    check = {"kind": "file", "path": str(out), "contains": "total,200"}
    script = [
        reply(
            _plan_reply(
                {"id": "csv", "description": "Write total,200 to report.csv", "check": check}
            )
        ),
        reply(act("agent.done()")),  # attempt 1 (gui): nothing written, the check fails
        reply(act("agent.done()")),  # attempt 2 (gui): fails again: switch to the code agent
        reply(f"Writing it.\n```bash\nprintf 'total,0\\n' > {out}\n```"),  # attempt 3: wrong
        reply("Wrote it.\nDONE"),
        reply(  # the replan: the code agent writes it, then a subtask that waits
            _plan_reply(
                {
                    "id": "csv2",
                    "description": "Write total,200 to report.csv with code",
                    "worker": "code",
                    "check": check,
                },
                {"id": "watch", "description": "Wait for the user", "depends_on": ["csv2"]},
            )
        ),
        reply(f"Writing it.\n```bash\nprintf 'total,200\\n' > {out}\n```"),
        reply("Wrote total,200.\nDONE"),
    ]

    def answer(request: RecordedRequest) -> Step:
        if request.index <= len(script):
            return script[request.index - 1]
        return reply(act("agent.wait(1)"))  # the watch subtask, until Stop

    with ScriptedModelServer(answer) as server:
        env = cli_view_env(server, tmp_path)
        argv = [AGENT_S, "run", "Put total,200 into report.csv", "--virtual", "--view"]
        argv += ["--plan", "always", "--code-agent", "--safety", "auto", "--max-steps", "40"]
        # the code writes into this test's folder, outside the virtual desktop's HOME, which
        # bubblewrap (the default containment) keeps read-only
        argv += ["--code-sandbox", "none"]
        proc = subprocess.Popen(
            argv,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            url, lines = None, []
            assert proc.stderr is not None
            for line in proc.stderr:
                lines.append(line)
                found = re.search(r"http://127\.0\.0\.1:\d+/\?token=[\w-]+", line)
                if found:
                    url = found.group(0)
                    break
            assert url is not None, "".join(lines)
            with chromium.new_page(url) as page:
                wait_until(
                    lambda: any(s["subtask"] == "watch" for s in _page_state(page)["steps"]),
                    120,
                    "a step of the last subtask on the page",
                )
                _press(page, "stop")
                wait_until(lambda: _page_state(page)["result"], 30, "the result on the page")
                events = page.evaluate("agentView.plan")
                log = str(page.evaluate("document.getElementById('log').innerText"))
                listed = page.evaluate(
                    "Array.from(document.querySelectorAll('#log li.subtask'))"
                    ".map((e) => e.dataset.subtask + ':' + e.className)"
                )
            out_text, err_text = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert out_text.startswith("cancelled:"), out_text + err_text
    assert out.read_text() == "total,200\n"  # the code agent's doing, checked by the plan
    seen = [
        (
            e["kind"],
            e.get("subtask") or len(e.get("subtasks", [])),
            e.get("status", e.get("passed")),
        )
        for e in events
    ]
    assert seen == [
        ("plan", 1, None),
        ("subtask", "csv", "started"),
        ("check", "csv", False),
        ("check", "csv", False),
        ("switch", "csv", None),
        ("check", "csv", False),
        ("subtask", "csv", "failed"),
        ("replan", 2, None),
        ("subtask", "csv2", "started"),
        ("check", "csv2", True),
        ("subtask", "csv2", "done"),
        ("subtask", "watch", "started"),
        ("subtask", "watch", "stopped"),
    ], events
    for text in (
        "plan: 1 subtask",
        "csv (gui): Write total,200 to report.csv",
        "subtask csv started",
        "check csv failed (file)",
        "switch csv to the code worker",
        "subtask csv failed",
        "replan: 2 subtasks",
        "check csv2 passed (file)",
        "subtask csv2 done",
        "subtask watch stopped",
        "[watch] #",
    ):
        assert text in log, log
    # the replan's list shows where each subtask got to; the first plan's stays as it was
    assert listed == [
        "csv:subtask failed",
        "csv2:subtask done",
        "watch:subtask stopped",
    ], listed


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def test_view_needs_a_virtual_desktop() -> None:
    done = subprocess.run(
        [
            AGENT_S,
            "run",
            "x",
            "--view",
            *model_options(),
        ],
        env={**os.environ, "OPENAI_API_KEY": KEY},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "--view shows a --virtual desktop" in done.stderr


def test_bench_run_view_serves_the_chosen_task(tmp_path: Path, chromium: DevTools) -> None:
    from agent_s.bench.tasks import load_suite

    task = next(t for t in load_suite("smoke").tasks(["os"]) if "notes.txt" in t.instruction)
    (tmp_path / "suite" / "examples" / "os").mkdir(parents=True)
    shutil.copy(str(task.path), tmp_path / "suite" / "examples" / "os" / f"{task.id}.json")
    index = tmp_path / "suite" / "test_one.json"
    index.write_text(json.dumps({"os": [task.id]}))
    control_seen: list[str] = []

    def script(request: RecordedRequest) -> Step:
        return reply(act("agent.wait(1)"))

    env = clean_env()
    with ScriptedModelServer(script) as server:
        argv = [
            AGENT_S,
            "bench",
            "run",
            str(index),
            "--policy",
            "agent",
            *model_options(server.openai_base_url),
            "--max-steps",
            "40",
            "--results",
            str(tmp_path / "results"),
            "--json",
            "--view",
            task.id,
        ]
        proc = subprocess.Popen(
            argv,
            env={**env, "OPENAI_API_KEY": KEY, "COLUMNS": "300", "HOME": str(tmp_path)},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert proc.stderr is not None
            url, lines = None, []
            for line in proc.stderr:
                lines.append(line)
                found = re.search(
                    r"live view of [\w-]+: (http://127\.0\.0\.1:\d+/\?token=[\w-]+)", line
                )
                if found:
                    url = found.group(1)
                    break
            assert url is not None, "".join(lines)
            with chromium.new_page(url) as page:
                wait_until(lambda: _page_state(page)["steps"], 90, "a step on the page")
                _press(page, "stop")
                wait_until(lambda: _page_state(page)["result"], 30, "the result on the page")
                control_seen.append(_page_state(page)["result"]["status"])
            out, _err = proc.communicate(timeout=300)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert control_seen == ["cancelled"]
    (record,) = json.loads(out)["records"]
    assert record["task_id"] == task.id
    assert record["status"] == "cancelled"
    folder = tmp_path / "results" / "pyautogui" / "screenshot" / "scripted-model" / "os" / task.id
    assert not (folder / "view.url").exists()  # the page went with the task
    assert _get(url) != 200


def test_bench_view_names_a_task_of_the_suite(tmp_path: Path) -> None:
    done = subprocess.run(
        [AGENT_S, "bench", "run", "smoke", "--policy", "noop", "--view", "nope"],
        env={**os.environ, "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "--view nope: the live view watches the agent" in done.stderr
