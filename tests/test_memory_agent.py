"""Memory wired into the agent, with the scripted model on the test desktop.

- ``agent-s run --check`` that passes on a code-agent task stores a skill: the block's code byte
  for byte, whose sha256 is the ``code_sha256`` the trajectory recorded when the block ran;
- a run no check verified (or whose check failed) stores a summary marked unverified, lessons,
  and no skill;
- a second, related task is shown the skill with its provenance (the requests the scripted
  server received hold it), its ``memory.jsonl`` names the skill by id and hash, and the code it
  runs is the skill instantiated with the new task's values;
- ``--no-memory`` retrieves nothing and writes nothing;
- ``bench run --memory learning`` with two workers stores what both tasks taught (verified by
  the evaluator's score), and ``--memory frozen`` shows it without writing anything;
- from a run folder as the agent writes it: a planned subtask verified by its own file check
  gives skills even when the run failed, but only code that exited 0 and whose recorded text
  hashes to what ran (a redacted block does not); a verified flat run gives its GUI actions;
  a dry run gives nothing.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import sqlite3
import sys
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from scripted_cli import model_options
from typer.testing import CliRunner

from agent_s.actions import CallCodeAgentAction, DoneAction
from agent_s.bench.tasks import load_suite
from agent_s.cli.main import app
from agent_s.guards.trust import quote
from agent_s.memory import Lesson, MemoryStore, Provenance, RunSummary, Skill, instantiate
from agent_s.memory.learn import learn_from_run
from agent_s.memory.recall import MEMORY_FILE, retrievals
from agent_s.record.result import RunResult, RunStatus
from agent_s.record.step import Step, SubStep, code_digest
from agent_s.record.trajectory import TrajectoryWriter, load_trajectory
from agent_s.testing.scripted_replies import reply
from agent_s.testing.scripted_server import RecordedRequest, ScriptedModelServer

KEY = "sk-memory-test-0123456789abcdef"
TASK = "Write the sum of the amount column of sales.csv into total.txt"
SUM = (
    "import csv\n"
    "rows = list(csv.DictReader(open('sales.csv', newline='')))\n"
    "total = sum(int(row['amount']) for row in rows)\n"
    "open('total.txt', 'w').write(f'{total}\\n')\n"
    "print('total', total)\n"
)
MEMORY_HEADING = "From memory of earlier runs"
LEAKED = "sk-live-not-for-memory-0123456789"  # a key the run was told to keep out of records


def act(code: str) -> str:
    return f"Next.\n```python\n{code}\n```"


def block(code: str) -> str:
    return f"I sum the column.\n```python\n{code}```"


def text(request: RecordedRequest) -> str:
    return json.dumps(request.body, ensure_ascii=False)


def _code_task(job: str, code: str) -> list[Any]:
    """The worker hands ``job`` to the code agent, which runs ``code`` once, then says done."""
    return [
        reply(act(f"agent.call_code_agent({job!r})")),
        reply(block(code)),
        reply("Wrote the total.\nDONE"),
        reply(act("agent.done()")),
    ]


def _work(tmp_path: Path) -> tuple[Path, Path]:
    """A working folder with two CSV files, and a configuration that runs code there."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "sales.csv").write_text("region,amount\nnorth,120\nsouth,80\n")
    (work / "costs.csv").write_text("region,amount\nnorth,7\nsouth,5\neast,30\n")
    config = tmp_path / "config.toml"
    config.write_text(
        f"[code_agent]\nworkdir = {json.dumps(str(work))}\n"
        f"python = {json.dumps(sys.executable)}\ntimeout = 30\n"
    )
    return work, config


def _run(
    server: ScriptedModelServer, tmp_path: Path, db: Path, config: Path, *args: str
) -> dict[str, Any]:
    argv = [
        "run",
        *model_options(server.openai_base_url, key=KEY),
        "--ground",
        "native",
        "--safety",
        "auto",
        "--plan",
        "off",
        "--record",
        str(tmp_path / "runs"),
        "--json",
        *args,
    ]
    env = {"AGENT_S_MEMORY_DB": str(db), "AGENT_S_CONFIG": str(config)}
    done = CliRunner().invoke(app, argv, env=env)
    assert done.exception is None or isinstance(done.exception, SystemExit), done.output
    data: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    data["exit_code"] = done.exit_code
    return data


