"""Coordinates the generation model emits itself (Claude / OpenAI computer use, or any model
asked to answer with a point), mapped through the same transform chain as everything else.

Claude's computer-use tool gives ``{"action": "left_click", "coordinate": [x, y]}`` and OpenAI's
``computer_call`` gives ``{"type": "click", "x": .., "y": ..}``: both are pixels of the
screenshot the model was sent, which the encoder may have downscaled (Anthropic recommends
about 1280x800). The agent keeps that ``EncodedImage``; ``native_result`` maps the point back
through it to the screen, bounds-checked, so a downscaled or HiDPI screenshot cannot misplace
a click. ``NativeGrounder`` is the same as a ``Grounder`` whose "expression" is the model's
coordinate text, for ``agent-s ground --ground native`` and for replaying a trajectory.
"""

from __future__ import annotations

import time

from agent_s.conventions import PointConvention
from agent_s.desktop.ops import Point
from agent_s.grounding.model import location_to_screen
from agent_s.grounding.replies import ReplySaysNotFound
from agent_s.grounding.transform import Convention, CoordinateChain
from agent_s.grounding.types import (
    CoordinateError,
    GroundingReplyError,
    GroundingResult,
    NotFound,
    Observation,
)
from agent_s.images import EncodedImage, ImageSpec


def native_result(
    description: str,
    reply: str,
    *,
    sent: EncodedImage,
    observation: Observation,
    convention: Convention | PointConvention = "pixels",
    source: str = "the generation model",
) -> GroundingResult:
    """The screen point for a model's own coordinates ``reply`` over the image ``sent``, read
    in ``convention`` (``--ground-convention`` for a native worker; pixels by default)."""
    start = time.perf_counter()
    chain = CoordinateChain(observation.screenshot, sent, observation.geometry)
    if not isinstance(convention, PointConvention):
        convention = PointConvention(convention)
    try:
        box, (x, y), facts = location_to_screen(reply, chain=chain, convention=convention)
    except ReplySaysNotFound as err:
        raise NotFound(
            f"{source} gave no coordinates: {err}",
            expression=description,
            grounder="native",
            reason="no coordinates",
        ) from err
    except GroundingReplyError as err:
        cause = err.__cause__
        if isinstance(cause, CoordinateError) and cause.stage != "model frame":
            # Inside the image but off every monitor (a gap between screens): said in the
            # image's terms, as the model cannot know the screen's pixels.
            raise GroundingReplyError(
                f"{reply.strip()[:80]!r} is inside the {sent.width}x{sent.height} image but "
                "shows no screen (an area between monitors); point at something visible",
                reply=reply,
                reason="out of bounds",
            ) from err
        raise
    return GroundingResult(
        expression=description,
        point=Point(x, y),
        grounder="native",
        confidence=0.8,
        evidence=f"{source} pointed at {facts['model_point']} in the {sent.width}x{sent.height} "
        f"image it saw ({facts['convention']} frame)",
        box=box,
        details=facts,
        seconds=time.perf_counter() - start,
    )


class NativeGrounder:
    """A ``Grounder`` for coordinates written by the generation model: the "expression" is its
    coordinate text ("(640, 400)", ``<point>``, a box). The screenshot is encoded with
    ``image_spec`` (the generation model's, from its profile) to know the frame it answered in.
    """

    name = "native"

    def __init__(
        self,
        image_spec: ImageSpec | None = None,
        convention: Convention | PointConvention = "pixels",
    ) -> None:
        self.image_spec = image_spec or ImageSpec()
        self.convention = (
            convention if isinstance(convention, PointConvention) else PointConvention(convention)
        )

    def ground(self, expression: str, observation: Observation) -> GroundingResult:
        image = observation.screenshot.image
        # Only the sizes matter for the mapping: the size the encoder sends this screenshot at.
        width, height = self.image_spec.fit(image.width, image.height)
        sent = EncodedImage(b"", self.image_spec.media_type, width, height, *image.size)
        return native_result(
            expression,
            expression,
            sent=sent,
            observation=observation,
            convention=self.convention,
        )
