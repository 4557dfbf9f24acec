"""A GTK 3 window that reports exactly what input it received, as JSON lines: the Wayland
counterpart of probe_tk.py (run it with GDK_BACKEND=wayland; it is a native Wayland client).

    python3 probe_gtk.py LOG [--title TITLE] [--fullscreen]

A Wayland client does not know where its window is on the screen, so positions are in the
window's own coordinates (its top-left content pixel is 0, 0); the compositor says where the
window is (``swaymsg -t get_tree``), and the test adds the two. Where it does not say
(GNOME), ``--fullscreen`` puts the window's content at the screen's top-left corner. The
window is undecorated, so no client-side shadow or title bar shifts its content. Each line of
LOG is one event:

- ``{"type": "boxes", "canvas": [x, y, w, h], "entry": [...], "window": [0, 0, w, h]}``
- ``press`` / ``release``: ``button`` (1-3), ``x``/``y`` (window), ``count`` (1 for a single
  click, 2 for the second press of a double click, ...; counted as probe_tk.py counts),
  ``mods`` (held modifiers).
- ``scroll``: ``direction`` ("up", "down", "left", "right"), ``x``/``y``.
- ``drag``: motion with a button held (``x``/``y``).
- ``key`` / ``keyup``: ``keysym``, ``char``, ``mods``.
- ``entry``: the Entry's whole text, after every change.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import gi

gi.require_version("Gtk", "3.0")
gi.require_version("Gdk", "3.0")
from gi.repository import Gdk, GLib, Gtk  # noqa: E402 - after the version pins

_MODS = {
    "shift": Gdk.ModifierType.SHIFT_MASK,
    "ctrl": Gdk.ModifierType.CONTROL_MASK,
    "alt": Gdk.ModifierType.MOD1_MASK,
    "super": Gdk.ModifierType.SUPER_MASK,
}
_DIRECTIONS = {
    Gdk.ScrollDirection.UP: "up",
    Gdk.ScrollDirection.DOWN: "down",
    Gdk.ScrollDirection.LEFT: "left",
    Gdk.ScrollDirection.RIGHT: "right",
}
_MULTI_CLICK_MS = 400  # presses of one button closer than this (and near) count as one series
_MULTI_CLICK_PX = 4


class Probe:
    def __init__(self, window: Gtk.Window, log_path: str) -> None:
        self.window = window
        self.log = open(log_path, "a", encoding="utf-8")  # noqa: SIM115 - open for the app's life
        self.last_boxes: dict[str, list[int]] | None = None
        self.last_press: tuple[int, int, int, int] | None = None  # button, time, x, y
        self.count = 0
        box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL, spacing=10)
        box.set_border_width(10)
        self.canvas = Gtk.DrawingArea()
        self.canvas.set_size_request(600, 320)
        self.canvas.connect("draw", self._on_draw)
        self.canvas.add_events(
            Gdk.EventMask.BUTTON_PRESS_MASK
            | Gdk.EventMask.BUTTON_RELEASE_MASK
            | Gdk.EventMask.BUTTON_MOTION_MASK
            | Gdk.EventMask.SCROLL_MASK
        )
        self.canvas.connect("button-press-event", self._on_button)
        self.canvas.connect("button-release-event", self._on_button)
        self.canvas.connect("motion-notify-event", self._on_motion)
        self.canvas.connect("scroll-event", self._on_scroll)
        self.entry = Gtk.Entry()
        self.entry.connect("changed", self._on_text)
        box.pack_start(self.canvas, True, True, 0)
        box.pack_start(self.entry, False, False, 0)
        window.add(box)
        window.connect("key-press-event", self._on_key)
        window.connect("key-release-event", self._on_key)
        window.connect("size-allocate", lambda *_: GLib.idle_add(self._report_boxes))
        window.connect("destroy", Gtk.main_quit)

    def write(self, record: dict[str, object]) -> None:
        record["t"] = round(time.monotonic(), 4)
        self.log.write(json.dumps(record, ensure_ascii=False) + "\n")
        self.log.flush()

    @staticmethod
    def _mods(state: Gdk.ModifierType) -> list[str]:
        return [name for name, bit in _MODS.items() if state & bit]

    def _box(self, widget: Gtk.Widget) -> list[int]:
        x, y = widget.translate_coordinates(self.window, 0, 0)
        return [int(x), int(y), widget.get_allocated_width(), widget.get_allocated_height()]

    def _report_boxes(self) -> bool:
        boxes = {
            "canvas": self._box(self.canvas),
            "entry": self._box(self.entry),
            "window": [0, 0, self.window.get_allocated_width(), self.window.get_allocated_height()],
        }
        if boxes != self.last_boxes:
            self.last_boxes = boxes
            self.write({"type": "boxes", **boxes})
        return False

    def _at(self, event: Gdk.EventButton | Gdk.EventMotion | Gdk.EventScroll) -> tuple[int, int]:
        x, y = self.canvas.translate_coordinates(self.window, int(event.x), int(event.y))
        return int(x), int(y)

    def _on_draw(self, _widget: Gtk.Widget, cr: object) -> bool:
        cr.set_source_rgb(1, 1, 1)  # type: ignore[attr-defined]
        cr.paint()  # type: ignore[attr-defined]
        return False

    def _on_button(self, _widget: Gtk.Widget, event: Gdk.EventButton) -> bool:
        x, y = self._at(event)
        if event.type == Gdk.EventType.BUTTON_RELEASE:
            self.write({"type": "release", "button": event.button, "x": x, "y": y})
            return True
        if event.type != Gdk.EventType.BUTTON_PRESS:
            return True  # GTK adds a 2BUTTON/3BUTTON_PRESS after the press; counted below
        last = self.last_press
        if (
            last is not None
            and last[0] == event.button
            and 0 <= event.time - last[1] <= _MULTI_CLICK_MS
            and abs(x - last[2]) <= _MULTI_CLICK_PX
            and abs(y - last[3]) <= _MULTI_CLICK_PX
        ):
            self.count += 1
        else:
            self.count = 1
        self.last_press = (event.button, event.time, x, y)
        self.write(
            {
                "type": "press",
                "button": event.button,
                "x": x,
                "y": y,
                "count": self.count,
                "mods": self._mods(event.state),
            }
        )
        return True

    def _on_motion(self, _widget: Gtk.Widget, event: Gdk.EventMotion) -> bool:
        x, y = self._at(event)
        self.write({"type": "drag", "x": x, "y": y})
        return True

    def _on_scroll(self, _widget: Gtk.Widget, event: Gdk.EventScroll) -> bool:
        x, y = self._at(event)
        direction = _DIRECTIONS.get(event.direction)
        if direction is None:  # smooth scrolling: the sign of the deltas
            _ok, dx, dy = event.get_scroll_deltas()
            if dy:
                direction = "down" if dy > 0 else "up"
            elif dx:
                direction = "right" if dx > 0 else "left"
            else:
                return True
        self.write({"type": "scroll", "direction": direction, "x": x, "y": y})
        return True

    def _on_key(self, _widget: Gtk.Widget, event: Gdk.EventKey) -> bool:
        kind = "key" if event.type == Gdk.EventType.KEY_PRESS else "keyup"
        name = Gdk.keyval_name(event.keyval) or ""
        char = chr(Gdk.keyval_to_unicode(event.keyval) or 0).strip("\x00")
        self.write({"type": kind, "keysym": name, "char": char, "mods": self._mods(event.state)})
        return False

    def _on_text(self, _entry: Gtk.Entry) -> None:
        self.write({"type": "entry", "text": self.entry.get_text()})


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("log")
    parser.add_argument("--title", default="probe")
    parser.add_argument("--fullscreen", action="store_true")
    args = parser.parse_args()
    window = Gtk.Window(title=args.title)
    window.set_decorated(False)
    Probe(window, args.log)
    if args.fullscreen:  # where the compositor tells no client where windows are (GNOME)
        window.fullscreen()
    window.show_all()
    Gtk.main()
    return 0


if __name__ == "__main__":
    sys.exit(main())
