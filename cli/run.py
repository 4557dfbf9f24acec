"""``agent-s run "TASK"``: do a task on the desktop and say how it went.

A live line per step goes to stderr (the action, where it clicked and which grounder found it,
tokens and cost so far); the result goes to stdout (``--json`` for machines). Without a task it
asks for one, and again after each run, until an empty line or end of input. Every run records
a trajectory folder (``--record DIR``; default ``$AGENT_S_RECORD_DIR`` or
``~/.local/share/agent-s/runs``).

Safety (``--safety``, default ``confirm``): actions the mode holds are shown with the exact text
or code and a marked screen crop, and asked about (y / n / always for this run) when stdin is a
terminal; when it is not, nobody can approve and those actions are refused (the model is told).
``[safety]`` rules and allow lists and ``[code_agent]`` settings come from the configuration file
(``$AGENT_S_CONFIG`` or ``~/.config/agent-s/config.toml``); flags win over variables over the file.

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
import dataclasses
import json
import os
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from agent_s.cli import options
from agent_s.errors import AgentSError

_DEFAULT_RECORD = Path("~/.local/share/agent-s/runs")
_STYLES = {"succeeded": "green", "failed": "red", "infeasible": "red", "error": "red"}


def _step_line(err: Console, report: Any) -> None:
    where = "; ".join(
        f"({g.point[0]}, {g.point[1]}) via {g.grounder}" if g.point else f"not found ({g.grounder})"
        for g in report.grounding
    )
    usage = report.usage
    line = f"[bold]{report.step:>3}[/] {escape(report.action_text[:100])}"
    if where:
        line += f"  [cyan]{escape(where)}[/]"
    if report.outcome.kind != "ok":
        line += f"  [yellow]{escape(report.outcome.describe(120))}[/]"
    line += f"  [dim]{usage.total_tokens} tok ${usage.cost_usd:.4f}[/]"
    err.print(line, highlight=False)


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
        with X11Backend(desk.display, env=desk.env) as backend:
            yield backend, dict(desk.env)


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
    out.print(f"[{style}]{status}[/]: {escape(result.reason)}", highlight=False)
    if result.answer:
        out.print(f"answer: {escape(result.answer)}", highlight=False)
    if result.postcondition is not None:
        check = result.postcondition
        mark = "passed" if check.passed else "failed"
        out.print(f"check {mark}: {escape(check.description)} ({escape(check.detail)})")
    usage = result.usage
    out.print(
        f"{result.steps} steps, {result.model_calls} model calls, {usage.total_tokens} tokens, "
        f"${usage.cost_usd:.4f}, {result.timings.total:.1f} s",
        highlight=False,
    )
    if result.trajectory_dir:
        out.print(f"trajectory: {result.trajectory_dir}", highlight=False)


def safety_and_code(
    mode: str | None,
    sandbox: str | None,
    timeout: float | None,
    steps: int | None,
    enabled: bool,
    *,
    default_mode: str = "confirm",
    default_sandbox: str = "none",
) -> tuple[Any, Any]:
    """The configuration file, then ``AGENT_S_*`` variables, then the flags (also for ``bench
    run``, whose defaults differ: mode auto, and the bubblewrap sandbox where it works)."""
    from agent_s.config import read_config_file

    safety, code = read_config_file(
        default_mode=default_mode,
        default_sandbox=default_sandbox,  # type: ignore[arg-type]
    )
    safety, code = safety.with_env(os.environ), code.with_env(os.environ)
    if mode is not None:
        safety = dataclasses.replace(safety, mode=mode)
    flags = {"sandbox": sandbox, "timeout_s": timeout, "max_steps": steps}
    code = dataclasses.replace(code, **{k: v for k, v in flags.items() if v is not None})
    if not enabled:
        code = dataclasses.replace(code, enabled=False)
    return safety, code


def _approver(err: Console, mode: str) -> Any:
    """The terminal approver when stdin is a terminal; otherwise none (and say what follows)."""
    if sys.stdin.isatty():
        from agent_s.cli.approve import CliApprover

        return CliApprover(err)
    if mode in ("confirm", "confirm-all"):
        err.print(
            f"[yellow]safety mode {mode}: stdin is not a terminal, so nobody can approve; "
            "actions that need approval will be refused[/]",
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
    max_steps: Annotated[int | None, typer.Option(help="Step limit (default 30).")] = None,
    max_cost: Annotated[float | None, typer.Option(help="Cost limit in USD.")] = None,
    record: Annotated[Path | None, typer.Option(help="Folder for trajectory folders.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    virtual: Annotated[bool, typer.Option(help="Run inside a fresh virtual desktop.")] = False,
    dry_run: Annotated[
        bool, typer.Option(help="Predict and ground; draw the plan; execute nothing.")
    ] = False,
    check: Annotated[
        str | None, typer.Option(help="A command run after done; exit status 0 = verified.")
    ] = None,
    reflection: Annotated[
        bool | None, typer.Option("--reflection/--no-reflection", help="A reviewer call per step.")
    ] = None,
    a11y_snapshot: Annotated[
        bool | None,
        typer.Option(
            "--a11y-snapshot/--no-a11y-snapshot",
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
        bool, typer.Option("--code-agent/--no-code-agent", help="Offer the code agent.")
    ] = True,
) -> None:
    """Do a task on the desktop, step by step, and report the result."""
    from agent_s.agent import Agent
    from agent_s.config import AgentConfig, GroundingConfig, ModelConfig, read_secrets
    from agent_s.result import CommandCheck, RunStatus

    out, err = Console(), Console(stderr=True)
    try:
        model_config = ModelConfig.from_env(
            provider=provider,
            model=model,
            base_url=base_url,
            api_key=options.api_key(api_key, api_key_file),
        )
        grounding = GroundingConfig.from_env(mode=ground, url=ground_url, model=ground_model)
        safety_config, code_config = safety_and_code(
            safety, code_sandbox, code_timeout, code_steps, code_agent
        )
        settings = AgentConfig.from_env(
            max_steps=max_steps,
            max_cost_usd=max_cost,
            dry_run=dry_run or None,
            reflection=reflection,
            record_dir=record,
            safety=safety_config,
            code=code_config,
            a11y_snapshot=a11y_snapshot,
            secrets=read_secrets(),
        )
        if settings.record_dir is None:
            settings = dataclasses.replace(settings, record_dir=_DEFAULT_RECORD.expanduser())
        argv = tuple(shlex.split(check)) if check is not None else None
        if argv == ():
            raise typer.BadParameter("--check needs a command")
        approver = _approver(err, settings.safety.mode)
        agent = Agent(  # before the desktop: a missing key or bad budget exits 2 untouched
            model_config,
            settings=settings,
            grounding=grounding,
            on_step=lambda report: _step_line(err, report),
            approver=approver,
        )
    except (AgentSError, ValueError) as error:
        err.print(f"[red]error:[/] {escape(str(error))}", highlight=False)
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
        err.print(f"[red]error:[/] {escape(str(error))}", highlight=False)
        raise typer.Exit(2) from error
    except KeyboardInterrupt as error:  # between runs, or while the desktop started
        raise typer.Exit(130) from error
    raise typer.Exit(code)
