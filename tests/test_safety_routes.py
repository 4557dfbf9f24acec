"""Safety judged by effect: every route to a risky effect, refused whichever action carries it.

The unit half walks every action model (each has effects the gate can judge; an action or an
operation the gate does not know is refused in every mode) and every route to a terminal,
a launch or a window switch, with the windows as the desktop lists them.

The desktop half runs each route for real on the session's virtual desktop: a terminal (xterm
running sh in an empty folder) and an editor, a scripted model replying with the route's
actions, and the would-be command ``>q`` (which creates a file). In mode ``auto`` each route
does create the file (the control: the route really reaches the shell); under ``confirm`` with
nobody to approve, and under ``deny-risky``, no file is created. The assertion is on the folder,
not on the decision text.
"""

from __future__ import annotations

import subprocess
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar, Literal

import pytest
from test_safety_desktop import XTERM, act, agent_for, call, wait_for

from agent_s import load_trajectory
from agent_s.actions import (
    ACTION_MODELS,
    ActionModel,
    AskUserAction,
    CallCodeAgentAction,
    ClickAction,
    DoneAction,
    DragAndDropAction,
    FailAction,
    HighlightTextSpanAction,
    HoldAndPressAction,
    HotkeyAction,
    OpenAction,
    SaveToKnowledgeAction,
    ScrollAction,
    SetCellValuesAction,
    SwitchApplicationsAction,
    TypeAction,
    WaitAction,
    parse_action,
)
from agent_s.desktop import ops
from agent_s.desktop.base import WindowInfo
from agent_s.desktop.ops import Point
from agent_s.safety.effects import plan_effects
from agent_s.safety.gate import GuardStopped, Policy, SafetyGate, Subject, subject_for_action
from agent_s.settings.config import SafetyConfig, SafetyRule
from agent_s.testing.scripted_replies import reply, slow
from agent_s.testing.scripted_server import ScriptedModelServer

MODES = ("auto", "confirm", "confirm-all", "deny-risky")
TERM = WindowInfo(1, "sh", "XTerm", 10, 0, 0, 600, 400)
EDITOR = WindowInfo(2, "notes.txt - Mousepad", "Mousepad", 11, 640, 0, 600, 400, active=True)
CALC = WindowInfo(3, "sheet.ods - LibreOffice Calc", "libreoffice-calc", 12, 0, 420, 600, 300)
WINDOWS = (EDITOR, TERM, CALC)  # front-most first; the editor has the focus
IN_TERM, IN_EDITOR, IN_CALC = Point(100, 100), Point(700, 100), Point(100, 500)

EXAMPLES: dict[str, tuple[ActionModel, tuple[Point, ...]]] = {
    "click": (ClickAction(element_description="OK"), (IN_EDITOR,)),
    "type": (TypeAction(text="hello"), ()),
    "scroll": (ScrollAction(element_description="list", clicks=-3), (IN_EDITOR,)),
    "drag_and_drop": (
        DragAndDropAction(starting_description="a", ending_description="b"),
        (IN_EDITOR, IN_EDITOR),
    ),
    "highlight_text_span": (
        HighlightTextSpanAction(starting_phrase="a", ending_phrase="b"),
        (IN_EDITOR, IN_EDITOR),
    ),
    "hotkey": (HotkeyAction(keys=("ctrl", "s")), ()),
    "hold_and_press": (HoldAndPressAction(hold_keys=("shift",), press_keys=("a",)), ()),
    "open": (OpenAction(app_or_filename="mousepad"), ()),
    "switch_applications": (SwitchApplicationsAction(app_code="calc"), ()),
    "set_cell_values": (SetCellValuesAction(cell_values={"A1": 1}, app_name="sheet.ods"), ()),
    "save_to_knowledge": (SaveToKnowledgeAction(text=("a fact",)), ()),
    "call_code_agent": (CallCodeAgentAction(task="sum it"), ()),
    "wait": (WaitAction(seconds=1), ()),
    "done": (DoneAction(), ()),
    "fail": (FailAction(), ()),
    "ask_user": (AskUserAction(question="Which file?"), ()),
}


def judged(code: str, *points: Point, windows: tuple[WindowInfo, ...] = WINDOWS) -> Subject:
    action = parse_action(f"```python\n{code}\n```")
    return subject_for_action(action, points, windows, code)


def reasons(subject: Subject, config: SafetyConfig | None = None) -> str:
    return "; ".join(r.reason for r in Policy(config or SafetyConfig()).risks(subject))


