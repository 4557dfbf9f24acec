"""``agent-s run "TASK"``: do a task on the desktop and say how it went.

A live line per step goes to stderr (the action, where it clicked and which grounder found it,
tokens and cost so far), as do prompts, approvals and errors; stdout holds only each run's
result: a few lines (status and reason, answer, check, steps/tokens/cost/time, trajectory), or
with ``--json`` one JSON object on one line per run (JSON Lines). Without a task it asks for
one on stderr, and again after each run, until an empty line or end of input (quitting before
any task says "no task given" and exits 0; Ctrl-C at the prompt exits 130). Every run records
a trajectory folder (``--record DIR``; default ``$AGENT_S_RECORD_DIR`` or
``~/.local/share/agent-s/runs``). Memory (``agent_s.memory``) is on unless ``--no-memory``
(or ``[memory] enabled = false``, ``AGENT_S_MEMORY=off``): the prompts show relevant entries of
earlier runs, and each run's summary, lessons and (when ``--check`` passed) skills are stored
in ``$AGENT_S_MEMORY_DB`` or ``$XDG_DATA_HOME/agent-s/memory.sqlite3``; a dry run uses none.
A task that is a verified workflow's task with other values (else a verified skill's: the
actions of a run whose check passed) replays it first and asks the model only from where it
diverges (``--reuse auto``, the default: ``agent_s.replay.reuse``; ``--reuse workflows`` only
workflows); ``--check ... --save-workflow NAME`` keeps a run whose check passed as a workflow.

Safety (``--safety``, default ``confirm``): actions the mode holds are shown with the exact text
or code and a marked screen crop, and asked about (y / n / always for this run) when stdin is a
terminal; when it is not, nobody can approve and those actions are refused (the model is told).
Every setting (model, grounding, limits, ``[safety]`` rules, ``[code_agent]``, ``[secrets]``,
``[profiles."MODEL"]`` prices) may also come from the configuration file (``$AGENT_S_CONFIG`` or
``~/.config/agent-s/config.toml``) or an ``AGENT_S_*`` variable: ``agent_s.settings.read``; flags
win
over variables over the file over this command's defaults (``RUN_DEFAULTS``).

Exit codes: 0 succeeded, 1 failed / infeasible / error, 2 usage or configuration error (nothing
has touched the desktop then), 3 a limit was reached (steps, cost, time), 4 needs input (the
agent asked a question, ``agent.ask_user``, and nobody answered: it is printed as
``question:``), 130 interrupted. When stdin is a terminal the question is asked there.
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
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from agent_s.cli import options, output
from agent_s.cli.grouped import grouped, settings_flags
from agent_s.errors import AgentSError

if TYPE_CHECKING:
    from agent_s.record.result import RunResult
    from agent_s.record.step import Step
    from agent_s.settings.read import Settings

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


def _safe(text: str) -> str:
    """Text from the model or the screen for a rich console: no markup, nothing a terminal
    would act on (escape sequences, carriage returns, bidi overrides)."""
    return escape(output.printable(text))


def _step_line(err: Console, step: Step) -> None:
    from agent_s.loop.context import describe_outcome

    where = "; ".join(
        f"({g.point[0]}, {g.point[1]}) via {g.grounder}" if g.point else f"not found ({g.grounder})"
        for g in step.grounding
    )
    usage = step.usage
    subtask = f"[magenta]{_safe(step.subtask)}[/] " if step.subtask is not None else ""
    line = f"[bold]{step.step:>3}[/] {subtask}{_safe(step.action_text[:100])}"
    if step.chosen_by == "replay":  # a stored workflow's step (agent_s.replay.reuse): no call
        line += "  [cyan]replayed[/]"
    if where:
        line += f"  [cyan]{_safe(where)}[/]"
    if step.outcome not in ("ok", "terminal"):
        line += f"  [yellow]{_safe(describe_outcome(step, 120))}[/]"
    line += f"  [dim]{usage.total_tokens} tok ${usage.cost_usd:.4f}[/]"
    err.print(line, highlight=False, soft_wrap=True)


def _plan_line(err: Console, kind: str, data: Mapping[str, Any]) -> None:
    """One line per plan, check, strategy switch and replan of a planned run."""
    if kind in ("plan", "replan"):
        if not data.get("accepted"):
            text = f"{kind} refused: {data.get('problem', '')}"
        else:
            plan = data["plan"]
            ids = ", ".join(s["id"] for s in plan["subtasks"])
            text = f"{kind}: {ids}" if plan["feasible"] else f"infeasible: {plan['reason']}"
    elif kind == "check":
        verdict = "passed" if data["passed"] else "failed"
        text = f"check {data['subtask']} {verdict} ({data['by']}): {data['detail']}"
    elif kind == "switch":
        text = f"switch {data['subtask']} to the {data['to']} worker"
    else:
        text = kind
    err.print(f"    [magenta]{_safe(text[:300])}[/]", highlight=False, soft_wrap=True)


@contextlib.contextmanager
def _desktop(
    virtual: bool, err: Console, monitors: str | None = None, desktop: str | None = None
) -> Iterator[tuple[Any, dict[str, str] | None]]:
    """(backend, environment for the check command): a fresh virtual desktop (with
    ``monitors``, a layout such as ``1280x800,1024x768+1280+300``; ``desktop``: which one,
    ``agent_s.desktop.choose.DESKTOPS``), or the session's own."""
    from agent_s.desktop.choose import desktop_backend, open_backend, virtual_kind

    if not virtual:
        with open_backend() as backend:  # X11, or sway on Wayland (agent_s.desktop.choose)
            yield backend, None
        return
    from agent_s.desktop.virtual import VirtualDesktop

    kind = virtual_kind(os.environ, desktop)  # --desktop, else AGENT_S_BACKEND, else Xvfb
    with VirtualDesktop(home="temp", monitors=monitors, kind=kind) as desk:
        layout = ", ".join(f"{m.width}x{m.height}+{m.x}+{m.y}" for m in desk.monitors)
        size = layout or f"{desk.width}x{desk.height}"
        err.print(f"[dim]virtual desktop {desk.display} ({size}), HOME={desk.home}[/]")
        # AT-SPI (the accessibility grounder) finds the session bus through os.environ only
        with desk.exported(), desktop_backend(desk) as backend:
            yield backend, dict(desk.env)


