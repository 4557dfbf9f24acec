"""``AgentS3``: the Agent S3 ``predict`` / ``reset`` contract, driven the way OSWorld runners
drive it (predict, execute the returned code in a separate process, next screenshot)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from pictures import png
from PIL import Image

from agent_s.compat import AgentS3
from agent_s.grounding import AccessibilityTree
from agent_s.testing.scripted_replies import reply
from agent_s.testing.scripted_server import ScriptedModelServer


def act(code: str) -> str:
    return f"Step.\n```python\n{code}\n```"


def engine(server: ScriptedModelServer) -> dict[str, Any]:
    return {
        "engine_type": "vllm",
        "model": "scripted-model",
        "base_url": server.openai_base_url,
        "api_key": "k-compat-123456",
    }


def test_sentinels_notes_and_reset_without_a_desktop(tmp_path: Path) -> None:
    from agent_s.grounding import NativeGrounder

    blank = png(Image.new("RGB", (1280, 800), "white"))
    script = [
        reply(act('agent.save_to_knowledge(["x = 3"])')),
        reply(act('agent.click("(100, 50)", num_clicks=2)')),
        reply(act("agent.done()")),
        reply(act("agent.fail()")),
    ]
    with ScriptedModelServer(script) as server:
        agent = AgentS3(
            engine(server),
            NativeGrounder(),
            platform="linux",
            enable_reflection=False,
            record_dir=tmp_path,
        )
        agent.reset()
        info, actions = agent.predict("task one", {"screenshot": blank})
        assert actions == ["WAIT"]
        assert info["action"] == "agent.save_to_knowledge(text=('x = 3',))"
        info, actions = agent.predict("task one", {"screenshot": blank})
        assert actions == [
            "import pyautogui\npyautogui.click(100, 50, clicks=2, interval=0.05, button='left')"
        ]
        assert agent.predict("task one", {"screenshot": blank})[1] == ["DONE"]
        agent.reset()
        assert agent.agent.notes == ()
        assert agent.predict("task two", {"screenshot": blank})[1] == ["FAIL"]
    assert "x = 3" in str(server.requests[1].body)
    assert "x = 3" not in str(server.requests[3].body)


def test_invalid_replies_become_fail_with_the_reason() -> None:
    blank = png(Image.new("RGB", (640, 400), "white"))
    with ScriptedModelServer([reply("hmm"), reply("")]) as server:
        agent = AgentS3(engine(server), None, platform="linux", enable_reflection=False)
        agent.agent.settings = agent.agent.settings.__class__(max_invalid_replies=1)
        info, actions = agent.predict("x", {"screenshot": blank})
    assert actions == ["FAIL"]
    assert "no usable action after 2 replies" in info["error"]


def test_an_observation_without_a_screenshot_is_refused_before_any_call() -> None:
    """Each bad observation raises a ValueError naming what was given; no model is asked (the
    script is empty and strict), and a good observation afterwards still works."""
    blank = png(Image.new("RGB", (640, 400), "white"))
    with ScriptedModelServer([reply(act("agent.done()"))]) as server:
        agent = AgentS3(engine(server), None, platform="linux", enable_reflection=False)
        for observation, said in (
            ({}, "got no 'screenshot' among its keys []"),
            ({"screenshot": None, "a": 1}, "got a NoneType"),
            ({"screenshot": b""}, "got empty bytes"),
            ({"screenshot": "screen.png"}, "got a str"),
            (["screenshot"], "got a list, not a mapping"),
            ({"screenshot": b"not a png"}, "the screenshot is not an image (9 bytes starting"),
        ):
            with pytest.raises(ValueError, match=re.escape(said)):
                agent.predict("x", observation)  # type: ignore[arg-type]
        assert server.requests == []
        assert agent.predict("x", {"screenshot": blank})[1] == ["DONE"]


@pytest.fixture
def bus(desktop: Any) -> None:
    """Bind AT-SPI in this process before ``apps`` notes the running processes."""
    AccessibilityTree().applications()


@pytest.mark.desktop
def test_an_osworld_style_loop_on_galculator(bus: None, apps: Any, x11: Any, desktop: Any) -> None:
    apps(["galculator"], window="galculator")
    x11.activate("galculator")
    x11.clipboard_set("")
    script = [
        reply(act('agent.click("the AC button")')),
        reply(act('agent.click("the 9 button")')),
        reply(act('agent.type(text="*5", enter=True)')),
        reply(act('agent.hotkey(["ctrl", "c"])')),
        reply(act("agent.done()")),
    ]
    with ScriptedModelServer(script) as server:
        # model-free grounding
        agent = AgentS3(engine(server), None, platform="linux", enable_reflection=False)
        agent.reset()
        done = False
        for _ in range(8):
            screenshot = png(x11.capture().image)
            info, actions = agent.predict("Compute 9 times 5", {"screenshot": screenshot})
            if actions == ["DONE"]:
                done = True
                break
            assert "import pyautogui" in actions[0], (info, actions)
            subprocess.run(
                [sys.executable, "-c", actions[0]], env=desktop.env, check=True, timeout=30
            )
            time.sleep(0.5)
    assert done
    deadline = time.monotonic() + 15
    while x11.clipboard_get().strip() != "45" and time.monotonic() < deadline:
        time.sleep(0.1)
    assert x11.clipboard_get().strip() == "45"


def _system(request: Any) -> str:
    first = request.body["messages"][0]
    assert first["role"] == "system"
    return str(first["content"])


@pytest.mark.parametrize(
    ("platform", "present", "absent"),
    [
        ("windows", ["Windows, one 1280x800 screen", "C:\\Users", "Start menu"], ["Spotlight"]),
        ("darwin", ["macOS, one 1280x800 screen", "command+s", "Spotlight"], ["ctrl+s"]),
        ("linux", ["Linux", "/home/NAME", "ctrl+s"], ["Spotlight", "C:\\Users"]),
    ],
)
def test_the_platform_given_reaches_the_prompt(
    platform: str, present: list[str], absent: list[str]
) -> None:
    """A runner driving a Windows or macOS machine from here gets that OS's hints."""
    blank = png(Image.new("RGB", (1280, 800), "white"))
    with ScriptedModelServer([reply(act("agent.done()"))]) as server:
        agent = AgentS3(engine(server), None, platform=platform)
        assert agent.predict("Open the notes", {"screenshot": blank})[1] == ["DONE"]
    system = _system(server.requests[0])
    for text in present:
        assert text in system, text
    for text in absent:
        assert text not in system, text
    with pytest.raises(ValueError, match="platform must be"):
        AgentS3(engine(server), None, platform="beos")


