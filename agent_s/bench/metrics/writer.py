"""OSWorld's LibreOffice Writer metrics beyond whole-text comparison: formatting of .docx files
(line spacing, fonts, sub/superscript, strike-through, italics, tab stops, page breaks, footers,
images), references, train records, highlighted .odt words and Writer's default font.

Each returns a float in [0, 1] with OSWorld's verdict on the same files (our own code, written
from its behaviour). A missing path, or a file python-docx cannot open, scores 0, as there.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Mapping, Sequence
from io import BytesIO
from typing import Any
from xml.etree import ElementTree

from rapidfuzz import fuzz

from agent_s.bench.metrics.colour import colour_difference
from agent_s.bench.metrics.documents import compare_docx_files

_REGISTRY = "http://openoffice.org/2001/registry"
_W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
_ODF = {
    "office": "urn:oasis:names:tc:opendocument:xmlns:office:1.0",
    "style": "urn:oasis:names:tc:opendocument:xmlns:style:1.0",
    "text": "urn:oasis:names:tc:opendocument:xmlns:text:1.0",
    "fo": "urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0",
}


def _open(path: Any) -> Any:
    """The python-docx document, or ``None`` (no path, or not a readable Word file)."""
    import docx

    if not path:
        return None
    try:
        return docx.Document(str(path))
    except Exception:  # OSWorld logs any error opening the file and scores 0
        return None


def _open_both(path1: Any, path2: Any) -> tuple[Any, Any] | None:
    doc1, doc2 = _open(path1), _open(path2)
    return None if doc1 is None or doc2 is None else (doc1, doc2)


def _same_text(path1: Any, path2: Any) -> bool:
    """OSWorld's precondition of several metrics: compare_docx_files with its defaults."""
    return bool(compare_docx_files(path1, path2))


def compare_line_spacing(docx_file1: Any, docx_file2: Any, **_: Any) -> float:
    """The same text, the same number of paragraphs, each with the same line spacing."""
    if not docx_file1 or not docx_file2 or not _same_text(docx_file1, docx_file2):
        return 0.0
    docs = _open_both(docx_file1, docx_file2)
    if docs is None or len(docs[0].paragraphs) != len(docs[1].paragraphs):
        return 0.0
    pairs = zip(docs[0].paragraphs, docs[1].paragraphs, strict=True)
    same = all(a.paragraph_format.line_spacing == b.paragraph_format.line_spacing for a, b in pairs)
    return 1.0 if same else 0.0


def compare_font_names(docx_file: Any, rules: Mapping[str, Any], **_: Any) -> float:
    """Every run of the body's paragraphs names ``rules["font_name"]`` (an inherited, unset
    font fails)."""
    doc = _open(docx_file)
    if doc is None:
        return 0.0
    want = rules["font_name"]
    runs = (run for paragraph in doc.paragraphs for run in paragraph.runs)
    return 1.0 if all(run.font.name == want for run in runs) else 0.0


def compare_subscript_contains(docx_file1: Any, docx_file2: Any, **_: Any) -> float:
    """1 when some run, paired by position with the other file's, is subscript in both."""
    docs = _open_both(docx_file1, docx_file2)
    if docs is None:
        return 0.0
    for para1, para2 in zip(docs[0].paragraphs, docs[1].paragraphs, strict=False):
        for run1, run2 in zip(para1.runs, para2.runs, strict=False):
            if run1.font.subscript and run2.font.subscript:
                return 1.0
    return 0.0


def has_page_numbers_in_footers(docx_file: Any, **_: Any) -> float:
    """Every section's footer starts with a paragraph holding a digit."""
    doc = _open(docx_file)
    if doc is None:
        return 0.0
    for section in doc.sections:
        paragraphs = section.footer.paragraphs
        text = paragraphs[0].text if paragraphs else ""
        if not any(ch.isdigit() for ch in text):
            return 0.0
    return 1.0


def is_first_line_centered(docx_file: Any, **_: Any) -> float:
    """The first paragraph is centred (a document without paragraphs raises, as there)."""
    from docx.enum.text import WD_PARAGRAPH_ALIGNMENT

    doc = _open(docx_file)
    if doc is None:
        return 0.0
    centred = doc.paragraphs[0].paragraph_format.alignment == WD_PARAGRAPH_ALIGNMENT.CENTER
    return 1.0 if centred else 0.0


