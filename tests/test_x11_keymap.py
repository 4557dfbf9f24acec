"""Typing on X11 and the keyboard map: the keycodes the backend binds for characters the map
lacks (agent_s.desktop._xproto.KeyBinder), shared with the other clients of the display."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import Xlib.display
from polling import wait_until as _wait

from agent_s.desktop import _xproto
from agent_s.desktop.virtual import VirtualDesktop
from agent_s.desktop.x11 import X11Backend
from agent_s.errors import ActionExecutionError


def _xconnect(desktop: VirtualDesktop) -> Xlib.display.Display:
    return Xlib.display.Display(desktop.display)


def _keymap(desktop: VirtualDesktop) -> tuple[int, list[tuple[int, ...]]]:
    display = _xconnect(desktop)
    try:
        return _spare_keymap(display)
    finally:
        display.close()


def test_closing_a_backend_gives_its_keycodes_back(
    x11: Any, desktop: VirtualDesktop, probe: Any
) -> None:
    x11._keys.release()  # the session's backend may hold every spare keycode by now
    first, before = _keymap(desktop)
    backend = X11Backend(desktop.display, env=desktop.env)
    backend.click(probe.point("entry"))
    backend.type_text("☑ ÷")
    probe.wait_for(lambda ev: any(e.get("text") == "☑ ÷" for e in ev))
    _, during = _keymap(desktop)
    syms = {_xproto.char_keysym(char) for char in "☑÷"}
    bound = [first + i for i, row in enumerate(during) if set(row) & syms]
    assert len(bound) == 2
    backend.close()
    # Its keycodes are free again, and so is every one that was. (Not the whole map
    # compared: binding a Latin-1 character can make the server's XKB layer list every key
    # in more columns, and bindings other clients left behind may be the ones it took.)
    _, after = _keymap(desktop)
    free = {first + i for i, row in enumerate(after) if not any(row)}
    assert set(bound) <= free
    assert {first + i for i, row in enumerate(before) if not any(row)} <= free


def _spare_keymap(display: Xlib.display.Display) -> tuple[int, list[tuple[int, ...]]]:
    first = display.display.info.min_keycode
    count = display.display.info.max_keycode - first + 1
    return first, [tuple(syms) for syms in display.get_keyboard_mapping(first, count)]


def _rebind(display: Xlib.display.Display, code: int, char: str | None) -> None:
    """Another client binds ``code`` to ``char`` (None: frees it), as rendered code does."""
    _, keymap = _spare_keymap(display)
    sym = 0 if char is None else _xproto.char_keysym(char)
    display.change_keyboard_mapping(code, [(sym,) * len(keymap[0])])
    display.sync()


def _cat_into(apps: Any, out: Path) -> str:
    """An xterm whose every typed line goes to ``out``; its title."""
    title = f"cat-{time.monotonic_ns()}"
    apps(
        ["xterm", "-u8", "-T", title, "-e", "sh", "-c", 'cat > "$0"', str(out)],
        window=title,
        env={"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"},
    )
    return title


def test_typing_survives_another_client_rebinding_its_keycodes(
    desktop: VirtualDesktop, apps: Any, tmp_path: Path
) -> None:
    # Another client on the display (rendered pyautogui code, a second agent) rebinds
    # keycodes this backend bound. The backend must not take those keycodes back for the
    # text's other characters: a character left without a keycode falls to xdotool's own
    # rebinding, which a busy terminal decodes late (characters lost on CI's loaded machine).
    out = tmp_path / "typed.txt"
    title = _cat_into(apps, out)
    backend = X11Backend(desktop.display, env=desktop.env)
    other = _xconnect(desktop)
    taken: list[int] = []
    try:
        backend.activate(title)
        fill = "".join(chr(0x4E00 + i) for i in range(backend._keys.capacity()))
        backend.type_text(fill + "\n")  # every spare keycode now holds one of these
        first, keymap = _spare_keymap(other)
        holder = {syms[0]: first + i for i, syms in enumerate(keymap) if syms and syms[0]}
        taken = [holder[_xproto.char_keysym(char)] for char in sorted(fill)[:2]]  # LRU ones
        for code, char in zip(taken, "ΩΣ", strict=True):
            _rebind(other, code, char)
        text = "ΩΣ αβγδε"
        backend.type_text(text + "\n")
        _, keymap = _spare_keymap(other)
        present = {sym for syms in keymap for sym in syms}
        assert {_xproto.char_keysym(char) for char in text} <= present  # none rebound away
        backend.hotkey(["ctrl", "d"])
        _wait(lambda: out.read_text(encoding="utf-8") == f"{fill}\n{text}\n", what="xterm's file")
    finally:
        backend.close()
        for code in taken:
            _rebind(other, code, None)
        other.close()


def test_bindings_another_client_left_behind_are_reused(
    x11: Any, desktop: VirtualDesktop, apps: Any, tmp_path: Path
) -> None:
    # A killed agent, or rendered pyautogui code (whose bindings stay), leaves characters
    # bound on every spare keycode; typing must still bind what it needs, not fall to
    # xdotool's own rebinding (which loses characters in a busy terminal) or fail.
    out = tmp_path / "typed.txt"
    title = _cat_into(apps, out)
    x11._keys.release()
    other = _xconnect(desktop)
    first, keymap = _spare_keymap(other)
    free = [first + i for i, row in enumerate(keymap) if not any(row)]
    backend = X11Backend(desktop.display, env=desktop.env)
    try:
        for index, code in enumerate(free):
            _rebind(other, code, chr(0x3041 + index))  # hiragana, left behind
        other.close()  # the client that bound them is gone
        backend.activate(title)
        backend.type_text("snow ☃ and ΩΣ\n")
        _, keymap = _keymap(desktop)  # bound for good, not by xdotool for a moment
        assert {_xproto.char_keysym(c) for c in "☃ΩΣ"} <= {sym for row in keymap for sym in row}
        backend.hotkey(["ctrl", "d"])
        _wait(lambda: out.read_text(encoding="utf-8") == "snow ☃ and ΩΣ\n", what="the file")
    finally:
        backend.close()
        cleaner = _xconnect(desktop)
        for code in free:
            _rebind(cleaner, code, None)
        cleaner.close()


def test_with_no_spare_keycode_at_all_typing_says_so(x11: Any, desktop: VirtualDesktop) -> None:
    # Keycodes another client uses for keys of its own (two symbols, as a layout's key has)
    # are never taken; with nothing else spare, typing a character the map lacks is an
    # error naming the cause.
    x11._keys.release()
    other = _xconnect(desktop)
    first, keymap = _spare_keymap(other)
    free = [first + i for i, row in enumerate(keymap) if not any(row)]
    width = len(keymap[0])
    backend = X11Backend(desktop.display, env=desktop.env)
    try:
        for index, code in enumerate(free):
            lower, upper = 0x1000000 | (0x3B1 + index % 20), 0x1000000 | (0x391 + index % 20)
            other.change_keyboard_mapping(
                code, [(lower, upper) * (width // 2) + (0,) * (width % 2)]
            )
        other.sync()
        with pytest.raises(ActionExecutionError, match="no spare keycode is left to type '☃'"):
            backend.type_text("snow ☃")
    finally:
        backend.close()
        for code in free:
            _rebind(other, code, None)
        other.close()