def test_the_grounder_given_decides_how_elements_are_described() -> None:
    """Model-free grounding asks for labels; a grounding model (Agent S3's usual set-up) for
    appearance. A screenshot alone lists no windows, so none are claimed; the date is sent."""
    blank = png(Image.new("RGB", (1280, 800), "white"))
    with ScriptedModelServer([reply(act("agent.done()"))] * 2) as server:
        AgentS3(engine(server), None, platform="linux").predict("x", {"screenshot": blank})
        grounder = {"model": "ui-tars-1.5-7b", "base_url": server.openai_base_url}
        AgentS3(engine(server), grounder, platform="linux").predict("x", {"screenshot": blank})
    labels, appearance = (_system(r) for r in server.requests)
    assert "exact visible label in double quotes first" in labels
    assert "a vision model" in appearance
    assert "exact visible label" not in appearance
    user = str(server.requests[0].body["messages"][1:])
    assert "Today is" in user
    assert "Open windows" not in user
    assert "No windows are open" not in user


# -- Agent S3's engine types ---------------------------------------------------------------------


def _one_step(params: dict[str, Any], environ: dict[str, str]) -> None:
    blank = png(Image.new("RGB", (1280, 800), "white"))
    agent = AgentS3(params, None, platform="linux", enable_reflection=False, environ=environ)
    assert agent.predict("Check the screen", {"screenshot": blank})[1] == ["DONE"]


