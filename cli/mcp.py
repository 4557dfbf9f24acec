"""``agent-s mcp``: serve agent-s's tools (run a task, ground, screenshot, trajectories) to MCP
clients, over stdio (the default: a client starts it) or streamable HTTP on 127.0.0.1.

The model, grounding, limits, safety mode and record folder are ``agent-s run``'s settings,
resolved the same way (flags, ``AGENT_S_*`` variables, the configuration file, ``run``'s
defaults); ``run_task`` may change the model, grounding and limits per call. The server itself is
``agent_s.mcp_server``. Exit codes: 0 the client went away, 2 usage or configuration error.
"""

from __future__ import annotations

import socket
from typing import Annotated, Any

import typer

from agent_s.cli import options, output
from agent_s.errors import AgentSError


def _listen(port: int) -> socket.socket:
    """A socket listening on 127.0.0.1 only (port 0: any free port)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError as error:
        sock.close()
        reason = error.strerror or str(error)
        raise ValueError(
            f"--port {port}: cannot listen on 127.0.0.1 ({reason}); pick another"
        ) from None
    sock.listen(64)
    return sock


def _serve_http(server: Any, port: int) -> None:
    import anyio
    import uvicorn

    sock = _listen(port)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    output.console(stderr=True).print(
        f"MCP server (streamable HTTP) at {url}", markup=False, highlight=False, soft_wrap=True
    )
    app = server.streamable_http_app(host="127.0.0.1")
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    anyio.run(lambda: uvicorn.Server(config).serve(sockets=[sock]))


def mcp(
    transport: Annotated[
        str, typer.Option(help="stdio (a client starts agent-s mcp) or http (127.0.0.1 only).")
    ] = "stdio",
    port: Annotated[
        int,
        typer.Option(min=0, max=65535, help="With --transport http: the port (0: any free one)."),
    ] = 8765,
    provider: options.Provider = None,
    model: options.Model = None,
    base_url: options.BaseUrl = None,
    api_key: options.ApiKey = None,
    api_key_file: options.ApiKeyFile = None,
    ground: options.Ground = None,
    ground_url: options.GroundUrl = None,
    ground_model: options.GroundModel = None,
    model_timeout: options.ModelTimeout = None,
    max_steps: Annotated[
        int | None, typer.Option(help="Step limit (default 30; env AGENT_S_MAX_STEPS).")
    ] = None,
    max_cost: Annotated[
        float | None, typer.Option(help="Cost limit in USD (env AGENT_S_MAX_COST).")
    ] = None,
    record: Annotated[
        str | None,
        typer.Option(
            help="Folder for trajectory folders, the one read_trajectory reads (default "
            "~/.local/share/agent-s/runs; env AGENT_S_RECORD_DIR)."
        ),
    ] = None,
    safety: Annotated[
        str | None,
        typer.Option(
            help="auto | confirm | confirm-all | deny-risky (default confirm; env AGENT_S_SAFETY)."
        ),
    ] = None,
) -> None:
    """Serve agent-s to MCP clients: run_task, ground, screenshot, list_trajectories and
    read_trajectory. Approvals go to the client as questions, or are refused."""
    from agent_s.cli.run import RUN_DEFAULTS
    from agent_s.mcp_server import McpSettings, build_server

    err = output.console(stderr=True)
    flags = {
        "--provider": provider,
        "--model": model,
        "--base-url": base_url,
        "--ground": ground,
        "--ground-url": ground_url,
        "--ground-model": ground_model,
        "--model-timeout": model_timeout,
        "--max-steps": max_steps,
        "--max-cost": max_cost,
        "--record": record,
        "--safety": safety,
    }
    try:
        if transport not in ("stdio", "http"):
            raise ValueError(f"--transport {transport}: use stdio or http")
        settings = McpSettings(
            flags=flags, defaults=RUN_DEFAULTS, api_key=options.api_key(api_key, api_key_file)
        )
        server = build_server(settings)
        if transport == "stdio":
            server.run("stdio")
        else:
            _serve_http(server, port)
    except (AgentSError, ValueError) as error:
        err.print(f"error: {output.printable(str(error))}", markup=False, highlight=False)
        raise typer.Exit(2) from error
    except KeyboardInterrupt as error:
        raise typer.Exit(130) from error
