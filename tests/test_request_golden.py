"""Golden requests: the whole first request of one task, as each provider API receives it.

For every grounding mode (``auto``: accessibility + OCR, the default; ``model``: a grounding
model; ``native``: the model points itself; ``auto`` with set-of-marks, ``marks``: numbered
marks on the controls of the screenshot, listed in the request) and every provider API (OpenAI
Chat Completions, OpenAI Responses, Anthropic Messages), the real ``Agent`` takes its first step
on a recorded desktop (a fixed screenshot, two open windows, a fixed date) and sends its request
through the real vendor SDK to the scripted server. The body the server received (system
prompt, user text, image sizes, every parameter) is compared with
``tests/snapshots/request_*.txt``, so every change to what a model is sent shows up in review.
Images are shown as their media type and size. After a meant change, rewrite them with
``AGENT_S_UPDATE_SNAPSHOTS=1 .venv/bin/pytest tests/test_request_golden.py`` and review the diff.
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import re
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from PIL import Image, ImageDraw
from snapshots_check import assert_snapshot as check_snapshot

from agent_s import Agent, AgentConfig, GroundingConfig, ModelConfig
from agent_s.desktop import RecordingBackend
from agent_s.desktop.base import WindowInfo
from agent_s.settings.config import ProviderName
from agent_s.testing.scripted_replies import reply
from agent_s.testing.scripted_server import RecordedRequest, ScriptedModelServer

KEY = "sk-golden-0123456789abcdef"
TASK = "Add the line 'Total: 42' at the end of notes.txt in Mousepad and save the file."
TODAY = date(2026, 3, 14)
WINDOWS = (
    WindowInfo(11, "notes.txt - Mousepad", "Mousepad", 301, 80, 60, 1100, 800, active=True),
    WindowInfo(12, "user@host: ~", "XTerm", 302, 900, 500, 900, 500),
)
#: Agent S3's worker system prompt, in characters (REFERENCE.md): ours must stay smaller.
AGENT_S3_WORKER_CHARS = 12_900
# name -> (provider, model): one current model per API, so the profiles in use are real ones
APIS: dict[str, tuple[ProviderName, str]] = {
    "openai_chat": ("openai", "gpt-4.1"),
    "openai_responses": ("openai-responses", "gpt-5"),
    "anthropic_messages": ("anthropic", "claude-haiku-4-5"),
}
MODES = ("auto", "model", "native")
_DATA_URL = re.compile(r"^data:(image/[a-z]+);base64,(.*)$", re.DOTALL)


def _screen() -> Image.Image:
    """A fixed 1920x1080 desktop: an editor window with a few lines, a terminal behind it."""
    image = Image.new("RGB", (1920, 1080), (52, 73, 94))
    draw = ImageDraw.Draw(image)
    draw.rectangle((900, 500, 1800, 1000), fill=(20, 20, 20))
    draw.rectangle((80, 60, 1180, 860), fill=(250, 250, 250))
    draw.rectangle((80, 60, 1180, 90), fill=(220, 220, 220))
    draw.text((100, 70), "notes.txt - Mousepad", fill="black")
    for row, line in enumerate(["Groceries", "Rent", "Books"]):
        draw.text((100, 120 + 24 * row), line, fill="black")
    return image


def _image_label(media_type: str, data: str) -> str:
    try:
        raw = base64.b64decode(data, validate=True)
    except binascii.Error as err:  # the snapshot must not hide a malformed image
        raise AssertionError(f"an image is not valid base64: {err}") from err
    with Image.open(io.BytesIO(raw)) as image:
        assert image.format is not None
        assert f"image/{image.format.lower()}" == media_type, (image.format, media_type)
        return f"[image {media_type} {image.width}x{image.height}]"


def _images_shown(value: Any) -> Any:
    """``value`` with every base64 image replaced by its media type and size."""
    if isinstance(value, dict):
        if value.get("type") == "base64" and isinstance(value.get("data"), str):
            return _image_label(str(value["media_type"]), value["data"])
        return {key: _images_shown(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_images_shown(item) for item in value]
    if isinstance(value, str) and (match := _DATA_URL.match(value)):
        return _image_label(match.group(1), match.group(2))
    return value


def _lines(value: Any, indent: str = "") -> list[str]:
    """A YAML-like listing: keys in the order sent, multi-line text as indented blocks."""
    out: list[str] = []
    items = value.items() if isinstance(value, dict) else ((None, v) for v in value)
    for key, item in items:
        head = f"{indent}{key}:" if key is not None else f"{indent}-"
        if isinstance(item, (dict, list)) and item:
            out.append(head)
            out += _lines(item, indent + "  ")
        elif isinstance(item, str) and "\n" in item:
            out.append(f"{head} |")
            out += [f"{indent}    {line}".rstrip() for line in item.split("\n")]
        else:
            shown = item if isinstance(item, str) and item.startswith("[image ") else None
            out.append(f"{head} {shown or json.dumps(item, ensure_ascii=False)}")
    return out


def wire_text(request: RecordedRequest) -> str:
    """The request as the API received it, for a snapshot (images as type and size)."""
    body = _images_shown(request.body)
    return "\n".join([f"POST {request.path}", *_lines(body)]) + "\n"


def assert_snapshot(name: str, text: str) -> None:
    check_snapshot(name, text, what="the first request")


def first_request(
    api: str, mode: str, *, settings_file: Path | None = None, marks: bool = False
) -> RecordedRequest:
    """The first request of the task, as the scripted server received it. ``settings_file``:
    the grounding mode comes from ``AGENT_S_GROUND*`` variables, as a user sets it, with this
    (empty) configuration file. ``marks``: set-of-marks on (``AGENT_S_MARKS=on`` with
    ``settings_file``)."""
    provider, model_name = APIS[api]
    answer = "The editor shows notes.txt.\n```python\nagent.done()\n```"
    with ScriptedModelServer([reply(answer)]) as server:  # strict: no grounding request
        base = server.base_url if provider == "anthropic" else server.openai_base_url
        url, ground_model = server.openai_base_url, "ui-tars-1.5-7b"
        if settings_file is not None:
            environ = {"AGENT_S_GROUND": mode, "AGENT_S_CONFIG": str(settings_file)}
            if marks:
                environ["AGENT_S_MARKS"] = "on"
            if mode == "model":
                environ |= {"AGENT_S_GROUND_URL": url, "AGENT_S_GROUND_MODEL": ground_model}
            grounding = GroundingConfig.from_env(environ=environ)
        elif mode == "model":
            grounding = GroundingConfig("model", url=url, model=ground_model, marks=marks)
        else:
            grounding = GroundingConfig(mode, marks=marks)  # type: ignore[arg-type]
        agent = Agent(
            ModelConfig(provider, model_name, base, KEY),
            settings=AgentConfig(settle_seconds=0, retry_attempts=1, desktop_name="openbox"),
            grounding=grounding,
            backend=RecordingBackend([_screen()], windows=WINDOWS),
            platform="linux",
        )
        agent.start(TASK, today=TODAY)
        step = agent.step()
        assert step.outcome == "terminal", step.detail
    assert len(server.requests) == 1
    return server.requests[0]


def system_prompt(request: RecordedRequest) -> str:
    body = request.body
    if "system" in body:  # Anthropic Messages
        return str(body["system"])
    if "instructions" in body:  # OpenAI Responses
        return str(body["instructions"])
    first = body["messages"][0]  # OpenAI Chat Completions
    assert first["role"] == "system"
    return str(first["content"])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("api", sorted(APIS))
def test_the_first_request_matches_its_snapshot(api: str, mode: str) -> None:
    request = first_request(api, mode)
    text = wire_text(request)
    assert KEY not in text
    assert "Today is Saturday, 14 March 2026 (2026-03-14)." in text
    assert '- "notes.txt - Mousepad" (Mousepad), focused' in text
    assert '- "user@host: ~" (XTerm)' in text
    assert "Today is" not in system_prompt(request)  # the date stays out of the cached part
    assert "notes.txt - Mousepad" not in system_prompt(request)
    assert_snapshot(f"request_{mode}_{api}", text)


@pytest.mark.parametrize("api", sorted(APIS))
def test_the_first_request_with_marks_matches_its_snapshot(api: str) -> None:
    """Set-of-marks: the prompt says how to name a mark, the action list offers ``mark=``, and
    the request lists the marks found on the (fixed) screenshot, before the closing line."""
    request = first_request(api, "auto", marks=True)
    text = wire_text(request)
    system = system_prompt(request)
    assert "agent.click(mark=17)" in system
    assert "mark: instead of element_description" in system
    assert "exact visible label in double quotes first" in system  # the rest is described
    assert "The marks on this screenshot" not in system  # they change: in the request
    listed = text.index("The marks on this screenshot")
    assert listed < text.index("This is step 1")
    assert '"Groceries"' in text[listed:]
    assert_snapshot(f"request_marks_{api}", text)


def test_each_grounding_mode_gets_its_own_description_guidance(tmp_path: Path) -> None:
    """The mode a user sets (``--ground`` / ``AGENT_S_GROUND`` / ``[grounding] mode``) decides
    the guidance, and gives the same request as the SDK's ``GroundingConfig``."""
    empty = tmp_path / "config.toml"
    empty.write_text("")
    prompts = {
        mode: system_prompt(first_request("openai_chat", mode, settings_file=empty))
        for mode in MODES
    }
    for mode in MODES:
        assert prompts[mode] == system_prompt(first_request("openai_chat", mode))
    assert "exact visible label in double quotes first" in prompts["auto"]
    assert "a vision model" in prompts["model"]
    assert "exact visible label" not in prompts["model"]
    assert "You point at screen elements yourself" in prompts["native"]
    assert "Never write coordinates yourself" not in prompts["native"]
    assert len(set(prompts.values())) == 3
    marked = system_prompt(first_request("openai_chat", "auto", settings_file=empty, marks=True))
    assert marked == system_prompt(first_request("openai_chat", "auto", marks=True))
    assert "Each screenshot you are sent carries numbered marks" in marked
    assert "numbered marks" not in prompts["auto"]
    assert "mark=" not in prompts["auto"]


