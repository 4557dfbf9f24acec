"""Our reference solutions for real OSWorld tasks, replayed on OSWorld's own task files.

The task files are read from ``../shared/osworld`` (next to the repository; never copied into
it), the reference solutions from the file the package ships
(``agent_s/bench/suites/_references/osworld.json``). Per domain: ``--policy reference`` must
score 1 on every task with a reference whose applications are installed, and ``--policy noop``
0 on the feasible ones (noop ends with done, so an infeasible task scores 0 for it anyway).
This proves setup, getters and metrics end to end on OSWorld itself.

Each domain is its own test case, so a slow one can be left out with ``-k``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent_s.bench.check import classify
from agent_s.bench.policies import PolicyName
from agent_s.bench.runner import RunOptions, run_suite
from agent_s.bench.tasks import Suite, Task, load_references, load_suite
from agent_s.cli.main import app

OSWORLD = Path(__file__).resolve().parents[2] / "shared" / "osworld"

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is not installed"),
    pytest.mark.skipif(
        not (OSWORLD / "test_all.json").is_file(),
        reason=f"OSWorld's tasks are not at {OSWORLD} (a checkout of its evaluation_examples)",
    ),
]

# VLC writes vlcrc only once its settings are saved; on a fresh HOME no file exists, the
# vlc_config getter finds none and the task is left unscored (as OSWorld leaves it), not 0.
NOOP_UNSCORED = {
    "215dfd39-f493-4bc3-a027-8a97d72c61bf",
    "9195653c-f4aa-453d-aa95-787f6ccfaae9",
    "a5bbbcd5-b398-4c91-83d4-55e1e31bbb81",
    "d06f0d4d-2cd5-4ede-8de9-598629438c6e",
    "f3977615-2b45-4ac5-8bba-80c17dbe2a37",
    "8ba5ae7a-5ae5-4eab-9fcc-5dd4fe3abf89",
}
DOMAINS = ("chrome", "gimp", "libreoffice_impress", "multi_apps", "os", "vlc")


def _referenced_tasks() -> dict[str, list[Task]]:
    refs = load_references()
    by_domain: dict[str, list[Task]] = {}
    for task in load_suite(OSWORLD).tasks():
        if task.id in refs:
            by_domain.setdefault(task.domain, []).append(task)
    return by_domain


def _vlc_refuses_root() -> bool:
    if os.geteuid() != 0 or shutil.which("vlc") is None:
        return False
    done = subprocess.run(["vlc", "--version"], capture_output=True, text=True, timeout=30)
    return "not supposed to be run as root" in done.stdout + done.stderr


def _run(tasks: list[Task], policy: PolicyName, results: Path) -> dict[str, dict[str, Any]]:
    index: dict[str, list[str]] = {}
    for task in tasks:
        index.setdefault(task.domain, []).append(task.id)
    suite = Suite("osworld", OSWORLD, index)
    options = RunOptions(suite=suite, results=results, policy=policy, workers=2)
    return {r["task_id"]: r for r in run_suite(options)}


def test_the_shipped_references_cover_six_domains() -> None:
    refs = load_references()
    tasks = _referenced_tasks()
    assert sum(len(t) for t in tasks.values()) == len(refs)  # every id is a real OSWorld task
    assert set(tasks) == set(DOMAINS)
    for domain_tasks in tasks.values():
        for task in domain_tasks:
            lines = refs[task.id]
            assert lines[-1] == ("agent.fail()" if task.infeasible else "agent.done()")


@pytest.mark.parametrize("domain", DOMAINS)
def test_reference_scores_one_and_noop_zero(domain: str, tmp_path: Path) -> None:
    tasks = _referenced_tasks()[domain]
    runnable = [t for t in tasks if not any(r.category == "app" for r in classify(t))]
    if not runnable:
        pytest.skip(f"the {domain} tasks need applications that are not installed")
    if domain == "vlc" and _vlc_refuses_root():
        pytest.skip("VLC refuses to run as root: scripts/setup.sh --bench-apps lets it")

    records = _run(runnable, "reference", tmp_path / "reference")
    scores = {t.id: records[t.id]["score"] for t in runnable}
    failed = {i: records[i].get("reason") for i, s in scores.items() if s != 1.0}
    assert not failed, failed
    for task in runnable:
        record = records[task.id]
        assert record["last_action"] == ("FAIL" if task.infeasible else "DONE")
        assert record["steps"] == len(load_references()[task.id])

    feasible = [t for t in runnable if not t.infeasible]
    if not feasible:
        return
    noop = _run(feasible, "noop", tmp_path / "noop")
    for task in feasible:
        record = noop[task.id]
        if task.id in NOOP_UNSCORED:
            assert record["status"] == "error", record
            assert record["score"] is None
            assert "evaluation failed" in record["reason"]
        else:
            assert record["score"] == 0.0, record


def test_run_takes_a_references_file(tmp_path: Path) -> None:
    """``--references FILE``: its entries replace the shipped ones; a task it names with a
    wrong solution scores 0, and a file that is not a references file is a usage error."""
    task_id = "b3d4a89c-53f2-4d6b-8b6a-541fb5d205fa"  # os, infeasible, no setup
    index = tmp_path / "test_one.json"
    index.write_text(json.dumps({"os": [task_id]}))
    refs = tmp_path / "refs.json"
    refs.write_text(json.dumps({task_id: ["agent.done()"]}))  # infeasible: done scores 0
    argv = ["bench", "run", str(OSWORLD), "--index", str(index), "--policy", "reference"]
    argv += ["--references", str(refs), "--results", str(tmp_path / "results"), "--json"]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0, result.output
    (record,) = json.loads(result.stdout)["records"]
    assert (record["task_id"], record["score"], record["last_action"]) == (task_id, 0.0, "DONE")

    refs.write_text(json.dumps({task_id: "agent.fail()"}))
    bad = CliRunner().invoke(app, [*argv[:-3], "--results", str(tmp_path / "again"), "--json"])
    assert bad.exit_code == 2
    assert "a reference is a list of action calls" in bad.output
    assert "Traceback" not in bad.output
