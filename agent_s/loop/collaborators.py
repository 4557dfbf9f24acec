"""The features the loop calls at named points, so that a new one is a collaborator, not a
branch in the loop.

The points, in the order of a step and a run (each default does nothing):

- ``reset()``: the last task is forgotten; ``started(task)``: a task begins;
- ``lead(agent, postcondition)``: once, as ``run`` begins: steps carried out before the model
  is asked (a stored workflow replayed, ``agent_s.replay.reuse``); how the run ends when
  they finished it, or None for the model to carry on;
- ``before_step()``: between steps (run control waits while paused or taken over);
- ``picture(observation, image, draft)``: the screenshot about to be sent (set-of-marks draws
  its marks on it);
- ``notes(point)``: text sections for the worker's request, as data (memory on the first
  request, the marks listed, the note that the user used the desktop);
- ``check(action)``: the parsed action, before it is grounded (a mark not shown is an invalid
  reply);
- ``before_action()``: why not to carry the action out now (the user intervened), or None;
- ``acting(inputs)``: brackets the action when it sends input to the desktop;
- ``after_step(step)``: the step as recorded;
- ``ending(ending)``: how the run ends, before its result is made (a failure right after a
  refused action is the refusal's doing);
- ``ended(result, steps, events)``: the run has its result (the trajectory's ``result.json``
  is written, then memory learns).

Grounding is the locator's; set-of-marks wraps it (``MarkedLocator``) to resolve ``mark=N``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PIL import Image

from agent_s.actions import ActionModel, Target
from agent_s.grounding import Located, Locator, NotLocated, Observation
from agent_s.guards.content import screen_content
from agent_s.guards.redaction import Redactor
from agent_s.images import EncodedImage, ImageSpec
from agent_s.loop.control import RunControl
from agent_s.loop.draft import Draft
from agent_s.marks.setofmarks import Marker, MarkTable, check_marks
from agent_s.marks.setofmarks import locate as locate_marked
from agent_s.memory.runmemory import RunMemory
from agent_s.prompting import mark_list
from agent_s.record.result import Ending, Postcondition, Refusal, RunResult, Tally
from agent_s.record.step import Step
from agent_s.record.trajectory import TrajectoryWriter

if TYPE_CHECKING:
    from agent_s.loop.agent import Agent

_EXTENSIONS = {"image/png": ".png", "image/jpeg": ".jpg", "image/webp": ".webp"}


@dataclass(frozen=True)
class RequestPoint:
    """Where the worker's request stands: ``first`` (no step taken yet and no plan made),
    the task, the run's folder and the steps taken."""

    task: str
    first: bool
    folder: Path | None
    steps_taken: int


class Collaborator:
    """A feature at the loop's named points (see the module docstring)."""

    def reset(self) -> None:
        return None

    def started(self, task: str) -> None:
        return None

    def lead(self, agent: Agent, postcondition: Postcondition | None) -> Ending | None:
        return None

    def before_step(self) -> None:
        return None

    def picture(self, observation: Observation, image: Image.Image, draft: Draft) -> Image.Image:
        return image

    def notes(self, point: RequestPoint) -> Sequence[str]:
        return ()

    def check(self, action: ActionModel) -> None:
        return None

    def before_action(self) -> str | None:
        return None

    def acting(self, inputs: bool) -> AbstractContextManager[None]:
        return contextlib.nullcontext()

    def after_step(self, step: Step) -> None:
        return None

    def ending(self, ending: Ending) -> Ending:
        return ending

    def ended(self, result: RunResult, steps: Sequence[Step], events: Sequence[Any]) -> None:
        return None


