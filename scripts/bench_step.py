"""Per-step overhead of the agent loop, without the model: 30-step scripted sessions on a
1920x1080 virtual desktop.

    .venv/bin/python scripts/bench_step.py [--steps 30]

Sessions: ``native`` (the scripted model gives coordinates: clicks on an xterm), ``a11y`` and
``ocr`` (galculator buttons by name, grounded through the accessibility tree / OCR). Prints,
per session, the median seconds per step of capture (observe), encode, request build, grounding
(per grounder) and execution, and the number of model calls per step. Timings come from the
trajectory each run writes (the same numbers a user's trajectory holds).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from agent_s import Agent, AgentConfig, GroundingConfig, ModelConfig, load_trajectory
from agent_s.desktop.virtual import VirtualDesktop
from agent_s.desktop.x11 import X11Backend
from agent_s.testing.scripted_replies import reply
from agent_s.testing.scripted_server import ScriptedModelServer


def _script(actions: list[str]) -> Any:
    counter = {"n": 0}

    def answer(request: Any) -> Any:
        code = actions[counter["n"] % len(actions)]
        counter["n"] += 1
        return reply(f"Benchmark step.\n```python\n{code}\n```", input_tokens=1500)

    return answer


def _session(
    name: str, mode: str, actions: list[str], backend: X11Backend, steps: int, folder: Path
) -> dict[str, Any]:
    with ScriptedModelServer(_script(actions)) as server:
        model = ModelConfig("openai-compatible", "bench-model", server.openai_base_url, "k")
        settings = AgentConfig(
            max_steps=steps, record_dir=folder / name, settle_seconds=0, retry_attempts=1
        )
        agent = Agent(model, settings=settings, grounding=GroundingConfig(mode), backend=backend)
        result = agent.run(f"benchmark {name}")
        requests = len(server.requests)
    loaded = load_trajectory(result.trajectory_dir)
    parts: dict[str, list[float]] = defaultdict(list)
    for step in loaded.steps:
        for key in ("observe", "encode", "build", "execute"):
            parts[key].append(step.timings.get(key, 0.0))
        for found in step.grounding:
            parts[f"ground:{found.grounder}"].append(found.seconds)
    row = {key: statistics.median(values) for key, values in parts.items()}
    row["steps"] = len(loaded.steps)
    row["calls/step"] = requests / max(1, len(loaded.steps))
    row["status"] = result.status.value
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temp, VirtualDesktop(1920, 1080, home="temp") as desk:
        import os

        os.environ.update({k: desk.env[k] for k in ("DISPLAY", "XAUTHORITY")})
        os.environ["DBUS_SESSION_BUS_ADDRESS"] = desk.env.get("DBUS_SESSION_BUS_ADDRESS", "")
        backend = X11Backend(desk.display, env=desk.env)
        desk.launch(["xterm", "-geometry", "80x24+50+50", "-title", "bench-xterm"])
        desk.launch(["galculator"])
        backend.wait_for_window(lambda w: "galculator" in w.app.lower(), timeout=20)
        time.sleep(1.0)
        backend.activate("galculator")
        sessions = [
            ("native", "native", ['agent.click("(1500, 900)")', 'agent.click("(1510, 910)")']),
            ("a11y", "a11y", ['agent.click("the 7 button")', 'agent.click("the AC button")']),
            ("ocr", "ocr", ['agent.click("the AC button")', 'agent.click("sqrt")']),
        ]
        rows = {
            name: _session(name, mode, acts, backend, args.steps, Path(temp))
            for name, mode, acts in sessions
        }
        backend.close()
    columns = sorted({key for row in rows.values() for key in row} - {"status"})
    print(f"median seconds per step, {args.steps}-step sessions, 1920x1080")
    print(f"{'session':<8} " + " ".join(f"{c:>12}" for c in columns) + "  status")
    for name, row in rows.items():
        cells = []
        for column in columns:
            value = row.get(column)
            cells.append(f"{'-':>12}" if value is None else f"{value:>12.4f}")
        print(f"{name:<8} " + " ".join(cells) + f"  {row['status']}")


if __name__ == "__main__":
    main()
