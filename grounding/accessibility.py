"""Accessibility grounding on Linux: the AT-SPI tree of the applications on the screen.

Every element that is SHOWING and VISIBLE, has a name (its own, or the label it is "labelled
by") and an on-screen box is a candidate; the referring expression's phrase is matched against
names (and descriptions), its role word against AT-SPI roles, and the element's box centre is
the point. A description with a kind but no label ("the second tab", "the text field below
Subject") takes every element of that kind as a candidate. The rest of the description (colour,
position, ordinal, a relation to an anchor element, found first the same way) chooses among the
candidates (``matching.resolve``); candidates nothing tells apart are reported as ambiguous
(``NotFound``, reason ``ambiguous``), never guessed.

AT-SPI extents are screen coordinates, except from a toolkit drawing at a scale of its
own: GTK at ``GDK_SCALE=2`` on X11 reports unscaled (half-size) extents. An application's scale
is read off the observation (its top-level frame's extents against its window's size) and its
boxes are mapped through ``transform.extents_to_screen``; whether an element is on the
screenshot is the transform chain's answer. Elements covered by another application's window are
skipped, using the window stack of the observation.

When accessibility cannot answer it says why (``GrounderUnavailable``) so a chain moves on: no
D-Bus session bus, the ``Atspi`` bindings missing, no application on the bus, or, when nothing
matched, an active window whose application has no tree (Tk never has one; Qt needs
``QT_ACCESSIBILITY=1``; Chromium ``--force-renderer-accessibility``).

``Atspi`` connects to the session bus named by ``DBUS_SESSION_BUS_ADDRESS`` when it is first
initialised and stays there, so this module imports it lazily, on the first look: whoever runs
agent-s on a virtual desktop must set that variable first (the test fixtures do).
"""

from __future__ import annotations

import functools
import re
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, replace
from typing import Any

from agent_s.desktop import atspi
from agent_s.desktop.atspi import ATSPI_LOCK
from agent_s.desktop.base import WindowInfo
from agent_s.desktop.ops import Point
from agent_s.grounding import matching
from agent_s.grounding.query import Query, normalize, parse_query
from agent_s.grounding.transform import CoordinateChain, extents_to_screen
from agent_s.grounding.types import (
    Box,
    Candidate,
    GrounderUnavailable,
    GroundingResult,
    NotFound,
    Observation,
)

_ROLES: dict[str, frozenset[str]] = {
    "button": frozenset({"push button", "toggle button", "button", "menu button", "spin button"}),
    "field": frozenset(
        {
            "text",
            "entry",
            "password text",
            "spin button",
            "combo box",
            "terminal",
            "editbar",
            "paragraph",
            "document text",
        }
    ),
    "menu": frozenset({"menu", "menu item", "check menu item", "radio menu item", "menu bar"}),
    # a stack switcher's buttons look like tabs: models call them tabs
    "tab": frozenset({"page tab", "radio button"}),
    "link": frozenset({"link"}),
    "icon": frozenset({"icon", "image", "desktop icon"}),
    "label": frozenset({"label", "static", "caption"}),
    "checkbox": frozenset({"check box", "check menu item", "toggle button", "switch"}),
    "radio": frozenset({"radio button", "radio menu item"}),
    "combo": frozenset({"combo box", "menu button"}),
    "cell": frozenset({"table cell", "cell"}),
    "heading": frozenset({"heading", "table column header", "column header", "row header"}),
    "slider": frozenset({"slider", "scroll bar"}),
    "list": frozenset({"list item"}),
    "window": frozenset({"frame", "dialog", "window", "alert"}),
}
_FIELD_ROLES = _ROLES["field"]
_CONTAINER_ROLES = frozenset(
    {
        "frame",
        "window",
        "dialog",
        "application",
        "filler",
        "panel",
        "scroll pane",
        "viewport",
        "layered pane",
        "split pane",
        "root pane",
        "tool bar",
        "menu bar",
        "status bar",
        "page tab list",
        "redundant object",
        "section",
        "document frame",
        "document web",
        "internal frame",
    }
)
_TOP_LEVEL_ROLES = frozenset({"frame", "dialog", "window", "alert", "file chooser"})


