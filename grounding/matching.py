"""Matching a phrase against text on the screen, and choosing among several matches.

Shared by the OCR and accessibility grounders. ``phrase_score`` compares normalised tokens,
tolerant of case, punctuation, words split or joined by OCR and the usual OCR confusions
(l/I/1/|, O/0, rn/m); phrases of one or two characters ("C", "=", "OK", "+") must match
exactly. ``choose`` picks among the matches of one phrase using the rest of the description:
role, container ("in the dialog"), ordinal ("the second"), position ("bottom").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import Any

from agent_s.desktop.base import WindowInfo
from agent_s.grounding.query import Query, normalize
from agent_s.grounding.types import Box

MIN_SCORE = 0.8  # below this a text is not the phrase
TIE_MARGIN = 0.06  # matches this close to the best are all contenders
_CONFUSABLE = str.maketrans({"0": "o", "1": "l", "i": "l", "|": "l", "!": "l", "5": "s"})


def _fold(text: str) -> str:
    """Collapse characters OCR confuses, for comparing words that contain letters."""
    return text.replace("rn", "m").replace("vv", "w").translate(_CONFUSABLE)


def text_similarity(phrase: Sequence[str], words: Sequence[str]) -> float:
    """How alike two normalised token sequences are, 0..1 (1: the same tokens)."""
    if not phrase or not words:
        return 0.0
    if tuple(phrase) == tuple(words):
        return 1.0
    joined_phrase, joined_words = "".join(phrase), "".join(words)
    if joined_phrase == joined_words:  # split or joined differently: "Save As" / "SaveAs"
        return 0.97
    if len(joined_phrase) <= 2:  # "C", "=", "OK": no room for error, but OCR often reads a
        # control's decoration as one more letter ("MSv" for "MS" and its drop-down arrow).
        extra = len(joined_words) - len(joined_phrase)
        if extra == 1 and joined_phrase.isalpha() and joined_words.startswith(joined_phrase):
            return 0.82
        return 0.0
    letters = any(ch.isalpha() for ch in joined_phrase)
    if not letters:  # numbers and symbols match exactly, up to digit grouping ("1,024" 1024)
        plain = str.maketrans("", "", ",. '")
        same = joined_phrase.translate(plain) == joined_words.translate(plain)
        return 0.9 if same and any(ch.isdigit() for ch in joined_phrase) else 0.0
    if _fold(joined_phrase) == _fold(joined_words):
        return 0.93
    ratio = SequenceMatcher(None, joined_phrase, joined_words, autojunk=False).ratio()
    ratio = max(ratio, SequenceMatcher(None, _fold(joined_phrase), _fold(joined_words)).ratio())
    if len(joined_phrase) <= 5:  # short words: "Save" is not "Saved", "Help" not "Hello"
        return ratio if ratio >= 0.9 else 0.0
    return ratio


def best_window(phrase: Sequence[str], words: Sequence[str]) -> tuple[float, int, int] | None:
    """The best run of ``words`` for ``phrase``: (score, first, last index inclusive).

    Runs of len(phrase)-1 .. len(phrase)+1 words are tried (OCR joins and splits words). The
    score is discounted a little when the words around the run are not part of it, so a text
    that *is* the phrase beats one that merely contains it.
    """
    n = len(phrase)
    best: tuple[float, int, int] | None = None
    total = len(words)
    for size in sorted({max(1, n - 1), n, n + 1}):
        for start in range(0, total - size + 1):
            score = text_similarity(phrase, words[start : start + size])
            if score < MIN_SCORE:
                continue
            score *= 0.9 + 0.1 * size / total
            if best is None or score > best[0] + 1e-9:
                best = (score, start, start + size - 1)
    return best


def normalized_words(text: str) -> list[str]:
    return [t for t in (normalize(w) for w in text.split()) if t]


@dataclass
class Match:
    """One place the phrase was found: its screen box and what grounders know about it."""

    text: str
    score: float
    box: Box  # screen coordinates
    role: str = ""  # accessibility role name; "" when unknown
    role_agrees: bool | None = None  # None: the grounder cannot tell
    isolated: bool = False  # the text stands alone (a button or menu label, not a sentence)
    window: WindowInfo | None = None  # the front-most window containing it, when known
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Choice:
    match: Match
    contenders: int  # matches left when the hints had been applied
    reasons: tuple[str, ...]  # how the choice was made, for the evidence


def best_phrase(
    found: Sequence[tuple[tuple[str, ...], list[Match]]],
) -> tuple[tuple[str, ...], list[Match]] | None:
    """Of (phrase, matches) pairs in the query's order of preference, the one whose best match
    scores highest; earlier phrases win ties. "Align Top" is a button's whole name, so it beats
    "Align" read with "top" as a position hint."""
    best = None
    for phrase, matches in found:
        score = max(m.score for m in matches)
        if best is None or score > best[0] + 1e-9:
            best = (score, phrase, matches)
    return None if best is None else (best[1], best[2])


def window_at(box: Box, windows: Sequence[WindowInfo]) -> WindowInfo | None:
    """The front-most window containing the centre of ``box`` (``windows`` front-most first)."""
    point = box.center
    for window in windows:
        if window.x <= point.x < window.x + window.width and (
            window.y <= point.y < window.y + window.height
        ):
            return window
    return None


def _reading_order(matches: Sequence[Match]) -> list[Match]:
    """Top to bottom in rows (centres within half a text height), then left to right."""
    ordered = sorted(matches, key=lambda m: (m.box.center.y, m.box.center.x))
    rows: list[list[Match]] = []
    for match in ordered:
        if rows and abs(rows[-1][0].box.center.y - match.box.center.y) <= max(
            4, min(rows[-1][0].box.height, match.box.height) // 2
        ):
            rows[-1].append(match)
        else:
            rows.append([match])
    return [m for row in rows for m in sorted(row, key=lambda m: m.box.center.x)]


def _by_context(query: Query, matches: list[Match], windows: Sequence[WindowInfo]) -> list[Match]:
    """Keep the matches in the window the description names ("in the Save dialog")."""
    if not (query.context or query.container) or not windows:
        return matches
    if query.context:
        named = [
            w
            for w in windows
            if any(word in normalize(w.title) or word in normalize(w.app) for word in query.context)
        ]
        inside = [m for m in matches if m.window is not None and m.window in named]
        if inside:
            return inside
    if query.container in ("dialog", "window"):
        with_matches = [w for w in windows if any(m.window == w for m in matches)]
        if with_matches:  # the front-most window that has the phrase: dialogs sit on top
            front = with_matches[0]
            return [m for m in matches if m.window == front]
    return matches


def _by_role(query: Query, matches: list[Match]) -> list[Match]:
    if query.role is None:
        return matches
    agreeing = [m for m in matches if m.role_agrees]
    if agreeing:
        return agreeing
    if query.role in ("button", "menu", "tab", "label", "checkbox", "radio", "link"):
        alone = [m for m in matches if m.isolated]  # controls have short labels of their own
        if alone:
            return alone
    return matches


def _by_position(query: Query, matches: list[Match]) -> list[Match]:
    def key(m: Match) -> float:
        c = m.box.center
        total = 0.0
        for pos in query.positions:
            total += {"top": c.y, "bottom": -c.y, "left": c.x, "right": -c.x}[pos]
        return total

    return sorted(matches, key=key)


def choose(
    query: Query, matches: Sequence[Match], windows: Sequence[WindowInfo] = ()
) -> Choice | None:
    """The match the description means, or ``None`` when an ordinal asks for more than exist.

    Contenders are the matches scoring within ``TIE_MARGIN`` of the best; the role, the
    container, then the ordinal or the position narrow them down; among equals the best score
    wins, then reading order.
    """
    if not matches:
        return None
    top = max(m.score for m in matches)
    contenders = [m for m in matches if m.score >= top - TIE_MARGIN]
    reasons: list[str] = []
    if len(contenders) > 1:
        narrowed = _by_role(query, contenders)
        if len(narrowed) < len(contenders):
            reasons.append(f"role {query.role}")
        contenders = narrowed
    if len(contenders) > 1:
        narrowed = _by_context(query, contenders, windows)
        if len(narrowed) < len(contenders):
            where = " ".join(query.context) or query.container
            reasons.append(f"in {where}")
        contenders = narrowed
    ordered = _reading_order(contenders)
    if query.ordinal is not None:
        index = query.ordinal - 1 if query.ordinal > 0 else len(ordered) + query.ordinal
        if not 0 <= index < len(ordered):
            return None
        reasons.append(f"ordinal {query.ordinal} of {len(ordered)} in reading order")
        return Choice(ordered[index], len(ordered), tuple(reasons))
    if query.positions:
        reasons.append(f"{'-'.join(sorted(query.positions))} of {len(ordered)}")
        return Choice(_by_position(query, ordered)[0], len(ordered), tuple(reasons))
    best = max(ordered, key=lambda m: m.score)  # max() keeps the first of equals
    if len(ordered) > 1:
        reasons.append(f"best of {len(ordered)} similar matches, first in reading order")
    return Choice(best, len(ordered), tuple(reasons))


def confidence(
    choice: Choice, query: Query, phrase: Sequence[str], *, glyph_cap: float = 1.0
) -> float:
    """The match's score, lowered when equal matches remained and nothing told them apart.

    ``glyph_cap`` caps the confidence of a one-character phrase ("=", "7"): OCR reads single
    glyphs on buttons poorly and sometimes as another glyph.
    """
    score = min(1.0, choice.match.score)
    if len("".join(phrase)) == 1:
        score = min(score, glyph_cap)
    if choice.contenders > 1 and query.ordinal is None and not query.positions:
        score *= 0.75
    return round(score, 3)
