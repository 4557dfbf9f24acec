"""``agent-s report``: a run's trajectory folder, or a bench results folder, as HTML to look at.

    path = write_report("~/.local/share/agent-s/runs/run-20261201-070834-8888")
    path                   # .../run-20261201-070834-8888/report.html
    write_report("results/", out=Path("bench.html"))     # a bench results folder: an index
                                                          # page and a page per task

A run's page: the task, the result (status, reason, answer, the check, tokens, cost, where the
time went), the plan and its checks (``plan.jsonl``), then one card per step: the screenshot
the model was shown with the action drawn over it (a ring at each click, a line for a drag, the
grounded box labelled with the grounder that found it, the text typed and the keys pressed),
the model's reply, the model calls with their tokens, cost and time, the grounding, the desktop
operations performed, what was seen to happen, the safety decision (who approved or refused,
and the image they were shown), the code agent's turns with their code and output, and the
step's timings.

The drawing is an SVG laid over the screenshot, in the screenshot's pixels, placed with the
transform the run's own groundings record (each grounding has its screen point and the pixel
of the image sent); the screenshot itself is shown as it was sent. Images are beside the page
(loaded and decoded before the page's ``load``, each at the width of the page's column and at
full size on a click), or embedded
with ``embed=True`` (one file, larger). All text is escaped: a reply holding ``<script>`` is
shown as those characters.

For a bench results folder (``agent_s.bench``'s layout) the index lists the score per domain
and every task; each task's page has its record (status, score, the evaluator's parts, the
setup log), OSWorld's ``traj.jsonl`` steps with the screenshot taken after each, and a link to
the run report of its ``trajectory/`` folder (``agent_s.report.bench``).

Modules: here the folder kinds and the run page's frame, result and overview;
``report_plan`` (the plan), ``report_steps`` (one step's card), ``report_overlay`` (where
things are on a screenshot, the SVG drawn over it), ``report_html`` (escaping, the page, images),
``report_bench`` (bench results folders).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from agent_s.errors import AgentSError
from agent_s.guards import files as guard
from agent_s.record.result import RunResult
from agent_s.record.step import Step
from agent_s.record.trajectory import (
    PLAN_FILE,
    RESULT_FILE,
    TRAJECTORY_FILE,
    Trajectory,
    load_trajectory,
)
from agent_s.report.bestof import (
    attempt_note,
    attempt_of,
    best_of_card,
    link,
)
from agent_s.report.html import Assets, PageWriter, badge, esc, kv, money, seconds, table
from agent_s.report.overlay import Axis, Frame, overlay
from agent_s.report.plan import plan_card, plan_events
from agent_s.report.steps import step_card

REPORT_FILE = "report.html"


class ReportError(AgentSError):
    """The folder cannot be reported on; the message says why and what to give instead."""


class NotARunFolder(ReportError):
    """The folder given is no run, best-of run or bench results folder (a usage error: the
    message names the folder to give instead)."""


# -- which folder ---------------------------------------------------------------------------------


def write_run_report(
    folder: Path | str,
    out: Path | str | None = None,
    *,
    embed: bool = False,
    after: Mapping[int, Path] | None = None,
    back: tuple[str, str] | None = None,
    files: Path | None = None,
) -> Path:
    """The report of one run folder, written to ``out`` (default ``FOLDER/report.html``); with
    ``out`` elsewhere the images are copied into ``<out stem>_files/`` beside it (unless
    ``embed``). ``after``: screenshots taken after steps (by number) where the run has none of
    its own (a bench task's); ``back``: a link (URL, text) shown at the top; ``files``: where
    to copy the images instead of ``<out stem>_files/``."""
    folder = Path(folder).expanduser()
    try:
        trajectory = load_trajectory(folder)
    except FileNotFoundError as err:
        raise NotARunFolder(
            f"{folder} is not a run folder (no {TRAJECTORY_FILE}): give the folder agent-s run "
            "printed as 'trajectory: ...'"
        ) from err
    except ValueError as err:
        raise ReportError(
            f"{folder}: the trajectory cannot be read: {err}. A line other than the last is "
            "damaged; restore the file or remove that line, then run agent-s report again"
        ) from err
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ReportError(f"{folder}: cannot read the run: {err}") from err
    page = Path(out).expanduser() if out is not None else folder.resolve() / REPORT_FILE
    if page.is_dir():
        page = page / REPORT_FILE
    copy_to = None
    if not embed and page.parent.resolve() != folder.resolve():
        copy_to = files or page.parent / f"{page.stem}_files"
    assets = Assets(page.parent, copy_to=copy_to, embed=embed)
    plan = guard.contained(folder, PLAN_FILE, "the plan")
    events, bad_events = plan_events(plan) if plan is not None else ([], 0)
    title = f"agent-s run: {_task(trajectory)[:80]}"
    try:
        with PageWriter(page, title) as writer:
            _run_page(writer, trajectory, assets, events, bad_events, dict(after or {}), back)
    except OSError as err:
        raise ReportError(f"cannot write {page}: {err.strerror or err}") from err
    return page


# -- the run page ---------------------------------------------------------------------------------


def _task(trajectory: Trajectory) -> str:
    if trajectory.result is not None:
        return trajectory.result.task
    return str(trajectory.run.get("task") or "(no task recorded)")


def _run_page(
    writer: PageWriter,
    trajectory: Trajectory,
    assets: Assets,
    events: list[dict[str, Any]],
    bad_events: int,
    after: dict[int, Path],
    back: tuple[str, str] | None,
) -> None:
    run, result, steps = trajectory.run, trajectory.result, trajectory.steps
    top = f'<p><a href="{esc(back[0])}">{esc(back[1])}</a></p>' if back else ""
    status = badge(result.status.value) if result is not None else badge("no result", "cancelled")
    started = result.started_at if result is not None else float(run.get("started_at") or 0)
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(started)) if started else ""
    writer.write(
        f'<header class="top">{top}<h1>{esc(_task(trajectory))} {status}</h1>',
        '<p class="meta">',
        esc(
            " · ".join(
                x
                for x in (
                    when,
                    str(run.get("model") or (result.model if result else "") or ""),
                    str(run.get("provider") or ""),
                    f"grounding {run['grounding']}" if run.get("grounding") else "",
                    str(trajectory.folder),
                )
                if x
            )
        ),
        "</p></header>\n<main>\n",
    )
    warnings = []
    if trajectory.torn_last_line:
        warnings.append(
            "The last line of trajectory.jsonl was cut off (the run was killed while writing "
            "it): that step is left out; every step before it is shown."
        )
    if result is None:
        warnings.append(
            f"There is no {RESULT_FILE}: the run was stopped before it ended, or it is still "
            "running. The steps recorded so far are shown."
        )
    if bad_events:
        warnings.append(f"{bad_events} line(s) of {PLAN_FILE} could not be read and are left out.")
    for warning in warnings:
        writer.write(f'<p class="warn">{esc(warning)}</p>\n')
    if result is not None:
        writer.write(_result_card(result))
    writer.write(_best_of(trajectory, writer.path))
    writer.write(_totals_card(steps))
    writer.write(plan_card(events, result.plan if result else None))
    writer.write(f"<h2>Steps ({len(steps)})</h2>\n")
    if not steps:
        writer.write('<p class="meta">No step was recorded.</p>\n')
    else:
        writer.write('<nav class="toc">')
        for step in steps:
            writer.write(
                f'<a class="{esc(step.outcome)}" href="#step-{step.step}" '
                f'title="{esc(step.action_text or step.outcome)}">{step.step}</a>'
            )
        writer.write("</nav>\n")
    frame = Frame.fit(steps)
    for step in steps:
        writer.write(step_card(step, trajectory.folder, assets, frame, after.get(step.step)))
    writer.write("</main>\n")


def _best_of(trajectory: Trajectory, page: Path) -> str:
    """A best-of run's pick and narratives (its result has them), or, for one attempt of such
    a run, which attempt it is and a link back to the best-of page."""
    result = trajectory.result
    if result is not None and result.best_of is not None:
        pages = {}
        for attempt in result.best_of.attempts:
            other = Path(attempt.trajectory_dir or "") / REPORT_FILE
            if attempt.trajectory_dir and other.is_file():
                pages[attempt.number] = link(page, other)
        return best_of_card(result.best_of, pages=pages)
    found = attempt_of(trajectory.folder)
    if found is None:
        return ""
    base, number = found
    return attempt_note(base, number, page, base / REPORT_FILE)


def _result_card(result: RunResult) -> str:
    rows = [
        ("status", badge(result.status.value) + f" <code>{esc(result.cause)}</code>"),
        ("reason", esc(result.reason)),
        ("answer", esc(result.answer) if result.answer is not None else ""),
        ("question", esc(result.question) if result.question else ""),
        ("verified", "yes" if result.verified else "no (no check passed after done)"),
    ]
    if result.postcondition is not None:
        check = result.postcondition
        verdict = badge("passed" if check.passed else "failed")
        rows.append(
            ("check", f"<code>{esc(check.description)}</code> {verdict} {esc(check.detail)}")
        )
    usage = result.usage
    calls = ", ".join(f"{k} {v}" for k, v in sorted(result.calls.items()))
    rows += [
        ("steps", esc(result.steps)),
        ("model calls", esc(f"{result.model_calls}" + (f" ({calls})" if calls else ""))),
        (
            "tokens",
            esc(
                f"{usage.total_tokens:,} ({usage.input_tokens:,} in, {usage.output_tokens:,} out, "
                f"{usage.cached_input_tokens:,} cached)"
            ),
        ),
        ("cost", esc(money(usage.cost_usd))),
        ("model", esc(result.model)),
        ("error type", esc(result.error_type or "")),
    ]
    timings = result.timings
    parts = [(name, value) for name, value in asdict(timings).items() if name != "total"]
    time_rows = [[esc(name), esc(seconds(value))] for name, value in parts if value]
    return (
        '<section class="card" id="result"><h2>Result</h2>'
        + kv(rows)
        + f"<h3>Time: {esc(seconds(timings.total))}</h3>"
        + table(["part", "time"], time_rows, frozenset({1}))
        + "</section>\n"
    )


def _totals_card(steps: Sequence[Step]) -> str:
    """What the steps themselves record: outcomes, safety decisions, code-agent turns."""
    if not steps:
        return ""
    outcomes: dict[str, int] = {}
    for step in steps:
        outcomes[step.outcome] = outcomes.get(step.outcome, 0) + 1
    decisions = [s.safety for s in steps if s.safety] + [
        sub.safety for s in steps for sub in s.substeps if sub.safety
    ]
    refused = sum(1 for d in decisions if not d.get("allowed", True))
    asked = sum(1 for d in decisions if d.get("approver"))
    rows = [
        ("outcomes", esc(", ".join(f"{k} {v}" for k, v in sorted(outcomes.items())))),
        (
            "safety",
            esc(f"{len(decisions)} decision(s): {refused} refused, {asked} decided by a person")
            if decisions
            else "",
        ),
        (
            "code agent",
            esc(f"{sum(len(s.substeps) for s in steps)} turn(s)")
            if any(s.substeps for s in steps)
            else "",
        ),
    ]
    return f'<section class="card"><h2>Overview</h2>{kv(rows)}</section>\n'


__all__ = [
    "REPORT_FILE",
    "Axis",
    "Frame",
    "NotARunFolder",
    "ReportError",
    "overlay",
    "write_run_report",
]