@dataclass(frozen=True)
class Element:
    """One showing, named element with its box: its AT-SPI extents as read (screen coordinates
    but for a toolkit's own scale), in screen coordinates once ``AccessibilityGrounder.snapshot``
    has mapped it."""

    name: str
    role: str
    description: str
    box: Box
    pid: int
    app: str
    window: str  # the name of its top-level frame or dialog

    def describe(self) -> str:
        return f"{self.role} {self.name!r} in {self.app}"


class AccessibilityTree:
    """Reads the AT-SPI tree: one snapshot of every showing named element, with limits.

    ``timeout_ms`` bounds each D-Bus call (an application that hangs must not hang us);
    ``max_nodes`` and ``max_seconds`` bound a walk; a node's children beyond ``max_children``
    are skipped, and beyond ``max_managed`` for containers that manage their descendants (a
    spreadsheet's million cells, a tree view's rows: the first rows are the visible ones).
    """

    def __init__(
        self,
        *,
        timeout_ms: int = 1500,
        max_nodes: int = 8000,
        max_seconds: float = 4.0,
        max_children: int = 500,
        max_managed: int = 200,
    ) -> None:
        self.timeout_ms = timeout_ms
        self.max_nodes = max_nodes
        self.max_seconds = max_seconds
        self.max_children = max_children
        self.max_managed = max_managed
        self._atspi: Any = None
        self._lock = ATSPI_LOCK  # libatspi is not thread-safe: one caller at a time

    def _bindings(self) -> Any:
        if self._atspi is not None:
            return self._atspi
        try:
            self._atspi = atspi.bindings(self.timeout_ms)
        except atspi.AccessibilityUnavailable as err:
            raise GrounderUnavailable(str(err), grounder="a11y", reason=err.reason) from err
        return self._atspi

    def applications(self) -> list[tuple[str, int]]:
        """(name, pid) of every application on the accessibility bus."""
        atspi = self._bindings()
        desktop = atspi.get_desktop(0)
        apps = []
        for i in range(desktop.get_child_count()):
            app = _safe(lambda i=i: desktop.get_child_at_index(i))
            if app is not None:
                apps.append((_safe(app.get_name) or "", _safe(app.get_process_id) or 0))
        return apps

    def elements(self) -> list[Element]:
        """Every showing, visible, named element with a non-empty box, in tree order."""
        with self._lock:
            atspi = self._bindings()
            desktop = atspi.get_desktop(0)
            found: list[Element] = []
            budget = _Budget(self.max_nodes, time.monotonic() + self.max_seconds)
            for i in range(desktop.get_child_count()):
                app = _safe(lambda i=i: desktop.get_child_at_index(i))
                if app is None or budget.spent:
                    continue
                name = _safe(app.get_name) or ""
                pid = _safe(app.get_process_id) or 0
                for j in range(min(_safe(app.get_child_count) or 0, self.max_children)):
                    top = _safe(lambda j=j, app=app: app.get_child_at_index(j))
                    if top is not None:
                        self._walk(atspi, top, name, pid, "", found, budget)
            return found

    def _walk(
        self,
        atspi: Any,
        node: Any,
        app: str,
        pid: int,
        window: str,
        out: list[Element],
        budget: _Budget,
    ) -> None:
        stack = [(node, window)]
        states = atspi.StateType
        while stack and not budget.spent:
            acc, window = stack.pop()
            budget.nodes += 1
            state = _safe(acc.get_state_set)
            if state is None or not state.contains(states.SHOWING):
                continue
            if not state.contains(states.VISIBLE):
                continue
            role = _safe(acc.get_role_name) or ""
            name = (_safe(acc.get_name) or "").strip()
            if role in _TOP_LEVEL_ROLES and not window:
                window = name or role
            if not name and role in _FIELD_ROLES:
                name = _label_of(atspi, acc)
            if name:
                rect = _safe(lambda acc=acc: acc.get_extents(atspi.CoordType.SCREEN))
                if rect is not None and rect.width > 0 and rect.height > 0:
                    description = (_safe(acc.get_description) or "").strip()
                    box = Box(rect.x, rect.y, rect.width, rect.height)
                    out.append(Element(name, role, description, box, pid, app, window))
            limit = self.max_children
            if state.contains(states.MANAGES_DESCENDANTS):
                limit = self.max_managed  # a spreadsheet has a million cells; a list has rows
            count = min(_safe(acc.get_child_count) or 0, limit)
            for k in range(count - 1, -1, -1):  # reversed: the stack pops in tree order
                child = _safe(lambda k=k, acc=acc: acc.get_child_at_index(k))
                if child is not None:
                    stack.append((child, window))


