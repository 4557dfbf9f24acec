"""The start-up sweep: what agent-s processes that were killed left behind (their virtual
desktops, the keys and buttons they held down), ended when the next one starts.

The notes it reads are written by ``_watchdog`` (virtual desktops) and ``_held`` (keys held
down), under ``agent_s.lifecycle.state_dir()``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agent_s import lifecycle
from agent_s.desktop import _held, _watchdog


@dataclass(frozen=True)
class Swept:
    """What ``sweep()`` cleaned up after dead agents."""

    desktops: tuple[str, ...] = ()  # the displays of the desktops ended
    released: tuple[str, ...] = ()  # "KEY on DISPLAY", "button N on DISPLAY"

    def __bool__(self) -> bool:
        return bool(self.desktops or self.released)

    def describe(self) -> str:
        parts = []
        if self.desktops:
            parts.append(f"ended virtual desktop(s) {', '.join(self.desktops)}")
        if self.released:
            parts.append(f"released {', '.join(self.released)}")
        return "; ".join(parts)


def sweep(folder: Path | None = None) -> Swept:
    """End what dead agents left: their virtual desktops (processes and temp folders) and the
    keys and buttons they held down. Quick when there is nothing to do (one directory read)."""
    folder = lifecycle.state_dir() if folder is None else folder
    if not folder.is_dir():
        return Swept()
    return Swept(tuple(_watchdog.reap_stale(folder)), tuple(_held.release_stale(folder)))


__all__ = ["Swept", "sweep"]
