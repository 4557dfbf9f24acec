"""Our reference solutions for real OSWorld tasks, replayed on OSWorld's own task files.

The task files are read from ``../shared/osworld`` (next to the repository; never copied into
it), the reference solutions from the file the package ships
(``agent_s/bench/suites/_references/osworld.json``). Per domain: ``--policy reference`` must
score 1 on every task with a reference whose applications are installed, and ``--policy noop``
0 on the feasible ones (noop ends with done, so an infeasible task scores 0 for it anyway).
This proves setup, getters and metrics end to end on OSWorld itself.

Each task is its own test case, named ``DOMAIN-IDPREFIX`` (``-k vlc``, ``-k "os and not
bedcedc4"``). Tasks that run offline here without a reference are listed with the reason.
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
#: Tasks this machine can run offline (``bench check``) that have no reference, and why.
UNREFERENCED = {
    "13584542-872b-42d8-b299-866967b5c3ef": (
        "terminal size: the postconfig presses Ctrl+Alt+T and types `stty size` in one snippet;"
        " here the terminal is started after the snippet, so the command never reaches it (a"
        " 132x43 ~/.config/lxterminal/lxterminal.conf does give `43 132`)"
    ),
    "99146c54-4f37-4ab8-9327-5f3291665e1e": (
        "delete site data on close: Chromium writes profile.default_content_setting_values on"
        " every new profile, and OSWorld's getter reads any such entry as the setting on, so"
        " doing nothing would score 1"
    ),
    "b6781586-6346-41cd-935a-a6b1487918fc": (
        "time zone: `timedatectl` asks systemd-timedated over the system bus, and this machine"
        " (a container, as CI's) runs no systemd; the zone is also the whole machine's, not the"
        " task's"
    ),
}

#: Tasks that mean something only with another program installed (``--bench-apps`` has it).
NEEDS_BESIDES = {
    # VLC, the only video player, would be the default before anything is done: OSWorld's
    # Ubuntu plays videos with GNOME Videos
    "937087b6-f668-4ba6-9110-60682ee33441": "totem",
}


def _referenced_tasks() -> dict[str, list[Task]]:
    refs = load_references()
    by_domain: dict[str, list[Task]] = {}
    for task in load_suite(OSWORLD).tasks():
        if task.id in refs:
            by_domain.setdefault(task.domain, []).append(task)
    return by_domain


def _reference_cases() -> list[Any]:
    """One case per referenced task, named ``DOMAIN-IDPREFIX`` (``-k os``, ``-k bedcedc4``)."""
    if not (OSWORLD / "test_all.json").is_file():
        return []
    tasks = [t for domain in _referenced_tasks().values() for t in domain]
    return [pytest.param(t, id=f"{t.domain}-{t.id[:8]}") for t in tasks]


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


def test_every_task_that_runs_offline_has_a_reference_or_a_reason() -> None:
    """``bench check`` offline (no file cache, no internet): each task it finds runnable here
    has a reference, or is in UNREFERENCED saying why none can work on this machine."""
    refs = load_references()
    runnable = {t.id for t in load_suite(OSWORLD).tasks() if not classify(t)}
    assert not set(UNREFERENCED) & set(refs)
    missing = sorted(runnable - set(refs) - set(UNREFERENCED))
    assert not missing, f"runnable offline without a reference: {missing}"


@pytest.mark.parametrize("task", _reference_cases())
def test_reference_scores_one_and_noop_zero(task: Task, tmp_path: Path) -> None:
    reasons = [r for r in classify(task) if r.category == "app"]
    if reasons:
        pytest.skip(f"needs applications that are not installed: {reasons}")
    besides = NEEDS_BESIDES.get(task.id)
    if besides is not None and shutil.which(besides) is None:
        pytest.skip(f"needs {besides} as well: scripts/setup.sh --bench-apps installs it")
    if task.domain == "vlc" and _vlc_refuses_root():
        pytest.skip("VLC refuses to run as root: scripts/setup.sh --bench-apps lets it")

    (record,) = _run([task], "reference", tmp_path / "reference").values()
    assert record["score"] == 1.0, record.get("reason")
    assert record["last_action"] == ("FAIL" if task.infeasible else "DONE")
    assert record["steps"] == len(load_references()[task.id])
    if task.infeasible:
        return  # noop ends with done: 0 for an infeasible task whatever the desktop shows
    (noop,) = _run([task], "noop", tmp_path / "noop").values()
    if task.id in NOOP_UNSCORED:
        assert noop["status"] == "error", noop
        assert noop["score"] is None
        assert "evaluation failed" in noop["reason"]
    else:
        assert noop["score"] == 0.0, noop


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