class Collaborators(Collaborator):
    """Several collaborators as one, called in order at each point."""

    def __init__(self, members: Sequence[Collaborator]) -> None:
        self.members = tuple(members)

    def reset(self) -> None:
        for member in self.members:
            member.reset()

    def started(self, task: str) -> None:
        for member in self.members:
            member.started(task)

    def lead(self, agent: Agent, postcondition: Postcondition | None) -> Ending | None:
        for member in self.members:
            if (ending := member.lead(agent, postcondition)) is not None:
                return ending
        return None

    def before_step(self) -> None:
        for member in self.members:
            member.before_step()

    def picture(self, observation: Observation, image: Image.Image, draft: Draft) -> Image.Image:
        for member in self.members:
            image = member.picture(observation, image, draft)
        return image

    def notes(self, point: RequestPoint) -> Sequence[str]:
        return [note for member in self.members for note in member.notes(point)]

    def check(self, action: ActionModel) -> None:
        for member in self.members:
            member.check(action)

    def before_action(self) -> str | None:
        for member in self.members:
            if (why := member.before_action()) is not None:
                return why
        return None

    @contextlib.contextmanager
    def acting(self, inputs: bool) -> Iterator[None]:
        with contextlib.ExitStack() as stack:
            for member in self.members:
                stack.enter_context(member.acting(inputs))
            yield

    def after_step(self, step: Step) -> None:
        for member in self.members:
            member.after_step(step)

    def ending(self, ending: Ending) -> Ending:
        for member in self.members:
            ending = member.ending(ending)
        return ending

    def ended(self, result: RunResult, steps: Sequence[Step], events: Sequence[Any]) -> None:
        for member in self.members:
            member.ended(result, steps, events)


class Control(Collaborator):
    """Run control (``agent_s.loop.control``): waits between steps while paused or taken
    over, drops an action planned on a screen the user changed, brackets the agent's input,
    and tells the model, in its next request, that the user used the desktop."""

    def __init__(self, control: RunControl) -> None:
        self.control = control
        self.note: str | None = None

    def reset(self) -> None:
        self.note = None

    def before_step(self) -> None:
        if note := self.control.checkpoint():
            self.note = note

    def notes(self, point: RequestPoint) -> Sequence[str]:
        note, self.note = self.note, None
        return (note,) if note else ()

    def before_action(self) -> str | None:
        if note := self.control.before_action():
            self.note = note  # the screen it was planned on is gone
            return "not carried out: the user used the desktop meanwhile"
        return None

    def acting(self, inputs: bool) -> AbstractContextManager[None]:
        # while the agent sends input the user's is not told from it; a wait sends none
        return self.control.acting() if inputs else contextlib.nullcontext()


class Remembering(Collaborator):
    """Memory (``agent_s.memory``): what earlier runs left, in the first worker request of a
    task that is not planned (the planner and the code agent ask ``recall`` themselves), and
    learning from the run's steps once it ended."""

    def __init__(self, memory: RunMemory, redactor: Redactor) -> None:
        self.memory, self.redactor = memory, redactor

    def recall(self, role: str, query: str, purpose: str, folder: Path | None, step: int) -> str:
        """``role``'s memory section for ``query`` ("" without relevant entries), framed as
        screen content: what earlier runs saw and wrote is content, not instructions."""
        found = self.memory.section(role, query, purpose, folder=folder, after_step=step)
        return self.redactor.text(screen_content("memory", found)) if found else ""

    def notes(self, point: RequestPoint) -> Sequence[str]:
        if not point.first:
            return ()
        found = self.recall("planner", point.task, "worker", point.folder, point.steps_taken)
        return (found,) if found else ()

    def ended(self, result: RunResult, steps: Sequence[Step], events: Sequence[Any]) -> None:
        self.memory.learn(result, steps, events, self.redactor.data)


class Marks(Collaborator):
    """Set-of-marks (``agent_s.marks.setofmarks``): numbered marks on the screenshot sent and
    their list in the request when on (``marker``); always, a reply naming a mark the screen
    did not show is sent back as invalid."""

    def __init__(self, marker: Marker | None, spec: ImageSpec, redactor: Redactor) -> None:
        self.marker, self.spec, self.redactor = marker, spec, redactor
        self.table: MarkTable | None = None  # the current step's

    def picture(self, observation: Observation, image: Image.Image, draft: Draft) -> Image.Image:
        self.table = None
        if self.marker is None:
            return image
        with draft.timed("marks"):
            self.table = self.marker.table(observation)
            image = self.marker.picture(observation, self.table, self.spec)
        draft.set(marks=self.table.entries)
        return image

    def notes(self, point: RequestPoint) -> Sequence[str]:
        if self.table is None:
            return ()
        return (self.redactor.text(mark_list(self.table.lines(), self.table.total)),)

    def check(self, action: ActionModel) -> None:
        check_marks(action, self.table)


