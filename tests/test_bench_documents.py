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
    # OSWorld's metric never reads examine_shape_lenient_height: with the shape check off,
    # a taller box and a moved one both pass
    lenient = {"examine_shape": False, "examine_shape_lenient_height": True}
    assert compare_pptx_files(taller, gold, **lenient) == 1.0
    moved = _pptx(tmp_path / "moved.pptx", top_cm=4.0)
    assert compare_pptx_files(moved, gold, **lenient) == 1.0
    assert compare_pptx_files(moved, gold, examine_shape=False, _note="ignored") == 1.0
    # options OSWorld does not know are ignored there: the shape check still fails the move
    assert compare_pptx_files(moved, gold, examine_everything=True) == 0.0


def test_compare_pptx_files_image_size_with_tolerance(tmp_path: Path) -> None:
    png = tmp_path / "dot.png"
    Image.new("RGB", (20, 20), "blue").save(png)
    gold = _pptx(tmp_path / "gold.pptx", picture_cm=1.0, image=png)
    nearly = _pptx(tmp_path / "nearly.pptx", picture_cm=1.004, image=png)
    close = _pptx(tmp_path / "close.pptx", picture_cm=1.008, image=png)
    far = _pptx(tmp_path / "far.pptx", picture_cm=2.0, image=png)
    options = {"examine_shape": False, "examine_image_size": True}
    # sizes are equal within a relative 0.005 of the larger one unless told otherwise
    assert compare_pptx_files(nearly, gold, **options) == 1.0
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
    # a picture holds no text: the plain shape check skips it, modify_height sees its height
    assert compare_pptx_files(str(wider), gold, examine_modify_height=True) == 1.0
    assert (
        compare_pptx_files(str(wider), gold, examine_modify_height=True, examine_shape=False) == 1.0
    )
    prs.slides[0].shapes[1].height = Cm(1)
    prs.save(str(wider))
    assert (
        compare_pptx_files(str(wider), gold, examine_modify_height=True, examine_shape=False) == 0.0
    )

    def labelled_freeform(path: Path, width_cm: float) -> str:
        deck = Presentation()
        slide = deck.slides.add_slide(deck.slide_layouts[6])
        builder = slide.shapes.build_freeform(Cm(2), Cm(2))
        builder.add_line_segments([(Cm(2 + width_cm), Cm(2)), (Cm(2), Cm(4))])
        builder.convert_to_shape().text_frame.text = "Arrow"
        deck.save(str(path))
        return str(path)

    # a freeform with text is still size-checked first: modify_height needs examine_shape off
    shape_gold = labelled_freeform(tmp_path / "free_gold.pptx", 4)
    stretched = labelled_freeform(tmp_path / "stretched.pptx", 6)
    assert compare_pptx_files(stretched, shape_gold, examine_modify_height=True) == 0.0
    options = {"examine_modify_height": True, "examine_shape": False}
    assert compare_pptx_files(stretched, shape_gold, **options) == 1.0


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
    assert compare_urls("docs.python.org/3", "http://docs.python.org/3")
    assert not compare_urls("docs.python.org/3/", "http://docs.python.org/3")  # only a lone /
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
    # OSWorld strips a lone "/" path only: /npc and /npc/ differ
    assert is_expected_active_tab({"url": "https://www.drugs.com/npc"}, rule) == 0.0
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


# -- Writer formatting metrics ------------------------------------------------------------------


def _styled_docx(path: Path, runs: list[list[tuple[str, dict[str, object]]]]) -> str:
    """A .docx with one paragraph per item of ``runs``; each run (text, font settings)."""
    from docx.shared import Pt as DocxPt

    doc = Document()
    for paragraph_runs in runs:
        paragraph = doc.add_paragraph()
        for text, settings in paragraph_runs:
            run = paragraph.add_run(text)
            for key, value in settings.items():
                setattr(run.font, key, DocxPt(value) if key == "size" else value)
    doc.save(str(path))
    return str(path)


