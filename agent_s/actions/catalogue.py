"""The action list for prompts and the JSON schema of an action, from the models.

Everything here is derived from ``agent_s.actions.models``: the signature from the fields and
their defaults, the one-line summary from the model docstring, each argument's text from its
field description and its constraints from the JSON schema pydantic generates. The output is
deterministic: it follows the order in which actions and fields are defined.

The mark arguments (``mark=17``, ``ActionModel.marked``) are listed only for runs that show
numbered marks on the screenshot (``marks=True``); otherwise the catalogue reads as if they did
not exist: each element's description is required where a mark could have replaced it.
"""

from __future__ import annotations

import copy
from collections.abc import Collection
from typing import Any

from pydantic import TypeAdapter

from agent_s.actions.models import ACTION_MODELS, Action, ActionModel
from agent_s.keys import PLATFORMS, OsName

_KEYS_NOTE = (
    "Key names are pyautogui's, in lower case: {modifiers}, 'enter', 'esc', "
    "'tab', 'backspace', 'delete', 'space', 'up', 'down', 'left', 'right', 'home', 'end', "
    "'pageup', 'pagedown', 'f1' to 'f12', or one character such as 'a', '1' or '/'."
)
_MODIFIERS = {
    "linux": "'ctrl', 'alt', 'shift', 'win'",
    "windows": "'ctrl', 'alt', 'shift', 'win'",
    "darwin": "'command', 'option', 'ctrl', 'shift'",
}


def _parameters(model: type[ActionModel], *, marks: bool = False) -> dict[str, Any]:
    """The model's JSON schema without the ``action`` tag and without titles; without
    ``marks``, without the mark arguments either (see the module docstring)."""
    schema = _drop_titles(copy.deepcopy(model.model_json_schema()))
    properties = schema["properties"]
    properties.pop("action", None)
    required = [name for name in schema.get("required", []) if name != "action"]
    for description, mark, needed in model.marked:
        if not needed:
            pass
        elif marks:  # left out when the mark is given
            properties[description]["default"] = None
            required.remove(description)
        else:
            properties[description] = _required(properties[description])
        if not marks:
            properties.pop(mark, None)
    schema["required"] = required
    schema.pop("description", None)
    return schema


def _required(prop: dict[str, Any]) -> dict[str, Any]:
    """A property that may be None (``X | None``) as the ``X`` it is without marks."""
    options = [option for option in prop.get("anyOf", [prop]) if option.get("type") != "null"]
    rest = {key: value for key, value in prop.items() if key not in ("anyOf", "default")}
    return {**rest, **options[0]} if len(options) == 1 else rest


def _drop_titles(node: Any) -> Any:
    if isinstance(node, dict):
        node.pop("title", None)
        for key, value in node.items():
            if key != "properties":
                _drop_titles(value)
            else:
                for prop in value.values():
                    _drop_titles(prop)
    elif isinstance(node, list):
        for item in node:
            _drop_titles(item)
    return node


def _type_name(schema: dict[str, Any]) -> str:
    """A Python-style type for a JSON schema: str, int, list[str], 'a' | 'b', ..."""
    if "anyOf" in schema:
        return " | ".join(_type_name(option) for option in schema["anyOf"])
    if "enum" in schema:
        return " | ".join(repr(value) for value in schema["enum"])
    if "const" in schema:
        return repr(schema["const"])
    kind: Any = schema.get("type")  # a JSON schema's type name; None when it names none
    if kind == "array":
        return f"list[{_type_name(schema.get('items', {}))}]"
    if kind == "object":
        values = schema.get("additionalProperties")
        return f"dict[str, {_type_name(values)}]" if isinstance(values, dict) else "dict"
    names = {"string": "str", "integer": "int", "number": "float", "boolean": "bool"}
    return names.get(kind, "None" if kind == "null" else "any")


