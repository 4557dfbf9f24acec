"""The package installs under one namespace, its command runs, and the source stays clean."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[1]
SOURCE_DIRS = ("agent_s", "cli", "grounding", "scripts")


def test_console_script_runs_from_the_installed_package() -> None:
    exe = Path(sys.executable).with_name("agent-s")
    result = subprocess.run([str(exe), "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "doctor" in result.stdout


def test_wheel_puts_everything_under_the_agent_s_namespace(tmp_path: Path) -> None:
    built = subprocess.run(
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
        text=True,
        timeout=300,
    )
    # setuptools warns, in some thirty lines each, of a data folder missing from the packages
    # and of deprecated settings: a new user's `bash scripts/setup.sh` shows them all
    assert "Warning" not in built.stdout + built.stderr, built.stderr
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
    # Every module of the checkout ships: a sub-package missing from [tool.setuptools] packages
    # imports in an editable install and fails in a real one.
    layout = {"agent_s/": "agent_s/", "agent_s/cli/": "cli/", "agent_s/grounding/": "grounding/"}
    layout["agent_s/prompts/"] = "prompts/"
    missing = []
    for prefix, folder in layout.items():
        for source in sorted((REPO / folder).rglob("*.py")):
            relative = source.relative_to(REPO / folder).as_posix()
            if "__pycache__" in relative or relative.startswith(("cli/", "grounding/", "prompts/")):
                continue
            if prefix + relative not in names:
                missing.append(prefix + relative)
    assert not missing, f"modules left out of the wheel (add their package): {missing}"
    # and every data file: the built-in suite, its references, the live view's page
    for folder in ("agent_s/bench/suites", "agent_s/view/static"):
        for path in sorted((REPO / folder).rglob("*")):
            relative = path.relative_to(REPO).as_posix()
            if path.is_file() and "__pycache__" not in relative and relative not in names:
                missing.append(relative)
    assert not missing, f"data files left out of the wheel: {missing}"


def _installed_layout(root: Path) -> dict[str, str]:
    """Lay the checkout out under ``root`` as it installs, with links: ``root/agent_s`` holds
    agent_s/'s entries and, as ``[tool.setuptools.package-dir]`` maps them, cli/, grounding/
    and prompts/. Returns the linked prefixes (``agent_s/cli/``) with their checkout folders."""
    setuptools = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    package_dir: dict[str, str] = setuptools["package-dir"]
    top = root / "agent_s"
    top.mkdir(parents=True)
    mapped = {
        package.removeprefix("agent_s."): folder
        for package, folder in package_dir.items()
        if package != "agent_s"
    }
    for entry in (REPO / package_dir["agent_s"]).iterdir():
        if entry.name not in mapped and entry.name != "__pycache__":
            (top / entry.name).symlink_to(entry)
    for name, folder in mapped.items():
        (top / name).symlink_to(REPO / folder, target_is_directory=True)
    return {f"agent_s/{name}/": f"{folder}/" for name, folder in mapped.items()}


def test_mypy_is_clean(tmp_path: Path) -> None:
    """mypy (configured in pyproject.toml) finds nothing in agent_s, cli and grounding.

    mypy knows nothing of setuptools' package-dir, so it checks a tree of links laid out as the
    package installs; it reads the checkout's files either way, whether the package is
    installed editable or not. No cache: a cold run, the same every time."""
    linked = _installed_layout(tmp_path)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            str(REPO / "pyproject.toml"),
            "--cache-dir",
            os.devnull,
            "--package",
            "agent_s",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    report = result.stdout + result.stderr
    for prefix, folder in linked.items():  # paths in the checkout, not in the link tree
        report = re.sub(rf"^{re.escape(prefix)}", folder, report, flags=re.MULTILINE)
    if result.returncode != 0:
        pytest.fail("mypy found errors (paths in the checkout):\n" + report, pytrace=False)
    # every module was checked: cli/ and grounding/ too, through their links
    files = sum(
        1 for folder in ("agent_s", *linked.values()) for _ in (REPO / folder).rglob("*.py")
    )
    checked = re.search(r"in (\d+) source files", result.stdout)
    assert checked, report
    assert int(checked[1]) == files, f"mypy checked {checked[1]} of {files} files\n{report}"


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
