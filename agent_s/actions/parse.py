"""Read exactly one action from a model reply, statically: nothing in the reply is executed.

Our own forms, in or out of ``` fences:

- a call, ``agent.click("the OK button", num_clicks=2)``, positional or keyword arguments,
  over one or several lines. The call is located with a regex and its closing parenthesis with
  ``tokenize`` (so parentheses inside strings do not count); it is parsed with ``ast.parse``
  and each argument is read with ``ast.literal_eval``, which only builds literals. Inside a
  fence, or at the start of a line, the ``agent.`` prefix may be left out (``click("OK")``).
- a JSON object, ``{"action": "click", "element_description": "..."}``, or with the arguments
  nested under ``"args"`` / ``"arguments"`` (an object, or a JSON string of one).

And the forms other model families are trained on, translated into the same typed actions
(a literal coordinate becomes the element description ``"(x, y)"``, ``agent_s.actions.pointing``):

- UI-TARS: ``Action: click(start_box='(x,y)')`` and the rest of its action space
  (``agent_s.actions.uitars``);
- JSON tool calls: OpenAI-style ``{"name": "click", "arguments": {...}}`` (arguments may be a
  JSON string), ``{"type": "function", "function": {...}}``, Anthropic ``tool_use`` objects
  (``"input"``), Anthropic's computer tool and Qwen-VL's ``computer_use`` function
  (``<tool_call>{"name": "computer_use", "arguments": {"action": "left_click", "coordinate":
  [x, y]}}</tool_call>``) and OpenAI ``computer_call`` actions (``agent_s.actions.computer_use``);
- pyautogui code as older agents emit it, and the sentinels DONE / FAIL / WAIT, read with
  ``ast`` and never run (``agent_s.actions.pyautogui_code``).

Fenced code counts first; JSON is read only when no call or code is found. Every failure is an
``ActionParseError`` whose message says what was wrong and how to fix it, with an example that
parses; its ``kind`` is one of "none", "several", "unknown_action", "non_literal",
"bad_argument", "syntax".
"""

from __future__ import annotations

import ast
import difflib
import io
import json
import re
import tokenize
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal, cast, get_args

from pydantic import ValidationError

from agent_s.actions import computer_use, pyautogui_code, uitars
from agent_s.actions.catalogue import example, signature
from agent_s.actions.models import ACTION_MODELS, Action, ActionModel
from agent_s.errors import ActionParseError

MAX_REPLY_CHARS = 200_000
_MAX_JSON_ATTEMPTS = 2_000  # '{' positions tried as the start of a JSON object

_NAMES = sorted(set(ACTION_MODELS) | uitars.NAMES, key=len, reverse=True)
_NAME_ALTERNATIVES = "|".join(map(re.escape, _NAMES))
_PREFIXED = re.compile(r"(?P<call>\bagent\.(?P<name>[A-Za-z_]\w*))\s*\(")
_BARE = re.compile(r"(?<![\w.])(?P<call>(?P<name>" + _NAME_ALTERNATIVES + r"))\s*\(")
# outside fences a bare call must start a line, optionally after UI-TARS' "Action:"
_LINE_BARE = re.compile(
    r"^[ \t>*_`]*(?:(?i:action)\s*\**\s*[:：][ \t*_`]*)?(?P<call>(?P<name>"
    + _NAME_ALTERNATIVES
    + r"))\s*\(",
    re.MULTILINE,
)
_PYAUTOGUI = re.compile(r"\bpyautogui\s*\.\s*\w+\s*\(")
# a line of pyautogui code in prose: a call of one of these modules, or an import of them
_CODE_LINE = re.compile(
    r"^[ \t]*(?:(?:pyautogui|time|pyperclip)\.\w+\s*\(.*|import (?:pyautogui|time|pyperclip)"
    r"(?:\s*,\s*(?:pyautogui|time|pyperclip))*[ \t;]*)$",
    re.MULTILINE,
)
_PYTHON_CODE = re.compile(
    r"^[ \t]*(?:import\s|from\s+[\w.]+\s+import\s|(?:pyautogui|time|pyperclip|os|subprocess)\s*\.)",
    re.MULTILINE,
)
_SENTINEL_LINE = re.compile(r"^[ \t`*]*(DONE|FAIL|WAIT)[ \t`*.]*$", re.MULTILINE)
_FENCE = re.compile(r"```[ \t]*([\w+.-]*)[^\n`]*\n(.*?)(?:```|\Z)", re.DOTALL)
_JSON_FENCES = ("json", "jsonc", "json5")
_JSON_HINT = re.compile(r'<tool_call>|\{\s*"(?:action|name|type|function|tool_calls)"\s*:')
_OPENERS, _CLOSERS = "([{", ")]}"
_VALID = ", ".join(ACTION_MODELS)
_HOW = (
    "Reply with exactly one action as a call with literal arguments in a ```python block, "
    'e.g. agent.click("the OK button").'
)
_TOOLS = ("computer", "computer_use", "computer_20250124", "computer_20241022", "mobile_use")


