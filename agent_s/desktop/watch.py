"""What an action changed on the desktop, as far as the agent can see it: windows that appeared
or closed, the focus moving to another window, a window's title changing, and the focused
field's text changing (read through AT-SPI where the application has a tree).

    reader = FieldReader()
    before = Glimpse(tuple(backend.windows()), reader.read(windows))   # just before the action
    ...                                                                 # the action
    after = Glimpse(tuple(backend.windows()), reader.read(after_windows))
    changes(before, after)   # ["new window 'Untitled 1 - Mousepad' (Mousepad), focused", ...]

Each sentence is written for the model: titles and application names, never screen pixels. A
glimpse is cheap: one window list (a few X requests) and, for the field, one AT-SPI Collection
query to the active window's application plus one read of its text (about 1-3 ms together).
The text of a password field is never read out: only that it changed and its length.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, TimeoutError
from dataclasses import dataclass
from typing import Any

from agent_s.desktop.atspi import ATSPI_LOCK, AccessibilityUnavailable, bindings
from agent_s.desktop.base import WindowInfo

LOCK_WAIT = 1.0  # seconds a field read waits for a walk to end before reading nothing
READ_BUDGET = 0.3  # seconds a field read may take once it has the bus
SLOW_PAUSE = 60.0  # seconds an application that took longer is left alone
# applications never asked for their focused element: LibreOffice answers the query by walking
# every cell of a sheet, and takes no input until it is done (a row typed after it is lost)
UNASKED = frozenset({"soffice"})
MAX_FIELD_CHARS = 20_000  # text read from the focused field (a document's first characters)
QUOTE_CHARS = 120  # the longest text quoted to the model whole
MAX_SENTENCES = 6  # window changes reported per action; the rest are counted
_RESCAN_SECONDS = 5.0  # how often to look again for an application that has no tree
_FIELD_ROLES = frozenset(
    {
        "text",
        "entry",
        "password text",
        "terminal",
        "paragraph",
        "document text",
        "editbar",
        "spin button",
        "combo box",
    }
)


@dataclass(frozen=True)
class FieldState:
    """The focused element of the active window's application, when it holds text."""

    element: Any  # the AT-SPI accessible (the same object while the element lives)
    role: str
    name: str
    text: str  # at most ``MAX_FIELD_CHARS`` characters, from ``start``: around the cursor
    length: int  # all characters
    pid: int
    start: int = 0  # the offset of ``text`` in the whole
    caret: int = -1  # the cursor's offset, -1 if unknown

    @property
    def before_caret(self) -> str:
        """Up to 60 characters just before the cursor (what was typed last), as read."""
        end = self.caret - self.start
        if self.caret < 0 or not 0 <= end <= len(self.text):
            return ""
        return self.text[max(0, end - 60) : end]

    @property
    def secret(self) -> bool:
        return self.role == "password text"

    def label(self) -> str:
        """``text field 'To:'`` / ``terminal``: how the model is told which field."""
        kind = "text field" if self.role in ("text", "entry") else self.role
        return f"{kind} {self.name[:40]!r}" if self.name else kind

    def same_element(self, other: FieldState) -> bool:
        return self.pid == other.pid and self.element == other.element


@dataclass(frozen=True)
class Glimpse:
    """The windows (front-most first) and the focused field at one moment."""

    windows: tuple[WindowInfo, ...]
    field: FieldState | None = None


def active(windows: Sequence[WindowInfo]) -> WindowInfo | None:
    return next((w for w in windows if w.active), None)


def window_name(window: WindowInfo) -> str:
    """``'Untitled 1 - Mousepad' (Mousepad)``: how the model is told which window."""
    title = window.title[:80] or "(untitled)"
    return f"{title!r} ({window.app})" if window.app else repr(title)


def new_windows(before: Sequence[WindowInfo], after: Sequence[WindowInfo]) -> list[WindowInfo]:
    known = {w.id for w in before}
    return [w for w in after if w.id not in known]


def window_changes(
    before: Sequence[WindowInfo],
    after: Sequence[WindowInfo],
    *,
    reported: Collection[int] = (),
) -> list[str]:
    """What changed between two window lists, as sentences for the model. Windows in
    ``reported`` (ids already named, e.g. by ``open``) are not reported as new or focused."""
    sentences: list[str] = []
    old = {w.id: w for w in before}
    now = {w.id: w for w in after}
    for window in new_windows(before, after):
        if window.id in reported:
            continue
        focused = ", focused" if window.active else ""
        sentences.append(f"new window {window_name(window)}{focused}")
    for window in before:
        if window.id not in now:
            sentences.append(f"window {window_name(window)} closed")
    for window in after:
        earlier = old.get(window.id)
        if earlier is not None and earlier.title != window.title:
            sentences.append(f"window {earlier.title[:80]!r} is now titled {window.title[:80]!r}")
    was, is_now = active(before), active(after)
    moved = is_now is not None and (was is None or was.id != is_now.id)
    if is_now is not None and moved and is_now.id in old and is_now.id not in reported:
        sentences.append(f"focus moved to {window_name(is_now)}")
    elif is_now is None and was is not None and was.id in now:
        sentences.append("no window has the keyboard focus now")
    if len(sentences) > MAX_SENTENCES:
        more = len(sentences) - MAX_SENTENCES + 1
        sentences = [*sentences[: MAX_SENTENCES - 1], f"and {more} more window changes"]
    return sentences


