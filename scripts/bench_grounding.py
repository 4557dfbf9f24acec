"""Benchmark the grounders on real applications on a virtual desktop.

    .venv/bin/python scripts/bench_grounding.py [--apps galculator,gtk3-demo,...] [--max 40]
                                                [--json OUT.json] [--no-ocr-variants]
    .venv/bin/python scripts/bench_grounding.py --corpus [FILE] [--apps ...] [--verbose]

For each application (GTK: galculator, gtk3-demo, mousepad; Qt: a PySide6 window when PySide6
is installed; chromium with a local page when chromium is installed; LibreOffice Calc when
installed) it starts the program alone on a fresh 1280x800 virtual desktop, waits until the
screen is still, takes ground truth from the accessibility tree (every showing element with a
name and an on-screen box, names unique within the app) and asks each grounder to locate each
element by its visible label and by "the <label> <role>". A hit is a point inside the true
box. It prints the hit rate and the median latency per grounder and per application.

The ``model`` rows run the grounding-model path against the scripted model server replaying
the true centre in each family's coordinate format (UI-TARS 1.0 grid, UI-TARS-1.5
smart-resized pixels, Seed ``<point>``, pixel boxes, 0-1 fractions) through the real openai
SDK: they measure parsing and the transform chain, not a model's accuracy (a replayed answer
is right by construction; a miss is a bug in the chain).

Accessibility is scored against its own tree, so its rows measure the matcher (names, roles,
disambiguation), not the tree; OCR rows are the independent measurement.

``--corpus`` measures descriptions written the way models write them instead (default file
tests/fixtures/grounding_descriptions.json): each entry names an application, a description
("the blue Send button", "the Remove button next to Photo.jpg", "the second tab") and the
intended control, by its accessible name and role (and ``nth``, 0-based in reading order, when
several share them) or, for the Tk windows (which have no
accessibility tree), by the widget key the window reports itself. Entries may instead expect
the grounder to refuse: ``"expect": "ambiguous"`` (several controls fit equally) or ``"absent"``
(nothing fits). A corpus file may bring applications of its own (see ``corpus_apps``). It
prints, for accessibility alone, OCR alone and ``auto`` (accessibility then
OCR), the hit rate on the targets (the point inside the intended control's box) per
application and per description style, and how many refusals were reported as such.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
VERBOSE = "--verbose" in sys.argv
CORPUS = REPO / "tests" / "fixtures" / "grounding_descriptions.json"
FORM_TK = REPO / "tests" / "apps" / "form_tk.py"
PROBE_TK = REPO / "tests" / "apps" / "probe_tk.py"

QT_APP = """
import sys
from PySide6.QtWidgets import (QApplication, QCheckBox, QLabel, QLineEdit, QMainWindow,
    QPushButton, QVBoxLayout, QHBoxLayout, QWidget, QComboBox, QRadioButton)
app = QApplication(sys.argv)
win = QMainWindow(); win.setWindowTitle("Qt grounding bench")
menu = win.menuBar()
for name in ("File", "Edit", "View", "Tools", "Help"):
    menu.addMenu(name)
body = QWidget(); layout = QVBoxLayout(body)
layout.addWidget(QLabel("Customer details"))
row = QHBoxLayout(); row.addWidget(QLabel("Name")); row.addWidget(QLineEdit())
layout.addLayout(row)
layout.addWidget(QCheckBox("Send newsletter"))
layout.addWidget(QRadioButton("Express shipping"))
combo = QComboBox(); combo.addItems(["Germany", "France"]); layout.addWidget(combo)
buttons = QHBoxLayout()
for name in ("Save", "Cancel", "Apply", "Reset"):
    buttons.addWidget(QPushButton(name))