@dataclass(frozen=True)
class _Call:
    name: str
    source: str  # from the name (with any "agent." prefix) to the closing parenthesis
    prefixed: bool = True


# the reply styles read: our calls, JSON tool calls of our actions, computer-use tool calls
# (Anthropic, OpenAI), Qwen-VL's computer_use function, UI-TARS' calls, pyautogui code
ReplyStyle = Literal["calls", "json", "computer-use", "qwen-vl", "ui-tars", "pyautogui"]
REPLY_STYLES: tuple[ReplyStyle, ...] = get_args(ReplyStyle)
_QWEN_TOOLS = ("computer_use", "mobile_use")


@dataclass(frozen=True)
class _Found:
    """One action found in the reply, not yet validated: its label, how to build it and the
    style it is written in."""

    label: str
    build: Callable[[], ActionModel]
    style: ReplyStyle = "calls"


@dataclass(frozen=True)
class ParsedReply:
    """The one action of a reply and the style it was written in (``ReplyStyle``)."""

    action: Action
    style: ReplyStyle


def parse_action(text: str) -> Action:
    """The one action in ``text``; raise ``ActionParseError`` otherwise. Nothing is executed."""
    return parse_reply(text).action


def parse_reply(text: str) -> ParsedReply:
    """``parse_action``, with the style the action was written in."""
    if not isinstance(text, str):
        raise TypeError(f"parse_action needs the reply text, got {type(text).__name__}")
    if len(text) > MAX_REPLY_CHARS:
        raise ActionParseError(
            f"the reply is {len(text)} characters long; at most {MAX_REPLY_CHARS} are read. "
            + _HOW,
            kind="syntax",
        )
    try:
        model, style = _parse(text)
        return ParsedReply(cast(Action, model), style)  # one of the union's models
    except ActionParseError:
        raise
    except (RecursionError, MemoryError):
        raise ActionParseError(
            "the action is nested too deeply to read. " + _HOW, kind="syntax"
        ) from None
    except (SyntaxError, tokenize.TokenError, ValueError, TypeError, OverflowError) as err:
        raise ActionParseError(
            f"the action could not be read ({err}). {_HOW}", kind="syntax"
        ) from None


def _parse(text: str) -> tuple[ActionModel, ReplyStyle]:
    # Fenced code first (calls, pyautogui code), then fenced JSON, then the whole reply likewise.
    fences = [(m.group(1).lower(), m.group(2)) for m in _FENCE.finditer(text)]
    found = [f for lang, body in fences if lang not in _JSON_FENCES for f in _in_code(body)]
    if not found:
        found = [f for _, body in fences for f in _json_found(body)]
    if not found:
        found = _in_prose(text)
    if not found:
        found = list(_json_found(text))
    if not found:
        if _broken_json(text):
            raise ActionParseError(
                "the reply has what looks like a JSON action, but it is not valid JSON (cut "
                "off, or a quote or brace missing). " + _HOW,
                kind="syntax",
            )
        raise ActionParseError(f"no action found. {_HOW} Valid actions: {_VALID}.", kind="none")
    _exactly_one([f.label for f in found])
    return found[0].build(), found[0].style


