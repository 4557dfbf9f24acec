"""OCR grounding with tesseract: read the screen once per step, find phrases, find text spans.

The engine (``grounding.tesseract``) reads a preprocessed image with libtesseract in this
process, or with the ``tesseract`` program.
``OcrReader`` caches one page per observation (keyed on the screenshot's pixels) and region,
so every grounding of a step shares one OCR pass. ``OcrGrounder`` matches the
phrase of a referring expression against the lines read, cut where words stand far apart (a
label and the button beside it are two texts), and chooses among the matches with the rest of
the description (``matching.resolve``: role, colour read from the pixels of each match,
position, ordinal, a relation to an anchor text found first; ties are reported as ambiguous),
optionally re-reading only the active window when the whole screen did not show the phrase
(bitmap fonts and busy screens read better cropped), and turns the match into screen
coordinates through the transform chain.

The controls of the screenshot (``grounding.controls``: outlined boxes with their short labels
read glyph by glyph, icons named by their shapes) are matched beside the lines of words, once
per screenshot: "the = button", "+" or "the Close button" resolve to the control's whole box,
and the same resolution (role, position, ordinal, relation) chooses among words and controls.
Words inside a control whose short label the glyphs read clearly are not matched on their own
(tesseract reads a lone "5" as "="). ``OcrGrounder.candidates`` lists every word and control
matching an expression, for ``agent-s ground --explain``.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from PIL import Image, ImageChops

from agent_s.grounding import matching
from agent_s.grounding.controls import Control, ControlDetector
from agent_s.grounding.fields import field_beside
from agent_s.grounding.query import Query, normalize, parse_query
from agent_s.grounding.tesseract import TesseractEngine
from agent_s.grounding.tesseract import TesseractOptions as TesseractOptions  # re-exported
from agent_s.grounding.transform import CoordinateChain
from agent_s.grounding.types import (
    Box,
    Candidate,
    GroundingResult,
    NotFound,
    Observation,
    TextSpan,
)

CropMode = Literal["never", "fallback", "always"]
GLYPH_CONFIDENCE = 0.6  # at most, for a one-character label: tesseract misreads lone glyphs


@dataclass(frozen=True)
class OcrWord:
    """One word read, with its box in screenshot pixels and tesseract's confidence (0..1)."""

    text: str
    box: Box
    confidence: float
    line: int  # index of its line in the page, in reading order
    index: int = 0  # index of the word in the page, in reading order


@dataclass(frozen=True)
class OcrPage:
    """The words read from one region of one screenshot, in reading order."""

    words: tuple[OcrWord, ...]
    region: Box  # screenshot pixels that were read
    seconds: float
    engine: str

    def lines(self) -> list[list[OcrWord]]:
        grouped: dict[int, list[OcrWord]] = {}
        for word in self.words:
            grouped.setdefault(word.line, []).append(word)
        return [grouped[k] for k in sorted(grouped)]

    @property
    def text(self) -> str:
        return "\n".join(" ".join(w.text for w in line) for line in self.lines())


def _order(raw: Sequence[tuple[str, Box, float, tuple[int, int, int]]]) -> tuple[OcrWord, ...]:
    """Words in reading order: lines top to bottom (in rows), left to right; words by x."""
    lines: dict[tuple[int, int, int], list[tuple[str, Box, float]]] = {}
    for text, box, conf, line in raw:
        lines.setdefault(line, []).append((text, box, conf))
    boxes = []
    for members in lines.values():
        box = members[0][1]
        for _, other, _ in members[1:]:
            box = box.union(other)
        boxes.append((box, sorted(members, key=lambda m: m[1].x)))
    boxes.sort(key=lambda item: (item[0].center.y, item[0].x))
    rows: list[list[tuple[Box, list[tuple[str, Box, float]]]]] = []
    for item in boxes:
        if rows and abs(rows[-1][0][0].center.y - item[0].center.y) <= max(
            3, min(rows[-1][0][0].height, item[0].height) // 2
        ):
            rows[-1].append(item)
        else:
            rows.append([item])
    words: list[OcrWord] = []
    line_no = 0
    for row in rows:
        for _, members in sorted(row, key=lambda item: item[0].x):
            for text, box, conf in members:
                words.append(OcrWord(text, box, conf, line_no, len(words)))
            line_no += 1
    return tuple(words)


