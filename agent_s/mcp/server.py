"""agent-s as an MCP server (``agent-s mcp``): other agents and editors call the desktop agent as
tools, over stdio or streamable HTTP on loopback, with the official ``mcp`` SDK.

    server = build_server(McpSettings(flags={"--model": "gpt-4o"}, defaults=RUN_DEFAULTS))
    server.run("stdio")

Tools:

- ``run_task``: do a task (``agent-s run``'s options and budgets: model, provider, grounding,
  max steps, max cost, max seconds, virtual, check, plan) and return the run's result as
  structured output (status, cause, reason, answer, steps, cost, trajectory folder). Settings are
  resolved as ``agent-s run`` resolves them (``agent_s.settings.read``): the call's arguments, then
  the
  flags ``agent-s mcp`` was started with, the ``AGENT_S_*`` variables, the configuration file, and
  ``run``'s defaults (safety ``confirm``, every run recorded). The base URL, the safety mode and
  the record folder are the server's only: a client cannot send the API key elsewhere, lower the
  safety mode, or record where ``read_trajectory`` cannot look. One run at a time.
- ``ground``: where a referring expression is on the server's screen (point, box, source).
- ``screenshot``: the server's screen as a PNG image.
- ``list_trajectories`` / ``read_trajectory``: the record folder's runs; a path outside it (a
  ``..``, an absolute path elsewhere, a symbolic link leading out) is refused.

Approvals the safety mode asks for, the model's ``ask_user`` questions and the ``check`` command
(code the client wants run: judged by the safety gate like the agent's own code) go back to the
client as questions (MCP elicitation): sent mid-call on handshake-era connections, returned as an
``input_required`` result on 2026-07-28 ones (the run waits; the client's retry carries the answer
back). A client that did not declare elicitation cannot answer: approvals are refused (the model is
told; a run that fails after a refusal ends with cause ``refused``, the result naming the action and
why) and a question ends the run as ``needs_input``. Each step is a progress notification.
Problems come back as tool errors whose message names the fix, never a traceback.

Modules: ``mcp_models`` (what the tools take and return), ``mcp_bridge`` (a run's thread, its
questions and progress relayed to the client; the server's state), ``mcp_tools`` (the tools that
only look: ground, screenshot, trajectories), ``mcp_http`` (streamable HTTP on loopback, behind a
bearer token and the Host and Origin checks of ``agent_s.guards.servers``), and here the tools'
definitions.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import anyio
import anyio.to_thread
from mcp.server.mcpserver import Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import InputRequiredResult, ToolAnnotations
from pydantic import Field

from agent_s import __version__
from agent_s.mcp.bridge import AnyContext, Tools
from agent_s.mcp.models import (
    GroundOutcome,
    McpSettings,
    RunOutcome,
    TrajectoryList,
    TrajectoryOutcome,
)
from agent_s.mcp.tools import ground_expression, list_runs, observe, read_run


def build_server(settings: McpSettings) -> MCPServer[Any]:
    """The MCP server with agent-s's tools (see the module docstring). A bad configuration
    file or variable raises ``ConfigError`` here, before anything is served."""
    tools = Tools(settings)

    @contextlib.asynccontextmanager
    async def lifespan(_: MCPServer[Any]) -> AsyncIterator[None]:
        try:
            yield None
        finally:  # runs still going are stopped: their results are written
            await anyio.to_thread.run_sync(tools.stop_all)

    server: MCPServer[Any] = MCPServer(
        "agent-s",
        version=__version__,
        instructions="A desktop agent: run_task does a task on the screen by looking at "
        "screenshots and acting; ground finds an element; screenshot shows the screen.",
        lifespan=lifespan,
        log_level="WARNING",
    )

    @server.tool(annotations=ToolAnnotations(destructive_hint=True, open_world_hint=True))
    async def run_task(
        task: str,
        ctx: AnyContext,
        model: str | None = None,
        provider: str | None = None,
        grounding: str | None = Field(None, description="auto, a11y, ocr, model or native"),
        max_steps: int | None = Field(None, ge=1),
        max_cost: float | None = Field(None, gt=0, description="USD"),
        max_seconds: float | None = Field(None, gt=0, description="wall-time limit"),
        virtual: bool = Field(False, description="run in a fresh virtual desktop of its own"),
        check: str | None = Field(
            None, description="a command run after done (no shell); exit status 0 = verified"
        ),
        plan: str | None = Field(None, description="off, auto or always"),
    ) -> RunOutcome | InputRequiredResult:
        """Do a task on the desktop, step by step (screenshot, model, action), and return how
        it ended: status, reason, answer, steps, cost and the trajectory folder. Actions the
        safety mode holds are asked about (elicitation); unanswerable ones are refused."""
        resumed = tools.resume(ctx)
        if resumed is not None:
            return await tools.drive(resumed, ctx)
        given = {
            "--model": model,
            "--provider": provider,
            "--ground": grounding,
            "--max-steps": max_steps,
            "--max-cost": max_cost,
            "max_seconds": max_seconds,
            "--plan": plan,
        }
        run = tools.start(task, given, virtual, check, ctx)
        return await tools.drive(run, ctx)

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    async def ground(
        expression: str,
        grounding: str = Field("auto", description="auto, a11y, ocr or model"),
    ) -> GroundOutcome:
        """Where is an element on the screen? Give a referring expression ("the Save button");
        get the point to click, the element's box and which grounder found it."""
        if not expression.strip():
            raise ToolError('the expression is empty: describe an element, e.g. "the OK button"')
        return await anyio.to_thread.run_sync(ground_expression, expression, grounding, tools)

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    async def screenshot() -> Image:
        """The screen as it is now, as a PNG image."""
        from agent_s.marks import drawing as marks

        observation = await anyio.to_thread.run_sync(observe, tools.environ, False)
        data = await anyio.to_thread.run_sync(marks.png, observation.screenshot.image)
        return Image(data=data, format="png")

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    async def list_trajectories(limit: int = Field(20, ge=1, le=500)) -> TrajectoryList:
        """The recorded runs, newest first: id, task, status, steps."""
        return await anyio.to_thread.run_sync(list_runs, tools, limit)

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    async def read_trajectory(run: str) -> TrajectoryOutcome:
        """One recorded run, step by step: each action, where it was grounded, the safety
        decision, and the result. ``run``: its id (from list_trajectories or run_task) or its
        folder inside the record folder."""
        return await anyio.to_thread.run_sync(read_run, tools, run)

    return server


__all__ = ["McpSettings", "RunOutcome", "build_server"]