@dataclass
class _Budget:
    max_nodes: int
    deadline: float
    nodes: int = 0

    @property
    def spent(self) -> bool:
        return self.nodes >= self.max_nodes or time.monotonic() > self.deadline


def _safe(call: Any) -> Any:
    """The result of one AT-SPI call, or ``None`` when the element went away or timed out."""
    try:
        return call()
    except Exception:  # GLib.Error (gone, timed out) and friends: the element is unusable
        return None


def _label_of(atspi: Any, acc: Any) -> str:
    relations = _safe(acc.get_relation_set) or []
    for relation in relations:
        if relation.get_relation_type() == atspi.RelationType.LABELLED_BY:
            for t in range(relation.get_n_targets()):
                target = relation.get_target(t)
                label = (_safe(target.get_name) or "").strip() if target is not None else ""
                if label:
                    return label
    return ""


class AccessibilityGrounder:
    """Finds the element whose name (or description) and role fit the expression.

    The tree is read once per observation (the same ``Observation`` object: a new screenshot is
    a new look at the tree). ``prefetch`` starts that read in a thread as soon as the screen is
    captured, so it overlaps the encoding and the model call; ``snapshot`` then waits for it.
    """

    name = "a11y"

    def __init__(self, tree: AccessibilityTree | None = None, *, max_snapshots: int = 4) -> None:
        self.tree = tree or AccessibilityTree()
        self._snapshots: OrderedDict[int, tuple[weakref.ref[Observation], Future[Any]]] = (
            OrderedDict()
        )
        self._max = max_snapshots
        self._lock = threading.Lock()

    def prefetch(self, observation: Observation) -> None:
        """Start reading the tree for ``observation`` in the background (once)."""
        if not observation.screenshot.accessibility_boxes:
            return  # nothing to read: ``snapshot`` says why
        future, started = self._entry(observation)
        if not started:
            return
        try:
            self.tree._bindings()  # AT-SPI is initialised in the caller's thread, not the reader's
        except GrounderUnavailable as err:
            future.set_exception(err)
            return
        threading.Thread(
            target=self._read, args=(observation, future), name="a11y-prefetch", daemon=True
        ).start()

    def snapshot(self, observation: Observation) -> list[Element]:
        """The elements at the time of ``observation``, boxes in screen coordinates (read once
        per observation)."""
        if not observation.screenshot.accessibility_boxes:
            raise GrounderUnavailable(
                "this session hides where windows are (GNOME Wayland gives every window the "
                "position 0, 0), so accessibility boxes are no screen coordinates here; text "
                "and controls are found in the screenshot instead",
                grounder=self.name,
                reason="window positions hidden",
            )
        future, started = self._entry(observation)
        if started:
            self._read(observation, future)
        elements: list[Element] = future.result()
        return elements

    def _entry(self, observation: Observation) -> tuple[Future[Any], bool]:
        """The read of ``observation``'s tree, and whether the caller must start it."""
        with self._lock:
            entry = self._snapshots.get(id(observation))
            if entry is not None and entry[0]() is observation:
                self._snapshots.move_to_end(id(observation))
                return entry[1], False
            future: Future[Any] = Future()
            self._snapshots[id(observation)] = (weakref.ref(observation), future)
            while len(self._snapshots) > self._max:
                self._snapshots.popitem(last=False)
            return future, True

    def _read(self, observation: Observation, future: Future[Any]) -> None:
        try:
            elements = self.tree.elements()
            if not elements and not self.tree.applications():
                raise GrounderUnavailable(
                    "no application on the accessibility bus exposes a tree",
                    grounder=self.name,
                    reason="no accessible applications",
                )
            scales = toolkit_scales(elements, observation.windows)
            future.set_result(
                [
                    replace(e, box=extents_to_screen(e.box, scales[e.pid]))
                    if e.pid in scales
                    else e
                    for e in elements
                ]
            )
        except BaseException as err:  # handed to whoever waits for the snapshot
            future.set_exception(err)
            if not isinstance(err, Exception):  # an interrupted read is not remembered
                with self._lock:
                    self._snapshots.pop(id(observation), None)
                raise

    def ground(self, expression: str, observation: Observation) -> GroundingResult:
        start = time.perf_counter()
        query = _read(expression, self.name)
        everything = self.snapshot(observation)
        chain = CoordinateChain(observation.screenshot)
        elements = [e for e in everything if _on_screen(e, observation, chain)]

        def find(q: Query) -> tuple[tuple[str, ...], list[matching.Match]] | None:
            found = []
            for phrase in q.phrases:
                matches = [m for e in elements if (m := _match(q, phrase, e, observation))]
                if matches:
                    found.append((phrase, matches))
            best = matching.best_phrase(found)
            if best is None and _by_kind_only(q):
                kind = [_kind_match(e, observation) for e in _kind_candidates(q, elements)]
                return ((), kind) if kind else None
            return best

        resolution = matching.resolve(
            query, find, observation.windows, matching.colour_reader(observation)
        )
        if resolution is None:
            self._explain_absence(observation, everything)
            raise NotFound(
                f"no showing accessible element is named {' '.join(query.phrase)!r}",
                expression=expression,
                grounder=self.name,
                reason="no element matches",
                candidates=_closest(query, elements),
            )
        phrase, matches, choice = resolution.phrase, resolution.matches, resolution.choice
        if choice is None:
            raise NotFound(
                f"accessibility found {len(matches)} element(s) named {' '.join(phrase)!r}, "
                f"fewer than the ordinal in {expression!r} asks for",
                expression=expression,
                grounder=self.name,
                reason="too few matches",
                candidates=tuple(_candidate(m.data["element"], m.score) for m in matches),
            )
        if choice.ambiguous:
            raise NotFound(
                matching.ambiguity_message("accessibility", phrase, choice),
                expression=expression,
                grounder=self.name,
                reason="ambiguous",
                candidates=tuple(_candidate(m.data["element"], m.score) for m in choice.tied),
            )
        element: Element = choice.match.data["element"]
        reasons = [*choice.reasons, *([resolution.anchor_note] if resolution.anchor_note else [])]
        why = f"; chosen by {', '.join(reasons)}" if reasons else ""
        return GroundingResult(
            expression=expression,
            point=element.box.center,
            grounder=self.name,
            confidence=matching.confidence(choice, query, phrase),
            evidence=f"AT-SPI {element.describe()} (window {element.window!r}, "
            f"score {choice.match.score:.2f}){why}",
            box=element.box,
            details={
                "role": element.role,
                "name": element.name,
                "app": element.app,
                "window": element.window,
                "pid": element.pid,
                "description": element.description,
                "matches": len(matches),
                "phrase": " ".join(phrase),
                "score": round(choice.match.score, 3),
                "hints": list(query.hints),
                "reasons": reasons,
            },
            seconds=time.perf_counter() - start,
        )

    def _explain_absence(self, observation: Observation, elements: list[Element]) -> None:
        """Raise ``GrounderUnavailable`` when the active window has no accessible tree."""
        active = observation.active_window
        if active is None or active.pid is None:
            return
        if any(e.pid == active.pid for e in elements):
            return
        raise GrounderUnavailable(
            f"the active window ({active.app}: {active.title!r}) exposes no accessibility tree "
            "(Tk never does; Qt needs QT_ACCESSIBILITY=1, Chromium --force-renderer-accessibility)",
            grounder=self.name,
            reason="active window not accessible",
        )


