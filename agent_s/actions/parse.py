"""Read exactly one action from a model reply, statically: nothing in the reply is executed.

Two forms are accepted, in or out of ``` fences:

- a call, ``agent.click("the OK button", num_clicks=2)``, positional or keyword arguments,
  over one or several lines. The call is located with a regex and its closing parenthesis with
  ``tokenize`` (so parentheses inside strings do not count); it is parsed with ``ast.parse``
  and each argument is read with ``ast.literal_eval``, which only builds literals. Inside a
  fence the ``agent.`` prefix may be left out for the action names (``click("OK")``).
- a JSON object, ``{"action": "click", "element_description": "..."}``, or with the arguments
  nested under ``"args"`` / ``"arguments"`` (an object, or a JSON string of one).

If fenced blocks contain calls, only those count; JSON is read only when there is no call.
Every failure is an ``ActionParseError`` whose message says what was wrong and how to fix it;
its ``kind`` is one of "none", "several", "unknown_action", "non_literal", "bad_argument",
"syntax".
"""

from __future__ import annotations

import ast
import difflib
import io
import json
import re
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, cast

from pydantic import ValidationError

from agent_s.actions.catalogue import signature
from agent_s.actions.models import ACTION_MODELS, Action, ActionModel
from agent_s.errors import ActionParseError

MAX_REPLY_CHARS = 200_000
_MAX_JSON_ATTEMPTS = 2_000  # '{' positions tried as the start of a JSON object

_PREFIXED = re.compile(r"\bagent\.([A-Za-z_]\w*)\s*\(")
_BARE = re.compile(r"(?<![\w.])(" + "|".join(map(re.escape, ACTION_MODELS)) + r")\s*\(")
_FENCE = re.compile(r"```[ \t]*([\w+.-]*)[^\n`]*\n(.*?)(?:```|\Z)", re.DOTALL)
_JSON_FENCES = ("json", "jsonc", "json5")
_OPENERS, _CLOSERS = "([{", ")]}"
_VALID = ", ".join(ACTION_MODELS)
_HOW = (
    "Reply with exactly one action as a call with literal arguments in a ```python block, "
    'e.g. agent.click("the OK button").'
)


@dataclass(frozen=True)
class _Call:
    name: str
    source: str  # from the name (with any "agent." prefix) to the closing parenthesis


def parse_action(text: str) -> Action:
    """The one action in ``text``; raise ``ActionParseError`` otherwise. Nothing is executed."""
    if not isinstance(text, str):
        raise TypeError(f"parse_action needs the reply text, got {type(text).__name__}")
    if len(text) > MAX_REPLY_CHARS:
        raise ActionParseError(
            f"the reply is {len(text)} characters long; at most {MAX_REPLY_CHARS} are read. "
            + _HOW,
            kind="syntax",
        )
    try:
        return cast(Action, _parse(text))  # one of the union's models, by construction
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


def _parse(text: str) -> ActionModel:
    # Fenced content first (calls, then JSON objects), then the whole reply likewise.
    fences = [(m.group(1).lower(), m.group(2)) for m in _FENCE.finditer(text)]
    code = [body for lang, body in fences if lang not in _JSON_FENCES]
    calls = [call for body in code for call in _find_calls(body, in_code=True)]
    objects = [] if calls else [obj for _, body in fences for obj in _json_objects(body)]
    if not calls and not objects:
        calls = list(_find_calls(text, in_code=False))
        objects = [] if calls else list(_json_objects(text))
    if calls:
        _exactly_one([f"agent.{call.name}(...)" for call in calls])
        return _from_call(calls[0])
    if not objects:
        raise ActionParseError(f"no action found. {_HOW} Valid actions: {_VALID}.", kind="none")
    _exactly_one([f'{{"action": {_clip(json.dumps(o["action"]), 40)}, ...}}' for o in objects])
    return _from_json(objects[0])


def _exactly_one(found: list[str]) -> None:
    if len(found) > 1:
        shown = ", ".join(found[:5]) + (", ..." if len(found) > 5 else "")
        raise ActionParseError(
            f"found {len(found)} actions ({shown}); reply with exactly one action per turn "
            "and put only that one in a code block",
            kind="several",
        )


# -- calls ----------------------------------------------------------------------------------------