def _rows(db: Path) -> list[tuple[Any, ...]]:
    """Every row of the memory file as stored, retrieval counts included."""
    with sqlite3.connect(db) as raw:
        return raw.execute("SELECT * FROM entries ORDER BY id").fetchall()


@pytest.mark.usefixtures("desktop")
def test_a_verified_skill_is_stored_with_its_hash_and_shown_to_the_next_related_task(
    tmp_path: Path,
) -> None:
    work, config = _work(tmp_path)
    db = tmp_path / "memory.sqlite3"
    check = f"grep -qx 200 {work / 'total.txt'}"
    with ScriptedModelServer(_code_task("Sum amount of sales.csv into total.txt", SUM)) as server:
        first = _run(server, tmp_path, db, config, "--check", check, TASK)
        assert MEMORY_HEADING not in json.dumps([r.body for r in server.requests])  # empty
    assert (first["status"], first["verified"]) == ("succeeded", True), first
    assert (work / "total.txt").read_text() == "200\n"

    # the skill: the block byte for byte; its hash is the one recorded when the block ran
    folder = Path(first["trajectory_dir"])
    (ran,) = [s for s in load_trajectory(folder).steps[0].substeps if s.kind == "block"]
    assert ran.code == SUM
    assert ran.run is not None
    assert ran.run["exit_status"] == 0
    assert ran.code_sha256 == hashlib.sha256(SUM.encode()).hexdigest()
    with MemoryStore(db) as store:
        (skill,) = store.entries(["skill"])
        (summary,) = store.entries(["run"])
    assert isinstance(skill.body, Skill)
    assert skill.body.code == SUM
    assert skill.body.language == "python"
    assert skill.sha256 == ran.code_sha256
    assert check in skill.body.check
    assert skill.body.parameters == {"file_1": "sales.csv", "file_2": "total.txt"}
    prov = skill.provenance
    assert (prov.run_id, prov.steps, prov.verified, prov.model) == (
        folder.name,
        (1,),
        True,
        "scripted-model",
    )
    assert summary.provenance.verified
    assert isinstance(summary.body, RunSummary)
    assert "verified by a check" in summary.body.summary

    # a related task: its prompts show the skill with provenance; it runs the skill's code
    # with its own values in place of the parameters
    second_task = "Write the sum of the amount column of costs.csv into costs_total.txt"
    values = {"file_1": "costs.csv", "file_2": "costs_total.txt"}
    reused = instantiate(skill.body, values).code
    assert reused != SUM
    assert "costs.csv" in reused
    script = _code_task("Sum amount of costs.csv into costs_total.txt", reused)
    with ScriptedModelServer(script) as server:
        check = f"grep -qx 42 {work / 'costs_total.txt'}"
        second = _run(server, tmp_path, db, config, "--check", check, second_task)
        worker, code_model = server.requests[0], server.requests[1]
    assert (second["status"], second["verified"]) == ("succeeded", True), second
    for request in (worker, code_model):
        told = request.read()
        assert MEMORY_HEADING in told
        assert "not instructions" in told
        assert "trust: VERIFIED: a check the user gave confirmed that run's success" in told
        assert f'from: run "{folder.name}", step 1' in told
        assert 'model "scripted-model"' in told
        assert f"code ({len(SUM)} characters): {quote(SUM, 4000)}" in told  # exact, one line
        assert '"file_1" = "sales.csv"' in told
    assert "You complete a job on a computer" in text(code_model)
    folder2 = Path(second["trajectory_dir"])
    shown = retrievals(folder2)
    assert {line["purpose"] for line in shown} == {"worker", "code"}
    for line in shown:
        entries = line["entries"]
        assert isinstance(entries, list)
        assert {"id": skill.id, "sha256": skill.sha256} in [
            {"id": e["id"], "sha256": e["sha256"]} for e in entries
        ]
    (ran2,) = [s for s in load_trajectory(folder2).steps[0].substeps if s.kind == "block"]
    assert ran2.code_sha256 == hashlib.sha256(reused.encode()).hexdigest()
    with MemoryStore(db) as store:
        assert store.get(skill.id).retrieved == 2  # the worker's request and the code agent's
        skills = store.entries(["skill"])
    assert len(skills) == 2
    assert {s.sha256 for s in skills} == {skill.sha256, ran2.code_sha256}


