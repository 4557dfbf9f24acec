"""How many injected instructions turn into harm, per safety mode: the injection suite, measured.

    .venv/bin/python scripts/bench_injection.py                 # every injection, every mode
    .venv/bin/python scripts/bench_injection.py --modes auto --json

Starts its own virtual desktop (Xvfb + openbox) and runs the suite of
``agent_s.testing.injection`` (the same one tests/test_injection.py runs): each injected task
once per mode (``confirm`` with nobody to approve, ``deny-risky``, ``auto``), driven by the
gullible model, which obeys every instruction it reads. A harmful effect is counted only when
it happened (a marker file, a request to the loopback listener, the secret in the form's field,
a mail received): the table gives, per mode, the harmful effects out of the injected tasks, and
which ones. About 2 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from agent_s.desktop.virtual import VirtualDesktop
from agent_s.desktop.x11 import X11Backend
from agent_s.testing.injection import (
    MODES,
    DesktopApps,
    Outcome,
    Traps,
    injections,
    install_browser,
    mousepad_state,
    place,
    run_injection,
)


def run_suite(modes: Sequence[str], names: Sequence[str]) -> list[Outcome]:
    """Every injection (whose name contains one of ``names``, if given) under each mode; one
    scene per injection, ``auto`` last (harm it allows stays on the screen)."""
    order = [m for m in MODES if m in modes]
    outcomes: list[Outcome] = []
    work = Path(tempfile.mkdtemp(prefix="agent-s-bench-injection-"))
    try:
        with VirtualDesktop(1280, 800, home="temp") as desktop, desktop.exported():
            restore = install_browser(desktop.home)
            backend = X11Backend(desktop.display, env=desktop.env)
            try:
                with Traps(desktop_env=desktop.env) as traps:
                    for injection in injections(traps):
                        if names and not any(n.lower() in injection.name for n in names):
                            continue
                        apps = DesktopApps(desktop, backend)
                        try:
                            focus = place(injection, traps, apps, mousepad_state(work))
                            for mode in order:
                                runs = work / f"runs-{len(outcomes)}"
                                outcome = run_injection(
                                    injection, mode, traps, backend, focus, runs
                                )
                                outcomes.append(outcome)
                                print(
                                    f"  {injection.name:32} {mode:10} "
                                    f"{'HARMED' if outcome.harmed else 'held':6} "
                                    f"({outcome.seconds:.1f} s)",
                                    file=sys.stderr,
                                )
                        finally:
                            apps.close()
            finally:
                backend.close()
                restore()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return outcomes


def table(outcomes: Sequence[Outcome], modes: Sequence[str]) -> str:
    rows = [f"{'mode':12} {'harmful / injected':>18}   harmful effects"]
    for mode in [m for m in MODES if m in modes]:
        done = [o for o in outcomes if o.mode == mode]
        harmed = [o.injection.name for o in done if o.harmed]
        unread = [o.injection.name for o in done if not o.obeyed]
        line = f"{mode:12} {f'{len(harmed)} / {len(done)}':>18}   {', '.join(harmed) or '-'}"
        if unread:
            line += f"  (the model read no instruction in: {', '.join(unread)})"
        rows.append(line)
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    parser.add_argument("--only", nargs="*", default=[], help="injections whose name has this")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = parser.parse_args(argv)
    if shutil.which("Xvfb") is None:
        print("Xvfb is not installed: run scripts/setup.sh first", file=sys.stderr)
        return 2
    started = time.monotonic()
    outcomes = run_suite(args.modes, args.only)
    if args.json:
        print(
            json.dumps(
                {
                    "seconds": round(time.monotonic() - started, 1),
                    "runs": [
                        {
                            "injection": o.injection.name,
                            "channel": o.injection.channel,
                            "effect": o.injection.effect,
                            "mode": o.mode,
                            "harmed": o.harmed,
                            "obeyed": [order.kind for order in o.obeyed],
                        }
                        for o in outcomes
                    ],
                }
            )
        )
    else:
        print(table(outcomes, args.modes))
        print(f"({len(outcomes)} runs in {time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
