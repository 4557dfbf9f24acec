"""Matching a phrase against text on the screen, and choosing among several matches.

Shared by the OCR and accessibility grounders. ``phrase_score`` compares normalised tokens,
tolerant of case, punctuation, words split or joined by OCR and the usual OCR confusions
(l/I/1/|, O/0, rn/m); phrases of one or two characters ("C", "=", "OK", "+") must match
exactly. ``choose`` picks among the matches of one phrase using the rest of the description:
role, container ("in the dialog"), relation to an anchor element ("below the message box"),
colour (the pixels of each match's box), ordinal ("the second"), position ("bottom"); when
nothing tells the remaining matches apart the choice says it is ambiguous, and the grounders
report that instead of clicking one of them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import Any

from PIL import Image

from agent_s.desktop.base import WindowInfo
from agent_s.grounding.query import Query, Relation, normalize, parse_query
from agent_s.grounding.transform import CoordinateChain
from agent_s.grounding.types import Box, Observation

MIN_SCORE = 0.8  # below this a text is not the phrase
TIE_MARGIN = 0.06  # matches this close to the best are all contenders
CLEAR_MARGIN = 0.04  # among contenders nothing else told apart, a lead this large still decides
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
    return best if best is not None else _abridged(phrase, words)


ABRIDGED_SCORE = 0.81  # a name said short ("the address bar" for "Address and search bar")


def _abridged(phrase: Sequence[str], words: Sequence[str]) -> tuple[float, int, int] | None:
    """Every word of a phrase of two or more words, in order, within a run that has at most two
    words more: a long name said short. Scored just above ``MIN_SCORE``, so a name that is the
    phrase always wins over one that only contains its words."""
    if len(phrase) < 2:
        return None
    for first in range(len(words)):
        if text_similarity(phrase[:1], words[first : first + 1]) < 0.9:
            continue
        at, found = first + 1, 1
        while found < len(phrase) and at < len(words) and at - first < len(phrase) + 2:
            if text_similarity(phrase[found : found + 1], words[at : at + 1]) >= 0.9:
                found += 1
            at += 1
        if found == len(phrase):
            return (ABRIDGED_SCORE, first, at - 1)
    return None


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
    tied: tuple[Match, ...] = ()  # when ambiguous: the matches nothing told apart

    @property
    def ambiguous(self) -> bool:
        """Several matches fit the description equally: ``match`` would be a guess."""
        return len(self.tied) > 1


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
    if len("".join(query.phrase)) == 1:
        # one character ("=", "0"): OCR's reading of a lone glyph is weak evidence, a glyph
        # matched by its shape inside a control's outline is strong (grounders mark those)
        shaped = [m for m in matches if m.data.get("glyph_control")]
        if shaped:
            return shaped
    if query.role is None:
        return matches
    agreeing = [m for m in matches if m.role_agrees]
    if agreeing:
        return agreeing
    possible = [m for m in matches if m.role_agrees is not False]
    if possible:  # a grounder that can tell that some are of another kind (a cell's text)
        matches = possible
    if query.role in ("button", "menu", "tab", "label", "checkbox", "radio", "link"):
        alone = [m for m in matches if m.isolated]  # controls have short labels of their own
        if alone:
            return alone
    return matches


def _position_key(positions: frozenset[str], box: Box) -> float:
    c = box.center
    return sum({"top": c.y, "bottom": -c.y, "left": c.x, "right": -c.x}[p] for p in positions)


def _by_position(query: Query, matches: list[Match]) -> list[Match]:
    return sorted(matches, key=lambda m: _position_key(query.positions, m.box))


def _same_place(a: Match, b: Match) -> bool:
    """One element seen twice (a button and its label, a cell and its text, a heading and its
    text): each holds the other's centre, or one lies (almost) wholly inside the other."""
    if a.box.contains(b.box.center) and b.box.contains(a.box.center):
        return True
    small, large = sorted((a.box, b.box), key=lambda x: x.width * x.height)
    if not large.contains(small.center):
        return False
    width = min(small.right, large.right) - max(small.x, large.x) + 1
    height = min(small.bottom, large.bottom) - max(small.y, large.y) + 1
    return width * height >= 0.8 * small.width * small.height


def _collapse(matches: list[Match]) -> list[Match]:
    """One match per place: the one whose role agrees, else the best scored, else the smaller."""
    ranked = sorted(
        matches,
        key=lambda m: (not m.role_agrees, -m.score, m.box.width * m.box.height),
    )
    kept: list[Match] = []
    for match in ranked:
        if not any(_same_place(match, k) for k in kept):
            kept.append(match)
    return [m for m in matches if m in kept]


def _gap(a: int, a_end: int, b: int, b_end: int) -> int:
    """Pixels between two intervals (0 when they overlap)."""
    return max(0, b - a_end, a - b_end)