def _both(first: Any, second: Any) -> Any:
    """A step (or plan) callback that calls both (the terminal's line, then the live view's)."""

    def both(*args: Any) -> None:
        if first is not None:
            first(*args)
        second(*args)

    return both


def _warn(err: Console, line: str) -> None:
    err.print(f"[yellow]warning:[/] {_safe(line)}", highlight=False, soft_wrap=True)


def _note(err: Console, line: str) -> None:
    err.print(f"[dim]{_safe(line)}[/]", highlight=False, soft_wrap=True)


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


TASK_ECHO = 300  # characters of the task shown on its line; the model gets it whole
LONG_TASK = 4_000  # a task longer than this is said to cost that much in every request


def _shown_task(text: str) -> str:
    """The task for its terminal line: whole if short, else its start and its length."""
    if len(text) <= TASK_ECHO:
        return text
    return f"{text[:TASK_ECHO]}... ({len(text):,} characters in all)"


def _long_task_note(text: str) -> str:
    tokens = len(text) // 4  # about four characters a token in English
    return (
        f"the task is {len(text):,} characters long: it goes whole into every request (about "
        f"{tokens:,} tokens a step); --max-cost and AGENT_S_MAX_TOKENS bound what a run spends"
    )


def _unwritable_places(places: Sequence[tuple[Path, str]]) -> str | None:
    """One error naming every folder of ``places`` (folder, what it holds and how to move it)
    that cannot be made or written, when several cannot: an unwritable HOME takes one fix,
    not three met one after another."""
    bad = []
    for folder, what in places:
        folder = folder.expanduser()
        try:
            folder.mkdir(parents=True, exist_ok=True)
            usable = folder.is_dir() and os.access(folder, os.W_OK | os.X_OK)
        except OSError:
            usable = False
        if not usable:
            bad.append(f"{folder} ({what})")
    if len(bad) < 2:  # none, or one: its own check (below, or where it is opened) says why
        return None
    home = Path.home()
    under_home = "" if os.access(home, os.W_OK) else f"HOME ({home}) is not writable: "
    return (
        f"{under_home}cannot write {', '.join(bad)}; nothing was started. Make HOME writable, "
        "or set each to a writable place"
    )


def _check_argv(check: str | None) -> tuple[str, ...] | None:
    """``--check``'s command, split as a shell would (no shell runs it)."""
    if check is None:
        return None
    try:
        argv = tuple(shlex.split(check))
    except ValueError as error:  # an unbalanced quote
        raise ValueError(
            f"--check {check}: {str(error).lower()}; quote the command as in a shell"
        ) from None
    if not argv:
        raise ValueError('--check needs a command, e.g. --check "test -f ~/out.txt"')
    return argv


