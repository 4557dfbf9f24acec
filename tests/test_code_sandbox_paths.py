"""The sandbox hides /tmp and /run behind empty folders; an interpreter that lives there (a
checkout or virtual environment under /tmp, as CI machines often have) must still run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agent_s.coding.runner import CodeRunner, RunnerSettings, sandbox_problem


@pytest.mark.skipif(sandbox_problem() is not None, reason=str(sandbox_problem()))
def test_a_virtual_environment_under_tmp_runs_in_the_sandbox(tmp_path: Path) -> None:
    assert str(tmp_path).startswith("/tmp/")
    venv = tmp_path / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120
    )
    work = tmp_path / "work"
    work.mkdir()
    settings = RunnerSettings(workdir=work, sandbox="bwrap", python=str(venv / "bin" / "python"))
    with CodeRunner(settings) as runner:
        run = runner.run("python", "import sys\nprint(sys.prefix)\nopen('out.txt', 'w').write('x')")
    assert run.ok, run.stderr.text
    assert run.stdout.text.strip() == str(venv)
    assert (work / "out.txt").read_text() == "x"
