"""Where the CLI writes: results to stdout, progress, prompts and errors to stderr.

``NO_COLOR`` (set and not empty, as https://no-color.org has it) turns off every escape code:
bold and dim as well as colour (rich itself would drop only the colours), and the cursor
movements of live displays (``bench run``'s progress bar is then not drawn; its per-task lines
still are). ``printable`` makes
text from outside (the model, a model server, the screen) safe to show on a terminal.
"""

from __future__ import annotations

import os
import select
import sys
import unicodedata

from rich.console import Console
from rich.text import Text

# how a control or format character is written out; any other is written as <U+XXXX>
_NAMES = {"\x1b": "␛", "\r": "␍", "\t": "⇥", "\x00": "␀", "\x07": "␇", "\x08": "␈", "\x7f": "␡"}
# control (Cc), format (Cf: bidi overrides, zero-width), line and paragraph separators
_HIDDEN = ("Cc", "Cf", "Zl", "Zp")


def no_color() -> bool:
    return bool(os.environ.get("NO_COLOR"))


def console(*, stderr: bool = False) -> Console:
    """A console for stdout (results) or stderr (everything else)."""
    if no_color():  # as if writing to a file: rich draws nothing live
        return Console(stderr=stderr, color_system=None, no_color=True, force_terminal=False)
    return Console(stderr=stderr)


def ask_line(console: Console, prompt: str) -> str:
    """Show ``prompt`` on ``console`` and read one line from stdin (EOFError at its end).

    Ctrl-C must end the wait at once. Python checks for a signal only between bytecodes: one
    that arrives after the prompt is printed and before ``input()`` blocks in read(2) is noted
    but not acted on until a line comes, so the prompt would ignore that Ctrl-C. On a
    terminal, waiting in short ``select`` slices until a line (or the end) is there closes
    that gap. Not on a pipe: its lines may already sit in Python's buffer, where select cannot
    see them."""
    console.print(Text(prompt), end="")
    try:
        fd = sys.stdin.fileno() if sys.stdin.isatty() else -1
    except (AttributeError, OSError, ValueError):  # not a real file: nothing to wait on
        fd = -1
    while fd >= 0:
        try:
            ready, _, _ = select.select([fd], [], [], 0.2)
        except (OSError, ValueError):  # not selectable: read as usual
            break
        if ready:
            break
    return input()


def printable(text: str, *, keep: str = "\n") -> str:
    """``text`` with every character a terminal would act on or not show written out (escape
    sequences, carriage returns, bidi overrides, zero-width characters: ``␛``, ``␍``,
    ``<U+202E>``), except those in ``keep``: model text cannot restyle, move, clear or hide
    what the user reads."""
    if text.isprintable():
        return text
    out = []
    for char in text:
        if char in keep or unicodedata.category(char) not in _HIDDEN:
            out.append(char)
        else:
            out.append(_NAMES.get(char) or f"<U+{ord(char):04X}>")
    return "".join(out)


__all__ = ["console", "no_color", "printable"]
