"""agent-s: a screenshot-driven desktop automation agent.

    from agent_s import Agent, ModelConfig, RunResult

    agent = Agent(ModelConfig.from_env(provider="anthropic", model="claude-sonnet-4-5"))
    result: RunResult = agent.run("Open mousepad and type hello")

Names are imported on first use, so ``import agent_s`` needs neither a display nor the vendor SDKs.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_s import _moved

__version__ = "0.1.0"


class _Checkout(importlib.abc.MetaPathFinder):
    """``agent_s.cli``, ``agent_s.grounding`` and ``agent_s.prompts`` in a source checkout: the
    folders cli/, grounding/ and prompts/ beside agent_s/ (those three names only: nothing else
    of the checkout becomes part of the package)."""

    def __init__(self, top: Path) -> None:
        self.top = top

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        parent, _, name = fullname.rpartition(".")
        if parent != __name__ or name not in _SIBLINGS:
            return None
        folder = self.top / name
        init = folder / "__init__.py"
        return importlib.util.spec_from_file_location(
            fullname, init, submodule_search_locations=[str(folder)]
        )


_SIBLINGS = ("cli", "grounding", "prompts")


def _checkout_subpackages() -> None:
    """In a source checkout, find ``agent_s.cli``/``.grounding``/``.prompts`` beside agent_s/.

    The repository keeps cli/, grounding/ and prompts/ at its top level (the design card's
    layout) and installs them under ``agent_s``. When ``agent_s`` is imported from a checkout
    (``python -m`` or ``python -c`` run inside it puts the checkout first on sys.path), the
    checkout's folders are found for those subpackages too. An installed package has no such
    siblings, so there this does nothing.
    """
    top = Path(__file__).resolve().parent.parent
    checkout = (top / "pyproject.toml").is_file() and (top / "grounding" / "__init__.py").is_file()
    if checkout and not any(isinstance(f, _Checkout) for f in sys.meta_path):
        sys.meta_path.append(_Checkout(top))


_checkout_subpackages()
_moved.install()  # the old module paths of agent_s._moved.MOVED, for one release

_HOME = {
    "Agent": "agent_s.loop.agent",
    "Step": "agent_s.record.step",
    "StepReport": "agent_s.record.step",
    "AgentConfig": "agent_s.settings.config",
    "ConfigError": "agent_s.settings.config",
    "GroundingConfig": "agent_s.settings.config",
    "ModelConfig": "agent_s.settings.config",
    "CommandCheck": "agent_s.record.result",
    "RunResult": "agent_s.record.result",
    "RunStatus": "agent_s.record.result",
    "load_trajectory": "agent_s.record.trajectory",
}
__all__ = [
    "Agent",
    "AgentConfig",
    "CommandCheck",
    "ConfigError",
    "GroundingConfig",
    "ModelConfig",
    "RunResult",
    "RunStatus",
    "Step",
    "StepReport",
    "__version__",
    "load_trajectory",
]


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if TYPE_CHECKING:
    from agent_s.loop.agent import Agent
    from agent_s.record.result import CommandCheck, RunResult, RunStatus
    from agent_s.record.step import Step, StepReport
    from agent_s.record.trajectory import load_trajectory
    from agent_s.settings.config import AgentConfig, ConfigError, GroundingConfig, ModelConfig
