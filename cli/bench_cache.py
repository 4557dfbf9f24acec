"""``agent-s bench cache SUITE --dir CACHE``: download every file the suite's tasks take from
OSWorld's file cache, so ``agent-s bench run SUITE --file-cache CACHE`` needs no network for them.

    agent-s bench cache ../shared/osworld --dir ~/osworld-cache --workers 8
    agent-s bench run ../shared/osworld --file-cache ~/osworld-cache

Parallel (``--workers``), resumable (run it again: finished files whose checksum still matches
are skipped, partial ones resumed), checksums in ``CACHE/manifest.json`` (see
``agent_s.bench.cache``). Progress on stderr, the summary on stdout (``--json``: as JSON).
Exit codes: 0 every file is in the cache, 1 a file could not be fetched or a task file could
not be used (each is named), 2 usage or configuration error (nothing was fetched), 130
cancelled (partial files resume on the next run).
"""

from __future__ import annotations

import contextlib
import json
import shlex
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.filesize import decimal
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from agent_s.cli import output

if TYPE_CHECKING:
    from agent_s.bench.cache import CacheEvent, CacheReport
    from agent_s.bench.tasks import BadTaskFile, Task


def _safe(text: str) -> str:
    """Text from a task file or a server, for a rich console: no markup, no terminal codes."""
    return escape(output.printable(text))


def _load(
    suite: str, index: str | None, domains: list[str]
) -> tuple[list[Task], list[BadTaskFile], str]:
    """The tasks of SUITE (a built-in suite, a folder, an index file, or one task file), the
    bad task files, and the suite to give ``bench run`` (a task file's suite folder)."""
    from agent_s.bench.tasks import load_suite, load_task

    path = Path(suite).expanduser()
    if path.is_file() and index is None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as err:  # not JSON, not UTF-8
            raise ValueError(f"{path}: not a JSON task or index file ({err})") from err
        if isinstance(data, dict) and "evaluator" in data:
            inside = path.parent.parent.name == "examples"
            return [load_task(path)], [], str(path.parents[2]) if inside else "SUITE"
    loaded = load_suite(suite, index=index)
    good, bad = loaded.load(domains)
    return good, bad, suite