def _broken_json(text: str) -> bool:
    """Whether ``text`` starts a JSON action or tool call that does not decode."""
    decoder = json.JSONDecoder()
    decoded_to = 0
    for attempt, match in enumerate(_JSON_HINT.finditer(text)):
        if attempt >= _MAX_JSON_ATTEMPTS:
            break
        start = text.find("{", match.start())
        if start < 0:
            return True  # <tool_call> and no object at all
        if start < decoded_to:
            continue  # inside an object that decoded
        try:
            decoded_to = decoder.raw_decode(text, start)[1]
        except (ValueError, RecursionError):
            return True
    return False


def _exactly_one(found: list[str]) -> None:
    if len(found) > 1:
        shown = ", ".join(found[:5]) + (", ..." if len(found) > 5 else "")
        raise ActionParseError(
            f"found {len(found)} actions ({shown}); reply with exactly one action per turn "
            'and put only that one in a code block, e.g. agent.click("the OK button")',
            kind="several",
        )


def _call_found(call: _Call) -> _Found:
    return _Found(
        f"agent.{call.name}(...)" if call.prefixed else f"{call.name}(...)",
        lambda: _from_call(call),
        "calls" if call.prefixed else _call_style(call),
    )


def _call_style(call: _Call) -> ReplyStyle:
    """A bare call's style: UI-TARS' when its name and arguments are, else ours."""
    try:
        node = ast.parse(call.source.strip(), mode="eval").body
    except SyntaxError:
        return "calls"
    return "ui-tars" if isinstance(node, ast.Call) and _is_uitars(call.name, node) else "calls"


def _code_found(code: str) -> _Found:
    return _Found(
        "pyautogui code", lambda: _translated(*pyautogui_code.translate(code)), "pyautogui"
    )


def _in_code(body: str) -> list[_Found]:
    """The actions in one fenced block of code."""
    if body.strip() in pyautogui_code.SENTINELS:
        return [_code_found(body)]
    calls = list(_find_calls(body, in_code=True))
    prefixed = [c for c in calls if c.prefixed]
    code = _without_calls(body, prefixed)
    if _PYAUTOGUI.search(_uncommented(code)):
        return [*map(_call_found, prefixed), _code_found(code)]
    if not calls and _PYTHON_CODE.search(_uncommented(code)):  # say why it is not run
        return [_code_found(code)]
    return [_call_found(call) for call in calls]


def _without_calls(body: str, calls: list[_Call]) -> str:
    for call in calls:
        body = body.replace(call.source, "pass", 1)
    return body


def _uncommented(code: str) -> str:
    """``code`` without its comment lines (a comment may mention pyautogui)."""
    return "\n".join(line for line in code.splitlines() if not line.lstrip().startswith("#"))


def _in_prose(text: str) -> list[_Found]:
    """The actions outside fences: calls, pyautogui lines, a DONE / FAIL / WAIT line."""
    found = [_call_found(call) for call in _find_calls(text, in_code=False)]
    if _PYAUTOGUI.search(text):
        code = "\n".join(m.group(0) for m in _CODE_LINE.finditer(text))
        if _PYAUTOGUI.search(code):
            found.append(_code_found(code))
    if not found:
        found = [_code_found(word) for word in _SENTINEL_LINE.findall(text)]
    return found


# -- calls ----------------------------------------------------------------------------------------


def _find_calls(text: str, *, in_code: bool) -> Iterator[_Call]:
    """Each call in ``text``, in order; calls inside another call's arguments are skipped."""
    patterns = [_PREFIXED, _BARE] if in_code else [_PREFIXED, _LINE_BARE]
    found: list[re.Match[str] | None] = [pattern.search(text) for pattern in patterns]
    pos = 0
    while True:
        for i, pattern in enumerate(patterns):  # search again only where a match fell behind
            match = found[i]
            if match is not None and match.start("call") < pos:
                found[i] = pattern.search(text, pos)
        starts = [m for m in found if m is not None]
        if not starts:
            return
        match = min(starts, key=lambda m: m.start("call"))
        start = match.start("call")
        if in_code and _in_comment(text, start):
            pos = text.find("\n", start)
            if pos < 0:
                return
            continue
        close = _closing_paren(text, match.end() - 1, text[start : match.end()])
        prefixed = match.re is _PREFIXED
        yield _Call(match.group("name"), text[start : close + 1], prefixed)
        pos = close + 1


