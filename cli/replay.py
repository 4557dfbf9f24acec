"""``agent-s replay RUN_DIR``: carry out a recorded run again on the live desktop.

Every target is grounded again on the screen as it is now (``agent_s.replay.player``); no model is
asked unless the replay diverges and ``--heal`` hands the rest of the task to the agent (a
model configured as for ``agent-s run``). A line per step goes to stderr; stdout holds the
result: ``replayed``, ``diverged at step N (...)`` with the reason, or ``healed``, the steps and
model calls, and the new run's folder (``--json``: one JSON object). Exit codes: 0 replayed (or
healed) and succeeded, 1 diverged or failed, 2 usage, 3 a limit, 130 interrupted.

The options shared with ``agent-s workflow run`` are here (``ReplayFlags``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from agent_s.cli import options, output
from agent_s.cli.grouped import grouped, settings_flags
from agent_s.errors import AgentSError

if TYPE_CHECKING:
    from agent_s.desktop.base import DesktopBackend
    from agent_s.replay.player import ReplayResult, Script


@dataclass(frozen=True)
class ReplayFlags:
    """What ``replay`` and ``workflow run`` share: their options (``agent_s.cli.grouped``)."""

    heal: Annotated[
        bool,
        typer.Option(
            "--heal",
            help="Where the replay diverges, hand the rest of the task to the agent (needs a "
            "model).",
        ),
    ] = False
    virtual: Annotated[
        bool, typer.Option("--virtual", help="Replay inside a fresh virtual desktop.")
    ] = False
    desktop: options.VirtualDesktopName = None
    record: Annotated[
        Path | None,
        typer.Option(
            help="Folder for the new run's folder (default ~/.local/share/agent-s/runs; env "
            "AGENT_S_RECORD_DIR)."
        ),
    ] = None
    safety: options.Safety = None
    check: options.Check = None
    wait: Annotated[
        float,
        typer.Option(min=0.0, help="Seconds a step waits for its recorded window (default 10)."),
    ] = 10.0
    max_steps: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Steps the agent may take when healing: the run's step limit (default 30; env "
            "AGENT_S_MAX_STEPS).",
        ),
    ] = None
    as_json: options.AsJson = False
    models: options.ModelFlags = options.ModelFlags()
    grounds: options.GroundFlags = options.GroundFlags()


def _safe(text: str) -> str:
    from rich.markup import escape

    return escape(output.printable(text))


def _fail(err: Console, message: str, code: int = 2) -> typer.Exit:
    err.print(f"[red]error:[/] {_safe(message)}", highlight=False, soft_wrap=True)
    return typer.Exit(code)


def run_script(script: Script | Callable[[DesktopBackend], Script], given: ReplayFlags) -> None:
    """Replay ``script`` as the options say, print the result and exit with its code.
    ``script`` may be a function of the desktop (a workflow's values need its HOME): a
    ValueError from it is a usage error, before anything is replayed."""
    from agent_s.cli.run import (
        _approver,
        _check_argv,
        _desktop,
        _nobody_approves,
        _step_line,
        _writable_folder,
        run_settings,
    )
    from agent_s.record.result import CommandCheck
    from agent_s.replay.player import Replayer, Script

    out, err = output.console(), output.console(stderr=True)
    flags = settings_flags(
        given.models,
        given.grounds,
        record=given.record,
        safety=given.safety,
        max_steps=given.max_steps,
    )
    try:
        resolved = run_settings(flags)
        model = None
        if resolved.model.name:  # a model is needed only to heal (or for a code-agent step)
            model = resolved.build_model(given.models.key())
        elif given.heal:
            raise ValueError(
                "--heal needs a model to hand the rest of the task to: pass --model NAME "
                "(and --provider, --base-url) or set AGENT_S_MODEL; or replay without --heal"
            )
        options.check_desktop(given.virtual, given.desktop)
        grounding = resolved.build_grounding()
        settings = resolved.build_agent_config()
        if settings.record_dir is not None:
            _writable_folder(Path(settings.record_dir))
        argv = _check_argv(given.check)
        approver = _approver(err)
    except (AgentSError, ValueError) as error:
        raise _fail(err, str(error)) from error
    if approver is None:
        _nobody_approves(err, settings.safety.mode)
    try:
        with _desktop(given.virtual, err, None, given.desktop) as (backend, env):
            if not isinstance(script, Script):
                script = script(backend)
            _print_script(err, script)
            replayer = Replayer(
                backend,
                model=model,
                settings=settings,
                grounding=grounding,
                heal=given.heal,
                approver=approver,
                wait_seconds=given.wait,
                on_step=lambda step: _step_line(err, step),
                on_divergence=lambda d: err.print(
                    f"[yellow]diverged at {_safe(d.describe())}[/]"
                    + (" [dim]- the agent takes over[/]" if given.heal else ""),
                    highlight=False,
                    soft_wrap=True,
                ),
            )
            postcondition = CommandCheck(argv, env=env) if argv else None
            result = replayer.run(script, postcondition)
    except (AgentSError, ValueError) as error:
        raise _fail(err, str(error)) from error
    except KeyboardInterrupt as error:
        err.print("\ninterrupted", style="yellow", highlight=False)
        raise typer.Exit(130) from error
    print_result(out, result, given.as_json, given.heal)
    raise typer.Exit(result.exit_code)


#: What to do about a divergence, by its kind (``agent_s.replay.player.DivergenceKind``).
_FIXES = {
    "window": "make the desktop look as it did when the run was recorded (open the window the "
    "step names)",
    "not_found": "make the screen show what the step looks for (the application and document "
    "as they were when the run was recorded)",
    "refused": "allow the action (--safety auto, or approve it when asked)",
    "failed": "look at the screen and the step's reason above, then replay again",
    "screen_size": "replay on a screen of the size the run was recorded on",
    "check": "every step was carried out but the check failed: compare what --check tests (a ~ "
    "in it is the desktop's HOME) with what the steps did",
    "needs_model": "give a model (--model, --provider, --base-url)",
}


def _print_script(err: Console, script: Script) -> None:
    """The replay's first lines: the task, the recorded steps it carries out, those left out."""
    recorded = len(script.steps) + len(script.skipped)
    of = f"{len(script.steps)} of {recorded}" if script.skipped else f"{len(script.steps)}"
    err.print(
        f"[bold]replay:[/] {_safe(script.task)}  [dim]({of} recorded steps from "
        f"{_safe(script.source or 'a workflow')})[/]",
        highlight=False,
        soft_wrap=True,
    )
    if script.skipped:
        err.print(
            f"[dim]recorded steps left out: {_safe('; '.join(script.skipped))}; the steps "
            "below are numbered as the new run's[/]",
            highlight=False,
            soft_wrap=True,
        )


def print_result(out: Console, result: ReplayResult, as_json: bool, heal: bool) -> None:
    if as_json:
        out.file.write(json.dumps(result.to_json()) + "\n")
        out.file.flush()
        return
    run = result.run
    divergence = result.divergence
    if result.status == "replayed":
        head = f"[green]replayed[/]: {result.replayed} steps"
        if result.recorded != result.replayed:  # typing that ended with Enter is two steps
            head += f" ({result.recorded} recorded, Enter after typing a step of its own)"
        head += f", {_safe(run.reason)}"
    elif result.status == "healed":
        head = f"[green]healed[/]: {result.replayed} steps replayed, {result.healed} by the agent"
    elif result.status == "stopped":
        head = f"[yellow]stopped[/]: {_safe(run.reason)}"
    else:
        head = f"[red]{result.status}[/]: {_safe(run.reason)}"
    out.print(head, highlight=False, soft_wrap=True)
    if divergence is not None and result.status != "diverged":
        out.print(f"diverged at {_safe(divergence.describe())}", highlight=False, soft_wrap=True)
    if result.status == "diverged" and not heal and divergence is not None:
        out.print(
            f"fix: {_FIXES.get(divergence.kind, _FIXES['window'])}, or replay with --heal and a "
            "model to let the agent finish it",
            highlight=False,
            soft_wrap=True,
        )
    if run.postcondition is not None:
        mark = "passed" if run.postcondition.passed else "failed"
        out.print(f"check {mark}: {_safe(run.postcondition.detail)}", highlight=False)
    out.print(
        f"{run.steps} steps, {run.model_calls} model calls, {run.usage.total_tokens} tokens, "
        f"{run.timings.total:.1f} s",
        highlight=False,
    )
    if run.trajectory_dir:
        out.print(f"trajectory: {run.trajectory_dir}", highlight=False, soft_wrap=True)


@grouped
def replay(
    run_dir: Annotated[
        Path, typer.Argument(metavar="RUN_DIR", help="The recorded run's trajectory folder.")
    ],
    *,
    given: ReplayFlags,
) -> None:
    """Carry out a recorded run again, grounding every target on the screen as it is now;
    no model is asked unless --heal takes over where it diverges."""
    from agent_s.replay.player import script_of

    err = output.console(stderr=True)
    try:
        script = script_of(run_dir)
    except (OSError, ValueError) as error:
        hint = "give the folder agent-s run printed as trajectory:"
        said = str(error) if hint in str(error) else f"{error} ({hint})"
        raise _fail(err, said) from error
    run_script(script, given)
