"""Reading one action from a model reply: forms, precedence, every error kind, and properties.

The property tests feed arbitrary and adversarial text: ``parse_action`` returns an action or
raises ``ActionParseError``, nothing else, and nothing in the text is ever executed.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_s.actions import (
    ACTION_MODELS,
    ActionModel,
    ActionParseError,
    ClickAction,
    DoneAction,
    HotkeyAction,
    SetCellValuesAction,
    TypeAction,
    WaitAction,
    parse_action,
)
from agent_s.actions.parse import MAX_REPLY_CHARS

# One call per action, keyword form, and the action it must give.
EXAMPLES: list[tuple[str, ActionModel]] = [
    (
        'agent.click("the OK button", num_clicks=2, button_type="right", hold_keys=["Ctrl"])',
        ClickAction(
            element_description="the OK button",
            num_clicks=2,
            button_type="right",
            hold_keys=["ctrl"],
        ),
    ),
    (
        'agent.type(element_description="search box", text="héllo <b>", overwrite=True, '
        "enter=True)",
        TypeAction(element_description="search box", text="héllo <b>", overwrite=True, enter=True),
    ),
    (
        "agent.scroll(element_description='the file list', clicks=-5, shift=False)",
        ACTION_MODELS["scroll"](element_description="the file list", clicks=-5),
    ),
    (
        'agent.drag_and_drop(starting_description="a.txt", ending_description="Trash")',
        ACTION_MODELS["drag_and_drop"](starting_description="a.txt", ending_description="Trash"),
    ),
    (
        'agent.highlight_text_span(starting_phrase="Once upon", ending_phrase="ever after.")',
        ACTION_MODELS["highlight_text_span"](
            starting_phrase="Once upon", ending_phrase="ever after."
        ),
    ),
    ("agent.hotkey(keys=['ctrl', 'shift', 't'])", HotkeyAction(keys=["ctrl", "shift", "t"])),
    (
        "agent.hold_and_press(hold_keys=['shift'], press_keys=['down', 'down'])",
        ACTION_MODELS["hold_and_press"](hold_keys=["shift"], press_keys=["down", "down"]),
    ),
    (
        "agent.open(app_or_filename='~/report.odt')",
        ACTION_MODELS["open"](app_or_filename="~/report.odt"),
    ),
    (
        "agent.switch_applications(app_code='Firefox')",
        ACTION_MODELS["switch_applications"](app_code="Firefox"),
    ),
    (
        "agent.set_cell_values(cell_values={'A1': 'Name', 'B1': 3.5, 'C1': True, 'D1': None}, "
        "app_name='budget.ods', sheet_name='Data')",
        SetCellValuesAction(
            cell_values={"A1": "Name", "B1": 3.5, "C1": True, "D1": None},
            app_name="budget.ods",
            sheet_name="Data",
        ),
    ),
    (
        "agent.save_to_knowledge(text=['the code is 4411'])",
        ACTION_MODELS["save_to_knowledge"](text=["the code is 4411"]),
    ),
    (
        "agent.ask_user('Which of the two March files?')",
        ACTION_MODELS["ask_user"](question="Which of the two March files?"),
    ),
    (
        "agent.call_code_agent(task='rename the files')",
        ACTION_MODELS["call_code_agent"](task="rename the files"),
    ),
    ("agent.wait(seconds=2)", WaitAction(seconds=2)),
    ("agent.done(answer='42')", DoneAction(answer="42")),
    (
        "agent.fail(reason='the file does not exist')",
        ACTION_MODELS["fail"](reason="the file does not exist"),
    ),
]


def test_examples_cover_every_action() -> None:
    assert {action.action for _, action in EXAMPLES} == set(ACTION_MODELS)


def _positional(action: ActionModel) -> str:
    values = [getattr(action, name) for name in action.argument_names()]
    values = [list(v) if isinstance(v, tuple) else v for v in values]
    return f"agent.{action.action}({', '.join(map(repr, values))})"


def _json(action: ActionModel, nesting: str | None = None) -> str:
    arguments = action.model_dump(mode="json", exclude={"action"})
    if nesting is None:
        return json.dumps({"action": action.action, **arguments})
    return json.dumps({"action": action.action, nesting: arguments})


WRAPPERS = [
    "{}",
    "I will do this now.\n{}",
    "Reasoning: the dialog is open.\n```python\n{}\n```",
    "```py\n{}\n```\nThat should work.",
    "Next:\n```\n{}\n```",
    "```python\n\n    {}\n```",
]


@pytest.mark.parametrize("wrapper", WRAPPERS)
@pytest.mark.parametrize(("call", "expected"), EXAMPLES, ids=[a.action for _, a in EXAMPLES])
def test_every_action_in_every_form(call: str, expected: ActionModel, wrapper: str) -> None:
    assert parse_action(wrapper.format(call)) == expected
    assert parse_action(wrapper.format(_positional(expected))) == expected


@pytest.mark.parametrize(("call", "expected"), EXAMPLES, ids=[a.action for _, a in EXAMPLES])
def test_every_action_as_json(call: str, expected: ActionModel) -> None:
    arguments = expected.model_dump(mode="json", exclude={"action"})
    for text in (
        _json(expected),
        _json(expected, "args"),
        _json(expected, "arguments"),
        f"Action:\n```json\n{_json(expected)}\n```",
        f"I'll do this: {_json(expected, 'args')} and then look again.",
        json.dumps({"action": expected.action, "arguments": json.dumps(arguments)}),
    ):
        assert parse_action(text) == expected, text


def test_calls_spread_over_lines_with_parens_and_quotes_inside_strings() -> None:
    text = """Let me type it.