class OcrReader:
    """Reads each (screenshot, region) once and keeps the last ``max_pages`` pages; with
    ``trim`` (default) only the part of the region that is not plain background is read."""

    def __init__(
        self,
        engine: TesseractEngine | None = None,
        *,
        max_pages: int = 8,
        trim: bool = True,
    ) -> None:
        self.engine = engine or TesseractEngine()
        self.trim = trim  # read only the part of a region that is not plain background
        self.max_pages = max_pages
        self.passes = 0  # OCR passes actually run (cache misses), for tests and benchmarks
        self._pages: OrderedDict[tuple[str, tuple[int, ...]], OcrPage] = OrderedDict()
        self._lock = threading.Lock()

    def seconds_for(self, observation: Observation) -> float:
        """Seconds spent reading the pages of ``observation`` still cached (benchmarks)."""
        with self._lock:
            return sum(p.seconds for k, p in self._pages.items() if k[0] == observation.key)

    def page(self, observation: Observation, region: Box | None = None) -> OcrPage:
        """The words of ``region`` (screenshot pixels; default the whole screenshot)."""
        image = observation.screenshot.image
        full = Box(0, 0, image.width, image.height)
        region = full if region is None else region
        key = (observation.key, region.as_tuple())
        with self._lock:
            if key in self._pages:
                self._pages.move_to_end(key)
                return self._pages[key]
            start = time.perf_counter()
            # only the part of the region that shows anything: a plain desktop around a
            # window holds no text, and tesseract's time grows with the pixels it is given
            read = _content(image, region) if self.trim else region
            crop = (
                image
                if read == full
                else image.crop((read.x, read.y, read.x + read.width, read.y + read.height))
            )
            raw = (
                [
                    (text, Box(box.x + read.x, box.y + read.y, box.width, box.height), conf, line)
                    for text, box, conf, line in self.engine.read(crop)
                ]
                if read.width >= 4 and read.height >= 4
                else []
            )
            self.passes += 1
            page = OcrPage(_order(raw), region, time.perf_counter() - start, self.engine.name)
            self._pages[key] = page
            while len(self._pages) > self.max_pages:
                self._pages.popitem(last=False)
            return page


_MARGIN = 6  # pixels kept around the content read (tesseract wants a little space)


def _content(image: Image.Image, region: Box) -> Box:
    """The part of ``region`` that is not plain background: the box around every pixel that
    differs from the colour three of the region's corners share (with ``_MARGIN`` around it);
    the whole region when no three corners agree (a wallpaper, a window filling it)."""
    left, top = region.x, region.y
    right, bottom = region.x + region.width - 1, region.y + region.height - 1
    corners = [image.getpixel((x, y)) for x, y in ((left, top), (right, top), (left, bottom))]
    corners.append(image.getpixel((right, bottom)))
    plain = max(corners, key=corners.count)
    if corners.count(plain) < 3:
        return region
    area = image.crop((left, top, right + 1, bottom + 1))
    backdrop = Image.new(area.mode, area.size, plain)
    found = ImageChops.difference(area, backdrop).getbbox()
    if found is None:
        return Box(left, top, 1, 1)
    x0, y0 = max(0, found[0] - _MARGIN), max(0, found[1] - _MARGIN)
    x1 = min(region.width, found[2] + _MARGIN)
    y1 = min(region.height, found[3] + _MARGIN)
    return Box(left + x0, top + y0, x1 - x0, y1 - y0)


def _active_region(observation: Observation, chain: CoordinateChain) -> Box | None:
    window = observation.active_window
    if window is None or window.width < 8 or window.height < 8:
        return None
    region = chain.screen_box_to_screenshot(Box(window.x, window.y, window.width, window.height))
    image = observation.screenshot.image
    if region is None or region == Box(0, 0, image.width, image.height):
        return None
    return region


