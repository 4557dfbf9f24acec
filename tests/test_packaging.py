"""The package installs under one namespace, its command runs, and the source stays clean."""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SOURCE_DIRS = ("agent_s", "cli", "grounding", "scripts")


def test_console_script_runs_from_the_installed_package() -> None:
    exe = Path(sys.executable).with_name("agent-s")
    result = subprocess.run([str(exe), "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "doctor" in result.stdout


def test_wheel_puts_everything_under_the_agent_s_namespace(tmp_path: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(REPO),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = tmp_path.glob("agent_s-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top = {name.split("/")[0] for name in names}
    assert {t for t in top if not t.endswith(".dist-info")} == {"agent_s"}
    for required in (
        "agent_s/cli/main.py",
        "agent_s/grounding/__init__.py",
        "agent_s/prompts/__init__.py",
        "agent_s/actions/parse.py",
        "agent_s/desktop/x11.py",
    ):
        assert required in names
    templates = [n for n in names if n.startswith("agent_s/prompts/") and n.endswith(".md")]
    assert templates, "prompt templates must ship as package data"


def test_ruff_is_clean() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", *SOURCE_DIRS, "tests"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_is_applied_and_fmt_skip_is_rare() -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "ruff",
            "format",
            "--check",
            "--no-cache",
            *SOURCE_DIRS,
            "tests",
            "scripts",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, "run: ruff format .\n" + result.stdout + result.stderr
    skips = [
        f"{p.relative_to(REPO)}:{n}"
        for folder in (*SOURCE_DIRS, "tests", "scripts")
        for p in (REPO / folder).rglob("*.py")
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if "fmt: " + "skip" in line or "fmt: " + "off" in line
    ]
    assert len(skips) < 10, skips


_EVAL = re.compile(r"(^|[^_a-zA-Z.])(eval|exec)\s*\(")


@pytest.mark.parametrize("folder", SOURCE_DIRS)
def test_no_eval_or_exec_and_no_shell_strings(folder: str) -> None:
    offenders = []
    for path in sorted((REPO / folder).rglob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            if _EVAL.search(code) or re.search(r"shell\s*=\s*True|os\.system\(", code):
                offenders.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


def test_source_files_stay_small() -> None:
    big = [
        f"{p.relative_to(REPO)} ({n} lines)"
        for folder in SOURCE_DIRS
        for p in (REPO / folder).rglob("*.py")
        if (n := len(p.read_text().splitlines())) > 800
    ]
    assert not big, "split these into one module per concept: " + ", ".join(big)