# -- every action has effects; what the gate does not know is refused ---------------------------


def test_every_action_model_yields_effects_the_gate_judges() -> None:
    assert set(EXAMPLES) == set(ACTION_MODELS), "add an example for the new action"
    for name, (action, points) in EXAMPLES.items():
        subject = subject_for_action(action, points, WINDOWS, name)
        assert subject.effects, name
        assert not subject.unknown, name
        assert all(e.kind != "unknown" for e in subject.effects), name
    # a question goes to the user: nothing reaches the desktop
    asked = subject_for_action(*EXAMPLES["ask_user"], WINDOWS, "ask_user")
    assert asked.inert
    assert not any(e.delivers_input for e in asked.effects)


def test_an_action_the_gate_does_not_know_is_refused_in_every_mode() -> None:
    class FormatDisk(ActionModel):  # an action added later, without teaching the gate
        action: Literal["format_disk"] = "format_disk"  # type: ignore[assignment]

        def _plan(self, points: list[Point]) -> list[ops.Op]:
            return [ops.TypeText("mkfs /dev/sda")]

    class SneakyWait(WaitAction):  # a subclass of a known action is not that action
        pass

    allow_all = (SafetyRule("allow", actions=("wait", "type")),)
    for action in (FormatDisk(), SneakyWait(seconds=1)):
        subject = subject_for_action(action, (), WINDOWS, "?")
        assert subject.unknown
        for mode in MODES:
            gate = SafetyGate(SafetyConfig(mode=mode, rules=allow_all), approver=lambda r: True)
            decision = gate.check(subject)
            assert not decision.allowed, (action, mode)
            assert decision.decided_by == "unknown to the safety gate"


def test_an_operation_the_gate_cannot_describe_is_refused() -> None:
    effects = plan_effects([ops.TypeText("x"), object()], WINDOWS)  # type: ignore[list-item]
    assert [e.kind for e in effects] == ["text", "unknown"]
    subject = Subject("type", "?", effects=effects)
    assert Policy(SafetyConfig(mode="auto")).assess(subject).verdict == "deny"


# -- every route to a terminal --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "points", "risk"),
    [
        ('agent.type("the prompt", text="rm -r ~")', (IN_TERM,), "types into a terminal (XTerm)"),
        ('agent.click("the prompt", hold_keys=["shift"])', (IN_TERM,), "clicks a terminal"),
        ('agent.click("the prompt", button_type="middle")', (IN_TERM,), "middle-click pastes"),
        ('agent.click("the prompt", button_type="right")', (IN_TERM,), "whose menus can paste"),
        ('agent.drag_and_drop("a file", "the prompt")', (IN_EDITOR, IN_TERM), "drops onto"),
        ('agent.set_cell_values({"A1": "rm -r ~"}, app_name="xterm")', (), "types into a term"),
        ('agent.set_cell_values({"A1": "x"}, app_name="sh")', (), "types into a terminal"),
    ],
)
def test_routes_into_a_terminal_that_is_not_focused(
    code: str, points: tuple[Point, ...], risk: str
) -> None:
    assert risk in reasons(judged(code, *points))


@pytest.mark.parametrize(
    "code",
    [
        'agent.type(text="x")',
        'agent.type(text="", enter=True)',
        'agent.hotkey(["r"])',
        'agent.hotkey(["enter"])',
        'agent.hotkey(["up"])',  # recalls the last command
        'agent.hotkey(["ctrl", "c"])',
        'agent.hotkey(["shift", "insert"])',
        'agent.hold_and_press(["shift"], ["r", "m", "enter"])',
        'agent.set_cell_values({"A1": "x"}, app_name="XTerm")',
    ],
)
def test_every_key_route_into_a_focused_terminal(code: str) -> None:
    focused = (replace(TERM, active=True), replace(EDITOR, active=False))
    assert "types into a terminal (XTerm)" in reasons(judged(code, windows=focused))


def test_modifiers_alone_and_plain_clicks_on_a_terminal_are_not_typing() -> None:
    focused = (replace(TERM, active=True),)
    assert reasons(judged('agent.hotkey(["shift"])', windows=focused)) == ""
    assert reasons(judged('agent.click("the prompt")', IN_TERM, windows=focused)) == ""
    assert reasons(judged('agent.scroll("the output", -3)', IN_TERM, windows=focused)) == ""


def test_keys_after_a_window_switch_in_the_same_action_go_to_an_unknown_window() -> None:
    subject = judged('agent.hold_and_press(["alt"], ["tab", "r", "enter"])')
    assert "cannot be identified" in reasons(subject)
    # the switch alone, into the editor, is not typing anywhere risky
    assert reasons(judged('agent.hotkey(["alt", "tab"])')) == ""


