"""One task in its own process: ``python -m agent_s.bench.worker SPEC.json``.

pyautogui binds to ``$DISPLAY`` when first imported, and AT-SPI to the D-Bus session bus, so
each task (with its own virtual desktop) runs in a fresh process. The spec (written by the
runner into the task's folder) names the task file, the policy (with the reference solution to
replay, from the references file or the task file) and, for the agent, the settings resolved
once by ``bench run`` (``agent_s.settings.read.Settings.to_json``: no file or variable is read again
for them); the API key, if any, comes in the ``AGENT_S_BENCH_API_KEY`` environment
variable, never in a file.

With ``bench run --memory`` the agent's prompts retrieve from the named store, and (unless the
mode is ``frozen``) once the task is scored its run is learned from, verified only when the
evaluator scored it 1.0; ``result.json``'s ``memory`` says the mode, the file, how many entries
the prompts were shown (``retrieved``) and how many were stored (``learned``).

The worker writes into the task folder: traj.jsonl, step_*.png, trajectory/, ``result.txt``
(the score, OSWorld's file: written last, so its presence means the task finished) and
``result.json`` (our record: status, score details, steps, cost, time, setup log). A task
this machine cannot run ends with ``result.json`` status ``skipped`` and no ``result.txt``.

A task whose setup fails, or whose scoring raises, reports an evaluator error or takes longer
than ``eval_timeout`` ends ``error`` with the reason and no score (not the agent's 0).

A stop signal (SIGTERM from the runner when the run is cancelled, SIGINT, SIGHUP) ends the task
early: the desktop stops, ``result.json`` says ``cancelled``, no ``result.txt`` is written (so a
resumed run does the task again) and the exit status is 130. When the runner gives the worker a
lifeline (``AGENT_S_BENCH_LIFELINE``: a pipe's read end whose write end only the runner holds),
the worker stops the same way once the runner is gone, even if it was killed with SIGKILL.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_s import lifecycle
from agent_s.bench.tasks import load_task
from agent_s.guards import files

if TYPE_CHECKING:
    from agent_s.bench.scoring import Score
    from agent_s.memory import MemoryStore
    from agent_s.settings.read import Settings

RESULT_JSON = "result.json"
RESULT_TXT = "result.txt"
SPEC_FILE = "spec.json"
LIFELINE_VAR = "AGENT_S_BENCH_LIFELINE"  # a file descriptor number
EVAL_TIMEOUT = 300.0  # seconds to score a task, unless the spec says otherwise


class EvaluationTimeout(RuntimeError):
    """Scoring a task took longer than its time limit."""


def _within(limit: float, score: Callable[[], Score]) -> Score:
    """``score()`` in a daemon thread, given ``limit`` seconds: a hung evaluator (a postconfig
    step, a getter, a metric) ends the task as an error, and the worker still exits."""
    box: list[Score | BaseException] = []

    def run() -> None:
        try:
            box.append(score())
        except BaseException as err:  # handed to the caller's thread, raised there
            box.append(err)

    thread = threading.Thread(target=run, name="evaluate", daemon=True)
    thread.start()
    thread.join(limit)
    if not box:
        raise EvaluationTimeout(f"evaluation did not finish within {limit:g} s")
    result = box[0]
    if isinstance(result, BaseException):
        raise result
    return result


def _write_json(path: Path, data: dict[str, Any]) -> None:
    files.write_text(path, json.dumps(data, indent=1, ensure_ascii=False) + "\n")


def _open_memory(
    spec: dict[str, Any], settings: Settings, record: dict[str, Any]
) -> MemoryStore | None:
    """The store ``bench run --memory`` named (None: off); the mode goes in the record."""
    given = spec.get("memory")
    if not given:
        return None
    from agent_s.memory import MemoryStore

    bounds = settings.memory
    record["memory"] = {"mode": given["mode"], "path": given["path"], "learned": 0}
    return MemoryStore(
        Path(given["path"]), max_entries=bounds.max_entries, max_bytes=bounds.max_bytes
    )


def _learn(memory: MemoryStore, folder: Path, score: float, record: dict[str, Any]) -> None:
    """Store what the task's run teaches; verified only when the evaluator scored it 1.0."""
    import sqlite3

    from agent_s.memory import MemoryStoreError
    from agent_s.memory.learn import learn_from_run
    from agent_s.record.trajectory import load_trajectory

    trajectory = folder / "trajectory"
    try:
        result = load_trajectory(trajectory).result
        if result is None:
            raise ValueError(f"{trajectory} has no result.json")
        ids = learn_from_run(
            memory,
            trajectory,
            result,
            verified=score >= 1.0,
            check=f"the benchmark's evaluator scored the task {score:g}",
            run_id=str(trajectory),  # every task's folder is named "trajectory"
        )
        record["memory"]["learned"] = len(ids)
    except (MemoryStoreError, sqlite3.Error, OSError, ValueError) as err:
        record["memory"]["error"] = f"{type(err).__name__}: {err}"


