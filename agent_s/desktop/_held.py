"""Keys and mouse buttons held down on a display, noted in a file until they are released.

``X11Backend`` releases what it holds in ``finally`` blocks, which SIGKILL skips: the X server
then keeps, say, shift down for whoever uses the display next. So before it presses a key or a
button down, the backend notes it here (one small JSON file per backend under
``lifecycle.state_dir()/held/``, naming the owner process), and removes the note once it is up
again. ``release_stale`` releases what dead owners noted (``xdotool keyup`` / ``mouseup``: the
X server ignores the release of a key or button that is not down) and removes their notes; it
runs when an ``X11Backend`` is made (for its display) and at every ``agent-s`` start.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from agent_s import lifecycle
from agent_s.guards import files

HELD = "held"  # the notes' folder under lifecycle.state_dir()
_BUTTONS = frozenset("12345")
_numbers = itertools.count(1)


def display_key(name: str) -> tuple[str, str]:
    """(host, display number) of a display name: ":1", ":1.0" and "unix:1" are the same."""
    host, _, rest = name.rpartition(":")
    host = "" if host in ("", "unix", "localhost") else host
    return host, rest.split(".", 1)[0]


class HeldInputs:
    """What one backend holds down on one display, mirrored in a file while it is not empty."""

    def __init__(self, display: str, xauthority: str | None, folder: Path | None = None) -> None:
        self.display, self.xauthority = display, xauthority
        root = lifecycle.state_dir() if folder is None else folder
        self.path = root / HELD / f"{os.getpid()}-{next(_numbers)}.json"
        self.keys: list[str] = []
        self.buttons: list[str] = []

    def add(self, keys: Iterable[str] = (), buttons: Iterable[str] = ()) -> None:
        """Note keys (X keysyms) and buttons ("1".."5") about to be pressed down."""
        self.keys += [k for k in keys if k not in self.keys]
        self.buttons += [b for b in buttons if b not in self.buttons]
        self._save()

    def discard(self, keys: Iterable[str] = (), buttons: Iterable[str] = ()) -> None:
        """Forget keys and buttons that are up again."""
        gone_keys, gone_buttons = set(keys), set(buttons)
        self.keys = [k for k in self.keys if k not in gone_keys]
        self.buttons = [b for b in self.buttons if b not in gone_buttons]
        self._save()

    def _save(self) -> None:
        # A note that cannot be written must not stop the action: it only helps after a crash.
        with contextlib.suppress(OSError):
            if not (self.keys or self.buttons):
                self.path.unlink(missing_ok=True)
                return
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            note = {
                "owner": lifecycle.owner(),
                "display": self.display,
                "xauthority": self.xauthority,
                "keys": self.keys,
                "buttons": self.buttons,
            }
            files.write_text(self.path, json.dumps(note))


def release_stale(
    folder: Path | None = None, display: str | None = None, env: Mapping[str, str] | None = None
) -> list[str]:
    """Release what dead processes noted as held (on ``display`` only, if given) and remove
    their notes; what was released, as "KEY on DISPLAY" / "button N on DISPLAY"."""
    root = (lifecycle.state_dir() if folder is None else folder) / HELD
    if not root.is_dir():
        return []
    released = []
    for path in sorted(root.glob("*.json")):
        note = _read(path)
        if note is None or not lifecycle.ours(note.get("owner")):
            continue
        if lifecycle.alive(note.get("owner")):
            continue
        where = str(note.get("display") or "")
        if display is not None and display_key(where) != display_key(display):
            continue
        keys = [str(k) for k in note.get("keys", [])]
        buttons = [str(b) for b in note.get("buttons", []) if str(b) in _BUTTONS]
        if where and _release(where, note.get("xauthority"), keys, buttons, env):
            released += [f"{k} on {where}" for k in keys]
            released += [f"button {b} on {where}" for b in buttons]
        path.unlink(missing_ok=True)
    return released


def _read(path: Path) -> dict[str, Any] | None:
    try:
        note = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return note if isinstance(note, dict) else None


def _release(
    display: str,
    xauthority: Any,
    keys: list[str],
    buttons: list[str],
    env: Mapping[str, str] | None,
) -> bool:
    """Release on ``display``; False when it cannot be reached (then nothing is held there)."""
    run_env = dict(os.environ if env is None else env)
    run_env["DISPLAY"] = display
    if isinstance(xauthority, str) and Path(xauthority).is_file():
        run_env["XAUTHORITY"] = xauthority
    steps = [["keyup", *reversed(keys)]] if keys else []
    steps += [["mouseup", button] for button in buttons]
    for step in steps:
        try:
            done = subprocess.run(
                ["xdotool", *step], env=run_env, capture_output=True, timeout=5, check=False
            )
        except (OSError, subprocess.TimeoutExpired):
            return False
        if done.returncode != 0:
            return False
    return True
