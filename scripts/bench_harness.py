"""Throughput of the benchmark harness: tasks per hour at 1, 2 and 4 workers.

    .venv/bin/python scripts/bench_harness.py [--copies 2] [--workers 1 2 4] [--suite smoke]

Runs the suite with the reference policy (no model, no key) at each worker count, into a fresh
results folder each time, and prints wall time, tasks per hour and the mean score (which must
be 1.0: the reference solves every task). ``--copies`` repeats every task under new ids, so
that several workers have enough tasks to share.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from agent_s.bench.runner import RunOptions, run_suite
from agent_s.bench.tasks import load_suite


def _copied_suite(name: str, copies: int, folder: Path) -> Path:
    """The suite's tasks ``copies`` times over, under ids ``<id>-c<n>``, in ``folder``."""
    suite = load_suite(name)
    index: dict[str, list[str]] = {}
    for task in suite.tasks():
        for n in range(copies):
            data = dict(task.raw)
            data["id"] = f"{task.id}-c{n}"
            target = folder / "examples" / task.domain / f"{data['id']}.json"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(json.dumps(data), encoding="utf-8")
            index.setdefault(task.domain, []).append(data["id"])
    path = folder / "test_harness.json"
    path.write_text(json.dumps(index), encoding="utf-8")
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", default="smoke")
    parser.add_argument("--copies", type=int, default=2)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} cores; suite {args.suite} x{args.copies}, reference policy")
    print(f"{'workers':>7} {'tasks':>5} {'seconds':>8} {'tasks/hour':>10} {'mean score':>10}")
    with tempfile.TemporaryDirectory(prefix="agent-s-harness-") as tmp:
        index = _copied_suite(args.suite, args.copies, Path(tmp) / "suite")
        suite = load_suite(index)
        for workers in args.workers:
            results = Path(tmp) / f"results-{workers}"
            start = time.monotonic()
            records = run_suite(
                RunOptions(suite=suite, results=results, policy="reference", workers=workers)
            )
            seconds = time.monotonic() - start
            scores = [r["score"] for r in records if r.get("score") is not None]
            mean = sum(scores) / len(scores) if scores else float("nan")
            rate = len(records) / seconds * 3600
            print(f"{workers:>7} {len(records):>5} {seconds:>8.1f} {rate:>10.0f} {mean:>10.2f}")
            if len(scores) != len(records):
                bad = [r for r in records if r.get("score") is None]
                print(f"        not scored: {[(r['task_id'], r.get('reason')) for r in bad]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
