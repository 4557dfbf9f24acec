"""``agent-s mcp``: serve agent-s's tools (run a task, ground, screenshot, trajectories) to MCP
clients, over stdio (the default: a client starts it) or streamable HTTP on loopback, where every
request must carry the server's token (``Authorization: Bearer TOKEN``; printed once on stderr, or
kept in ``--token-file``) and the Host and Origin of the server itself (``agent_s.mcp.http``).

The model, grounding, limits, safety mode and record folder are ``agent-s run``'s settings,
resolved the same way (flags, ``AGENT_S_*`` variables, the configuration file, ``run``'s
defaults); ``run_task`` may change the model, grounding and limits per call. The server itself is
``agent_s.mcp.server``. Exit codes: 0 the client went away, 2 usage or configuration error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from agent_s.cli import options, output
from agent_s.cli.grouped import grouped, settings_flags
from agent_s.errors import AgentSError


def _serve_http(server: Any, host: str, port: int, token_file: Path | None) -> None:
    """Listen on loopback, say where and how a client gets in (the token once, or the file it
    is kept in), then serve until interrupted."""
    from agent_s.guards.servers import Door, new_token, token_from_file
    from agent_s.mcp.http import listen, serve

    if token_file is not None:
        token, created = token_from_file(token_file.expanduser())
    else:
        token, created = new_token(), False
    sock = listen(host, port)
    address, bound = sock.getsockname()[:2]
    shown = f"[{address}]" if ":" in address else address
    err = output.console(stderr=True)

    def say(text: str) -> None:
        err.print(text, markup=False, highlight=False, soft_wrap=True)

    say(f"MCP server (streamable HTTP) at http://{shown}:{bound}/mcp")
    if token_file is None:
        say(f"clients send the header: Authorization: Bearer {token}")
        say("(a new token each start; --token-file PATH keeps one in a file only you can read)")
    else:
        kept = "written to" if created else "kept in"
        say(f"clients send the header: Authorization: Bearer <the token {kept} {token_file}>")
    serve(server, sock, Door(token, bound, address))


@grouped
def mcp(
    transport: Annotated[
        str,
        typer.Option(
            help="stdio (a client starts agent-s mcp) or http (loopback only; every request "
            "needs the header 'Authorization: Bearer TOKEN')."
        ),
    ] = "stdio",
    port: Annotated[
        int,
        typer.Option(min=0, max=65535, help="With --transport http: the port (0: any free one)."),
    ] = 8765,
    host: Annotated[
        str | None,
        typer.Option(
            help="With --transport http: the loopback address to listen on (127.0.0.1, "
            "localhost or ::1; any other is refused; default 127.0.0.1)."
        ),
    ] = None,
    token_file: Annotated[
        Path | None,
        typer.Option(
            help="With --transport http: the file holding the token clients send (mode 0600, "
            "yours, not a link; created with a new token if missing). Without it a new token "
            "is printed on stderr at each start."
        ),
    ] = None,
    *,
    models: options.ModelFlags,
    grounds: options.GroundFlags,
    limits: options.LimitFlags,
    record: Annotated[
        str | None,
        typer.Option(
            help="Folder for trajectory folders, the one read_trajectory reads (default "
            "~/.local/share/agent-s/runs; env AGENT_S_RECORD_DIR)."
        ),
    ] = None,
    safety: options.Safety = None,
) -> None:
    """Serve agent-s to MCP clients: run_task, ground, screenshot, list_trajectories and
    read_trajectory. Approvals go to the client as questions, or are refused.

    Over HTTP (--transport http) every request needs the header 'Authorization: Bearer TOKEN'
    (401 without it). The token is printed once on stderr, or kept in --token-file; a client's
    configuration names it, e.g. {"mcpServers": {"agent-s": {"type": "http", "url":
    "http://127.0.0.1:8765/mcp", "headers": {"Authorization": "Bearer TOKEN"}}}}."""
    from agent_s.cli.run import RUN_DEFAULTS
    from agent_s.mcp.server import McpSettings, build_server

    err = output.console(stderr=True)
    flags = settings_flags(
        models,
        grounds,
        limits,
        record=record,
        safety=safety,
    )
    try:
        if transport not in ("stdio", "http"):
            raise ValueError(f"--transport {transport}: use stdio or http")
        if transport == "stdio" and (host is not None or token_file is not None):
            raise ValueError("--host and --token-file are for --transport http (stdio has no port)")
        settings = McpSettings(flags=flags, defaults=RUN_DEFAULTS, api_key=models.key())
        server = build_server(settings)
        if transport == "stdio":
            server.run("stdio")
        else:
            _serve_http(server, host or "127.0.0.1", port, token_file)
    except (AgentSError, ValueError) as error:
        message = f"error: {output.printable(str(error))}"
        err.print(message, markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(2) from error
    except KeyboardInterrupt as error:
        raise typer.Exit(130) from error
