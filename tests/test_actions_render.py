"""The pyautogui renderer, proved statically: the rendered code is parsed with ``ast`` and walked
by a small interpreter that accepts only the calls the templates may make, with literal
arguments. It records what the code would do, so each test checks that text, keys and names
reach pyautogui / xdotool / the clipboard exactly as given, and that nothing else can happen.
The typing helper (``TYPE_HELPER``, fixed code) must appear verbatim; a call to it counts as
typing its literal argument (tests/test_render_typing.py runs it on the virtual desktop). Only a
plan of ``Sleep`` is actually run here (in a subprocess without a display).
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_s.actions import ClickAction, SetCellValuesAction, TypeAction, parse_action, render
from agent_s.actions.render import TYPE_HELPER, ere_escape, text_runs
from agent_s.desktop import ops

P, Q = ops.Point(10, 20), ops.Point(300, 400)
MODULES = {"os", "shutil", "subprocess", "time", "pyautogui", "pyperclip"}
ALLOWED_CALLS = {
    "time.sleep",
    "subprocess.run",
    "subprocess.Popen",
    "shutil.which",
    "os.path.expanduser",
    "os.path.exists",
    "pyperclip.copy",
    "_agent_s_type",
}
HELPER = ast.parse(TYPE_HELPER).body[0]
ADVERSARIAL = [
    "'); import os; os.remove('x",
    '"""',
    "'''",
    "\\",
    "\\n is not a newline",
    "line one\nline two\r\nline three\rfour",
    "{} {0} {{}} %s %(x)s",
    "tab\there",
    "héllo wörld ✓ 日本語 😀 ÉÄ",
    "a<b>c <<>> <",
    "\x00\x1b\x7f",
    "\ud800 lone surrogate",
    "__import__('os').system('touch SENTINEL')",
    "${HOME} $(whoami) `id` ; rm -rf / &&",
    "-- --help -x",
    "",
]


@dataclass
class Trace:
    """What rendered code would do, as recorded by ``interpret``."""

    calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = field(default_factory=list)
    imports: list[str] = field(default_factory=list)
    clipboard: str | None = None
    typed: str = ""  # text that reaches the focused window, "\n" for Enter and "\t" for Tab
    keys: list[tuple[str, ...]] = field(default_factory=list)  # other key presses / hotkeys


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    assert isinstance(node, ast.Attribute), ast.dump(node)
    return f"{_dotted(node.value)}.{node.attr}"


class _Break(Exception):
    """A ``break`` statement reached while interpreting a loop body."""


