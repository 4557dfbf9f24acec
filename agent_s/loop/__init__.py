"""The loop: one task, step by step, until done, impossible or out of budget.

The stages in the order data flows: task -> observe (``observe``: the screenshot, the windows;
the picture the model is sent) -> request (``request``, ``context``: what the model is sent) ->
model (``calls``: every model call, retried and metered in one place; ``generation``: one reply
read into one typed action, or sent back with why not) -> parse (``agent_s.actions``) -> ground
(``agent_s.grounding``) -> gate (``agent_s.safety``) -> act (``act``) -> record
(``agent_s.record``) -> learn (``agent_s.memory``).

``agent`` is the short loop that calls them, building each step in a ``draft``. Recording,
memory, set-of-marks, run control (``control``), a reply's later actions (``sequence``: several
actions per reply, each a step checked against a fresh capture) and refusals are collaborators
it calls at named points (``collaborators``); planning runs the loop subtask by subtask through
``planhost``.

May use: every lower package (actions, models, desktop, settings, guards, grounding, safety,
coding, marks, planning, memory, record). Used by: the applications (cli, mcp, bench, bestofn,
practice, replay, compat).
"""
