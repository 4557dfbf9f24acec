"""Reading a referring expression: the words to look for, and the hints around them.

"the second OK button in the Save dialog" -> phrase ``OK``, role ``button``, ordinal 2,
context ``Save`` (a ``dialog``). Quoted text ("the 'Log in' link") is the phrase as written.
The last role word is the role ("the Menu button": role button, phrase Menu); a label that is
nothing but hint words ("the Top button") keeps them as its phrase.

What models add is read into typed parts too: colour words ("the blue Send button": colour
``blue``), absolute positions ("at the top right", "in the left sidebar", "top-right") and a
relation to another element, which is a referring expression of its own ("the Send button below
the message box": relation ``below``, anchor "the message box"; "next to", "beside", "left of",
"to the right of", "above", "under" ...). "of the dialog" / "of the window" after a position is
a container, not a relation.

Tokens are normalised for comparison (NFKC, case-folded, surrounding punctuation removed)
but numbers and symbols are kept: "+", "<-", "3.14" and "%" are labels too.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from agent_s.grounding.vocabulary import (
    ALIASES,
    ARTICLES,
    CLAUSES,
    COLOURS,
    CONTAINER_ONLY,
    CONTAINERS,
    DESCRIPTORS,
    FILLERS,
    NUMBER_WORDS,
    ORDINALS,
    PAIR_ALIASES,
    POSITIONS,
    RELATIONS,
    ROLE_PAIRS,
    ROLE_WORDS,
    ROWS,
    SHADES,
    SPLITTERS,
    VERBS,
    WEAK_RELATIONS,
    Position,
    RelationKind,
    Role,
)

_QUOTES = re.compile(r"[\"“”«»]([^\"“”«»]+)[\"“”«»]|(?<!\w)['‘’]([^'‘’]+?)['‘’](?!\w)")
_EDGE_PUNCTUATION = ".,:;!?'\"`()[]{}<>…“”‘’«»"


def normalize(token: str) -> str:
    """A token as compared: NFKC, case-folded, surrounding punctuation removed unless the token
    is nothing but symbols ("+", "<-", "..." stay as they are)."""
    text = unicodedata.normalize("NFKC", token).casefold().strip()
    if len(text) > 2 and text[0] + text[-1] in ("()", "[]", "{}"):  # "(=)" is "="
        return normalize(text[1:-1])
    stripped = text.strip(_EDGE_PUNCTUATION)
    if stripped and any(ch.isalnum() for ch in stripped):
        return stripped
    return text


def tokens(text: str) -> tuple[str, ...]:
    """Normalised, non-empty tokens of ``text`` split at white space."""
    return tuple(t for t in (normalize(w) for w in text.split()) if t)


@dataclass(frozen=True)
class Relation:
    """Where the element is relative to another one, the anchor (a referring expression of its
    own): "below the message box" is ``Relation("below", parse_query("the message box"))``."""

    kind: RelationKind
    anchor: Query
    words: str  # the relation as written ("next to", "below")


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
    colours: frozenset[str] = frozenset()  # names from ``COLOURS`` ("blue", "grey")
    relation: Relation | None = None
    label_free: bool = False  # no label, only hint words ("the text field", "the Top button")

    @property
    def phrase(self) -> tuple[str, ...]:
        return self.phrases[0]

    @property
    def hints(self) -> tuple[str, ...]:
        """The parts besides the label, for evidence and messages."""
        parts: list[str] = []
        if self.role:
            parts.append(f"role {self.role}")
        if self.colours:
            parts.append(f"colour {'/'.join(sorted(self.colours))}")
        if self.positions:
            parts.append(f"position {'-'.join(sorted(self.positions))}")
        if self.ordinal is not None:
            parts.append(f"ordinal {self.ordinal}")
        if self.relation is not None:
            parts.append(f"{self.relation.words} {self.relation.anchor.expression!r}")
        if self.context or self.container:
            parts.append(f"in {' '.join(self.context) or self.container}")
        return tuple(parts)


def _split_context(words: list[str]) -> tuple[list[str], list[str]]:
    """(element words, context words): split before "in the ...", "on the left" and the like.

    A preposition splits only when an article or a container word follows it, so "Sign in"
    and "Log in button" keep their "in".
    """
    for i, word in enumerate(words[1:], start=1):
        if normalize(word) not in SPLITTERS or i + 1 >= len(words):
            continue
        following = normalize(words[i + 1])
        if following in ARTICLES or following in CONTAINERS or following in POSITIONS:
            return words[:i], words[i + 1 :]
        if following == "to" and i + 2 < len(words):  # "next to the ..."
            return words[:i], words[i + 2 :]
    return words, []


_RELATION_PATTERNS = sorted(RELATIONS, key=len, reverse=True)


@dataclass(frozen=True)
class _Token:
    raw: str
    quoted: bool

    @property
    def norm(self) -> str:
        return "" if self.quoted else normalize(self.raw)


def _tokenize(text: str) -> list[_Token]:
    """Words and quoted labels, in order; a quoted label is one token."""
    out: list[_Token] = []
    at = 0
    for found in _QUOTES.finditer(text):
        out.extend(_Token(w, False) for w in text[at : found.start()].split())
        out.append(_Token(found.group(1) or found.group(2), True))
        at = found.end()
    out.extend(_Token(w, False) for w in text[at:].split())
    return out


def _expand(word: str) -> list[str]:
    """ "top-right" -> top, right; "blue-colored" -> blue, colored; other words unchanged."""
    if "-" not in word:
        return [word]
    parts = [p for p in word.split("-") if p]
    known = set(POSITIONS) | set(COLOURS) | FILLERS | SHADES
    if len(parts) > 1 and all(normalize(p) in known for p in parts):
        return parts
    return [word]


def _is_scenery(tokens_: Sequence[_Token]) -> bool:
    """The anchor names only a place ("the dialog", "the window", "the menu bar"), not an
    element."""
    words = [t.norm for t in tokens_ if not t.quoted]
    if any(t.quoted for t in tokens_):
        return False
    content = [w for w in words if w and w not in ARTICLES and w != "of"]
    if content and content[-1] == "bar" and len(content) <= 2:  # menu bar, title bar, ...
        return True
    scenery = set(CONTAINER_ONLY) | set(CONTAINERS) | set(POSITIONS) | {"corner", "side"}
    return bool(content) and all(w in scenery for w in content)


def _split_relation(tokens_: list[_Token]) -> tuple[list[_Token], RelationKind, str, list[_Token]]:
    """(element tokens, relation kind, relation words, anchor tokens) or no relation (kind "")."""
    norms = [t.norm for t in tokens_]
    for i in range(1, len(tokens_)):
        for pattern in _RELATION_PATTERNS:
            end = i + len(pattern)
            if end >= len(tokens_) or tuple(norms[i:end]) != pattern:
                continue
            if any(t.quoted for t in tokens_[i:end]):
                continue
            anchor = tokens_[end:]
            element = tokens_[:i]
            weak = len(pattern) == 1 and pattern[0] in WEAK_RELATIONS
            after_kind = (
                bool(element)
                and not element[-1].quoted
                and (element[-1].norm in ROLE_WORDS or element[-1].norm in FILLERS)
            )
            if weak and not (anchor[0].quoted or anchor[0].norm in ARTICLES or after_kind):
                continue
            if pattern == ("between",):  # "between 4 and 6": the first neighbour is enough
                norms_after = [t.norm for t in anchor]
                if "and" in norms_after[1:]:
                    anchor = anchor[: norms_after.index("and", 1)]
            if _is_scenery(anchor) or not any(
                t.quoted or (t.norm and t.norm not in ARTICLES) for t in element
            ):
                continue
            return element, RELATIONS[pattern], " ".join(pattern), anchor
    return tokens_, "near", "", []


def _without_verb(text: str) -> str:
    """ "Click on the Send button" -> "the Send button": a leading verb, when an article, "on" or
    a quoted label follows it ("Select All" is a label and keeps its verb)."""
    words = text.split()
    if len(words) < 3 or normalize(words[0]) not in VERBS:
        return text
    rest = words[1:]
    if normalize(rest[0]) in ("on", "at", "into", "in") and len(rest) > 1:
        rest = rest[1:]
    first = rest[0]
    if normalize(first) in ARTICLES or first[:1] in "\"'“‘«":
        return " ".join(rest)
    return text


def _without_clause(text: str) -> str:
    """ "the Help menu, which is the last one in the menu bar" -> "the Help menu the last one in
    the menu bar": a clause's hint words (positions, ordinals, colours, containers, a relation
    and its anchor) are kept, its other words ("which", "is", "located") dropped."""
    words = text.split()
    at = next(
        (i for i, w in enumerate(words) if i > 0 and normalize(w) in CLAUSES),
        None,
    )
    if at is None:
        return text
    clause = _tokenize(" ".join(words[at + 1 :]))
    norms = [t.norm for t in clause]
    wheres = set(POSITIONS) | set(ORDINALS) | {w for p in RELATIONS for w in p}
    if not any(n in wheres for n in norms):  # "the button which says OK": not about where
        return text
    start = len(clause)
    for i in range(len(clause)):
        if any(tuple(norms[i : i + len(p)]) == p for p in _RELATION_PATTERNS):
            start = i
            break
    hints = set(ARTICLES) | FILLERS | set(POSITIONS) | set(ORDINALS) | set(COLOURS)
    hints |= set(CONTAINERS) | SPLITTERS | SHADES
    kept = [t for t in clause[:start] if not t.quoted and t.norm in hints]
    kept += clause[start:]
    head = " ".join(words[:at]).rstrip(",;")
    tail = " ".join(f'"{t.raw}"' if t.quoted else t.raw for t in kept)
    return f"{head} {tail}".strip()


def _glyph(word: str) -> bool:
    """A digit, a one-letter label or a symbol ("7", "a", "12", "+")."""
    return len(word) == 1 or (len(word) <= 3 and not any(ch.isalpha() for ch in word))


_ASIDE = re.compile(r"\((\S[^()]*?)\)")


def _asides(text: str) -> tuple[str, list[tuple[str, ...]]]:
    """Text in parentheses: a short label-like aside ("the equals (=) button", "the <- (backspace)
    key") is another phrase to try; hints ("(blue, bottom right)") are read as part of the text.
    Returns the text without the label-like asides, and those asides as phrases."""
    hints = set(ARTICLES) | FILLERS | set(COLOURS) | SHADES | set(POSITIONS)
    hints |= set(ROLE_WORDS) | set(CONTAINERS) | {w for p in RELATIONS for w in p}
    found: list[tuple[str, ...]] = []

    def replace(match: re.Match[str]) -> str:
        inner = match.group(1)
        words = tokens(inner)
        if not words or any(w in hints for w in words) or len(words) > 3:
            return " " + inner.replace(",", " ") + " "
        found.append(words)
        return " "

    pieces: list[str] = []
    at = 0
    for quote in _QUOTES.finditer(text):  # parentheses inside a quoted label are the label's
        pieces.append(_ASIDE.sub(replace, text[at : quote.start()]))
        pieces.append(quote.group(0))
        at = quote.end()
    pieces.append(_ASIDE.sub(replace, text[at:]))
    stripped = " ".join("".join(pieces).split())
    if not found or not tokens(stripped):  # "the (=) button": the aside is the label itself
        return text, []
    return stripped, found


def parse_query(expression: str) -> Query:
    """Read ``expression`` into a ``Query``; ValueError if it has no words at all."""
    text = " ".join(expression.split())
    if not text:
        raise ValueError("the referring expression is empty")
    bare_text, asides = _asides(_without_clause(_without_verb(text)))
    element_tokens, kind, relation_words, anchor_tokens = _split_relation(_tokenize(bare_text))
    relation: Relation | None = None
    if relation_words:
        anchor_text = " ".join(f'"{t.raw}"' if t.quoted else t.raw for t in anchor_tokens).strip(
            " ,.;"
        )
        try:
            relation = Relation(kind, parse_query(anchor_text), relation_words)
        except ValueError:
            relation = None
        if relation is None:
            element_tokens = element_tokens + anchor_tokens
    quoted = [t.raw for t in element_tokens if t.quoted]
    words = [w for t in element_tokens if not t.quoted for w in _expand(t.raw)]
    element, context_words = _split_context(words)
    normal = [normalize(w) for w in element]

    role: Role | None = None
    role_at: set[int] = set()
    for i in range(len(normal) - 1, -1, -1):  # the last role word is the role
        pair = (normal[i - 1], normal[i]) if i > 0 else None
        if pair in ROLE_PAIRS:
            role, role_at = ROLE_PAIRS[pair], {i - 1, i}
            break
        if normal[i] in ROLE_WORDS:
            role, role_at = ROLE_WORDS[normal[i]], {i}
            break
    the_role = set(role_at)  # the role word itself, without the kind words before it
    if role_at:  # "the Email input field": "input" is a kind word too, when a label precedes
        first = min(role_at)
        while (
            first > 0
            and normal[first - 1] in ROLE_WORDS
            and any(w and w not in ARTICLES and w not in ROLE_WORDS for w in normal[: first - 1])
        ):
            first -= 1
            role_at.add(first)

    ordinal: int | None = None
    positions: set[Position] = set()
    colours: set[str] = set()
    content: list[str] = []
    full: list[str] = []  # the label as it may really be: role, colour and position words kept
    named: list[str] = []  # the label with the kind words before the role ("Flow Box" cell)
    for i, (raw, word) in enumerate(zip(element, normal, strict=True)):
        if not word:
            continue
        if i in role_at:
            full.append(raw)
            if i not in the_role:
                named.append(raw)
            continue
        if word in FILLERS and i > 0 and raw[:1].isupper():  # "the Entry cell": a label
            content.append(raw)
            full.append(raw)
            named.append(raw)
            continue
        if word in ORDINALS and ordinal is None:
            ordinal = ORDINALS[word]
        elif word in POSITIONS:
            positions.add(POSITIONS[word])
            full.append(raw)
        elif word in COLOURS:
            colours.add(COLOURS[word])
            full.append(raw)
        elif word in SHADES and i + 1 < len(normal) and normal[i + 1] in COLOURS:
            continue
        elif word in NUMBER_WORDS and i + 1 < len(normal) and _glyph(normal[i + 1]):
            continue  # "the number 1 key", "the digit 7", "the letter A key"
        elif word in DESCRIPTORS:
            full.append(raw)
        elif word not in ARTICLES and word not in FILLERS:
            content.append(raw)
            full.append(raw)
            named.append(raw)

    context_normal = [normalize(w) for w in context_words]
    if relation is None and any(w in ROWS for w in context_normal):
        named = [
            w
            for w, n in zip(context_words, context_normal, strict=True)
            if n and n not in ROWS and n not in ARTICLES and n not in CONTAINERS
        ]
        if named:  # "in the Photo.jpg row": next to the row's label
            relation = Relation("near", parse_query(" ".join(named)), "in the row of")
            context_words = []
    context: list[str] = []
    container = ""
    for word in (normalize(w) for w in context_words):
        if word in POSITIONS:
            positions.add(POSITIONS[word])
        elif word in CONTAINERS:
            kind_ = CONTAINERS[word]
            if kind_ in POSITIONS:
                positions.add(POSITIONS[kind_])
            elif kind_:
                container = kind_
        elif word in COLOURS:
            colours.add(COLOURS[word])
        elif word and word not in ARTICLES and word not in FILLERS and word not in SHADES:
            context.append(word)

    without_articles = tuple(w for w in normal if w and w not in ARTICLES)
    pairs = [
        tokens(a)
        for i in range(len(normal) - 1)
        for a in PAIR_ALIASES.get((normal[i], normal[i + 1]), ())
    ]
    singles = [tokens(a) for w in content for a in ALIASES.get(normalize(w), ())]
    aliases = pairs or singles
    if quoted:
        options = [tokens(q) for q in quoted]
    elif content:
        options = [tokens(" ".join(content)), tokens(" ".join(named)), tokens(" ".join(full))]
        options += [*asides, *aliases]
        options.append(without_articles)
    elif asides:
        options = list(asides)
    else:  # a label made of hint words only ("the Top button", "the tab", "the Red button")
        bare = tuple(
            w
            for i, w in enumerate(normal)
            if w and w not in ARTICLES and w not in FILLERS and i not in role_at
        )
        kind_words = tuple(normal[i] for i in sorted(role_at))  # "the Spin Button item"
        options = [bare, kind_words, without_articles, tokens(" ".join(words))]
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
        colours=frozenset(colours),
        relation=relation,
        label_free=not quoted and not content and not asides,
    )
