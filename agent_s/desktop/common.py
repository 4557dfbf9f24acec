"""What the desktop backends share: environment juggling, the agent's own processes, URLs and
key names (a backend writes only what differs; ``x11``, ``wayland``, ``virtual``)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from agent_s.keys import x_keysym


@contextlib.contextmanager
def temporary_environ(**values: str | None) -> Iterator[None]:
    """Set (or, for ``None``, unset) process environment variables until the block ends."""
    saved = {key: os.environ.get(key) for key in values}
    try:
        for key, value in values.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def ancestors() -> set[int]:
    """This process and its parents' pids (the terminal emulator agent-s runs in among them)."""
    found: set[int] = set()
    pid = os.getpid()
    while pid > 1 and pid not in found:
        found.add(pid)
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            break
        pid = int(stat.rsplit(")", 1)[1].split()[1])  # the field after the state: the ppid
    return found


def is_url(text: str) -> bool:
    scheme, sep, rest = text.partition("://")
    return bool(sep and rest and scheme.isascii() and scheme.isalpha())


def keysyms(keys: Sequence[str]) -> list[str]:
    """X keysyms for pyautogui key names; every name is checked before anything is pressed."""
    if isinstance(keys, str):
        raise TypeError("keys must be a sequence of key names, not one string")
    return [x_keysym(key) for key in keys]


__all__ = ["ancestors", "is_url", "keysyms", "temporary_environ"]
