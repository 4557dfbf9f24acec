"""Memory across tasks: run summaries, lessons and verified skills in one SQLite file.

    store = MemoryStore()                      # $XDG_DATA_HOME/agent-s/memory.sqlite3
    prov = Provenance(run_id="20260101-120000-ab12", steps=(3,), model="m", verified=True,
                      task="Sum column B of 'sales.csv'")
    store.add(Skill(description="sum a CSV column", language="python", code=code), prov)
    hits = store.search("sum the column of report.csv", k=5)

Every entry names where it came from (``Provenance``: the run's trajectory folder, its steps,
the date, the model, the task, and who checked it: ``checked_by`` ``user`` - verified, a check
the user or the evaluator gave passed; ``model-check`` - only a check a model wrote passed;
``none``). A skill is only stored from a run whose check passed, byte for byte, with the sha256
of its code: the hash is kept in the row and checked again on every read (``TamperedEntry``).
Each row is sealed with an HMAC under the user's key, kept outside the file
(``agent_s.guards.trust``): a row this key did not seal (edited in the file, imported, copied
from elsewhere, written before sealing) reads as ``none``, whatever it says.

Several processes may write at once (harness workers): the file is in WAL mode, each write is
one short ``BEGIN IMMEDIATE`` transaction and a busy connection waits. The schema has a version
(``PRAGMA user_version``); ``MIGRATIONS`` are applied in order on open and a file written by a
newer agent-s is refused (``SchemaTooNew``). The store is bounded (entry count and bytes of
entries); ``evict`` removes the least useful first: never retrieved, then unverified, then
oldest; the file is compacted afterwards. ``import_jsonl`` brings entries in unverified and
never evicts to make room (``agent_s.memory.importing``). Nothing here leaves the machine:
``export_jsonl`` writes a file only when asked.

May use: record, settings, actions, guards, prompting. Used by: the loop (recall before the
first request, learn at the end), practice, replay (workflows), bench, cli.
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
from agent_s.memory.store import (
    DB_ENV,
    MIGRATIONS,
    SCHEMA_VERSION,
    MemoryStore,
    default_path,
    open_configured,
)

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
    "open_configured",
    "extract_parameters",
    "instantiate",
    "with_parameters",
]