def field_change(before: FieldState | None, after: FieldState | None) -> str | None:
    """How the focused field changed, for the model; None when nothing was seen to change."""
    if after is None:
        return None
    if before is not None and before.same_element(after):
        if before.text == after.text and before.length == after.length:
            return None
        if after.secret:
            return f"the {after.label()} changed (now {after.length} characters)"
        if after.length <= QUOTE_CHARS:
            return f"the {after.label()} now reads {after.text!r}"
        unread = before.length - len(before.text), after.length - len(after.text)
        if before.start == after.start and unread[0] == unread[1]:
            edit = _edit(before.text, after.text)  # the same stretch of text, read whole
        else:
            near = after.before_caret
            edit = f"its text changed; before the cursor: {near!r}" if near else "its text changed"
        return f"the {after.label()}: {edit} (now {after.length} characters)"
    if after.secret:
        return f"the focus is now on the {after.label()}"
    if after.length <= QUOTE_CHARS:
        holds = f"which reads {after.text!r}" if after.text else "(empty)"
        return f"the focus is now on the {after.label()} {holds}"
    return f"the focus is now on the {after.label()} ({after.length} characters)"


def _edit(before: str, after: str) -> str:
    """``'milk' was inserted`` / ``'x' was replaced by 'y'`` / ``'z' was removed``."""
    prefix = 0
    limit = min(len(before), len(after))
    while prefix < limit and before[prefix] == after[prefix]:
        prefix += 1
    suffix = 0
    while (
        suffix < limit - prefix
        and before[len(before) - 1 - suffix] == after[len(after) - 1 - suffix]
    ):
        suffix += 1
    removed = before[prefix : len(before) - suffix]
    inserted = after[prefix : len(after) - suffix]
    if removed and inserted:
        return f"{_clip(removed)!r} was replaced by {_clip(inserted)!r}"
    if inserted:
        return f"{_clip(inserted)!r} was inserted"
    if removed:
        return f"{_clip(removed)!r} was removed"
    return "its text changed beyond the part read"


def _clip(text: str, limit: int = 80) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}…{text[-half:]}"


def changes(before: Glimpse, after: Glimpse) -> list[str]:
    """Every change seen between two glimpses, windows first."""
    sentences = window_changes(before.windows, after.windows)
    field = field_change(before.field, after.field)
    if field is not None:
        sentences.append(field)
    return sentences


def await_typed(
    fields: FieldReader,
    windows: Callable[[], Sequence[WindowInfo]],
    text: str,
    timeout: float,
    poll: float = 0.1,
) -> None:
    """After typing ``text``, wait (at most ``timeout`` s) until the focused field shows its
    end: an application still taking the text (a GTK file dialog completing a path) drops an
    Enter sent before it has. A field that cannot be read, a password field, or an error
    while reading is not waited for: observing never fails an action."""
    tail = text.strip()[-40:]
    deadline = time.monotonic() + timeout
    while tail:
        try:
            state = fields.read(windows())
        except Exception:  # the desktop's own errors: nothing to wait for
            return
        if state is None or state.secret or tail in state.text:
            return
        if time.monotonic() >= deadline:
            return
        time.sleep(poll)


