"""Capture and encode cost per step, on real virtual desktops with real windows on them.

For 1280x800 and 1920x1080 screens: the median time to grab the screen with mss, to turn the
grab into a PIL image, and to encode it as PNG, JPEG and WebP at the settings sent to models,
with the encoded size. Run: ``.venv/bin/python scripts/bench_capture.py [--rounds N]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import time
from collections.abc import Callable
from typing import TypeVar

import mss
from PIL import Image

from agent_s.desktop.virtual import VirtualDesktop
from agent_s.images import ImageSpec, encode_screenshot
from agent_s.models.profiles import ProfileRegistry

# Each format at full size, then what the default OpenAI and Anthropic profiles send.
ENCODINGS: dict[str, ImageSpec] = {
    "PNG": ImageSpec("png"),
    "JPEG q85": ImageSpec("jpeg", 85),
    "WebP q80": ImageSpec("webp", 80),
    "gpt-4o": ProfileRegistry().resolve("gpt-4o", "openai_chat").image_spec,
    "claude": ProfileRegistry().resolve("claude-sonnet-4-5", "anthropic").image_spec,
}


T = TypeVar("T")


def _median_ms(fn: Callable[[], T], rounds: int) -> tuple[float, T]:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        result = fn()  # the last round's result is returned
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
        rows.append(f"{width}x{height}  grab {grab_ms:6.1f} ms   to PIL {to_pil_ms:6.1f} ms")
        for name, spec in ENCODINGS.items():
            ms, sent = _median_ms(lambda s=spec: encode_screenshot(image, s), max(3, rounds // 3))
            rows.append(
                f"{'':11}{name:<9} {spec.format:>4} {sent.width}x{sent.height:<5} "
                f"encode {ms:6.1f} ms  {sent.nbytes / 1024:6.0f} KiB"
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30, help="repetitions per measurement")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    cpu = subprocess.run(["nproc"], capture_output=True, text=True, check=False).stdout.strip()
    print(f"capture and encode, median of {args.rounds} rounds ({cpu} cores)")
    for width, height in ((1280, 800), (1920, 1080)):
        for row in bench(width, height, args.rounds):
            print(row)


if __name__ == "__main__":
    main()