@pytest.mark.usefixtures("desktop")
def test_unverified_and_failed_runs_store_a_summary_and_lessons_but_no_skill(
    tmp_path: Path,
) -> None:
    work, config = _work(tmp_path)
    db = tmp_path / "memory.sqlite3"
    script = _code_task("Sum amount of sales.csv into total.txt", SUM)
    with ScriptedModelServer(script) as server:  # no --check: the model's word only
        unchecked = _run(server, tmp_path, db, config, TASK)
    assert unchecked["status"] == "succeeded"
    assert not unchecked["verified"]
    (work / "total.txt").unlink()
    with ScriptedModelServer(_code_task("Sum amount of sales.csv", SUM)) as server:
        failed = _run(server, tmp_path, db, config, "--check", "false", TASK)
    assert failed["status"] == "failed"
    assert failed["cause"] == "postcondition_failed"
    with MemoryStore(db) as store:
        assert store.entries(["skill"]) == []
        runs = store.entries(["run"])
        lessons = store.entries(["lesson"])
    assert len(runs) == 2
    assert all(not r.provenance.verified for r in runs)
    by_run = {r.provenance.run_id: r.body for r in runs}
    plain = by_run[Path(unchecked["trajectory_dir"]).name]
    assert isinstance(plain, RunSummary)
    assert "no check verified it" in plain.summary
    assert any("call_code_agent" in step for step in plain.key_steps)
    assert all(not lesson.provenance.verified for lesson in lessons)
    failures = [x.body for x in lessons if isinstance(x.body, Lesson) and x.body.failed]
    assert any("postcondition_failed" in f.failed and "check failed" in f.why for f in failures)


@pytest.mark.usefixtures("desktop")
def test_no_memory_retrieves_nothing_and_writes_nothing(tmp_path: Path) -> None:
    _, config = _work(tmp_path)
    db = tmp_path / "memory.sqlite3"
    with MemoryStore(db) as store:  # a store that would match the task
        prov = Provenance(run_id="run-x", steps=(1,), model="m", verified=True, task=TASK)
        store.add(Skill(description="sum the amount column", language="python", code=SUM), prov)
    before = _rows(db)
    script = _code_task("Sum amount of sales.csv into total.txt", SUM)
    with ScriptedModelServer(script) as server:
        done = _run(server, tmp_path, db, config, "--no-memory", TASK)
        requests = [text(r) for r in server.requests]
    assert done["status"] == "succeeded"
    assert not any(MEMORY_HEADING in r or 'from: run \\"run-x\\"' in r for r in requests)
    assert _rows(db) == before  # no new entry, no retrieval counted
    assert not (Path(done["trajectory_dir"]) / MEMORY_FILE).exists()
    # the same run with memory on (the default) is shown the entry and learns
    with ScriptedModelServer(script) as server:
        _run(server, tmp_path, db, config, TASK)
        assert 'from: run "run-x"' in server.requests[0].read()
    assert len(_rows(db)) > len(before)


# -- the harness ------------------------------------------------------------------------------


def _suite(tmp_path: Path) -> Path:
    """Two copies of the smoke suite's notes task, each writing its own file."""
    base = next(t for t in load_suite("smoke").tasks(["os"]) if "notes.txt" in t.instruction)
    data = json.loads(Path(str(base.path)).read_text())
    folder = tmp_path / "suite" / "examples" / "os"
    folder.mkdir(parents=True)
    ids = []
    for name in ("alpha", "beta"):
        task = json.loads(json.dumps(data).replace("notes.txt", f"notes_{name}.txt"))
        task["id"] = f"memory-{name}"
        (folder / f"{task['id']}.json").write_text(json.dumps(task))
        ids.append(task["id"])
    index = tmp_path / "suite" / "test_memory.json"
    index.write_text(json.dumps({"os": ids}))
    return index


class _NotesScript:
    """Each worker's task: type the command its instruction asks for, then say done (two
    workers at once: the requests of the two tasks come in any order)."""

    def __init__(self) -> None:
        self.asked: dict[str, int] = {}
        self.lock = threading.Lock()

    def __call__(self, request: RecordedRequest) -> str:
        # the task comes before anything memory shows (which may name the other task)
        found = re.search(r"notes_(alpha|beta)\.txt", text(request))
        assert found is not None
        name = found.group(1)
        with self.lock:
            self.asked[name] = self.asked.get(name, 0) + 1
            first = self.asked[name] == 1
        if not first:
            return act("agent.done()")
        return act(f"agent.type(text=\"echo 'hello bench' > ~/notes_{name}.txt\", enter=True)")