class OcrGrounder:
    """Finds a referring expression's words among the words OCR read on the screen.

    ``crop``: ``"fallback"`` (default) reads the whole screen, and the active window alone
    when the phrase was not found; ``"always"`` reads only the active window; ``"never"``
    only the whole screen.

    ``controls`` (default: a new ``ControlDetector``; ``None`` to read words only) finds the
    outlined controls of the screenshot and reads their short labels glyph by glyph, so that
    "the = button" or "+" resolves to the button's box: one detection pass per screenshot,
    merged with the words of the whole-screen page, shared by every grounding of the step.
    """

    name = "ocr"

    def __init__(
        self,
        reader: OcrReader | None = None,
        *,
        crop: CropMode = "fallback",
        controls: ControlDetector | None | Literal["default"] = "default",
    ) -> None:
        self.reader = reader or OcrReader()
        self.crop = crop
        self.controls = ControlDetector() if controls == "default" else controls

    def detected(self, observation: Observation) -> tuple[Control, ...]:
        """The controls detected on ``observation`` (merged with the whole screen's words),
        from the one cached detection pass; () without a detector."""
        if self.controls is None:
            return ()
        page = self.reader.page(observation)
        image = observation.screenshot.image
        return self.controls.page(observation.key, image, page.words).controls

    def _iter_pages(
        self, observation: Observation, chain: CoordinateChain
    ) -> Iterator[tuple[OcrPage, str]]:
        """The pages to search, read on demand: the active window only if the screen missed."""
        if self.crop != "always":
            yield self.reader.page(observation), "screen"
        if self.crop == "never":
            return
        region = _active_region(observation, chain)
        if region is not None:
            yield self.reader.page(observation, region), "active window"
        elif self.crop == "always":
            yield self.reader.page(observation), "screen"

    def ground(self, expression: str, observation: Observation) -> GroundingResult:
        start = time.perf_counter()
        try:
            query = parse_query(expression)
        except ValueError as err:
            raise NotFound(
                f"{err}; describe the element by its visible label, e.g. 'the \"Save\" button'",
                expression=expression,
                grounder=self.name,
                reason="nothing to look for",
            ) from err
        chain = CoordinateChain(observation.screenshot, geometry=observation.geometry)
        candidates: list[Candidate] = []
        ocr_seconds = 0.0
        colour_of = matching.colour_reader(observation)
        controls = self.detected(observation)
        for page, region in self._iter_pages(observation, chain):
            ocr_seconds += page.seconds

            # the controls of the region read: a window-only page sees only that window's
            shown = [c for c in controls if page.region.contains(c.region.center)]

            def find(
                q: Query, page: OcrPage = page, shown: Sequence[Control] = shown
            ) -> tuple[tuple[str, ...], list[matching.Match]] | None:
                return _find(q, page, chain, observation, shown)

            resolution = matching.resolve(query, find, observation.windows, colour_of)
            if resolution is None:
                candidates.extend(_closest(query, page, chain))
                continue
            phrase, matches, choice = resolution.phrase, resolution.matches, resolution.choice
            if choice is None:
                raise NotFound(
                    f"OCR found {len(matches)} match(es) of {' '.join(phrase)!r}, fewer than "
                    f"the ordinal in {expression!r} asks for",
                    expression=expression,
                    grounder=self.name,
                    reason="too few matches",
                    candidates=tuple(_as_candidate(m) for m in matches),
                )
            if choice.ambiguous:
                raise NotFound(
                    matching.ambiguity_message("OCR", phrase, choice),
                    expression=expression,
                    grounder=self.name,
                    reason="ambiguous",
                    candidates=tuple(_as_candidate(m) for m in choice.tied),
                )
            match = choice.match
            reasons = [
                *choice.reasons,
                *([resolution.anchor_note] if resolution.anchor_note else []),
            ]
            box = match.box
            if query.role == "field" and match.isolated:  # the box the label names
                field = _field_of(observation, chain, match.box)
                if field is not None:
                    box = field
                    reasons.append("the text box beside that label")
            why = f"; chosen by {', '.join(reasons)}" if reasons else ""
            return GroundingResult(
                expression=expression,
                point=box.center,
                grounder=self.name,
                confidence=matching.confidence(choice, query, phrase, glyph_cap=_glyph_cap(match)),
                evidence=f"OCR ({region}{_source(match)}) read {match.text!r} for "
                f"{' '.join(phrase)!r} (score {match.score:.2f}){why}",
                box=box,
                details={
                    "words": match.data["words"],
                    "word_indices": match.data["indices"],
                    "phrase": " ".join(phrase),
                    "score": round(match.score, 3),
                    "matches": len(matches),
                    "region": region,
                    "source": match.data.get("source", "words"),
                    "ocr_seconds": round(ocr_seconds, 3),
                    "detect_seconds": round(self._detect_seconds(observation), 3),
                    "hints": list(query.hints),
                    "reasons": reasons,
                },
                seconds=time.perf_counter() - start,
            )
        seen = sorted({c.text: c for c in candidates}.values(), key=lambda c: -c.score)[:8]
        raise NotFound(
            f"OCR did not find {' '.join(query.phrase)!r} on the screen",
            expression=expression,
            grounder=self.name,
            reason="no text matches",
            candidates=tuple(seen),
        )

    def candidates(self, expression: str, observation: Observation) -> list[Candidate]:
        """Everything on the whole screen that matches a phrase of ``expression``: words read
        (role ``text``) and detected controls (role ``control``), best first; for
        ``agent-s ground --explain``. Empty when the expression names nothing."""
        try:
            query = parse_query(expression)
        except ValueError:
            return []
        chain = CoordinateChain(observation.screenshot, geometry=observation.geometry)
        page = self.reader.page(observation)
        controls = self.detected(observation)
        seen: dict[tuple[str, Box], Candidate] = {}
        for phrase in query.phrases:
            single = dataclasses.replace(query, phrases=(phrase,))
            found = _find(single, page, chain, observation, controls)
            for match in found[1] if found is not None else []:
                role = "control" if match.data.get("source") in ("glyphs", "ocr") else "text"
                candidate = Candidate(match.text, round(min(1.0, match.score), 3), match.box, role)
                key = (match.text, match.box)
                if key not in seen or seen[key].score < candidate.score:
                    seen[key] = candidate
        return sorted(seen.values(), key=lambda c: -c.score)

    def _detect_seconds(self, observation: Observation) -> float:
        if self.controls is None:
            return 0.0
        return self.controls.seconds_for(observation.key)

    def span(self, start_phrase: str, end_phrase: str, observation: Observation) -> TextSpan:
        """Where to drag to select from ``start_phrase`` to ``end_phrase`` (the shortest span).

        Raises ``NotFound`` when either phrase is missing or no end follows a start; never
        falls back to a word of its own choosing.
        """
        chain = CoordinateChain(observation.screenshot, geometry=observation.geometry)
        page = self.reader.page(observation)
        normal = [normalize(w.text) for w in page.words]
        starts = _occurrences(normalize_phrase(start_phrase), normal)
        ends = _occurrences(normalize_phrase(end_phrase), normal)
        pairs = [
            (e_last - s_first, -(s_score + e_score), s_first, e_last, min(s_score, e_score))
            for s_score, s_first, _ in starts
            for e_score, _, e_last in ends
            if e_last >= s_first
        ]
        if not pairs:
            missing = [p for p, found in ((start_phrase, starts), (end_phrase, ends)) if not found]
            reason = (
                f"OCR did not find {' and '.join(repr(m) for m in missing)}"
                if missing
                else f"no {end_phrase!r} follows {start_phrase!r}"
            )
            seen = [Candidate(w.text, 0.0, chain.box_to_screen(w.box)) for w in page.words[:40]]
            raise NotFound(
                reason,
                expression=f"{start_phrase} ... {end_phrase}",
                grounder=self.name,
                reason="span not found",
                candidates=tuple(seen),
            )
        _, _, first, last, score = min(pairs)
        head, tail = page.words[first].box, page.words[last].box
        start = chain.screenshot_to_screen(min(head.x + 1, head.right), head.center.y)
        # A little past the last word's ink (a third of a character): xterm ends a selection
        # at the cell boundary left of the pointer, so the pointer must leave the last glyph's
        # cell; toolkits that round to the nearest boundary end after the glyph as well.
        past = max(2, round(0.3 * tail.width / max(1, len(page.words[last].text))))
        last_column = observation.screenshot.image.width - 1
        end = chain.screenshot_to_screen(min(tail.right + past, last_column), tail.center.y)
        words = tuple(w.text for w in page.words[first : last + 1])
        return TextSpan(
            start=start,
            end=end,
            start_word=first,
            end_word=last,
            words=words,
            confidence=round(min(1.0, score), 3),
            evidence=f"OCR words {first}-{last}: {' '.join(words)[:120]!r}",
        )


