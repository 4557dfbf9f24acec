"""OpenAI Chat Completions, and any OpenAI-compatible server (vLLM, Ollama, LM Studio, ...).

``api="openai_chat"`` speaks to OpenAI itself: ``max_completion_tokens`` (the only limit its
reasoning models accept) and ``detail: high`` images (the default "auto" may send a screenshot
as one 512 px tile). ``api="openai_compatible"`` keeps to what local servers understand:
``max_tokens``, no ``detail``, no ``reasoning_effort``. The model name goes out untouched.
One HTTP attempt per ``complete``; retries are the retry layer's.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import openai

from agent_s.models._common import (
    assistant_text,
    call_sdk,
    clip_text,
    count,
    data_url,
    field,
    joined_text,
    reply_dict,
    sdk_client_kwargs,
    system_text,
    translated_errors,
)
from agent_s.models.endpoints import ProviderSettings
from agent_s.models.errors import MalformedResponse, OutputTruncated, Refused
from agent_s.models.profiles import ModelProfile, output_limit
from agent_s.models.retry import request_timeout
from agent_s.models.types import (
    ImagePart,
    Message,
    ModelReply,
    ModelRequest,
    TextPart,
    Usage,
)


def openai_client(settings: ProviderSettings, **extra: Any) -> openai.OpenAI:
    """The SDK client: explicit key (placeholder for a local server), URL, timeout, no retries.

    With ``azure_api_version`` it is the SDK's ``AzureOpenAI`` client over the resource at
    ``base_url``: requests go to ``/openai/deployments/{model}/chat/completions?api-version=``
    with the key in the ``api-key`` header.
    """
    kwargs = sdk_client_kwargs(settings)
    if settings.azure_api_version is not None:
        kwargs["azure_endpoint"] = kwargs.pop("base_url")
        return openai.AzureOpenAI(**kwargs, api_version=settings.azure_api_version, **extra)
    if settings.endpoint.is_azure:  # Azure's v1 endpoint reads the key from "api-key"
        kwargs["default_headers"] = {"api-key": kwargs["api_key"]}
    return openai.OpenAI(**kwargs, **extra)


class OpenAIChatProvider:
    """``complete`` sends one Chat Completions request and returns the reply or a ModelError."""

    def __init__(
        self, settings: ProviderSettings, profile: ModelProfile, *, http_client: Any = None
    ) -> None:
        if settings.api not in ("openai_chat", "openai_compatible"):
            raise ValueError(f"OpenAIChatProvider cannot serve api={settings.api!r}")
        self.settings = settings
        self.profile = profile
        self._hosted_openai = settings.api == "openai_chat"
        extra = {"http_client": http_client} if http_client is not None else {}
        self._client = openai_client(settings, **extra)  # raises now if a hosted key is missing

    @property
    def model(self) -> str:
        return self.settings.model

    def __repr__(self) -> str:
        return f"OpenAIChatProvider({self.settings!r}, profile={self.profile.name!r})"

    def _message(self, message: Message) -> dict[str, Any]:
        if message.role == "assistant":
            return {"role": "assistant", "content": assistant_text(message)}
        if all(isinstance(p, TextPart) for p in message.parts):
            return {"role": "user", "content": joined_text(message)}
        content: list[dict[str, Any]] = []
        for part in message.parts:
            if isinstance(part, ImagePart):
                image: dict[str, Any] = {"url": data_url(part)}
                if self._hosted_openai:
                    image["detail"] = "high"
                content.append({"type": "image_url", "image_url": image})
            else:
                content.append({"type": "text", "text": part.text})
        return {"role": "user", "content": content}

    def request_kwargs(self, request: ModelRequest) -> dict[str, Any]:
        """The ``chat.completions.create`` arguments for ``request`` (no I/O)."""
        messages: list[dict[str, Any]] = []
        for message in request.messages:
            if message.role == "system":
                messages.append({"role": "system", "content": system_text((message,))})
            else:
                messages.append(self._message(message))
        limit_param = "max_completion_tokens" if self._hosted_openai else "max_tokens"
        if self.settings.azure_api_version is not None and self.profile.accepts_temperature:
            # every Azure api-version takes max_tokens for sampling models; only newer ones
            # know max_completion_tokens, which reasoning models require
            limit_param = "max_tokens"
        kwargs: dict[str, Any] = {
            "model": self.settings.model,
            "messages": messages,
            limit_param: output_limit(request, self.profile),
        }
        temperature = self.settings.temperature_for(
            request.temperature, self.profile.accepts_temperature
        )
        if temperature is not None:
            kwargs["temperature"] = temperature
        if self._hosted_openai and self.profile.reasoning_effort:
            kwargs["reasoning_effort"] = self.profile.reasoning_effort
        return kwargs

    def complete(self, request: ModelRequest) -> ModelReply:
        kwargs = self.request_kwargs(request)
        timeout = request_timeout(self.settings, request)
        if request.stream:
            return self._streamed(kwargs, timeout)
        with translated_errors(openai, self.settings, timeout):
            response = call_sdk(
                self._client.chat.completions.create, {**kwargs, "timeout": timeout}
            )
        return self._parse(response, kwargs)

    def _streamed(self, kwargs: dict[str, Any], timeout: float) -> ModelReply:
        """The reply streamed (with its usage), read whole, timed to its first text."""
        start = time.perf_counter()
        first: float | None = None
        text, refusal, finish, usage, model = [], [], "", None, None
        streamed = {**kwargs, "stream": True, "stream_options": {"include_usage": True}}
        streamed["timeout"] = timeout
        with translated_errors(openai, self.settings, timeout):
            stream = call_sdk(self._client.chat.completions.create, streamed)
            for chunk in stream:
                data = reply_dict(chunk, self.settings)
                model = data.get("model") or model
                usage = data.get("usage") or usage
                for choice in data.get("choices") or []:
                    delta = choice.get("delta") or {}
                    if delta.get("content"):
                        first = time.perf_counter() - start if first is None else first
                        text.append(str(delta["content"]))
                    if delta.get("refusal"):
                        refusal.append(str(delta["refusal"]))
                    finish = choice.get("finish_reason") or finish
        message = {"content": "".join(text), "refusal": "".join(refusal) or None}
        whole = {"model": model, "usage": usage}
        whole["choices"] = [{"message": message, "finish_reason": finish}]
        return dataclasses.replace(self._parse(whole, kwargs), first_token_s=first)

    def _usage(self, data: dict[str, Any]) -> Usage:
        usage = data.get("usage")
        return self.profile.usage(
            input_tokens=count(usage, "prompt_tokens"),
            output_tokens=count(usage, "completion_tokens"),
            cached_input_tokens=count(usage, "prompt_tokens_details", "cached_tokens"),
            image_tokens=count(usage, "prompt_tokens_details", "image_tokens"),
        )

    def _parse(self, response: object, kwargs: dict[str, Any]) -> ModelReply:
        data = reply_dict(response, self.settings)
        choices = field(data, "choices", list, "reply")
        if not choices:
            raise MalformedResponse("the reply has no choices")
        choice = choices[0]
        message = field(choice, "message", dict, "choices[0]")
        finish = choice.get("finish_reason") or ""
        usage = self._usage(data)
        content = message.get("content")
        if isinstance(content, list):  # some compatible servers send content parts
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        text = clip_text(content) if isinstance(content, str) else ""
        refusal = message.get("refusal")
        refusal = clip_text(refusal) if isinstance(refusal, str) else refusal
        label = self.settings.endpoint.label
        if isinstance(refusal, str) and refusal:
            raise Refused(
                f"{label}: the model refused: {refusal[:200]}", refusal=refusal, usage=usage
            )
        if finish == "content_filter":
            raise Refused(
                f"{label}: the content filter stopped the reply",
                refusal="content_filter",
                usage=usage,
            )
        if finish == "length":
            limit = kwargs.get("max_completion_tokens", kwargs.get("max_tokens"))
            raise OutputTruncated(
                f"{label}: the reply hit the {limit}-token output limit",
                partial_text=text,
                max_output_tokens=limit,
                usage=usage,
            )
        return ModelReply(
            text=text,
            model=str(data.get("model") or self.settings.model),
            usage=usage,
            stop_reason=str(finish),
            request_id=getattr(response, "_request_id", None) or data.get("id"),
        )