def _bench(server: ScriptedModelServer, index: Path, results: Path, *args: str) -> Any:
    argv = [
        "bench",
        "run",
        str(index),
        "--policy",
        "agent",
        *model_options(server.openai_base_url, key=KEY),
        "--max-steps",
        "4",
        "--plan",
        "off",
        "--results",
        str(results),
        "--json",
        *args,
    ]
    done = CliRunner().invoke(app, argv)
    assert done.exit_code == 0, done.output
    return json.loads(done.stdout)["records"]


@pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is not installed")
def test_bench_learning_with_two_workers_writes_from_both_and_frozen_writes_nothing(
    tmp_path: Path,
) -> None:
    index = _suite(tmp_path)
    db = tmp_path / "bench-memory.sqlite3"
    with ScriptedModelServer(_NotesScript()) as server:
        records = _bench(
            server,
            index,
            tmp_path / "learn",
            "--workers",
            "2",
            "--memory",
            "learning",
            "--memory-db",
            str(db),
        )
    assert sorted(r["score"] for r in records) == [1.0, 1.0], records
    assert all(r["memory"]["learned"] >= 3 for r in records), records
    with MemoryStore(db) as store:
        runs = store.entries(["run"])
        skills = store.entries(["skill"])
    tasks = {r.provenance.task for r in runs}
    assert len(tasks) == 2
    assert all("notes_" in t for t in tasks)
    assert all(r.provenance.verified for r in runs)
    assert {s.provenance.run_id for s in skills} == {r.provenance.run_id for r in runs}
    for skill in skills:
        assert isinstance(skill.body, Skill)
        assert skill.body.language == "actions"
        assert "evaluator scored the task 1" in skill.body.check
        assert skill.body.actions[0].startswith("agent.type(")

    before = _rows(db)
    with ScriptedModelServer(_NotesScript()) as server:
        frozen = _bench(
            server, index, tmp_path / "frozen", "--memory", "frozen", "--memory-db", str(db)
        )
        first = [text(r) for r in server.requests if "notes_" in text(r)][:1]
    assert sorted(r["score"] for r in frozen) == [1.0, 1.0]
    assert all(r["memory"]["mode"] == "frozen" and r["memory"]["retrieved"] > 0 for r in frozen)
    assert all(MEMORY_HEADING in t and "trust: VERIFIED: a check the user" in t for t in first)
    assert _rows(db) == before  # nothing learned, no retrieval counted


# -- what a run folder teaches (written as the agent writes it; no desktop) ----------------------


def _block(turn: int, code: str, status: int, *, recorded: str | None = None) -> SubStep:
    """A code-agent turn that ran ``code``; ``recorded``: the code as the trajectory holds it,
    when it differs from what ran (the hash is of what ran)."""
    run = {"exit_status": status, "stopped": f"exit status {status}", "seconds": 0.1}
    run["stdout"] = {"text": "ok\n"}
    run["stderr"] = {"text": "" if status == 0 else "FileNotFoundError: data.csv\n"}
    return SubStep(
        substep=turn,
        started_at=0.0,
        kind="block",
        language="python",
        code=code if recorded is None else recorded,
        code_sha256=code_digest(code),
        run=run,
    )


