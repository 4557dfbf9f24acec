"""The command line (``agent-s``, typer and rich): a thin layer over the SDK, one module per
command (``run``, ``ground``, ``doctor``, ``replay``, ``workflow``, ``report``, ``export``,
``memory``, ``practice``, ``bench``, ``mcp``, ``model``), with the options they share in
``options`` (groups of options taken as one parameter: ``grouped``) and what they print in
``output``.

May use: every package of agent_s. Nothing imports it but its entry point.
"""