layout.addLayout(buttons)
win.setCentralWidget(body); win.resize(640, 420); win.move(200, 150); win.show()
sys.exit(app.exec())
"""
HTML_PAGE = """<!doctype html><html><head><title>Grounding bench page</title></head>
<body style="font-family: sans-serif; margin: 30px">
<h1>Order summary</h1>
<nav><a href="#a">Home</a> | <a href="#b">Products</a> | <a href="#c">Contact us</a></nav>
<p>Your order of 3 items totals 42.50 EUR.</p>
<label>Email <input type="text" aria-label="Email"></label>
<label><input type="checkbox"> Remember me</label>
<p><button>Place order</button> <button>Continue shopping</button></p>
<table border="1"><tr><th>Item</th><th>Price</th></tr><tr><td>Notebook</td><td>12.00</td></tr>
<tr><td>Pencil set</td><td>30.50</td></tr></table>
</body></html>"""
ROLE_WORDS = {
    "push button": "button",
    "toggle button": "button",
    "menu": "menu",
    "menu item": "menu item",
    "page tab": "tab",
    "check box": "checkbox",
    "radio button": "radio button",
    "text": "field",
    "entry": "field",
    "label": "label",
    "link": "link",
    "table cell": "cell",
    "heading": "heading",
    "combo box": "dropdown",
    "column header": "header",
    "spin button": "field",
}


# Roles whose name is normally drawn as text (not icon-only buttons, window controls, fields).
# fmt: off
TEXT_ROLES = frozenset({
    "label", "menu", "menu item", "page tab", "link", "heading", "table cell", "check box",
    "radio button", "static", "column header", "list item",
})
# fmt: on


@dataclass
class Target:
    name: str
    role: str
    box: Any  # grounding.types.Box (screen)


@dataclass
class Tally:
    hits: int = 0
    total: int = 0
    seconds: list[float] = field(default_factory=list)

    def add(self, hit: bool, seconds: float) -> None:
        self.hits += hit
        self.total += 1
        self.seconds.append(seconds)

    def cell(self) -> str:
        if not self.total:
            return "-"
        rate = 100 * self.hits / self.total
        ms = 1000 * statistics.median(self.seconds)
        return f"{rate:5.1f}% ({self.hits}/{self.total}) {ms:6.0f} ms"


def _apps(tmp: Path) -> dict[str, tuple[list[str], dict[str, str], str, float]]:
    """name -> (argv, extra env, window match, settle seconds) for what is installed."""
    apps: dict[str, tuple[list[str], dict[str, str], str, float]] = {
        "galculator": (["galculator"], {}, "galculator", 1.0),
        "gtk3-demo": (["gtk3-demo"], {}, "gtk3-demo", 1.0),
    }
    doc = tmp / "notes.txt"
    doc.write_text("Meeting notes\nBudget 2025: 12,400 EUR approved\nNext review on Friday\n")
    apps["mousepad"] = (["mousepad", str(doc)], {}, "notes", 1.0)
    try:
        import PySide6  # noqa: F401 - only checking that it is there

        script = tmp / "qt_app.py"
        script.write_text(QT_APP)
        apps["qt (PySide6)"] = (
            [sys.executable, str(script)],
            {"QT_ACCESSIBILITY": "1"},
            "Qt grounding bench",
            1.5,
        )
    except ImportError:
        print("skipping Qt: PySide6 is not installed", file=sys.stderr)
    if shutil.which("chromium"):
        page = tmp / "page.html"
        page.write_text(HTML_PAGE)
        apps["chromium"] = (
            [
                "chromium",
                "--no-sandbox",
                "--force-renderer-accessibility",
                "--disable-gpu",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                f"--user-data-dir={tmp / 'chromium'}",
                "--window-size=1200,760",
                "--window-position=0,0",
                page.as_uri(),
            ],
            {},
            "Grounding bench page",
            4.0,
        )
    else:
        print("skipping chromium: not installed", file=sys.stderr)
    if shutil.which("gtk3-widget-factory"):
        apps["widget-factory"] = (["gtk3-widget-factory"], {}, "widget-factory", 1.5)
    apps["form-tk"] = (
        [sys.executable, str(FORM_TK), str(tmp / "form-boxes.json"), "--title", "Compose message"],
        {},
        "Compose message",
        1.0,
    )
    apps["probe-tk"] = (
        [sys.executable, str(PROBE_TK), str(tmp / "probe.jsonl"), "--title", "probe-tk"],
        {},
        "probe-tk",
        1.0,
    )
    if shutil.which("localc"):
        apps["libreoffice-calc"] = (
            ["localc", "--norestore", "--nologo"],
            {"SAL_USE_VCLPLUGIN": "gtk3"},
            "Calc",
            6.0,
        )
    return apps


def _still(backend: Any, timeout: float = 6.0) -> None:
    from agent_s.desktop.ops import Point

    backend.move(Point(1270, 790))
    previous, deadline = None, time.monotonic() + timeout
    while time.monotonic() < deadline:
        pixels = backend.capture().image.tobytes()
        if pixels == previous:
            return
        previous = pixels
        time.sleep(0.3)


def _targets(observation: Any, pid: int | None, app_name: str, limit: int) -> list[Target]:
    from agent_s.grounding import AccessibilityTree
    from agent_s.grounding.accessibility import _on_screen
    from agent_s.grounding.transform import CoordinateChain

    chain = CoordinateChain(observation.screenshot)
    elements = [
        e
        for e in AccessibilityTree().elements()
        if (pid and e.pid == pid) or app_name.lower().split()[0] in e.app.lower()
    ]
    counts: dict[str, int] = {}
    for e in elements:
        counts[e.name] = counts.get(e.name, 0) + 1
    chosen = []
    for e in elements:
        words = e.name.split()
        if counts[e.name] != 1 or not 1 <= len(words) <= 6 or not _on_screen(e, observation, chain):
            continue
        if e.role in ("frame", "window", "dialog", "panel", "filler", "application"):
            continue
        if e.box.width < 4 or e.box.height < 4 or e.box.width * e.box.height > 400 * 300:
            continue
        if not any(ch.isalnum() or ch in "+-=*/%<>()." for ch in e.name):
            continue
        chosen.append(Target(e.name, e.role, e.box))
    random.Random(7).shuffle(chosen)  # noqa: S311 - a reproducible sample, not a secret
    return chosen[:limit]


def _queries(target: Target) -> list[str]:
    queries = [target.name]
    word = ROLE_WORDS.get(target.role)
    if word:
        queries.append(f"the {target.name} {word}")
    return queries


def _model_replies(observation: Any, targets: list[Target]) -> dict[str, tuple[str, list[str]]]:
    """format -> (model name, replies in order) answering each query with the true centre."""
    from agent_s.desktop.ops import Point
    from agent_s.grounding.model import default_image_spec
    from agent_s.grounding.transform import CoordinateChain
    from agent_s.images import EncodedImage

    image = observation.screenshot.image
    formats = {
        "ui-tars-1.0 grid": ("ui-tars-72b-dpo", "grid1000", "click(start_box='({x:.0f},{y:.0f})')"),
        "ui-tars-1.5 smart": (
            "ui-tars-1.5-7b",
            "smart_resize",
            "Action: click(start_box='<|box_start|>({x:.0f},{y:.0f})<|box_end|>')",
        ),
        "seed point": ("doubao-seed-1.6", "grid1000", "<point>{x:.0f} {y:.0f}</point>"),
        "pixel box": ("gpt-4o", "pixels", "[{x1:.0f}, {y1:.0f}, {x2:.0f}, {y2:.0f}]"),
        "0-1 fractions": ("generic-vlm", "pixels", "({ux:.4f}, {uy:.4f})"),
    }
    out = {}
    for label, (model, convention, template) in formats.items():
        spec = default_image_spec(convention)  # type: ignore[arg-type]
        w, h = spec.fit(*image.size)
        chain = CoordinateChain(
            observation.screenshot, EncodedImage(b"", "image/png", w, h, *image.size)
        )
        frame = chain.frame(convention)  # type: ignore[arg-type]
        unit = chain.frame("unit")
        replies = []
        for target in targets:
            x, y = chain.screen_to_model(target.box.center, frame)
            x1, y1 = chain.screen_to_model(Point(target.box.x + 1, target.box.y + 1), frame)
            x2, y2 = chain.screen_to_model(
                Point(target.box.right - 1, target.box.bottom - 1), frame
            )
            ux, uy = chain.screen_to_model(target.box.center, unit)
            text = template.format(x=x, y=y, x1=x1, y1=y1, x2=x2, y2=y2, ux=ux, uy=uy)
            replies.extend([text] * len(_queries(target)))
        out[label] = (model, replies)
    return out


def _run_grounder(
    name: str,
    ground: Callable[[str], Any],
    targets: list[Target],
    tallies: dict,
    app: str,
    cold: Callable[[Any], float] | None = None,
    misses: list[dict[str, Any]] | None = None,
) -> None:
    """Ask ``ground`` for every query of every target; ``cold(result_or_error)`` adds the cost
    of work a cache saved (the OCR pass), so latencies are those of a fresh screenshot."""
    from agent_s.grounding import GroundingError
    from agent_s.models.errors import ModelError

    for target in targets:
        for query in _queries(target):
            start = time.perf_counter()
            try:
                outcome: Any = ground(query)
                hit = target.box.contains(outcome.point)
            except (GroundingError, ModelError) as err:
                outcome, hit = err, False
            elapsed = time.perf_counter() - start + (cold(outcome) if cold else 0.0)
            tallies.setdefault((name, app), Tally()).add(hit, elapsed)
            got = getattr(outcome, "evidence", None) or f"{type(outcome).__name__}: {outcome}"
            miss = {"query": query, "role": target.role, "box": target.box.as_tuple(), "got": got}
            if not hit and misses is not None:
                misses.append({**miss, "got": str(got)[:300]})
            if VERBOSE and not hit and name in ("ocr", "a11y", "auto (a11y, ocr)"):
                print(f"  miss {name} {app}: {miss}", file=sys.stderr)
            if name == "ocr" and target.role in TEXT_ROLES:
                tallies.setdefault(("ocr, text-role targets", app), Tally()).add(hit, elapsed)


def bench_app(app: str, spec: tuple, args: argparse.Namespace, tallies: dict, notes: dict) -> None:
    from agent_s.grounding import (
        AccessibilityGrounder,
        GroundingChain,
        ModelGrounder,
        Observation,
        OcrGrounder,
        OcrReader,
        TesseractEngine,
        TesseractOptions,
    )
    from agent_s.grounding.controls import warm_glyphs
    from agent_s.models.endpoints import settings_from_env
    from agent_s.models.factory import build_provider
    from agent_s.testing.scripted_server import ScriptedModelServer

    argv, env, window, settle = spec
    desktop = args.desktop
    backend = args.backend
    proc = desktop.launch(argv, env=env)
    try:
        info = backend.wait_for_window(window, timeout=40)
        time.sleep(settle)
        backend.activate(info.title)
        _still(backend)
        observation = Observation(backend.capture(), tuple(backend.windows()), backend.geometry())
        targets = _targets(observation, info.pid, app, args.max)
        notes[app] = {"targets": len(targets), "queries": sum(len(_queries(t)) for t in targets)}
        if not targets:
            print(f"{app}: no accessible named elements on screen", file=sys.stderr)
            return
        a11y = AccessibilityGrounder()
        ocr = OcrGrounder()
        _run_grounder("a11y", lambda q: a11y.ground(q, observation), targets, tallies, app)

        def ocr_cold(g: Any) -> Callable[[Any], float]:  # the OCR and the detection passes
            detector = g.controls
            return lambda outcome: (
                g.reader.seconds_for(observation)
                + (detector.seconds_for(observation.key) if detector is not None else 0.0)
            )

        def chain_cold(outcome: Any) -> float:
            used = any(a.grounder == "ocr" for a in getattr(outcome, "attempts", ()))
            return ocr_cold(ocr)(outcome) if used else 0.0

        warm = time.perf_counter()
        warm_glyphs()  # rendered once per process: not a cost of this screenshot
        notes[app]["glyph_templates_s (once per process)"] = round(time.perf_counter() - warm, 2)
        warm, misses = time.perf_counter(), notes[app].setdefault("ocr_misses", [])
        notes[app]["ocr_in_process"] = ocr.reader.engine.in_process  # starts libtesseract
        notes[app]["ocr_engine_start_s (once per process)"] = round(time.perf_counter() - warm, 2)
        ground, cold = ocr.ground, ocr_cold(ocr)
        _run_grounder("ocr", lambda q: ground(q, observation), targets, tallies, app, cold, misses)
        page = ocr.reader.page(observation)
        notes[app]["ocr_pass_s"] = round(page.seconds, 3)
        notes[app]["detect_pass_s"] = round(ocr.controls.seconds_for(observation.key), 3)
        notes[app]["ocr_words"] = len(page.words)
        notes[app]["controls"] = len(ocr.detected(observation))
        # the OCR path before: words only, read from the whole screen (not trimmed to content)
        # by the tesseract program (started for each screenshot)
        before = TesseractEngine(TesseractOptions(in_process=False))
        baseline = OcrGrounder(OcrReader(before, trim=False), controls=None)
        _run_grounder(
            "ocr, words only (before)",
            lambda q: baseline.ground(q, observation),
            targets,
            tallies,
            app,
            ocr_cold(baseline),
        )
        notes[app]["baseline_ocr_pass_s"] = round(baseline.reader.seconds_for(observation), 3)
        chain = GroundingChain([a11y, ocr])
        _run_grounder(
            "auto (a11y, ocr)",
            lambda q: chain.ground(q, observation),
            targets,
            tallies,
            app,
            chain_cold,
        )
        cropped = OcrGrounder(OcrReader(), crop="always")
        _run_grounder(
            "ocr, active window only",
            lambda q: cropped.ground(q, observation),
            targets,
            tallies,
            app,
            ocr_cold(cropped),
        )
        if args.ocr_variants:
            for label, options in (
                ("ocr gray 1x psm 11", TesseractOptions(scale=1.0)),
                ("ocr gray 3x psm 11", TesseractOptions(scale=3.0)),
                ("ocr gray 2x psm 3", TesseractOptions(psm=3)),
                ("ocr color 2x psm 11", TesseractOptions(grayscale=False)),
                ("ocr gray 2x, no inversion", TesseractOptions(invert_on_colour=False)),
            ):
                variant = OcrGrounder(OcrReader(TesseractEngine(options)), crop="never")
                _run_grounder(
                    label,
                    lambda q, g=variant: g.ground(q, observation),
                    targets,
                    tallies,
                    app,
                    ocr_cold(variant),
                )
        for label, (model, replies) in _model_replies(observation, targets).items():
            with ScriptedModelServer(replies) as server:
                settings = settings_from_env(
                    "openai_compatible", model, base_url=server.openai_base_url, environ={}
                )
                grounder = ModelGrounder(build_provider(settings, sleep=lambda s: None))
                _run_grounder(
                    f"model: {label}",
                    lambda q, g=grounder: g.ground(q, observation),
                    targets,
                    tallies,
                    app,
                )
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except Exception:  # noqa: BLE001 - the desktop's stop() sweeps what is left
            proc.kill()


def _print(tallies: dict, apps: list[str], notes: dict) -> None:
    grounders = list(dict.fromkeys(g for g, _ in tallies))
    print("\nhit rate (point inside the true box) and median latency per query on a fresh")
    print("screenshot (OCR rows include the one OCR pass that a step's groundings share)")
    header = f"{'grounder':<26}" + "".join(f"{a:<28}" for a in [*apps, "all"])
    print(header)
    print("-" * len(header))
    for g in grounders:
        row = f"{g:<26}"
        total = Tally()
        for a in apps:
            t = tallies.get((g, a), Tally())
            row += f"{t.cell():<28}"
            total.hits += t.hits
            total.total += t.total
            total.seconds += t.seconds
        print(row + total.cell())
    print("\nper application: targets, queries, OCR words, the one OCR pass (seconds), OCR misses")
    for a in apps:
        shown = {k: v for k, v in notes.get(a, {}).items() if k != "ocr_misses"}
        print(f"  {a:<20} {shown}")
        for miss in notes.get(a, {}).get("ocr_misses", []):
            print(f"    ocr missed {miss['query']!r} ({miss['role']}): {miss['got'][:110]}")
    shots = [n for n in notes.values() if "detect_pass_s" in n]
    if shots:
        now = statistics.median(n["ocr_pass_s"] + n["detect_pass_s"] for n in shots)
        then = statistics.median(n["baseline_ocr_pass_s"] for n in shots)
        detect = statistics.median(n["detect_pass_s"] for n in shots)
        print(
            f"\nper screenshot (median over applications): OCR pass + control detection "
            f"{1000 * now:.0f} ms (detection alone {1000 * detect:.0f} ms); the OCR pass before "
            f"(words only, whole screen) {1000 * then:.0f} ms; ratio {now / then:.2f}; "
            f"{os.cpu_count()} cores, load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}"
        )


# -- the corpus of descriptions written the way models write them ------------------------------


CORPUS_GROUNDERS = ("a11y", "ocr", "auto")


def load_corpus(path: Path) -> list[dict[str, Any]]:
    """The entries of a corpus file, checked: each has an app, a description and either the
    intended control (``name`` and ``role``, or ``widget``) or an ``expect`` of ``ambiguous`` or
    ``absent``."""
    data = json.loads(path.read_text(encoding="utf-8"))
    entries: list[dict[str, Any]] = data["descriptions"]
    for entry in entries:
        expect = entry.setdefault("expect", "target")
        if expect not in ("target", "ambiguous", "absent"):
            raise ValueError(f"{entry}: expect must be target, ambiguous or absent")
        if expect == "target" and not ("widget" in entry or ("name" in entry and "role" in entry)):
            raise ValueError(f"{entry}: a target needs name and role, or widget")
        entry.setdefault("style", "plain")
    return entries


def corpus_apps(path: Path, tmp: Path) -> dict[str, tuple[list[str], dict[str, str], str, float]]:
    """Applications a corpus file brings along, beside the built-in ones: ``"apps": {"name":
    {"argv": [...], "window": "title or app", "env": {...}, "settle": 1.0}}``; ``{tmp}`` in an
    argument is a scratch folder. Their targets are named by accessible name and role."""
    data = json.loads(path.read_text(encoding="utf-8"))
    apps = {}
    for name, spec in data.get("apps", {}).items():
        argv = [str(a).replace("{tmp}", str(tmp)) for a in spec["argv"]]
        if not shutil.which(argv[0]) and not Path(argv[0]).exists():
            print(f"skipping {name}: {argv[0]} is not installed", file=sys.stderr)
            continue
        env = {str(k): str(v) for k, v in spec.get("env", {}).items()}
        apps[name] = (argv, env, str(spec["window"]), float(spec.get("settle", 1.0)))
    return apps


def _tk_boxes(app: str, tmp: Path) -> dict[str, list[int]]:
    """The widget boxes a Tk window reported (the form's JSON, the probe's last boxes line)."""
    deadline = time.monotonic() + 10
    while True:
        try:
            if app == "form-tk":
                boxes: dict[str, list[int]] = json.loads((tmp / "form-boxes.json").read_text())
                return boxes
            lines = (tmp / "probe.jsonl").read_text().splitlines()
            found = [json.loads(x) for x in lines if '"boxes"' in x]
            if found:
                return {k: v for k, v in found[-1].items() if isinstance(v, list)}
        except (OSError, ValueError):
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"{app} did not report its widget boxes")
        time.sleep(0.2)


def truth_box(entry: dict[str, Any], elements: list[Any], boxes: dict[str, list[int]]) -> Any:
    """The intended control's screen box: the one element of that name and role, or the
    widget's reported box."""
    from agent_s.grounding.types import Box

    if "widget" in entry:
        x, y, w, h = boxes[entry["widget"]]
        return Box(x, y, w, h)
    found = {e.box for e in elements if e.name == entry["name"] and e.role == entry["role"]}
    if "nth" in entry:  # one of several of that name and role, counted in reading order
        ordered = sorted(found, key=lambda b: (b.y, b.x))
        return ordered[int(entry["nth"])]
    if len(found) != 1:
        raise RuntimeError(f"{entry['name']!r} {entry['role']}: {len(found)} elements, not 1")
    return found.pop()