def _in_comment(text: str, index: int) -> bool:
    """Whether ``index`` is after a ``#`` comment start on its line of code."""
    line = text[text.rfind("\n", 0, index) + 1 : index]
    if "#" not in line:
        return False
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(line).readline))
    except (tokenize.TokenError, SyntaxError):
        return False
    return any(token.type == tokenize.COMMENT for token in tokens)


def _closing_paren(text: str, open_index: int, start: str) -> int:
    """Index of the parenthesis closing the one at ``open_index``, found with ``tokenize``."""
    line_starts: list[int] = []  # where each line handed to tokenize begins in ``text``

    def readline() -> str:
        begin = open_index if not line_starts else line_starts[-1] + len(lines[-1])
        if begin >= len(text):
            return ""
        newline = text.find("\n", begin)
        line_starts.append(begin)
        lines.append(text[begin : len(text) if newline < 0 else newline + 1])
        return lines[-1]

    lines: list[str] = []
    stack: list[str] = []
    what = f"the call {_clip(start, 40)}..."
    try:
        for token in tokenize.generate_tokens(readline):
            if token.type == tokenize.ERRORTOKEN and token.string.strip() in ("'", '"'):
                raise _unclosed(what)  # an unterminated string
            if token.type != tokenize.OP or token.string not in _OPENERS + _CLOSERS:
                continue
            if token.string in _OPENERS:
                stack.append(_CLOSERS[_OPENERS.index(token.string)])
                continue
            if not stack or stack.pop() != token.string:
                raise ActionParseError(
                    f"in {what}: {token.string!r} does not match the open bracket before it. "
                    + _HOW,
                    kind="syntax",
                )
            if not stack:
                row, col = token.start
                index = line_starts[row - 1] + col
                if text[index : index + 1] != ")":  # tokenize counted columns differently
                    raise _unclosed(what)
                return index
    except (tokenize.TokenError, SyntaxError) as err:
        raise _unclosed(what, err) from None
    raise _unclosed(what)


def _unclosed(what: str, err: Exception | None = None) -> ActionParseError:
    detail = f" ({err.args[0] if err.args else err})" if err else ""
    return ActionParseError(
        f"{what} is never closed{detail}: a parenthesis, bracket or quote is missing. " + _HOW,
        kind="syntax",
    )


def _from_call(call: _Call) -> ActionModel:
    try:
        tree = ast.parse(call.source.strip(), mode="eval")
    except SyntaxError as err:
        raise ActionParseError(
            f"{_clip(call.source)} is not a valid call: {err.msg}. {_HOW}", kind="syntax"
        ) from None
    node = tree.body
    if not isinstance(node, ast.Call):
        raise ActionParseError(f"{_clip(call.source)} is not a single call. {_HOW}", kind="syntax")
    unpacked = [f"*{_segment(call, a.value)}" for a in node.args if isinstance(a, ast.Starred)]
    unpacked += [f"**{_segment(call, k.value)}" for k in node.keywords if k.arg is None]
    if not call.prefixed and _is_uitars(call.name, node):
        if unpacked:
            raise _non_literal(call.name, unpacked[0], "arguments")
        return _from_uitars(call, node)
    model = _model(call.name)
    names = model.argument_names()
    if unpacked:
        raise ActionParseError(
            f"agent.{call.name} gets its arguments unpacked from {_clip(unpacked[0], 40)}, "
            "which is not a literal; nothing is evaluated, so write each argument's value "
            f"itself. Usage: {signature(model)}. Example: {example(model)}",
            kind="non_literal",
        )
    if call.name == "hotkey" and len(node.args) > 1 and not node.keywords:
        # agent.hotkey("ctrl", "s"), as pyautogui.hotkey is called: the keys, in order
        return _validate(model, {"keys": [_literal(call, "keys", arg) for arg in node.args]})
    if len(node.args) > len(names):
        raise ActionParseError(
            f"agent.{call.name} takes at most {len(names)} positional argument(s) "
            f"({', '.join(names)}), got {len(node.args)}. Usage: {signature(model)}. "
            f"Example: {example(model)}",
            kind="bad_argument",
        )
    arguments: dict[str, Any] = {
        name: _literal(call, name, arg) for name, arg in zip(names, node.args, strict=False)
    }
    for keyword in node.keywords:
        if keyword.arg is None:  # checked above; keeps type checkers informed
            continue
        if keyword.arg in arguments:
            raise ActionParseError(
                f"argument {keyword.arg!r} of agent.{call.name} is given twice. "
                f"Usage: {signature(model)}. Example: {example(model)}",
                kind="bad_argument",
            )
        arguments[keyword.arg] = _literal(call, keyword.arg, keyword.value)
    return _validate(model, arguments)


