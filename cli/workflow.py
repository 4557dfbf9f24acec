"""``agent-s workflow``: successful runs kept by name and replayed with new values.

    agent-s workflow save RUN_DIR NAME       # the run's task values become parameters
    agent-s workflow list [--json]
    agent-s workflow show NAME [--json]
    agent-s workflow run NAME --set file_1=/tmp/new.txt [--virtual] [--heal]
    agent-s workflow forget NAME

Workflows live in the memory store (``--db``, else ``$AGENT_S_MEMORY_DB``, else the user's data
folder) with their provenance: the run, the date, the model, whether a check verified it.
``run`` replays as ``agent-s replay`` does (the same options). Exit codes: 0 done, 1 no such
workflow or the replay diverged / failed, 2 usage or a file that cannot be used.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from agent_s.cli import options, output
from agent_s.cli.grouped import grouped
from agent_s.cli.helptext import Command, command_group
from agent_s.cli.replay import ReplayFlags, run_script

if TYPE_CHECKING:
    from agent_s.desktop.base import DesktopBackend
    from agent_s.memory import MemoryStore
    from agent_s.replay.player import Script
    from agent_s.replay.workflow import Workflow

workflow_app = command_group(
    "Successful runs kept by name and replayed with new values: save, list, show, run."
)

_Db = Annotated[
    Path | None,
    typer.Option(
        "--db",
        help="The memory file (default: agent-s/memory.sqlite3 in the user's data folder).",
    ),
]
_Name = Annotated[str, typer.Argument(metavar="NAME", help="The workflow's name.")]


def _safe(text: str) -> str:
    return escape(output.printable(text))


def _fail(message: str, code: int = 2) -> typer.Exit:
    output.console(stderr=True).print(
        f"[red]error:[/] {_safe(message)}", highlight=False, soft_wrap=True
    )
    return typer.Exit(code)


def _open(db: Path | None) -> MemoryStore:
    from agent_s.memory import MemoryStore, MemoryStoreError

    try:
        return MemoryStore(db)
    except MemoryStoreError as error:
        raise _fail(str(error)) from None


def _load(name: str, db: Path | None) -> Workflow:
    from agent_s.memory import MemoryStoreError
    from agent_s.replay.workflow import Workflow

    with _open(db) as store:
        try:
            return Workflow.load(name, store)
        except KeyError as error:
            raise _fail(str(error.args[0]), 1) from None
        except MemoryStoreError as error:
            raise _fail(str(error)) from None


@workflow_app.command("save", cls=Command)
def save(
    run_dir: Annotated[
        Path, typer.Argument(metavar="RUN_DIR", help="A successful run's trajectory folder.")
    ],
    name: _Name,
    replace: Annotated[
        bool, typer.Option("--replace", help="Replace a workflow of the same name.")
    ] = False,
    db: _Db = None,
) -> None:
    """Keep a successful run as a named workflow; values from its task become parameters."""
    from agent_s.replay.workflow import Workflow

    try:
        flow = Workflow.from_run(run_dir, name)
    except (OSError, ValueError) as error:
        raise _fail(str(error)) from None
    with _open(db) as store:
        try:
            flow.save(store, replace=replace)
        except ValueError as error:
            raise _fail(str(error)) from None
    out = output.console()
    out.print(f"saved workflow {_safe(name)}: {len(flow.script.steps)} steps", highlight=False)
    _print_parameters(flow)


def _print_parameters(flow: Workflow) -> None:
    out = output.console()
    if not flow.parameters:
        out.print("no parameters (nothing from the task was typed or opened)", highlight=False)
        return
    for key, value in flow.parameters.items():
        out.print(f"  --set {key}={_safe(value)}", highlight=False, soft_wrap=True)


@workflow_app.command("list", cls=Command)
def list_workflows(db: _Db = None, as_json: options.AsJson = False) -> None:
    """The stored workflows: name, steps, parameters, verified or not, task."""
    from agent_s.memory import MemoryStoreError
    from agent_s.replay.workflow import Workflow, describe

    with _open(db) as store:
        try:
            flows = Workflow.stored(store)
        except MemoryStoreError as error:
            raise _fail(str(error)) from None
    out = output.console()
    if as_json:
        out.file.write(json.dumps([describe(f) for f in flows]) + "\n")
        return
    if not flows:
        out.print("no workflows yet: agent-s workflow save RUN_DIR NAME", highlight=False)
        return
    for flow in flows:
        verified = "verified" if flow.provenance.verified else "unverified"
        params = ", ".join(flow.parameters) or "no parameters"
        out.print(
            f"{_safe(flow.name)}  {len(flow.script.steps)} steps  {_safe(params)}  {verified}  "
            f"{_safe(flow.task[:80])}",
            highlight=False,
            soft_wrap=True,
        )


@workflow_app.command("show", cls=Command)
def show(name: _Name, db: _Db = None, as_json: options.AsJson = False) -> None:
    """One workflow: its task, parameters, steps and provenance."""
    from agent_s.replay.workflow import describe

    flow = _load(name, db)
    data = describe(flow)
    out = output.console()
    if as_json:
        out.file.write(json.dumps(data) + "\n")
        return
    for key in ("name", "task", "run", "source", "created", "model", "verified"):
        out.print(f"{key}: {_safe(str(data[key]))}", highlight=False, soft_wrap=True)
    out.print("parameters:", highlight=False)
    _print_parameters(flow)
    out.print("steps:", highlight=False)
    for number, text in enumerate(data["steps"], 1):
        out.print(f"  {number}. {_safe(text)}", highlight=False, soft_wrap=True)


@workflow_app.command("forget", cls=Command)
def forget(name: _Name, db: _Db = None) -> None:
    """Delete a stored workflow."""
    with _open(db) as store:
        found = store.forget_workflow(name)
    if not found:
        raise _fail(f"no workflow named {name!r}: see agent-s workflow list", 1)
    output.console().print(f"forgot workflow {_safe(name)}", highlight=False)


@workflow_app.command("run", cls=Command)
@grouped
def run(
    name: _Name,
    set_values: Annotated[
        list[str] | None,
        typer.Option(
            "--set", metavar="KEY=VALUE", help="A parameter's new value (repeat for each)."
        ),
    ] = None,
    db: _Db = None,
    *,
    given: ReplayFlags,
) -> None:
    """Replay a workflow with new values for its parameters (--set KEY=VALUE); a value
    starting with ~ is a path in the desktop's HOME (with --virtual, the virtual desktop's)."""
    from agent_s.replay.workflow import parse_values

    flow = _load(name, db)
    try:
        values = parse_values(set_values or [])
        flow.with_values(values)  # names and values checked before the desktop starts
    except ValueError as error:
        known = ", ".join(f"{k} (recorded {v!r})" for k, v in flow.parameters.items())
        raise _fail(f"{error}; the parameters of {name!r}: {known or 'none'}") from None

    def script(backend: DesktopBackend) -> Script:
        from agent_s.desktop.base import desktop_home
        from agent_s.replay.workflow import refuse_user_home

        home = desktop_home(backend)
        if given.virtual:  # the shell made an unquoted ~ the user's HOME: not the desktop's
            refuse_user_home(values, home, Path.home())
        return flow.with_values(values, home=home)

    run_script(script, given)