def judge(entry: dict[str, Any], outcome: Any, box: Any) -> bool:
    """A hit: the point inside the intended box, or the refusal the entry expects."""
    from agent_s.grounding import GrounderUnavailable, NotFound

    expect = entry["expect"]
    if expect == "target":
        point = getattr(outcome, "point", None)
        return point is not None and box.contains(point)
    if expect == "ambiguous":
        return isinstance(outcome, NotFound) and outcome.reason == "ambiguous"
    return isinstance(outcome, GrounderUnavailable) or (
        isinstance(outcome, NotFound) and outcome.reason != "ambiguous"
    )


def bench_corpus_app(
    app: str,
    spec: tuple,
    entries: list[dict[str, Any]],
    args: argparse.Namespace,
    tallies: dict,
) -> None:
    from agent_s.grounding import (
        AccessibilityGrounder,
        AccessibilityTree,
        GroundingChain,
        GroundingError,
        Observation,
        OcrGrounder,
    )

    argv, env, window, settle = spec
    proc = args.desktop.launch(argv, env=env)
    try:
        info = args.backend.wait_for_window(window, timeout=40)
        time.sleep(settle)
        args.backend.activate(info.title)
        _still(args.backend)
        backend = args.backend
        observation = Observation(backend.capture(), tuple(backend.windows()), backend.geometry())
        tk = app.endswith("-tk")
        boxes = _tk_boxes(app, args.tmp) if tk else {}
        elements = [] if tk else [e for e in AccessibilityTree().elements() if e.pid == info.pid]
        a11y, ocr = AccessibilityGrounder(), OcrGrounder()
        grounders = {"a11y": a11y, "ocr": ocr, "auto": GroundingChain([a11y, ocr])}
        for entry in entries:
            try:
                box = truth_box(entry, elements, boxes) if entry["expect"] == "target" else None
            except (RuntimeError, KeyError, IndexError) as err:
                print(
                    f"  skipped {entry['description']!r}: no ground truth ({err})", file=sys.stderr
                )
                continue
            for name, grounder in grounders.items():
                start = time.perf_counter()
                try:
                    outcome: Any = grounder.ground(entry["description"], observation)
                except GroundingError as err:
                    outcome = err
                elapsed = time.perf_counter() - start
                hit = judge(entry, outcome, box)
                kind = "target" if entry["expect"] == "target" else "refusal"
                for key in ((name, kind, app), (name, kind, "all"), (name, entry["style"], "all")):
                    tallies.setdefault(key, Tally()).add(hit, elapsed)
                if not hit and (VERBOSE or name == "auto"):
                    got = (
                        f"{outcome.point} by {outcome.grounder}: {outcome.evidence}"
                        if hasattr(outcome, "point")
                        else f"{type(outcome).__name__}: {outcome}"
                    )
                    where = box.as_tuple() if box is not None else entry["expect"]
                    print(
                        f"  miss {name} {app}: {entry['description']!r} -> {where}: {got[:300]}",
                        file=sys.stderr,
                    )
        tallies[("ocr pass", "seconds", app)] = ocr.reader.seconds_for(observation)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except Exception:  # noqa: BLE001 - the desktop's stop() sweeps what is left
            proc.kill()