def normalize_phrase(text: str) -> tuple[str, ...]:
    phrase = tuple(t for t in (normalize(w) for w in text.split()) if t)
    if not phrase:
        raise ValueError("a text-span phrase must have at least one word")
    return phrase


def _occurrences(phrase: tuple[str, ...], words: list[str]) -> list[tuple[float, int, int]]:
    """Every run of ``words`` matching ``phrase``: (score, first, last), best runs per start."""
    found: list[tuple[float, int, int]] = []
    n = len(phrase)
    for size in sorted({max(1, n - 1), n, n + 1}):
        for first in range(0, len(words) - size + 1):
            score = matching.text_similarity(phrase, words[first : first + size])
            if score >= matching.MIN_SCORE:
                found.append((score, first, first + size - 1))
    best: dict[int, tuple[float, int, int]] = {}
    for item in found:
        if item[1] not in best or item[0] > best[item[1]][0]:
            best[item[1]] = item
    return list(best.values())


_PLAIN_ROLES = frozenset({"cell", "label"})  # drawn as bare text, never inside a button


def _glyph_cap(match: matching.Match) -> float:
    """The confidence a one-character label can have: a glyph read by shape inside a control's
    outline is surer than one OCR read on its own (``GLYPH_CONFIDENCE``)."""
    if match.data.get("source") == "glyphs":
        return max(GLYPH_CONFIDENCE, min(0.9, float(match.data.get("read_score", 0.0))))
    return GLYPH_CONFIDENCE


