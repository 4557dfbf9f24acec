"""Render a plan of primitive desktop operations as pyautogui code, for runners that exec code.

OSWorld-style controllers run an action as ``python -c "import pyautogui; import time;
pyautogui.FAILSAFE = False; <code>"``. The code is assembled only from fixed templates: numbers
pass through ``int()``/``float()`` and every string (text to type, key names, application names)
lands as a ``repr()`` literal, so nothing a model writes can become code. Each snippet imports
what it uses (a plan of only ``Sleep`` needs no display).

Typing, as measured with pyautogui 0.9.54 on Xvfb (US keymap), each printable ASCII character
typed alone into a Tk text box:
- ``pyautogui.write`` types every printable ASCII character correctly except ``<``, which
  arrives as ``>`` (its keysym sits on the <> key, and pyautogui adds Shift). Non-ASCII
  characters are dropped.
- ``xdotool type`` delivers ``<`` and other ASCII correctly, but not non-ASCII text: into
  LibreOffice Calc it dropped and repeated characters ("éÉÄàç€中ß😀ё" arrived as "éççç中ё"), and
  even with ``--delay 100`` capitals such as "É" and "Ä" arrived in lower case: it rebinds one
  scratch keycode per character while the application still decodes earlier presses.
- the clipboard and ctrl+v delivered the same text exactly, but terminal emulators ignore
  ctrl+v (they paste with ctrl+shift+v), so text pasted into a terminal was lost.
So on Linux printable ASCII but ``<`` goes through ``pyautogui.write``, and ``<`` and every
other printable character through ``_agent_s_type`` (``TYPE_HELPER``, defined once at the top of
code that needs it): key presses through the XTEST extension with python-xlib (pyautogui's own
X11 dependency, so present wherever pyautogui runs), after binding each character the keyboard
map lacks to a spare keycode of its own, as the live backend does (``_xproto.KeyBinder``); a
binding stays for later texts and no keycode is rebound while its characters are typed. Key
presses reach every window, terminals included. There is no fallback to ``xdotool type``: it
loses non-ASCII characters (above), and where python-xlib is missing, so is pyautogui, which the
runner imports first. Newlines and tabs are key presses. Control characters
(which no key types) and, on Windows and macOS, all non-ASCII text and ``<`` go through the
clipboard (xclip, else pyperclip) and ctrl+v (command+v on macOS). Code rendered this way typed
a text mixing "<", ">", "é中", "ÉÄ😀", Hangul, quotes, backslashes, tabs and newlines exactly
into xterm, rxvt-unicode, lxterminal (VTE, as GNOME Terminal) and mousepad, and 320 distinct
CJK characters (more than the spare keycodes) into xterm, run under ``python -c`` with its
output captured (tests/test_render_typing.py).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterator, Sequence
from typing import get_args

from agent_s.desktop import ops
from agent_s.keys import OsName, primary_modifier

_WRITABLE = frozenset(chr(code) for code in range(0x20, 0x7F)) - {"<"}
_BUTTONS = get_args(ops.Button)
_IMPORT_ORDER = ("os", "shutil", "subprocess", "time", "pyautogui", "pyperclip")
_PASTE_SETTLE = 0.2  # seconds for the application to fetch the clipboard before the next key
_ERE_SPECIAL = re.compile(r"([\\.\[\]()*+?{}|^$])")
_DETACHED = "start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL"


#: Defined at the top of rendered code that types text with keys (see the module docstring).
#: Fixed code: the text reaches it only as a ``repr()`` literal argument.
TYPE_HELPER = """\
def _agent_s_type(text):
    import Xlib.display
    from Xlib import X
    from Xlib.ext import xtest

    def keysym(char):
        code = ord(char)
        if char == '\\n':
            return 0xFF0D
        if char == '\\t':
            return 0xFF09
        if 0x20 <= code <= 0x7E or 0xA0 <= code <= 0xFF:
            return code
        return 0x1000000 | code

    def spare_binding(syms):
        # a character bound to a spare keycode (here or by agent-s): every level the same
        return (len(syms) > 1 and syms[0] == syms[1] and set(syms) - {0} == {syms[0]}
                and (0xA0 <= syms[0] <= 0xFF or 0x1000100 <= syms[0] <= 0x110FFFF))

    display = Xlib.display.Display()
    try:
        first = display.display.info.min_keycode
        count = display.display.info.max_keycode - first + 1
        shift = display.keysym_to_keycode(0xFFE1)
        pos = 0
        while pos < len(text):
            keymap = [tuple(syms) for syms in display.get_keyboard_mapping(first, count)]
            where = {}
            for level in (0, 1) if shift else (0,):
                for index, syms in enumerate(keymap):
                    if len(syms) > level and syms[level] and syms[level] not in where:
                        where[syms[level]] = (first + index, level)
            free = [first + i for i, syms in enumerate(keymap) if not any(syms)]
            ours = [first + i for i, syms in enumerate(keymap) if spare_binding(syms)]
            missing, used, end = [], set(), pos
            while end < len(text):
                sym = keysym(text[end])
                now_used = used | {where[sym][0]} if sym in where else used
                now_missing = missing if sym in where or sym in missing else missing + [sym]
                if len(now_missing) > len(free) + len(set(ours) - now_used):
                    break
                missing, used, end = now_missing, now_used, end + 1
            if end == pos:
                raise RuntimeError('no spare keycode to type %r' % text[pos])
            slots = free + [code for code in ours if code not in used]
            changes = dict(zip(slots, missing))
            if changes:
                if set(changes) - set(free):
                    time.sleep(0.2)
                low, high = min(changes), max(changes)
                width = len(keymap[0])
                rows = [(changes[code],) * width if code in changes else keymap[code - first]
                        for code in range(low, high + 1)]
                display.change_keyboard_mapping(low, rows)
                display.sync()
                time.sleep(0.2)
                for code, sym in changes.items():
                    where[sym] = (code, 0)
            for char in text[pos:end]:
                code, level = where[keysym(char)]
                if level:
                    xtest.fake_input(display, X.KeyPress, shift)
                xtest.fake_input(display, X.KeyPress, code)
                xtest.fake_input(display, X.KeyRelease, code)
                if level:
                    xtest.fake_input(display, X.KeyRelease, shift)
                display.sync()
                time.sleep(0.004)
            pos = end
    finally:
        display.close()
