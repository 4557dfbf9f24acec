"""Set-of-marks: numbered marks on the controls of the screenshot the generation model is sent,
which it may name instead of describing them (``agent.click(mark=17)``).

    marker = Marker(locator)
    table = marker.table(observation)          # the controls, numbered in reading order
    image = marker.picture(observation, table, spec)   # the screenshot with the marks drawn
    sent = encode_screenshot(image, spec)      # exactly what the model is sent
    check_marks(action, table)                 # ActionParseError for a mark not in the table
    found = locate(locator, action.targets(), observation, sent, table)

Where the marks come from, per window: the accessibility tree's boxes for the windows of
applications that expose one (each element counted only inside a window of its own
application, so a covered or foreign element is never marked), else boxes found in the pixels:
the model-free control detector (``agent_s.grounding.controls.detect``) when it is installed,
else the words OCR reads (``agent_s.grounding.ocr``), grouped into labels. Detection runs only
when some part of the screen is not covered by an accessible window.

The marks live in screen coordinates, are drawn through the one transform chain
(``agent_s.marks.drawing.numbered_picture``) on the screenshot before it is encoded, so the marked
image
is the image the model gets, after any downscaling (the tags are sized for it). A mark resolves
to the centre of its box, a screen point; what the model is told of it is in its own terms
(the mark's number and what it marks). A reply naming a mark that is not in the step's table,
or any mark in a run without marks, is an invalid reply: the model is told why and replies
again; nothing is clicked at a guess.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from PIL import Image
from pydantic import BaseModel, ConfigDict

from agent_s.actions.models import ActionModel, Target
from agent_s.desktop.ops import Point
from agent_s.errors import ActionParseError
from agent_s.grounding.accessibility import AccessibilityGrounder, Element
from agent_s.grounding.chain import GroundingChain
from agent_s.grounding.locate import Located, Locator, NotLocated, TargetGrounding
from agent_s.grounding.matching import window_at
from agent_s.grounding.ocr import OcrGrounder, OcrWord
from agent_s.grounding.transform import CoordinateChain
from agent_s.grounding.types import Box, CoordinateError, Grounder, GroundingError, Observation
from agent_s.images import EncodedImage, ImageSpec
from agent_s.marks.drawing import numbered_picture

MarkSource = Literal["a11y", "detected", "ocr"]
#: At most this many marks on one screenshot (and listed in a request), in reading order.
MAX_MARKS = 150
MAX_MARK_TEXT = 60
#: Roles that hold or label controls rather than being one: never marked.
_NOT_CONTROLS = frozenset(
    {
        "application",
        "frame",
        "window",
        "dialog",
        "alert",
        "file chooser",
        "filler",
        "panel",
        "scroll pane",
        "viewport",
        "layered pane",
        "split pane",
        "root pane",
        "glass pane",
        "option pane",
        "internal frame",
        "desktop frame",
        "tool bar",
        "status bar",
        "page tab list",
        "redundant object",
        "section",
        "form",
        "document frame",
        "document web",
        "separator",
        "tool tip",
        "label",
        "static",
        "caption",
        "heading",
        "table",
        "tree table",
        "tree",
        "list",
        "list box",
        "menu bar",
        "unknown",
    }
)
_MIN_SIDE = 4  # a box thinner than this is no control anyone can click
_MAX_AREA = 0.25  # a detected box over this share of the screenshot is a window or a panel
_WORD_GAP = 1.2  # words closer than this many text heights are one label
_ROW = 8  # screen pixels: boxes whose tops differ by less are on one row of the reading order


class MarkEntry(BaseModel):
    """One mark: its number, the control's box (screen coordinates: x, y, width, height),
    where the box came from, and the control's text (its name, or the words read in it)."""

    model_config = ConfigDict(frozen=True)

    number: int
    box: tuple[int, int, int, int]
    source: MarkSource
    text: str = ""
    role: str = ""

    @property
    def screen_box(self) -> Box:
        return Box(*self.box)

    @property
    def point(self) -> Point:
        """Where the mark resolves to: the centre of its box, on the screen."""
        return self.screen_box.center

    def describe(self) -> str:
        """For the model: ``push button "Save"``, ``"File name"``, or ``unnamed control``."""
        text = " ".join(self.text.split())
        if len(text) > MAX_MARK_TEXT:
            text = text[: MAX_MARK_TEXT - 1].rstrip() + "\u2026"
        shown = f'"{text}"' if text else ""
        if self.role:
            return f"{self.role} {shown}".strip()
        return shown or "unnamed control"


