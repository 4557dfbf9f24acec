"""The model-free control detector (grounding/controls.py) and OCR grounding through it.

On a drawn screen whose buttons are known, and on real galculator and gtk3-demo windows on the
session's virtual desktop, where the ground truth is the accessibility tree (read independently
of the grounder under test) and the clicks must compute a result in the calculator.
"""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path
from typing import Any

import pytest
from PIL import Image, ImageChops, ImageDraw, ImageFont
from typer.testing import CliRunner

from agent_s.cli.main import app
from agent_s.desktop.base import Screenshot
from agent_s.desktop.ops import Point
from agent_s.grounding import AccessibilityTree, NotFound, Observation, OcrGrounder, OcrReader
from agent_s.grounding.chain import explain
from agent_s.grounding.controls import Control, ControlDetector, detect, screen_fonts
from agent_s.grounding.types import Box

LABELS = ("=", ".", "-", "(", ")", "+", "/", "*", "%", "7", "0", "AC", "MR", "+/-", "<-")


def _keypad() -> tuple[Image.Image, dict[str, Box]]:
    """A light window with outlined buttons labelled in the screen's own font, a text field
    (an outline with nothing in it) and a line of plain text."""
    image = Image.new("RGB", (700, 400), (246, 245, 244))
    draw = ImageDraw.Draw(image)
    font = ImageFont.truetype(screen_fonts()[0], 13)
    boxes: dict[str, Box] = {}
    for i, label in enumerate(LABELS):
        left, top = 40 + (i % 5) * 70, 60 + (i // 5) * 50
        rect = (left, top, left + 59, top + 33)
        draw.rounded_rectangle(rect, radius=3, fill=(237, 237, 237), outline=(180, 180, 180))
        width = draw.textlength(label, font=font)
        draw.text((left + (60 - width) / 2, top + 9), label, font=font, fill=(46, 52, 54))
        boxes[label] = Box.from_corners(*rect)
    draw.rectangle((40, 230, 380, 256), fill=(255, 255, 255), outline=(160, 160, 160))
    boxes["field"] = Box.from_corners(40, 230, 380, 256)
    draw.text((420, 70), "Scientific mode", font=font, fill=(46, 52, 54))
    return image, boxes


def test_detect_finds_each_outlined_button_and_reads_its_glyphs() -> None:
    image, boxes = _keypad()
    controls = detect(image)
    assert all(isinstance(c, Control) for c in controls)
    for label in LABELS:
        truth = boxes[label]
        found = [c for c in controls if c.text == label]
        assert len(found) == 1, (label, [c for c in controls if truth.contains(c.region.center)])
        (control,) = found
        assert control.kind == "button"
        assert control.read_by == "glyphs"
        assert 0.6 <= control.score <= 1.0
        left, top, right, bottom = control.box  # image pixels, right and bottom exclusive
        assert abs(left - truth.x) <= 2, (label, control.box)
        assert abs(top - truth.y) <= 2, (label, control.box)
        assert abs(right - (truth.right + 1)) <= 2, (label, control.box)
        assert abs(bottom - (truth.bottom + 1)) <= 2, (label, control.box)
        assert truth.contains(Point(*control.center))
    field = [c for c in controls if boxes["field"].contains(c.region.center)]
    assert [(c.kind, c.text) for c in field] == [("box", "")]
    # without OCR words, plain text outside every outline is not a control
    assert not [c for c in controls if c.box[0] >= 400]


def test_ocr_words_outside_boxes_become_text_controls() -> None:
    image, boxes = _keypad()
    grounder = OcrGrounder()
    observation = Observation(Screenshot(image))
    controls = grounder.detected(observation)
    texts = [c for c in controls if c.kind == "text"]
    assert any(c.text == "Scientific" for c in texts), texts
    assert all(c.read_by == "ocr" for c in texts)
    # one detection per screenshot, whatever is asked of it
    for expression in ("=", "the . button", "the AC button", "Scientific mode", "7"):
        result = grounder.ground(expression, observation)
        label = expression.removeprefix("the ").removesuffix(" button")
        if label in boxes:
            assert boxes[label].contains(result.point), (expression, result)
    assert grounder.controls is not None
    assert grounder.controls.passes == 1
    assert grounder.reader.passes == 1
    assert grounder.detected(observation) is controls


def test_words_only_grounding_misses_the_glyph_buttons_the_detector_finds() -> None:
    image, boxes = _keypad()
    observation = Observation(Screenshot(image))
    with_controls, words_only = OcrGrounder(), OcrGrounder(controls=None)
    found = 0
    for label in ("=", ".", "-", "(", ")"):
        result = with_controls.ground(f"the {label} button", observation)
        assert boxes[label].contains(result.point), (label, result)
        assert result.details["source"] == "glyphs"
        assert result.box == boxes[label] or boxes[label].contains(result.box.center)
        with contextlib.suppress(NotFound):
            found += boxes[label].contains(words_only.ground(label, observation).point)
    assert found < 5  # tesseract alone does not read these lone glyphs


def test_a_label_not_on_the_screen_is_not_found_and_none_is_made_up() -> None:
    image, _ = _keypad()
    observation = Observation(Screenshot(image))
    grounder = OcrGrounder()
    for expression in ("the # button", "the MS button", "9"):
        with pytest.raises(NotFound):
            grounder.ground(expression, observation)


def test_window_control_and_menu_icons_are_named_by_their_shape() -> None:
    image = Image.new("RGB", (600, 300), (222, 221, 218))
    draw = ImageDraw.Draw(image)
    ink = (46, 52, 54)
    draw.rectangle((400, 109, 409, 110), fill=ink)  # minimize: a flat bar, low in its row
    draw.rectangle((440, 100, 449, 109), outline=ink, width=2)  # maximize: a square outline
    draw.line((480, 100, 489, 109), fill=ink, width=2)  # close: an X
    draw.line((480, 109, 489, 100), fill=ink, width=2)
    draw.rounded_rectangle((100, 90, 136, 124), radius=4, fill=(246, 245, 244), outline=(190,) * 3)
    for y in (101, 106, 111):  # a menu button: three bars in an outlined box
        draw.rectangle((112, y, 124, y + 1), fill=ink)
    draw.rectangle((200, 250, 209, 251), fill=ink)  # a lone bar low on the screen: no icon
    boxes = {
        "minimize": Box.from_corners(395, 95, 414, 114),
        "maximize": Box.from_corners(435, 95, 454, 114),
        "close": Box.from_corners(475, 95, 494, 114),
        "menu": Box.from_corners(100, 90, 136, 124),
    }
    icons = [c for c in detect(image) if c.kind == "icon"]
    assert sorted(c.text for c in icons) == sorted(boxes), icons
    for icon in icons:
        assert boxes[icon.text].contains(Point(*icon.center)), icon
        assert icon.read_by == "shape"
        assert icon.text in icon.names
    observation = Observation(Screenshot(image))
    grounder = OcrGrounder()
    for expression, name in (
        ("the Close button", "close"),
        ("minimize", "minimize"),
        ("the maximize button", "maximize"),
        ("the menu button", "menu"),
    ):
        assert boxes[name].contains(grounder.ground(expression, observation).point), expression


def test_ocr_reads_only_the_content_of_a_plain_screen_and_finds_the_same_words() -> None:
    image = Image.new("RGB", (1280, 800), (40, 60, 90))  # a plain desktop
    window, _ = _keypad()
    image.paste(window, (300, 200))
    observation = Observation(Screenshot(image))
    trimmed, whole = OcrReader(), OcrReader(trim=False)
    for reader in (trimmed, whole):
        page = reader.page(observation)
        found = {w.text: w.box for w in page.words}
        assert {"Scientific", "mode"} <= set(found), page.text
        assert Box(700, 250, 200, 40).contains(found["Scientific"].center)  # on the screen
    near = {w.text: w.box for w in trimmed.page(observation).words}
    far = {w.text: w.box for w in whole.page(observation).words}
    for text in ("Scientific", "mode"):
        assert abs(near[text].x - far[text].x) <= 1, text
        assert abs(near[text].y - far[text].y) <= 1, text


def test_the_detector_caches_one_pass_per_screenshot() -> None:
    image, _ = _keypad()
    detector = ControlDetector(max_pages=2)
    first = detector.page("a", image)
    assert detector.page("a", image) is first
    assert detector.passes == 1
    assert detector.seconds_for("a") == first.seconds > 0
    detector.page("b", image)
    detector.page("c", image)
    assert detector.passes == 3
    assert detector.seconds_for("a") == 0.0  # evicted: only the last two are kept


def test_explain_lists_candidates_and_the_cli_draws_them(tmp_path: Path) -> None:
    image, boxes = _keypad()
    observation = Observation(Screenshot(image))
    explained = explain(OcrGrounder(), "the + button", observation)
    assert [e.grounder for e in explained] == ["ocr"]
    assert explained[0].outcome == "answered"
    assert explained[0].result is not None
    assert boxes["+"].contains(explained[0].result.point)
    assert any(c.role == "control" and c.text == "+" for c in explained[0].candidates)
    shot, picture = tmp_path / "keypad.png", tmp_path / "explained.png"
    image.save(shot)
    runner = CliRunner()
    args = ["ground", "--image", str(shot), "--ground", "ocr", "--explain"]
    done = runner.invoke(app, [*args, "--annotate", str(picture), "the = button"])
    assert done.exit_code == 0, done.output
    assert "ocr: answered" in done.output
    assert "'=' control" in done.output
    drawn = Image.open(picture).convert("RGB")
    changed = ImageChops.difference(drawn, image).getbbox()
    assert changed is not None
    equals = boxes["="]
    assert drawn.getpixel((equals.x, equals.center.y)) != image.getpixel(
        (equals.x, equals.center.y)
    )
    done = runner.invoke(app, [*args, "--json", "the MS button"])
    assert done.exit_code == 1
    data = json.loads(done.output)
    assert data["found"] is False
    assert data["explain"][0]["grounder"] == "ocr"
    assert data["explain"][0]["outcome"] == "not_found"


# -- real applications -------------------------------------------------------------------------

# every key of galculator's basic mode: digits, one-glyph operators and short labels
GALCULATOR_KEYS = (*"0123456789", *"+-*/=.()%", "C", "AC", "MS", "MR", "M+", "sqrt", "+/-", "<-")


def _observe(x11: Any) -> Observation:
    """The screen once it is still (pointer parked near a corner, so no tooltip shows)."""
    x11.move(Point(1270, 790))
    previous = None
    deadline = time.monotonic() + 4
    while True:
        shot = x11.capture()
        pixels = shot.image.tobytes()
        if pixels == previous or time.monotonic() > deadline:
            return Observation(shot, tuple(x11.windows()), x11.geometry())
        previous = pixels
        time.sleep(0.15)


def _buttons(app_name: str) -> dict[str, Box]:
    """name -> box of every showing button of ``app_name``, straight from AT-SPI."""
    deadline = time.monotonic() + 5
    while True:
        found = {
            e.name: e.box
            for e in AccessibilityTree().elements()
            if e.app == app_name and "button" in e.role and e.name
        }
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


@pytest.fixture(scope="module")
def _accessibility_bus(desktop: Any) -> None:
    """Bind this process's AT-SPI to the desktop's bus before ``apps`` notes what runs."""
    AccessibilityTree().applications()


@pytest.mark.desktop
@pytest.mark.usefixtures("_accessibility_bus")
def test_galculator_every_key_is_found_by_ocr_alone(apps: Any, x11: Any) -> None:
    apps(["galculator"], window="galculator")
    x11.activate("galculator")
    observation = _observe(x11)
    truth = _buttons("galculator")
    assert set(GALCULATOR_KEYS) <= set(truth), sorted(truth)
    ocr = OcrGrounder()
    missed = []
    for key in GALCULATOR_KEYS:
        for expression in (key, f"the {key} button"):
            try:
                result = ocr.ground(expression, observation)
            except NotFound as err:
                missed.append(f"{expression!r}: {err}")
                continue
            if not truth[key].contains(result.point):
                missed.append(f"{expression!r} -> {result.point}: {result.evidence}")
    assert missed == [], missed
    assert ocr.reader.passes == 1
    assert ocr.controls is not None
    assert ocr.controls.passes == 1


@pytest.mark.desktop
@pytest.mark.usefixtures("_accessibility_bus")
def test_clicks_on_glyph_keys_found_by_ocr_compute_in_galculator(apps: Any, x11: Any) -> None:
    apps(["galculator"], window="galculator")
    x11.activate("galculator")
    x11.clipboard_set("")
    ocr = OcrGrounder()
    observation = _observe(x11)
    keys = ["AC", "(", "9", "/", "3", "+", "8", ")", "*", "2", "-", "0", ".", "5", "="]
    points = {key: ocr.ground(f"the {key} button", observation).point for key in set(keys)}
    for key in keys:
        x11.click(points[key])
        time.sleep(0.05)
    x11.hotkey(["ctrl", "c"])
    deadline = time.monotonic() + 15
    while x11.clipboard_get().strip() != "21.5" and time.monotonic() < deadline:
        time.sleep(0.1)
    assert x11.clipboard_get().strip() == "21.5"


@pytest.mark.desktop
@pytest.mark.usefixtures("_accessibility_bus")
def test_gtk3_demo_buttons_and_rows_through_the_detector(apps: Any, x11: Any) -> None:
    apps(["gtk3-demo"], window="gtk3-demo")
    x11.activate("gtk3-demo")
    observation = _observe(x11)
    truth = _buttons("gtk3-demo")
    ocr = OcrGrounder()
    result = ocr.ground("the Run button", observation)
    assert truth["Run"].contains(result.point), result
    controls = ocr.detected(observation)
    run = [c for c in controls if c.kind == "button" and c.text == "Run"]
    assert len(run) == 1
    assert truth["Run"].contains(Point(*run[0].center))
    assert any(c.kind == "text" and c.text == "Builder" for c in controls)
    # the header bar's icon-only window buttons, found by their shapes
    for name in ("Close", "Maximize", "Minimize"):
        result = ocr.ground(f"the {name} button", observation)
        assert truth[name].contains(result.point), (name, result)