def _source(match: matching.Match) -> str:
    source = match.data.get("source")
    return f", control read by {source}" if source in ("glyphs", "ocr") else ""


def _control_matches(
    query: Query,
    phrase: tuple[str, ...],
    controls: Sequence[Control],
    page: OcrPage,
    chain: CoordinateChain,
    observation: Observation,
) -> list[matching.Match]:
    """The detected controls whose label is ``phrase``, each with the control's whole box (and
    the indices of the page's words inside it, when OCR read any)."""
    matches = []
    for control in controls:
        if control.kind not in ("button", "icon"):
            continue
        best: tuple[float, str] | None = None
        for name in control.names:
            words = [t for t in (normalize(w) for w in name.split()) if t]
            hit = matching.best_window(phrase, words)
            if hit is not None and (best is None or hit[0] > best[0]):
                best = (hit[0], name)
        if best is None:
            continue
        score, name = best
        screen_box = chain.box_to_screen(control.region)
        match = matching.Match(
            text=name,
            score=score * (0.9 + 0.1 * control.score),
            box=screen_box,
            role_agrees=False if query.role in _PLAIN_ROLES else None,
            isolated=True,
            window=matching.window_at(screen_box, observation.windows),
            data={
                "words": name.split(),
                "indices": [w.index for w in page.words if control.region.contains(w.box.center)],
                "source": control.read_by,
                "read_score": control.score,
                "glyph_control": control.read_by == "glyphs",
            },
        )
        matches.append(match)
    return matches