"""
_HELPER_MODULES = ("time",)


class _Code:
    """Lines of code being built, and the modules they use."""

    def __init__(self, os: OsName = "linux") -> None:
        self.lines: list[str] = []
        self.modules: set[str] = set()
        self.os = os
        self.paste_modifier = primary_modifier(os)  # command on macOS
        self.helper = False  # whether the code calls TYPE_HELPER

    def add(self, line: str, *modules: str, indent: int = 0) -> None:
        self.lines.append("    " * indent + line)
        self.modules.update(modules)


def render(plan: Sequence[ops.Op], *, os: OsName = "linux") -> str:
    """pyautogui code that performs ``plan``; ``"pass"`` for an empty plan. ``os`` picks the
    paste shortcut (command+v on "darwin"); the clipboard and launcher helpers are Linux's."""
    code = _Code(os)
    for op in plan:
        _render_op(code, op)
    if not code.lines:
        return "pass"
    if code.helper:  # also puts an import first: runners prefix the code with "...; "
        code.modules.update(_HELPER_MODULES)
    imports = [f"import {name}" for name in _IMPORT_ORDER if name in code.modules]
    helper = [TYPE_HELPER.rstrip("\n")] if code.helper else []
    return "\n".join(imports + helper + code.lines)


# -- literals -------------------------------------------------------------------------------------


def _str(value: str) -> str:
    return repr(str(value))


def _int(value: int) -> str:
    return str(int(value))


def _point(at: ops.Point) -> str:
    return f"{_int(at.x)}, {_int(at.y)}"


def _button(button: str) -> str:
    if button not in _BUTTONS:
        raise ValueError(f"unknown mouse button {button!r}")
    return _str(button)


def _keys(keys: Sequence[str]) -> str:
    return ", ".join(_str(key) for key in keys)


