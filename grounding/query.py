"""Reading a referring expression: the words to look for, and the hints around them.

"the second OK button in the Save dialog" -> phrase ``OK``, role ``button``, ordinal 2,
context ``Save`` (a ``dialog``). Quoted text ("the 'Log in' link") is the phrase as written.
The last role word is the role ("the Menu button": role button, phrase Menu); a label that is
nothing but hint words ("the Top button") keeps them as its phrase.

Tokens are normalised for comparison (NFKC, case-folded, surrounding punctuation removed)
but numbers and symbols are kept: "+", "<-", "3.14" and "%" are labels too.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Literal

Role = Literal[
    "button",
    "field",
    "menu",
    "tab",
    "link",
    "icon",
    "label",
    "checkbox",
    "radio",
    "combo",
    "cell",
    "heading",
    "slider",
    "list",
    "window",
]
Position = Literal["top", "bottom", "left", "right"]

_ROLE_WORDS: dict[str, Role] = {
    "button": "button",
    "buttons": "button",
    "btn": "button",
    "key": "button",
    "field": "field",
    "input": "field",
    "entry": "field",
    "textbox": "field",
    "textfield": "field",
    "searchbox": "field",
    "menu": "menu",
    "menuitem": "menu",
    "tab": "tab",
    "link": "link",
    "hyperlink": "link",
    "icon": "icon",
    "label": "label",
    "checkbox": "checkbox",
    "toggle": "checkbox",
    "radio": "radio",
    "dropdown": "combo",
    "combo": "combo",
    "combobox": "combo",
    "cell": "cell",
    "heading": "heading",
    "title": "heading",
    "slider": "slider",
}
_ROLE_PAIRS: dict[tuple[str, str], Role] = {
    ("text", "box"): "field",
    ("text", "field"): "field",
    ("text", "input"): "field",
    ("search", "box"): "field",
    ("input", "box"): "field",
    ("edit", "box"): "field",
    ("check", "box"): "checkbox",
    ("combo", "box"): "combo",
    ("drop", "down"): "combo",
    ("radio", "button"): "radio",
    ("menu", "item"): "menu",
    ("list", "item"): "list",
}
_ORDINALS = {
    "first": 1,
    "1st": 1,
    "second": 2,
    "2nd": 2,
    "third": 3,
    "3rd": 3,
    "fourth": 4,
    "4th": 4,
    "fifth": 5,
    "5th": 5,
    "sixth": 6,
    "6th": 6,
    "seventh": 7,
    "7th": 7,
    "eighth": 8,
    "8th": 8,
    "ninth": 9,
    "9th": 9,
    "tenth": 10,
    "10th": 10,
    "last": -1,
}
_POSITIONS: dict[str, Position] = {
    "top": "top",
    "upper": "top",
    "topmost": "top",
    "bottom": "bottom",
    "lower": "bottom",
    "bottommost": "bottom",
    "left": "left",
    "leftmost": "left",
    "right": "right",
    "rightmost": "right",
}
_ARTICLES = {"the", "a", "an", "this", "that"}
_FILLERS = {
    "labelled",
    "labeled",
    "named",
    "called",
    "titled",
    "saying",
    "reading",
    "marked",
    "with",
    "text",
    "word",
    "words",
    "item",
    "option",
    "element",
    "entry",
    "one",
    "click",
    "on",
    "corner",
    "side",
    "most",
}
# Containers after "in the ...": where the element is, not what it says.
_CONTAINERS = {
    "dialog": "dialog",
    "popup": "dialog",
    "pop-up": "dialog",
    "window": "window",
    "toolbar": "top",
    "menubar": "top",
    "statusbar": "bottom",
    "sidebar": "left",
    "panel": "",
    "pane": "",
    "bar": "",
    "area": "",
    "section": "",
    "page": "",
    "screen": "",
    "list": "",
    "table": "",
    "form": "",
}
_SPLITTERS = {"in", "inside", "within", "on", "of", "under", "at", "from", "near", "next"}
_QUOTES = re.compile(r"[\"“”«»]([^\"“”«»]+)[\"“”«»]|(?<!\w)['‘’]([^'‘’]+?)['‘’](?!\w)")
_EDGE_PUNCTUATION = ".,:;!?'\"`()[]{}<>…“”‘’«»"


def normalize(token: str) -> str:
    """A token as compared: NFKC, case-folded, surrounding punctuation removed unless the token
    is nothing but symbols ("+", "<-", "..." stay as they are)."""
    text = unicodedata.normalize("NFKC", token).casefold().strip()
    stripped = text.strip(_EDGE_PUNCTUATION)
    if stripped and any(ch.isalnum() for ch in stripped):
        return stripped
    return text


def tokens(text: str) -> tuple[str, ...]:
    """Normalised, non-empty tokens of ``text`` split at white space."""
    return tuple(t for t in (normalize(w) for w in text.split()) if t)


@dataclass(frozen=True)
class Query:
    """A referring expression, read. ``phrases`` are the texts to look for, best first."""

    expression: str
    phrases: tuple[tuple[str, ...], ...]
    role: Role | None = None
    ordinal: int | None = None  # 1-based; -1 is "last"
    positions: frozenset[Position] = frozenset()
    context: tuple[str, ...] = ()  # words naming the container ("save" in "the Save dialog")
    container: str = ""  # "dialog", "window" or "" (none named)
    quoted: bool = False

    @property
    def phrase(self) -> tuple[str, ...]:
        return self.phrases[0]


def _split_context(words: list[str]) -> tuple[list[str], list[str]]:
    """(element words, context words): split before "in the ...", "on the left" and the like.

    A preposition splits only when an article or a container word follows it, so "Sign in"
    and "Log in button" keep their "in".
    """
    for i, word in enumerate(words[1:], start=1):
        if normalize(word) not in _SPLITTERS or i + 1 >= len(words):
            continue
        following = normalize(words[i + 1])
        if following in _ARTICLES or following in _CONTAINERS or following in _POSITIONS:
            return words[:i], words[i + 1 :]
        if following == "to" and i + 2 < len(words):  # "next to the ..."
            return words[:i], words[i + 2 :]
    return words, []


def parse_query(expression: str) -> Query:
    """Read ``expression`` into a ``Query``; ValueError if it has no words at all."""
    text = " ".join(expression.split())
    if not text:
        raise ValueError("the referring expression is empty")
    quoted = [m.group(1) or m.group(2) for m in _QUOTES.finditer(text)]
    words = _QUOTES.sub(" ", text).split() if quoted else text.split()
    element, context_words = _split_context(words)
    normal = [normalize(w) for w in element]

    role: Role | None = None
    role_at: set[int] = set()
    for i in range(len(normal) - 1, -1, -1):  # the last role word is the role
        pair = (normal[i - 1], normal[i]) if i > 0 else None
        if pair in _ROLE_PAIRS:
            role, role_at = _ROLE_PAIRS[pair], {i - 1, i}
            break
        if normal[i] in _ROLE_WORDS:
            role, role_at = _ROLE_WORDS[normal[i]], {i}
            break

    ordinal: int | None = None
    positions: set[Position] = set()
    content: list[str] = []
    for i, (raw, word) in enumerate(zip(element, normal, strict=True)):
        if i in role_at or not word:
            continue
        if word in _ORDINALS and ordinal is None:
            ordinal = _ORDINALS[word]
        elif word in _POSITIONS:
            positions.add(_POSITIONS[word])
        elif word not in _ARTICLES and word not in _FILLERS:
            content.append(raw)

    context: list[str] = []
    container = ""
    for word in (normalize(w) for w in context_words):
        if word in _POSITIONS:
            positions.add(_POSITIONS[word])
        elif word in _CONTAINERS:
            kind = _CONTAINERS[word]
            if kind in _POSITIONS:
                positions.add(_POSITIONS[kind])
            elif kind:
                container = kind
        elif word and word not in _ARTICLES and word not in _FILLERS:
            context.append(word)

    without_articles = tuple(w for w in normal if w and w not in _ARTICLES)
    if quoted:
        options = [tokens(q) for q in quoted]
    elif content:
        options = [tokens(" ".join(content)), without_articles]
    else:  # a label made of hint words only ("the Top button", "the tab")
        bare = tuple(
            w for i, w in enumerate(normal) if w and w not in _ARTICLES and i not in role_at
        )
        options = [bare, without_articles, tokens(text)]
    phrases: list[tuple[str, ...]] = []
    for candidate in options:
        if candidate and candidate not in phrases:
            phrases.append(candidate)
    if not phrases:
        raise ValueError(f"the referring expression {expression!r} names nothing to look for")
    return Query(
        expression=text,
        phrases=tuple(phrases),
        role=role,
        ordinal=ordinal,
        positions=frozenset(positions),
        context=tuple(context),
        container=container,
        quoted=bool(quoted),
    )
