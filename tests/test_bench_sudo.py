"""OSWorld setup steps that use sudo (``echo {CLIENT_PASSWORD} | sudo -S ...``), on a task's own
virtual desktop.

As root (this test machine), the steps run: through the system's sudo if there is one, else
through the stand-in ``sudo`` the harness puts on the commands' PATH. As a user without
passwordless sudo (``nobody``, via ``runuser``), the task is skipped with the reason saying what
is needed, before any step runs. The task is run by a separate process, as the harness runs each
task (pyautogui binds one display per process).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from agent_s.bench.environment import NO_SUDO, sudo_rights, uses_sudo

ROOT = Path(__file__).resolve().parents[1]
# Runs the task file's setup on a fresh task desktop; prints what happened as JSON.
DRIVER = """
import json, sys
from pathlib import Path
from agent_s.bench.environment import SkipTask, TaskEnvironment, sudo_rights
from agent_s.bench.tasks import load_task

task = load_task(sys.argv[1])
env = TaskEnvironment(task, Path(sys.argv[2]))
report = {"rights": sudo_rights(), "skipped": None}
try:
    env.start()
except SkipTask as err:
    report["skipped"] = err.reason
finally:
    env.stop()
report["log"] = env.log
print(json.dumps(report))
"""


def _task(folder: Path) -> Path:
    """An OSWorld-shaped task whose setup uses sudo the ways OSWorld's tasks do."""
    steps: list[dict[str, Any]] = [
        {  # os/e0df059f: a folder made through sudo in ~/Desktop (there as on OSWorld's VM)
            "type": "execute",
            "parameters": {
                "command": "echo {CLIENT_PASSWORD} | sudo -S mkdir ~/Desktop/todo_list_Jan_1",
                "shell": True,
            },
        },
        {  # "command" steps with shell "true", as multi_apps/2373b66a
            "type": "command",
            "parameters": {
                "command": "echo {CLIENT_PASSWORD} | sudo -S sh -c 'id -u > /home/user/uid.txt'",
                "shell": "true",
            },
        },
        {  # an argv with sudo's own options, the output kept in the task's cache
            "type": "execute",
            "parameters": {
                "command": ["sudo", "-n", "-u", "nobody", "id", "-un"],
                "stdout": "who.txt",
            },
        },
        {  # what sudo -S leaves on the command's stdin: OSWorld's password, filled in
            "type": "execute",
            "parameters": {
                "command": "echo {CLIENT_PASSWORD} | sudo -S true && echo done > ~/after.txt",
                "shell": True,
            },
        },
    ]
    task = {
        "id": "sudo-setup",
        "snapshot": "os",
        "instruction": "Nothing to do: the setup is under test.",
        "related_apps": ["os"],
        "config": steps,
        "evaluator": {
            "func": "exact_match",
            "result": {"type": "vm_command_line", "command": "true", "shell": True},
            "expected": {"type": "rule", "rules": {"expected": ""}},
        },
    }
    path = folder / "sudo-setup.json"
    path.write_text(json.dumps(task), encoding="utf-8")
    return path


def _run(argv_prefix: list[str], task: Path, folder: Path) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "XAUTHORITY")}
    done = subprocess.run(
        [*argv_prefix, sys.executable, "-c", DRIVER, str(task), str(folder)],
        env={**env, "PYTHONPATH": str(ROOT)},
        cwd=folder.parent,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


def test_sudo_commands_are_recognised() -> None:
    assert uses_sudo("echo {CLIENT_PASSWORD} | sudo -S apt-get install unzip -y")
    assert uses_sudo(["sudo", "mkdir", "/x"])
    assert uses_sudo("cd /tmp && /usr/bin/sudo ls")
    assert uses_sudo("echo {CLIENT_PASSWORD} | su - charles")
    assert not uses_sudo("pseudo-tool --sudoers-check")
    assert not uses_sudo(["echo", "visudo"])


@pytest.mark.desktop
@pytest.mark.skipif(os.geteuid() != 0, reason="the harness must run as root for this test")
@pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is not installed")
def test_sudo_setup_steps_run_as_root(tmp_path: Path) -> None:
    folder = tmp_path / "task"
    report = _run([], _task(tmp_path), folder)
    assert report["rights"] == "root"
    assert report["skipped"] is None, report
    home = folder / "home"
    assert (home / "Desktop" / "todo_list_Jan_1").is_dir()
    assert (home / "uid.txt").read_text(encoding="utf-8").strip() == "0"
    assert (folder / "cache" / "who.txt").read_text(encoding="utf-8").strip() == "nobody"
    assert (home / "after.txt").read_text(encoding="utf-8").strip() == "done"
    assert not [line for line in report["log"] if line.startswith("exit status")], report["log"]


@pytest.mark.skipif(os.geteuid() != 0, reason="runuser needs root")
@pytest.mark.skipif(shutil.which("runuser") is None, reason="runuser is not installed")
def test_without_the_rights_the_task_is_skipped_saying_why() -> None:
    # pytest's tmp_path is root's alone: nobody needs a folder it can reach
    with tempfile.TemporaryDirectory(prefix="agent-s-sudo-") as name:
        _skipped_as_nobody(Path(name))


def _skipped_as_nobody(tmp_path: Path) -> None:
    os.chmod(tmp_path, 0o777)  # noqa: S103 (nobody writes the task folder here)
    folder = tmp_path / "task"
    task = _task(tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "XAUTHORITY")}
    probe = subprocess.run(
        ["runuser", "-u", "nobody", "--", "sudo", "-n", "true"],
        capture_output=True,
        check=False,
        env=env,
    )
    if probe.returncode == 0:
        pytest.skip("nobody has passwordless sudo on this machine")
    report = _run(["runuser", "-u", "nobody", "--"], task, folder)
    assert report["rights"] is None
    assert report["skipped"] == NO_SUDO
    assert "as root" in NO_SUDO  # the message names the fixes
    assert "passwordless sudo" in NO_SUDO
    assert not (folder / "home").exists()  # nothing ran


def test_this_process_rights_match_how_it_runs() -> None:
    rights = sudo_rights()
    if os.geteuid() == 0:
        assert rights == "root"
    else:
        sudo = shutil.which("sudo")
        usable = (
            sudo is not None
            and subprocess.run([sudo, "-n", "true"], capture_output=True, check=False).returncode
            == 0
        )
        assert rights == ("sudo" if usable else None)