@dataclass(frozen=True)
class MarkTable:
    """The marks of one screenshot, numbered from 1 in reading order; ``total``: how many
    controls were found before the table was cut to ``MAX_MARKS``."""

    entries: tuple[MarkEntry, ...]
    total: int = 0
    seconds: float = 0.0

    def get(self, number: int) -> MarkEntry | None:
        if 1 <= number <= len(self.entries):
            return self.entries[number - 1]
        return None

    def lines(self) -> list[str]:
        """One line per mark for the request: ``17: push button "Save"``."""
        return [f"{entry.number}: {entry.describe()}" for entry in self.entries]

    def numbers(self) -> str:
        """The marks as the model is told of them: ``1 to 42``, or ``none``."""
        if not self.entries:
            return "none"
        return "1" if len(self.entries) == 1 else f"1 to {len(self.entries)}"


Detected = tuple[Box, str]  # a control found in the pixels: its box (screenshot pixels), text
Detector = Callable[[Observation], tuple[list[Detected], MarkSource]]


class Marker:
    """Builds the mark table and the marked picture of each step (see the module docstring).

    The accessibility grounder and the OCR grounder are the locator's, when it has them (their
    walk of the tree and their detection pass of each observation are shared with grounding);
    ``detector`` finds controls in the pixels (default: ``PixelDetector``).
    """

    def __init__(self, locator: Locator | None = None, *, detector: Detector | None = None) -> None:
        members = _members(locator) if locator is not None else ()
        a11y = next((g for g in members if isinstance(g, AccessibilityGrounder)), None)
        ocr = next((g for g in members if isinstance(g, OcrGrounder)), None)
        self.a11y = a11y or AccessibilityGrounder()
        self.detector = detector or PixelDetector(ocr)

    def table(self, observation: Observation) -> MarkTable:
        """The controls of ``observation``, numbered (at most ``MAX_MARKS``)."""
        start = time.perf_counter()
        chain = CoordinateChain(observation.screenshot)
        found: list[tuple[Box, MarkSource, str, str]] = []
        covered: set[int] = set()  # pids whose windows the accessibility tree covers
        try:
            elements = self.a11y.snapshot(observation)
        except GroundingError:  # no bus, no bindings: every window is detected in the pixels
            elements = []
        for element in elements:
            if _is_control(element, observation, chain):
                found.append((element.box, "a11y", element.name, element.role))
                covered.add(element.pid)
        if _needs_detection(observation, covered):
            boxes, source = self.detector(observation)
            largest = _MAX_AREA * chain.width * chain.height
            for box, text in boxes:
                if box.width * box.height > largest:
                    continue
                try:
                    screen = chain.box_to_screen(box)
                except (CoordinateError, ValueError):
                    continue
                top = window_at(screen, observation.windows)
                if top is not None and top.pid in covered:
                    continue  # an accessible window: its own boxes are marked
                if min(screen.width, screen.height) >= _MIN_SIDE:
                    found.append((screen, source, text, ""))
        ordered = _reading_order(_distinct(found))
        entries = tuple(
            MarkEntry(number=i, box=box.as_tuple(), source=source, text=text, role=role)
            for i, (box, source, text, role) in enumerate(ordered[:MAX_MARKS], start=1)
        )
        return MarkTable(entries, len(ordered), round(time.perf_counter() - start, 3))

    def picture(self, observation: Observation, table: MarkTable, spec: ImageSpec) -> Image.Image:
        """The screenshot with ``table``'s marks drawn, tags sized for the image ``spec``
        makes of it (the image sent)."""
        image = observation.screenshot.image
        width, _ = spec.fit(*image.size)
        scale = image.width / max(1, width)
        controls = [(entry.number, entry.screen_box) for entry in table.entries]
        return numbered_picture(observation.screenshot, controls, tag_scale=scale)