def test_writer_run_formatting_metrics(tmp_path: Path) -> None:
    from agent_s.bench.metrics.writer import (
        check_italic_font_size_14,
        compare_font_names,
        compare_subscript_contains,
        evaluate_strike_through_last_paragraph,
    )

    plain = [[("H", {}), ("2", {}), ("O", {})], [("the end", {})]]
    gold = _styled_docx(tmp_path / "gold.docx", plain)
    formatted = [
        [("H", {"italic": True, "size": 14}), ("2", {"subscript": True}), ("O", {})],
        [("the end", {"strike": True})],
    ]
    result = _styled_docx(tmp_path / "result.docx", formatted)
    # subscript: some run pair is subscript in both files; the gold has none
    assert compare_subscript_contains(result, result) == 1.0
    assert compare_subscript_contains(result, gold) == 0.0
    # the last paragraph's runs all struck through, and the text unchanged
    assert evaluate_strike_through_last_paragraph(result, gold) == 1.0
    assert evaluate_strike_through_last_paragraph(gold, gold) == 0.0
    # italic runs are 14 pt
    assert check_italic_font_size_14(result, gold) == 1.0
    small = [[("H", {"italic": True, "size": 12}), ("2", {}), ("O", {})], [("the end", {})]]
    assert check_italic_font_size_14(_styled_docx(tmp_path / "small.docx", small), gold) == 0.0
    # every run names the font (an inherited font is None and fails)
    named = _styled_docx(tmp_path / "named.docx", [[("a", {"name": "Arial"})]])
    assert compare_font_names(named, {"font_name": "Arial"}) == 1.0
    assert compare_font_names(gold, {"font_name": "Arial"}) == 0.0
    assert compare_font_names(None, {"font_name": "Arial"}) == 0.0


def test_writer_paragraph_metrics(tmp_path: Path) -> None:
    from docx.enum.text import WD_BREAK, WD_PARAGRAPH_ALIGNMENT

    from agent_s.bench.metrics.writer import (
        compare_line_spacing,
        contains_page_break,
        has_page_numbers_in_footers,
        is_first_line_centered,
    )

    def doc(path: Path, *, spacing: float | None, centred: bool, breaks: int, footer: str) -> str:
        document = Document()
        first = document.add_paragraph("Title")
        if centred:
            first.alignment = WD_PARAGRAPH_ALIGNMENT.CENTER
        body = document.add_paragraph("Body text")
        body.paragraph_format.line_spacing = spacing
        for _ in range(breaks):
            body.add_run().add_break(WD_BREAK.PAGE)
        document.sections[0].footer.paragraphs[0].text = footer
        document.save(str(path))
        return str(path)

    gold = doc(tmp_path / "g.docx", spacing=2.0, centred=True, breaks=1, footer="Page 1")
    other = doc(tmp_path / "o.docx", spacing=1.5, centred=False, breaks=2, footer="Page")
    assert compare_line_spacing(gold, gold) == 1.0
    assert compare_line_spacing(other, gold) == 0.0  # same text, other spacing
    assert is_first_line_centered(gold) == 1.0
    assert is_first_line_centered(other) == 0.0
    assert contains_page_break(gold, {}) == 1.0
    assert contains_page_break(other, {"page_break_count": 1}) == 0.0  # two breaks
    assert contains_page_break(other, {"page_break_count": 2}) == 1.0
    assert has_page_numbers_in_footers(gold) == 1.0
    assert has_page_numbers_in_footers(other) == 0.0  # no digit in the footer


