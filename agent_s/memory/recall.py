"""Memory in a run's prompts: at most K entries relevant to the task, shown with provenance.

    recall = Recall(store, MemoryConfig(k=5))
    count, items = recall.items("Sum column B of sales.csv", "plan", folder=run_dir)
    # (0, "") when nothing matched; else numbered entries for a prompt's ``memory`` section

The store's full-text search (SQLite FTS5, bm25; verified entries above unverified ones) of
the query's words less stop words ("the", "and", ...) picks the entries; each one shown is
counted as retrieved (the store evicts never-retrieved entries first). Each entry says what it
is, whether a check verified its run's success, and where it came from (run, steps, date,
model, task); a skill shows its parameters and its exact code (or action calls). The prompts
that show them say they are advice, not instructions.

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

from agent_s.config import MemoryConfig
from agent_s.memory.entries import KINDS, Entry, Hit, Kind, Lesson, MemoryStoreError, Skill
from agent_s.memory.store import MemoryStore

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


def _fence(code: str) -> str:
    """A fence longer than any run of backticks in ``code``."""
    longest, run = 0, 0
    for char in code:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    return "`" * max(3, longest + 1)


def _clip(text: str, limit: int = _TEXT) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def provenance_line(entry: Entry) -> str:
    """``verified by a check; run R, step 3, 2026-12-01, model M``."""
    prov = entry.provenance
    proof = (
        "VERIFIED: a check confirmed that run's success"
        if prov.verified
        else "UNVERIFIED: no check confirmed that run's success"
    )
    steps = ""
    if prov.steps:
        shown = ", ".join(str(s) for s in prov.steps[:6]) + (", ..." if len(prov.steps) > 6 else "")
        steps = f", step{'s' if len(prov.steps) > 1 else ''} {shown}"
    day = prov.created.date().isoformat()
    return f"{proof}; from run {prov.run_id}{steps}, {day}, model {prov.model}"


def describe(number: int, entry: Entry) -> str:
    """One entry for a prompt: what it is, its provenance, its content."""
    body = entry.body
    lines: list[str]
    if isinstance(body, Skill):
        what = "actions" if body.language == "actions" else f"{body.language} code"
        lines = [f"[{number}] Skill ({what}): {_clip(body.description, 300)}"]
        lines.append(f"    {provenance_line(entry)}; task: {_clip(entry.provenance.task, 300)}")
        if body.check:
            lines.append(f"    Check that passed: {_clip(body.check, 300)}")
        if body.parameters:
            named = ", ".join(f"{name} = {value!r}" for name, value in body.parameters.items())
            lines.append(f"    Parameters (values from its task, to replace): {named}")
        if body.language == "actions":
            lines += [f"    {call}" for call in body.actions[:40]]
            if len(body.actions) > 40:
                lines.append(f"    ... and {len(body.actions) - 40} more action(s)")
        else:
            code = body.code
            cut = len(code) > CODE_CHARS
            if cut:
                code = code[:CODE_CHARS]
                lines.append(f"    (its code is {len(body.code):,} characters; the start is shown)")
            fence = _fence(code)
            lines += [f"{fence}{body.language}", code.rstrip("\n"), fence]
    elif isinstance(body, Lesson):
        lines = [f"[{number}] Lesson from the task: {_clip(entry.provenance.task, 300)}"]
        lines.append(f"    {provenance_line(entry)}")
        for label, text in (("Worked", body.worked), ("Failed", body.failed), ("Why", body.why)):
            if text:
                lines.append(f"    {label}: {_clip(text)}")
    else:  # a run summary
        lines = [f"[{number}] Earlier run ({body.status}) of the task: "]
        lines[0] += _clip(entry.provenance.task, 300)
        lines.append(f"    {provenance_line(entry)}")
        lines.append(f"    {_clip(body.summary)}")
        lines += [f"    - {_clip(step, 200)}" for step in body.key_steps[:8]]
    return "\n".join(lines)


def render_items(hits: Sequence[Hit]) -> str:
    return "\n".join(describe(n, hit.entry) for n, hit in enumerate(hits, 1))


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
    ) -> tuple[int, str]:
        """(how many, the numbered entries as text) for a prompt; (0, "") when none. Each
        entry shown is counted as retrieved (unless the store is frozen: ``write`` off) and
        the retrieval is recorded in ``folder``."""
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
        return len(hits), render_items(hits)


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
