"""The argument types of the actions: constrained, normalised, with clear error messages.

Each type is an ``Annotated`` pydantic type whose validators raise ``ValueError`` with a message
written for the model that produced the value (it is sent back as feedback): key names are
normalised with ``agent_s.keys.normalize_key``, texts are checked to be typable, spreadsheet
cell references are read as A1 references.
"""

from __future__ import annotations

import math
import re
import unicodedata
from typing import Annotated

from pydantic import AfterValidator, BeforeValidator, Field, StringConstraints

from agent_s.desktop.ops import Button as Button  # re-exported: the backend's button names
from agent_s.keys import normalize_key

MAX_TEXT = 20_000
MAX_DESCRIPTION = 500
MAX_NOTE = 2_000
MAX_CELL_TEXT = 10_000
MAX_MARK = 9_999  # the largest mark number a reply may name (a screen carries far fewer)


def _no_bool(value: object) -> object:
    # pydantic's lax mode reads True as 1; a boolean where a number belongs is a mistake.
    if isinstance(value, bool):
        raise ValueError(f"expected a number, got the boolean {value}")
    return value


def _typable(text: str) -> str:
    """Reject characters no keyboard or clipboard can deliver: control codes and lone surrogates."""
    bad = [c for c in text if c not in "\n\t\r" and unicodedata.category(c) in ("Cc", "Cs")]
    if bad:
        raise ValueError(f"contains U+{ord(bad[0]):04X}, which cannot be typed; remove it")
    return text


def _nonzero(clicks: int) -> int:
    if clicks == 0:
        raise ValueError("must not be 0: positive scrolls up, negative scrolls down")
    return clicks


def _key(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError(f"a key must be a string such as 'ctrl' or 'a', got {value!r}")
    return normalize_key(value)


def split_combination(value: str) -> list[str]:
    """The keys of a combination written as one string: "ctrl+s", "ctrl s", "Ctrl+Shift+T".

    A string that is itself a key name ("enter", "+", " ") is that key. Otherwise it is split
    at "+" (a "+" key is written "ctrl++" or "plus") and at spaces, as UI-TARS writes
    "ctrl c"; a part that is no key name raises ``ValueError`` naming it.
    """
    try:
        return [normalize_key(value)]
    except ValueError:
        pass
    text = value.strip()
    parts: list[str] = []
    for chunk in text.split():
        pieces = chunk.split("+")
        # "ctrl++" splits into ['ctrl', '', '']: the empty pieces stand for the "+" key
        keys = [piece for piece in pieces if piece]
        if chunk.endswith("++") or chunk == "+":
            keys.append("+")
        parts += keys
    if len(parts) < 2:
        normalize_key(value)  # raises with the standard message
    return [normalize_key(part) for part in parts]


def _key_list(value: object) -> object:
    """Keys pressed together: a list of names; "ctrl+s" inside it or alone means its keys."""
    if isinstance(value, str):
        return tuple(split_combination(value))
    if isinstance(value, (list, tuple)):
        keys: list[object] = []
        for item in value:
            combined = isinstance(item, str) and len(item) > 1 and _is_combination(item)
            keys += split_combination(item) if combined else [item]
        return tuple(keys)
    return value


def _is_combination(item: str) -> bool:
    try:
        normalize_key(item)
    except ValueError:
        pass
    else:
        return False  # a key name such as "page up" (pageup)
    text = item.strip()
    return len(text.split()) > 1 or "+" in text[1:-1] or text.endswith("++")


def _press_keys(value: object) -> object:
    """Keys pressed one after another: a list of names, or a single key name."""
    if isinstance(value, str):
        try:
            return (normalize_key(value),)
        except ValueError:
            raise ValueError(
                f"press_keys must be a list of key names pressed in turn, such as ['a', 'b'], "
                f"not the string {value!r}"
            ) from None
    if isinstance(value, (list, tuple)):
        for item in value:
            if isinstance(item, str) and len(item) > 1 and _is_combination(item):
                raise ValueError(
                    f"{item!r} is a key combination; press_keys are pressed one at a time "
                    "while hold_keys are held, e.g. hold_keys=['ctrl'], press_keys=['c']"
                )
    return value


def _scalar_text(value: object) -> object:
    """A number where text is expected is its decimal text (done(answer=42) -> "42")."""
    if isinstance(value, bool):
        raise ValueError(f"expected text, got the boolean {value}; write it in quotes")
    if isinstance(value, (int, float)) and math.isfinite(value):
        return str(value)
    return value


def _whole_number_text(value: object) -> object:
    """A whole number where text to type is expected is its digits; a float is ambiguous."""
    if isinstance(value, bool):
        raise ValueError(f"expected the text to type, got the boolean {value}; write it in quotes")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        raise ValueError(
            f"the text to type must be a quoted string: write text='{value!r}' (or as it "
            "should appear, e.g. '3.10'), since a number loses its formatting"
        )
    return value


def _note_list(value: object) -> object:
    """One note where a list of notes is expected is a list of one."""
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return (value,)
    return value


def _distinct(keys: tuple[str, ...]) -> tuple[str, ...]:
    seen = [k for i, k in enumerate(keys) if k in keys[:i]]
    if seen:
        raise ValueError(f"key {seen[0]!r} is listed twice")
    return keys


def _mark_number(value: object) -> object:
    """A mark is its number: 17, or "17" as some models quote it; anything else is refused."""
    if isinstance(value, bool):
        raise ValueError(f"a mark is a number such as 17, not the boolean {value}")
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if not isinstance(value, int):
        raise ValueError(f"a mark is the number shown on the screenshot, such as 17, not {value!r}")
    return value


Int = Annotated[int, BeforeValidator(_no_bool)]
MarkNumber = Annotated[int, BeforeValidator(_mark_number), Field(ge=1, le=MAX_MARK)]
ScrollClicks = Annotated[Int, AfterValidator(_nonzero)]
Float = Annotated[float, BeforeValidator(_no_bool)]
KeyName = Annotated[str, BeforeValidator(_key)]
KeyList = Annotated[tuple[KeyName, ...], BeforeValidator(_key_list), AfterValidator(_distinct)]
PressKeys = Annotated[tuple[KeyName, ...], BeforeValidator(_press_keys)]  # repeats allowed
Description = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_DESCRIPTION)
]
AppCode = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]
Note = Annotated[
    str,
    StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_NOTE),
    BeforeValidator(_scalar_text),
]
Notes = Annotated[tuple[Note, ...], BeforeValidator(_note_list)]
TypableText = Annotated[
    str,
    Field(max_length=MAX_TEXT),
    AfterValidator(_typable),
    BeforeValidator(_whole_number_text),
]

