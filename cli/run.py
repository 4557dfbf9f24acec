"""``agent-s run "TASK"``: do a task on the desktop and say how it went.

A live line per step goes to stderr (the action, where it clicked and which grounder found it,
tokens and cost so far); the result goes to stdout (``--json`` for machines). Without a task it
asks for one, and again after each run, until an empty line or end of input. Every run records
a trajectory folder (``--record DIR``; default ``$AGENT_S_RECORD_DIR`` or
``~/.local/share/agent-s/runs``).

Safety (``--safety``, default ``confirm``): actions the mode holds are shown with the exact text
or code and a marked screen crop, and asked about (y / n / always for this run) when stdin is a
terminal; when it is not, nobody can approve and those actions are refused (the model is told).
Every setting (model, grounding, limits, ``[safety]`` rules, ``[code_agent]``, ``[secrets]``,
``[profiles."MODEL"]`` prices) may also come from the configuration file (``$AGENT_S_CONFIG`` or
``~/.config/agent-s/config.toml``) or an ``AGENT_S_*`` variable: ``agent_s.settings``; flags win
over variables over the file over this command's defaults (``RUN_DEFAULTS``).

Exit codes: 0 succeeded, 1 failed / infeasible / error, 2 usage or configuration error (nothing
has touched the desktop then), 3 a limit was reached (steps, cost, time), 130 interrupted.
Ctrl-C, SIGTERM and SIGHUP stop the run alike (``agent_s.lifecycle``; the exit code is 130 for
each): keys and buttons held by the current action are released by the backend, code the code
agent is running is killed (its whole process group), the result is written with status
``cancelled``, and a ``--virtual`` desktop is stopped with everything on it. After a SIGKILL,
the desktop's watchdog ends it, and the next ``agent-s`` start releases held keys.
pyautogui's fail-safe (the mouse in a screen corner) stays on.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from agent_s.cli import options
from agent_s.errors import AgentSError

if TYPE_CHECKING:
    from agent_s.settings import Settings
    from agent_s.step import Step

# what ``run`` does unless the file, a variable or a flag says otherwise
RUN_DEFAULTS: Mapping[str, Any] = {
    "safety": {"mode": "confirm"},  # ask before risky actions (the SDK's default is auto)
    "run": {"record_dir": "~/.local/share/agent-s/runs"},  # every run records a trajectory
}
_STYLES = {
    "succeeded": "green",
    "planned": "cyan",
    "failed": "red",
    "infeasible": "red",
    "error": "red",
}


def _step_line(err: Console, step: Step) -> None:
    from agent_s.context import describe_outcome

    where = "; ".join(
        f"({g.point[0]}, {g.point[1]}) via {g.grounder}" if g.point else f"not found ({g.grounder})"
        for g in step.grounding
    )
    usage = step.usage
    line = f"[bold]{step.step:>3}[/] {escape(step.action_text[:100])}"
    if where:
        line += f"  [cyan]{escape(where)}[/]"
    if step.outcome not in ("ok", "terminal"):
        line += f"  [yellow]{escape(describe_outcome(step, 120))}[/]"
    line += f"  [dim]{usage.total_tokens} tok ${usage.cost_usd:.4f}[/]"
    err.print(line, highlight=False, soft_wrap=True)


@contextlib.contextmanager
def _desktop(virtual: bool, err: Console) -> Iterator[tuple[Any, dict[str, str] | None]]:
    """(backend, environment for the check command): a fresh virtual desktop, or $DISPLAY."""
    from agent_s.desktop.x11 import X11Backend

    if not virtual:
        with X11Backend() as backend:
            yield backend, None
        return
    from agent_s.desktop.virtual import VirtualDesktop

    with VirtualDesktop(1280, 800, home="temp") as desk:
        err.print(f"[dim]virtual desktop {desk.display} (1280x800), HOME={desk.home}[/]")
        # AT-SPI (the accessibility grounder) finds the session bus through os.environ only
        with desk.exported(), X11Backend(desk.display, env=desk.env) as backend:
            yield backend, dict(desk.env)


def _writable_folder(folder: Path) -> None:
    """Make ``folder`` (for trajectories) or say, as a ValueError, why it cannot be one."""
    folder = folder.expanduser()
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"--record {folder} is a file: give a folder for trajectory folders")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        reason = error.strerror or str(error)
        raise ValueError(
            f"--record {folder}: cannot create it ({reason}); give a writable folder"
        ) from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ValueError(f"--record {folder} is not writable: give a writable folder")


def _tasks(task: str | None, err: Console) -> Iterator[str]:
    if task is not None:
        yield task
        return
    while True:
        try:
            asked = typer.prompt(
                "Task (empty line to quit)", default="", show_default=False, err=True
            )
        except (EOFError, typer.Abort):
            return
        if not asked.strip():
            return
        yield asked


def _print_result(out: Console, result: Any, as_json: bool) -> None:
    if as_json:
        out.print_json(json.dumps(result.to_json()))
        return
    status = result.status.value
    style = _STYLES.get(status, "yellow")
    out.print(f"[{style}]{status}[/]: {escape(result.reason)}", highlight=False, soft_wrap=True)
    if result.answer:
        out.print(f"answer: {escape(result.answer)}", highlight=False, soft_wrap=True)
    if result.postcondition is not None:
        check = result.postcondition
        mark = "passed" if check.passed else "failed"
        detail = f"{escape(check.description)} ({escape(check.detail)})"
        out.print(f"check {mark}: {detail}", highlight=False, soft_wrap=True)
    usage = result.usage
    out.print(
        f"{result.steps} steps, {result.model_calls} model calls, {usage.total_tokens} tokens, "
        f"${usage.cost_usd:.4f}, {result.timings.total:.1f} s",
        highlight=False,
        soft_wrap=True,
    )
    if result.trajectory_dir:
        out.print(f"trajectory: {result.trajectory_dir}", highlight=False, soft_wrap=True)


def run_settings(flags: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> Settings:
    """``run``'s settings: its defaults, the configuration file, the ``AGENT_S_*`` variables,
    then ``flags`` (``{"--model": "gpt-4o", ...}``; None: not given)."""
    from agent_s.settings import flag_values, load_settings

    return load_settings(flag_values(flags), environ=environ, defaults=RUN_DEFAULTS)


def _approver(err: Console, mode: str) -> Any:
    """The terminal approver when stdin is a terminal; otherwise none (and say what follows)."""
    if sys.stdin.isatty():
        from agent_s.cli.approve import CliApprover

        return CliApprover(err)
    if mode in ("confirm", "confirm-all"):
        err.print(
            f"safety mode {mode}: stdin is not a terminal, so nobody can approve; actions that "
            "need approval will be refused. To let them run: --safety auto (or "
            "AGENT_S_SAFETY=auto), or allow them in the config file: [safety] allow_apps, "
            "allow_paths, [[safety.rules]] with effect = 'allow'",
            style="yellow",
            markup=False,
            highlight=False,
        )
    return None


def run(
    task: Annotated[str | None, typer.Argument(help="The task; omit it to be asked.")] = None,
    provider: options.Provider = None,
    model: options.Model = None,
    base_url: options.BaseUrl = None,
    api_key: options.ApiKey = None,
    api_key_file: options.ApiKeyFile = None,
    ground: options.Ground = None,
    ground_url: options.GroundUrl = None,
    ground_model: options.GroundModel = None,
    model_timeout: options.ModelTimeout = None,
    max_steps: Annotated[int | None, typer.Option(help="Step limit (default 30).")] = None,
    max_cost: Annotated[float | None, typer.Option(help="Cost limit in USD.")] = None,
    record: Annotated[Path | None, typer.Option(help="Folder for trajectory folders.")] = None,
    as_json: Annotated[
        bool, typer.Option("--json", metavar=options.FLAG, help="Print the result as JSON.")
    ] = False,
    virtual: Annotated[
        bool,
        typer.Option("--virtual", metavar=options.FLAG, help="Run inside a fresh virtual desktop."),
    ] = False,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            metavar=options.FLAG,
            help="Predict and ground; draw the plan; execute nothing.",
        ),
    ] = False,
    check: Annotated[
        str | None, typer.Option(help="A command run after done; exit status 0 = verified.")
    ] = None,
    reflection: Annotated[
        bool | None,
        typer.Option(
            "--reflection/--no-reflection", metavar=options.FLAG, help="A reviewer call per step."
        ),
    ] = None,
    a11y_snapshot: Annotated[
        bool | None,
        typer.Option(
            "--a11y-snapshot/--no-a11y-snapshot",
            metavar=options.FLAG,
            help="List the active window's named elements in each request (default off; env "
            "AGENT_S_A11Y_SNAPSHOT).",
        ),
    ] = None,
    safety: Annotated[
        str | None,
        typer.Option(
            help="auto | confirm | confirm-all | deny-risky (default confirm; env AGENT_S_SAFETY)."
        ),
    ] = None,
    code_sandbox: Annotated[
        str | None, typer.Option(help="none | bwrap: how code-agent code runs.")
    ] = None,
    code_timeout: Annotated[
        float | None, typer.Option(help="Seconds each code-agent block may run (default 60).")
    ] = None,
    code_steps: Annotated[
        int | None, typer.Option(help="Turns the code agent has per call (default 20).")
    ] = None,
    code_agent: Annotated[
        bool | None,
        typer.Option(
            "--code-agent/--no-code-agent",
            metavar=options.FLAG,
            help="Offer the code agent (default on).",
        ),
    ] = None,
) -> None:
    """Do a task on the desktop, step by step, and report the result."""
    from agent_s.agent import Agent
    from agent_s.result import CommandCheck, RunStatus

    out, err = Console(), Console(stderr=True)
    try:
        resolved = run_settings(
            {
                "--provider": provider,
                "--model": model,
                "--base-url": base_url,
                "--ground": ground,
                "--ground-url": ground_url,
                "--ground-model": ground_model,
                "--max-steps": max_steps,
                "--max-cost": max_cost,
                "--record": record,
                "--reflection": reflection,
                "--a11y-snapshot": a11y_snapshot,
                "--safety": safety,
                "--code-sandbox": code_sandbox,
                "--code-timeout": code_timeout,
                "--code-steps": code_steps,
                "--code-agent": code_agent,
                "--model-timeout": model_timeout,
            }
        )
        model_config = resolved.build_model(options.api_key(api_key, api_key_file))
        grounding = resolved.build_grounding()
        settings = resolved.build_agent_config(dry_run=dry_run)
        if task is not None and not task.strip():
            raise ValueError('the task is empty: give one, e.g. agent-s run "open the calculator"')
        if settings.record_dir is not None:
            _writable_folder(Path(settings.record_dir))
        argv = tuple(shlex.split(check)) if check is not None else None
        if argv == ():
            raise typer.BadParameter("--check needs a command")
        approver = _approver(err, settings.safety.mode)
        agent = Agent(  # before the desktop: a missing key or bad budget exits 2 untouched
            model_config,
            settings=settings,
            grounding=grounding,
            profiles=resolved.build_profiles(),
            on_step=lambda report: _step_line(err, report),
            approver=approver,
            on_retry=lambda line: err.print(
                f"[yellow]{escape(line)}[/]", highlight=False, soft_wrap=True
            ),
        )
    except (AgentSError, ValueError) as error:
        err.print(f"[red]error:[/] {escape(str(error))}", highlight=False, soft_wrap=True)
        raise typer.Exit(2) from error
    code = 0
    try:
        with _desktop(virtual, err) as (backend, env):
            agent.backend = backend
            for text in _tasks(task, err):
                err.print(
                    f"[bold]task:[/] {escape(text)}  [dim]({model_config.model}, "
                    f"grounding {grounding.mode})[/]",
                    highlight=False,
                )
                postcondition = CommandCheck(argv, env=env) if argv else None
                result = agent.run(text, postcondition=postcondition)
                _print_result(out, result, as_json)
                code = result.exit_code
                if result.status is RunStatus.CANCELLED:
                    break
    except AgentSError as error:  # no display, no xdotool: set-up
        err.print(f"[red]error:[/] {escape(str(error))}", highlight=False, soft_wrap=True)
        raise typer.Exit(2) from error
    except KeyboardInterrupt as error:  # between runs, or while the desktop started
        raise typer.Exit(130) from error
    raise typer.Exit(code)