def interpret(code: str, have: frozenset[str] = frozenset({"xdotool", "xclip"})) -> Trace:
    """Walk ``code`` as the runner would run it, with ``have`` the programs on PATH."""
    tree = ast.parse(code)
    trace = Trace()
    variables: dict[str, Any] = {}

    def value(node: ast.expr) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            assert isinstance(node.operand, ast.Constant)
            return -node.operand.value
        if isinstance(node, ast.List):
            return [value(item) for item in node.elts]
        if isinstance(node, ast.Name):
            assert node.id in variables, f"unknown name {node.id}"
            return variables[node.id]
        if isinstance(node, ast.Attribute) and node.attr in ("returncode", "stdout"):
            return call(node.value)
        if isinstance(node, ast.Attribute) and _dotted(node) == "subprocess.DEVNULL":
            return "DEVNULL"
        if isinstance(node, ast.Call):
            return call(node)
        if isinstance(node, ast.Compare):
            assert len(node.ops) == 1
            assert isinstance(node.ops[0], (ast.NotEq, ast.Eq))
            equal = value(node.left) == value(node.comparators[0])
            return equal if isinstance(node.ops[0], ast.Eq) else not equal
        raise AssertionError(f"not a literal or an allowed expression: {ast.dump(node)}")

    def call(node: ast.expr) -> Any:
        assert isinstance(node, ast.Call), ast.dump(node)
        name = _dotted(node.func)
        assert name in ALLOWED_CALLS or name.startswith("pyautogui."), name
        args = tuple(value(arg) for arg in node.args)
        kwargs = {kw.arg: value(kw.value) for kw in node.keywords}
        assert None not in kwargs
        trace.calls.append((name, args, kwargs))
        if name == "shutil.which":
            return args[0] if args[0] in have else None
        if name == "os.path.expanduser":
            return args[0]
        if name == "os.path.exists":
            return False
        if name == "subprocess.run":
            argv = args[0]
            if argv[:3] == ["xdotool", "type", "--"]:
                trace.typed += argv[3]
            elif argv[0] == "xclip" and "-o" in argv:
                return trace.clipboard  # its stdout: what the clipboard holds
            elif argv[0] == "xclip":
                trace.clipboard = kwargs["input"]
            return 0  # its returncode
        if name == "_agent_s_type":
            assert "_agent_s_type" in variables, "the helper is called before it is defined"
            trace.typed += args[0]
        elif name == "pyperclip.copy":
            trace.clipboard = args[0]
        elif name == "pyautogui.write":
            trace.typed += args[0]
        elif name == "pyautogui.press" and args[0] in ("enter", "tab"):
            trace.typed += {"enter": "\n", "tab": "\t"}[args[0]] * kwargs.get("presses", 1)
        elif name == "pyautogui.hotkey" and args in (("ctrl", "v"), ("command", "v")):
            assert trace.clipboard is not None
            trace.typed += trace.clipboard
        elif name in ("pyautogui.press", "pyautogui.hotkey"):
            trace.keys.append(args)
        return None

    def run(statements: list[ast.stmt]) -> None:
        for statement in statements:
            if isinstance(statement, ast.Import):
                for alias in statement.names:
                    assert alias.name in MODULES
                    assert alias.asname is None
                    trace.imports.append(alias.name)
            elif isinstance(statement, ast.Expr):
                call(statement.value)
            elif isinstance(statement, ast.If):
                run(statement.body if value(statement.test) else statement.orelse)
            elif isinstance(statement, ast.Try):
                assert not statement.handlers
                assert not statement.orelse
                run(statement.body)
                run(statement.finalbody)
            elif isinstance(statement, ast.Assign):
                (target,) = statement.targets
                assert isinstance(target, ast.Name)
                assert target.id == "_target"
                variables[target.id] = value(statement.value)
            elif isinstance(statement, ast.Pass):
                continue
            elif isinstance(statement, ast.FunctionDef):
                assert ast.dump(statement) == ast.dump(HELPER), "only the fixed typing helper"
                variables[statement.name] = statement
            elif isinstance(statement, ast.Break):
                raise _Break
            elif isinstance(statement, ast.For):
                assert _dotted(statement.iter.func) == "range"  # type: ignore[attr-defined]
                (count,) = (value(arg) for arg in statement.iter.args)  # type: ignore[attr-defined]
                assert not statement.orelse
                for _ in range(count):
                    try:
                        run(statement.body)
                    except _Break:
                        break
            else:
                raise AssertionError(f"unexpected statement: {ast.dump(statement)}")

    run(tree.body)
    return trace


def string_constants(code: str) -> set[str]:
    """String literals of ``code`` outside the fixed typing helper."""
    return {
        node.value
        for statement in ast.parse(code).body
        if not isinstance(statement, ast.FunctionDef)
        for node in ast.walk(statement)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    }


TEMPLATE_STRINGS = {
    "xdotool",
    "type",
    "--",
    "ctrl",
    "v",
    "xclip",
    "-selection",
    "clipboard",
    "utf-8",
    "win",
    "enter",
    "tab",
    "wmctrl",
    "-a",
    "-x",
    "search",
    "--onlyvisible",
    "--name",
    "--class",
    "windowactivate",
    "xdg-open",
    "left",
    "middle",
    "right",
    "-o",
}


def _newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


# -- typing ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ADVERSARIAL)
@pytest.mark.parametrize(
    "have", [{"xdotool", "xclip"}, {"xclip"}, set()], ids=["all", "xclip", "none"]
)
def test_typed_text_arrives_exactly(text: str, have: set[str]) -> None:
    code = render([ops.TypeText(text)])
    trace = interpret(code, frozenset(have))
    assert trace.typed == _newlines(text)
    assert trace.keys == []
    assert string_constants(code) - TEMPLATE_STRINGS <= {run for _, run in text_runs(text)}


@settings(max_examples=500, deadline=None)
@given(st.text(), st.sampled_from([frozenset({"xdotool", "xclip"}), frozenset()]))
def test_any_text_renders_to_code_that_types_it(text: str, have: frozenset[str]) -> None:
    code = render([ops.TypeText(text)])
    assert interpret(code, have).typed == _newlines(text)


