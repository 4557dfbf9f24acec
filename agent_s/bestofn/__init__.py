"""Best-of-N on live virtual desktops: N attempts of one task from the same starting state,
each on its own desktop and HOME, a behaviour narrative per attempt, a judge that picks one.

    from agent_s.bestofn import BestOfConfig, run_best_of
    result = run_best_of(task, settings, BestOfConfig(3), api_key=key)

Modules: ``config`` (how many, how judged, budgets), ``narrative`` (what each step was seen to
do, without a model call), ``judge`` (the model's pick, comparative or tournament), ``attempt``
(one attempt's process), ``live`` (``agent-s run --virtual --best-of N``), ``bench`` (``agent-s
bench run --best-of N``), ``select`` (agreement, judging, the ``BestOf`` record).

May use: bench, the loop and everything below them. Used by: bench, cli (its command line is
``agent_s.cli.bestof``).
"""

from agent_s.bestofn.config import BestOfConfig
from agent_s.bestofn.judge import Candidate, Judge, Verdict, parse_pick
from agent_s.bestofn.live import run_best_of
from agent_s.bestofn.narrative import Narrative, narrate

__all__ = [
    "BestOfConfig",
    "Candidate",
    "Judge",
    "Narrative",
    "Verdict",
    "narrate",
    "parse_pick",
    "run_best_of",
]
