"""The settings: one typed model, read once at the edge from the configuration file, the
``AGENT_S_*`` environment variables and explicit values (command-line flags, SDK arguments).

    settings = load_settings(flag_values({"--model": "gpt-4o", "--max-steps": 20}))
    agent = Agent(
        settings.build_model(),
        settings=settings.build_agent_config(),
        grounding=settings.build_grounding(),
        profiles=settings.build_profiles(),
    )

Precedence, later sources winning: a command's defaults (``defaults``: ``agent-s run`` asks
before risky actions, ``bench run`` runs code under bubblewrap where it works), the file, the
variables, the flags. Only the names ``[secrets]`` marks add up instead: a variable marked
secret anywhere stays secret.

The file is ``$AGENT_S_CONFIG`` (an error if it does not exist) or
``~/.config/agent-s/config.toml`` (skipped if it does not exist)::

    [model]       provider, name, base_url, timeout (seconds per attempt at a model call)
    [grounding]   mode, url, model, marks (set-of-marks: numbered marks on the screenshot),
                  convention (how the pointing model writes a point: agent_s.conventions)
    [limits]      max_steps, max_cost (USD), max_tokens, max_seconds
    [run]         reflection, a11y_snapshot, record_dir, monitor
    [safety]      mode, allow_apps, allow_paths, secret_apps, allow_hosts, [[safety.rules]]
    [code_agent]  enabled, max_steps, timeout, sandbox, memory_mb, workdir, writable, ...
    [secrets]     env (names of variables holding secrets), files (one secret per line)
    [memory]      enabled, path, k, max_entries, max_bytes (agent_s.memory; ``agent-s run``)
    [profiles."gpt-4o*"]   input_price, output_price, max_output_tokens, ... (ModelProfile)

``SETTINGS`` says which flag and which variable set which setting. An unknown key, a value of
the wrong type, a bad variable: one ``ConfigError`` naming the setting and where it was set.
API keys are never settings: ``--api-key`` or the provider's variable (``build_model``).
The resolved settings serialise (``to_json``) for processes that must not read them again.
"""

from __future__ import annotations

