"""OpenAI Responses API (``POST /responses``): the API of OpenAI's computer-use model.

System messages become ``instructions``; ``store=False`` so nothing is kept server-side
(the full context is sent each time). The reply's text is its ``output_text`` parts; other
output items (reasoning) carry nothing the agent acts on.
"""

from __future__ import annotations

from typing import Any

import openai

from agent_s.models._common import (
    assistant_text,
    call_sdk,
    clip_text,
    count,
    data_url,
    field,
    reply_dict,
    system_text,
    translated_errors,
)
from agent_s.models.endpoints import ProviderSettings
from agent_s.models.errors import MalformedResponse, OutputTruncated, ProviderUnavailable, Refused
from agent_s.models.openai_chat import openai_client
from agent_s.models.profiles import ModelProfile, output_limit
from agent_s.models.retry import request_timeout
from agent_s.models.types import ImagePart, ModelReply, ModelRequest, Usage


class OpenAIResponsesProvider:
    """``complete`` sends one Responses request and returns the reply or a ModelError."""

    def __init__(
        self, settings: ProviderSettings, profile: ModelProfile, *, http_client: Any = None
    ) -> None:
        if settings.api != "openai_responses":
            raise ValueError(f"OpenAIResponsesProvider cannot serve api={settings.api!r}")
        self.settings = settings
        self.profile = profile
        extra = {"http_client": http_client} if http_client is not None else {}
        self._client = openai_client(settings, **extra)  # raises now if a hosted key is missing

    @property
    def model(self) -> str:
        return self.settings.model

    def __repr__(self) -> str:
        return f"OpenAIResponsesProvider({self.settings!r}, profile={self.profile.name!r})"

    def request_kwargs(self, request: ModelRequest) -> dict[str, Any]:
        """The ``responses.create`` arguments for ``request`` (no I/O)."""
        items: list[dict[str, Any]] = []
        for message in request.messages:
            if message.role == "system":
                continue
            if message.role == "assistant":
                items.append({"role": "assistant", "content": assistant_text(message)})
                continue
            content: list[dict[str, Any]] = []
            for part in message.parts:
                if isinstance(part, ImagePart):
                    content.append(
                        {"type": "input_image", "image_url": data_url(part), "detail": "high"}
                    )
                else:
                    content.append({"type": "input_text", "text": part.text})
            items.append({"role": "user", "content": content})
        kwargs: dict[str, Any] = {
            "model": self.settings.model,
            "input": items,
            "max_output_tokens": output_limit(request, self.profile),
            "store": False,
        }
        instructions = system_text(request.messages)
        if instructions:
            kwargs["instructions"] = instructions
        temperature = self.settings.temperature_for(
            request.temperature, self.profile.accepts_temperature
        )
        if temperature is not None:
            kwargs["temperature"] = temperature
        if self.profile.reasoning_effort:
            kwargs["reasoning"] = {"effort": self.profile.reasoning_effort}
        return kwargs

    def complete(self, request: ModelRequest) -> ModelReply:
        kwargs = self.request_kwargs(request)
        timeout = request_timeout(self.settings, request)
        with translated_errors(openai, self.settings, timeout):
            response = call_sdk(self._client.responses.create, {**kwargs, "timeout": timeout})
        return self._parse(response, kwargs["max_output_tokens"])

    def _usage(self, data: dict[str, Any]) -> Usage:
        usage = data.get("usage")
        return self.profile.usage(
            input_tokens=count(usage, "input_tokens"),
            output_tokens=count(usage, "output_tokens"),
            cached_input_tokens=count(usage, "input_tokens_details", "cached_tokens"),
            image_tokens=count(usage, "input_tokens_details", "image_tokens"),
        )

    def _parse(self, response: object, limit: int) -> ModelReply:
        data = reply_dict(response, self.settings)
        output = field(data, "output", list, "reply")
        usage = self._usage(data)
        label = self.settings.endpoint.label
        texts: list[str] = []
        refusals: list[str] = []
        for i, item in enumerate(output):
            kind = item.get("type") if isinstance(item, dict) else None
            if kind == "message":
                for part in field(item, "content", list, f"output[{i}]"):
                    if not isinstance(part, dict):
                        raise MalformedResponse(f"the reply's output[{i}].content has a non-object")
                    if part.get("type") == "output_text":
                        texts.append(str(part.get("text") or ""))
                    elif part.get("type") == "refusal":
                        refusals.append(str(part.get("refusal") or "refused"))
            # reasoning items and others carry nothing the agent acts on
        text = clip_text("".join(texts))
        status = data.get("status") or "completed"
        if refusals:
            refusal = clip_text(" ".join(refusals))
            raise Refused(
                f"{label}: the model refused: {refusal[:200]}", refusal=refusal, usage=usage
            )
        if status == "incomplete":
            details = data.get("incomplete_details")
            reason = details.get("reason") if isinstance(details, dict) else None
            if reason == "content_filter":
                raise Refused(
                    f"{label}: the content filter stopped the reply",
                    refusal="content_filter",
                    usage=usage,
                )
            raise OutputTruncated(
                f"{label}: the reply stopped early ({reason or 'incomplete'}, limit {limit})",
                partial_text=text,
                max_output_tokens=limit,
                usage=usage,
            )
        if status == "failed":
            error = data.get("error")
            message = error.get("message") if isinstance(error, dict) else None
            raise ProviderUnavailable(f"{label}: the response failed: {message or 'no detail'}")
        return ModelReply(
            text=text,
            model=str(data.get("model") or self.settings.model),
            usage=usage,
            stop_reason=str(status),
            request_id=getattr(response, "_request_id", None) or data.get("id"),
        )
