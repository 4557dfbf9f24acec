"""Waiting until a program has handled what it was sent (agent_s.desktop.settle)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from agent_s.desktop import settle


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
