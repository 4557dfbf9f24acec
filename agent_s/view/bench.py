"""The live view of one benchmark task (``agent-s bench run --view TASK_ID``).

The task runs in a worker process of its own (``agent_s.bench.worker``) on its own virtual
desktop, so the page is served there: ``bench run`` names the task in ``AGENT_S_VIEW_TASK``
(the workers inherit it), the agent policy of that task opens a ``TaskView``, which serves the
page and writes its URL to ``view.url`` in the task's folder (readable by the user only), and
``bench run`` prints the URL once that file appears. The file goes when the task ends.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent_s.desktop.base import DesktopBackend
from agent_s.guards.files import write_text
from agent_s.loop.control import RunControl
from agent_s.view.server import LiveView

VIEW_TASK_VAR = "AGENT_S_VIEW_TASK"
URL_FILE = "view.url"


class TaskView:
    """The page of the task being run here, or nothing (``open`` returns None) when the task is
    not the one ``AGENT_S_VIEW_TASK`` names."""

    def __init__(self, live: LiveView, screen: Any, folder: Path) -> None:
        self.live = live
        self.control = live.control
        self._screen = screen
        self._file = folder / URL_FILE

    @classmethod
    def open(cls, task_id: str, backend: DesktopBackend, folder: Path) -> TaskView | None:
        if os.environ.get(VIEW_TASK_VAR) != task_id:
            return None
        from agent_s.desktop.choose import open_backend

        env = backend.env
        screen = open_backend(dict(env) if env is not None else None)  # its own connection
        live = LiveView(RunControl(), screen).start()
        view = cls(live, screen, folder)
        write_text(view._file, live.url + "\n", mode=0o600)  # no link followed: guards.files
        sys.stderr.write(f"live view of {task_id}: {live.url}\n")
        return view

    def on_step(self, then: Callable[[Any], None]) -> Callable[[Any], None]:
        """A step callback that calls ``then`` and shows the step on the page."""

        def on_step(step: Any) -> None:
            then(step)
            self.live.on_step(step)

        return on_step

    def close(self) -> None:
        self._file.unlink(missing_ok=True)
        self.live.close()
        with contextlib.suppress(Exception):
            self._screen.close()


def announce(folder: Path, say: Callable[[str], None], timeout: float = 600.0) -> threading.Thread:
    """Wait (in a thread) for the task in ``folder`` to serve its page, then ``say`` its URL."""

    def wait() -> None:
        deadline, started = time.monotonic() + timeout, time.time() - 1
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                path = folder / URL_FILE
                url = path.read_text(encoding="utf-8").strip()
                if url and path.stat().st_mtime >= started:  # not one a killed worker left
                    say(url)
                    return
            time.sleep(0.2)

    thread = threading.Thread(target=wait, name="agent-s-view-url", daemon=True)
    thread.start()
    return thread


__all__ = ["URL_FILE", "VIEW_TASK_VAR", "TaskView", "announce"]
