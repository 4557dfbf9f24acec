"""Observe: the screen now (the monitor the settings choose, its windows and geometry), the
picture the model is sent (set-of-marks draws on it first), and the smaller copy kept for
later requests, made on a thread of its own while the model thinks."""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from agent_s.desktop.base import DesktopBackend
from agent_s.desktop.monitors import MonitorChoice, monitor_to_capture
from agent_s.grounding import Locator, Observation
from agent_s.images import EncodedImage, ImageSpec, encode_screenshot, history_spec
from agent_s.loop.collaborators import Collaborator
from agent_s.loop.draft import Draft


def capture(backend: DesktopBackend, monitor: MonitorChoice) -> Observation:
    """The screen of ``backend`` now, on the monitor ``monitor`` chooses."""
    geometry, windows = backend.geometry(), tuple(backend.windows())
    pointer = backend.pointer() if monitor == "active" else None
    index = monitor_to_capture(monitor, geometry, windows, pointer)
    return Observation(backend.capture(index), windows, geometry)


@dataclass(frozen=True)
class Seen:
    """One step's screen as sent (``sent``) and the copy kept for later requests (``kept``,
    ready once the model has answered)."""

    sent: EncodedImage
    kept: Future[EncodedImage]


class Observer:
    """Encodes each step's screen for the model (``spec``: the model's image limits) and has
    the locator read what it needs of it while the model thinks."""

    def __init__(self, spec: ImageSpec, locator: Locator, points: Collaborator) -> None:
        self.spec, self.locator, self.points = spec, locator, points
        self._encoder = ThreadPoolExecutor(1, thread_name_prefix="agent-s-history")

    def look(self, observation: Observation, draft: Draft) -> Seen:
        self.locator.read_ahead(observation)  # the a11y tree is read while the image is encoded
        image = self.points.picture(observation, observation.screenshot.image, draft)
        with draft.timed("encode"):
            sent = encode_screenshot(image, self.spec)
            self.locator.prepare(observation, sent)  # and a grounding model offered the image
            spec = history_spec(sent, same_size=self.locator.native)
            return Seen(sent, self._encoder.submit(encode_screenshot, image, spec))


__all__ = ["Observer", "Seen", "capture"]