def ere_escape(text: str) -> str:
    """Escape ``text`` for a POSIX extended regular expression (xdotool's ``search``)."""
    return _ERE_SPECIAL.sub(r"\\\1", text)


# -- operations -----------------------------------------------------------------------------------


def _render_op(code: _Code, op: ops.Op) -> None:
    if isinstance(op, ops.MoveTo):
        code.add(f"pyautogui.moveTo({_point(op.at)})", "pyautogui")
    elif isinstance(op, ops.Click):
        if not 1 <= int(op.clicks) <= 3:
            raise ValueError(f"clicks must be 1..3, got {op.clicks!r}")
        clicks, button = _int(op.clicks), _button(op.button)
        # A pause between presses: an instant multi-click can lose its last press on X11.
        interval = ", interval=0.05" if op.clicks > 1 else ""
        click = f"pyautogui.click({_point(op.at)}, clicks={clicks}{interval}, button={button})"
        _holding(code, op.hold_keys, [click])
    elif isinstance(op, ops.Drag):
        _holding(
            code,
            op.hold_keys,
            [
                f"pyautogui.moveTo({_point(op.start)})",
                f"pyautogui.dragTo({_point(op.end)}, duration=0.5, button={_button(op.button)})",
            ],
        )
    elif isinstance(op, ops.Scroll):
        wheel = "hscroll" if op.horizontal else "scroll"
        code.add(f"pyautogui.moveTo({_point(op.at)})", "pyautogui")
        code.add(f"pyautogui.{wheel}({_int(op.clicks)})")
    elif isinstance(op, ops.Hotkey):
        if tuple(op.keys) == ("<",):
            _type_text(code, "<")  # pyautogui.press('<') gives '>' on X11 (see above)
        elif len(op.keys) == 1:
            code.add(f"pyautogui.press({_keys(op.keys)})", "pyautogui")
        elif op.keys:
            code.add(f"pyautogui.hotkey({_keys(op.keys)})", "pyautogui")
    elif isinstance(op, ops.HoldAndPress):
        _holding(code, op.hold_keys, [f"pyautogui.press({_str(key)})" for key in op.press_keys])
    elif isinstance(op, ops.TypeText):
        _type_text(code, op.text)
    elif isinstance(op, ops.Sleep):
        seconds = float(op.seconds)
        if not math.isfinite(seconds) or seconds < 0:
            raise ValueError(f"cannot sleep {op.seconds!r} seconds")
        code.add(f"time.sleep({seconds!r})", "time")
    elif isinstance(op, ops.Open):
        _open(code, op.target)
    elif isinstance(op, ops.Activate):
        _activate(code, op.app)
    else:
        raise TypeError(f"not a desktop operation: {op!r}")


def _holding(code: _Code, keys: Sequence[str], lines: list[str]) -> None:
    """``lines`` with ``keys`` held down; the keys are released even if a line fails."""
    if not keys:
        for line in lines:
            code.add(line, "pyautogui")
        return
    code.add("try:", "pyautogui")
    for key in keys:
        code.add(f"pyautogui.keyDown({_str(key)})", indent=1)
    for line in lines:
        code.add(line, indent=1)
    code.add("finally:")
    for key in reversed(keys):
        code.add(f"pyautogui.keyUp({_str(key)})", indent=1)


