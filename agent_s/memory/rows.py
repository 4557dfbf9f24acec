"""How entries and workflows lie in the memory file: a row's sealed columns, its provenance
read back at the level the store trusts, the full-text query, workflow names, one transaction."""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from dataclasses import dataclass
from datetime import datetime, timezone

from pydantic import BaseModel

from agent_s.guards.trust import TRUST_LEVELS, TrustLevel
from agent_s.memory.entries import Provenance
from agent_s.memory.schema import CHECKED_AT

MAX_QUERY_WORDS = 32


def fingerprint(body: BaseModel, provenance: Provenance) -> str:
    canon = json.dumps(
        [body.model_dump(mode="json"), provenance.model_dump(mode="json")],
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(canon.encode("utf-8", "surrogatepass")).hexdigest()


def origin_columns(provenance: Provenance) -> tuple[str, str, str, str, str]:
    """A provenance's columns as stored: run_id, steps, model, checked_by, created."""
    created = provenance.created.astimezone(timezone.utc).isoformat()
    steps = json.dumps(list(provenance.steps))
    return provenance.run_id, steps, provenance.model, provenance.checked_by, created


def provenance_of(
    task: str, run_id: str, steps: str, model: str, level: TrustLevel, created: str
) -> Provenance:
    """A provenance read back from its columns, at the level the store trusts it."""
    return Provenance(
        run_id=run_id,
        steps=tuple(json.loads(steps)),
        created=datetime.fromisoformat(created),
        model=model,
        checked_by=level,
        task=task,
    )


def level_of(value: object) -> TrustLevel:
    """A stored ``checked_by`` as a level (``none`` for anything else)."""
    for known in TRUST_LEVELS:
        if value == known:
            return known
    return "none"


def match_string(query: str) -> str:
    """An FTS5 MATCH string from the words of ``query``: each word quoted, joined by OR.
    The query's own characters are never read as FTS5 syntax."""
    words: list[str] = []
    for word in re.findall(r"\w+", query.casefold()):
        if word not in words:
            words.append(word)
    return " OR ".join(f'"{word}"' for word in words[:MAX_QUERY_WORDS])


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
class Row:
    """An entry as its row holds it: the sealed columns (``SEALED_COLUMNS``), its MAC, its size."""

    fields: tuple[str | None, ...]
    mac: str
    size: int
    fingerprint: str

    @property
    def kind(self) -> str | None:
        return self.fields[0]

    @property
    def checked_by(self) -> str | None:
        return self.fields[CHECKED_AT]


@dataclass(frozen=True)
class StoredWorkflow:
    """A workflow as stored: its name, provenance, JSON body and the body's sha256;
    ``sealed``: this store's key sealed it (else its provenance says ``none``)."""

    name: str
    provenance: Provenance
    body: str
    sha256: str
    sealed: bool = False


class Transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on error): one short write."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: object, *_: object) -> None:
        self._db.execute("ROLLBACK" if kind is not None else "COMMIT")


__all__ = [
    "MAX_QUERY_WORDS",
    "Row",
    "StoredWorkflow",
    "Transaction",
    "check_workflow_name",
    "fingerprint",
    "level_of",
    "match_string",
    "origin_columns",
    "provenance_of",
]
