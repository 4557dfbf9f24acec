"""Desktop backends: the interface, the real X11 and Wayland ones, a recording fake, virtual
desktops.

``X11Backend`` and ``VirtualDesktop`` are imported on first use, so importing this package
needs neither python-xlib nor a display.

A new backend (GNOME, KDE, ...) subclasses ``common.BackendBase``, whose actions (click, drag,
scroll, hotkey, hold_and_press, type_text, capture, the clipboard, activate, open,
wait_for_window, sleep) check their arguments and are built from primitives. It calls
``super().__init__(env)`` (which sets ``env``, secrets left out), sets ``display``, and
implements only these primitives:

- ``geometry()``: the monitors; ``_grab(geometry, monitor)``: the pixels of one or of all;
- ``pointer()``: where the pointer is; ``_pointer_to(at)``: put it there;
  ``_button(button, down)``: press or release a button; ``_wheel(clicks, horizontal)``:
  wheel notches where the pointer is;
- ``_holding(syms)``: hold X keysyms down for a ``with`` block, released whatever happens;
  ``_press(held, pressed)``: tap keys while others are held; ``_type_line(line)``: type one
  line of text (in calls of at most ``type_chunk`` characters);
- ``_clipboard_readers()`` and ``_clipboard_writer(text)``: the commands that read and set it;
- ``windows()``: the windows, front-most first; ``_request_focus(window)``: ask to raise one;
- ``close()``: let go of connections; ``_check_alive()``: raise ``DisplayUnavailableError``
  once the display is gone.

It may override ``_sync()`` (until sent events reached the application; nothing by default),
``_newline()`` (Return between typed lines), ``window_order()`` (a cheaper ``windows()`` in
brief), and set ``launcher`` (an argv prefix for programs it opens) and ``window_manager``
(named in errors). ``x11`` and ``wayland`` are the two examples. A virtual desktop of a new
kind subclasses ``virtual.VirtualDesktop`` and implements ``_check_installed()`` and
``_start_session()`` (``wayland_virtual`` is the example).

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
