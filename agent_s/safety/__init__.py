"""The gate: what an action will do to the desktop and whether it may, before it runs.

``gate`` (``SafetyGate``: modes, rules, approvals), ``effects`` (an action's effects read from
its plan), ``leaks`` (secrets and new web hosts that never leave without the user's word).
Model-written code is contained by ``agent_s.coding``; secrets are redacted by
``agent_s.guards.redaction``.

May use: actions, desktop, settings, guards, marks. Used by: the loop, the code agent, replay,
practice, mcp.
"""

from agent_s._moved import forward

# what the old module of this name held, for one release (agent_s._moved)
__getattr__ = forward(__name__, "agent_s.safety.gate")
