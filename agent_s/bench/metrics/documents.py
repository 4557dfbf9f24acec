"""OSWorld's document metrics: Word files (text, tables) and PDFs. Each returns a float in
[0, 1]; a missing or unreadable file scores 0.

Fuzzy scores are rapidfuzz's ``fuzz.ratio / 100``, as OSWorld's. PDF text comes from pypdf
(OSWorld uses PyMuPDF); both read the same text runs, spacing may differ slightly.
"""

from __future__ import annotations

import re
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
    except (PackageNotFoundError, OSError, KeyError, ValueError):
        return None


def _squash(paragraphs: list[str], ignore_case: bool) -> str:
    text = re.sub(r"\s+", " ", "\n".join(paragraphs)).strip()
    return text.lower() if ignore_case else text


def compare_docx_files(file1: Any, file2: Any, **options: Any) -> float:
    """The paragraph text of two .docx files.

    ``ignore_blanks`` (default on): the whole text with runs of whitespace as one space must
    be equal (``fuzzy_match``: their similarity is the score); off: paragraph by paragraph.
    ``content_only``: the similarity of the whitespace-squashed texts. ``ignore_order`` sorts
    the paragraphs first, ``delete_empty_lines`` drops blank ones, ``ignore_case`` lowers.
    """
    ignore_blanks = options.get("ignore_blanks", True)
    ignore_case = options.get("ignore_case", False)
    fuzzy_match = options.get("fuzzy_match", False)
    doc1, doc2 = _docx(file1), _docx(file2)
    if doc1 is None or doc2 is None:
        return 0.0
    paras1 = [p.text for p in doc1.paragraphs]
    paras2 = [p.text for p in doc2.paragraphs]
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
    """All pages' text, stripped; ``None`` when the file is missing or not a PDF."""
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    if not path:
        return None
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
