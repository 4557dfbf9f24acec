"""A grounding model behind any OpenAI-compatible endpoint (UI-TARS, Qwen2.5-VL, Seed, ...).

The screenshot is encoded once (``agent_s.images``), sent with the ``grounding_query`` prompt,
and the reply parsed strictly (``replies``). Its coordinate frame comes from the image actually
sent and the model family (``convention_for_model``), never from hand-set sizes:

| family                                   | frame                                       |
|------------------------------------------|---------------------------------------------|
| UI-TARS-1.5, Qwen2.5-VL, GTA1            | ``smart_resize``: pixels of the resized image |
| UI-TARS 1.0, Seed / Doubao, Qwen3-VL     | ``grid1000``: 0-1000 relative grid          |
| anything else (GPT, Claude, generic VLM) | ``pixels``: pixels of the image sent        |

A reply written as 0-1 fractions is read in the ``unit`` frame. A convention given (the
``--ground-convention`` setting, a name of ``agent_s.conventions``: ``grid1000-yx``,
``1920x1080``) wins over the family's. Out-of-bounds or unparseable replies raise
``GroundingReplyError``; a reply saying "not found" raises ``NotFound``.
"""

from __future__ import annotations

import fnmatch
import time
import weakref
from collections.abc import Sequence

from agent_s.conventions import PointConvention
from agent_s.desktop.ops import Point
from agent_s.grounding.replies import ReplySaysNotFound, parse_location, parse_span_choice
from agent_s.grounding.transform import QWEN_MAX_PIXELS, Convention, CoordinateChain, Frame
from agent_s.grounding.types import (
    Box,
    CoordinateError,
    GroundingReplyError,
    GroundingResult,
    NotFound,
    Observation,
)
from agent_s.images import EncodedImage, ImageSpec, encode_screenshot
from agent_s.models.types import Message, ModelRequest, Provider, TextPart
from agent_s.prompting import grounding_query_prompt, text_span_prompt

# (patterns, convention): first match wins; matched case-insensitively against the full model
# name and its last "/" segment ("ByteDance-Seed/UI-TARS-1.5-7B").
_FAMILIES: tuple[tuple[tuple[str, ...], Convention], ...] = (
    (("*ui-tars-1.5*", "*ui_tars_1.5*", "*uitars-1.5*", "*ui-tars-1_5*"), "smart_resize"),
    (("*qwen2.5-vl*", "*qwen2_5_vl*", "*qwen2.5vl*", "*qwen2_5-vl*", "*gta1*"), "smart_resize"),
    (("*ui-tars*", "*ui_tars*", "*uitars*"), "grid1000"),
    (("*seed*", "*doubao*", "*qwen3-vl*", "*qwen3_vl*"), "grid1000"),
)


def convention_for_model(model: str) -> Convention:
    """The coordinate convention a model family answers in (``pixels`` when unknown)."""
    name = model.lower()
    tail = name.rsplit("/", 1)[-1]
    for patterns, convention in _FAMILIES:
        if any(fnmatch.fnmatchcase(name, p) or fnmatch.fnmatchcase(tail, p) for p in patterns):
            return convention
    return "pixels"


def default_image_spec(convention: Convention) -> ImageSpec:
    """What to send: Qwen-style models take up to 16384 28x28 patches; others ~2 MP."""
    if convention == "smart_resize":
        return ImageSpec(format="png", max_pixels=QWEN_MAX_PIXELS)
    return ImageSpec(format="png", max_long_side=1920, max_pixels=1920 * 1200)


def location_to_screen(
    reply: str, *, chain: CoordinateChain, convention: PointConvention
) -> tuple[Box | None, tuple[int, int], dict[str, object]]:
    """Parse ``reply`` and map it through ``chain``: (screen box or None, screen point, facts).
    0-1 fractions are read in the ``unit`` frame whatever ``convention`` says (its order kept).

    Raises ``GroundingReplyError`` (unparseable, several locations, out of bounds) and
    ``ReplySaysNotFound``.
    """
    location = parse_location(reply)
    used = convention.reading("unit") if location.unit else convention
    frame = chain.frame(used)
    try:
        if location.kind == "box":
            x1, y1, x2, y2 = location.values
            box = chain.model_box_to_screen(x1, y1, x2, y2, frame)
            point = chain.model_to_screen(*location.point, frame)
        else:
            box = None
            point = chain.model_to_screen(*location.point, frame)
    except CoordinateError as err:
        raise GroundingReplyError(
            f"the reply's {location.kind} {location.values} is out of bounds: {err}",
            reply=reply,
            reason="out of bounds",
        ) from err
    facts: dict[str, object] = {
        "reply": reply[:500],
        "format": location.format,
        "convention": str(used),
        "frame": [frame.width, frame.height],
        "sent": [frame.sent_width, frame.sent_height],
        "model_point": list(location.point),
    }
    return box, (point.x, point.y), facts


