"""``--virtual`` is a desktop like any other: the same scripted task, run by the installed
``agent-s run`` once on a fresh ``--virtual`` desktop and once on the session's desktop with its
variables exported (as a user's own desktop), succeeds on both, grounds the same targets by the
same sources, and leaves the clipboard and the active window in the same state.

The task: compute 7 x 6 on galculator by clicking its buttons (single glyphs, which only the
accessibility tree tells apart reliably), copy the result, paste it into mousepad, type after
it, copy mousepad's text, switch back to galculator, and finish with the answer. The run's
``--check`` command runs on the run's desktop and writes what the clipboard holds and which
window is active, so both desktops are read the same way after the agent is done.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from clean_env import clean_env
from scripted_cli import key_file, model_options

from agent_s.desktop.virtual import VirtualDesktop
from agent_s.record.trajectory import load_trajectory
from agent_s.testing.scripted_replies import Step, reply
from agent_s.testing.scripted_server import ScriptedModelServer

AGENT_S = str(Path(sys.executable).parent / "agent-s")
_CLEAN = clean_env("DISPLAY", "XAUTHORITY", "DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR")
_BUTTONS = ["the 7 button", "the * button", "the 6 button", "the = button"]
_CLIPBOARD = "42 is the answer"
# What the check command records, on whichever desktop the run used.
_REPORT = (
    'xclip -o -selection clipboard > "$0/clipboard.txt"; '
    'xdotool getactivewindow getwindowname > "$0/active.txt"'
)


def _act(code: str) -> Step:
    return reply(f"Next step.\n```python\n{code}\n```")


def _script() -> list[Step]:
    return [
        _act('agent.open("galculator")'),
        _act("agent.wait(3)"),
        *(_act(f'agent.click("{button}")') for button in _BUTTONS),
        _act('agent.hotkey(["ctrl", "c"])'),  # galculator copies its display: 42
        _act('agent.open("mousepad")'),
        _act("agent.wait(3)"),
        _act('agent.hotkey(["ctrl", "v"])'),
        _act('agent.type(text=" is the answer")'),
        _act('agent.hotkey(["ctrl", "a"])'),
        _act('agent.hotkey(["ctrl", "c"])'),
        _act('agent.switch_applications("galculator")'),
        _act('agent.done(answer="42")'),
    ]


def _run(tmp_path: Path, env: dict[str, str], *, virtual: bool) -> tuple[Any, dict[str, str]]:
    """Run the task with ``agent-s run``; (the trajectory, what the check command recorded)."""
    tmp_path.mkdir()
    key = key_file(tmp_path, "sk-parity")
    out = tmp_path / "seen"
    out.mkdir()
    (config := tmp_path / "config.toml").write_text("")  # no user's configuration file
    with ScriptedModelServer(_script()) as server:
        done = subprocess.run(
            [
                AGENT_S,
                "run",
                *model_options(server.openai_base_url, key=key),
                "--safety",
                "auto",
                "--no-code-agent",
                "--reuse",  # the same task twice: the second would replay the first's skill
                "off",
                "--record",
                str(tmp_path / "runs"),
                "--check",
                f"sh -c '{_REPORT}' {out}",
                *(["--virtual"] if virtual else []),
                "Compute 7 times 6 on the calculator and put the answer in a text editor",
            ],
            env={**env, "AGENT_S_CONFIG": str(config)},
            capture_output=True,
            text=True,
            timeout=240,
            check=False,
        )
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    assert done.returncode == 0, done.stdout + done.stderr
    assert "check passed" in done.stdout, done.stdout
    (folder,) = (tmp_path / "runs").iterdir()
    seen = {name: (out / f"{name}.txt").read_text().strip() for name in ("clipboard", "active")}
    return load_trajectory(folder), seen


def _grounding(trajectory: Any) -> list[tuple[str, str]]:
    """(target, grounder) of every grounded target, in order."""
    return [(g.target, g.grounder) for step in trajectory.steps for g in step.grounding]


def test_the_calculator_task_runs_the_same_on_a_virtual_and_an_exported_desktop(
    tmp_path: Path, desktop: Any, apps: Any
) -> None:
    virtual, virtual_seen = _run(tmp_path / "virtual", {**_CLEAN}, virtual=True)
    # a fresh HOME on the exported desktop too, as --virtual has: the applications' state
    # (mousepad's session, galculator's settings) starts the same and stays out of other tests
    home = tmp_path / "home"
    shutil.copytree(desktop.home / ".config" / "gtk-3.0", home / ".config" / "gtk-3.0")
    exported_env = {**_CLEAN, **desktop.env, "HOME": str(home)}
    exported, exported_seen = _run(tmp_path / "exported", exported_env, virtual=False)

    for trajectory in (virtual, exported):
        assert trajectory.result is not None
        assert trajectory.result.status.value == "succeeded"
        assert [s.outcome for s in trajectory.steps] == ["ok"] * (len(_script()) - 1) + ["terminal"]
    grounded = _grounding(virtual)
    assert grounded == [(button, "a11y") for button in _BUTTONS]
    assert _grounding(exported) == grounded
    assert virtual_seen == exported_seen == {"clipboard": _CLIPBOARD, "active": "galculator"}


def test_doctor_finds_the_same_on_a_virtual_and_an_exported_desktop(
    tmp_path: Path, desktop: Any
) -> None:
    """Every desktop check (display, capture, input, OCR, accessibility, ...) ends the same."""
    (config := tmp_path / "config.toml").write_text("")
    reports = []
    for args, env in ((["--virtual"], _CLEAN), ([], {**_CLEAN, **desktop.env})):
        done = subprocess.run(
            [AGENT_S, "doctor", "--json", *args],
            env={**env, "AGENT_S_CONFIG": str(config)},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert "Traceback" not in done.stdout + done.stderr, done.stderr
        checks = json.loads(done.stdout)["checks"]
        reports.append({c["name"]: (c["status"], c["fix"]) for c in checks if c["name"] != "model"})
    virtual, exported = reports
    assert virtual == exported
    assert virtual["accessibility"][0] == "ok"
    assert all(status == "ok" for status, _ in virtual.values()), virtual


def test_the_callers_wayland_session_does_not_reach_the_virtual_desktop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Started from a Wayland (or GNOME) session, the virtual desktop's programs still get an
    X11 session of their own: GTK with the caller's GDK_BACKEND=wayland could not open it."""
    host = {
        "GDK_BACKEND": "wayland",
        "QT_QPA_PLATFORM": "wayland",
        "WAYLAND_DISPLAY": "wayland-0",
        "XDG_SESSION_TYPE": "wayland",
        "XDG_CURRENT_DESKTOP": "GNOME",
        "XDG_RUNTIME_DIR": "/run/user/4242",
    }
    for name, value in host.items():
        monkeypatch.setenv(name, value)
    with VirtualDesktop(800, 600, home="temp") as desk:
        for name in ("GDK_BACKEND", "QT_QPA_PLATFORM", "WAYLAND_DISPLAY"):
            assert name not in desk.env
        assert desk.env["XDG_CURRENT_DESKTOP"] == "openbox"  # its own desktop, not GNOME
        assert desk.env["XDG_SESSION_TYPE"] == "x11"
        runtime = Path(desk.env["XDG_RUNTIME_DIR"])
        assert runtime.is_dir()
        assert runtime.stat().st_mode & 0o777 == 0o700
        proc = desk.launch(["galculator"], stderr=subprocess.PIPE)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            assert proc.poll() is None, proc.communicate()[1].decode()  # "cannot open display"
            found = subprocess.run(
                ["xdotool", "search", "--onlyvisible", "--class", "galculator"],
                env=desk.env,
                capture_output=True,
                text=True,
                timeout=10,
                check=False,
            )
            if found.stdout.strip():
                break
            time.sleep(0.1)
        else:
            raise AssertionError("galculator showed no window on the virtual desktop")
