"""Every coordinate convention `agent-s model check` can name is a setting `run` and `ground`
accept, applied by the one transform chain: a reply written in it lands on the target, through
the real openai SDK and the scripted model server, for the grounding model and the native
worker alike."""

from __future__ import annotations

import pytest
from PIL import Image, ImageDraw

from agent_s.conventions import ConventionError, PointConvention
from agent_s.desktop.base import Screenshot
from agent_s.desktop.ops import Point
from agent_s.grounding import ModelGrounder, Observation
from agent_s.grounding.locate import Locator, NotLocated
from agent_s.grounding.types import Box
from agent_s.models.endpoints import settings_from_env
from agent_s.models.factory import build_provider
from agent_s.models.profiles import ProfileRegistry
from agent_s.models.types import Provider
from agent_s.settings.config import ConfigError, GroundingConfig
from agent_s.settings.read import load_settings
from agent_s.testing.scripted_replies import reply
from agent_s.testing.scripted_server import ScriptedModelServer

TARGET = Box(900, 150, 60, 30)  # a red button on a 1000x600 screen: centre (930, 165)


@pytest.fixture(scope="module")
def observation() -> Observation:
    image = Image.new("RGB", (1000, 600), (235, 235, 235))
    ImageDraw.Draw(image).rectangle((900, 150, 959, 179), fill=(200, 0, 0))
    return Observation(Screenshot(image, Point(0, 0), 1.0))


def _provider(url: str) -> Provider:
    settings = settings_from_env("openai_compatible", "my-vlm", base_url=url, environ={})
    return build_provider(settings, sleep=lambda s: None)


# (setting, the reply of a model writing the target's centre that way)
CASES = [
    ("pixels", "(930, 165)"),
    ("pixels-yx", "[165, 930]"),
    ("grid1000", "(930, 275)"),
    ("grid1000-yx", "[275, 930]"),
    ("unit-yx", "[0.275, 0.930]"),
    ("2000x1200", "(1860, 330)"),  # pixels of a 2000x1200 image, twice the size sent
    ("2000x1200-yx", "[330, 1860]"),
    ("smart_resize", "(924, 168)"),  # 1000x600 -> 1008x616 by Qwen's processor
]


@pytest.mark.parametrize(("name", "answer"), CASES, ids=[c[0] for c in CASES])
def test_a_grounding_model_answering_in_each_convention_lands_on_the_target(
    observation: Observation, name: str, answer: str
) -> None:
    with ScriptedModelServer([reply(answer)]) as server:
        grounder = ModelGrounder(
            _provider(server.openai_base_url), convention=PointConvention.parse(name)
        )
        result = grounder.ground("the red button", observation)
    assert TARGET.contains(result.point), (name, result.point)
    assert result.details["convention"] == name


def test_without_the_setting_a_y_x_reply_misses(observation: Observation) -> None:
    """The effect is the setting's: read as (x, y), the same reply is off the target."""
    with ScriptedModelServer([reply("[275, 930]")]) as server:
        result = ModelGrounder(_provider(server.openai_base_url), convention="grid1000").ground(
            "the red button", observation
        )
    assert not TARGET.contains(result.point)


def test_the_setting_reaches_run_s_grounders_from_flag_variable_and_profile(
    observation: Observation,
) -> None:
    """`--ground-convention` (or AGENT_S_GROUND_CONVENTION) reaches the grounding model and
    the native worker as `run` builds them; a model profile's point_convention too."""
    settings = load_settings(
        {"grounding": {"mode": "native"}},
        environ={"AGENT_S_GROUND_CONVENTION": "grid1000-yx"},
    )
    grounding = settings.build_grounding(environ={})
    assert str(grounding.convention) == "grid1000-yx"
    worker = ProfileRegistry().resolve("my-vlm", "openai_compatible")
    native = Locator.for_config(grounding, None, worker)
    located = native.locate(_targets("[275, 930]"), observation)
    assert TARGET.contains(located.points[0])  # type: ignore[union-attr]

    # no setting: the worker's profile says how it points
    profiled = ProfileRegistry((("my-vlm", {"point_convention": "grid1000_yx"}),)).resolve(
        "my-vlm", "openai_compatible"
    )
    assert profiled.point_convention == "grid1000-yx"
    by_profile = Locator.for_config(GroundingConfig("native"), None, profiled)
    located = by_profile.locate(_targets("[275, 930]"), observation)
    assert TARGET.contains(located.points[0])  # type: ignore[union-attr]
    plain = Locator.for_config(GroundingConfig("native"), None, worker)
    assert isinstance(plain.locate(_targets("[275, 930]"), observation), NotLocated)

    # the grounding model: the setting wins over its family's grid
    with ScriptedModelServer([reply("[165, 930]")]) as server:
        model = _provider(server.openai_base_url)
        chosen = GroundingConfig("model", server.openai_base_url, "ui-tars-72b", None)
        chosen = GroundingConfig(
            "model", chosen.url, chosen.model, convention=PointConvention.parse("pixels-yx")
        )
        located = Locator.for_config(chosen, model, worker).locate(
            _targets("the red button"), observation
        )
    assert TARGET.contains(located.points[0])  # type: ignore[union-attr]


def _targets(text: str) -> tuple:  # type: ignore[type-arg]
    from agent_s.actions.models import Target

    return (Target(kind="element", text=text),)


@pytest.mark.parametrize("bad", ["grid100", "pixels-zx", "0x10", "yx"])
def test_an_unknown_convention_is_refused_naming_the_choices(bad: str) -> None:
    with pytest.raises(ConventionError, match="pixels, grid1000, smart_resize, unit or WxH"):
        PointConvention.parse(bad)
    with pytest.raises(ConfigError) as caught:
        load_settings({}, environ={"AGENT_S_GROUND_CONVENTION": bad})
    assert "AGENT_S_GROUND_CONVENTION" in str(caught.value)
    assert "grid1000" in str(caught.value)


def test_names_read_back_as_written() -> None:
    for name, _ in CASES:
        assert str(PointConvention.parse(name)) == name
    assert str(PointConvention.parse("GRID1000_YX")) == "grid1000-yx"
    assert str(PointConvention.parse("pixels-xy")) == "pixels"
