"""``agent-s doctor``: real checks on a real virtual desktop, clear failures without one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

AGENT_S = str(Path(sys.executable).with_name("agent-s"))


def _env_without_display() -> dict[str, str]:
    env = dict(os.environ)
    for key in ("DISPLAY", "XAUTHORITY", "DBUS_SESSION_BUS_ADDRESS", "WAYLAND_DISPLAY"):
        env.pop(key, None)
    return env


@pytest.mark.desktop
def test_doctor_on_a_virtual_desktop_passes_every_check() -> None:
    result = subprocess.run(
        [AGENT_S, "doctor", "--virtual", "--json"],
        env=_env_without_display(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    statuses = {c["name"]: c["status"] for c in report["checks"]}
    assert statuses == {
        "tools": "ok", "display": "ok", "screen": "ok", "capture": "ok", "input": "ok",
        "ocr": "ok", "accessibility": "ok",
    }  # fmt: skip
    details = {c["name"]: c["detail"] for c in report["checks"]}
    assert "1280x800" in details["screen"]
    assert "1280x800 screenshot" in details["capture"]


def test_doctor_without_a_display_says_what_to_do() -> None:
    result = subprocess.run(
        [AGENT_S, "doctor"], env=_env_without_display(), capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert result.returncode == 1
    assert "DISPLAY is not set" in result.stdout
    assert "--virtual" in result.stdout
    assert "Traceback" not in result.stdout + result.stderr


def test_doctor_with_a_dead_display_fails_cleanly() -> None:
    env = _env_without_display()
    env["DISPLAY"] = ":4093"
    result = subprocess.run(
        [AGENT_S, "doctor", "--json"], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stdout + result.stderr
    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    assert checks["display"]["status"] == "fail"
    assert ":4093" in checks["display"]["detail"]
