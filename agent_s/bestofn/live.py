"""``agent-s run --virtual --best-of N``: N attempts of one task, each on its own virtual
desktop with its own HOME, up to ``workers`` at once; a judge picks one; its files are kept.

    result = run_best_of("Save a note as ~/todo.txt", settings, BestOfConfig(3), api_key=key,
                         check=("test", "-s", "~/todo.txt"))
    result.best_of.picked, result.best_of.reason     # the judge's pick and why
    result.best_of.attempts[0].narrative             # what attempt 1 was seen to do

The run folder (``<record_dir>/bestof-<time>-<id>/``) holds ``attempt-K/`` for each attempt
(``trajectory/`` with its ``narrative.json``, ``attempt.json``, ``worker.log``), ``home/`` (the
picked attempt's HOME: the files handed back; every other attempt's HOME is deleted) and
``best_of.json`` (the pick, the reason, every attempt's narrative). Each attempt is its own
process (``attempt``): pyautogui binds to one display per process.

The returned ``RunResult`` is the picked attempt's, with ``usage``, ``model_calls`` and
``calls`` of all attempts and the judge together (``calls["judge"]``), the whole run's time,
and ``best_of``. When no attempt ran far enough to be judged, or the judge gave no usable
reply, the result is an error naming why.
"""

from __future__ import annotations

import json
import secrets
import shutil
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_s.bench.distributed import Workers, run_worker
from agent_s.bestofn.attempt import ATTEMPT_FILE, write_json
from agent_s.bestofn.config import BestOfConfig
from agent_s.bestofn.narrative import Narrative
from agent_s.bestofn.select import Attempt, agreed, best_of, judge
from agent_s.models.types import Usage
from agent_s.record.result import RunResult, RunStatus, Timings

if TYPE_CHECKING:
    from agent_s.bestofn.judge import Verdict
    from agent_s.settings.read import Settings

BEST_OF_FILE = "best_of.json"
#: ``on_event(kind, number, detail)``: "start" / "end" of attempt ``number``, "judge", "stop"
Event = Callable[[str, int, str], None]
_SLACK = 120.0  # seconds an attempt may run past the time left, to stop its desktop


def run_folder(record_dir: Path) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    folder = record_dir.expanduser() / f"bestof-{stamp}-{secrets.token_hex(2)}"
    folder.mkdir(parents=True)
    return folder


def attempt_settings(
    settings: Settings, config: BestOfConfig, seconds_left: float | None
) -> Settings:
    """An attempt's settings: its share of the cost limit, of the steps, the time left."""
    limits = settings.limits
    update: dict[str, Any] = {"max_steps": config.attempt_steps(limits.max_steps)}
    cost = config.attempt_cost(limits.max_cost)
    if cost is not None:
        update["max_cost"] = cost
    if seconds_left is not None:
        update["max_seconds"] = max(seconds_left, 1.0)
    return settings.model_copy(update={"limits": limits.model_copy(update=update)})


