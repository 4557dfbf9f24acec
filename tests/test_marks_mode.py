"""Set-of-marks (``--marks``): the screenshot the model is sent carries numbered marks on the
controls (accessibility boxes where the application has them, else boxes found in the pixels),
the request lists them, and ``agent.click(mark=N)`` clicks the centre of mark N's box.

The scripted model reads the marks from the request it received and answers with the number of
the control it wants, as a model would; the desktop tests check the real effect (the button
pressed, the text typed, the calculator's result), that the image the model was sent carries
the marks, and that a mark not on the screenshot is refused with feedback and clicks nothing.
"""

from __future__ import annotations

import io
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from PIL import Image, ImageDraw, ImageFont

from agent_s import Agent, AgentConfig, GroundingConfig, ModelConfig, RunStatus, load_trajectory
from agent_s.actions import (
    ActionParseError,
    ClickAction,
    DragAndDropAction,
    ScrollAction,
    TypeAction,
    action_catalogue,
    parse_action,
)
from agent_s.desktop import RecordingBackend
from agent_s.desktop.base import Monitor, ScreenGeometry, Screenshot, WindowInfo
from agent_s.desktop.ops import Click, Point
from agent_s.grounding import AccessibilityTree, Box, Observation
from agent_s.marks.drawing import MARK_TAG, numbered_picture, tag_places
from agent_s.marks.setofmarks import MarkEntry, Marker, MarkTable, check_marks
from agent_s.settings.read import flag_values, load_settings
from agent_s.testing.scripted_replies import Step, reply
from agent_s.testing.scripted_server import RecordedRequest, ScriptedModelServer

KEY = "sk-marks-SECRET-0123456789"
_MARK_LINE = re.compile(r"^(\d+): (.*)$", re.MULTILINE)


def act(code: str) -> Step:
    return reply(f"I use the marks.\n```python\n{code}\n```")


def request_text(request: RecordedRequest) -> str:
    """Every text of the request's messages, in order."""
    texts: list[str] = []
    for message in request.body["messages"]:
        content = message["content"]
        if isinstance(content, str):
            texts.append(content)
        else:
            texts += [part["text"] for part in content if part.get("type") == "text"]
    return "\n".join(texts)


def marks_in(request: RecordedRequest) -> dict[int, str]:
    """The mark table the request lists for the current screenshot (the last one listed):
    number -> what it marks (``push button "7"``)."""
    text = request_text(request)
    start = text.rindex("The marks on this screenshot")
    block = text[start:].split("\n\n", 1)[0]
    return {int(m.group(1)): m.group(2) for m in _MARK_LINE.finditer(block)}


def mark_of(request: RecordedRequest, wanted: str) -> int:
    """The number of the mark whose text is exactly ``wanted`` (quoted), the first one."""
    for number, text in marks_in(request).items():
        if re.search(rf'(^|\s)"{re.escape(wanted)}"$', text):
            return number
    raise AssertionError(f"no mark for {wanted!r} in {marks_in(request)}")


def sent_image(request: RecordedRequest) -> Image.Image:
    """The current screenshot of the request, decoded (the last image it carries)."""
    media_type, data = request.images()[-1]
    assert media_type.startswith("image/")
    return Image.open(io.BytesIO(data)).convert("RGB")


def tag_pixels(image: Image.Image, area: tuple[int, int, int, int]) -> int:
    """Pixels of the tag colour inside ``area`` (left, top, right, bottom)."""
    data = image.convert("RGB").crop(area).tobytes()
    pixels = zip(data[0::3], data[1::3], data[2::3], strict=True)
    return sum(
        1
        for r, g, b in pixels
        if abs(r - MARK_TAG[0]) < 40 and abs(g - MARK_TAG[1]) < 40 and abs(b - MARK_TAG[2]) < 40
    )


def agent_for(
    server: ScriptedModelServer,
    backend: Any,
    tmp_path: Path,
    *,
    marks: bool = True,
    **settings: Any,
) -> Agent:
    model = ModelConfig("openai-compatible", "scripted-model", server.openai_base_url, KEY)
    config = AgentConfig(record_dir=tmp_path / "runs", **{"settle_seconds": 0.5, **settings})
    grounding = GroundingConfig("auto", marks=marks)
    return Agent(model, settings=config, grounding=grounding, backend=backend)