# positional arguments of UI-TARS calls, by the name UI-TARS gives them
_UITARS_POSITIONAL = {
    "drag": ("start_box", "end_box"),
    "select": ("start_box", "end_box"),
    "hotkey": ("key",),
    "press": ("key",),
    "type": ("content",),
    "scroll": ("start_box", "direction"),
    "finished": ("content",),
    "call_user": ("content",),
    "open_app": ("app_name",),
}


def _is_uitars(name: str, node: ast.Call) -> bool:
    """Whether a bare call is UI-TARS' rather than ours (whose names partly coincide)."""
    if name not in uitars.NAMES:
        return False
    if name not in ACTION_MODELS:
        return True
    keywords = {k.arg for k in node.keywords if k.arg is not None}
    ours = set(ACTION_MODELS[name].argument_names() + ACTION_MODELS[name].mark_names())
    if keywords & uitars.ARGUMENTS - ours:
        return True
    return name == "wait" and not node.args and not keywords  # UI-TARS' wait() waits 5 s


def _from_uitars(call: _Call, node: ast.Call) -> ActionModel:
    positional = _UITARS_POSITIONAL.get(call.name, ("start_box",))
    if len(node.args) > len(positional):
        raise ActionParseError(
            f"{call.name} takes at most {len(positional)} positional argument(s), got "
            f"{len(node.args)}; e.g. click(start_box='(412, 300)')",
            kind="bad_argument",
        )
    arguments = {
        name: _literal(call, name, arg) for name, arg in zip(positional, node.args, strict=False)
    }
    for keyword in node.keywords:
        if keyword.arg is not None:
            arguments[keyword.arg] = _literal(call, keyword.arg, keyword.value)
    return _translated(*uitars.translate(call.name, arguments))


def _translated(name: str, arguments: dict[str, Any]) -> ActionModel:
    """Our action from a translation's name and arguments, validated like any other."""
    return _validate(_model(name), arguments)


def _literal(call: _Call, name: str, node: ast.expr) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise _non_literal(call.name, _segment(call, node), name) from None


def _segment(call: _Call, node: ast.expr) -> str:
    return ast.get_source_segment(call.source.strip(), node) or ast.dump(node)[:60]


def _non_literal(action: str, source: str, name: str) -> ActionParseError:
    model = ACTION_MODELS.get(action)
    shown = example(model) if model is not None else 'agent.type(text="hello")'
    return ActionParseError(
        f"argument {name!r} of agent.{action} is not a literal value: {_clip(source, 60)}. "
        "Nothing is evaluated; write the value itself (a quoted string, a number, "
        "True/False/None, or a list or dict of those), not a name, expression, call or "
        f"f-string, e.g. {shown}",
        kind="non_literal",
    )


# -- JSON -----------------------------------------------------------------------------------------


def _json_objects(text: str) -> Iterator[dict[str, Any]]:
    """Outermost JSON objects in ``text`` that look like an action or a tool call."""
    decoder = json.JSONDecoder()
    index, attempts = text.find("{"), 0
    while index >= 0 and attempts < _MAX_JSON_ATTEMPTS:
        attempts += 1
        try:
            value, end = decoder.raw_decode(text, index)
        except (ValueError, RecursionError):
            index = text.find("{", index + 1)
            continue
        if isinstance(value, dict) and _json_kind(value) is not None:
            yield value
        index = text.find("{", end)


