"""Shared by the adapters: vendor exception translation and defensive reading of replies.

Both SDKs (``openai``, ``anthropic``) raise the same family of exceptions (APITimeoutError,
APIConnectionError, APIStatusError with ``status_code`` and ``response``), so one translation
serves both; the module is passed in. Replies are read from ``to_dict()`` (what the server
actually sent), never trusted to have the documented shape.
"""

from __future__ import annotations

import base64
import inspect
import json
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

from agent_s.models.endpoints import Endpoint, ProviderSettings
from agent_s.models.errors import (
    AuthenticationError,
    BadRequest,
    IncompleteReply,
    MalformedResponse,
    ModelError,
    ProviderUnavailable,
    RateLimited,
    Timeout,
)
from agent_s.models.retry import parse_retry_after
from agent_s.models.types import ImagePart, Message, TextPart

MAX_TEXT_CHARS = 20_000  # of any reply or error text kept: the head and the tail


def clip_text(text: str, limit: int = MAX_TEXT_CHARS) -> str:
    """``text`` if it is at most ``limit`` characters, else its head and tail with a marker
    saying how much was left out (a 5 MB reply must not reach the trajectory or the model)."""
    if len(text) <= limit:
        return text
    half = limit // 2
    cut = len(text) - 2 * half
    return f"{text[:half]}\n[... {cut} characters left out ...]\n{text[-half:]}"


def _api_message(body: object) -> str:
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        if isinstance(inner, Mapping) and isinstance(inner.get("message"), str):
            return inner["message"][:500]
    return ""


def status_error(
    status: int, headers: Mapping[str, str], body: object, settings: ProviderSettings
) -> ModelError:
    """The typed error for an HTTP error status from the endpoint in ``settings``."""
    endpoint = settings.endpoint
    label, model = endpoint.label, settings.model
    api_message = _api_message(body)
    suffix = f": {api_message}" if api_message else ""
    retry_after = parse_retry_after(headers)
    if status in (401, 403):
        source = settings.key_source or endpoint.key_env
        if not settings.api_key:
            message = f"{label} requires an API key ({status}) and none was given: set {source}"
        elif status == 401:
            message = f"{label} rejected the key in {source} ({status})"
        else:
            message = f"{label} denied the key in {source} access to model {model!r} ({status})"
        return AuthenticationError(message, key_source=source, status=status)
    if status == 429:
        wait = f"; retry after {retry_after:g}s" if retry_after is not None else ""
        return RateLimited(f"{label} rate-limited the request (429){wait}", retry_after=retry_after)
    if status == 408:
        return Timeout(f"{label} timed the request out (408)", timeout_s=settings.timeout_s)
    if status >= 500 or status == 409:
        what = "is overloaded" if status == 529 else "is unavailable"
        return ProviderUnavailable(
            f"{label} {what} ({status}){suffix}", status=status, retry_after=retry_after
        )
    return BadRequest(
        f"{label} rejected the request for model {model!r} ({status}){suffix}",
        status=status,
        api_message=api_message,
    )


_OPEN_STRING = re.compile(r'"(?:[^"\\]|\\.)*\\?', re.DOTALL)


def _cut_off(err: json.JSONDecodeError) -> bool:
    """The JSON was valid as far as it went and then the body ended: at the very end, or in
    a string that never closes (the decoder points at the string's opening quote)."""
    doc, pos = err.doc, err.pos
    if not doc.strip():
        return False
    if pos >= len(doc.rstrip()):
        return True
    return doc[pos] == '"' and _OPEN_STRING.fullmatch(doc, pos) is not None


def _reach_fix(endpoint: Endpoint) -> str:
    """What to do when the endpoint cannot be reached: start the local server, or check the
    network (and the proxy the SDK reads from the environment) for a remote one."""
    host = (urlsplit(endpoint.base_url).hostname or "").lower()
    if host in ("localhost", "::1") or host.startswith("127."):
        return (
            "is the model server running and listening there? Start it, or give its address "
            "with --base-url"
        )
    if endpoint.hosted:
        return (
            "check this machine's network connection (a proxy goes in HTTPS_PROXY), or give "
            "another address with --base-url"
        )
    return (
        "check that the server is running and this machine can reach it (a proxy goes in "
        "HTTPS_PROXY), or correct --base-url"
    )