def test_typing_with_no_window_known_is_typing_into_an_unknown_window() -> None:
    assert "cannot be identified" in reasons(judged('agent.type(text="ls")', windows=()))


def test_set_cell_values_into_a_spreadsheet_is_not_a_terminal_route() -> None:
    subject = judged('agent.set_cell_values({"A1": "=SUM(B1:B3)"}, app_name="sheet.ods")')
    assert reasons(subject) == ""
    assert subject.app == "libreoffice-calc"


# -- launching and focusing ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "risk"),
    [
        ('agent.open("xterm")', "opens 'xterm', which is not in the allow list"),
        ('agent.hotkey(["ctrl", "alt", "t"])', "opens a terminal"),
        ('agent.hotkey(["alt", "f2"])', "run-a-command dialog"),
        ('agent.hotkey(["win"])', "launcher"),
        ('agent.hotkey(["win", "r"])', "launcher"),
    ],
)
def test_every_launch_route_is_risky(code: str, risk: str) -> None:
    assert risk in reasons(judged(code))


def test_launches_and_focus_changes_are_checked_against_the_allow_list(tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_text("echo hi\n")
    script.chmod(0o755)
    (tmp_path / "notes.txt").write_text("x")
    config = SafetyConfig(allow_apps=("mousepad",), allow_paths=(str(tmp_path),))
    assert reasons(judged('agent.open("mousepad")'), config) == ""
    assert reasons(judged(f'agent.open("{tmp_path}/notes.txt")'), config) == ""
    assert "allow list" in reasons(judged(f'agent.open("{script}")'), config)  # runnable
    assert "allow list" in reasons(judged(f'agent.open("{tmp_path}/x.desktop")'), config)
    # with an allow list, switching to an application outside it is risky too
    assert "switches to XTerm (sh)" in reasons(judged('agent.switch_applications("xterm")'), config)
    assert reasons(judged('agent.switch_applications("mousepad")'), config) == ""
    # without one, a switch is judged by what the window then receives (see the routes above)
    assert reasons(judged('agent.switch_applications("xterm")')) == ""


def test_an_allow_rule_for_an_app_covers_only_actions_that_stay_inside_it() -> None:
    rules = (SafetyRule("allow", apps=("mousepad",)),)
    policy = Policy(SafetyConfig(mode="deny-risky", rules=rules))
    inside = judged('agent.hotkey(["ctrl", "w"])')  # risky keys, but in the allowed editor
    assert policy.assess(inside).verdict == "allow"
    dropped = judged('agent.drag_and_drop("a", "b")', IN_EDITOR, IN_TERM)
    assert policy.assess(dropped).verdict == "deny"


def test_the_guard_lists_windows_again_only_when_the_window_order_changes() -> None:
    """With ``order`` (the active window and the stacking, cheap to read), the windows the
    decision was judged on stand until the order changes; then the guard looks again, and a
    terminal that took the focus stops the keys."""
    gate = SafetyGate(SafetyConfig(mode="confirm"))
    judged = (EDITOR, replace(TERM, active=False))
    subject = subject_for_action(parse_action('agent.type(text="ls")'), (), judged, "type")
    decision = gate.check(subject, ask=False)
    assert decision.allowed
    focused = (replace(TERM, active=True), replace(EDITOR, active=False))
    listings: list[tuple[WindowInfo, ...]] = []
    now = [(EDITOR.id, (EDITOR.id, TERM.id))]

    def windows() -> tuple[WindowInfo, ...]:
        listings.append(focused)
        return focused

    guard = gate.guard(subject, decision, windows, order=lambda: now[0], listed=judged)
    guard(ops.TypeText("ls"))
    guard(ops.TypeText("ls"))
    assert listings == []  # nothing changed: judged on the windows it was decided on
    now[0] = (TERM.id, (TERM.id, EDITOR.id))
    with pytest.raises(GuardStopped, match="terminal"):
        guard(ops.TypeText("ls"))
    assert len(listings) == 1


# -- on the real desktop: each route by its effect ------------------------------------------------


class Route:
    """One way to get ``>q`` + Enter to the shell. ``setup``: which window has the focus."""

    focus: ClassVar[str] = "terminal"
    primary: ClassVar[str | None] = None  # text put on the PRIMARY selection first

    def actions(self, term: WindowInfo, folder: Path) -> list[str]:
        raise NotImplementedError


def centre(window: WindowInfo) -> str:
    return f"({window.x + window.width // 2}, {window.y + window.height // 2})"


class TypeRoute(Route):
    def actions(self, term: WindowInfo, folder: Path) -> list[str]:
        return [call("type", text=">q", enter=True)]


class HotkeysRoute(Route):
    def actions(self, term: WindowInfo, folder: Path) -> list[str]:
        return [
            call("hotkey", keys=["shift", "."]),
            call("hotkey", keys=["q"]),
            call("hotkey", keys=["enter"]),
        ]


class HoldAndPressRoute(Route):
    def actions(self, term: WindowInfo, folder: Path) -> list[str]:
        return [call("hold_and_press", hold_keys=["shift"], press_keys=[".", "q", "enter"])]


class CellValuesRoute(Route):
    focus = "editor"

    def actions(self, term: WindowInfo, folder: Path) -> list[str]:
        return [call("set_cell_values", cell_values={"A1": ">q"}, app_name="agent-sh")]


class SwitchThenTypeRoute(Route):
    focus = "editor"

    def actions(self, term: WindowInfo, folder: Path) -> list[str]:
        return [
            call("switch_applications", app_code="agent-sh"),
            call("type", text=">q", enter=True),
        ]


class ClickThenTypeRoute(Route):
    focus = "editor"

    def actions(self, term: WindowInfo, folder: Path) -> list[str]:
        return [act(f"agent.type({centre(term)!r}, text='>q', enter=True)")]


class MiddleClickRoute(Route):
    focus = "editor"
    primary = ">q\n"

    def actions(self, term: WindowInfo, folder: Path) -> list[str]:
        return [act(f"agent.click({centre(term)!r}, button_type='middle')")]


class ShiftInsertRoute(Route):
    primary = ">q\n"

    def actions(self, term: WindowInfo, folder: Path) -> list[str]:
        return [call("hotkey", keys=["shift", "insert"])]


ROUTES: dict[str, type[Route]] = {
    "type": TypeRoute,
    "hotkey letter by letter": HotkeysRoute,
    "hold_and_press": HoldAndPressRoute,
    "set_cell_values(app_name=terminal)": CellValuesRoute,
    "switch_applications then type": SwitchThenTypeRoute,
    "click into the terminal and type": ClickThenTypeRoute,
    "middle-click paste": MiddleClickRoute,
    "shift+insert paste": ShiftInsertRoute,
}


@pytest.fixture
def two_windows(apps: Any, x11: Any, tmp_path: Path) -> tuple[WindowInfo, Path]:
    """An xterm running sh in an empty folder, and an editor (mousepad) in front of it."""
    shell = tmp_path / "shell"
    shell.mkdir()
    term = apps([*XTERM, "-title", "agent-sh", "-e", "sh"], window="agent-sh", cwd=shell).window
    doc = tmp_path / "notes.txt"
    doc.write_text("")
    # its own settings and state: mousepad restores a killed instance's session (and unsaved
    # text) at its next start, which would put a dialog in front of the next test's editor
    state = {
        name: str(tmp_path / name.lower())
        for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME")
    }
    state["GSETTINGS_BACKEND"] = "memory"
    apps(["mousepad", str(doc)], window="notes.txt", env=state)
    assert term is not None
    return term, shell


@pytest.mark.parametrize("mode", ["auto", "confirm", "deny-risky"])
@pytest.mark.parametrize("route", list(ROUTES))
def test_each_route_to_the_shell_by_its_effect(
    route: str,
    mode: str,
    two_windows: tuple[WindowInfo, Path],
    x11: Any,
    desktop: Any,
    tmp_path: Path,
) -> None:
    term, shell = two_windows
    way = ROUTES[route]()
    if way.primary is not None:
        subprocess.run(
            ["xclip", "-i", "-selection", "primary"],
            input=way.primary.encode(),
            env=desktop.env,
            check=True,
            timeout=10,
        )
    x11.activate("agent-sh" if way.focus == "terminal" else "notes.txt")
    script = [reply(text) for text in way.actions(term, shell)] + [reply(act("agent.done()"))]
    with ScriptedModelServer(script) as server:
        result = agent_for(server, x11, tmp_path, mode).run("Make the file q")
    assert result.trajectory_dir is not None
    if mode == "auto":  # the control: this route does reach the shell
        assert wait_for(lambda: any(shell.iterdir()), timeout=8), f"{route}: nothing ran"
        return
    time.sleep(0.8)  # had anything reached the shell, it would have made the file by now
    assert list(shell.iterdir()) == [], f"{route} under {mode} reached the shell"


@pytest.mark.parametrize("mode", ["auto", "confirm", "deny-risky"])
def test_the_code_agent_route_by_its_effect(
    mode: str, two_windows: tuple[WindowInfo, Path], x11: Any, tmp_path: Path
) -> None:
    _, shell = two_windows
    block = f"Run this.\n```bash\ntouch {shell}/q\n```"
    script = {
        "auto": [
            act("agent.call_code_agent('make q')"),
            block,
            "Made q.\nDONE",
            act("agent.done()"),
        ],
        "confirm": [
            act("agent.call_code_agent('make q')"),
            block,
            "Refused.\nFAIL",
            act("agent.done()"),
        ],
        "deny-risky": [act("agent.call_code_agent('make q')"), act("agent.done()")],
    }[mode]
    with ScriptedModelServer([reply(text) for text in script]) as server:
        agent = agent_for(server, x11, tmp_path, mode)
        # the gate decides here: the sandbox (on by default) lets the code write in the folder
        code = agent.settings.code
        agent.settings = replace(agent.settings, code=replace(code, writable=(shell,)))
        agent.run("Make the file q")
    made = list(shell.iterdir())
    assert made == ([shell / "q"] if mode == "auto" else [])


@pytest.mark.parametrize("mode", ["auto", "confirm"])
def test_a_terminal_that_takes_the_focus_while_the_model_thinks_is_judged(
    mode: str, two_windows: tuple[WindowInfo, Path], x11: Any, desktop: Any, tmp_path: Path
) -> None:
    """The screenshot shows the editor in front; by the time the reply comes, the terminal is
    (a slow program started earlier, say). The keys would go to the terminal, so it decides."""
    _, shell = two_windows
    x11.activate("notes.txt")
    script = [slow(2.0, reply(call("type", text=">q", enter=True))), reply(act("agent.done()"))]
    with ScriptedModelServer(script) as server:
        agent = agent_for(server, x11, tmp_path, mode)
        raise_terminal = threading.Timer(
            0.7,
            lambda: subprocess.run(
                ["xdotool", "search", "--name", "agent-sh", "windowactivate"],
                env=desktop.env,
                check=False,
                timeout=10,
            ),
        )
        raise_terminal.start()
        try:
            agent.run("Type >q into the editor")
        finally:
            raise_terminal.join()
    if mode == "auto":
        assert wait_for(lambda: any(shell.iterdir()), timeout=8)
    else:
        time.sleep(0.8)
        assert list(shell.iterdir()) == []


@pytest.mark.parametrize("mode", ["auto", "confirm"])
def test_a_terminal_that_takes_the_focus_in_the_middle_of_an_action_stops_it(
    mode: str, two_windows: tuple[WindowInfo, Path], x11: Any, desktop: Any, tmp_path: Path
) -> None:
    """Typing into the editor is allowed; while the text is being typed, the terminal takes the
    focus. The guard judges each operation again as it comes: the Enter that would run what
    reached the terminal is not pressed (in mode auto nothing is refused: the control)."""
    _, shell = two_windows
    x11.activate("notes.txt")
    text = "x" * 400 + ">q"  # about 2 s of typing
    script = [reply(call("type", text=text, enter=True)), reply(act("agent.done()"))]

    def steal_focus_once_typing_starts() -> None:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            title = subprocess.run(
                ["xdotool", "getactivewindow", "getwindowname"],
                env=desktop.env,
                capture_output=True,
                text=True,
                check=False,
            )
            if title.stdout.startswith("*"):  # mousepad marks the document modified
                subprocess.run(
                    ["xdotool", "search", "--name", "agent-sh", "windowactivate"],
                    env=desktop.env,
                    check=False,
                    timeout=10,
                )
                return
            time.sleep(0.02)

    with ScriptedModelServer(script) as server:
        agent = agent_for(server, x11, tmp_path, mode)
        thief = threading.Thread(target=steal_focus_once_typing_starts)
        thief.start()
        try:
            result = agent.run("Type the text into the editor")
        finally:
            thief.join()
    if mode == "auto":
        assert wait_for(lambda: any(shell.iterdir()), timeout=8)
        return
    time.sleep(0.8)
    assert list(shell.iterdir()) == []
    step = load_trajectory(result.trajectory_dir).steps[0]
    assert "stopped in the middle of the action, before pressing enter" in step.detail
    assert "types into a terminal (XTerm)" in step.detail
