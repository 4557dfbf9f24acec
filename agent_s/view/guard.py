"""On the user's own desktop: input the agent did not make pauses the run at once.

    control = RunControl()
    with InputGuard(control, display=":0"):
        agent = Agent(model, control=control)
        agent.run(task)          # the user moves the mouse: paused before the next action

A thread of its own, on its own connection to the X server, looks every ``POLL`` seconds at
the pointer, the mouse buttons and the keyboard. While the agent acts (``control.acting()``)
and for ``GRACE`` seconds after, what changes is the agent's doing; at any other time a pointer
that left the place the agent last put it, a button or a key newly pressed is the user's, and
``control.user_input`` pauses the run (the action being planned is not carried out, and the
next request says the user acted). The agent's own input cannot be told apart from a program's
by its source (both come through XTEST), so the guard goes by when it happens, not by device.
A key tapped faster than ``POLL`` may pass unseen; a pointer move never does.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Mapping
from types import TracebackType
from typing import Any

from agent_s.loop.control import RunControl

POLL = 0.03  # seconds between looks
GRACE = 0.15  # seconds after the agent acted during which changes count as the agent's
MOVED = 3  # pixels the pointer may drift (a rounding, a window manager warp) unnoticed
_BUTTON_MASK = 0x1F00  # Button1Mask .. Button5Mask in a pointer query's mask


class InputGuard:
    """Pause ``control``'s run when the user uses the X display (see the module docstring);
    ``display`` None: ``env``'s or this process's ``$DISPLAY``."""

    def __init__(
        self,
        control: RunControl,
        display: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        import os

        from agent_s.desktop.x11 import _connect

        environ = env if env is not None else os.environ
        name = display or environ.get("DISPLAY") or ""
        self.control = control
        self._x = _connect(name, environ.get("XAUTHORITY"))
        self._root = self._x.screen().root
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="agent-s-guard", daemon=True)
        self.noticed: list[str] = []  # what was seen, in order (for the terminal and tests)

    def start(self) -> InputGuard:
        self._thread.start()
        return self

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(2)
        with contextlib.suppress(Exception):
            self._x.close()

    def __enter__(self) -> InputGuard:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _look(self) -> tuple[tuple[int, int], int, tuple[int, ...]]:
        pointer: Any = self._root.query_pointer()
        keys = tuple(self._x.query_keymap())
        return (pointer.root_x, pointer.root_y), pointer.mask & _BUTTON_MASK, keys

    def _watch(self) -> None:
        quiet_until = 0.0
        last: tuple[tuple[int, int], int, tuple[int, ...]] | None = None
        while not self._stop.wait(POLL):
            try:
                now_seen = self._look()
            except Exception:  # noqa: BLE001 - the display went away: nothing left to guard
                return
            now = time.monotonic()
            if self.control.is_acting:
                quiet_until, last = now + GRACE, None
                continue
            if now < quiet_until or last is None:
                last = now_seen
                continue
            what = _difference(last, now_seen)
            # the pointer is compared with where the agent left it, so a slow drift counts too
            last = now_seen if what is not None else (last[0], now_seen[1], now_seen[2])
            if what is not None and self.control.state == "running" and not self.control.is_acting:
                self.noticed.append(what)
                self.control.user_input(what)


def _difference(
    before: tuple[tuple[int, int], int, tuple[int, ...]],
    after: tuple[tuple[int, int], int, tuple[int, ...]],
) -> str | None:
    """What the user did between two looks, in words; None: nothing."""
    (x0, y0), buttons0, keys0 = before
    (x1, y1), buttons1, keys1 = after
    if buttons1 & ~buttons0:
        return "you pressed a mouse button"
    if any(b & ~a for a, b in zip(keys0, keys1, strict=False)):
        return "you pressed a key"
    if abs(x1 - x0) + abs(y1 - y0) > MOVED:
        return "you moved the mouse"
    return None


__all__ = ["GRACE", "InputGuard"]