def _members(locator: Locator) -> tuple[Grounder, ...]:
    """The locator's grounders: their accessibility walk and detection pass are shared."""
    grounder = locator.grounder
    return tuple(grounder.grounders) if isinstance(grounder, GroundingChain) else (grounder,)


def _is_control(element: Element, observation: Observation, chain: CoordinateChain) -> bool:
    """A control worth a mark: a role that is one, a box of some size on the screenshot, inside
    a listed window of its own application (not covered by another application's)."""
    box = element.box
    if element.role in _NOT_CONTROLS or min(box.width, box.height) < _MIN_SIDE:
        return False
    if not chain.shows(box.center):
        return False
    top = window_at(box, observation.windows)
    return top is not None and bool(element.pid) and top.pid == element.pid


def _needs_detection(observation: Observation, covered: set[int]) -> bool:
    """Whether some window is not covered by the accessibility tree: no windows are listed,
    or a listed window's application has no accessible controls on the screen."""
    windows = observation.windows
    if not windows:
        return True
    return any(window.pid not in covered for window in windows)


def _distinct(
    found: list[tuple[Box, MarkSource, str, str]],
) -> list[tuple[Box, MarkSource, str, str]]:
    """Each box once: a box the same as one already kept (within 2 pixels) is dropped."""
    kept: list[tuple[Box, MarkSource, str, str]] = []
    for item in found:
        box = item[0]
        if any(_same(box, other[0]) for other in kept):
            continue
        kept.append(item)
    return kept


def _same(a: Box, b: Box) -> bool:
    return all(abs(p - q) <= 2 for p, q in zip(a.as_tuple(), b.as_tuple(), strict=True))


def _reading_order(
    found: list[tuple[Box, MarkSource, str, str]],
) -> list[tuple[Box, MarkSource, str, str]]:
    """Top to bottom in rows (tops within ``_ROW`` pixels), then left to right."""
    ordered = sorted(found, key=lambda item: (item[0].y, item[0].x))
    rows: list[list[tuple[Box, MarkSource, str, str]]] = []
    for item in ordered:
        if rows and abs(item[0].y - rows[-1][0][0].y) < _ROW:
            rows[-1].append(item)
        else:
            rows.append([item])
    return [item for row in rows for item in sorted(row, key=lambda i: i[0].x)]


# -- finding controls in the pixels -------------------------------------------------------------


class PixelDetector:
    """Controls found in the pixels (boxes in screenshot pixels): the OCR grounder's one
    detection pass per screenshot (``OcrGrounder.detected``: the model-free control detector's
    outlined boxes with their labels read, and the OCR words outside them, grouped here into
    labels), shared with the grounding of the step's descriptions; where that grounder has no
    detector, the OCR words alone grouped into labels (words of one line closer than
    ``_WORD_GAP`` text heights)."""

    def __init__(self, ocr: OcrGrounder | None = None) -> None:
        self.ocr = ocr or OcrGrounder()

    def __call__(self, observation: Observation) -> tuple[list[Detected], MarkSource]:
        if self.ocr.controls is None:
            page = self.ocr.reader.page(observation)
            return [_label(group) for line in page.lines() for group in _groups(line)], "ocr"
        boxes: list[Detected] = []
        words: list[Detected] = []  # OCR words outside every outlined box: grouped into labels
        for control in self.ocr.detected(observation):
            box = _corners(control.box)
            if box is not None:
                (words if control.kind == "text" else boxes).append((box, control.text))
        return boxes + _word_labels(words), "detected"


def _corners(value: tuple[int, int, int, int]) -> Box | None:
    """A detector's box (left, top, right, bottom pixels; right and bottom exclusive)."""
    left, top, right, bottom = value
    if right <= left or bottom <= top:
        return None
    return Box(left, top, right - left, bottom - top)


def _word_labels(words: Sequence[Detected]) -> list[Detected]:
    """Words (box, text) grouped into labels: one line (centres within half a text height),
    each closer than ``_WORD_GAP`` text heights to the one before."""
    labels: list[tuple[Box, str]] = []
    for box, text in sorted(words, key=lambda w: w[0].x):  # left to right: each joins a label
        for i, (label, joined) in enumerate(labels):
            height = max(label.height, box.height)
            same_line = abs(label.center.y - box.center.y) <= height / 2
            if same_line and 0 <= box.x - (label.right + 1) <= _WORD_GAP * height:
                labels[i] = (label.union(box), f"{joined} {text}")
                break
        else:
            labels.append((box, text))
    return labels


