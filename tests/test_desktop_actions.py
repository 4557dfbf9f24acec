"""Every desktop action, end to end on the virtual desktop, by both execution paths.

Each action is parsed from the text a model would write (``parse_action``), given screen points
from what the desktop knows (the probe's widget boxes, the accessibility tree's character
boxes), and then carried out twice, each time on fresh applications:

- ``backend``: ``perform(X11Backend, action.plan(points))``, the live path of agent-s;
- ``pyautogui``: ``action.to_pyautogui(points)`` run in a separate Python process the way an
  OSWorld controller runs it (``python -c "import pyautogui; import time;
  pyautogui.FAILSAFE = False; " + code``, with the desktop's environment).

The checks look at real effects: the probe's event log, files saved to disk, the clipboard and
the PRIMARY selection, the active window as xprop reads it, a LibreOffice document's content.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest
from conftest import atspi_texts
from polling import wait_until as _wait

from agent_s.actions import parse_action
from agent_s.desktop import namebox, ops
from agent_s.desktop.base import perform
from agent_s.desktop.ops import Point
from agent_s.desktop.virtual import VirtualDesktop
from agent_s.errors import ActionExecutionError

OSWORLD_PREFIX = "import pyautogui; import time; pyautogui.FAILSAFE = False; "
INJECTION = "'); import os; os.remove('x"

Runner = Callable[[Any, list[Point]], None]


@pytest.fixture(params=["backend", "pyautogui"])
def run(
    request: pytest.FixtureRequest, x11: Any, desktop: VirtualDesktop, tmp_path: Path
) -> Runner:
    """Carry out a parsed action with its points, by the path this test instance is for."""
    workdir = tmp_path / "controller"
    workdir.mkdir()
    (workdir / "x").write_text("must survive")

    def execute(action: Any, points: list[Point]) -> None:
        assert len(points) == len(action.targets())
        if request.param == "backend":
            perform(x11, action.plan(points))
            return
        code = action.to_pyautogui(points)
        result = subprocess.run(
            [sys.executable, "-c", OSWORLD_PREFIX + code],
            env=desktop.env,
            cwd=workdir,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, f"{code}\n{result.stderr}"
        assert (workdir / "x").read_text() == "must survive"  # text never became code

    return execute


def _copy(x11: Any) -> str:
    x11.hotkey(["ctrl", "c"])
    time.sleep(0.05)
    return x11.clipboard_get()


def _primary(desktop: VirtualDesktop) -> str:
    return subprocess.run(
        ["xclip", "-o", "-selection", "primary"],
        env=desktop.env,
        capture_output=True,
        text=True,
        check=False,
    ).stdout


def _mousepad(apps: Any, x11: Any, path: Path, content: str) -> Any:
    path.write_text(content, encoding="utf-8")
    window = apps(["mousepad", str(path)], window=path.name).window
    x11.activate(window.title)
    return window


def _chars(desktop: VirtualDesktop, content: str) -> list[list[int]]:
    """Screen boxes of each character of mousepad's text, from the accessibility tree."""
    texts = _wait(
        lambda: [t for t in atspi_texts(desktop, "mousepad") if t["text"] == content],
        what="mousepad's text in the accessibility tree",
    )
    return texts[0]["chars"]


