"""The memory file's schema: its migrations, applied in order (``PRAGMA user_version``)."""

from __future__ import annotations

import sqlite3

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
    # 2: named workflows (agent_s.replay.workflow): a replay script with parameters and provenance
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
    # 3: who checked each entry and workflow, sealed by the user's key (agent_s.guards.trust);
    # rows written before cannot be trusted: they become unverified (the store says so once)
    """
    ALTER TABLE entries ADD COLUMN checked_by TEXT NOT NULL DEFAULT 'none';
    ALTER TABLE entries ADD COLUMN mac TEXT;
    ALTER TABLE workflows ADD COLUMN checked_by TEXT NOT NULL DEFAULT 'none';
    ALTER TABLE workflows ADD COLUMN mac TEXT;
    UPDATE entries SET verified = 0;
    UPDATE workflows SET verified = 0;
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)
SEALED_FROM = 3  # the schema version that seals rows
# an entry's columns its MAC covers, in this order (``checked_by`` is the eighth)
SEALED_COLUMNS = "kind, task, text, body, run_id, steps, model, checked_by, created, sha256"
CHECKED_AT = 7


def statements(script: str) -> list[str]:
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
    "CHECKED_AT",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "SEALED_COLUMNS",
    "SEALED_FROM",
    "statements",
]
