"""``agent-s memory``: what agent-s has learned across tasks, on this machine only.

    agent-s memory list [--kind skill] [--json]
    agent-s memory show 12
    agent-s memory search "sum a csv column"
    agent-s memory forget 12 13          # or: forget --match "csv" [--yes]
    agent-s memory export memory.jsonl   # the only way anything leaves the store
    agent-s memory import memory.jsonl

The file is ``--db``, else the one ``agent-s run`` uses (``[memory] path`` of the configuration
file, ``$AGENT_S_MEMORY_DB``, else the user's data folder). Exit codes: 0
done, 1 an entry was not found, nothing matched or an import stopped (the memory was full), 2
usage or a file that cannot be used.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from agent_s.cli import output
from agent_s.cli.helptext import Command, command_group

if TYPE_CHECKING:
    from agent_s.memory import Entry, Kind, MemoryStore

memory_app = command_group(
    "What agent-s has learned across tasks: list, search, forget, export, import."
)

_Db = Annotated[
    Path | None,
    typer.Option(
        "--db",
        help="The memory file (default: the one agent-s run uses: [memory] path, env "
        "AGENT_S_MEMORY_DB, else agent-s/memory.sqlite3 in the user's data folder).",
    ),
]
_Json = Annotated[bool, typer.Option("--json", help="Print JSON.")]
_KindOpt = Annotated[
    str | None, typer.Option("--kind", help="Only entries of this kind: run, lesson or skill.")
]


def _fail(message: str, code: int = 2) -> typer.Exit:
    output.console(stderr=True).print(
        f"[red]error:[/] {escape(output.printable(message))}", highlight=False, soft_wrap=True
    )
    return typer.Exit(code)


def _open(db: Path | None) -> MemoryStore:
    """``--db``, else the file ``agent-s run`` uses: ``[memory] path`` of the configuration,
    ``$AGENT_S_MEMORY_DB``, else the user's data folder."""
    from agent_s.memory import MemoryStore, MemoryStoreError
    from agent_s.settings.config import ConfigError
    from agent_s.settings.read import load_settings

    try:
        settings = load_settings().memory  # the file, and its bounds ([memory] max_*)
    except ConfigError as error:
        raise _fail(str(error)) from None
    try:
        store = MemoryStore(
            db if db is not None else settings.path,
            max_entries=settings.max_entries,
            max_bytes=settings.max_bytes,
        )
    except MemoryStoreError as error:
        raise _fail(str(error)) from None
    for notice in store.notices:  # said once: the change is made when the file is opened
        output.console(stderr=True).print(
            f"note: {escape(output.printable(notice))}", highlight=False, soft_wrap=True
        )
    return store


def _kinds(kind: str | None) -> list[Kind] | None:
    from agent_s.memory import KINDS

    if kind is None:
        return None
    for known in KINDS:
        if kind == known:
            return [known]
    raise _fail(f"--kind takes run, lesson or skill, got {kind!r}")


def _as_json(entry: Entry) -> dict[str, Any]:
    data: dict[str, Any] = entry.model_dump(mode="json")
    data["kind"] = entry.kind
    return data


def _title(entry: Entry) -> str:
    body = entry.body
    if body.kind == "run":
        return f"{body.status}: {body.summary}"
    if body.kind == "lesson":
        return body.text().replace("\n", " / ")
    return f"{body.language}: {body.description}"


def _line(entry: Entry, score: float | None = None) -> str:
    from agent_s.guards.trust import LABELS

    prov = entry.provenance
    mark = LABELS[prov.checked_by]
    scored = f" score {score:.3g}" if score is not None else ""
    text = output.printable(f"{_title(entry)}  [{prov.run_id}, {mark}]{scored}", keep="")
    return f"{entry.id:>5}  {entry.kind:<6}  {escape(text)}"


def _guarded(call: Any) -> Any:
    from agent_s.memory import MemoryStoreError

    try:
        return call()
    except (MemoryStoreError, OSError, ValueError) as error:
        raise _fail(str(error)) from None


@memory_app.command("list", cls=Command)
def list_entries(
    kind: _KindOpt = None,
    limit: Annotated[int | None, typer.Option(help="At most this many, newest first.")] = None,
    db: _Db = None,
    as_json: _Json = False,
) -> None:
    """Stored entries, newest first, each with its run and who checked it: verified (a
    check the user gave), checked by a model-written check, or unverified."""
    kinds = _kinds(kind)
    with _open(db) as store:
        entries = _guarded(lambda: store.entries(kinds, limit))
    out = output.console()
    if as_json:
        out.print_json(json.dumps([_as_json(e) for e in entries]))
        return
    if not entries:
        output.console(stderr=True).print("The memory is empty.", highlight=False)
    for entry in entries:
        out.print(_line(entry), highlight=False, soft_wrap=True)


