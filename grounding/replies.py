"""Strict parsing of the coordinates in a grounding model's (or generation model's) reply.

Formats read, in this order of precedence:

- Seed / Doubao: ``<point>x y</point>``, ``<bbox>x1 y1 x2 y2</bbox>``;
- UI-TARS: ``click(start_box='(x,y)')``, also ``'<|box_start|>(x,y)<|box_end|>'``, a four-number
  box ``'(x1,y1,x2,y2)'``, and ``point='...'``;
- JSON: ``{"x": .., "y": ..}``, ``{"coordinate": [x, y]}``, ``{"bbox": [x1, y1, x2, y2]}``;
- a bracketed pair or box: ``(x, y)``, ``[x, y]``, ``[x1, y1, x2, y2]``;
- a reply that is nothing but two numbers: ``512 384``.

Strict means: exactly one location (several different ones are an error, not "take the first
two integers"), no negative numbers, a box's corners in order, and a reply saying "not found"
is a ``NotFound``, never a point. Coordinates written as fractions within 0..1 (``(0.52,
0.31)``) are read in the ``unit`` frame whatever the model family, since no pixel or grid reply
looks like that. Bounds are checked by the transform chain, against the frame of the image sent.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Literal

from agent_s.grounding.types import GroundingReplyError

_NUM = r"-?\d+(?:\.\d+)?"
_SEP = r"\s*[,\s]\s*"
_PAIR = rf"({_NUM}){_SEP}({_NUM})"
_QUAD = rf"({_NUM}){_SEP}({_NUM}){_SEP}({_NUM}){_SEP}({_NUM})"
_SEED_POINT = re.compile(rf"<point>\s*{_PAIR}\s*</point>")
_SEED_BOX = re.compile(rf"<bbox>\s*{_QUAD}\s*</bbox>")
_TARS_ARG = re.compile(r"\b(start_box|point|start_point)\s*=\s*(['\"])(.*?)\2", re.DOTALL)
_TOKENS = re.compile(r"<\|box_start\|>|<\|box_end\|>|<\|point_start\|>|<\|point_end\|>")
_BRACKET_QUAD = re.compile(rf"[\[(]\s*{_QUAD}\s*[\])]")
_BRACKET_PAIR = re.compile(rf"[\[(]\s*{_PAIR}\s*[\])]")
_BARE_PAIR = re.compile(rf"^\s*{_PAIR}\s*$")
_JSON_OBJECT = re.compile(r"\{[^{}]*\}")
_NOT_FOUND = re.compile(
    r"\b(not\s+found|no\s+such\s+element|cannot\s+(?:find|locate)|can't\s+(?:find|locate)|"
    r"unable\s+to\s+(?:find|locate)|does\s+not\s+(?:exist|appear))\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class ParsedLocation:
    """A location read from a reply: a point (two values) or a box (four), in the model's frame.

    ``unit`` is True when the values are 0..1 fractions; ``format`` names the syntax matched.
    """

    kind: Literal["point", "box"]
    values: tuple[float, ...]
    format: str
    unit: bool = False

    @property
    def point(self) -> tuple[float, float]:
        if self.kind == "point":
            return self.values[0], self.values[1]
        x1, y1, x2, y2 = self.values
        return (x1 + x2) / 2, (y1 + y2) / 2


class ReplySaysNotFound(Exception):
    """The reply states that the element is not there (and gives no coordinates)."""


def _floats(groups: tuple[str, ...], reply: str) -> tuple[float, ...]:
    values = tuple(float(g) for g in groups)
    if any(v < 0 for v in values):
        raise GroundingReplyError(
            f"the reply has a negative coordinate: {reply.strip()[:200]!r}",
            reply=reply,
            reason="out of bounds",
        )
    return values


def _location(
    values: tuple[float, ...], fmt: str, texts: tuple[str, ...], reply: str
) -> ParsedLocation:
    kind: Literal["point", "box"] = "point" if len(values) == 2 else "box"
    if kind == "box":
        x1, y1, x2, y2 = values
        if x2 < x1 or y2 < y1:
            raise GroundingReplyError(
                f"the reply's box has its corners out of order: {values}",
                reply=reply,
                reason="bad box",
            )
    unit = all(v <= 1 for v in values) and any("." in t for t in texts)
    return ParsedLocation(kind, values, fmt, unit)


def _one(found: list[ParsedLocation], reply: str) -> ParsedLocation | None:
    distinct = list(dict.fromkeys((f.kind, f.values) for f in found))
    if len(distinct) > 1:
        shown = "; ".join(str(v) for _, v in distinct[:4])
        raise GroundingReplyError(
            f"the reply gives {len(distinct)} different locations ({shown}); expected one",
            reply=reply,
            reason="several locations",
        )
    return found[0] if found else None


def _json_location(reply: str) -> list[ParsedLocation]:
    found = []
    for blob in _JSON_OBJECT.findall(reply):
        try:
            data = json.loads(blob)
        except json.JSONDecodeError:
            continue
        if not isinstance(data, dict):
            continue
        raw: list[object] | None = None
        if "x" in data and "y" in data:
            raw = [data["x"], data["y"]]
        for key in ("coordinate", "point", "bbox", "box"):
            if raw is None and isinstance(data.get(key), list):
                raw = data[key]
        if raw is None:
            continue
        if len(raw) not in (2, 4) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in raw
        ):
            raise GroundingReplyError(
                f"the reply's JSON location is not 2 or 4 numbers: {blob[:200]}",
                reply=reply,
                reason="unparseable",
            )
        texts = tuple(json.dumps(v) for v in raw)
        values = _floats(texts, reply)
        found.append(_location(values, "json", texts, reply))
    return found


def parse_location(reply: str) -> ParsedLocation:
    """The one location in ``reply``; ``ReplySaysNotFound`` or ``GroundingReplyError`` if none."""
    text = reply.strip()
    if not text:
        raise GroundingReplyError("the reply is empty", reply=reply, reason="empty")
    attempts: list[tuple[str, list[ParsedLocation]]] = []

    seed = [
        _location(_floats(m.groups(), text), "seed point", m.groups(), text)
        for m in _SEED_POINT.finditer(text)
    ]
    seed += [
        _location(_floats(m.groups(), text), "seed box", m.groups(), text)
        for m in _SEED_BOX.finditer(text)
    ]
    attempts.append(("seed", seed))

    tars = []
    for match in _TARS_ARG.finditer(text):
        inner = _TOKENS.sub("", match.group(3)).strip()
        inner = _SEED_POINT.sub(lambda m: f"({m.group(1)},{m.group(2)})", inner)
        quad = re.fullmatch(rf"[\[(]?\s*{_QUAD}\s*[\])]?", inner)
        pair = re.fullmatch(rf"[\[(]?\s*{_PAIR}\s*[\])]?", inner)
        chosen = quad or pair
        if chosen is None:
            raise GroundingReplyError(
                f"the reply's {match.group(1)} is not a point or a box: {match.group(3)[:100]!r}",
                reply=reply,
                reason="unparseable",
            )
        tars.append(_location(_floats(chosen.groups(), text), "ui-tars", chosen.groups(), text))
        if match.group(1) == "start_box":
            break  # a drag's end_box is not this element
    attempts.append(("ui-tars", tars))
    attempts.append(("json", _json_location(text)))

    boxes = [
        _location(_floats(m.groups(), text), "box", m.groups(), text)
        for m in _BRACKET_QUAD.finditer(text)
    ]
    remainder = _BRACKET_QUAD.sub(" ", text)
    pairs = [
        _location(_floats(m.groups(), text), "pair", m.groups(), text)
        for m in _BRACKET_PAIR.finditer(remainder)
    ]
    attempts.append(("brackets", boxes + pairs))
    bare = _BARE_PAIR.match(text)
    if bare:
        attempts.append(
            ("bare", [_location(_floats(bare.groups(), text), "bare", bare.groups(), text)])
        )

    for _, found in attempts:
        location = _one(found, reply)
        if location is not None:
            return location
    if _NOT_FOUND.search(text):
        raise ReplySaysNotFound(text[:200])
    raise GroundingReplyError(
        f"no coordinates in the reply: {text[:200]!r} (expected e.g. (x, y), [x1, y1, x2, y2], "
        "<point>x y</point> or click(start_box='(x,y)'))",
        reply=reply,
        reason="unparseable",
    )


def parse_span_choice(reply: str, word_count: int) -> tuple[int, int] | None:
    """``{"start": N, "end": M}`` from a text-span reply, checked against ``word_count``.

    ``None`` when the model says the phrases are absent (``null``s); ``GroundingReplyError``
    for anything else that is not two word indices in order, never a guessed "word 0".
    """
    blobs = _JSON_OBJECT.findall(reply)
    if len(blobs) != 1:
        raise GroundingReplyError(
            f"expected one JSON object with start and end, got {len(blobs)}: {reply[:200]!r}",
            reply=reply,
            reason="unparseable",
        )
    try:
        data = json.loads(blobs[0])
    except json.JSONDecodeError as err:
        raise GroundingReplyError(
            f"the span choice is not valid JSON: {blobs[0][:200]!r}",
            reply=reply,
            reason="unparseable",
        ) from err
    start, end = data.get("start", "missing"), data.get("end", "missing")
    if start is None and end is None:
        return None
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (start, end)):
        raise GroundingReplyError(
            f"start and end must be word numbers, got {start!r} and {end!r}",
            reply=reply,
            reason="unparseable",
        )
    if not 0 <= start <= end < word_count:
        raise GroundingReplyError(
            f"start {start} and end {end} must satisfy 0 <= start <= end <= {word_count - 1}",
            reply=reply,
            reason="out of bounds",
        )
    return start, end
