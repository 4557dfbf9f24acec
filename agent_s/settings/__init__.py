"""Settings: one typed model of every setting, read once at the edge.

``config`` (the configuration objects the SDK runs with: ``AgentConfig``, ``ModelConfig``,
``GroundingConfig``, ...), ``read`` (``load_settings``: the configuration file, the
``AGENT_S_*`` variables and explicit values, in that order of precedence).

May use: models (endpoints, profiles), desktop, keys, errors. Used by: everything above.
"""

from agent_s._moved import forward
from agent_s.settings import read as _read  # noqa: F401 - installs the reader of from_env

# what the old module of this name held, for one release (agent_s._moved)
__getattr__ = forward(__name__, "agent_s.settings.read")
