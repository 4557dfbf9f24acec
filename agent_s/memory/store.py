"""The memory store: opening the SQLite file (migrations, the key), writes, search, eviction."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_s.guards import files
from agent_s.guards.trust import KeyFileError, Sealer, TrustLevel, key_path, load_key
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
)
from agent_s.memory.parameters import with_parameters
from agent_s.memory.rows import (
    Row,
    StoredWorkflow,
    Transaction,
    check_workflow_name,
    fingerprint,
    level_of,
    match_string,
    origin_columns,
    provenance_of,
)
from agent_s.memory.schema import (
    CHECKED_AT,
    MIGRATIONS,
    SCHEMA_VERSION,
    SEALED_COLUMNS,
    SEALED_FROM,
    statements,
)
from agent_s.settings.config import ConfigError

DB_ENV = "AGENT_S_MEMORY_DB"  # the memory file, if not the default
# an entry's relevance counts for this share of a verified one's, by who checked it
_WEIGHTS = {"user": 1.0, "model-check": 0.8, "none": 0.6}
_RANK = {"user": 2, "model-check": 1, "none": 0}  # eviction keeps higher ranks longer
_JOURNAL_LIMIT = 4_000_000  # bytes of write-ahead log kept after a checkpoint
_BUSY_MS = 30_000


# -- the file -----------------------------------------------------------------------------------


if TYPE_CHECKING:
    from agent_s.settings.read import MemorySection


def default_path(env: Mapping[str, str] | None = None) -> Path:
    """``$AGENT_S_MEMORY_DB``, else ``$XDG_DATA_HOME/agent-s/memory.sqlite3``, else
    ``~/.local/share/agent-s/memory.sqlite3``."""
    env = os.environ if env is None else env
    if env.get(DB_ENV):
        return Path(env[DB_ENV]).expanduser()
    data = env.get("XDG_DATA_HOME")
    base = Path(data) if data and Path(data).is_absolute() else Path.home() / ".local" / "share"
    return base / "agent-s" / "memory.sqlite3"


class MemoryStore:
    """One SQLite memory file. Safe to use from several processes at once; one instance per
    thread (its connection is not shared). ``key``: the file of the user's sealing key
    (default ``agent_s.guards.trust.key_path()``, outside the database). ``notices``: what
    opening it changed that the user should hear once (entries made unverified by a migration)."""

    def __init__(
        self,
        path: Path | None = None,
        *,
        max_entries: int = 2000,
        max_bytes: int = 20_000_000,
        key: Path | None = None,
    ) -> None:
        if max_entries < 1 or max_bytes < 1:
            raise ValueError("max_entries and max_bytes must be at least 1")
        self.path = Path(path) if path is not None else default_path()
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.notices: list[str] = []
        try:
            self._sealer = Sealer(load_key(key if key is not None else key_path()))
        except KeyFileError as error:
            raise MemoryStoreError(str(error)) from None
        self._db = self._open()

    # -- opening --

    def _open(self) -> sqlite3.Connection:
        folder = self.path.parent
        try:
            if not folder.exists():
                folder.mkdir(mode=0o700, parents=True)
            if not self.path.exists():
                fd = os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600)
                os.close(fd)
        except OSError as error:
            raise MemoryStoreError(
                f"cannot create the memory file {self.path}: {error.strerror}; choose a "
                "writable file with --db"
            ) from None
        try:
            db = sqlite3.connect(self.path, timeout=_BUSY_MS / 1000, isolation_level=None)
        except sqlite3.Error as error:
            raise MemoryStoreError(f"cannot open {self.path}: {error}; check the path") from None
        db.create_function("agent_s_rank", 11, self._rank_sql, deterministic=True)
        try:
            db.execute(f"PRAGMA busy_timeout = {_BUSY_MS}")
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = NORMAL")
            # the write-ahead log is checkpointed and cut back at a size within the bound
            journal = min(_JOURNAL_LIMIT, self.max_bytes)
            db.execute(f"PRAGMA journal_size_limit = {journal}")
            page = int(db.execute("PRAGMA page_size").fetchone()[0])
            db.execute(f"PRAGMA wal_autocheckpoint = {max(16, journal // page)}")
            self._migrate(db)
        except sqlite3.DatabaseError as error:
            db.close()
            raise MemoryStoreError(
                f"{self.path} is not an agent-s memory file ({error}); move it away or choose "
                "another file with --db"
            ) from None
        except MemoryStoreError:
            db.close()
            raise
        return db

    def _migrate(self, db: sqlite3.Connection) -> None:
        version = int(db.execute("PRAGMA user_version").fetchone()[0])
        if version == SCHEMA_VERSION:
            return
        self._refuse_newer(version)
        db.execute("BEGIN IMMEDIATE")
        try:
            version = int(db.execute("PRAGMA user_version").fetchone()[0])  # another may have
            self._refuse_newer(version)
            if 0 < version < SEALED_FROM:
                self._note_unsealed(db, version)
            for number in range(version, SCHEMA_VERSION):
                for statement in statements(MIGRATIONS[number]):
                    db.execute(statement)
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def _note_unsealed(self, db: sqlite3.Connection, version: int) -> None:
        (entries,) = db.execute("SELECT count(*) FROM entries WHERE verified").fetchone()
        flows = 0
        if version >= 2:
            (flows,) = db.execute("SELECT count(*) FROM workflows WHERE verified").fetchone()
        if entries or flows:
            self.notices.append(
                f"{self.path}: {entries} verified entries and {flows} verified workflows were "
                "written before agent-s sealed them with your key, so nothing shows they were "
                "not edited: they are kept as unverified from now on"
            )

    def _refuse_newer(self, version: int) -> None:
        if version > SCHEMA_VERSION:
            raise SchemaTooNew(
                f"{self.path} has memory schema {version}, this agent-s knows up to "
                f"{SCHEMA_VERSION}: upgrade agent-s (pip install -U agent-s) or use another "
                "file with --db"
            )

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _write(self) -> Transaction:
        return Transaction(self._db)

    # -- sealing --

    def _entry_level(self, fields: Sequence[Any], mac: object) -> tuple[TrustLevel, bool]:
        """(who checked it, whether this store's key sealed it): ``none`` unless sealed."""
        if not self._sealer.holds(mac, "entry", *fields):
            return "none", False
        return level_of(fields[CHECKED_AT]), True

    def _rank_sql(self, *row: Any) -> int:
        """SQL ``agent_s_rank(<the sealed columns>, mac)``: 2 user, 1 model-check, 0 none."""
        level, _ = self._entry_level(row[:-1], row[-1])
        return _RANK[level]

    # -- writing --

    def add(self, body: RunSummary | Lesson | Skill, provenance: Provenance) -> int:
        """Store one entry; its id (the existing one's if the same entry is stored already).
        A skill nothing checked (``checked_by`` ``none``) and an entry larger than the store's
        byte bound are refused (ValueError); a skill without parameters gets them extracted
        from the task. Evicts afterwards if over a bound."""
        row = self._prepare(body, provenance)
        if row.checked_by == "none" and row.kind == "skill":
            raise ValueError(
                "a skill is stored only when a check passed (the user's, or a model-written "
                f"one, stored as such); run {provenance.run_id} is unverified"
            )
        if row.size > self.max_bytes:
            raise ValueError(
                f"an entry of {row.size:,} bytes is larger than the memory's bound of "
                f"{self.max_bytes:,} bytes ([memory] max_bytes)"
            )
        with self._write():
            entry_id = self._insert(row, retrieved=0)
        self.evict()
        return entry_id

    def add_run(self, summary: RunSummary, provenance: Provenance) -> int:
        return self.add(summary, provenance)

    def add_lesson(self, lesson: Lesson, provenance: Provenance) -> int:
        return self.add(lesson, provenance)

    def add_skill(self, skill: Skill, provenance: Provenance) -> int:
        return self.add(skill, provenance)

    def _prepare(self, body: RunSummary | Lesson | Skill, provenance: Provenance) -> Row:
        """The row ``body`` becomes, sealed with the user's key."""
        sha: str | None = None
        if isinstance(body, Skill):
            if not body.parameters:
                body = with_parameters(body, provenance.task)
            sha = body.sha256
        body_json = body.model_dump_json()
        text = body.text()
        # what the file keeps of it: the row (body, task, text) and the full-text table's copy
        searched = len(provenance.task.encode()) + len(text.encode())
        size = len(body_json.encode()) + 2 * searched
        fields = (body.kind, provenance.task, text, body_json, *origin_columns(provenance), sha)
        mac = self._sealer.seal("entry", *fields)
        return Row(fields, mac, size, fingerprint(body, provenance))

    def _insert(self, row: Row, *, retrieved: int) -> int:
        found = self._db.execute(
            "SELECT id FROM entries WHERE fingerprint = ?", (row.fingerprint,)
        ).fetchone()
        if found is not None:
            return int(found[0])
        cursor = self._db.execute(
            f"INSERT INTO entries ({SEALED_COLUMNS}, verified, mac, retrieved, size, fingerprint) "  # noqa: S608 - constant columns
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                *row.fields,
                int(row.checked_by == "user"),
                row.mac,
                retrieved,
                row.size,
                row.fingerprint,
            ),
        )
        return int(cursor.lastrowid or 0)

    def mark_retrieved(self, ids: Iterable[int]) -> None:
        """Count one use of each entry (it was shown to the model)."""
        wanted = [(int(i),) for i in ids]
        if wanted:
            with self._write():
                self._db.executemany(
                    "UPDATE entries SET retrieved = retrieved + 1 WHERE id = ?", wanted
                )

    def forget(self, ids: Iterable[int]) -> int:
        """Delete these entries; how many there were."""
        wanted = [(int(i),) for i in ids]
        with self._write():
            (before,) = self._db.execute("SELECT count(*) FROM entries").fetchone()
            self._db.executemany("DELETE FROM entries WHERE id = ?", wanted)
            (after,) = self._db.execute("SELECT count(*) FROM entries").fetchone()
        self.compact()
        return int(before - after)

    def evict(self) -> int:
        """Remove the least useful entries until both bounds hold: never retrieved first, then
        unverified (then checked by a model-written check only), then oldest; the file is
        compacted afterwards when the space freed is large. How many were removed."""
        removed = 0
        with self._write():
            count, size = self._db.execute(
                "SELECT count(*), coalesce(sum(size), 0) FROM entries"
            ).fetchone()
            if count <= self.max_entries and size <= self.max_bytes:
                return 0
            rows = self._db.execute(
                f"SELECT id, size FROM entries ORDER BY (retrieved > 0), "  # noqa: S608 - constant
                f"agent_s_rank({SEALED_COLUMNS}, mac), created, id"
            ).fetchall()
            doomed: list[tuple[int]] = []
            for entry_id, entry_size in rows:
                if count <= self.max_entries and size <= self.max_bytes:
                    break
                doomed.append((entry_id,))
                count -= 1
                size -= entry_size
            self._db.executemany("DELETE FROM entries WHERE id = ?", doomed)
            removed = len(doomed)
        self.compact()
        return removed

    def compact(self, *, always: bool = False) -> bool:
        """Give the space of deleted rows back to the file system (``VACUUM``, then the
        write-ahead log truncated) when it is over a quarter of the byte bound (or ``always``);
        whether it did. So the file, with its log, stays under ``file_bound()``."""
        page = int(self._db.execute("PRAGMA page_size").fetchone()[0])
        free = int(self._db.execute("PRAGMA freelist_count").fetchone()[0])
        if not always and free * page <= max(self.max_bytes // 4, 65_536):
            return False
        try:
            self._db.execute("VACUUM")
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.OperationalError:  # another process holds the file: compacted next time
            return False
        return True

    def file_bound(self) -> int:
        """The bytes the file and its write-ahead log stay under: each entry is kept with its
        search index and row (about three times its size), a quarter of the bound may be free
        before it is compacted, the log is cut back to at most the bound, plus some pages."""
        return 4 * self.max_bytes + 2_000_000

    # -- reading --

    _COLUMNS = f"id, {SEALED_COLUMNS}, mac, retrieved"

    def _entry(self, row: Sequence[Any]) -> Entry:
        entry_id, fields, mac, retrieved = row[0], row[1:11], row[11], row[12]
        _, task, _, body_json, run_id, steps, model, _, created, sha = fields
        level, sealed = self._entry_level(fields, mac)
        provenance = provenance_of(task, run_id, steps, model, level, created)
        entry = Entry.model_validate(
            {
                "id": entry_id,
                "provenance": provenance,
                "body": json.loads(body_json),
                "retrieved": retrieved,
                "sha256": sha,
                "sealed": sealed,
            }
        )
        if isinstance(entry.body, Skill) and entry.body.sha256 != sha:
            raise TamperedEntry(
                f"memory entry {entry_id}: the skill's code does not match its stored sha256 "
                f"(the file was changed outside agent-s); remove it with "
                f"agent-s memory forget {entry_id}"
            )
        return entry

    def get(self, entry_id: int) -> Entry:
        """The entry with this id (KeyError if there is none; TamperedEntry if a skill's code
        no longer matches its hash)."""
        row = self._db.execute(
            f"SELECT {self._COLUMNS} FROM entries WHERE id = ?",  # noqa: S608 - constant columns
            (int(entry_id),),
        ).fetchone()
        if row is None:
            raise KeyError(entry_id)
        return self._entry(row)

    def entry_ids(self, kinds: Iterable[Kind]) -> list[int]:
        """The ids of the stored entries of these kinds, newest first (each read with ``get``:
        a skill whose code no longer matches its hash raises there, not here)."""
        wanted = list(kinds)
        marks = ", ".join("?" for _ in wanted) or "NULL"
        sql = f"SELECT id FROM entries WHERE kind IN ({marks}) ORDER BY id DESC"  # noqa: S608 - placeholders
        return [int(entry_id) for (entry_id,) in self._db.execute(sql, wanted).fetchall()]

    def entries(self, kinds: Iterable[Kind] | None = None, limit: int | None = None) -> list[Entry]:
        """Stored entries, newest first."""
        return list(self._iter(kinds, limit))

    def _iter(self, kinds: Iterable[Kind] | None, limit: int | None) -> Iterator[Entry]:
        wanted = list(KINDS if kinds is None else kinds)
        marks = ", ".join("?" for _ in wanted) or "NULL"
        sql = f"SELECT {self._COLUMNS} FROM entries WHERE kind IN ({marks}) ORDER BY id DESC"  # noqa: S608 - placeholders
        params: list[Any] = list(wanted)
        if limit is not None:
            sql += " LIMIT ?"
            params.append(max(0, int(limit)))
        for row in self._db.execute(sql, params).fetchall():
            yield self._entry(row)

    def search(self, query: str, k: int = 5, kinds: Iterable[Kind] | None = None) -> list[Hit]:
        """At most ``k`` entries relevant to ``query`` (any text: its words are searched, its
        punctuation is never FTS syntax), best first; verified entries above unverified ones
        of similar relevance."""
        match = match_string(query)
        wanted = list(KINDS if kinds is None else kinds)
        if not match or k < 1 or not wanted:
            return []
        marks = ", ".join("?" for _ in wanted)
        columns = ", ".join(f"e.{c.strip()}" for c in self._COLUMNS.split(","))
        weights = " ".join(f"WHEN {_RANK[lvl]} THEN {w}" for lvl, w in _WEIGHTS.items())
        rows = self._db.execute(
            f"SELECT {columns}, bm25(entries_fts, 2.0, 1.0) * "  # noqa: S608 - constants
            f"(CASE agent_s_rank({', '.join('e.' + c.strip() for c in SEALED_COLUMNS.split(','))}, "
            f"e.mac) {weights} ELSE 0.6 END) AS rank "
            "FROM entries_fts JOIN entries AS e ON e.id = entries_fts.rowid "
            f"WHERE entries_fts MATCH ? AND e.kind IN ({marks}) "
            "ORDER BY rank, e.id DESC LIMIT ?",
            [match, *wanted, int(k)],
        ).fetchall()
        return [Hit(entry=self._entry(row[:-1]), score=-float(row[-1])) for row in rows]

    def stats(self) -> tuple[int, int]:
        """(entries, bytes of entries) stored."""
        count, size = self._db.execute(
            "SELECT count(*), coalesce(sum(size), 0) FROM entries"
        ).fetchone()
        return int(count), int(size)

    # -- workflows --

    def save_workflow(
        self, name: str, body: str, provenance: Provenance, *, replace: bool = False
    ) -> StoredWorkflow:
        """Store the workflow ``name`` (its JSON ``body``) with its provenance and the sha256 of
        the body, sealed with the user's key; a name already taken is refused (ValueError)
        unless ``replace``."""
        check_workflow_name(name)
        sha = hashlib.sha256(body.encode("utf-8", "surrogatepass")).hexdigest()
        fields = (name, provenance.task, body, *origin_columns(provenance), sha)
        mac = self._sealer.seal("workflow", *fields)
        with self._write():
            taken = self._db.execute("SELECT 1 FROM workflows WHERE name = ?", (name,)).fetchone()
            if taken and not replace:
                raise ValueError(
                    f"a workflow named {name!r} exists already: choose another name, or replace "
                    f"it (agent-s workflow save ... --replace; agent-s workflow forget {name})"
                )
            self._db.execute(
                "INSERT OR REPLACE INTO workflows (name, task, body, run_id, steps, model, "
                "checked_by, created, sha256, verified, mac) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (*fields, int(provenance.verified), mac),
            )
        return StoredWorkflow(name, provenance, body, sha, sealed=True)

    _WORKFLOW_COLUMNS = "name, task, body, run_id, steps, model, checked_by, created, sha256, mac"

    def _stored_workflow(self, row: Sequence[Any]) -> StoredWorkflow:
        name, task, body, run_id, steps, model, checked_by, created, sha, mac = row
        sealed = self._sealer.holds(mac, "workflow", *row[:-1])
        level = level_of(checked_by) if sealed else "none"
        provenance = provenance_of(task, run_id, steps, model, level, created)
        if hashlib.sha256(body.encode("utf-8", "surrogatepass")).hexdigest() != sha:
            raise TamperedEntry(
                f"workflow {name!r} does not match its stored sha256 (the file was changed "
                f"outside agent-s); remove it with agent-s workflow forget {name}"
            )
        return StoredWorkflow(name, provenance, body, sha, sealed=sealed)

    def workflow(self, name: str) -> StoredWorkflow:
        """The workflow ``name`` (KeyError if there is none; TamperedEntry if its body no
        longer matches its hash)."""
        row = self._db.execute(
            f"SELECT {self._WORKFLOW_COLUMNS} FROM workflows WHERE name = ?",  # noqa: S608
            (name,),
        ).fetchone()
        if row is None:
            raise KeyError(name)
        return self._stored_workflow(row)

    def workflows(self) -> list[StoredWorkflow]:
        """Every stored workflow, by name."""
        rows = self._db.execute(
            f"SELECT {self._WORKFLOW_COLUMNS} FROM workflows ORDER BY name"  # noqa: S608
        ).fetchall()
        return [self._stored_workflow(row) for row in rows]

    def workflow_names(self) -> list[str]:
        """The name of every stored workflow, sorted (each read with ``workflow``: one whose
        body no longer matches its hash raises there, not here)."""
        rows = self._db.execute("SELECT name FROM workflows ORDER BY name").fetchall()
        return [str(name) for (name,) in rows]

    def forget_workflow(self, name: str) -> bool:
        """Delete the workflow ``name``; whether there was one."""
        with self._write():
            cursor = self._db.execute("DELETE FROM workflows WHERE name = ?", (name,))
        return cursor.rowcount > 0

    # -- export and import --

    def export_jsonl(self, path: Path) -> int:
        """Write every entry to ``path`` as JSON Lines (mode 0600); how many."""
        lines = [
            ExportedEntry(
                id=e.id,
                kind=e.kind,
                provenance=e.provenance,
                body=e.body,
                retrieved=e.retrieved,
                sha256=e.sha256,
            ).model_dump_json()
            for e in reversed(self.entries())
        ]
        files.write_text(path, "".join(line + "\n" for line in lines), mode=0o600)
        return len(lines)

    def import_jsonl(self, path: Path) -> ImportReport:
        """Add the entries of an export, unverified, without evicting anything to make room
        (``agent_s.memory.importing``)."""
        from agent_s.memory.importing import import_jsonl

        report = import_jsonl(self, path)
        self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the import's log, given back
        return report

    def add_imported(self, records: Iterable[ExportedEntry], total: int) -> ImportReport:
        """Add entries from a file (``total`` of them), each unverified and unused, in one
        transaction; entries already stored are skipped; stops before the first that would take
        the store over a bound (nothing is evicted)."""
        added = skipped = 0
        count, size = self.stats()
        with self._write():
            for done, record in enumerate(records):
                row = self._prepare(record.body, record.provenance.trusted_as("none"))
                taken = self._db.execute(
                    "SELECT 1 FROM entries WHERE fingerprint = ?", (row.fingerprint,)
                ).fetchone()
                if taken is not None:
                    skipped += 1
                    continue
                if count + 1 > self.max_entries or size + row.size > self.max_bytes:
                    return ImportReport(
                        added=added,
                        skipped=skipped,
                        stopped=(
                            f"the memory is full ({count:,} of {self.max_entries:,} entries, "
                            f"{size:,} of {self.max_bytes:,} bytes; the next entry has "
                            f"{row.size:,}): an import never evicts entries to make room; "
                            "forget some (agent-s memory forget) or raise [memory] "
                            "max_entries / max_bytes"
                        ),
                        left=total - done,
                    )
                self._insert(row, retrieved=0)
                added += 1
                count += 1
                size += row.size
        return ImportReport(added=added, skipped=skipped)


def open_configured(
    section: MemorySection, environ: Mapping[str, str] | None = None
) -> MemoryStore | None:
    """The store the ``[memory]`` settings name (created if missing), or None when memory is
    off; a store that cannot be opened is a ``ConfigError`` naming the setting to change."""
    if not section.enabled:
        return None
    path = section.path if section.path is not None else default_path(environ)
    try:
        return MemoryStore(path, max_entries=section.max_entries, max_bytes=section.max_bytes)
    except MemoryStoreError as err:
        raise ConfigError(
            f"memory: {err} (here: [memory] path or AGENT_S_MEMORY_DB; or run with --no-memory)",
            setting="memory.path",
        ) from None


__all__ = [
    "open_configured",
    "DB_ENV",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "MemoryStore",
    "StoredWorkflow",
    "check_workflow_name",
    "default_path",
]