# -- the action space -----------------------------------------------------------------------------


def test_mark_is_a_target_form_of_the_pointing_actions() -> None:
    click = parse_action("```python\nagent.click(mark=17, num_clicks=2)\n```")
    assert click == ClickAction(mark=17, num_clicks=2)
    assert [(t.text, t.mark) for t in click.targets()] == [("mark 17", 17)]
    assert parse_action('{"action": "click", "mark": "5"}') == ClickAction(mark=5)
    typed = parse_action('agent.type(mark=4, text="weather", enter=True)')
    assert typed == TypeAction(mark=4, text="weather", enter=True)
    assert parse_action("agent.scroll(mark=9, clicks=-5)") == ScrollAction(mark=9, clicks=-5)
    drag = parse_action('agent.drag_and_drop(starting_mark=12, ending_description="the bin")')
    assert isinstance(drag, DragAndDropAction)
    assert [(t.text, t.mark) for t in drag.targets()] == [("mark 12", 12), ("the bin", None)]
    assert drag.mark_numbers == (12,)
    assert click.plan([Point(5, 6)]) == [Click(Point(5, 6), "left", 2, ())]
    described = parse_action('agent.click("OK")')  # descriptions work as before
    assert [(t.text, t.mark) for t in described.targets()] == [("OK", None)]


@pytest.mark.parametrize(
    ("reply_text", "fragment"),
    [
        ('agent.click("the OK button", mark=3)', "give element_description or mark, not both"),
        ("agent.click(mark=0)", "mark: should be greater than or equal to 1"),
        ("agent.click(mark=True)", "not the boolean True"),
        ("agent.click(mark='seven')", "a mark is the number shown on the screenshot"),
        ("agent.click(mark=[1, 2])", "a mark is the number shown on the screenshot"),
        ("agent.click(mark=2.5)", "a mark is the number shown on the screenshot"),
        ("agent.click()", "missing required argument 'element_description'"),
        ("agent.drag_and_drop(starting_mark=1)", "missing required argument 'ending_description'"),
        ("agent.click('a', 1, 'left', [], 3)", "takes at most 4 positional argument(s)"),
    ],
)
def test_a_malformed_mark_is_refused_when_parsed(reply_text: str, fragment: str) -> None:
    with pytest.raises(ActionParseError) as info:
        parse_action(reply_text)
    assert fragment in str(info.value)


def test_the_catalogue_offers_marks_only_when_the_run_shows_them() -> None:
    plain, marked = action_catalogue(), action_catalogue(marks=True)
    assert "mark" not in plain.replace("bookmark", "")
    assert "agent.click(element_description: str, num_clicks: int = 1" in plain
    assert "- mark: instead of element_description" in marked
    assert "Example: agent.click(mark=17)" in marked
    assert "starting_mark: int | None = None" in marked


def _table(*boxes: tuple[int, int, int, int]) -> MarkTable:
    entries = tuple(
        MarkEntry(number=i, box=box, source="a11y", text=f"B{i}", role="push button")
        for i, box in enumerate(boxes, start=1)
    )
    return MarkTable(entries, len(entries))


def test_a_mark_must_be_in_the_steps_table() -> None:
    table = _table((10, 10, 40, 20), (60, 10, 40, 20))
    check_marks(ClickAction(mark=2), table)
    check_marks(ClickAction(element_description="OK"), None)  # no marks named: nothing to check
    with pytest.raises(ActionParseError, match=r"no mark 3 on the current screenshot .*1 to 2"):
        check_marks(ClickAction(mark=3), table)
    with pytest.raises(ActionParseError, match="no mark 9"):
        check_marks(DragAndDropAction(starting_mark=1, ending_mark=9), table)
    with pytest.raises(ActionParseError, match="shows no numbered marks"):
        check_marks(ClickAction(mark=1), None)
    assert table.get(2) is not None
    assert table.get(2).point == Point(79, 19)
    assert table.lines() == ['1: push button "B1"', '2: push button "B2"']


