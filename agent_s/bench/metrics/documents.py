"""OSWorld's document metrics: Word files (text, tables) and PDFs. Each returns a float in
[0, 1]; a missing or unreadable file scores 0.

Fuzzy scores are rapidfuzz's ``fuzz.ratio / 100``, as OSWorld's. PDF text comes from PyMuPDF
as in OSWorld when it is installed, else from pypdf (see ``pdf_text``).
"""

from __future__ import annotations

import importlib
import re
import zipfile
from typing import Any

from rapidfuzz import fuzz


def _docx(path: Any) -> Any:
    """The python-docx document, or ``None`` when it is not a readable .docx file."""
    import docx
    from docx.opc.exceptions import PackageNotFoundError

    if not path or not str(path).endswith(".docx"):
        return None
    try:
        return docx.Document(str(path))
    except (PackageNotFoundError, OSError, KeyError, ValueError, zipfile.BadZipFile):
        return None


_ODF_OFFICE = "urn:oasis:names:tc:opendocument:xmlns:office:1.0"
_ODF_TEXT = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"


def _odt_paragraphs(path: Any) -> list[str] | None:
    """The ``text:p`` paragraphs of an OpenDocument text as OSWorld reads them with odfpy:
    the master pages' (headers, footers) first, then the body's, each paragraph's own text
    plus the text directly inside its ``text:span`` children (spaces written as
    ``text:s``, tabs, links and nested spans are left out, as there). ``None`` when the
    file is not a readable .odt."""
    from xml.etree import ElementTree

    paragraph, span = f"{{{_ODF_TEXT}}}p", f"{{{_ODF_TEXT}}}span"
    try:
        with zipfile.ZipFile(str(path)) as archive:
            parts = [archive.read("content.xml")]
            if "styles.xml" in archive.namelist():
                parts.insert(0, archive.read("styles.xml"))
        trees = [ElementTree.fromstring(part) for part in parts]  # noqa: S314  (task file)
    except (OSError, KeyError, zipfile.BadZipFile, ElementTree.ParseError):
        return None
    masters = [e for t in trees for e in t.iter(f"{{{_ODF_OFFICE}}}master-styles")]
    bodies = [e for t in trees for e in t.iter(f"{{{_ODF_OFFICE}}}body")]
    texts = []
    for root in masters + bodies:
        for p in root.iter(paragraph):
            parts_of_p = [p.text or ""]
            for child in p:
                if child.tag == span:
                    parts_of_p.append(child.text or "")
                    parts_of_p.extend(grand.tail or "" for grand in child)
                parts_of_p.append(child.tail or "")
            texts.append("".join(parts_of_p))
    return texts


def _paragraphs(file1: Any, file2: Any) -> tuple[list[str], list[str]] | None:
    """Both files' paragraph texts: two .docx or two .odt files, else ``None``."""
    name1, name2 = str(file1), str(file2)
    if name1.endswith(".docx") and name2.endswith(".docx"):
        doc1, doc2 = _docx(file1), _docx(file2)
        if doc1 is None or doc2 is None:
            return None
        return [p.text for p in doc1.paragraphs], [p.text for p in doc2.paragraphs]
    if name1.endswith(".odt") and name2.endswith(".odt"):
        odt1, odt2 = _odt_paragraphs(file1), _odt_paragraphs(file2)
        if odt1 is None or odt2 is None:
            return None
        return odt1, odt2
    return None


def _squash(paragraphs: list[str], ignore_case: bool) -> str:
    text = re.sub(r"\s+", " ", "\n".join(paragraphs)).strip()
    return text.lower() if ignore_case else text


def compare_docx_files(file1: Any, file2: Any, **options: Any) -> float:
    """The paragraph text of two .docx files, or of two .odt files (see ``_odt_paragraphs``).

    ``ignore_blanks`` (default on): the whole text with runs of whitespace as one space must
    be equal (``fuzzy_match``: their similarity is the score); off: paragraph by paragraph.
    ``content_only``: the similarity of the whitespace-squashed texts. ``ignore_order`` sorts
    the paragraphs first, ``delete_empty_lines`` drops blank ones, ``ignore_case`` lowers.
    """
    ignore_blanks = options.get("ignore_blanks", True)
    ignore_case = options.get("ignore_case", False)
    fuzzy_match = options.get("fuzzy_match", False)
    if not file1 or not file2:
        return 0.0
    both = _paragraphs(file1, file2)
    if both is None:
        return 0.0
    paras1, paras2 = both
    if options.get("ignore_order", False):
        paras1, paras2 = sorted(paras1), sorted(paras2)
    if options.get("delete_empty_lines", False):
        paras1 = [p for p in paras1 if p.strip()]
        paras2 = [p for p in paras2 if p.strip()]
    if options.get("content_only", False):
        return fuzz.ratio(_squash(paras1, ignore_case), _squash(paras2, ignore_case)) / 100.0
    if ignore_blanks:
        text1, text2 = _squash(paras1, ignore_case), _squash(paras2, ignore_case)
        if fuzzy_match:
            return fuzz.ratio(text1, text2) / 100.0
        return 1.0 if text1 == text2 else 0.0
    if len(paras1) != len(paras2):
        return 0.0
    if ignore_case:
        paras1, paras2 = [p.lower() for p in paras1], [p.lower() for p in paras2]
    pairs = list(zip(paras1, paras2, strict=True))
    if fuzzy_match:
        if not pairs:
            return 1.0
        return sum(fuzz.ratio(a, b) / 100.0 for a, b in pairs) / len(pairs)
    return 1.0 if all(a == b for a, b in pairs) else 0.0


