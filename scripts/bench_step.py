"""Per-step time outside the model, ours next to Agent S3's: the loop's work and the settle wait.

    .venv/bin/python scripts/bench_step.py [--steps 30] [--no-ocr]

On a 1920x1080 virtual desktop (openbox, an xterm, galculator), each session runs ``--steps``
steps against zero-latency scripted model servers (``agent_s.testing.scripted_server``). Every
session clicks galculator; the trajectory is recorded. A step's time outside the model calls
(the generation model's, and the grounding model's where there is one) is split in two:

- ``settle``: after the action, the wait for the screen to show its effect (ours: until the
  application reacted and the screen is still, at most ``AgentConfig.settle_seconds``, the
  default; Agent S3: the fixed sleeps its CLI takes around each action, 1 s before and 1 s
  after, slept and timed in the same run);
- ``work``: everything else, the loop's own work (capture, encode, prompt, parse, ground, gate,
  act, record), with its parts beside it.

Ours (``agent_s.Agent``, model ``bench-model``: full-size PNG, as Agent S3 sends):
  native  the model gives coordinates        a11y  buttons by name, accessibility tree
  model   a scripted grounding model         ocr   buttons by name, tesseract
Agent S3 0.3.2 (``scripts/s3_driver.py``, in ``.venv-s3``): its real ``predict`` (reflection
on, its default; a grounding model at the same point as ours) on a PNG of the screen, then the
pyautogui code it returns is executed, as its CLI does. The last lines compare the ``model``
session (the same setup as Agent S3's).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from s3_driver import INSTALL, S3Process, s3_python

from agent_s import Agent, AgentConfig, GroundingConfig, ModelConfig
from agent_s.desktop.ops import Point
from agent_s.desktop.virtual import VirtualDesktop
from agent_s.desktop.x11 import X11Backend
from agent_s.grounding import AccessibilityGrounder, ModelGrounder, Observation
from agent_s.models.endpoints import ProviderSettings
from agent_s.models.factory import build_provider
from agent_s.models.types import ModelReply, ModelRequest, Provider
from agent_s.testing.scripted_replies import Step, reply
from agent_s.testing.scripted_server import RecordedRequest, ScriptedModelServer

WIDTH, HEIGHT = 1920, 1080
TASK = "benchmark: press galculator's buttons"
CLICKED = ("7", "AC")  # the buttons every session presses in turn: the display changes each time
PHASES = ("observe", "encode", "build", "grounding", "execute", "effects", "other")


def _answer(code: str) -> Step:
    return reply(f"Benchmark step.\n```python\n{code}\n```", input_tokens=1500)


def _grounding(buttons: dict[str, Point]) -> Callable[[RecordedRequest], Step]:
    """A grounding model that finds galculator's buttons named in the request."""

    def answer(request: RecordedRequest) -> Step:
        text = request.read()
        at = next((p for name, p in buttons.items() if f"the {name} button" in text), None)
        at = at or next(iter(buttons.values()))
        return reply(f"({at.x}, {at.y})")

    return answer


def _buttons(backend: X11Backend) -> dict[str, Point]:
    """Where galculator's 7 and AC buttons are (its accessibility tree)."""
    observation = Observation(backend.capture(), tuple(backend.windows()), backend.geometry())
    grounder = AccessibilityGrounder()
    return {name: grounder.ground(f"the {name} button", observation).point for name in CLICKED}


def _alternating(actions: list[str]) -> Callable[[RecordedRequest], Step]:
    counter = iter(range(10**9))
    return lambda request: _answer(actions[next(counter) % len(actions)])


class TimedProvider:
    """A provider that adds up the seconds its calls take (the grounding model's time)."""

    def __init__(self, inner: Provider) -> None:
        self.inner = inner
        self.seconds = 0.0

    @property
    def model(self) -> str:
        return self.inner.model

    def complete(self, request: ModelRequest) -> ModelReply:
        start = time.perf_counter()
        try:
            return self.inner.complete(request)
        finally:
            self.seconds += time.perf_counter() - start


@dataclass
class Session:
    name: str
    rows: list[dict[str, float]]  # per step: work, settle, phases, model
    calls: float  # model requests per step (both servers)

    def median(self, key: str) -> float:
        return statistics.median(row.get(key, 0.0) for row in self.rows)


def run_ours(
    name: str,
    mode: str,
    actions: list[str],
    buttons: dict[str, Point],
    backend: Any,
    steps: int,
    folder: Path,
) -> Session:
    with (
        ScriptedModelServer(_alternating(actions)) as server,
        ScriptedModelServer(_grounding(buttons)) as ground,
    ):
        model = ModelConfig("openai-compatible", "bench-model", server.openai_base_url, "k")
        settings = AgentConfig(max_steps=steps, record_dir=folder / name, retry_attempts=1)
        timed = grounder = None
        if mode == "model":  # built here, to time the grounding model's calls
            grounding = GroundingConfig("model", url=ground.openai_base_url, model="bench-ground")
            endpoint = ProviderSettings(
                "openai_compatible", "bench-ground", ground.openai_base_url, "k"
            )
            timed = TimedProvider(build_provider(endpoint))
            grounder = ModelGrounder(timed)
        else:
            grounding = GroundingConfig(mode)  # type: ignore[arg-type]
        agent = Agent(
            model, settings=settings, grounding=grounding, grounder=grounder, backend=backend
        )
        agent.start(TASK)
        rows = []
        for _ in range(steps):
            before = timed.seconds if timed else 0.0
            start = time.perf_counter()
            step = agent.step()
            wall = time.perf_counter() - start
            ground_model = (timed.seconds if timed else 0.0) - before
            model_s = step.timings.get("model", 0.0) + ground_model
            settle = step.timings.get("settle", 0.0)
            row = {k: step.timings.get(k, 0.0) for k in PHASES[:-1]}
            row["grounding"] -= ground_model
            row["other"] = wall - model_s - settle - sum(row.values())
            work = wall - model_s - settle
            rows.append({**row, "work": work, "settle": settle, "model": model_s})
        agent.reset()
        calls = (len(server.requests) + len(ground.requests)) / steps
    return Session(name, rows, calls)


