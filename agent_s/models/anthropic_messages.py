"""Anthropic Messages API (``POST /v1/messages``).

System messages go to the ``system`` parameter; images as base64 source blocks; consecutive
messages of one role are merged (the API wants user and assistant turns to alternate).
Extended thinking is switched on by the profile (``thinking_budget_tokens``, and
``thinking_type`` "enabled" or "adaptive" for models that want that); its budget is added to
``max_tokens`` and the temperature is dropped, as the API requires. Thinking blocks are
not part of the reply text.
"""

from __future__ import annotations

from typing import Any

import anthropic

from agent_s.models._common import (
    assistant_text,
    b64,
    call_sdk,
    clip_text,
    count,
    field,
    reply_dict,
    sdk_client_kwargs,
    system_text,
    translated_errors,
)
from agent_s.models.endpoints import ProviderSettings
from agent_s.models.errors import MalformedResponse, OutputTruncated, Refused
from agent_s.models.profiles import ModelProfile, output_limit
from agent_s.models.retry import request_timeout
from agent_s.models.types import ImagePart, ModelReply, ModelRequest, Usage

_TRUNCATED = ("max_tokens", "model_context_window_exceeded")


class AnthropicProvider:
    """``complete`` sends one Messages request and returns the reply or a ModelError."""

    def __init__(
        self, settings: ProviderSettings, profile: ModelProfile, *, http_client: Any = None
    ) -> None:
        if settings.api != "anthropic":
            raise ValueError(f"AnthropicProvider cannot serve api={settings.api!r}")
        self.settings = settings
        self.profile = profile
        kwargs = sdk_client_kwargs(settings)  # raises now if a hosted key is missing
        if http_client is not None:
            kwargs["http_client"] = http_client
        self._client = anthropic.Anthropic(**kwargs)

    @property
    def model(self) -> str:
        return self.settings.model

    def __repr__(self) -> str:
        return f"AnthropicProvider({self.settings!r}, profile={self.profile.name!r})"

    def request_kwargs(self, request: ModelRequest) -> dict[str, Any]:
        """The ``messages.create`` arguments for ``request`` (no I/O)."""
        turns: list[dict[str, Any]] = []
        for message in request.messages:
            if message.role == "system":
                continue
            blocks: list[dict[str, Any]]
            if message.role == "assistant":
                blocks = [{"type": "text", "text": assistant_text(message)}]
            else:
                blocks = []
                for part in message.parts:
                    if isinstance(part, ImagePart):
                        source = {"type": "base64", "media_type": part.media_type}
                        blocks.append({"type": "image", "source": {**source, "data": b64(part)}})
                    else:
                        blocks.append({"type": "text", "text": part.text})
            if turns and turns[-1]["role"] == message.role:
                turns[-1]["content"].extend(blocks)
            else:
                turns.append({"role": message.role, "content": blocks})
        max_tokens = output_limit(request, self.profile)
        kwargs: dict[str, Any] = {"model": self.settings.model, "messages": turns}
        system = system_text(request.messages)
        if system:
            kwargs["system"] = system
        if self.profile.thinking_enabled:
            budget = self.profile.thinking_budget_tokens
            if self.profile.thinking_type == "adaptive":  # the model sizes its own thinking
                kwargs["thinking"] = {"type": "adaptive"}
            else:
                kwargs["thinking"] = {"type": "enabled", "budget_tokens": budget}
            max_tokens += budget  # room for the thinking on top of the answer
        else:
            temperature = self.settings.temperature_for(
                request.temperature, self.profile.accepts_temperature
            )
            if temperature is not None:
                kwargs["temperature"] = temperature
        kwargs["max_tokens"] = max_tokens
        return kwargs

    def complete(self, request: ModelRequest) -> ModelReply:
        kwargs = self.request_kwargs(request)
        timeout = request_timeout(self.settings, request)
        with translated_errors(anthropic, self.settings, timeout):
            response = call_sdk(self._client.messages.create, {**kwargs, "timeout": timeout})
        return self._parse(response, kwargs["max_tokens"])

    def _usage(self, data: dict[str, Any]) -> Usage:
        usage = data.get("usage")
        cache_read = count(usage, "cache_read_input_tokens")
        cache_write = count(usage, "cache_creation_input_tokens")
        return self.profile.usage(
            # Anthropic's input_tokens excludes cache reads and writes; ours includes them.
            input_tokens=count(usage, "input_tokens") + cache_read + cache_write,
            output_tokens=count(usage, "output_tokens"),
            cached_input_tokens=cache_read,
            cache_write_tokens=cache_write,
        )

    def _parse(self, response: object, limit: int) -> ModelReply:
        data = reply_dict(response, self.settings)
        content = field(data, "content", list, "reply")
        usage = self._usage(data)
        label = self.settings.endpoint.label
        texts: list[str] = []
        for i, block in enumerate(content):
            if not isinstance(block, dict):
                raise MalformedResponse(f"the reply's content[{i}] is not an object")
            if block.get("type") == "text":
                texts.append(str(block.get("text") or ""))
        text = clip_text("".join(texts))
        stop = str(data.get("stop_reason") or "")
        if stop == "refusal":
            raise Refused(
                f"{label}: the model refused{': ' + text[:200] if text else ''}",
                refusal=text or "refusal",
                usage=usage,
            )
        if stop in _TRUNCATED:
            raise OutputTruncated(
                f"{label}: the reply stopped early ({stop}, limit {limit})",
                partial_text=text,
                max_output_tokens=limit,
                usage=usage,
            )
        return ModelReply(
            text=text,
            model=str(data.get("model") or self.settings.model),
            usage=usage,
            stop_reason=stop,
            request_id=getattr(response, "_request_id", None) or data.get("id"),
        )
