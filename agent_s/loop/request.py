"""What one step asks the model: the system prompt, the worker and reflection requests, and the
accessibility snapshot, with a summary of each worker request's size for the trajectory.

The system prompt is fixed for a task at its first observation: the platform (the OS chosen by
the caller, else this machine's; the screen read from the observation's geometry), how to
describe elements for the grounder in use (``description_style``), and ``call_code_agent``
offered only when the code agent is on and the agent executes actions itself. With native
grounding the prompt states the size of the image sent, and is rebuilt if that size changes.
With set-of-marks (``marks``) the prompt and the action list say how to name a mark.
When a reply may hold several actions (``max_actions_per_reply``) the prompt says when to group
them, and each request's closing line says how many.
What changes during a run goes into the worker request instead: the date the task started
(``Requests.start``) and the open windows of each observation, when they are known. The
history in each request follows the context policy (``agent_s.loop.context``); the accessibility
snapshot lists the active window's named elements, read by the grounding locator
(``agent_s.grounding.locate``).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import replace
from datetime import date
from typing import Any

from agent_s.actions import action_catalogue
from agent_s.grounding import (
    GroundingChain,
    GroundingError,
    Locator,
    ModelGrounder,
    NativeGrounder,
    Observation,
)
from agent_s.guards.redaction import Redactor
from agent_s.images import EncodedImage
from agent_s.loop.context import build_messages, build_reflection_messages, measure
from agent_s.models.types import Message, TextPart
from agent_s.prompting import (
    OS_NAMES,
    DescriptionStyle,
    OsName,
    Platform,
    accessibility_snapshot,
    detect_platform,
    open_windows,
    reflection_system_prompt,
    today_line,
    worker_system_prompt,
)
from agent_s.record.step import Step
from agent_s.settings.config import AgentConfig, ConfigError

CODE_AGENT = ("call_code_agent",)


def description_style(locator: Locator) -> DescriptionStyle:
    """How the worker should describe elements for ``locator``'s grounder: ``native`` when the
    model points itself, ``appearance`` when a grounding model is tried first, else ``labels``
    (the accessibility tree and OCR match text; the ``auto`` chain tries them first, and a
    label is also what a grounding model behind them finds best)."""
    grounder = locator.grounder
    if isinstance(grounder, NativeGrounder):
        return "native"
    first = grounder.grounders[0] if isinstance(grounder, GroundingChain) else grounder
    return "appearance" if isinstance(first, ModelGrounder) else "labels"


class Requests:
    """Builds a task's requests (see the module docstring); ``start`` for a new task.

    ``os_name``: the OS the screens come from (``linux``, ``windows``, ``darwin``), for the
    prompts' hints; None: this machine's (``sys.platform``).
    """

    def __init__(
        self,
        settings: AgentConfig,
        locator: Locator,
        redactor: Redactor,
        *,
        os_name: OsName | None = None,
    ) -> None:
        if os_name is not None and os_name not in OS_NAMES:
            raise ConfigError(
                f"platform must be one of {', '.join(OS_NAMES)}, not {os_name!r}",
                setting="platform",
            )
        self.settings = settings
        self.locator = locator
        self.redactor = redactor
        self.os_name = os_name
        self.marks = False  # the screenshots carry numbered marks (agent_s.marks.setofmarks)
        self.today: date | None = None
        self.reset()

    def reset(self) -> None:
        self._system: tuple[Platform, str] | None = None
        self._native_frame: tuple[int, int] | None = None  # the image size the prompt states
        self.code_offered = False  # call_code_agent is in the catalogue (set with the prompt)
        self.today = None

    def start(self, today: date | None = None) -> None:
        """A new task that starts ``today`` (default: the clock's date now)."""
        self.reset()
        self.today = today if today is not None else date.today()

    @property
    def style(self) -> DescriptionStyle:
        return description_style(self.locator)

    @property
    def platform(self) -> Platform:
        if self._system is None:
            raise RuntimeError("the platform is known only after the first observation")
        return self._system[0]

    def system(
        self,
        observation: Observation,
        execute: bool,
        sent: EncodedImage,
        *,
        desktop: str | None = None,
    ) -> str:
        """The worker's system prompt for this task (built at its first observation);
        ``desktop``: the desktop environment's name (default: the settings')."""
        style = self.style
        native = (sent.width, sent.height) if style == "native" else None
        if self._system is None or native != self._native_frame:
            geometry = observation.geometry
            if geometry is not None:
                _, _, width, height = geometry.bounds
                monitors = len(geometry.monitors)
            else:
                (width, height), monitors = observation.screenshot.image.size, 1
            platform = detect_platform(
                width,
                height,
                system=self.os_name or sys.platform,
                environ={
                    "XDG_CURRENT_DESKTOP": self.settings.desktop_name
                    if desktop is None
                    else desktop
                },
                monitors=monitors,
            )
            exclude = () if self.settings.code.enabled and execute else CODE_AGENT
            self.code_offered = not exclude
            catalogue = action_catalogue(exclude=exclude, os=platform.os, marks=self.marks)
            prompt = worker_system_prompt(
                platform,
                catalogue=catalogue,
                style=style,
                native_image=native,
                code_agent=self.code_offered,
                marks=self.marks,
                most=self.settings.max_actions_per_reply,
            )
            self._system, self._native_frame = (platform, prompt), native
        return self._system[1]

    def reflection(
        self, task: str, steps: Sequence[Step], sent: EncodedImage
    ) -> tuple[Message, ...] | None:
        """The reviewer's request on the steps so far (None before the first step)."""
        if not steps:
            return None
        system = reflection_system_prompt(self.platform, code_agent=self.code_offered)
        return build_reflection_messages(system, task, steps, sent, policy=self.settings.context)

    def worker(
        self,
        system: str,
        task: str,
        steps: Sequence[Step],
        sent: EncodedImage,
        notes: Sequence[str],
        reflection: str | None,
        observation: Observation | None = None,
    ) -> tuple[Message, ...]:
        """The worker request; ``observation``: the screen's, whose windows are listed (None:
        they are not known, and no list is sent)."""
        windows = None
        if observation is not None:
            windows = self.redactor.text(open_windows(observation.windows))
        return build_messages(
            system,
            task,
            steps,
            sent,
            notes,
            policy=self.settings.context,
            reflection=reflection,
            max_steps=self.settings.max_steps,
            today=today_line(self.today) if self.today is not None else None,
            windows=windows,
            most=self.settings.max_actions_per_reply,
        )

    def snapshot(self, observation: Observation) -> tuple[str | None, str]:
        """The active window's named elements as request text (None when there are none or the
        tree is unavailable), and a note for the trajectory."""
        try:
            outline = self.locator.outline(observation)
        except GroundingError as err:  # GrounderUnavailable: no bus, no bindings, no apps
            return None, f"unavailable: {err}"[:300]
        window = outline.window
        if window is None or not outline.lines:
            return None, "no named elements in the active window"
        title = f"{window.app}: {window.title}"
        text = self.redactor.text(accessibility_snapshot(title, outline.lines, outline.total))
        return text, f"{len(outline.lines)} of {outline.total} elements"


def with_snapshot(messages: Sequence[Message], text: str) -> tuple[Message, ...]:
    """``messages`` with ``text`` added to the last message, before its closing instruction."""
    last = messages[-1]
    parts = (*last.parts[:-1], TextPart(text), last.parts[-1])
    return (*messages[:-1], replace(last, parts=parts))


def summary(
    messages: Sequence[Message], sent: EncodedImage, reflection: bool, a11y: str | None
) -> dict[str, Any]:
    """What a worker request carried, for the trajectory."""
    size = measure(messages)
    return {
        "messages": size.messages,
        "images": size.images,
        "text_chars": size.text_chars,
        "image_bytes": size.image_bytes,
        "sent_size": [sent.width, sent.height],
        "reflection": reflection,
        "a11y": a11y,
    }


def checked_task(task: str) -> str:
    """``task`` as the model is given it (stripped); ``ValueError`` naming the fix when it is
    empty or holds characters that are not text (lone surrogates, from bytes not UTF-8)."""
    if not task.strip():
        raise ValueError("the task is empty")
    try:
        task.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(
            "the task has characters that are not valid text (lone "
            "surrogates, from bytes that were not UTF-8): pass it as UTF-8 text"
        ) from None
    return task.strip()


__all__ = [
    "checked_task",
    "CODE_AGENT",
    "Requests",
    "description_style",
    "summary",
    "with_snapshot",
]
