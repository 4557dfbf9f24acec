"""What a new user sees when a suite is not perfect: bad task files, broken setup or scoring,
infeasible tasks, reruns and mixed results folders.

The suite is written here (real OSWorld-format task files in a folder with an index) and run
with ``agent-s bench`` and ``--policy reference`` on real virtual desktops.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent_s.cli.main import app

ECHO = {"type": "vm_command_line", "command": ["echo", "hi"]}
HI = {"type": "rule", "rules": {"expected": "hi\n"}}


def _task(task_id: str, **changes: Any) -> dict[str, Any]:
    task: dict[str, Any] = {
        "id": task_id,
        "instruction": f"task {task_id}",
        "config": [],
        "evaluator": {"func": "exact_match", "result": ECHO, "expected": HI},
        "reference": ["agent.done()"],
    }
    task.update(changes)
    return task


TASKS = {
    "good": _task("good"),
    "no-instruction": {k: v for k, v in _task("no-instruction").items() if k != "instruction"},
    "not-json": None,  # written as torn text
    "bad-setup": _task(
        "bad-setup", config=[{"type": "open", "parameters": {"path": "/nonexistent/x.txt"}}]
    ),
    "eval-error": _task(
        "eval-error",
        evaluator={
            "func": "exact_match",
            "result": ECHO,
            "expected": {"type": "rule", "rules": {}},
        },
    ),
    "eval-hangs": _task(
        "eval-hangs",
        evaluator={
            "func": "exact_match",
            "result": ECHO,
            "expected": HI,
            "postconfig": [{"type": "sleep", "parameters": {"seconds": 60}}],
        },
    ),
    "impossible": _task("impossible", evaluator={"func": "infeasible"}, reference=["agent.fail()"]),
}


def _suite(root: Path) -> Path:
    folder = root / "suite" / "examples" / "os"
    folder.mkdir(parents=True)
    for name, task in TASKS.items():
        text = '{"id": "not-json", "instr' if task is None else json.dumps(task)
        (folder / f"{name}.json").write_text(text)
    index = root / "suite" / "test_all.json"
    index.write_text(json.dumps({"os": [*TASKS, "missing-file"]}))
    return index


def _run(index: Path, results: Path, *extra: str) -> Any:
    argv = ["bench", "run", str(index), "--policy", "reference", "--workers", "2"]
    argv += ["--results", str(results), "--eval-timeout", "3", *extra]
    return CliRunner().invoke(app, argv)


def test_check_names_every_bad_task_file_and_checks_the_rest(tmp_path: Path) -> None:
    index = _suite(tmp_path)
    result = CliRunner().invoke(app, ["bench", "check", str(index)])
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert result.exit_code == 1, result.output
    bad = [line for line in result.stderr.splitlines() if line.startswith("bad task file:")]
    assert len(bad) == 3, result.stderr
    assert any("no-instruction.json: missing 'instruction'" in line for line in bad)
    assert any("not-json.json: not JSON" in line for line in bad)
    assert any("missing-file.json: no such task file" in line for line in bad)
    assert "5 of 5 tasks can run here" in result.stdout  # the good ones are still checked

    as_json = CliRunner().invoke(app, ["bench", "check", str(index), "--json"])
    assert as_json.exit_code == 1
    report = json.loads(as_json.stdout)
    assert report["total"] == 5
    assert {b["task_id"] for b in report["bad_task_files"]} == {
        "no-instruction",
        "not-json",
        "missing-file",
    }


@pytest.mark.desktop
@pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is not installed")
def test_run_goes_on_past_bad_files_and_reports_errors_truthfully(tmp_path: Path) -> None:
    index, results = _suite(tmp_path), tmp_path / "results"
    first = _run(index, results)
    assert first.exit_code == 1, first.output  # bad files and errors, but everything else ran
    assert "Traceback" not in first.output
    err = first.stderr
    assert sum(line.startswith("bad task file:") for line in err.splitlines()) == 3, err
    assert "no-instruction.json: missing 'instruction'" in err
    # the progress lines say what happened
    assert "os/good: succeeded score=1.0" in err
    assert "os/impossible: infeasible (said fail) score=1.0" in err
    assert "failed score=1.0" not in first.output
    assert "os/bad-setup: error score=None" in err
    assert "os/eval-error: error score=None" in err
    assert "os/eval-hangs: error score=None" in err
    out = first.stdout
    assert "os/bad-setup: error score=None setup failed: open: /nonexistent/x.txt" in out
    assert "os/eval-error: error score=None evaluation failed: exact_match: KeyError" in out
    assert "os/eval-hangs: error score=None evaluation did not finish within 3 s" in out
    assert "resumed" not in err

    as_json = _run(index, tmp_path / "json-results", "--json")
    payload = json.loads(as_json.stdout)
    by_id = {r["task_id"]: r for r in payload["records"]}
    assert set(by_id) == {"good", "bad-setup", "eval-error", "eval-hangs", "impossible"}
    assert {t: r["status"] for t, r in by_id.items() if r["status"] == "error"} == {
        "bad-setup": "error",
        "eval-error": "error",
        "eval-hangs": "error",
    }
    overall = payload["summary"]["overall"]
    # errors are not the agent's 0: the rate is over the two tasks that were scored
    assert (overall["scored"], overall["errors"], overall["success_rate"]) == (2, 3, 1.0)
    assert len(payload["bad_task_files"]) == 3

    # rerun: the finished tasks are skipped and said so; a torn result is run again
    model = results / "pyautogui" / "screenshot" / "reference" / "os"
    (model / "good" / "result.json").write_text('{"task_id": "good", "sco')
    again = _run(index, results)
    assert again.exit_code == 1, again.output
    assert "resumed: skipped 1 of 5 tasks already done in" in again.stderr
    assert "os/good: succeeded score=1.0" in again.stderr  # rerun, not skipped
    assert "os/bad-setup: error score=None" in again.stderr  # errors are tried again
    assert json.loads((model / "good" / "result.json").read_text())["score"] == 1.0

    # the report: one run; a folder whose files are unreadable is named, not dropped
    (model / "impossible" / "result.txt").write_text("1.")  # half-written
    (model / "impossible" / "result.json").write_text("{")
    report = CliRunner().invoke(app, ["bench", "report", str(results)])
    assert report.exit_code == 1, report.output
    assert f"unreadable: {model / 'impossible'}: result.json cannot be read" in report.stderr
    assert "mixes" not in report.stderr
    assert "run: reference" in report.stdout

    # another model's results in the same folder: reported apart, with a warning
    other = results / "pyautogui" / "screenshot" / "gpt-x" / "os" / "good"
    shutil.copytree(model / "good", other)
    record = json.loads((other / "result.json").read_text())
    record.update(policy="agent", model="gpt-x", score=0.0)
    (other / "result.json").write_text(json.dumps(record))
    (other / "result.txt").write_text("0.0\n")
    mixed = CliRunner().invoke(app, ["bench", "report", str(results), "--json"])
    data = json.loads(mixed.stdout)
    assert "mixes 2 runs (agent/gpt-x, reference)" in mixed.stderr
    assert data["mixed"] is True
    assert data["summary"] is None
    assert data["runs"]["agent/gpt-x"]["overall"]["success_rate"] == 0.0
    assert data["runs"]["reference"]["overall"]["success_rate"] == 1.0
    assert [u["folder"] for u in data["unreadable"]] == [str(model / "impossible")]
    # the agent's "done" that its evaluator scored 0 is not reported as a success
    text = CliRunner().invoke(app, ["bench", "report", str(results)])
    assert "os/good: said done, not achieved score=0.0" in text.stdout
    assert "succeeded score=0.0" not in text.output


def test_the_index_shows_each_instruction_and_a_right_infeasible_answer_as_a_success(
    tmp_path: Path,
) -> None:
    from agent_s.report.bench import write_bench_report

    model = tmp_path / "results" / "pyautogui" / "screenshot" / "m"
    records = {
        "os/feasible": {"status": "succeeded", "score": 1.0, "infeasible": False},
        "os/impossible": {
            "status": "failed",
            "score": 1.0,
            "infeasible": True,
            "last_action": "FAIL",
        },
        "os/missed": {"status": "succeeded", "score": 0.0, "infeasible": False},
    }
    for where, fields in records.items():
        folder = model / where
        folder.mkdir(parents=True)
        task = where.split("/")[1]
        record = {
            "task_id": task,
            "domain": "os",
            "policy": "agent",
            "model": "m",
            "instruction": f"Please do the {task} thing <b>now</b>",
            **fields,
        }
        (folder / "result.json").write_text(json.dumps(record))
        (folder / "result.txt").write_text(str(fields["score"]))
    index = write_bench_report(tmp_path / "results").read_text()
    rows = {
        task: index[index.index(f">{task}<") :][:600]
        for task in ("feasible", "impossible", "missed")
    }
    for task, row in rows.items():
        assert f"Please do the {task} thing &lt;b&gt;now&lt;/b&gt;" in row  # shown, as text
    assert 'class="badge succeeded">infeasible (said fail)' in rows["impossible"]
    assert 'class="badge succeeded">succeeded' in rows["feasible"]
    assert 'class="badge failed">said done, not achieved' in rows["missed"]
