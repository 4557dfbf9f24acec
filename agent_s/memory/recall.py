"""Memory in a run's prompts: at most K entries relevant to the task, shown with provenance.

    recall = Recall(store, MemoryConfig(k=5))
    count, items = recall.items("Sum column B of sales.csv", "plan", folder=run_dir)
    # (0, "") when nothing matched; else numbered entries for a prompt's ``memory`` section

The store's full-text search (SQLite FTS5, bm25; verified entries above unverified ones) of
the query's words less stop words ("the", "and", ...) picks the entries; each one shown is
counted as retrieved (the store evicts never-retrieved entries first). Each entry says what it
is, who checked its run (verified: a check the user gave; checked by a model-written check;
unverified) and where it came from (run, steps, date, model, task); a skill shows its
parameters and its exact code (or action calls). Every stored text is data: each field is one
quoted, bounded line (newlines and control characters escaped), under an entry header that
carries a nonce fresh for each request, which no stored text can know, so no entry can print
a second entry or a trust label of its own. The prompts that show them say so.

What was shown is recorded in the trajectory folder's ``memory.jsonl``, one line per
retrieval: the purpose (``plan``, ``worker``, ``code``), the query, and each entry's id, kind,
run, verified flag and, for a skill, its sha256, so a later code block whose ``code_sha256``
equals a shown skill's is a reuse that can be proven. No entry text is written there.

Nothing here goes over the network; a memory file that cannot be read costs the run its
memory, never the run itself (``problems`` says why).
"""

from __future__ import annotations

import json
import re
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path

from agent_s.guards.trust import nonce, quote
from agent_s.memory.entries import KINDS, Entry, Hit, Kind, Lesson, MemoryStoreError, Skill
from agent_s.memory.store import MemoryStore
from agent_s.settings.config import MemoryConfig

MEMORY_FILE = "memory.jsonl"
CODE_CHARS = 4000  # a skill's code longer than this is shown cut (and says so)
_TEXT = 600


# words that say nothing about what a task is about; a query is searched without them
_STOP = """a about above after again all also an and any are as at be been before being below
    between both but by can could did do does doing done down each else few for from further
    had has have having her here hers him his how i if in into is it its itself just me more
    most my no nor not now of off on once only or other our out over own please same she
    should so some such than that the their them then there these they this those through to
    too under until up very was we were what when where which while who whom why will with
    would you your yours"""
STOPWORDS = frozenset(_STOP.split())


def query_words(text: str) -> str:
    """The words of ``text`` worth searching for: no stop words, no single letters."""
    words = re.findall(r"\w+", text)
    kept = [w for w in words if len(w) > 1 and w.casefold() not in STOPWORDS]
    return " ".join(dict.fromkeys(kept))


def _clip(text: str, limit: int = _TEXT) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


# what each trust level is called in a prompt (``agent_s.guards.trust``)
_TRUST = {
    "user": "VERIFIED: a check the user gave confirmed that run's success",
    "model-check": (
        "UNVERIFIED, CHECKED BY A MODEL-WRITTEN CHECK only: no check the user gave confirmed it"
    ),
    "none": "UNVERIFIED: no check confirmed that run's success",
}


def provenance_line(entry: Entry) -> str:
    """``trust: VERIFIED: ...`` and ``from: run "R", step 3, 2026-12-01, model "M"``: the
    level is agent-s's own word; the run and model names are quoted (a file may have set them)."""
    prov = entry.provenance
    steps = ""
    if prov.steps:
        shown = ", ".join(str(s) for s in prov.steps[:6]) + (", ..." if len(prov.steps) > 6 else "")
        steps = f", step{'s' if len(prov.steps) > 1 else ''} {shown}"
    day = prov.created.date().isoformat()
    source = f"run {quote(prov.run_id, 120)}{steps}, {day}, model {quote(prov.model, 120)}"
    return f"  trust: {_TRUST[prov.checked_by]}\n  from: {source}"


def describe(number: int, entry: Entry, mark: str) -> str:
    """One entry for a prompt: a header line only agent-s writes (``entry N <mark>: kind``),
    then one line per field, each value quoted on one line and bounded (``guards.trust.quote``),
    so no stored text can start a line, an entry or a trust label of its own."""
    body = entry.body
    task = f"  task: {quote(entry.provenance.task, 300)}"
    lines: list[str]
    if isinstance(body, Skill):
        what = "actions" if body.language == "actions" else f"{body.language} code"
        lines = [f"entry {number} {mark}: skill ({what})", provenance_line(entry), task]
        lines.append(f"  description: {quote(body.description, 300)}")
        if body.check:
            lines.append(f"  check that passed: {quote(body.check, 300)}")
        if body.parameters:
            named = ", ".join(
                f"{quote(name, 60)} = {quote(value, 200)}"
                for name, value in list(body.parameters.items())[:20]
            )
            lines.append(f"  parameters (values from its task, to replace): {named}")
        if body.language == "actions":
            lines += [f"  action: {quote(call, 300)}" for call in body.actions[:40]]
            if len(body.actions) > 40:
                lines.append(f"  ({len(body.actions) - 40} more action(s) not shown)")
        else:
            lines.append(f"  code ({len(body.code):,} characters): {quote(body.code, CODE_CHARS)}")
    elif isinstance(body, Lesson):
        lines = [f"entry {number} {mark}: lesson", provenance_line(entry), task]
        for label, text in (("worked", body.worked), ("failed", body.failed), ("why", body.why)):
            if text:
                lines.append(f"  {label}: {quote(text, _TEXT)}")
    else:  # a run summary
        lines = [f"entry {number} {mark}: earlier run", provenance_line(entry), task]
        lines.append(f"  ended: {quote(body.status, 40)}")
        lines.append(f"  summary: {quote(body.summary, _TEXT)}")
        lines += [f"  step: {quote(step, 200)}" for step in body.key_steps[:8]]
    return "\n".join(lines)


