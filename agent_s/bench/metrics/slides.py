"""OSWorld's ``compare_pptx_files``: two presentations agree slide by slide, shape by shape.

The verdict is the one OSWorld's current metric gives on the same files and options (our own
code, written from its behaviour). Checks, in OSWorld's order (``examine_*`` options; on
unless noted):

- the number of slides (``number_of_slides``); per slide the background colour
  (``background_color``), the notes (``note``), and always the number of shapes;
- per shape, geometry: left, top, width and height each *approximately* equal, within
  ``approximately_tolerance`` (default 0.005) of the larger value (``shape``), skipped when
  neither shape holds text (pictures, tables, groups, empty or blank boxes); off by default:
  ``image_size`` (pictures' width and height only), ``modify_height`` (only the height of
  shapes without text and of freeforms; needs ``examine_shape: false`` to matter, since the
  plain check comes first) and OSWorld's task-specific position checks
  ``title_bottom_position``, ``table_bottom_position``, ``right_position``,
  ``top_position``, ``shape_for_shift_size`` (their constants are OSWorld's; none of these
  skips the shapes without text);
- tables: the same size, and per cell the same number of paragraphs and of runs
  (``run_count``), with the same colour (``color_rgb``), bold, italic and underline; cell
  *text* is not compared;
- text shapes: the text (``text``), always the same number of paragraphs, per paragraph the
  alignment (``alignment``; unset is left), the text, the level (``indent``; levels 0 and 1
  are equal), the number of runs (``run_count``), and per run, pairing runs in order (the
  shorter list ends the pairs), the font name, size, bold, italic (unset is not bold / not
  italic), colour (when both have an RGB colour), underline (unset vs. off is equal),
  strike-through, and the slide's bullets (``bullets``: the character and text of every
  non-blank paragraph, and its level where a bullet character is shown, an unset level
  being level 0; bullet colours are never compared). A paragraph whose text is blank on
  both sides counts only its runs with text;
- finally every text shape on the slide, group members included: with ``alignment`` on and
  as many on both sides, each one's text, number of paragraphs and alignments; with a
  different count, 0.

Options OSWorld does not read (``examine_shape_lenient_height``, ``enable_debug``, keys
starting with ``_``, ...) are ignored, as there. A missing or unreadable file scores 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_PICTURE, _FREEFORM, _TABLE = 13, 5, 19  # MSO_SHAPE_TYPE values
_SOLID, _BACKGROUND = 1, 5  # MSO_FILL values
_NO_BULLET = "No Bullet"
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
}
_DEFAULT_TOLERANCE = 0.005


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


def _has_rgb(color: Any) -> bool:
    try:
        color.rgb  # noqa: B018  (python-pptx raises AttributeError for non-RGB colours)
    except AttributeError:
        return False
    return True


def _background(slide: Any) -> Any:
    """The slide's solid background colour (or its master's), else ``None``. A theme colour
    raises AttributeError, as in OSWorld (the task is then not scored)."""
    fill = slide.background.fill
    if fill.type == _SOLID:
        return fill.fore_color.rgb
    if fill.type == _BACKGROUND:
        master = slide.slide_layout.slide_master.background.fill
        return master.fore_color.rgb if master.type == _SOLID else None
    return None


def _notes(slide: Any) -> str:
    if not slide.has_notes_slide:
        return ""  # what a new, empty notes page holds
    frame = slide.notes_slide.notes_text_frame
    return frame.text.strip() if frame is not None else ""


def _bullets(slide: Any) -> list[tuple[str, str, str]] | None:
    """(level, bullet character, text) of every non-blank paragraph of the slide's XML;
    ``None`` when a text element is empty (OSWorld then skips the bullet check). Bullet
    colours are not read: OSWorld no longer compares them."""
    from pptx.oxml.ns import qn

    found = []
    for p in slide.element.iter(qn("a:p")):
        ppr = p.find(qn("a:pPr"))
        level, char = "No Level", _NO_BULLET
        if ppr is not None:
            lvl = ppr.get("lvl")
            level = "0" if lvl is None else str(lvl)  # an unset level is level 0
            bu = ppr.find(qn("a:buChar"))
            char = str(bu.get("char")) if bu is not None else char
        texts = [t.text for t in p.iter(qn("a:t"))]
        if any(t is None for t in texts):
            return None  # OSWorld's join fails on an empty <a:t/> and skips the check
        text = "".join(str(t) for t in texts)
        if text.strip():
            found.append((level, char, text))
    return found


def _same_bullets(b1: list[tuple[str, str, str]], b2: list[tuple[str, str, str]]) -> bool:
    """The same paragraphs with the same bullet characters; the levels only where a bullet
    is shown (without one, a level differs in the XML while the slide looks the same)."""
    if len(b1) != len(b2):
        return False
    for (level1, char1, text1), (level2, char2, text2) in zip(b1, b2, strict=True):
        if text1 != text2 or char1 != char2:
            return False
        if char1 != _NO_BULLET and level1 != level2:
            return False
    return True


def _has_text(shape: Any) -> bool:
    return hasattr(shape, "text")


def _blank(shape: Any) -> bool:
    """The shape holds no text: none at all (a picture, a table, a group) or only spaces."""
    return not str(getattr(shape, "text", None) or "").strip()


def _runs(p1: Any, p2: Any) -> tuple[list[Any], list[Any]]:
    """The runs of two paragraphs to compare: all of them, or, when both paragraphs are
    blank, only the runs with text (an empty run left by an edit is no run)."""
    runs1, runs2 = list(p1.runs), list(p2.runs)
    if not p1.text.strip() and not p2.text.strip():
        return [r for r in runs1 if r.text.strip()], [r for r in runs2 if r.text.strip()]
    return runs1, runs2


def _same_level(level1: int, level2: int) -> bool:
    """Paragraph levels 0 and 1 are equal (the same continuation indent, different XML)."""
    return level1 == level2 or (level1 in (0, 1) and level2 in (0, 1))


def _text_shapes(shapes: Any) -> list[Any]:
    """Every shape with a text frame, group members included, in document order."""
    found = []
    for shape in shapes:
        if hasattr(shape, "text") and hasattr(shape, "text_frame"):
            found.append(shape)
        if hasattr(shape, "shapes"):
            found.extend(_text_shapes(shape.shapes))
    return found


def _same_flag(a: Any, b: Any) -> bool:
    """Bold / italic: equal, or both unset-or-off."""
    return bool(a == b or ((a is None or a is False) and (b is None or b is False)))


def _align(paragraph: Any) -> Any:
    """A paragraph's alignment; unset is left."""
    from pptx.enum.text import PP_ALIGN

    return PP_ALIGN.LEFT if paragraph.alignment is None else paragraph.alignment


