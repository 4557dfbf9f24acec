"""``agent-s bench report DIR``: success per domain and overall, steps, time and cost per task,
and the tasks that did not succeed, from the ``result.json`` files under a results folder.

Results of different runs (policy and model: the ``<model>`` level of OSWorld's layout) are
never pooled: ``group`` splits the records by run. A task folder whose result files cannot be
read is listed by ``load_results``, not dropped."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from agent_s.bench.worker import RESULT_JSON, RESULT_TXT
from agent_s.guards import files


def load_records(results: Path) -> list[dict[str, Any]]:
    """Every readable task record under ``results`` (any depth of OSWorld's layout)."""
    return load_results(results)[0]


def load_results(results: Path) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """The task records under ``results`` by folder order, and each task folder whose result
    files cannot be read (``{"folder": ..., "problem": ...}``)."""
    records: list[dict[str, Any]] = []
    unreadable: list[dict[str, str]] = []
    folders = {p.parent for name in (RESULT_JSON, RESULT_TXT) for p in Path(results).rglob(name)}
    for folder in sorted(folders):
        if folder.name == "trajectory":
            continue  # our per-run trajectory's RunResult, not a task record
        if folder.parent.name == "attempts" and (folder.parent.parent / "best_of.json").exists():
            continue  # one attempt of a best-of-N task: its task folder holds the record
        record, problem = _load(folder)
        if record is None:
            unreadable.append({"folder": str(folder), "problem": problem})
            continue
        record["folder"] = str(folder)
        record["finished"] = (folder / RESULT_TXT).exists()
        records.append(record)
    return records, unreadable


def _load(folder: Path) -> tuple[dict[str, Any] | None, str]:
    try:
        record = json.loads(files.read_text(files.inside(folder, RESULT_JSON)))
    except FileNotFoundError:
        return None, f"{RESULT_TXT} without {RESULT_JSON}"
    except (OSError, ValueError) as err:
        return None, f"{RESULT_JSON} cannot be read ({type(err).__name__}: {err})"[:200]
    if not isinstance(record, dict) or "task_id" not in record:
        return None, f"{RESULT_JSON} is not a task record (no task_id)"
    if (folder / RESULT_TXT).exists():
        try:
            score = float(files.read_text(files.inside(folder, RESULT_TXT)).strip())
        except (OSError, ValueError):
            return None, f"{RESULT_TXT} holds no score"
        if record.get("score") != score:
            return None, f"{RESULT_TXT} ({score}) and {RESULT_JSON} disagree"
    return record, ""


def run_of(record: Mapping[str, Any]) -> str:
    """Which run a record belongs to: ``policy/model`` (the model level of the layout)."""
    policy = str(record.get("policy") or "?")
    model = str(record.get("model") or "?")
    return policy if model == policy else f"{policy}/{model}"


def group(records: Iterable[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    """The records by run (``run_of``), in order of first appearance."""
    runs: dict[str, list[Mapping[str, Any]]] = {}
    for record in records:
        runs.setdefault(run_of(record), []).append(record)
    return runs


def outcome(record: Mapping[str, Any]) -> str:
    """What happened, in words: the status, except that an infeasible task says so and what
    the agent said (its right answer is fail: ``infeasible (said fail)`` scores 1), and a task
    the agent called done that its evaluator scored below 1 says so."""
    status = str(record.get("status"))
    if record.get("infeasible") and status in ("succeeded", "failed"):
        said = {"FAIL": "fail", "DONE": "done"}.get(str(record.get("last_action")), status)
        return f"infeasible (said {said})"
    score = record.get("score")
    if status == "succeeded" and isinstance(score, (int, float)) and score < 1.0:
        return "said done, not achieved"  # the agent's word; the evaluator decides
    return status


def summarize(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Per domain and overall: tasks, scored, the mean score (success rate), skipped, errors,
    mean steps / seconds / cost of scored tasks; and every scored task below 1."""
    domains: dict[str, dict[str, Any]] = {}
    failures = []
    rows = list(records)
    for record in rows:
        row = domains.setdefault(record.get("domain", ""), _empty())
        _add(row, record)
        score = record.get("score")
        if score is None or score < 1.0:
            failure = {k: record.get(k) for k in ("domain", "task_id", "status", "score", "reason")}
            failures.append({**failure, "outcome": outcome(record)})
    overall = _empty()
    for record in rows:
        _add(overall, record)
    summary = {
        "domains": {d: _finish(r) for d, r in sorted(domains.items())},
        "overall": _finish(overall),
        "not_succeeded": failures,
    }
    best = best_of_rates(rows)
    if best is not None:
        summary["best_of"] = best
    return summary


def best_of_rates(records: Iterable[Mapping[str, Any]]) -> dict[str, Any] | None:
    """Over the best-of-N tasks (``agent_s.bestofn.bench``) that were scored: the success of
    a single attempt (the mean of every attempt's score), of the judge's pick, and of the best
    attempt (the oracle: what a perfect judge would reach). None: no such task."""
    rows = [
        r["best_of"]
        for r in records
        if isinstance(r.get("best_of"), Mapping) and r["best_of"].get("single") is not None
    ]
    if not rows:
        return None
    n = len(rows)
    return {
        "tasks": n,
        "attempts": sum(len(r.get("attempts") or ()) for r in rows),
        "single_success": round(sum(float(r["single"]) for r in rows) / n, 4),
        "picked_success": round(sum(float(r.get("picked_score") or 0.0) for r in rows) / n, 4),
        "oracle_success": round(sum(float(r.get("oracle") or 0.0) for r in rows) / n, 4),
    }


def _empty() -> dict[str, Any]:
    return {
        "tasks": 0,
        "scored": 0,
        "score_sum": 0.0,
        "skipped": 0,
        "errors": 0,
        "steps": 0,
        "seconds": 0.0,
        "cost_usd": 0.0,
    }


def _add(row: dict[str, Any], record: Mapping[str, Any]) -> None:
    row["tasks"] += 1
    score = record.get("score")
    if record.get("status") == "skipped":
        row["skipped"] += 1
    elif score is None:
        row["errors"] += 1
    if score is not None:
        row["scored"] += 1
        row["score_sum"] += float(score)
        row["steps"] += int(record.get("steps") or 0)
        row["seconds"] += float(record.get("seconds") or 0.0)
        row["cost_usd"] += float(record.get("cost_usd") or 0.0)


def _finish(row: dict[str, Any]) -> dict[str, Any]:
    n = row["scored"]
    return {
        "tasks": row["tasks"],
        "scored": n,
        "skipped": row["skipped"],
        "errors": row["errors"],
        "success_rate": round(row["score_sum"] / n, 4) if n else None,
        "mean_steps": round(row["steps"] / n, 2) if n else None,
        "mean_seconds": round(row["seconds"] / n, 2) if n else None,
        "mean_cost_usd": round(row["cost_usd"] / n, 6) if n else None,
        "cost_usd": round(row["cost_usd"], 6),
    }


__all__ = [
    "best_of_rates",
    "group",
    "load_records",
    "load_results",
    "outcome",
    "run_of",
    "summarize",
]