@contextmanager
def translated_errors(
    sdk: ModuleType, settings: ProviderSettings, timeout_s: float | None = None
) -> Iterator[None]:
    """Turn the SDK's exceptions raised inside the block into ModelErrors; ``timeout_s``: the
    attempt's timeout (default: the settings')."""
    endpoint = settings.endpoint
    timeout = settings.timeout_s if timeout_s is None else timeout_s
    try:
        yield
    except sdk.APITimeoutError as err:
        raise Timeout(
            f"no reply from {endpoint.label} within {timeout:g}s: check "
            "that the server is up and serving the model, or allow it longer with "
            "--model-timeout SECONDS ([model] timeout, AGENT_S_MODEL_TIMEOUT)",
            timeout_s=timeout,
        ) from err
    except sdk.APIConnectionError as err:
        cause = type(err.__cause__).__name__ if err.__cause__ else "connection error"
        at = "" if endpoint.base_url in endpoint.label else f" at {endpoint.base_url}"
        raise ProviderUnavailable(
            f"cannot reach {endpoint.label}{at} ({cause})", fix=_reach_fix(endpoint)
        ) from err
    except sdk.APIResponseValidationError as err:
        raise MalformedResponse(
            f"{endpoint.label} sent a reply that does not fit the API's schema",
            detail=clip_text(str(err), 500),
        ) from err
    except sdk.APIStatusError as err:
        raise status_error(err.status_code, dict(err.response.headers), err.body, settings) from err
    except json.JSONDecodeError as err:
        if _cut_off(err):
            raise IncompleteReply(
                f"{endpoint.label} sent a reply cut off mid-JSON after {len(err.doc)} characters",
                detail=str(err),
            ) from err
        raise MalformedResponse(
            f"{endpoint.label} sent a reply that is not valid JSON", detail=str(err)
        ) from err


def call_sdk(create: Callable[..., Any], kwargs: Mapping[str, Any]) -> Any:
    """Call an SDK ``create`` method; arguments its signature lacks go in ``extra_body``.

    SDK versions differ in which request fields they name (e.g. the newest Anthropic SDK has
    no ``temperature``); the wire format is what matters, and ``extra_body`` reaches it.
    """
    try:
        params = inspect.signature(create).parameters
    except (TypeError, ValueError):  # pragma: no cover - a C-implemented callable
        return create(**kwargs)
    named = {k: v for k, v in kwargs.items() if k in params}
    extra = {k: v for k, v in kwargs.items() if k not in params}
    if extra:
        named["extra_body"] = extra
    return create(**named)


def reply_dict(response: object, settings: ProviderSettings) -> dict[str, Any]:
    """The reply as the server sent it, or MalformedResponse if it is not a JSON object."""
    to_dict = getattr(response, "to_dict", None)
    data = to_dict(warnings=False) if callable(to_dict) else response
    if not isinstance(data, dict):
        raise MalformedResponse(
            f"{settings.endpoint.label} sent a reply that is not a JSON object",
            detail=repr(data)[:200],
        )
    return data


def field(data: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    """``data[key]`` checked to be of ``kind``; MalformedResponse otherwise."""
    value = data.get(key) if isinstance(data, Mapping) else None
    if not isinstance(value, kind):
        raise MalformedResponse(
            f"the reply's {where}.{key} is missing or not {getattr(kind, '__name__', kind)}",
            detail=repr(value)[:200],
        )
    return value


def count(data: object, *path: str) -> int:
    """A token count at ``path``; 0 where the API did not report it (or reported nonsense)."""
    for key in path:
        if not isinstance(data, Mapping):
            return 0
        data = data.get(key)
    if isinstance(data, bool) or not isinstance(data, int) or data < 0:
        return 0
    return data


def data_url(image: ImagePart) -> str:
    return f"data:{image.media_type};base64,{base64.b64encode(image.data).decode('ascii')}"


def b64(image: ImagePart) -> str:
    return base64.b64encode(image.data).decode("ascii")


def system_text(messages: tuple[Message, ...]) -> str:
    """All system messages' text, joined; images in a system message are a caller error."""
    texts = []
    for message in messages:
        if message.role != "system":
            continue
        for part in message.parts:
            if not isinstance(part, TextPart):
                raise ValueError("a system message can hold text only")
            texts.append(part.text)
    return "\n\n".join(texts)


def joined_text(message: Message) -> str:
    return "".join(p.text for p in message.parts if isinstance(p, TextPart))


def assistant_text(message: Message) -> str:
    """An assistant message's text; images there are a caller error (no API takes them)."""
    if any(not isinstance(p, TextPart) for p in message.parts):
        raise ValueError("an assistant message can hold text only")
    return joined_text(message)


def sdk_client_kwargs(settings: ProviderSettings) -> dict[str, Any]:
    """Constructor arguments shared by both SDKs: explicit key and URL, our timeout, no retries.

    Passing both explicitly keeps the SDKs from reading keys or URLs from the environment.
    """
    return {
        "api_key": settings.key_or_placeholder(),
        "base_url": settings.endpoint.base_url,
        "timeout": settings.timeout_s,
        "max_retries": 0,
    }
