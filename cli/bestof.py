"""The command-line side of ``agent-s run --virtual --best-of N``: checks, progress, result.

Progress goes to stderr (each attempt's start and end, the judge's pick and reason), the
result to stdout as for any run (``print_result``), followed by the pick and where the picked
attempt's files are. The exit code is the picked attempt's (2: a usage error, nothing ran).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from rich.markup import escape

from agent_s.errors import AgentSError

if TYPE_CHECKING:
    from rich.console import Console

    from agent_s.record.result import RunResult
    from agent_s.settings.read import Settings


def _safe(text: str) -> str:
    from agent_s.cli.output import printable

    return escape(printable(text))


def run_command(
    out: Console,
    err: Console,
    task: str | None,
    settings: Settings,
    api_key: str | None,
    check: Sequence[str] | None,
    *,
    n: int,
    workers: int | None,
    judge: str | None,
    virtual: bool,
    dry_run: bool,
    monitors: str | None,
    as_json: bool,
    desktop: str | None = None,
    print_result: Callable[[Any, RunResult, bool], None],
    view: bool = False,
    save_workflow: Callable[[RunResult], None] | None = None,
) -> int:
    """Run the best-of-N command; its exit code. ``save_workflow``: keeps the picked attempt
    as a workflow when its check passed (``--save-workflow NAME``)."""
    from agent_s.bestofn.config import BestOfConfig
    from agent_s.bestofn.live import run_best_of
    from agent_s.desktop.choose import virtual_kind

    try:
        if n < 1:
            raise ValueError("--workers and --judge go with --best-of N")
        if not virtual:
            raise ValueError(
                "--best-of runs each attempt on its own virtual desktop: add --virtual"
            )
        if dry_run:
            raise ValueError("--best-of executes its attempts: leave out --dry-run")
        if view:
            raise ValueError(
                "--view shows one desktop; --best-of runs several unattended: leave out --view"
            )
        if task is None:
            raise ValueError('--best-of needs the task on the command line: agent-s run "TASK"')
        config = BestOfConfig.from_environ(os.environ, n=n, workers=workers, judge=judge)
        settings.build_model(api_key)  # a missing key exits 2 before any desktop starts
    except (AgentSError, ValueError) as error:
        err.print(f"[red]error:[/] {_safe(str(error))}", highlight=False, soft_wrap=True)
        return 2

    def event(kind: str, number: int, detail: str) -> None:
        if kind == "start":
            line = f"attempt {number}: started"
        elif kind == "end":
            line = f"attempt {number}: {detail[:200]}"
        else:
            line = f"attempt {number}: {detail} - the others are stopped"
        err.print(f"[cyan]{_safe(line)}[/]", highlight=False, soft_wrap=True)

    err.print(
        f"[bold]task:[/] {_safe(task)}  [dim](best of {config.n}, {config.at_once} at once, "
        f"judge {config.judge})[/]",
        highlight=False,
        soft_wrap=True,
    )
    try:
        result = run_best_of(
            task,
            settings,
            config,
            api_key=api_key,
            check=check,
            monitors=monitors,
            kind=virtual_kind(os.environ, desktop),
            on_event=event,
        )
    except KeyboardInterrupt:  # the attempts were stopped, each with its desktop
        err.print("\ninterrupted", style="yellow", highlight=False)
        return 130
    except (AgentSError, OSError) as error:
        err.print(f"[red]error:[/] {_safe(str(error))}", highlight=False, soft_wrap=True)
        return 2
    print_result(out, result, as_json)
    if save_workflow is not None:
        save_workflow(result)
    record = result.best_of
    if record is not None and not as_json:
        if record.picked:
            line = f"picked attempt {record.picked} of {len(record.attempts)} ({record.by}): "
            out.print(_safe(line + record.reason), highlight=False, soft_wrap=True)
        if result.trajectory_dir is not None:
            folder = _run_folder(result.trajectory_dir)
            if (folder / "home").is_dir():
                out.print(f"files: {_safe(str(folder / 'home'))}", highlight=False, soft_wrap=True)
            out.print(f"best of: {_safe(str(folder / 'best_of.json'))}", highlight=False)
    return result.exit_code


def _run_folder(trajectory: Any) -> Any:
    """The best-of run folder from the picked attempt's trajectory (or the folder itself)."""
    from pathlib import Path

    path = Path(trajectory)
    return path.parent.parent if path.name == "trajectory" else path


__all__ = ["run_command"]
