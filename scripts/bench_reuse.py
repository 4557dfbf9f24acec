"""Model calls and wall time of the smoke suite run twice: the second time a task the first run
did with a check passed is done again by reusing its workflow (``agent_s.replay.reuse``).

    .venv/bin/python scripts/bench_reuse.py [--suite smoke] [--out DIR] [--json]
                                            [--model-seconds S] [--keep workflows|skills]

First run: for each task with a reference solution, the agent runs it on the task's own fresh
virtual desktop (``agent_s.bench.environment.TaskEnvironment``: the task's setup), the scripted
model server answering each model call with the next line of the reference solution (a real
``Agent.run``: screenshots, grounding, the safety gate, the model's HTTP calls, each counted),
with no reuse; the task's evaluator scores it, and a run it scores 1.0 is saved as a verified
workflow (the evaluator's check passed: ``Workflow.from_run(..., verified=True)``) in a memory
file of this benchmark (``--out``'s ``memory.sqlite3``, sealed with its own key). With
``--keep skills`` nothing is saved by name: the agent runs with that memory and the evaluator as
its check (``postcondition``), so memory keeps a verified skill of each run the evaluator
passes, as ``agent-s run --check`` does.

Second run: every task again on a fresh desktop, the text editor's with its values changed
(``'buy milk'`` becomes ``'buy bread'`` in its instruction, its setup and its evaluator's
expected file), each agent with ``Agent(reuse=Reuse(store))``: a task that matches a stored
workflow (else a verified skill: ``--reuse auto``, the default) replays it and asks the model
only where it diverges; the scripted server answers
whatever is asked with the reference's lines, in order, and counts the calls. Each phase runs
in a process of its own (AT-SPI binds a process to one desktop's accessibility bus). Wall time
is ``Agent.run``'s, without the desktop's start and the setup, which both runs share.

The scripted model answers at once unless ``--model-seconds S`` makes it take S seconds per
call (a stand-in for a real model's latency).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_replay import act, last_action  # the reference's lines as replies, as it scores them

_KEY = "sk-bench-reuse-0000"
#: The task whose values the second run changes, and how.
_CHANGED = "c41e8d95-2b7a-4f6c-a1d3-9e5b0f7c8d04"
_OLD, _NEW = "buy milk", "buy bread"


def phase(
    task_path: str, domain: str, kind: str, folder: Path, delay: float, keep: str = "workflows"
) -> dict[str, Any]:
    """One run of one task in this process: ``kind`` "first" (no reuse; a run the evaluator
    scores 1.0 is kept: saved as a verified workflow, or with ``keep`` "skills" learned by
    memory as a verified skill) or "second" (reusing what the first kept)."""
    from agent_s import Agent, AgentConfig, GroundingConfig, ModelConfig
    from agent_s.bench.environment import TaskEnvironment
    from agent_s.bench.scoring import evaluate
    from agent_s.bench.tasks import load_task
    from agent_s.memory import MemoryStore
    from agent_s.record.trajectory import load_trajectory
    from agent_s.replay.reuse import Reuse
    from agent_s.replay.workflow import Workflow
    from agent_s.testing.scripted_replies import reply, slow
    from agent_s.testing.scripted_server import RecordedRequest, ScriptedModelServer

    task = load_task(task_path, domain=domain)
    settings = AgentConfig(record_dir=folder / "runs")
    answers = [reply(act(line)) for line in task.reference or ()]
    asked: list[int] = []

    def answer(request: RecordedRequest) -> Any:  # the reference's lines in order, counted
        asked.append(request.index)
        found = answers[min(len(asked), len(answers)) - 1]
        return slow(delay, found) if delay > 0 else found

    said: list[str] = []
    log: list[str] = []
    with (
        MemoryStore(folder.parent.parent / "memory.sqlite3") as store,
        TaskEnvironment(task, folder, log=log) as env,
        ScriptedModelServer(answer) as server,
    ):
        model = ModelConfig("openai-compatible", "scripted-model", server.openai_base_url, _KEY)
        reuse = Reuse(store, say=said.append) if kind == "second" else None
        learns = kind == "first" and keep == "skills"
        agent = Agent(
            model,
            settings=settings,
            grounding=GroundingConfig("auto"),
            backend=env.backend,
            reuse=reuse,
            memory=store if learns else None,
        )
        context = env.context

        def passes() -> bool:  # the evaluator as the run's check, after the model's done
            if context is None:
                raise RuntimeError("the task environment has no context")
            return evaluate(task, "DONE", context, env.run_steps).value == 1.0

        start = time.monotonic()
        result = agent.run(task.instruction, postcondition=passes if learns else None)
        seconds = time.monotonic() - start
        folder_run = result.trajectory_dir
        steps = load_trajectory(folder_run).steps if folder_run is not None else []
        if env.context is None:
            raise RuntimeError("the task environment has no context")
        score = evaluate(
            task, last_action(steps[-1].code if steps else None), env.context, env.run_steps
        )
        saved = "skill" if learns and result.verified else None
        if (
            kind == "first"
            and not learns
            and score.value == 1.0
            and result.succeeded
            and folder_run
        ):
            name = f"smoke-{task.id[:8]}"
            try:
                Workflow.from_run(folder_run, name, verified=True).save(store, replace=True)
                saved = name
            except ValueError as err:  # nothing done on the desktop, say
                said.append(f"not saved: {err}")
    reused = result.reused or {}
    return {
        "status": result.status.value,
        "steps": result.steps,
        "model_calls": result.model_calls,
        "seconds": round(seconds, 2),
        "score": score.value,
        "saved": saved,
        "reused": reused.get("workflow"),
        "diverged": (reused.get("divergence") or {}).get("kind"),
        "said": said,
        "trajectory": str(folder_run) if folder_run is not None else None,
    }


def _in_process(args: list[str], env: dict[str, str]) -> dict[str, Any]:
    """A phase in a child process (its own accessibility bus connection): its JSON line."""
    argv = [sys.executable, str(Path(__file__).resolve()), "--phase", *args]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False, env=env)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
        return {"status": "error", "error": " | ".join(tail), "model_calls": 0, "seconds": 0.0}
    line: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return line


def _changed(path: Path, out: Path) -> Path:
    """The task file with its values changed (``_OLD`` to ``_NEW`` everywhere in it)."""
    data = path.read_text(encoding="utf-8")
    if _OLD not in data:
        raise SystemExit(f"{path} has no {_OLD!r} to change: the smoke suite changed")
    changed = out / "changed" / path.name
    changed.parent.mkdir(parents=True, exist_ok=True)
    changed.write_text(data.replace(_OLD, _NEW), encoding="utf-8")
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", default="smoke")
    parser.add_argument("--out", type=Path, default=None, help="Folder for the runs (temp).")
    parser.add_argument("--json", action="store_true", help="One JSON object per task.")
    parser.add_argument(
        "--model-seconds", type=float, default=0.0, help="The scripted model's time per call."
    )
    parser.add_argument(
        "--keep",
        choices=("workflows", "skills"),
        default="workflows",
        help="What the first run keeps of a run its evaluator passes: a workflow saved by name, "
        "or the skill memory learns (no name).",
    )
    parser.add_argument("--phase", nargs=6, help=argparse.SUPPRESS)  # the child's arguments
    given = parser.parse_args(argv)
    if given.phase:
        task_path, domain, kind, folder, delay, keep = given.phase
        print(json.dumps(phase(task_path, domain, kind, Path(folder), float(delay), keep)))
        return 0

    from agent_s.bench.tasks import load_suite

    tasks, _ = load_suite(given.suite).load()
    out = (given.out or Path(tempfile.mkdtemp(prefix="bench-reuse-"))).resolve()
    out.mkdir(parents=True, exist_ok=True)
    # a memory file and a key of this benchmark's own: never the user's
    env = {**os.environ, "AGENT_S_MEMORY_KEY": str(out / "memory.key")}
    delay, keep = str(given.model_seconds), given.keep
    rows = []
    for task in [t for t in tasks if t.reference]:
        first = _in_process(
            [str(task.path), task.domain, "first", str(out / "first" / task.id), delay, keep], env
        )
        rows.append({"task": task.id, "domain": task.domain, "first": first})
    for row, task in zip(rows, [t for t in tasks if t.reference], strict=True):
        path = _changed(Path(task.path), out) if task.id == _CHANGED else Path(task.path)
        args = [str(path), task.domain, "second", str(out / "second" / task.id), delay, keep]
        row["second"] = _in_process(args, env)
        row["changed"] = f"{_OLD!r} -> {_NEW!r}" if task.id == _CHANGED else None
        if given.json:
            print(json.dumps(row), flush=True)
        else:
            print(_line(f"{task.domain}/{task.id[:8]}", row), flush=True)
    totals = {
        run: {
            "model_calls": sum(r[run]["model_calls"] for r in rows),
            "seconds": round(sum(r[run]["seconds"] for r in rows), 2),
        }
        for run in ("first", "second")
    }
    if given.json:
        print(json.dumps({"total": totals, "out": str(out)}))
    else:
        first, second = totals["first"], totals["second"]
        print(
            f"{'total':24} first: {first['model_calls']:2d} calls {first['seconds']:6.2f} s"
            f" | second: {second['model_calls']:2d} calls {second['seconds']:6.2f} s"
            f" | first/second time {_ratio(first['seconds'], second['seconds'])}"
        )
        print(f"runs in {out}")
    return 0


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b else "-"


def _line(name: str, row: dict[str, Any]) -> str:
    def score(found: dict[str, Any]) -> str:
        value = found.get("score")
        status = found.get("status", "")
        return f"{status}" + (f" score {value:g}" if isinstance(value, int | float) else "")

    first, second = row["first"], row["second"]
    if second.get("reused"):
        how = f"reused {second['reused']}"
        how += f", diverged ({second['diverged']})" if second.get("diverged") else ""
    else:
        how = "no workflow"
    changed = f" [values changed: {row['changed']}]" if row.get("changed") else ""
    errors = [r["error"] for r in (first, second) if "error" in r]
    return (
        f"{name:24} first: {first['model_calls']:2d} calls {first['seconds']:6.2f} s"
        f" ({score(first)}) | second: {second['model_calls']:2d} calls"
        f" {second['seconds']:6.2f} s ({score(second)}; {how}){changed}"
        + (f" | error: {errors[0]}" if errors else "")
    )


if __name__ == "__main__":
    sys.exit(main())