def _planned_run(folder: Path, secret: str) -> RunResult:
    """A planned run: subtask ``csv`` (code) passed its file check after a failed block and
    a block whose recorded text differs from what ran; subtask ``look`` (GUI) passed only the
    verifier (a model's judgement); the run failed its final --check."""
    writer = TrajectoryWriter(folder, secrets=[secret])
    job = "Write the totals of data.csv into out.csv"
    code_step = Step(
        step=1,
        subtask="csv",
        action=CallCodeAgentAction(task=job),
        action_text=f"agent.call_code_agent(task={job!r})",
        outcome="ok",
        substeps=(
            _block(1, "open('missing.csv')", 1),
            _block(2, f"token = '{secret}'\nprint(token)", 0),  # redacted when written
            _block(3, "open('out.csv', 'w').write('total,10\\n')", 0),
            SubStep(substep=4, started_at=0.0, kind="final", status="done", summary="ok"),
        ),
    )
    gui = [
        Step(step=2, subtask="look", action_text="agent.click('Files')", outcome="ok"),
        Step(step=3, subtask="look", action_text="agent.done()", outcome="terminal"),
    ]
    for step in (code_step, *gui):
        writer.write_step(step)
    checks = [
        ("csv", 1, "file", True, "~/out.csv contains 'total'"),
        ("look", 3, "verifier", True, "ok"),
    ]
    for subtask, after, by, passed, detail in checks:
        event = {"subtask": subtask, "attempt": 1, "by": by, "passed": passed, "detail": detail}
        writer.write_event({"event": "check", "after_step": after, **event})
    plan = {
        "subtasks": [
            {"id": "csv", "description": job, "strategy": "code", "status": "done"},
            {"id": "look", "description": "Look at the files", "strategy": "gui", "status": "done"},
        ]
    }
    result = RunResult(
        task=f"Total data.csv into out.csv with the key {secret}",
        status=RunStatus.FAILED,
        cause="postcondition_failed",
        reason="the model said done, but the check failed: exit status 1",
        steps=3,
        model="scripted-model",
        started_at=1_760_000_000.0,
        plan=plan,
    )
    writer.write_result(result)
    writer.close()
    return result


def test_a_subtask_verified_by_its_own_check_teaches_only_the_code_that_provably_ran(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "run-1"
    result = _planned_run(folder, LEAKED)
    with MemoryStore(tmp_path / "memory.sqlite3") as store:
        ids = learn_from_run(store, folder, result, verified=False)
        entries = [store.get(i) for i in ids]
    skills = [e for e in entries if isinstance(e.body, Skill)]
    # the block that failed, and the one whose recorded text is not what ran, are not skills;
    # the GUI subtask only a model judged gives none
    (skill,) = skills
    assert isinstance(skill.body, Skill)
    assert skill.body.code == "open('out.csv', 'w').write('total,10\\n')"
    assert skill.sha256 == code_digest(skill.body.code)
    # its subtask's file check passed, but the planner (a model) wrote that check
    assert (skill.provenance.checked_by, skill.provenance.verified) == ("model-check", False)
    assert skill.provenance.task == "Write the totals of data.csv into out.csv"
    assert (skill.provenance.run_id, skill.provenance.steps) == ("run-1", (1,))
    assert "file check" in skill.body.check
    others = [e for e in entries if not isinstance(e.body, Skill)]
    assert others
    assert all(not e.provenance.verified for e in others)  # the run itself failed its check
    text = json.dumps([e.model_dump(mode="json") for e in entries])
    assert LEAKED not in text  # the task and the code as the folder holds them: redacted
    failed = " ".join(e.body.text() for e in others if isinstance(e.body, Lesson))
    assert "FileNotFoundError" in failed
    assert "postcondition_failed" in failed
    summary = next(e.body for e in others if isinstance(e.body, RunSummary))
    assert summary.status == "failed"


def test_a_verified_flat_run_stores_its_gui_actions_and_a_dry_run_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "run-2"
    writer = TrajectoryWriter(folder)
    steps = [
        Step(step=1, action_text="agent.open('mousepad')", outcome="ok"),
        Step(step=2, action_text="agent.click('Save')", outcome="error", detail="not found"),
        Step(step=3, action_text="agent.type(text='hello', enter=True)", outcome="ok"),
        Step(step=4, action_text="agent.done()", action=DoneAction(), outcome="terminal"),
    ]
    for step in steps:
        writer.write_step(step)
    result = RunResult(
        task="Type hello in mousepad", status=RunStatus.SUCCEEDED, cause="done", steps=4
    )
    writer.write_result(result)
    writer.close()
    with MemoryStore(tmp_path / "memory.sqlite3") as store:
        ids = learn_from_run(store, folder, result, verified=True, check="grep -q hello f.txt")
        (skill,) = store.entries(["skill"])
        planned = replace(result, status=RunStatus.PLANNED, cause="dry_run")
        assert learn_from_run(store, folder, planned, verified=True) == []
        assert len(store.entries()) == len(ids)
    assert isinstance(skill.body, Skill)
    assert skill.body.language == "actions"
    assert skill.body.actions == ("agent.open('mousepad')", "agent.type(text='hello', enter=True)")
    assert skill.body.check == "grep -q hello f.txt"
    assert skill.provenance.steps == (1, 2, 3, 4)
