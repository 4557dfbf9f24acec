"""The grounding-model path end to end: the real openai SDK talks to the scripted model server,
which replays coordinates in each family's format; the point must land on the target, on a
second monitor to the right of the first, through the frame of the image actually sent."""

from __future__ import annotations

import io

import pytest
from PIL import Image, ImageDraw

from agent_s.desktop.base import Monitor, ScreenGeometry, Screenshot
from agent_s.desktop.ops import Point
from agent_s.grounding import (
    GroundingChain,
    GroundingReplyError,
    ModelGrounder,
    NativeGrounder,
    NotFound,
    Observation,
    OcrGrounder,
    native_result,
)
from agent_s.grounding.transform import smart_resize
from agent_s.grounding.types import Box
from agent_s.images import EncodedImage, ImageSpec, encode_screenshot
from agent_s.models.endpoints import settings_from_env
from agent_s.models.factory import build_provider
from agent_s.models.types import Provider
from agent_s.testing.scripted_replies import reply
from agent_s.testing.scripted_server import ScriptedModelServer

# The second monitor, right of a 1280x800 primary; its screenshot is 1920x1080 pixels.
ORIGIN = Point(1280, 0)
GEOMETRY = ScreenGeometry((Monitor(0, 0, 1280, 800, primary=True), Monitor(1280, 0, 1920, 1080)))
TARGET = Box(1400, 700, 100, 40)  # screenshot pixels: a red button
TARGET_ON_SCREEN = Box(ORIGIN.x + TARGET.x, TARGET.y, TARGET.width, TARGET.height)


@pytest.fixture(scope="module")
def observation() -> Observation:
    image = Image.new("RGB", (1920, 1080), (235, 235, 235))
    draw = ImageDraw.Draw(image)
    draw.rectangle((TARGET.x, TARGET.y, TARGET.right, TARGET.bottom), fill=(200, 0, 0))
    return Observation(Screenshot(image, ORIGIN, 1.0), geometry=GEOMETRY)


def _provider(url: str, model: str) -> Provider:
    settings = settings_from_env("openai_compatible", model, base_url=url, environ={})
    return build_provider(settings, sleep=lambda s: None)


def _sent_size(server: ScriptedModelServer, index: int = 0) -> tuple[int, int]:
    (media_type, data), *_ = server.requests[index].images()
    assert media_type == "image/png"
    return Image.open(io.BytesIO(data)).size


def _prompt(server: ScriptedModelServer, index: int = 0) -> str:
    content = server.requests[index].body["messages"][0]["content"]
    return next(part["text"] for part in content if part["type"] == "text")


# The target's centre is screenshot pixel (1450, 720): 755.2/666.7 on a 0-1000 grid, and
# (1459.1, 728) in the 1932x1092 image a Qwen2.5-VL processor makes of 1920x1080.
CASES = [
    ("UI-TARS 1.0", "ui-tars-72b-dpo", "Action: click(start_box='(755,667)')", None),
    (
        "UI-TARS-1.5",
        "ByteDance-Seed/UI-TARS-1.5-7B",
        "Thought: the red button.\nAction: click(start_box='<|box_start|>(1459,728)<|box_end|>')",
        None,
    ),
    ("Seed point", "doubao-seed-1.6-vision", "<point>755 667</point>", None),
    ("Seed box", "doubao-seed-1.6-vision", "<bbox>730 648 780 685</bbox>", None),
    ("pixel box, downscaled", "gpt-4o", "[934, 467, 999, 493]", ImageSpec(max_long_side=1280)),
    ("0-1 normalised", "some-vlm", "(0.7552, 0.6667)", None),
]


@pytest.mark.parametrize(("label", "model", "answer", "spec"), CASES, ids=[c[0] for c in CASES])
def test_each_reply_format_lands_on_the_target(
    observation: Observation, label: str, model: str, answer: str, spec: ImageSpec | None
) -> None:
    with ScriptedModelServer([reply(answer)]) as server:
        grounder = ModelGrounder(_provider(server.openai_base_url, model), image_spec=spec)
        result = grounder.ground("the red button", observation)
    assert TARGET_ON_SCREEN.contains(result.point), (label, result)
    assert abs(result.point.x - (ORIGIN.x + 1450)) <= 2
    assert abs(result.point.y - 720) <= 2
    assert result.grounder == "model"
    assert result.details["model"] == model
    if "box" in label:
        assert result.box is not None
        assert result.box.contains(result.point)
    sent = _sent_size(server)
    assert sent == ((1280, 720) if spec else (1920, 1080))
    prompt = _prompt(server)
    if grounder.convention == "grid1000":
        assert "1000" in prompt
    elif grounder.convention == "smart_resize":  # asked in the frame the model sees
        assert "0 <= x < 1932 and 0 <= y < 1092" in prompt
        assert result.details["frame"] == [1932, 1092]
    else:
        assert f"0 <= x < {sent[0]} and 0 <= y < {sent[1]}" in prompt


