"""Watching and steering a run: the live view's page (``server``), the user's input from it
(``inputs``), and, on the user's own desktop, pausing when the user moves the mouse or types
(``guard``). The control itself is the SDK's: ``agent_s.loop.control.RunControl``.

May use: the loop (its control), planning, desktop, guards. Used by: cli, bench.
"""

from agent_s.view.guard import InputGuard
from agent_s.view.server import LiveView

__all__ = ["InputGuard", "LiveView"]