class MarkedLocator:
    """The locator with ``mark=N`` targets resolved from the current mark table."""

    def __init__(self, locator: Locator, marks: Marks) -> None:
        self.locator, self.marks = locator, marks

    def locate(
        self, targets: Sequence[Target], observation: Observation, sent: EncodedImage | None
    ) -> Located | NotLocated:
        return locate_marked(self.locator, targets, observation, sent, self.marks.table)


class Refusals(Collaborator):
    """A run that fails right after the safety gate refused its last action ends with that
    refusal as its cause (``agent_s.record.result.Ending.after``)."""

    def __init__(self, redact: Callable[[str], str]) -> None:
        self.redact = redact
        self.last: Refusal | None = None

    def reset(self) -> None:
        self.last = None

    def after_step(self, step: Step) -> None:
        if step.action is not None and step.terminal is None:  # an action tried: refused?
            self.last = Refusal.of(step.step, step.action_text, step.safety)

    def ending(self, ending: Ending) -> Ending:
        ending = ending.after(self.last)
        refusal = ending.refusal
        if refusal is None:
            return ending
        said = replace(
            refusal, action=self.redact(refusal.action), reason=self.redact(refusal.reason)
        )
        return replace(ending, refusal=said)


class Recording(Collaborator):
    """The trajectory folder (``agent_s.record.trajectory``), when the settings name one:
    opened as a task starts (``run.json``), a line per step, the plan's events, the result last.
    ``header``: the run's header for a task; the time it takes counts as ``record`` in
    ``tally``'s timings."""

    def __init__(
        self,
        folder: Callable[[], Path | None],
        redactor: Redactor,
        header: Callable[[str, float], dict[str, Any]],
    ) -> None:
        self.record_dir, self.redactor, self.header = folder, redactor, header
        self.writer: TrajectoryWriter | None = None
        self.tally = Tally()
        self.events: list[dict[str, Any]] = []  # the plan's events, as plan.jsonl has them

    @property
    def folder(self) -> Path | None:
        return self.writer.folder if self.writer is not None else None

    def reset(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.writer, self.events = None, []

    def started(self, task: str) -> None:
        record_dir = self.record_dir()
        if record_dir is not None:
            with self.tally.recording():
                self.writer = TrajectoryWriter.create(record_dir, redactor=self.redactor)
                self.writer.write_run(self.header(task, self.tally.started_at))

    def image(self, sent: EncodedImage, draft: Draft) -> None:
        """The screenshot sent at this step (``step_007.png``), named on the step."""
        if self.writer is not None:
            name = f"step_{draft.step.step:03d}{_EXTENSIONS[sent.media_type]}"
            with draft.timed("record"):
                draft.set(screenshot=self.writer.queue_image(name, sent.data))

    def event(self, event: dict[str, Any]) -> None:
        self.events.append(event)
        if self.writer is not None:
            self.writer.write_event(event)

    def after_step(self, step: Step) -> None:
        if self.writer is not None:
            with self.tally.recording():
                self.writer.write_step(step)

    def ended(self, result: RunResult, steps: Sequence[Step], events: Sequence[Any]) -> None:
        if self.writer is not None:
            self.writer.write_result(result)
            self.writer.close()
            self.writer = None


def assemble(
    recording: Recording,
    control: RunControl | None,
    memory: Remembering | None,
    marks: Marks,
    redactor: Redactor,
    *others: Collaborator,
    reuse: Collaborator | None = None,
) -> Collaborators:
    """One agent's collaborators: the recording first (the folder is complete before memory
    learns), then in the order their notes go into a request: the user's note, memory, marks,
    ``others`` (the rest of a reply's actions, ``agent_s.loop.sequence``), the refusals;
    ``reuse`` (a stored workflow replayed first, ``agent_s.replay.reuse``) last."""
    members: list[Collaborator] = [recording]
    members += [Control(control)] if control is not None else []
    members += [memory] if memory is not None else []
    extra = [reuse] if reuse is not None else []
    return Collaborators([*members, marks, *others, Refusals(redactor.text), *extra])


__all__ = [
    "assemble",
    "Collaborator",
    "Collaborators",
    "Control",
    "MarkedLocator",
    "Marks",
    "Refusals",
    "Remembering",
    "Recording",
    "RequestPoint",
]
