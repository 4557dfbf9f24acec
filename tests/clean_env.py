"""The environment of an ``agent-s`` process a test starts, written once: this process's
variables without agent-s's own settings (every ``AGENT_S_*``) nor the ones a test names, but
with the test session's memory file and key (``AGENT_S_MEMORY_DB``, ``AGENT_S_MEMORY_KEY``, set
by conftest). So a run learns in the session's memory, which conftest empties before each test,
never in the HOME of whoever runs the tests, and no test replays what another one taught it
(agent_s.replay.reuse reuses every verified skill by default). A test that wants another
memory sets the variables itself."""

from __future__ import annotations

import os

MEMORY_VARIABLES = ("AGENT_S_MEMORY_DB", "AGENT_S_MEMORY_KEY")


def clean_env(*drop: str) -> dict[str, str]:
    """This process's environment without ``AGENT_S_*`` (but the memory's two) and ``drop``."""
    return {
        k: v
        for k, v in os.environ.items()
        if (k in MEMORY_VARIABLES or not k.startswith("AGENT_S_")) and k not in drop
    }
