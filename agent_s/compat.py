"""Agent S3's SDK contract, for OSWorld runners: switch with an import change.

    from agent_s.compat import AgentS3, OSWorldACI

    grounding_agent = OSWorldACI(
        env=env,
        platform="linux",
        engine_params_for_generation=engine_params,   # {"engine_type", "model", ...}
        engine_params_for_grounding=grounding_params,  # ... + "grounding_width"/"_height"
        width=1920,
        height=1080,
    )
    agent = AgentS3(engine_params, grounding_agent, platform="linux")
    agent.reset()
    info, actions = agent.predict(instruction, {"screenshot": png_bytes})
    # actions == ["import pyautogui\\npyautogui.click(...)"] or ["DONE"] / ["FAIL"] / ["WAIT"]

``predict`` runs one step of ``agent_s.Agent`` on the screenshot given (nothing is executed
here: the runner executes the returned code) and returns one action. ``platform`` is the OS
the screenshots come from: the prompts' hints follow it (and ``Requests.platform``, which the
actions are planned for), not this machine.

Engine params are read as Agent S3 reads them (``ENGINE_TYPES``): every ``engine_type`` it
accepts (``openai``, ``anthropic``, ``azure``, ``gemini``, ``open_router``, ``vllm``,
``huggingface``, ``parasail``) maps to one of our providers, with the key and endpoint taken
from ``api_key`` / ``base_url`` (``azure_endpoint`` / ``api_version`` for Azure) or else from
the variables Agent S3 reads (``GEMINI_API_KEY``, ``GEMINI_ENDPOINT_URL``, ...).
``temperature`` is fixed for every generation request when given; when the key is absent
0.0 is sent, as Agent S3 does, where the model takes a temperature.

The grounding model (``OSWorldACI``'s ``engine_params_for_grounding``, or a dict passed as
``grounding_agent``) answers in the frame ``grounding_width`` x ``grounding_height`` over the
screenshot when those are given, as in Agent S3 (point * screen / grounding size); without
them in its family's own frame (``grounding.model``). ``width`` x ``height`` is the screen the
runner's screenshots show: coordinates in the returned code are in that screen's points.
Without a grounding model, elements are found model-free (OCR; the accessibility tree of this
machine's desktop), and the model is asked for labels rather than appearance. A target that is
a literal point ``(x, y)`` is used as a point in every mode.

``"WAIT"`` is returned for steps with nothing to execute: a note saved, a target that could not
be found (the model is told and tries again next step). ``"FAIL"`` also ends a task the agent
cannot go on with (no usable reply, a refusal, a provider error); ``info["error"]`` says why.
Reflection is on by default, as in Agent S3.
"""

from __future__ import annotations

import glob
import io
import logging
import os
import platform as _platform
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image

from agent_s.desktop.base import DesktopBackend, Monitor, ScreenGeometry, Screenshot
from agent_s.grounding import Grounder, ModelGrounder, Observation
from agent_s.loop.agent import Agent
from agent_s.loop.context import ContextPolicy
from agent_s.models.endpoints import COMPATIBLE_KEY_ENV, PROVIDERS, ProviderName
from agent_s.models.errors import BudgetExceeded, ModelError
from agent_s.models.factory import build_provider
from agent_s.models.profiles import ProfileRegistry
from agent_s.prompting import OS_NAMES, OsName
from agent_s.record.result import Ending, RunEnded, RunStatus, error_ending, final_ending
from agent_s.settings.config import AgentConfig, ConfigError, GroundingConfig, ModelConfig


@dataclass(frozen=True)
class EngineType:
    """How one Agent S3 ``engine_type`` is reached: our provider, where the key and the
    endpoint come from when the params do not give them, and the defaults."""

    provider: ProviderName
    key_env: str | None  # the variable Agent S3 reads the key from
    url_env: str | None = None  # the variable Agent S3 reads the endpoint from
    default_url: str | None = None  # None: the provider's own (or required, see url_required)
    url_required: bool = False
    default_model: str | None = None