def compare_docx_tables(file1: Any, file2: Any, **_: Any) -> float:
    """The same number of tables, each with the same shape and the same (stripped) cell text."""
    doc1, doc2 = _docx(file1), _docx(file2)
    if doc1 is None or doc2 is None:
        return 0.0
    tables1, tables2 = doc1.tables, doc2.tables
    if len(tables1) != len(tables2):
        return 0.0
    for table1, table2 in zip(tables1, tables2, strict=True):
        rows, cols = len(table1.rows), len(table1.columns)
        if rows != len(table2.rows) or cols != len(table2.columns):
            return 0.0
        for i in range(rows):
            for j in range(cols):
                if table1.cell(i, j).text.strip() != table2.cell(i, j).text.strip():
                    return 0.0
    return 1.0


def pdf_text(path: Any) -> str | None:
    """All pages' text, stripped; ``None`` when the file is missing or not a PDF.

    OSWorld extracts with PyMuPDF (``page.get_text()``, pages joined as they come); that is
    used here when it is installed (it is AGPL-licensed, so it is not a dependency of ours).
    Otherwise pypdf extracts the same text runs, with spacing that may differ slightly.
    """
    if not path:
        return None
    try:  # an optional module, without type information
        pymupdf = importlib.import_module("pymupdf")
    except ImportError:
        return _pypdf_text(path)
    try:
        with pymupdf.open(str(path)) as document:
            return "".join(page.get_text() for page in document).strip()
    except Exception:  # noqa: BLE001  (OSWorld catches any error of a pair: it adds 0)
        return None


def _pypdf_text(path: Any) -> str | None:
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(str(path))
        return "".join(page.extract_text() or "" for page in reader.pages).strip()
    except (OSError, PyPdfError, ValueError, KeyError):
        return None


def compare_pdfs(pdf1: Any, pdf2: Any, **_: Any) -> float:
    """Mean text similarity of PDF pairs (one pair, or two lists zipped); an unreadable pair
    adds 0."""
    if not isinstance(pdf2, list):
        pdf1, pdf2 = [pdf1], [pdf2]
    if not isinstance(pdf1, list) or not pdf2:
        return 0.0
    score = 0.0
    for path1, path2 in zip(pdf1, pdf2, strict=False):
        text1, text2 = pdf_text(path1), pdf_text(path2)
        if text1 is not None and text2 is not None:
            score += fuzz.ratio(text1, text2) / 100.0
    return score / len(pdf2)


def _unpack(archive: str, folder: str) -> None:
    """Extract a zip or tar archive (as ``shutil.unpack_archive`` does) into ``folder``,
    refusing members that would land outside it."""
    import os
    import tarfile

    root = os.path.realpath(folder)
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as handle:
            handle.extractall(root)  # noqa: S202  (zipfile drops absolute paths and ".." parts)
        return
    with tarfile.open(archive) as handle:
        members = []
        for member in handle.getmembers():
            target = os.path.realpath(os.path.join(root, member.name))
            if os.path.commonpath([root, target]) != root or member.issym() or member.islnk():
                raise ValueError(f"unsafe archive member {member.name!r} in {archive}")
            members.append(member)
        handle.extractall(root, members=members)  # noqa: S202  (members checked above)


def _archive_metric(file_type: str) -> Any:
    """The metric comparing two extracted files of ``file_type``, as OSWorld picks it."""
    from agent_s.bench.metrics.general import compare_text_file
    from agent_s.bench.metrics.images import compare_images
    from agent_s.bench.metrics.sheets import compare_csv, compare_table
    from agent_s.bench.metrics.slides import compare_pptx_files

    metrics = {
        "text": compare_text_file,
        "pdf": compare_pdfs,
        "docx": compare_docx_files,
        "ppt": compare_pptx_files,
        "image": compare_images,
        "csv": compare_csv,
        "table": compare_table,
    }
    if file_type not in metrics:
        raise ValueError(f"compare_archive cannot compare {file_type!r} files here")
    return metrics[file_type]