def _json_kind(obj: dict[str, Any]) -> str | None:
    """Which shape of action ``obj`` is: "action", "function", "calls", "computer_call",
    "openai_action"; None for any other object."""
    if "tool_calls" in obj and isinstance(obj["tool_calls"], list):
        return "calls"
    kind = obj.get("type")
    if kind == "computer_call" or (
        isinstance(kind, str)
        and kind in computer_use.OPENAI_TYPES
        and "action" not in obj
        and set(obj) - {"type"} <= computer_use.ARGUMENTS | {"text", "keys"}
        and len(obj) > 1
    ):
        return "computer_call" if kind == "computer_call" else "openai_action"
    if "action" in obj:
        return "action"
    if isinstance(obj.get("function"), dict) or isinstance(obj.get("function_call"), dict):
        return "function"
    if isinstance(obj.get("name"), str) and any(
        key in obj for key in ("arguments", "input", "parameters", "args")
    ):
        return "function"
    return None


def _json_found(text: str) -> Iterator[_Found]:
    for obj in _json_objects(text):
        kind = _json_kind(obj)
        if kind == "calls":
            calls = [c for c in obj["tool_calls"] if isinstance(c, dict) and _json_kind(c)]
            for call in calls or [obj]:
                yield _json_item(call if calls else {"tool_calls": []})
        else:
            yield _json_item(obj)


def _json_item(obj: dict[str, Any]) -> _Found:
    name = obj.get("action", obj.get("name", obj.get("type")))
    function = obj.get("function", obj.get("function_call"))
    if isinstance(function, dict):
        name = function.get("name")
    label = f'{{"action": {_clip(json.dumps(name), 40)}, ...}}'
    return _Found(label, lambda: _from_json(obj), _json_style(obj, name))


def _json_style(obj: dict[str, Any], name: Any) -> ReplyStyle:
    """A JSON action's style: a computer-use tool's (Qwen-VL's ``computer_use`` apart), else
    a tool call of our own actions."""
    if name in _QWEN_TOOLS:
        return "qwen-vl"
    if _json_kind(obj) in ("computer_call", "openai_action") or name in _TOOLS:
        return "computer-use"
    action = obj.get("action")
    ours = isinstance(action, str) and action in ACTION_MODELS
    return "computer-use" if action in computer_use.NAMES and not ours else "json"


def _arguments_object(value: Any, where: str, name: str) -> dict[str, Any]:
    """A tool call's arguments: an object, or a JSON string of one."""
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else {}
        except ValueError:
            value = None
    if not isinstance(value, dict):
        model = ACTION_MODELS.get(name)
        usage = (
            f"Usage: {signature(model)}. Example: {example(model)}"
            if model is not None
            else 'e.g. {"name": "click", "arguments": {"element_description": "the OK button"}}'
        )
        raise ActionParseError(
            f'"{where}" of {name} must be a JSON object of argument names and values. {usage}',
            kind="bad_argument",
        )
    return value


def _from_json(obj: dict[str, Any]) -> ActionModel:
    kind = _json_kind(obj)
    if kind == "calls":
        raise ActionParseError(
            '"tool_calls" holds no call; call one action, e.g. '
            '{"name": "click", "arguments": {"element_description": "the OK button"}}',
            kind="none",
        )
    if kind == "computer_call":
        action = obj.get("action")
        batch = obj.get("actions")
        if action is None and isinstance(batch, list) and batch:
            if len(batch) > 1:  # the batched form: several actions in one call
                _exactly_one(
                    [
                        f'{{"type": {_clip(json.dumps(a.get("type")), 30)}, ...}}'
                        if isinstance(a, dict)
                        else "?"
                        for a in batch
                    ]
                )
            action = batch[0]
        if not isinstance(action, dict):
            raise ActionParseError(
                'a computer_call needs "action" as an object, e.g. {"type": "computer_call", '
                '"action": {"type": "click", "button": "left", "x": 640, "y": 400}}',
                kind="bad_argument",
            )
        return _translated(*computer_use.translate_openai(action))
    if kind == "openai_action":
        return _translated(*computer_use.translate_openai(obj))
    if kind == "function":
        return _from_function(obj)
    return _from_action_object(obj)


def _from_function(obj: dict[str, Any]) -> ActionModel:
    """A function / tool call: {"name": .., "arguments" | "input" | "parameters": ..}."""
    function = obj.get("function", obj.get("function_call"))
    if isinstance(function, dict):
        obj = function
    name = obj.get("name")
    if not isinstance(name, str):
        raise ActionParseError(
            f"a tool call needs its name as a string, got {_clip(repr(name))}; e.g. "
            '{"name": "click", "arguments": {"element_description": "the OK button"}}',
            kind="bad_argument",
        )
    where = next((k for k in ("arguments", "input", "parameters", "args") if k in obj), None)
    arguments = {} if where is None else _arguments_object(obj[where], where, name)
    if name in _TOOLS:
        return _from_action_object(arguments, tool=name)
    return _validate(_model(name), arguments)