def check_tabstops(docx_file1: Any, docx_file2: Any, **options: Any) -> float:
    """Non-blank paragraphs pair up and have the same kinds of tab stops (cleared ones and
    the default left stop at 0 aside); the score is 1 minus the mean distance between the
    paired stops as a fraction of the text width. ``word_number_split_by_tabstop`` N: the
    text before tab ``index`` (default 0) of each paragraph has N words."""
    from docx.enum.text import WD_TAB_ALIGNMENT

    docs = _open_both(docx_file1, docx_file2)
    if docs is None:
        return 0.0
    para1 = [p for p in docs[0].paragraphs if p.text.strip()]
    para2 = [p for p in docs[1].paragraphs if p.text.strip()]
    if len(para1) != len(para2):
        return 0.0
    words_wanted = options.get("word_number_split_by_tabstop")
    if words_wanted is not None:
        index = options.get("index", 0)
        for paragraph in para1:
            part = paragraph.text.split("\t")[index]
            if len([w for w in re.split(r"\s", part) if w.strip()]) != words_wanted:
                return 0.0
    section = docs[1].sections[0]
    width = section.page_width - section.left_margin - section.right_margin

    def kept(stop: Any) -> bool:
        cleared = stop.alignment == WD_TAB_ALIGNMENT.CLEAR
        return not (cleared or (stop.alignment == WD_TAB_ALIGNMENT.LEFT and stop.position == 0))

    minus = 0.0
    for p1, p2 in zip(para1, para2, strict=True):
        tabs1 = [t for t in p1.paragraph_format.tab_stops if kept(t)]
        tabs2 = [t for t in p2.paragraph_format.tab_stops if kept(t)]
        if len(tabs1) != len(tabs2):
            return 0.0
        difference = 0.0
        for t1, t2 in zip(tabs1, tabs2, strict=True):
            if t1.alignment != t2.alignment:
                return 0.0
            difference += abs(t1.position - t2.position)
        minus += difference / width
    return float(1 - minus / len(para1))


def evaluate_strike_through_last_paragraph(file1: Any, file2: Any, **_: Any) -> float:
    """The same text, and every run of the last paragraph struck through."""
    if not file1 or not file2 or not _same_text(file1, file2):
        return 0.0
    doc = _open(file1)
    if doc is None:
        return 0.0
    return 1.0 if all(run.font.strike for run in doc.paragraphs[-1].runs) else 0.0


def check_italic_font_size_14(path1: Any, path2: Any, **_: Any) -> float:
    """The same text, and every italic run is 14 pt."""
    if not path1 or not path2 or not _same_text(path1, path2):
        return 0.0
    doc = _open(path1)
    if doc is None:
        return 0.0
    for paragraph in doc.paragraphs:
        for run in paragraph.runs:
            if run.italic and (run.font.size is None or run.font.size.pt != 14):
                return 0.0
    return 1.0


def contains_page_break(docx_file: Any, rules: Mapping[str, Any] | None = None, **_: Any) -> float:
    """Some run of the body holds a page break (``<w:br w:type="page"/>``); with
    ``page_break_count``, exactly that many."""
    doc = _open(docx_file)
    if doc is None:
        return 0.0
    wanted = rules.get("page_break_count") if isinstance(rules, Mapping) else None
    count = 0
    for paragraph in doc.paragraphs:
        for run in paragraph.runs:
            for br in run.element.iter(f"{{{_W}}}br"):
                count += br.get(f"{{{_W}}}type") == "page"
    if wanted is not None and count != wanted:
        return 0.0
    return 1.0 if count > 0 else 0.0


