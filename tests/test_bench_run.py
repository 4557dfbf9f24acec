"""The smoke suite run for real: each task on its own virtual desktop, two workers at once.

``--policy reference`` must score 1 on every task and ``--policy noop`` 0 on every one (the
feasible ones because nothing was done, the infeasible one because noop ends with done, not
fail). Also: OSWorld's results layout, resume, a half-finished task rerun cleanly, the report.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from readme_samples import assert_printed, samples_after
from scripted_cli import model_options
from typer.testing import CliRunner

from agent_s.bench.runner import RunOptions, run_suite, task_folder
from agent_s.bench.tasks import load_suite
from agent_s.cli.main import app

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is not installed"),
]
TRAJ_FIELDS = {
    "step_num",
    "action_timestamp",
    "action",
    "response",
    "reward",
    "done",
    "info",
    "screenshot_file",
}


def test_reference_policy_scores_one_everywhere_then_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # --results runs/, as the README shows it
    results = Path("runs")
    argv = [
        "bench",
        "run",
        "smoke",
        "--policy",
        "reference",
        "--workers",
        "2",
        "--results",
        "runs/",
    ]
    first = CliRunner().invoke(app, argv)  # as a user runs it: the README shows what it prints
    assert first.exit_code == 0, first.output
    assert_printed(samples_after("Progress and one line per task go to stderr"), first.output)
    argv.append("--json")
    suite = load_suite("smoke")

    for task in suite.tasks():
        folder = results / "pyautogui" / "screenshot" / "reference" / task.domain / task.id
        assert (folder / "result.txt").read_text() == "1.0\n"
        lines = [json.loads(x) for x in (folder / "traj.jsonl").read_text().splitlines()]
        assert len(lines) == len(task.reference or ())
        assert set(lines[0]) == TRAJ_FIELDS
        assert lines[-1]["done"] is True
        assert lines[-1]["action"] == ("FAIL" if task.infeasible else "DONE")
        assert all((folder / line["screenshot_file"]).is_file() for line in lines)
        ours = json.loads((folder / "trajectory" / "result.json").read_text())
        assert ours["steps"] == len(lines)
        assert (folder / "home").is_dir()  # the task's own HOME (OSWorld's /home/user)
    calc = next(t for t in suite.tasks(["calculator"]) if not t.infeasible)
    calc_folder = results / "pyautogui" / "screenshot" / "reference" / "calculator" / calc.id
    first_step = (calc_folder / "trajectory" / "trajectory.jsonl").read_text().splitlines()[0]
    assert json.loads(first_step)["grounding"][0]["point"]  # grounded on the live screen

    again = CliRunner().invoke(app, argv)  # resume: every task has result.txt
    assert again.exit_code == 0, again.output
    records = json.loads(again.stdout)["records"]
    assert {r["task_id"]: r["score"] for r in records} == {t.id: 1.0 for t in suite.tasks()}
    assert all(r.get("resumed") for r in records)

    report = CliRunner().invoke(app, ["bench", "report", str(results), "--json"])
    assert report.exit_code == 0, report.output
    summary = json.loads(report.stdout)["summary"]
    assert summary["overall"]["success_rate"] == 1.0
    assert summary["overall"]["scored"] == len(suite)
    assert not summary["not_succeeded"]
    text = CliRunner().invoke(app, ["bench", "report", str(results)])
    assert "overall" in text.stdout
    assert "100.0%" in text.stdout


def test_noop_scores_zero_and_a_half_finished_task_is_rerun_cleanly(tmp_path: Path) -> None:
    suite = load_suite("smoke")
    options = RunOptions(suite=suite, results=tmp_path, policy="noop", workers=2)
    victim = next(suite.tasks(["text_editor"]))
    stale = task_folder(options, victim)
    (stale / "home").mkdir(parents=True)
    (stale / "home" / "left-over.txt").write_text("from a killed attempt")
    (stale / "traj.jsonl").write_text('{"step_num": 1, "torn')  # no result.txt: unfinished

    events: list[dict] = []
    records = run_suite(options, events.append)
    assert {r["task_id"]: r["score"] for r in records} == {t.id: 0.0 for t in suite.tasks()}
    assert [e["kind"] for e in events].count("start") == len(suite)
    assert not (stale / "home" / "left-over.txt").exists()
    lines = (stale / "traj.jsonl").read_text().splitlines()
    assert len(lines) == 1
    assert json.loads(lines[0])["action"] == "DONE"
    assert (stale / "result.txt").read_text() == "0.0\n"


def test_agent_policy_with_a_scripted_model(tmp_path: Path) -> None:
    from agent_s.testing.scripted_replies import reply
    from agent_s.testing.scripted_server import ScriptedModelServer

    task = next(t for t in load_suite("smoke").tasks(["os"]) if "notes.txt" in t.instruction)
    script = [
        reply(
            "I type the command.\n```python\n"
            "agent.type(text=\"echo 'hello bench' > ~/notes.txt\", enter=True)\n```",
            input_tokens=1000,
            output_tokens=20,
        ),
        reply("Done.\n```python\nagent.done()\n```", input_tokens=1200, output_tokens=10),
    ]
    with ScriptedModelServer(script) as server:
        argv = [
            "bench",
            "run",
            "smoke",
            "--domain",
            "os",
            "--policy",
            "agent",
            *model_options(server.openai_base_url, key="sk-test-secret-key"),
            "--max-steps",
            "5",
            "--results",
            str(tmp_path),
            "--json",
        ]
        # only the notes task gets the script: the other os tasks are given another index
        index = tmp_path / "suite" / "test_one.json"
        (tmp_path / "suite" / "examples" / "os").mkdir(parents=True)
        shutil.copy(task.path, tmp_path / "suite" / "examples" / "os" / f"{task.id}.json")
        index.write_text(json.dumps({"os": [task.id]}))
        argv[2] = str(index)
        result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0, result.output
    (record,) = json.loads(result.stdout)["records"]
    assert record["score"] == 1.0
    assert record["steps"] == 2
    assert record["tokens"] == 2230
    folder = tmp_path / "pyautogui" / "screenshot" / "scripted-model" / "os" / task.id
    lines = [json.loads(x) for x in (folder / "traj.jsonl").read_text().splitlines()]
    assert [line["action"] for line in lines][-1] == "DONE"
    assert (folder / "trajectory" / "result.json").is_file()
    for path in folder.rglob("*"):
        if path.is_file() and path.suffix in (".json", ".jsonl", ".txt", ".log"):
            assert "sk-test-secret-key" not in path.read_text(errors="replace"), path