def run_spec(spec: dict[str, Any]) -> dict[str, Any]:
    from agent_s.bench.environment import SetupFailed, SkipTask, TaskEnvironment
    from agent_s.bench.getters import NeedsFileCache
    from agent_s.bench.policies import run_agent, run_noop, run_reference
    from agent_s.bench.scoring import evaluate

    folder = Path(spec["folder"])
    task = load_task(spec["task_path"], domain=spec["domain"])
    if spec.get("reference") is not None:  # the runner's references file, if it had one
        task = replace(task, reference=tuple(spec["reference"]))
    policy = spec["policy"]
    record: dict[str, Any] = {
        "task_id": task.id,
        "domain": task.domain,
        "instruction": task.instruction,
        "policy": policy,
        "model": spec.get("model_label", policy),
        "infeasible": task.infeasible,
        "status": "error",
        "score": None,
        "steps": 0,
        "cost_usd": 0.0,
        "tokens": 0,
        "started_at": time.time(),
    }
    log: list[str] = []
    start = time.monotonic()
    file_cache = Path(spec["file_cache"]) if spec.get("file_cache") else None
    env = TaskEnvironment(
        task, folder, file_cache=file_cache, width=spec["width"], height=spec["height"], log=log
    )
    interrupted: KeyboardInterrupt | None = None
    memory: MemoryStore | None = None
    frozen = False
    try:
        env.start()
        if policy == "reference":
            if task.reference is None:
                raise SkipTask("needs a reference solution: the task file has no 'reference'")
            outcome = run_reference(task, env.backend, folder, task.reference)
        elif policy == "noop":
            outcome = run_noop(task, env.backend, folder)
        else:
            from agent_s.settings.read import Settings

            settings = Settings.from_json(spec["settings"])
            key = os.environ.get("AGENT_S_BENCH_API_KEY") or None
            memory = _open_memory(spec, settings, record)
            frozen = (spec.get("memory") or {}).get("mode") == "frozen"
            outcome = run_agent(
                task, env.backend, folder, settings, api_key=key, memory=memory, frozen=frozen
            )
            if memory is not None:
                from agent_s.memory.recall import retrieved_count

                record["memory"]["retrieved"] = retrieved_count(folder / "trajectory")
        record.update(
            status=outcome.status,
            steps=outcome.steps,
            reason=outcome.reason,
            last_action=outcome.last_action,
            cost_usd=outcome.cost_usd,
            tokens=outcome.tokens,
            model_calls=outcome.model_calls,
        )
        signum = lifecycle.received()
        if signum is not None:  # the agent caught the interrupt and ended its run early
            raise lifecycle.Terminated(signum)
        if env.context is None:
            raise SetupFailed("the task environment has no context")
        context = env.context
        score = _within(
            float(spec.get("eval_timeout") or EVAL_TIMEOUT),
            lambda: evaluate(task, outcome.last_action, context, env.run_steps),
        )
        broken = score.error if score.value < 1.0 else ""
        if broken:  # the evaluator could not judge: not the agent's 0
            record.update(status="error", reason=f"evaluation failed: {broken}")
            record.update(evaluation=score.to_json())
        else:
            record.update(score=score.value, evaluation=score.to_json())
            if memory is not None and not frozen:
                _learn(memory, folder, score.value, record)
    except KeyboardInterrupt as err:
        interrupted = err
        record.update(status="cancelled", score=None, reason=str(err) or "interrupted")
    except (SkipTask, NeedsFileCache) as err:
        record.update(status="skipped", reason=str(err))
    except SetupFailed as err:
        record.update(status="error", score=None, reason=f"setup failed: {err}")
    except EvaluationTimeout as err:
        record.update(status="error", score=None, reason=str(err))
    except Exception as err:  # the record must say what went wrong, whatever it was
        record.update(
            status="error",
            score=None,
            reason=f"{type(err).__name__}: {err}",
            traceback=traceback.format_exc()[-3000:],
        )
    finally:
        env.stop()
        if memory is not None:
            memory.close()
    record.update(seconds=round(time.monotonic() - start, 2), setup_log=log[-50:])
    _write_json(folder / RESULT_JSON, record)
    if interrupted is not None:
        raise interrupted
    if record["score"] is not None:
        files.write_text(folder / RESULT_TXT, f"{record['score']}\n")
    return record


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        sys.stderr.write("usage: python -m agent_s.bench.worker SPEC.json\n")
        return 2
    lifeline = os.environ.pop(LIFELINE_VAR, "")
    with lifecycle.stop_signals_interrupt():
        if lifeline.isdigit():
            lifecycle.watch_lifeline(int(lifeline))
        try:
            spec = json.loads(Path(args[0]).read_text(encoding="utf-8"))
            run_spec(spec)
        except KeyboardInterrupt as err:
            sys.stderr.write(f"cancelled: {err or 'interrupted'}\n")
            return 130
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