def _find(
    query: Query,
    page: OcrPage,
    chain: CoordinateChain,
    observation: Observation,
    controls: Sequence[Control] = (),
) -> tuple[tuple[str, ...], list[matching.Match]] | None:
    """The matches of the query's phrase that matches best (see ``matching.best_phrase``):
    lines of words, and the detected controls whose label is the phrase."""
    # words inside a control whose short label the glyphs read clearly are OCR's misreading
    # of that label ("=" for a "5"): the control's reading stands for them
    read = [c.region for c in controls if c.read_by == "glyphs" and c.authoritative]
    # a cell or a label is plain text: not what an outlined button or field says
    outlined = [c.region for c in controls if c.kind in ("button", "field")]
    plain = query.role in _PLAIN_ROLES
    lines = [
        segment
        for line in page.lines()
        for segment in _segments(line)
        if not (read and all(any(b.contains(w.box.center) for b in read) for w in segment))
    ]
    normal = [[normalize(w.text) for w in line] for line in lines]
    found: list[tuple[tuple[str, ...], list[matching.Match]]] = []
    for phrase in query.phrases:
        matches = _control_matches(query, phrase, controls, page, chain, observation)
        for line, words in zip(lines, normal, strict=True):
            hit = matching.best_window(phrase, words)
            if hit is None:
                continue
            score, first, last = hit
            picked = line[first : last + 1]
            box = picked[0].box
            for word in picked[1:]:
                box = box.union(word.box)
            screen_box = chain.box_to_screen(box)
            mean_conf = sum(w.confidence for w in picked) / len(picked)
            match = matching.Match(
                text=" ".join(w.text for w in picked),
                score=score * (0.9 + 0.1 * mean_conf),
                box=screen_box,
                isolated=len(picked) == len(line),
                window=matching.window_at(screen_box, observation.windows),
                data={"words": [w.text for w in picked], "indices": [w.index for w in picked]},
            )
            if query.role == "menu" and match.window is not None:
                match.role_agrees = screen_box.y - match.window.y < 48 or None
            if plain and any(b.contains(box.center) for b in outlined):
                match.role_agrees = False
            matches.append(match)
        if matches:
            found.append((phrase, _as_words_say(matches)))
    return matching.best_phrase(found)


def _as_words_say(matches: list[matching.Match]) -> list[matching.Match]:
    """A control whose label OCR read as well scores as those words do: the control gives the
    box, not more certainty, so two equal labels stay equal whether or not the detector
    outlined both (an undetected twin still ties, and is reported as ambiguous)."""
    words = [m for m in matches if "source" not in m.data]
    for match in matches:
        if "source" not in match.data or len(match.text.replace(" ", "")) < 2:
            continue
        read = [w.score for w in words if match.box.contains(w.box.center)]
        if read:
            match.score = max(read)
    return matches


def _field_of(observation: Observation, chain: CoordinateChain, label: Box) -> Box | None:
    """The screen box of the text box ``label`` (a screen box) names, if there is one."""
    shot = chain.screen_box_to_screenshot(label)
    if shot is None:
        return None
    field = field_beside(observation.screenshot.image, shot)
    return None if field is None else chain.box_to_screen(field)


def _segments(line: list[OcrWord]) -> list[list[OcrWord]]:
    """A line cut where the words are far apart (a label and the button beside it are two texts,
    not one), without the bars OCR reads from the edges of boxes ("|")."""
    words = [w for w in line if w.text.strip("|") or len(line) == 1]
    if not words:
        return []
    heights = sorted(w.box.height for w in words)
    widths = sorted(w.box.width / max(1, len(w.text)) for w in words)
    # far apart: more than a wide word space (monospace terminals space words a cell apart)
    gap = max(16, 1.6 * heights[len(heights) // 2], 2.5 * widths[len(widths) // 2])
    out = [[words[0]]]
    for previous, word in zip(words, words[1:], strict=False):
        if word.box.x - previous.box.right > gap:
            out.append([word])
        else:
            out[-1].append(word)
    return out


def _closest(query: Query, page: OcrPage, chain: CoordinateChain) -> list[Candidate]:
    """Lines of the page most like the phrase, for a "not found" report."""
    target = " ".join(query.phrase)
    scored = []
    for line in page.lines():
        text = " ".join(w.text for w in line)
        ratio = matching.SequenceMatcher(None, target, normalize(text)).ratio()
        box = line[0].box
        for word in line[1:]:
            box = box.union(word.box)
        scored.append(Candidate(text, round(ratio, 3), chain.box_to_screen(box)))
    return sorted(scored, key=lambda c: -c.score)[:8]


def _as_candidate(match: matching.Match) -> Candidate:
    return Candidate(match.text, round(min(1.0, match.score), 3), match.box, match.role)