def test_pyautogui_write_only_gets_characters_it_types_correctly() -> None:
    code = render([ops.TypeText("a<b é\tc>\n" + "".join(map(chr, range(32, 127))))])
    for name, args, _ in interpret(code).calls:
        if name == "pyautogui.write":
            assert all(32 <= ord(c) < 127 and c != "<" for c in args[0])
    runs = list(text_runs("ab<<é\n\nx\ty\x1b"))
    assert runs == [
        ("write", "ab"),
        ("keys", "<<é"),
        ("enter", "\n\n"),
        ("write", "x"),
        ("tab", "\t"),
        ("write", "y"),
        ("paste", "\x1b"),
    ]


def test_key_typing_goes_through_the_helper_on_linux_only() -> None:
    code = render([ops.TypeText("né <ü>"), ops.Hotkey(("<",))])
    assert code.count("def _agent_s_type(") == 1  # defined once, at the top
    assert code.splitlines()[0] == "import time"  # a runner's "...; " prefix comes first
    calls = [c for c in interpret(code).calls if c[0] == "_agent_s_type"]
    assert [c[1][0] for c in calls] == ["é", "<ü", "<"]
    assert "pyautogui.hotkey" not in code  # nothing pasted
    for os_name in ("darwin", "windows"):
        other = render([ops.TypeText("né <ü>")], os=os_name)
        assert "_agent_s_type" not in other
        assert interpret(other, frozenset()).typed == "né <ü>"
    plain = render([ops.TypeText("plain ascii > text")])
    assert plain == "import pyautogui\npyautogui.write('plain ascii > text')"


def test_typing_code_is_readable() -> None:
    code = render([ops.TypeText("hi <there>\n")])
    assert code == (
        f"import time\nimport pyautogui\n{TYPE_HELPER}"
        "pyautogui.write('hi ')\n"
        "_agent_s_type('<')\n"
        "pyautogui.write('there>')\n"
        "pyautogui.press('enter')"
    )


# -- every operation ------------------------------------------------------------------------------


def test_mouse_and_key_operations() -> None:
    code = render(
        [
            ops.MoveTo(P),
            ops.Click(Q, "right", 2, ("ctrl", "shift")),
            ops.Drag(P, Q, "middle", ("alt",)),
            ops.Scroll(P, -3),
            ops.Scroll(Q, 4, horizontal=True),
            ops.Hotkey(("ctrl", "a")),
            ops.Hotkey(("f5",)),
            ops.HoldAndPress(("shift",), ("down", "down")),
        ]
    )
    assert code.splitlines() == [
        "import pyautogui",
        "pyautogui.moveTo(10, 20)",
        "try:",
        "    pyautogui.keyDown('ctrl')",
        "    pyautogui.keyDown('shift')",
        "    pyautogui.click(300, 400, clicks=2, interval=0.05, button='right')",
        "finally:",
        "    pyautogui.keyUp('shift')",
        "    pyautogui.keyUp('ctrl')",
        "try:",
        "    pyautogui.keyDown('alt')",
        "    pyautogui.moveTo(10, 20)",
        "    pyautogui.dragTo(300, 400, duration=0.5, button='middle')",
        "finally:",
        "    pyautogui.keyUp('alt')",
        "pyautogui.moveTo(10, 20)",
        "pyautogui.scroll(-3)",
        "pyautogui.moveTo(300, 400)",
        "pyautogui.hscroll(4)",
        "pyautogui.hotkey('ctrl', 'a')",
        "pyautogui.press('f5')",
        "try:",
        "    pyautogui.keyDown('shift')",
        "    pyautogui.press('down')",
        "    pyautogui.press('down')",
        "finally:",
        "    pyautogui.keyUp('shift')",
    ]
    interpret(code)


def test_a_lone_less_than_key_is_typed_not_pressed() -> None:
    assert interpret(render([ops.Hotkey(("<",))])).typed == "<"


@pytest.mark.parametrize("name", ADVERSARIAL[:-1] + ["gedit", "LibreOffice Calc", "~/a b.txt"])
def test_open_passes_the_name_as_one_literal(name: str) -> None:
    code = render([ops.Open(name)])
    # neither a file nor a program: the launcher gets the name typed
    trace = interpret(code, frozenset({"xclip"}))
    assert ("os.path.expanduser", (name,), {}) in trace.calls
    assert trace.keys == [("win",)]
    assert trace.typed == _newlines(name) + "\n"  # the name, then Enter
    assert not [c for c in trace.calls if c[0] == "subprocess.Popen"]
    # a program on PATH is started with the name as its whole argv
    started = interpret(code, frozenset({name, "xclip"}))
    popen = [c for c in started.calls if c[0] == "subprocess.Popen"]
    assert popen == [
        (
            "subprocess.Popen",
            ([name],),
            {"start_new_session": True, "stdout": "DEVNULL", "stderr": "DEVNULL"},
        ),
    ]
    assert string_constants(code) - TEMPLATE_STRINGS <= {name, *(r for _, r in text_runs(name))}


