"""Which monitor the agent captures: the ``monitor`` setting (``--monitor``, ``AGENT_S_MONITOR``,
``[run] monitor``).

- ``all`` (the default): the box around every monitor, as one screenshot; the model sees every
  window on every monitor.
- ``active``: the monitor the task is on: the one that holds most of the active window, else
  the one under the pointer, else the primary one. It is chosen again at every step, so when
  the task moves to a window on another monitor, the screenshots follow it.
- ``N`` (0, 1, ...): monitor N always, numbered as ``agent-s doctor`` lists them (the primary
  one first, then left to right, top to bottom).

Whichever is captured, the screenshot carries its monitor's origin, so grounded points go
through the one coordinate chain (``agent_s.grounding.transform``) to screen coordinates on
the right monitor. With one monitor every choice captures the same picture.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from agent_s.desktop.base import ScreenGeometry, WindowInfo
from agent_s.desktop.ops import Point
from agent_s.errors import DesktopSetupError

MonitorChoice = Literal["all", "active"] | int
MONITOR_HELP = "all | active | N: which monitor the agent captures (default all)"


def parse_monitor_choice(value: object) -> MonitorChoice:
    """``"all"``, ``"active"`` or a monitor number (from 0) as given in a flag, a variable or
    the file; raises ``ValueError`` naming the choices otherwise."""
    if isinstance(value, bool):
        raise ValueError(f"monitor must be all, active or a number from 0, not {value!r}")
    if isinstance(value, int):
        number = value
    elif isinstance(value, str):
        text = value.strip().lower()
        if text == "all":
            return "all"
        if text == "active":
            return "active"
        if not text.isdigit():
            raise ValueError(f"monitor must be all, active or a number from 0, not {value!r}")
        number = int(text)
    else:
        raise ValueError(f"monitor must be all, active or a number from 0, not {value!r}")
    if number < 0:
        raise ValueError(f"monitor numbers start at 0, not {number}")
    return number


def monitor_to_capture(
    choice: MonitorChoice,
    geometry: ScreenGeometry,
    windows: Sequence[WindowInfo],
    pointer: Point | None = None,
) -> int | None:
    """The index of the monitor to capture for ``choice`` (``None``: all of them).

    Raises ``DesktopSetupError`` when monitor ``N`` does not exist, naming the monitors there
    are (the run ends as a desktop error).
    """
    monitors = geometry.monitors
    if choice == "all":
        return None
    if isinstance(choice, int):
        if choice >= len(monitors):
            listing = ", ".join(
                f"{i}: {m.width}x{m.height}+{m.x}+{m.y}" for i, m in enumerate(monitors)
            )
            raise DesktopSetupError(
                f"monitor {choice} does not exist; this screen has {len(monitors)} ({listing}): "
                "use --monitor all, active or one of those numbers"
            )
        return None if len(monitors) == 1 else choice
    if len(monitors) == 1:
        return None
    active = next((w for w in windows if w.active), None)
    if active is not None and active.width > 0 and active.height > 0:
        overlaps = [_overlap(m.x, m.y, m.width, m.height, active) for m in monitors]
        best = max(range(len(monitors)), key=lambda i: overlaps[i])
        if overlaps[best] > 0:
            return best
    if pointer is not None:
        under = next((i for i, m in enumerate(monitors) if m.contains(pointer)), None)
        if under is not None:
            return under
    return monitors.index(geometry.primary)


def _overlap(x: int, y: int, width: int, height: int, window: WindowInfo) -> int:
    """The area a window shares with a rectangle."""
    w = min(x + width, window.x + window.width) - max(x, window.x)
    h = min(y + height, window.y + window.height) - max(y, window.y)
    return max(w, 0) * max(h, 0)


__all__ = ["MONITOR_HELP", "MonitorChoice", "monitor_to_capture", "parse_monitor_choice"]
