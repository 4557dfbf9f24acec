"""OSWorld's ``compare_pptx_files``: two presentations agree slide by slide, shape by shape.

Checks (``examine_*`` options; on unless noted): number of slides, background colour, notes,
shape geometry (``shape``), text, paragraph alignment and indent level, number of runs
(``run_count``), run fonts (``font_name``, ``font_size``, ``font_bold``, ``font_italic``,
``color_rgb``, ``font_underline``, ``strike_through``), bullets. Off by default:
``image_size`` (pictures' size, within ``approximately_tolerance``, a fraction),
``modify_height`` (pictures' and freeforms' height), ``shape_lenient_height`` (geometry
except height, which text boxes change by themselves), and OSWorld's task-specific position
checks ``title_bottom_position``, ``table_bottom_position``, ``right_position``,
``top_position``, ``shape_for_shift_size`` (their constants are OSWorld's). The order of
the checks is OSWorld's, which is why ``modify_height`` needs ``examine_shape: false``.
The number of shapes on a slide must always agree. Keys starting with ``_`` are notes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_PICTURE, _FREEFORM, _TABLE = 13, 5, 19  # MSO_SHAPE_TYPE values
_BOOL_OPTIONS = {
    "number_of_slides": True,
    "shape": True,
    "text": True,
    "indent": True,
    "font_name": True,
    "font_size": True,
    "font_bold": True,
    "font_italic": True,
    "color_rgb": True,
    "font_underline": True,
    "strike_through": True,
    "alignment": True,
    "run_count": True,
    "bullets": True,
    "background_color": True,
    "note": True,
    "title_bottom_position": False,
    "table_bottom_position": False,
    "right_position": False,
    "top_position": False,
    "shape_for_shift_size": False,
    "image_size": False,
    "modify_height": False,
    "shape_lenient_height": False,
}


class _Mismatch(Exception):
    """The presentations differ (internal: ends the comparison with 0)."""


def _open(path: Any) -> Any:
    from pptx import Presentation
    from pptx.exc import PackageNotFoundError

    if not path:
        return None
    try:
        return Presentation(str(path))
    except (PackageNotFoundError, OSError, KeyError, ValueError):
        return None


def _rgb(color: Any) -> tuple[bool, Any]:
    try:
        return True, color.rgb
    except AttributeError:  # no colour, or a kind without an RGB value
        return False, None


def _background(slide: Any) -> Any:
    from pptx.enum.dml import MSO_FILL

    fill = slide.background.fill
    if fill.type == MSO_FILL.SOLID:
        return _rgb(fill.fore_color)[1]
    if fill.type == MSO_FILL.BACKGROUND:
        master = slide.slide_layout.slide_master.background.fill
        return _rgb(master.fore_color)[1] if master.type == MSO_FILL.SOLID else None
    return None


def _notes(slide: Any) -> str:
    if not slide.has_notes_slide:
        return ""
    frame = slide.notes_slide.notes_text_frame
    return frame.text.strip() if frame is not None else ""


def _bullets(slide: Any) -> list[tuple[Any, ...]]:
    """(level, bullet character, text, bullet colour) of every non-blank paragraph."""
    from pptx.oxml.ns import qn

    found = []
    for p in slide.element.iter(qn("a:p")):
        ppr = p.find(qn("a:pPr"))
        level, char, color = "No Level", "No Bullet", "No Color"
        if ppr is not None:
            level = ppr.get("lvl")
            bu = ppr.find(qn("a:buChar"))
            char = bu.get("char") if bu is not None else char
            clr = ppr.find(f"{qn('a:buClr')}/{qn('a:srgbClr')}")
            color = clr.get("val") if clr is not None else color
        text = "".join(t.text or "" for t in p.iter(qn("a:t")))
        if text.strip():
            found.append((level, char, text, color))
    return found


def _has_text(shape: Any) -> bool:
    return hasattr(shape, "text")


class _Comparison:
    def __init__(self, options: Mapping[str, Any]) -> None:
        self.examine = dict(_BOOL_OPTIONS)
        self.tolerance = 0.0
        for key, value in options.items():
            if key.startswith("_"):
                continue
            if key == "approximately_tolerance":
                self.tolerance = float(value)
            elif key.startswith("examine_") and key[8:] in _BOOL_OPTIONS:
                self.examine[key[8:]] = bool(value)
            else:
                raise NotImplementedError(f"compare_pptx_files does not know option {key!r}")
        self.slide_bullets: tuple[Any, Any] | None = None

    def check(self, condition: bool) -> None:
        if not condition:
            raise _Mismatch

    def near(self, a: int, b: int) -> bool:
        return abs(a - b) <= self.tolerance * abs(b)

    @staticmethod
    def same_box(a: Any, b: Any) -> bool:
        return (a.left, a.top, a.width, a.height) == (b.left, b.top, b.width, b.height)

    def presentations(self, prs1: Any, prs2: Any) -> None:
        e = self.examine
        if e["number_of_slides"]:
            self.check(len(prs1.slides) == len(prs2.slides))
        for index, (slide1, slide2) in enumerate(zip(prs1.slides, prs2.slides, strict=False), 1):
            if e["background_color"]:
                self.check(_background(slide1) == _background(slide2))
            if e["note"]:
                self.check(_notes(slide1) == _notes(slide2))
            self.check(len(slide1.shapes) == len(slide2.shapes))
            self.slide_bullets = (slide1, slide2)
            for shape1, shape2 in zip(slide1.shapes, slide2.shapes, strict=False):
                self.geometry(shape1, shape2, index)
                self.content(shape1, shape2)

    def geometry(self, s1: Any, s2: Any, slide: int) -> None:
        e, same = self.examine, self.same_box(s1, s2)
        if e["title_bottom_position"]:
            if _has_text(s1) and _has_text(s2) and s1.text == s2.text:
                if s1.text == "Product Comparison":
                    self.check(s1.top > s2.top and s1.top >= 3600000)
            else:
                self.check(same)
        if e["table_bottom_position"]:
            if slide == 3 and s1.shape_type == _TABLE and s2.shape_type == _TABLE:
                self.check(s1.top > s2.top and s1.top >= 3600000)
            else:
                self.check(same)
        if e["right_position"] and slide == 2 and not _has_text(s1) and not _has_text(s2):
            self.check(s1.left > s2.left and s1.left >= 4320000)
        if e["top_position"]:
            if slide == 2 and s1.shape_type == _PICTURE and s2.shape_type == _PICTURE:
                self.check(s1.top < s2.top and s1.top <= 1980000)
            else:
                self.check(same)
        if e["shape_for_shift_size"] and not same:
            self.check(
                _has_text(s1)
                and _has_text(s2)
                and s1.text == s2.text
                and s1.text == "Elaborate on what you want to discuss."
            )
        if e["shape"]:
            self.check(same)
        if e["shape_lenient_height"]:
            self.check((s1.left, s1.top, s1.width) == (s2.left, s2.top, s2.width))
        if e["image_size"]:
            if s1.shape_type == _PICTURE and s2.shape_type == _PICTURE:
                self.check(self.near(s1.width, s2.width) and self.near(s1.height, s2.height))
            else:
                self.check(same)
        if e["modify_height"]:
            unboxed = not _has_text(s1) and not _has_text(s2)
            if unboxed or (s1.shape_type == _FREEFORM and s2.shape_type == _FREEFORM):
                self.check(s1.height == s2.height)
            else:
                self.check(same)

    def content(self, s1: Any, s2: Any) -> None:
        if getattr(s1, "has_table", False) and getattr(s2, "has_table", False):
            self.table(s1.table, s2.table)
        elif hasattr(s1, "shapes") and hasattr(s2, "shapes"):  # group shapes
            self.check(len(s1.shapes) == len(s2.shapes))
            for sub1, sub2 in zip(s1.shapes, s2.shapes, strict=False):
                self.content(sub1, sub2)
        elif _has_text(s1) and _has_text(s2):
            if self.examine["text"]:
                self.check(s1.text.strip() == s2.text.strip())
            self.paragraphs(s1.text_frame, s2.text_frame)

    def table(self, t1: Any, t2: Any) -> None:
        rows, cols = len(t1.rows), len(t1.columns)
        self.check(rows == len(t2.rows) and cols == len(t2.columns))
        for i in range(rows):
            for j in range(cols):
                c1, c2 = t1.cell(i, j), t2.cell(i, j)
                if self.examine["text"]:
                    self.check(c1.text.strip() == c2.text.strip())
                self.paragraphs(c1.text_frame, c2.text_frame)

    def paragraphs(self, frame1: Any, frame2: Any) -> None:
        e = self.examine
        for p1, p2 in zip(frame1.paragraphs, frame2.paragraphs, strict=False):
            if e["alignment"]:
                self.check(p1.alignment == p2.alignment)
            if e["text"]:
                self.check(p1.text == p2.text)
            if e["indent"]:
                self.check(p1.level == p2.level)
            if e["run_count"]:
                self.check(len(p1.runs) == len(p2.runs))
            for r1, r2 in zip(p1.runs, p2.runs, strict=False):
                self.run(r1.font, r2.font)

    def run(self, f1: Any, f2: Any) -> None:
        e = self.examine
        pairs = [
            ("font_name", f1.name, f2.name),
            ("font_size", f1.size, f2.size),
            ("font_bold", f1.bold, f2.bold),
            ("font_italic", f1.italic, f2.italic),
            ("font_underline", f1.underline, f2.underline),
        ]
        for option, a, b in pairs:
            if e[option]:
                self.check(a == b)
        if e["color_rgb"]:
            (has1, rgb1), (has2, rgb2) = _rgb(f1.color), _rgb(f2.color)
            if has1 and has2:
                self.check(rgb1 == rgb2)
        if e["strike_through"]:
            strike1 = f1._element.attrib.get("strike", "noStrike")
            strike2 = f2._element.attrib.get("strike", "noStrike")
            self.check(strike1 == strike2)
        if e["bullets"] and self.slide_bullets is not None:
            slide1, slide2 = self.slide_bullets
            self.check(_bullets(slide1) == _bullets(slide2))
            self.slide_bullets = None  # the slide's bullets are compared once


def compare_pptx_files(file1: Any, file2: Any, **options: Any) -> float:
    """1 when the presentations agree on every check the options leave on (module docstring)."""
    comparison = _Comparison(options)
    prs1, prs2 = _open(file1), _open(file2)
    if prs1 is None or prs2 is None:
        return 0.0
    try:
        comparison.presentations(prs1, prs2)
    except _Mismatch:
        return 0.0
    return 1.0