def test_open_uses_xdg_open_for_an_existing_path() -> None:
    code = render([ops.Open("~/report.odt")])
    assert "if os.path.exists(_target):\n    subprocess.Popen(['xdg-open', _target]" in code


@pytest.mark.parametrize("name", ADVERSARIAL[:-1] + ["Firefox", "file (1).txt — Mousepad"])
def test_activate_passes_the_name_as_one_literal(name: str) -> None:
    code = render([ops.Activate(name)])
    with_wmctrl = interpret(code, frozenset({"wmctrl"}))
    assert ("subprocess.run", (["wmctrl", "-a", name],), {"check": False}) in with_wmctrl.calls
    with_xdotool = interpret(code, frozenset({"xdotool"}))
    pattern = ere_escape(name)
    assert (
        "subprocess.run",
        (["xdotool", "search", "--onlyvisible", "--name", pattern, "windowactivate"],),
        {"check": False},
    ) in with_xdotool.calls
    assert string_constants(code) - TEMPLATE_STRINGS <= {name, pattern}


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=1))
def test_window_patterns_match_the_name_literally(name: str) -> None:
    assert re.fullmatch(ere_escape(name), name, flags=re.DOTALL)


def test_sleep_and_empty_plans() -> None:
    assert render([]) == "pass"
    assert (
        render([ops.Sleep(0.25), ops.Sleep(2)]) == "import time\ntime.sleep(0.25)\ntime.sleep(2.0)"
    )


@pytest.mark.parametrize(
    ("op", "error"),
    [
        (ops.Sleep(float("inf")), ValueError),
        (ops.Sleep(float("nan")), ValueError),
        (ops.Sleep(-1), ValueError),
        (ops.Click(P, "top"), ValueError),  # type: ignore[arg-type]
        (ops.Click(P, clicks=0), ValueError),
        ("pyautogui.click()", TypeError),
    ],
)
def test_bad_operations_are_refused(op: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        render([op])


def test_a_sleep_plan_runs_without_a_display() -> None:
    code = render([ops.Sleep(0.2), ops.Sleep(0.1)])
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    start = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-c", "import time; " + code],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert time.monotonic() - start >= 0.3


# -- whole actions --------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ADVERSARIAL[:10])
def test_actions_from_model_text_render_safely(text: str) -> None:
    action = parse_action(f"agent.type(element_description='the box', text={text!r}, enter=True)")
    assert isinstance(action, TypeAction)
    trace = interpret(action.to_pyautogui([P]))
    assert trace.calls[0] == ("pyautogui.click", (10, 20), {"clicks": 1, "button": "left"})
    assert trace.typed == _newlines(text) + "\n"
    click = ClickAction(element_description=text or "x", hold_keys=["ctrl"])
    interpret(click.to_pyautogui([Q]))


def test_set_cell_values_renders_name_box_navigation() -> None:
    action = SetCellValuesAction(
        cell_values={"A1": "Ünï <x>", "B2": None}, app_name="budget.ods", sheet_name="Data"
    )
    trace = interpret(action.to_pyautogui(), frozenset({"wmctrl", "xclip"}))
    assert trace.calls[1] == ("subprocess.run", (["wmctrl", "-a", "budget.ods"],), {"check": False})
    assert trace.keys == [
        ("ctrl", "shift", "f5"),
        ("delete",),
        ("f2",),
        ("delete",),
        ("ctrl", "shift", "f5"),
        ("delete",),
    ]
    assert trace.typed == "$'Data'.A1\nÜnï <x>\n$'Data'.B2\n"


def test_paste_uses_the_platform_modifier() -> None:
    plan = [ops.TypeText("é\x7f")]
    assert "pyautogui.hotkey('ctrl', 'v')" in render(plan)
    assert "pyautogui.hotkey('ctrl', 'v')" in render(plan, os="windows")
    assert "pyautogui.hotkey('command', 'v')" in render(plan, os="darwin")
    assert "'ctrl'" not in render(plan, os="darwin")