_DECORATION = 64  # at most this many screen pixels of frame left of and above a window's client


def toolkit_scales(elements: Sequence[Element], windows: Sequence[WindowInfo]) -> dict[int, int]:
    """The applications (by pid) that report extents at a scale of their own (2 for GTK at
    ``GDK_SCALE=2`` on X11), and that scale: a top-level frame whose extents, so scaled, hold
    the centre of the window of the same pid and title, and whose width and height are both
    about that many times smaller than the window's (the frame's extents include the window
    manager's decorations, so the ratio is a little under the scale). A window of another
    title is compared only when it is its application's one window (a title can change
    between the two reads), and then the scaled frame must also start where the window does
    (give or take the decorations). Other applications' extents are screen coordinates
    already."""
    scales: dict[int, int] = {}
    for element in elements:
        if element.role not in _TOP_LEVEL_ROLES or not element.pid or element.pid in scales:
            continue
        own = [w for w in windows if w.pid == element.pid]
        for window in own:
            if window.title != element.name and len(own) > 1:
                continue
            ratio_x = window.width / element.box.width
            ratio_y = window.height / element.box.height
            scale = round(ratio_x)
            if scale < 2 or round(ratio_y) != scale:
                continue
            centre = Point(window.x + window.width // 2, window.y + window.height // 2)
            scaled = extents_to_screen(element.box, scale)
            if not scaled.contains(centre):
                continue
            if window.title != element.name and not (
                0 <= window.x - scaled.x <= _DECORATION and 0 <= window.y - scaled.y <= _DECORATION
            ):
                continue
            scales[element.pid] = scale
            break
    return scales


def _on_screen(element: Element, observation: Observation, chain: CoordinateChain) -> bool:
    """On the screenshot, of an application that has a window open (one that just closed can
    linger on the accessibility bus with its old extents), and not covered by another
    application's window."""
    if not chain.shows(element.box.center):
        return False
    windows = observation.windows
    pids = {w.pid for w in windows}
    if element.pid and windows and None not in pids and element.pid not in pids:
        return False
    top = matching.window_at(element.box, windows)
    return top is None or top.pid is None or not element.pid or top.pid == element.pid


def _match(
    query: Query, phrase: tuple[str, ...], element: Element, observation: Observation
) -> matching.Match | None:
    hits = []
    for text, weight in ((element.name, 1.0), (element.description, 0.9)):
        words = _words(text)
        hit = _best_window(phrase, words) if words else None
        if hit is not None:
            hits.append((hit[0] * weight, hit[1] == 0 and hit[2] == len(words) - 1))
    if not hits:
        return None
    score, whole = max(hits)
    if element.role in _CONTAINER_ROLES:
        score *= 0.95  # "the Save button" means the button, not a panel named after it
    agrees = None if query.role is None else element.role in _ROLES.get(query.role, ())
    return matching.Match(
        text=element.name,
        score=score,
        box=element.box,
        role=element.role,
        role_agrees=agrees,
        isolated=whole,
        window=matching.window_at(element.box, observation.windows),
        data={"element": element},
    )


def _read(expression: str, grounder: str) -> Query:
    """The description read, or ``NotFound`` saying why it names nothing to look for."""
    try:
        return parse_query(expression)
    except ValueError as err:
        raise NotFound(
            f"{err}; describe the element by its visible label, e.g. 'the \"Save\" button'",
            expression=expression,
            grounder=grounder,
            reason="nothing to look for",
        ) from err


def _by_kind_only(query: Query) -> bool:
    """A description without a label, only a kind: "the second tab", "the text field below
    Subject", "the checkbox at the bottom" (several of that kind and nothing to tell them apart
    is reported as ambiguous, as always)."""
    return query.label_free and query.role is not None


# The one role a kind word means first: "the third checkbox" counts check boxes, not the toggle
# buttons that can also act as one (those count only when there is none).
_FIRST_ROLES: dict[str, frozenset[str]] = {
    "button": frozenset({"push button"}),
    "field": frozenset({"entry", "text", "password text"}),
    "tab": frozenset({"page tab"}),
    "checkbox": frozenset({"check box"}),
    "radio": frozenset({"radio button"}),
    "combo": frozenset({"combo box"}),
    "menu": frozenset({"menu", "menu item"}),
    "icon": frozenset({"icon"}),
    "cell": frozenset({"table cell"}),
    "slider": frozenset({"slider"}),
}


def _is_kind(query: Query, element: Element) -> bool:
    return element.role not in _CONTAINER_ROLES and element.role in _ROLES.get(query.role or "", ())


def _kind_candidates(query: Query, elements: Sequence[Element]) -> list[Element]:
    """The elements of the kind a label-free description names, the kind's first role first."""
    family = [e for e in elements if _is_kind(query, e)]
    first = _FIRST_ROLES.get(query.role or "", frozenset())
    exact = [e for e in family if e.role in first]
    return exact or family


def _kind_match(element: Element, observation: Observation) -> matching.Match:
    return matching.Match(
        text=element.name,
        score=0.85,
        box=element.box,
        role=element.role,
        role_agrees=True,
        isolated=True,
        window=matching.window_at(element.box, observation.windows),
        data={"element": element},
    )


_ICON_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)+")


