"""Make the screens `agent-s model check` ships: real applications on a virtual desktop, at
two or three screen sizes, with the truth boxes of their controls from the accessibility tree.

    .venv/bin/python scripts/make_modelcheck_screens.py [--out agent_s/modelcheck/data]

For each screen it starts a fresh virtual desktop (Xvfb, openbox, the accessibility bus),
opens the application, captures the screen, reads the boxes of the controls it names from
AT-SPI, and writes SCREEN.png (a 64-colour palette PNG, to keep the package small) and one
screens.json with every screen's size, its controls (name, role, box) and, for the editor,
the word typed into it (the "can it see" probe: a word only the image holds). Run it again
after a change of applications or theme; tests/test_modelcheck_screens.py checks the shipped
screens against their boxes (OCR of each labelled control inside its box).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from PIL import Image

from agent_s.desktop.choose import desktop_backend
from agent_s.desktop.ops import Point
from agent_s.desktop.virtual import VirtualDesktop
from agent_s.grounding.accessibility import AccessibilityGrounder, Element
from agent_s.grounding.types import Observation

WORD = "MARZIPAN"  # typed into the editor: the word only the image holds


@dataclass(frozen=True)
class Shot:
    name: str
    size: tuple[int, int]
    argv: tuple[str, ...]
    window: str  # a part of its window's title, to wait for
    controls: tuple[tuple[str, str, str], ...]  # (role, accessible name, how a task names it)
    typed: str = ""


SHOTS = (
    Shot(
        "galculator-1280x800",
        (1280, 800),
        ("galculator",),
        "galculator",
        (
            ("toggle button", "7", "the 7 button"),
            ("toggle button", "+", "the + button"),
            ("toggle button", "=", "the = button"),
            ("toggle button", "C", "the C (clear) button"),
            ("toggle button", "0", "the 0 button"),
        ),
    ),
    Shot(
        "galculator-800x600",
        (800, 600),
        ("galculator",),
        "galculator",
        (
            ("toggle button", "9", "the 9 button"),
            ("toggle button", "-", "the - (minus) button"),
            ("toggle button", "=", "the = button"),
        ),
    ),
    Shot(
        "mousepad-1024x768",
        (1024, 768),
        ("mousepad",),
        "Mousepad",
        (
            ("menu", "File", "the File menu"),
            ("menu", "Edit", "the Edit menu"),
            ("menu", "Help", "the Help menu"),
        ),
        typed=WORD,
    ),
    Shot(
        "form-1280x800",
        (1280, 800),
        (
            "zenity",
            "--forms",
            "--title=Sign up",
            "--text=Create an account",
            "--add-entry=Name",
            "--add-entry=Email",
            "--add-password=Password",
        ),
        "Sign up",
        (
            ("push button", "OK", "the OK button"),
            ("push button", "Cancel", "the Cancel button"),
        ),
    ),
)


def _pick(elements: list[Element], role: str, name: str) -> Element:
    found = [e for e in elements if e.role == role and e.name == name and e.box.width > 2]
    if not found:
        seen = sorted({(e.role, e.name) for e in elements})[:80]
        raise SystemExit(f"no {role} {name!r} on the screen; seen: {seen}")
    return min(found, key=lambda e: e.box.width * e.box.height)


def make(shot: Shot, out: Path) -> dict[str, object]:
    width, height = shot.size
    with VirtualDesktop(width, height, home="temp") as desk:
        desk.launch(list(shot.argv))
        with desk.exported(), desktop_backend(desk) as backend:
            backend.wait_for_window(shot.window, timeout=30)
            time.sleep(1.5)
            if shot.typed:
                backend.type_text(shot.typed)
                time.sleep(0.5)
            backend.move(Point(width - 2, height - 2))  # no hover state on a control
            time.sleep(0.5)
            screenshot = backend.capture()
            observation = Observation(screenshot, windows=tuple(backend.windows()))
            elements = AccessibilityGrounder().snapshot(observation)
    image = screenshot.image.convert("RGB")
    image.quantize(colors=64, method=Image.Quantize.MEDIANCUT).save(
        out / f"{shot.name}.png", optimize=True
    )
    controls = []
    for role, name, text in shot.controls:
        element = _pick(elements, role, name)
        box = element.box
        controls.append(
            {
                "name": name,
                "role": role,
                "target": text,
                "box": [box.x, box.y, box.width, box.height],
            }
        )
    return {
        "name": shot.name,
        "file": f"{shot.name}.png",
        "size": [width, height],
        "app": shot.argv[0],
        "word": shot.typed,
        "controls": controls,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="agent_s/modelcheck/data", type=Path)
    parser.add_argument("--only", default="", help="make only this screen")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    index = args.out / "screens.json"
    screens = json.loads(index.read_text())["screens"] if index.exists() else []
    if not args.only:  # libatspi binds one session bus per process: a process per desktop
        for shot in SHOTS:
            argv = [sys.executable, __file__, "--out", str(args.out), "--only", shot.name]
            if subprocess.run(argv, check=False).returncode != 0:
                return 1
        return 0
    for shot in SHOTS:
        if shot.name != args.only:
            continue
        made = make(shot, args.out)
        screens = [s for s in screens if s["name"] != shot.name] + [made]
        print(f"{shot.name}: {len(made['controls'])} controls")  # type: ignore[arg-type]
    order = [s.name for s in SHOTS]
    screens.sort(key=lambda s: order.index(s["name"]) if s["name"] in order else len(order))
    index.write_text(json.dumps({"word": WORD, "screens": screens}, indent=1) + "\n")
    total = sum(p.stat().st_size for p in args.out.glob("*"))
    print(f"{index}: {len(screens)} screens, {total // 1024} KB in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