class FieldReader:
    """Reads the focused element of the active window's application through AT-SPI.

    One Collection query (``get_matches`` for the FOCUSED state, answered inside the
    application) finds it; its text is read once. Applications are found by the window's pid
    and remembered. Everything that fails (no session bus, no bindings, an application with no
    tree, one that went away) reads as "no field": observing must never fail an action.

    A read is bounded in time: it runs on a worker thread and is given up after ``budget``
    seconds of its own (waiting for the accessibility grounder's walk to release the bus is
    not counted, up to ``LOCK_WAIT``). An application that answered that slowly (LibreOffice
    on a busy bus takes seconds) is not asked again for ``SLOW_PAUSE`` seconds, and while a
    given-up read still waits for its answer no new one starts. The applications of
    ``UNASKED`` are never asked: the query itself stops them taking input.
    """

    def __init__(self, budget: float = READ_BUDGET) -> None:
        self.budget = budget
        self._atspi: Any = None
        self._unavailable = False
        self._retry_at = 0.0  # no accessibility bus: not asked again before this
        self._apps: dict[int, Any] = {}
        self._missing: dict[int, float] = {}  # pid -> when it was last looked for in vain
        self._slow: dict[int, float] = {}  # pid -> when it last took longer than the budget
        self._rule: Any = None
        self._worker: ThreadPoolExecutor | None = None
        self._pending: Future[FieldState | None] | None = None

    def read(self, windows: Sequence[WindowInfo]) -> FieldState | None:
        """The focused field of the active window's application, or None."""
        window = active(windows)
        if window is None or not window.pid or not os.path.exists(f"/proc/{window.pid}"):
            return None
        pid = window.pid
        slow = self._slow.get(pid)
        if slow is not None and time.monotonic() - slow < SLOW_PAUSE:
            return None
        if self._pending is not None and not self._pending.done():
            return None  # an earlier read is still waiting for an application's answer
        if self._worker is None:
            self._worker = ThreadPoolExecutor(1, thread_name_prefix="agent-s-field")
        began: list[float] = []  # when the read got the bus
        got = threading.Event()
        future = self._worker.submit(self._locked_read, pid, began, got)
        self._pending = future
        if not got.wait(LOCK_WAIT) or not began:
            return None  # the bus stayed busy (or AT-SPI is unavailable)
        try:
            return future.result(timeout=max(0.0, began[0] + self.budget - time.monotonic()))
        except TimeoutError:
            self._slow[pid] = time.monotonic()
            return None

    def _locked_read(self, pid: int, began: list[float], got: threading.Event) -> FieldState | None:
        if not ATSPI_LOCK.acquire(timeout=LOCK_WAIT):
            got.set()
            return None
        began.append(time.monotonic())
        got.set()
        try:
            atspi = self._bindings()
            found = None if atspi is None else self._read(atspi, pid)
        except Exception:  # GLib.Error and friends: the application or element went away
            self._apps.pop(pid, None)
            found = None
        finally:
            ATSPI_LOCK.release()
        if time.monotonic() - began[0] > self.budget:
            self._slow[pid] = time.monotonic()
        return found

    def _bindings(self) -> Any:
        if self._atspi is not None or self._unavailable or time.monotonic() < self._retry_at:
            return self._atspi
        try:
            Atspi = bindings(1500)  # noqa: N806 - the module, named as gi names it
        except AccessibilityUnavailable as err:
            self._unavailable = err.final  # else: the bus may come up later (a new desktop)
            self._retry_at = time.monotonic() + _RESCAN_SECONDS
            return None
        self._atspi = Atspi
        states = Atspi.StateSet.new([Atspi.StateType.FOCUSED])
        none = Atspi.CollectionMatchType.NONE
        self._rule = Atspi.MatchRule.new(
            states, Atspi.CollectionMatchType.ALL, {}, none, [], none, [], none, False
        )
        return Atspi

    def _application(self, atspi: Any, pid: int) -> Any:
        if pid in self._apps:
            return self._apps[pid]
        last = self._missing.get(pid)
        if last is not None and time.monotonic() - last < _RESCAN_SECONDS:
            return None
        desktop = atspi.get_desktop(0)
        for i in range(desktop.get_child_count()):
            app = desktop.get_child_at_index(i)
            if app is not None:
                self._apps.setdefault(app.get_process_id(), app)
        if pid not in self._apps:
            self._missing[pid] = time.monotonic()
            return None
        self._missing.pop(pid, None)
        return self._apps[pid]

    def _read(self, atspi: Any, pid: int) -> FieldState | None:
        app = self._application(atspi, pid)
        if app is None or (app.get_name() or "") in UNASKED:
            return None
        order = atspi.CollectionSortOrder.CANONICAL
        found = atspi.Collection.get_matches(app, self._rule, order, 8, True)
        for element in reversed(found or []):  # the deepest focused element last
            role = element.get_role_name() or ""
            states = element.get_state_set()
            editable = states.contains(atspi.StateType.EDITABLE)
            if role not in _FIELD_ROLES and not editable:
                continue
            if "Text" not in (atspi.Accessible.get_interfaces(element) or []):
                continue
            length = atspi.Text.get_character_count(element)
            caret = atspi.Text.get_caret_offset(element)
            name = (element.get_name() or "").strip()
            if role == "password text":  # a password is never read, only counted
                return FieldState(element, role, name, "", length, pid)
            # a long text is read around the cursor (a terminal's or a document's end)
            anchor = caret if 0 <= caret <= length else length
            start = max(0, min(anchor - MAX_FIELD_CHARS // 2, length - MAX_FIELD_CHARS))
            text = atspi.Text.get_text(element, start, min(length, start + MAX_FIELD_CHARS)) or ""
            return FieldState(element, role, name, text, length, pid, start, caret)
        return None


__all__ = [
    "ATSPI_LOCK",
    "FieldReader",
    "FieldState",
    "Glimpse",
    "active",
    "changes",
    "field_change",
    "new_windows",
    "window_changes",
    "window_name",
]
