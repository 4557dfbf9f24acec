"""Every getter, by the name OSWorld's task files give it: the ones in ``getters`` and those of
each kind's module (``browser_getters``, ``desktop_getters``, ``relative_dates``), which add
theirs to ``GETTERS`` when imported. Whatever looks a getter up by name imports it from here."""

from __future__ import annotations

from agent_s.bench import browser_getters, desktop_getters, relative_dates
from agent_s.bench.getters import GETTERS

KINDS = (browser_getters, desktop_getters, relative_dates)  # each added its getters on import

__all__ = ["GETTERS", "KINDS"]
