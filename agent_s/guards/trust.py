"""Trust only from the user: who checked a thing, a key that seals what this user's agent-s
wrote, and stored text shown to a model as quoted data.

    level = trust_level(user_check_passed=result.verified, model_check_passed=subtask_passed)
    sealer = Sealer(load_key(key_path()))       # ~/.config/agent-s/memory.key, 0600
    mac = sealer.seal("entry", kind, task, body)
    sealer.holds(mac, "entry", kind, task, body)   # False for anything this key did not seal
    quote("line one\\nSYSTEM: ...", 300)       # '"line one\\\\nSYSTEM: ..."': one line, bounded

Levels (``TrustLevel``): ``user`` - a check the user or the harness's evaluator gave passed
(``--check``, a postcondition, an evaluator's full score): the only level called *verified*;
``model-check`` - only a check a model wrote passed (a plan's subtask check, a practice task's
check): it may guide a run, and is shown as "checked by a model-written check", never as
verified; ``none`` - nothing checked it, or what says so cannot be trusted (a file, an edited
row, an entry this store's key did not seal).

The key is per user and kept outside any database: ``$AGENT_S_MEMORY_KEY``, else
``$XDG_CONFIG_HOME/agent-s/memory.key``, else ``~/.config/agent-s/memory.key``. It is made
atomically (written whole to an ``O_EXCL`` file of mode 0600, then linked into place); a key
file that is a symlink, is not a regular file, belongs to someone else or is readable by
others is refused (``KeyFileError``, naming the fix).
The MAC is HMAC-SHA256 over a canonical JSON list of the fields, so no field can run into the
next.

``quote`` renders any stored text as one line: backslash, quote, line breaks and every control,
format and separator character escaped, cut to a bound (and saying so). A prompt puts quoted
fields under a header carrying ``nonce()``, fresh per request, which text written earlier
cannot know and so cannot imitate.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import secrets
import stat
import unicodedata
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

TrustLevel = Literal["user", "model-check", "none"]
TRUST_LEVELS: tuple[TrustLevel, ...] = ("user", "model-check", "none")
KEY_ENV = "AGENT_S_MEMORY_KEY"
KEY_BYTES = 32

# what each level is called where people and models read it
LABELS: Mapping[TrustLevel, str] = {
    "user": "verified",
    "model-check": "unverified: checked by a model-written check",
    "none": "unverified",
}


def trust_level(*, user_check_passed: bool, model_check_passed: bool = False) -> TrustLevel:
    """The level of something a run produced: ``user`` only when the user's check passed."""
    if user_check_passed:
        return "user"
    return "model-check" if model_check_passed else "none"


# -- the key ------------------------------------------------------------------------------------


class KeyFileError(RuntimeError):
    """The key file cannot be used safely; the message names the fix."""


def key_path(env: Mapping[str, str] | None = None) -> Path:
    """``$AGENT_S_MEMORY_KEY``, else ``$XDG_CONFIG_HOME/agent-s/memory.key``, else
    ``~/.config/agent-s/memory.key``."""
    env = os.environ if env is None else env
    if env.get(KEY_ENV):
        return Path(env[KEY_ENV]).expanduser()
    config = env.get("XDG_CONFIG_HOME")
    base = Path(config) if config and Path(config).is_absolute() else Path.home() / ".config"
    return base / "agent-s" / "memory.key"


def load_key(path: Path) -> bytes:
    """The key in ``path``, made (0600, atomically) when there is none; ``KeyFileError`` for
    a key file that is a symlink, not a regular file, someone else's or readable by others."""
    path = Path(path)
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as error:
        raise KeyFileError(
            f"cannot create the folder of the memory key {path}: {error.strerror}; set "
            f"{KEY_ENV} to a file in a writable folder"
        ) from None
    if os.path.lexists(path):
        return _read_key(path)
    # written whole under a fresh name, then linked into place: linking fails if a key appeared
    # meanwhile (another process made one), and nobody ever reads a half-written key
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(8)}")
    key = secrets.token_bytes(KEY_BYTES)
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, key.hex().encode() + b"\n")
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(temporary, path, follow_symlinks=False)
        except FileExistsError:
            return _read_key(path)
    except OSError as error:
        raise KeyFileError(
            f"cannot create the memory key {path}: {error.strerror}; set {KEY_ENV} to a file "
            "in a writable folder"
        ) from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
    return key


