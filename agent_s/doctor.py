"""``agent-s doctor``: is this machine ready to run the agent? One clear line per check.

Each check returns a ``Check``; a failed check says exactly what to install or set. The checks
run against the current display, or against a fresh virtual desktop (``virtual=True``).
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal

Status = Literal["ok", "fail", "warn"]

_APT = "apt-get install"


@dataclass(frozen=True)
class Check:
    name: str
    status: Status
    detail: str
    fix: str = ""


@dataclass(frozen=True)
class DoctorReport:
    checks: tuple[Check, ...]
    display: str

    @property
    def ok(self) -> bool:
        return all(c.status != "fail" for c in self.checks)


def run_checks(*, virtual: bool = False, size: tuple[int, int] = (1280, 800)) -> DoctorReport:
    """Run every check, on the current display or inside a fresh virtual desktop."""
    with _display(virtual, size) as display:
        checks = [_tools()]
        if display is None:
            checks.append(
                Check(
                    "display",
                    "fail",
                    "DISPLAY is not set: no screen to see or act on",
                    "run inside a desktop session, or pass --virtual to use a virtual desktop "
                    f"({_APT} xvfb xauth openbox)",
                )
            )
        else:
            checks.extend(_desktop_checks(display))
        checks.append(_tesseract())
        checks.append(_accessibility(display))
        return DoctorReport(tuple(checks), display or "")


@contextmanager
def _display(virtual: bool, size: tuple[int, int]) -> Iterator[str | None]:
    if not virtual:
        yield os.environ.get("DISPLAY") or None
        return
    from agent_s.desktop.virtual import VirtualDesktop

    saved = {k: os.environ.get(k) for k in ("DISPLAY", "XAUTHORITY", "DBUS_SESSION_BUS_ADDRESS")}
    with VirtualDesktop(*size, home="temp") as desk:
        os.environ.update({k: desk.env[k] for k in saved if k in desk.env})
        try:
            yield desk.display
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


def _tools() -> Check:
    needed = {"xdotool": "xdotool", "xclip": "xclip", "xprop": "x11-utils"}
    missing = sorted({pkg for exe, pkg in needed.items() if shutil.which(exe) is None})
    if missing:
        return Check(
            "tools", "fail", "missing: " + ", ".join(missing), f"{_APT} {' '.join(missing)}"
        )
    return Check("tools", "ok", "xdotool, xclip and xprop are installed")


def _desktop_checks(display: str) -> list[Check]:
    from agent_s.desktop.ops import Point
    from agent_s.desktop.x11 import X11Backend
    from agent_s.errors import AgentSError

    try:
        backend = X11Backend()
    except AgentSError as err:
        return [Check("display", "fail", str(err), "check DISPLAY and that the X server runs")]
    checks = [Check("display", "ok", f"X display {display} is reachable")]

    def attempt(name: str, body: Callable[[], Check]) -> None:
        try:
            checks.append(body())
        except Exception as err:  # a doctor reports every failure, whatever its type
            checks.append(Check(name, "fail", f"{type(err).__name__}: {err}"))

    def screen() -> Check:
        geometry = backend.geometry()
        monitors = "; ".join(
            f"{m.width}x{m.height}+{m.x}+{m.y} scale {m.scale:g}" for m in geometry.monitors
        )
        return Check("screen", "ok", f"{len(geometry.monitors)} monitor(s): {monitors}")

    def capture() -> Check:
        start = time.perf_counter()
        shot = backend.capture()
        ms = (time.perf_counter() - start) * 1000
        w, h = shot.image.size
        return Check("capture", "ok", f"{w}x{h} screenshot in {ms:.0f} ms")

    def pointer() -> Check:
        geometry = backend.geometry()
        left, top, width, height = geometry.bounds
        target = Point(left + width // 2 + 7, top + height // 2 + 3)
        backend.move(target)
        seen = backend.pointer()
        if seen != target:
            return Check("input", "fail", f"moved the pointer to {target}, it is at {seen}")
        return Check("input", "ok", f"pointer moved to ({target.x}, {target.y}) and read back")

    attempt("screen", screen)
    attempt("capture", capture)
    attempt("input", pointer)
    return checks


def _tesseract() -> Check:
    if shutil.which("tesseract") is None:
        return Check(
            "ocr", "fail", "tesseract is not installed", f"{_APT} tesseract-ocr tesseract-ocr-eng"
        )
    import pytesseract
    from PIL import Image, ImageDraw, ImageFont

    image = Image.new("L", (360, 60), 255)
    try:
        font: ImageFont.FreeTypeFont | ImageFont.ImageFont = ImageFont.truetype(
            "DejaVuSans.ttf", 28
        )
    except OSError:
        font = ImageFont.load_default()
    ImageDraw.Draw(image).text((10, 12), "Save file 42", fill=0, font=font)
    os.environ.setdefault("OMP_THREAD_LIMIT", "1")
    text = pytesseract.image_to_string(image, config="--psm 7").strip()
    version = pytesseract.get_tesseract_version()
    if "Save" not in text or "42" not in text:
        return Check(
            "ocr",
            "fail",
            f"tesseract {version} read {text!r} instead of 'Save file 42'",
            f"{_APT} tesseract-ocr-eng",
        )
    return Check("ocr", "ok", f"tesseract {version} reads text")


def _accessibility(display: str | None) -> Check:
    if not os.environ.get("DBUS_SESSION_BUS_ADDRESS"):
        return Check(
            "accessibility",
            "warn",
            "no D-Bus session bus: the accessibility tree is unavailable (OCR still works)",
            "run inside a desktop session or with --virtual (dbus-x11 at-spi2-core)",
        )
    try:
        import gi

        gi.require_version("Atspi", "2.0")
        from gi.repository import Atspi
    except (ImportError, ValueError):
        return Check(
            "accessibility",
            "warn",
            "PyGObject with Atspi is not importable in this Python",
            f"{_APT} python3-gi gir1.2-atspi-2.0 and use a venv made with "
            "--system-site-packages (scripts/setup.sh does this)",
        )
    desktop = Atspi.get_desktop(0)
    count = desktop.get_child_count() if desktop is not None else 0
    return Check("accessibility", "ok", f"AT-SPI bus reachable, {count} application(s) exposed")
