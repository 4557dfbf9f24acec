"""The report of a bench results folder (``agent_s.report.run``): an index and a page per task.

    write_bench_report(Path("results"))      # results/report.html, and in each task's folder
                                             # report.html and trajectory/report.html

The index has, per run (policy and model: never pooled, as ``agent-s bench report``), the score
per domain and overall, then every task with its outcome, score, steps, time and cost, each
linking to the task's page; task folders whose results cannot be read are named. A task's page
has its record (status, score, what the evaluator's parts said, the setup log), OSWorld's
``traj.jsonl`` steps with the screenshot taken after each, and a link to the run report of its
``trajectory/`` folder. Written elsewhere (``out``), the pages and the images they show go into
a folder beside the index, ``<index stem>_files/``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

from agent_s.bench.report import group, load_results, outcome, summarize
from agent_s.guards import files as guard
from agent_s.record.trajectory import TRAJECTORY_FILE
from agent_s.report.attempts import attempt_pages
from agent_s.report.bestof import best_of_card, best_of_of
from agent_s.report.html import Assets, PageWriter, badge, esc, kv, money, picture, pre, table
from agent_s.report.run import REPORT_FILE, ReportError, write_run_report

TRAJ_FILE = "traj.jsonl"  # OSWorld's per-task steps
ATTEMPTS = "attempts"  # a best-of task's attempts (agent_s.bestofn.bench)


def is_bench_folder(folder: Path) -> bool:
    """Whether ``folder`` holds bench task results (at any level of the layout)."""
    records, unreadable = _results(folder)
    return bool(records or unreadable)


def _results(folder: Path) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """``load_results``, less the run folders' own ``result.json`` (a RunResult, no task)."""
    records, unreadable = load_results(folder)
    tasks = [u for u in unreadable if not (Path(u["folder"]) / TRAJECTORY_FILE).is_file()]
    return records, tasks


def _link(page: Path, target: Path) -> str:
    return quote(Path(os.path.relpath(target, page.parent)).as_posix())


def write_bench_report(results: Path, out: Path | None = None, *, embed: bool = False) -> Path:
    """The index of ``results`` at ``out`` (default ``RESULTS/report.html``), a page per task
    and each task's run report; the index's path."""
    records, unreadable = _results(results)
    if not records and not unreadable:
        raise ReportError(
            f"{results} holds no task results: give the --results folder of agent-s bench run"
        )
    index = out if out is not None else results / REPORT_FILE
    if index.is_dir():
        index = index / REPORT_FILE
    pages_root = None if out is None else index.parent / f"{index.stem}_files"
    task_pages: dict[str, Path] = {}
    for record in records:
        folder = Path(str(record["folder"]))
        relative = folder.resolve().relative_to(results.resolve())
        where = folder if pages_root is None else pages_root / relative
        try:
            task_pages[str(folder)] = _task_page(record, folder, where, index, embed=embed)
        except OSError as err:
            raise ReportError(f"cannot write the page of {folder}: {err}") from err
    try:
        with PageWriter(index, f"agent-s bench: {results.name}") as writer:
            _index(writer, results, records, unreadable, task_pages, index)
    except OSError as err:
        raise ReportError(f"cannot write {index}: {err.strerror or err}") from err
    return index


