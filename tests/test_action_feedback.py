"""What the model is told after each action, read from the requests the scripted server got:
coordinates in the frame of the image it was sent, literal points honoured in every grounding
mode, and what each action was seen to do on the real desktop (a window opened, already open,
closed; the focused field's text changed), not only that it ran."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from agent_s import Agent, AgentConfig, GroundingConfig, ModelConfig, RunStatus, load_trajectory
from agent_s.desktop import RecordingBackend
from agent_s.desktop.base import WindowInfo
from agent_s.desktop.ops import Hotkey
from agent_s.desktop.watch import (
    ATSPI_LOCK,
    LOCK_WAIT,
    FieldReader,
    FieldState,
    field_change,
    window_changes,
)
from agent_s.grounding import AccessibilityTree
from agent_s.images import EncodedImage
from agent_s.models.profiles import ProfileRegistry
from agent_s.testing.scripted_replies import reply
from agent_s.testing.scripted_server import RecordedRequest, ScriptedModelServer

KEY = "sk-feedback-SECRET-0123456789"


def act(code: str) -> str:
    return f"Next step.\n```python\n{code}\n```"


def request_text(request: RecordedRequest) -> str:
    """Every text part of a request's messages, joined (what the model reads)."""
    parts: list[str] = []
    for message in request.body["messages"]:
        content = message["content"]
        if isinstance(content, str):
            parts.append(content)
        else:
            parts += [p["text"] for p in content if p.get("type") == "text"]
    return "\n".join(parts)


def agent_for(
    server: ScriptedModelServer,
    backend: Any,
    tmp_path: Path,
    mode: str = "auto",
    long_side: int | None = None,
    **settings: Any,
) -> Agent:
    model = ModelConfig("openai-compatible", "scripted-model", server.openai_base_url, KEY)
    profiles = None
    if long_side is not None:
        profiles = ProfileRegistry([("scripted-model", {"max_image_long_side": long_side})])
    config = AgentConfig(record_dir=tmp_path / "runs", retry_attempts=1, **settings)
    return Agent(
        model,
        settings=config,
        grounding=GroundingConfig(mode),  # type: ignore[arg-type]
        backend=backend,
        profiles=profiles,
    )


# -- the sentences, without a desktop ----------------------------------------------------------


def _window(wid: int, title: str, app: str = "Mousepad", active: bool = False) -> WindowInfo:
    return WindowInfo(wid, title, app, 100, 0, 0, 640, 480, active)


def test_window_changes_name_windows_by_title_never_by_pixels() -> None:
    before = [_window(1, "notes.txt - Mousepad", active=True), _window(2, "xterm", "XTerm")]
    after = [
        _window(3, "Save As", "Mousepad", active=True),
        _window(1, "*notes.txt - Mousepad"),
    ]
    assert window_changes(before, after) == [
        "new window 'Save As' (Mousepad), focused",
        "window 'xterm' (XTerm) closed",
        "window 'notes.txt - Mousepad' is now titled '*notes.txt - Mousepad'",
    ]
    # the focus moving between windows that were there already
    swapped = [_window(2, "xterm", "XTerm", active=True), _window(1, "notes.txt - Mousepad")]
    assert window_changes(before, swapped) == ["focus moved to 'xterm' (XTerm)"]
    assert window_changes(before, before) == []
    # a window already reported (by open) is not reported again as new or focused
    assert window_changes(before, [*after, _window(2, "xterm", "XTerm")], reported={3}) == [
        "window 'notes.txt - Mousepad' is now titled '*notes.txt - Mousepad'"
    ]


