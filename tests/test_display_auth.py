"""agent-s reaches every X server a user reaches with xdpyinfo, whatever its cookie arrangement.

Each test starts a plain ``Xvfb`` of its own (no window manager, no D-Bus) the way users start
one: with no ``-auth`` at all (Docker and CI), or with ``-auth FILE`` and the cookie found
through ``XAUTHORITY`` or ``~/.Xauthority``; then runs the installed ``agent-s doctor`` in a
clean environment with a fresh HOME. Where the server asks for a cookie nobody gave, the error
is one line naming XAUTHORITY, never a traceback.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.desktop

AGENT_S = str(Path(sys.executable).with_name("agent-s"))


@dataclass
class Server:
    display: str
    cookies: Path | None  # the -auth file the server was started with


def _start_xvfb(tmp_path: Path, cookie: bool) -> Iterator[Server]:
    argv = ["Xvfb", "-displayfd", "1", "-screen", "0", "800x600x24", "-nolisten", "tcp"]
    cookies = None
    if cookie:
        cookies = tmp_path / "server.auth"
        cookies.touch()  # else xauth says it is making the file
        subprocess.run(
            ["xauth", "-q", "-f", str(cookies), "add", ":0", ".", secrets.token_hex(16)],
            check=True,
        )
        argv += ["-auth", str(cookies)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        assert proc.stdout is not None
        number = proc.stdout.readline().decode().strip()
        assert number.isdigit(), "Xvfb did not report its display number"
        display = f":{number}"
        if cookies is not None:  # the cookie was written for :0; name it for the real display
            secret = subprocess.run(
                ["xauth", "-f", str(cookies), "list"], capture_output=True, text=True, check=True
            ).stdout.split()[-1]
            subprocess.run(["xauth", "-q", "-f", str(cookies), "remove", ":0"], check=True)
            subprocess.run(
                ["xauth", "-q", "-f", str(cookies), "add", display, ".", secret], check=True
            )
        yield Server(display, cookies)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture
def plain_server(tmp_path: Path) -> Iterator[Server]:
    yield from _start_xvfb(tmp_path, cookie=False)


@pytest.fixture
def cookie_server(tmp_path: Path) -> Iterator[Server]:
    yield from _start_xvfb(tmp_path, cookie=True)


def _doctor(server: Server, home: Path, xauthority: str | None) -> dict[str, dict[str, str]]:
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "DISPLAY": server.display}
    if xauthority is not None:
        env["XAUTHORITY"] = xauthority
    result = subprocess.run(
        [AGENT_S, "doctor", "--json"], env=env, capture_output=True, text=True, timeout=120
    )
    assert "Traceback" not in result.stdout + result.stderr, result.stderr
    report = json.loads(result.stdout)  # stdout holds the JSON report and nothing else
    return {c["name"]: c for c in report["checks"]}


def _xdpyinfo_reaches(server: Server, home: Path, xauthority: str | None) -> bool:
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "DISPLAY": server.display}
    if xauthority is not None:
        env["XAUTHORITY"] = xauthority
    return subprocess.run(["xdpyinfo"], env=env, capture_output=True).returncode == 0


needs_xdpyinfo = pytest.mark.skipif(
    shutil.which("xdpyinfo") is None, reason="xdpyinfo (x11-utils) is not installed"
)


@needs_xdpyinfo
def test_a_server_without_a_cookie_and_no_xauthority_file(
    plain_server: Server, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()  # no ~/.Xauthority, no XAUTHORITY: the usual Docker and CI way
    assert _xdpyinfo_reaches(plain_server, home, None)
    checks = _doctor(plain_server, home, None)
    assert checks["display"]["status"] == "ok", checks["display"]
    assert checks["capture"]["status"] == "ok", checks["capture"]
    assert checks["input"]["status"] == "ok", checks["input"]


@needs_xdpyinfo
@pytest.mark.parametrize("what", ["missing", "empty"])
def test_a_server_without_a_cookie_and_an_unusable_xauthority(
    plain_server: Server, tmp_path: Path, what: str
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    named = tmp_path / "cookies"
    if what == "empty":
        named.touch()
    assert _xdpyinfo_reaches(plain_server, home, str(named))
    checks = _doctor(plain_server, home, str(named))
    assert checks["display"]["status"] == "ok", checks["display"]
    assert checks["input"]["status"] == "ok", checks["input"]


@needs_xdpyinfo
def test_a_server_with_a_cookie_named_by_xauthority(cookie_server: Server, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    assert cookie_server.cookies is not None
    checks = _doctor(cookie_server, home, str(cookie_server.cookies))
    assert checks["display"]["status"] == "ok", checks["display"]
    assert checks["input"]["status"] == "ok", checks["input"]


@needs_xdpyinfo
def test_a_server_with_a_cookie_in_the_home_folder(cookie_server: Server, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    assert cookie_server.cookies is not None
    shutil.copy(cookie_server.cookies, home / ".Xauthority")
    checks = _doctor(cookie_server, home, None)
    assert checks["display"]["status"] == "ok", checks["display"]
    assert checks["input"]["status"] == "ok", checks["input"]


@needs_xdpyinfo
def test_a_server_that_wants_a_cookie_nobody_gave_names_xauthority(
    cookie_server: Server, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    assert not _xdpyinfo_reaches(cookie_server, home, None)
    display = _doctor(cookie_server, home, None)["display"]
    assert display["status"] == "fail"
    assert "asks for a cookie" in display["detail"]
    assert "XAUTHORITY" in display["fix"]
    wrong = tmp_path / "other.auth"
    wrong.touch()
    subprocess.run(
        ["xauth", "-q", "-f", str(wrong), "add", cookie_server.display, ".", "00" * 16],
        check=True,
    )
    display = _doctor(cookie_server, home, str(wrong))["display"]
    assert display["status"] == "fail"
    assert f"the cookies in {wrong} were not accepted" in display["detail"]
