"""Every server of agent-s binds to loopback and asks who is there before it answers.

    address = loopback_address(host)            # "0.0.0.0" -> ServerGuardError naming the fix
    door = Door(token=new_token(), port=port)
    refusal = door.check(method, headers, given_token)
    if refusal is not None:
        reply(refusal.status, refusal.reason)

What a request must show, in this order (``Door.check``):

- ``host``: its Host header is the server itself: ``127.0.0.1:PORT``, ``localhost:PORT`` or
  ``[::1]:PORT`` with the server's own port, once. A page elsewhere that renamed its own host to
  127.0.0.1 (DNS rebinding) still sends its own name, and is refused.
- ``origin``: no Origin header (a program, or a browser's same-origin read), or exactly the
  server's own loopback origin (``http://127.0.0.1:PORT`` and its two other names). ``null`` (a
  sandboxed frame, a file) and every other origin are refused.
- ``token``: the server's token, compared in constant time (``hmac.compare_digest``).
- ``content-type``: a request that changes state (any method but GET, HEAD and OPTIONS) is not
  one a page elsewhere could send without a CORS preflight, which these servers never grant:
  a POST whose body is ``text/plain``, ``application/x-www-form-urlencoded``,
  ``multipart/form-data`` or has no type is refused unless it carries the ``X-Agent-S`` header
  (a custom header: a page elsewhere cannot add it without a preflight either).

A token kept for a client's configuration lives in a file only its owner can read
(``token_from_file``): mode 0600, the user's own, not a symbolic link; it is created so when it
does not exist yet.
"""

from __future__ import annotations

import contextlib
import hmac
import ipaddress
import os
import re
import secrets
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

CUSTOM_HEADER = "X-Agent-S"  # a header a page elsewhere cannot send without a preflight
SIMPLE_TYPES = frozenset({"text/plain", "application/x-www-form-urlencoded", "multipart/form-data"})
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
_TOKEN = re.compile(r"[A-Za-z0-9._~+/=-]{16,512}")


class ServerGuardError(ValueError):
    """A server cannot start as asked (a non-loopback address, an unsafe token file); the
    message names the fix."""


def new_token() -> str:
    """A fresh random token (192 bits, URL-safe)."""
    return secrets.token_urlsafe(24)


def same_token(given: str | None, token: str) -> bool:
    """Whether ``given`` is ``token``, in time that does not depend on where they differ."""
    if not given:
        return False
    return hmac.compare_digest(given.encode("utf-8", "replace"), token.encode("utf-8"))