class ModelGrounder:
    """Asks a grounding model where an element is. One request per ``ground`` call.

    ``convention`` (a frame name or a ``PointConvention``) defaults to the model family's
    (``convention_for_model(provider.model)``); ``image_spec`` to
    ``default_image_spec(convention)``. ``frame_size``: the model answers in a fixed
    ``width`` x ``height`` frame over the image sent, whatever its family (Agent S3's
    ``grounding_width`` / ``grounding_height``); None: the convention's frame.
    """

    name = "model"

    def __init__(
        self,
        provider: Provider,
        *,
        convention: Convention | PointConvention | None = None,
        image_spec: ImageSpec | None = None,
        max_output_tokens: int = 256,
        frame_size: tuple[int, int] | None = None,
    ) -> None:
        if frame_size is not None and min(frame_size) < 1:
            raise ValueError(f"a grounding frame must be at least 1x1, not {frame_size}")
        if not isinstance(convention, PointConvention):
            convention = PointConvention(convention or convention_for_model(provider.model))
        if frame_size is not None:
            convention = PointConvention("pixels", convention.order, frame_size)
        self.spec = convention
        self.frame_size = convention.size
        self.provider = provider
        self.convention: Convention = convention.frame
        self.image_spec = image_spec or default_image_spec(self.convention)
        self.max_output_tokens = max_output_tokens
        self._encoded: tuple[weakref.ref[Observation], EncodedImage] | None = None

    def _encode(self, observation: Observation) -> EncodedImage:
        """The screenshot encoded once per observation (several targets share it). The
        observation object is the key: hashing its pixels costs about as much as encoding."""
        if self._encoded is None or self._encoded[0]() is not observation:
            image = encode_screenshot(observation.screenshot.image, self.image_spec)
            self._encoded = (weakref.ref(observation), image)
        return self._encoded[1]

    def offer(self, observation: Observation, sent: EncodedImage) -> bool:
        """Take ``sent`` (the generation model's image of ``observation``) as this grounder's
        own image when it has the very pixels this grounder would send (both PNG, the same
        size), saving an encoding; True if taken."""
        size = observation.screenshot.image.size
        taken = (
            self.image_spec.format == "png"
            and sent.media_type == "image/png"
            and (sent.source_width, sent.source_height) == size
            and (sent.width, sent.height) == self.image_spec.fit(*size)
        )
        if taken:
            self._encoded = (weakref.ref(observation), sent)
        return taken

    def prompt(self, expression: str, sent: EncodedImage) -> str:
        """The question: in the frame the model answers in (a 0-1000 grid, or pixels of the
        image as the model sees it, which for Qwen-style models is the smart-resized one)."""
        if self.frame_size is not None:
            width, height = self.frame_size
            return grounding_query_prompt(expression, width=width, height=height, frame="pixels")
        if self.convention == "grid1000":
            return grounding_query_prompt(expression, width=0, height=0, frame="grid1000")
        width, height = sent.width, sent.height
        if self.convention == "smart_resize":
            frame = Frame.for_image("smart_resize", sent.width, sent.height)
            width, height = int(frame.width), int(frame.height)
        return grounding_query_prompt(expression, width=width, height=height, frame="pixels")

    def ground(self, expression: str, observation: Observation) -> GroundingResult:
        start = time.perf_counter()
        sent = self._encode(observation)
        chain = CoordinateChain(observation.screenshot, sent, observation.geometry)
        request = ModelRequest(
            messages=(Message("user", (sent.to_part(), TextPart(self.prompt(expression, sent)))),),
            max_output_tokens=self.max_output_tokens,
            temperature=0.0,
            metadata={"purpose": "grounding"},
        )
        reply = self.provider.complete(request)
        try:
            box, (x, y), facts = location_to_screen(reply.text, chain=chain, convention=self.spec)
        except ReplySaysNotFound as err:
            raise NotFound(
                f"the grounding model {self.provider.model} says {expression!r} is not on the "
                f"screen: {err}",
                expression=expression,
                grounder=self.name,
                reason="model says not found",
            ) from err
        return GroundingResult(
            expression=expression,
            point=Point(x, y),
            grounder=self.name,
            confidence=0.9 if box is not None else 0.85,
            evidence=f"{self.provider.model} answered {reply.text.strip()[:80]!r} "
            f"({facts['format']}, {facts['convention']} frame over the "
            f"{sent.width}x{sent.height} image sent)",
            box=box,
            details={**facts, "model": self.provider.model, "usage": reply.usage.total_tokens},
            seconds=time.perf_counter() - start,
        )


def choose_span_with_model(
    provider: Provider, start_phrase: str, end_phrase: str, words: Sequence[str]
) -> tuple[int, int]:
    """Ask a model which OCR words start and end a span (the ``text_span`` prompt).

    Returns (start, end) word indices, checked; ``NotFound`` when the model says the phrases
    are absent; ``GroundingReplyError`` for any other reply: never a default word.
    """
    request = ModelRequest(
        messages=(Message.text("user", text_span_prompt(start_phrase, end_phrase, words)),),
        max_output_tokens=64,
        temperature=0.0,
        metadata={"purpose": "text_span"},
    )
    reply = provider.complete(request)
    chosen = parse_span_choice(reply.text, len(words))
    if chosen is None:
        raise NotFound(
            f"the model found neither {start_phrase!r} nor {end_phrase!r} among the OCR words",
            expression=f"{start_phrase} ... {end_phrase}",
            grounder="model",
            reason="model says not found",
        )
    return chosen
