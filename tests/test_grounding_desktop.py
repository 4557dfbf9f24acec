"""Grounding on real applications on the session's virtual desktop.

Ground truth is the accessibility tree (each element's on-screen box), read independently of
the grounder under test; OCR must land inside the same boxes. A text span found by OCR in an
xterm is dragged over for real, and the selection the terminal reports must be that text.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent_s.cli.main import app
from agent_s.desktop.ops import Point
from agent_s.grounding import (
    AccessibilityGrounder,
    AccessibilityTree,
    GrounderUnavailable,
    NotFound,
    Observation,
    OcrGrounder,
    build_grounder,
)
from agent_s.grounding.types import Box

pytestmark = pytest.mark.desktop


@pytest.fixture(scope="module", autouse=True)
def _accessibility_bus(desktop: Any) -> None:
    """Bind this process's AT-SPI to the desktop's accessibility bus before any test's ``apps``
    fixture notes which processes already ran: the bus launcher daemonises (its parent is
    init, not dbus-daemon), so ``apps`` would otherwise end it with the test's own programs,
    and ``Atspi`` in this process cannot reconnect to a new one."""
    AccessibilityTree().applications()


def _observe(x11: Any) -> Observation:
    """The screen once it is still (pointer parked in a corner, so no tooltip shows)."""
    x11.move(Point(1270, 790))  # near a corner (the corner itself is pyautogui's fail-safe)
    previous = None
    deadline = time.monotonic() + 4
    while True:
        shot = x11.capture()
        pixels = shot.image.tobytes()
        if pixels == previous or time.monotonic() > deadline:
            return Observation(shot, tuple(x11.windows()), x11.geometry())
        previous = pixels
        time.sleep(0.15)


def _truth(app: str) -> dict[tuple[str, str], Box]:
    """(role, name) -> box of every showing element of ``app``, straight from AT-SPI."""
    deadline = time.monotonic() + 5
    while True:
        elements = [e for e in AccessibilityTree().elements() if e.app == app]
        if elements or time.monotonic() > deadline:
            return {(e.role, e.name): e.box for e in elements}
        time.sleep(0.1)


def _box(truth: dict[tuple[str, str], Box], name: str, roles: tuple[str, ...]) -> Box:
    found = [box for (role, n), box in truth.items() if n == name and role in roles]
    assert len(found) == 1, f"{name!r} {roles}: {found} in {sorted(truth)}"
    return found[0]


def test_galculator_buttons_menus_and_glyphs(apps: Any, x11: Any) -> None:
    apps(["galculator"], window="galculator")
    observation = _observe(x11)
    truth = _truth("galculator")
    a11y, ocr = AccessibilityGrounder(), OcrGrounder()
    for expression, name in [
        ("the 7 button", "7"),
        ("the = key", "="),
        ("AC", "AC"),
        ("the sqrt button", "sqrt"),
        ("the <- button", "<-"),
    ]:
        target = _box(truth, name, ("toggle button", "push button"))
        result = a11y.ground(expression, observation)
        assert target.contains(result.point), result
        assert result.details["name"] == name
    target = _box(truth, "File", ("menu",))
    assert target.contains(a11y.ground("the File menu", observation).point)
    # OCR lands in the same boxes for labels it can read: words, menus, symbols.
    for expression, name, roles in [
        ("the File menu", "File", ("menu",)),
        ("Calculator", "Calculator", ("menu",)),
        ("sqrt", "sqrt", ("toggle button",)),
        ("the AC button", "AC", ("toggle button",)),
        ("the <- key", "<-", ("toggle button",)),
    ]:
        result = ocr.ground(expression, observation)
        assert _box(truth, name, roles).contains(result.point), (expression, result)
    assert ocr.reader.passes == 1
    # auto answers from the tree first, and says so.
    result = build_grounder("auto").ground("the 9 button", observation)
    assert result.grounder == "a11y"
    assert result.attempts[0].outcome == "answered"
    assert _box(truth, "9", ("toggle button",)).contains(result.point)
    with pytest.raises(NotFound) as err:
        a11y.ground("the third 7 button", observation)
    assert err.value.candidates


def test_the_tree_is_read_once_per_observation_prefetched_or_not(apps: Any, x11: Any) -> None:
    apps(["galculator"], window="galculator")
    observation = _observe(x11)
    a11y = AccessibilityGrounder()
    a11y.prefetch(observation)  # read in the background, as the screen is captured
    elements = a11y.snapshot(observation)
    assert any(e.name == "7" for e in elements)
    assert a11y.snapshot(observation) is elements  # the same read, not a second one
    a11y.prefetch(observation)
    assert a11y.snapshot(observation) is elements
    again = Observation(observation.screenshot, observation.windows, observation.geometry)
    fresh = a11y.snapshot(again)  # a new observation is a new look at the tree
    assert fresh is not elements
    assert [(e.name, e.role) for e in fresh] == [(e.name, e.role) for e in elements]
    assert a11y.ground("the 7 button", again).details["name"] == "7"


def test_gtk3_demo_tabs_buttons_and_list_rows(apps: Any, x11: Any) -> None:
    apps(["gtk3-demo"], window="gtk3-demo")
    observation = _observe(x11)
    truth = _truth("gtk3-demo")
    a11y, ocr = AccessibilityGrounder(), OcrGrounder()
    run = _box(truth, "Run", ("push button",))
    source = _box(truth, "Source", ("page tab",))
    for grounder in (a11y, ocr):
        assert run.contains(grounder.ground("the Run button", observation).point)
        assert source.contains(grounder.ground("the Source tab", observation).point)
    result = a11y.ground("the Info tab", observation)
    assert result.details["role"] == "page tab"
    builder = _box(truth, "Builder", ("table cell",))  # a row of the demo list
    assert builder.contains(a11y.ground("Builder", observation).point)
    assert builder.contains(ocr.ground("Builder", observation).point)


def test_mousepad_menus_and_document_numbers_via_the_chain(
    apps: Any, x11: Any, tmp_path: Path
) -> None:
    doc = tmp_path / "invoice.txt"
    doc.write_text("Invoice 2024-0042\nTotal due: 318.75 EUR\nThank you for your order.\n")
    apps(["mousepad", str(doc)], window="invoice")
    observation = _observe(x11)
    truth = _truth("mousepad")
    search = _box(truth, "Search", ("menu",))
    auto = build_grounder("auto")
    result = auto.ground("the Search menu", observation)
    assert result.grounder == "a11y"
    assert search.contains(result.point)
    # Words inside a document are no element's name: accessibility says so, OCR finds them.
    total = auto.ground("318.75", observation)
    assert total.grounder == "ocr"
    assert total.details["words"] == ["318.75"]
    assert [a.outcome for a in total.attempts] == ["not_found", "answered"]
    invoice = auto.ground("2024-0042", observation)
    assert invoice.point.y < total.point.y  # the line above
    ocr_search = OcrGrounder().ground("the Search menu", observation)
    assert search.contains(ocr_search.point)


def test_xterm_text_numbers_and_a_real_span_selection(apps: Any, x11: Any, desktop: Any) -> None:
    script = (
        "printf 'build 1874 passed in 12.5s\\nalpha beta gamma delta\\n"
        "ERROR: disk quota exceeded\\n'; sleep 300"
    )
    launched = apps(
        [
            "xterm",
            "-fa",
            "DejaVu Sans Mono",
            "-fs",
            "12",
            "-geometry",
            "80x12+100+100",
            "-title",
            "grounding-xterm",
            "-e",
            "sh",
            "-c",
            script,
        ],
        window="grounding-xterm",
    )
    x11.activate("grounding-xterm")
    observation = _observe(x11)
    window = launched.window
    inside = Box(window.x, window.y, window.width, window.height)
    ocr = OcrGrounder()
    for expression in ("1874", "12.5s", "ERROR: disk quota", "the quota"):
        assert inside.contains(ocr.ground(expression, observation).point), expression
    # xterm has no accessibility tree: the chain says so and moves on to OCR.
    result = build_grounder("auto").ground("exceeded", observation)
    assert result.grounder == "ocr"
    assert result.attempts[0].grounder == "a11y"
    assert result.attempts[0].outcome == "unavailable"
    span = ocr.span("beta", "delta", observation)
    assert span.words == ("beta", "gamma", "delta")
    x11.drag(span.start, span.end)
    selected = _primary_selection(desktop)
    assert selected.strip() == "beta gamma delta"


def _primary_selection(desktop: Any) -> str:
    deadline = time.monotonic() + 3
    while True:
        done = subprocess.run(
            ["xclip", "-o", "-selection", "primary"],
            env=desktop.env,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
        if done.stdout.strip() or time.monotonic() > deadline:
            return done.stdout
        time.sleep(0.1)


def test_a_tk_window_makes_accessibility_unavailable_and_ocr_answers(probe: Any, x11: Any) -> None:
    observation = _observe(x11)
    with pytest.raises(GrounderUnavailable) as err:
        AccessibilityGrounder().ground("probe area", observation)
    assert err.value.reason in ("active window not accessible", "no accessible applications")
    result = build_grounder("auto").ground("probe area", observation)
    assert result.grounder == "ocr"
    assert [(a.grounder, a.outcome) for a in result.attempts] == [
        ("a11y", "unavailable"),
        ("ocr", "answered"),
    ]
    x, y, w, h = probe.boxes["canvas"]
    assert Box(x, y, w, h).contains(result.point)


def test_cli_grounds_on_the_live_screen(apps: Any, x11: Any) -> None:
    apps(["galculator"], window="galculator")
    _observe(x11)
    truth = _truth("galculator")
    result = CliRunner().invoke(app, ["ground", "the MS button", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["grounder"] == "a11y"
    assert _box(truth, "MS", ("toggle button",)).contains(Point(*data["point"]))


def test_accessibility_without_a_bus_says_so() -> None:
    # A fresh process: Atspi binds to the bus once, so the missing bus is seen by a new one.
    code = (
        "from PIL import Image\n"
        "from agent_s.desktop.base import Screenshot\n"
        "from agent_s.grounding import AccessibilityGrounder, GrounderUnavailable, Observation\n"
        "shot = Screenshot(Image.new('RGB', (8, 8)))\n"
        "try:\n"
        "    AccessibilityGrounder().ground('OK', Observation(shot))\n"
        "except GrounderUnavailable as err:\n"
        "    print(err.reason)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "DBUS_SESSION_BUS_ADDRESS"}
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.stdout.strip() == "no D-Bus session bus", done.stderr


def test_an_application_with_no_window_open_is_not_grounded_on(apps: Any, x11: Any) -> None:
    """An application that just closed can linger on the accessibility bus with its old
    extents: an element of a process with no window listed is never a target (a click there
    would land on whatever is now in its place)."""
    calculator = apps(["galculator"], window="galculator").window
    demo = apps(["mousepad"], window="mousepad").window  # another application's window
    subprocess.run(  # away from the calculator: nothing covers its buttons
        ["xdotool", "windowmove", str(demo.id), "700", "420"], env=x11.env, check=True, timeout=10
    )
    x11.activate("galculator")
    seen = _observe(x11)
    assert AccessibilityGrounder().ground("the 7 button", seen).details["name"] == "7"
    others = tuple(w for w in seen.windows if w.pid != calculator.pid)
    assert others
    gone = Observation(seen.screenshot, others, seen.geometry)  # as if its window had closed
    with pytest.raises(NotFound):
        AccessibilityGrounder().ground("the 7 button", gone)
