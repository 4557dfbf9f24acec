"""The loop: one task, step by step, until done, impossible or out of budget.

The stages in the order data flows: task -> observe (a screenshot, the windows, the
accessibility snapshot) -> request (``request``, ``context``: what the model is sent) -> model
(``generation``: one reply read into one typed action, or sent back with why not) -> parse ->
ground (``agent_s.grounding``) -> gate (``agent_s.safety``) -> act (``act``) -> record
(``agent_s.record``) -> learn (``agent_s.memory``). ``agent`` is the short loop that calls them;
planning, memory, set-of-marks and run control (``control``) are collaborators it calls at named
points.

May use: every lower package (actions, models, desktop, settings, guards, grounding, safety,
coding, marks, planning, memory, record). Used by: the applications (cli, mcp, bench, bestofn,
practice, replay, compat).
"""