# -- the picture ----------------------------------------------------------------------------------


def test_tags_sit_in_a_corner_and_leave_the_controls_text_readable() -> None:
    image = Image.new("RGB", (400, 200), (255, 255, 255))
    pen = ImageDraw.Draw(image)
    pen.text((170, 90), "Save", fill=(0, 0, 0), font=ImageFont.load_default(size=14))
    shot = Screenshot(image)
    big, small = Box(150, 70, 120, 50), Box(20, 150, 30, 14)
    picture = numbered_picture(shot, [(7, big), (12, small)])
    assert picture.size == image.size
    assert image.getpixel((0, 0)) == (255, 255, 255)
    # the text of the big control is untouched; its tag is inside its top-left corner
    assert picture.crop((165, 85, 215, 110)).tobytes() == image.crop((165, 85, 215, 110)).tobytes()
    assert tag_pixels(picture, (150, 70, 175, 90)) > 40
    # a small control gets its tag just above it, outside its box
    assert tag_pixels(picture, (20, 130, 45, 150)) > 30
    assert tag_pixels(picture, (23, 153, 47, 161)) == 0
    assert tag_places(small, (16, 14), (400, 200))[0] == (20, 136, 35, 149)  # too small inside
    assert tag_places(big, (16, 14), (400, 200))[0] == (151, 71, 166, 84)
    # a tag goes where it hides nothing: not over text at the top-left of a field
    field = Image.new("RGB", (400, 200), (255, 255, 255))
    ImageDraw.Draw(field).text((152, 72), "type here", fill=(0, 0, 0))
    shown = numbered_picture(Screenshot(field), [(5, big)])
    assert shown.crop((150, 70, 210, 84)).tobytes() == field.crop((150, 70, 210, 84)).tobytes()
    assert tag_pixels(shown, (140, 50, 280, 125)) > 40
    # sized for the image as sent: a picture that will be halved gets tags twice as large
    halved = numbered_picture(shot, [(7, big)], tag_scale=2.0)
    assert tag_pixels(halved, (140, 60, 280, 130)) > 1.8 * tag_pixels(picture, (140, 60, 280, 130))


# -- settings -------------------------------------------------------------------------------------


def test_marks_are_a_setting_off_by_default(tmp_path: Path) -> None:
    empty = tmp_path / "config.toml"
    empty.write_text("")
    environ = {"AGENT_S_CONFIG": str(empty)}
    assert load_settings(environ=environ).build_grounding(environ).marks is False
    flagged = load_settings(flag_values({"--marks": True}), environ=environ)
    assert flagged.build_grounding(environ).marks is True
    on = {**environ, "AGENT_S_MARKS": "on"}
    assert load_settings(environ=on).build_grounding(on).marks is True
    filed = tmp_path / "marks.toml"
    filed.write_text('[grounding]\nmode = "ocr"\nmarks = true\n')
    grounding = load_settings(environ={"AGENT_S_CONFIG": str(filed)}).build_grounding({})
    assert (grounding.mode, grounding.marks) == ("ocr", True)


# -- whole steps on a recorded screen -------------------------------------------------------------

FORM_WINDOW = WindowInfo(5, "Order form", "Form", 4242, 0, 0, 1280, 800, active=True)


def _form(scale: int = 1) -> Image.Image:
    """A 1280x800 form (times ``scale``): five outlined buttons in a row and a line of plain
    text below."""
    image = Image.new("RGB", (1280 * scale, 800 * scale), (236, 236, 236))
    pen = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=16 * scale)
    for i, label in enumerate(["Apply", "Reset", "Cancel", "7", "+"]):
        x, corners = 100 + i * 140, (100 + i * 140, 200, 210 + i * 140, 236)
        pen.rectangle(
            tuple(c * scale for c in corners), fill=(250, 250, 250), outline=(120, 120, 120)
        )
        pen.text(((x + 30) * scale, 208 * scale), label, fill="black", font=font)
    pen.text((100 * scale, 300 * scale), "Totals are shown below", fill="black", font=font)
    return image


