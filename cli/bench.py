"""``agent-s bench``: check a suite against this machine, run it, report results.

    agent-s bench check ../shared/osworld            # what can run here, and why not the rest
    agent-s bench run smoke --policy reference --workers 2 --results results/
    agent-s bench report results/ [--json]

Progress goes to stderr, results to stdout. Exit codes: 0 done, 1 a task ended in error or a
task file could not be used (each is named; the other tasks still run and are scored; for
``report``: a task folder could not be read), 2 usage or configuration error (nothing was
started), 130 cancelled (Ctrl-C, SIGTERM, SIGHUP:
the running tasks are stopped and not marked done, so the same command resumes the run).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.measure import Measurement
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from agent_s.cli import options, output
from agent_s.cli.bench_cache import cache as cache_command
from agent_s.cli.grouped import grouped, settings_flags
from agent_s.cli.helptext import Command, command_group

if TYPE_CHECKING:
    from agent_s.bench.runner import Backend, MemoryMode
    from agent_s.bench.tasks import BadTaskFile
    from agent_s.bestofn.judge import JudgeMode
    from agent_s.settings.read import Settings

bench_app = command_group("Run OSWorld-format task suites and score them.")


_WIDEST = 100_000  # columns: a table's natural width is measured as if the page had no edge
_FileCache = Annotated[Path | None, typer.Option(help="Local copy of OSWorld's file cache.")]
_Suite = Annotated[
    str, typer.Argument(metavar="SUITE", help="A built-in suite (smoke), a folder or an index.")
]
_MaxCost = Annotated[float | None, typer.Option(help="Cost limit (USD) for the whole run.")]


def _screen(text: str) -> tuple[int, int]:
    try:
        width, height = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise typer.BadParameter(f"--screen takes WIDTHxHEIGHT, got {text!r}") from None
    return width, height


@bench_app.command(cls=Command)
def check(
    suite: _Suite,
    index: Annotated[str | None, typer.Option(help="Index file inside the folder.")] = None,
    file_cache: _FileCache = None,
    assume: Annotated[
        str | None,
        typer.Option(
            help="Count these needs as met, comma-separated: cache, internet, sudo, apps, "
            "vscode, google, gnome, or all (e.g. cache,internet: what would run with a full "
            "file cache and the internet)."
        ),
    ] = None,
    as_json: options.JsonReport = False,
) -> None:
    """What each task needs and which of it this machine has: counts per need and per domain,
    and for each task that cannot run, every reason why."""
    from agent_s.bench.check import CATEGORIES, check_tasks, parse_assume
    from agent_s.bench.tasks import TaskFormatError, load_suite

    out, err = output.console(), output.console(stderr=True)
    try:
        assumed = parse_assume(assume)
        loaded = load_suite(suite, index=index)
        good, bad = loaded.load()
        report = check_tasks(good, file_cache=file_cache, assume=assumed)
    except (OSError, TaskFormatError, ValueError) as error:
        err.print(f"[red]error:[/] {escape(str(error))}", highlight=False)
        raise typer.Exit(2) from error
    if as_json:
        out.print_json(
            json.dumps({**report.to_json(), "bad_task_files": [b.to_json() for b in bad]})
        )
        raise typer.Exit(1 if bad else 0)
    _print_bad(err, bad)
    where = "here" + (f" (assuming {', '.join(sorted(assumed))})" if assumed else "")
    title = f"{loaded.name}: {report.runnable} of {len(report.tasks)} tasks can run {where}"
    table = Table(title=title, box=box.SIMPLE, padding=(0, 1))
    for name in ("domain", "tasks", "runnable", *CATEGORIES):
        table.add_column(name, justify="left" if name == "domain" else "right", no_wrap=True)
    for domain, row in report.domains().items():
        blocked = row["blocked_by"]
        table.add_row(
            domain,
            str(row["total"]),
            str(row["runnable"]),
            *(str(blocked.get(c, 0)) for c in CATEGORIES),
        )
    _print_table(out, table)
    out.print(
        "[dim]columns after 'runnable': tasks blocked by each reason (a task can have several)[/]",
        soft_wrap=True,
    )
    needs = Table(title="needs", box=box.SIMPLE, padding=(0, 1))
    for name in ("need", "tasks", "blocked", "what"):
        needs.add_column(name, justify="right" if name in ("tasks", "blocked") else "left")
    for category, row in report.needs().items():
        needs.add_row(category, str(row["tasks"]), str(row["blocked"]), CATEGORIES[category])
    _print_table(out, needs)
    apps = report.details("app")
    if apps:
        text = ", ".join(
            f"{name} {row['tasks']}" + ("" if row["met"] else " (missing)")
            for name, row in apps.items()
        )
        out.print(f"apps (tasks): {escape(text)}", highlight=False, soft_wrap=True)
    out.print(
        f"blocked only by internet, VS Code or a Google account: {report.only_outside}",
        highlight=False,
    )
    for task, reasons in report.blocked():
        text = "; ".join(str(r) for r in reasons)
        out.print(f"{task.domain}/{task.id}: {escape(text)}", highlight=False, soft_wrap=True)
    raise typer.Exit(1 if bad else 0)


def _print_bad(err: Console, bad: Sequence[BadTaskFile]) -> None:
    """One line per task file that cannot be used: its path and what is wrong."""
    for item in bad:
        err.print(f"[red]bad task file:[/] {escape(str(item))}", highlight=False, soft_wrap=True)
    if bad:
        err.print(f"{len(bad)} task file(s) left out; the other tasks go on", highlight=False)


def _memory_ready(path: Path) -> None:
    """The memory file exists with the current schema; an unusable one is a usage error."""
    from agent_s.memory import MemoryStore, MemoryStoreError

    try:
        MemoryStore(path).close()
    except MemoryStoreError as error:
        raise ValueError(f"--memory-db: {error}") from None


@bench_app.command(cls=Command)
@grouped
def run(
    suite: _Suite,
    results: Annotated[Path, typer.Option(help="Results folder (OSWorld's layout).")] = Path(
        "results"
    ),
    workers: Annotated[int, typer.Option(min=1, help="Tasks at once, one desktop each.")] = 1,
    policy: Annotated[str, typer.Option(help="agent | reference | noop")] = "agent",
    index: Annotated[str | None, typer.Option(help="Index file inside the folder.")] = None,
    domain: Annotated[list[str] | None, typer.Option(help="Only these domains.")] = None,
    *,
    models: options.ModelFlags,
    grounds: options.GroundFlags,
    model_timeout: options.ModelTimeout = None,
    planning: options.PlanFlags,
    max_steps: Annotated[
        int | None, typer.Option(help="Step limit per task (env AGENT_S_MAX_STEPS).")
    ] = None,
    max_cost: _MaxCost = None,
    max_actions_per_reply: options.MaxActionsPerReply = None,
    file_cache: _FileCache = None,
    screen: Annotated[str, typer.Option(help="Virtual screen size.")] = "1280x800",
    backend: Annotated[
        str, typer.Option(help="local | ray: run tasks here, or spread them over a Ray cluster.")
    ] = "local",
    address: Annotated[
        str | None, typer.Option(help="Ray cluster address (default: RAY_ADDRESS or local).")
    ] = None,
    eval_timeout: Annotated[
        float, typer.Option(min=1, help="Seconds to score one task; longer: an error.")
    ] = 300.0,
    references: Annotated[
        Path | None,
        typer.Option(
            help="Reference solutions by task id (JSON) for --policy reference; default: the "
            "file shipped for OSWorld. A task file's own 'reference' is used when it has none."
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the records as JSON.")] = False,
    view: Annotated[
        str | None,
        typer.Option(
            metavar="TASK_ID",
            help="Serve a page on 127.0.0.1 showing this task's desktop live, its steps, and "
            "Pause, Take over, Hand back and Stop (--policy agent; the URL goes to stderr).",
        ),
    ] = None,
    best_of: Annotated[
        int,
        typer.Option(
            min=1,
            help="Attempts per task (--policy agent), each on its own desktop and scored; a "
            "judge picks one. The summary shows single, picked and oracle success.",
        ),
    ] = 1,
    judge: Annotated[
        str, typer.Option(help="With --best-of: comparative | tournament.")
    ] = "comparative",
    safety: Annotated[
        str | None,
        typer.Option(
            help="auto | confirm | confirm-all | deny-risky for model runs (default auto: "
            "nobody can approve inside the harness; env AGENT_S_SAFETY)."
        ),
    ] = None,
    code_sandbox: Annotated[
        str | None,
        typer.Option(
            help="auto | bwrap | none: how code-agent code runs in model runs (default auto: "
            "bubblewrap where it works; env AGENT_S_CODE_SANDBOX)."
        ),
    ] = None,
    code_agent: options.CodeAgent = None,
    memory: Annotated[
        str,
        typer.Option(
            metavar="off|frozen|fresh|learning",
            help="Memory across tasks (--policy agent): frozen reads --memory-db and writes "
            "nothing; fresh learns in a new store of the results folder; learning reads and "
            "learns in --memory-db. Skills come only from tasks the evaluator scored 1.0 "
            "(default off: runs stay reproducible).",
        ),
    ] = "off",
    memory_db: Annotated[
        Path | None,
        typer.Option(
            metavar="PATH",
            help="The memory file for --memory frozen or learning (default: AGENT_S_MEMORY_DB, "
            "else [memory] path, else the one agent-s run uses).",
        ),
    ] = None,
) -> None:
    """Run every task of SUITE, each on a fresh virtual desktop, and score it as OSWorld does."""
    from agent_s.bench.policies import POLICIES
    from agent_s.bench.report import outcome, summarize
    from agent_s.bench.runner import RunCancelled, RunOptions, run_suite
    from agent_s.bench.tasks import TaskFormatError, load_references, load_suite
    from agent_s.coding.runner import sandbox_problem
    from agent_s.settings.config import ConfigError

    out, err = output.console(), output.console(stderr=True)
    try:
        if policy not in POLICIES:
            raise typer.BadParameter(f"--policy must be one of {', '.join(POLICIES)}")
        width, height = _screen(screen)
        if memory_db is not None and memory not in ("frozen", "learning"):
            raise ValueError("--memory-db names the store of --memory frozen or learning")
        loaded = load_suite(suite, index=index)
        unknown = [name for name in domain or () if name not in loaded.index]
        if unknown:  # else the run would print an empty table and pass
            raise ValueError(
                f"--domain {', '.join(unknown)}: the suite {loaded.name} has no such domain; "
                f"its domains: {', '.join(loaded.index)}"
            )
        settings, api_key = None, models.api_key
        if policy == "agent":  # fail before any desktop starts: no model, no key
            problem = sandbox_problem()
            flags = settings_flags(
                models,
                grounds,
                planning,
                max_steps=max_steps,
                max_actions_per_reply=max_actions_per_reply,
                safety=safety,
                code_sandbox=code_sandbox,
                code_agent=code_agent,
                model_timeout=model_timeout,
            )
            settings = bench_settings(flags, problem)
            config = settings.build_model(models.key())
            settings.build_grounding()
            settings.secret_values()  # an unreadable secret file: a usage error here, not later
            _safety(err, settings, problem, sandbox_given=code_sandbox is not None)
            api_key = config.api_key
        options = RunOptions(
            suite=loaded,
            results=results,
            policy=policy,
            workers=workers,
            domains=tuple(domain or ()),
            settings=settings,
            api_key=api_key,
            max_cost_usd=max_cost,
            file_cache=file_cache,
            width=width,
            height=height,
            backend=cast("Backend", backend),  # RunOptions refuses any other name
            address=address,
            eval_timeout=eval_timeout,
            references=load_references(references),
            best_of=best_of,
            judge=cast("JudgeMode", judge),  # RunOptions refuses any other name
            memory=cast("MemoryMode", memory),  # RunOptions refuses any other name
            memory_db=memory_db.expanduser() if memory_db is not None else None,
        )
        if options.memory_db is not None:  # made (or found unusable) before any desktop starts
            _memory_ready(options.memory_db)
    except (OSError, TaskFormatError, ConfigError, ValueError) as error:
        err.print(f"[red]error:[/] {escape(str(error))}", highlight=False)
        raise typer.Exit(2) from error
    good, bad = loaded.load(options.domains)
    _print_bad(err, bad)
    from agent_s.view.bench import VIEW_TASK_VAR, announce

    os.environ.pop(VIEW_TASK_VAR, None)
    if view is not None:
        problem = _view_problem(view, [t.id for t in good], policy, backend, best_of)
        if problem:
            err.print(f"[red]error:[/] --view {escape(view)}: {escape(problem)}", highlight=False)
            raise typer.Exit(2)
        os.environ[VIEW_TASK_VAR] = view  # the workers inherit it: agent_s.view.bench
    tasks = len(good)
    state = {"done": 0, "running": 0, "score": 0.0, "scored": 0, "cost": 0.0, "resumed": 0}
    lock = threading.Lock()
    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TextColumn("{task.fields[status]}"),
        TimeElapsedColumn(),
        console=err,
    )
    bar = progress.add_task(f"{loaded.name} ({policy})", total=tasks, status="")

    def on_event(event: dict[str, Any]) -> None:
        with lock:
            if event["kind"] == "start":
                state["running"] += 1
                if event["task"] == view:
                    announce(
                        options.model_folder / event["domain"] / event["task"],
                        lambda url: progress.console.print(
                            f"live view of {escape(str(view))}: {url}", highlight=False
                        ),
                    )
            else:
                record = event["record"]
                state["done"] += 1
                if (
                    not record.get("resumed")
                    and record.get("status") != "skipped"
                    and "cost_so_far" in event
                ):
                    state["running"] -= 1
                    state["cost"] = event["cost_so_far"]
                if record.get("score") is not None:
                    state["scored"] += 1
                    state["score"] += float(record["score"])
                if record.get("resumed"):
                    state["resumed"] += 1
                else:
                    line = (
                        f"{record.get('domain')}/{record.get('task_id')}: {outcome(record)} "
                        f"score={record.get('score')}"
                    )
                    line = escape(output.printable(line))
                    progress.console.print(line, highlight=False, soft_wrap=True)
            mean = state["score"] / state["scored"] if state["scored"] else 0.0
            status = (
                f"running {state['running']}  score {state['score']:g}/{state['scored']} "
                f"({mean:.0%})  ${state['cost']:.4f}"
            )
            progress.update(bar, completed=state["done"], status=status)

    from agent_s.bench.distributed import RayUnavailable
    from agent_s.guards.files import UnsafeFolder

    try:
        with progress:
            records = run_suite(options, on_event)
    except (RayUnavailable, UnsafeFolder) as error:
        err.print(f"[red]error:[/] {escape(str(error))}", highlight=False)
        raise typer.Exit(2) from error
    except RunCancelled as stop:  # the running tasks were stopped; none is marked done
        from agent_s.lifecycle import signal_name

        if as_json:
            out.print_json(
                json.dumps(
                    {
                        "status": "cancelled",
                        "records": stop.records,
                        "summary": summarize(stop.records),
                    }
                )
            )
        else:
            out.print(
                f"cancelled by {signal_name(stop.signum)}: {len(stop.records)} of {tasks} "
                "tasks ended; run the same command again to resume",
                highlight=False,
            )
        raise typer.Exit(130) from stop
    summary = summarize(records)
    resumed = sum(1 for r in records if r.get("resumed"))
    if resumed:
        err.print(
            f"resumed: skipped {resumed} of {tasks} tasks already done in "
            f"{escape(str(options.model_folder))} (delete a task's folder to run it again)",
            highlight=False,
            soft_wrap=True,
        )
    if as_json:
        payload = {
            "records": records,
            "summary": summary,
            "resumed": resumed,
            "bad_task_files": [b.to_json() for b in bad],
        }
        out.print_json(json.dumps(payload))
    else:
        _print_summary(out, summary)
        out.print(f"results: {options.model_folder}", highlight=False, soft_wrap=True)
    raise typer.Exit(1 if summary["overall"]["errors"] or bad else 0)


def _view_problem(
    task: str, ids: Sequence[str], policy: str, backend: str, best_of: int
) -> str | None:
    """Why ``--view TASK`` cannot be served, or None."""
    if policy != "agent":
        return "the live view watches the agent: use --policy agent"
    if backend != "local":
        return "the live view is served from this machine: use --backend local"
    if best_of != 1:
        return "the live view watches one attempt: leave out --best-of"
    if task not in ids:
        return f"no such task in the suite (of {len(ids)}; e.g. {', '.join(ids[:3])})"
    return None


def bench_defaults(problem: str | None) -> dict[str, Any]:
    """What ``bench run`` does unless the file, a variable or a flag says otherwise: safety mode
    auto (nobody can approve inside the harness), any web host opened, and model-written code
    under bubblewrap where it works (``problem``: why it does not, from
    ``code_runner.sandbox_problem``)."""
    return {
        # any web host: the tasks browse, on a desktop thrown away (agent_s.safety.leaks)
        "safety": {"mode": "auto", "allow_hosts": ["*"]},
        "code_agent": {"sandbox": "bwrap" if problem is None else "none"},
    }


def bench_settings(
    flags: Mapping[str, Any], problem: str | None, environ: Mapping[str, str] | None = None
) -> Settings:
    """``bench run``'s settings: its defaults, the configuration file, the ``AGENT_S_*``
    variables, then ``flags`` (``{"--model": "gpt-4o", ...}``; None: not given). Every worker
    gets them as they are resolved here."""
    from agent_s.settings.read import flag_values, load_settings

    defaults = bench_defaults(problem)
    return load_settings(flag_values(flags), environ=environ, defaults=defaults)


def _safety(err: Console, settings: Settings, problem: str | None, *, sandbox_given: bool) -> None:
    """Refuse a bubblewrap sandbox that cannot work; warn when code will run without it, and
    when the safety mode will refuse what nobody can approve."""
    from agent_s.settings.config import ConfigError

    code, mode = settings.code_agent, settings.safety.mode
    if code.enabled and code.sandbox == "bwrap" and problem is not None:
        raise ConfigError(
            f"--code-sandbox bwrap cannot be used: {problem}", setting="--code-sandbox"
        )
    if code.enabled and code.sandbox == "none" and problem is not None and not sandbox_given:
        err.print(
            f"[yellow]model-written code will run without the bubblewrap sandbox "
            f"({escape(problem)}); pass --no-code-agent to switch the code agent off[/]",
            highlight=False,
        )
    if mode in ("confirm", "confirm-all"):
        err.print(
            f"[yellow]safety mode {mode}: nobody can approve inside the harness, so "
            "actions that need approval will be refused[/]",
            highlight=False,
        )


def _print_summary(out: Console, summary: dict[str, Any]) -> None:
    table = Table(box=box.SIMPLE, padding=(0, 1, 0, 0), caption="steps, secs, $: means per task")
    for name in ("domain", "tasks", "scored", "success", "skipped", "errors", "steps", "secs", "$"):
        table.add_column(name, justify="left" if name == "domain" else "right", no_wrap=True)
    rows = [*summary["domains"].items(), ("overall", summary["overall"])]
    for name, row in rows:
        rate = row["success_rate"]
        table.add_row(
            name,
            str(row["tasks"]),
            str(row["scored"]),
            "-" if rate is None else f"{rate:.1%}",
            str(row["skipped"]),
            str(row["errors"]),
            _num(row["mean_steps"]),
            _num(row["mean_seconds"]),
            _num(row["mean_cost_usd"], 4),
        )
    _print_table(out, table)
    best = summary.get("best_of")
    if best:  # agent_s.bestofn.bench: how good the judge's picks were
        out.print(
            f"best of {best['attempts'] // max(best['tasks'], 1)} ({best['tasks']} tasks): "
            f"single attempt {best['single_success']:.1%}, judge's pick "
            f"{best['picked_success']:.1%}, oracle {best['oracle_success']:.1%}",
            highlight=False,
            soft_wrap=True,
        )
    for failure in summary["not_succeeded"]:
        reason = " ".join(str(failure.get("reason") or "").split())  # one line, every word
        reason = output.printable(reason)
        line = (
            f"{failure['domain']}/{failure['task_id']}: {failure['outcome']} "
            f"score={failure['score']} {reason}"
        )
        out.print(line.rstrip(), markup=False, highlight=False, soft_wrap=True)


def _print_table(out: Console, table: Table) -> None:
    """Print ``table`` whole: at its natural width when the console is narrower (a pipe, an
    80-column terminal), so no cell is cut short with an ellipsis; a terminal wraps the lines."""
    natural = Measurement.get(out, out.options.update_width(_WIDEST), table).maximum
    width = out.width
    if natural <= width:
        out.print(table)
        return
    out.width = natural
    try:
        out.print(table)
    finally:
        out.width = width


def _num(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


@bench_app.command(cls=Command)
def report(
    results: Annotated[
        Path, typer.Argument(metavar="RESULTS", help="A results folder (any level of the layout).")
    ],
    as_json: options.JsonReport = False,
) -> None:
    """Success rate per domain and overall; steps, time, cost per task; the failed tasks."""
    from agent_s.bench.report import group, load_results, summarize

    out, err = output.console(), output.console(stderr=True)
    records, unreadable = load_results(results)
    for bad in unreadable:
        line = f"[red]unreadable:[/] {escape(bad['folder'])}: {escape(bad['problem'])}"
        err.print(line, highlight=False, soft_wrap=True)
    if not records:
        where = escape(str(results))
        missing = "" if results.exists() else " (it does not exist)"
        err.print(
            f"[red]error:[/] no task results under {where}{missing}: give the folder agent-s "
            "bench run wrote them to (its --results)",
            highlight=False,
            soft_wrap=True,
        )
        raise typer.Exit(2)
    runs = group(records)
    if len(runs) > 1:
        err.print(
            f"[yellow]warning:[/] {escape(str(results))} mixes {len(runs)} runs "
            f"({escape(', '.join(runs))}); each is reported on its own, never pooled",
            highlight=False,
            soft_wrap=True,
        )
    summaries = {name: summarize(rows) for name, rows in runs.items()}
    code = 1 if unreadable else 0
    if as_json:
        single = next(iter(summaries.values())) if len(runs) == 1 else None
        payload = {
            "summary": single,
            "runs": summaries,
            "mixed": len(runs) > 1,
            "unreadable": unreadable,
            "records": records,
        }
        out.print_json(json.dumps(payload))
        raise typer.Exit(code)
    for name, summary in summaries.items():
        out.print(f"[bold]run: {escape(name)}[/]", highlight=False)
        _print_summary(out, summary)
    raise typer.Exit(code)


bench_app.command(name="cache", cls=Command)(cache_command)  # agent_s.cli.bench_cache