def _print_corpus(tallies: dict, apps: list[str]) -> None:
    print("\ndescriptions written the way models write them: hit rate and median latency")
    print("(targets: point inside the intended control; refusals: reported ambiguous or absent)")
    columns = [*apps, "all"]
    header = f"{'grounder':<16}{'kind':<10}" + "".join(f"{a:<28}" for a in columns)
    print(header)
    print("-" * len(header))
    for name in CORPUS_GROUNDERS:
        for kind in ("target", "refusal"):
            row = f"{name:<16}{kind:<10}"
            row += "".join(f"{tallies.get((name, kind, a), Tally()).cell():<28}" for a in columns)
            print(row)
    passes = "  ".join(f"{a} {tallies.get(('ocr pass', 'seconds', a), 0.0):.2f} s" for a in apps)
    print(f"(latencies are per description; the OCR pages each screenshot needs: {passes})")
    styles = sorted({k[1] for k in tallies if k[2] == "all"} - {"target", "refusal", "seconds"})
    print("\nper description style (all applications, targets and refusals)")
    print(f"{'style':<22}" + "".join(f"{g:<28}" for g in CORPUS_GROUNDERS))
    for style in styles:
        cells = "".join(
            f"{tallies.get((g, style, 'all'), Tally()).cell():<28}" for g in CORPUS_GROUNDERS
        )
        print(f"{style:<22}{cells}")