def _from_action_object(obj: dict[str, Any], tool: str | None = None) -> ActionModel:
    """{"action": name, ...}: ours, or a computer-use action (Anthropic, Qwen)."""
    name = obj.get("action")
    if not isinstance(name, str):
        raise ActionParseError(
            f'"action" must be the action name as a string, got {_clip(repr(name))}; '
            f'valid actions: {_VALID}; e.g. {{"action": "click", "element_description": '
            '"the OK button"}',
            kind="bad_argument",
        )
    model = ACTION_MODELS.get(name)
    known = (*model.argument_names(), *model.mark_names()) if model else ()
    foreign = set(obj) - {"action"} - set(known)
    if name in computer_use.NAMES and (
        tool is not None or model is None or foreign & computer_use.ARGUMENTS
    ):
        return _translated(*computer_use.translate(obj))
    model = _model(name)
    nested = [key for key in ("args", "arguments") if key in obj]
    if not nested:
        return _validate(model, {k: v for k, v in obj.items() if k != "action"})
    extra = sorted(set(obj) - {"action", nested[0]})
    if len(nested) > 1 or extra:
        raise ActionParseError(
            f'put every argument of {name} inside "{nested[0]}", not beside it '
            f"(found {', '.join(map(repr, extra or nested[1:]))}), e.g. "
            f'{{"action": "click", "{nested[0]}": {{"element_description": "the OK button"}}}}',
            kind="bad_argument",
        )
    return _validate(model, _arguments_object(obj[nested[0]], nested[0], name))


# -- validation -----------------------------------------------------------------------------------


def _model(name: str) -> type[ActionModel]:
    model = ACTION_MODELS.get(name)
    if model is None:
        close = difflib.get_close_matches(name, ACTION_MODELS, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        shown = example(ACTION_MODELS[close[0]]) if close else 'agent.click("the OK button")'
        raise ActionParseError(
            f"unknown action {_clip(name, 40)!r}{hint}; valid actions: {_VALID}; e.g. {shown}",
            kind="unknown_action",
        )
    return model


def _validate(model: type[ActionModel], arguments: dict[str, Any]) -> ActionModel:
    name = model.model_fields["action"].default
    if "action" in arguments:
        arguments = dict(arguments)
        if arguments.pop("action") != name:
            raise ActionParseError(
                f"'action' is not an argument of {name}. Usage: {signature(model)}. "
                f"Example: {example(model)}",
                kind="bad_argument",
            )
    try:
        return model.model_validate(arguments)
    except ValidationError as err:
        problems = [_problem(model, error) for error in err.errors()[:3]]
        more = len(err.errors()) - len(problems)
        tail = f" (and {more} more)" if more > 0 else ""
        raise ActionParseError(
            f"invalid arguments for {name}: {'; '.join(problems)}{tail}. "
            f"Usage: {signature(model)}. Example: {example(model)}",
            kind="bad_argument",
        ) from None


def _problem(model: type[ActionModel], error: Any) -> str:
    """One pydantic error as a short sentence naming the argument."""
    loc = [str(part) for part in error.get("loc", ())]
    field = ".".join(loc)
    kind, ctx = error["type"], error.get("ctx") or {}
    if kind == "missing":
        return f"missing required argument {field!r}"
    if kind == "extra_forbidden":
        names = (*model.argument_names(), *model.mark_names())
        return f"unknown argument {field!r} (arguments: {', '.join(names)})"
    if kind == "string_too_short" and ctx.get("min_length") == 1:
        message = "must not be empty"
    else:
        message = str(error["msg"]).removeprefix("Value error, ").removeprefix("Assertion failed, ")
        message = message.replace("Input should", "should")
        message = message[:1].lower() + message[1:]
        if kind not in ("value_error", "assertion_error") and "input" in error:
            message += f" (got {_clip(repr(error['input']), 60)})"
    return f"{field}: {message}" if field else message


def _clip(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