@memory_app.command(cls=Command)
def show(
    entry_id: Annotated[int, typer.Argument(metavar="ID", help="The entry's id (see list).")],
    db: _Db = None,
    as_json: _Json = False,
) -> None:
    """One entry whole: its text or code, and where it came from."""
    with _open(db) as store:
        try:
            entry = _guarded(lambda: store.get(entry_id))
        except KeyError:
            raise _fail(f"no entry {entry_id}; see agent-s memory list", 1) from None
    out = output.console()
    if as_json:
        out.print_json(json.dumps(_as_json(entry)))
        return
    prov = entry.provenance
    steps = ", ".join(str(s) for s in prov.steps) or "-"
    lines = [
        f"entry {entry.id}: {entry.kind}",
        f"run: {prov.run_id} (steps {steps})",
        f"date: {prov.created.isoformat()}",
        f"model: {prov.model}",
        f"verified: {_verified(entry)}",
        f"retrieved: {entry.retrieved} times",
        f"task: {prov.task}",
    ]
    body = entry.body
    if body.kind == "skill":
        lines += [
            f"sha256: {entry.sha256}",
            f"description: {body.description}",
            f"check: {body.check}",
            f"inputs: {', '.join(body.inputs) or '-'}",
            f"outputs: {', '.join(body.outputs) or '-'}",
            "parameters: " + (", ".join(f"{n}={v!r}" for n, v in body.parameters.items()) or "-"),
            f"{body.language}:",
            body.code if body.language != "actions" else "\n".join(body.actions),
        ]
    elif body.kind == "run":
        lines += [f"status: {body.status}", f"summary: {body.summary}"]
        lines += [f"  - {step}" for step in body.key_steps]
    else:
        lines += [f"worked: {body.worked}", f"failed: {body.failed}", f"why: {body.why}"]
    for line in lines:
        out.print(escape(output.printable(line, keep="\n\t")), highlight=False, soft_wrap=True)


def _verified(entry: Entry) -> str:
    """Who checked it, and whether this store's key sealed it."""
    level = entry.provenance.checked_by
    if level == "user":
        return "yes, by a check the user gave"
    if level == "model-check":
        return "no: checked by a model-written check only"
    if not entry.sealed:
        return "no (not sealed by this store's key: imported, edited, or from before sealing)"
    return "no"


@memory_app.command(cls=Command)
def search(
    query: Annotated[str, typer.Argument(metavar="QUERY", help="Words to look for.")],
    k: Annotated[int, typer.Option("--k", help="At most this many results.")] = 5,
    kind: _KindOpt = None,
    db: _Db = None,
    as_json: _Json = False,
) -> None:
    """Entries relevant to QUERY, best first (verified ones above unverified)."""
    kinds = _kinds(kind)
    with _open(db) as store:
        hits = _guarded(lambda: store.search(query, k=k, kinds=kinds))
        entries = store.stats()[0] if not hits else 0
    out = output.console()
    if as_json:
        out.print_json(json.dumps([{**_as_json(h.entry), "score": h.score} for h in hits]))
    else:
        for hit in hits:
            out.print(_line(hit.entry, hit.score), highlight=False, soft_wrap=True)
    if not hits:
        if not as_json:  # an answer, not an error: said on stderr, exit 1 as grep does
            output.console(stderr=True).print(
                f"nothing matched {output.printable(query)!r} ({entries} entries in the "
                "memory; agent-s memory list shows them)",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )
        raise typer.Exit(1)


@memory_app.command(cls=Command)
def forget(
    ids: Annotated[
        list[int] | None, typer.Argument(metavar="ID", help="Ids of entries to delete.")
    ] = None,
    match: Annotated[
        str | None, typer.Option("--match", help="Delete the entries a search finds instead.")
    ] = None,
    k: Annotated[int, typer.Option("--k", help="With --match: at most this many.")] = 20,
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask before deleting.")] = False,
    db: _Db = None,
) -> None:
    """Delete entries by id, or those a search finds (after asking)."""
    if bool(ids) == (match is not None):
        raise _fail("give entry ids or --match QUERY (one of the two)")
    err = output.console(stderr=True)
    with _open(db) as store:
        wanted = list(ids or [])
        if match is not None:
            hits = _guarded(lambda: store.search(match, k=k))
            if not hits:
                raise _fail("nothing matched; nothing was deleted", 1)
            for hit in hits:
                err.print(_line(hit.entry), highlight=False, soft_wrap=True)
            if not yes:
                if not sys.stdin.isatty():
                    raise _fail("not deleted: add --yes to delete without asking")
                if not typer.confirm(f"Delete these {len(hits)} entries?", err=True):
                    raise typer.Exit(1)
            wanted = [hit.entry.id for hit in hits]
        removed = _guarded(lambda: store.forget(wanted))
    err.print(f"Deleted {removed} of {len(wanted)} entries.", highlight=False)
    if removed < len(wanted):
        raise typer.Exit(1)


@memory_app.command("export", cls=Command)
def export_entries(
    path: Annotated[Path, typer.Argument(metavar="FILE", help="JSON Lines file to write.")],
    db: _Db = None,
) -> None:
    """Write every entry, with its provenance and hashes, to FILE."""
    with _open(db) as store:
        count = _guarded(lambda: store.export_jsonl(path))
    output.console(stderr=True).print(
        f"Wrote {count} entries to {escape(str(path))}.", highlight=False
    )


@memory_app.command("import", cls=Command)
def import_entries(
    path: Annotated[Path, typer.Argument(metavar="FILE", help="A file memory export wrote.")],
    db: _Db = None,
) -> None:
    """Add the entries of FILE, each as unverified: every line is checked (fields, skill
    hashes; at most 1 MB a line, 50 MB a file) before any is added; entries already stored are
    skipped; nothing stored is evicted to make room (the import stops and says so)."""
    with _open(db) as store:
        report = _guarded(lambda: store.import_jsonl(path))
    err = output.console(stderr=True)
    err.print(
        f"Added {report.added} entries as unverified, skipped {report.skipped} already stored.",
        highlight=False,
    )
    if report.stopped:
        err.print(
            f"Stopped with {report.left} entries of the file not imported: "
            f"{escape(report.stopped)}",
            highlight=False,
            soft_wrap=True,
        )
        raise typer.Exit(1)


__all__ = ["memory_app"]
