"""``agent-s mcp --transport http`` asks who is there: the installed command started on a free
loopback port, spoken to with real HTTP clients (``urllib`` for single requests, the ``mcp`` SDK's
client for whole sessions), as an attacker would. Without the server's token nothing runs (no
model request reaches the scripted server, no run folder is written), a foreign Host or Origin is
refused even with the token, a local user who cannot read the token file gets 401, and the
README's HTTP client configuration is the one that gets in."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import psutil
import pytest
from clean_env import clean_env
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from polling import wait_until
from scripted_cli import key_file

from agent_s.testing.scripted_replies import reply
from agent_s.testing.scripted_server import ScriptedModelServer

AGENT_S = str(Path(sys.executable).parent / "agent-s")
README = Path(__file__).resolve().parent.parent / "README.md"
KEY = "sk-mcp-auth-SECRET-0123456789abcdef"
_SESSION = ("DISPLAY", "XAUTHORITY", "DBUS_SESSION_BUS_ADDRESS", "WAYLAND_DISPLAY")
_CLEAN = clean_env(*_SESSION)
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "attacker", "version": "1"},
    },
}
RUN_TASK = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "tools/call",
    "params": {"name": "run_task", "arguments": {"task": "Say hello"}},
}


class Served:
    """``agent-s mcp --transport http`` running: its URL, port, stderr lines and record folder."""

    def __init__(self, proc: subprocess.Popen[str], record: Path) -> None:
        self.proc = proc
        self.record = record
        self.lines: list[str] = []
        assert proc.stderr is not None
        self.reader = threading.Thread(target=self._read, args=(proc.stderr,), daemon=True)
        self.reader.start()
        first = wait_until(lambda: self.lines, 60, "the server's first line")[0]
        found = re.search(r"(http://127\.0\.0\.1:(\d+)/mcp)", first)
        assert found, first
        self.url, self.port = found.group(1), int(found.group(2))

    def _read(self, stream: Any) -> None:
        for line in stream:
            self.lines.append(line)

    @property
    def printed_token(self) -> str:
        """The token the server printed on stderr (once)."""

        def token() -> str | None:
            found = re.search(r"Authorization: Bearer ([\w-]{16,})", "".join(self.lines))
            return found.group(1) if found else None

        value: str = wait_until(token, 10, "the token on stderr")
        return value

    def runs(self) -> list[Path]:
        return sorted(self.record.iterdir()) if self.record.exists() else []


@contextmanager
def served(tmp_path: Path, env: dict[str, str], *extra: str) -> Iterator[Served]:
    record = tmp_path / "runs"
    key = key_file(tmp_path, KEY)
    argv = [AGENT_S, "mcp", "--transport", "http", "--port", "0", "--api-key-file", str(key)]
    proc = subprocess.Popen(
        [*argv, *extra],
        env={**_CLEAN, **env, "AGENT_S_RECORD_DIR": str(record)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    server: Served | None = None
    try:
        server = Served(proc, record)
        yield server
    finally:
        proc.terminate()
        proc.wait(20)
        if server is not None:
            server.reader.join(10)
            assert "Traceback" not in "".join(server.lines), server.lines


def _model_env(desktop: Any, server: ScriptedModelServer) -> dict[str, str]:
    return {
        **desktop.env,
        "AGENT_S_PROVIDER": "openai-compatible",
        "AGENT_S_MODEL": "scripted-model",
        "AGENT_S_BASE_URL": server.openai_base_url,
    }


def post(url: str, body: dict[str, Any], **headers: str) -> tuple[int, str]:
    """One POST with a JSON body; the status and the answer's text."""
    sent = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    data = json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={**sent, **headers}, method="POST")  # noqa: S310
    try:
        with urllib.request.urlopen(request, timeout=20) as answer:  # noqa: S310
            return int(answer.status), answer.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as err:
        return int(err.code), err.read().decode("utf-8", "replace")