@functools.lru_cache(maxsize=4096)
def _words(text: str) -> tuple[str, ...]:
    """The words of a name; an icon's name ("view-refresh-symbolic", "edit-find-replace") is
    read as its words without the "symbolic" suffix: "refresh" finds it."""
    if _ICON_NAME.fullmatch(text) and (text.endswith("-symbolic") or text.count("-") >= 2):
        parts = [p for p in text.split("-") if p != "symbolic"]
        if all(any(ch.isalpha() for ch in p) for p in parts):
            return tuple(parts)
    return tuple(matching.normalized_words(text))


@functools.lru_cache(maxsize=16384)
def _best_window(phrase: tuple[str, ...], words: tuple[str, ...]) -> tuple[float, int, int] | None:
    """``matching.best_window``, remembered: the same windows show the same names step after
    step, and fuzzy matching every name against every phrase is most of a grounding's time."""
    return matching.best_window(phrase, words)


def _candidate(element: Element, score: float) -> Candidate:
    return Candidate(element.name, round(min(1.0, score), 3), element.box, element.role)


def _closest(query: Query, elements: list[Element]) -> tuple[Candidate, ...]:
    target = " ".join(query.phrase)
    scored: dict[tuple[str, str], Candidate] = {}  # (name, role) -> its best candidate
    for element in elements:
        if element.role in _CONTAINER_ROLES:
            continue
        ratio = matching.SequenceMatcher(None, target, normalize(element.name)).ratio()
        key = (element.name, element.role)
        if key not in scored or scored[key].score < ratio:
            scored[key] = _candidate(element, ratio)
    return tuple(sorted(scored.values(), key=lambda c: -c.score)[:8])


