"""Desktop backends: the interface, the real X11 one, a recording fake, a virtual desktop.

``X11Backend`` and ``VirtualDesktop`` are imported on first use, so importing this package
needs neither python-xlib nor a display.

May use: lifecycle, guards, keys, errors (and python-xlib, mss, pyautogui). Used by: every
stage that touches the screen (observe and act); nothing here knows of models or the loop.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent_s.desktop.base import (
    DesktopBackend,
    Monitor,
    ScreenGeometry,
    Screenshot,
    WindowInfo,
    perform,
)
from agent_s.desktop.ops import Point
from agent_s.desktop.recording import RecordingBackend

if TYPE_CHECKING:
    from agent_s.desktop.virtual import VirtualDesktop
    from agent_s.desktop.x11 import X11Backend

__all__ = [
    "DesktopBackend",
    "Monitor",
    "Point",
    "RecordingBackend",
    "ScreenGeometry",
    "Screenshot",
    "VirtualDesktop",
    "WindowInfo",
    "X11Backend",
    "perform",
]


def __getattr__(name: str) -> Any:
    if name == "X11Backend":
        from agent_s.desktop.x11 import X11Backend

        return X11Backend
    if name == "VirtualDesktop":
        from agent_s.desktop.virtual import VirtualDesktop

        return VirtualDesktop
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