def compare_archive(pred_path: Any, gold_path: Any, **options: Any) -> float:
    """Two archives (zip or tar) unpacked beside themselves (``<name>_pred`` /
    ``<name>_gold``) hold the same file names under ``file_path``; the score is the mean of
    the ``file_type`` metric (text, pdf, docx, ppt, image, csv, table) over the pairs, the
    other options passed on to it. No files at all raises (OSWorld divides by their
    number)."""
    import os
    import shutil

    if not pred_path:
        return 0.0
    options = dict(options)
    sub = options.pop("file_path", "")
    metric = _archive_metric(options.pop("file_type", "text"))
    pred_folder = os.path.splitext(str(pred_path))[0] + "_pred"
    gold_folder = os.path.splitext(str(gold_path))[0] + "_gold"
    shutil.rmtree(pred_folder, ignore_errors=True)
    os.makedirs(pred_folder)
    _unpack(str(pred_path), pred_folder)
    if not os.path.exists(gold_folder):  # OSWorld reuses an earlier extraction of the gold
        os.makedirs(gold_folder)
        _unpack(str(gold_path), gold_folder)
    pred_files = sorted(os.listdir(os.path.join(pred_folder, sub)))
    gold_files = sorted(os.listdir(os.path.join(gold_folder, sub)))
    if pred_files != gold_files:
        return 0.0
    total = sum(
        float(
            metric(
                os.path.join(pred_folder, sub, f1), os.path.join(gold_folder, sub, f2), **options
            )
        )
        for f1, f2 in zip(pred_files, gold_files, strict=True)
    )
    return total / len(pred_files)


# -- e-books and web pages ---------------------------------------------------------------------


def _html_lines(raw: bytes) -> list[str]:
    """An XHTML chapter as OSWorld compares it: line breaks dropped, parsed by lxml.html and
    pretty-printed again, one element a line."""
    html = importlib.import_module("lxml.html")  # lxml has no type information
    flat = raw.decode().replace("\n", "").replace("\r", "")
    return str(
        html.tostring(html.fromstring(flat.encode()), pretty_print=True, encoding="unicode")
    ).splitlines()


def _epub_parts(path: str) -> list[tuple[str, list[str]]]:
    """The parts of an EPUB that ``compare_epub`` compares, by name: toc.ncx without its
    navPoint lines, content.opf without its dc:identifier lines, and each .html file. Not a
    zip file: no parts. Missing toc.ncx or content.opf, or an .html file in a folder (OSWorld
    writes each part beside the book and has no such folder), raise as in OSWorld."""
    import os

    try:
        book = zipfile.ZipFile(path)
    except zipfile.BadZipFile:
        return []
    with book:
        parts = [
            (
                "toc.ncx",
                [x for x in book.read("toc.ncx").decode().splitlines() if "navPoint" not in x],
            ),
            (
                "content.opf",
                [
                    x
                    for x in book.read("content.opf").decode().splitlines()
                    if "dc:identifier" not in x
                ],
            ),
        ]
        for name in book.namelist():
            if not name.endswith(".html"):
                continue
            if os.path.dirname(name):
                raise FileNotFoundError(
                    f"{path}: chapter {name} is in a folder; OSWorld cannot compare it"
                )
            parts.append((name, _html_lines(book.read(name))))
    return sorted(parts, key=lambda part: part[0])


def compare_epub(result: Any, expected: Any, **_: Any) -> float:
    """The product of the line similarities (difflib's ratio) of the two books' parts, paired
    in name order (see ``_epub_parts``; pairs run out with the shorter list)."""
    import difflib

    if result is None:
        return 0.0
    score = 1.0
    for (_name, mine), (_gold_name, gold) in zip(
        _epub_parts(str(result)), _epub_parts(str(expected)), strict=False
    ):
        score *= difflib.SequenceMatcher(a=mine, b=gold).ratio()
    return score


def compare_htmls(html_path1: Any, html_path2: Any, **options: Any) -> float:
    """The two pages parsed by BeautifulSoup (lxml's parser) have the same nodes in document
    order, up to the shorter one: texts equal; tags with the same name, stripped text and
    attributes (``ignore_sdnum``: apart from LibreOffice's ``sdnum`` number formats)."""
    from pathlib import Path

    from bs4 import BeautifulSoup, Tag

    soups = [
        BeautifulSoup(Path(str(path)).read_text(encoding="utf-8"), "lxml")
        for path in (html_path1, html_path2)
    ]
    ignore_sdnum = options.get("ignore_sdnum")

    def same(first: Any, second: Any) -> bool:
        if not (isinstance(first, Tag) and isinstance(second, Tag)):
            return bool(first == second)
        if first.name != second.name or first.text.strip() != second.text.strip():
            return False
        if first.attrs == second.attrs:
            return True
        if not ignore_sdnum:
            return False
        attrs1 = {k: v for k, v in first.attrs.items() if k != "sdnum"}
        attrs2 = {k: v for k, v in second.attrs.items() if k != "sdnum"}
        return attrs1 == attrs2

    pairs = zip(soups[0].descendants, soups[1].descendants, strict=False)
    return 1.0 if all(same(a, b) for a, b in pairs) else 0.0