def _tasks(task: str | None, err: Console) -> Iterator[str]:
    """``task``, or tasks asked for on stderr until an empty line or end of input (Ctrl-D).
    Ctrl-C at the prompt raises KeyboardInterrupt (exit 130)."""
    if task is not None:
        yield task
        return
    given = 0
    while True:
        asked: str | None
        try:
            asked = output.ask_line(err, "Task (empty line to quit): ")
        except EOFError:
            err.print()  # end the prompt's line
            asked = ""
        except UnicodeDecodeError:  # stdin read as UTF-8 got other bytes
            asked = None
        if asked is None or options.not_utf8(asked) is not None:  # ask again, nothing done
            message = f"that task has bytes that are not UTF-8, nothing done; {options.UTF8_FIX}"
            err.print(message, markup=False, highlight=False, soft_wrap=True)
            continue
        if not asked.strip():
            if not given:
                err.print(
                    "no task given, nothing done: type one at the prompt, or give it on the "
                    'command line: agent-s run "TASK"',
                    markup=False,
                    highlight=False,
                    soft_wrap=True,
                )
            return
        given += 1
        yield asked


def _questioner(err: Console) -> Any:
    """The model's ``ask_user`` questions, asked on the terminal when stdin is one; otherwise
    none (a question then ends the run as ``needs_input``, exit code 4)."""
    if not sys.stdin.isatty():
        return None

    def ask(question: str) -> str | None:
        err.print(f"[bold]the agent asks:[/] {_safe(question)}", highlight=False, soft_wrap=True)
        try:
            return output.ask_line(err, "Your answer (empty line: no answer, the run stops): ")
        except EOFError:
            err.print()
            return None

    return ask


def _print_result(out: Console, result: Any, as_json: bool) -> None:
    if as_json:  # JSON Lines: one object per run, on one line, never coloured
        out.file.write(json.dumps(result.to_json()) + "\n")
        out.file.flush()
        return
    status = result.status.value
    style = _STYLES.get(status, "yellow")
    out.print(f"[{style}]{status}[/]: {_safe(result.reason)}", highlight=False, soft_wrap=True)
    if result.answer:
        out.print(f"answer: {_safe(result.answer)}", highlight=False, soft_wrap=True)
    if result.question:
        out.print(f"question: {_safe(result.question)}", highlight=False, soft_wrap=True)
    if result.postcondition is not None:
        check = result.postcondition
        mark = "passed" if check.passed else "failed"
        detail = f"{_safe(check.description)} ({_safe(check.detail)})"
        out.print(f"check {mark}: {detail}", highlight=False, soft_wrap=True)
    elif result.succeeded:  # the model's word only: say so, and how to have it checked
        out.print(
            'not verified: the model said done; add --check "COMMAND" to check the result',
            highlight=False,
            soft_wrap=True,
        )
    usage = result.usage
    out.print(
        f"{result.steps} steps, {result.model_calls} model calls, {usage.total_tokens} tokens, "
        f"${usage.cost_usd:.4f}, {result.timings.total:.1f} s",
        highlight=False,
        soft_wrap=True,
    )
    if result.trajectory_dir:
        out.print(f"trajectory: {result.trajectory_dir}", highlight=False, soft_wrap=True)


def _reuse_line(err: Console, line: str) -> None:
    err.print(f"[cyan]reuse:[/] {_safe(line)}", highlight=False, soft_wrap=True)


def _check_save_workflow(name: str | None, checked: bool, memory: bool) -> None:
    """What ``--save-workflow NAME`` needs that no memory file tells (ValueError, before any
    file or folder is made): a good name, a ``--check`` (``checked``), memory on."""
    if name is None:
        return
    from agent_s.memory.store import check_workflow_name

    check_workflow_name(name)
    if not checked:
        raise ValueError(
            f'--save-workflow {name} keeps a run whose check passed: add --check "COMMAND"'
        )
    if not memory:
        raise ValueError(
            f"--save-workflow {name} keeps the workflow in the memory file: leave out "
            "--no-memory and --dry-run"
        )


