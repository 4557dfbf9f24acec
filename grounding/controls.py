"""Controls found in a screenshot without a model: outlined boxes, their labels, and words.

    from agent_s.grounding.controls import detect

    for control in detect(screenshot.image, words=page.words):   # words: OCR, optional
        control.box, control.text, control.kind, control.score

One detection pass per screenshot, in three steps:

1. **Boxes** (OpenCV): the morphological gradient of the grayscale image, thresholded, traced
   into contours; a contour that fills its bounding rectangle is the outline of a control
   (a button, a field, a toggle). Near-duplicates (a focus ring around a button) are one box,
   and a box around two or more others is a panel, not a control.
2. **Labels read per box**: the ink inside each box (pixels that stand out from the box's own
   background) is cut into characters (connected components sharing columns), and each character
   is matched against glyphs rendered with the screen's fonts (``fc-match sans-serif``, regular
   and bold) at every pixel size from 8 to 24, the size shared by the whole label. This reads the
   short labels OCR engines miss on their own: single glyphs (``=``, ``.``, ``-``, ``(``), digits
   and two- or three-letter labels (``MS``, ``AC``, ``+/-``). Measured on galculator's keypad
   (``scripts/bench_grounding.py``), tesseract on the full screen reads 1 of its 27 labels and on
   per-button crops 9; rapidocr 15 on crops, and neither reads ``=``, ``.``, ``-``, ``(``, ``)``.
   A box whose ink is not one line of at most ``MAX_GLYPHS`` characters is left to OCR.
3. **Merged with OCR words** (when given): words inside a box become its text when the glyphs
   did not read it (a long label); words outside every box become ``text`` controls (menus,
   links, labels).

``ControlDetector`` caches one pass per screenshot (keyed on its pixels, like ``OcrReader``), so
every target of a step shares it.
"""

from __future__ import annotations

import shutil
import string
import subprocess
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Literal, Protocol

import cv2
import numpy as np
import numpy.typing as npt
from PIL import Image, ImageDraw, ImageFont

from agent_s.grounding.types import Box

ControlKind = Literal["button", "icon", "field", "box", "text"]
ReadBy = Literal["glyphs", "ocr", "shape", "outline"]
Ink = npt.NDArray[np.float32]

MAX_GLYPHS = 8  # longer labels are left to OCR: glyph by glyph reading is for short ones
MIN_GLYPH_SCORE = 0.55  # below this (weighted overlap with the best glyph) nothing was read
CLEAR_GLYPHS = 0.8  # at least this, and every glyph kept: a clear reading
_SIZES = range(8, 25)  # font pixel sizes tried
_CHARSET = string.digits + string.ascii_letters + "+-=*/%().,<>^!?:;&#@$_[]{}|~'\"\\"
_GRADIENT_MIN = 12  # gray levels: a weaker edge is no outline
_INK_CONTRAST = 40  # gray levels between a label's strokes and its background, at least


class Word(Protocol):
    """A word read by OCR (``agent_s.grounding.ocr.OcrWord`` is one)."""

    @property
    def text(self) -> str: ...
    @property
    def box(self) -> Box: ...
    @property
    def confidence(self) -> float: ...


