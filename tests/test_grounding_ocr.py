"""OCR grounding with the real tesseract on a rendered screen whose text positions are known,
and the ``agent-s ground`` command on image files."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest
from PIL import Image, ImageDraw, ImageFont
from typer.testing import CliRunner

from agent_s.cli.main import app
from agent_s.desktop.base import Screenshot, WindowInfo
from agent_s.desktop.ops import Point
from agent_s.grounding import (
    NotFound,
    Observation,
    OcrGrounder,
    OcrReader,
    TesseractEngine,
    TesseractOptions,
)
from agent_s.grounding.types import Box

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
SENTENCE = "The quick brown fox jumps over the lazy dog"


@dataclass
class Scene:
    observation: Observation
    boxes: dict[str, Box]  # screen boxes of what was drawn, by label


ZERO = Point(0, 0)


def _scene(origin: Point = ZERO) -> Scene:
    """A 1280x800 'desktop': a menu bar, a sentence, numbers, an OK button in the main window
    and another in a dialog in front of it."""
    image = Image.new("RGB", (1280, 800), (246, 245, 244))
    draw = ImageDraw.Draw(image)
    font = ImageFont.truetype(FONT, 14)
    boxes: dict[str, Box] = {}

    def text(key: str, xy: tuple[int, int], label: str) -> None:
        draw.text(xy, label, font=font, fill=(30, 30, 30))
        left, top, right, bottom = draw.textbbox(xy, label, font=font)
        boxes[key] = Box(origin.x + left, origin.y + top, right - left, bottom - top)

    def button(key: str, rect: tuple[int, int, int, int], label: str) -> None:
        draw.rectangle(rect, fill=(255, 255, 255), outline=(150, 150, 150))
        w = draw.textlength(label, font=font)
        text(key + "-label", (rect[0] + int((rect[2] - rect[0] - w) / 2), rect[1] + 8), label)
        boxes[key] = Box.from_corners(
            origin.x + rect[0], origin.y + rect[1], origin.x + rect[2], origin.y + rect[3]
        )

    for i, menu in enumerate(("File", "Edit", "View", "Help")):
        text(menu, (20 + 60 * i, 10), menu)
    text("sentence", (40, 120), SENTENCE)
    text("total", (40, 180), "Total: 1,234.56 items")
    button("ok-main", (60, 600, 160, 632), "OK")
    draw.rectangle((700, 300, 1100, 560), fill=(250, 250, 250), outline=(90, 90, 90))
    text("question", (730, 340), "Discard unsaved changes?")
    button("ok-dialog", (960, 500, 1060, 532), "OK")
    button("cancel", (840, 500, 940, 532), "Cancel")
    main = WindowInfo(1, "Editor", "Editor", 100, origin.x, origin.y, 1280, 800)
    dialog = WindowInfo(
        2, "Discard?", "Editor", 100, origin.x + 700, origin.y + 300, 401, 261, active=True
    )
    shot = Screenshot(image, origin, 1.0)
    return Scene(Observation(shot, (dialog, main)), boxes)


@pytest.fixture(scope="module")
def scene() -> Scene:
    return _scene()


@pytest.fixture(scope="module")
def ocr() -> OcrGrounder:
    return OcrGrounder()  # one reader (and cache) for the module


@pytest.mark.parametrize(
    ("expression", "target"),
    [
        ("the Edit menu", "Edit"),
        ("help", "Help"),
        ("1,234.56", "total"),
        ("the Cancel button", "cancel"),
        ("the OK button in the dialog", "ok-dialog"),
        ("the first OK button", "ok-dialog"),  # reading order: the dialog's is higher up
        ("the second OK button", "ok-main"),
        ("the bottom OK button", "ok-main"),
        ("the OK button on the right", "ok-dialog"),
        ("lazy dog", "sentence"),
    ],
)
def test_ocr_finds_labels_numbers_and_phrases(
    scene: Scene, ocr: OcrGrounder, expression: str, target: str
) -> None:
    result = ocr.ground(expression, scene.observation)
    assert scene.boxes[target].contains(result.point), (expression, result)
    assert result.grounder == "ocr"
    assert result.box is not None
    assert result.details["words"]
    assert result.details["word_indices"]


def test_one_ocr_pass_serves_every_grounding_of_a_step(scene: Scene) -> None:
    grounder = OcrGrounder(OcrReader())
    for expression in ("File", "View", "Cancel", "lazy dog"):
        grounder.ground(expression, scene.observation)
    assert grounder.reader.passes == 1
    # The cache is keyed on the pixels: the same screen captured again is not read again...
    same = Observation(Screenshot(scene.observation.screenshot.image.copy()))
    grounder.ground("Help", same)
    assert grounder.reader.passes == 1
    # ... a changed screen is.
    changed = scene.observation.screenshot.image.copy()
    changed.putpixel((0, 0), (0, 0, 0))
    grounder.ground("Help", Observation(Screenshot(changed)))
    assert grounder.reader.passes == 2


def test_the_engine_reads_in_process_what_the_program_reads(scene: Scene) -> None:
    """libtesseract in this process (the model loaded once, not once per screenshot) reads the
    same words at the same places as the tesseract program given the same image."""
    image = scene.observation.screenshot.image.crop((0, 0, 1280, 220))
    library = TesseractEngine()
    assert library.in_process  # setup.sh installs tesseract, and with it libtesseract
    program = TesseractEngine(TesseractOptions(in_process=False))
    read = library.read(image)
    assert [(text, box) for text, box, _, _ in read] == [
        (text, box) for text, box, _, _ in program.read(image)
    ]
    assert {"File", "Edit", "quick", "1,234.56"} <= {text for text, _, _, _ in read}


def test_not_found_lists_what_was_seen_and_gives_no_point(scene: Scene, ocr: OcrGrounder) -> None:
    with pytest.raises(NotFound) as err:
        ocr.ground("the Quit button", scene.observation)
    assert err.value.grounder == "ocr"
    assert err.value.candidates
    seen = {c.text for c in err.value.candidates}
    assert seen & {"File", "Edit", "View", "Help", "Cancel", "OK"}
    with pytest.raises(NotFound):  # an ordinal past the matches is not the last one
        ocr.ground("the third OK button", scene.observation)


def test_text_span_gives_word_positions_and_drag_points(scene: Scene, ocr: OcrGrounder) -> None:
    span = ocr.span("quick brown", "lazy dog", scene.observation)
    assert span.words == tuple(SENTENCE.split()[1:])
    assert span.end_word - span.start_word == len(span.words) - 1
    page = ocr.reader.page(scene.observation)
    assert page.words[span.start_word].text == "quick"
    assert page.words[span.end_word].text == "dog"
    sentence = scene.boxes["sentence"]
    assert sentence.contains(span.start)
    assert sentence.y <= span.end.y <= sentence.bottom
    assert span.start.x < sentence.x + sentence.width * 0.2 < sentence.x + sentence.width * 0.9
    assert span.end.x > sentence.x + sentence.width * 0.9
    assert span.end.x <= sentence.right + 6
    with pytest.raises(NotFound, match="did not find"):
        ocr.span("quick brown", "purple elephant", scene.observation)
    with pytest.raises(NotFound, match="follows"):
        ocr.span("lazy dog", "quick brown", scene.observation)


def test_points_are_screen_coordinates_on_a_monitor_with_an_offset(ocr: OcrGrounder) -> None:
    moved = _scene(Point(1920, 100))
    result = ocr.ground("the Cancel button", moved.observation)
    assert moved.boxes["cancel"].contains(result.point)
    assert result.point.x > 1920


def test_crop_always_reads_only_the_active_window(scene: Scene) -> None:
    grounder = OcrGrounder(crop="always")
    assert scene.boxes["cancel"].contains(grounder.ground("Cancel", scene.observation).point)
    with pytest.raises(NotFound):
        grounder.ground("the Edit menu", scene.observation)  # outside the dialog


# -- the command ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def screen_file(tmp_path_factory: pytest.TempPathFactory, scene: Scene) -> Path:
    path = tmp_path_factory.mktemp("ground") / "screen.png"
    scene.observation.screenshot.image.save(path)
    return path


def test_cli_prints_point_box_grounder_and_evidence(screen_file: Path, scene: Scene) -> None:
    result = CliRunner().invoke(app, ["ground", "the Cancel button", "--image", str(screen_file)])
    assert result.exit_code == 0, result.output
    lines = dict(line.split(None, 1) for line in result.stdout.splitlines() if line.strip())
    x, y = (int(v) for v in lines["point"].strip("()").split(", "))
    assert scene.boxes["cancel"].contains(Point(x, y))
    assert lines["grounder"].startswith("ocr")
    assert "Cancel" in lines["evidence"]


def test_cli_json_and_annotation(screen_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "annotated.png"
    result = CliRunner().invoke(
        app, ["ground", "Help", "--image", str(screen_file), "--json", "--annotate", str(out)]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["found"] is True
    assert data["grounder"] == "ocr"
    x, y = data["point"]
    bx, by, bw, bh = data["box"]
    assert bx <= x < bx + bw
    assert by <= y < by + bh
    drawn = Image.open(out).convert("RGB")
    ring = [drawn.getpixel((x + dx, y)) for dx in range(-12, 13)]
    assert (255, 0, 0) in ring  # the point's ring is drawn around it
    assert drawn.getpixel((bx, by + bh // 2)) == (0, 200, 0)  # the box's outline


def test_cli_not_found_exits_1_with_candidates(screen_file: Path) -> None:
    result = CliRunner().invoke(app, ["ground", "Quit", "--image", str(screen_file)])
    assert result.exit_code == 1
    assert "not found" in result.stdout
    assert "candidates:" in result.stdout
    data = json.loads(
        CliRunner().invoke(app, ["ground", "Quit", "--image", str(screen_file), "--json"]).stdout
    )
    assert data["found"] is False
    assert data["candidates"]
    assert data["attempts"][0]["grounder"] == "ocr"


def test_cli_usage_errors_exit_2(screen_file: Path) -> None:
    runner = CliRunner()
    assert runner.invoke(app, ["ground", "x", "--ground", "magic"]).exit_code == 2
    assert (
        runner.invoke(
            app, ["ground", "x", "--image", str(screen_file), "--ground", "a11y"]
        ).exit_code
        == 2
    )
    assert runner.invoke(app, ["ground", "x", "--ground", "model"]).exit_code == 2
    assert runner.invoke(app, ["ground", "x", "--image", "/nonexistent.png"]).exit_code == 2


def test_cli_native_maps_the_generation_models_coordinates(screen_file: Path) -> None:
    # A model that saw this 1280x800 screen as is clicked at (100, 50).
    result = CliRunner().invoke(
        app, ["ground", "(100, 50)", "--image", str(screen_file), "--ground", "native", "--json"]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["point"] == [100, 50]