def test_writer_tabstops_and_new_lines_and_references(tmp_path: Path) -> None:
    from docx.enum.text import WD_TAB_ALIGNMENT
    from docx.shared import Inches

    from agent_s.bench.metrics.writer import (
        check_tabstops,
        compare_docx_files_and_ignore_new_lines,
        compare_references,
    )

    def tabbed(path: Path, position: float) -> str:
        document = Document()
        for text in ("one two\tthree", "four five\tsix"):
            paragraph = document.add_paragraph(text)
            paragraph.paragraph_format.tab_stops.add_tab_stop(
                Inches(position), WD_TAB_ALIGNMENT.RIGHT
            )
        document.save(str(path))
        return str(path)

    gold = tabbed(tmp_path / "g.docx", 6.0)
    assert check_tabstops(gold, gold) == 1.0
    # 0.5 inch off on each paragraph: 1 - 0.5 / text width (8.5 - 2 * 1.25 = 6 inches here)
    near = tabbed(tmp_path / "n.docx", 5.5)
    assert check_tabstops(near, gold) == pytest.approx(1 - 0.5 / 6.0)
    assert check_tabstops(gold, gold, word_number_split_by_tabstop=2) == 1.0
    assert check_tabstops(gold, gold, word_number_split_by_tabstop=3) == 0.0

    spaced = _docx(tmp_path / "s.docx", ["a", "", "b"])
    joined = _docx(tmp_path / "j.docx", ["a", "b"])
    assert compare_docx_files_and_ignore_new_lines(spaced, joined) == 1.0
    assert compare_docx_files_and_ignore_new_lines(spaced, joined, ignore_blanks=False) == 1.0
    assert compare_docx_files_and_ignore_new_lines(spaced, _docx(tmp_path / "x.docx", ["a"])) == 0

    refs = ["Intro", "References", "Smith 2020. A paper.", "Doe 2021. Another."]
    gold_refs = _docx(tmp_path / "r.docx", refs)
    assert compare_references(gold_refs, gold_refs) == 1.0
    typo = _docx(tmp_path / "t.docx", [*refs[:3], "Doe 2021. Anothr."])
    # mean ratio r of the two references, rescaled above the 0.5 base: (r - 0.5) / 0.5
    from rapidfuzz import fuzz

    r = (1 + fuzz.ratio("Doe 2021. Anothr.", "Doe 2021. Another.") / 100) / 2
    assert compare_references(typo, gold_refs) == pytest.approx((r - 0.5) / 0.5)
    assert compare_references(_docx(tmp_path / "n.docx", ["Intro"]), gold_refs) == 0.0


def test_writer_default_font_and_highlight(tmp_path: Path) -> None:
    import zipfile

    from agent_s.bench.metrics.writer import check_highlighted_words, find_default_font

    xcu = tmp_path / "registrymodifications.xcu"
    xcu.write_text(
        '<?xml version="1.0"?><oor:items xmlns:oor="http://openoffice.org/2001/registry">'
        '<item oor:path="/org.openoffice.Office.Writer/DefaultFont">'
        '<prop oor:name="Standard" oor:op="fuse"><value>Times New Roman</value></prop></item>'
        "</oor:items>",
        encoding="utf-8",
    )
    assert find_default_font(str(xcu), {"font_name": "Times New Roman"}) == 1.0
    assert find_default_font(str(xcu), {"font_name": "Arial"}) == 0.0

    def odt(path: Path, style_colour: str) -> str:
        ns = (
            'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
            'xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0" '
            'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
            'xmlns:fo="urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0"'
        )
        content = (
            f"<office:document-content {ns}><office:automatic-styles>"
            '<style:style style:name="T1" style:family="text">'
            f'<style:text-properties fo:background-color="{style_colour}"/></style:style>'
            "</office:automatic-styles><office:body><office:text>"
            '<text:p>Some <text:span text:style-name="T1">marked</text:span> words</text:p>'
            "</office:text></office:body></office:document-content>"
        )
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("content.xml", content)
        return str(path)

    highlighted = odt(tmp_path / "h.odt", "#ffff00")
    cleared = odt(tmp_path / "c.odt", "transparent")
    assert check_highlighted_words(cleared, highlighted) == 1.0  # same text, no yellow left
    assert check_highlighted_words(highlighted, highlighted) == 0.0


