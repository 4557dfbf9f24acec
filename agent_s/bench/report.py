"""``agent-s bench report DIR``: success per domain and overall, steps, time and cost per task,
and the tasks that did not succeed, from the ``result.json`` files under a results folder."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from agent_s.bench.worker import RESULT_JSON, RESULT_TXT


def load_records(results: Path) -> list[dict[str, Any]]:
    """Every task record under ``results`` (any depth of OSWorld's layout), by folder order."""
    records = []
    for path in sorted(Path(results).rglob(RESULT_JSON)):
        if path.parent.name == "trajectory":
            continue  # our per-run trajectory's RunResult, not a task record
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            continue
        if "task_id" not in record:
            continue
        record["folder"] = str(path.parent)
        record["finished"] = (path.parent / RESULT_TXT).exists()
        records.append(record)
    return records


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
            failures.append(
                {k: record.get(k) for k in ("domain", "task_id", "status", "score", "reason")}
            )
    overall = _empty()
    for record in rows:
        _add(overall, record)
    return {
        "domains": {d: _finish(r) for d, r in sorted(domains.items())},
        "overall": _finish(overall),
        "not_succeeded": failures,
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


__all__ = ["load_records", "summarize"]