@pytest.mark.parametrize(
    ("engine_type", "key_env", "url_env", "model", "sent_model"),
    [
        ("gemini", "GEMINI_API_KEY", "GEMINI_ENDPOINT_URL", "gemini-2.5-pro", "gemini-2.5-pro"),
        ("open_router", "OPENROUTER_API_KEY", "OPEN_ROUTER_ENDPOINT_URL", "openai/gpt-4o", None),
        ("vllm", "vLLM_API_KEY", "vLLM_ENDPOINT_URL", "Qwen2.5-VL-72B", None),
        ("huggingface", "HF_TOKEN", "HF_ENDPOINT_URL", None, "tgi"),
        ("parasail", "PARASAIL_API_KEY", "PARASAIL_ENDPOINT_URL", "parasail-qwen", None),
    ],
)
def test_openai_compatible_engines_read_agent_s3s_variables(
    engine_type: str, key_env: str, url_env: str, model: str | None, sent_model: str | None
) -> None:
    """Each engine reaches its endpoint with the key and URL from the variables Agent S3 reads;
    a key in the params wins over the variable; the temperature given is sent."""
    with ScriptedModelServer([reply(act("agent.done()"))] * 2) as server:
        environ = {key_env: f"env-{engine_type}-key", url_env: server.openai_base_url}
        params: dict[str, Any] = {"engine_type": engine_type, "temperature": 0.4}
        if model is not None:
            params["model"] = model
        _one_step(params, environ)
        _one_step({**params, "api_key": "param-key-1", "base_url": ""}, environ)
    first, second = server.requests
    for request in (first, second):
        assert request.path == "/v1/chat/completions"
        assert request.body["model"] == (sent_model or model)
        assert request.body["temperature"] == 0.4
        assert "max_tokens" in request.body
    assert first.headers["authorization"] == f"Bearer env-{engine_type}-key"
    assert second.headers["authorization"] == "Bearer param-key-1"


def test_azure_goes_through_the_sdks_azure_client() -> None:
    """azure_endpoint / api_version / AZURE_OPENAI_API_KEY as Agent S3 reads them: the
    deployment URL, the api-version query and the api-key header."""
    with ScriptedModelServer([reply(act("agent.done()"))] * 2) as server:
        environ = {
            "AZURE_OPENAI_API_KEY": "azure-env-key",
            "AZURE_OPENAI_ENDPOINT": server.base_url,
            "OPENAI_API_VERSION": "2024-10-21",
        }
        _one_step({"engine_type": "azure", "model": "gpt-4o", "temperature": 0.25}, environ)
        params = {
            "engine_type": "azure",
            "model": "my-o3-deployment",
            "azure_endpoint": server.base_url,
            "api_version": "2025-04-01-preview",
            "api_key": "azure-param-key",
            "temperature": 1.0,
        }
        _one_step(params, {})
    first, second = server.requests
    assert first.path == "/openai/deployments/gpt-4o/chat/completions"
    assert first.query == "api-version=2024-10-21"
    assert first.headers["api-key"] == "azure-env-key"
    assert first.body["temperature"] == 0.25
    assert "max_tokens" in first.body
    assert second.path == "/openai/deployments/my-o3-deployment/chat/completions"
    assert second.query == "api-version=2025-04-01-preview"
    assert second.headers["api-key"] == "azure-param-key"
    assert second.body["temperature"] == 1.0  # fixed by the user: sent as given
    assert "max_completion_tokens" in second.body  # what reasoning deployments take


def test_openai_and_anthropic_engines_and_the_temperature_default() -> None:
    """No temperature key: 0.0, as Agent S3 sends, where the model takes one; None: none sent."""
    with ScriptedModelServer([reply(act("agent.done()"))] * 4) as server:
        base = {"base_url": server.openai_base_url, "api_key": "sk-openai-1"}
        _one_step({"engine_type": "openai", "model": "gpt-4o", **base}, {})
        _one_step({"engine_type": "openai", "model": "gpt-5", **base}, {})
        _one_step({"engine_type": "openai", "model": "gpt-4o", "temperature": None, **base}, {})
        anthropic = {"base_url": server.base_url, "temperature": 0.6}
        _one_step(
            {"engine_type": "anthropic", "model": "claude-opus-9", **anthropic},
            {"ANTHROPIC_API_KEY": "sk-ant-env"},
        )
    sampling, reasoning, unset, claude = server.requests
    assert sampling.body["temperature"] == 0.0
    assert sampling.headers["authorization"] == "Bearer sk-openai-1"
    assert "temperature" not in reasoning.body
    assert "temperature" not in unset.body
    assert claude.path == "/v1/messages"
    sent_key = claude.headers.get("x-api-key") or claude.headers["authorization"]
    assert sent_key.removeprefix("Bearer ") == "sk-ant-env"
    assert claude.body["temperature"] == 0.6


