"""Old import paths of modules that moved into packages, kept for one release.

``agent_s.agent`` is now ``agent_s.loop.agent``, ``agent_s.config`` ``agent_s.settings.config``
and so on (``MOVED``). Importing an old path still works and gives the module at its new place,
with a ``DeprecationWarning`` naming it; a package that took the name of a module it replaced
(``agent_s.safety``, ``agent_s.report``, ...) hands out that module's names the same way
(``forward``). Nothing in agent-s itself uses an old path. Standard library only.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

MOVED = {
    "agent_s.agent": "agent_s.loop.agent",
    "agent_s.act": "agent_s.loop.act",
    "agent_s.generation": "agent_s.loop.generation",
    "agent_s.request": "agent_s.loop.request",
    "agent_s.context": "agent_s.loop.context",
    "agent_s.control": "agent_s.loop.control",
    "agent_s.step": "agent_s.record.step",
    "agent_s.result": "agent_s.record.result",
    "agent_s.trajectory": "agent_s.record.trajectory",
    "agent_s.effects": "agent_s.safety.effects",
    "agent_s.leaks": "agent_s.safety.leaks",
    "agent_s.redact": "agent_s.guards.redaction",
    "agent_s.code_agent": "agent_s.coding.agent",
    "agent_s.code_runner": "agent_s.coding.runner",
    "agent_s.containment": "agent_s.coding.containment",
    "agent_s._launcher": "agent_s.coding.launcher",
    "agent_s.manager": "agent_s.planning.manager",
    "agent_s.practice_worker": "agent_s.practice.worker",
    "agent_s.curriculum": "agent_s.practice.curriculum",
    "agent_s.setofmarks": "agent_s.marks.setofmarks",
    "agent_s.report_bench": "agent_s.report.bench",
    "agent_s.report_bestof": "agent_s.report.bestof",
    "agent_s.report_html": "agent_s.report.html",
    "agent_s.report_overlay": "agent_s.report.overlay",
    "agent_s.report_plan": "agent_s.report.plan",
    "agent_s.report_steps": "agent_s.report.steps",
    "agent_s.export": "agent_s.report.export",
    "agent_s.config": "agent_s.settings.config",
    "agent_s.mcp_server": "agent_s.mcp.server",
    "agent_s.mcp_tools": "agent_s.mcp.tools",
    "agent_s.mcp_bridge": "agent_s.mcp.bridge",
    "agent_s.mcp_models": "agent_s.mcp.models",
    "agent_s.mcp_http": "agent_s.mcp.http",
    "agent_s.workflow": "agent_s.replay.workflow",
}


def _warn(old: str, new: str) -> None:
    warnings.warn(
        f"{old} moved to {new}: import it from there (the old path goes in the next release)",
        DeprecationWarning,
        stacklevel=3,
    )


class _Alias(importlib.abc.Loader):
    """Loads an old path as the module at its new place (the same object, not a copy)."""

    def __init__(self, new: str) -> None:
        self.new = new

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None  # a placeholder: exec_module puts the real module in its place

    def exec_module(self, module: ModuleType) -> None:
        _warn(module.__name__, self.new)
        sys.modules[module.__name__] = importlib.import_module(self.new)


class MovedFinder(importlib.abc.MetaPathFinder):
    """Finds the old paths in ``MOVED`` (asked last: a real module of that name wins)."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        new = MOVED.get(fullname)
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Alias(new))


def install() -> None:
    """Put the finder at the end of ``sys.meta_path`` (once)."""
    if not any(isinstance(f, MovedFinder) for f in sys.meta_path):
        sys.meta_path.append(MovedFinder())


def forward(package: str, *modules: str) -> Callable[[str], Any]:
    """A ``__getattr__`` for ``package``, which took the name of an old module's path: a name
    the package does not have is looked up in ``modules`` (where that module's names went), in
    order, with a warning."""

    def __getattr__(name: str) -> Any:
        if name.startswith("__") or importlib.util.find_spec(f"{package}.{name}") is not None:
            raise AttributeError(name)  # a submodule of the package: imported as such
        for module in modules:
            found = importlib.import_module(module)
            if hasattr(found, name):
                _warn(f"{package}.{name}", f"{module}.{name}")
                return getattr(found, name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