def read_attempt(number: int, folder: Path, code: int | str) -> tuple[Attempt, RunResult | None]:
    """Attempt ``number`` as its process left it in ``folder`` (and its RunResult)."""
    try:
        record = json.loads((folder / ATTEMPT_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        record = {}
    narrative = Narrative.from_json(record.get("narrative") or {})
    data = record.get("result")
    result = RunResult.from_json(data) if isinstance(data, dict) else None
    if result is None:
        why = record.get("error") or f"the attempt ended without a result (exit: {code})"
        status = "cancelled" if code == 130 or "interrupt" in str(why) else "error"
        trajectory = folder / "trajectory"
        attempt = Attempt(
            number,
            status,
            f"{why}; see {folder / 'worker.log'}",
            narrative,
            trajectory if trajectory.is_dir() else None,
        )
        return attempt, None
    attempt = Attempt(
        number=number,
        status=result.status.value,
        reason=result.reason,
        narrative=narrative,
        trajectory=result.trajectory_dir,
        steps=result.steps,
        cost_usd=result.usage.cost_usd,
        verified=result.verified,
        answer=result.answer,
    )
    return attempt, result


def run_best_of(
    task: str,
    settings: Settings,
    config: BestOfConfig,
    *,
    api_key: str | None = None,
    check: Sequence[str] | None = None,
    monitors: str | None = None,
    kind: str = "x11",
    on_event: Event | None = None,
) -> RunResult:
    """Run ``task`` ``config.n`` times and keep the judge's pick (see the module docstring).
    ``settings``: resolved once (``agent_s.settings.read``); its ``record_dir`` is where the run
    folder goes (a temporary folder when None is set). ``check``: a command (argv) run after
    done in each attempt, against that attempt's HOME."""
    emit = on_event or (lambda kind, number, detail: None)
    started_at, clock = time.time(), time.monotonic()
    record_dir = settings.run.record_dir
    if record_dir is None:
        import tempfile

        record_dir = Path(tempfile.mkdtemp(prefix="agent-s-bestof-"))
    folder = run_folder(Path(record_dir))
    limit = settings.limits.max_seconds
    workers = Workers()
    finished: dict[int, tuple[Attempt, RunResult | None]] = {}
    lock = threading.Lock()
    stopped: list[Attempt] = []

    def seconds_left() -> float | None:
        return None if limit is None else limit - (time.monotonic() - clock)

    def one(number: int) -> None:
        where = folder / f"attempt-{number}"
        where.mkdir()
        left = seconds_left()
        with lock:  # the attempts that ended may already agree: this one is not needed
            enough = agreed([a for a, _ in finished.values()], config.agree) is not None
        if enough or workers.cancelled or (left is not None and left <= 0):
            why = "the others agreed" if enough else "the run was stopped or out of time"
            attempt, _ = read_attempt(number, where, f"not started: {why}")
            with lock:
                finished[number] = (replace(attempt, status="cancelled"), None)
            return
        spec = {
            "number": number,
            "task": task,
            "folder": str(where.resolve()),
            "settings": attempt_settings(settings, config, left).to_json(),
            "check": list(check) if check else None,
            "monitors": monitors,
            "kind": kind,
            "captions": config.captions,
        }
        emit("start", number, "")
        timeout = (left + _SLACK) if left is not None else 24 * 3600.0
        code = run_worker(spec, where, api_key, timeout, workers, module="agent_s.bestofn.attempt")
        attempt, result = read_attempt(number, where, code)
        with lock:
            finished[number] = (attempt, result)
        emit("end", number, f"{attempt.status}: {attempt.reason}")

    with ThreadPoolExecutor(max_workers=config.at_once) as pool:
        futures: set[Future[None]] = {pool.submit(one, k) for k in range(1, config.n + 1)}
        try:
            while futures:
                done, futures = wait(futures, return_when=FIRST_COMPLETED)
                for future in done:
                    future.result()
                with lock:
                    early = agreed([a for a, _ in finished.values()], config.agree)
                if early is not None and futures:
                    stopped.append(early)
                    emit("stop", early.number, f"{config.agree} attempts agreed")
                    for future in futures:
                        future.cancel()
                    workers.cancel()
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            workers.cancel()
            raise
    for number in range(1, config.n + 1):
        if number not in finished:  # cancelled before it started
            where = folder / f"attempt-{number}"
            where.mkdir(exist_ok=True)
            attempt, _ = read_attempt(number, where, "not started: the others agreed")
            finished[number] = (replace(attempt, status="cancelled"), None)
    attempts = [finished[k][0] for k in sorted(finished)]
    verdict, problem = _choose(task, attempts, config, settings, api_key)
    return _finish(task, folder, attempts, finished, verdict, problem, settings, started_at, clock)


def _choose(
    task: str,
    attempts: Sequence[Attempt],
    config: BestOfConfig,
    settings: Settings,
    api_key: str | None,
) -> tuple[Verdict | None, str]:
    from agent_s.bestofn.judge import JudgeFailed, Verdict

    early = agreed(attempts, config.agree)
    if early is not None:
        reason = f"{config.agree} attempts succeeded with their check passed and the same answer"
        return Verdict(early.number, reason, "agreement"), ""
    limit = settings.limits.max_cost
    spent = sum(a.cost_usd for a in attempts)
    left = None if limit is None else max(limit - spent, 0.0)
    try:
        return judge(task, attempts, config, settings, api_key, left), ""
    except JudgeFailed as err:  # its calls are the run's, even unusable
        problem = f"the judge gave no usable pick: {err}"
        return Verdict(0, problem, "none", err.calls, err.usage), problem
    except ValueError as err:
        return None, str(err)
    except Exception as err:  # a model error or a spent budget: the run says why
        from agent_s.errors import describe_error

        return None, f"the judge could not decide: {describe_error(err)}"


def _finish(
    task: str,
    folder: Path,
    attempts: Sequence[Attempt],
    finished: dict[int, tuple[Attempt, RunResult | None]],
    verdict: Verdict | None,
    problem: str,
    settings: Settings,
    started_at: float,
    clock: float,
) -> RunResult:
    from agent_s.bestofn.judge import Verdict

    usage = Usage()
    calls: dict[str, int] = {}
    model_calls = 0
    for _, result in finished.values():
        if result is not None:
            usage = usage + result.usage
            model_calls += result.model_calls
            for purpose, count in result.calls.items():
                calls[purpose] = calls.get(purpose, 0) + count
    if verdict is not None:
        usage = usage + verdict.usage
        model_calls += len(verdict.calls)
        if verdict.calls:
            calls["judge"] = calls.get("judge", 0) + len(verdict.calls)
    picked = finished.get(verdict.picked) if verdict is not None and verdict.picked else None
    record = best_of(verdict or Verdict(0, problem, "none"), attempts)
    home = folder / "home"
    for number in finished:  # the picked attempt's HOME is handed back; the others go
        attempt_home = folder / f"attempt-{number}" / "home"
        if picked is None:
            continue  # nothing was picked: every attempt's files stay for the user to look at
        if verdict is not None and number == verdict.picked:
            if attempt_home.is_dir():
                attempt_home.rename(home)
        else:
            shutil.rmtree(attempt_home, ignore_errors=True)
    data = {"task": task, "home": str(home) if home.is_dir() else None, **_json(record)}
    write_json(folder / BEST_OF_FILE, data)
    elapsed = time.monotonic() - clock
    if picked is None or picked[1] is None:
        reason = problem or "the picked attempt left no result"
        if picked is None:
            reason += f"; each attempt's files are kept in {folder}/attempt-K/home"
        return RunResult(
            task=task,
            status=RunStatus.ERROR,
            cause="internal_error",
            reason=f"best-of-{len(attempts)}: {reason}",
            usage=usage,
            model_calls=model_calls,
            calls=calls,
            timings=Timings(total=round(elapsed, 3)),
            trajectory_dir=folder,
            model=settings.model.name or "",
            started_at=started_at,
            best_of=record,
        )
    result = picked[1]
    return replace(
        result,
        usage=usage,
        model_calls=model_calls,
        calls=calls,
        timings=replace(result.timings, total=round(elapsed, 3)),
        started_at=started_at,
        best_of=record,
    )


def _json(record: Any) -> dict[str, Any]:
    from dataclasses import asdict

    data: dict[str, Any] = asdict(record)
    return data


__all__ = ["BEST_OF_FILE", "Event", "attempt_settings", "read_attempt", "run_best_of"]
