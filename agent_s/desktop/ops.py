"""Primitive desktop operations: what an action becomes once its targets have coordinates.

An action (``agent_s.actions``) is planned into a short list of these; a backend performs them
(``agent_s.desktop.base.perform``) and the pyautogui renderer turns the same list into code, so
the live path and the rendered path cannot drift apart. Coordinates are screen coordinates.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

Button = Literal["left", "middle", "right"]


@dataclass(frozen=True)
class Point:
    """A point in screen coordinates (the coordinates pyautogui and X use)."""

    x: int
    y: int


@dataclass(frozen=True)
class MoveTo:
    at: Point


@dataclass(frozen=True)
class Click:
    at: Point
    button: Button = "left"
    clicks: int = 1
    hold_keys: tuple[str, ...] = ()


@dataclass(frozen=True)
class Drag:
    start: Point
    end: Point
    button: Button = "left"
    hold_keys: tuple[str, ...] = ()


@dataclass(frozen=True)
class Scroll:
    """Scroll ``clicks`` notches at a point: positive is up (or right when horizontal)."""

    at: Point
    clicks: int
    horizontal: bool = False


@dataclass(frozen=True)
class Hotkey:
    """Press keys together, in order, and release them in reverse order."""

    keys: tuple[str, ...]


@dataclass(frozen=True)
class HoldAndPress:
    """Hold ``hold_keys`` while pressing each of ``press_keys`` in turn."""

    hold_keys: tuple[str, ...]
    press_keys: tuple[str, ...]


@dataclass(frozen=True)
class TypeText:
    """Type text literally: every character, unicode included, arrives as written."""

    text: str


@dataclass(frozen=True)
class Sleep:
    """Wait ``seconds``; with ``settle``, then also until the program of the front window has
    handled what it was sent (at most a few seconds more; ``agent_s.desktop.settle``).

    ``name_box``: wait instead until LibreOffice Calc's Name Box has the focus, where its
    accessibility tree shows it (``agent_s.desktop.namebox``), and fail the action if it never
    takes it; where the tree cannot tell, wait as above. ``cell``: the cell about to be
    written, for that failure's message."""

    seconds: float
    settle: bool = False
    name_box: bool = False
    cell: str = ""


@dataclass(frozen=True)
class Open:
    """Open an application (by name) or a file (by path) on the desktop."""

    target: str


@dataclass(frozen=True)
class Activate:
    """Bring the window of an open application to the front (matched by name)."""

    app: str


Op = MoveTo | Click | Drag | Scroll | Hotkey | HoldAndPress | TypeText | Sleep | Open | Activate
# an Open sends no input itself, but the agent then moves the pointer off the new window
# (agent_s.desktop.park): that move is the agent's too
_INPUT = (MoveTo, Click, Drag, Scroll, Hotkey, HoldAndPress, TypeText, Open)


def sends_input(plan: Sequence[Op]) -> bool:
    """Whether carrying out ``plan`` moves the pointer or presses a button or a key (an
    ``Open`` is followed by the pointer's rest): input a watch for the user's own input must
    not take for theirs. A ``Sleep`` or an ``Activate`` sends none, so during a wait the
    user's input still pauses the run."""
    return any(isinstance(op, _INPUT) for op in plan)