def _workflow_saver(
    out: Console, err: Console, name: str | None, check: Sequence[str] | None, store: Any
) -> Callable[[RunResult], None] | None:
    """``--save-workflow NAME``: what keeps a run whose check passed as the verified workflow
    ``NAME`` (ValueError, before anything runs, when it cannot: see ``_check_save_workflow``,
    or the name is taken)."""
    if name is None:
        return None
    from agent_s.replay.workflow import Workflow

    _check_save_workflow(name, bool(check), store is not None)
    if name in store.workflow_names():
        raise ValueError(
            f"a workflow named {name!r} exists already: choose another name, or forget it "
            f"first (agent-s workflow forget {name})"
        )

    def save(result: RunResult) -> None:
        if not result.verified or result.trajectory_dir is None:
            _warn(err, f"not saved as workflow {name}: the run's check did not pass")
            return
        try:
            flow = Workflow.from_run(_trajectory(result.trajectory_dir), name, verified=True)
            flow.save(store)
        except (ValueError, OSError) as error:
            _warn(err, f"not saved as workflow {name}: {error}")
            return
        shown = " ".join(f"--set {k}={v}" for k, v in flow.parameters.items())
        line = f"saved workflow {name}: {len(flow.script.steps)} steps, verified {shown}"
        err.print(_safe(line.rstrip()), highlight=False, soft_wrap=True)

    return save


def _trajectory(folder: Path) -> Path:
    """A run's trajectory folder: a best-of run's picked attempt keeps it in ``trajectory``."""
    inner = Path(folder) / "trajectory"
    return inner if (inner / "trajectory.jsonl").is_file() else Path(folder)


def _memory_problems(err: Console, agent: Any) -> None:
    """What went wrong with memory in the last run (it never ends a run), once."""
    memory = agent.memory
    if memory is None:
        return
    for problem in dict.fromkeys(memory.problems):
        err.print(f"[yellow]memory:[/] {_safe(problem)}", highlight=False, soft_wrap=True)
    memory.problems.clear()


