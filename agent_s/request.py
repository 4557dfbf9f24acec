"""What one step asks the model: the system prompt, the worker and reflection requests, and the
accessibility snapshot, with a summary of each worker request's size for the trajectory.

The system prompt is fixed for a task at its first observation (the platform read from the
screen's geometry; ``call_code_agent`` offered only when the code agent is on and the agent
executes actions itself). With native grounding the prompt states the size of the image sent,
and is rebuilt if that size changes. The history in each request follows the context policy
(``agent_s.context``); the accessibility snapshot lists the active window's named elements,
read by the grounding locator (``agent_s.grounding.locate``).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from agent_s.actions import action_catalogue
from agent_s.config import AgentConfig
from agent_s.context import build_messages, build_reflection_messages, measure
from agent_s.grounding import GroundingError, Locator, Observation
from agent_s.images import EncodedImage
from agent_s.models.types import Message, TextPart
from agent_s.prompting import (
    Platform,
    accessibility_snapshot,
    detect_platform,
    reflection_system_prompt,
    worker_system_prompt,
)
from agent_s.redact import Redactor
from agent_s.step import Step

CODE_AGENT = ("call_code_agent",)


class Requests:
    """Builds a task's requests (see the module docstring); ``reset`` for a new task."""

    def __init__(self, settings: AgentConfig, locator: Locator, redactor: Redactor) -> None:
        self.settings = settings
        self.locator = locator
        self.redactor = redactor
        self.reset()

    def reset(self) -> None:
        self._system: tuple[Platform, str] | None = None
        self._native_frame: tuple[int, int] | None = None  # the image size the prompt states
        self.code_offered = False  # call_code_agent is in the catalogue (set with the prompt)

    @property
    def platform(self) -> Platform:
        if self._system is None:
            raise RuntimeError("the platform is known only after the first observation")
        return self._system[0]

    def system(self, observation: Observation, execute: bool, sent: EncodedImage) -> str:
        """The worker's system prompt for this task (built at its first observation)."""
        native = (sent.width, sent.height) if self.locator.native else None
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
                system=sys.platform,
                environ={"XDG_CURRENT_DESKTOP": self.settings.desktop_name},
                monitors=monitors,
            )
            exclude = () if self.settings.code.enabled and execute else CODE_AGENT
            self.code_offered = not exclude
            catalogue = action_catalogue(exclude=exclude)
            prompt = worker_system_prompt(platform, catalogue=catalogue, native_image=native)
            self._system, self._native_frame = (platform, prompt), native
        return self._system[1]

    def reflection(
        self, task: str, steps: Sequence[Step], sent: EncodedImage
    ) -> tuple[Message, ...] | None:
        """The reviewer's request on the steps so far (None before the first step)."""
        if not steps:
            return None
        system = reflection_system_prompt(self.platform)
        return build_reflection_messages(system, task, steps, sent, policy=self.settings.context)

    def worker(
        self,
        system: str,
        task: str,
        steps: Sequence[Step],
        sent: EncodedImage,
        notes: Sequence[str],
        reflection: str | None,
    ) -> tuple[Message, ...]:
        return build_messages(
            system,
            task,
            steps,
            sent,
            notes,
            policy=self.settings.context,
            reflection=reflection,
            max_steps=self.settings.max_steps,
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


__all__ = ["CODE_AGENT", "Requests", "summary", "with_snapshot"]