def render_items(hits: Sequence[Hit], mark: str) -> str:
    """The entries, numbered, each under a header carrying ``mark`` (a fresh nonce)."""
    return "\n".join(describe(n, hit.entry, mark) for n, hit in enumerate(hits, 1))


class Recall:
    """Retrieval for one agent (its store, its settings); one thread (the store's rule)."""

    def __init__(self, store: MemoryStore, config: MemoryConfig) -> None:
        self.store = store
        self.config = config
        self.problems: list[str] = []  # why memory could not be read, if it could not

    def hits(
        self,
        query: str,
        *,
        kinds: Sequence[Kind] | None = None,
        k: int | None = None,
        first: Sequence[Kind] = (),
    ) -> list[Hit]:
        """The entries relevant to ``query`` (at most K), not yet counted as retrieved;
        those of the kinds ``first`` (e.g. skills, for the code agent) before the others."""
        limit = self.config.k if k is None else min(k, self.config.k)
        words = query_words(query)
        if not self.config.retrieve or limit < 1 or not words:
            return []
        wanted = list(KINDS if kinds is None else kinds)
        preferred = [kind for kind in first if kind in wanted]
        rest = [kind for kind in wanted if kind not in preferred]
        try:
            found = self.store.search(words, k=limit, kinds=preferred) if preferred else []
            if len(found) < limit and rest:
                found += self.store.search(words, k=limit - len(found), kinds=rest)
        except (MemoryStoreError, sqlite3.Error) as err:
            self.problems.append(f"memory search failed: {err}")
            return []
        return found

    def items(
        self,
        query: str,
        purpose: str,
        *,
        folder: Path | None = None,
        after_step: int = 0,
        kinds: Sequence[Kind] | None = None,
        k: int | None = None,
        first: Sequence[Kind] = (),
        mark: str = "",
    ) -> tuple[int, str]:
        """(how many, the numbered entries as text) for a prompt; (0, "") when none. ``mark``:
        the request's nonce, in every entry's header (``guards.trust.nonce``). Each entry
        shown is counted as retrieved (unless the store is frozen: ``write`` off) and the
        retrieval is recorded in ``folder``."""
        hits = self.hits(query, kinds=kinds, k=k, first=first)
        if not hits:
            return 0, ""
        ids = [hit.entry.id for hit in hits]
        try:
            if self.config.write:  # a frozen store is only read
                self.store.mark_retrieved(ids)
        except (MemoryStoreError, sqlite3.Error) as err:
            self.problems.append(f"memory could not count a retrieval: {err}")
        if folder is not None:
            record(folder, purpose, query, after_step, hits)
        return len(hits), render_items(hits, mark or nonce())


def record(folder: Path, purpose: str, query: str, after_step: int, hits: Sequence[Hit]) -> None:
    """One line of ``memory.jsonl``: what was shown, by id (no entry text)."""
    line = {
        "event": "retrieved",
        "time": round(time.time(), 3),
        "purpose": purpose,
        "after_step": after_step,
        "query": _clip(query, 300),
        "entries": [
            {
                "id": hit.entry.id,
                "kind": hit.entry.kind,
                "run_id": hit.entry.provenance.run_id,
                "verified": hit.entry.provenance.verified,
                "checked_by": hit.entry.provenance.checked_by,
                "sha256": hit.entry.sha256,
                "score": round(hit.score, 4),
            }
            for hit in hits
        ],
    }
    try:
        with open(folder / MEMORY_FILE, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(line, ensure_ascii=False) + "\n")
            handle.flush()
    except OSError:  # the trajectory folder is gone: the prompt still gets its memory
        pass


def retrievals(folder: Path) -> list[dict[str, object]]:
    """The retrievals a run folder's ``memory.jsonl`` records, in order."""
    path = Path(folder) / MEMORY_FILE
    if not path.is_file():
        return []
    found: list[dict[str, object]] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            found.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return found


def retrieved_count(folder: Path) -> int:
    """How many entries the run in ``folder`` was shown, over all its retrievals."""
    total = 0
    for line in retrievals(folder):
        entries = line.get("entries")
        total += len(entries) if isinstance(entries, list) else 0
    return total


__all__ = [
    "CODE_CHARS",
    "MEMORY_FILE",
    "Recall",
    "describe",
    "provenance_line",
    "query_words",
    "record",
    "render_items",
    "retrievals",
    "retrieved_count",
]
