"""OSWorld's document, image and application metrics on fixture files made here."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from docx import Document
from PIL import Image, ImageDraw
from pptx import Presentation
from pptx.dml.color import RGBColor
from pptx.util import Cm, Pt

from agent_s.bench.metrics import METRICS, call_metric, known_metric
from agent_s.bench.metrics.apps import (
    check_config_status,
    check_thunderbird_prefs,
    compare_urls,
    is_expected_active_tab,
    is_expected_tabs,
    is_extension_installed,
)
from agent_s.bench.metrics.documents import (
    compare_docx_files,
    compare_docx_tables,
    compare_pdfs,
    pdf_text,
)
from agent_s.bench.metrics.images import compare_images, ssim
from agent_s.bench.metrics.slides import compare_pptx_files

NEW_METRICS = (
    "compare_pptx_files",
    "compare_docx_files",
    "compare_pdfs",
    "compare_images",
    "is_extension_installed",
    "is_expected_tabs",
    "is_expected_active_tab",
    "check_config_status",
    "compare_docx_tables",
    "check_thunderbird_prefs",
)


def test_new_metrics_are_registered() -> None:
    for name in NEW_METRICS:
        assert known_metric(name)
        assert name in METRICS


# -- presentations ----------------------------------------------------------------------------


def _pptx(
    path: Path,
    *,
    title: str = "Hello",
    color: str = "FF0000",
    bold: bool = False,
    picture_cm: float | None = None,
    image: Path | None = None,
    note: str = "",
    top_cm: float = 2.0,
    height_cm: float = 2.0,
) -> str:
    prs = Presentation()
    slide = prs.slides.add_slide(prs.slide_layouts[6])  # blank
    box = slide.shapes.add_textbox(Cm(2), Cm(top_cm), Cm(10), Cm(height_cm))
    run = box.text_frame.paragraphs[0].add_run()
    run.text = title
    run.font.size = Pt(24)
    run.font.bold = bold
    run.font.color.rgb = RGBColor.from_string(color)
    if picture_cm is not None and image is not None:
        slide.shapes.add_picture(str(image), Cm(12), Cm(2), Cm(picture_cm), Cm(picture_cm))
    if note:
        slide.notes_slide.notes_text_frame.text = note
    prs.save(str(path))
    return str(path)


def test_compare_pptx_files_same_and_different(tmp_path: Path) -> None:
    gold = _pptx(tmp_path / "gold.pptx")
    assert compare_pptx_files(_pptx(tmp_path / "same.pptx"), gold) == 1.0
    assert compare_pptx_files(_pptx(tmp_path / "text.pptx", title="Hullo"), gold) == 0.0
    assert compare_pptx_files(_pptx(tmp_path / "color.pptx", color="00FF00"), gold) == 0.0
    bold = _pptx(tmp_path / "bold.pptx", bold=True)
    assert compare_pptx_files(bold, gold) == 0.0
    assert compare_pptx_files(bold, gold, examine_font_bold=False) == 1.0
    noted = _pptx(tmp_path / "note.pptx", note="remember")
    assert compare_pptx_files(noted, gold) == 0.0
    assert compare_pptx_files(noted, gold, examine_note=False) == 1.0
    assert compare_pptx_files(None, gold) == 0.0
    assert compare_pptx_files(str(tmp_path / "missing.pptx"), gold) == 0.0


def test_compare_pptx_files_geometry_options(tmp_path: Path) -> None:
    gold = _pptx(tmp_path / "gold.pptx")
    taller = _pptx(tmp_path / "taller.pptx", height_cm=3.0)
    assert compare_pptx_files(taller, gold) == 0.0
    lenient = {"examine_shape": False, "examine_shape_lenient_height": True}
    assert compare_pptx_files(taller, gold, **lenient) == 1.0
    moved = _pptx(tmp_path / "moved.pptx", top_cm=4.0)
    assert compare_pptx_files(moved, gold, **lenient) == 0.0
    assert compare_pptx_files(moved, gold, examine_shape=False) == 1.0
    assert compare_pptx_files(moved, gold, examine_shape=False, _note="ignored") == 1.0
    with pytest.raises(NotImplementedError):
        compare_pptx_files(moved, gold, examine_everything=True)


def test_compare_pptx_files_image_size_with_tolerance(tmp_path: Path) -> None:
    png = tmp_path / "dot.png"
    Image.new("RGB", (20, 20), "blue").save(png)
    gold = _pptx(tmp_path / "gold.pptx", picture_cm=1.0, image=png)
    close = _pptx(tmp_path / "close.pptx", picture_cm=1.005, image=png)
    far = _pptx(tmp_path / "far.pptx", picture_cm=2.0, image=png)
    options = {"examine_shape": False, "examine_image_size": True}
    assert compare_pptx_files(close, gold, **options) == 0.0
    assert compare_pptx_files(close, gold, **options, approximately_tolerance=0.01) == 1.0
    assert compare_pptx_files(far, gold, **options, approximately_tolerance=0.01) == 0.0
    missing_picture = _pptx(tmp_path / "none.pptx")
    assert compare_pptx_files(missing_picture, gold, examine_shape=False) == 0.0  # shape count


def test_compare_pptx_files_bullets_and_strike(tmp_path: Path) -> None:
    from pptx.oxml.ns import qn

    gold = _pptx(tmp_path / "gold.pptx")
    prs = Presentation(gold)
    paragraph = prs.slides[0].shapes[0].text_frame.paragraphs[0]
    paragraph._p.get_or_add_pPr().append(paragraph._p.makeelement(qn("a:buChar"), char="*"))
    bulleted = tmp_path / "bullet.pptx"
    prs.save(str(bulleted))
    assert compare_pptx_files(str(bulleted), gold) == 0.0
    assert compare_pptx_files(str(bulleted), gold, examine_bullets=False) == 1.0
    prs = Presentation(gold)
    prs.slides[0].shapes[0].text_frame.paragraphs[0].runs[0].font._element.set(
        "strike", "sngStrike"
    )
    struck = tmp_path / "strike.pptx"
    prs.save(str(struck))
    assert compare_pptx_files(str(struck), gold) == 0.0
    assert compare_pptx_files(str(struck), gold, examine_strike_through=False) == 1.0


def test_compare_pptx_files_modify_height_needs_shape_off(tmp_path: Path) -> None:
    png = tmp_path / "dot.png"
    Image.new("RGB", (20, 20), "red").save(png)
    gold = _pptx(tmp_path / "gold.pptx", picture_cm=2.0, image=png)
    prs = Presentation(gold)
    picture = prs.slides[0].shapes[1]
    picture.width = Cm(3)  # only the width differs: height is what the task asks for
    wider = tmp_path / "wider.pptx"
    prs.save(str(wider))
    assert compare_pptx_files(str(wider), gold, examine_modify_height=True) == 0.0
    assert (
        compare_pptx_files(str(wider), gold, examine_modify_height=True, examine_shape=False) == 1.0
    )
    prs.slides[0].shapes[1].height = Cm(1)
    prs.save(str(wider))
    assert (
        compare_pptx_files(str(wider), gold, examine_modify_height=True, examine_shape=False) == 0.0
    )


# -- Word and PDF -----------------------------------------------------------------------------


def _docx(path: Path, paragraphs: list[str], table: list[list[str]] | None = None) -> str:
    doc = Document()
    for text in paragraphs:
        doc.add_paragraph(text)
    if table is not None:
        grid = doc.add_table(rows=len(table), cols=len(table[0]))
        for i, row in enumerate(table):
            for j, value in enumerate(row):
                grid.cell(i, j).text = value
    doc.save(str(path))
    return str(path)


def test_compare_docx_files_options(tmp_path: Path) -> None:
    gold = _docx(tmp_path / "gold.docx", ["Hello  world", "Second line"])
    assert (
        compare_docx_files(_docx(tmp_path / "a.docx", ["Hello  world", "Second line"]), gold) == 1.0
    )
    spaced = _docx(tmp_path / "b.docx", ["Hello world", "Second   line"])
    assert compare_docx_files(spaced, gold) == 1.0  # blanks ignored by default
    assert compare_docx_files(spaced, gold, ignore_blanks=False) == 0.0
    swapped = _docx(tmp_path / "c.docx", ["Second line", "Hello  world"])
    assert compare_docx_files(swapped, gold) == 0.0
    assert compare_docx_files(swapped, gold, ignore_order=True) == 1.0
    upper = _docx(tmp_path / "d.docx", ["HELLO  WORLD", "second LINE"])
    assert compare_docx_files(upper, gold) == 0.0
    assert compare_docx_files(upper, gold, ignore_case=True) == 1.0
    gappy = _docx(tmp_path / "e.docx", ["Hello  world", "", "Second line"])
    assert compare_docx_files(gappy, gold, ignore_blanks=False) == 0.0
    assert compare_docx_files(gappy, gold, ignore_blanks=False, delete_empty_lines=True) == 1.0
    typo = _docx(tmp_path / "f.docx", ["Hello  world", "Second lime"])
    fuzzy = compare_docx_files(typo, gold, fuzzy_match=True)
    assert 0.9 < fuzzy < 1.0
    assert compare_docx_files(typo, gold, content_only=True) == pytest.approx(fuzzy)
    assert compare_docx_files(None, gold) == 0.0
    assert compare_docx_files(str(tmp_path / "note.txt"), gold) == 0.0


def test_compare_docx_tables(tmp_path: Path) -> None:
    gold = _docx(tmp_path / "gold.docx", ["t"], [["a", "b"], ["1", "2"]])
    assert (
        compare_docx_tables(_docx(tmp_path / "s.docx", ["x"], [["a", "b"], ["1", " 2 "]]), gold)
        == 1.0
    )
    assert (
        compare_docx_tables(_docx(tmp_path / "v.docx", ["t"], [["a", "b"], ["1", "3"]]), gold)
        == 0.0
    )
    assert compare_docx_tables(_docx(tmp_path / "r.docx", ["t"], [["a", "b"]]), gold) == 0.0
    assert compare_docx_tables(_docx(tmp_path / "n.docx", ["t"]), gold) == 0.0


def _pdf(path: Path, pages: list[str]) -> str:
    """A minimal PDF with one line of Helvetica text per page."""
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b""]
    kids = []
    for text in pages:
        page_no, content_no = len(objects) + 1, len(objects) + 2
        kids.append(f"{page_no} 0 R")
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 300 200] /Contents {content_no} 0 R "
            f"/Resources << /Font << /F1 {len(pages) * 2 + 3} 0 R >> >> >>".encode()
        )
        stream = f"BT /F1 12 Tf 20 100 Td ({text}) Tj ET".encode()
        objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream))
    objects[1] = f"<< /Type /Pages /Kids [{' '.join(kids)}] /Count {len(pages)} >>".encode()
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    path.write_bytes(bytes(out))
    return str(path)


def test_compare_pdfs(tmp_path: Path) -> None:
    gold = _pdf(tmp_path / "gold.pdf", ["Quarterly report", "Revenue grew"])
    assert pdf_text(gold) is not None
    assert "Revenue grew" in (pdf_text(gold) or "")
    same = _pdf(tmp_path / "same.pdf", ["Quarterly report", "Revenue grew"])
    assert compare_pdfs(same, gold) == 1.0
    other = _pdf(tmp_path / "other.pdf", ["Quarterly report", "Revenue fell"])
    assert 0.5 < compare_pdfs(other, gold) < 1.0
    assert compare_pdfs([same, other], [gold, gold]) == pytest.approx(
        (1.0 + compare_pdfs(other, gold)) / 2
    )
    not_pdf = tmp_path / "x.pdf"
    not_pdf.write_text("hello", encoding="utf-8")
    assert compare_pdfs(str(not_pdf), gold) == 0.0
    assert compare_pdfs(None, gold) == 0.0


# -- images ------------------------------------------------------------------------------------


def _picture(path: Path, size: tuple[int, int] = (64, 48), box: int = 10) -> str:
    image = Image.new("RGB", size, "white")
    ImageDraw.Draw(image).rectangle([box, box, box + 20, box + 15], fill="black")
    image.save(path)
    return str(path)


def test_ssim_known_values() -> None:
    rng = np.random.default_rng(7)
    a = rng.integers(0, 256, (32, 40), dtype=np.uint8)
    assert ssim(a, a) == pytest.approx(1.0)
    inverted = (255 - a).astype(np.uint8)
    assert ssim(a, inverted) < 0.0  # anti-correlated
    flat = np.full((10, 10), 100, dtype=np.uint8)
    assert ssim(flat, flat) == pytest.approx(1.0)
    # a flat picture against a shifted flat one: only the luminance term, by hand
    c1 = (0.01 * 255) ** 2
    want = (2 * 100 * 120 + c1) / (100**2 + 120**2 + c1)
    assert ssim(flat, np.full((10, 10), 120, dtype=np.uint8)) == pytest.approx(want)
    with pytest.raises(ValueError, match="window"):
        ssim(np.zeros((5, 5), np.uint8), np.zeros((5, 5), np.uint8))


def test_compare_images(tmp_path: Path) -> None:
    gold = _picture(tmp_path / "gold.png")
    assert compare_images(_picture(tmp_path / "same.png"), gold) == pytest.approx(1.0)
    moved = compare_images(_picture(tmp_path / "moved.png", box=20), gold)
    assert 0.0 < moved < 0.95
    big = tmp_path / "big.png"  # the same picture at twice the size: scaled down to compare
    Image.open(gold).resize((128, 96), Image.Resampling.NEAREST).save(big)
    assert compare_images(str(big), gold) > 0.9
    # reference_base_result: what the unedited file scores; less than base + 0.01 gives 0
    assert (
        compare_images(_picture(tmp_path / "m.png", box=20), gold, reference_base_result=moved)
        == 0.0
    )
    scaled = compare_images(gold, gold, reference_base_result=0.5)
    assert scaled == pytest.approx(1.0)
    assert compare_images(None, gold) == 0.0
    broken = tmp_path / "broken.png"
    broken.write_text("no picture", encoding="utf-8")
    assert compare_images(str(broken), gold) == 0.0


# -- applications ------------------------------------------------------------------------------


def test_is_extension_installed() -> None:
    listing = "ms-python.python\nmattn.lisp\n"
    assert is_extension_installed(listing, {"type": "contain", "expected": "mattn.lisp"}) == 1.0
    assert is_extension_installed(listing, {"type": "contain", "expected": "a.b"}) == 0.0
    assert is_extension_installed(listing, {"type": "not_contain", "expected": "a.b"}) == 1.0
    assert is_extension_installed(None, {"type": "contain", "expected": "a.b"}) == 0.0
    with pytest.raises(NotImplementedError):
        is_extension_installed(listing, {"type": "regex", "expected": "a"})


def test_compare_urls_normalisation() -> None:
    assert compare_urls("https://www.Apple.com/", "https://apple.com")
    assert compare_urls("docs.python.org/3/", "http://docs.python.org/3")
    assert not compare_urls("https://apple.com", "http://apple.com")
    assert not compare_urls("https://a.com/x?q=1", "https://a.com/x?q=2")
    assert compare_urls("https://a.com/x?q=1", "https://a.com/x?q=2", full=False)
    assert not compare_urls(None, "https://a.com")


def test_is_expected_tabs() -> None:
    rule = {"type": "url", "urls": ["https://www.lonelyplanet.com", "https://www.airbnb.com"]}
    tabs = [
        {"title": "Airbnb", "url": "https://www.airbnb.com/"},
        {"title": "Lonely Planet", "url": "https://www.lonelyplanet.com/"},
    ]
    assert is_expected_tabs(tabs, rule) == 1.0
    assert is_expected_tabs(tabs[:1], rule) == 0.0
    extra = [*tabs, {"title": "x", "url": "https://example.com"}]
    assert is_expected_tabs(extra, rule) == 0.0
    assert is_expected_tabs(None, rule) == 0.0


def test_is_expected_active_tab() -> None:
    rule = {"type": "url", "url": "https://www.drugs.com/npc/"}
    assert is_expected_active_tab({"url": "https://www.drugs.com/npc"}, rule) == 1.0
    assert is_expected_active_tab("https://drugs.com/npc/", rule) == 1.0
    assert is_expected_active_tab({"url": "https://www.drugs.com/npp/"}, rule) == 0.0
    assert is_expected_active_tab(None, rule) == 0.0


def test_check_config_status(tmp_path: Path) -> None:
    gimprc = tmp_path / "gimprc"
    gimprc.write_text(
        '# GIMP gimprc\n\n(theme "Light")\n(undo-levels 100)\n(default-grid (spacing 10 10))\n',
        encoding="utf-8",
    )
    assert check_config_status(str(gimprc), {"key": "theme", "value": '"Light"'}) == 1.0
    assert check_config_status(str(gimprc), {"key": "theme", "value": '"Dark"'}) == 0.0
    assert check_config_status(str(gimprc), {"key": "undo-levels", "value": "100"}) == 1.0
    two = {"key": ["default-grid", "(spacing"], "value": "10"}
    assert check_config_status(str(gimprc), two) == 1.0
    assert check_config_status(str(tmp_path / "none"), {"key": "theme", "value": "x"}) == 0.0


def test_check_thunderbird_prefs(tmp_path: Path) -> None:
    prefs = tmp_path / "prefs.js"
    prefs.write_text(
        "// Mozilla User Preferences\n"
        'user_pref("mail.server.default.applyIncomingFilters", true);\n'
        'user_pref("mail.imap.use_status_for_biff", false);\n'
        'user_pref("extensions.activeThemeID", "thunderbird-compact-dark@mozilla.org");\n'
        'user_pref("mail.identity.id1.htmlSigText", "Anonym\\nXYZ Lab");\n',
        encoding="utf-8",
    )
    path = str(prefs)
    expect = {
        "mail.server.default.applyIncomingFilters": {"method": "eq", "ref": True},
        "mail.imap.use_status_for_biff": {"method": "eq", "ref": False},
    }
    unexpect = {"mail.server.default.autosync_offline_stores": {"method": "eq", "ref": False}}
    assert check_thunderbird_prefs(path, {"expect": expect, "unexpect": unexpect}) == 1.0
    assert (
        check_thunderbird_prefs(
            path, {"expect": {"extensions.activeThemeID": {"method": "re", "ref": "dark"}}}
        )
        == 1.0
    )
    sig = {"mail.identity.id1.htmlSigText": {"method": "re.S", "ref": "Anonym\\nXYZ Lab"}}
    assert check_thunderbird_prefs(path, {"expect": sig}) == 1.0
    unset = {"mail.not.set": {"method": "eq", "ref": True}}
    assert check_thunderbird_prefs(path, {"expect": unset}) == 0.0
    hit = {"mail.imap.use_status_for_biff": {"method": "eq", "ref": False}}
    assert check_thunderbird_prefs(path, {"unexpect": hit}) == 0.0
    assert check_thunderbird_prefs(None, {"expect": expect}) == 0.0


def test_call_metric_passes_rules_as_expected(tmp_path: Path) -> None:
    rule = {"type": "url", "urls": ["https://github.com"]}
    assert call_metric("is_expected_tabs", [{"url": "https://github.com/"}], rule, {}) == 1.0
    gold = _docx(tmp_path / "g.docx", ["x"])
    assert call_metric("compare_docx_files", gold, gold, {"ignore_blanks": False}) == 1.0
