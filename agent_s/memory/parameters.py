"""A skill's parameters: literal values its task and its code share, and putting new values
in their place (text substitution on stored code; nothing is run)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from agent_s.memory.entries import Skill

# quoted text: '...' (an apostrophe inside, as in 'don't', is not its end: the closing quote is
# not followed by a letter), "...", `...`, and the typographic quotes; the quotes are not part of it
_QUOTED = re.compile(
    r"(?<!\w)'([^\n]{1,200}?)'(?!\w)|\"([^\"\n]{1,200})\"|`([^`\n]{1,200})`"
    r"|“([^”\n]{1,200})”|‘([^\n]{1,200}?)’(?!\w)|«\s?([^»\n]{1,200}?)\s?»"
)
_FILE = re.compile(
    r"(?<![\w.\-/~])(?:~|\.{1,2})?/?(?:[\w.\-]+/)*[\w\-]+(?:\.[\w\-]+)*\.[A-Za-z0-9]{1,8}(?![\w\-])"
)
# /tmp/out, ~/dir: a path ends with a letter, digit, _ or -, so the full stop ending a sentence
# ("save it as /tmp/out/note.txt.") is not part of it
_PATH = re.compile(r"(?<![\w.\-/~])~?/(?:[\w.\-]+/)*[\w.\-]*[\w\-](?![\w\-/])")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w]|\.\d)")
_UNSAFE_VALUE = re.compile(r"[\x00-\x1f\x7f'\"`\\]")


def _literal_pattern(literal: str) -> str:
    # whole tokens only: "20" is not found inside "2000", "x20" or "20.5"; "sales.csv" not in
    # "old_sales.csv"
    return rf"(?<![\w.\-]){re.escape(literal)}(?!\w|[.\-]\w)"


def _kind_of(literal: str) -> str:
    if re.fullmatch(r"\d+(?:\.\d+)?", literal):
        return "number"
    if "/" in literal or re.search(r"\.[A-Za-z0-9]{1,8}$", literal):
        return "file"
    return "text"


def _task_literals(task: str, typed: Iterable[str] = ()) -> list[str]:
    """Literal values in the task text, in order: quoted text, file names and paths, numbers,
    and each of ``typed`` (text typed) that the task has as it is, quoted or not. A value
    inside a longer one (the number in a quoted file name) is not taken on its own."""
    spans: list[tuple[int, int, str]] = []
    for match in _QUOTED.finditer(task):
        group = match.lastindex or 0  # the alternative that matched
        spans.append((match.start(group), match.end(group), match.group(group)))
    for pattern in (_FILE, _PATH, _NUMBER):
        spans.extend((m.start(), m.end(), m.group()) for m in pattern.finditer(task))
    for text in typed:
        text = text.strip()
        found = re.search(_literal_pattern(text), task) if re.search(r"\w", text) else None
        if found is not None:
            spans.append((found.start(), found.end(), text))
    spans.sort(key=lambda s: (s[0], -(s[1] - s[0])))
    taken: list[tuple[int, int, str]] = []
    for span in spans:
        if any(span[0] < end and start < span[1] for start, end, _ in taken):
            continue
        if span[2].strip() == span[2] and span[2]:
            taken.append(span)
    seen: list[str] = []
    for _, _, literal in taken:
        if literal not in seen:
            seen.append(literal)
    return seen


def _skill_text(skill: Skill) -> str:
    return "\n".join(skill.actions) if skill.language == "actions" else skill.code


def extract_parameters(task: str, code: str, typed: Iterable[str] = ()) -> dict[str, str]:
    """Literal values the task text and the code share, named by kind and order:
    ``{"file_1": "sales.csv", "number_1": "200", "text_1": "Total"}``. ``typed``: text the
    code types; one that the task has as it is came from the task, quoted or not ("type hello
    world into mousepad"), and is a parameter too."""
    found: dict[str, str] = {}
    counts: dict[str, int] = {}
    for literal in _task_literals(task, typed):
        if not re.search(_literal_pattern(literal), code):
            continue
        kind = _kind_of(literal)
        counts[kind] = counts.get(kind, 0) + 1
        found[f"{kind}_{counts[kind]}"] = literal
    return found


def with_parameters(skill: Skill, task: str) -> Skill:
    """``skill`` with ``parameters`` extracted from ``task`` and its code."""
    return skill.model_copy(update={"parameters": extract_parameters(task, _skill_text(skill))})


def _substitute(text: str, literals: Mapping[str, str]) -> str:
    if not literals:
        return text
    ordered = sorted(literals, key=len, reverse=True)  # the longest literal wins at a place
    pattern = re.compile("|".join(_literal_pattern(literal) for literal in ordered))
    return pattern.sub(lambda m: literals[m.group()], text)  # one pass: new text is not re-read


def instantiate(skill: Skill, values: Mapping[str, str]) -> Skill:
    """The skill with each named parameter's literal replaced by its new value exactly where it
    stood in the code (whole tokens only). Nothing is run. A value with a quote, backslash or
    control character is refused (it could break out of a string literal), as is a number
    parameter given something else than a number, and an unknown name."""
    literals: dict[str, str] = {}
    for name, value in values.items():
        if name not in skill.parameters:
            known = ", ".join(sorted(skill.parameters)) or "none"
            raise ValueError(f"the skill has no parameter {name!r} (it has: {known})")
        if _UNSAFE_VALUE.search(value) or not value:
            raise ValueError(
                f"{name}: {value!r} is empty or has a quote, backslash or control character"
            )
        if name.startswith("number_") and not re.fullmatch(r"-?\d+(?:\.\d+)?", value):
            raise ValueError(f"{name} takes a number, got {value!r}")
        literals[skill.parameters[name]] = value
    parameters = {n: values.get(n, v) for n, v in skill.parameters.items()}
    if skill.language == "actions":
        actions = tuple(_substitute(a, literals) for a in skill.actions)
        return skill.model_copy(update={"actions": actions, "parameters": parameters})
    code = _substitute(skill.code, literals)
    return skill.model_copy(update={"code": code, "parameters": parameters})


__all__ = ["extract_parameters", "instantiate", "with_parameters"]
