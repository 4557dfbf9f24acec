"""The MCP server (``agent-s mcp``): agent-s as tools an MCP client calls.

``server`` (the tools: ``run_task``, ``ground``, ``screenshot``, ``list_trajectories``,
``read_trajectory``), ``bridge`` (a run for a tool call: settings, desktop, approvals through
the client), ``tools`` (the read-only tools), ``models`` (their typed results), ``http`` (the
streamable HTTP transport behind a token, on loopback).

May use: the loop, grounding, record, safety, settings, desktop, guards, marks. Used by: cli.
"""
