"""Whether LibreOffice Calc's Name Box has the focus, as its accessibility tree shows it.

``set_cell_values`` moves to each cell by focusing the Name Box (ctrl+shift+F5) and typing the
cell's reference there. A busy or just-started Calc may take the focus there later than any
pause, or not at all, and the reference then lands in the cell under the cursor (seen on a
loaded machine: a pause and ``settle`` were not enough). Watching the Name Box itself removes
the guess: the keys that follow are sent once the Name Box holds the focus, and when it never
does, the action stops before typing anything into the wrong place.

The Name Box is found once per Calc process: in a tool bar (the formula bar), the editable
text beside a combo box whose text reads as a cell reference ("A1", "B2:C5", "R1C1"); the
document, menus and lists are never walked (a sheet's tree is huge, a menu's slow). It has the
focus when its text or its combo box says so. Where it cannot be found (no accessibility bus, a
VCL plugin without a tree, another application in front), and until this Calc's tree has once
shown it focused (a version that reports the focus elsewhere must not be refused every time),
the answer is "cannot tell" and the caller waits as before (a pause and ``settle``).
"""

from __future__ import annotations

import re
import threading
import time
from typing import Any

from agent_s.desktop.atspi import ATSPI_LOCK, AccessibilityUnavailable, bindings

#: seconds the Name Box has to take the focus after ctrl+shift+F5
LIMIT = 5.0
#: seconds between two looks at its state
POLL = 0.02
#: the walk that finds the Name Box: at most this many elements and seconds
MAX_NODES = 800
FIND_SECONDS = 6.0
#: seconds a Calc whose Name Box was not found is not looked at again
FORGET_SECONDS = 10.0
LOCK_WAIT = 2.0
_SKIP_ROLES = frozenset(
    {
        "menu bar",
        "menu",
        "popup menu",
        "document spreadsheet",
        "document text",
        "table",
        "tree table",
        "list",
        "status bar",
    }
)
_REFERENCE = re.compile(
    r"\$?[A-Za-z]{1,3}\$?\d{1,7}(?::\$?[A-Za-z]{1,3}\$?\d{1,7})?|R\d{1,7}C\d{1,5}", re.ASCII
)

_lock = threading.Lock()
_found: dict[int, tuple[Any, Any]] = {}  # Calc's pid -> its Name Box's text and combo box
_proven: set[int] = set()  # pids whose tree has shown the Name Box focused
_missing: dict[int, float] = {}  # pid -> when its Name Box was looked for in vain


def wait_focused(pid: int | None, limit: float = LIMIT) -> bool | None:
    """Wait until the Name Box of the Calc process ``pid`` has the focus: True once it has,
    False if it had not after ``limit`` seconds, None when the tree cannot tell. The bus is
    held for one look at a time, so that other readers of the tree are not kept waiting."""
    if not pid:
        return None
    deadline = time.monotonic() + limit
    while True:
        state = _look(pid)
        if state is not False:
            return state
        if time.monotonic() >= deadline:
            with _lock:
                proven = pid in _proven
            if not proven:  # this Calc's tree never showed the focus there: no evidence
                return None
            # before saying no: the element watched may be one Calc replaced without saying
            # so (tool bars rebuilt); found again, the answer stands
            _forget(pid)
            return _look(pid)
        time.sleep(POLL)


def _look(pid: int) -> bool | None:
    """Whether the Name Box has the focus now (None: cannot tell)."""
    if not ATSPI_LOCK.acquire(timeout=LOCK_WAIT):
        return None
    try:
        try:
            atspi = bindings(1500)
        except AccessibilityUnavailable:
            return None
        box = _name_box(atspi, pid)
        if box is None:
            return None
        try:
            states = [element.get_state_set() for element in box]
        except Exception:  # GLib.Error: Calc went away, or rebuilt its tool bars
            _forget(pid)
            return None
        if any(state.contains(atspi.StateType.DEFUNCT) for state in states):
            _forget(pid)
            return None
        focused = any(state.contains(atspi.StateType.FOCUSED) for state in states)
        if focused:
            with _lock:
                _proven.add(pid)
        return focused
    finally:
        ATSPI_LOCK.release()


def _forget(pid: int) -> None:
    with _lock:
        _found.pop(pid, None)


def _name_box(atspi: Any, pid: int) -> Any:
    with _lock:
        if pid in _found:
            return _found[pid]
        missed = _missing.get(pid)
        if missed is not None and time.monotonic() - missed < FORGET_SECONDS:
            return None
    try:
        box = _find(atspi, pid)
    except Exception:  # GLib.Error and friends: the application has no usable tree
        box = None
    with _lock:
        if box is None:
            _missing[pid] = time.monotonic()
        else:
            _missing.pop(pid, None)
            _found[pid] = box
    return box


def _find(atspi: Any, pid: int) -> Any:
    desktop = atspi.get_desktop(0)
    app = None
    for i in range(desktop.get_child_count()):
        child = desktop.get_child_at_index(i)
        if child is not None and child.get_process_id() == pid:
            app = child
            break
    if app is None:
        return None
    deadline = time.monotonic() + FIND_SECONDS
    budget = [MAX_NODES]
    return _walk(atspi, app, False, budget, deadline, 0)


def _walk(
    atspi: Any, node: Any, in_tool_bar: bool, budget: list[int], deadline: float, depth: int
) -> Any:
    budget[0] -= 1
    if budget[0] < 0 or time.monotonic() > deadline or depth > 16:
        return None
    role = node.get_role_name() or ""
    if role in _SKIP_ROLES:
        return None
    in_tool_bar = in_tool_bar or role == "tool bar"
    children = [node.get_child_at_index(i) for i in range(min(node.get_child_count(), 100))]
    children = [c for c in children if c is not None]
    if in_tool_bar:
        roles = [c.get_role_name() for c in children]
        if "combo box" in roles:
            for child, child_role in zip(children, roles, strict=True):
                if child_role == "text" and _shows_a_reference(atspi, child):
                    return child, children[roles.index("combo box")]
    for child in children:
        found = _walk(atspi, child, in_tool_bar, budget, deadline, depth + 1)
        if found is not None:
            return found
    return None


def _shows_a_reference(atspi: Any, element: Any) -> bool:
    """The Name Box shows the cell under the cursor ("A1"); the tool bars' other boxes show a
    font name, a size or a style."""
    if "Text" not in (atspi.Accessible.get_interfaces(element) or []):
        return False
    length = atspi.Text.get_character_count(element)
    text = (atspi.Text.get_text(element, 0, min(length, 64)) or "").strip()
    return _REFERENCE.fullmatch(text) is not None


__all__ = ["LIMIT", "wait_focused"]
