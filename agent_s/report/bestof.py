"""Best-of-N runs in reports (``agent_s.report.run``): the judge's pick, its reason and every
attempt's behaviour narrative, with links to the attempts' own run reports.

    write_best_of_report(Path("runs/bestof-20261201-070834-ab12"))   # its report.html, and
                                                                    # each attempt's run report

A best-of run folder (``agent_s.bestofn.live``) holds ``best_of.json`` and ``attempt-K/`` with
each attempt's ``trajectory/``; a bench task run with ``--best-of`` holds ``best_of.json`` and
``attempts/K/`` (``agent_s.bestofn.bench``), and its record's ``best_of`` adds the scores
(``single``, ``picked_score``, ``oracle``). The best-of card lists the pick (attempt, by whom,
the reason, the judge's calls and cost), then one card per attempt: its status, steps, cost,
score, the final screen it was judged on, its narrative line by line and a link to its run
report. An attempt's own run report says which attempt of which run it is, and links back.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

from agent_s.guards import files
from agent_s.record.result import BestOf
from agent_s.record.trajectory import TRAJECTORY_FILE
from agent_s.report.html import Assets, PageWriter, badge, esc, kv, money, picture, table

BEST_OF_FILE = "best_of.json"
NARRATIVE_FILE = "narrative.json"  # agent_s.bestofn.narrative, in each attempt's trajectory


def link(page: Path, target: Path) -> str:
    """The relative URL of ``target`` from ``page``."""
    return quote(Path(os.path.relpath(target, page.parent)).as_posix())


def read_best_of(folder: Path) -> tuple[BestOf, dict[str, Any]] | None:
    """The record of ``folder/best_of.json`` and the whole file's data (the task, the HOME
    handed back, bench scores); None when there is none or it cannot be read."""
    try:
        data = json.loads(files.read_text(files.inside(folder, BEST_OF_FILE)))
    except (OSError, ValueError):
        return None
    record = best_of_of(data)
    return None if record is None else (record, data)


def best_of_of(data: Any) -> BestOf | None:
    """A ``BestOf`` from its JSON (``best_of.json``, or a bench record's ``best_of``, whose
    extra keys are left out); None when it is not one."""
    if not isinstance(data, Mapping):
        return None
    known = ("picked", "reason", "by", "attempts", "judge_calls", "judge_cost_usd")
    try:
        return BestOf.from_json({k: v for k, v in data.items() if k in known})
    except (TypeError, ValueError):
        return None


def is_best_of_folder(folder: Path) -> bool:
    """Whether ``folder`` is a best-of run folder (``best_of.json`` and ``attempt-K/``)."""
    return (folder / BEST_OF_FILE).is_file() and any(p.is_dir() for p in folder.glob("attempt-*"))


def attempt_of(trajectory: Path) -> tuple[Path, int] | None:
    """The best-of folder (the one holding ``best_of.json``) and the attempt number of an
    attempt's trajectory folder (``attempt-K/trajectory`` or a bench task's
    ``attempts/K/trajectory``); None for any other run."""
    if trajectory.name != "trajectory":
        return None
    attempt = trajectory.parent
    if attempt.name.startswith("attempt-") and attempt.name[8:].isdigit():
        base, number = attempt.parent, int(attempt.name[8:])
    elif attempt.parent.name == "attempts" and attempt.name.isdigit():
        base, number = attempt.parent.parent, int(attempt.name)
    else:
        return None
    return (base, number) if (base / BEST_OF_FILE).is_file() else None


def _final_screen(trajectory: Path) -> Path | None:
    """The final screenshot the attempt was judged on (its ``narrative.json`` names it)."""
    try:
        data = json.loads(files.read_text(files.inside(trajectory, NARRATIVE_FILE)))
    except (OSError, ValueError):
        return None
    name = data.get("final_screenshot") if isinstance(data, dict) else None
    if not isinstance(name, str) or not name:
        return None
    return files.contained(trajectory, Path(name).name, "an attempt's final screenshot")


def best_of_card(
    record: BestOf,
    *,
    pages: Mapping[int, str] | None = None,
    finals: Mapping[int, str] | None = None,
    scores: Mapping[str, Any] | None = None,
    home: str | None = None,
) -> str:
    """The best-of section: the pick and the reason, then every attempt with its narrative.
    ``pages``: attempt number -> URL of its run report; ``finals``: number -> URL of its
    final screen; ``scores``: a bench record's ``single``, ``picked_score`` and ``oracle``."""
    pages, finals, scores = pages or {}, finals or {}, scores or {}
    count = len(record.attempts)
    picked = f"attempt {record.picked}" if record.picked else "none"
    if record.picked and record.picked in pages:
        picked = f'<a href="{esc(pages[record.picked])}">{esc(picked)}</a>'
    else:
        picked = esc(picked)
    rows = [
        ("picked", picked + (badge("picked", "passed") if record.picked else "")),
        ("picked by", esc(record.by)),
        ("reason", esc(record.reason)),
        ("judge", esc(f"{record.judge_calls} call(s), {money(record.judge_cost_usd)}")),
        ("files kept", esc(home or "")),
    ]
    for key, label in (
        ("single", "single attempt (mean score)"),
        ("picked_score", "judge-picked score"),
        ("oracle", "best possible (oracle)"),
    ):
        if key in scores:
            value = scores[key]
            rows.append((label, esc("-" if value is None else value)))
    overview = []
    for attempt in record.attempts:
        name = esc(attempt.number)
        if attempt.number in pages:
            name = f'<a href="{esc(pages[attempt.number])}">{name}</a>'
        overview.append(
            [
                name + (badge("picked", "passed") if attempt.number == record.picked else ""),
                badge(attempt.status),
                esc(attempt.steps),
                esc(money(attempt.cost_usd)),
                esc("-" if attempt.score is None else attempt.score),
                f'<a href="#attempt-{attempt.number}">narrative</a>',
                esc(attempt.reason[:300]),
            ]
        )
    parts = [
        f'<section class="card" id="best-of"><h2>Best of {count}</h2>',
        kv(rows),
        table(
            ["attempt", "status", "steps", "cost", "score", "", "reason"],
            overview,
            frozenset({2, 3, 4}),
        ),
        "</section>\n",
    ]
    for attempt in record.attempts:
        head = f"Attempt {attempt.number}" + badge(attempt.status)
        if attempt.number == record.picked:
            head += badge("picked", "passed")
        facts = [
            ("reason", esc(attempt.reason)),
            ("steps", esc(attempt.steps)),
            ("cost", esc(money(attempt.cost_usd))),
            ("score", esc("" if attempt.score is None else attempt.score)),
            (
                "run report",
                f'<a href="{esc(pages[attempt.number])}">its steps</a>'
                if attempt.number in pages
                else esc("not recorded" if not attempt.trajectory_dir else ""),
            ),
        ]
        lines = "".join(f"<li>{esc(line)}</li>" for line in attempt.narrative)
        narrative = (
            f"<h3>Narrative</h3><ul class='narrative'>{lines}</ul>"
            if lines
            else "<p class='meta'>no narrative was recorded</p>"
        )
        final = ""
        if attempt.number in finals:
            caption = f"attempt {attempt.number}: the final screen the judge saw"
            shown = picture(finals[attempt.number], caption, data={"attempt": attempt.number})
            final = (
                f'<figure class="extra final"><figcaption>{esc(caption)}</figcaption>'
                f"{shown}</figure>"
            )
        parts.append(
            f'<section class="card" id="attempt-{attempt.number}"><h3>{head}</h3>'
            f"{kv(facts)}{narrative}{final}</section>\n"
        )
    return "".join(parts)


