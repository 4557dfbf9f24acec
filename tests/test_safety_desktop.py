"""The safety gate on the session's virtual desktop, with a scripted model: approval granted,
refused, and refused because nobody can approve (each seen in the trajectory and in what
happened); and text the model types is data: shell metacharacters, quotes, newlines and unicode
arrive literally in a terminal and in a text editor, and nothing else runs."""

from __future__ import annotations

import io
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from agent_s import Agent, AgentConfig, GroundingConfig, ModelConfig, RunStatus, load_trajectory
from agent_s.desktop.ops import Point
from agent_s.safety.gate import Approval, ApprovalRequest
from agent_s.settings.config import SafetyConfig
from agent_s.testing.scripted_replies import reply
from agent_s.testing.scripted_server import ScriptedModelServer

pytestmark = pytest.mark.desktop
XTERM = ["xterm", "-fa", "DejaVu Sans Mono", "-fs", "11", "-geometry", "90x16+60+60"]


def act(code: str) -> str:
    return f"The window has focus.\n```python\n{code}\n```"


def call(name: str, **arguments: Any) -> str:
    """An action call with literal arguments (repr keeps every character as data)."""
    listed = ", ".join(f"{key}={value!r}" for key, value in arguments.items())
    return act(f"agent.{name}({listed})")


def payload(folder: Path) -> str:
    pwned = folder / "PWNED"
    return (
        f"echo $(touch {pwned}1); touch {pwned}2 && touch {pwned}3 | `touch {pwned}4` # $HOME\n"
        "quotes 'single' \"double\" \\back\\slash <less> >greater & *glob? ~tilde {a,b} 100%\n"
        "unicode é ü ß € → ✓ 日本語 Ωmega\n"
    )


class Approver:
    name = "desktop test"

    def __init__(self, answer: Approval) -> None:
        self.answer = answer
        self.requests: list[ApprovalRequest] = []

    def __call__(self, request: ApprovalRequest) -> Approval:
        self.requests.append(request)
        return self.answer


def agent_for(
    server: ScriptedModelServer, x11: Any, tmp_path: Path, mode: str, approver: Any = None
) -> Agent:
    model = ModelConfig("openai-compatible", "scripted-model", server.openai_base_url, "sk-desk")
    config = AgentConfig(
        record_dir=tmp_path / "runs", settle_seconds=0.2, safety=SafetyConfig(mode=mode)
    )  # type: ignore[arg-type]
    return Agent(
        model, settings=config, grounding=GroundingConfig("native"), backend=x11, approver=approver
    )


def _shell(apps: Any, x11: Any, title: str, folder: Path) -> None:
    """A terminal running sh in ``folder``, in front."""
    apps([*XTERM, "-title", title, "-e", "sh"], window=title, cwd=folder)
    x11.activate(title)


def wait_for(predicate: Callable[[], Any], timeout: float = 6.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.05)


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8") if path.exists() else ""


def test_text_typed_into_a_terminal_arrives_literally_and_runs_nothing(
    apps: Any, x11: Any, tmp_path: Path
) -> None:
    out = tmp_path / "typed.txt"
    text = payload(tmp_path)
    apps(
        [*XTERM, "-title", "agent-cat", "-e", "sh", "-c", 'exec cat > "$1"', "sh", str(out)],
        window="agent-cat",
    )
    x11.activate("agent-cat")
    approver = Approver(Approval(True, by="tester", always=True))
    script = [
        reply(call("type", text=text)),
        reply(call("hotkey", keys=["ctrl", "d"])),
        reply(act("agent.done()")),
    ]
    with ScriptedModelServer(script) as server:
        result = agent_for(server, x11, tmp_path, "confirm", approver).run("Type the text")
    assert result.succeeded, result
    assert wait_for(lambda: read(out) == text), repr(read(out))
    assert list(tmp_path.glob("PWNED*")) == []
    (asked,) = approver.requests  # typing into the terminal was asked about, with the exact text
    assert asked.subject.shown == text
    assert asked.subject.app == "XTerm"
    assert "types into a terminal (XTerm)" in asked.risks[0].reason


def test_text_typed_into_an_editor_is_saved_literally(apps: Any, x11: Any, tmp_path: Path) -> None:
    doc = tmp_path / "literal.txt"
    doc.write_text("")
    text = payload(tmp_path)
    apps(["mousepad", str(doc)], window="literal.txt")
    x11.activate("literal.txt")
    script = [
        reply(call("type", text=text)),
        reply(call("hotkey", keys=["ctrl", "s"])),
        reply(act("agent.done()")),
    ]
    with ScriptedModelServer(script) as server:
        result = agent_for(server, x11, tmp_path, "confirm").run("Type the text and save")
    assert result.succeeded, result
    assert wait_for(lambda: read(doc).rstrip("\n") == text.rstrip("\n")), repr(read(doc))
    assert list(tmp_path.glob("PWNED*")) == []
    steps = load_trajectory(result.trajectory_dir).steps
    assert steps[0].safety is not None
    assert steps[0].safety["decided_by"] == "mode confirm"  # an editor is not a terminal


