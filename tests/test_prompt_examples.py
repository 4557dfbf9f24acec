"""Every example the model is shown parses to the action it illustrates.

Examples are extracted, not listed: from the prompt files (fenced calls, inline calls, action
names in backticks, key combinations, element descriptions), from the generated action catalogue
(each action's "Example:" line and every "e.g." value in its argument notes) and from every error
hint the parser and the models produce (each "e.g." / "Example:" call or JSON object in the
message, and in the source of agent_s.actions). A prompt edit that shows an example the parser
refuses fails here.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

import agent_s.actions as actions_package
from agent_s.actions import ACTION_MODELS, ActionParseError, action_catalogue, parse_action
from agent_s.actions.models import ActionModel
from agent_s.grounding.replies import parse_location
from agent_s.keys import normalize_key

PROMPTS = Path(__file__).resolve().parents[1] / "prompts"
ACTIONS_SOURCE = Path(actions_package.__file__).parent
PLACEHOLDER = "action_name"  # the reply-format template, agent.action_name(argument=value)
_START = re.compile(r"(?:\be\.g\.|\bExample:|\bfor example)[ \t]*")
_CALL_START = re.compile(r"(?<![\w.])(?:agent|pyautogui)\.\w+\(")


# -- extraction -----------------------------------------------------------------------------------


def _balanced(text: str, start: int) -> str | None:
    """The call ``name(...)`` or JSON object ``{...}`` starting at ``start``, if it closes."""
    head = re.match(r"[A-Za-z_][\w.]*\(|\{", text[start:])
    if head is None:
        return None
    depth, quote, index = 0, "", start
    while index < len(text):
        char = text[index]
        if quote:
            if char == "\\":
                index += 1
            elif char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth == 0:
                return text[start : index + 1]
        index += 1
    return None


def examples_in(text: str, reply: str = "") -> list[str]:
    """Each example call or JSON object in ``text``: after "e.g.", "Example:", "for example",
    and every ``agent.name(...)`` / ``pyautogui.name(...)`` call but those quoting ``reply``
    (feedback that quotes the model's own call back shows no example with it)."""
    marked = [_balanced(text, m.end()) for m in _START.finditer(text)]
    free = [
        _balanced(text, m.start())
        for m in _CALL_START.finditer(text)
        # "Usage: agent.click(element_description: str, ...)" is a signature, not an example
        if not text[: m.start()].endswith("Usage: ")
    ]
    found = marked + [e for e in free if e and e not in reply]
    # "found 2 actions (agent.click(...), ...)" names what was found; it is no example
    return list(dict.fromkeys(e for e in found if e and not e.endswith("(...)")))


def _literal_after(text: str, start: int) -> tuple[Any, int] | None:
    """A Python literal (quoted string, list, dict) written at ``start``, and where it ends."""
    if start >= len(text) or text[start] not in "'\"[{(":
        return None
    for end in range(start + 1, min(len(text), start + 400) + 1):
        if text[end - 1] not in "'\"]})":
            continue
        try:
            return ast.literal_eval(text[start:end]), end
        except (ValueError, SyntaxError):
            continue
    return None


def literals_after_eg(text: str) -> list[Any]:
    """The literal values given as examples in an argument note: "e.g. ['ctrl'] or ['a']"."""
    values = []
    for match in _START.finditer(text):
        found = _literal_after(text, match.end())
        while found is not None:
            value, end = found
            values.append(value)
            more = re.match(r"\s+or\s+", text[end:])
            found = _literal_after(text, end + more.end()) if more else None
    return values


def _expect_action(example: str, name: str | None = None) -> ActionModel:
    try:
        action = parse_action(example)
    except ActionParseError as err:
        pytest.fail(f"the example {example!r} does not parse: {err}")
    if name is not None:
        assert action.action == name, (example, action)
    return action


def _named(example: str) -> str | None:
    match = re.match(r"agent\.(\w+)\(", example)
    return match.group(1) if match else None


# -- the prompts ----------------------------------------------------------------------------------


def _prompt_texts() -> dict[str, str]:
    texts = {path.name: path.read_text(encoding="utf-8") for path in PROMPTS.glob("*.md")}
    assert "worker.md" in texts
    return texts


def _worker_calls(text: str) -> list[str]:
    fenced = re.findall(r"```python\n(.*?)```", text, re.DOTALL)
    inline = re.findall(r"`(agent\.\w+\(.*?\))`", text)
    calls = [line.strip() for block in fenced for line in block.splitlines() if line.strip()]
    return calls + inline + [e for e in examples_in(text) if e.startswith("agent.")]


def test_every_call_in_the_worker_prompt_parses_to_its_action() -> None:
    calls = _worker_calls(_prompt_texts()["worker.md"])
    assert calls, "the worker prompt shows no call at all"
    placeholders = [call for call in calls if _named(call) == PLACEHOLDER]
    for call in calls:
        if _named(call) == PLACEHOLDER:
            continue  # the format template, not an action: checked below
        _expect_action(call, _named(call))
    for call in placeholders:  # the template is refused with the valid names, never acted on
        with pytest.raises(ActionParseError) as info:
            parse_action(call)
        assert info.value.kind == "unknown_action"
        assert "valid actions: click" in str(info.value)


def test_every_action_named_in_a_prompt_exists() -> None:
    for name, text in _prompt_texts().items():
        if name == "code_agent.md":
            continue  # names the code agent's own markers, not actions
        named = set(re.findall(r"`([a-z]+(?:_[a-z]+)+|[a-z]+)`", text))
        for word in named:
            if word in {"python", "bash"}:
                continue
            assert word in ACTION_MODELS, f"{name} names `{word}`, which is no action"


def test_every_key_combination_in_the_prompts_is_a_hotkey_that_parses() -> None:
    text = "\n".join(_prompt_texts().values())
    combos = set(
        re.findall(
            r"(?<![\w+])((?:\{\{ primary_modifier \}\}|[a-z][a-z0-9]*)(?:\+[a-z0-9]+)+)(?![\w+])",
            text,
        )
    )
    assert combos, "the prompts show no key combination"
    for combo in combos:
        for modifier in ("ctrl", "command"):
            written = combo.replace("{{ primary_modifier }}", modifier)
            action = _expect_action(f'agent.hotkey("{written}")', "hotkey")
            assert "+".join(action.keys) == written.replace("cmd", "command"), combo  # type: ignore[attr-defined]


def test_every_element_description_example_in_the_prompts_works() -> None:
    text = _prompt_texts()["worker.md"]
    sections = dict(
        re.findall(r"<!-- section: ([\w.]+) -->\n(.*?)(?=<!-- section:|\Z)", text, re.S)
    )
    found = 0
    for name, body in sections.items():
        if not name.startswith("grounding."):
            continue
        for description in re.findall(r'"([^"{}]+)"', body):
            found += 1
            action = _expect_action(f"agent.click({description!r})", "click")
            assert action.targets()[0].text == description
            if name == "grounding.native":
                # the native form: exactly one point, which the native grounder reads
                assert parse_location(description).point == tuple(
                    float(v) for v in re.findall(r"\d+", description)[-2:]
                )
    assert found, "the grounding sections show no element description"


def test_the_code_agent_prompt_shows_valid_python() -> None:
    text = _prompt_texts()["code_agent.md"]
    for block in re.findall(r"```python\n(.*?)```", text, re.DOTALL):
        ast.parse(block)


# -- the catalogue --------------------------------------------------------------------------------


def _catalogue_entries(catalogue: str) -> dict[str, str]:
    entries = {}
    for entry in catalogue.split("\n\n"):
        match = re.match(r"agent\.(\w+)\(", entry)
        if match:
            entries[match.group(1)] = entry
    return entries


def test_every_catalogue_entry_has_an_example_that_parses_to_its_action() -> None:
    entries = _catalogue_entries(action_catalogue())
    assert set(entries) == set(ACTION_MODELS)
    for name, entry in entries.items():
        examples = re.findall(r"^    Example: (.*)$", entry, re.MULTILINE)
        assert len(examples) == 1, name
        _expect_action(examples[0], name)


def test_the_catalogue_with_marks_shows_examples_that_parse_and_name_marks() -> None:
    """Set-of-marks runs: each pointing action's entry adds an example naming a mark."""
    entries = _catalogue_entries(action_catalogue(marks=True))
    assert set(entries) == set(ACTION_MODELS)
    named = 0
    for name, entry in entries.items():
        examples = re.findall(r"^    Example: (.*)$", entry, re.MULTILINE)
        actions = [_expect_action(example, name) for example in examples]
        assert len(examples) == (2 if ACTION_MODELS[name].marked else 1), name
        named += sum(1 for action in actions if action.mark_numbers)
    assert named == sum(1 for model in ACTION_MODELS.values() if model.marked) == 4


def test_every_declared_example_parses_to_its_action() -> None:
    for name, model in ACTION_MODELS.items():
        assert model.examples, f"{name} has no example"
        for example in model.examples:
            _expect_action(example, name)


def _with_field(model: type[ActionModel], field: str, value: Any) -> ActionModel:
    base = parse_action(model.examples[0]).model_dump(exclude={"action"})
    base[field] = value
    return model.model_validate(base)


def test_every_eg_value_in_the_argument_notes_is_valid_for_its_argument() -> None:
    checked = 0
    for name, entry in _catalogue_entries(action_catalogue()).items():
        model = ACTION_MODELS[name]
        for field, note in re.findall(r"^    - (\w+): (.*)$", entry, re.MULTILINE):
            for value in literals_after_eg(note):
                checked += 1
                try:
                    _with_field(model, field, value)
                except ValidationError as err:
                    pytest.fail(f"{name}.{field}: the example {value!r} is refused: {err}")
    assert checked >= 5


def test_every_key_name_in_the_catalogue_is_a_key() -> None:
    for os in ("linux", "windows", "darwin"):
        note = action_catalogue(os=os).rstrip().splitlines()[-1]
        assert note.startswith("Key names")
        names = re.findall(r"'([^' ]+)'", note.split(":", 1)[1])
        assert len(names) > 15
        for name in names:
            assert normalize_key(name) == name


# -- the error hints ------------------------------------------------------------------------------

# Replies that reach every refusal path of the parser, the models and the translators.
BAD_REPLIES = [
    "",
    "I think the task is finished.",
    'agent.click("a")\nagent.click("b")',
    '{"action": "done"} {"action": "fail"}',
    "agent.frobnicate()",
    "agent.clik('OK')",
    "agent.type(text=os.getcwd())",
    "agent.click(*args)",
    "agent.click('a', 5)",
    "agent.click('a', 1, 'left', [], 'x')",
    "agent.click()",
    "agent.click('')",
    "agent.click('a', colour='red')",
    "agent.click('a', element_description='b')",
    "agent.hotkey(['ctrl', 'kk'])",
    "agent.hotkey([])",
    "agent.hold_and_press(['shift'], 'hello')",
    "agent.hold_and_press(['shift'], ['ctrl+c'])",
    "agent.scroll('list', 0)",
    "agent.wait(0)",
    "agent.wait()",
    'agent.type("hello")',
    "agent.type()",
    "agent.type(text=3.10)",
    "agent.done(answer=True)",
    "agent.done(answer=['a'])",
    "agent.save_to_knowledge([])",
    "agent.set_cell_values({'A': 2}, 'x.ods')",
    "agent.open('')",
    "agent.switch_applications()",
    "agent.drag_and_drop('a')",
    "agent.highlight_text_span('a')",
    "agent.call_code_agent(task='')",
    "agent.fail(reason='')",
    '{"action": 3}',
    '{"action": "click", "args": {"element_description": "a"}, "num_clicks": 2}',
    '{"action": "click", "arguments": "[1, 2]"}',
    '{"name": 5, "arguments": {}}',
    '{"name": "click", "arguments": "oops"}',
    '{"tool_calls": []}',
    '{"type": "computer_call", "action": "click"}',
    "agent.click('a'",
    "agent.click('a']",
    "agent.click('a' 'b' +)",
    '<tool_call>\n{"name": "computer_use", "arguments": {"action": "left_click", "coor',
    "x" * 200_001,
    # UI-TARS
    "Action: click()",
    "Action: click(start_box='somewhere')",
    "Action: hotkey()",
    "Action: scroll(start_box='(1,2)', direction='sideways')",
    "Action: hover(start_box='(1,2)')",
    "Action: press_home()",
    "Action: drag(start_box='(1,2)')",
    "Action: click('(1,2)', '(3,4)')",
    # computer use (Anthropic / Qwen / OpenAI)
    '{"action": "mouse_move", "coordinate": [1, 2]}',
    '{"action": "screenshot"}',
    '{"action": "left_click", "coordinate": [1]}',
    '{"action": "left_click", "coordinate": [-1, 2]}',
    '{"action": "left_click", "coordinate": [1, 2], "text": 5}',
    '{"action": "left_click_drag", "coordinate": [1, 2]}',
    '{"action": "key", "text": "ctrl+a BackSpace"}',
    '{"action": "scroll", "scroll_direction": "down"}',
    '{"action": "scroll", "coordinate": [1, 2], "scroll_direction": "diagonal"}',
    '{"action": "terminate", "status": "maybe"}',
    '{"name": "computer_use", "arguments": {"action": 7}}',
    '{"type": "computer_call", "action": {"type": "move", "x": 1, "y": 2}}',
    '{"type": "computer_call", "action": {"type": "click"}}',
    '{"type": "computer_call", "action": {"type": "drag", "path": [{"x": 1, "y": 2}]}}',
    '{"type": "computer_call", "action": {"type": "scroll", "x": 1, "y": 2}}',
    '{"type": "computer_call", "action": {"type": "teleport"}}',
    # pyautogui code
    "```python\nfor i in range(3):\n    pyautogui.press('down')\n```",
    "```python\npyautogui.click(1, 2)\npyautogui.click(3, 4)\n```",
    "```python\nimport os\npyautogui.click(1, 2)\n```",
    "```python\npyautogui.click(x)\n```",
    "```python\npyautogui.click()\n```",
    "```python\npyautogui.click(x=5)\n```",
    "```python\npyautogui.moveTo(1, 2)\n```",
    "```python\npyautogui.dragTo(3, 4)\n```",
    "```python\npyautogui.scroll(-3)\n```",
    "```python\npyautogui.press('down', presses=3)\n```",
    "```python\npyautogui.keyDown('shift')\npyautogui.press('a')\n```",
    "```python\npyautogui.keyDown('ctrl')\npyautogui.hotkey('a', 'b')\n```",
    "```python\npyautogui.screenshot()\n```",
    "```python\nsubprocess.run(['ls'])\n```",
    "```python\npyautogui.click(*pos)\n```",
    "```python\npyautogui.click(1,\n```",
    "```python\ntime.sleep(1)\ntime.sleep(2)\n```",
    "```python\nimport pyautogui\n```",
]


def _refusal(reply: str) -> ActionParseError:
    with pytest.raises(ActionParseError) as info:
        parse_action(reply)
    return info.value


@pytest.mark.parametrize("reply", BAD_REPLIES, ids=lambda r: r[:40])
def test_every_refusal_names_the_fix_with_an_example_that_parses(reply: str) -> None:
    message = str(_refusal(reply))
    examples = examples_in(message, reply)
    assert examples, f"no example in: {message}"
    for example in examples:
        _expect_action(example, _named(example))


def _source_strings() -> list[str]:
    """Every string constant in the source of agent_s.actions (f-string pieces included),
    but the docstrings, which document the API for people."""
    texts = []
    for path in sorted(ACTIONS_SOURCE.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef))
            and node.body
            and isinstance(node.body[0], ast.Expr)
        }
        texts += [
            node.value
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
        ]
    return texts


def test_every_example_written_in_the_source_parses() -> None:
    checked = 0
    for text in _source_strings():
        for example in examples_in(text):
            if "{" in example and example.startswith("agent."):
                continue  # an f-string piece with a placeholder; covered by the replies above
            if example.startswith("{") and not re.match(r'\{\{?"(action|name|type)"', example):
                continue  # an argument's value (the catalogue test checks those), not an action
            checked += 1
            _expect_action(example, _named(example))
    assert checked >= 30
