"""The optional captioning call of a narrative (``[best_of] captions``, default off): one
model call for a step whose change the model-free signals do not explain (see ``narrative``).
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

from PIL import Image

from agent_s.bestofn.narrative import Caption
from agent_s.images import png_bytes
from agent_s.models.types import ImagePart, Message, ModelRequest, TextPart
from agent_s.prompting import render

if TYPE_CHECKING:
    from agent_s.models.types import Provider
    from agent_s.models.usage import UsageMeter
    from agent_s.settings.read import Settings

WIDTH = 768  # the screenshots are shown at most this wide


def _part(data: bytes) -> ImagePart:
    with Image.open(io.BytesIO(data)) as opened:
        image = opened.convert("RGB")
    if image.width > WIDTH:
        size = (WIDTH, max(1, round(image.height * WIDTH / image.width)))
        image = image.resize(size, Image.Resampling.LANCZOS)
    return ImagePart(png_bytes(image), "image/png", image.width, image.height)


def caption_with(provider: Provider) -> Caption:
    """A ``Caption`` that asks ``provider`` (one call per step it is used for)."""

    def caption(before: bytes, after: bytes, action: str) -> str:
        text = render("judge", "caption", action=action or "(none)")
        parts = (TextPart(text), _part(before), _part(after))
        request = ModelRequest((Message("user", parts),), metadata={"purpose": "caption"})
        return provider.complete(request).text.strip() or "(no caption)"

    return caption


def captioner(
    settings: Settings, api_key: str | None, max_cost: float | None = None
) -> tuple[Caption, UsageMeter]:
    """A ``Caption`` through the run's generation model, and the meter its calls are charged
    to (``max_cost``: what the attempt has left; a spent budget ends the captioning)."""
    from agent_s.models.factory import build_provider
    from agent_s.models.usage import Budget, UsageMeter

    model = settings.build_model(api_key)
    meter = UsageMeter(Budget(max_cost, settings.limits.max_tokens))
    provider = build_provider(model.settings(), profiles=settings.build_profiles(), meter=meter)
    return caption_with(provider), meter


__all__ = ["caption_with", "captioner"]