import os
import sys
import types
import typing
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import fields, is_dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from agent_s.conventions import PointConvention, point_convention
from agent_s.desktop.monitors import MonitorChoice, parse_monitor_choice
from agent_s.models.endpoints import PROVIDERS, ProviderName, settings_from_env
from agent_s.models.errors import ProfileConfigError
from agent_s.models.profiles import ProfileRegistry
from agent_s.settings.config import (
    DEFAULT_MAX_STEPS,
    READERS,
    AgentConfig,
    CodeAgentConfig,
    ConfigError,
    GroundingConfig,
    GroundMode,
    MemoryConfig,
    ModelConfig,
    PlanMode,
    PlanSettings,
    SafetyConfig,
    SecretsConfig,
    UserPath,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

CONFIG_ENV = "AGENT_S_CONFIG"
DEFAULT_CONFIG_PATH = Path("~/.config/agent-s/config.toml")

Where = tuple[str | int, ...]  # where a value sits: ("safety", "rules", 0, "text")
# a source, for error messages: its name ("flag", "env", the file, "default"), its values, and
# for variables, each setting's (variable, text)
_Layer = tuple[str, Mapping[str, Any], Mapping[Where, tuple[str, str]]]

# setting (table, key as in the file) -> (its flag, its environment variable); "" for none
SETTINGS: Mapping[tuple[str, str], tuple[str, str]] = {
    ("model", "provider"): ("--provider", "AGENT_S_PROVIDER"),
    ("model", "name"): ("--model", "AGENT_S_MODEL"),
    ("model", "base_url"): ("--base-url", "AGENT_S_BASE_URL"),
    ("model", "timeout"): ("--model-timeout", "AGENT_S_MODEL_TIMEOUT"),
    ("grounding", "mode"): ("--ground", "AGENT_S_GROUND"),
    ("grounding", "url"): ("--ground-url", "AGENT_S_GROUND_URL"),
    ("grounding", "model"): ("--ground-model", "AGENT_S_GROUND_MODEL"),
    ("grounding", "marks"): ("--marks", "AGENT_S_MARKS"),
    ("grounding", "convention"): ("--ground-convention", "AGENT_S_GROUND_CONVENTION"),
    ("limits", "max_steps"): ("--max-steps", "AGENT_S_MAX_STEPS"),
    ("limits", "max_cost"): ("--max-cost", "AGENT_S_MAX_COST"),
    ("limits", "max_tokens"): ("", "AGENT_S_MAX_TOKENS"),
    ("limits", "max_seconds"): ("", "AGENT_S_MAX_SECONDS"),
    ("run", "reflection"): ("--reflection", "AGENT_S_REFLECTION"),
    ("run", "a11y_snapshot"): ("--a11y-snapshot", "AGENT_S_A11Y_SNAPSHOT"),
    ("run", "record_dir"): ("--record", "AGENT_S_RECORD_DIR"),
    ("run", "monitor"): ("--monitor", "AGENT_S_MONITOR"),
    ("plan", "mode"): ("--plan", "AGENT_S_PLAN"),
    ("plan", "max_replans"): ("--max-replans", "AGENT_S_MAX_REPLANS"),
    ("plan", "subtask_steps"): ("--subtask-steps", "AGENT_S_SUBTASK_STEPS"),
    ("safety", "mode"): ("--safety", "AGENT_S_SAFETY"),
    ("code_agent", "enabled"): ("--code-agent", ""),
    ("code_agent", "sandbox"): ("--code-sandbox", "AGENT_S_CODE_SANDBOX"),
    ("code_agent", "timeout"): ("--code-timeout", "AGENT_S_CODE_TIMEOUT"),
    ("code_agent", "max_steps"): ("--code-steps", "AGENT_S_CODE_STEPS"),
    ("secrets", "env"): ("", "AGENT_S_SECRET_ENV"),  # comma-separated names
    # --memory/--no-memory is run's own flag (bench run's --memory is a mode): cli/run.py
    ("memory", "enabled"): ("", "AGENT_S_MEMORY"),
    ("memory", "path"): ("", "AGENT_S_MEMORY_DB"),
    ("memory", "k"): ("", "AGENT_S_MEMORY_K"),
}
_BY_FLAG = {flag: path for path, (flag, _) in SETTINGS.items() if flag}
_SECRET_NAMES = ("secrets", "env")


def _http_url(value: str | None) -> str | None:
    """A base URL must name its scheme and host: ``http://localhost:8000/v1``."""
    if value is None:
        return None
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(
            f"{value!r} is not an http(s) URL with a host (like http://localhost:8000/v1)"
        )
    return value


class _Table(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ModelSection(_Table):
    """``[model]``: the generation model (its key is never a setting)."""

    provider: ProviderName | None = None  # None: guessed from the name (claude*, gpt*, ...)
    name: str | None = None
    base_url: str | None = None
    # seconds one attempt at a model call may take; None: 60 s plus an allowance per image and
    # per 100 KB of request (agent_s.models.retry.request_timeout)
    timeout: float | None = Field(None, gt=0)

    @field_validator("base_url")
    @classmethod
    def check_base_url(cls, value: str | None) -> str | None:
        return _http_url(value)


class GroundingSection(_Table):
    """``[grounding]``: how referring expressions become points; ``model`` mode needs a
    grounding model (an OpenAI-compatible server at ``url``)."""

    mode: GroundMode = "auto"
    url: str | None = None
    model: str | None = None
    marks: bool = False  # set-of-marks: numbered marks on the controls of each screenshot
    # how the model that points writes a point (the grounding model's, or the generation
    # model's with mode native): a name of agent_s.conventions; None: its profile's or family's
    convention: str | None = None

    @field_validator("url")
    @classmethod
    def check_url(cls, value: str | None) -> str | None:
        return _http_url(value)

    @field_validator("convention")
    @classmethod
    def check_convention(cls, value: str | None) -> str | None:
        return None if value is None else str(PointConvention.parse(value))


class LimitsSection(_Table):
    """``[limits]``: when a run stops; cost in USD."""

    max_steps: int = Field(DEFAULT_MAX_STEPS, ge=1)
    max_cost: float | None = Field(None, ge=0)
    max_tokens: int | None = Field(None, ge=1)
    max_seconds: float | None = Field(None, gt=0)


class RunSection(_Table):
    """``[run]``: what a run does besides acting; ``record_dir`` None: no trajectory folder."""

    reflection: bool = False
    a11y_snapshot: bool = False
    record_dir: UserPath | None = None
    monitor: MonitorChoice = "all"  # agent_s.desktop.monitors

    @field_validator("monitor", mode="before")
    @classmethod
    def check_monitor(cls, value: object) -> MonitorChoice:
        return parse_monitor_choice(value)


class PlanSection(_Table):
    """``[plan]``: planning (``agent_s.planning.manager``): off, auto (a long task, or once a step
    failed
    twice) or always; replans allowed per run; each subtask's step budget."""

    mode: PlanMode = "auto"
    max_replans: int = Field(default=2, ge=0, le=10)
    subtask_steps: int = Field(default=15, ge=1, le=200)

    def build(self) -> PlanSettings:
        return PlanSettings(self.mode, self.subtask_steps, self.max_replans)


class MemorySection(_Table):
    """``[memory]``: memory across runs (``agent_s.memory``), used by ``agent-s run``:
    ``enabled`` (default on there; the SDK and ``predict()`` use memory only when given a
    store), the file (``path``; default ``$XDG_DATA_HOME/agent-s/memory.sqlite3``), at most
    ``k`` entries shown per prompt, and the store's bounds."""

    enabled: bool = True
    path: UserPath | None = None
    k: int = Field(default=5, ge=0, le=50)
    max_entries: int = Field(default=2000, ge=1)
    max_bytes: int = Field(default=20_000_000, ge=1000)

    def build(self) -> MemoryConfig:
        return MemoryConfig(k=self.k)


def _guess_provider(model: str, base_url: str | None) -> ProviderName | None:
    if base_url:
        return "openai-compatible"
    lowered = model.lower()
    if lowered.startswith("claude"):
        return "anthropic"
    if lowered.startswith(("gpt", "o1", "o3", "o4", "computer-use")):
        return "openai"
    return None


def _env(environ: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if environ is None else environ


class Settings(BaseSettings):
    """Every setting, resolved (see the module docstring); ``build_*`` make the SDK's objects."""

    model_config = SettingsConfigDict(extra="forbid", frozen=True)

    model: ModelSection = ModelSection()
    grounding: GroundingSection = GroundingSection()
    limits: LimitsSection = LimitsSection()
    run: RunSection = RunSection()
    plan: PlanSection = PlanSection()
    memory: MemorySection = MemorySection()
    safety: SafetyConfig = SafetyConfig()
    code_agent: CodeAgentConfig = CodeAgentConfig()
    secrets: SecretsConfig = SecretsConfig()
    profiles: dict[str, Any] = {}  # pattern -> ModelProfile fields, in the order given

    @field_validator("profiles")
    @classmethod
    def check_profiles(cls, value: dict[str, Any]) -> dict[str, Any]:
        return dict(ProfileRegistry(tuple(value.items())).overrides)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """The flags (init values), then ``load_settings``' sources (default: this process's
        environment and configuration file); pydantic-settings merges them in that order."""
        sources = _SOURCES.get()
        if sources is None:
            sources = _sources(settings_cls, os.environ)
        return (init_settings, *sources)

    def build_model(
        self, api_key: str | None = None, environ: Mapping[str, str] | None = None
    ) -> ModelConfig:
        """The generation model, with ``api_key`` (``--api-key``) or the key of the provider's
        usual variable in ``environ``; the provider is guessed from the name when not set."""
        name, base_url = self.model.name, self.model.base_url
        if not name:
            raise ConfigError(
                "no model configured: pass --model NAME (and --provider "
                f"{'|'.join(PROVIDERS)}), or set AGENT_S_MODEL and AGENT_S_PROVIDER (or [model] "
                "name and provider in the configuration file); the API key comes from the "
                "provider's variable (OPENAI_API_KEY, ANTHROPIC_API_KEY) or --api-key-file PATH",
                setting="--model",
            )
        provider = self.model.provider or _guess_provider(name, base_url)
        if provider is None:
            raise ConfigError(
                f"cannot tell which API serves {name!r}: pass --provider "
                f"{'|'.join(PROVIDERS)} or set AGENT_S_PROVIDER",
                setting="--provider",
            )
        found = settings_from_env(
            PROVIDERS[provider], name, base_url=base_url, api_key=api_key, environ=_env(environ)
        )
        return ModelConfig(
            provider, name, base_url, found.api_key, found.key_source, self.model.timeout
        )

    def build_grounding(self, environ: Mapping[str, str] | None = None) -> GroundingConfig:
        """The grounding settings, with the grounding server's key from ``environ``."""
        mode, url, model = self.grounding.mode, self.grounding.url, self.grounding.model
        key = None
        if model:
            found = settings_from_env(
                "openai_compatible", model, base_url=url, environ=_env(environ)
            )
            key = found.api_key
        return GroundingConfig(
            mode,
            url,
            model,
            key,
            marks=self.grounding.marks,
            convention=point_convention(self.grounding.convention),
        )

    def build_agent_config(
        self, environ: Mapping[str, str] | None = None, **runtime: Any
    ) -> AgentConfig:
        """How a run behaves; ``runtime``: ``AgentConfig`` fields that are not settings (or
        override them: ``record_dir`` of a harness task). ``environ`` gives the values of the
        variables marked secret and the desktop's name."""
        env = _env(environ)
        values: dict[str, Any] = {
            "max_steps": self.limits.max_steps,
            "max_cost_usd": self.limits.max_cost,
            "max_tokens": self.limits.max_tokens,
            "max_seconds": self.limits.max_seconds,
            "reflection": self.run.reflection,
            "a11y_snapshot": self.run.a11y_snapshot,
            "record_dir": self.run.record_dir,
            "monitor": self.run.monitor,
            "safety": self.safety,
            "code": self.code_agent,
            "plan": self.plan.build(),
            "memory": self.memory.build(),
            "desktop_name": env.get("XDG_CURRENT_DESKTOP") or env.get("DESKTOP_SESSION") or "",
            **runtime,
        }
        if "secrets" not in values:
            values["secrets"] = self.secret_values(env)
        return AgentConfig(**values)

    def build_profiles(self) -> ProfileRegistry:
        """The model profiles: built-in ones with the ``[profiles."pattern"]`` tables on top."""
        return ProfileRegistry(tuple(self.profiles.items()))

    def secret_values(self, environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
        """The values marked secret: the marked variables' in ``environ``, the files' lines."""
        return self.secrets.values(_env(environ))

    def with_cost_limit(self, usd: float) -> Settings:
        """These settings with a run's cost limit no higher than ``usd``."""
        current = self.limits.max_cost
        limit = usd if current is None else min(current, usd)
        return self.model_copy(
            update={"limits": self.limits.model_copy(update={"max_cost": limit})}
        )

    def to_json(self) -> dict[str, Any]:
        """The resolved settings as JSON data (no key, no secret value: names and paths only)."""
        return self.model_dump(mode="json", by_alias=True)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Settings:
        """Settings ``to_json`` wrote, as they were: no file or variable is read again."""
        token = _SOURCES.set(())  # the data alone
        try:
            return cls.model_validate(data)
        except ValidationError as err:
            raise _config_error(err, [("resolved settings", dict(data), {})]) from err
        finally:
            _SOURCES.reset(token)


# -- the sources ----------------------------------------------------------------------------------


class _Values(PydanticBaseSettingsSource):
    """One source's values, already read, nested as the settings are."""

    def __init__(self, settings_cls: type[BaseSettings], values: Mapping[str, Any]) -> None:
        super().__init__(settings_cls)
        self.values = dict(values)

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return self.values.get(field_name), field_name, False

    def __call__(self) -> dict[str, Any]:
        return self.values


class _EnvSource(_Values):
    """The ``AGENT_S_*`` variables of ``SETTINGS``; an empty one is unset."""

    def __init__(self, settings_cls: type[BaseSettings], environ: Mapping[str, str]) -> None:
        self.raw: dict[Where, tuple[str, str]] = {}  # setting -> (variable, its text)
        values: dict[str, Any] = {}
        for path, (_, name) in SETTINGS.items():
            text = environ.get(name, "").strip() if name else ""
            if not text:
                continue
            self.raw[path] = (name, text)
            split = [n.strip() for n in text.split(",") if n.strip()]
            _put(values, path, split if path == _SECRET_NAMES else text)
        super().__init__(settings_cls, values)


class _FileSource(TomlConfigSettingsSource):
    """The configuration file, if there is one (``path`` None: none)."""

    def __init__(self, settings_cls: type[BaseSettings], path: Path | None) -> None:
        self.path = path
        super().__init__(settings_cls, toml_file=path)

    def _read_file(self, path: Any) -> dict[str, Any]:
        try:
            return tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
            raise ConfigError(
                f"cannot read configuration file {path}: {err}", setting=CONFIG_ENV
            ) from err


_SOURCES: ContextVar[tuple[PydanticBaseSettingsSource, ...] | None] = ContextVar(
    "agent_s_settings_sources", default=None
)


def config_path(environ: Mapping[str, str]) -> tuple[Path, bool]:
    """The configuration file to read and whether the user named it explicitly."""
    named = environ.get(CONFIG_ENV)
    if named:
        return Path(named).expanduser(), True
    return DEFAULT_CONFIG_PATH.expanduser(), False


def _sources(
    settings_cls: type[BaseSettings],
    environ: Mapping[str, str],
    *,
    path: Path | None = None,
    defaults: Mapping[str, Any] | None = None,
    read_env: bool = True,
) -> tuple[_EnvSource, _FileSource, _Values]:
    named = path is not None
    if path is None:
        path, from_env = config_path(environ)
    if not path.exists() or path.is_dir():  # /dev/null is an empty file, a folder is not
        if named or from_env:
            by = "" if named else f" (named by {CONFIG_ENV})"
            what = "is a folder, not a file" if path.is_dir() else "does not exist"
            raise ConfigError(f"configuration file {path} {what}{by}", setting=CONFIG_ENV)
        path = None
    return (
        _EnvSource(settings_cls, environ if read_env else {}),
        _FileSource(settings_cls, path),
        _Values(settings_cls, defaults or {}),
    )


def load_settings(
    flags: Mapping[str, Any] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    path: Path | None = None,
    defaults: Mapping[str, Any] | None = None,
    read_env: bool = True,
) -> Settings:
    """The settings: ``defaults`` < the file (``path``, ``$AGENT_S_CONFIG`` or the default
    one) < the ``AGENT_S_*`` variables of ``environ`` (unless ``read_env`` is false) <
    ``flags`` (nested as the settings are: ``flag_values`` makes them from flags)."""
    flags = dict(flags or {})
    envs, file, given = sources = _sources(
        Settings, _env(environ), path=path, defaults=defaults, read_env=read_env
    )
    layers: list[_Layer] = [  # highest precedence first
        ("flag", flags, {}),
        ("env", envs.values, envs.raw),
        (str(file.path or "the configuration file"), file.toml_data, {}),
        ("default", given.values, {}),
    ]
    token = _SOURCES.set(sources)
    try:
        settings = Settings(**flags)
    except ValidationError as err:
        raise _config_error(err, layers) from err
    finally:
        _SOURCES.reset(token)
    # the names marked secret add up over the sources instead of replacing each other
    marks = [_get(values, _SECRET_NAMES) for _, values, _ in reversed(layers)]
    groups = [[m] if isinstance(m, str) else list(m) for m in marks if m]
    if len(groups) > 1:
        names = tuple(dict.fromkeys(name for group in groups for name in group))
        settings = settings.model_copy(update={"secrets": replace(settings.secrets, env=names)})
    return settings


def flag_values(given: Mapping[str, Any]) -> dict[str, Any]:
    """``{"--model": "gpt-4o", "--max-steps": None}`` -> ``{"model": {"name": "gpt-4o"}}``:
    the flags given (None: not given), nested as the settings are (see ``SETTINGS``)."""
    values: dict[str, Any] = {}
    for flag, value in given.items():
        if value is not None:
            _put(values, _BY_FLAG[flag], value)
    return values


# -- errors: which setting, from where ------------------------------------------------------------


def _put(values: dict[str, Any], path: Where, value: Any) -> None:
    table = values
    for part in path[:-1]:
        table = table.setdefault(str(part), {})
    table[str(path[-1])] = value


def _get(values: Any, path: Where) -> Any:
    for part in path:
        listed = isinstance(values, (list, tuple)) and isinstance(part, int) and part < len(values)
        if not (listed or (isinstance(values, Mapping) and part in values)):
            return None
        values = values[part]
    return values


def _dotted(path: Where) -> str:
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part + 1}]"
        else:
            name = part if part.replace("_", "").isalnum() else f'"{part}"'
            text += f".{name}" if text else name
    return text


def _refined(loc: Where, cause: Any) -> Where:
    """The error's place, made precise with what a table's own check says (its ``setting``)."""
    if isinstance(cause, ProfileConfigError) and cause.pattern:
        return ("profiles", cause.pattern, *((cause.key,) if cause.key else ()))
    setting = getattr(cause, "setting", "")
    named = _BY_FLAG.get(setting) or tuple(setting.split(".")) if setting else ()
    names = [part for part in loc if isinstance(part, str)]
    if len(named) > len(names) and list(named[: len(names)]) == names:
        return (*loc, *named[len(names) :])
    return loc


def _field_type(kind: Any, name: str) -> Any:
    """The type of ``name`` in a settings model or table (by key or alias), unwrapped."""
    if isinstance(kind, type) and issubclass(kind, BaseModel):
        found = {f.alias or n: f.annotation for n, f in kind.model_fields.items()}.get(name)
    elif is_dataclass(kind):
        found = None
        hints = typing.get_type_hints(kind, include_extras=True)
        for f in fields(kind):
            if name in (f.name, _alias(hints[f.name])):
                found = hints[f.name]
    else:
        return None
    while typing.get_origin(found) in (typing.Annotated, typing.Union, types.UnionType, tuple):
        found = next(a for a in typing.get_args(found) if a is not type(None))
    return found


def _alias(hint: Any) -> str:
    extras = typing.get_args(hint)[1:] if typing.get_origin(hint) is typing.Annotated else ()
    return next((e.alias for e in extras if isinstance(e, FieldInfo) and e.alias), "")


def _known(parent: Where) -> list[str]:
    kind: Any = Settings
    for part in parent:
        if isinstance(part, str):
            kind = _field_type(kind, part)
    if isinstance(kind, type) and issubclass(kind, BaseModel):
        return sorted(f.alias or n for n, f in kind.model_fields.items())
    if is_dataclass(kind):
        hints = typing.get_type_hints(kind, include_extras=True)
        return sorted(_alias(hints[f.name]) or f.name for f in fields(kind))
    return []


def _problem(error: Mapping[str, Any], cause: Any, loc: Where) -> str:
    kind = error["type"]
    if kind in ("extra_forbidden", "unexpected_keyword_argument"):
        known = _known(loc[:-1])
        return "unknown setting" + (f"; known: {', '.join(known)}" if known else "")
    if kind == "literal_error":
        names = [part for part in loc if isinstance(part, str)][-2:]
        what = " ".join(names).replace("_", " ")
        return f"unknown {what} {error['input']!r}; use {error['ctx']['expected']}"
    if cause is not None:  # a table's own check: its message, less the place it names
        text = str(cause)
        named = f"{getattr(cause, 'setting', '')}: "
        if isinstance(cause, ProfileConfigError) and text.startswith("[profiles."):
            named = text.split("] ", 1)[0] + "] " + (f"{cause.key}: " if cause.key else "")
        return text.removeprefix(named)
    given = error.get("input")
    shown = f" (got {given!r})" if isinstance(given, (str, int, float, bool)) else ""
    return f"{error['msg']}{shown}"


def _config_error(err: ValidationError, layers: list[_Layer]) -> ConfigError:
    """One error (the first), naming the setting and the source that set it: a flag, a
    variable, the file (``layers``: name, values, the variables' texts), highest first."""
    error = err.errors()[0]
    cause = (error.get("ctx") or {}).get("error")
    loc = _refined(tuple(error["loc"]), cause)
    problem = _problem(error, cause, loc)
    for end in range(len(loc), 0, -1):
        place = loc[:end]
        for name, values, raw in layers:
            if _get(values, place) is None:
                continue
            dotted = _dotted(place)
            if name == "flag":
                setting = next((f for p, (f, _) in SETTINGS.items() if p == place and f), dotted)
                return ConfigError(f"{setting}: {problem}", setting=setting)
            if name == "env" and place in raw:
                variable, text = raw[place]
                return ConfigError(f"{variable}={text!r}: {problem}", setting=variable)
            if name == "default":
                return ConfigError(f"default {dotted}: {problem}", setting=dotted)
            return ConfigError(f"{name}: {dotted}: {problem}", setting=dotted)
    dotted = _dotted(loc)
    return ConfigError(f"{dotted or 'settings'}: {problem}", setting=dotted)


def load_profiles(
    path: Path | None = None, *, environ: Mapping[str, str] | None = None
) -> ProfileRegistry:
    """The profiles of the configuration file (``path``, or ``$AGENT_S_CONFIG``, or
    ``~/.config/agent-s/config.toml``), as ``agent_s.settings.read`` reads it with every other
    setting: a missing default file means no overrides; a file the user named that is missing,
    or one that is not valid, is a ``ProfileConfigError`` naming the file."""
    try:
        return load_settings(path=path, environ=environ, read_env=False).build_profiles()
    except ConfigError as err:
        raise ProfileConfigError(str(err)) from err


class _Reader:
    """``ModelConfig.from_env`` and its siblings (``agent_s.settings.config.SettingsReader``)."""

    def model(
        self,
        given: Mapping[str, str | None],
        api_key: str | None,
        environ: Mapping[str, str] | None,
    ) -> ModelConfig:
        return load_settings(flag_values(given), environ=environ).build_model(api_key, environ)

    def grounding(
        self, given: Mapping[str, str | None], environ: Mapping[str, str] | None
    ) -> GroundingConfig:
        return load_settings(flag_values(given), environ=environ).build_grounding(environ)

    def agent(
        self, environ: Mapping[str, str] | None, explicit: Mapping[str, object]
    ) -> AgentConfig:
        return load_settings(environ=environ).build_agent_config(environ, **explicit)


READERS.install(_Reader())

__all__ = [
    "CONFIG_ENV",
    "SETTINGS",
    "GroundingSection",
    "LimitsSection",
    "MemorySection",
    "ModelSection",
    "RunSection",
    "Settings",
    "config_path",
    "flag_values",
    "load_profiles",
    "load_settings",
]