def _index(
    writer: PageWriter,
    results: Path,
    records: list[dict[str, Any]],
    unreadable: list[dict[str, str]],
    pages: Mapping[str, Path],
    index: Path,
) -> None:
    writer.write(
        f'<header class="top"><h1>Bench results: {esc(results.name)}</h1>'
        f'<p class="meta">{esc(results.resolve())} · {len(records)} task(s)</p></header><main>\n'
    )
    for run, rows in group(records).items():
        summary = summarize(rows)
        writer.write(f'<section class="card"><h2>{esc(run)}</h2>')
        lines = []
        for domain, row in [*summary["domains"].items(), ("overall", summary["overall"])]:
            rate = row["success_rate"]
            lines.append(
                [
                    f"<b>{esc(domain)}</b>" if domain == "overall" else esc(domain),
                    esc(row["tasks"]),
                    esc(row["scored"]),
                    esc(f"{rate * 100:.1f}%" if rate is not None else "-"),
                    esc(row["skipped"]),
                    esc(row["errors"]),
                    esc(row["mean_steps"] if row["mean_steps"] is not None else "-"),
                    esc(row["mean_seconds"] if row["mean_seconds"] is not None else "-"),
                    esc(money(row["cost_usd"])),
                ]
            )
        head = ["domain", "tasks", "scored", "success", "skipped", "errors", "steps", "secs", "$"]
        writer.write(table(head, lines, frozenset(range(1, 9))))
        tasks = []
        for record in sorted(rows, key=lambda r: (str(r.get("domain")), str(r.get("task_id")))):
            page = pages.get(str(record["folder"]))
            name = esc(record.get("task_id", ""))
            link = f'<a href="{esc(_link(index, page))}">{name}</a>' if page else name
            said = str(record.get("instruction") or "")
            if said:
                shown = said if len(said) <= 200 else said[:200] + "..."
                link += f'<div class="meta">{esc(shown)}</div>'
            score = record.get("score")
            tasks.append(
                [
                    esc(record.get("domain", "")),
                    link,
                    badge(outcome(record), _badge_kind(record)),
                    esc("-" if score is None else score),
                    esc(record.get("steps", "")),
                    esc(record.get("seconds", "")),
                    esc(money(float(record.get("cost_usd") or 0.0))),
                    esc(str(record.get("reason") or "")[:300]),
                ]
            )
        head = ["domain", "task", "outcome", "score", "steps", "secs", "$", "reason"]
        writer.write("<h3>Tasks</h3>" + table(head, tasks, frozenset({3, 4, 5, 6})) + "</section>")
    if unreadable:
        broken = [[esc(u["folder"]), esc(u["problem"])] for u in unreadable]
        writer.write(
            '<section class="card"><h2>Task folders that cannot be read</h2>'
            + table(["folder", "problem"], broken)
            + "</section>"
        )
    writer.write("</main>\n")


def _traj_lines(folder: Path) -> list[dict[str, Any]]:
    path = folder / TRAJ_FILE
    if not path.is_file():
        return []
    real = guard.contained(folder, TRAJ_FILE, "a task's steps")
    if real is None:
        return []
    lines = []
    for line in guard.read_text(real, errors="replace").splitlines():
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            continue  # a torn last line
        if isinstance(value, dict):
            lines.append(value)
    return lines


def _badge_kind(record: Mapping[str, Any]) -> str:
    """The colour of a task's outcome: by its score where the evaluator gave one (an
    infeasible task answered with fail scores 1: a success, though its status says failed),
    else by its status."""
    score = record.get("score")
    if isinstance(score, (int, float)) and not isinstance(score, bool):
        return "succeeded" if score >= 1.0 else "failed" if score <= 0.0 else "partial"
    return str(record.get("status", ""))


def _task_page(
    record: dict[str, Any], folder: Path, where: Path, index: Path, *, embed: bool
) -> Path:
    """The page of one task in the folder ``where`` (the task's own folder, or its place under
    the index's files), with the run report of its trajectory beside it."""
    page = where / REPORT_FILE
    steps = _traj_lines(folder)
    after = {
        int(line["step_num"]): shot
        for line in steps
        if isinstance(line.get("step_num"), int) and line.get("screenshot_file")
        if (shot := _screenshot(folder, line)) is not None
    }
    run_page = None
    trajectory = folder / "trajectory"
    inner = (trajectory / TRAJECTORY_FILE).is_file()
    if inner and guard.contained(folder, "trajectory", "a task's run folder") is not None:
        out = None if where == folder else where / "trajectory" / REPORT_FILE
        back = (_link(trajectory / REPORT_FILE if out is None else out, page), "the task's page")
        try:
            files = None if out is None else where  # beside the task page's own copies
            run_page = write_run_report(
                trajectory, out, embed=embed, after=after, back=back, files=files
            )
        except ReportError as err:
            run_page = None
            record = {**record, "report_problem": str(err)}
    copy_to = None if where == folder or embed else where
    assets = Assets(where, copy_to=copy_to, embed=embed)
    best = _best_of(record, folder, where, page, assets, embed=embed)
    title = f"agent-s task {record.get('task_id', '')}"
    with PageWriter(page, title) as writer:
        score = record.get("score")
        writer.write(
            f'<header class="top"><p><a href="{esc(_link(page, index))}">all tasks</a></p>'
            f"<h1>{esc(record.get('instruction') or record.get('task_id', ''))} "
            f"{badge(outcome(record), _badge_kind(record))}</h1>"
            f'<p class="meta">{esc(record.get("domain", ""))} / {esc(record.get("task_id", ""))}'
            f" · score {esc('-' if score is None else score)}</p></header><main>\n"
        )
        rows = [
            ("status", badge(str(record.get("status", "")))),
            ("outcome", esc(outcome(record))),
            ("score", esc("-" if score is None else score)),
            ("reason", esc(record.get("reason") or "")),
            ("policy", esc(record.get("policy") or "")),
            ("model", esc(record.get("model") or "")),
            ("infeasible task", "yes" if record.get("infeasible") else ""),
            ("last action", esc(record.get("last_action") or "")),
            ("steps", esc(record.get("steps", ""))),
            ("seconds", esc(record.get("seconds", ""))),
            ("tokens", esc(record.get("tokens", ""))),
            ("model calls", esc(record.get("model_calls", ""))),
            ("cost", esc(money(float(record.get("cost_usd") or 0.0)))),
            ("folder", esc(folder)),
        ]
        if run_page is not None:
            rows.append(("run report", f'<a href="{esc(_link(page, run_page))}">the steps</a>'))
        if record.get("report_problem"):
            rows.append(("run report", esc(record["report_problem"])))
        writer.write(f'<section class="card"><h2>Task</h2>{kv(rows)}</section>\n')
        writer.write(best)
        evaluation = record.get("evaluation")
        if isinstance(evaluation, dict):
            parts = [
                [
                    esc(p.get("func", "")),
                    esc(p.get("score", "")),
                    esc(json.dumps(p.get("result"), ensure_ascii=False)[:500]),
                    esc(p.get("error", "")),
                ]
                for p in evaluation.get("parts") or []
                if isinstance(p, dict)
            ]
            writer.write(
                '<section class="card"><h2>Evaluation</h2>'
                + kv([("note", esc(evaluation.get("note", "")))])
                + table(["metric", "score", "result", "error"], parts)
                + "</section>\n"
            )
        writer.write(f"<h2>Steps ({len(steps)})</h2>\n")
        for line in steps:
            writer.write(_traj_card(line, folder, assets))
        log = record.get("setup_log")
        if log:
            text = "\n".join(map(str, log)) if isinstance(log, list) else str(log)
            writer.write(f'<section class="card"><h2>Setup log</h2>{pre(text)}</section>')
        if record.get("traceback"):
            writer.write(
                f'<section class="card"><h2>Traceback</h2>{pre(str(record["traceback"]))}</section>'
            )
        writer.write("</main>\n")
    return page