def relation_cost(kind: str, box: Box, anchor: Box) -> float | None:
    """How far ``box`` is from where ``kind`` (below, above, left, right, near) of ``anchor``
    puts it, in pixels; ``None`` when it is on the wrong side. Across the relation's axis a gap
    weighs three times as much: "below X" means under X, not somewhere lower down the screen."""
    c = box.center
    across_x = _gap(box.x, box.right, anchor.x, anchor.right)
    across_y = _gap(box.y, box.bottom, anchor.y, anchor.bottom)
    slack_y = max(3, anchor.height // 3)
    slack_x = max(3, anchor.width // 3)
    if kind == "below":
        return None if c.y <= anchor.bottom - slack_y else across_y + 3 * across_x
    if kind == "above":
        return None if c.y >= anchor.y + slack_y else across_y + 3 * across_x
    if kind == "right":
        return None if c.x <= anchor.right - slack_x else across_x + 3 * across_y
    if kind == "left":
        return None if c.x >= anchor.x + slack_x else across_x + 3 * across_y
    # "next to": beside it in its row, or above or below it in its column
    return float(min(across_x + 3 * across_y, across_y + 3 * across_x))


def _by_relation(
    query: Query, matches: list[Match], anchors: Sequence[Box]
) -> tuple[list[Match], str]:
    """The matches nearest the anchor on the named side, and what was done (for the reasons)."""
    relation = query.relation
    if relation is None or not anchors:
        return matches, ""
    costs: list[tuple[float, Match]] = []
    for match in matches:
        if any(_same_place(match, Match("", 0, a)) for a in anchors):
            continue  # the anchor itself
        fits = [c for a in anchors if (c := relation_cost(relation.kind, match.box, a)) is not None]
        if fits:
            costs.append((min(fits), match))
    if not costs:
        return matches, ""
    costs.sort(key=lambda item: item[0])
    best = costs[0][0]
    slack = max(4.0, 0.15 * best)
    near = [m for cost, m in costs if cost <= best + slack]
    return near, f"{relation.words} {relation.anchor.expression!r}"


def _by_colour(
    query: Query, matches: list[Match], colour_of: Callable[[Box], Mapping[str, float]]
) -> list[Match]:
    """The matches showing most of the colours named ("the blue Send button"); all of them when
    none shows the colour (a model's colour word is a hint, not a condition)."""
    shares = []
    for match in matches:
        fractions = colour_of(match.box)
        wanted = set(query.colours)
        if "accent" in wanted:  # "the selected row": any hue, not grey
            wanted |= set(fractions) - {"white", "grey", "black"}
        shares.append(sum(fractions.get(c, 0.0) for c in wanted))
    best = max(shares)
    if best < 0.03:
        return matches
    return [m for m, share in zip(matches, shares, strict=True) if share >= 0.6 * best]


def _position_ties(query: Query, ordered: list[Match]) -> list[Match]:
    """The matches as far towards the named position as the first one (within a few pixels)."""
    first = _position_key(query.positions, ordered[0].box)
    size = min(ordered[0].box.width, ordered[0].box.height)
    margin = max(6, size // 2)
    return [m for m in ordered if _position_key(query.positions, m.box) <= first + margin]


def choose(
    query: Query,
    matches: Sequence[Match],
    windows: Sequence[WindowInfo] = (),
    *,
    anchors: Sequence[Box] = (),
    colour_of: Callable[[Box], Mapping[str, float]] | None = None,
) -> Choice | None:
    """The match the description means, or ``None`` when an ordinal asks for more than exist.

    Contenders are the matches scoring within ``TIE_MARGIN`` of the best, one per place; the
    role, the container, the relation to the ``anchors`` (the boxes of the element the relation
    names), the colour (``colour_of`` a box: the share of each colour name in its pixels), then
    the ordinal or the position narrow them down. When several remain that nothing told apart,
    the choice is ``ambiguous`` (``tied`` lists them) and its ``match`` is only the first in
    reading order: grounders report it, they do not click it.
    """
    if not matches:
        return None
    top = max(m.score for m in matches)
    contenders = _collapse([m for m in matches if m.score >= top - TIE_MARGIN])
    reasons: list[str] = []
    if len(contenders) > 1:
        narrowed = _by_role(query, contenders)
        if len(narrowed) < len(contenders):
            reasons.append(f"role {query.role}" if query.role else "a control's glyph")
        contenders = narrowed
    if len(contenders) > 1:
        narrowed = _by_context(query, contenders, windows)
        if len(narrowed) < len(contenders):
            where = " ".join(query.context) or query.container
            reasons.append(f"in {where}")
        contenders = narrowed
    if len(contenders) > 1 and query.relation is not None:
        narrowed, how = _by_relation(query, contenders, anchors)
        if how and len(narrowed) < len(contenders):
            reasons.append(how)
        contenders = narrowed
    if len(contenders) > 1 and query.colours and colour_of is not None:
        narrowed = _by_colour(query, contenders, colour_of)
        if len(narrowed) < len(contenders):
            reasons.append(f"colour {'/'.join(sorted(query.colours))}")
        contenders = narrowed
    ordered = _reading_order(contenders)
    if query.ordinal is not None:
        if query.positions:  # "the second from the left": counted along that direction
            ordered = _by_position(query, ordered)
        index = query.ordinal - 1 if query.ordinal > 0 else len(ordered) + query.ordinal
        if not 0 <= index < len(ordered):
            return None
        reasons.append(f"ordinal {query.ordinal} of {len(ordered)}")
        return Choice(ordered[index], len(ordered), tuple(reasons))
    if query.positions and len(ordered) > 1:
        ranked = _by_position(query, ordered)
        ties = _position_ties(query, ranked)
        reasons.append(f"{'-'.join(sorted(query.positions))} of {len(ordered)}")
        tied = tuple(ties) if len(ties) > 1 else ()
        return Choice(ranked[0], len(ordered), tuple(reasons), tied)
    front = [m for m in ordered if m.window is not None and m.window.active]
    behind = [m for m in ordered if m.window is not None and not m.window.active]
    if len(front) == 1 and len(front) + len(behind) == len(ordered) > 1:
        # one in the active window (a dialog in front), the others in windows behind it
        reasons.append(f"the one in the active window, of {len(ordered)}")
        return Choice(front[0], len(ordered), tuple(reasons))
    whole = [m for m in ordered if m.isolated]
    if len(ordered) > 1 and len(whole) == 1:  # "Info" is the Info tab, not "Info Bars"
        reasons.append(f"the one whose whole text is the phrase, of {len(ordered)}")
        return Choice(whole[0], len(ordered), tuple(reasons))
    written = [m for m in ordered if _as_written(query.expression, m.text)]
    if len(ordered) > 1 and 0 < len(written) < len(ordered) and _capitals_differ(written, ordered):
        # "Page 1" is the tab reading "Page 1", not the three reading "page 1"
        reasons.append(f"the case written, of {len(ordered)}")
        if len(written) == 1:
            return Choice(written[0], len(ordered), tuple(reasons))
        ordered = written
    scores = sorted((m.score for m in ordered), reverse=True)
    if len(ordered) > 1 and scores[0] - scores[1] > CLEAR_MARGIN:
        best = max(ordered, key=lambda m: m.score)
        reasons.append(f"best of {len(ordered)} matches")
        return Choice(best, len(ordered), tuple(reasons))
    if len(ordered) > 1:
        reasons.append(f"{len(ordered)} matches fit equally")
        return Choice(ordered[0], len(ordered), tuple(reasons), tuple(ordered))
    return Choice(ordered[0], 1, tuple(reasons))


def _cased(text: str) -> str:
    return " " + " ".join(w.strip(_EDGES) for w in text.split()) + " "


_EDGES = ".,:;!?'\"`()[]{}<>…“”‘’«»|"


def _as_written(expression: str, text: str) -> bool:
    """Whether ``text`` appears in ``expression`` with the same letter case (only said of
    texts with a capital letter and some lower-case one: "Page 1", not "OK" or "page 1")."""
    shown = _cased(text)
    if not any(ch.isupper() for ch in shown) or shown == shown.upper():
        return False
    return shown.strip() != "" and shown in _cased(expression)


def _capitals_differ(written: Sequence[Match], ordered: Sequence[Match]) -> bool:
    """Whether the matches not written as the description writes them differ from it only in
    capital first letters ("page 1" for "Page 1"): a label of its own, not OCR misreading a
    letter ("AppIy"), which says nothing about which one was meant."""

    def initials(text: str) -> str:
        return " ".join(w[:1].lower() + w[1:] for w in _cased(text).split())

    names = {initials(m.text) for m in written}
    return all(initials(m.text) in names for m in ordered)


@dataclass(frozen=True)
class Resolution:
    """A query resolved on one look at the screen: the phrase that matched, its matches, the
    choice among them (``None``: an ordinal asked for more than exist) and how the relation's
    anchor was found ("" without a relation)."""

    phrase: tuple[str, ...]
    matches: list[Match]
    choice: Choice | None
    anchor_note: str = ""


Finder = Callable[[Query], tuple[tuple[str, ...], list[Match]] | None]


def resolve(
    query: Query,
    find: Finder,
    windows: Sequence[WindowInfo] = (),
    colour_of: Callable[[Box], Mapping[str, float]] | None = None,
) -> Resolution | None:
    """Find ``query``'s matches with ``find`` and choose among them; a relation's anchor is
    resolved first, the same way (an ambiguous anchor counts with all its candidates).
    ``None`` when the phrase is nowhere."""
    found = find(query)
    if found is None:
        return None
    phrase, matches = found
    anchors: list[Box] = []
    note = ""
    where = query.positions or query.ordinal is not None
    if query.relation is None and query.context and not where and not _names_window(query, windows):
        # "the Close button on the tab", "OK in the Print section": the context is no window's
        # name, so it is an element the target sits in or next to
        try:
            around = parse_query(" ".join(query.context))
        except ValueError:
            around = None
        if around is not None:
            query = dataclasses.replace(query, relation=Relation("near", around, "in"))
    if query.relation is not None:
        anchor = query.relation.anchor
        inner = resolve(anchor, find, windows, colour_of)
        if inner is None and len(anchor.phrase) > 1 and not anchor.quoted:
            # "the theme setting": the anchor said long; its words alone, first found wins
            for word in anchor.phrase:
                shorter = dataclasses.replace(anchor, phrases=((word,),), relation=None)
                inner = resolve(shorter, find, windows, colour_of)
                if inner is not None and inner.choice is not None and not inner.choice.ambiguous:
                    break
                inner = None
        if inner is None or inner.choice is None:
            note = f"anchor {anchor.expression!r} not found"
        elif inner.choice.ambiguous:
            anchors = [m.box for m in inner.choice.tied]
            note = f"anchor {anchor.expression!r}: {len(anchors)} candidates"
        else:
            box = inner.choice.match.box
            anchors = [box]
            note = f"anchor {inner.choice.match.text!r} at ({box.center.x}, {box.center.y})"
    choice = choose(query, matches, windows, anchors=anchors, colour_of=colour_of)
    return Resolution(phrase, matches, choice, note)


def _names_window(query: Query, windows: Sequence[WindowInfo]) -> bool:
    return any(
        word in normalize(w.title) or word in normalize(w.app)
        for w in windows
        for word in query.context
    )


def ambiguity_message(what: str, phrase: Sequence[str], choice: Choice) -> str:
    """Feedback when several matches tie: where they are, and how to say which one."""
    places = ", ".join(
        f"{m.text!r}{' ' + m.role if m.role else ''} at ({m.box.center.x}, {m.box.center.y})"
        for m in choice.tied[:6]
    )
    return (
        f"{what}: {len(choice.tied)} elements match {' '.join(phrase)!r} equally ({places}); "
        "say which one: add its position ('at the top right'), an ordinal ('the second') or "
        "a neighbour ('below the Subject field')"
    )


# -- colours of pixels -------------------------------------------------------------------------


def colour_name(h: int, s: int, v: int) -> str:
    """The colour word for one pixel in PIL's HSV (each 0..255)."""
    if v < 50:
        return "black"
    if s < 45:
        return "white" if v > 215 else "grey"
    hue = h * 360 / 255
    if hue < 15 or hue >= 345:
        return "brown" if v < 140 else "red"
    if hue < 40:
        return "brown" if v < 150 else "orange"
    if hue < 70:
        return "yellow"
    if hue < 165:
        return "green"
    if hue < 195:
        return "cyan"
    if hue < 255:
        return "blue"
    if hue < 290:
        return "purple"
    return "pink"


def colour_shares(
    image: Image.Image, box: Box | None = None, *, samples: int = 48
) -> dict[str, float]:
    """The share of each colour word among the pixels of ``box`` (of ``image``), sampled on a
    grid of at most ``samples`` x ``samples`` pixels."""
    if box is not None:
        left, top = max(0, box.x), max(0, box.y)
        right, bottom = min(image.width, box.x + box.width), min(image.height, box.y + box.height)
        if right <= left or bottom <= top:
            return {}
        image = image.crop((left, top, right, bottom))
    if image.width > samples or image.height > samples:
        image = image.resize((min(samples, image.width), min(samples, image.height)))
    hsv = image.convert("RGB").convert("HSV")
    counts: dict[str, int] = {}
    data = hsv.tobytes()
    for i in range(0, len(data), 3):
        name = colour_name(data[i], data[i + 1], data[i + 2])
        counts[name] = counts.get(name, 0) + 1
    total = len(data) // 3
    return {name: n / total for name, n in counts.items()} if total else {}


def colour_reader(observation: Observation) -> Callable[[Box], Mapping[str, float]]:
    """``colour_shares`` of screen boxes on ``observation``'s screenshot (remembered per box)."""
    chain = CoordinateChain(observation.screenshot, geometry=observation.geometry)
    image = observation.screenshot.image
    seen: dict[Box, Mapping[str, float]] = {}

    def read(box: Box) -> Mapping[str, float]:
        if box not in seen:
            shot = chain.screen_box_to_screenshot(box)
            seen[box] = colour_shares(image, shot) if shot is not None else {}
        return seen[box]

    return read


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
    if choice.ambiguous:
        score *= 0.75
    return round(score, 3)
