"""Steering a run from outside its loop: pause, take over, hand back, stop (thread-safe).

    control = RunControl()
    agent = Agent(model, control=control)
    threading.Thread(target=agent.run, args=("Open mousepad",)).start()
    control.pause()        # the loop stops before its next step: no model call while paused
    control.resume()
    control.take_over()    # the user drives the desktop; the agent waits
    control.hand_back()    # the agent resumes from a fresh screenshot, told that the user acted
    control.stop()         # the run ends as ``cancelled`` (its result is written)

The agent calls ``checkpoint()`` before each step: it waits while the run is paused or taken
over, raises ``RunEnded`` (status ``cancelled``) once stopped, and returns a line for the next
request when the user acted in between. ``before_action()`` is called between the model's reply
and carrying the action out: when the user intervened while the model was thinking (took over,
or used the mouse or keyboard of the agent's own desktop: ``agent_s.view.guard``), it waits
like ``checkpoint`` and says so, and the action, planned on a screen that is gone, is not
carried out. A plain pause lets the step in progress finish. ``acting()`` brackets what the
agent does to the desktop, so a watcher can tell the agent's input from the user's.

Listeners (``subscribe``) hear every change of state as a ``ControlEvent`` (the live view's
page, the terminal line), on the thread that made the change.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal

from agent_s.record.result import RunEnded, RunStatus

State = Literal["running", "paused", "taken_over", "stopped"]
Command = Literal["pause", "resume", "take_over", "hand_back", "stop"]
COMMANDS: tuple[Command, ...] = ("pause", "resume", "take_over", "hand_back", "stop")

#: What the model is told, in its next request, after the user used the desktop.
USER_ACTED = (
    "Note: the user paused you and used the desktop themselves since your last action "
    "({what}). The screenshot above is new: look at it afresh before you act, and do not "
    "undo what the user did."
)


_REASONS = {
    "pause": "paused",
    "resume": "resumed",
    "take_over": "the user took over",
    "hand_back": "handed back",
    "stop": "stopped by the user",
}


@dataclass(frozen=True)
class ControlEvent:
    """A change of state: ``kind`` is ``state`` (``state`` is the new one) or ``acting``
    (``acting`` True as the agent starts acting on the desktop, False as it ends)."""

    kind: Literal["state", "acting"]
    state: State
    reason: str = ""
    acting: bool = False


class RunControl:
    """Pause / resume / take over / hand back / stop one run at a time (see the module
    docstring). Every method may be called from any thread."""

    def __init__(self, waiter: Callable[[RunControl], None] | None = None) -> None:
        """``waiter``: called on the agent's thread, again and again, while the run waits (a
        terminal asks "press Enter to resume" and calls ``resume``); None: wait to be told."""
        self.waiter = waiter
        self._cond = threading.Condition()
        self._state: State = "running"
        self._reason = ""
        self._acted: list[str] = []  # how the user intervened since the agent last looked
        self._acting = False
        self._listeners: list[Callable[[ControlEvent], None]] = []

    # -- reading ------

    @property
    def state(self) -> State:
        with self._cond:
            return self._state

    @property
    def reason(self) -> str:
        """Why the run is in its state (``"you moved the mouse"``, ``"paused from the view"``)."""
        with self._cond:
            return self._reason

    @property
    def is_acting(self) -> bool:
        """True while the agent acts on the desktop (inside ``acting()``)."""
        with self._cond:
            return self._acting

    def subscribe(self, listener: Callable[[ControlEvent], None]) -> Callable[[], None]:
        """Hear every change; returns the function that stops it."""
        with self._cond:
            self._listeners.append(listener)

        def unsubscribe() -> None:
            with self._cond, contextlib.suppress(ValueError):
                self._listeners.remove(listener)

        return unsubscribe

    # -- commands ------

    def command(self, name: str, reason: str = "") -> State:
        """One of ``COMMANDS`` by name (the view's buttons); ValueError for any other."""
        commands: dict[str, Callable[[str], None]] = {
            "pause": self.pause,
            "resume": self.resume,
            "take_over": self.take_over,
            "hand_back": self.hand_back,
            "stop": self.stop,
        }
        if name not in commands:
            raise ValueError(f"unknown command {name!r}: one of {', '.join(COMMANDS)}")
        commands[name](reason or _REASONS[name])
        return self.state

    def pause(self, reason: str = "paused") -> None:
        """Stop before the next step (the step in progress finishes)."""
        self._change(("running",), "paused", reason)

    def resume(self, reason: str = "resumed") -> None:
        """Go on after a pause (or a take-over: like ``hand_back``)."""
        self._change(("paused", "taken_over"), "running", reason)

    def take_over(self, reason: str = "the user took over") -> None:
        """The user drives the desktop: the agent waits, and does not carry out an action it
        planned before."""
        self._change(("running", "paused"), "taken_over", reason, acted="took over the desktop")

    def hand_back(self, reason: str = "handed back") -> None:
        """The agent goes on from a fresh screenshot, told that the user acted."""
        self._change(("taken_over", "paused"), "running", reason)

    def stop(self, reason: str = "stopped by the user") -> None:
        """End the run as ``cancelled`` at its next check."""
        self._change(("running", "paused", "taken_over"), "stopped", reason)

    def user_input(self, what: str) -> None:
        """Input the agent did not make (``what``: ``"you moved the mouse"``): pause at once;
        the action being planned is not carried out."""
        with self._cond:
            if self._state == "stopped" or self._acting:
                return
            if what not in self._acted:
                self._acted.append(what)
        self._change(("running",), "paused", what)

    def _change(
        self, allowed: tuple[State, ...], to: State, reason: str, *, acted: str | None = None
    ) -> None:
        with self._cond:
            if self._state not in allowed:
                return
            self._state, self._reason = to, reason
            if acted is not None and acted not in self._acted:
                self._acted.append(acted)
            self._cond.notify_all()
            listeners = list(self._listeners)
        event = ControlEvent("state", to, reason)
        for listener in listeners:
            listener(event)

    # -- the agent's side ------

    def _wait(self) -> None:
        """Wait while paused or taken over (asking the waiter, if any); raise once stopped."""
        while True:
            with self._cond:
                if self._state == "stopped":
                    raise RunEnded(
                        f"cancelled: {self._reason}",
                        status=RunStatus.CANCELLED,
                        cause="interrupted",
                    )
                if self._state == "running":
                    return
                waiter = self.waiter
                if waiter is None:
                    self._cond.wait(0.5)  # a timeout: Ctrl-C is seen while waiting
                    continue
            waiter(self)

    def _note(self) -> str | None:
        if not self._acted:
            return None
        what, self._acted = "; ".join(self._acted), []
        return USER_ACTED.format(what=what)

    def checkpoint(self) -> str | None:
        """Before a step: wait while paused or taken over; ``RunEnded`` (cancelled) once
        stopped; the line for the next request when the user acted, else None."""
        self._wait()
        with self._cond:
            return self._note()

    def before_action(self) -> str | None:
        """Before carrying out an action: None when nobody intervened since the agent looked
        (the action goes ahead, even while a plain pause waits for the step's end); else wait
        until the user hands back, and the line for the next request (the action is dropped)."""
        with self._cond:
            if self._state != "stopped" and not self._acted:
                return None
        self._wait()
        with self._cond:
            return self._note()

    @contextlib.contextmanager
    def acting(self) -> Iterator[None]:
        """Brackets the agent's own input to the desktop."""
        self._set_acting(True)
        try:
            yield
        finally:
            self._set_acting(False)

    def _set_acting(self, acting: bool) -> None:
        with self._cond:
            self._acting = acting
            state, listeners = self._state, list(self._listeners)
        event = ControlEvent("acting", state, acting=acting)
        for listener in listeners:
            listener(event)


__all__ = ["COMMANDS", "USER_ACTED", "Command", "ControlEvent", "RunControl", "State"]