class _Comparison:
    def __init__(self, options: Mapping[str, Any]) -> None:
        self.examine = dict(_BOOL_OPTIONS)
        self.tolerance = float(options.get("approximately_tolerance", _DEFAULT_TOLERANCE))
        for name in _BOOL_OPTIONS:
            if f"examine_{name}" in options:
                self.examine[name] = bool(options[f"examine_{name}"])

    def check(self, condition: bool) -> None:
        if not condition:
            raise _Mismatch

    def near(self, a: Any, b: Any) -> bool:
        if a == b:
            return True
        if a == 0 or b == 0:
            return False
        return bool(abs(a - b) / max(abs(a), abs(b)) <= self.tolerance)

    def same_box(self, a: Any, b: Any) -> bool:
        return (
            self.near(a.left, b.left)
            and self.near(a.top, b.top)
            and self.near(a.width, b.width)
            and self.near(a.height, b.height)
        )

    def presentations(self, prs1: Any, prs2: Any) -> None:
        e = self.examine
        if e["number_of_slides"]:
            self.check(len(prs1.slides) == len(prs2.slides))
        for index, (slide1, slide2) in enumerate(zip(prs1.slides, prs2.slides, strict=False), 1):
            background = _background(slide1) == _background(slide2)
            self.check(background or not e["background_color"])
            self.check(_notes(slide1) == _notes(slide2) or not e["note"])
            self.check(len(slide1.shapes) == len(slide2.shapes))
            for shape1, shape2 in zip(slide1.shapes, slide2.shapes, strict=False):
                self.geometry(shape1, shape2, index)
                if shape1.shape_type == _TABLE:
                    self.table(shape1.table, shape2.table)
                if _has_text(shape1) and _has_text(shape2):
                    self.text_frame(shape1, shape2, slide1, slide2)
            self.all_text_shapes(_text_shapes(slide1.shapes), _text_shapes(slide2.shapes))

    def geometry(self, s1: Any, s2: Any, slide: int) -> None:
        e = self.examine
        if e["title_bottom_position"]:
            if _has_text(s1) and _has_text(s2) and s1.text == s2.text:
                if s1.text == "Product Comparison":
                    self.check(s1.top > s2.top and s1.top >= 3600000)
            else:
                self.check(self.same_box(s1, s2))
        if e["table_bottom_position"]:
            if slide == 3 and s1.shape_type == _TABLE and s2.shape_type == _TABLE:
                self.check(s1.top > s2.top and s1.top >= 3600000)
            else:
                self.check(self.same_box(s1, s2))
        if e["right_position"] and slide == 2 and not _has_text(s1) and not _has_text(s2):
            self.check(s1.left > s2.left and s1.left >= 4320000)
        if e["top_position"] and slide == 2 and s1.shape_type == s2.shape_type == _PICTURE:
            self.check(s1.top < s2.top and s1.top <= 1980000)
        if e["shape_for_shift_size"] and not self.same_box(s1, s2):
            self.check(
                _has_text(s1)
                and _has_text(s2)
                and s1.text == s2.text
                and s1.text == "Elaborate on what you want to discuss."
            )
        if e["shape"] and not (_blank(s1) and _blank(s2)):
            self.check(self.same_box(s1, s2))
        if e["image_size"]:
            if s1.shape_type == _PICTURE and s2.shape_type == _PICTURE:
                self.check(self.near(s1.width, s2.width) and self.near(s1.height, s2.height))
            else:
                self.check(self.same_box(s1, s2))
        if e["modify_height"]:
            unboxed = not _has_text(s1) and not _has_text(s2)
            if unboxed or (s1.shape_type == _FREEFORM and s2.shape_type == _FREEFORM):
                self.check(self.near(s1.height, s2.height))
            else:
                self.check(self.same_box(s1, s2))

    def table(self, t1: Any, t2: Any) -> None:
        rows, cols = len(t1.rows), len(t1.columns)
        self.check(rows == len(t2.rows) and cols == len(t2.columns))
        for i in range(rows):
            for j in range(cols):
                paras1 = t1.cell(i, j).text_frame.paragraphs
                paras2 = t2.cell(i, j).text_frame.paragraphs
                self.check(len(paras1) == len(paras2))
                for p1, p2 in zip(paras1, paras2, strict=True):
                    for r1, r2 in self.paired_runs(p1, p2):
                        f1, f2 = r1.font, r2.font
                        if self.examine["color_rgb"] and _has_rgb(f1.color) and _has_rgb(f2.color):
                            self.check(f1.color.rgb == f2.color.rgb)
                        self.check(_same_flag(f1.bold, f2.bold))
                        self.check(_same_flag(f1.italic, f2.italic))
                        self.underline(f1.underline, f2.underline)

    def paired_runs(self, p1: Any, p2: Any) -> list[tuple[Any, Any]]:
        """The runs compared pairwise; their counts differ only with ``run_count`` off."""
        runs1, runs2 = _runs(p1, p2)
        if self.examine["run_count"]:
            self.check(len(runs1) == len(runs2))
        return list(zip(runs1, runs2, strict=False))

    def underline(self, u1: Any, u2: Any) -> None:
        """Different underlines fail when both are set, or when one is unset and the other
        is plainly on (``True``); unset vs. off, or vs. a named style, passes."""
        if u1 == u2:
            return
        self.check(u1 is None or u2 is None)
        self.check(not ((u1 is None and u2 is True) or (u1 is True and u2 is None)))

    def text_frame(self, s1: Any, s2: Any, slide1: Any, slide2: Any) -> None:
        e = self.examine
        if e["text"]:
            self.check(s1.text.strip() == s2.text.strip())
        paras1, paras2 = s1.text_frame.paragraphs, s2.text_frame.paragraphs
        self.check(len(paras1) == len(paras2))
        for p1, p2 in zip(paras1, paras2, strict=True):
            if e["alignment"]:
                self.check(_align(p1) == _align(p2))
            if e["text"]:
                self.check(p1.text == p2.text)
            # OSWorld reads both levels whatever examine_indent says (python-pptx then adds an
            # empty <a:pPr> to a paragraph without one; the bullets are read from the slide as
            # the comparison leaves it, and such a paragraph shows no bullet, so its level is
            # not compared there)
            level1, level2 = p1.level, p2.level
            if e["indent"]:
                self.check(_same_level(level1, level2))
            for r1, r2 in self.paired_runs(p1, p2):
                self.run(r1.font, r2.font)
                if e["bullets"]:
                    b1, b2 = _bullets(slide1), _bullets(slide2)
                    self.check(b1 is None or b2 is None or _same_bullets(b1, b2))

    def run(self, f1: Any, f2: Any) -> None:
        e = self.examine
        if e["font_name"]:
            self.check(f1.name == f2.name)
        if e["font_size"]:
            self.check(f1.size == f2.size)
        if e["font_bold"]:
            self.check(_same_flag(f1.bold, f2.bold))
        if e["font_italic"]:
            self.check(_same_flag(f1.italic, f2.italic))
        if e["color_rgb"] and _has_rgb(f1.color) and _has_rgb(f2.color):
            self.check(f1.color.rgb == f2.color.rgb)
        if e["font_underline"]:
            self.underline(f1.underline, f2.underline)
        if e["strike_through"]:
            strike1 = f1._element.attrib.get("strike", "noStrike")
            strike2 = f2._element.attrib.get("strike", "noStrike")
            self.check(strike1 == strike2)

    def all_text_shapes(self, shapes1: list[Any], shapes2: list[Any]) -> None:
        if len(shapes1) != len(shapes2):
            raise _Mismatch
        if not self.examine["alignment"]:
            return
        for s1, s2 in zip(shapes1, shapes2, strict=True):
            if self.examine["text"]:
                self.check(s1.text.strip() == s2.text.strip())
            paras1, paras2 = s1.text_frame.paragraphs, s2.text_frame.paragraphs
            self.check(len(paras1) == len(paras2))
            for p1, p2 in zip(paras1, paras2, strict=True):
                self.check(_align(p1) == _align(p2))


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