def test_writer_images_and_train_records(tmp_path: Path) -> None:
    from docx.shared import Inches

    from agent_s.bench.metrics.writer import compare_docx_images, compare_unique_train_records

    def with_picture(path: Path, colour: str) -> str:
        png = tmp_path / f"{colour}.png"
        Image.new("RGB", (8, 8), colour).save(png)
        document = Document()
        document.add_picture(str(png), width=Inches(1))
        document.save(str(path))
        return str(path)

    red, blue = with_picture(tmp_path / "r.docx", "red"), with_picture(tmp_path / "b.docx", "blue")
    assert compare_docx_images(red, with_picture(tmp_path / "r2.docx", "red")) == 1.0
    assert compare_docx_images(red, blue) == 0.0

    initial = _docx(
        tmp_path / "i.docx", ["08:00, T1, S1, 1", "08:05, T1, S1, 1", "09:00, T2, S2, 3"]
    )
    gold = _docx(tmp_path / "g.docx", ["08:00, T1, S1, 1", "09:00, T2, S2, 3"])
    done = _docx(tmp_path / "d.docx", ["08:05, T1, S1, 1", "09:00, T2, S2, 3"])
    twice = _docx(tmp_path / "t.docx", ["08:00, T1, S1, 1", "08:05, T1, S1, 1"])
    assert compare_unique_train_records(done, [gold, initial]) == 1.0
    assert compare_unique_train_records(twice, [gold, initial]) == 0.0  # T1 twice
    assert compare_unique_train_records(done, gold) == 0.0  # needs [gold, initial]


# -- Impress metrics ------------------------------------------------------------------------------


def test_impress_file_metrics(tmp_path: Path) -> None:
    from agent_s.bench.metrics.impress import (
        check_image_stretch_and_center,
        check_slide_orientation_Portrait,
        check_strikethrough,
        check_transition,
        evaluate_presentation_fill_to_rgb_distance,
    )

    gold = Path(_pptx(tmp_path / "gold.pptx"))
    assert check_slide_orientation_Portrait(str(gold)) == 0.0  # 10 x 7.5 inches
    prs = Presentation(str(gold))
    prs.slide_width, prs.slide_height = Cm(19), Cm(25)
    prs.slides[0].shapes[0].text_frame.paragraphs[0].runs[0].font._element.set(
        "strike", "sngStrike"
    )
    transition = prs.slides[0].element.makeelement(
        "{http://schemas.openxmlformats.org/presentationml/2006/main}transition", {}
    )
    transition.append(
        transition.makeelement(
            "{http://schemas.openxmlformats.org/presentationml/2006/main}dissolve", {}
        )
    )
    prs.slides[0].element.append(transition)
    prs.slides[0].background.fill.solid()
    prs.slides[0].background.fill.fore_color.rgb = RGBColor(0, 0, 255)
    edited = tmp_path / "edited.pptx"
    prs.save(str(edited))
    assert check_slide_orientation_Portrait(str(edited)) == 1.0
    where = {"slide_index_s": [0], "shape_index_s": [0], "paragraph_index_s": [0]}
    assert check_strikethrough(str(edited), where) == 1.0
    assert check_strikethrough(str(gold), where) == 0.0
    assert check_strikethrough(str(edited), {**where, "shape_index_s": [5]}) == 0.0  # no shape
    assert check_transition(str(edited), {"slide_idx": 0, "transition_type": "dissolve"}) == 1.0
    assert check_transition(str(gold), {"slide_idx": 0, "transition_type": "dissolve"}) == 0.0
    assert check_transition(str(edited), {"slide_idx": 3, "transition_type": "dissolve"}) == 0.0
    # the one slide's background is blue: distance 0 from blue, and 1 - 255*sqrt(2)/(255*sqrt(3))
    # from red; a slide still in its original colour counts as the farthest
    blue, red = {"rgb": [0, 0, 255]}, {"rgb": [255, 0, 0]}
    assert evaluate_presentation_fill_to_rgb_distance(str(edited), blue) == pytest.approx(1.0)
    assert evaluate_presentation_fill_to_rgb_distance(str(edited), red) == pytest.approx(
        1 - (2 / 3) ** 0.5
    )
    same = {**blue, "original_rgb": [0, 0, 255]}
    assert evaluate_presentation_fill_to_rgb_distance(str(edited), same) == 0.0

    png = tmp_path / "p.png"
    Image.new("RGB", (16, 9), "green").save(png)
    pictured = Presentation()
    slide = pictured.slides.add_slide(pictured.slide_layouts[6])
    slide.shapes.add_picture(str(png), Cm(2), Cm(2), Cm(4), Cm(3))
    original = tmp_path / "orig.pptx"
    pictured.save(str(original))
    picture = pictured.slides[0].shapes[0]
    picture.left, picture.top = 0, 0
    picture.width, picture.height = pictured.slide_width, pictured.slide_height
    stretched = tmp_path / "stretched.pptx"
    pictured.save(str(stretched))
    assert check_image_stretch_and_center(str(stretched), str(original)) == 1.0
    assert check_image_stretch_and_center(str(original), str(original)) == 0.0