def text_runs(text: str) -> Iterator[tuple[str, str]]:
    """Split ``text`` into (how, run): "write", "enter", "tab", "keys" or "paste".

    "write": printable ASCII but ``<`` (``pyautogui.write``); "keys": ``<`` and every other
    character a key can type (``_agent_s_type`` on Linux, the clipboard elsewhere); "paste":
    control characters and lone surrogates, which no key types. "\\r\\n" and "\\r" count as
    one newline. Joining the runs, with "\\n" for each enter and "\\t" for each tab, gives
    back the text.
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    start = 0
    for index in range(1, len(text) + 1):
        if index == len(text) or _kind(text[index]) != _kind(text[start]):
            yield _kind(text[start]), text[start:index]
            start = index


def _kind(char: str) -> str:
    if char in _WRITABLE:
        return "write"
    if char == "\n":
        return "enter"
    if char == "\t":
        return "tab"
    return "paste" if unicodedata.category(char) in ("Cc", "Cs") else "keys"


def _type_text(code: _Code, text: str, indent: int = 0) -> None:
    for how, run in text_runs(text):
        if how == "write":
            code.add(f"pyautogui.write({_str(run)})", "pyautogui", indent=indent)
        elif how in ("enter", "tab"):
            presses = f", presses={len(run)}" if len(run) > 1 else ""
            code.add(f"pyautogui.press({_str(how)}{presses})", "pyautogui", indent=indent)
        elif how == "keys" and code.os == "linux":
            code.helper = True
            code.add(f"_agent_s_type({_str(run)})", indent=indent)
        else:
            _paste(code, run, indent)


def _paste(code: _Code, run: str, indent: int) -> None:
    # xclip stays running to serve the clipboard; pyperclip starts it with our stdout and
    # stderr, so a runner that captures them (OSWorld's /execute) waits until xclip exits.
    code.add("if shutil.which('xclip'):", "shutil", indent=indent)
    code.add(
        f"subprocess.run(['xclip', '-selection', 'clipboard'], input={_str(run)}, "
        "encoding='utf-8', stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, "
        "timeout=10)",
        "subprocess",
        indent=indent + 1,
    )
    # xclip returns before its server owns the clipboard: wait until the clipboard reads back.
    code.add("for _ in range(100):", indent=indent + 1)
    code.add(
        "if subprocess.run(['xclip', '-selection', 'clipboard', '-o'], capture_output=True, "
        f"encoding='utf-8', timeout=10).stdout == {_str(run)}:",
        indent=indent + 2,
    )
    code.add("break", indent=indent + 3)
    code.add("time.sleep(0.02)", "time", indent=indent + 2)
    code.add("else:", indent=indent)
    code.add(f"pyperclip.copy({_str(run)})", "pyperclip", indent=indent + 1)
    code.add(f"pyautogui.hotkey({_str(code.paste_modifier)}, 'v')", "pyautogui", indent=indent)
    code.add(f"time.sleep({_PASTE_SETTLE!r})", "time", indent=indent)


def _open(code: _Code, target: str) -> None:
    """A file path opens with xdg-open, a program on PATH starts, else the desktop launcher."""
    name = _str(target)
    code.add(f"_target = os.path.expanduser({name})", "os")
    code.add("if os.path.exists(_target):")
    code.add(f"subprocess.Popen(['xdg-open', _target], {_DETACHED})", "subprocess", indent=1)
    code.add(f"elif shutil.which({name}):", "shutil")
    code.add(f"subprocess.Popen([{name}], {_DETACHED})", indent=1)
    code.add("else:")
    # The launcher of a GNOME desktop (OSWorld's Ubuntu images): the win key opens a search
    # that starts the best match on Enter.
    code.add("pyautogui.press('win')", "pyautogui", indent=1)
    code.add("time.sleep(1.0)", "time", indent=1)
    _type_text(code, target, indent=1)
    code.add("time.sleep(1.0)", indent=1)
    code.add("pyautogui.press('enter')", indent=1)


def _activate(code: _Code, app: str) -> None:
    """Raise the window whose title (else whose class) matches ``app``; fail if none does."""
    name, pattern = _str(app), _str(ere_escape(app))
    search = "['xdotool', 'search', '--onlyvisible'"
    code.add("if shutil.which('wmctrl'):", "shutil", "subprocess", "time")
    code.add(f"if subprocess.run(['wmctrl', '-a', {name}], check=False).returncode != 0:", indent=1)
    code.add(f"subprocess.run(['wmctrl', '-x', '-a', {name}], check=True)", indent=2)
    code.add(
        f"elif subprocess.run({search}, '--name', {pattern}, 'windowactivate'], "
        "check=False).returncode != 0:"
    )
    code.add(
        f"subprocess.run({search}, '--class', {pattern}, 'windowactivate'], check=True)", indent=1
    )
    code.add("time.sleep(0.5)")
