"""The key set: which key names an action may use, how aliases normalise, and their X keysyms.

Key names are pyautogui's (``pyautogui.KEY_NAMES``), so a validated action renders to pyautogui
code that pyautogui accepts. The list is kept here rather than imported because importing
pyautogui needs a display, and parsing an action must not.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Literal

_PRINTABLE = "\t\n\r !\"#$%&'()*+,-./0123456789:;<=>?@[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~"

_NAMED = """
accept add alt altleft altright apps backspace browserback browserfavorites browserforward
browserhome browserrefresh browsersearch browserstop capslock clear convert ctrl ctrlleft
ctrlright decimal del delete divide down end enter esc escape execute
f1 f2 f3 f4 f5 f6 f7 f8 f9 f10 f11 f12 f13 f14 f15 f16 f17 f18 f19 f20 f21 f22 f23 f24
final fn hanguel hangul hanja help home insert junja kana kanji launchapp1 launchapp2 launchmail
launchmediaselect left modechange multiply nexttrack nonconvert
num0 num1 num2 num3 num4 num5 num6 num7 num8 num9 numlock pagedown pageup pause pgdn pgup
playpause prevtrack print printscreen prntscrn prtsc prtscr return right scrolllock select
separator shift shiftleft shiftright sleep space stop subtract tab up volumedown volumemute
volumeup win winleft winright yen command option optionleft optionright
""".split()  # noqa: SIM905 - a word list reads better than 170 quoted names

#: Every key name pyautogui knows (pyautogui 0.9.54 ``KEY_NAMES``).
KEY_NAMES: frozenset[str] = frozenset(_PRINTABLE) | frozenset(_NAMED)

#: Names models commonly write that mean a pyautogui key.
ALIASES: MappingProxyType[str, str] = MappingProxyType(
    {
        "control": "ctrl",
        "ctl": "ctrl",
        "lctrl": "ctrlleft",
        "rctrl": "ctrlright",
        "super": "win",
        "meta": "win",
        "windows": "win",
        "cmd": "command",
        "lalt": "altleft",
        "ralt": "altright",
        "lshift": "shiftleft",
        "rshift": "shiftright",
        "arrowup": "up",
        "arrowdown": "down",
        "arrowleft": "left",
        "arrowright": "right",
        "page_up": "pageup",
        "page_down": "pagedown",
        "pgdown": "pagedown",
        "bksp": "backspace",
        "back_space": "backspace",
        "ins": "insert",
        "spacebar": "space",
        "plus": "+",
        "minus": "-",
        "comma": ",",
        "period": ".",
        "slash": "/",
    }
)

#: Modifier keys: held while other keys are pressed.
MODIFIERS: frozenset[str] = frozenset(
    {
        "alt",
        "altleft",
        "altright",
        "ctrl",
        "ctrlleft",
        "ctrlright",
        "shift",
        "shiftleft",
        "shiftright",
        "win",
        "winleft",
        "winright",
        "command",
        "option",
        "optionleft",
        "optionright",
        "fn",
    }
)


def normalize_key(name: str) -> str:
    """Return the canonical pyautogui name of ``name``, or raise ``ValueError`` naming the key.

    Multi-character names are case-insensitive (``"Ctrl"``, ``"ENTER"``); a single letter is
    lowered (``"C"`` in a hotkey means the C key); other single characters stay as they are.
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"key name must be a non-empty string, got {name!r}")
    if len(name) == 1:
        key = name.lower() if name.isalpha() else name
    else:
        lowered = name.strip().lower().replace(" ", "")
        key = ALIASES.get(lowered, lowered)
    if key not in KEY_NAMES:
        raise ValueError(
            f"unknown key {name!r}; use pyautogui key names such as 'ctrl', 'enter', 'f5', 'a'"
        )
    return key


