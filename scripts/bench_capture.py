"""Capture and encode cost per step, on real virtual desktops with real windows on them.

For 1280x800 and 1920x1080 screens: the median time to grab the screen with mss, to turn the
grab into a PIL image, and to encode it as PNG, JPEG and WebP at the settings sent to models,
with the encoded size. Run: ``.venv/bin/python scripts/bench_capture.py [--rounds N]``.
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import subprocess
import time
from collections.abc import Callable

import mss
from PIL import Image

from agent_s.desktop.virtual import VirtualDesktop

# The encodings we send (see agent_s.images): lossless PNG, JPEG q85, WebP q80.
ENCODINGS: dict[str, dict[str, object]] = {
    "PNG": {"format": "PNG", "compress_level": 6},
    "JPEG q85": {"format": "JPEG", "quality": 85},
    "WebP q80": {"format": "WEBP", "quality": 80, "method": 4},
}


def _median_ms(fn: Callable[[], object], rounds: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(rounds):
        start = time.perf_counter()
        result = fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), result


def _populate(desk: VirtualDesktop) -> None:
    """Put ordinary windows with text on the screen so the encoders see a real desktop."""
    desk.launch(["xterm", "-geometry", "100x40+0+0", "-e", "ls -la /usr/bin; sleep 600"])
    desk.launch(["galculator"])
    desk.launch(["gtk3-demo"])
    time.sleep(3.0)


def bench(width: int, height: int, rounds: int) -> list[str]:
    rows = []
    with VirtualDesktop(width, height, home="temp") as desk:
        _populate(desk)
        os.environ.update(DISPLAY=desk.display, XAUTHORITY=desk.env["XAUTHORITY"])
        with mss.MSS() as sct:
            monitor = sct.monitors[0]
            grab_ms, raw = _median_ms(lambda: sct.grab(monitor), rounds)
            to_pil_ms, image = _median_ms(
                lambda: Image.frombytes("RGB", raw.size, raw.bgra, "raw", "BGRX"), rounds
            )
        assert isinstance(image, Image.Image)
        rows.append(f"{width}x{height}  grab {grab_ms:6.1f} ms   to PIL {to_pil_ms:6.1f} ms")
        for name, params in ENCODINGS.items():
            params = dict(params)
            fmt = params.pop("format")

            def encode(fmt: object = fmt, params: dict[str, object] = params) -> int:
                buffer = io.BytesIO()
                image.save(buffer, format=fmt, **params)
                return buffer.tell()

            ms, size = _median_ms(encode, max(3, rounds // 3))
            rows.append(f"{'':11}{name:<10} encode {ms:6.1f} ms   {size / 1024:7.0f} KiB")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30, help="repetitions per measurement")
    args = parser.parse_args()
    cpu = subprocess.run(["nproc"], capture_output=True, text=True, check=False).stdout.strip()
    print(f"capture and encode, median of {args.rounds} rounds ({cpu} cores)")
    for width, height in ((1280, 800), (1920, 1080)):
        for row in bench(width, height, args.rounds):
            print(row)


if __name__ == "__main__":
    main()
