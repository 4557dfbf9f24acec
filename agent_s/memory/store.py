"""The SQLite file: schema and migrations, writes, search, eviction, export and import."""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from agent_s.guards import files
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

DB_ENV = "AGENT_S_MEMORY_DB"  # the memory file, if not the default
# an unverified entry's relevance counts for this share of a verified one's
_UNVERIFIED_WEIGHT = 0.6
_MAX_QUERY_WORDS = 32
_BUSY_MS = 30_000


# -- the file -----------------------------------------------------------------------------------

MIGRATIONS: tuple[str, ...] = (
    # 1: entries, their full-text index kept by triggers
    """
    CREATE TABLE entries (
        id INTEGER PRIMARY KEY,
        kind TEXT NOT NULL CHECK (kind IN ('run', 'lesson', 'skill')),
        task TEXT NOT NULL,
        text TEXT NOT NULL,
        body TEXT NOT NULL,
        run_id TEXT NOT NULL,
        steps TEXT NOT NULL,
        model TEXT NOT NULL,
        verified INTEGER NOT NULL,
        created TEXT NOT NULL,
        sha256 TEXT,
        retrieved INTEGER NOT NULL DEFAULT 0,
        size INTEGER NOT NULL,
        fingerprint TEXT NOT NULL UNIQUE
    );
    CREATE INDEX entries_eviction ON entries ((retrieved > 0), verified, created, id);
    CREATE VIRTUAL TABLE entries_fts USING fts5(
        task, text, tokenize = 'unicode61 remove_diacritics 2'
    );
    CREATE TRIGGER entries_ai AFTER INSERT ON entries BEGIN
        INSERT INTO entries_fts (rowid, task, text) VALUES (new.id, new.task, new.text);
    END;
    CREATE TRIGGER entries_ad AFTER DELETE ON entries BEGIN
        DELETE FROM entries_fts WHERE rowid = old.id;
    END;
    """,
    # 2: named workflows (agent_s.workflow): a replay script with parameters and provenance
    """
    CREATE TABLE workflows (
        name TEXT PRIMARY KEY,
        task TEXT NOT NULL,
        body TEXT NOT NULL,
        run_id TEXT NOT NULL,
        steps TEXT NOT NULL,
        model TEXT NOT NULL,
        verified INTEGER NOT NULL,
        created TEXT NOT NULL,
        sha256 TEXT NOT NULL
    );
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)


def default_path(env: Mapping[str, str] | None = None) -> Path:
    """``$AGENT_S_MEMORY_DB``, else ``$XDG_DATA_HOME/agent-s/memory.sqlite3``, else
    ``~/.local/share/agent-s/memory.sqlite3``."""
    env = os.environ if env is None else env
    if env.get(DB_ENV):
        return Path(env[DB_ENV]).expanduser()
    data = env.get("XDG_DATA_HOME")
    base = Path(data) if data and Path(data).is_absolute() else Path.home() / ".local" / "share"
    return base / "agent-s" / "memory.sqlite3"


def _fingerprint(body: BaseModel, provenance: Provenance) -> str:
    canon = json.dumps(
        [body.model_dump(mode="json"), provenance.model_dump(mode="json")],
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(canon.encode("utf-8", "surrogatepass")).hexdigest()


def _match_string(query: str) -> str:
    """An FTS5 MATCH string from the words of ``query``: each word quoted, joined by OR.
    The query's own characters are never read as FTS5 syntax."""
    words: list[str] = []
    for word in re.findall(r"\w+", query.casefold()):
        if word not in words:
            words.append(word)
    return " OR ".join(f'"{word}"' for word in words[:_MAX_QUERY_WORDS])


class MemoryStore:
    """One SQLite memory file. Safe to use from several processes at once; one instance per
    thread (its connection is not shared)."""

    def __init__(
        self,
        path: Path | None = None,
        *,
        max_entries: int = 2000,
        max_bytes: int = 20_000_000,
    ) -> None:
        if max_entries < 1 or max_bytes < 1:
            raise ValueError("max_entries and max_bytes must be at least 1")
        self.path = Path(path) if path is not None else default_path()
        self.max_entries = max_entries
        self.max_bytes = max_bytes
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
        try:
            db.execute(f"PRAGMA busy_timeout = {_BUSY_MS}")
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = NORMAL")
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
            for number in range(version, SCHEMA_VERSION):
                for statement in _statements(MIGRATIONS[number]):
                    db.execute(statement)
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

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

    def _write(self) -> _Transaction:
        return _Transaction(self._db)

    # -- writing --

    def add(self, body: RunSummary | Lesson | Skill, provenance: Provenance) -> int:
        """Store one entry; its id (the existing one's if the same entry is stored already).
        A skill from an unverified run is refused (ValueError); a skill without parameters
        gets them extracted from the task. Evicts afterwards if over a bound."""
        with self._write():
            entry_id = self._insert(body, provenance, retrieved=0)
        self.evict()
        return entry_id

    def add_run(self, summary: RunSummary, provenance: Provenance) -> int:
        return self.add(summary, provenance)

    def add_lesson(self, lesson: Lesson, provenance: Provenance) -> int:
        return self.add(lesson, provenance)

    def add_skill(self, skill: Skill, provenance: Provenance) -> int:
        return self.add(skill, provenance)

    def _insert(
        self, body: RunSummary | Lesson | Skill, provenance: Provenance, *, retrieved: int
    ) -> int:
        sha: str | None = None
        if isinstance(body, Skill):
            if not provenance.verified:
                raise ValueError(
                    "a skill is stored only from a run whose success a check verified; "
                    f"run {provenance.run_id} is unverified"
                )
            if not body.parameters:
                body = with_parameters(body, provenance.task)
            sha = body.sha256
        fingerprint = _fingerprint(body, provenance)
        row = self._db.execute(
            "SELECT id FROM entries WHERE fingerprint = ?", (fingerprint,)
        ).fetchone()
        if row is not None:
            return int(row[0])
        body_json = body.model_dump_json()
        text = body.text()
        size = len(body_json.encode()) + len(provenance.task.encode()) + len(text.encode())
        cursor = self._db.execute(
            "INSERT INTO entries (kind, task, text, body, run_id, steps, model, verified, "
            "created, sha256, retrieved, size, fingerprint) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                body.kind,
                provenance.task,
                text,
                body_json,
                provenance.run_id,
                json.dumps(list(provenance.steps)),
                provenance.model,
                int(provenance.verified),
                provenance.created.astimezone(timezone.utc).isoformat(),
                sha,
                retrieved,
                size,
                fingerprint,
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
        return int(before - after)

    def evict(self) -> int:
        """Remove the least useful entries until both bounds hold: never retrieved first, then
        unverified, then oldest. How many were removed."""
        removed = 0
        with self._write():
            count, size = self._db.execute(
                "SELECT count(*), coalesce(sum(size), 0) FROM entries"
            ).fetchone()
            if count <= self.max_entries and size <= self.max_bytes:
                return 0
            rows = self._db.execute(
                "SELECT id, size FROM entries ORDER BY (retrieved > 0), verified, created, id"
            )
            doomed: list[tuple[int]] = []
            for entry_id, entry_size in rows:
                if count <= self.max_entries and size <= self.max_bytes:
                    break
                doomed.append((entry_id,))
                count -= 1
                size -= entry_size
            self._db.executemany("DELETE FROM entries WHERE id = ?", doomed)
            removed = len(doomed)
        return removed

    # -- reading --

    _COLUMNS = "id, body, run_id, steps, model, verified, created, task, sha256, retrieved"

    def _entry(self, row: Sequence[Any]) -> Entry:
        entry_id, body_json, run_id, steps, model, verified, created, task, sha, retrieved = row
        provenance = Provenance(
            run_id=run_id,
            steps=tuple(json.loads(steps)),
            created=datetime.fromisoformat(created),
            model=model,
            verified=bool(verified),
            task=task,
        )
        entry = Entry.model_validate(
            {
                "id": entry_id,
                "provenance": provenance,
                "body": json.loads(body_json),
                "retrieved": retrieved,
                "sha256": sha,
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
        match = _match_string(query)
        wanted = list(KINDS if kinds is None else kinds)
        if not match or k < 1 or not wanted:
            return []
        marks = ", ".join("?" for _ in wanted)
        columns = ", ".join(f"e.{c.strip()}" for c in self._COLUMNS.split(","))
        rows = self._db.execute(
            f"SELECT {columns}, bm25(entries_fts, 2.0, 1.0) * "  # noqa: S608 - placeholders
            f"(CASE WHEN e.verified THEN 1.0 ELSE {_UNVERIFIED_WEIGHT} END) AS rank "
            "FROM entries_fts JOIN entries AS e ON e.id = entries_fts.rowid "
            f"WHERE entries_fts MATCH ? AND e.kind IN ({marks}) "
            "ORDER BY rank, e.verified DESC, e.id DESC LIMIT ?",
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
        the body; a name already taken is refused (ValueError) unless ``replace``."""
        check_workflow_name(name)
        sha = hashlib.sha256(body.encode("utf-8", "surrogatepass")).hexdigest()
        created = provenance.created.astimezone(timezone.utc).isoformat()
        values = (
            name,
            provenance.task,
            body,
            provenance.run_id,
            json.dumps(list(provenance.steps)),
            provenance.model,
            int(provenance.verified),
            created,
            sha,
        )
        with self._write():
            taken = self._db.execute("SELECT 1 FROM workflows WHERE name = ?", (name,)).fetchone()
            if taken and not replace:
                raise ValueError(
                    f"a workflow named {name!r} exists already: choose another name, or replace "
                    f"it (agent-s workflow save ... --replace; agent-s workflow forget {name})"
                )
            self._db.execute(
                "INSERT OR REPLACE INTO workflows (name, task, body, run_id, steps, model, "
                "verified, created, sha256) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                values,
            )
        return StoredWorkflow(name, provenance, body, sha)

    _WORKFLOW_COLUMNS = "name, task, body, run_id, steps, model, verified, created, sha256"

    def _stored_workflow(self, row: Sequence[Any]) -> StoredWorkflow:
        name, task, body, run_id, steps, model, verified, created, sha = row
        provenance = Provenance(
            run_id=run_id,
            steps=tuple(json.loads(steps)),
            created=datetime.fromisoformat(created),
            model=model,
            verified=bool(verified),
            task=task,
        )
        if hashlib.sha256(body.encode("utf-8", "surrogatepass")).hexdigest() != sha:
            raise TamperedEntry(
                f"workflow {name!r} does not match its stored sha256 (the file was changed "
                f"outside agent-s); remove it with agent-s workflow forget {name}"
            )
        return StoredWorkflow(name, provenance, body, sha)

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
        """Add the entries of an export. Every line is checked first (its fields, and a skill's
        code against its sha256); one bad line refuses the whole file (ValueError naming the
        line). Entries already stored are skipped."""
        records: list[ExportedEntry] = []
        with open(path, encoding="utf-8") as lines:
            for number, line in enumerate(lines, 1):
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
                self._check_record(path, number, record)
                records.append(record)
        added = skipped = 0
        with self._write():
            for record in records:
                before = self._db.execute("SELECT count(*) FROM entries").fetchone()[0]
                self._insert(record.body, record.provenance, retrieved=record.retrieved)
                after = self._db.execute("SELECT count(*) FROM entries").fetchone()[0]
                if after > before:
                    added += 1
                else:
                    skipped += 1
        self.evict()
        return ImportReport(added=added, skipped=skipped)

    @staticmethod
    def _check_record(path: Path, number: int, record: ExportedEntry) -> None:
        where = f"{path}:{number}"
        if record.kind != record.body.kind:
            raise ValueError(f"{where}: kind {record.kind!r} but a {record.body.kind} body")
        if isinstance(record.body, Skill):
            if record.sha256 != record.body.sha256:
                raise ValueError(
                    f"{where}: the skill's code does not match its sha256; the file was "
                    "changed after export, export it again"
                )
            if not record.provenance.verified:
                raise ValueError(f"{where}: a skill from an unverified run cannot be imported")
        elif record.sha256 is not None:
            raise ValueError(f"{where}: only a skill has a sha256")


_WORKFLOW_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}")


def check_workflow_name(name: str) -> str:
    """``name`` if it can name a workflow (letters, digits, ``_ . -``, at most 64, starting
    with a letter or digit); ValueError naming the rule otherwise."""
    if not _WORKFLOW_NAME.fullmatch(name):
        raise ValueError(
            f"{name!r} cannot name a workflow: use letters, digits, '_', '.' and '-' (at most "
            "64, starting with a letter or digit), e.g. save-note"
        )
    return name


@dataclass(frozen=True)
class StoredWorkflow:
    """A workflow as stored: its name, provenance, JSON body and the body's sha256."""

    name: str
    provenance: Provenance
    body: str
    sha256: str


class _Transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on error): one short write."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: object, *_: object) -> None:
        self._db.execute("ROLLBACK" if kind is not None else "COMMIT")


def _statements(script: str) -> list[str]:
    """A migration's statements, split where SQLite says one is complete (triggers hold ``;``)."""
    out: list[str] = []
    current = ""
    for line in script.splitlines(keepends=True):
        current += line
        if sqlite3.complete_statement(current):
            out.append(current.strip())
            current = ""
    if current.strip():
        out.append(current.strip())
    return out


__all__ = [
    "DB_ENV",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "MemoryStore",
    "StoredWorkflow",
    "check_workflow_name",
    "default_path",
]
