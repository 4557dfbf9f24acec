"""Where the pointer rests after the agent clicked: on no control, so that the next screenshot
shows no tooltip and no hover state over what the model must read.

A person moves the mouse away from a button after pressing it; an agent that leaves the pointer
where it clicked gets, a second later, the button's tooltip over its neighbours (galculator's
"Save to memory" covers its 8 and 9). After an action that moved the pointer, ``park_point``
chooses a spot on the same monitor that no window covers, away from every edge (panels, hot
corners, pyautogui's fail-safe corners), as far as it can from where the pointer was (a menu or
a popup opened by the click is near there, and popups are not in the window list); where
windows cover the whole monitor, the middle of the front window's title bar, just above its
client area, if that lies on the monitor; else nowhere (the pointer stays).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from agent_s.desktop import ops
from agent_s.desktop.base import Monitor, ScreenGeometry, WindowInfo
from agent_s.desktop.ops import Point

MARGIN = 64  # px kept from each monitor edge: panels, docks, hot corners
STEP = 32  # px between the spots tried
TITLE_BAR = 30  # px above a window's client area that its frame's title bar may take
_POINTER_OPS = (ops.MoveTo, ops.Click, ops.Drag, ops.Scroll)


def moves_pointer(plan: Sequence[ops.Op]) -> Point | None:
    """Where ``plan`` leaves the pointer, if it moves it (None: it does not)."""
    last = None
    for op in plan:
        if isinstance(op, ops.Drag):
            last = op.end
        elif isinstance(op, _POINTER_OPS):
            last = op.at
    return last


def _covered(point: Point, windows: Sequence[WindowInfo]) -> bool:
    return any(
        w.x - 4 <= point.x < w.x + w.width + 4 and w.y - TITLE_BAR <= point.y < w.y + w.height + 4
        for w in windows
        if w.width > 0 and w.height > 0
    )


def _monitor_of(point: Point, geometry: ScreenGeometry) -> Monitor:
    return next((m for m in geometry.monitors if m.contains(point)), geometry.primary)


def _farthest_free(monitor: Monitor, windows: Sequence[WindowInfo], pointer: Point) -> Point | None:
    """Of the spots ``STEP`` px apart on ``monitor`` (``MARGIN`` in from its edges) that no
    window covers, the farthest from ``pointer`` (the first in rows, then columns, on a tie)."""
    xs = np.arange(monitor.x + MARGIN, monitor.x + monitor.width - MARGIN + 1, STEP)
    ys = np.arange(monitor.y + MARGIN, monitor.y + monitor.height - MARGIN + 1, STEP)
    if not len(xs) or not len(ys):
        return None
    free = np.ones((len(ys), len(xs)), dtype=bool)
    for w in windows:  # as _covered, for every spot at once
        if w.width > 0 and w.height > 0:
            across = (w.x - 4 <= xs) & (xs < w.x + w.width + 4)
            down = (w.y - TITLE_BAR <= ys) & (ys < w.y + w.height + 4)
            free &= ~(down[:, None] & across[None, :])
    if not free.any():
        return None
    far = (ys[:, None] - pointer.y) ** 2 + (xs[None, :] - pointer.x) ** 2
    row, column = np.unravel_index(np.argmax(np.where(free, far, -1)), free.shape)
    return Point(int(xs[column]), int(ys[row]))


def park_point(
    geometry: ScreenGeometry, windows: Sequence[WindowInfo], pointer: Point
) -> Point | None:
    """A spot for the pointer that covers no control (see the module docstring), on the
    monitor that holds ``pointer``; None when there is none."""
    monitor = _monitor_of(pointer, geometry)
    if any(w.width <= 0 or w.height <= 0 for w in windows):  # positions unknown (Wayland)
        return None
    spot = _farthest_free(monitor, windows, pointer)
    if spot is not None:
        return spot
    front = next((w for w in windows if w.active), None)
    if front is None:
        return None
    title = Point(front.x + front.width // 2, front.y - TITLE_BAR // 2)
    half = MARGIN // 2  # the title bar, but not a panel above a maximised window
    inner = Monitor(
        monitor.x + half, monitor.y + half, monitor.width - MARGIN, monitor.height - MARGIN
    )
    others = [w for w in windows if w is not front]
    return title if inner.contains(title) and not _covered(title, others) else None


__all__ = ["park_point", "moves_pointer"]
