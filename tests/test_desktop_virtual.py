"""VirtualDesktop: starts a real X desktop, and stopping it leaves nothing behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from agent_s.desktop.virtual import VirtualDesktop, marked_processes
from agent_s.errors import DesktopSetupError

needs_xvfb = pytest.mark.desktop  # conftest skips these, saying why, when Xvfb is missing


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _comm(pid: int) -> str:
    try:
        return psutil.Process(pid).name()
    except psutil.Error:
        return ""


def _children(parent: int) -> list[int]:
    return [p.pid for p in psutil.Process(parent).children()]


def _cmdline(pid: int) -> str:
    try:
        return " ".join(psutil.Process(pid).cmdline())
    except psutil.Error:
        return ""


def _screen_size(desk: VirtualDesktop) -> str:
    out = subprocess.run(
        ["xdpyinfo"], env=desk.env, capture_output=True, text=True, check=True, timeout=30
    ).stdout
    return next(line.split()[1] for line in out.splitlines() if "dimensions:" in line)


@needs_xvfb
def test_stop_leaves_no_process_socket_lock_or_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_S_STATE_DIR", str(tmp_path / "state"))
    desk = VirtualDesktop(640, 480, home="temp").start()
    number = desk.display.lstrip(":")
    home, auth_dir = desk.home, Path(desk.env["XAUTHORITY"]).parent
    (state_file,) = (tmp_path / "state" / "desktops").glob("*.json")
    (watchdog,) = [p for p in _children(os.getpid()) if str(state_file) in _cmdline(p)]
    try:
        state = json.loads(state_file.read_text())
        assert state["token"] == desk.token
        assert state["owner"]["pid"] == os.getpid()
        assert sorted(state["paths"]) == sorted([str(auth_dir), str(home)])
        assert home.is_dir()
        assert "gtk-cursor-blink = false" in (home / ".config/gtk-3.0/settings.ini").read_text()
        assert Path(f"/tmp/.X11-unix/X{number}").exists()
        term = desk.launch(["xterm"])
        # A program that leaves the process group it was started in: the marker still finds it.
        desk.launch(["setsid", "-f", "sleep", "300"])

        def sleepers() -> list[int]:
            return [p for p in marked_processes(desk.token) if _comm(p) == "sleep"]

        deadline = time.monotonic() + 5
        while not sleepers() and time.monotonic() < deadline:
            time.sleep(0.05)
        (escaped,) = sleepers()
        assert os.getpgid(escaped) != term.pid
        pids = marked_processes(desk.token)
        assert term.pid in pids
    finally:
        desk.stop()
    assert marked_processes(desk.token) == []
    assert not any(_alive(pid) for pid in pids)
    assert not Path(f"/tmp/.X11-unix/X{number}").exists()
    assert not Path(f"/tmp/.X{number}-lock").exists()
    assert not home.exists()
    assert not auth_dir.exists()
    assert not state_file.exists()
    assert not _alive(watchdog)  # told the desktop stopped cleanly, it exited at once
    desk.stop()  # a second stop is harmless
    with pytest.raises(DesktopSetupError, match="not running"):
        desk.launch(["xterm"])


@needs_xvfb
def test_two_desktops_at_once_get_their_own_displays(tmp_path: Path) -> None:
    kept_home = tmp_path / "kept-home"
    with (
        VirtualDesktop(640, 480, accessibility=False) as first,
        VirtualDesktop(800, 600, home=kept_home, window_manager=False) as second,
    ):
        assert first.display != second.display
        assert _screen_size(first) == "640x480"
        assert _screen_size(second) == "800x600"
        assert second.home == kept_home.resolve()
        assert "HOME" in second.env
    assert kept_home.is_dir()  # a home given by path is the caller's: it stays


@needs_xvfb
def test_launch_takes_an_argument_list_not_a_shell_string(desktop: VirtualDesktop) -> None:
    with pytest.raises(TypeError, match="not a shell string"):
        desktop.launch("xterm -e sh")  # type: ignore[arg-type]


_LIST_APPS = """
import json
import gi
gi.require_version("Atspi", "2.0")
from gi.repository import Atspi
desktop = Atspi.get_desktop(0)
names = [desktop.get_child_at_index(i).get_name() for i in range(desktop.get_child_count())]
print(json.dumps(names))
"""


def test_accessibility_bus_lists_a_gtk_application(desktop: VirtualDesktop, apps: Any) -> None:
    apps(["galculator"], window="galculator")

    def names() -> list[str]:
        result = subprocess.run(
            [sys.executable, "-c", _LIST_APPS],
            env=desktop.env,
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
        return json.loads(result.stdout)

    deadline = time.monotonic() + 10
    while "galculator" not in (found := names()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "galculator" in found


def test_session_desktop_is_the_size_asked_for(desktop: VirtualDesktop) -> None:
    assert _screen_size(desktop) == "1280x800"
    assert os.environ["DISPLAY"] == desktop.display  # pyautogui binds to it at import
