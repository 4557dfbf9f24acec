"""``memory import``: a file's entries come in as data, never as trust, and never crowd out
what the store holds.

    report = import_jsonl(store, Path("memory.jsonl"))
    report.added, report.skipped, report.stopped, report.left

The file must be a regular file of at most ``MAX_FILE_BYTES``; it is read line by line, each
line at most ``MAX_LINE_BYTES`` (a longer one is refused before it is read whole). Every line is
checked before any is added (its fields, a skill's code against its sha256); one bad line
refuses the whole file (ValueError naming the line). What the file says about its entries'
checks is not believed: every entry comes in unverified (``checked_by`` ``none``) and unused
(``retrieved`` 0), whatever the file says, so only this store's own runs can make an entry
verified (``agent_s.guards.trust``). Entries already stored are skipped. Nothing is evicted to
make room: when the next entry would take the store over a bound, the import stops there and
the report says how many came in, how many were left and why.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from pydantic import ValidationError

from agent_s.memory.entries import ExportedEntry, ImportReport, Skill

if TYPE_CHECKING:
    from agent_s.memory.store import MemoryStore

MAX_LINE_BYTES = 1_000_000  # one entry's line
MAX_FILE_BYTES = 50_000_000  # the whole file


def import_jsonl(store: MemoryStore, path: Path) -> ImportReport:
    """Add the entries of ``path`` to ``store`` (see the module docstring)."""
    path = Path(path)
    with _open(path) as handle:
        total = sum(1 for _ in _records(path, handle))  # every line checked first
        handle.seek(0)
        return store.add_imported(_records(path, handle), total)


def _open(path: Path) -> BinaryIO:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as error:
        raise ValueError(f"cannot read {path}: {error.strerror}") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise ValueError(f"{path} is not a regular file: import a file memory export wrote")
    if info.st_size > MAX_FILE_BYTES:
        os.close(fd)
        raise ValueError(
            f"{path} has {info.st_size:,} bytes; memory import reads at most "
            f"{MAX_FILE_BYTES:,}: split it into smaller files"
        )
    return os.fdopen(fd, "rb")


def _records(path: Path, handle: BinaryIO) -> Iterator[ExportedEntry]:
    """The file's entries, each line checked; ValueError naming the first bad line."""
    read = 0
    number = 0
    while True:
        raw = handle.readline(MAX_LINE_BYTES + 1)
        if not raw:
            return
        number += 1
        read += len(raw)
        if len(raw) > MAX_LINE_BYTES:
            raise ValueError(
                f"{path}:{number}: the line is longer than {MAX_LINE_BYTES:,} bytes; memory "
                "import refuses it (import only files written by agent-s memory export)"
            )
        if read > MAX_FILE_BYTES:
            raise ValueError(f"{path} grew past {MAX_FILE_BYTES:,} bytes while it was read")
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError(f"{path}:{number}: not UTF-8 text") from None
        if not line.strip():
            continue
        try:
            record = ExportedEntry.model_validate_json(line)
        except ValidationError as error:
            problem = error.errors()[0]
            where = ".".join(str(p) for p in problem["loc"])
            raise ValueError(
                f"{path}:{number}: not a memory entry ({where}: {problem['msg']}); "
                "import only files written by agent-s memory export"
            ) from None
        _check(f"{path}:{number}", record)
        yield record


def _check(where: str, record: ExportedEntry) -> None:
    if record.kind != record.body.kind:
        raise ValueError(f"{where}: kind {record.kind!r} but a {record.body.kind} body")
    if isinstance(record.body, Skill):
        if record.sha256 != record.body.sha256:
            raise ValueError(
                f"{where}: the skill's code does not match its sha256; the file was "
                "changed after export, export it again"
            )
    elif record.sha256 is not None:
        raise ValueError(f"{where}: only a skill has a sha256")


__all__ = ["MAX_FILE_BYTES", "MAX_LINE_BYTES", "import_jsonl"]