def test_field_changes_quote_short_texts_and_describe_edits_of_long_ones() -> None:
    element = object()

    def field(text: str, role: str = "text", name: str = "") -> FieldState:
        return FieldState(element, role, name, text, len(text), 7)

    assert field_change(field("ab"), field("ab")) is None
    assert field_change(field(""), field("hello")) == "the text field now reads 'hello'"
    long_before = "x" * 200
    assert field_change(field(long_before), field(long_before + "milk")) == (
        "the text field: 'milk' was inserted (now 204 characters)"
    )
    assert field_change(field(long_before + "milk"), field(long_before)) == (
        "the text field: 'milk' was removed (now 200 characters)"
    )
    hidden = field_change(
        field("", "password text"), FieldState(element, "password text", "", "", 6, 7)
    )
    assert hidden == "the password text changed (now 6 characters)"
    # a text too long to read whole is read around the cursor: what precedes it is quoted
    window_before = FieldState(element, "terminal", "", "a" * 100, 50_000, 7, 49_900, 50_000)
    shown = "a" * 93 + "$ ls -l"  # the 100 characters before the cursor, read after
    window_after = FieldState(element, "terminal", "", shown, 50_007, 7, 49_907, 50_007)
    assert field_change(window_before, window_after) == (
        "the terminal: its text changed; before the cursor: "
        f"{('a' * 53 + '$ ls -l')!r} (now 50007 characters)"
    )
    other = FieldState(object(), "entry", "To:", "bob", 3, 7)
    assert (
        field_change(field("ab"), other)
        == "the focus is now on the text field 'To:' which reads 'bob'"
    )


def test_a_field_read_is_bounded_when_the_accessibility_bus_stays_busy() -> None:
    """While another reader (the grounder's walk) holds the bus, a field read gives up after
    ``LOCK_WAIT`` and reads nothing, rather than holding the action up."""
    reader = FieldReader()
    me = WindowInfo(1, "agent", "python", os.getpid(), 0, 0, 10, 10, True)
    with ATSPI_LOCK:
        start = time.monotonic()
        assert reader.read([me]) is None
        took = time.monotonic() - start
    assert LOCK_WAIT - 0.05 <= took < LOCK_WAIT + 0.5


# -- on the real desktop -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def _accessibility_bus(desktop: Any) -> None:
    """Bind AT-SPI in this process before ``apps`` notes the running processes (see
    test_agent_desktop.py): the field reader uses it."""
    AccessibilityTree().applications()


def on_desktop(test: Any) -> Any:
    """A test on the session's desktop, with AT-SPI bound first."""
    return pytest.mark.desktop(pytest.mark.usefixtures("_accessibility_bus")(test))