def find_default_font(config_file_path: Any, rules: Mapping[str, Any], **_: Any) -> float:
    """LibreOffice's registrymodifications.xcu sets Writer's standard default font to
    ``rules["font_name"]`` (the last such value counts)."""
    if not config_file_path:
        return 0.0
    found = None
    try:
        root = ElementTree.parse(str(config_file_path)).getroot()  # noqa: S314  (task file)
    except (OSError, ElementTree.ParseError):
        root = None
    if root is not None:
        for item in root.iter("item"):
            if item.get(f"{{{_REGISTRY}}}path") != "/org.openoffice.Office.Writer/DefaultFont":
                continue
            for prop in item.iter("prop"):
                if prop.get(f"{{{_REGISTRY}}}name") == "Standard":
                    for value in prop.findall("value"):
                        found = value.text
    return 1.0 if found == rules["font_name"] else 0.0


def compare_docx_images(docx_file1: Any, docx_file2: Any, **_: Any) -> float:
    """The documents' images (the main part's image relationships, in order) have the same
    decoded pixels."""
    from PIL import Image

    docs = _open_both(docx_file1, docx_file2)
    if docs is None:
        return 0.0

    def images(doc: Any) -> list[bytes]:
        return [rel.target_part.blob for rel in doc.part.rels.values() if "image" in rel.reltype]

    images1, images2 = images(docs[0]), images(docs[1])
    if len(images1) != len(images2):
        return 0.0
    for blob1, blob2 in zip(images1, images2, strict=True):
        with Image.open(BytesIO(blob1)) as im1, Image.open(BytesIO(blob2)) as im2:
            if im1.tobytes() != im2.tobytes():
                return 0.0
    return 1.0


def _docx_paragraphs(file1: Any, file2: Any) -> tuple[list[str], list[str]] | None:
    if not str(file1).endswith(".docx") or not str(file2).endswith(".docx"):
        return None
    docs = _open_both(file1, file2)
    if docs is None:
        return None
    return [p.text for p in docs[0].paragraphs], [p.text for p in docs[1].paragraphs]


def compare_docx_files_and_ignore_new_lines(file1: Any, file2: Any, **options: Any) -> float:
    """Two .docx files' non-empty paragraphs: with ``ignore_blanks`` (default) their text with
    runs of whitespace as one space is equal, else paragraph by paragraph."""
    if not file1 or not file2:
        return 0.0
    both = _docx_paragraphs(file1, file2)
    if both is None:
        return 0.0
    paras1 = [p for p in both[0] if p != ""]
    paras2 = [p for p in both[1] if p != ""]
    if options.get("ignore_blanks", True):
        text1 = re.sub(r"\s+", " ", "\n".join(paras1)).strip()
        text2 = re.sub(r"\s+", " ", "\n".join(paras2)).strip()
        return 1.0 if text1 == text2 else 0.0
    return 1.0 if paras1 == paras2 else 0.0


def compare_references(file1: Any, file2: Any, **options: Any) -> float:
    """The paragraphs after the first ``reference_indicator`` paragraph (default
    "References"), blank ones left out, pair up; their mean fuzzy similarity r scores
    (r - b) / (1 - b) when r >= b + 0.01, else 0 (b: ``reference_base_result``, 0.5). Neither
    file having the heading scores 1, one of them 0."""
    if not file1 or not file2:
        return 0.0
    both = _docx_paragraphs(file1, file2)
    if both is None:
        return 0.0
    heading = options.get("reference_indicator", "References")
    base = options.get("reference_base_result", 0.5)
    paras1, paras2 = both
    if heading not in paras1 and heading not in paras2:
        return 1.0
    if heading not in paras1 or heading not in paras2:
        return 0.0
    refs1 = [p for p in paras1[paras1.index(heading) + 1 :] if p.strip()]
    refs2 = [p for p in paras2[paras2.index(heading) + 1 :] if p.strip()]
    if len(refs1) != len(refs2):
        return 0.0
    if not refs1:  # OSWorld divides by the number of references
        raise ZeroDivisionError("no references after the heading")
    mean = sum(fuzz.ratio(a, b) / 100.0 for a, b in zip(refs1, refs2, strict=True)) / len(refs1)
    return float((mean - base) / (1 - base)) if mean >= base + 0.01 else 0.0


