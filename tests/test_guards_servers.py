"""The servers' lock (``agent_s.guards.servers``) on its own: which Host, Origin, token and body
type a request may carry, which addresses a server may listen on, and which token files it
accepts (checked on real files, modes, owners and links)."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from agent_s.guards.servers import (
    Door,
    ServerGuardError,
    bearer,
    loopback_address,
    new_token,
    same_token,
    token_from_file,
)

PORT = 40123
TOKEN = "the-token-0123456789abcdef"  # noqa: S105 - a test token


def _check(method: str = "GET", token: str | None = TOKEN, **headers: str | list[str]) -> str:
    """The kind of refusal (or "ok") for a request with these headers (a list: repeated)."""
    sent = {"Host": f"127.0.0.1:{PORT}", **{k.replace("_", "-"): v for k, v in headers.items()}}
    pairs = [
        (name, value)
        for name, values in sent.items()
        for value in (values if isinstance(values, list) else [values])
    ]
    refusal = Door(TOKEN, PORT).check(method, pairs, token)
    return "ok" if refusal is None else refusal.kind


@pytest.mark.parametrize(
    ("host", "kind"),
    [
        (f"127.0.0.1:{PORT}", "ok"),
        (f"localhost:{PORT}", "ok"),
        (f"LOCALHOST:{PORT}", "ok"),
        (f"[::1]:{PORT}", "ok"),
        ("127.0.0.1", "host"),  # no port
        (f"127.0.0.1:{PORT + 1}", "host"),
        (f"evil.example:{PORT}", "host"),  # DNS rebinding
        (f"localhost.evil.example:{PORT}", "host"),
        (f"127.0.0.1:{PORT}.evil.example", "host"),
        ("", "host"),
        ([f"127.0.0.1:{PORT}", f"evil.example:{PORT}"], "host"),  # two Host headers
    ],
)
def test_host(host: str | list[str], kind: str) -> None:
    assert _check(Host=host) == kind


@pytest.mark.parametrize(
    ("origin", "kind"),
    [
        (f"http://127.0.0.1:{PORT}", "ok"),
        (f"http://localhost:{PORT}", "ok"),
        (f"http://[::1]:{PORT}", "ok"),
        ("null", "origin"),
        ("", "origin"),
        ("http://evil.example", "origin"),
        (f"http://127.0.0.1:{PORT + 1}", "origin"),
        (f"https://127.0.0.1:{PORT}", "origin"),
        (f"http://127.0.0.1:{PORT}.evil.example", "origin"),
        (f"http://evil.example/http://127.0.0.1:{PORT}", "origin"),
        ([f"http://127.0.0.1:{PORT}", "http://evil.example"], "origin"),
    ],
)
def test_origin(origin: str | list[str], kind: str) -> None:
    assert _check("POST", Origin=origin, Content_Type="application/json") == kind


def test_no_origin_is_a_program_and_is_served() -> None:
    assert _check("POST", Content_Type="application/json") == "ok"


@pytest.mark.parametrize(
    "given", [None, "", "wrong", TOKEN[:-1], TOKEN + "x", TOKEN.upper(), f" {TOKEN}", "é" * 26]
)
def test_only_the_token_itself_opens(given: str | None) -> None:
    assert _check(token=given) == "token"
    assert not same_token(given, TOKEN)


def test_the_token_is_fresh_and_compared_whole() -> None:
    tokens = {new_token() for _ in range(50)}
    assert len(tokens) == 50
    assert all(len(t) >= 32 for t in tokens)
    assert same_token(TOKEN, TOKEN)
    assert _check() == "ok"


@pytest.mark.parametrize(
    ("method", "headers", "kind"),
    [
        ("POST", {"Content_Type": "application/json"}, "ok"),
        ("POST", {"Content_Type": "application/json; charset=utf-8"}, "ok"),
        ("POST", {"Content_Type": "text/plain"}, "content-type"),
        ("POST", {"Content_Type": "Text/Plain ; charset=UTF-8"}, "content-type"),
        ("POST", {"Content_Type": "application/x-www-form-urlencoded"}, "content-type"),
        ("POST", {"Content_Type": "multipart/form-data; boundary=--x"}, "content-type"),
        ("POST", {}, "content-type"),
        ("POST", {"Content_Type": ""}, "content-type"),
        ("POST", {"Content_Type": ["application/json", "text/plain"]}, "content-type"),
        ("POST", {"Content_Type": "text/plain", "X_Agent_S": "1"}, "ok"),
        ("POST", {"Content_Type": "text/plain", "X_Agent_S": ""}, "content-type"),
        ("DELETE", {}, "ok"),  # never sent from elsewhere without a preflight
        ("GET", {}, "ok"),
    ],
)
def test_state_changing_requests_need_a_preflighted_kind(
    method: str, headers: dict[str, str | list[str]], kind: str
) -> None:
    assert _check(method, **headers) == kind


def test_refusals_come_in_order_and_with_their_status() -> None:
    door = Door(TOKEN, PORT)
    foreign = [("Host", f"evil.example:{PORT}"), ("Origin", "null")]
    refusal = door.check("POST", foreign, None)
    assert refusal is not None
    assert (refusal.kind, refusal.status) == ("host", 421)
    refusal = door.check("POST", [("Host", f"127.0.0.1:{PORT}"), ("Origin", "null")], TOKEN)
    assert refusal is not None
    assert (refusal.kind, refusal.status) == ("origin", 403)
    refusal = door.check("POST", [("Host", f"127.0.0.1:{PORT}")], None)
    assert refusal is not None
    assert (refusal.kind, refusal.status) == ("token", 401)
    refusal = door.check("POST", [("Host", f"127.0.0.1:{PORT}")], TOKEN)
    assert refusal is not None
    assert (refusal.kind, refusal.status) == ("content-type", 415)


@pytest.mark.parametrize(
    ("header", "token"),
    [
        (f"Bearer {TOKEN}", TOKEN),
        (f"bearer   {TOKEN} ", TOKEN),
        (f"Basic {TOKEN}", None),
        ("Bearer", None),
        ("", None),
        (None, None),
        (TOKEN, None),
    ],
)
def test_bearer(header: str | None, token: str | None) -> None:
    assert bearer(header) == token


@pytest.mark.parametrize(
    ("host", "address"),
    [
        ("127.0.0.1", "127.0.0.1"),
        ("localhost", "127.0.0.1"),
        ("LocalHost", "127.0.0.1"),
        ("127.0.0.5", "127.0.0.5"),
        ("::1", "::1"),
        ("[::1]", "::1"),
    ],
)
def test_loopback_addresses_may_be_bound(host: str, address: str) -> None:
    assert loopback_address(host) == address


@pytest.mark.parametrize(
    "host",
    ["0.0.0.0", "::", "192.168.1.10", "10.0.0.1", "::ffff:10.0.0.1", "example.com", ""],  # noqa: S104
)
def test_other_addresses_are_refused_naming_the_fix(host: str) -> None:
    with pytest.raises(ServerGuardError, match=r"not a loopback address.*use 127\.0\.0\.1"):
        loopback_address(host)


def test_a_missing_token_file_is_created_for_its_owner_only(tmp_path: Path) -> None:
    path = tmp_path / "token"
    old = os.umask(0)  # whatever the umask, the file is 0600
    try:
        token, created = token_from_file(path)
    finally:
        os.umask(old)
    assert created
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text() == token + "\n"
    assert token_from_file(path) == (token, False)
    nested = tmp_path / "config" / "agent-s" / "token"  # its folder is made, the owner's only
    assert token_from_file(nested)[1]
    assert stat.S_IMODE(nested.parent.stat().st_mode) == 0o700


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o660, 0o644, 0o602])
def test_a_token_file_others_can_reach_is_refused(tmp_path: Path, mode: int) -> None:
    path = tmp_path / "token"
    path.write_text(TOKEN)
    path.chmod(mode)
    with pytest.raises(ServerGuardError, match=f"chmod 600 {path}"):
        token_from_file(path)


def test_a_symlinked_token_file_is_refused_even_to_a_safe_file(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.write_text(TOKEN)
    real.chmod(0o600)
    link = tmp_path / "token"
    link.symlink_to(real)
    with pytest.raises(ServerGuardError, match="symbolic link"):
        token_from_file(link)
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "nowhere")
    with pytest.raises(ServerGuardError, match="symbolic link"):
        token_from_file(dangling)
    assert not (tmp_path / "nowhere").exists()  # nothing written through the link


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a file to another user")
def test_another_users_token_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text(TOKEN)
    path.chmod(0o600)
    os.chown(path, 65534, 65534)  # nobody: a token that user chose would let them in
    with pytest.raises(ServerGuardError, match="another user"):
        token_from_file(path)


@pytest.mark.parametrize("content", ["", "short", "two words here and more", "a\nb" * 10])
def test_a_token_file_without_a_token_is_refused(tmp_path: Path, content: str) -> None:
    path = tmp_path / "token"
    path.write_text(content)
    path.chmod(0o600)
    with pytest.raises(ServerGuardError, match="holds no token"):
        token_from_file(path)


def test_a_fifo_or_folder_is_refused_without_hanging(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo, 0o600)
    errors: list[str] = []

    def read() -> None:
        try:
            token_from_file(fifo)
        except ServerGuardError as error:
            errors.append(str(error))

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    thread.join(5)
    assert errors, "reading a FIFO hung or was accepted"
    assert "not a regular file" in errors[0]
    folder = tmp_path / "folder"
    folder.mkdir(mode=0o700)
    with pytest.raises(ServerGuardError):
        token_from_file(folder)
