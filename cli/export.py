"""``agent-s export RUN_DIR --format osworld|openai|anthropic [--out PATH]``: a recorded run as
OSWorld's ``traj.jsonl`` (a folder, with the screenshots) or as a provider's message list (one
JSON file, screenshots as base64 images): ``agent_s.report.export``. Prints the path written. Exit
codes: 0 written, 2 usage or a folder that is no recorded run."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from agent_s.cli import output


def export(
    run_dir: Annotated[
        Path, typer.Argument(metavar="RUN_DIR", help="The recorded run's trajectory folder.")
    ],
    fmt: Annotated[
        str,
        typer.Option("--format", help="osworld (traj.jsonl), openai (chat messages) or anthropic."),
    ],
    out: Annotated[
        Path | None,
        typer.Option(
            help="Where to write (default: RUN_DIR/osworld/ or RUN_DIR/messages-FORMAT.json)."
        ),
    ] = None,
) -> None:
    """Write a recorded run as OSWorld's traj.jsonl or a provider's message list."""
    from agent_s.report.export import export as write

    try:
        written = write(run_dir, fmt, out)
    except (OSError, ValueError) as error:
        output.console(stderr=True).print(
            f"[red]error:[/] {escape(output.printable(str(error)))}",
            highlight=False,
            soft_wrap=True,
        )
        raise typer.Exit(2) from None
    output.console().print(str(written), markup=False, highlight=False, soft_wrap=True)