@dataclass(frozen=True)
class Control:
    """One control or text found in an image.

    ``box`` is (left, top, right, bottom) in image pixels, right and bottom exclusive (as
    ``PIL.Image.crop`` takes it); ``text`` what was read ("" when nothing was: an icon, an empty
    field); ``kind`` ``button`` (an outlined box with a label), ``icon`` (a window control or
    menu icon recognised by its shape, ``text`` its name: ``close``, ``maximize``,
    ``minimize``, ``menu``), ``field`` (a wide outlined box whose text sits against one side:
    an entry or a display showing its value, not a label), ``box`` (an outlined box with no
    label read) or ``text`` (OCR words outside every box); ``score`` the confidence of the
    reading, 0..1 (of the outline, for ``box``); ``read_by`` which reader gave the text.
    """

    box: tuple[int, int, int, int]
    text: str
    kind: ControlKind
    score: float
    read_by: ReadBy = "outline"
    readings: tuple[str, ...] = ()  # every reading of the label, ``text`` first

    @property
    def authoritative(self) -> bool:
        """A short label read clearly glyph by glyph: what OCR read in the same box is not
        another name of it but a misreading (tesseract reads a lone "5" as "=")."""
        return self.read_by == "glyphs" and self.score >= CLEAR_GLYPHS and len(self.text) <= 3

    @property
    def names(self) -> tuple[str, ...]:
        """What the control may be called: its text and the other readings of its label."""
        return tuple(dict.fromkeys(t for t in (self.text, *self.readings) if t))

    @property
    def region(self) -> Box:
        """The box as a grounding ``Box`` (x, y, width, height) in image pixels."""
        left, top, right, bottom = self.box
        return Box(left, top, max(1, right - left), max(1, bottom - top))

    @property
    def center(self) -> tuple[int, int]:
        left, top, right, bottom = self.box
        return ((left + right - 1) // 2, (top + bottom - 1) // 2)


# -- 1. boxes ------------------------------------------------------------------------------------


def _gray(image: Image.Image) -> npt.NDArray[np.uint8]:
    return np.asarray(image.convert("L"), dtype=np.uint8)


def outlines(gray: npt.NDArray[np.uint8]) -> list[tuple[int, int, int, int]]:
    """Boxes (left, top, right, bottom; exclusive) of the outlined rectangles in ``gray``."""
    height, width = gray.shape
    grad = cv2.morphologyEx(gray, cv2.MORPH_GRADIENT, np.ones((3, 3), np.uint8))
    _, edges = cv2.threshold(grad, _GRADIENT_MIN, 255, cv2.THRESH_BINARY)
    contours, _ = cv2.findContours(edges, cv2.RETR_LIST, cv2.CHAIN_APPROX_SIMPLE)
    max_w, max_h = max(60, width // 2), max(120, height // 5)
    found: list[tuple[int, int, int, int]] = []
    for contour in contours:
        x, y, w, h = cv2.boundingRect(contour)
        if w < 12 or h < 12 or w > max_w or h > max_h:
            continue
        if cv2.contourArea(contour) < 0.8 * w * h:
            continue
        # the gradient widens an edge by a pixel on each side
        found.append((x + 1, y + 1, x + w - 1, y + h - 1))
    found.sort(key=lambda b: -(b[2] - b[0]) * (b[3] - b[1]))
    kept: list[tuple[int, int, int, int]] = []
    for box in found:
        if not any(_overlap(box, k) > 0.7 for k in kept):
            kept.append(box)
    # a box around two or more others is a panel or a group, not a control
    return [b for b in kept if sum(_inside(k, b) for k in kept if k != b) < 2]


def _overlap(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> float:
    """Intersection over union."""
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    if w <= 0 or h <= 0:
        return 0.0
    inter = w * h
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union


def _inside(inner: tuple[int, int, int, int], outer: tuple[int, int, int, int]) -> bool:
    return (
        inner[0] >= outer[0]
        and inner[1] >= outer[1]
        and inner[2] <= outer[2]
        and inner[3] <= outer[3]
    )


# -- 2. glyphs -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Glyph:
    char: str
    ink: Ink  # 0..1, cropped to the glyph's ink


@lru_cache(maxsize=1)
def screen_fonts() -> tuple[str, ...]:
    """Font files for the screen's sans-serif text, regular then bold (``fc-match``)."""
    files: list[str] = []
    command = shutil.which("fc-match")
    for pattern in ("sans-serif", "sans-serif:bold"):
        if command is None:
            break
        try:
            done = subprocess.run(
                [command, "--format=%{file}", pattern],
                capture_output=True,
                text=True,
                timeout=10,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        path = done.stdout.strip()
        if done.returncode == 0 and path and path not in files:
            files.append(path)
    return tuple(files)


@cache
def _glyphs(font_file: str, size: int) -> tuple[_Glyph, ...]:
    """Every character of the charset rendered at ``size`` pixels, cropped to its ink."""
    try:
        font = ImageFont.truetype(font_file, size)
    except OSError:
        return ()
    out = []
    for char in _CHARSET:
        canvas = Image.new("L", (size * 3, size * 3), 0)
        ImageDraw.Draw(canvas).text((size, size), char, font=font, fill=255)
        ink = np.asarray(canvas, dtype=np.float32) / 255.0
        rows, cols = np.nonzero(ink > 0.15)
        if rows.size == 0:
            continue
        top, bottom, left, right = rows.min(), rows.max() + 1, cols.min(), cols.max() + 1
        out.append(_Glyph(char, ink[top:bottom, left:right]))
    return tuple(out)


def warm_glyphs() -> None:
    """Render every glyph template now (once per process) rather than on the first screen."""
    _glyph_index()


Face = tuple[str, int]  # a font file and a pixel size


@cache
def _glyph_index() -> dict[tuple[int, int], list[tuple[Face, _Glyph]]]:
    """Every glyph of every screen font and size, by the (height, width) of its ink."""
    index: dict[tuple[int, int], list[tuple[Face, _Glyph]]] = {}
    for font_file in screen_fonts():
        for size in _SIZES:
            for glyph in _glyphs(font_file, size):
                index.setdefault(glyph.ink.shape[:2], []).append(((font_file, size), glyph))
    return index


def _candidates(ink: Ink) -> list[tuple[Face, _Glyph]]:
    """The glyphs whose ink is about the size of ``ink``: an eighth of its height and a sixth
    of its width apart at most (a pixel at least)."""
    h, w = ink.shape
    dh, dw = max(1, h // 8), max(1, w // 6)
    index = _glyph_index()
    return [
        item
        for gh in range(h - dh, h + dh + 1)
        for gw in range(w - dw, w + dw + 1)
        for item in index.get((gh, gw), ())
    ]


@lru_cache(maxsize=1 << 16)
def _scaled(face: Face, char: str, height: int, width: int) -> Ink:
    """The glyph ``char`` of ``face`` scaled to ``height`` x ``width`` pixels."""
    glyph = next(g for g in _glyphs(*face) if g.char == char)
    if glyph.ink.shape == (height, width):
        return glyph.ink
    scaled = cv2.resize(glyph.ink, (width, height), interpolation=cv2.INTER_LINEAR)
    return np.asarray(scaled, dtype=np.float32)


def _read_chars(chars: Sequence[Ink]) -> tuple[list[tuple[str, float]], int] | None:
    """The best reading of a row of character ink maps with one font and size: each
    character's best glyph with its score, and the size; None when no size fits them all."""
    per_char: list[dict[Face, tuple[float, str]]] = []
    for ink in chars:
        found = _candidates(ink)
        if not found:
            return None
        h, w = ink.shape
        stack = np.stack([_scaled(face, glyph.char, h, w) for face, glyph in found])
        union = np.maximum(stack, ink).sum(axis=(1, 2))
        overlap = np.minimum(stack, ink).sum(axis=(1, 2))
        scores = overlap / np.maximum(union, 1e-6)
        best: dict[Face, tuple[float, str]] = {}
        for (face, glyph), score in zip(found, scores.tolist(), strict=True):
            scored = (float(score), glyph.char)
            if face not in best or scored > best[face]:
                best[face] = scored
        per_char.append(best)
    faces = set(per_char[0]).intersection(*per_char[1:])
    if not faces:
        return None
    face = max(faces, key=lambda f: (sum(c[f][0] for c in per_char), -f[1]))
    return [(c[face][1], c[face][0]) for c in per_char], face[1]


def _characters(ink: Ink) -> list[tuple[Ink, int, int]] | None:
    """The ink of a label cut into characters (left to right): (ink map, left, top) each, or
    None when the ink is not one short line."""
    mask = (ink > 0.25).astype(np.uint8)
    count, _, stats, _ = cv2.connectedComponentsWithStats(mask, connectivity=8)
    spans: list[list[int]] = []  # [left, right, top, bottom] per character, merged by columns
    for i in range(1, count):
        x, y, w, h, area = (int(v) for v in stats[i])
        if area < 2 and w * h < 2:
            continue
        spans.append([x, x + w, y, y + h])
    if not spans:
        return None
    spans.sort()
    merged: list[list[int]] = [spans[0]]
    for span in spans[1:]:
        last = merged[-1]
        shared = min(last[1], span[1]) - max(last[0], span[0])
        narrower = min(last[1] - last[0], span[1] - span[0])
        if shared > 0 and shared >= 0.5 * narrower:  # one character ("=", "%", "i", ":")
            last[1], last[2], last[3] = (
                max(last[1], span[1]),
                min(last[2], span[2]),
                max(last[3], span[3]),
            )
        else:
            merged.append(span)
    if len(merged) > MAX_GLYPHS:
        return None
    top, bottom = min(s[2] for s in merged), max(s[3] for s in merged)
    tall = [s for s in merged if s[3] - s[2] >= 0.5 * (bottom - top)]
    if tall and max(s[2] for s in tall) >= min(s[3] for s in tall):
        return None  # letters that share no row: more than one line of text
    return [(ink[s[2] : s[3], s[0] : s[1]], s[0], s[2]) for s in merged]


def label_ink(gray: npt.NDArray[np.uint8], box: tuple[int, int, int, int]) -> Ink | None:
    """The label's ink inside ``box`` (0..1, cropped to it), or None when the box shows none."""
    found = _ink_in(gray, box)
    return None if found is None else found[0]


def _is_field(gray: npt.NDArray[np.uint8], box: tuple[int, int, int, int]) -> bool:
    """A wide box whose ink sits against one side, the other half empty: an entry or a
    display showing a value (buttons centre their labels)."""
    width, height = box[2] - box[0], box[3] - box[1]
    found = _ink_in(gray, box) if width >= 4 * height else None
    if found is None:
        return False
    _, first, last = found
    return first > 0.5 * width or last < 0.5 * width


def _ink_in(
    gray: npt.NDArray[np.uint8], box: tuple[int, int, int, int]
) -> tuple[Ink, int, int] | None:
    """The ink inside ``box`` cropped to it, with its first and last column in the box."""
    left, top, right, bottom = box
    inset = 3
    if right - left <= 2 * inset + 2 or bottom - top <= 2 * inset + 2:
        return None
    crop = gray[top + inset : bottom - inset, left + inset : right - inset].astype(np.float32)
    background = float(np.median(crop))
    diff = np.abs(crop - background)
    contrast = float(diff.max())
    if contrast < _INK_CONTRAST:
        return None
    ink = np.clip(diff / (0.85 * contrast), 0.0, 1.0).astype(np.float32)
    ink[ink < 0.12] = 0.0
    rows, cols = np.nonzero(ink > 0.25)
    if rows.size == 0:
        return None
    r0, r1, c0, c1 = rows.min(), rows.max() + 1, cols.min(), cols.max() + 1
    if r1 - r0 >= crop.shape[0] - 1 or c1 - c0 >= crop.shape[1] - 1:
        return None  # ink from edge to edge: an inner frame, not a label
    return ink[r0:r1, c0:c1], int(c0) + inset, int(c1) + inset


@dataclass(frozen=True)
class Reading:
    """A label read glyph by glyph: its text, the mean score of its glyphs (0..1), and whether
    characters at its ends were left out as decorations."""

    text: str
    score: float
    trimmed: bool = False


NOTHING = Reading("", 0.0)


def read_label(gray: npt.NDArray[np.uint8], box: tuple[int, int, int, int]) -> Reading:
    """The short label inside ``box`` read glyph by glyph (``NOTHING`` when none is).

    A character at either end that matches no glyph well and stands apart from the rest is a
    decoration (a drop-down arrow, a check mark), not part of the label."""
    ink = label_ink(gray, box)
    if ink is None:
        return NOTHING
    chars = _characters(ink)
    if not chars:
        return NOTHING
    found = _read_chars([c for c, _, _ in chars])
    if found is None:
        return NOTHING
    reading = found[0]
    height = ink.shape[0]
    gaps = [
        left - (left_before + before.shape[1])
        for (before, left_before, _), (_, left, _) in zip(chars[:-1], chars[1:], strict=True)
    ]
    first, last = 0, len(reading)
    while last - first > 1 and reading[last - 1][1] < MIN_GLYPH_SCORE + 0.15 and gaps[last - 2] > 1:
        last -= 1
    while last - first > 1 and reading[first][1] < MIN_GLYPH_SCORE + 0.15 and gaps[first] > 1:
        first += 1
    kept = reading[first:last]
    score = sum(s for _, s in kept) / len(kept)
    if score < MIN_GLYPH_SCORE:
        return NOTHING
    text = [kept[0][0]]
    for gap, (char, _) in zip(gaps[first : last - 1], kept[1:], strict=True):
        if gap > 0.45 * height:  # a wide gap is a space
            text.append(" ")
        text.append(char)
    return Reading("".join(text), round(score, 3), trimmed=len(kept) < len(reading))


# -- icons ---------------------------------------------------------------------------------------

ICON_NAMES: dict[str, tuple[str, ...]] = {
    "close": ("close", "close window", "x"),
    "maximize": ("maximize", "maximise", "maximize window", "restore"),
    "minimize": ("minimize", "minimise", "minimize window", "iconify"),
    "menu": ("menu", "main menu", "open menu", "hamburger menu", "application menu"),
}
_WINDOW_ICONS = frozenset({"close", "maximize", "minimize"})


def _runs(values: npt.NDArray[np.float64], high: float) -> list[tuple[int, int]]:
    """(start, end) of the runs of ``values`` at least ``high``."""
    runs: list[tuple[int, int]] = []
    start = None
    for i, v in enumerate(values):
        if v >= high and start is None:
            start = i
        elif v < high and start is not None:
            runs.append((start, i))
            start = None
    if start is not None:
        runs.append((start, len(values)))
    return runs


def icon_shape(ink: Ink) -> tuple[str, float] | None:
    """The symbolic icon ``ink`` shows, by its shape, with a score 0..1: ``close`` (an X),
    ``maximize`` (a square outline), ``minimize`` (a flat bar), ``menu`` (three bars); None
    for anything else."""
    mask = ink > 0.4
    h, w = mask.shape
    if not (5 <= w <= 40 and 1 <= h <= 40):
        return None
    fill = float(mask.mean())
    if h <= max(3, 0.3 * w) and fill >= 0.75:
        return "minimize", fill
    if not (0.7 <= w / h <= 1.45 and min(h, w) >= 6):
        return None
    rows = mask.mean(axis=1)
    bars = _runs(rows, 0.8)
    apart = len(bars) == 3 and all(
        r <= 0.2 for a, b in ((bars[0][1], bars[1][0]), (bars[1][1], bars[2][0])) for r in rows[a:b]
    )
    if apart and bars[0][0] <= 1:
        return "menu", float(np.mean([rows[a:b].mean() for a, b in bars]))
    band = max(1, min(h, w) // 5)
    edges = [
        float(mask[:band].mean()),
        float(mask[-band:].mean()),
        float(mask[:, :band].mean()),
        float(mask[:, -band:].mean()),
    ]
    inner = float(mask[h // 3 : h - h // 3, w // 3 : w - w // 3].mean())
    if min(edges) >= 0.8 and inner <= 0.15:
        return "maximize", min(edges)
    steps = max(h, w)
    on_diagonals = []
    for t in np.linspace(0.0, 1.0, steps):
        y = round(t * (h - 1))
        for x in (round(t * (w - 1)), round((1 - t) * (w - 1))):
            near = mask[max(0, y - 1) : y + 2, max(0, x - 1) : x + 2]
            on_diagonals.append(bool(near.any()))
    diagonal = sum(on_diagonals) / len(on_diagonals)
    middles = [mask[0, w // 2], mask[h - 1, w // 2], mask[h // 2, 0], mask[h // 2, w - 1]]
    if diagonal >= 0.9 and not any(middles) and 0.15 <= fill <= 0.65 and mask[h // 2, w // 2]:
        return "close", diagonal
    return None


def _blobs(gray: npt.NDArray[np.uint8]) -> list[tuple[int, int, int, int]]:
    """Boxes (left, top, right, bottom; exclusive) of small separate marks: icon candidates."""
    grad = cv2.morphologyEx(gray, cv2.MORPH_GRADIENT, np.ones((3, 3), np.uint8))
    _, edges = cv2.threshold(grad, 60, 255, cv2.THRESH_BINARY)
    count, _, stats, _ = cv2.connectedComponentsWithStats(edges, connectivity=8)
    found = []
    for i in range(1, count):
        x, y, w, h, _ = (int(v) for v in stats[i])
        if 6 <= w <= 34 and 3 <= h <= 34:
            found.append((x, y, x + w, y + h))
    return found


def _icon_at(
    gray: npt.NDArray[np.uint8], box: tuple[int, int, int, int]
) -> tuple[str, float] | None:
    """The icon shape of the mark in ``box`` (the mark's own ink, on the background around)."""
    left, top, right, bottom = box
    pad = 3
    crop_box = (max(0, left - pad), max(0, top - pad), right + pad, bottom + pad)
    crop = gray[crop_box[1] : crop_box[3], crop_box[0] : crop_box[2]].astype(np.float32)
    if crop.size == 0:
        return None
    border = np.concatenate([crop[0], crop[-1], crop[:, 0], crop[:, -1]])
    background = float(np.median(border))
    diff = np.abs(crop - background)
    contrast = float(diff.max())
    if contrast < _INK_CONTRAST:
        return None
    ink = np.clip(diff / (0.85 * contrast), 0.0, 1.0).astype(np.float32)
    rows, cols = np.nonzero(ink > 0.4)
    if rows.size == 0:
        return None
    return icon_shape(ink[rows.min() : rows.max() + 1, cols.min() : cols.max() + 1])


def _icons(
    gray: npt.NDArray[np.uint8],
    taken: Sequence[tuple[int, int, int, int]],
    boxed: Sequence[Control] = (),
) -> list[Control]:
    """Icons recognised among the small marks outside ``taken`` (boxes with text) and
    ``boxed`` (icons found in outlined boxes): a window control (close, maximize, minimize) is
    kept only beside another kind of window control or at the top of the screen, where title
    bars are (an empty check box alone is no maximize button)."""
    found: list[Control] = list(boxed)
    for blob in _blobs(gray):
        cx, cy = (blob[0] + blob[2]) // 2, (blob[1] + blob[3]) // 2
        if any(t[0] <= cx < t[2] and t[1] <= cy < t[3] for t in taken):
            continue
        shape = _icon_at(gray, (blob[0] + 1, blob[1] + 1, blob[2] - 1, blob[3] - 1))
        if shape is not None:
            found.append(_icon(blob, shape))
    kept = []
    for icon in found:
        if icon.text in _WINDOW_ICONS:
            row = [
                o
                for o in found
                if o.text in _WINDOW_ICONS
                and o.text != icon.text
                and abs(o.center[1] - icon.center[1]) <= 6
                and abs(o.center[0] - icon.center[0]) <= 120
            ]
            if not row and icon.box[1] > 64:
                continue
        kept.append(icon)
    return kept


def _icon(box: tuple[int, int, int, int], shape: tuple[str, float]) -> Control:
    name, score = shape
    return Control(box, name, "icon", round(score, 3), "shape", ICON_NAMES[name])


# -- 3. all together ---------------------------------------------------------------------------


def detect(image: Image.Image, *, words: Sequence[Word] = ()) -> list[Control]:
    """The controls in ``image``: outlined boxes with the labels read in them, and ``words``
    (OCR words of the same image, optional) outside every box as ``text``. In reading order."""
    gray = _gray(image)
    controls: list[Control] = []
    boxes = outlines(gray)
    used: set[int] = set()
    boxed: list[Control] = []
    for box in boxes:
        inside = [i for i, w in enumerate(words) if _center_in(w.box, box)]
        if not _one_label([words[i].box for i in inside]):
            inside = []  # words apart: a bar or a group of texts, not one control's label
        if inside and label_ink(gray, box) is None:
            continue  # the words' own outline (a large bold digit), not a frame around them
        used.update(inside)
        ocr_text = " ".join(words[i].text for i in inside)
        ocr_score = sum(words[i].confidence for i in inside) / len(inside) if inside else 0.0
        if not _wordlike(ocr_text):  # nothing, or an icon OCR read as "o" or "x"
            ink = label_ink(gray, box)
            shape = icon_shape(ink) if ink is not None else None
            if shape is not None and shape[0] == "menu":  # three bars: no character
                controls.append(_icon(box, shape))
                continue
            small = max(box[2] - box[0], box[3] - box[1]) <= 24
            shape = _icon_at(gray, box) if small else None
            if shape is not None:  # a small outlined icon (a maximize square): kept below
                boxed.append(_icon(box, shape))
                continue
        glyphs = read_label(gray, box)
        readings = tuple(t for t in (glyphs.text, ocr_text) if t)
        if glyphs.text and (not ocr_text or (glyphs.score >= CLEAR_GLYPHS and not glyphs.trimmed)):
            found = Control(box, glyphs.text, "button", glyphs.score, "glyphs", readings)
            if found.authoritative:  # what OCR made of the same short label is a misreading
                found = Control(box, glyphs.text, "button", glyphs.score, "glyphs")
            controls.append(found)
        elif ocr_text:
            readings = (ocr_text, *readings)
            kind: ControlKind = "field" if _is_field(gray, box) else "button"
            controls.append(Control(box, ocr_text, kind, ocr_score, "ocr", readings))
        else:
            controls.append(Control(box, "", "box", 0.5, "outline"))
    # a lone character OCR read may be an icon ("x" for a close button): not a reason to skip
    taken = [c.box for c in controls] + [_corners(w.box) for w in words if _wordlike(w.text)]
    taken += [b.box for b in boxed]
    icons = _icons(gray, taken, boxed)
    controls.extend(icons)
    dropped = [b for b in boxed if b not in icons]  # outlined all the same: boxes
    controls.extend(Control(b.box, "", "box", 0.5, "outline") for b in dropped)
    for i, word in enumerate(words):
        if any(_center_in(word.box, icon.box) for icon in icons):
            used.add(i)
    for i, word in enumerate(words):
        if i not in used:
            controls.append(Control(_corners(word.box), word.text, "text", word.confidence, "ocr"))
    controls.sort(key=lambda c: (c.box[1] // 8, c.box[0]))
    return controls


def _wordlike(text: str) -> bool:
    """Text with two letters or digits at least: not an icon OCR took for a character."""
    return sum(ch.isalnum() for ch in text) >= 2


def _one_label(boxes: Sequence[Box]) -> bool:
    """Whether word boxes read as one label: one row, no gap wider than a wide word space."""
    if len(boxes) < 2:
        return True
    ordered = sorted(boxes, key=lambda b: b.x)
    height = sorted(b.height for b in boxes)[len(boxes) // 2]
    if max(b.center.y for b in boxes) - min(b.center.y for b in boxes) > height:
        return False
    return all(b.x - a.right <= 1.6 * height for a, b in zip(ordered, ordered[1:], strict=False))


def _corners(box: Box) -> tuple[int, int, int, int]:
    return (box.x, box.y, box.x + box.width, box.y + box.height)


def _center_in(box: Box, outer: tuple[int, int, int, int]) -> bool:
    c = box.center
    return outer[0] <= c.x < outer[2] and outer[1] <= c.y < outer[3]


@dataclass(frozen=True)
class ControlPage:
    """The controls of one screenshot, and the seconds the detection took."""

    controls: tuple[Control, ...]
    seconds: float


class ControlDetector:
    """``detect`` once per screenshot: keeps the last ``max_pages`` results by pixel digest."""

    def __init__(self, *, max_pages: int = 8) -> None:
        self.max_pages = max_pages
        self.passes = 0  # detections actually run (cache misses)
        self._pages: OrderedDict[str, ControlPage] = OrderedDict()
        self._lock = threading.Lock()

    def seconds_for(self, key: str) -> float:
        """Seconds the detection of the screenshot ``key`` took (0 when not cached)."""
        with self._lock:
            found = self._pages.get(key)
            return found.seconds if found is not None else 0.0

    def page(self, key: str, image: Image.Image, words: Sequence[Word] = ()) -> ControlPage:
        """The controls of ``image`` (``key``: a digest of its pixels, e.g. ``Observation.key``)."""
        with self._lock:
            if key in self._pages:
                self._pages.move_to_end(key)
                return self._pages[key]
            start = time.perf_counter()
            found = ControlPage(tuple(detect(image, words=words)), time.perf_counter() - start)
            self.passes += 1
            self._pages[key] = found
            while len(self._pages) > self.max_pages:
                self._pages.popitem(last=False)
            return found


__all__ = [
    "Control",
    "ControlDetector",
    "ControlKind",
    "ControlPage",
    "ICON_NAMES",
    "MAX_GLYPHS",
    "detect",
    "icon_shape",
    "label_ink",
    "outlines",
    "Reading",
    "read_label",
    "screen_fonts",
    "warm_glyphs",
]