def compare_unique_train_records(processed_file: Any, expected_files: Any, **_: Any) -> float:
    """Train records ("time, train id, station, platform" lines): every processed line was in
    the initial file (``expected_files[1]``), no train id twice, the same ids and number of
    lines as the gold file (``expected_files[0]``)."""
    if not processed_file or not isinstance(expected_files, list) or len(expected_files) < 2:
        return 0.0
    gold_file, initial_file = expected_files[0], expected_files[1]
    if not gold_file or not initial_file:
        return 0.0

    def records(path: Any) -> tuple[list[str], list[str]] | None:
        doc = _open(path)
        if doc is None:
            return None
        lines = [p.text.strip() for p in doc.paragraphs if p.text.strip()]
        ids = [line.split(",")[1].strip() for line in lines if len(line.split(",")) == 4]
        return lines, ids

    processed, gold, initial = records(processed_file), records(gold_file), records(initial_file)
    if processed is None or gold is None or initial is None:
        return 0.0
    lines, ids = processed
    if not set(lines) <= set(initial[0]) or len(ids) != len(set(ids)):
        return 0.0
    if set(ids) != set(gold[1]) or len(lines) != len(gold[0]):
        return 0.0
    return 1.0


def _odt_parts(path: Any) -> list[ElementTree.Element]:
    """content.xml and styles.xml parsed (a file without content.xml raises KeyError, as
    odfpy's load fails on one)."""
    with zipfile.ZipFile(str(path)) as archive:
        names = ["content.xml"] + (["styles.xml"] if "styles.xml" in archive.namelist() else [])
        return [ElementTree.fromstring(archive.read(n)) for n in names]  # noqa: S314


def check_highlighted_words(file_path1: Any, file_path2: Any, **_: Any) -> float:
    """The same text (compare_docx_files), and no span of the first .odt file uses an
    automatic style with a yellow (``#ffff00``) background: the highlighting was removed."""
    if not file_path1 or not file_path2 or not _same_text(file_path1, file_path2):
        return 0.0
    parts = _odt_parts(file_path1)
    yellow = set()
    for part in parts:
        for styles in part.iter(f"{{{_ODF['office']}}}automatic-styles"):
            for style in styles:
                colours = [p.get(f"{{{_ODF['fo']}}}background-color") for p in style]
                if "#ffff00" in colours:
                    yellow.add(style.get(f"{{{_ODF['style']}}}name"))
    style_name = f"{{{_ODF['text']}}}style-name"
    for part in parts:
        for span in part.iter(f"{{{_ODF['text']}}}span"):
            if span.get(style_name) and span.get(style_name) in yellow:
                return 0.0
    return 1.0


__all__: Sequence[str] = (
    "check_highlighted_words",
    "check_italic_font_size_14",
    "check_tabstops",
    "compare_docx_files_and_ignore_new_lines",
    "compare_docx_images",
    "compare_font_names",
    "compare_line_spacing",
    "compare_references",
    "compare_subscript_contains",
    "compare_unique_train_records",
    "contains_page_break",
    "evaluate_strike_through_last_paragraph",
    "find_default_font",
    "has_page_numbers_in_footers",
    "is_first_line_centered",
)


_RED, _BLUE = (255, 0, 0), (0, 0, 255)


def evaluate_colored_words_in_tables(file_path1: Any, file_path2: Any, **kwargs: Any) -> float:
    """The same text, and in every table each run starting with a vowel (a, e, i, o, u) is
    red, every other non-empty run blue: within CIEDE2000 ``threshold`` (default 3.5) of
    #FF0000 / #0000FF. A run without an explicit colour raises, as in OSWorld (which reads
    its missing RGB value)."""
    if not file_path1 or not file_path2 or not _same_text(file_path1, file_path2):
        return 0.0
    doc = _open(file_path1)
    if doc is None:
        return 0.0
    threshold = kwargs.get("threshold", 3.5)
    for table in doc.tables:
        for row in table.rows:
            for cell in row.cells:
                for paragraph in cell.paragraphs:
                    for run in paragraph.runs:
                        word = run.text
                        if not word:
                            continue
                        rgb = run.font.color.rgb
                        if rgb is None:
                            raise ValueError(f"run {word!r} has no RGB colour to compare")
                        target = _RED if word[0].lower() in "aeiou" else _BLUE
                        if colour_difference(tuple(rgb), target) > threshold:
                            return 0.0
    return 1.0
