"""Waiting until a program has handled what it was sent (agent_s.desktop.settle)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from polling import wait_until

from agent_s.desktop import ops, settle
from agent_s.desktop.base import perform


@pytest.fixture
def child() -> Iterator[subprocess.Popen[str]]:
    """A program that is busy for a while when told to (a line on stdin), idle otherwise."""
    code = (
        "import sys, time\n"
        "for line in sys.stdin:\n"
        "    end = time.monotonic() + float(line)\n"
        "    while time.monotonic() < end: pass\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, text=True)
    time.sleep(0.3)  # started and waiting for a line
    yield proc
    proc.kill()
    proc.wait()


def _make_busy(child: subprocess.Popen[str], seconds: float) -> None:
    assert child.stdin is not None
    child.stdin.write(f"{seconds}\n")
    child.stdin.flush()
    time.sleep(0.1)  # it has read the line and is running


def test_an_idle_program_settles_at_once(child: subprocess.Popen[str]) -> None:
    began = time.monotonic()
    assert settle.until_idle(child.pid, limit=3)
    assert time.monotonic() - began < settle.QUIET + 0.5


def test_a_busy_program_is_waited_for_until_it_is_done(child: subprocess.Popen[str]) -> None:
    _make_busy(child, 1.0)
    began = time.monotonic()
    assert settle.until_idle(child.pid, limit=5)
    assert time.monotonic() - began >= 0.7  # it was busy for most of a second


def test_a_program_busy_beyond_the_limit_gives_up(child: subprocess.Popen[str]) -> None:
    _make_busy(child, 5)
    began = time.monotonic()
    assert not settle.until_idle(child.pid, limit=0.5)
    assert time.monotonic() - began < 1.5


def test_no_or_gone_program_is_not_waited_for() -> None:
    assert not settle.until_idle(None)
    assert not settle.until_idle(0)
    gone = subprocess.Popen(["true"])
    gone.wait()
    began = time.monotonic()
    assert not settle.until_idle(gone.pid)
    assert time.monotonic() - began < 0.5


# -- on the desktop: a window whose program is busy -----------------------------------------------

# GTK names its windows' pid (_NET_WM_PID); Tk does not, and such a window is not waited for.
BUSY_WINDOW = """\
import os, sys, time
import gi
gi.require_version("Gtk", "3.0")
from gi.repository import GLib, Gtk
go, title = sys.argv[1], sys.argv[2]
window = Gtk.Window(title=title)
window.add(Gtk.Label(label="busy on request"))
window.connect("destroy", Gtk.main_quit)
window.show_all()
def poll():
    if os.path.exists(go):  # told to be busy: the event thread runs for 1.2 s
        os.remove(go)
        end = time.monotonic() + 1.2
        while time.monotonic() < end:
            pass
    return True
GLib.timeout_add(100, poll)
Gtk.main()
"""


def _busy_front_window(apps: Any, x11: Any, tmp_path: Path) -> Path:
    """A GTK window in front whose program gets busy when the returned file appears."""
    go = tmp_path / "go"
    title = f"busy-{time.monotonic_ns()}"
    apps([sys.executable, "-c", BUSY_WINDOW, str(go), title], window=title)
    x11.activate(title)
    return go


def _start_busy(go: Path) -> None:
    go.touch()
    wait_until(lambda: not go.exists(), timeout=10, what="the program to take the request")


def test_a_settling_sleep_waits_for_the_front_windows_program(
    apps: Any, x11: Any, tmp_path: Path
) -> None:
    go = _busy_front_window(apps, x11, tmp_path)
    _start_busy(go)
    began = time.monotonic()
    perform(x11, [ops.Sleep(0.0, settle=True)])
    assert time.monotonic() - began >= 0.8  # it was busy for 1.2 s from the request
    began = time.monotonic()
    perform(x11, [ops.Sleep(0.0)])  # without settle: no wait
    assert time.monotonic() - began < 0.1


def test_the_look_after_an_action_waits_for_a_busy_front_program_within_its_limit(
    apps: Any, x11: Any, tmp_path: Path
) -> None:
    go = _busy_front_window(apps, x11, tmp_path)
    _start_busy(go)
    began = time.monotonic()
    settle.until_still(x11, 3.0)
    assert time.monotonic() - began >= 0.8
    _start_busy(go)
    began = time.monotonic()
    settle.until_still(x11, 0.4)  # busy beyond the limit: the limit holds
    assert time.monotonic() - began < 0.8


@pytest.mark.parametrize("busy", ["main", "worker"])
def test_the_main_thread_counts_to_the_nanosecond_only_after_typed_text(busy: str) -> None:
    """What a worker thread runs shows in ``_threads_runtime`` after any action; what the main
    thread runs only after typed text (``main``: a file chooser checking a typed name);
    otherwise its state and clock ticks (``_sample``) speak for it. Counted to the nanosecond
    after every action, the main thread's millisecond per frame after a galculator click held
    each wait to ``WORKERS`` (267 ms a click, not 67)."""
    code = (
        "import sys, threading\n"
        "def spin():\n"
        "    while True:\n"
        "        pass\n"
        "def rest():\n"
        "    threading.Event().wait()\n"
        "threading.Thread(target=spin if sys.argv[1] == 'worker' else rest, daemon=True).start()\n"
        "spin() if sys.argv[1] == 'main' else rest()\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code, busy])
    try:
        time.sleep(0.3)  # started, its threads running or resting
        first = {main: settle._threads_runtime(proc.pid, main=main) for main in (False, True)}
        time.sleep(0.2)
        then = {main: settle._threads_runtime(proc.pid, main=main) for main in (False, True)}
    finally:
        proc.kill()
        proc.wait()
    grew = {main: (then[main] or 0) > (first[main] or 0) for main in (False, True)}
    assert None not in (*first.values(), *then.values())
    assert grew == {False: busy == "worker", True: True}