def test_a_mark_clicks_the_centre_of_its_box_and_a_wrong_one_clicks_nothing(
    tmp_path: Path,
) -> None:
    asked: list[int] = []

    def script(request: RecordedRequest) -> Step:
        asked.append(request.index)
        if request.index == 1:
            return act("agent.click(mark=99)")  # not on the screenshot: refused, fed back
        if request.index == 2:
            assert "there is no mark 99 on the current screenshot" in json.dumps(request.body)
            return act(f"agent.click(mark={mark_of(request, 'Reset')})")
        return act("agent.done()")

    backend = RecordingBackend([_form(), _form()], windows=[FORM_WINDOW])
    with ScriptedModelServer(script) as server:
        result = agent_for(server, backend, tmp_path, settle_seconds=0).run("Press Reset")
    assert result.status is RunStatus.SUCCEEDED, result
    assert asked == [1, 2, 3]
    clicks = [op for op in backend.ops if isinstance(op, Click)]
    assert len(clicks) == 1  # the wrong mark clicked nothing
    assert 240 <= clicks[0].at.x <= 351, clicks
    assert 200 <= clicks[0].at.y <= 237, clicks
    step = load_trajectory(result.trajectory_dir).steps[0]
    assert step.calls[0].error.startswith("there is no mark 99")
    (grounded,) = step.grounding
    assert grounded.grounder == "mark"
    assert grounded.target.startswith("mark ")
    entry = next(m for m in step.marks if m.text == "Reset")
    assert (clicks[0].at.x, clicks[0].at.y) == (entry.point.x, entry.point.y) == grounded.point
    assert {m.text for m in step.marks} >= {"Apply", "Reset", "Cancel", "Totals are shown below"}
    assert all(m.source in ("detected", "ocr") for m in step.marks)  # no accessibility here
    # the image saved for the step is the one the model was sent, marks and all
    sent = server.requests[0].images()[-1][1]
    assert (result.trajectory_dir / str(step.screenshot)).read_bytes() == sent


def test_without_marks_a_mark_is_an_invalid_reply(tmp_path: Path) -> None:
    script = [act("agent.click(mark=2)"), act("agent.done()")]
    backend = RecordingBackend([_form()], windows=[FORM_WINDOW])
    with ScriptedModelServer(script) as server:
        result = agent_for(server, backend, tmp_path, marks=False, settle_seconds=0).run("Go")
    assert result.status is RunStatus.SUCCEEDED, result
    assert "shows no numbered marks" in json.dumps(server.requests[1].body)
    assert "The marks on this screenshot" not in request_text(server.requests[0])
    assert not [op for op in backend.ops if isinstance(op, Click)]
    assert load_trajectory(result.trajectory_dir).steps[0].marks == ()


def test_the_marks_follow_the_image_as_sent_when_it_is_downscaled(tmp_path: Path) -> None:
    """A 2560x1600 screen is sent at a smaller size: the marks are drawn before the encoder
    scales it, their tags sized to stay legible, and a mark still resolves to a screen point."""
    big = _form(scale=2)
    window = WindowInfo(5, "Order form", "Form", 4242, 0, 0, 2560, 1600, active=True)
    seen: list[RecordedRequest] = []

    def script(request: RecordedRequest) -> Step:
        seen.append(request)
        if request.index == 1:
            return act(f"agent.click(mark={mark_of(request, 'Cancel')})")
        return act("agent.done()")

    backend = RecordingBackend([big, big], windows=[window])
    with ScriptedModelServer(script) as server:
        result = agent_for(server, backend, tmp_path, settle_seconds=0).run("Press Cancel")
    assert result.status is RunStatus.SUCCEEDED, result
    (click,) = [op for op in backend.ops if isinstance(op, Click)]
    assert 760 <= click.at.x <= 982, click  # Cancel, at twice the size
    assert 400 <= click.at.y <= 474, click
    image = sent_image(seen[0])
    assert image.width < 2560
    step = load_trajectory(result.trajectory_dir).steps[0]
    entry = next(m for m in step.marks if m.text == "Cancel")
    scale = image.width / 2560
    x, y = int(entry.box[0] * scale), int(entry.box[1] * scale)
    assert tag_pixels(image, (x - 2, y - 2, x + 22, y + 20)) > 40  # the tag, legible


