"""What goes to a model and what comes back: provider-neutral, plain data.

Adapters (one per API) translate these to and from the vendor SDKs' wire formats; nothing else
in agent-s sees a vendor type.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

Role = Literal["system", "user", "assistant"]
ImageMediaType = Literal["image/png", "image/jpeg", "image/webp"]


@dataclass(frozen=True)
class TextPart:
    text: str


@dataclass(frozen=True)
class ImagePart:
    """An encoded image as it is sent: ``width`` x ``height`` are the pixels of ``data``."""

    data: bytes
    media_type: ImageMediaType
    width: int
    height: int

    def __repr__(self) -> str:  # never dump image bytes into logs
        return f"ImagePart({self.media_type}, {self.width}x{self.height}, {len(self.data)} bytes)"


Part = TextPart | ImagePart


@dataclass(frozen=True)
class Message:
    role: Role
    parts: tuple[Part, ...]

    @classmethod
    def text(cls, role: Role, text: str) -> Message:
        return cls(role, (TextPart(text),))


@dataclass(frozen=True)
class Usage:
    """Tokens as reported by the API (0 where it did not report), and the estimated cost."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    image_tokens: int = 0
    calls: int = 0
    cost_usd: float = 0.0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cached_input_tokens + other.cached_input_tokens,
            self.image_tokens + other.image_tokens,
            self.calls + other.calls,
            self.cost_usd + other.cost_usd,
        )

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True)
class ModelReply:
    text: str
    model: str
    usage: Usage
    stop_reason: str = ""  # the API's own word: "stop", "end_turn", "length", ...
    request_id: str | None = None
    attempts: int = 1  # HTTP attempts it took, counting retries (set by the retry layer)
    first_token_s: float | None = None  # seconds to the first text, when the reply streamed


@dataclass(frozen=True)
class ModelRequest:
    """One generation request in provider-neutral form."""

    messages: tuple[Message, ...]
    max_output_tokens: int | None = None  # None: the profile's max_output_tokens
    temperature: float | None = None  # dropped by the adapter when the profile says so
    metadata: dict[str, str] = field(default_factory=dict)
    # stream the reply where the adapter can (Chat Completions), to time its first token
    stream: bool = False


class Provider(Protocol):
    """One generation endpoint. ``complete`` either returns a reply or raises a ModelError."""

    @property
    def model(self) -> str: ...

    def complete(self, request: ModelRequest) -> ModelReply: ...


__all__: Sequence[str] = (
    "ImageMediaType",
    "ImagePart",
    "Message",
    "ModelReply",
    "ModelRequest",
    "Part",
    "Provider",
    "Role",
    "TextPart",
    "Usage",
)
