"""Memory across tasks: run summaries, lessons and verified skills in one SQLite file.

    store = MemoryStore()                      # $XDG_DATA_HOME/agent-s/memory.sqlite3
    prov = Provenance(run_id="20260101-120000-ab12", steps=(3,), model="m", verified=True,
                      task="Sum column B of 'sales.csv'")
    store.add(Skill(description="sum a CSV column", language="python", code=code), prov)
    hits = store.search("sum the column of report.csv", k=5)

Every entry names where it came from (``Provenance``: the run's trajectory folder, its steps,
the date, the model, the task, and whether the task's success was verified by a check, never by
the model's word). A skill is only stored from a verified run, byte for byte, with the sha256 of
its code: the hash is kept in the row and checked again on every read (``TamperedEntry``).

Several processes may write at once (harness workers): the file is in WAL mode, each write is
one short ``BEGIN IMMEDIATE`` transaction and a busy connection waits. The schema has a version
(``PRAGMA user_version``); ``MIGRATIONS`` are applied in order on open and a file written by a
newer agent-s is refused (``SchemaTooNew``). The store is bounded (entry count and bytes of
entries); ``evict`` removes the least useful first: never retrieved, then unverified, then
oldest. Nothing here leaves the machine: ``export_jsonl`` writes a file only when asked.
"""

from __future__ import annotations

from agent_s.memory.entries import (
    KINDS,
    Entry,
    ExportedEntry,
    Hit,
    ImportReport,
    Kind,
    Lesson,
    MemoryStoreError,
    Provenance,
    RunSummary,
    SchemaTooNew,
    Skill,
    TamperedEntry,
    code_bytes,
    code_sha256,
)
from agent_s.memory.parameters import extract_parameters, instantiate, with_parameters
from agent_s.memory.store import DB_ENV, MIGRATIONS, SCHEMA_VERSION, MemoryStore, default_path

__all__ = [
    "DB_ENV",
    "KINDS",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "Entry",
    "ExportedEntry",
    "Hit",
    "ImportReport",
    "Kind",
    "Lesson",
    "MemoryStore",
    "MemoryStoreError",
    "Provenance",
    "RunSummary",
    "SchemaTooNew",
    "Skill",
    "TamperedEntry",
    "code_bytes",
    "code_sha256",
    "default_path",
    "extract_parameters",
    "instantiate",
    "with_parameters",
]