def test_a_mark_on_a_hidpi_monitor_with_an_origin_resolves_through_the_chain(
    tmp_path: Path,
) -> None:
    """The second monitor of two, at x=1280, captured at 2 pixels per screen coordinate: the
    marks are found and drawn in its pixels, and a mark resolves to a point of the screen."""
    shot = Screenshot(_form(scale=2), origin=Point(1280, 0), scale=2.0)
    geometry = ScreenGeometry(
        (Monitor(0, 0, 1280, 800, primary=True), Monitor(1280, 0, 1280, 800, scale=2.0))
    )
    window = WindowInfo(5, "Order form", "Form", 4242, 1280, 0, 1280, 800, active=True)

    def script(request: RecordedRequest) -> Step:
        if request.index == 1:
            return act(f"agent.click(mark={mark_of(request, 'Cancel')})")
        return act("agent.done()")

    backend = RecordingBackend([shot, shot], windows=[window], geometry=geometry)
    with ScriptedModelServer(script) as server:
        result = agent_for(server, backend, tmp_path, settle_seconds=0).run("Press Cancel")
    assert result.status is RunStatus.SUCCEEDED, result
    (click,) = [op for op in backend.ops if isinstance(op, Click)]
    assert 1280 + 380 <= click.at.x <= 1280 + 490, click  # Cancel, in screen coordinates
    assert 200 <= click.at.y <= 236, click
    step = load_trajectory(result.trajectory_dir).steps[0]
    cancel = next(m for m in step.marks if m.text == "Cancel")
    assert cancel.box[0] >= 1280  # the table is in screen coordinates
    assert step.grounding[0].point == (click.at.x, click.at.y)


# -- real applications ----------------------------------------------------------------------------

TK_FORM = """
import json, sys, tkinter as tk
log, title = sys.argv[1], sys.argv[2]
def write(event):
    with open(log, "a") as out:
        out.write(json.dumps(event) + "\\n")
root = tk.Tk()
root.title(title)
root.geometry("640x360+120+120")
root.configure(background="#ececec")
row = tk.Frame(root, background="#ececec")
row.pack(side="top", pady=30)
for label in ("Apply", "Reset", "Cancel"):
    tk.Button(row, text=label, font=("DejaVu Sans", 13), width=8,
              command=lambda label=label: write({"pressed": label})).pack(side="left", padx=18)
text = tk.StringVar(root, value="type here")
entry = tk.Entry(root, textvariable=text, width=30, font=("DejaVu Sans", 13))
entry.pack(side="top", pady=30)
text.trace_add("write", lambda *_: write({"entry": text.get()}))
root.after(200, lambda: write({"ready": True}))
root.mainloop()
"""


@pytest.fixture(scope="module")
def _accessibility_bus(desktop: Any) -> None:
    """Bind AT-SPI in this process before ``apps`` notes the running processes (see
    test_agent_desktop.py)."""
    AccessibilityTree().applications()


def _events(log: Path) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def _wait_for(predicate: Any, timeout: float = 8.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.1)