def test_engine_defaults_and_what_is_missing_is_named() -> None:
    from agent_s.compat import GEMINI_URL, OPENROUTER_URL, PARASAIL_URL, model_config
    from agent_s.models.errors import AuthenticationError
    from agent_s.settings.config import ConfigError

    keys = {"GEMINI_API_KEY": "g", "OPENROUTER_API_KEY": "o", "PARASAIL_API_KEY": "p"}
    urls = {
        "gemini": GEMINI_URL,
        "open_router": OPENROUTER_URL,
        "parasail": PARASAIL_URL,
        "vllm": "http://localhost:8000/v1",
    }
    for engine_type, url in urls.items():
        config = model_config({"engine_type": engine_type, "model": "m"}, keys)
        assert (config.provider, config.base_url) == ("openai-compatible", url)
    assert model_config({"engine_type": "gemini", "model": "m"}, keys).api_key == "g"
    with pytest.raises(ConfigError, match="HF_ENDPOINT_URL"):
        model_config({"engine_type": "huggingface"}, {"HF_TOKEN": "h"})
    with pytest.raises(ConfigError, match="OPENAI_API_VERSION"):
        model_config({"engine_type": "azure", "model": "d", "azure_endpoint": "https://a"}, {})
    with pytest.raises(ConfigError, match="AZURE_OPENAI_ENDPOINT"):
        model_config({"engine_type": "azure", "model": "d", "api_version": "2024-10-21"}, {})
    with pytest.raises(ConfigError, match="unknown engine_type 'watsonx'.*azure.*parasail"):
        model_config({"engine_type": "watsonx", "model": "m"}, {})
    with pytest.raises(ConfigError, match="temperature must be a number"):
        model_config({"engine_type": "openai", "model": "gpt-4o", "temperature": "hot"}, {})
    with pytest.raises(AuthenticationError, match="GEMINI_API_KEY"):
        AgentS3({"engine_type": "gemini", "model": "gemini-2.5-pro"}, None, environ={})
    with pytest.raises(AuthenticationError, match="OPENROUTER_API_KEY"):
        AgentS3({"engine_type": "open_router", "model": "x/y", "api_key": ""}, None, environ={})


def test_reflection_is_on_by_default_as_in_agent_s3() -> None:
    blank = png(Image.new("RGB", (1280, 800), "white"))
    script = [
        reply(act('agent.hotkey(["ctrl", "s"])')),
        reply("ON TRACK: the file was saved."),
        reply(act("agent.done()")),
    ]
    with ScriptedModelServer(script) as server:
        agent = AgentS3(engine(server), None, platform="linux")
        agent.reset()
        assert "hotkey" in agent.predict("Save", {"screenshot": blank})[1][0]
        assert agent.predict("Save", {"screenshot": blank})[1] == ["DONE"]
    assert "You review the progress of an agent" in _system(server.requests[1])
    assert "ON TRACK: the file was saved." in str(server.requests[2].body)


# -- OSWorldACI: the grounding model's frame, the screen, literal points -------------------------


def _aci(
    server: ScriptedModelServer, frame: tuple[int, int] | None, screen: tuple[int, int]
) -> Any:
    from agent_s.compat import OSWorldACI

    grounding: dict[str, Any] = {
        "engine_type": "huggingface",
        "model": "ui-tars-1.5-7b",
        "base_url": server.openai_base_url,
        "api_key": "hf-grounding-key",
    }
    if frame is not None:
        grounding.update(grounding_width=frame[0], grounding_height=frame[1])
    return OSWorldACI(
        env=None,
        platform="linux",
        engine_params_for_generation=engine(server),
        engine_params_for_grounding=grounding,
        width=screen[0],
        height=screen[1],
    )


@pytest.mark.parametrize(
    ("frame", "screen", "shot", "answer", "clicked"),
    [
        # Agent S3's arithmetic: point * screen / grounding size
        ((1000, 1000), (1280, 800), (1280, 800), "(500, 250)", (640, 200)),
        ((1932, 1092), (1920, 1080), (1920, 1080), "(966, 546)", (960, 540)),
        # a HiDPI screenshot of a 1280x800 screen: code clicks in screen points
        ((1000, 1000), (1280, 800), (2560, 1600), "(250, 500)", (320, 400)),
        # no frame given: the family's own (UI-TARS-1.5: the smart-resized image)
        (None, (1280, 800), (1280, 800), "(644, 203)", (640, 200)),
    ],
)
def test_the_grounding_frame_decides_the_scaling(
    frame: tuple[int, int] | None,
    screen: tuple[int, int],
    shot: tuple[int, int],
    answer: str,
    clicked: tuple[int, int],
) -> None:
    image = png(Image.new("RGB", shot, "white"))
    script = [reply(act('agent.click("the blue Save button")')), reply(answer)]
    with ScriptedModelServer(script) as server:
        agent = AgentS3(
            engine(server), _aci(server, frame, screen), platform="linux", enable_reflection=False
        )
        info, actions = agent.predict("Save the file", {"screenshot": image})
    x, y = clicked
    assert actions[0].startswith(f"import pyautogui\npyautogui.click({x}, {y}, "), (info, actions)
    grounding = server.requests[1]
    assert grounding.body["model"] == "ui-tars-1.5-7b"
    assert grounding.headers["authorization"] == "Bearer hf-grounding-key"
    if frame is not None:
        assert f"0 <= x < {frame[0]} and 0 <= y < {frame[1]}" in str(grounding.body)