def cache(
    suite: Annotated[
        str,
        typer.Argument(
            metavar="SUITE",
            help="A built-in suite (smoke), a folder, an index file or one task file.",
        ),
    ],
    cache_dir: Annotated[
        Path,
        typer.Option("--dir", help="The cache folder (made if missing); bench run's --file-cache."),
    ],
    index: Annotated[str | None, typer.Option(help="Index file inside the folder.")] = None,
    domain: Annotated[list[str] | None, typer.Option(help="Only these domains.")] = None,
    workers: Annotated[int, typer.Option(min=1, max=64, help="Downloads at once.")] = 4,
    retries: Annotated[
        int,
        typer.Option(min=0, help="Attempts after the first for a dropped or failed download."),
    ] = 3,
    timeout: Annotated[
        float, typer.Option(min=1, help="Seconds without data before an attempt is dropped.")
    ] = 60.0,
    endpoint: Annotated[
        str | None,
        typer.Option(
            envvar="HF_ENDPOINT",
            help="Fetch huggingface.co's files from this mirror instead (env HF_ENDPOINT).",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Download every file SUITE's setup and evaluators take from OSWorld's file cache."""
    from agent_s.bench.cache import (
        CacheCancelled,
        CacheError,
        fill_cache,
        prepare_cache,
        suite_needs,
    )

    out, err = output.console(), output.console(stderr=True)
    try:
        if endpoint and not endpoint.startswith(("http://", "https://")):
            raise ValueError(f"--endpoint must be an http(s) URL, not {endpoint!r}")
        tasks, bad, run_suite = _load(suite, index, domain or [])
    except (OSError, ValueError) as error:  # TaskFormatError and bad JSON are ValueErrors
        err.print(f"[red]error:[/] {_safe(str(error))}", highlight=False)
        raise typer.Exit(2) from error
    for item in bad:
        err.print(f"[red]bad task file:[/] {_safe(str(item))}", highlight=False, soft_wrap=True)
    needs = suite_needs(tasks)
    if not needs and not as_json:
        out.print(
            f"nothing to fetch: no task of {_safe(suite)} takes files from the file cache",
            highlight=False,
        )
        raise typer.Exit(1 if bad else 0)
    progress = _Progress(err, len(needs), Path(suite).name or suite)
    try:
        prepare_cache(cache_dir)  # before the bar: a usage error alone on the screen
        with progress.bar if needs else contextlib.nullcontext():
            report = fill_cache(
                needs,
                cache_dir,
                workers=workers,
                endpoint=endpoint,
                timeout=timeout,
                retries=retries,
                on_event=progress.on_event,
            )
    except (CacheError, ValueError) as error:
        err.print(f"[red]error:[/] {_safe(str(error))}", highlight=False)
        raise typer.Exit(2) from error
    except CacheCancelled as stop:
        done = len(stop.report.files)
        err.print(
            f"cancelled: {done} of {len(needs)} files ended; run the same command again to "
            "resume (partial downloads are kept)",
            highlight=False,
        )
        raise typer.Exit(130) from stop
    if as_json:
        payload = {
            **report.to_json(),
            "suite": suite,
            "tasks": len(tasks),
            "bad_task_files": [b.to_json() for b in bad],
        }
        out.print_json(json.dumps(payload))
    else:
        _print_summary(out, report, len(tasks), run_suite, cache_dir)
    raise typer.Exit(1 if report.failed or bad else 0)


class _Progress:
    """The bar on stderr (files done of all, bytes received, speed) and a line per file
    fetched or failed; NO_COLOR or a pipe: the lines only."""

    def __init__(self, err: Console, files: int, name: str) -> None:
        self.lock = threading.Lock()
        self.received = 0
        self.done = 0
        self.started = time.monotonic()
        self.bar = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            TextColumn("{task.completed}/{task.total} files"),
            TextColumn("{task.fields[status]}"),
            TimeElapsedColumn(),
            console=err,
        )
        self.task = self.bar.add_task(f"{_safe(name)} file cache", total=files, status="")

    def on_event(self, event: CacheEvent) -> None:
        with self.lock:
            if event.kind == "bytes":
                self.received += event.amount
            elif event.kind == "end" and event.result is not None:
                self.done += 1
                result = event.result
                if result.status == "failed":
                    self.bar.console.print(
                        f"[red]failed:[/] {_safe(result.url)}: {_safe(result.error)}",
                        highlight=False,
                        soft_wrap=True,
                    )
                elif result.status in ("downloaded", "resumed"):
                    self.bar.console.print(
                        f"{result.status}: {_safe(result.url)} ({decimal(result.size)})",
                        highlight=False,
                        soft_wrap=True,
                    )
            seconds = max(time.monotonic() - self.started, 1e-3)
            status = f"{decimal(self.received)}  {decimal(int(self.received / seconds))}/s"
            self.bar.update(self.task, completed=self.done, status=status)


def _print_summary(
    out: Console, report: CacheReport, tasks: int, suite: str, cache_dir: Path
) -> None:
    counts = ", ".join(
        f"{report.count(s)} {s}"
        for s in ("cached", "downloaded", "resumed", "failed", "cancelled")
        if report.count(s) or s in ("cached", "downloaded", "failed")
    )
    out.print(
        f"{len(report.files)} files for {tasks} task(s): {counts}; "
        f"{decimal(report.received)} received in {report.seconds:.1f} s; "
        f"{decimal(report.size)} in the cache",
        highlight=False,
        soft_wrap=True,
    )
    manifest = _safe(str(cache_dir / "manifest.json"))
    out.print(f"manifest: {manifest}", highlight=False, soft_wrap=True)
    for failed in report.failed:
        users = ", ".join(failed.tasks[:3]) + (" ..." if len(failed.tasks) > 3 else "")
        out.print(
            f"failed: {_safe(failed.url)}: {_safe(failed.error)} (needed by {_safe(users)})",
            highlight=False,
            soft_wrap=True,
        )
    command = f"agent-s bench run {shlex.quote(suite)} --file-cache {shlex.quote(str(cache_dir))}"
    if report.failed:
        out.print(
            f"{len(report.failed)} file(s) missing: run the same command again to retry; "
            f"the tasks that need them are skipped by: {_safe(command)}",
            highlight=False,
            soft_wrap=True,
        )
    else:
        out.print(
            f"every file is in the cache; run: {_safe(command)}", highlight=False, soft_wrap=True
        )


__all__ = ["cache"]