def window_outline(
    elements: Sequence[Element],
    observation: Observation,
    *,
    max_elements: int = 60,
    max_name: int = 80,
) -> tuple[list[str], int]:
    """A compact list of the active window's showing, named elements, for a worker request:
    (lines such as ``- push button "Save"``, how many there were in all).

    Only elements of the active window's application whose centre lies inside that window and
    is not covered by another application are listed; containers are left out, repeats of the
    same role and name are listed once, names are clipped to ``max_name`` characters and at most
    ``max_elements`` lines are returned, in tree order.
    """
    active = observation.active_window
    if active is None or max_elements < 1:
        return [], 0
    area = Box(active.x, active.y, max(1, active.width), max(1, active.height))
    chain = CoordinateChain(observation.screenshot)
    seen: set[tuple[str, str]] = set()
    lines: list[str] = []
    for element in elements:
        if element.role in _CONTAINER_ROLES:
            continue
        if active.pid and element.pid and element.pid != active.pid:
            continue
        if not area.contains(element.box.center) or not _on_screen(element, observation, chain):
            continue
        name = _clip(" ".join(element.name.split()), max_name)
        key = (element.role, name)
        if not name or key in seen:
            continue
        seen.add(key)
        line = f'- {element.role} "{name}"'
        description = _clip(" ".join(element.description.split()), max_name)
        if description and description != name:
            line += f" ({description})"
        lines.append(line)
    return lines[:max_elements], len(lines)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