def _best_of(
    record: Mapping[str, Any], folder: Path, where: Path, page: Path, assets: Assets, *, embed: bool
) -> str:
    """A best-of task's pick, scores and attempts (``agent_s.bestofn.bench``), each attempt's
    run report written beside it (``attempts/K/trajectory/report.html``)."""
    data = record.get("best_of")
    best = best_of_of(data)
    if best is None or not isinstance(data, Mapping):
        return ""

    def trajectory(number: int) -> Path:
        return folder / ATTEMPTS / str(number) / "trajectory"

    def place(number: int) -> Path | None:
        if where == folder:
            return None
        return where / ATTEMPTS / str(number) / "trajectory" / REPORT_FILE

    pages, finals, problems = attempt_pages(
        folder, best, page, trajectory, place, assets, embed=embed
    )
    warnings = "".join(f'<p class="warn">{esc(p)}</p>' for p in problems)
    return warnings + best_of_card(best, pages=pages, finals=finals, scores=data)


def _screenshot(folder: Path, line: Mapping[str, Any]) -> Path | None:
    """The screenshot a ``traj.jsonl`` line names, in the task's folder (None: none, or one
    leading out of the folder, skipped)."""
    name = str(line.get("screenshot_file") or "")
    if not name:
        return None
    return guard.contained(folder, Path(name).name, f"step {line.get('step_num')}'s screenshot")


def _traj_card(line: Mapping[str, Any], folder: Path, assets: Assets) -> str:
    number = line.get("step_num", "?")
    shot = _screenshot(folder, line)
    src = assets.src(shot) if shot is not None else None
    if src is not None:
        shown = (
            '<figure class="shot">'
            f"{picture(src, f'after step {number}', data={'step': number})}"
            "<figcaption>the screen after the step</figcaption></figure>"
        )
    else:
        shown = '<div class="noshot">no screenshot recorded for this step</div>'
    info = line.get("info")
    rows = [
        ("done", "yes" if line.get("done") else "no"),
        ("time", esc(line.get("action_timestamp", ""))),
        ("info", esc(json.dumps(info, ensure_ascii=False)) if info else ""),
    ]
    return (
        f'<section class="card step" id="step-{esc(number)}"><div class="head"><h3>'
        f"Step {esc(number)}</h3></div><div>{shown}</div><div>"
        f"<p class='meta'>response:</p>{pre(str(line.get('response', '')))}"
        f"<p class='meta'>action:</p>{pre(str(line.get('action', '')))}{kv(rows)}</div></section>\n"
    )


__all__ = ["is_bench_folder", "write_bench_report"]
