"""Watching a run from a command line: the live view for a virtual desktop, and on the user's
own desktop the input guard with a terminal to resume from and a line while the agent acts.

    control = RunControl()
    with watching(control, env, view=True, guard=False, say=print) as live:
        agent = Agent(model, control=control, on_step=live.on_step if live else None)
        result = agent.run(task)
        if live:
            live.finished(result)

Everything started here ends when the ``with`` block does, on every way out of it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Mapping
from typing import TextIO

from agent_s.loop.control import ControlEvent, RunControl
from agent_s.view.guard import InputGuard
from agent_s.view.server import LiveView

INDICATOR_TEXT = " agent-s is acting: move the mouse or press a key to pause it "
INDICATOR = f"\x1b[7m{INDICATOR_TEXT}\x1b[0m"  # in reverse video
RESUME_HINT = "press Enter to resume, or type stop and Enter to end the run"


@contextlib.contextmanager
def watching(
    control: RunControl,
    env: Mapping[str, str] | None,
    *,
    view: bool,
    guard: bool,
    say: Callable[[str], None],
) -> Iterator[LiveView | None]:
    """The live view of the desktop ``env`` names (``view``), and the input guard on it
    (``guard``); ``say``: a line for the user (the view's URL, how pausing works)."""
    with contextlib.ExitStack() as stack:
        live = None
        if view:
            from agent_s.desktop.choose import open_backend

            screen = open_backend(dict(env) if env is not None else None)
            stack.callback(screen.close)
            live = stack.enter_context(LiveView(control, screen))
            say(f"live view (watch, pause, take over, stop): {live.url}")
            stack.callback(control.subscribe(_saying(say)))
        if guard:
            from agent_s.errors import DisplayUnavailableError

            try:
                stack.enter_context(InputGuard(control, env=env))
            except DisplayUnavailableError as err:  # Wayland, or no X display to watch
                say(f"pausing on your input is not available here: {err}")
            else:
                say(
                    "the agent uses your mouse and keyboard: move the mouse or press a key to "
                    "pause it (--no-pause-on-input turns this off)"
                )
        yield live


def _saying(say: Callable[[str], None]) -> Callable[[ControlEvent], None]:
    """A listener that says each change of the run's state (the page's buttons among them)."""

    def changed(event: ControlEvent) -> None:
        if event.kind == "state":
            say(f"{event.state.replace('_', ' ')}: {event.reason}")

    return changed


def terminal_waiter(stdin: TextIO, stderr: TextIO) -> Callable[[RunControl], None]:
    """A ``RunControl`` waiter that asks on the terminal how to go on after a pause: Enter
    resumes, ``stop`` (or the end of input: nobody can answer) ends the run."""

    def wait(control: RunControl) -> None:
        stderr.write(f"\npaused: {control.reason}; {RESUME_HINT}\n")
        stderr.flush()
        line = stdin.readline()
        if not line:
            control.stop("paused, and the input ended: nobody can resume the run")
        elif line.strip().casefold() in ("stop", "s", "q", "quit"):
            control.stop("stopped at the terminal")
        else:
            control.resume("resumed at the terminal")

    return wait


def terminal_indicator(stderr: TextIO) -> Callable[[ControlEvent], None]:
    """A ``RunControl`` listener that shows ``INDICATOR`` on the terminal's last line while
    the agent acts (nothing when ``stderr`` is not a terminal). Under ``NO_COLOR`` (set and
    not empty) no escape code is written: the plain text, overwritten with spaces after."""
    plain = bool(os.environ.get("NO_COLOR"))
    show_line = f"\r{INDICATOR_TEXT}" if plain else f"\r{INDICATOR}"
    clear_line = f"\r{' ' * len(INDICATOR_TEXT)}\r" if plain else "\r\x1b[K"

    def show(event: ControlEvent) -> None:
        if event.kind != "acting" or not stderr.isatty():
            return
        stderr.write(show_line if event.acting else clear_line)
        stderr.flush()

    return show


__all__ = [
    "INDICATOR",
    "INDICATOR_TEXT",
    "RESUME_HINT",
    "terminal_indicator",
    "terminal_waiter",
    "watching",
]
