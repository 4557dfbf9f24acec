"""Which folder was given, and its report: a run's page, a bench results folder's index, or a
best-of run's page (``agent-s report`` and ``write_report``)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from agent_s.record.trajectory import TRAJECTORY_FILE
from agent_s.report.attempts import write_best_of_report
from agent_s.report.bench import is_bench_folder, write_bench_report
from agent_s.report.bestof import BEST_OF_FILE, is_best_of_folder
from agent_s.report.run import NotARunFolder, write_run_report


def folder_kind(folder: Path) -> Literal["run", "bench", "best-of"]:
    """``run`` for a trajectory folder, ``bench`` for a bench results folder (any level of its
    layout), ``best-of`` for a best-of run folder (``agent-s run --virtual --best-of N``);
    ``ReportError`` naming the fix for anything else."""
    if not folder.exists():
        raise NotARunFolder(f"{folder} does not exist: give the folder a run wrote")
    if not folder.is_dir():
        raise NotARunFolder(
            f"{folder} is a file: give the run's folder (the one holding {TRAJECTORY_FILE})"
        )
    if (folder / TRAJECTORY_FILE).is_file():
        return "run"
    if is_best_of_folder(folder):  # before bench: its HOME may hold a user's result.txt
        return "best-of"
    if is_bench_folder(folder):
        return "bench"
    runs = sorted(p.parent for p in folder.glob(f"*/{TRAJECTORY_FILE}"))
    runs += sorted(p.parent for p in folder.glob(f"*/{BEST_OF_FILE}"))  # best-of runs
    if runs:
        newest = max(runs, key=lambda p: p.stat().st_mtime)
        raise NotARunFolder(
            f"{folder} holds {len(runs)} run folder(s), not one run: give one of them, "
            f"e.g. agent-s report {newest}"
        )
    if not any(folder.iterdir()):
        raise NotARunFolder(
            f"{folder} is empty: give the folder a run wrote (agent-s run prints it as "
            "'trajectory: ...') or a bench results folder"
        )
    raise NotARunFolder(
        f"{folder} is not a run folder (no {TRAJECTORY_FILE}) nor a bench results folder "
        "(no task's result.json): give the folder agent-s run printed as 'trajectory: ...', "
        "or the --results folder of agent-s bench run"
    )


def write_report(folder: Path | str, out: Path | str | None = None, *, embed: bool = False) -> Path:
    """The report of ``folder`` (a run or a bench results folder, see ``folder_kind``), written
    to ``out`` (default: ``report.html`` in the folder); its path."""
    folder = Path(folder).expanduser()
    target = Path(out).expanduser() if out is not None else None
    kind = folder_kind(folder)
    if kind == "bench":
        return write_bench_report(folder, target, embed=embed)
    if kind == "best-of":
        return write_best_of_report(folder, target, embed=embed)
    return write_run_report(folder, target, embed=embed)


__all__ = ["folder_kind", "write_report"]