GEMINI_URL = "https://generativelanguage.googleapis.com/v1beta/openai/"
OPENROUTER_URL = "https://openrouter.ai/api/v1"
PARASAIL_URL = "https://api.parasail.io/v1"
VLLM_URL = "http://localhost:8000/v1"
OLLAMA_URL = "http://localhost:11434/v1"

#: Agent S3 ``engine_type`` values (and a few of ours) -> how each is reached.
ENGINE_TYPES: Mapping[str, EngineType] = {
    "openai": EngineType("openai", "OPENAI_API_KEY"),
    "anthropic": EngineType("anthropic", "ANTHROPIC_API_KEY"),
    "azure": EngineType("openai", "AZURE_OPENAI_API_KEY", "AZURE_OPENAI_ENDPOINT", None, True),
    "gemini": EngineType("openai-compatible", "GEMINI_API_KEY", "GEMINI_ENDPOINT_URL", GEMINI_URL),
    "open_router": EngineType(
        "openai-compatible", "OPENROUTER_API_KEY", "OPEN_ROUTER_ENDPOINT_URL", OPENROUTER_URL
    ),
    "vllm": EngineType("openai-compatible", "vLLM_API_KEY", "vLLM_ENDPOINT_URL", VLLM_URL),
    # Hugging Face TGI serves one model, which Agent S3 always calls "tgi"
    "huggingface": EngineType(
        "openai-compatible", "HF_TOKEN", "HF_ENDPOINT_URL", None, True, default_model="tgi"
    ),
    "parasail": EngineType(
        "openai-compatible", "PARASAIL_API_KEY", "PARASAIL_ENDPOINT_URL", PARASAIL_URL
    ),
    # ours, beyond Agent S3's
    "openai_responses": EngineType("openai-responses", "OPENAI_API_KEY"),
    "openai_compatible": EngineType("openai-compatible", COMPATIBLE_KEY_ENV, None, VLLM_URL),
    "ollama": EngineType("openai-compatible", None, None, OLLAMA_URL),
}
AZURE_VERSION_ENV = "OPENAI_API_VERSION"  # Agent S3 reads Azure's api-version from it


def _text(params: Mapping[str, Any], key: str) -> str | None:
    """A string parameter; "" (the runners' default for an unset flag) counts as unset."""
    value = params.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ConfigError(f"engine params: {key} must be a string, not {value!r}", setting=key)
    return value


def _engine(params: Mapping[str, Any], default: str) -> tuple[str, EngineType]:
    name = str(params.get("engine_type") or default)
    engine = ENGINE_TYPES.get(name)
    if engine is None:
        raise ConfigError(
            f"unknown engine_type {name!r}; known: {', '.join(ENGINE_TYPES)}",
            setting="engine_type",
        )
    return name, engine


def _temperature(params: Mapping[str, Any], model: str, provider: ProviderName) -> float | None:
    """The temperature given; when the key is absent Agent S3 sends 0.0, which we do where the
    model takes a temperature (reasoning models reject one)."""
    if "temperature" not in params:
        profile = ProfileRegistry().resolve(model, PROVIDERS[provider])
        return 0.0 if profile.accepts_temperature else None
    value = params["temperature"]
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"temperature must be a number, not {value!r}", setting="temperature")
    return float(value)


