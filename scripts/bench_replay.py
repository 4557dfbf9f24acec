"""Model calls and wall time of an agent run vs its replay, for the smoke suite's tasks.

    .venv/bin/python scripts/bench_replay.py [--suite smoke] [--out DIR] [--json]
                                             [--model-seconds S]

For each task that has a reference solution: (1) the agent runs it on the task's own fresh
virtual desktop (``agent_s.bench.environment.TaskEnvironment``: the task's setup), the scripted
model server answering each model call with the next line of the reference solution (a real
``Agent.run``: screenshots, grounding, the safety gate, the model's HTTP calls); (2) the run's
trajectory is replayed (``agent_s.replay.player.replay``, no model) on a second fresh desktop set up
the same way. Both are scored by the task's evaluator. Each phase runs in a process of its own
(AT-SPI binds a process to one desktop's accessibility bus). Wall time is ``Agent.run`` vs
``replay``, without the desktop's start and the setup, which both phases share.

The scripted model answers at once unless ``--model-seconds S`` makes it take S seconds per
call (a stand-in for a real model's latency, 15-30 s per step for frontier models with deep
reasoning); at 0 the figures are the agent's own work per step (screenshot, context, parsing
the reply, acting, settling) against the replay's (the same, grounding again, no model).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

_KEY = "sk-bench-replay-0000"


def act(line: str) -> str:
    return f"The next step of the task.\n```python\n{line}\n```"


def last_action(code: str | None) -> Any:
    if code in ("DONE", "FAIL", "WAIT") or code is None:
        return code
    return "OTHER"


def phase(
    task_path: str, domain: str, kind: str, folder: Path, source: str | None, delay: float
) -> dict[str, Any]:
    """One phase of one task in this process: the agent's run (``kind`` "run") or the replay
    of the run recorded in ``source`` ("replay"); its figures and score."""
    from agent_s import Agent, AgentConfig, GroundingConfig, ModelConfig
    from agent_s.bench.environment import TaskEnvironment
    from agent_s.bench.scoring import evaluate
    from agent_s.bench.tasks import load_task
    from agent_s.record.trajectory import load_trajectory
    from agent_s.replay.player import Replayer, script_of
    from agent_s.testing.scripted_replies import reply, slow
    from agent_s.testing.scripted_server import ScriptedModelServer

    task = load_task(task_path, domain=domain)
    settings = AgentConfig(record_dir=folder / "runs")
    log: list[str] = []
    with TaskEnvironment(task, folder, log=log) as env:
        if kind == "run":
            answers = [reply(act(line)) for line in task.reference or ()]
            script = [slow(delay, answer) if delay > 0 else answer for answer in answers]
            with ScriptedModelServer(script) as server:
                model = ModelConfig(
                    "openai-compatible", "scripted-model", server.openai_base_url, _KEY
                )
                agent = Agent(
                    model, settings=settings, grounding=GroundingConfig("auto"), backend=env.backend
                )
                start = time.monotonic()
                result = agent.run(task.instruction)
                seconds = time.monotonic() - start
            run, status = result, result.status.value
        else:
            replayer = Replayer(env.backend, settings=settings)  # as the Agent above: untimed
            plan = script_of(str(source))
            start = time.monotonic()
            replayed = replayer.run(plan)
            seconds = time.monotonic() - start
            run, status = replayed.run, replayed.status
        folder_run = run.trajectory_dir
        steps = load_trajectory(folder_run).steps if folder_run is not None else []
        last = last_action(steps[-1].code if steps else None)
        if env.context is None:
            raise RuntimeError("the task environment has no context")
        score = evaluate(task, last, env.context, env.run_steps)
    return {
        "status": status,
        "steps": run.steps,
        "model_calls": run.model_calls,
        "seconds": round(seconds, 2),
        "score": score.value,
        "trajectory": str(folder_run) if folder_run is not None else None,
    }


def _in_process(args: list[str]) -> dict[str, Any]:
    """A phase in a child process (its own accessibility bus connection): its JSON line."""
    argv = [sys.executable, str(Path(__file__).resolve()), "--phase", *args]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
        return {"status": "error", "error": " | ".join(tail), "model_calls": 0, "seconds": 0.0}
    line: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return line


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", default="smoke")
    parser.add_argument(
        "--out", type=Path, default=None, help="Folder for the runs (default: temp)."
    )
    parser.add_argument(
        "--json", action="store_true", help="One JSON object per task, then the total."
    )
    parser.add_argument(
        "--model-seconds", type=float, default=0.0, help="The scripted model's time per call."
    )
    parser.add_argument("--phase", nargs=6, help=argparse.SUPPRESS)  # the child's arguments
    given = parser.parse_args(argv)
    if given.phase:
        task_path, domain, kind, folder, source, delay = given.phase
        found = phase(task_path, domain, kind, Path(folder), source or None, float(delay))
        print(json.dumps(found))
        return 0

    from agent_s.bench.tasks import load_suite

    suite = load_suite(given.suite)
    tasks, _ = suite.load()
    out = given.out or Path(tempfile.mkdtemp(prefix="bench-replay-"))
    rows = []
    for task in tasks:
        if not task.reference:
            continue
        folder = out / task.id
        delay = str(given.model_seconds)
        run = _in_process([str(task.path), task.domain, "run", str(folder / "run"), "", delay])
        source = run.get("trajectory") or ""
        replayed = (
            _in_process(
                [str(task.path), task.domain, "replay", str(folder / "replay"), source, delay]
            )
            if source
            else {"status": "no run", "model_calls": 0, "seconds": 0.0}
        )
        row = {"task": task.id, "domain": task.domain, "run": run, "replay": replayed}
        rows.append(row)
        if given.json:
            print(json.dumps(row), flush=True)
        else:
            print(_line(f"{task.domain}/{task.id[:8]}", run, replayed), flush=True)
    total_run = {
        "model_calls": sum(r["run"]["model_calls"] for r in rows),
        "seconds": sum(r["run"]["seconds"] for r in rows),
    }
    total_replay = {
        "model_calls": sum(r["replay"]["model_calls"] for r in rows),
        "seconds": sum(r["replay"]["seconds"] for r in rows),
    }
    if given.json:
        print(json.dumps({"total": {"run": total_run, "replay": total_replay}, "out": str(out)}))
    else:
        print(_line("total", total_run, total_replay))
        print(f"runs in {out}")
    return 0


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b else "-"


def _line(name: str, run: dict[str, Any], replayed: dict[str, Any]) -> str:
    def score(found: dict[str, Any]) -> str:
        value = found.get("score")
        status = found.get("status", "")
        return f"{status}" + (f" score {value:g}" if isinstance(value, int | float) else "")

    return (
        f"{name:24} run: {run['model_calls']:2d} calls {run['seconds']:6.2f} s ({score(run)})"
        f" | replay: {replayed['model_calls']:2d} calls {replayed['seconds']:6.2f} s"
        f" ({score(replayed)}) | run/replay time {_ratio(run['seconds'], replayed['seconds'])}"
        + (
            f" | error: {run.get('error') or replayed.get('error')}"
            if "error" in run or "error" in replayed
            else ""
        )
    )


if __name__ == "__main__":
    sys.exit(main())