@pytest.mark.parametrize(
    ("model", "answer", "reason"),
    [
        ("ui-tars-1.5-7b", "click(start_box='(1950,500)')", "out of bounds"),  # past 1932
        ("ui-tars-72b", "click(start_box='(1001,500)')", "out of bounds"),  # past the grid
        ("gpt-4o", "[10, 10, 3000, 20]", "out of bounds"),
        ("ui-tars-1.5-7b", "I think it is the red one", "unparseable"),
        ("ui-tars-1.5-7b", "(100, 100) (900, 900)", "several locations"),
    ],
)
def test_bad_replies_raise_instead_of_clicking(
    observation: Observation, model: str, answer: str, reason: str
) -> None:
    with ScriptedModelServer([reply(answer)]) as server:
        grounder = ModelGrounder(_provider(server.openai_base_url, model))
        with pytest.raises(GroundingReplyError) as err:
            grounder.ground("the red button", observation)
    assert err.value.reason == reason
    assert err.value.reply == answer


def test_a_model_saying_not_found_is_not_found(observation: Observation) -> None:
    with ScriptedModelServer([reply("not found")]) as server:
        grounder = ModelGrounder(_provider(server.openai_base_url, "ui-tars-1.5-7b"))
        with pytest.raises(NotFound, match="not on the screen"):
            grounder.ground("the Quit button", observation)


def test_the_chain_falls_through_ocr_to_the_model(observation: Observation) -> None:
    script = [reply("click(start_box='(1459,728)')"), reply("no idea")]
    with ScriptedModelServer(script) as server:
        model = ModelGrounder(_provider(server.openai_base_url, "ui-tars-1.5-7b"))
        chain = GroundingChain([OcrGrounder(), model])
        result = chain.ground("the red button", observation)
        with pytest.raises(NotFound) as err:  # the model's bad reply is an attempt, not a point
            chain.ground("the blue button", observation)
    assert result.grounder == "model"
    assert TARGET_ON_SCREEN.contains(result.point)
    assert [(a.grounder, a.outcome) for a in result.attempts] == [
        ("ocr", "not_found"),
        ("model", "answered"),
    ]
    assert [(a.grounder, a.outcome) for a in err.value.attempts] == [
        ("ocr", "not_found"),
        ("model", "error"),
    ]
    assert "unparseable" not in err.value.reason
    assert "model error" in err.value.reason
    assert len(server.requests) == 2  # the screenshot was encoded once, asked twice
    assert server.requests[0].images() == server.requests[1].images()


def test_an_offered_image_is_sent_only_when_it_has_the_very_pixels(
    observation: Observation,
) -> None:
    """The generation model's PNG of the same screen at the same size is sent as it is (no
    second encoding: its bytes, from another PNG encoder, reach the wire); a JPEG, or another
    size, is not taken, and the grounder encodes its own PNG."""
    image = observation.screenshot.image
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", compress_level=9)  # other bytes, the same pixels
    offered = EncodedImage(buffer.getvalue(), "image/png", 1920, 1080, 1920, 1080)
    jpeg = encode_screenshot(image, ImageSpec("jpeg"))
    smaller = encode_screenshot(image, ImageSpec(max_long_side=1280))
    with ScriptedModelServer([reply("(1450, 720)")] * 3) as server:
        for sent, taken in ((offered, True), (jpeg, False), (smaller, False)):
            grounder = ModelGrounder(_provider(server.openai_base_url, "some-vlm"))
            fresh = Observation(observation.screenshot, geometry=GEOMETRY)
            assert grounder.offer(fresh, sent) is taken
            assert TARGET_ON_SCREEN.contains(grounder.ground("the red button", fresh).point)
    wire = [request.images()[0] for request in server.requests]
    assert [media_type for media_type, _ in wire] == ["image/png"] * 3
    assert wire[0][1] == offered.data
    for _, data in wire[1:]:  # its own encoding, of every pixel
        assert data != offered.data
        assert Image.open(io.BytesIO(data)).tobytes() == image.tobytes()


def test_native_coordinates_use_the_image_the_model_saw(observation: Observation) -> None:
    # Claude saw the 1920x1080 screenshot at 1280x720 and clicked the button's centre there.
    sent = EncodedImage(b"", "image/png", 1280, 720, 1920, 1080)
    result = native_result("the red button", "(966, 480)", sent=sent, observation=observation)
    assert TARGET_ON_SCREEN.contains(result.point)
    assert result.grounder == "native"
    grounder = NativeGrounder(ImageSpec(max_long_side=1280))
    assert grounder.ground("(966, 480)", observation).point == result.point
    with pytest.raises(GroundingReplyError):
        grounder.ground("(1280, 10)", observation)  # x = 1280 is past a 1280-wide image


def test_smart_resize_matches_the_known_qwen_sizes() -> None:
    assert smart_resize(1920, 1080) == (1932, 1092)
    assert smart_resize(1280, 800) == (1288, 812)
    assert smart_resize(3840, 2160) == (3836, 2156)
    w, h = smart_resize(7680, 4320)  # over the pixel budget: scaled down
    assert w * h <= 16384 * 28 * 28
    assert w % 28 == 0
    assert h % 28 == 0
