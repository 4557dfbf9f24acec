"""Several actions per reply, when safe: the rest of a reply's actions, carried out one per step.

With ``max_actions_per_reply`` above 1 a reply may hold a short sequence of actions chosen on one
screen (filling a form's fields). The loop carries out the first at once; each later one is a
step of its own (``Step.sequence``: the reply's step, its place; no model call of its own),
taken from here instead of asking the model, but only while the screen is still the one the
sequence was chosen on. Before each, on the step's fresh capture:

- no window appeared and none closed (a dialog the model never saw would get the keys);
- the focused window is the one the sequence started in, with the same title (a document's
  "modified" mark, ``*todo.txt``, is no change);
- then the loop grounds the action's targets on that capture, as for any action: a target not
  found ends the step as an error;

and after each, its step went well (an error, a refusal of the safety gate, which judges each
action as it runs, or the user's intervention stop it too). When something is off, the rest is
dropped and the next model request says what ran and where it stopped, the actions and the
reason framed as screen content (window titles are), from ``prompts/worker.md``
(``sequence_stopped``). A stop noticed before an action costs no step: that step asks the model.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from agent_s.actions import ActionModel
from agent_s.desktop.base import WindowInfo
from agent_s.grounding import Observation
from agent_s.guards.content import screen_content
from agent_s.loop.collaborators import Collaborator, RequestPoint
from agent_s.loop.draft import Draft
from agent_s.prompting import render
from agent_s.record.step import InReply, Step, call_text

_DETAIL = 300  # characters of a failed action's detail in the report
# a document's "modified" mark around a title: "*todo.txt - Mousepad", "todo.txt •"
_MODIFIED = re.compile(r"^\s*[*●•]\s*|\s*[*●•]\s*$")


def same_title(before: str, after: str) -> bool:
    """Whether two titles of one window name the same thing (a "modified" mark aside)."""
    return _MODIFIED.sub("", before).strip() == _MODIFIED.sub("", after).strip()


@dataclass(frozen=True)
class Assumed:
    """The screen a sequence was chosen on, as far as its later actions depend on it."""

    windows: frozenset[int]
    focused: WindowInfo | None

    @classmethod
    def of(cls, observation: Observation) -> Assumed:
        return cls(frozenset(w.id for w in observation.windows), observation.active_window)

    def changed(self, now: Observation) -> str | None:
        """What differs on ``now`` that the rest of the sequence may depend on, or None."""
        if self.windows and not now.windows:
            return "the open windows could not be read"
        current = {w.id: w for w in now.windows}
        appeared = [w for w in now.windows if w.id not in self.windows]
        if appeared:
            return f"a window appeared: {_name(appeared[0])}"
        closed = sorted(self.windows - set(current))
        if closed:
            return "a window closed" + (
                f": {_name(self.focused)}" if self.focused and self.focused.id in closed else ""
            )
        focused = now.active_window
        if self.focused is None or focused is None:
            return None if self.focused is focused else "the focus moved"
        if focused.id != self.focused.id:
            return f"the focus moved from {_name(self.focused)} to {_name(focused)}"
        if not same_title(self.focused.title, focused.title):
            return f"the title of {_name(self.focused)} changed to {focused.title!r}"
        return None


def _name(window: WindowInfo) -> str:
    return f"{window.title!r} ({window.app})"


class ActionSequence(Collaborator):
    """The actions of the current reply still to carry out (see the module docstring)."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self._queue: list[ActionModel] = []
        self._ran: list[str] = []  # the sequence's actions carried out so far, as calls
        self._place: InReply | None = None  # the last action taken from it
        self._assumed: Assumed | None = None
        self._report: str | None = None  # for the next request

    def begin(
        self, actions: Sequence[ActionModel], observation: Observation, draft: Draft
    ) -> ActionModel:
        """A reply's actions, chosen on ``observation`` at ``draft``'s step: the first, to
        carry out now; the rest wait for the next steps."""
        first, *rest = actions
        self.reset()
        if rest:
            self._queue = rest
            self._place = InReply(first=draft.step.step, index=1, total=len(actions))
            self._assumed = Assumed.of(observation)
            draft.set(sequence=self._place)
        return first

    def next(self, observation: Observation, draft: Draft) -> tuple[ActionModel, str] | None:
        """The sequence's next action for this step, whose screen is ``observation``, with an
        empty reply (the reply is the first step's); None when there is none or the screen
        is no longer the one the sequence assumed (then the next request says so)."""
        if not self._queue or self._place is None or self._assumed is None:
            return None
        why = self._assumed.changed(observation)
        if why is not None:
            draft.add(errors=[f"the rest of the reply of step {self._place.first} was dropped"])
            self._stop(f"before action {self._place.index + 1} {why}")
            return None
        action = self._queue.pop(0)
        self._place = self._place.model_copy(update={"index": self._place.index + 1})
        draft.set(sequence=self._place)
        return action, ""

    def after_step(self, step: Step) -> None:
        if self._place is None or step.sequence != self._place or step.action is None:
            return
        if step.outcome != "ok":  # not found, refused, failed, the user intervened
            detail = step.detail if len(step.detail) <= _DETAIL else step.detail[:_DETAIL] + "…"
            failed = f"{call_text(step.action)} did not go well: {detail}"
            self._stop(f"action {step.sequence.index} ({failed})", failed=step.action)
        elif self._queue:
            self._ran.append(call_text(step.action))
        else:
            self.reset()  # all of it ran: each step's result says how it went

    def notes(self, point: RequestPoint) -> Sequence[str]:
        report, self._report = self._report, None
        return (report,) if report else ()

    def _stop(self, reason: str, failed: ActionModel | None = None) -> None:
        """Drop the rest; the report for the next request says what ran and why not the rest."""
        place = self._place
        if place is None:
            return
        ran = len(self._ran)
        lines = [f"ran: {call}" for call in self._ran]
        lines += [f"failed: {call_text(failed)}"] if failed is not None else []
        lines += [f"not run: {call_text(action)}" for action in self._queue]
        lines.append(f"stopped {reason}")
        stopped = screen_content("the actions of that reply", "\n".join(lines))
        report = render(
            "worker",
            "sequence_stopped",
            first=place.first,
            total=place.total,
            ran=ran,
            stopped=stopped,
        )
        self.reset()
        self._report = report


__all__ = ["ActionSequence", "Assumed", "same_title"]
