"""The safety policy and gate without a desktop: risks, modes, user rules, the allow lists, the
approver contract (granted, refused, always, none wired, broken), the configuration file, and
the CLI approver's screen. Whole runs on the real desktop are in test_safety_desktop.py."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from rich.console import Console

from agent_s.actions import parse_action
from agent_s.cli.approve import CliApprover
from agent_s.desktop.base import Screenshot, WindowInfo
from agent_s.desktop.ops import Point
from agent_s.safety.gate import (
    Approval,
    ApprovalRequest,
    Policy,
    SafetyGate,
    Subject,
    approval_image,
    subject_for_action,
    subject_for_code,
)
from agent_s.settings.config import AgentConfig, ConfigError, SafetyConfig, SafetyRule
from agent_s.settings.read import load_settings

XTERM = WindowInfo(1, "sh", "XTerm", 10, 0, 0, 800, 600, active=True)
EDITOR = WindowInfo(2, "notes.txt - Mousepad", "Mousepad", 11, 0, 0, 800, 600, active=True)


def subject(code: str, windows: tuple[WindowInfo, ...] = (EDITOR,), *points: Point) -> Subject:
    action = parse_action(f"```python\n{code}\n```")
    return subject_for_action(action, points, windows, code)


def verdict(config: SafetyConfig, item: Subject) -> str:
    return Policy(config).assess(item).verdict


# -- what is risky ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "windows", "risky"),
    [
        ('agent.type(text="ls -la", enter=True)', (XTERM,), "types into a terminal"),
        ('agent.type(text="hello")', (EDITOR,), None),
        ('agent.hotkey(["alt", "f4"])', (EDITOR,), "alt+f4"),
        ('agent.hotkey(["ctrl", "w"])', (EDITOR,), "ctrl+w"),
        ('agent.hotkey(["ctrl", "shift", "w"])', (EDITOR,), "ctrl+w"),  # contains ctrl+w
        ('agent.hotkey(["control", "alt", "del"])', (EDITOR,), "ctrl+alt+delete"),
        ('agent.hotkey(["super", "l"])', (EDITOR,), "locks the screen"),
        ('agent.hold_and_press(["ctrl"], ["a", "q"])', (EDITOR,), "ctrl+q"),
        ('agent.hotkey(["ctrl", "s"])', (EDITOR,), None),
        ('agent.hotkey(["ctrl", "shift", "v"])', (XTERM,), "pastes into a terminal"),
        ('agent.hotkey(["ctrl", "shift", "v"])', (EDITOR,), None),
        ('agent.open("gedit")', (EDITOR,), "not in the allow list"),
        ('agent.open("https://example.com")', (EDITOR,), "not in the allow list"),
        ('agent.switch_applications("xterm")', (EDITOR,), None),
        ("agent.wait(1)", (XTERM,), None),
    ],
)
def test_built_in_risks(code: str, windows: tuple[WindowInfo, ...], risky: str | None) -> None:
    risks = Policy(SafetyConfig()).risks(subject(code, windows))
    text = "; ".join(r.reason for r in risks)
    if risky is None:
        assert risks == [], text
    else:
        assert risky in text


def test_the_window_under_the_target_decides_not_only_the_active_one() -> None:
    term = WindowInfo(1, "sh", "xterm", 10, 0, 0, 400, 300, active=False)
    editor = WindowInfo(2, "notes", "Mousepad", 11, 500, 0, 400, 300, active=True)
    into_terminal = subject('agent.type("the prompt", text="rm x")', (term, editor), Point(50, 50))
    into_editor = subject('agent.type("the text", text="rm x")', (term, editor), Point(600, 50))
    assert into_terminal.app == "xterm"
    assert Policy(SafetyConfig()).risks(into_terminal)
    assert Policy(SafetyConfig()).risks(into_editor) == []
    middle = subject('agent.click("prompt", button_type="middle")', (term,), Point(5, 5))
    assert "middle-click pastes" in Policy(SafetyConfig()).risks(middle)[0].reason


def test_running_code_is_always_risky() -> None:
    risks = Policy(SafetyConfig()).risks(subject_for_code("bash", "ls"))
    assert [r.key for r in risks] == ["run_code"]


# -- modes -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "risky", "harmless", "code"),
    [
        ("auto", "allow", "allow", "allow"),
        ("confirm", "ask", "allow", "ask"),
        ("confirm-all", "ask", "ask", "ask"),
        ("deny-risky", "deny", "allow", "deny"),
    ],
)
def test_modes(mode: str, risky: str, harmless: str, code: str) -> None:
    config = SafetyConfig(mode=mode)  # type: ignore[arg-type]
    assert verdict(config, subject('agent.hotkey(["alt", "f4"])')) == risky
    assert verdict(config, subject('agent.click("(5, 5)")', (EDITOR,), Point(5, 5))) == harmless
    assert verdict(config, subject_for_code("python", "print(1)")) == code
    calls = ("agent.done()", "agent.fail()", "agent.wait(1)", 'agent.save_to_knowledge(["x"])')
    for inert in calls:
        assert verdict(config, subject(inert)) == "allow"
    delegate = subject('agent.call_code_agent("sum it")')
    assert verdict(config, delegate) == ("deny" if mode == "deny-risky" else "allow")


def test_unknown_mode_is_a_config_error_naming_the_flag() -> None:
    with pytest.raises(ConfigError) as caught:
        SafetyConfig(mode="yolo")  # type: ignore[arg-type]
    assert caught.value.setting == "--safety"


# -- user rules and allow lists --------------------------------------------------------------------


def test_user_rules_deny_beats_allow_beats_the_mode() -> None:
    rules = (
        SafetyRule("deny", text=r"rm\s+-rf"),
        SafetyRule("allow", actions=("type",), apps=("xterm",)),
        SafetyRule("risky", keys=("ctrl+s",), note="saving overwrites the report"),
        SafetyRule("deny", actions=("run_code",), text="curl"),
    )
    policy = Policy(SafetyConfig(mode="confirm", rules=rules))
    allowed = policy.assess(subject('agent.type(text="ls")', (XTERM,)))
    assert (allowed.verdict, allowed.decided_by) == ("allow", "rule 2")
    denied = policy.assess(subject('agent.type(text="rm  -rf /tmp/x")', (XTERM,)))
    assert (denied.verdict, denied.decided_by) == ("deny", "rule 1")
    marked = policy.assess(subject('agent.hotkey(["ctrl", "s"])'))
    assert marked.verdict == "ask"
    assert marked.risks[0].reason == "saving overwrites the report"
    assert policy.assess(subject_for_code("bash", "curl example.com")).verdict == "deny"
    assert policy.assess(subject_for_code("bash", "echo curl")).decided_by == "rule 4"
    auto = Policy(SafetyConfig(mode="auto", rules=rules))
    assert auto.assess(subject('agent.type(text="rm -rf ~")', (EDITOR,))).verdict == "deny"
    assert auto.assess(subject('agent.hotkey(["ctrl", "s"])')).verdict == "allow"


def test_the_open_allow_lists(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    config = SafetyConfig(mode="deny-risky", allow_apps=("Mousepad",), allow_paths=(str(docs),))
    policy = Policy(config)
    assert policy.assess(subject('agent.open("mousepad")')).verdict == "allow"
    assert policy.assess(subject(f'agent.open("{docs}/a/b.txt")')).verdict == "allow"
    assert policy.assess(subject(f'agent.open("{docs}")')).verdict == "allow"
    for outside in (f"{docs}/../secret.txt", f"{tmp_path}/docs2/x", "xterm", "file:///etc/x"):
        assert policy.assess(subject(f'agent.open("{outside}")')).verdict == "deny", outside


def test_bad_rules_fail_at_construction() -> None:
    with pytest.raises(ConfigError, match="at least one"):
        SafetyRule("deny")
    with pytest.raises(ConfigError, match="regular expression"):
        SafetyRule("deny", text="(unclosed")
    with pytest.raises(ConfigError, match="unknown key"):
        SafetyRule("deny", keys=("ctrl+nosuchkey",))
    with pytest.raises(ConfigError, match="effect"):
        SafetyRule("maybe", text="x")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="unknown action 'typ'"):
        Policy(SafetyConfig(rules=(SafetyRule("deny", actions=("typ",)),)))


def test_the_configuration_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "config.toml"
    path.write_text(
        '[safety]\nmode = "deny-risky"\nallow_apps = ["mousepad"]\nallow_paths = "~/Documents"\n'
        '[[safety.rules]]\neffect = "deny"\nkeys = ["ctrl+alt+t"]\nnote = "no new terminals"\n'
        '[[safety.rules]]\neffect = "allow"\napps = "galculator"\n'
        '[code_agent]\nmax_steps = 7\ntimeout = 12.5\nsandbox = "none"\nwritable = ["~/out"]\n'
        '[profiles."x*"]\nmax_output_tokens = 100\n'
    )
    settings = load_settings(path=path, environ={})
    safety, code = settings.safety, settings.code_agent
    assert safety.mode == "deny-risky"
    assert safety.allow_paths == ("~/Documents",)
    assert safety.rules[0] == SafetyRule("deny", keys=("ctrl+alt+t",), note="no new terminals")
    assert safety.rules[1].apps == ("galculator",)
    assert (code.max_steps, code.timeout_s) == (7, 12.5)
    assert code.writable == (Path("~/out").expanduser(),)
    monkeypatch.setenv("HOME", str(tmp_path / "nobody"))  # no ~/.config/agent-s/config.toml
    default = load_settings(environ={}, defaults={"safety": {"mode": "confirm"}}).safety
    assert default.mode == "confirm"  # no file: the caller's default
    path.write_text('[safety]\nmode = "confirm"\nrules = [{effect = "deny", txt = "x"}]\n')
    with pytest.raises(ConfigError, match=r"safety\.rules\[1\]\.txt: unknown setting; known: "):
        load_settings(path=path, environ={})
    with pytest.raises(ConfigError, match="does not exist"):
        load_settings(path=tmp_path / "missing.toml", environ={})


# -- the gate and the approver ---------------------------------------------------------------------


class Recorder:
    """An approver that answers from a list and keeps what it was asked."""

    name = "recorder"

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.requests: list[ApprovalRequest] = []

    def __call__(self, request: ApprovalRequest) -> Any:
        self.requests.append(request)
        answer = self.answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer


def test_no_approver_means_refused_and_the_model_is_told() -> None:
    gate = SafetyGate(SafetyConfig(mode="confirm"))
    decision = gate.check(subject('agent.type(text="ls", enter=True)', (XTERM,)), step=3)
    assert not decision.allowed
    assert decision.decided_by == "nobody (no approver)"
    assert "nobody can approve" in decision.message
    assert "types into a terminal (XTerm)" in decision.message
    assert decision.to_json()["allowed"] is False


def test_granted_refused_and_who_decided() -> None:
    approver = Recorder(Approval(True, by="alice"), False, Approval(False, by="bob", note="no!"))
    gate = SafetyGate(SafetyConfig(mode="confirm"), approver)
    code = subject_for_code("bash", "ls")
    first = gate.check(code, step=1, substep=2)
    assert (first.allowed, first.decided_by, first.approver) == (True, "approver", "alice")
    second = gate.check(code)
    assert (second.allowed, second.approver) == (False, "recorder")
    assert "refused it" in second.message
    third = gate.check(code)
    assert "refused it: no!" in third.message
    assert third.approver == "bob"
    asked = approver.requests[0]
    assert (asked.step, asked.substep, asked.subject.shown) == (1, 2, "ls")


def test_always_for_this_run_covers_the_same_risk_until_reset() -> None:
    approver = Recorder(Approval(True, by="alice", always=True), True, False)
    gate = SafetyGate(SafetyConfig(mode="confirm"), approver)
    first = gate.check(subject_for_code("python", "print(1)"))
    assert first.decided_by == "approver (always for this run from now)"
    later = gate.check(subject_for_code("bash", "echo 2"))
    assert (later.allowed, later.decided_by, later.approver) == (
        True,
        "approver (always for this run)",
        "alice",
    )
    assert len(approver.requests) == 1
    other = gate.check(subject('agent.hotkey(["alt", "f4"])'))  # another risk: asked again
    assert other.allowed
    assert len(approver.requests) == 2
    gate.reset()
    assert not gate.check(subject_for_code("bash", "echo 3")).allowed  # asked again: refused
    assert len(approver.requests) == 3


def test_a_broken_approver_refuses_but_ctrl_c_still_stops() -> None:
    code = subject_for_code("bash", "ls")
    broken = SafetyGate(SafetyConfig(mode="confirm"), Recorder(RuntimeError("tty gone")))
    decision = broken.check(code)
    assert not decision.allowed
    assert "tty gone" in decision.message
    odd = SafetyGate(SafetyConfig(mode="confirm"), Recorder("sure"))
    assert not odd.check(code).allowed
    interrupted = SafetyGate(SafetyConfig(mode="confirm"), Recorder(KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        interrupted.check(code)


def test_dry_runs_ask_nobody_and_deny_still_denies() -> None:
    approver = Recorder()
    gate = SafetyGate(SafetyConfig(mode="deny-risky"), approver)
    assert not gate.check(subject('agent.hotkey(["alt", "f4"])'), ask=False).allowed
    confirm = SafetyGate(SafetyConfig(mode="confirm"), approver)
    assert confirm.check(subject_for_code("bash", "ls"), ask=False).decided_by == (
        "not asked (dry run)"
    )
    assert approver.requests == []


# -- what the approver is shown --------------------------------------------------------------------


def test_approval_image_crops_around_the_target_and_marks_it() -> None:
    image = Image.new("RGB", (1280, 800), (255, 255, 255))
    data = approval_image(Screenshot(image), [Point(1000, 700)], None)
    crop = Image.open(io.BytesIO(data)).convert("RGB")
    assert crop.size == (480, 260)  # 240 x 160 around the target, clipped at the screen edge
    colors = crop.getcolors(maxcolors=1 << 20) or []
    reds = sum(n for n, (r, g, b) in colors if r > 200 and g < 60 and b < 60)
    assert reds > 100
    window = WindowInfo(1, "t", "XTerm", 1, 100, 100, 300, 200)
    framed = Image.open(io.BytesIO(approval_image(Screenshot(image), [], window)))
    assert framed.size == (316, 216)


def test_cli_approver_shows_exact_text_and_saves_the_crop(tmp_path: Path) -> None:
    out = io.StringIO()
    answers = iter(["maybe", "A"])
    prompts: list[str] = []

    def read_line(prompt: str) -> str:
        prompts.append(prompt)
        return next(answers)

    approver = CliApprover(
        Console(file=out, width=120, no_color=True),
        read_line=read_line,
        image_dir=tmp_path,
        user="carol",
    )
    typed = subject('agent.type(text="echo $(id) ; done  \\n\\tx", enter=True)', (XTERM,))
    image = approval_image(Screenshot(Image.new("RGB", (640, 480))), [], XTERM)
    risks = tuple(Policy(SafetyConfig()).risks(typed))
    request = ApprovalRequest(typed, risks, "confirm", 4, None, image)
    answer = approver(request)
    assert answer == Approval(True, by="carol (cli)", always=True)
    shown = out.getvalue()
    assert "Approval needed at step 4" in shown
    assert "types into a terminal (XTerm)" in shown
    assert "echo $(id) ; done··⏎" in shown  # trailing spaces and newlines made visible
    assert "⇥x⏎" in shown
    assert "Please answer y, n or a." in shown
    (saved,) = tmp_path.glob("approval-*.png")
    assert str(saved) in shown.replace("\n", "")
    assert Image.open(saved).size == (640, 480)  # the window, clipped to the screen
    assert len(prompts) == 2


def test_cli_approver_shows_code_and_end_of_input_refuses() -> None:
    out = io.StringIO()

    def closed(prompt: str) -> str:
        raise EOFError

    approver = CliApprover(Console(file=out, width=120), read_line=closed, user="dan")
    code = subject_for_code("python", "import os\nprint(os.listdir('.'))")
    answer = approver(ApprovalRequest(code, (), "confirm-all", 2, 3))
    assert answer.granted is False
    text = out.getvalue()
    assert "code agent turn 3" in text
    assert "python code to run" in text
    assert "2 | print(os.listdir('.'))" in text
    assert "end of input" in text


def test_environment_variables_set_the_mode_and_the_code_limits() -> None:
    env = {
        "AGENT_S_SAFETY": "deny-risky",
        "AGENT_S_CODE_SANDBOX": "bwrap",
        "AGENT_S_CODE_TIMEOUT": "7.5",
        "AGENT_S_CODE_STEPS": "3",
    }
    config = AgentConfig.from_env(env)
    assert config.safety.mode == "deny-risky"
    assert (config.code.sandbox, config.code.timeout_s, config.code.max_steps) == ("bwrap", 7.5, 3)
    assert AgentConfig.from_env({}).safety.mode == "auto"  # the SDK's default
    explicit = AgentConfig.from_env(env, safety=SafetyConfig(mode="confirm"))
    assert explicit.safety.mode == "confirm"  # an explicit value wins
    with pytest.raises(ConfigError, match="unknown safety mode"):
        AgentConfig.from_env({"AGENT_S_SAFETY": "sometimes"})
