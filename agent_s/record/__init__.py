"""Record: what a run produced, as typed data and on disk.

``step`` (one ``Step`` per action: what was seen, sent, answered, grounded, decided, done),
``result`` (how a run ended: ``RunResult``, ``RunStatus``, the evidence and the cost),
``trajectory`` (the trajectory folder written as the run goes, and read back).

May use: actions, models, desktop, guards, coding (result types), marks, grounding (result
types). Used by: the loop, memory, planning, report, replay, bench, mcp.
"""
