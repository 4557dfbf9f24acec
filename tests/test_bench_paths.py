"""A run given relative paths (suite folder, results) from the caller's working folder: the
worker runs inside the task folder, so every path it gets must already be absolute."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from agent_s.bench.runner import RunOptions, run_suite, task_folder
from agent_s.bench.tasks import load_suite

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is not installed"),
]


def test_relative_suite_and_results_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copytree(load_suite("smoke").root, tmp_path / "suite")
    monkeypatch.chdir(tmp_path)
    suite = load_suite("suite")
    options = RunOptions(
        suite=suite, results=Path("res"), policy="reference", domains=("text_editor",)
    )
    records = run_suite(options)
    assert records
    assert all(r["status"] == "succeeded" and r["score"] == 1.0 for r in records), records
    for task in suite.tasks(["text_editor"]):
        assert (tmp_path / task_folder(options, task) / "result.txt").read_text() == "1.0\n"
