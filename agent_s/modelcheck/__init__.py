"""`agent-s model check`: does a model endpoint work for agent-s, and with which settings.

A short battery of calls (``battery``) shows the model real application screens shipped with
the package (``screens``: captured on a virtual desktop, with the truth boxes of their
controls) and asks what a run would ask: can it see, can it act (its replies read as our
actions, per style), can it point (as a grounding model and as a native worker, with the
coordinate convention its answers fit best: ``fit``), how fast and at what cost. The verdict
(``verdict``) says, per use, whether it works and with which `agent-s run` settings;
``profile`` writes the convention found into the configuration file as a model profile.

    battery = Battery(provider, profile)
    endpoint = Endpoint("openai-compatible", "qwen2.5vl", url)
    report = Report.of(endpoint, battery.plan(), battery.run())
    print("\\n".join(report.lines()))

May use: grounding (the transform chain, reply parsing, the grounding query), actions (the reply
parser), coding (the code reply parser), planning (the verifier's verdict), prompting,
settings, models, images, desktop (the Screenshot type). Used by: the CLI (``agent-s model``).
"""

from agent_s.modelcheck.battery import Battery, Plan, Results
from agent_s.modelcheck.profile import save_profile
from agent_s.modelcheck.verdict import Endpoint, Report, Use

__all__ = ["Battery", "Endpoint", "Plan", "Report", "Results", "Use", "save_profile"]