# A1-style cell reference: column letters then row number, optional $ anchors ("B3", "$AA$10").
_CELL = re.compile(r"\$?([A-Za-z]{1,3})\$?([0-9]{1,7})")
_MAX_COLUMN, _MAX_ROW = 16_384, 1_048_576  # XFD, as in Calc's largest sheet size
_SHEET_FORBIDDEN = set("[]*?:/\\")
CellValue = str | int | float | bool | None


def _cell_ref(ref: object) -> str:
    match = _CELL.fullmatch(ref.strip()) if isinstance(ref, str) else None
    if match is None:
        raise ValueError(f"cell {ref!r} is not an A1 reference such as 'B3'")
    letters, row = match.group(1).upper(), int(match.group(2))
    column = 0
    for letter in letters:
        column = column * 26 + ord(letter) - ord("A") + 1
    if column > _MAX_COLUMN or not 1 <= row <= _MAX_ROW:
        raise ValueError(f"cell {ref!r} is outside the sheet (columns A..XFD, rows 1..{_MAX_ROW})")
    return f"{letters}{row}"


def _cell_values(value: object) -> object:
    if not isinstance(value, dict):
        return value  # pydantic reports the wrong type
    cells: dict[str, CellValue] = {}
    for ref, cell in value.items():
        key = _cell_ref(ref)
        if key in cells:
            raise ValueError(f"cell {key} is given twice")
        if isinstance(cell, str):
            if "\t" in cell or "\r" in cell:
                raise ValueError(f"cell {key}: a tab or carriage return cannot go in a cell")
            _typable(cell)
            if len(cell) > MAX_CELL_TEXT:
                raise ValueError(f"cell {key}: text is longer than {MAX_CELL_TEXT} characters")
        elif isinstance(cell, float) and not math.isfinite(cell):
            raise ValueError(f"cell {key}: {cell!r} is not a finite number")
        elif cell is not None and not isinstance(cell, (bool, int, float)):
            raise ValueError(
                f"cell {key}: a value must be text, a number, true/false or None (to clear), "
                f"got {type(cell).__name__}"
            )
        cells[key] = cell
    return cells


def _sheet_name(name: str | None) -> str | None:
    if name is None:
        return None
    bad = sorted(_SHEET_FORBIDDEN.intersection(name))
    if bad:
        raise ValueError(f"a sheet name cannot contain {' '.join(bad)}")
    if name.startswith("'") or name.endswith("'"):
        raise ValueError("a sheet name cannot start or end with an apostrophe")
    return name


SheetName = Annotated[
    str,
    StringConstraints(strip_whitespace=True, min_length=1, max_length=200),
    AfterValidator(_sheet_name),
]
CellValues = Annotated[dict[str, CellValue], BeforeValidator(_cell_values)]
