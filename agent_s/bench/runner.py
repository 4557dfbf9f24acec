"""Run a suite: up to N tasks at once, each in its own worker process and virtual desktop.

    options = RunOptions(suite=load_suite("smoke"), results=Path("results"), policy="reference")
    records = run_suite(options, on_event=print)

Results use OSWorld's layout, ``<results>/<action_space>/<observation>/<model>/<domain>/<id>/``
(see ``worker`` for the files in it). Resume: a task whose folder has ``result.txt`` is not run
again (its ``result.json`` is read back). A folder without ``result.txt`` (a task killed half-way)
is removed before the task runs again, so nothing of the earlier attempt is left.

Tasks this machine cannot run (``check.classify``) are recorded as ``skipped`` with the reason,
without starting a desktop. The cost budget is for the whole run: each agent task gets what is
left, and no task starts once it is spent.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_s.bench.check import classify
from agent_s.bench.policies import PolicyName
from agent_s.bench.tasks import Suite, Task
from agent_s.bench.worker import RESULT_JSON, RESULT_TXT, SPEC_FILE

Event = dict[str, Any]  # {"kind": "start"|"end", "task": id, "domain": ..., "record": {...}}


@dataclass
class RunOptions:
    suite: Suite
    results: Path
    policy: PolicyName = "reference"
    workers: int = 1
    domains: Sequence[str] = ()
    action_space: str = "pyautogui"
    observation: str = "screenshot"
    model_label: str = ""  # the results folder's model level; default: the model or the policy
    agent: Mapping[str, Any] = field(default_factory=dict)  # provider, model, base_url, ground...
    api_key: str | None = field(default=None, repr=False)
    max_cost_usd: float | None = None  # for the whole run
    file_cache: Path | None = None
    width: int = 1280
    height: int = 800
    task_timeout: float = 1800.0

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ValueError("workers must be at least 1")
        if not self.model_label:
            self.model_label = str(self.agent.get("model") or self.policy)

    @property
    def model_folder(self) -> Path:
        return self.results / self.action_space / self.observation / _safe(self.model_label)


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_.@" else "_" for c in name) or "model"


def task_folder(options: RunOptions, task: Task) -> Path:
    return options.model_folder / task.domain / task.id


def _read(folder: Path) -> dict[str, Any] | None:
    try:
        return json.loads((folder / RESULT_JSON).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None


class _Budget:
    def __init__(self, limit: float | None) -> None:
        self.limit, self.spent, self._lock = limit, 0.0, threading.Lock()

    def add(self, cost: float) -> None:
        with self._lock:
            self.spent += cost

    def left(self) -> float | None:
        with self._lock:
            return None if self.limit is None else max(self.limit - self.spent, 0.0)


def _run_one(options: RunOptions, task: Task, folder: Path, budget: _Budget) -> dict[str, Any]:
    left = budget.left()
    if left is not None and left <= 0.0:
        reason = "the run's cost budget was spent before this task"
        return {"task_id": task.id, "domain": task.domain, "status": "budget_exceeded",
                "score": None, "reason": reason}  # fmt: skip
    shutil.rmtree(folder, ignore_errors=True)  # a half-finished attempt leaves nothing behind
    folder.mkdir(parents=True)
    agent = dict(options.agent)
    if left is not None:
        agent["max_cost_usd"] = left
    spec = {
        "folder": str(folder), "task_path": str(task.path), "domain": task.domain,
        "policy": options.policy, "model_label": options.model_label, "agent": agent,
        "file_cache": str(options.file_cache) if options.file_cache else None,
        "width": options.width, "height": options.height,
    }  # fmt: skip
    (folder / SPEC_FILE).write_text(json.dumps(spec, indent=1), encoding="utf-8")
    env = dict(os.environ)
    env.pop("AGENT_S_BENCH_API_KEY", None)
    if options.api_key:
        env["AGENT_S_BENCH_API_KEY"] = options.api_key
    argv = [sys.executable, "-m", "agent_s.bench.worker", str(folder / SPEC_FILE)]
    with open(folder / "worker.log", "wb") as log:
        try:
            done = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                  stderr=subprocess.STDOUT, timeout=options.task_timeout,
                                  check=False)  # fmt: skip
            code: int | str = done.returncode
        except subprocess.TimeoutExpired:
            code = f"timed out after {options.task_timeout:g} s"
    record = _read(folder)
    if record is None:
        reason = f"the worker ended without a result (exit: {code}); see worker.log"
        record = {"task_id": task.id, "domain": task.domain, "status": "error", "score": None,
                  "reason": reason}  # fmt: skip
    budget.add(float(record.get("cost_usd") or 0.0))
    return record


def run_suite(
    options: RunOptions, on_event: Callable[[Event], None] | None = None
) -> list[dict[str, Any]]:
    """Run every task of the suite (see the module docstring); the records, in suite order."""
    emit = on_event or (lambda event: None)
    tasks = list(options.suite.tasks(options.domains))
    records: dict[int, dict[str, Any]] = {}
    pending: list[tuple[int, Task, Path]] = []
    for i, task in enumerate(tasks):
        folder = task_folder(options, task)
        if (folder / RESULT_TXT).exists():
            record = _read(folder) or {"task_id": task.id, "domain": task.domain}
            record["resumed"] = True
            records[i] = record
            emit({"kind": "end", "task": task.id, "domain": task.domain, "record": record})
            continue
        reasons = [str(r) for r in classify(task, file_cache=options.file_cache)]
        if options.policy == "reference" and task.reference is None:
            reasons.append("needs a reference solution: the task file has no 'reference'")
        reason_text = "; ".join(reasons)
        if reasons:
            record = {"task_id": task.id, "domain": task.domain, "status": "skipped",
                      "score": None, "reason": reason_text}  # fmt: skip
            records[i] = record
            emit({"kind": "end", "task": task.id, "domain": task.domain, "record": record})
            continue
        pending.append((i, task, folder))
    budget = _Budget(options.max_cost_usd)

    def work(item: tuple[int, Task, Path]) -> None:
        i, task, folder = item
        emit({"kind": "start", "task": task.id, "domain": task.domain})
        started = time.monotonic()
        record = _run_one(options, task, folder, budget)
        record.setdefault("seconds", round(time.monotonic() - started, 2))
        records[i] = record
        emit({"kind": "end", "task": task.id, "domain": task.domain, "record": record,
              "cost_so_far": budget.spent})  # fmt: skip

    with ThreadPoolExecutor(max_workers=options.workers) as pool:
        for future in [pool.submit(work, item) for item in pending]:
            future.result()
    return [records[i] for i in sorted(records)]


__all__ = ["Event", "RunOptions", "run_suite", "task_folder"]