@pytest.mark.parametrize("grounded", ["model", "model-free"])
def test_literal_coordinates_are_used_as_coordinates(grounded: str) -> None:
    """A target that is a point is clicked there, with no grounding call, in every mode."""
    image = png(Image.new("RGB", (1280, 800), "white"))
    with ScriptedModelServer([reply(act('agent.click("(300, 420)")'))]) as server:
        aci = _aci(server, (1000, 1000), (1280, 800)) if grounded == "model" else None
        agent = AgentS3(engine(server), aci, platform="linux", enable_reflection=False)
        info, actions = agent.predict("Click there", {"screenshot": image})
    assert actions[0].startswith("import pyautogui\npyautogui.click(300, 420, "), (info, actions)
    assert info["grounding"][0]["grounder"] == "point"
    assert len(server.requests) == 1


def test_a_foreign_grounding_agent_is_refused_at_construction() -> None:
    class GuiAgentsACI:  # what gui_agents' OSWorldACI looks like to us: no ground()
        notes: list[str] = []

    with pytest.raises(TypeError, match="import OSWorldACI from agent_s.compat"):
        AgentS3({"engine_type": "vllm", "model": "m"}, GuiAgentsACI(), platform="linux")
    with pytest.raises(ValueError, match="grounding_width and grounding_height"):
        AgentS3(
            {"engine_type": "vllm", "model": "m"},
            {"engine_type": "vllm", "model": "g", "grounding_width": 1000},
            platform="linux",
        )


def test_anthropic_thinking_as_agent_s3_turns_it_on() -> None:
    with ScriptedModelServer([reply(act("agent.done()"))]) as server:
        params = {
            "engine_type": "anthropic",
            "model": "claude-opus-9",
            "base_url": server.base_url,
            "api_key": "sk-ant-param",
            "thinking": True,
        }
        _one_step(params, {})
    body = server.requests[0].body
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 4096}
    assert body["max_tokens"] > 4096
    assert "temperature" not in body  # the API refuses one with thinking


def test_our_settings_fill_in_only_what_agent_s3_leaves_open() -> None:
    from agent_s.compat import GEMINI_URL, model_config

    ours = {"AGENT_S_BASE_URL": "http://127.0.0.1:9/v1", "AGENT_S_MODEL_TIMEOUT": "17"}
    openai = model_config({"engine_type": "openai", "model": "gpt-4o"}, ours)
    assert openai.base_url == "http://127.0.0.1:9/v1"
    assert openai.timeout_s == 17
    gemini = model_config({"engine_type": "gemini", "model": "g"}, {**ours, "GEMINI_API_KEY": "k"})
    assert gemini.base_url == GEMINI_URL  # Agent S3 reads GEMINI_ENDPOINT_URL, not ours
    other = {**ours, "AGENT_S_PROVIDER": "anthropic"}
    assert model_config({"engine_type": "openai", "model": "gpt-4o"}, other).base_url is None


def test_a_grounding_answer_outside_its_frame_clicks_nothing() -> None:
    """Agent S3 takes the first two integers whatever they are; an answer outside the
    grounding frame is refused here and the step is a WAIT the model hears about."""
    image = png(Image.new("RGB", (1280, 800), "white"))
    script = [reply(act('agent.click("the blue Save button")')), reply("(1200, 50)")]
    with ScriptedModelServer(script) as server:
        agent = AgentS3(
            engine(server),
            _aci(server, (1000, 1000), (1280, 800)),
            platform="linux",
            enable_reflection=False,
        )
        info, actions = agent.predict("Save the file", {"screenshot": image})
    assert actions == ["WAIT"], info
    assert "outside" in json.dumps(info), info