def test_impress_settings_and_panel(tmp_path: Path) -> None:
    from agent_s.bench.metrics.impress import (
        check_auto_saving_time,
        check_left_panel,
        check_page_number_colors,
        check_presenter_console_disable,
    )

    def xcu(body: str) -> str:
        path = tmp_path / "registrymodifications.xcu"
        path.write_text(
            '<?xml version="1.0"?><oor:items xmlns:oor="http://openoffice.org/2001/registry">'
            f"{body}</oor:items>",
            encoding="utf-8",
        )
        return str(path)

    presenter = (
        '<item oor:path="/org.openoffice.Office.Impress/Misc/Start">'
        '<prop oor:name="EnablePresenterScreen" oor:op="fuse"><value>{}</value></prop></item>'
    )
    assert check_presenter_console_disable(xcu(presenter.format("false"))) == 1.0
    assert check_presenter_console_disable(xcu(presenter.format("true"))) == 0.0
    assert check_presenter_console_disable(xcu("")) == 0.0
    saving = (
        '<item oor:path="/org.openoffice.Office.Common/Save/Document">'
        '<prop oor:name="AutoSaveTimeIntervall" oor:op="fuse"><value>3</value></prop></item>'
    )
    assert check_auto_saving_time(xcu(saving), {"minutes": 3}) == 1.0
    assert check_auto_saving_time(xcu(saving), {"minutes": 5}) == 0.0
    assert check_auto_saving_time(xcu(""), {"minutes": 3}) == 0.0

    tree = (
        '<desktop-frame><application name="soffice"><document-frame name="Slides View"/>'
        "</application></desktop-frame>"
    )
    assert check_left_panel(tree) == 1.0
    assert check_left_panel(tree.replace("Slides View", "Outline")) == 0.0

    import zipfile

    def deck_with_master_colours(path: Path, colours: list[str]) -> str:
        fills = "".join(f'<a:solidFill><a:srgbClr val="{c}"/></a:solidFill>' for c in colours)
        master = (
            '<p:sldMaster xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main" '
            'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main">'
            f"{fills}</p:sldMaster>"
        )
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("ppt/slideMasters/slideMaster1.xml", master)
        return str(path)

    # OSWorld reads "RRGGBB" from its second character: "FF0000" is read as (240, 0, 0)
    red = deck_with_master_colours(tmp_path / "red.pptx", ["000000", "FF0000", "FFFFFF"])
    assert check_page_number_colors(red, {"color": "red"}) == 1.0
    assert check_page_number_colors(red, {"color": "blue"}) == 0.0
    # "0000FF" is read as (0, 15, 15) (characters 1-2, 3-4, 5-6): not blue by OSWorld's test
    blue = deck_with_master_colours(tmp_path / "blue.pptx", ["0000FF", "FFFFFF"])
    assert check_page_number_colors(blue, {"color": "blue"}) == 0.0


