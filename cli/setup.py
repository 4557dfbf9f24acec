"""``agent-s setup kde``: the one-time authorisation KWin asks for on KDE Plasma (Wayland).

It builds agent-s's small helper (``agent_s.desktop.kde_access``) into the user's data folder
and writes the desktop entry that lets KWin give it screenshots and fake input; ``--print``
shows the entry and where it would go instead, changing nothing.
"""

from __future__ import annotations

import os
from typing import Annotated

import typer
from rich.markup import escape

from agent_s.cli import output
from agent_s.cli.helptext import Command, command_group

setup_app = command_group("One-time set-up steps of a desktop: kde (KWin's authorisation).")


@setup_app.command("kde", cls=Command)
def kde(
    show: Annotated[
        bool,
        typer.Option("--print", help="Print the entry and where it goes; change nothing."),
    ] = False,
) -> None:
    """Authorise agent-s in KWin (KDE Plasma on Wayland): build its helper and install the
    desktop entry that grants it KWin's screenshot interface and fake input."""
    from agent_s.desktop import kde_access
    from agent_s.errors import AgentSError

    out, err = output.console(), output.console(stderr=True)
    env = dict(os.environ)
    helper = kde_access.data_home(env) / "agent-s" / kde_access.HELPER_NAME
    entry = kde_access.data_home(env) / "applications" / kde_access.ENTRY_NAME
    if show:
        out.print(
            f"# {entry} (for the helper built from agent-s's kwin_access.c at {helper})",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        out.print(kde_access.entry_text(helper), end="", markup=False, highlight=False)
        return
    try:
        helper, entry = kde_access.install_for_user(env)
    except (AgentSError, OSError) as error:
        err.print(f"[red]error:[/] {escape(str(error))}", highlight=False, soft_wrap=True)
        raise typer.Exit(1) from error
    out.print(
        f"KWin now lets {helper} (agent-s's helper) take screenshots and send input: "
        f"{entry} is installed. agent-s doctor checks it.",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