```python
agent.type(
    element_description="the (main) editor",   # a comment with agent.click("no")
    text='''first line
second ) line with "quotes" and (parens''',
    enter=True,
)
```"""
    action = parse_action(text)
    assert action == TypeAction(
        element_description="the (main) editor",
        text='first line\nsecond ) line with "quotes" and (parens',
        enter=True,
    )


def test_fenced_calls_win_over_prose_and_bare_names_work_in_fences() -> None:
    text = 'I could use agent.click("Cancel") but\n```python\nclick("OK")\n```'
    assert parse_action(text) == ClickAction(element_description="OK")
    assert parse_action("```\n# agent.done()\ndone()\n```") == DoneAction()
    # prose outside fences needs the agent. prefix: "click (the button)" is not a call
    assert parse_action('Then click (the button): agent.click("OK")').element_description == "OK"
    # calls inside a call's string are text, not calls
    assert parse_action("agent.type(text=\"agent.click('x')\")").text == "agent.click('x')"


def test_json_in_a_fence_wins_over_a_call_in_prose() -> None:
    text = 'Maybe agent.click("x")?\n```json\n{"action": "wait", "time": 3}\n```'
    assert parse_action(text) == WaitAction(seconds=3)
    nested = '{"action": "click", "args": {"element_description": "a", "action": "click"}}'
    assert parse_action(nested) == ClickAction(element_description="a")


def test_wait_time_alias_and_implicit_string_concatenation() -> None:
    assert parse_action("agent.wait(time=1.5)") == WaitAction(seconds=1.5)
    assert parse_action("agent.wait(3)") == WaitAction(seconds=3)
    assert parse_action('agent.type(text="a" "b")').text == "ab"
    assert parse_action("agent.hotkey(('ctrl', 'c'))") == HotkeyAction(keys=["ctrl", "c"])


# -- errors ---------------------------------------------------------------------------------------

ERRORS: list[tuple[str, str, list[str]]] = [
    ("I think the task is finished.", "none", ["no action found", "agent.click(", "done"]),
    ("", "none", ["no action found"]),
    ('{"no": "action"}', "none", ["no action found"]),
    ('agent.click("a")\nagent.click("b")', "several", ["found 2 actions", "exactly one"]),
    (
        '```python\nagent.click("a")\n```\n```python\nagent.done()\n```',
        "several",
        ["agent.click(...)", "agent.done(...)"],
    ),
    ('{"action": "done"} {"action": "fail"}', "several", ["found 2 actions"]),
    (
        "agent.frobnicate()",
        "unknown_action",
        ["unknown action 'frobnicate'", "valid actions: click, type, scroll"],
    ),
    ("agent.clik('OK')", "unknown_action", ["did you mean 'click'?"]),
    ('{"action": "press", "keys": ["a"]}', "unknown_action", ["unknown action 'press'"]),
    (
        "agent.type(text=os.getcwd())",
        "non_literal",
        [
            "argument 'text' of agent.type is not a literal value: os.getcwd()",
            "Nothing is evaluated",
        ],
    ),
    ("agent.click(x)", "non_literal", ["argument 'element_description'", ": x."]),
    ("agent.type(text=f'{x}')", "non_literal", ["argument 'text'"]),
    ("agent.type(text='a' + 'b')", "non_literal", ["'a' + 'b'"]),
    ("agent.type(text=self.text)", "non_literal", ["self.text"]),
    ("agent.click(*args)", "non_literal", ["unpacked from *args"]),
    ("agent.click(**kwargs)", "non_literal", ["unpacked from **kwargs"]),
    ("agent.click(lambda: 0)", "non_literal", ["lambda: 0"]),
    ("agent.type(text=(y := 'a'))", "non_literal", ["y := 'a'"]),
    ("agent.type(text=[c for c in 'ab'])", "non_literal", ["[c for c in 'ab']"]),
    (
        "agent.click('a', 5)",
        "bad_argument",
        [
            "invalid arguments for click",
            "num_clicks: should be less than or equal to 3 (got 5)",
            "Usage: agent.click(element_description: str, num_clicks: int = 1",
        ],
    ),
    (
        "agent.click('a', 1, 'left', [], 'x')",
        "bad_argument",
        ["takes at most 4 positional argument(s)", "got 5"],
    ),
    ("agent.click()", "bad_argument", ["missing required argument 'element_description'"]),
    ("agent.click('')", "bad_argument", ["element_description: must not be empty"]),
    (
        "agent.click('a', colour='red')",
        "bad_argument",
        ["unknown argument 'colour'", "element_description, num_clicks, button_type, hold_keys"],
    ),
    ("agent.click('a', element_description='b')", "bad_argument", ["given twice"]),
    ("agent.hotkey(['ctrl', 'kk'])", "bad_argument", ["keys.1: unknown key 'kk'"]),
    ("agent.hotkey('ctrl+kk')", "bad_argument", ["unknown key 'kk'", "Example: agent.hotkey("]),
    (
        'agent.type("hello")',
        "bad_argument",
        ["'hello' is the element to type into", 'agent.type(text="hello")'],
    ),
    ("agent.scroll('list', 0)", "bad_argument", ["clicks: must not be 0"]),
    ("agent.wait(0)", "bad_argument", ["seconds: should be greater than 0 (got 0)"]),
    ("agent.type(text={1, 2})", "bad_argument", ["text: should be a valid string"]),
    (
        "agent.set_cell_values({'A1': 1, 'A': 2}, 'x.ods')",
        "bad_argument",
        ["cell 'A' is not an A1 reference such as 'B3'"],
    ),
    ('{"action": 3}', "bad_argument", ['"action" must be the action name as a string']),
    (
        '{"action": "click", "args": {"element_description": "a"}, "num_clicks": 2}',
        "bad_argument",
        ['put every argument of click inside "args"'],
    ),
    (
        '{"action": "click", "arguments": "[1, 2]"}',
        "bad_argument",
        ['"arguments" of click must be a JSON object'],
    ),
    (
        '{"action": "click", "element_description": "a", "action2": 1}',
        "bad_argument",
        ["unknown argument 'action2'"],
    ),
    ("agent.click('a'", "syntax", ["never closed"]),
    ("agent.click('a) and more", "syntax", ["never closed"]),
    ("agent.click('a']", "syntax", ["']' does not match"]),
    ("agent.click('a' 'b' +)", "syntax", ["is not a valid call"]),
    (
        "agent.click(element_description='a', 'b')",
        "syntax",
        ["positional argument follows keyword argument"],
    ),
    ("agent.click(" + "(" * 300 + ")" * 300 + ")", "syntax", []),
    ("x" * (MAX_REPLY_CHARS + 1), "syntax", [f"at most {MAX_REPLY_CHARS} are read"]),
]


@pytest.mark.parametrize(("text", "kind", "fragments"), ERRORS)
def test_errors_say_what_is_wrong(text: str, kind: str, fragments: list[str]) -> None:
    with pytest.raises(ActionParseError) as info:
        parse_action(text)
    assert info.value.kind == kind, str(info.value)
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message
    assert len(message) < 800


def test_every_error_kind_is_exercised() -> None:
    assert {kind for _, kind, _ in ERRORS} == KINDS


def test_non_string_input_is_a_caller_error() -> None:
    with pytest.raises(TypeError):
        parse_action(b"agent.done()")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "text",
    [
        "agent.a(" * 20_000,
        "agent.done()" * 15_000,
        "{" * 150_000,
        '{"a":' * 30_000,
        "```" * 60_000,
        "(" * 150_000,
        "agent.type(text='" + "(" * 150_000,
        '{"action": "done", "answer": "' + "x" * 150_000,
    ],
    ids=["open-calls", "many-calls", "braces", "deep-json", "fences", "parens", "string", "long"],
)
def test_pathological_replies_fail_fast(text: str) -> None:
    start = time.perf_counter()
    with pytest.raises(ActionParseError):
        parse_action(text)
    assert time.perf_counter() - start < 5


# -- properties -----------------------------------------------------------------------------------

NAMES = st.sampled_from([*ACTION_MODELS, "frobnicate", "Click", "eval", "__import__", "exec"])
IDENTIFIERS = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True)
FRAGMENTS = st.one_of(
    st.sampled_from(
        [
            '"the OK button"',
            "'x'",
            '"a)b"',
            "'(('",
            '"""tri\n"""',
            "'''",
            "1",
            "-3",
            "2.5",
            "1e999",
            "True",
            "None",
            "[]",
            "['ctrl', 'c']",
            "{'A1': 1}",
            "{1: [2]}",
            "{[1]: 2}",
            "{1, [2]}",
            "(",
            ")",
            "[",
            "]",
            "{",
            "}",
            ",",
            ", ",
            "=",
            "text=",
            "num_clicks=",
            "keys=",
            "seconds=",
            "time=",
            "__import__('os').system('x')",
            "lambda: 0",
            "(y := 1)",
            "[i for i in range(3)]",
            "f'{x}'",
            "f'{(1)}'",
            "*args",
            "**kw",
            "os.getcwd()",
            "\\",
            "\n",
            "# c\n",
            "'",
            '"',
            "```",
            "agent.click(",
            "agent.done()",
            "\x00",
            "é",
            "\ud800",
            "b'x'",
            "1j",
            "...",
            "0x10",
            "1_0",
            "9" * 5000,
            "not",
            "await",
            "yield",
            "\t",
            "\r\n",
            "\f",
            "$",
            "?",
            "`",
            "{{",
            "}}",
            "%s",
        ]
    ),
    st.text(max_size=6),
)
CALLS = st.builds(
    lambda prefix, name, args, close: f"{prefix}{name}({''.join(args)}{close}",
    st.sampled_from(["agent.", "agent.", "", "self.agent.", "agent . "]),
    st.one_of(NAMES, IDENTIFIERS),
    st.lists(FRAGMENTS, max_size=8),
    st.sampled_from([")", ")", "", "))", "]"]),
)
FENCES = st.sampled_from(
    ["{}", "```python\n{}\n```", "```\n{}\n```", "```py\n{}", "```json\n{}\n```", "{}\n```"]
)
REPLIES = st.builds(
    lambda before, calls, after, fence: before + fence.format("\n".join(calls)) + after,
    st.text(max_size=30),
    st.lists(CALLS, min_size=1, max_size=3),
    st.text(max_size=30),
    FENCES,
)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=10,
)
JSON_REPLIES = st.builds(
    lambda name, args, nest, fence: fence.format(
        json.dumps({"action": name, **({nest: args} if nest else args)})
    ),
    st.one_of(NAMES, st.text(max_size=5)),
    st.dictionaries(
        st.sampled_from(["element_description", "text", "keys", "seconds", "x", "time"]),
        JSON_VALUES,
        max_size=4,
    ),
    st.sampled_from([None, "args", "arguments"]),
    FENCES,
)


KINDS = {"none", "several", "unknown_action", "non_literal", "bad_argument", "syntax"}


def _only_actions_or_parse_errors(text: str) -> None:
    try:
        action = parse_action(text)
    except ActionParseError as err:
        error = err
    else:
        assert isinstance(action, tuple(ACTION_MODELS.values()))
        return
    assert error.kind in KINDS
    assert str(error)


@settings(max_examples=600, deadline=None)
@given(st.text())
def test_arbitrary_text(text: str) -> None:
    _only_actions_or_parse_errors(text)


@settings(max_examples=1000, deadline=None)
@given(REPLIES)
def test_arbitrary_call_shaped_replies(text: str) -> None:
    _only_actions_or_parse_errors(text)


@settings(max_examples=400, deadline=None)
@given(JSON_REPLIES)
def test_arbitrary_json_replies(text: str) -> None:
    _only_actions_or_parse_errors(text)


ATTACKS = [
    "agent.type(text=__import__('os').system('touch SENTINEL'))",
    "agent.click(open('SENTINEL', 'w'))",
    "agent.type(text=[open('SENTINEL', 'w') for _ in range(1)])",
    "agent.wait(__import__('pathlib').Path('SENTINEL').touch())",
    "agent.type(text=(lambda: open('SENTINEL', 'w'))())",
    "agent.type(text=f\"{open('SENTINEL', 'w')}\")",
    "agent.type(**{'text': open('SENTINEL', 'w')})",
    "agent.type(*[open('SENTINEL', 'w')])",
    "agent.click('x', num_clicks=exec(\"open('SENTINEL', 'w')\"))",
    "agent.click('x', num_clicks=eval(\"open('SENTINEL', 'w')\"))",
    "agent.click('x'); open('SENTINEL', 'w')",
    "agent.click('x')(open('SENTINEL', 'w'))",
    "agent.click(('x', open('SENTINEL', 'w'))[0])",
    "agent.click({'a': open('SENTINEL', 'w')}['a'])",
    "agent.type(text='''\n'''); open('SENTINEL', 'w'); ('''\n''')",
    "agent.__class__.__init__(open('SENTINEL', 'w'))",
    '{"action": "type", "text": "\'); open(\'SENTINEL\', \'w\'); (\'"}',
]


def test_nothing_in_the_reply_is_executed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for attack in ATTACKS:
        for text in (attack, f"```python\n{attack}\n```", f"Sure.\n{attack}\nDone."):
            _only_actions_or_parse_errors(text)
        assert not (tmp_path / "SENTINEL").exists(), attack
    assert list(tmp_path.iterdir()) == []


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(st.sampled_from(ATTACKS), min_size=1, max_size=3),
    st.lists(FRAGMENTS, max_size=4),
    FENCES,
)
def test_nothing_is_executed_whatever_surrounds_it(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    attacks: list[str],
    noise: list[str],
    fence: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    _only_actions_or_parse_errors(fence.format("".join(noise) + "\n".join(attacks)))
    assert not (tmp_path / "SENTINEL").exists()


def test_parser_source_never_evaluates() -> None:
    import ast

    import agent_s.actions.parse as module

    tree = ast.parse(Path(module.__file__).read_text())
    called = {
        node.func.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }
    assert not called & {"eval", "exec", "compile", "__import__", "open"}
    dotted = {
        f"{node.value.id}.{node.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
    }
    assert "ast.literal_eval" in dotted
    assert "ast.parse" in dotted
    assert not {name for name in dotted if name.split(".")[1] in {"eval", "exec", "compile"}} - {
        "re.compile"
    }


# -- natural values and other families' formats ---------------------------------------------------

TRANSLATED: list[tuple[str, dict[str, object]]] = [
    ("agent.done(answer=42)", {"action": "done", "answer": "42"}),
    ('agent.save_to_knowledge("x")', {"action": "save_to_knowledge", "text": ["x"]}),
    ('agent.hotkey(["ctrl+s"])', {"action": "hotkey", "keys": ["ctrl", "s"]}),
    ('agent.hotkey("ctrl+s")', {"action": "hotkey", "keys": ["ctrl", "s"]}),
    # UI-TARS
    (
        "Thought: save.\nAction: click(start_box='<|box_start|>(412,300)<|box_end|>')",
        {"action": "click", "element_description": "(412, 300)"},
    ),
    ("Action: left_double(point='<point>5 6</point>')", {"num_clicks": 2}),
    ("Action: right_single(start_box='(5,6)')", {"button_type": "right"}),
    ("Action: type(content='abc\\n')", {"action": "type", "text": "abc", "enter": True}),
    ("Action: hotkey(key='ctrl c')", {"action": "hotkey", "keys": ["ctrl", "c"]}),
    (
        "Action: scroll(start_box='(1,2)', direction='left')",
        {"action": "scroll", "clicks": -5, "shift": True},
    ),
    ("Action: wait()", {"action": "wait", "seconds": 5.0}),
    ("Action: finished(content='7')", {"action": "done", "answer": "7"}),
    ("```python\nwait()\n```", {"action": "wait", "seconds": 5.0}),
    ("```python\ntype(content='x')\n```", {"action": "type", "text": "x"}),
    # our names at the start of a line, outside a fence
    ('click("the OK button")', {"action": "click", "element_description": "the OK button"}),
    # JSON tool calls
    (
        '{"name": "type", "arguments": "{\\"text\\": \\"hi\\"}"}',
        {"action": "type", "text": "hi"},
    ),
    (
        '{"type": "tool_use", "id": "t", "name": "computer", "input": '
        '{"action": "left_click", "coordinate": [3, 4], "text": "ctrl+shift"}}',
        {"element_description": "(3, 4)", "hold_keys": ["ctrl", "shift"]},
    ),
    (
        '<tool_call>{"name": "computer_use", "arguments": {"action": "key", "keys": ["alt", "f4"]}}'
        "</tool_call>",
        {"action": "hotkey", "keys": ["alt", "f4"]},
    ),
    (
        '{"type": "computer_call", "action": {"type": "scroll", "x": 1, "y": 2, '
        '"scroll_x": 250, "scroll_y": 0}}',
        {"action": "scroll", "clicks": 2, "shift": True},
    ),
    (
        '{"type": "computer_call", "action": {"type": "click", "button": "wheel", "x": 1, "y": 2}}',
        {"button_type": "middle"},
    ),
    # pyautogui
    ("```python\npyautogui.click(1.5, 2)\n```", {"element_description": "(1.5, 2)"}),
    (
        "```python\npyautogui.click(9, 9)\npyautogui.write('a')\npyautogui.press('enter')\n```",
        {"action": "type", "element_description": "(9, 9)", "text": "a", "enter": True},
    ),
    (
        "```python\npyautogui.keyDown('alt')\npyautogui.press('tab', presses=2)\n"
        "pyautogui.keyUp('alt')\n```",
        {"action": "hold_and_press", "hold_keys": ["alt"], "press_keys": ["tab", "tab"]},
    ),
    ("```python\ntime.sleep(1)\n```", {"action": "wait", "seconds": 1}),
    ("```\nFAIL\n```", {"action": "fail"}),
]


@pytest.mark.parametrize(("text", "fields"), TRANSLATED)
def test_other_forms_translate_into_typed_actions(text: str, fields: dict[str, object]) -> None:
    dumped = parse_action(text).model_dump(mode="json")
    for key, value in fields.items():
        assert dumped[key] == value, (key, dumped)


@pytest.mark.parametrize(
    ("text", "kind", "fragment"),
    [
        ("```python\npyautogui.press('a', presses=1000000000)\n```", "non_literal", "presses="),
        ("```python\npyautogui.press('a', presses=500)\n```", "non_literal", "1 to 20"),
        ("```python\npyautogui.keyDown('a')\n```", "non_literal", "never released"),
        (
            '{"type": "computer_call", "action": {"type": "click", "x": 1, "y": 2, "button": []}}',
            "bad_argument",
            "button_type",
        ),
        ('{"type": ["click"], "x": 1}', "none", "no action found"),
        ("Action: click(start_box='(1,2,3)')", "bad_argument", "is not a point"),
        ("Action: scroll(start_box='(1,2)', direction='down', extra=f(x))", "non_literal", "f(x)"),
    ],
)
def test_other_forms_are_refused_with_the_reason(text: str, kind: str, fragment: str) -> None:
    with pytest.raises(ActionParseError) as info:
        parse_action(text)
    assert info.value.kind == kind, str(info.value)
    assert fragment in str(info.value)


def test_no_translator_evaluates_anything() -> None:
    import ast

    import agent_s.actions as package

    for path in Path(package.__file__).parent.glob("*.py"):
        tree = ast.parse(path.read_text())
        called = {
            node.func.id
            for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
        }
        assert not called & {"eval", "exec", "compile", "__import__", "open"}, path.name


FOREIGN_NAMES = st.sampled_from(
    ["click", "left_double", "drag", "hotkey", "type", "scroll", "wait", "finished", "hover"]
)
FOREIGN_ARGS = st.lists(
    st.sampled_from(
        [
            "start_box='(1,2)'",
            "start_box='<|box_start|>(1,2)<|box_end|>'",
            "point='<point>1 2</point>'",
            "end_box='[1, 2, 3, 4]'",
            "key='ctrl c'",
            "content='x\\n'",
            "direction='down'",
            "direction=5",
            "start_box=(1, 2)",
            "start_box=None",
            "'(1,2)'",
            "content=[1]",
            "x=y",
        ]
    ),
    max_size=3,
)
UITARS_REPLIES = st.builds(
    lambda name, args, prefix: f"{prefix}{name}({', '.join(args)})",
    FOREIGN_NAMES,
    FOREIGN_ARGS,
    st.sampled_from(["Action: ", "Thought: t\nAction: ", "", "```\n"]),
)
COMPUTER_VALUES = st.one_of(
    st.none(),
    st.integers(-5, 5000),
    st.floats(allow_nan=True),
    st.text(max_size=8),
    st.lists(st.integers(-5, 5000), max_size=5),
    st.sampled_from(["ctrl+s", "down", "success", "left", [1, 2], {"x": 1, "y": 2}]),
)
COMPUTER_REPLIES = st.builds(
    lambda wrap, action, args: wrap(
        {"action": action, **args} if "type" not in wrap.__name__ else {"type": action, **args}
    ),
    st.sampled_from(
        [
            lambda a: json.dumps({"name": "computer_use", "arguments": a}),
            lambda a: json.dumps({"type": "tool_use", "name": "computer", "input": a}),
            lambda a: json.dumps(a),
        ]
    ),
    st.sampled_from(
        [
            "left_click",
            "key",
            "type",
            "scroll",
            "hscroll",
            "wait",
            "terminate",
            "answer",
            "left_click_drag",
            "mouse_move",
            "double_click",
            "click",
            "keypress",
            "drag",
        ]
    ),
    st.dictionaries(
        st.sampled_from(
            [
                "coordinate",
                "start_coordinate",
                "text",
                "keys",
                "pixels",
                "scroll_direction",
                "scroll_amount",
                "time",
                "status",
                "x",
                "y",
                "path",
                "button",
            ]
        ),
        COMPUTER_VALUES,
        max_size=4,
    ),
)
CODE_LINES = st.lists(
    st.sampled_from(
        [
            "import pyautogui",
            "pyautogui.click(1, 2)",
            "pyautogui.click()",
            "pyautogui.moveTo(3, 4)",
            "pyautogui.dragTo(5, 6)",
            "pyautogui.mouseDown()",
            "pyautogui.mouseUp(7, 8)",
            "pyautogui.write('a')",
            "pyautogui.typewrite(['a', 'b'])",
            "pyautogui.press('enter')",
            "pyautogui.hotkey('ctrl', 'a')",
            "pyautogui.keyDown('shift')",
            "pyautogui.keyUp('shift')",
            "pyautogui.scroll(-3, x=1, y=2)",
            "pyautogui.scroll(-3)",
            "pyperclip.copy('é')",
            "pyautogui.hotkey('ctrl', 'v')",
            "time.sleep(0.5)",
            "time.sleep('x')",
            "x = 1",
            "pyautogui.click(x, 2)",
            "pyautogui.press('a', presses=3)",
            "os.remove('SENTINEL')",
        ]
    ),
    min_size=1,
    max_size=5,
)


@settings(max_examples=200, deadline=None)
@given(UITARS_REPLIES)
def test_arbitrary_uitars_replies(text: str) -> None:
    _only_actions_or_parse_errors(text)


@settings(max_examples=300, deadline=None)
@given(COMPUTER_REPLIES)
def test_arbitrary_computer_use_replies(text: str) -> None:
    _only_actions_or_parse_errors(text)


@settings(max_examples=300, deadline=None)
@given(CODE_LINES, st.sampled_from(["```python\n{}\n```", "{}", "Thought.\n{}\nDone."]))
def test_arbitrary_pyautogui_code(lines: list[str], fence: str) -> None:
    _only_actions_or_parse_errors(fence.format("\n".join(lines)))


def test_hotkey_keys_may_be_given_one_by_one_as_pyautogui_takes_them() -> None:
    assert parse_action('agent.hotkey("ctrl", "s")') == HotkeyAction(keys=["ctrl", "s"])
    with pytest.raises(ActionParseError) as info:
        parse_action('agent.hotkey("ctrl", x)')
    assert info.value.kind == "non_literal"
    assert ": x." in str(info.value)
