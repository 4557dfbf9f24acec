"""``agent-s practice APP_OR_SUITE``: the model sets tasks, checks decide, memory keeps what works.

A thin layer over ``agent_s.practice.session``: the settings are ``run``'s (flags, ``AGENT_S_*``
variables, the configuration file), the memory file is ``--db`` (else ``$AGENT_S_MEMORY_DB``,
else the user's data folder). Progress (a bar, a line per proposal, check, step and outcome)
goes to stderr; the summary of what was learned to stdout, or with ``--json`` the whole report
as one JSON object. The attempts run unattended on throwaway virtual desktops: the safety mode
is ``auto`` unless ``--safety`` or the configuration says otherwise (checks the mode holds are
asked about when stdin is a terminal, refused otherwise).

Exit codes: 0 every task was proposed, 1 the model's provider failed, 2 usage or configuration
(nothing was started), 3 the cost or time budget ended it early, 130 interrupted (Ctrl-C,
SIGTERM: the running desktop is stopped, the summary so far is printed).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from agent_s.cli import options, output
from agent_s.cli.grouped import grouped, settings_flags
from agent_s.errors import AgentSError

if TYPE_CHECKING:
    from agent_s.practice.session import PracticeEvent, PracticeReport

# what ``practice`` does unless the file, a variable or a flag says otherwise
PRACTICE_DEFAULTS = {
    "run": {"record_dir": "~/.local/share/agent-s/runs"},
    "limits": {"max_steps": 15},
}
_EXIT = {"tasks": 0, "error": 1, "max_cost": 3, "max_time": 3, "cancelled": 130}
_STYLE = {"passed": "green", "failed": "red", "rejected": "yellow", "invalid": "yellow"}


def _safe(text: str) -> str:
    return escape(output.printable(text))


def _line(console: Console, text: str) -> None:
    console.print(text, highlight=False, soft_wrap=True)


def _event(console: Console, event: PracticeEvent) -> None:
    n = f"[bold]{event.number:>2}[/]"
    text = _safe(event.text[:300])
    task = event.task
    if event.kind == "propose":
        _line(console, f"{n} [dim]{text}[/]")
    elif event.kind == "invalid":
        _line(console, f"{n} [yellow]proposal refused, asking again:[/] {text}")
    elif event.kind == "rejected":
        what = _safe(task.task[:200]) if task is not None and task.task else "no usable proposal"
        _line(console, f"{n} [yellow]rejected[/] {what}: {text}")
    elif event.kind == "attempt" and task is not None:
        _line(console, f"{n} [bold]task[/] (difficulty {task.difficulty}): {text}")
        _line(console, f"   [dim]check: {_safe(task.check[:200])}[/]")
    elif event.kind == "step":
        _line(console, f"   {text}")
    elif event.kind == "done" and task is not None:
        style = _STYLE.get(task.status, "red")
        learned = _learned(task.skills, task.lessons, task.runs)
        _line(console, f"{n} [{style}]{task.status}[/]: {text}  [dim]{learned}[/]")


def _ids(ids: list[int]) -> str:
    return ", ".join(str(i) for i in ids) if ids else "none"


def _learned(skills: list[int], lessons: list[int], runs: list[int]) -> str:
    return f"skills: {_ids(skills)}; lessons: {_ids(lessons)}; run summaries: {_ids(runs)}"


def _summary(out: Console, report: PracticeReport) -> None:
    invalid = sum(t.status == "invalid" for t in report.tasks)
    _line(
        out,
        f"practice {_safe(report.target)} ({_safe(', '.join(report.apps))}): {report.stopped}: "
        f"{_safe(report.reason)}",
    )
    _line(
        out,
        f"{report.proposed} proposed, {report.rejected} rejected ({invalid} with no usable "
        f"proposal), {report.attempted} attempted, {report.passed} passed",
    )
    for task in report.tasks:
        what = _safe(task.task[:120]) or "(no usable proposal)"
        _line(out, f"  {task.number:>2} {task.status:<9} {what}")
        if task.skills or task.lessons or task.runs:
            trust = "checked by a model-written check" if task.verified else "unverified"
            _line(out, f"     {trust}: {_learned(task.skills, task.lessons, task.runs)}")
    _line(out, f"learned: skills {_ids(report.skills)}; lessons {_ids(report.lessons)}")
    _line(out, f"${report.cost_usd:.4f}, {report.seconds:.1f} s; records: {report.folder}")


@grouped
def practice(
    target: Annotated[
        str, typer.Argument(metavar="APP_OR_SUITE", help="An application (mousepad) or a suite.")
    ],
    tasks: Annotated[int, typer.Option(min=1, help="Tasks to propose (default 5).")] = 5,
    max_steps: Annotated[
        int | None,
        typer.Option(min=1, help="Step limit per task (default 15; env AGENT_S_MAX_STEPS)."),
    ] = None,
    max_cost: Annotated[
        float | None,
        typer.Option(help="Cost limit in USD for the whole session (env AGENT_S_MAX_COST)."),
    ] = None,
    max_time: Annotated[
        float | None, typer.Option(help="Time limit in seconds for the whole session.")
    ] = None,
    db: Annotated[
        Path | None,
        typer.Option("--db", help="The memory file (default: the user's data folder)."),
    ] = None,
    record: Annotated[
        Path | None,
        typer.Option(
            help="Folder for the session's records (default ~/.local/share/agent-s/runs; "
            "env AGENT_S_RECORD_DIR)."
        ),
    ] = None,
    as_json: options.JsonReport = False,
    *,
    models: options.ModelFlags,
    ground: options.Ground = None,
    model_timeout: options.ModelTimeout = None,
    safety: Annotated[
        str | None,
        typer.Option(
            help="auto | confirm | confirm-all | deny-risky (default auto; env AGENT_S_SAFETY)."
        ),
    ] = None,
    code_sandbox: Annotated[
        str | None,
        typer.Option(
            help="auto | bwrap | none: how the model's checks and code run (default auto: "
            "bubblewrap; practice does not start without it unless none is given; env "
            "AGENT_S_CODE_SANDBOX)."
        ),
    ] = None,
) -> None:
    """Practise on an application: the model proposes tasks of rising difficulty, each with a
    check command that must fail on a fresh desktop; the agent attempts each on its own virtual
    desktop, and what passed its check is kept in memory as skills and lessons "checked by a
    model-written check" (never as verified: only a check the user gives verifies)."""
    from agent_s.memory import MemoryStore
    from agent_s.practice.session import PracticeBudget
    from agent_s.practice.session import practice as run_practice
    from agent_s.settings.read import flag_values, load_settings

    out, err = output.console(), output.console(stderr=True)
    try:
        flags = settings_flags(
            models,
            ground=ground,
            model_timeout=model_timeout,
            max_steps=max_steps,
            max_cost=max_cost,
            record=record,
            safety=safety,
            code_sandbox=code_sandbox,
        )
        settings = load_settings(flag_values(flags), defaults=PRACTICE_DEFAULTS)
        limits = settings.limits  # the flags, else AGENT_S_MAX_STEPS/COST, else the file
        budget = PracticeBudget(tasks, limits.max_steps, limits.max_cost, max_time)
        store = MemoryStore(db)
    except (AgentSError, ValueError) as error:
        _line(err, f"[red]error:[/] {_safe(str(error))}")
        raise typer.Exit(2) from error
    approver = None
    if sys.stdin.isatty():
        from agent_s.cli.approve import CliApprover

        approver = CliApprover(err)
    columns: list[Any] = [
        TextColumn("practice"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    ]
    try:
        bar_shown = err.is_terminal  # piped: the lines alone, no bar (nor its blank line)
        with (
            store,
            Progress(*columns, console=err, transient=True, disable=not bar_shown) as progress,
        ):
            bar = progress.add_task("tasks", total=tasks)

            def on_event(event: PracticeEvent) -> None:
                _event(progress.console, event)
                if event.kind in ("rejected", "done"):
                    progress.update(bar, completed=event.number)

            report = run_practice(
                target,
                settings=settings,
                store=store,
                budget=budget,
                api_key=models.key(),
                approver=approver,
                on_event=on_event,
            )
    except (AgentSError, ValueError) as error:  # nothing started: a name, a key, a budget
        _line(err, f"[red]error:[/] {_safe(str(error))}")
        raise typer.Exit(2) from error
    except KeyboardInterrupt as error:  # before the session started
        _line(err, "[yellow]interrupted[/]")
        raise typer.Exit(130) from error
    if as_json:
        out.file.write(json.dumps(report.to_json()) + "\n")
        out.file.flush()
    else:
        _summary(out, report)
    raise typer.Exit(_EXIT[report.stopped])