def _groups(line: Sequence[OcrWord]) -> list[list[OcrWord]]:
    groups: list[list[OcrWord]] = []
    for word in sorted(line, key=lambda w: w.box.x):
        if not word.text.strip():
            continue
        if groups:
            last = groups[-1][-1]
            height = max(last.box.height, word.box.height)
            if word.box.x - (last.box.right + 1) <= _WORD_GAP * height:
                groups[-1].append(word)
                continue
        groups.append([word])
    return groups


def _label(words: Sequence[OcrWord]) -> Detected:
    box = words[0].box
    for word in words[1:]:
        box = box.union(word.box)
    return box, " ".join(word.text for word in words)


# -- checking and resolving the marks a reply names ----------------------------------------------


def check_marks(action: ActionModel, table: MarkTable | None) -> None:
    """Refuse (``ActionParseError``, fed back to the model as an invalid reply) an action that
    names a mark not in ``table``, or any mark when the run shows none (``table`` None)."""
    numbers = action.mark_numbers
    if not numbers:
        return
    if table is None:
        raise ActionParseError(
            "this run shows no numbered marks on the screenshot, so mark= cannot be used: "
            'describe the element instead, e.g. agent.click("the Save button")',
            kind="bad_argument",
        )
    missing = [n for n in numbers if table.get(n) is None]
    if missing:
        raise ActionParseError(
            f"there is no mark {missing[0]} on the current screenshot (its marks are "
            f"{table.numbers()}); give the number of a mark you see on the latest screenshot, "
            "or describe the element instead",
            kind="bad_argument",
        )


def locate(
    locator: Locator,
    targets: Sequence[Target],
    observation: Observation,
    sent: EncodedImage | None,
    table: MarkTable | None,
) -> Located | NotLocated:
    """Screen points for ``targets``: a mark is the centre of its box in ``table``, any other
    target is found by ``locator`` (all of them at once when no target is a mark, as text
    spans need). ``check_marks`` has been passed: every mark named is in the table."""
    if not any(t.mark is not None for t in targets):
        return locator.locate(targets, observation, sent)
    chain = _chain(observation, sent)
    points: list[Point] = []
    found: list[TargetGrounding] = []
    for target in targets:
        if target.mark is None:
            one = locator.locate((target,), observation, sent)
            if isinstance(one, NotLocated):
                return NotLocated(one.target, one.error, (*found, *one.groundings))
            points += one.points
            found += one.groundings
            continue
        entry = table.get(target.mark) if table is not None else None
        if entry is None:  # check_marks refuses this before; never a click at a guess
            raise ValueError(f"mark {target.mark} is not in the step's mark table")
        point = entry.point
        image_point, image_size = _in_image(point, chain)
        found.append(
            TargetGrounding(
                target=target.text,
                kind=target.kind,
                grounder="mark",
                point=(point.x, point.y),
                box=entry.box,
                confidence=1.0,
                evidence=f"mark {entry.number}: {entry.describe()} ({entry.source})",
                image_point=image_point,
                image_size=image_size,
                matched=f"mark {entry.number}, {entry.describe()}",
            )
        )
        points.append(point)
    return Located(tuple(points), tuple(found))


def _chain(observation: Observation, sent: EncodedImage | None) -> CoordinateChain | None:
    try:
        return CoordinateChain(observation.screenshot, sent, observation.geometry)
    except ValueError:
        return None


def _in_image(
    point: Point, chain: CoordinateChain | None
) -> tuple[tuple[int, int] | None, tuple[int, int] | None]:
    if chain is None:
        return None, None
    size = (chain.sent.width, chain.sent.height) if chain.sent else (chain.width, chain.height)
    try:
        return chain.screenshot_to_sent(*chain.screen_to_screenshot(point)), size
    except CoordinateError:
        return None, size


__all__ = [
    "MAX_MARKS",
    "MarkEntry",
    "MarkSource",
    "MarkTable",
    "Marker",
    "PixelDetector",
    "check_marks",
    "locate",
]
