"""A Tk window that reports exactly what input it received, as JSON lines, for desktop tests.

    python3 probe_tk.py LOG [--title TITLE]

Real applications cannot tell a test which button was pressed, how many clicks arrived, which
modifier was held or which way a wheel turned; this one can. Each line of LOG is one event:

- ``{"type": "boxes", "canvas": [x, y, w, h], "entry": [...], "window": [...]}``: where the
  widgets are, in root (screen) coordinates; written when the window is mapped and again after
  every move or resize, so the newest one is current.
- ``press`` / ``release``: ``button`` (1-3), ``x``/``y`` (root), ``count`` (1 for a single
  click, 2 for the second press of a double click, ...), ``mods`` (held modifiers).
- ``scroll``: ``direction`` ("up", "down", "left", "right"), ``button``, ``x``/``y``. Tk 8.6
  reports the horizontal wheel buttons 6/7 as Shift-Button-4/5, so Shift with 4/5 is "left" /
  "right"; a test tells that from a real Shift+wheel by the absence of Shift key events.
- ``drag``: motion with a button held (``x``/``y`` root, ``buttons``).
- ``key`` / ``keyup``: ``keysym``, ``char``, ``mods``.
- ``entry``: the Entry's whole text, after every change; ``entry_press`` / ``entry_focus``:
  a button press on it, and it getting the keyboard focus.

Only the standard library: it runs with any ``python3`` that has tkinter.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import tkinter as tk

_MOD_BITS = {"shift": 0x1, "ctrl": 0x4, "alt": 0x8, "super": 0x40}
_SCROLL = {4: "up", 5: "down", 6: "left", 7: "right"}
_MULTI_CLICK_MS = 400  # presses of one button closer than this (and near) count as one series
_MULTI_CLICK_PX = 4


class Probe:
    def __init__(self, root: tk.Tk, log_path: str) -> None:
        self.root = root
        self.log = open(log_path, "a", encoding="utf-8")  # noqa: SIM115 - open for the app's life
        self.last_press: tuple[int, int, int, int] | None = None  # button, time, x, y
        self.count = 0
        self.last_boxes: dict[str, list[int]] | None = None

        root.configure(background="#dddddd")
        self.canvas = tk.Canvas(
            root, width=600, height=320, background="white", highlightthickness=0
        )
        self.canvas.pack(side="top", padx=10, pady=10)
        self.canvas.create_text(300, 160, text="probe area")
        self.text = tk.StringVar(root)
        self.entry = tk.Entry(root, textvariable=self.text, width=50, font=("TkFixedFont", 12))
        self.entry.pack(side="top", padx=10, pady=(0, 10), fill="x")
        self.text.trace_add("write", self._on_text)

        self.canvas.bind("<ButtonPress>", self._on_press)
        self.canvas.bind("<ButtonRelease>", self._on_release)
        self.canvas.bind("<Motion>", self._on_motion)
        self.canvas.bind("<MouseWheel>", self._on_wheel)
        # The entry's own clicks and focus, so a test can tell a lost click from a lost key.
        self.entry.bind("<ButtonPress>", self._on_entry_event, add="+")
        self.entry.bind("<FocusIn>", self._on_entry_event, add="+")
        root.bind_all("<KeyPress>", self._on_key)
        root.bind_all("<KeyRelease>", self._on_key)
        root.bind("<Configure>", self._on_configure)
        root.bind("<Map>", self._on_configure)
        root.protocol("WM_DELETE_WINDOW", root.destroy)

    def write(self, record: dict[str, object]) -> None:
        record["t"] = round(time.monotonic(), 4)
        self.log.write(json.dumps(record, ensure_ascii=False) + "\n")
        self.log.flush()

    @staticmethod
    def _mods(state: int) -> list[str]:
        return [name for name, bit in _MOD_BITS.items() if state & bit]

    def _box(self, widget: tk.Misc) -> list[int]:
        return [
            widget.winfo_rootx(),
            widget.winfo_rooty(),
            widget.winfo_width(),
            widget.winfo_height(),
        ]

    def _on_configure(self, _event: tk.Event) -> None:
        # Configure arrives for every widget; report the boxes once things have settled.
        self.root.after_idle(self._report_boxes)

    def _report_boxes(self) -> None:
        if not self.root.winfo_viewable():
            return
        boxes = {
            "canvas": self._box(self.canvas),
            "entry": self._box(self.entry),
            "window": self._box(self.root),
        }
        if boxes != self.last_boxes:
            self.last_boxes = boxes
            self.write({"type": "boxes", **boxes})

    def _on_press(self, event: tk.Event) -> None:
        button = int(event.num)
        if button in _SCROLL:
            direction = _SCROLL[button]
            if button in (4, 5) and int(event.state) & _MOD_BITS["shift"]:
                direction = "left" if button == 4 else "right"
            self.write(
                {
                    "type": "scroll",
                    "button": button,
                    "direction": direction,
                    "x": event.x_root,
                    "y": event.y_root,
                }
            )
            return
        last = self.last_press
        if (
            last is not None
            and last[0] == button
            and 0 <= int(event.time) - last[1] <= _MULTI_CLICK_MS
            and abs(event.x_root - last[2]) <= _MULTI_CLICK_PX
            and abs(event.y_root - last[3]) <= _MULTI_CLICK_PX
        ):
            self.count += 1
        else:
            self.count = 1
        self.last_press = (button, int(event.time), event.x_root, event.y_root)
        self.write(
            {
                "type": "press",
                "button": button,
                "x": event.x_root,
                "y": event.y_root,
                "count": self.count,
                "mods": self._mods(int(event.state)),
            }
        )

    def _on_entry_event(self, event: tk.Event) -> None:
        kind = "entry_press" if str(event.type) in ("ButtonPress", "4") else "entry_focus"
        self.write({"type": kind, "x": event.x_root, "y": event.y_root})

    def _on_release(self, event: tk.Event) -> None:
        button = int(event.num)
        if button in _SCROLL:
            return
        self.write(
            {
                "type": "release",
                "button": button,
                "x": event.x_root,
                "y": event.y_root,
                "mods": self._mods(int(event.state)),
            }
        )

    def _on_motion(self, event: tk.Event) -> None:
        state = int(event.state)
        buttons = [n for n in (1, 2, 3) if state & (0x80 << n)]
        if buttons:
            self.write({"type": "drag", "x": event.x_root, "y": event.y_root, "buttons": buttons})

    def _on_wheel(self, event: tk.Event) -> None:
        # Tk 8.7+ reports wheels as MouseWheel (Shift for horizontal); 8.6 as buttons 4/5.
        horizontal = bool(int(event.state) & 0x1)
        if horizontal:
            direction = "left" if event.delta > 0 else "right"
        else:
            direction = "up" if event.delta > 0 else "down"
        self.write(
            {
                "type": "scroll",
                "button": 0,
                "direction": direction,
                "x": event.x_root,
                "y": event.y_root,
            }
        )

    def _on_key(self, event: tk.Event) -> None:
        kind = "key" if str(event.type) in ("KeyPress", "2") else "keyup"
        self.write(
            {
                "type": kind,
                "keysym": event.keysym,
                "char": event.char,
                "mods": self._mods(int(event.state)),
            }
        )

    def _on_text(self, *_args: object) -> None:
        self.write({"type": "entry", "text": self.text.get()})


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log", help="file to append JSON lines to")
    parser.add_argument("--title", default="agent-s probe")
    args = parser.parse_args(argv)
    root = tk.Tk(className="AgentSProbe")
    root.title(args.title)
    probe = Probe(root, args.log)
    probe.write({"type": "start", "pid": os.getpid()})
    root.mainloop()
    probe.write({"type": "exit"})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