def model_config(
    engine_params: Mapping[str, Any],
    environ: Mapping[str, str] | None = None,
    *,
    default_temperature: bool = True,
    default_engine: str = "openai",
) -> ModelConfig:
    """Our model configuration from Agent S3's ``engine_params`` dict, read as Agent S3 reads
    it (see the module docstring); ``environ``: the variables (default: the process's).
    ``default_temperature`` False: no temperature unless the params give one.
    ``default_engine``: the ``engine_type`` when the params name none."""
    from agent_s.settings.read import load_settings

    env = os.environ if environ is None else environ
    name, engine = _engine(engine_params, default_engine)
    # ours (the configuration file, AGENT_S_*) fill in what the params and Agent S3's variables
    # leave open; a base URL only for an engine Agent S3 has no URL variable for, and only when
    # it was set for this provider (or for none)
    ours = load_settings(environ=env).model
    model = _text(engine_params, "model") or engine.default_model or ours.name
    if model is None:
        raise ConfigError(
            f'engine_type {name!r} needs a model: put "model" in the engine params',
            setting="model",
        )
    api_key, key_source = _text(engine_params, "api_key"), "engine_params['api_key']"
    if api_key is None and engine.key_env is not None:
        api_key, key_source = env.get(engine.key_env) or None, engine.key_env
    azure_version = None
    if name == "azure":
        url = _text(engine_params, "azure_endpoint") or _text(engine_params, "base_url")
        azure_version = _text(engine_params, "api_version") or env.get(AZURE_VERSION_ENV) or None
        if azure_version is None:
            raise ConfigError(
                f"engine_type 'azure' needs an api_version: put \"api_version\" in the engine "
                f"params or set {AZURE_VERSION_ENV}",
                setting="api_version",
            )
    else:
        url = _text(engine_params, "base_url")
    if url is None and engine.url_env is not None:
        url = env.get(engine.url_env) or None
    if url is None and engine.url_env is None and ours.provider in (None, engine.provider):
        url = ours.base_url
    url = url or engine.default_url
    if url is None and engine.url_required:
        field = "azure_endpoint" if name == "azure" else "base_url"
        raise ConfigError(
            f'engine_type {name!r} needs an endpoint: put "{field}" in the engine params or '
            f"set {engine.url_env}",
            setting=field,
        )
    temperature = (
        _temperature(engine_params, model, engine.provider)
        if default_temperature or "temperature" in engine_params
        else None
    )
    return ModelConfig(
        engine.provider,
        model,
        url,
        api_key,
        key_source if api_key else (engine.key_env or ""),
        ours.timeout,
        temperature=temperature,
        azure_api_version=azure_version,
    )


ANTHROPIC_THINKING_BUDGET = 4096  # Agent S3's budget when its anthropic "thinking" is on


def profiles_for(engine_params: Mapping[str, Any], config: ModelConfig) -> ProfileRegistry:
    """The model profiles, with Anthropic's extended thinking on for this model when the
    params say ``"thinking": True`` (Agent S3's budget: 4096 tokens on top of the answer's)."""
    registry = ProfileRegistry()
    if config.api == "anthropic" and engine_params.get("thinking"):
        thinking = {"supports_thinking": True, "thinking_budget_tokens": ANTHROPIC_THINKING_BUDGET}
        registry = registry.with_overrides({glob.escape(config.model): thinking})
    return registry


def _frame_size(params: Mapping[str, Any]) -> tuple[int, int] | None:
    """``grounding_width`` x ``grounding_height``, when both are given."""
    width, height = params.get("grounding_width"), params.get("grounding_height")
    if width is None and height is None:
        return None
    if (
        isinstance(width, int)
        and isinstance(height, int)
        and not isinstance(width, bool)
        and not isinstance(height, bool)
        and width > 0
        and height > 0
    ):
        return width, height
    raise ConfigError(
        f"grounding_width and grounding_height must both be positive integers, not "
        f"{width!r} x {height!r}",
        setting="grounding_width",
    )


def grounding_model(
    engine_params: Mapping[str, Any], environ: Mapping[str, str] | None = None
) -> tuple[ModelGrounder, GroundingConfig]:
    """The grounding model of Agent S3's grounding engine params, in the frame they set, and
    what ``Agent`` is told of it (its key is then redacted from every record). Without an
    ``engine_type`` it is an OpenAI-compatible server (``model``, ``base_url``)."""
    config = model_config(
        engine_params, environ, default_temperature=False, default_engine="openai_compatible"
    )
    grounder = ModelGrounder(
        build_provider(config.settings()), frame_size=_frame_size(engine_params)
    )
    return grounder, GroundingConfig("model", config.base_url, config.model, config.api_key)