def test_the_worker_system_prompt_is_smaller_than_agent_s3s() -> None:
    for mode in MODES:
        size = len(system_prompt(first_request("anthropic_messages", mode)))
        assert 4000 < size < AGENT_S3_WORKER_CHARS, (mode, size)
    size = len(system_prompt(first_request("anthropic_messages", "auto", marks=True)))
    assert 4000 < size < AGENT_S3_WORKER_CHARS, ("marks", size)


def test_the_wire_listing_shows_every_image_as_its_size() -> None:
    body = {
        "messages": [
            {"content": [{"type": "image_url", "image_url": {"url": _data_url(40, 30)}}]},
            {"source": {"type": "base64", "media_type": "image/png", "data": _b64(8, 6)}},
        ],
        "text": "two\nlines",
    }
    shown = _lines(_images_shown(body))
    assert shown == [
        "messages:",
        "  -",
        "    content:",
        "      -",
        '        type: "image_url"',
        "        image_url:",
        "          url: [image image/png 40x30]",
        "  -",
        "    source: [image image/png 8x6]",
        "text: |",
        "    two",
        "    lines",
    ]
    with pytest.raises(AssertionError, match="not valid base64"):
        _images_shown({"type": "base64", "media_type": "image/png", "data": "%%%"})


def _b64(width: int, height: int) -> str:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height)).save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode()


def _data_url(width: int, height: int) -> str:
    return f"data:image/png;base64,{_b64(width, height)}"


def test_an_unknown_platform_is_refused_with_the_choices() -> None:
    from agent_s.settings.config import ConfigError

    with pytest.raises(ConfigError, match="platform must be one of linux, windows, darwin"):
        Agent(ModelConfig("openai", "gpt-4.1", "http://127.0.0.1:9/v1", KEY), platform="beos")  # type: ignore[arg-type]