# X keysym names for the canonical keys, used by the X11 backend (xdotool speaks keysyms).
# Keys not listed here are single characters whose keysym xdotool derives itself, or names
# with no key on a standard PC keyboard (those raise a clear error when pressed on X11).
_X_KEYSYMS = {
    "\t": "Tab",
    "\n": "Return",
    "\r": "Return",
    " ": "space",
    "!": "exclam",
    '"': "quotedbl",
    "#": "numbersign",
    "$": "dollar",
    "%": "percent",
    "&": "ampersand",
    "'": "apostrophe",
    "(": "parenleft",
    ")": "parenright",
    "*": "asterisk",
    "+": "plus",
    ",": "comma",
    "-": "minus",
    ".": "period",
    "/": "slash",
    ":": "colon",
    ";": "semicolon",
    "<": "less",
    "=": "equal",
    ">": "greater",
    "?": "question",
    "@": "at",
    "[": "bracketleft",
    "\\": "backslash",
    "]": "bracketright",
    "^": "asciicircum",
    "_": "underscore",
    "`": "grave",
    "{": "braceleft",
    "|": "bar",
    "}": "braceright",
    "~": "asciitilde",
    "add": "KP_Add",
    "alt": "Alt_L",
    "altleft": "Alt_L",
    "altright": "Alt_R",
    "apps": "Menu",
    "backspace": "BackSpace",
    "browserback": "XF86Back",
    "browserfavorites": "XF86Favorites",
    "browserforward": "XF86Forward",
    "browserhome": "XF86HomePage",
    "browserrefresh": "XF86Refresh",
    "browsersearch": "XF86Search",
    "browserstop": "XF86Stop",
    "capslock": "Caps_Lock",
    "clear": "Clear",
    "ctrl": "Control_L",
    "ctrlleft": "Control_L",
    "ctrlright": "Control_R",
    "decimal": "KP_Decimal",
    "del": "Delete",
    "delete": "Delete",
    "divide": "KP_Divide",
    "down": "Down",
    "end": "End",
    "enter": "Return",
    "esc": "Escape",
    "escape": "Escape",
    "execute": "Execute",
    "help": "Help",
    "home": "Home",
    "insert": "Insert",
    "left": "Left",
    "launchmail": "XF86Mail",
    "multiply": "KP_Multiply",
    "nexttrack": "XF86AudioNext",
    "numlock": "Num_Lock",
    "pagedown": "Next",
    "pageup": "Prior",
    "pause": "Pause",
    "pgdn": "Next",
    "pgup": "Prior",
    "playpause": "XF86AudioPlay",
    "prevtrack": "XF86AudioPrev",
    "print": "Print",
    "printscreen": "Print",
    "prntscrn": "Print",
    "prtsc": "Print",
    "prtscr": "Print",
    "return": "Return",
    "right": "Right",
    "scrolllock": "Scroll_Lock",
    "select": "Select",
    "separator": "KP_Separator",
    "shift": "Shift_L",
    "shiftleft": "Shift_L",
    "shiftright": "Shift_R",
    "sleep": "XF86Sleep",
    "space": "space",
    "stop": "XF86AudioStop",
    "subtract": "KP_Subtract",
    "tab": "Tab",
    "up": "Up",
    "volumedown": "XF86AudioLowerVolume",
    "volumemute": "XF86AudioMute",
    "volumeup": "XF86AudioRaiseVolume",
    "win": "Super_L",
    "winleft": "Super_L",
    "winright": "Super_R",
    "command": "Super_L",
    "option": "Alt_L",
    "optionleft": "Alt_L",
    "optionright": "Alt_R",
    "hangul": "Hangul",
    "hanguel": "Hangul",
    "hanja": "Hangul_Hanja",
    "kana": "Katakana",
    "kanji": "Kanji",
    "modechange": "Mode_switch",
    "convert": "Henkan",
    "nonconvert": "Muhenkan",
    "yen": "yen",
}
_X_KEYSYMS.update({f"f{n}": f"F{n}" for n in range(1, 25)})
_X_KEYSYMS.update({f"num{n}": f"KP_{n}" for n in range(10)})
X_KEYSYMS: MappingProxyType[str, str] = MappingProxyType(_X_KEYSYMS)


def x_keysym(key: str) -> str:
    """The X keysym name for a canonical key name (``"ctrl"`` -> ``"Control_L"``)."""
    canonical = normalize_key(key)
    if canonical in X_KEYSYMS:
        return X_KEYSYMS[canonical]
    if len(canonical) == 1 and canonical.isalnum():
        return canonical
    raise ValueError(f"key {key!r} has no key on an X11 keyboard")


#: the platforms whose key names an action may be planned with
OsName = Literal["linux", "windows", "darwin"]
PLATFORMS: tuple[OsName, ...] = ("linux", "windows", "darwin")


def primary_modifier(os: OsName) -> str:
    """The key most shortcuts use: command on macOS, ctrl elsewhere."""
    if os not in PLATFORMS:
        raise ValueError(f"unknown platform {os!r}; use one of {', '.join(PLATFORMS)}")
    return "command" if os == "darwin" else "ctrl"