def _read_key(path: Path) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as error:
        if os.path.islink(path):
            raise KeyFileError(
                f"the memory key {path} is a symlink; agent-s keeps its key in a regular file: "
                "remove the link (a new key is made; entries it sealed become unverified)"
            ) from None
        raise KeyFileError(f"cannot read the memory key {path}: {error.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise KeyFileError(f"the memory key {path} is not a regular file: remove it")
        if info.st_uid != os.getuid():
            raise KeyFileError(
                f"the memory key {path} belongs to another user: remove it, or set {KEY_ENV}"
            )
        if info.st_mode & 0o077:
            raise KeyFileError(
                f"the memory key {path} can be read by others (mode "
                f"{stat.S_IMODE(info.st_mode):o}): chmod 600 {path}"
            )
        data = os.read(fd, 4 * KEY_BYTES)
    finally:
        os.close(fd)
    try:
        key = bytes.fromhex(data.decode("ascii").strip())
    except ValueError:
        key = b""
    if len(key) != KEY_BYTES:
        raise KeyFileError(
            f"the memory key {path} is not an agent-s key: remove it (a new key is made; "
            "entries it sealed become unverified)"
        )
    return key


# -- sealing ------------------------------------------------------------------------------------


class Sealer:
    """HMAC-SHA256 under one key over a canonical list of fields."""

    def __init__(self, key: bytes) -> None:
        if len(key) < 16:
            raise ValueError("a sealing key has at least 16 bytes")
        self._key = key

    @staticmethod
    def _canonical(fields: tuple[object, ...]) -> bytes:
        return json.dumps(list(fields), ensure_ascii=False, separators=(",", ":")).encode(
            "utf-8", "surrogatepass"
        )

    def seal(self, *fields: object) -> str:
        """The MAC of ``fields`` (JSON values: strings, numbers, None), as hex."""
        return hmac.new(self._key, self._canonical(fields), hashlib.sha256).hexdigest()

    def holds(self, mac: object, *fields: object) -> bool:
        """Whether ``mac`` is this key's MAC of ``fields``."""
        if not isinstance(mac, str):
            return False
        return hmac.compare_digest(mac, self.seal(*fields))


# -- stored text in a prompt ----------------------------------------------------------------------

_NAMED = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}
# control, format (zero-width, bidi), surrogate, private, unassigned, line and paragraph separators
_ESCAPED = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


def _escape(char: str) -> str:
    named = _NAMED.get(char)
    if named is not None:
        return named
    if unicodedata.category(char) in _ESCAPED:
        code = ord(char)
        return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"
    return char


def quote(text: str, limit: int) -> str:
    """``text`` as one quoted line (see the module docstring) of at most ``limit`` characters
    between the quotes; a cut one ends ``..."`` and says how long the text was."""
    out: list[str] = []
    used = 0
    for index, char in enumerate(text):
        piece = _escape(char)
        if used + len(piece) > limit:
            shown = "".join(out)
            return f'"{shown}..." (cut: {len(text):,} characters in all, {index:,} shown)'
        out.append(piece)
        used += len(piece)
    return '"' + "".join(out) + '"'


def nonce() -> str:
    """A fresh random mark for one prompt's data header (12 hex digits)."""
    return secrets.token_hex(6)


__all__ = [
    "KEY_BYTES",
    "KEY_ENV",
    "LABELS",
    "TRUST_LEVELS",
    "KeyFileError",
    "Sealer",
    "TrustLevel",
    "key_path",
    "load_key",
    "nonce",
    "quote",
    "trust_level",
]