def observation_from_png(data: bytes, screen: tuple[int, int] | None = None) -> Observation:
    """An observation from screenshot bytes alone: one monitor, ``screen`` (width, height)
    points large (default: the image's size; a screenshot at another scale, the same in both
    directions, maps onto it)."""
    try:
        with Image.open(io.BytesIO(data)) as opened:
            image = opened.convert("RGB")
    except (OSError, SyntaxError, ValueError) as err:  # UnidentifiedImageError is an OSError
        raise ValueError(
            f"the screenshot is not an image ({len(data)} bytes starting {bytes(data[:8])!r}): "
            "pass the screen as PNG bytes"
        ) from err
    width, height, scale = image.width, image.height, 1.0
    if screen is not None and screen != image.size:
        sx, sy = image.width / screen[0], image.height / screen[1]
        if abs(sx - sy) > 0.01 * max(sx, sy):
            raise ValueError(
                f"the {image.width}x{image.height} screenshot does not show a "
                f"{screen[0]}x{screen[1]} screen (a different aspect ratio): pass the screen "
                "size the screenshots are taken of as width and height"
            )
        width, height, scale = screen[0], screen[1], sx
    geometry = ScreenGeometry((Monitor(0, 0, width, height, primary=True),))
    return Observation(Screenshot(image, scale=scale), (), geometry)


