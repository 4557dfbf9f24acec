"""Run a suite: up to N tasks at once, each in its own worker process and virtual desktop.

    options = RunOptions(suite=load_suite("smoke"), results=Path("results"), policy="reference")
    records = run_suite(options, on_event=print)

Results use OSWorld's layout, ``<results>/<action_space>/<observation>/<model>/<domain>/<id>/``
(see ``worker`` for the files in it). Resume: a task whose folder has a valid result (a score in
``result.txt`` and the same score in a readable ``result.json``) is not run again; its record
comes back with ``resumed``. Any other folder (a task killed half-way, a torn result file) is
removed before the task runs again, so nothing of the earlier attempt is left. Task files that
do not load are left out (``Suite.load`` names them; the caller reports them).

``memory`` (the agent policy): ``frozen`` shows each task the entries of a given store without
writing to it; ``learning`` shows them and stores what each task teaches (summary, lessons, and
skills only from a task its evaluator scored 1.0); ``fresh`` learns in a new store of the
results' model folder (``memory.sqlite3``, kept on resume). Workers write to the one SQLite
file at once (WAL, one short transaction per entry).

``backend="ray"`` sends each task to a Ray cluster at ``address`` instead of a local worker
process (see ``distributed``); ``workers`` is then how many tasks are in flight at once.

Cancelling (Ctrl-C, SIGTERM, SIGHUP in the main thread): no task starts any more, each running
worker gets SIGTERM and is waited for (it stops its desktop and records the task ``cancelled``,
without ``result.txt``, so a resumed run does it again), then ``run_suite`` raises
``RunCancelled`` with the records so far. If the runner is killed outright, each worker notices
its lifeline close and stops the same way (see ``distributed.Workers``).

Tasks this machine cannot run (``check.classify``) are recorded as ``skipped`` with the reason,
without starting a desktop. The cost budget is for the whole run: each agent task gets what is
left, and no task starts once it is spent.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import signal
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from agent_s.bench.cache import missing_note
from agent_s.bench.check import classify
from agent_s.bench.distributed import RayBackend, Workers, run_worker
from agent_s.bench.policies import PolicyName
from agent_s.bench.tasks import References, Suite, Task, load_references, reference_for
from agent_s.bench.worker import RESULT_JSON, RESULT_TXT
from agent_s.guards import files

if TYPE_CHECKING:
    from agent_s.bestofn.judge import JudgeMode
    from agent_s.settings.read import Settings

Backend = Literal["local", "ray"]
#: memory across the run's tasks (the agent policy): none; read a given store without writing;
#: a new store of this results folder that learns; or a given store that learns. Learning
#: stores each task's run with verified = the evaluator's score 1.0 (never the model's word).
MemoryMode = Literal["off", "frozen", "fresh", "learning"]
MEMORY_MODES: tuple[MemoryMode, ...] = ("off", "frozen", "fresh", "learning")
FRESH_MEMORY = "memory.sqlite3"  # in the results' model folder, for --memory fresh

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
    # the agent policy's settings, resolved once (``agent_s.settings.read``); each worker gets them
    settings: Settings | None = None
    api_key: str | None = field(default=None, repr=False)  # sent in the environment only
    max_cost_usd: float | None = None  # for the whole run
    file_cache: Path | None = None
    width: int = 1280
    height: int = 800
    task_timeout: float = 1800.0
    eval_timeout: float = 300.0  # scoring (postconfig, getters, metrics) of one task
    backend: Backend = "local"
    address: str | None = None  # the Ray cluster (backend "ray"); None: RAY_ADDRESS or local
    # reference solutions by task id (the reference policy); None: the file the package ships
    references: References | None = None
    best_of: int = 1  # attempts per task (the agent policy); >1: a judge picks (bestofn.bench)
    judge: JudgeMode = "comparative"  # the best-of judge: comparative | tournament
    memory: MemoryMode = "off"
    # the store for frozen and learning (None: the settings' [memory] path, else the default);
    # for fresh, set to the model folder's FRESH_MEMORY
    memory_db: Path | None = None

    def __post_init__(self) -> None:
        if self.references is None:
            self.references = load_references()
        if self.best_of != 1 and self.policy != "agent":
            raise ValueError("--best-of is for --policy agent: a judge model picks the attempt")
        from agent_s.bestofn.config import BestOfConfig

        BestOfConfig(self.best_of, judge=self.judge)  # says what is wrong with either
        if self.workers < 1:
            raise ValueError("workers must be at least 1")
        if self.backend not in ("local", "ray"):
            raise ValueError(f"backend must be local or ray, not {self.backend!r}")
        if self.address is not None and self.backend != "ray":
            raise ValueError("an address is for the ray backend only")
        if self.policy == "agent" and self.settings is None:
            raise ValueError("the agent policy needs its settings (agent_s.settings.read)")
        if not self.model_label:
            name = self.settings.model.name if self.settings is not None else None
            self.model_label = name or self.policy
        self._check_memory()

    def _check_memory(self) -> None:
        if self.memory not in MEMORY_MODES:
            raise ValueError(f"memory must be one of {', '.join(MEMORY_MODES)}, not {self.memory}")
        if self.memory == "off":
            return
        if self.policy != "agent":
            raise ValueError(f"--memory {self.memory} is for --policy agent (the model) only")
        if self.backend != "local":
            raise ValueError("--memory needs --backend local: the memory file is on this machine")
        if self.memory == "fresh":
            self.memory_db = self.model_folder / FRESH_MEMORY
        elif self.memory_db is None:
            from agent_s.memory import default_path

            configured = self.settings.memory.path if self.settings is not None else None
            self.memory_db = configured or default_path()
        if self.memory == "frozen" and not self.memory_db.is_file():
            raise ValueError(
                f"--memory frozen reads {self.memory_db}, which does not exist: give the store "
                "with --memory-db, or use --memory fresh or learning"
            )

    @property
    def model_folder(self) -> Path:
        return self.results / self.action_space / self.observation / _safe(self.model_label)


class RunCancelled(KeyboardInterrupt):
    """``run_suite`` was interrupted: the records of the tasks that ended, in suite order (a
    task stopped half-way is among them, ``cancelled``), and the stop signal."""

    def __init__(self, records: list[dict[str, Any]], signum: int) -> None:
        super().__init__(signum)
        self.records = records
        self.signum = signum


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_.@" else "_" for c in name) or "model"


def task_folder(options: RunOptions, task: Task) -> Path:
    return options.model_folder / task.domain / task.id


def _read(folder: Path) -> dict[str, Any] | None:
    try:
        record = json.loads(files.read_text(files.inside(folder, RESULT_JSON)))
    except (OSError, ValueError):  # missing, torn, not UTF-8, a link out of the folder
        return None
    return record if isinstance(record, dict) and "task_id" in record else None


def finished_record(folder: Path) -> dict[str, Any] | None:
    """The record of a task that finished here before: ``result.txt`` holds a score and
    ``result.json`` a record with that score. Anything else (missing, torn, half-written,
    disagreeing files) is None: the task runs again."""
    try:
        score = float(files.read_text(files.inside(folder, RESULT_TXT)).strip())
    except (OSError, ValueError):
        return None
    record = _read(folder)
    if record is None or record.get("score") != score:
        return None
    return record


class _Budget:
    def __init__(self, limit: float | None) -> None:
        self.limit, self.spent, self._lock = limit, 0.0, threading.Lock()

    def add(self, cost: float) -> None:
        with self._lock:
            self.spent += cost

    def left(self) -> float | None:
        with self._lock:
            return None if self.limit is None else max(self.limit - self.spent, 0.0)


def _reference(options: RunOptions, task: Task) -> list[str] | None:
    if options.policy != "reference":
        return None
    lines = reference_for(task, options.references or {})
    return None if lines is None else list(lines)


def _run_one(
    options: RunOptions,
    task: Task,
    folder: Path,
    budget: _Budget,
    ray: RayBackend | None,
    workers: Workers,
) -> dict[str, Any]:
    left = budget.left()
    if left is not None and left <= 0.0:
        reason = "the run's cost budget was spent before this task"
        return {
            "task_id": task.id,
            "domain": task.domain,
            "policy": options.policy,
            "model": options.model_label,
            "status": "budget_exceeded",
            "score": None,
            "reason": reason,
        }
    files.output_folder(folder.parent, base=options.results)  # no link on the way: refused
    if folder.is_symlink():
        folder.unlink()
    shutil.rmtree(folder, ignore_errors=True)  # a half-finished attempt leaves nothing behind
    files.output_folder(folder, base=options.results)
    settings = options.settings
    if settings is not None and left is not None:
        settings = settings.with_cost_limit(left)
    spec = {
        # absolute paths: the worker runs in the task folder (or on another node)
        "folder": str(folder.resolve()),
        "task_path": str(Path(str(task.path)).resolve()),
        "domain": task.domain,
        "policy": options.policy,
        "model_label": options.model_label,
        "settings": None if settings is None else settings.to_json(),  # no key: see worker
        "file_cache": str(options.file_cache.resolve()) if options.file_cache else None,
        "width": options.width,
        "height": options.height,
        "eval_timeout": options.eval_timeout,
        "reference": _reference(options, task),
        "memory": None
        if options.memory == "off"
        else {"mode": options.memory, "path": str(Path(str(options.memory_db)).resolve())},
    }
    if options.best_of > 1:
        from agent_s.bestofn.bench import run_attempts

        picked = run_attempts(options, task, folder, spec, left, ray, workers)
        budget.add(float(picked.get("cost_usd") or 0.0))
        return picked
    if ray is None:
        code = run_worker(spec, folder, options.api_key, options.task_timeout, workers)
    else:
        if task.path is None:
            raise ValueError(f"task {task.id} has no file to send to the cluster")
        task_text = Path(task.path).read_text(encoding="utf-8")
        code = ray.run(spec, task_text, options.api_key, options.task_timeout, folder)
    record = _read(folder)
    if record is None and workers.cancelled:
        record = {
            "task_id": task.id,
            "domain": task.domain,
            "policy": options.policy,
            "model": options.model_label,
            "status": "cancelled",
            "score": None,
            "reason": f"the run was cancelled (worker: {code})",
        }
    if record is None:
        reason = f"the worker ended without a result (exit: {code}); see worker.log"
        record = {
            "task_id": task.id,
            "domain": task.domain,
            "policy": options.policy,
            "model": options.model_label,
            "status": "error",
            "score": None,
            "reason": reason,
        }
    budget.add(float(record.get("cost_usd") or 0.0))
    return record


def run_suite(
    options: RunOptions, on_event: Callable[[Event], None] | None = None
) -> list[dict[str, Any]]:
    """Run every task of the suite (see the module docstring); the records, in suite order."""
    emit = on_event or (lambda event: None)
    files.output_folder(options.results)  # a results folder that is a link is refused
    tasks, _bad = options.suite.load(options.domains)  # the caller reports the bad files
    records: dict[int, dict[str, Any]] = {}
    pending: list[tuple[int, Task, Path]] = []
    for i, task in enumerate(tasks):
        folder = task_folder(options, task)
        files.output_folder(folder.parent, base=options.results)  # a link on the way: refused
        done_before = finished_record(folder)
        if done_before is not None:
            record = done_before
            record["resumed"] = True
            records[i] = record
            emit({"kind": "end", "task": task.id, "domain": task.domain, "record": record})
            continue
        reasons = [
            # a missing file: its URL and the command that fetches it (agent_s.bench.cache)
            f"needs the file cache: {missing_note(task, options.file_cache) or r.detail}"
            if r.category == "cache"
            else str(r)
            for r in classify(task, file_cache=options.file_cache)
        ]
        if options.policy == "reference" and _reference(options, task) is None:
            reasons.append(
                "needs a reference solution: neither the task file nor the references file has one"
            )
        reason_text = "; ".join(reasons)
        if reasons:
            record = {
                "task_id": task.id,
                "domain": task.domain,
                "policy": options.policy,
                "model": options.model_label,
                "status": "skipped",
                "score": None,
                "reason": reason_text,
            }
            records[i] = record
            emit({"kind": "end", "task": task.id, "domain": task.domain, "record": record})
            continue
        pending.append((i, task, folder))
    budget = _Budget(options.max_cost_usd)
    ray: RayBackend | None = None
    workers = Workers()
    interrupted: KeyboardInterrupt | None = None

    def work(item: tuple[int, Task, Path]) -> None:
        i, task, folder = item
        emit({"kind": "start", "task": task.id, "domain": task.domain})
        started = time.monotonic()
        record = _run_one(options, task, folder, budget, ray, workers)
        record.setdefault("seconds", round(time.monotonic() - started, 2))
        records[i] = record
        emit(
            {
                "kind": "end",
                "task": task.id,
                "domain": task.domain,
                "record": record,
                "cost_so_far": budget.spent,
            }
        )

    with contextlib.ExitStack() as stack:
        if options.backend == "ray" and pending:
            ray = stack.enter_context(RayBackend(options.address))
        with ThreadPoolExecutor(max_workers=options.workers) as pool:
            futures = [pool.submit(work, item) for item in pending]
            try:
                for future in futures:
                    future.result()
            except KeyboardInterrupt as err:
                interrupted = err
                pool.shutdown(wait=False, cancel_futures=True)
                workers.cancel()
                if ray is not None:
                    ray.cancel()
    done = [records[i] for i in sorted(records)]
    if interrupted is not None:
        raise RunCancelled(done, getattr(interrupted, "signum", signal.SIGINT)) from interrupted
    return done


__all__ = [
    "Backend",
    "Event",
    "RunCancelled",
    "RunOptions",
    "finished_record",
    "run_suite",
    "task_folder",
]