def run_s3(python: Path, buttons: dict[str, Point], steps: int, env: dict[str, str]) -> Session:
    clicks = [_answer(f"agent.click('the {name} button')") for name in CLICKED]
    script = [clicks[0]]
    for step in range(1, steps):  # reflection, then generation
        script += [reply("The last click worked. Keep going."), clicks[step % len(clicks)]]
    with (
        ScriptedModelServer(script) as server,
        ScriptedModelServer(_grounding(buttons)) as ground,
        S3Process(python, env) as s3,
    ):
        s3.ask(
            op="init",
            engine={
                "engine_type": "openai",
                "model": "bench-model",
                "base_url": server.openai_base_url,
                "api_key": "k",
            },
            grounding={
                "engine_type": "huggingface",
                "model": "bench-ground",
                "base_url": ground.openai_base_url,
                "api_key": "k",
                "grounding_width": WIDTH,
                "grounding_height": HEIGHT,
            },
            width=WIDTH,
            height=HEIGHT,
            instruction=TASK,
        )
        rows = []
        for _ in range(steps):
            done = s3.ask(op="step", sleeps=True)
            rows.append(
                {
                    "observe": done["capture"],
                    "predict": done["predict"],
                    "execute": done["execute"],
                    "model": done["model"],
                    "settle": done["settle"],
                    "work": done["seconds"] - done["model"] - done["settle"],
                }
            )
        calls = (len(server.requests) + len(ground.requests)) / steps
    return Session("Agent S3", rows, calls)


def _report(sessions: list[Session], steps: int) -> list[str]:
    columns = ("work", "settle", *PHASES, "predict", "model")
    lines = [
        f"median ms per step over {steps} steps, 1920x1080, zero-latency scripted models "
        "(work = wall time - time in model calls - settle; predict: Agent S3's predict outside "
        "its model calls, which covers its encode, build and grounding)",
        f"{'session':<9}" + "".join(f"{c:>10}" for c in columns) + f"{'calls/step':>11}",
    ]
    for session in sessions:
        cells = []
        for column in columns:
            if any(column in row for row in session.rows):
                cells.append(f"{session.median(column) * 1000:10.1f}")
            else:
                cells.append(f"{'-':>10}")
        lines.append(f"{session.name:<9}" + "".join(cells) + f"{session.calls:11.1f}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--no-ocr", action="store_true", help="skip the (slow) OCR session")
    args = parser.parse_args()
    python = s3_python()
    if python is None:
        print(f"Agent S3 is not installed in .venv-s3, so only ours is measured: {INSTALL}")
    with (
        tempfile.TemporaryDirectory() as temp,
        VirtualDesktop(WIDTH, HEIGHT, home="temp") as desk,
    ):
        env = {k: desk.env[k] for k in ("DISPLAY", "XAUTHORITY")}
        env["DBUS_SESSION_BUS_ADDRESS"] = desk.env.get("DBUS_SESSION_BUS_ADDRESS", "")
        os.environ.update(env)  # the accessibility bus is read from this process's environment
        backend = X11Backend(desk.display, env=desk.env)
        desk.launch(["xterm", "-geometry", "80x24+50+50", "-title", "bench-xterm"])
        desk.launch(["galculator"])
        backend.wait_for_window(lambda w: "galculator" in w.app.lower(), timeout=20)
        time.sleep(1.0)
        backend.activate("galculator")
        buttons = _buttons(backend)
        clicks = [f'agent.click("({p.x}, {p.y})")' for p in buttons.values()]
        named = [f'agent.click("the {name} button")' for name in CLICKED]
        plan = [("native", "native", clicks), ("a11y", "a11y", named), ("model", "model", named)]
        if not args.no_ocr:
            plan.append(("ocr", "ocr", ['agent.click("the AC button")', 'agent.click("sqrt")']))
        sessions = [
            run_ours(name, mode, actions, buttons, backend, args.steps, Path(temp))
            for name, mode, actions in plan
        ]
        backend.close()
        if python is not None:
            sessions.append(run_s3(python, buttons, args.steps, {**os.environ, **desk.env}))
    print("\n".join(_report(sessions, args.steps)))
    ours = next(s for s in sessions if s.name == "model")
    theirs = sessions[-1] if python is not None else None
    for key, what in (("work", "loop's work"), ("settle", "settle wait")):
        mine = ours.median(key) * 1000
        if theirs is None:
            print(f"{what} per step (median of {args.steps}): ours {mine:.0f} ms, Agent S3 -")
            continue
        other = theirs.median(key) * 1000
        print(
            f"{what} per step (median of {args.steps}): ours {mine:.0f} ms, "
            f"Agent S3 {other:.0f} ms, ours / Agent S3 = {mine / other:.2f} (the same run)"
        )
    settles = [s.median("settle") * 1000 for s in sessions if s is not theirs]
    print(
        f"settle wait per galculator click, every session of ours: max median {max(settles):.0f} ms"
    )


if __name__ == "__main__":
    main()