def bearer(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer TOKEN`` header; None: no such header."""
    if not authorization:
        return None
    scheme, _, value = authorization.strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    return value.strip() or None


def loopback_address(host: str, given_as: str = "--host") -> str:
    """The address to listen on for ``host``: a loopback address (``localhost`` is 127.0.0.1).
    Anything else (``0.0.0.0``, a LAN address, a name) raises ``ServerGuardError``, whose
    message names ``host`` as ``given_as`` (the flag or argument it came from)."""
    name = host.strip()
    if name.lower() == "localhost":
        return "127.0.0.1"
    try:
        address = ipaddress.ip_address(name.removeprefix("[").removesuffix("]"))
    except ValueError:
        address = None
    if address is None or not address.is_loopback:
        raise ServerGuardError(
            f"{given_as} {host}: not a loopback address (the server must not be reachable from "
            "the network); use 127.0.0.1, localhost or ::1"
        )
    return str(address)


def _media_type(content_type: str | None) -> str:
    """``text/plain`` of ``Text/Plain; charset=utf-8``: the MIME type's essence, as a browser
    reads it when it decides whether a request needs a preflight."""
    return (content_type or "").split(";", 1)[0].strip().lower()


@dataclass(frozen=True)
class Refusal:
    """Why a request is refused: ``kind`` (host, origin, token or content-type), the HTTP
    status to answer and a one-line reason for the client."""

    kind: str
    status: int
    reason: str


class Door:
    """One server's lock: its token and its port (see the module docstring). ``address``: the
    loopback address it listens on, when not one of the three usual names."""

    def __init__(self, token: str, port: int, address: str = "127.0.0.1") -> None:
        self.token = token
        self.port = port
        names = {*_LOOPBACK_NAMES, f"[{address}]" if ":" in address else address}
        self.hosts = frozenset(f"{name}:{port}" for name in names)
        self.origins = frozenset(f"http://{host}" for host in self.hosts)

    def host_ok(self, values: list[str]) -> bool:
        return len(values) == 1 and values[0].strip().lower() in self.hosts

    def origin_ok(self, values: list[str]) -> bool:
        if not values:
            return True
        return len(values) == 1 and values[0].strip().lower() in self.origins

    def check(
        self, method: str, headers: Iterable[tuple[str, str]], token: str | None
    ) -> Refusal | None:
        """None when the request may be answered; else why not. ``headers``: every header as
        sent, repeats included; ``token``: the one the request carries (its Authorization
        header, or the page's query), None if none."""
        seen: dict[str, list[str]] = {}
        for name, value in headers:
            seen.setdefault(name.lower(), []).append(value)
        if not self.host_ok(seen.get("host", [])):
            return Refusal("host", 421, "refused: the Host header is not this server's")
        if not self.origin_ok(seen.get("origin", [])):
            return Refusal("origin", 403, "refused: requests from another origin are not served")
        if not same_token(token, self.token):
            return Refusal("token", 401, "unauthorized: send the server's token")
        if method.upper() not in SAFE_METHODS and self._simple(method, seen):
            return Refusal(
                "content-type",
                415,
                "refused: send the body as application/json (a form or text/plain body is not "
                "accepted)",
            )
        return None

    @staticmethod
    def _simple(method: str, seen: dict[str, list[str]]) -> bool:
        """Whether a page elsewhere could send this request without asking first: a POST with
        a form's or text's type (or none) and no ``X-Agent-S`` header."""
        if method.upper() != "POST" or any(v.strip() for v in seen.get(CUSTOM_HEADER.lower(), [])):
            return False
        types = seen.get("content-type", [])
        return len(types) != 1 or _media_type(types[0]) in {"", *SIMPLE_TYPES}


def token_from_file(path: Path) -> tuple[str, bool]:
    """The token kept in ``path`` and whether it was created now (it did not exist: a fresh
    token is written there, mode 0600). A file others can read, another user's, a symbolic
    link or one that holds no token raises ``ServerGuardError`` naming the fix."""
    name = str(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NOCTTY | os.O_NONBLOCK)
    except FileNotFoundError:
        return _create_token_file(path), True
    except OSError as error:
        if os.path.islink(path):
            raise ServerGuardError(
                f"--token-file {name} is a symbolic link; name the file itself"
            ) from None
        raise ServerGuardError(
            f"--token-file {name}: cannot read it ({error.strerror or error})"
        ) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ServerGuardError(f"--token-file {name} is not a regular file")
        if info.st_uid != os.geteuid():
            raise ServerGuardError(f"--token-file {name} belongs to another user; use your own")
        if info.st_mode & 0o077:
            raise ServerGuardError(
                f"--token-file {name} can be read by others (mode "
                f"{stat.S_IMODE(info.st_mode):04o}); run: chmod 600 {name}"
            )
        data = os.read(fd, 4096)
    finally:
        os.close(fd)
    text = data.decode("utf-8", "replace").strip()
    if not _TOKEN.fullmatch(text):
        raise ServerGuardError(
            f"--token-file {name} holds no token (one line of 16 to 512 letters, digits or "
            "._~+/=-); delete it to have a new one written"
        )
    return text, False


def _create_token_file(path: Path) -> str:
    token = new_token()
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, flags, 0o600)
    except OSError as error:
        raise ServerGuardError(
            f"--token-file {path}: cannot create it ({error.strerror or error})"
        ) from None
    try:
        os.fchmod(fd, 0o600)  # whatever the umask
        os.write(fd, (token + "\n").encode())
    except OSError as error:
        os.close(fd)
        with contextlib.suppress(OSError):
            path.unlink()
        raise ServerGuardError(
            f"--token-file {path}: cannot write it ({error.strerror or error})"
        ) from None
    os.close(fd)
    return token


__all__ = [
    "CUSTOM_HEADER",
    "Door",
    "Refusal",
    "ServerGuardError",
    "bearer",
    "loopback_address",
    "new_token",
    "same_token",
    "token_from_file",
]
