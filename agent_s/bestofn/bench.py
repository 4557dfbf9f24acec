"""``agent-s bench run --best-of N``: each task attempted N times, each attempt in its own
worker (its own virtual desktop, HOME and the task's setup, locally or on the Ray cluster),
scored by the task's evaluator; the judge picks one from the narratives and final screens.

The attempts of a task live in ``<task folder>/attempts/K/`` (each a complete worker folder:
``result.json`` with its score, ``traj.jsonl``, ``trajectory/`` with ``narrative.json``).
The task folder's ``result.json`` / ``result.txt`` hold the picked attempt's record and score,
with ``best_of``: the pick, the reason, each attempt's status, score and narrative, and
``single`` (the mean score of one attempt), ``picked`` and ``oracle`` (the best score any
attempt reached), so the judge's quality is measured; ``best_of.json`` holds the same.
``cost_usd`` is every attempt's and the judge's. Attempts run up to the run's ``workers``
at once across all tasks. The judge never sees a score.
"""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_s.bestofn.attempt import narrative_of, write_json
from agent_s.bestofn.config import BestOfConfig
from agent_s.bestofn.select import Attempt, best_of, judge
from agent_s.guards import files
from agent_s.models.types import Usage

if TYPE_CHECKING:
    from agent_s.bench.distributed import RayBackend, Workers
    from agent_s.bench.runner import RunOptions
    from agent_s.bench.tasks import Task

ATTEMPTS = "attempts"  # the task folder's sub-folder of attempts
BEST_OF_FILE = "best_of.json"
_slots: dict[int, threading.Semaphore] = {}
_slots_lock = threading.Lock()


def _slot(options: RunOptions) -> threading.Semaphore:
    """The run's attempt slots: at most ``workers`` attempts at once across its tasks."""
    with _slots_lock:
        return _slots.setdefault(id(options), threading.Semaphore(options.workers))


def _record(folder: Path) -> dict[str, Any] | None:
    try:
        record = json.loads((folder / "result.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def _attempt(number: int, folder: Path, code: int | str) -> tuple[Attempt, dict[str, Any]]:
    record = _record(folder) or {
        "status": "error",
        "score": None,
        "reason": f"the worker ended without a result (exit: {code}); see worker.log",
    }
    trajectory = folder / "trajectory"
    narrative = narrative_of(trajectory if trajectory.is_dir() else None)
    score = record.get("score")
    attempt = Attempt(
        number=number,
        status=str(record.get("status")),
        reason=str(record.get("reason") or ""),
        narrative=narrative,
        trajectory=trajectory if trajectory.is_dir() else None,
        steps=int(record.get("steps") or 0),
        cost_usd=float(record.get("cost_usd") or 0.0),
        score=float(score) if isinstance(score, (int, float)) else None,
    )
    return attempt, record


def run_attempts(
    options: RunOptions,
    task: Task,
    folder: Path,
    spec: dict[str, Any],
    cost_left: float | None,
    ray: RayBackend | None,
    workers: Workers,
) -> dict[str, Any]:
    """Run ``options.best_of`` attempts of ``task`` (``spec``: the worker spec of one), judge
    them, and write the task's record into ``folder``; the record."""
    from agent_s.bench.distributed import run_worker

    if options.settings is None:
        raise ValueError("best-of-N needs the agent policy's settings")
    config = BestOfConfig(options.best_of, workers=options.workers, judge=options.judge)
    share = config.attempt_cost(cost_left)
    settings = options.settings
    if share is not None:
        settings = settings.with_cost_limit(share)
    limits = settings.limits
    steps = config.attempt_steps(limits.max_steps)
    settings = settings.model_copy(
        update={"limits": limits.model_copy(update={"max_steps": steps})}
    )
    task_text = Path(str(task.path)).read_text(encoding="utf-8") if ray is not None else ""
    slots = _slot(options)

    def one(number: int) -> tuple[Attempt, dict[str, Any]]:
        where = folder / ATTEMPTS / str(number)
        where.mkdir(parents=True)
        attempt_spec = {**spec, "folder": str(where.resolve()), "settings": settings.to_json()}
        with slots:
            if workers.cancelled:
                return _attempt(number, where, "not started: the run was cancelled")
            if ray is None:
                code = run_worker(
                    attempt_spec, where, options.api_key, options.task_timeout, workers
                )
            else:
                code = ray.run(
                    attempt_spec, task_text, options.api_key, options.task_timeout, where
                )
        return _attempt(number, where, code)

    with ThreadPoolExecutor(max_workers=config.n) as pool:
        done = list(pool.map(one, range(1, config.n + 1)))
    attempts = [a for a, _ in done]
    records = {a.number: r for a, r in done}
    spent = sum(a.cost_usd for a in attempts)
    left = None if cost_left is None else max(cost_left - spent, 0.0)
    from agent_s.bestofn.judge import Verdict

    if workers.cancelled:
        verdict = Verdict(0, "the run was cancelled", "none")
    else:
        try:
            verdict = judge(
                task.instruction, attempts, config, options.settings, options.api_key, left
            )
        except Exception as err:  # noqa: BLE001 - the record says why; the attempts still count
            from agent_s.bestofn.judge import JudgeFailed
            from agent_s.errors import describe_error

            first = next((a for a in attempts if a.judged), None)
            why = f"the judge could not decide ({describe_error(err)}); the first attempt kept"
            spent_calls = err.calls if isinstance(err, JudgeFailed) else ()
            judge_usage = err.usage if isinstance(err, JudgeFailed) else Usage()
            number = first.number if first else 0
            verdict = Verdict(number, why, "fallback", spent_calls, judge_usage)
    summary = best_of(verdict, attempts)
    scores = [a.score for a in attempts if a.score is not None]
    picked = records.get(verdict.picked)
    base: dict[str, Any] = (
        dict(picked)
        if picked is not None
        else {
            "task_id": task.id,
            "domain": task.domain,
            "policy": options.policy,
            "model": options.model_label,
            "status": "cancelled" if workers.cancelled else "error",
            "score": None,
            "reason": verdict.reason,
        }
    )
    from dataclasses import asdict

    extra = {
        **asdict(summary),
        "single": round(sum(scores) / len(scores), 4) if scores else None,
        "picked_score": base.get("score"),
        "oracle": max(scores) if scores else None,
    }
    base.update(
        best_of=extra,
        cost_usd=round(spent + verdict.usage.cost_usd, 6),
        model_calls=sum(int(r.get("model_calls") or 0) for r in records.values())
        + len(verdict.calls),
    )
    write_json(folder / BEST_OF_FILE, extra)
    if workers.cancelled:
        base.update(status="cancelled", score=None)
    write_json(folder / "result.json", base)
    if base.get("score") is not None:
        files.write_text(folder / "result.txt", f"{base['score']}\n")
    return base


__all__ = ["ATTEMPTS", "BEST_OF_FILE", "run_attempts"]