def _constraints(schema: dict[str, Any]) -> list[str]:
    """Human words for the limits in a property schema (of its non-null alternative)."""
    options = [s for s in schema.get("anyOf", [schema]) if s.get("type") != "null"]
    if len(options) != 1:
        return []
    schema = options[0]
    found = []
    low, high = schema.get("minLength"), schema.get("maxLength")
    if high is not None:
        found.append(f"{low or 0}-{high} characters" if low else f"at most {high} characters")
    low, high = schema.get("minItems"), schema.get("maxItems")
    if low is not None and high is not None:
        found.append(f"{low}-{high} items")
    elif high is not None:
        found.append(f"at most {high} items")
    low, high = schema.get("minProperties"), schema.get("maxProperties")
    if high is not None:
        found.append(f"{low or 0}-{high} entries")
    low = schema.get("minimum", schema.get("exclusiveMinimum"))
    high = schema.get("maximum", schema.get("exclusiveMaximum"))
    if "minimum" in schema and "maximum" in schema:
        found.append(f"{low} to {high}")
    elif low is not None or high is not None:
        words = {"minimum": "at least", "exclusiveMinimum": "more than"}
        words.update(maximum="at most", exclusiveMaximum="less than")
        found.append(" and ".join(f"{words[k]} {schema[k]}" for k in words if k in schema))
    items = schema.get("items")
    if isinstance(items, dict) and "maxLength" in items:
        found.append(f"each item {items.get('minLength', 0)}-{items['maxLength']} characters")
    return found


def _default(schema: dict[str, Any]) -> str:
    value = schema["default"]
    return "[]" if value == [] else repr(value)


def signature(model: type[ActionModel], *, marks: bool = False) -> str:
    """``agent.click(element_description: str, num_clicks: int = 1, ...)``."""
    schema = _parameters(model, marks=marks)
    required = set(schema["required"])
    parts = []
    for name, prop in schema["properties"].items():
        part = f"{name}: {_type_name(prop)}"
        if name not in required:
            part += f" = {_default(prop)}"
        parts.append(part)
    return f"agent.{model.model_fields['action'].default}({', '.join(parts)})"


def summary(model: type[ActionModel]) -> str:
    """The first line of the model's docstring: what the action does."""
    return (model.__doc__ or "").strip().splitlines()[0]


def describe(model: type[ActionModel], *, marks: bool = False) -> str:
    """One action's entry in the catalogue: signature, summary, one line per argument; with
    ``marks``, the mark arguments and an example naming a mark too."""
    schema = _parameters(model, marks=marks)
    required = set(schema["required"])
    lines = [signature(model, marks=marks), f"    {summary(model)}"]
    for name, prop in schema["properties"].items():
        notes = _constraints(prop)
        if name in required:
            notes.insert(0, "required")
        detail = f" ({'; '.join(notes)})" if notes else ""
        lines.append(f"    - {name}: {prop.get('description', '')}{detail}")
    if model.examples:
        lines.append(f"    Example: {model.examples[0]}")
    if marks and model.mark_example:
        lines.append(f"    Example: {model.mark_example}")
    return "\n".join(lines)


def example(model: type[ActionModel]) -> str:
    """An example call of ``model`` that parses (its first), for error hints."""
    return (
        model.examples[0] if model.examples else f"agent.{model.model_fields['action'].default}()"
    )


def action_catalogue(
    exclude: Collection[str] = (), *, os: OsName = "linux", marks: bool = False
) -> str:
    """The list of actions for the worker prompt, generated from the action models.

    ``exclude`` names actions this agent cannot offer (e.g. ``call_code_agent`` without one);
    ``os`` picks the modifier key names listed ("command" and "option" on "darwin"); ``marks``
    lists the mark arguments, for runs whose screenshots carry numbered marks.
    """
    entries = [
        describe(model, marks=marks) for name, model in ACTION_MODELS.items() if name not in exclude
    ]
    note = _KEYS_NOTE.format(modifiers=_MODIFIERS[primary_platform(os)])
    return "\n\n".join(entries) + "\n\n" + note + "\n"


def primary_platform(os: str) -> OsName:
    """``os`` checked to be one of "linux", "windows", "darwin"."""
    for platform in PLATFORMS:
        if os == platform:
            return platform
    raise ValueError(f"unknown platform {os!r}; use one of {', '.join(PLATFORMS)}")


def action_json_schema() -> dict[str, Any]:
    """The JSON schema of one action object, ``{"action": "click", ...}`` (a tagged union)."""
    return _drop_titles(TypeAdapter(Action).json_schema())