def test_compare_archive(tmp_path: Path) -> None:
    import io
    import tarfile
    import zipfile

    from agent_s.bench.metrics.documents import compare_archive

    def zipped(name: str, members: dict[str, str]) -> str:
        path = tmp_path / name
        with zipfile.ZipFile(path, "w") as handle:
            for member, text in members.items():
                handle.writestr(member, text)
        return str(path)

    gold = zipped("gold.zip", {"notes/a.txt": "alpha\n", "notes/b.txt": "beta\n"})
    same = zipped("same.zip", {"notes/a.txt": "alpha\n", "notes/b.txt": "beta\n"})
    half = zipped("half.zip", {"notes/a.txt": "alpha\n", "notes/b.txt": "gamma\n"})
    # unpacked beside the archives; the text metric per file pair, averaged
    assert compare_archive(same, gold, file_path="notes") == 1.0
    assert (tmp_path / "same_pred" / "notes" / "a.txt").is_file()
    assert compare_archive(half, gold, file_path="notes", file_type="text") == 0.5
    other = zipped("other.zip", {"notes/a.txt": "alpha\n"})
    assert compare_archive(other, gold, file_path="notes") == 0.0  # different file names
    assert compare_archive(None, gold) == 0.0

    tarred = tmp_path / "pdf.tar.gz"
    with tarfile.open(tarred, "w:gz") as handle:
        for member, text in {"notes/a.txt": "alpha\n", "notes/b.txt": "beta\n"}.items():
            info = tarfile.TarInfo(member)
            info.size = len(text)
            handle.addfile(info, io.BytesIO(text.encode()))
    assert compare_archive(str(tarred), gold, file_path="notes") == 1.0
    escaping = tmp_path / "evil.tar"
    with tarfile.open(escaping, "w") as handle:
        info = tarfile.TarInfo("../outside.txt")
        info.size = 1
        handle.addfile(info, io.BytesIO(b"x"))
    with pytest.raises(ValueError, match="unsafe archive member"):
        compare_archive(str(escaping), gold)
    assert not (tmp_path / "outside.txt").exists()


def test_simple_image_metrics(tmp_path: Path) -> None:
    from agent_s.bench.metrics.images import (
        check_image_file_size,
        check_image_size,
        check_textbox_on_leftside,
        check_triangle_position,
        compare_image_list,
    )

    a = _picture(tmp_path / "a.png")
    b = _picture(tmp_path / "b.png")
    c = _picture(tmp_path / "c.png", box=20)
    assert compare_image_list([a], [b]) == 1.0
    assert compare_image_list(a, c) == 0.0
    assert compare_image_list([None], [b]) == 0.0
    assert check_image_size(a, {"width": 64, "height": 48}) == 1.0
    assert check_image_size(a, {"height": 50}) == 0.0
    size = Path(a).stat().st_size
    assert check_image_file_size(a, {"max_size": size + 1}) == 1.0
    assert check_image_file_size(a, {"max_size": size}) == 0.0

    text = Image.new("RGB", (200, 50), "white")
    ImageDraw.Draw(text).rectangle((5, 10, 60, 30), fill="black")
    text.save(tmp_path / "left.png")
    assert check_textbox_on_leftside(str(tmp_path / "left.png")) == 1.0  # x=5 < 10
    moved = Image.new("RGB", (200, 50), "white")
    ImageDraw.Draw(moved).rectangle((50, 10, 100, 30), fill="black")
    moved.save(tmp_path / "right.png")
    assert check_textbox_on_leftside(str(tmp_path / "right.png")) == 0.0

    def triangle(path: Path, offset: int) -> str:
        # white background (most pixels), a red triangle, a blue dot: the triangle's red is
        # the second-rarest colour, the one OSWorld's metric locates
        image = Image.new("RGB", (100, 100), "white")
        draw = ImageDraw.Draw(image)
        draw.polygon([(40 + offset, 40), (60 + offset, 40), (50 + offset, 60)], fill="red")
        draw.point((1, 1), fill="blue")
        image.save(path)
        return str(path)

    assert check_triangle_position(triangle(tmp_path / "mid.png", 0)) == 1.0
    assert check_triangle_position(triangle(tmp_path / "off.png", 30)) == 0.0
