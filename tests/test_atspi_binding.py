"""AT-SPI is bound without letting libatspi end the process: with no accessibility bus, every
user (the grounder, the field reader, doctor) says it is unavailable and the process goes on.

libatspi aborts the whole process (SIGTRAP, "dbind-ERROR: Couldn't connect to accessibility
bus") on any call made after a failed ``Atspi.init``; these run in a subprocess so that a
regression kills the child, not the test session.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from agent_s.desktop.virtual import VirtualDesktop

PROGRAM = textwrap.dedent(
    """
    from agent_s.desktop.atspi import AccessibilityUnavailable, bindings
    from agent_s.desktop.base import WindowInfo
    from agent_s.desktop.watch import FieldReader
    from agent_s.doctor import _accessibility
    from agent_s.grounding.accessibility import AccessibilityTree
    from agent_s.grounding.types import GrounderUnavailable
    import os

    for attempt in range(2):  # a second try is as safe as the first
        try:
            AccessibilityTree().applications()
            raise SystemExit("the tree answered without an accessibility bus")
        except GrounderUnavailable as err:
            print("grounder:", err.reason)
        try:
            bindings()
        except AccessibilityUnavailable as err:
            print("final:", err.final)
    me = WindowInfo(1, "agent", "python", os.getpid(), 0, 0, 10, 10, True)
    print("field:", FieldReader().read([me]))
    check = _accessibility(None)
    print("doctor:", check.status, check.detail)
    """
)


def _run(env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "probe.py"
    script.write_text(PROGRAM)
    return subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=60
    )


def test_a_session_bus_that_is_not_there_is_reported_not_fatal(tmp_path: Path) -> None:
    env = dict(os.environ)
    env.pop("AT_SPI_BUS_ADDRESS", None)
    env["DBUS_SESSION_BUS_ADDRESS"] = f"unix:path={tmp_path / 'no-bus'}"
    done = _run(env, tmp_path)
    assert done.returncode == 0, (done.returncode, done.stdout, done.stderr)
    assert "dbind-ERROR" not in done.stderr
    lines = done.stdout.splitlines()
    assert lines.count("grounder: no accessibility bus") == 2, done.stdout
    assert lines.count("final: False") == 2  # libatspi was never asked: a later bus can bind
    assert "field: None" in lines
    assert any(
        line.startswith("doctor: warn the accessibility tree is unavailable") for line in lines
    ), done.stdout


def test_no_session_bus_at_all(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "DBUS_SESSION_BUS_ADDRESS"}
    done = _run(env, tmp_path)
    assert done.returncode == 0, (done.returncode, done.stdout, done.stderr)
    assert done.stdout.splitlines().count("grounder: no D-Bus session bus") == 2, done.stdout


TWO_DESKTOPS = textwrap.dedent(
    """
    import os, sys
    from agent_s.grounding.accessibility import AccessibilityTree
    from agent_s.grounding.types import GrounderUnavailable

    for name, bus in zip(("first", "second", "first again"), sys.argv[1:]):
        os.environ["DBUS_SESSION_BUS_ADDRESS"] = bus
        try:
            apps = AccessibilityTree().applications()
            print(name, "reads", sorted({app for app, _ in apps}))
        except GrounderUnavailable as err:
            print(name, "unavailable:", err.reason)
    """
)


def test_one_desktops_tree_is_never_read_for_another(desktop: Any, apps: Any) -> None:
    """libatspi binds to one session bus per process; asked for another desktop's tree (an MCP
    server's virtual run after a look at its own screen), it says it cannot, instead of
    answering with the first desktop's elements."""
    apps(["galculator"], window="galculator")
    env = {k: v for k, v in desktop.env.items() if k != "AT_SPI_BUS_ADDRESS"}
    first = env["DBUS_SESSION_BUS_ADDRESS"]
    with VirtualDesktop(640, 480, home="temp") as other:
        second = other.env["DBUS_SESSION_BUS_ADDRESS"]
        done = subprocess.run(
            [sys.executable, "-c", TWO_DESKTOPS, first, second, first],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 0, (done.returncode, done.stdout, done.stderr)
    lines = done.stdout.splitlines()
    assert len(lines) == 3, done.stdout
    assert lines[0].startswith("first reads"), lines
    assert "galculator" in lines[0], lines
    assert lines[1] == "second unavailable: bound to another desktop", lines
    assert lines[2] == lines[0].replace("first", "first again", 1), lines
