"""The memory store (agent_s.memory) and ``agent-s memory``: real SQLite files, real processes."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import stat
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from agent_s.memory import (
    SCHEMA_VERSION,
    Lesson,
    MemoryStore,
    MemoryStoreError,
    Provenance,
    RunSummary,
    SchemaTooNew,
    Skill,
    TamperedEntry,
    default_path,
    extract_parameters,
    instantiate,
)

AGENT_S = str(Path(sys.executable).parent / "agent-s")
TASK = "Keep the rows of 'sales.csv' whose amount is over 200 and save them as report_2000.txt"
CODE = (
    "import csv\n"
    "rows = [r for r in csv.reader(open('sales.csv')) if float(r[1]) > 200]\n"
    "limit = 2000  # 20 per page\r\n"
    "open('report_2000.txt', 'w').write('\\n'.join(','.join(r) for r in rows[:limit]))\n"
)


def prov(
    run: str = "run-1", *, verified: bool = True, task: str = TASK, **kw: object
) -> Provenance:
    return Provenance(
        run_id=run, steps=(3,), model="scripted-model", verified=verified, task=task, **kw
    )  # type: ignore[arg-type]


def skill(code: str = CODE) -> Skill:
    return Skill(
        description="filter CSV rows by amount and save them",
        language="python",
        code=code,
        inputs=("sales.csv",),
        outputs=("report_2000.txt",),
        check="test -s ~/report_2000.txt",
    )


# -- files, permissions, schema -----------------------------------------------------------------


def test_default_file_is_private_under_xdg_data_home(tmp_path: Path) -> None:
    env = {"XDG_DATA_HOME": str(tmp_path / "data")}
    path = default_path(env)
    assert path == tmp_path / "data" / "agent-s" / "memory.sqlite3"
    assert default_path({"AGENT_S_MEMORY_DB": str(tmp_path / "x.db")}) == tmp_path / "x.db"
    with MemoryStore(path) as store:
        store.add(RunSummary(status="success", summary="did it"), prov())
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_a_newer_schema_is_refused_naming_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite3"
    MemoryStore(path).close()
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(SchemaTooNew, match="upgrade agent-s"):
        MemoryStore(path)


def test_a_file_that_is_not_a_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite3"
    path.write_bytes(b"not sqlite at all, " * 100)
    with pytest.raises(MemoryStoreError, match="--db"):
        MemoryStore(path)


# -- entries and provenance ---------------------------------------------------------------------


def test_every_kind_round_trips_with_its_provenance(tmp_path: Path) -> None:
    created = datetime(2026, 5, 1, 12, 0, tzinfo=timezone.utc)
    with MemoryStore(tmp_path / "m.sqlite3") as store:
        run_id = store.add(
            RunSummary(status="failed", summary="gave up", key_steps=("opened gedit",)),
            prov("run-9", verified=False, created=created),
        )
        lesson_id = store.add(
            Lesson(worked="ctrl+s", failed="the menu", why="hidden"), prov("run-9", verified=False)
        )
        again = store.add(
            RunSummary(status="failed", summary="gave up", key_steps=("opened gedit",)),
            prov("run-9", verified=False, created=created),
        )
        assert again == run_id  # the same entry twice is stored once
        run = store.get(run_id)
        assert run.kind == "run"
        assert run.body == RunSummary(
            status="failed", summary="gave up", key_steps=("opened gedit",)
        )
        assert run.provenance.run_id == "run-9"
        assert run.provenance.steps == (3,)
        assert run.provenance.created == created
        assert run.provenance.verified is False
        assert run.provenance.model == "scripted-model"
        assert run.provenance.task == TASK
        assert store.get(lesson_id).body == Lesson(worked="ctrl+s", failed="the menu", why="hidden")
        assert [e.id for e in store.entries()] == [lesson_id, run_id]
        assert [e.id for e in store.entries(["lesson"])] == [lesson_id]
        with pytest.raises(KeyError):
            store.get(999)
        assert store.forget([run_id, 999]) == 1
        assert [e.id for e in store.entries()] == [lesson_id]


def test_a_skill_is_stored_byte_for_byte_with_its_hash(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite3"
    with MemoryStore(path) as store:
        entry = store.get(store.add(skill(), prov()))
    assert isinstance(entry.body, Skill)
    assert entry.body.code == CODE  # the \r\n and the escaped \\n too
    assert entry.sha256 == hashlib.sha256(CODE.encode()).hexdigest()
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT sha256 FROM entries").fetchone()[0] == entry.sha256
    actions = ("click('File')", "hotkey('ctrl', 's')", "type_text('a\\nb')")
    gui = Skill(description="save", language="actions", actions=actions)
    with MemoryStore(path) as store:
        stored = store.get(store.add(gui, prov("run-2")))
    assert isinstance(stored.body, Skill)
    assert stored.body.actions == actions
    expected = json.dumps(list(actions), ensure_ascii=False, separators=(",", ":")).encode()
    assert stored.sha256 == hashlib.sha256(expected).hexdigest()


def test_tampered_code_in_the_file_makes_reading_raise(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite3"
    with MemoryStore(path) as store:
        entry_id = store.add(skill(), prov())
    with sqlite3.connect(path) as db:
        db.execute("UPDATE entries SET body = replace(body, '200', '100')")
    with MemoryStore(path) as store:
        with pytest.raises(TamperedEntry, match=f"forget {entry_id}"):
            store.get(entry_id)
        with pytest.raises(TamperedEntry):
            store.search("sales rows amount")


def test_a_skill_from_an_unverified_run_is_refused(tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "m.sqlite3") as store:
        with pytest.raises(ValueError, match="unverified"):
            store.add(skill(), prov(verified=False))
        assert store.entries() == []


# -- parameters ---------------------------------------------------------------------------------


def test_parameters_are_literals_the_task_and_the_code_share() -> None:
    params = extract_parameters(TASK, CODE)
    assert params == {"file_1": "sales.csv", "number_1": "200", "file_2": "report_2000.txt"}
    # "2000" is in the code but not as a value of the task; "20" is nowhere a whole token
    assert extract_parameters("show 20 rows of 'data.csv'", "n = 2000\nx20 = 20.5\n") == {}
    assert extract_parameters(
        "move ~/inbox/a.txt to /srv/data/2024 now", "mv ~/inbox/a.txt /srv/data/2024/\n"
    ) == {"file_1": "~/inbox/a.txt", "file_2": "/srv/data/2024"}
    assert extract_parameters('rename "Q3 totals" to x', "title = 'Q3 totals'\n") == {
        "text_1": "Q3 totals"
    }


def test_instantiate_replaces_whole_tokens_only(tmp_path: Path) -> None:
    task = "print the first 20 lines of 'log.txt'"
    tail = "    print(line)  # 2000, 20.5, x20, a_log.txt\n"
    code = "for line in open('log.txt').readlines()[:20]:\n" + tail
    with MemoryStore(tmp_path / "m.sqlite3") as store:
        stored = store.get(
            store.add(Skill(description="head", language="python", code=code), prov(task=task))
        )
    assert isinstance(stored.body, Skill)
    assert stored.body.parameters == {"number_1": "20", "file_1": "log.txt"}
    new = instantiate(stored.body, {"number_1": "7", "file_1": "other.log"})
    assert new.code == "for line in open('other.log').readlines()[:7]:\n" + tail
    assert new.parameters == {"number_1": "7", "file_1": "other.log"}
    assert stored.body.code == code  # the stored skill is unchanged
    # values swap in one pass: a new value equal to another literal is not replaced again
    swapped = instantiate(stored.body, {"number_1": "30", "file_1": "20"})
    assert swapped.code.startswith("for line in open('20').readlines()[:30]:")
    with pytest.raises(ValueError, match="no parameter"):
        instantiate(stored.body, {"file_9": "x"})
    with pytest.raises(ValueError, match="quote"):
        instantiate(stored.body, {"file_1": "x'); import os; ('"})
    with pytest.raises(ValueError, match="number"):
        instantiate(stored.body, {"number_1": "ten"})


# -- search -------------------------------------------------------------------------------------


def test_hostile_queries_do_not_raise_and_find_the_entry(tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "m.sqlite3") as store:
        target = store.add(skill(), prov())
        store.add(Lesson(worked="Zürich naïve café menu"), prov("run-2", task="order coffee"))
        store.add(
            RunSummary(status="success", summary="set wallpaper"), prov("run-3", task="wallpaper")
        )
        for query in [
            '"sales',
            "-sales",
            "sales NEAR(",
            "sales*",
            "AND OR NOT sales",
            "sales)",
            "sales:csv",
            "'; DROP TABLE entries; -- sales",
        ]:
            hits = store.search(query)
            assert [h.entry.id for h in hits][:1] == [target], query
        cafe = store.search('ZÜRICH "cafe" ☕')
        assert cafe
        assert cafe[0].entry.provenance.run_id == "run-2"
        assert store.search("") == []
        assert store.search('" - * ( )') == []
        assert store.search("sales", kinds=["lesson"]) == []


def test_verified_entries_rank_above_unverified_ones_and_uses_are_counted(tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "m.sqlite3") as store:
        text = "export the spreadsheet as pdf"
        unverified = store.add(Lesson(worked=text), prov("run-u", verified=False, task=text))
        verified = store.add(Lesson(worked=text), prov("run-v", verified=True, task=text))
        hits = store.search("export spreadsheet pdf")
        assert [h.entry.id for h in hits] == [verified, unverified]
        assert hits[0].score > hits[1].score
        store.mark_retrieved([verified, verified, unverified])
        assert store.get(verified).retrieved == 2
        assert store.get(unverified).retrieved == 1


# -- bounds -------------------------------------------------------------------------------------


def test_eviction_keeps_both_bounds_in_the_stated_order(tmp_path: Path) -> None:
    old = datetime(2025, 1, 1, tzinfo=timezone.utc)
    path = tmp_path / "m.sqlite3"
    with MemoryStore(path, max_entries=100) as store:
        used_unverified = store.add(Lesson(worked="a"), prov("u1", verified=False, created=old))
        used_verified_old = store.add(Lesson(worked="b"), prov("v1", created=old))
        store.mark_retrieved([used_unverified, used_verified_old])
        fresh_unverified = store.add(Lesson(worked="c"), prov("u2", verified=False))
        old_verified = store.add(Lesson(worked="d"), prov("v2", created=old))
        new_verified = store.add(Lesson(worked="e"), prov("v3", created=old + timedelta(days=1)))
    with MemoryStore(path, max_entries=4) as store:
        assert store.evict() == 1  # never retrieved and unverified goes first
        assert fresh_unverified not in {e.id for e in store.entries()}
    with MemoryStore(path, max_entries=3) as store:
        store.evict()  # then never retrieved, verified, oldest first
        assert {e.id for e in store.entries()} == {used_unverified, used_verified_old, new_verified}
        assert old_verified not in {e.id for e in store.entries()}
    with MemoryStore(path, max_entries=2) as store:
        store.evict()  # a never-retrieved entry goes before any retrieved one
        assert {e.id for e in store.entries()} == {used_unverified, used_verified_old}
    with MemoryStore(path, max_entries=1) as store:
        store.evict()  # every one left has been retrieved: unverified first
        assert {e.id for e in store.entries()} == {used_verified_old}
    # the byte bound: adding keeps the total under it, whatever the count
    with MemoryStore(tmp_path / "b.sqlite3", max_entries=10_000, max_bytes=5_000) as store:
        for n in range(60):
            store.add(Lesson(worked=f"lesson {n} " + "x" * 200), prov(f"r{n}"))
            count, size = store.stats()
            assert size <= 5_000
        assert 0 < count < 60
        kept = sorted(int(e.provenance.run_id[1:]) for e in store.entries())
        assert kept == list(range(60 - count, 60))  # the newest were kept
    with MemoryStore(tmp_path / "c.sqlite3", max_entries=25) as store:
        for n in range(40):
            store.add(Lesson(worked=f"count {n}"), prov(f"r{n}"))
        assert store.stats()[0] == 25


_WRITER = """
import sys
from pathlib import Path
from agent_s.memory import Lesson, MemoryStore, Provenance
with MemoryStore(Path(sys.argv[1])) as store:
    for n in range(200):
        store.add(Lesson(worked=f"{sys.argv[2]} lesson {n}"),
                  Provenance(run_id=f"{sys.argv[2]}-{n}", model="m", verified=True, task="t"))