def attempt_note(base: Path, number: int, page: Path, index: Path) -> str:
    """An attempt's run report: which attempt of which best-of run it is, a link back."""
    found = read_best_of(base)
    if found is None:
        return ""
    record = found[0]
    picked = number == record.picked
    what = (
        f"Attempt {number} of {len(record.attempts)} of a best-of run: "
        + ("the judge picked it" if picked else f"the judge picked attempt {record.picked}")
        + f" ({record.by}): {record.reason}"
    )
    back = f' <a href="{esc(link(page, index))}">the best-of page</a>' if index.is_file() else ""
    return (
        f'<section class="card" id="best-of"><h2>Best of {len(record.attempts)}'
        f"{badge('picked', 'passed') if picked else ''}</h2><p>{esc(what)}{back}</p></section>\n"
    )


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
    from agent_s.report.run import REPORT_FILE, ReportError, write_run_report

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
        final = _final_screen(trajectory)
        src = assets.src(final) if final is not None else None
        if src is not None:
            finals[attempt.number] = src
    return pages, finals, problems


def write_best_of_report(folder: Path, out: Path | None = None, *, embed: bool = False) -> Path:
    """The report of a best-of run folder at ``out`` (default ``FOLDER/report.html``): the
    pick, the reason, every attempt's narrative and final screen, and each attempt's run
    report (in its trajectory folder, or under ``<out stem>_files/`` when ``out`` is
    elsewhere); the page's path."""
    from agent_s.report.run import REPORT_FILE, ReportError

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
