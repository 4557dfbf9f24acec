"""Model calls per task, by purpose, on a suite with planning off and on.

    .venv/bin/python scripts/bench_planning.py [--suite smoke] [--modes off,always] [--json OUT]

Runs ``agent-s bench run SUITE --policy agent`` once per ``--plan`` mode, each on fresh virtual
desktops, against a local scripted model (the real openai SDK over HTTP): the worker replays
each task's reference solution one action per call, the planner answers with one subtask (or,
for a task whose reference ends in ``agent.fail()``, declares it infeasible: a perfect gate),
and the verifier says VERIFIED. It then reads each task's ``result.json`` (``calls`` per
purpose) and prints the calls per task by purpose, per mode, and the score, so the overhead of
planning (and what the gate saves on infeasible tasks) is measured on the harness as it runs.
The figures count calls, not a model's quality: the replies are scripted.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path
from typing import Any

from agent_s.bench.tasks import Task, load_suite
from agent_s.testing.scripted_replies import reply
from agent_s.testing.scripted_server import RecordedRequest, ScriptedModelServer

AGENT_S = str(Path(sys.executable).parent / "agent-s")


def _texts(request: RecordedRequest) -> tuple[str, str]:
    """(the system prompt, every other text) of a Chat Completions request."""
    system, rest = "", []
    for message in request.body.get("messages", []):
        content = message["content"]
        texts = (
            [content]
            if isinstance(content, str)
            else [p.get("text", "") for p in content if p.get("type") == "text"]
        )
        if message["role"] == "system":
            system += "\n".join(texts)
        else:
            rest.extend(texts)
    return system, "\n".join(rest)


class ReferenceModel:
    """Answers planner, verifier and worker requests from the suite's reference solutions."""

    def __init__(self, tasks: list[Task]) -> None:
        self.tasks = tasks
        self.done: Counter[str] = Counter()  # worker calls answered per task id
        self.lock = threading.Lock()

    def _task(self, text: str) -> Task:
        found = [t for t in self.tasks if t.instruction in text]
        if len(found) != 1:
            raise AssertionError(f"request names {len(found)} tasks: {text[:200]!r}")
        return found[0]

    def __call__(self, request: RecordedRequest) -> Any:
        system, text = _texts(request)
        task = self._task(text)
        lines = list(task.reference or ("agent.fail()",))
        if system.startswith("You plan the work"):
            if lines[-1].startswith("agent.fail("):
                body = {"feasible": False, "reason": "the reference solution gives up"}
            else:
                sub = {"id": "task", "description": task.instruction, "evidence": "it is done"}
                body = {"feasible": True, "subtasks": [sub]}
            return reply("```json\n" + json.dumps(body) + "\n```")
        if system.startswith("You check the work"):
            return reply("VERIFIED\nThe screen shows the subtask done.")
        with self.lock:
            index = self.done[task.id]
            self.done[task.id] += 1
        line = lines[min(index, len(lines) - 1)]
        return reply(f"Next.\n```python\n{line}\n```")


def run_mode(suite: str, mode: str, url: str, folder: Path) -> dict[str, dict[str, Any]]:
    """Run the suite with ``--plan mode``; each task's result (calls, status, score)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_S_")}
    config = folder / "config.toml"
    config.write_text("")
    env.update(AGENT_S_CONFIG=str(config), AGENT_S_PLAN=mode, OPENAI_API_KEY="sk-scripted")
    results = folder / "results"
    argv = [AGENT_S, "bench", "run", suite, "--policy", "agent", "--provider", "openai-compatible"]
    argv += ["--model", "scripted", "--base-url", url, "--workers", "1", "--results", str(results)]
    argv += ["--safety", "auto"]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=1800, check=False)
    if done.returncode not in (0, 1):
        raise SystemExit(f"bench run failed ({done.returncode}):\n{done.stderr[-2000:]}")
    found: dict[str, dict[str, Any]] = {}
    for path in results.rglob("trajectory/result.json"):
        data = json.loads(path.read_text())
        task_folder = path.parent.parent
        score = (task_folder / "result.txt").read_text().strip()
        found[task_folder.name] = {
            "calls": data.get("calls", {}),
            "status": data["status"],
            "score": float(score),
        }
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--suite", default="smoke")
    parser.add_argument("--modes", default="off,always")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    tasks, _ = load_suite(args.suite).load()
    report: dict[str, Any] = {}
    for mode in args.modes.split(","):
        model = ReferenceModel(tasks)
        with ScriptedModelServer(model) as server, tempfile.TemporaryDirectory() as tmp:
            results = run_mode(args.suite, mode, server.openai_base_url, Path(tmp))
        totals: Counter[str] = Counter()
        for result in results.values():
            totals.update(result["calls"])
        count = max(len(results), 1)
        per_task = {purpose: round(n / count, 2) for purpose, n in sorted(totals.items())}
        score = sum(r["score"] for r in results.values())
        report[mode] = {"tasks": len(results), "score": score, "per_task": per_task}
        report[mode]["all_calls_per_task"] = round(sum(totals.values()) / count, 2)
        print(
            f"--plan {mode:6} {len(results)} tasks, score {score:g}/{len(results)}: "
            f"{report[mode]['all_calls_per_task']} calls per task "
            + ", ".join(f"{k} {v}" for k, v in per_task.items())
        )
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