"""


def test_two_processes_write_concurrently_without_loss(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite3"
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(path), name], stderr=subprocess.PIPE, text=True
        )
        for name in ("alpha", "beta")
    ]
    for writer in writers:
        _, err = writer.communicate(timeout=300)
        assert writer.returncode == 0, err
    with MemoryStore(path) as store:
        runs = {e.provenance.run_id for e in store.entries()}
    assert runs == {f"{name}-{n}" for name in ("alpha", "beta") for n in range(200)}


# -- export and import --------------------------------------------------------------------------


def _filled(path: Path) -> MemoryStore:
    store = MemoryStore(path)
    store.add(skill(), prov())
    store.add(Lesson(worked="ctrl+s", why="menus hide"), prov("run-2", verified=False))
    store.add(RunSummary(status="success", summary="ok", key_steps=("a", "b")), prov("run-3"))
    return store


def test_export_then_import_round_trips_and_skips_duplicates(tmp_path: Path) -> None:
    out = tmp_path / "memory.jsonl"
    with _filled(tmp_path / "a.sqlite3") as store:
        store.mark_retrieved([1])
        assert store.export_jsonl(out) == 3
        before = [e.model_dump() for e in store.entries()]
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert lines[0]["sha256"] == hashlib.sha256(CODE.encode()).hexdigest()
    assert lines[0]["provenance"]["run_id"] == "run-1"
    assert lines[0]["body"]["code"] == CODE
    with MemoryStore(tmp_path / "b.sqlite3") as fresh:
        report = fresh.import_jsonl(out)
        assert (report.added, report.skipped) == (3, 0)
        # the same entries, each unverified and unused: a file's word is not trusted
        unverified = [
            {**e, "provenance": {**e["provenance"], "verified": False, "checked_by": "none"}}
            for e in before
        ]
        assert [e.model_dump() for e in fresh.entries()] == [
            {**e, "retrieved": 0} for e in unverified
        ]
        again = fresh.import_jsonl(out)
        assert (again.added, again.skipped) == (0, 3)


def test_import_refuses_a_changed_skill_or_a_bad_line_and_adds_nothing(tmp_path: Path) -> None:
    out = tmp_path / "memory.jsonl"
    with _filled(tmp_path / "a.sqlite3") as store:
        store.export_jsonl(out)
    lines = out.read_text().splitlines()
    tampered = tmp_path / "tampered.jsonl"
    tampered.write_text("\n".join([lines[1], lines[0].replace("> 200", "> 100")]) + "\n")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(lines[1] + '\n{"kind": "lesson"}\n')
    unverified = tmp_path / "unverified.jsonl"
    unverified.write_text(lines[0].replace('"verified":true', '"verified":false') + "\n")
    with MemoryStore(tmp_path / "b.sqlite3") as fresh:
        with pytest.raises(ValueError, match=r"tampered.jsonl:2: .*sha256"):
            fresh.import_jsonl(tampered)
        with pytest.raises(ValueError, match=r"bad.jsonl:2: not a memory entry"):
            fresh.import_jsonl(bad)
        with pytest.raises(ValueError, match="unverified"):
            fresh.import_jsonl(unverified)
        assert fresh.entries() == []


# -- the CLI ------------------------------------------------------------------------------------


def _cli(args: list[str], home: Path, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_S_", "XDG_"))} | {
        "HOME": str(home),
        "XDG_DATA_HOME": str(home / "data"),
        "AGENT_S_MEMORY_KEY": os.environ["AGENT_S_MEMORY_KEY"],  # the key the tests' stores use
        "NO_COLOR": "1",
        "COLUMNS": "200",
    }
    done = subprocess.run(
        [AGENT_S, "memory", *args],
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    return done


def test_cli_lists_shows_searches_forgets_exports_and_imports(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    _filled(home / "data" / "agent-s" / "memory.sqlite3").close()
    listed = _cli(["list"], home)
    assert listed.returncode == 0, listed.stderr
    assert "python: filter CSV rows" in listed.stdout
    assert "[run-2, unverified]" in listed.stdout
    as_json = json.loads(_cli(["list", "--json", "--kind", "skill"], home).stdout)
    assert [e["provenance"]["run_id"] for e in as_json] == ["run-1"]
    assert as_json[0]["sha256"] == hashlib.sha256(CODE.encode()).hexdigest()
    shown = _cli(["show", "1"], home)
    assert "verified: yes, by a check" in shown.stdout
    assert "open('sales.csv')" in shown.stdout
    assert "file_1='sales.csv'" in shown.stdout
    missing = _cli(["show", "99"], home)
    assert missing.returncode == 1
    assert missing.stderr.strip() == "error: no entry 99; see agent-s memory list"
    found = _cli(["search", '"menus -hide NEAR(', "--json"], home)
    assert found.returncode == 0
    assert json.loads(found.stdout)[0]["provenance"]["run_id"] == "run-2"
    assert _cli(["search", "nothing-like-this"], home).returncode == 1
    refused = _cli(["forget", "--match", "menus"], home)  # stdin is no terminal: nobody to ask
    assert refused.returncode == 2
    assert "--yes" in refused.stderr
    assert _cli(["forget", "--match", "menus", "--yes"], home).returncode == 0
    assert "run-2" not in _cli(["list"], home).stdout
    assert _cli(["forget", "3"], home).returncode == 0
    exported = home / "out.jsonl"
    assert _cli(["export", str(exported)], home).returncode == 0
    other = tmp_path / "other.sqlite3"
    imported = _cli(["import", str(exported), "--db", str(other)], home)
    assert imported.returncode == 0
    assert "Added 1 entries" in imported.stderr
    assert json.loads(_cli(["list", "--json", "--db", str(other)], home).stdout)[0]["id"] == 1
    garbage = home / "garbage.jsonl"
    garbage.write_text("{not json\n")
    failed = _cli(["import", str(garbage)], home)
    assert failed.returncode == 2
    assert len(failed.stderr.strip().splitlines()) == 1
    assert "garbage.jsonl:1" in failed.stderr
    not_db = home / "x.sqlite3"
    not_db.write_text("hello " * 1000)
    bad_db = _cli(["list", "--db", str(not_db)], home)
    assert bad_db.returncode == 2
    assert "--db" in bad_db.stderr
    assert _cli(["list", "--kind", "nope"], home).returncode == 2