class OSWorldACI:
    """Agent S3's grounding agent, as its OSWorld runners build it: the grounding model and the
    screen size, handed to ``AgentS3``. ``env`` is kept for the runner (actions are executed
    by the runner; the code agent is not offered, as the code would run here, not in ``env``).
    """

    def __init__(
        self,
        env: Any,
        platform: str,
        engine_params_for_generation: Mapping[str, Any],
        engine_params_for_grounding: Mapping[str, Any] | None,
        width: int = 1920,
        height: int = 1080,
        code_agent_budget: int = 20,
        code_agent_engine_params: Mapping[str, Any] | None = None,
        *,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        if platform not in OS_NAMES:
            raise ConfigError(
                f"platform must be linux, windows or darwin, not {platform!r}", setting="platform"
            )
        if not all(isinstance(v, int) and v > 0 for v in (width, height)):
            raise ConfigError(
                f"width and height must be positive, not {width!r} x {height!r}", setting="width"
            )
        self.env = env
        self.platform: OsName = platform
        self.width, self.height = width, height
        self.engine_params_for_generation = dict(engine_params_for_generation)
        self.engine_params_for_grounding = dict(engine_params_for_grounding or {})
        self.code_agent_budget = code_agent_budget
        self.code_agent_engine_params = code_agent_engine_params
        self.notes: list[str] = []  # Agent S3's knowledge buffer, kept in step by AgentS3
        self.grounder: ModelGrounder | None = None
        self.grounding = GroundingConfig()
        if engine_params_for_grounding:
            self.grounder, self.grounding = grounding_model(engine_params_for_grounding, environ)


class AgentS3:
    """The Agent S3 interface over ``agent_s.Agent``.

    ``engine_params``: Agent S3's dict (``engine_type``, ``model``, ``base_url``, ``api_key``,
    ``temperature``, ...). ``grounding_agent``: an ``OSWorldACI`` (as Agent S3's runners pass),
    a dict of grounding engine params, a ``Grounder`` of ours, or None for model-free grounding.
    ``max_trajectory_length``: screenshots kept in each request (Agent S3: 8).
    ``enable_reflection``: a reflection call before each step after the first (Agent S3: on).
    """

    def __init__(
        self,
        engine_params: Mapping[str, Any],
        grounding_agent: OSWorldACI | Grounder | Mapping[str, Any] | None = None,
        platform: str = _platform.system().lower(),
        max_trajectory_length: int = 8,
        enable_reflection: bool = True,
        *,
        max_steps: int = 100,
        record_dir: str | Path | None = None,
        backend: DesktopBackend | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        if platform not in OS_NAMES:
            raise ConfigError(
                f"platform must be linux, windows or darwin, not {platform!r}", setting="platform"
            )
        self.platform: OsName = platform
        self.aci: OSWorldACI | None = None
        grounder: Grounder | None = None
        grounding = GroundingConfig()
        if isinstance(grounding_agent, OSWorldACI):
            self.aci, grounder = grounding_agent, grounding_agent.grounder
            grounding = grounding_agent.grounding
        elif isinstance(grounding_agent, Mapping):
            grounder, grounding = grounding_model(grounding_agent, environ)
        elif grounding_agent is not None:
            if not callable(getattr(grounding_agent, "ground", None)):
                raise TypeError(
                    "grounding_agent must be an agent_s.compat.OSWorldACI, a dict of grounding "
                    f"engine params, an agent_s Grounder or None, not {type(grounding_agent)!r} "
                    "(import OSWorldACI from agent_s.compat, not from gui_agents)"
                )
            grounder = grounding_agent
        self.screen = (self.aci.width, self.aci.height) if self.aci is not None else None
        settings = AgentConfig.from_env(
            max_steps=max_steps,
            reflection=enable_reflection,
            record_dir=Path(record_dir) if record_dir is not None else None,
            context=ContextPolicy(keep_images=max(1, max_trajectory_length)),
        )
        model = model_config(engine_params, environ)
        self.agent = Agent(
            model,
            profiles=profiles_for(engine_params, model),
            settings=settings,
            grounding=grounding,
            grounder=grounder,
            backend=backend,
            platform=platform,
        )
        self.logger: logging.Logger | None = None
        self._instruction: str | None = None
        self._ended: str | None = None

    def reset(self, runtime_logger: logging.Logger | None = None, **context: Any) -> None:
        """Start over: the next ``predict`` begins a new task. ``runtime_logger`` (which
        OSWorld's runners pass) gets a line per step; ``context`` (OSWorld's ``vm_ip=``,
        ``result_dir=``) is accepted and not needed: the runner executes the actions."""
        self.agent.reset()
        self.logger = runtime_logger
        self._instruction = None
        self._ended = None
        if self.aci is not None:
            self.aci.notes.clear()

    def predict(
        self, instruction: str, observation: Mapping[str, Any]
    ) -> tuple[dict[str, Any], list[str]]:
        """One step on ``observation["screenshot"]`` (PNG bytes): (info, [code or sentinel]).
        An observation without a readable screenshot raises ValueError before anything starts."""
        data = observation.get("screenshot") if isinstance(observation, Mapping) else None
        if not isinstance(data, (bytes, bytearray, memoryview)) or not data:
            if not isinstance(observation, Mapping):
                got = f"a {type(observation).__name__}, not a mapping"
            elif "screenshot" not in observation:
                got = f"no 'screenshot' among its keys {sorted(map(str, observation))}"
            else:
                got = "empty bytes" if data == b"" else f"a {type(data).__name__}"
            raise ValueError(
                "predict needs observation['screenshot']: the screen as PNG bytes, as OSWorld's "
                f"env.step and env.reset return it (got {got})"
            )
        screen = observation_from_png(bytes(data), self.screen)
        if instruction != self._instruction:
            self.agent.start(instruction)
            self._instruction, self._ended = instruction, None
        if self._ended is not None:
            return {"error": f"the task already ended ({self._ended})"}, [self._ended]
        try:
            step = self.agent.step(screen, execute=False)
        except (RunEnded, ModelError, BudgetExceeded) as err:
            self._ended = "FAIL"
            ending = error_ending(err)
            self.agent.end(ending or Ending(RunStatus.ERROR, "model_error", str(err)))
            self._log(f"FAIL: {type(err).__name__}: {err}")
            return {"error": f"{type(err).__name__}: {err}"}, ["FAIL"]
        acted = step.outcome in ("ok", "terminal")
        code = step.code if acted and step.code else "WAIT"
        if step.action is not None and step.terminal is not None:
            self._ended = code
            self.agent.end(final_ending(step.action))
        if self.aci is not None:
            self.aci.notes[:] = self.agent.notes
        info = {
            "step": step.step,
            "plan": step.reply,
            "action": step.action_text,
            "grounding": [g.model_dump(mode="json") for g in step.grounding],
            "outcome": "ok" if acted else step.outcome,
            "detail": step.detail,
            "usage": dict(step.usage.__dict__),
        }
        self._log(f"step {step.step}: {step.action_text} -> {code.splitlines()[-1]}")
        return info, [code]

    def _log(self, line: str) -> None:
        if self.logger is not None:
            self.logger.info("%s", line)


__all__ = [
    "ENGINE_TYPES",
    "AgentS3",
    "EngineType",
    "OSWorldACI",
    "grounding_model",
    "model_config",
    "observation_from_png",
    "profiles_for",
]
