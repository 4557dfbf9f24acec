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
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

from agent_s.guards import files
from agent_s.record.result import BestOf
from agent_s.report.html import badge, esc, kv, money, picture, table

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


def final_screen(trajectory: Path) -> Path | None:
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
