"""The user's input from the live view's page, checked and carried out on the desktop.

Each request is one JSON object:

- ``{"kind": "click", "x": 10, "y": 20, "button": "left", "clicks": 1}``
- ``{"kind": "drag", "x": 10, "y": 20, "to_x": 200, "to_y": 20, "button": "left"}``
- ``{"kind": "scroll", "x": 10, "y": 20, "clicks": -3}`` (negative: down; ``horizontal``)
- ``{"kind": "move", "x": 10, "y": 20}``
- ``{"kind": "key", "keys": ["ctrl", "s"]}`` (pyautogui key names, pressed together)
- ``{"kind": "text", "text": "hello"}``

Points are screen points and must lie on the desktop; anything else is an ``InputError``.
"""

from __future__ import annotations

from typing import Any

from agent_s.desktop.base import DesktopBackend
from agent_s.desktop.ops import Point
from agent_s.keys import normalize_key

MAX_TEXT = 2000
MAX_KEYS = 6
_BUTTONS = ("left", "right", "middle")


class InputError(ValueError):
    """A request the view does not carry out, and why."""


def _int(body: dict[str, Any], name: str, low: int, high: int) -> int:
    value = body.get(name)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"{name} must be a number")
    number = int(value)
    if not low <= number <= high:
        raise InputError(f"{name}={number} is outside {low}..{high}")
    return number


def _point(backend: DesktopBackend, body: dict[str, Any], xname: str, yname: str) -> Point:
    left, top, width, height = backend.geometry().bounds
    x = _int(body, xname, left, left + width - 1)
    point = Point(x, _int(body, yname, top, top + height - 1))
    if not backend.geometry().contains(point):
        raise InputError(f"({point.x}, {point.y}) is on no monitor")
    return point


def _button(body: dict[str, Any]) -> Any:
    button = body.get("button", "left")
    if button not in _BUTTONS:
        raise InputError(f"button must be one of {', '.join(_BUTTONS)}")
    return button


def apply_input(backend: DesktopBackend, body: dict[str, Any]) -> str:
    """Carry out one request on ``backend``; returns its kind."""
    kind = body.get("kind")
    if kind == "click":
        at = _point(backend, body, "x", "y")
        backend.click(at, _button(body), _int({"c": body.get("clicks", 1)}, "c", 1, 3))
    elif kind == "drag":
        start, end = _point(backend, body, "x", "y"), _point(backend, body, "to_x", "to_y")
        backend.drag(start, end, _button(body))
    elif kind == "scroll":
        at = _point(backend, body, "x", "y")
        clicks = _int(body, "clicks", -50, 50)
        if clicks:
            backend.scroll(at, clicks, bool(body.get("horizontal", False)))
    elif kind == "move":
        backend.move(_point(backend, body, "x", "y"))
    elif kind == "key":
        keys = body.get("keys")
        if not isinstance(keys, list) or not 0 < len(keys) <= MAX_KEYS:
            raise InputError(f"keys must be a list of 1 to {MAX_KEYS} key names")
        try:
            names = [normalize_key(str(k)) for k in keys]
        except ValueError as err:
            raise InputError(str(err)) from None
        backend.hotkey(names)
    elif kind == "text":
        text = body.get("text")
        if not isinstance(text, str) or not 0 < len(text) <= MAX_TEXT:
            raise InputError(f"text must be 1 to {MAX_TEXT} characters")
        if any(ord(c) < 32 and c not in "\t\n" for c in text):
            raise InputError("text may not hold control characters: send them as keys")
        backend.type_text(text)
    else:
        raise InputError("kind must be one of click, drag, scroll, move, key, text")
    return str(kind)


__all__ = ["InputError", "apply_input"]