def run_settings(flags: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> Settings:
    """``run``'s settings: its defaults, the configuration file, the ``AGENT_S_*`` variables,
    then ``flags`` (``{"--model": "gpt-4o", ...}``; None: not given)."""
    from agent_s.settings.read import flag_values, load_settings

    return load_settings(flag_values(flags), environ=environ, defaults=RUN_DEFAULTS)


def _approver(err: Console) -> Any:
    """The terminal approver when stdin is a terminal; otherwise none (``_nobody_approves``)."""
    if sys.stdin.isatty():
        from agent_s.cli.approve import CliApprover

        return CliApprover(err)
    return None


def _nobody_approves(err: Console, mode: str) -> None:
    """Say what follows from no approver in a mode that asks: said once the run can start, so
    that a configuration error (a missing key) is the only line when it cannot."""
    if mode in ("confirm", "confirm-all"):
        err.print(
            f"safety mode {mode}: stdin is not a terminal, so nobody can approve; actions that "
            "need approval will be refused. To let them run: --safety auto (or "
            "AGENT_S_SAFETY=auto), or allow them in the config file: [safety] allow_apps, "
            "allow_paths, [[safety.rules]] with effect = 'allow'",
            style="yellow",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )


@grouped
def run(
    task: Annotated[
        str | None, typer.Argument(metavar="TASK", help="The task; omit it to be asked.")
    ] = None,
    *,
    models: options.ModelFlags,
    grounds: options.GroundFlags,
    marks: options.Marks = None,
    limits: options.LimitFlags,
    record: Annotated[
        Path | None,
        typer.Option(
            help="Folder for trajectory folders (default ~/.local/share/agent-s/runs; env "
            "AGENT_S_RECORD_DIR)."
        ),
    ] = None,
    as_json: options.AsJson = False,
    virtual: Annotated[
        bool,
        typer.Option("--virtual", help="Run inside a fresh virtual desktop."),
    ] = False,
    virtual_monitors: options.VirtualMonitors = None,
    desktop: options.VirtualDesktopName = None,
    view: Annotated[
        bool,
        typer.Option(
            "--view",
            help="With --virtual: serve a page on 127.0.0.1 showing the desktop live, the steps, "
            "and Pause, Take over, Hand back and Stop (its URL goes to stderr).",
        ),
    ] = False,
    pause_on_input: Annotated[
        bool | None,
        typer.Option(
            "--pause-on-input/--no-pause-on-input",
            help="On your own desktop: pause when you move the mouse or type, and say how to "
            "resume (default on; a --virtual desktop is paused from --view).",
        ),
    ] = None,
    monitor: options.Monitor = None,
    planning: options.PlanFlags,
    memory: options.Memory = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Predict and ground; draw the plan; execute nothing.",
        ),
    ] = False,
    check: options.Check = None,
    reflection: Annotated[
        bool | None,
        typer.Option(
            "--reflection/--no-reflection",
            help="A reviewer call per step (default off; env AGENT_S_REFLECTION).",
        ),
    ] = None,
    a11y_snapshot: Annotated[
        bool | None,
        typer.Option(
            "--a11y-snapshot/--no-a11y-snapshot",
            help="List the active window's named elements in each request (default off; env "
            "AGENT_S_A11Y_SNAPSHOT).",
        ),
    ] = None,
    max_actions_per_reply: options.MaxActionsPerReply = None,
    safety: options.Safety = None,
    code_sandbox: Annotated[
        str | None,
        typer.Option(
            help="auto | bwrap | none: how code-agent code and plan checks run (default auto: "
            "bubblewrap where it works; env AGENT_S_CODE_SANDBOX)."
        ),
    ] = None,
    code_timeout: Annotated[
        float | None,
        typer.Option(
            help="Seconds each code-agent block may run (default 60; env AGENT_S_CODE_TIMEOUT)."
        ),
    ] = None,
    code_steps: Annotated[
        int | None,
        typer.Option(
            help="Turns the code agent has per call (default 20; env AGENT_S_CODE_STEPS)."
        ),
    ] = None,
    code_agent: options.CodeAgent = None,
    best_of: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="With --virtual: N attempts, each on its own desktop and HOME; a judge picks "
            "one and its files are kept (agent_s.bestofn).",
        ),
    ] = None,
    workers: Annotated[
        int | None, typer.Option(min=1, help="With --best-of: attempts at once (default all).")
    ] = None,
    judge: Annotated[
        str | None,
        typer.Option(help="With --best-of: comparative (default) | tournament."),
    ] = None,
    reuse: Annotated[
        str | None,
        typer.Option(
            help="auto | workflows | off: replay a stored, verified workflow the task matches "
            "(its task with other values), else the verified skill of a run whose check passed, "
            "and ask the model only where it diverges; workflows: only workflows saved by name "
            "(default auto).",
        ),
    ] = None,
    save_workflow: Annotated[
        str | None,
        typer.Option(
            metavar="NAME",
            help="With --check: keep the run (with --best-of, the picked attempt) as the "
            "verified workflow NAME when its check passes, for later tasks to reuse.",
        ),
    ] = None,
) -> None:
    """Do a task on the desktop, step by step, and report the result."""
    from agent_s.loop.agent import Agent
    from agent_s.loop.control import RunControl
    from agent_s.record.result import CommandCheck, RunStatus
    from agent_s.view.session import terminal_indicator, terminal_waiter, watching

    out, err = output.console(), output.console(stderr=True)
    try:
        resolved = run_settings(
            settings_flags(
                models,
                grounds,
                limits,
                planning,
                marks=marks,
                record=record,
                reflection=reflection,
                a11y_snapshot=a11y_snapshot,
                max_actions_per_reply=max_actions_per_reply,
                monitor=monitor,
                safety=safety,
                code_sandbox=code_sandbox,
                code_timeout=code_timeout,
                code_steps=code_steps,
                code_agent=code_agent,
            )
        )
        if memory is not None:  # --memory/--no-memory: run's own flag, over [memory] enabled
            switched = resolved.memory.model_copy(update={"enabled": memory})
            resolved = resolved.model_copy(update={"memory": switched})
        model_config = resolved.build_model(models.key())
        grounding = resolved.build_grounding()
        if resolved.code_agent.enabled:  # auto: bubblewrap where it works, else said once
            from agent_s.coding.containment import settle_settings

            resolved = settle_settings(resolved, lambda line: _warn(err, line))
        settings = resolved.build_agent_config(dry_run=dry_run)
        if task is not None and not task.strip():
            raise ValueError('the task is empty: give one, e.g. agent-s run "open the calculator"')
        if virtual_monitors is not None:
            from agent_s.desktop.virtual import parse_monitors

            if not virtual:
                raise ValueError("--virtual-monitors sets the monitors of a --virtual desktop")
            parse_monitors(virtual_monitors)  # a bad layout exits 2 before anything starts
        options.check_desktop(virtual, desktop)  # exits 2 before anything starts
        from agent_s.replay.reuse import check_reuse

        check_reuse(reuse or "auto")  # before the memory file is opened (made, the first time)
        _check_save_workflow(save_workflow, bool(check), resolved.memory.enabled and not dry_run)
        if view and not virtual:
            raise ValueError("--view shows a --virtual desktop: add --virtual")
        if pause_on_input and virtual:
            raise ValueError(
                "--pause-on-input watches your own desktop; pause a --virtual one with --view"
            )
        guard = not virtual and not dry_run and pause_on_input is not False
        control = RunControl(waiter=terminal_waiter(sys.stdin, sys.stderr) if guard else None)
        if guard:
            control.subscribe(terminal_indicator(sys.stderr))
        from agent_s.lifecycle import state_dir
        from agent_s.memory import default_path as default_memory_path

        places = [(state_dir(), "what running agents own: AGENT_S_STATE_DIR")]
        if settings.record_dir is not None:
            places.append((Path(settings.record_dir), "trajectories: --record, AGENT_S_RECORD_DIR"))
        if resolved.memory.enabled and not dry_run:
            db = resolved.memory.path or default_memory_path()
            places.append((Path(db).expanduser().parent, "memory: AGENT_S_MEMORY_DB, --no-memory"))
        problem = _unwritable_places(places)
        if problem is not None:
            raise ValueError(problem)
        if settings.record_dir is not None:
            _writable_folder(Path(settings.record_dir))
        argv = _check_argv(check)
        approver = _approver(err)
        from agent_s.memory import open_configured
        from agent_s.replay.reuse import reuse_of

        store = open_configured(resolved.memory) if not dry_run else None
        saver = _workflow_saver(out, err, save_workflow, argv, store)
        reused = reuse_of(reuse or "auto", store, say=lambda line: _reuse_line(err, line))
        agent = Agent(  # before the desktop: a missing key or bad budget exits 2 untouched
            model_config,
            settings=settings,
            grounding=grounding,
            profiles=resolved.build_profiles(),
            on_step=lambda report: _step_line(err, report),
            approver=approver,
            ask_user=_questioner(err),
            on_plan=lambda kind, data: _plan_line(err, kind, data),
            memory=store,
            on_retry=lambda line: err.print(
                f"[yellow]{_safe(line)}[/]", highlight=False, soft_wrap=True
            ),
            control=control,
            reuse=reused if best_of is None else None,
        )
    except (AgentSError, ValueError) as error:
        err.print(f"[red]error:[/] {_safe(str(error))}", highlight=False, soft_wrap=True)
        raise typer.Exit(2) from error
    if approver is None:
        _nobody_approves(err, settings.safety.mode)
    if best_of is not None or workers is not None or judge is not None:
        from agent_s.cli.bestof import run_command

        raise typer.Exit(
            run_command(
                out,
                err,
                task,
                resolved,
                models.key(),
                argv,
                n=best_of or 0,
                workers=workers,
                judge=judge,
                virtual=virtual,
                dry_run=dry_run,
                monitors=virtual_monitors,
                desktop=desktop,
                as_json=as_json,
                print_result=_print_result,
                view=view,
                save_workflow=saver,
            )
        )
    code = 0
    try:
        with (
            _desktop(virtual, err, virtual_monitors, desktop) as (backend, env),
            watching(
                control, env, view=view, guard=guard, say=lambda line: _note(err, line)
            ) as live,
        ):
            agent.backend = backend
            if live is not None:
                agent.on_step = _both(agent.on_step, live.on_step)
                agent.on_plan = _both(agent.on_plan, live.on_plan)
            for text in _tasks(task, err):
                err.print(
                    f"[bold]task:[/] {_safe(_shown_task(text))}  [dim]"
                    f"({_safe(model_config.model)}, grounding {grounding.mode})[/]",
                    highlight=False,
                )
                if len(text) > LONG_TASK:
                    _note(err, _long_task_note(text))
                postcondition = CommandCheck(argv, env=env) if argv else None
                result = agent.run(text, postcondition=postcondition)
                if live is not None:
                    live.finished(result)
                if result.status is RunStatus.CANCELLED and sys.stderr.isatty():
                    err.print()  # off the line where the terminal echoed ^C
                _print_result(out, result, as_json)
                if saver is not None:
                    saver(result)
                _memory_problems(err, agent)
                code = result.exit_code
                if result.status is RunStatus.CANCELLED:
                    break
    except AgentSError as error:  # no display, no xdotool: set-up
        err.print(f"[red]error:[/] {_safe(str(error))}", highlight=False, soft_wrap=True)
        raise typer.Exit(2) from error
    except KeyboardInterrupt as error:  # at the prompt, or while the desktop started
        err.print("\ninterrupted", style="yellow", highlight=False)
        raise typer.Exit(130) from error
    raise typer.Exit(code)