@asynccontextmanager
async def http_session(url: str, authorization: str) -> AsyncIterator[ClientSession]:
    """An initialized session of the SDK's client with this Authorization header."""
    client = create_mcp_http_client(headers={"Authorization": authorization})
    async with (
        client,
        streamable_http_client(url, http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def _session_tools(url: str, token: str) -> tuple[set[str], dict[str, Any], dict[str, Any]]:
    """A whole session with the SDK's client sending the token: the tools, run_task's and
    list_trajectories' results."""

    async def main() -> tuple[set[str], dict[str, Any], dict[str, Any]]:
        async with http_session(url, f"Bearer {token}") as session:
            names = {t.name for t in (await session.list_tools()).tools}
            ran: types.CallToolResult = await session.call_tool("run_task", {"task": "Say hello"})
            listed: types.CallToolResult = await session.call_tool("list_trajectories", {})
            assert not ran.is_error, ran.content
            assert ran.structured_content is not None
            assert listed.structured_content is not None
            return names, dict(ran.structured_content), dict(listed.structured_content)

    result: tuple[set[str], dict[str, Any], dict[str, Any]] = anyio.run(main)
    return result


def act(code: str) -> str:
    return f"Working.\n```python\n{code}\n```"


# -- the attacks ---------------------------------------------------------------------------------


def test_without_the_token_nothing_runs_and_with_it_the_tools_work(
    tmp_path: Path, desktop: Any
) -> None:
    with ScriptedModelServer([reply(act('agent.done(answer="hello")'))]) as model:
        with served(tmp_path, _model_env(desktop, model)) as server:
            # no token, a wrong one, the right one in another scheme: 401; nothing runs
            for body in (INITIALIZE, RUN_TASK):
                status, text = post(server.url, body)
                assert status == 401, (status, text)
                status, text = post(server.url, body, Authorization="Bearer wrong-0123456789abcdef")
                assert status == 401, (status, text)
                status, text = post(server.url, body, Authorization=f"Basic {server.printed_token}")
                assert status == 401, (status, text)
            assert model.requests == []
            assert server.runs() == []
            # the token is printed once, on stderr, with how a client sends it
            printed = "".join(server.lines)
            assert printed.count(server.printed_token) == 1
            names, ran, listed = _session_tools(server.url, server.printed_token)
        assert "run_task" in names
        assert "list_trajectories" in names
        assert ran["status"] == "succeeded", ran
        assert len(model.requests) == 1
        assert [t["id"] for t in listed["trajectories"]] == [ran["trajectory_id"]]


def test_the_token_is_not_enough_from_a_foreign_host_or_origin(tmp_path: Path) -> None:
    with ScriptedModelServer([]) as model:
        env = {"DISPLAY": ":999", "AGENT_S_BASE_URL": model.openai_base_url}
        with served(tmp_path, env) as server:
            auth = f"Bearer {server.printed_token}"
            port = server.port
            # DNS rebinding: a page whose name now points at 127.0.0.1 sends its own name
            for host in (f"evil.example:{port}", "127.0.0.1", f"127.0.0.1:{port + 1}"):
                status, _ = post(server.url, RUN_TASK, Authorization=auth, Host=host)
                assert status == 421, host
            # a page elsewhere, a sandboxed frame, another local port
            for origin in (
                "http://evil.example",
                "null",
                f"http://127.0.0.1:{port + 1}",
                f"https://127.0.0.1:{port}",
                f"http://evil.example:{port}",
            ):
                status, _ = post(server.url, INITIALIZE, Authorization=auth, Origin=origin)
                assert status == 403, origin
            # a body a page could send without a preflight
            for kind in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data"):
                status, _ = post(
                    server.url, INITIALIZE, Authorization=auth, **{"Content-Type": kind}
                )
                assert status == 415, kind
            assert model.requests == []
            assert server.runs() == []
            # the server's own names and origin are let in
            for host in (f"127.0.0.1:{port}", f"localhost:{port}"):
                status, text = post(
                    server.url,
                    INITIALIZE,
                    Authorization=auth,
                    Host=host,
                    Origin=f"http://{host}",
                )
                assert status == 200, (host, text)


def test_a_non_loopback_host_is_refused(tmp_path: Path) -> None:
    for host in ("0.0.0.0", "192.168.1.10", "example.com", "::"):  # noqa: S104 - refused
        done = subprocess.run(
            [AGENT_S, "mcp", "--transport", "http", "--port", "0", "--host", host],
            env={**_CLEAN, "DISPLAY": ":999", "AGENT_S_RECORD_DIR": str(tmp_path / "runs")},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 2, (host, done.stderr)
        assert f"--host {host}: not a loopback address" in done.stderr
        assert "127.0.0.1" in done.stderr
        assert "Traceback" not in done.stderr


@pytest.fixture
def shared() -> Iterator[Path]:
    """A folder every user may reach and enter (pytest's own are its owner's only)."""
    folder = Path(tempfile.mkdtemp(prefix="agent-s-shared-", dir="/tmp"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as user nobody")
@pytest.mark.parametrize("kept", ["file", "printed"])
def test_another_local_user_cannot_read_the_token_and_gets_401(
    tmp_path: Path, shared: Path, kept: str
) -> None:
    """As ``nobody``: the token file (in a folder anyone may enter) cannot be read; a printed
    token went to the owner's terminal only. Either way: 401, nothing runs."""
    token_file = shared / "mcp-token"
    (shared / "public").write_text("anyone may read this\n")  # the folder is no barrier
    (shared / "public").chmod(0o644)
    extra = ["--token-file", str(token_file)] if kept == "file" else []
    with ScriptedModelServer([]) as model:
        env = {"DISPLAY": ":999", "AGENT_S_BASE_URL": model.openai_base_url}
        with served(tmp_path, env, *extra) as server:
            if kept == "file":
                wait_until(lambda: len(server.lines) >= 2, 10, "the token line")
                assert token_file.stat().st_mode & 0o777 == 0o600
                token = token_file.read_text().strip()
                assert token not in "".join(server.lines)  # kept in the file, never printed
            attacker = (
                "import json, sys, urllib.request, urllib.error\n"
                "url, path = sys.argv[1], sys.argv[2]\n"
                "print(open(path.replace('mcp-token', 'public')).read().strip())\n"
                "try:\n"
                "    token = open(path).read().strip()\n"
                "    print('read')\n"
                "except PermissionError:\n"
                "    token = ''\n"
                "    print('unreadable')\n"
                "except FileNotFoundError:\n"
                "    token = ''\n"
                "    print('no-file')\n"
                "for body in sys.argv[3:]:\n"
                "    request = urllib.request.Request(url, data=body.encode(), method='POST',"
                " headers={'Content-Type': 'application/json',"
                " 'Accept': 'application/json, text/event-stream',"
                " 'Authorization': 'Bearer ' + token})\n"
                "    try:\n"
                "        print(urllib.request.urlopen(request, timeout=20).status)\n"
                "    except urllib.error.HTTPError as err:\n"
                "        print(err.code)\n"
            )
            argv = [
                "setpriv",
                "--reuid=nobody",
                "--regid=nogroup",
                "--clear-groups",
                "/usr/bin/python3",
                "-c",
                attacker,
                server.url,
                str(token_file),
                json.dumps(INITIALIZE),
                json.dumps(RUN_TASK),
            ]
            done = subprocess.run(
                argv, capture_output=True, text=True, timeout=60, check=False, cwd="/"
            )
            assert done.returncode == 0, done.stderr
            first = "unreadable" if kept == "file" else "no-file"
            assert done.stdout.splitlines() == ["anyone may read this", first, "401", "401"]
            assert model.requests == []
            assert server.runs() == []
            # the owner, with the token, is let in
            if kept == "printed":
                token = server.printed_token
            status, text = post(server.url, INITIALIZE, Authorization=f"Bearer {token}")
            assert status == 200, text


@pytest.mark.parametrize("unsafe", ["group-readable", "world-readable", "symlink", "empty"])
def test_an_unsafe_token_file_is_refused_naming_the_fix(tmp_path: Path, unsafe: str) -> None:
    path = tmp_path / "mcp-token"
    real = tmp_path / "real-token"
    real.write_text("a-token-long-enough-0123456789\n")
    real.chmod(0o600)
    if unsafe == "symlink":
        path.symlink_to(real)
    else:
        path.write_text("" if unsafe == "empty" else "a-token-long-enough-0123456789\n")
        path.chmod({"group-readable": 0o640, "world-readable": 0o644, "empty": 0o600}[unsafe])
    done = subprocess.run(
        [AGENT_S, "mcp", "--transport", "http", "--port", "0", "--token-file", str(path)],
        env={**_CLEAN, "DISPLAY": ":999", "AGENT_S_RECORD_DIR": str(tmp_path / "runs")},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert lines, done.stderr
    assert lines[0].startswith(f"error: --token-file {path}"), done.stderr
    fix = {
        "group-readable": f"chmod 600 {path}",
        "world-readable": f"chmod 600 {path}",
        "symlink": "symbolic link",
        "empty": "holds no token",
    }[unsafe]
    assert fix in done.stderr.replace("\n", " ")
    assert "Traceback" not in done.stderr


# -- how a client gets in: the help and the README ------------------------------------------------


def _readme_http_config() -> dict[str, Any]:
    section = README.read_text().split("### MCP", 1)[1].split("\n#", 1)[0]
    bodies = re.findall(r"^```json\n(.*?)^```$", section, re.MULTILINE | re.DOTALL)
    entries = [e for b in bodies for e in json.loads(b)["mcpServers"].values() if "url" in e]
    assert len(entries) == 1, entries
    entry: dict[str, Any] = entries[0]
    return entry


def test_the_help_and_the_readme_show_how_a_client_sends_the_token(tmp_path: Path) -> None:
    shown = subprocess.run(
        [AGENT_S, "mcp", "--help"],
        env={**_CLEAN, "COLUMNS": "250", "NO_COLOR": "1", "TERM": "dumb"},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert "Authorization: Bearer TOKEN" in shown
    assert "--token-file" in shown
    entry = _readme_http_config()
    assert entry["headers"]["Authorization"].startswith("Bearer ")
    token_file = tmp_path / "mcp-token"
    with served(tmp_path, {"DISPLAY": ":999"}, "--token-file", str(token_file)) as server:
        listening = [
            c.laddr
            for c in psutil.Process(server.proc.pid).net_connections("inet")
            if c.status == psutil.CONN_LISTEN
        ]
        assert listening
        assert all(a.ip == "127.0.0.1" for a in listening), listening
        # the README's entry as a client reads it: its URL (on this test's port), its header
        # with the token the file holds in place of the placeholder
        url = re.sub(r":\d+/", f":{server.port}/", entry["url"])
        header = entry["headers"]["Authorization"].replace("TOKEN", token_file.read_text().strip())

        async def main() -> set[str]:
            async with http_session(url, header) as session:
                return {t.name for t in (await session.list_tools()).tools}

        assert "list_trajectories" in anyio.run(main)
        assert post(url, INITIALIZE)[0] == 401