@on_desktop
def test_native_history_reports_the_click_in_the_image_the_model_saw(
    probe: Any, x11: Any, tmp_path: Path
) -> None:
    """The 1280x800 screen is sent at 1000x625: the next request must repeat the model's own
    numbers, not the screen pixels the click was mapped to."""
    x, y, w, h = probe.boxes["canvas"]
    sent = EncodedImage(b"", "image/png", 1000, 625, 1280, 800)
    pixel = ((x + w // 3) * 1000 // 1280, (y + h // 2) * 625 // 800)
    screen = sent.to_screenshot(*pixel)
    assert screen != pixel
    script = [
        reply(act(f'agent.click("the white probe area ({pixel[0]}, {pixel[1]})")')),
        reply(act("agent.wait(0.1)")),
        reply(act("agent.done()")),
    ]
    with ScriptedModelServer(script) as server:
        agent = agent_for(server, x11, tmp_path, "native", 1000, settle_seconds=0.2)
        result = agent.run("Click the probe area")
    assert result.status is RunStatus.SUCCEEDED, result
    events = probe.wait_for(lambda ev: any(e["type"] == "release" for e in ev))
    assert [(e["x"], e["y"]) for e in events if e["type"] == "press"] == [screen]
    for later in server.requests[1:]:
        text = request_text(later)
        assert f"at ({pixel[0]}, {pixel[1]}) via native" in text
        assert f"({screen[0]}, {screen[1]})" not in text  # no screen pixels for the model
    step = load_trajectory(result.trajectory_dir).steps[0]
    (grounding,) = step.grounding
    assert grounding.point == screen  # the trajectory keeps screen pixels for people
    assert grounding.model_point == pixel
    assert grounding.image_point == pixel
    assert grounding.image_size == (1000, 625)


@on_desktop
def test_a_literal_point_is_clicked_under_auto_grounding(
    probe: Any, x11: Any, tmp_path: Path
) -> None:
    """``--ground auto`` with a coordinate reply (the parser's canonical "(x, y)"): the pixel
    of the 640x400 image sent is clicked; a point off that image is refused in its terms."""
    x, y, w, h = probe.boxes["canvas"]
    pixel = ((x + w // 2) // 2, (y + h // 3) // 2)
    expected = (2 * pixel[0] + 1, 2 * pixel[1] + 1)  # the centre of the 2x2 block
    script = [
        reply(act(f'agent.click(element_description="({pixel[0]}, {pixel[1]})")')),
        reply(act('agent.click(element_description="the canvas (700, 100)")')),
        reply(act("agent.done()")),
    ]
    with ScriptedModelServer(script) as server:
        agent = agent_for(server, x11, tmp_path, "auto", 640, settle_seconds=0.2)
        result = agent.run("Click the probe area")
    assert result.status is RunStatus.SUCCEEDED, result
    events = probe.wait_for(lambda ev: any(e["type"] == "release" for e in ev))
    time.sleep(0.3)  # the refused point must not click either
    presses = [(e["button"], e["x"], e["y"]) for e in probe.events() if e["type"] == "press"]
    assert presses == [(1, *expected)], events
    steps = load_trajectory(result.trajectory_dir).steps
    assert steps[0].grounding[0].grounder == "point"
    assert steps[0].grounding[0].point == expected
    assert steps[1].outcome == "error"
    third = request_text(server.requests[2])
    assert f"at ({pixel[0]}, {pixel[1]}) via point" in third
    assert "(700, 100) is outside the model's pixels frame (640x400)" in third
    assert f"({expected[0]}, {expected[1]})" not in third


def _mousepad_windows(x11: Any) -> list[WindowInfo]:
    return [w for w in x11.windows() if w.app == "Mousepad"]


@on_desktop
def test_open_reports_the_new_window_then_that_it_was_already_open(
    apps: Any, x11: Any, tmp_path: Path
) -> None:
    """``open mousepad`` names its new window; opening it again (by its generic name) brings
    that window forward instead of a second copy; typing into a field reports its text. The
    typing goes to mousepad's search field, so the document stays unmodified: mousepad ended
    with changes offers to restore them on its next start, a dialog in later tests' way."""
    deadline = time.monotonic() + 5
    while _mousepad_windows(x11) and time.monotonic() < deadline:  # an earlier test's
        time.sleep(0.1)
    assert not _mousepad_windows(x11)
    script = [
        reply(act('agent.open("mousepad")')),
        reply(act('agent.open("Text Editor")')),  # the same program, by its generic name
        reply(act('agent.hotkey(["ctrl", "f"])')),
        reply(act('agent.type(text="hello feedback")')),
        reply(act("agent.done()")),
    ]
    with ScriptedModelServer(script) as server:
        result = agent_for(server, x11, tmp_path, settle_seconds=0.3).run("Search the note")
    assert result.status is RunStatus.SUCCEEDED, result
    (window,) = _mousepad_windows(x11)  # opened once, not twice
    assert window.title == "Untitled 1 - Mousepad", window
    steps = load_trajectory(result.trajectory_dir).steps
    assert steps[0].detail.startswith("opened: new window 'Untitled 1 - Mousepad' (Mousepad)")
    assert steps[0].timings["open"] < 10
    assert steps[1].detail.startswith("'Text Editor' was already open: its window")
    assert "not started again" in steps[1].detail
    assert any(s.startswith("the focus is now on the text field") for s in steps[2].observed), (
        steps[2].observed
    )
    (typed,) = steps[3].observed
    assert typed.startswith("the text field")
    assert typed.endswith("now reads 'hello feedback'")
    second, third, fifth = (request_text(server.requests[i]) for i in (1, 2, 4))
    seen = '-> ok: <screen-content source="what the screen showed">opened: new window'
    assert f"{seen} 'Untitled 1 - Mousepad' (Mousepad)" in second
    assert "was already open" in third
    assert "now reads 'hello feedback'" in fifth


@on_desktop
def test_open_says_when_no_window_is_shown_yet(
    apps: Any, x11: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A program that shows no window (``true`` exits at once): ``open`` waits its bounded
    time, then says it launched and nothing is shown yet."""
    monkeypatch.setattr("agent_s.loop.act.OPEN_WAIT", 0.5)
    script = [reply(act('agent.open("true")')), reply(act("agent.done()"))]
    with ScriptedModelServer(script) as server:
        result = agent_for(server, x11, tmp_path, settle_seconds=0).run("Run true")
    assert result.status is RunStatus.SUCCEEDED, result
    step = load_trajectory(result.trajectory_dir).steps[0]
    assert step.detail == "'true' was launched, but no new window is shown yet after 0.5 s " + (
        "(it may still be starting: wait, then look again)"
    )
    assert 0.5 <= step.timings["open"] < 1.5
    assert "no new window is shown yet" in request_text(server.requests[1])


@on_desktop
def test_a_window_closing_is_reported(apps: Any, x11: Any, tmp_path: Path) -> None:
    title = f"feedback-term-{time.monotonic_ns()}"
    apps(
        ["xterm", "-title", title, "-e", "sh", "-c", "read line"],
        window=title,
    )
    x11.activate(title)
    script = [reply(act('agent.hotkey(["enter"])')), reply(act("agent.done()"))]
    with ScriptedModelServer(script) as server:
        result = agent_for(server, x11, tmp_path, settle_seconds=0.5).run("Close the terminal")
    assert result.status is RunStatus.SUCCEEDED, result
    step = load_trajectory(result.trajectory_dir).steps[0]
    assert f"window {title!r} (XTerm) closed" in step.observed
    assert f"window {title!r} (XTerm) closed" in request_text(server.requests[1])
    assert not [w for w in x11.windows() if w.title == title]


@on_desktop
def test_a_click_that_changes_nothing_says_so(probe: Any, x11: Any, tmp_path: Path) -> None:
    """A click on the probe's canvas draws nothing: the model hears that nothing changed
    (a cue that the click missed), and the time the observing took is on the step."""
    at = probe.point("canvas", 0.7, 0.7)
    script = [
        reply(act(f'agent.click("({at.x}, {at.y})")')),
        reply(act("agent.done()")),
    ]
    with ScriptedModelServer(script) as server:
        result = agent_for(server, x11, tmp_path, "ocr", settle_seconds=0.3).run("Click")
    assert result.status is RunStatus.SUCCEEDED, result
    probe.wait_for(lambda ev: any(e["type"] == "release" for e in ev))
    step = load_trajectory(result.trajectory_dir).steps[0]
    assert step.observed == ("nothing on the screen changed",), step.observed
    assert step.timings["effects"] < 0.5
    seen = '-> ok: <screen-content source="what the screen showed">nothing on the screen changed'
    assert seen in request_text(server.requests[1])


@pytest.mark.parametrize(("platform", "key"), [("darwin", "command"), ("linux", "ctrl")])
def test_the_platform_chooses_the_keys_an_action_is_planned_with(
    tmp_path: Path, platform: str, key: str
) -> None:
    """``overwrite=True`` selects all with the platform's key: command+a on macOS."""
    script = [
        reply(act('agent.type(element_description="(10, 10)", text="x", overwrite=True)')),
        reply(act("agent.done()")),
    ]
    backend = RecordingBackend([Image.new("RGB", (1280, 800))] * 2)
    with ScriptedModelServer(script) as server:
        model = ModelConfig("openai-compatible", "scripted-model", server.openai_base_url, KEY)
        config = AgentConfig(settle_seconds=0, record_dir=tmp_path, retry_attempts=1)
        agent = Agent(model, settings=config, backend=backend, platform=platform)  # type: ignore[arg-type]
        result = agent.run("Replace the text")
    assert result.status is RunStatus.SUCCEEDED, result
    assert Hotkey((key, "a")) in backend.ops
    step = load_trajectory(result.trajectory_dir).steps[0]
    assert f"hotkey('{key}', 'a')" in (step.code or "")