@pytest.mark.desktop
@pytest.mark.usefixtures("_accessibility_bus")
def test_a_tk_window_without_accessibility_is_marked_from_its_pixels(
    apps: Any, x11: Any, tmp_path: Path
) -> None:
    script_file, log = tmp_path / "form.py", tmp_path / "form.jsonl"
    script_file.write_text(TK_FORM)
    title = f"marks-form-{time.monotonic_ns()}"
    apps([sys.executable, str(script_file), str(log), title], window=title)
    assert _wait_for(lambda: any("ready" in e for e in _events(log)))
    x11.activate(title)
    x11.move(Point(5, 5))
    requests: list[RecordedRequest] = []

    def script(request: RecordedRequest) -> Step:
        requests.append(request)
        if request.index == 1:
            return act("agent.click(mark=4000)")  # refused: no such mark, nothing clicked
        if request.index == 2:
            assert "there is no mark 4000" in json.dumps(request.body)
            return act(f"agent.click(mark={mark_of(request, 'Reset')})")
        if request.index == 3:
            mark = mark_of(request, "type here")
            # the click at the field's centre, right of its text, puts the caret at its end
            return act(f'agent.type(mark={mark}, text=" and marks")')
        return act("agent.done()")

    with ScriptedModelServer(script) as server:
        agent = agent_for(server, x11, tmp_path)
        result = agent.run("Press Reset, then add ' and marks' to the field")
    assert result.status is RunStatus.SUCCEEDED, result
    events = _events(log)
    assert [e["pressed"] for e in events if "pressed" in e] == ["Reset"]  # one click, right one
    assert _wait_for(lambda: {"entry": "type here and marks"} in _events(log)), _events(log)
    steps = load_trajectory(result.trajectory_dir).steps
    window = x11.windows()
    tk = next(w for w in window if w.title == title)
    marked = [m for m in steps[0].marks if tk.x <= m.point.x < tk.x + tk.width]
    assert marked
    assert all(m.source == "detected" for m in marked)
    reset = next(m for m in steps[0].marks if m.text == "Reset")
    assert steps[0].grounding[0].point == (reset.point.x, reset.point.y)
    # the model's image carries the marks: a tag at the Reset button's corner, which the
    # screen itself does not show
    image = sent_image(requests[1])
    assert image.size == x11.capture().image.size  # 1280x800 is sent as it is
    x, y = reset.box[0], reset.box[1]
    assert tag_pixels(image, (x - 2, y - 22, x + 30, y + 22)) > 40
    assert tag_pixels(x11.capture().image.convert("RGB"), (x - 2, y - 22, x + 30, y + 22)) == 0
    assert (result.trajectory_dir / str(steps[0].screenshot)).read_bytes() == (
        requests[1].images()[-1][1]
    )


@pytest.mark.desktop
@pytest.mark.usefixtures("_accessibility_bus")
def test_galculator_is_marked_from_its_accessibility_tree_and_computes(
    apps: Any, x11: Any, tmp_path: Path
) -> None:
    apps(["galculator"], window="galculator")
    x11.activate("galculator")
    x11.clipboard_set("")
    keys = ["7", "+", "1", "="]
    requests: list[RecordedRequest] = []

    def script(request: RecordedRequest) -> Step:
        requests.append(request)
        if len(requests) <= len(keys):
            return act(f"agent.click(mark={mark_of(request, keys[len(requests) - 1])})")
        if len(requests) == len(keys) + 1:
            return act('agent.hotkey(["ctrl", "c"])')
        return act('agent.done(answer="8")')

    with ScriptedModelServer(script) as server:
        result = agent_for(server, x11, tmp_path).run("What is 7 plus 1?")
    assert result.status is RunStatus.SUCCEEDED, result
    assert _wait_for(lambda: x11.clipboard_get().strip() == "8"), x11.clipboard_get()
    steps = load_trajectory(result.trajectory_dir).steps
    first = steps[0]
    seven = next(m for m in first.marks if m.text == "7")
    assert seven.source == "a11y"
    assert seven.role
    assert first.grounding[0].grounder == "mark"
    assert first.grounding[0].point == (seven.point.x, seven.point.y)
    assert first.executed[0]["op"] == "Click"
    lines = marks_in(requests[0])
    assert lines[seven.number] == seven.describe()
    image = sent_image(requests[0])
    x, y = seven.box[0], seven.box[1]
    assert tag_pixels(image, (x - 2, y - 22, x + 30, y + 22)) > 40


def test_a_marker_without_accessibility_marks_what_it_detects() -> None:
    """The marker on its own: detection only when some window is not covered by accessible
    controls, numbered in reading order, off-window boxes of accessible apps never marked."""
    observation = Observation(Screenshot(_form()), (FORM_WINDOW,), None)
    table = Marker().table(observation)
    texts = [entry.text for entry in table.entries]
    assert texts[:5] == ["Apply", "Reset", "Cancel", "7", "+"]
    assert [entry.number for entry in table.entries] == list(range(1, len(texts) + 1))
    assert table.total == len(table.entries)