@pytest.mark.parametrize("case", ["granted", "refused", "nobody"])
def test_approval_granted_refused_and_nobody_to_ask(
    case: str, apps: Any, x11: Any, tmp_path: Path
) -> None:
    _shell(apps, x11, "agent-sh", tmp_path)
    approver = {
        "granted": Approver(Approval(True, by="frank")),
        "refused": Approver(Approval(False, by="frank", note="not now")),
        "nobody": None,
    }[case]
    script = [
        reply(call("type", text="echo approved > result.txt", enter=True)),
        reply(act("agent.done()")),
    ]
    with ScriptedModelServer(script) as server:
        result = agent_for(server, x11, tmp_path, "confirm", approver).run("Write result.txt")
        told = str(server.requests[1].body)
    step = load_trajectory(result.trajectory_dir).steps[0]
    safety = step.safety
    assert safety is not None
    assert safety["risks"] == ["types into a terminal (XTerm)"]
    made = tmp_path / "result.txt"
    if case == "granted":
        assert wait_for(lambda: read(made) == "approved\n"), read(made)
        assert (safety["allowed"], safety["decided_by"], safety["approver"]) == (
            True,
            "approver",
            "frank",
        )
        assert step.outcome == "ok"
        assert step.executed  # the keys went to the terminal
        (asked,) = approver.requests  # type: ignore[union-attr]
        assert asked.image is not None
        assert asked.image_path == result.trajectory_dir / "step_001_approval.png"
        assert safety["image"] == "step_001_approval.png"
        crop = Image.open(io.BytesIO(asked.image)).convert("RGB")
        window = asked.subject.window
        assert window is not None
        assert crop.size == (window.width + 16, window.height + 16)  # the terminal, not the screen
        assert crop.getpixel((9, crop.size[1] // 2)) == (255, 0, 0)  # its outline, marked
        assert (result.trajectory_dir / "step_001_approval.png").read_bytes() == asked.image
        return
    time.sleep(0.5)  # had anything been typed, the shell would have written the file by now
    assert not made.exists()
    assert step.executed == ()
    assert step.outcome == "error"
    assert safety["allowed"] is False
    if case == "refused":
        assert (safety["decided_by"], safety["approver"]) == ("approver", "frank")
        assert "the user (frank) refused it: not now" in told
    else:
        assert (safety["decided_by"], safety["approver"]) == ("nobody (no approver)", None)
        assert "nobody can approve actions in this run" in told
    assert "Refused: this action was not carried out" in step.detail


_WHY = {
    "nobody": "it needs the user's approval (types into a terminal (XTerm)) and nobody can "
    "approve actions in this run",
    "refused": "the user (frank) refused it: not now",
    "deny": "it types into a terminal (XTerm), and risky actions are not allowed in this run",
}


@pytest.mark.parametrize("case", ["nobody", "refused", "deny"])
def test_a_run_that_gives_up_after_a_refusal_ends_with_the_refusal_as_its_cause(
    case: str, apps: Any, x11: Any, tmp_path: Path
) -> None:
    _shell(apps, x11, "refusal-sh", tmp_path)
    approver = Approver(Approval(False, by="frank", note="not now")) if case == "refused" else None
    script = [
        reply(call("type", text="echo hi > result.txt", enter=True)),
        reply(call("fail", reason="I may not type in the terminal")),
    ]
    mode = "deny-risky" if case == "deny" else "confirm"
    with ScriptedModelServer(script) as server:
        result = agent_for(server, x11, tmp_path, mode, approver).run("Write result.txt")
    assert not (tmp_path / "result.txt").exists()
    assert (result.status, result.cause) == (RunStatus.FAILED, "refused")
    refusal = result.refusal
    assert refusal is not None
    action = "agent.type(text='echo hi > result.txt', enter=True)"
    assert (refusal.step, refusal.action, refusal.reason) == (1, action, _WHY[case])
    assert refusal.verdict == ("deny" if case == "deny" else "ask")
    assert result.reason == (
        f"the safety gate refused {action} at step 1: {_WHY[case]} "
        "(after it: I may not type in the terminal)"
    )
    assert load_trajectory(result.trajectory_dir).result == result  # result.json keeps it


def test_a_refusal_the_run_went_on_from_is_not_the_cause_of_its_end(
    apps: Any, x11: Any, tmp_path: Path
) -> None:
    _shell(apps, x11, "went-on-sh", tmp_path)
    script = [
        reply(call("type", text="echo hi > result.txt", enter=True)),  # refused: nobody to ask
        reply(call("wait", seconds=0.5)),  # carried out
        reply(call("fail", reason="the file needs the terminal")),
    ]
    with ScriptedModelServer(script) as server:
        result = agent_for(server, x11, tmp_path, "confirm").run("Write result.txt")
    assert (result.status, result.cause) == (RunStatus.FAILED, "model_gave_up")
    assert result.refusal is None
    assert result.reason == "the file needs the terminal"


def test_the_corner_fail_safe_stops_the_run_as_cancelled(
    x11: Any, desktop: Any, tmp_path: Path
) -> None:
    script = [reply(act('agent.click("(640, 400)")'))]
    try:
        x11.move(Point(0, 0))  # the user throws the mouse into a corner
        with ScriptedModelServer(script) as server:
            result = agent_for(server, x11, tmp_path, "auto").run("Click the middle")
    finally:  # pyautogui would refuse to move it back: use xdotool
        subprocess.run(["xdotool", "mousemove", "640", "400"], env=desktop.env, check=True)
    assert (result.status, result.cause) == (RunStatus.CANCELLED, "interrupted")
    assert "fail-safe" in result.reason
    step = load_trajectory(result.trajectory_dir).steps[0]
    assert step.outcome == "cancelled"
    assert "FailSafeException" in step.detail
