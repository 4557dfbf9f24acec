"""The ``agent-s`` command: a thin layer over the SDK.

Progress, prompts and diagnostics go to stderr, results to stdout; ``--json`` prints
machine-readable results; ``NO_COLOR`` turns off every escape code (``agent_s.cli.output``);
``--help`` is plain text, whole at any width (``agent_s.cli.helptext``). Exit codes: 0 ok, 1 a
check or task failed, 2 usage.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict
from typing import Annotated

import typer
from rich.markup import escape

from agent_s import __version__
from agent_s.cli import options, output
from agent_s.cli.bench import bench_app
from agent_s.cli.export import export
from agent_s.cli.ground import ground
from agent_s.cli.grouped import grouped, settings_flags
from agent_s.cli.helptext import Command, Group
from agent_s.cli.mcp import mcp
from agent_s.cli.memory import memory_app
from agent_s.cli.model import model_app
from agent_s.cli.practice import practice
from agent_s.cli.replay import replay
from agent_s.cli.report import report
from agent_s.cli.run import run
from agent_s.cli.workflow import workflow_app

app = typer.Typer(
    name="agent-s",
    help="A screenshot-driven desktop automation agent.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain help: see agent_s.cli.helptext
    cls=Group,
    context_settings={"help_option_names": ["-h", "--help"]},  # every command, as users expect
)

_MARKS = {"ok": "[green]  ok[/]", "warn": "[yellow]warn[/]", "fail": "[red]FAIL[/]"}


def _safe(text: str) -> str:
    """A model server's or the system's words for a rich console: no markup, no terminal codes."""
    return escape(output.printable(text))


def _version(value: bool) -> None:
    if value:
        output.console().print(f"agent-s {__version__}", highlight=False)
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_version,
            is_eager=True,
            help="Print the version.",
        ),
    ] = False,
) -> None:
    """A screenshot-driven desktop automation agent."""


@app.command(cls=Command)
@grouped
def doctor(
    virtual: Annotated[
        bool,
        typer.Option("--virtual", help="Check inside a fresh virtual desktop (Xvfb)."),
    ] = False,
    desktop: options.VirtualDesktopName = None,
    as_json: options.JsonReport = False,
    *,
    models: options.ModelFlags,
    grounds: options.GroundFlags,
    model_timeout: options.ModelTimeout = None,
    timeout: Annotated[
        float, typer.Option(min=0.1, help="Seconds each model check may take.")
    ] = 10.0,
) -> None:
    """Check that this machine can see and act on a desktop, and that each configured model
    answers with its key: one line per check. The models are those agent-s run would use, from
    the flags, the AGENT_S_* variables and the configuration file."""
    from agent_s.doctor import ModelOptions, provider_checks, run_checks
    from agent_s.errors import AgentSError
    from agent_s.settings.read import flag_values, load_settings

    environ = dict(os.environ)
    flags = settings_flags(models, grounds, model_timeout=model_timeout)
    try:
        settings = load_settings(flag_values(flags), environ=environ)
    except AgentSError as error:
        output.console(stderr=True).print(f"[red]error:[/] {escape(str(error))}", highlight=False)
        raise typer.Exit(2) from error
    found, grounding = settings.model, settings.grounding
    if model_timeout is not None:  # the flag wins over the variable the checks read
        environ["AGENT_S_MODEL_TIMEOUT"] = f"{model_timeout:g}"
    checked = ModelOptions(
        found.provider,
        found.name,
        found.base_url,
        models.key(),
        grounding.mode,
        grounding.url,
        grounding.model,
    )
    try:
        options.check_desktop(virtual, desktop)
    except ValueError as error:
        output.console(stderr=True).print(f"[red]error:[/] {escape(str(error))}")
        raise typer.Exit(2) from error
    report = run_checks(
        virtual=virtual,
        desktop=desktop,
        providers=lambda: provider_checks(checked, environ, timeout_s=timeout),
        sandbox=settings.code_agent.sandbox,
    )
    out = output.console()
    if as_json:
        payload = {"ok": report.ok, "display": report.display}
        payload["checks"] = [asdict(c) for c in report.checks]
        out.print_json(json.dumps(payload))
    else:
        for check in report.checks:
            line = f"{_MARKS[check.status]}  {check.name:<15} {_safe(check.detail)}"
            out.print(line, highlight=False, soft_wrap=True)
            if check.fix and check.status != "ok":
                out.print(f"{'':<21} fix: {_safe(check.fix)}", highlight=False, soft_wrap=True)
    raise typer.Exit(0 if report.ok else 1)


app.command("ground", cls=Command)(ground)
app.command("run", cls=Command)(run)
app.command("practice", cls=Command)(practice)
app.command("replay", cls=Command)(replay)
app.command("export", cls=Command)(export)
app.command("report", cls=Command)(report)
app.command("mcp", cls=Command)(mcp)
app.add_typer(bench_app, name="bench")
app.add_typer(memory_app, name="memory")
app.add_typer(model_app, name="model")
app.add_typer(workflow_app, name="workflow")


def main() -> None:
    undecodable = options.undecodable_inputs(sys.argv[1:], os.environ)
    if undecodable is not None:  # before anything starts: it would fail wherever it is written
        output.console(stderr=True).print(
            f"error: {undecodable}", markup=False, highlight=False, soft_wrap=True
        )
        raise SystemExit(2)
    if options.hide_api_key(sys.argv, os.environ):  # first: the key leaves the command line
        output.console(stderr=True).print(
            options.KEY_WARNING, markup=False, highlight=False, soft_wrap=True
        )
    from agent_s import lifecycle

    _sweep()
    with lifecycle.stop_signals_interrupt():  # SIGTERM, SIGHUP: like Ctrl-C (cancelled, 130)
        app()


def _sweep() -> None:
    """End what killed agent-s processes left: virtual desktops, keys held down."""
    from agent_s.desktop.sweep import Swept, sweep

    try:
        swept = sweep()
    except OSError as error:  # never a reason not to start
        swept = Swept()
        output.console(stderr=True).print(
            f"warning: clean-up after earlier runs: {error}", markup=False, highlight=False
        )
    if swept:
        output.console(stderr=True).print(
            f"[dim]cleaned up after an earlier run: {swept.describe()}[/]", highlight=False
        )