def _find_calls(text: str, *, in_code: bool) -> Iterator[_Call]:
    """Each call in ``text``, in order; calls inside another call's arguments are skipped."""
    patterns = [_PREFIXED, _BARE] if in_code else [_PREFIXED]
    found: list[re.Match[str] | None] = [pattern.search(text) for pattern in patterns]
    pos = 0
    while True:
        for i, pattern in enumerate(patterns):  # search again only where a match fell behind
            match = found[i]
            if match is not None and match.start() < pos:
                found[i] = pattern.search(text, pos)
        starts = [m for m in found if m is not None]
        if not starts:
            return
        match = min(starts, key=lambda m: m.start())
        if in_code and _in_comment(text, match.start()):
            pos = text.find("\n", match.start())
            if pos < 0:
                return
            continue
        close = _closing_paren(text, match.end() - 1, match.group(0))
        yield _Call(match.group(1), text[match.start() : close + 1])
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
    model = _model(call.name)
    names = model.argument_names()
    unpacked = [f"*{_segment(call, a.value)}" for a in node.args if isinstance(a, ast.Starred)]
    unpacked += [f"**{_segment(call, k.value)}" for k in node.keywords if k.arg is None]
    if unpacked:
        raise ActionParseError(
            f"agent.{call.name} gets its arguments unpacked from {_clip(unpacked[0], 40)}, "
            "which is not a literal; nothing is evaluated, so write each argument's value "
            f"itself. Usage: {signature(model)}",
            kind="non_literal",
        )
    if len(node.args) > len(names):
        raise ActionParseError(
            f"agent.{call.name} takes at most {len(names)} positional argument(s) "
            f"({', '.join(names)}), got {len(node.args)}. Usage: {signature(model)}",
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
                f"Usage: {signature(model)}",
                kind="bad_argument",
            )
        arguments[keyword.arg] = _literal(call, keyword.arg, keyword.value)
    return _validate(model, arguments)


def _literal(call: _Call, name: str, node: ast.expr) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise _non_literal(call.name, _segment(call, node), name) from None


def _segment(call: _Call, node: ast.expr) -> str:
    return ast.get_source_segment(call.source.strip(), node) or ast.dump(node)[:60]


def _non_literal(action: str, source: str, name: str) -> ActionParseError:
    return ActionParseError(
        f"argument {name!r} of agent.{action} is not a literal value: {_clip(source, 60)}. "
        "Nothing is evaluated; write the value itself (a quoted string, a number, "
        "True/False/None, or a list or dict of those), not a name, expression, call or f-string",
        kind="non_literal",
    )


# -- JSON -----------------------------------------------------------------------------------------


def _json_objects(text: str) -> Iterator[dict[str, Any]]:
    """JSON objects with an "action" key found in ``text`` (outermost objects only)."""
    decoder = json.JSONDecoder()
    index, attempts = text.find("{"), 0
    while index >= 0 and attempts < _MAX_JSON_ATTEMPTS:
        attempts += 1
        try:
            value, end = decoder.raw_decode(text, index)
        except (ValueError, RecursionError):
            index = text.find("{", index + 1)
            continue
        if isinstance(value, dict) and "action" in value:
            yield value
        index = text.find("{", end)


def _from_json(obj: dict[str, Any]) -> ActionModel:
    name = obj["action"]
    if not isinstance(name, str):
        raise ActionParseError(
            f'"action" must be the action name as a string, got {_clip(repr(name))}; '
            f"valid actions: {_VALID}",
            kind="bad_argument",
        )
    model = _model(name)
    nested = [key for key in ("args", "arguments") if key in obj]
    if not nested:
        return _validate(model, {k: v for k, v in obj.items() if k != "action"})
    extra = sorted(set(obj) - {"action", nested[0]})
    if len(nested) > 1 or extra:
        raise ActionParseError(
            f'put every argument of {name} inside "{nested[0]}", not beside it '
            f"(found {', '.join(map(repr, extra or nested[1:]))})",
            kind="bad_argument",
        )
    arguments = obj[nested[0]]
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            arguments = None
    if not isinstance(arguments, dict):
        raise ActionParseError(
            f'"{nested[0]}" of {name} must be a JSON object of argument names and values. '
            f"Usage: {signature(model)}",
            kind="bad_argument",
        )
    return _validate(model, arguments)


# -- validation -----------------------------------------------------------------------------------


def _model(name: str) -> type[ActionModel]:
    model = ACTION_MODELS.get(name)
    if model is None:
        close = difflib.get_close_matches(name, ACTION_MODELS, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ActionParseError(
            f"unknown action {_clip(name, 40)!r}{hint}; valid actions: {_VALID}",
            kind="unknown_action",
        )
    return model


def _validate(model: type[ActionModel], arguments: dict[str, Any]) -> ActionModel:
    name = model.model_fields["action"].default
    if "action" in arguments:
        arguments = dict(arguments)
        if arguments.pop("action") != name:
            raise ActionParseError(
                f"'action' is not an argument of {name}. Usage: {signature(model)}",
                kind="bad_argument",
            )
    try:
        return model.model_validate(arguments)
    except ValidationError as err:
        problems = [_problem(model, error) for error in err.errors()[:3]]
        more = len(err.errors()) - len(problems)
        tail = f" (and {more} more)" if more > 0 else ""
        raise ActionParseError(
            f"invalid arguments for {name}: {'; '.join(problems)}{tail}. Usage: {signature(model)}",
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
        return f"unknown argument {field!r} (arguments: {', '.join(model.argument_names())})"
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
