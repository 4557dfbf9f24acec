"""The windows of a GNOME Wayland session, as far as an ordinary client can know them.

GNOME Shell answers ``org.gnome.Shell.Introspect`` (its window list) only to its own callers,
and Wayland tells no client about other clients' windows. What is left is the accessibility
tree (AT-SPI): each application's top-level frames, their titles, the application's name and
pid, and which frame is active. Not where a window is: extents read (0, 0) on Wayland, so the
windows are listed with an empty box (the rest of agent-s reads a 0 by 0 window as "position
unknown"). An application with no accessibility tree (Tk, Qt without ``QT_ACCESSIBILITY=1``,
foot) has no window in the list.

Activation: neither AT-SPI's focus request nor an application's own ``present`` gets past
mutter's focus-stealing prevention, but the shell's "cycle windows backward" shortcut
(Shift+Alt+Escape, GNOME's default) does: each press activates the window the active one was
last above, so at most one press per window brings any of them forward. A session that
rebinds or disables that shortcut cannot activate windows this way (``activate`` then says
the window was not activated; clicks on a visible window still work).

libatspi reads the bus it bound to first and cannot move to another: a process that read
another desktop's tree before (an MCP server, a test session) reads this one's windows through
``WindowReader``, a child process of its own on this session's bus (``python -m
agent_s.desktop.gnome_windows``: one line asked, one JSON line answered; it ends when its
input closes, so with the process that started it).
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import threading
from collections.abc import Mapping
from dataclasses import asdict, replace
from typing import IO, Any, cast

from agent_s.desktop.atspi import ATSPI_LOCK, AccessibilityUnavailable, bindings
from agent_s.desktop.base import WindowInfo

CYCLE_KEYS = (["Shift_L", "Alt_L"], ["Escape"])  # org.gnome.desktop.wm.keybindings default
_SHELL_NAMES = {"gnome-shell", "mutter-x11-frames"}
_FRAME_ROLES = {"frame", "window", "dialog", "alert", "file chooser"}


def windows() -> list[WindowInfo]:
    """The top-level windows of the applications on the accessibility bus, the active one
    first; ``AccessibilityUnavailable`` when there is no accessibility bus."""
    atspi = bindings()
    found: list[WindowInfo] = []
    with ATSPI_LOCK:
        desktop = atspi.get_desktop(0)
        for index in range(desktop.get_child_count()):
            app = _safe(lambda i=index: desktop.get_child_at_index(i))
            if app is None:
                continue
            name = _safe(app.get_name) or ""
            if name in _SHELL_NAMES:
                continue
            pid = _safe(app.get_process_id) or 0
            for number in range(_safe(app.get_child_count) or 0):
                frame = _safe(lambda n=number, a=app: a.get_child_at_index(n))
                if frame is None or (_safe(frame.get_role_name) or "") not in _FRAME_ROLES:
                    continue
                states = _safe(frame.get_state_set)
                if states is None or not states.contains(atspi.StateType.SHOWING):
                    continue
                found.append(
                    WindowInfo(
                        id=window_id(pid, number),
                        title=_safe(frame.get_name) or "",
                        app=name,
                        pid=pid or None,
                        x=0,
                        y=0,
                        width=0,
                        height=0,
                        active=states.contains(atspi.StateType.ACTIVE),
                    )
                )
    if sum(w.active for w in found) > 1:  # one lost the focus and does not know it yet
        return [replace(w, active=False) for w in found]
    found.sort(key=lambda w: not w.active)
    return found


class WindowReader:
    """The session's windows: read in this process while its AT-SPI reads this session's bus,
    else in a child process on it (see the module)."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.env = dict(env)
        self._child: subprocess.Popen[str] | None = None
        self._lock = threading.Lock()

    def windows(self) -> list[WindowInfo]:
        if self._child is None:
            try:
                return windows()
            except AccessibilityUnavailable as err:
                if err.reason != "bound to another desktop":
                    raise
        return self._ask()

    def _ask(self) -> list[WindowInfo]:
        with self._lock:
            child = self._child
            if child is None or child.poll() is not None:
                child = self._child = subprocess.Popen(
                    [sys.executable, "-m", __name__],
                    env=self.env,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    text=True,
                )
            requests, answers = cast(IO[str], child.stdin), cast(IO[str], child.stdout)
            try:
                requests.write("windows\n")
                requests.flush()
                line = answers.readline()
            except OSError as err:
                raise AccessibilityUnavailable(
                    f"the window reader stopped: {err}", reason="no accessibility bus"
                ) from err
        answer: dict[str, Any] = (
            json.loads(line) if line else {"error": "the window reader stopped"}
        )
        if "error" in answer:
            raise AccessibilityUnavailable(str(answer["error"]), reason="no accessibility bus")
        return [WindowInfo(**fields) for fields in answer["windows"]]

    def close(self) -> None:
        with self._lock:
            child, self._child = self._child, None
        if child is not None:
            with contextlib.suppress(OSError):
                cast(IO[str], child.stdin).close()
            try:
                child.wait(5)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()


def _serve(requests: IO[str], answers: IO[str]) -> None:
    """The child's side: a JSON line of windows (or of the error) per line asked."""
    for _ in requests:
        try:
            answer: dict[str, Any] = {"windows": [asdict(w) for w in windows()]}
        except AccessibilityUnavailable as err:
            answer = {"error": str(err)}
        answers.write(json.dumps(answer) + "\n")
        answers.flush()


def window_id(pid: int, number: int) -> int:
    """An id for an application's ``number``-th frame, the same from one listing to the next
    while its windows stay open."""
    return pid * 1024 + number


def _safe(call: Any) -> Any:
    """An AT-SPI read; None when the application went away or does not answer."""
    try:
        return call()
    except Exception:  # GLib.Error from a gone or stuck application
        return None


__all__ = ["CYCLE_KEYS", "AccessibilityUnavailable", "WindowReader", "window_id", "windows"]

if __name__ == "__main__":
    _serve(sys.stdin, sys.stdout)
