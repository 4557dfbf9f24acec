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


def test_closing_a_backend_gives_its_keycodes_back(
    x11: Any, desktop: VirtualDesktop, probe: Any
) -> None:

    def keymap() -> list[tuple[int, ...]]:
        display = _xconnect(desktop)
        try:
            first = display.display.info.min_keycode
            count = display.display.info.max_keycode - first + 1
            return [tuple(syms) for syms in display.get_keyboard_mapping(first, count)]
        finally:
            display.close()

    x11._keys.release()  # the session's backend may hold every spare keycode by now
    before = keymap()
    check_mark = 0x1000000 | ord("☑")
    backend = X11Backend(desktop.display, env=desktop.env)
    backend.click(probe.point("entry"))
    backend.type_text("☑ ÷")
    probe.wait_for(lambda ev: any(e.get("text") == "☑ ÷" for e in ev))
    assert any(check_mark in syms for syms in keymap())
    backend.close()
    # The same keycodes are free again. (Not the whole map compared: binding a Latin-1
    # character can make the server's XKB layer list every key in more columns.)
    after = keymap()
    assert [not any(syms) for syms in after] == [not any(syms) for syms in before]
    assert not any(check_mark in syms for syms in after)


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


def test_typing_survives_another_client_rebinding_its_keycodes(
    desktop: VirtualDesktop, apps: Any, tmp_path: Path
) -> None:
    # Another client on the display (rendered pyautogui code, a second agent) rebinds
    # keycodes this backend bound. The backend must not take those keycodes back for the
    # text's other characters: a character left without a keycode falls to xdotool's own
    # rebinding, which a busy terminal decodes late (characters lost on CI's loaded machine).

    out = tmp_path / "typed.txt"
    title = f"rebinding-{time.monotonic_ns()}"
    apps(
        ["xterm", "-u8", "-T", title, "-e", "sh", "-c", 'cat > "$0"', str(out)],
        window=title,
        env={"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"},
    )
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


def test_with_every_spare_keycode_held_elsewhere_typing_says_so(
    x11: Any, desktop: VirtualDesktop
) -> None:

    x11._keys.release()
    other = _xconnect(desktop)
    first, keymap = _spare_keymap(other)
    free = [first + i for i, syms in enumerate(keymap) if not any(syms)]
    backend = X11Backend(desktop.display, env=desktop.env)
    try:
        for index, code in enumerate(free):
            _rebind(other, code, chr(0x3041 + index))
        with pytest.raises(ActionExecutionError, match="no spare keycode is left to type '☃'"):
            backend.type_text("snow ☃")
    finally:
        backend.close()
        for code in free:
            _rebind(other, code, None)
        other.close()