def _left_edge(box: list[int]) -> Point:
    return Point(box[0] + 1, box[1] + box[3] // 2)


def _right_edge(box: list[int]) -> Point:
    return Point(box[0] + box[2] - 1, box[1] + box[3] // 2)


# -- mouse actions --------------------------------------------------------------------------------


def test_click(run: Runner, probe: Any) -> None:
    action = parse_action(
        'agent.click("the white probe area", num_clicks=2, button_type="right", '
        'hold_keys=["shift"])'
    )
    at = probe.point("canvas", 0.3, 0.4)
    run(action, [at])
    events = probe.wait_for(lambda ev: len([e for e in ev if e["type"] == "release"]) >= 2)
    presses = [
        (e["button"], e["count"], e["x"], e["y"], e["mods"]) for e in events if e["type"] == "press"
    ]
    assert presses == [(3, 1, at.x, at.y, ["shift"]), (3, 2, at.x, at.y, ["shift"])]


def test_scroll(run: Runner, probe: Any) -> None:
    at = probe.point("canvas")
    run(parse_action('agent.scroll("the white probe area", 3)'), [at])
    run(parse_action('agent.scroll("the white probe area", -2, shift=True)'), [at])
    events = probe.wait_for(lambda ev: len([e for e in ev if e["type"] == "scroll"]) >= 5)
    assert [e["direction"] for e in events if e["type"] == "scroll"] == ["up"] * 3 + ["left"] * 2


def test_drag_and_drop(run: Runner, probe: Any) -> None:
    action = parse_action(
        'agent.drag_and_drop("the left of the probe area", "its right", hold_keys=["ctrl"])'
    )
    start, end = probe.point("canvas", 0.1, 0.5), probe.point("canvas", 0.9, 0.6)
    run(action, [start, end])
    events = probe.wait_for(lambda ev: any(e["type"] == "release" for e in ev))
    (press,) = [e for e in events if e["type"] == "press"]
    (release,) = [e for e in events if e["type"] == "release"]
    assert (press["x"], press["y"], press["mods"]) == (start.x, start.y, ["ctrl"])
    assert (release["x"], release["y"]) == (end.x, end.y)
    assert len([e for e in events if e["type"] == "drag"]) >= 3


def test_highlight_text_span(
    run: Runner, apps: Any, x11: Any, desktop: VirtualDesktop, tmp_path: Path
) -> None:
    content = "hello brave new world"
    _mousepad(apps, x11, tmp_path / "span.txt", content)
    chars = _chars(desktop, content)
    action = parse_action('agent.highlight_text_span("brave", "new")')
    run(action, [_left_edge(chars[6]), _right_edge(chars[14])])
    _wait(lambda: _primary(desktop) == "brave new", what="the highlighted span")


# -- keyboard actions -----------------------------------------------------------------------------


def test_type(run: Runner, apps: Any, x11: Any, desktop: VirtualDesktop, tmp_path: Path) -> None:
    path = tmp_path / "typed.txt"
    _mousepad(apps, x11, path, "old text to overwrite")
    text = 'a<b>c é ✓ 日本 "dq" $HOME `bt` \\ ' + INJECTION + "\nsecond line"
    action = parse_action(
        f"agent.type(element_description='the text area', text={text!r}, overwrite=True, "
        "enter=True)"
    )
    first_char = _chars(desktop, "old text to overwrite")[0]
    run(action, [_left_edge(first_char)])
    x11.hotkey(["ctrl", "s"])
    expected = text + "\n"
    try:
        _wait(lambda: path.read_text(encoding="utf-8") == expected, what="the typed file")
    except AssertionError:
        assert path.read_text(encoding="utf-8") == expected  # shows the difference


def test_hotkey(run: Runner, apps: Any, x11: Any, tmp_path: Path) -> None:
    _mousepad(apps, x11, tmp_path / "keys.txt", "first line\nsecond line")
    run(parse_action("agent.hotkey(['ctrl', 'a'])"), [])
    run(parse_action("agent.hotkey(['ctrl', 'c'])"), [])
    _wait(lambda: x11.clipboard_get() == "first line\nsecond line", what="the copied text")


def test_hold_and_press(run: Runner, apps: Any, x11: Any, tmp_path: Path) -> None:
    _mousepad(apps, x11, tmp_path / "hold.txt", "hello world")
    run(parse_action("agent.hotkey(['ctrl', 'end'])"), [])
    run(parse_action("agent.hold_and_press(['shift'], ['left', 'left', 'left', 'left'])"), [])
    _wait(lambda: _copy(x11) == "orld", what="the selected letters")


# -- applications and windows ---------------------------------------------------------------------


def test_open_application_and_file(
    run: Runner, x11: Any, apps: Any, desktop: VirtualDesktop
) -> None:
    before = {w.id for w in x11.windows()}
    run(parse_action("agent.open('galculator')"), [])
    x11.wait_for_window(lambda w: w.id not in before and w.app == "Galculator", 15)
    path = desktop.home / f"opened-{time.monotonic_ns()}.txt"
    path.write_text("opened by name")
    try:
        run(parse_action(f"agent.open({str(path)!r})"), [])
        window = x11.wait_for_window(lambda w: path.name in w.title, 15)
        assert window.app == "Mousepad"
    finally:
        path.unlink()


def _active_window(desktop: VirtualDesktop) -> int:
    out = subprocess.run(
        ["xprop", "-root", "_NET_ACTIVE_WINDOW"],
        env=desktop.env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return int(out.rsplit("#", 1)[1].split(",")[0].strip(), 16)


def test_switch_applications(run: Runner, x11: Any, apps: Any, desktop: VirtualDesktop) -> None:
    calc = apps(["galculator"], window="galculator").window
    title = f"switch-{time.monotonic_ns()}"
    term = apps(["xterm", "-T", title], window=title).window
    x11.activate(title)
    run(parse_action("agent.switch_applications('galculator')"), [])
    _wait(lambda: _active_window(desktop) == calc.id, what="galculator to be active")
    run(parse_action(f"agent.switch_applications({title!r})"), [])
    _wait(lambda: _active_window(desktop) == term.id, what="the terminal to be active")


# -- spreadsheets ---------------------------------------------------------------------------------

_NS = {
    "office": "urn:oasis:names:tc:opendocument:xmlns:office:1.0",
    "table": "urn:oasis:names:tc:opendocument:xmlns:table:1.0",
    "text": "urn:oasis:names:tc:opendocument:xmlns:text:1.0",
}


def _write_ods(path: Path, sheet: str, rows: list[list[str]]) -> None:
    """A minimal ODF spreadsheet with one sheet of text cells."""
    body = "".join(
        "<table:table-row>"
        + "".join(
            f'<table:table-cell office:value-type="string"><text:p>{v}</text:p></table:table-cell>'
            for v in row
        )
        + "</table:table-row>"
        for row in rows
    )
    namespaces = " ".join(f'xmlns:{k}="{v}"' for k, v in _NS.items())
    content = (
        f'<?xml version="1.0" encoding="UTF-8"?><office:document-content {namespaces} '
        'office:version="1.2"><office:body><office:spreadsheet>'
        f'<table:table table:name="{sheet}">{body}</table:table>'
        "</office:spreadsheet></office:body></office:document-content>"
    )
    manifest = (
        '<?xml version="1.0" encoding="UTF-8"?><manifest:manifest xmlns:manifest='
        '"urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.2">'
        '<manifest:file-entry manifest:full-path="/" manifest:media-type='
        '"application/vnd.oasis.opendocument.spreadsheet"/><manifest:file-entry '
        'manifest:full-path="content.xml" manifest:media-type="text/xml"/></manifest:manifest>'
    )
    with zipfile.ZipFile(path, "w") as ods:
        ods.writestr("mimetype", "application/vnd.oasis.opendocument.spreadsheet")
        ods.writestr("META-INF/manifest.xml", manifest, zipfile.ZIP_DEFLATED)
        ods.writestr("content.xml", content, zipfile.ZIP_DEFLATED)


def _read_ods(path: Path, sheet: str) -> dict[str, tuple[Any, str | None]]:
    """Cell reference -> (value, formula) of the non-empty cells of one sheet, as saved."""

    def attr(element: ElementTree.Element, ns: str, name: str) -> str | None:
        return element.get(f"{{{_NS[ns]}}}{name}")

    try:
        with zipfile.ZipFile(path) as ods:
            # Trusted input: the file LibreOffice just saved in this test.
            root = ElementTree.fromstring(ods.read("content.xml"))  # noqa: S314
    except (zipfile.BadZipFile, KeyError, ElementTree.ParseError):
        return {}  # still being written
    table = next(
        t for t in root.iter(f"{{{_NS['table']}}}table") if attr(t, "table", "name") == sheet
    )
    cells: dict[str, tuple[Any, str | None]] = {}
    for row_number, row in enumerate(table.iter(f"{{{_NS['table']}}}table-row"), 1):
        column = 0
        for cell in row.iter(f"{{{_NS['table']}}}table-cell"):
            kind = attr(cell, "office", "value-type")
            ref = f"{chr(ord('A') + column)}{row_number}"
            column += int(attr(cell, "table", "number-columns-repeated") or 1)
            if kind is None:
                continue
            if kind == "float":
                value: Any = float(attr(cell, "office", "value") or "nan")
            elif kind == "boolean":
                value = attr(cell, "office", "boolean-value") == "true"
            else:
                value = "\n".join("".join(p.itertext()) for p in cell.iter(f"{{{_NS['text']}}}p"))
            cells[ref] = (value, attr(cell, "table", "formula"))
    return cells


def _name_box_works(x11: Any) -> bool:
    """Whether ctrl+shift+F5 reaches Calc's Name Box yet (copying then gives the box's "A1").

    For a second or two after its window shows, a freshly started Calc answers ctrl+c but not
    ctrl+shift+F5, and a set_cell_values run then would type its cell references into cells.
    """
    x11.hotkey(["ctrl", "shift", "f5"])
    focused = _copy(x11).strip() == "A1"
    x11.hotkey(["escape"])  # back to the sheet
    return focused


def test_set_cell_values(run: Runner, apps: Any, x11: Any, tmp_path: Path) -> None:
    path = tmp_path / "budget.ods"
    _write_ods(path, "Data", [["old", "stays"], ["gone", "x"]])
    apps(["localc", "--norestore", str(path)], window="budget.ods", timeout=60)
    _wait(lambda: _name_box_works(x11), timeout=30, what="Calc to take its shortcuts")
    action = parse_action(
        "agent.set_cell_values({'A1': 'Name', 'C1': 3.5, 'D1': True, 'A2': None, "
        "'B2': 'Ünïcode ✓ 日本 <x>', 'C2': '=C1*2', 'A3': \"Two\\nLines\"}, "
        "'budget.ods', 'Data')"
    )
    run(action, [])
    saved = path.stat().st_mtime_ns
    x11.hotkey(["ctrl", "s"])
    _wait(lambda: path.stat().st_mtime_ns != saved, timeout=20, what="Calc to save")
    cells = _wait(lambda: _read_ods(path, "Data"), what="a readable saved file")
    assert cells == {
        "A1": ("Name", None),
        "B1": ("stays", None),
        "C1": (3.5, None),
        "D1": (True, None),
        "B2": ("Ünïcode ✓ 日本 <x>", None),
        "C2": (7.0, "of:=[.C1]*2"),
        "A3": ("Two\nLines", None),
    }


def test_set_cell_values_waits_for_the_name_box_and_stops_when_it_never_takes_the_focus(
    apps: Any, x11: Any, tmp_path: Path
) -> None:
    """Calc's accessibility tree says when its Name Box has the focus; while a dialog holds the
    focus, set_cell_values stops before typing a reference anywhere. Had it gone on, "B1" and
    Enter would have closed the dialog, and the value gone into A1: no cell changes."""
    path = tmp_path / "focus.ods"
    _write_ods(path, "Data", [["old", "stays"]])
    calc = apps(["localc", "--norestore", str(path)], window="focus.ods", timeout=60).window
    _wait(lambda: _name_box_works(x11), timeout=30, what="Calc to take its shortcuts")
    # until this Calc's tree has shown the Name Box focused once, "not focused" is no evidence
    assert namebox.wait_focused(calc.pid, limit=0.3) is None
    x11.hotkey(["ctrl", "shift", "f5"])
    assert namebox.wait_focused(calc.pid) is True
    x11.hotkey(["escape"])
    assert namebox.wait_focused(calc.pid, limit=0.3) is False  # the sheet has it again
    assert namebox.wait_focused(os.getpid(), limit=0.3) is None  # no tree: cannot tell

    x11.hotkey(["ctrl", "1"])  # Format Cells: a dialog of Calc's that keeps the focus
    dialog = x11.wait_for_window(lambda w: w.pid == calc.pid and w.id != calc.id, 20)
    action = parse_action("agent.set_cell_values({'B1': 'typed'}, 'focus.ods')")
    plan = action.plan([])
    assert isinstance(plan[0], ops.Activate)  # refused while a dialog is open: skipped here,
    # as if the dialog had come up after it (a recovery or tip dialog of a new Calc does)
    with pytest.raises(ActionExecutionError, match="Name Box did not take the focus") as err:
        perform(x11, plan[2:])
    assert "before B1" in str(err.value)
    x11.activate(dialog.title)
    x11.hotkey(["escape"])
    _wait(lambda: dialog.id not in {w.id for w in x11.windows()}, what="the dialog to close")
    saved = path.stat().st_mtime_ns
    x11.hotkey(["ctrl", "s"])
    _wait(lambda: path.stat().st_mtime_ns != saved, timeout=20, what="Calc to save")
    cells = _wait(lambda: _read_ods(path, "Data"), what="a readable saved file")
    assert cells == {"A1": ("old", None), "B1": ("stays", None)}


# -- waiting --------------------------------------------------------------------------------------


def test_wait(run: Runner) -> None:
    start = time.monotonic()
    run(parse_action("agent.wait(0.4)"), [])
    assert time.monotonic() - start >= 0.4
