"""The pages of a best-of run: each attempt's run report, and the best-of page that links them
(the pick, the judge's reason and every attempt's narrative: ``agent_s.report.bestof``)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from agent_s.guards import files
from agent_s.record.result import BestOf
from agent_s.record.trajectory import TRAJECTORY_FILE
from agent_s.report.bestof import (
    BEST_OF_FILE,
    attempt_note,
    attempt_of,
    best_of_card,
    best_of_of,
    final_screen,
    is_best_of_folder,
    link,
    read_best_of,
)
from agent_s.report.html import Assets, PageWriter, badge, esc
from agent_s.report.run import REPORT_FILE, ReportError, write_run_report


def attempt_pages(
    base: Path,
    record: BestOf,
    index: Path,
    trajectory_of: Callable[[int], Path],
    where_of: Callable[[int], Path | None],
    assets: Assets,
    *,
    embed: bool,
) -> tuple[dict[int, str], dict[int, str], list[str]]:
    """Each attempt's run report (``where_of(K)``: its page, None: in its trajectory folder),
    linking back to ``index``; the URLs of those pages and of the attempts' final screens from
    ``index``, and the problems met (an attempt whose report cannot be written)."""
    pages: dict[int, str] = {}
    finals: dict[int, str] = {}
    problems: list[str] = []
    for attempt in record.attempts:
        trajectory = trajectory_of(attempt.number)
        if not (trajectory / TRAJECTORY_FILE).is_file():
            continue
        relative = os.path.relpath(trajectory, base)
        if files.contained(base, relative, f"attempt {attempt.number}'s run folder") is None:
            continue
        out = where_of(attempt.number)
        page = out if out is not None else trajectory / REPORT_FILE
        back = (link(page, index), "the best-of page")
        try:
            written = write_run_report(
                trajectory, out, embed=embed, back=back, files=None if out is None else page.parent
            )
        except ReportError as err:
            problems.append(f"attempt {attempt.number}: {err}")
            continue
        pages[attempt.number] = link(index, written)
        final = final_screen(trajectory)
        src = assets.src(final) if final is not None else None
        if src is not None:
            finals[attempt.number] = src
    return pages, finals, problems


def write_best_of_report(folder: Path, out: Path | None = None, *, embed: bool = False) -> Path:
    """The report of a best-of run folder at ``out`` (default ``FOLDER/report.html``): the
    pick, the reason, every attempt's narrative and final screen, and each attempt's run
    report (in its trajectory folder, or under ``<out stem>_files/`` when ``out`` is
    elsewhere); the page's path."""
    found = read_best_of(folder)
    if found is None:
        raise ReportError(f"{folder}/{BEST_OF_FILE} cannot be read: the best-of run did not end")
    record, data = found
    index = out if out is not None else folder / REPORT_FILE
    if index.is_dir():
        index = index / REPORT_FILE
    beside = None if out is None else index.parent / f"{index.stem}_files"
    copy_to = None if embed or beside is None else beside
    assets = Assets(index.parent, copy_to=copy_to, embed=embed)

    def where(number: int) -> Path | None:
        return None if beside is None else beside / f"attempt-{number}" / REPORT_FILE

    pages, finals, problems = attempt_pages(
        folder,
        record,
        index,
        lambda number: folder / f"attempt-{number}" / "trajectory",
        where,
        assets,
        embed=embed,
    )
    task = str(data.get("task") or "(no task recorded)")
    try:
        with PageWriter(index, f"agent-s best of {len(record.attempts)}: {task[:80]}") as writer:
            status = (
                badge(f"picked attempt {record.picked}", "passed")
                if record.picked
                else badge("nothing picked", "failed")
            )
            writer.write(
                f'<header class="top"><h1>{esc(task)} {status}</h1><p class="meta">'
                f"{esc(f'best of {len(record.attempts)} · {folder}')}</p></header>\n<main>\n"
            )
            for problem in problems:
                writer.write(f'<p class="warn">{esc(problem)}</p>\n')
            home = data.get("home")
            writer.write(
                best_of_card(
                    record, pages=pages, finals=finals, home=home if isinstance(home, str) else None
                )
            )
            writer.write("</main>\n")
    except OSError as err:
        raise ReportError(f"cannot write {index}: {err.strerror or err}") from err
    return index


__all__ = [
    "BEST_OF_FILE",
    "attempt_note",
    "attempt_of",
    "attempt_pages",
    "best_of_card",
    "best_of_of",
    "is_best_of_folder",
    "link",
    "read_best_of",
    "write_best_of_report",
]
