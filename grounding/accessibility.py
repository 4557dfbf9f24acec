"""Accessibility grounding on Linux: the AT-SPI tree of the applications on the screen.

Every element that is SHOWING and VISIBLE, has a name (its own, or the label it is "labelled
by") and an on-screen box is a candidate; the referring expression's phrase is matched against
names (and descriptions), its role word against AT-SPI roles, and the element's box centre is
the point (AT-SPI extents are screen coordinates already). Elements covered by another
application's window are skipped, using the window stack of the observation.

When accessibility cannot answer it says why (``GrounderUnavailable``) so a chain moves on: no
D-Bus session bus, the ``Atspi`` bindings missing, no application on the bus, or, when nothing
matched, an active window whose application has no tree (Tk never has one; Qt needs
``QT_ACCESSIBILITY=1``; Chromium ``--force-renderer-accessibility``).

``Atspi`` connects to the session bus named by ``DBUS_SESSION_BUS_ADDRESS`` when it is first
initialised and stays there, so this module imports it lazily, on the first look: whoever runs
agent-s on a virtual desktop must set that variable first (the test fixtures do).
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agent_s.grounding import matching
from agent_s.grounding.query import Query, normalize, parse_query
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
    "tab": frozenset({"page tab"}),
    "link": frozenset({"link"}),
    "icon": frozenset({"icon", "image", "desktop icon"}),
    "label": frozenset({"label", "static", "caption"}),
    "checkbox": frozenset({"check box", "check menu item", "toggle button", "switch"}),
    "radio": frozenset({"radio button", "radio menu item"}),
    "combo": frozenset({"combo box", "menu button"}),
    "cell": frozenset({"table cell", "cell"}),
    "heading": frozenset({"heading"}),
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
    """One showing, named element with its box in screen coordinates."""

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
        self._lock = threading.Lock()

    def _bindings(self) -> Any:
        if self._atspi is not None:
            return self._atspi
        if not os.environ.get("DBUS_SESSION_BUS_ADDRESS"):
            raise GrounderUnavailable(
                "accessibility needs a D-Bus session bus, and DBUS_SESSION_BUS_ADDRESS is unset",
                grounder="a11y",
                reason="no D-Bus session bus",
            )
        try:
            import gi

            gi.require_version("Atspi", "2.0")
            from gi.repository import Atspi
        except (ImportError, ValueError) as err:
            raise GrounderUnavailable(
                f"the AT-SPI bindings are missing ({err}); apt-get install gir1.2-atspi-2.0 "
                "python3-gi, and use a Python that sees them",
                grounder="a11y",
                reason="Atspi bindings missing",
            ) from err
        Atspi.init()
        Atspi.set_timeout(self.timeout_ms, self.timeout_ms * 2)
        self._atspi = Atspi
        return Atspi

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
    """Finds the element whose name (or description) and role fit the expression."""

    name = "a11y"

    def __init__(self, tree: AccessibilityTree | None = None, *, max_snapshots: int = 4) -> None:
        self.tree = tree or AccessibilityTree()
        self._snapshots: OrderedDict[str, list[Element]] = OrderedDict()
        self._max = max_snapshots

    def snapshot(self, observation: Observation) -> list[Element]:
        """The elements at the time of ``observation`` (read once per observation)."""
        if observation.key in self._snapshots:
            self._snapshots.move_to_end(observation.key)
            return self._snapshots[observation.key]
        elements = self.tree.elements()
        if not elements and not self.tree.applications():
            raise GrounderUnavailable(
                "no application on the accessibility bus exposes a tree",
                grounder=self.name,
                reason="no accessible applications",
            )
        self._snapshots[observation.key] = elements
        while len(self._snapshots) > self._max:
            self._snapshots.popitem(last=False)
        return elements

    def ground(self, expression: str, observation: Observation) -> GroundingResult:
        start = time.perf_counter()
        query = parse_query(expression)
        everything = self.snapshot(observation)
        elements = [e for e in everything if _on_screen(e, observation)]
        found = []
        for phrase in query.phrases:
            matches = [m for e in elements if (m := _match(query, phrase, e, observation))]
            if matches:
                found.append((phrase, matches))
        best = matching.best_phrase(found)
        if best is not None:
            phrase, matches = best
            choice = matching.choose(query, matches, observation.windows)
            if choice is None:
                raise NotFound(
                    f"accessibility found {len(matches)} element(s) named {' '.join(phrase)!r}, "
                    f"fewer than the ordinal in {expression!r} asks for",
                    expression=expression,
                    grounder=self.name,
                    reason="too few matches",
                    candidates=tuple(_candidate(m.data["element"], m.score) for m in matches),
                )
            element: Element = choice.match.data["element"]
            why = f"; chosen by {', '.join(choice.reasons)}" if choice.reasons else ""
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
                },
                seconds=time.perf_counter() - start,
            )
        self._explain_absence(observation, everything)
        raise NotFound(
            f"no showing accessible element is named {' '.join(query.phrase)!r}",
            expression=expression,
            grounder=self.name,
            reason="no element matches",
            candidates=_closest(query, elements),
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


def _on_screen(element: Element, observation: Observation) -> bool:
    """Inside the screenshot, and not covered by another application's window."""
    shot = observation.screenshot
    width, height = shot.image.size
    area = Box(
        shot.origin.x,
        shot.origin.y,
        max(1, round(width / shot.scale)),
        max(1, round(height / shot.scale)),
    )
    if not area.contains(element.box.center):
        return False
    top = matching.window_at(element.box, observation.windows)
    return top is None or top.pid is None or not element.pid or top.pid == element.pid


def _match(
    query: Query, phrase: tuple[str, ...], element: Element, observation: Observation
) -> matching.Match | None:
    hits = []
    for text, weight in ((element.name, 1.0), (element.description, 0.9)):
        words = matching.normalized_words(text)
        hit = matching.best_window(phrase, words) if words else None
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


def _candidate(element: Element, score: float) -> Candidate:
    return Candidate(element.name, round(min(1.0, score), 3), element.box, element.role)


def _closest(query: Query, elements: list[Element]) -> tuple[Candidate, ...]:
    target = " ".join(query.phrase)
    scored = {}
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
    seen: set[tuple[str, str]] = set()
    lines: list[str] = []
    for element in elements:
        if element.role in _CONTAINER_ROLES:
            continue
        if active.pid and element.pid and element.pid != active.pid:
            continue
        if not area.contains(element.box.center) or not _on_screen(element, observation):
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