def main_corpus(args: argparse.Namespace) -> int:
    from agent_s.desktop.virtual import VirtualDesktop
    from agent_s.desktop.x11 import X11Backend

    entries = load_corpus(args.corpus)
    tallies: dict = {}
    with tempfile.TemporaryDirectory(prefix="bench-grounding-") as tmp:
        args.tmp = Path(tmp)
        catalogue = {**_apps(args.tmp), **corpus_apps(args.corpus, args.tmp)}
        in_corpus = list(dict.fromkeys(e["app"] for e in entries))
        wanted = [a for a in args.apps.split(",") if a] or in_corpus
        missing = [a for a in wanted if a not in catalogue]
        if missing:
            print(f"not installed or unknown, skipped: {', '.join(missing)}", file=sys.stderr)
        wanted = [a for a in wanted if a in catalogue]
        with VirtualDesktop(1280, 800, home="temp") as desktop:
            for key in ("DISPLAY", "XAUTHORITY", "DBUS_SESSION_BUS_ADDRESS"):
                os.environ[key] = desktop.env[key]
            args.desktop = desktop
            args.backend = X11Backend(desktop.display, env=desktop.env)
            for app in wanted:
                start = time.monotonic()
                mine = [e for e in entries if e["app"] == app]
                print(f"{app}: {len(mine)} descriptions ...", file=sys.stderr)
                try:
                    bench_corpus_app(app, catalogue[app], mine, args, tallies)
                except Exception as err:  # noqa: BLE001 - one app failing must not end the bench
                    print(f"{app}: failed: {type(err).__name__}: {err}", file=sys.stderr)
                print(f"  {app} took {time.monotonic() - start:.0f} s", file=sys.stderr)
                time.sleep(1.0)
            args.backend.close()
    _print_corpus(tallies, wanted)
    if args.json:
        rows = [
            {"grounder": g, "kind": k, "app": a, "hits": t.hits, "total": t.total}
            for (g, k, a), t in tallies.items()
            if isinstance(t, Tally)
        ]
        args.json.write_text(json.dumps({"rows": rows}, indent=2))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--apps", default="", help="comma-separated subset of the applications")
    parser.add_argument("--max", type=int, default=40, help="targets per application")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    parser.add_argument("--no-ocr-variants", dest="ocr_variants", action="store_false")
    parser.add_argument("--verbose", action="store_true", help="list every miss on stderr")
    parser.add_argument(
        "--corpus",
        type=Path,
        nargs="?",
        const=CORPUS,
        default=None,
        help=f"measure a corpus of descriptions (default {CORPUS.relative_to(REPO)})",
    )
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))
    if args.corpus is not None:
        return main_corpus(args)
    from agent_s.desktop.virtual import VirtualDesktop
    from agent_s.desktop.x11 import X11Backend

    tallies: dict = {}
    notes: dict = {}
    with tempfile.TemporaryDirectory(prefix="bench-grounding-") as tmp:
        catalogue = _apps(Path(tmp))
        wanted = [a for a in args.apps.split(",") if a] or list(catalogue)
        with VirtualDesktop(1280, 800, home="temp") as desktop:
            # Atspi binds to the session bus named here when first used: set it first.
            for key in ("DISPLAY", "XAUTHORITY", "DBUS_SESSION_BUS_ADDRESS"):
                os.environ[key] = desktop.env[key]
            args.desktop = desktop
            args.backend = X11Backend(desktop.display, env=desktop.env)
            for app in wanted:
                start = time.monotonic()
                print(f"benchmarking {app} ...", file=sys.stderr)
                try:
                    bench_app(app, catalogue[app], args, tallies, notes)
                except Exception as err:  # noqa: BLE001 - one app failing must not end the bench
                    print(f"{app}: failed: {type(err).__name__}: {err}", file=sys.stderr)
                    notes[app] = {"error": f"{type(err).__name__}: {err}"}
                print(f"  {app} took {time.monotonic() - start:.0f} s", file=sys.stderr)
                time.sleep(1.0)
            args.backend.close()
    _print(tallies, wanted, notes)
    if args.json:
        rows = [
            {
                "grounder": g,
                "app": a,
                "hits": t.hits,
                "total": t.total,
                "median_s": statistics.median(t.seconds) if t.seconds else None,
            }
            for (g, a), t in tallies.items()
        ]
        args.json.write_text(json.dumps({"rows": rows, "apps": notes}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
