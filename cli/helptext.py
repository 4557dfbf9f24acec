"""How ``agent-s ... --help`` is laid out: click's plain help, whatever the terminal.

Every word is kept and wrapped to the terminal's width (never cut off with an ellipsis),
flags show no value placeholder (``--json``, not ``--json <bool>``; ``--help`` too), text in
brackets stays text (``[env AGENT_S_SAFETY]``, ``[model] timeout``), hyphenated names such as
``--api-key-file`` are never split across two lines, and a command's one-line summary in a
command list is its whole first sentence. Every command and group of the CLI uses ``Command`` /
``Group`` (``typer.Typer(cls=Group, rich_markup_mode=None)``, ``app.command(cls=Command)``):
typer's rich help panels cut long words at 80 columns, read ``[env X]`` as markup and showed
``<bool>`` beside flags and ``--help``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup

_TEXT_COLUMNS = 34  # the narrowest text column of an option list (AGENT_S_A11Y_SNAPSHOT fits)
_NO_BREAK = "\u2011"  # a non-breaking hyphen while wrapping; a plain "-" when written
# click's help formatter, wherever this typer keeps it (newer typers vendor click)
_Base: type[Any] = typer.Context.formatter_class


def _write(self: Any, string: str) -> None:
    _Base.write(self, string.replace(_NO_BREAK, "-"))


def _write_text(self: Any, text: str) -> None:
    _Base.write_text(self, text.replace("-", _NO_BREAK))


def _write_dl(
    self: Any, rows: Sequence[tuple[str, str]], col_max: int = 30, col_spacing: int = 2
) -> None:
    kept = [(term, text.replace("-", _NO_BREAK)) for term, text in rows]
    # room for the text: on a narrow terminal, long option names stand on a line of their own
    # and the text starts below them, rather than in a column too narrow for a word
    room = self.width - self.current_indent - col_spacing - 2 - _TEXT_COLUMNS
    _Base.write_dl(self, kept, max(8, min(col_max, room)), col_spacing)


# click's formatter, wrapping help text at spaces only: a hyphen is never a line break
Formatter: type[Any] = type(
    "Formatter", (_Base,), {"write": _write, "write_text": _write_text, "write_dl": _write_dl}
)


class Context(typer.Context):
    formatter_class = Formatter


class Command(TyperCommand):
    context_class = Context

    def get_short_help_str(self, limit: int = 45) -> str:
        return super().get_short_help_str(limit=1_000)  # the first sentence, whole


class Group(TyperGroup):
    context_class = Context

    def get_short_help_str(self, limit: int = 45) -> str:
        return super().get_short_help_str(limit=1_000)


def command_group(help_text: str) -> typer.Typer:
    """A group of commands (``agent-s bench``, ``memory``, ``workflow``) with this help layout;
    without a command it shows its help."""
    return typer.Typer(help=help_text, no_args_is_help=True, rich_markup_mode=None, cls=Group)


__all__ = ["Command", "Context", "Formatter", "Group", "command_group"]
