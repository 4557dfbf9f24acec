"""``agent-s report RUN_DIR``: a run (or a bench results folder) as one HTML page to look at.

Writes ``RUN_DIR/report.html`` (or ``--out PATH``, with the images copied into a folder beside
it; ``--embed`` puts them inside the page instead) and prints its path; ``--open`` opens it
with the desktop's default browser. A bench results folder gets an index with the score per
domain and a page per task; a best-of run folder (``agent-s run --virtual --best-of N``) a page
with the judge's pick, its reason and each attempt's narrative, linking each attempt's report.
Exit codes: 0 written (and opened), 1 the run cannot be read or the page cannot be written or
opened (the message says what to do), 2 usage: the folder is no run (as ``replay`` says).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agent_s.cli import output


def report(
    folder: Annotated[
        Path,
        typer.Argument(
            metavar="RUN_DIR",
            help="A run's trajectory folder (agent-s run prints it), a best-of run folder, or a "
            "bench results folder.",
            show_default=False,
        ),
    ],
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            metavar="PATH",
            help="Where to write the page (default: report.html in RUN_DIR); its images are "
            "copied into a folder beside it.",
        ),
    ] = None,
    open_it: Annotated[
        bool, typer.Option("--open", help="Open the page with the desktop's browser.")
    ] = False,
    embed: Annotated[
        bool,
        typer.Option("--embed", help="Put the images inside the page (one file, larger)."),
    ] = False,
) -> None:
    """Write an HTML report of a run: each step's screenshot with the action drawn on it, the
    model's reasoning, grounding, tokens, cost, time, safety decisions, code-agent turns, the
    plan and the result. For a bench results folder: the score per domain and a page per task;
    for a best-of run folder: the pick, the judge's reason and every attempt's narrative."""
    from agent_s.record.trajectory import load_trajectory
    from agent_s.report.pages import write_report
    from agent_s.report.run import NotARunFolder, ReportError

    err = output.console(stderr=True)
    try:
        page = write_report(folder, out, embed=embed)
    except ReportError as error:
        err.print(
            f"error: {output.printable(str(error))}", markup=False, highlight=False, soft_wrap=True
        )
        raise typer.Exit(2 if isinstance(error, NotARunFolder) else 1) from error
    if (folder / "trajectory.jsonl").is_file():
        try:
            torn = load_trajectory(folder).torn_last_line
        except (OSError, ValueError):
            torn = False
        if torn:
            err.print(
                "warning: the last line of trajectory.jsonl was cut off (the run was killed "
                "while writing it); the report shows every step before it",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )
    output.console().print(str(page), markup=False, highlight=False, soft_wrap=True)
    if open_it:
        _open(page)


def _open(page: Path) -> None:
    """Open ``page`` with the desktop's default browser (xdg-open, through the backend)."""
    from agent_s.desktop.choose import open_backend
    from agent_s.errors import AgentSError

    err = output.console(stderr=True)
    try:
        open_backend().open(str(page.resolve()))
    except AgentSError as error:
        err.print(
            f"error: cannot open the report: {output.printable(str(error))}; open {page} "
            "in a browser yourself",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        raise typer.Exit(1) from error


__all__ = ["report"]
