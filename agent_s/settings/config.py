"""The configuration objects the SDK runs with: plain typed values, validated on construction.

    model = ModelConfig.from_env(provider="anthropic", model="claude-sonnet-4-5")
    agent = Agent(model, settings=AgentConfig(max_steps=20), grounding=GroundingConfig("ocr"))

Where they come from is ``agent_s.settings.read``: one settings model read once at the edge from the
configuration file, ``AGENT_S_*`` variables and explicit values (flags), in that order of
precedence. ``ModelConfig.from_env`` / ``GroundingConfig.from_env`` / ``AgentConfig.from_env``
are thin wrappers over it (an explicit argument always wins); everything below them receives
these objects. A missing model is a ``ConfigError`` that names the flag and the variable to
set, raised before anything touches the desktop.

``SafetyConfig``, ``SafetyRule``, ``CodeAgentConfig`` and ``SecretsConfig`` are also the
settings model's ``[safety]``, ``[code_agent]`` and ``[secrets]`` tables: pydantic validates a
table into them (unknown keys refused, a single string accepted where a list is, ``~`` expanded
in paths), and their own checks run either way. API keys come from the usual variables
(``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``, ...) or ``--api-key``, never from the file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Annotated, Any, Literal, Protocol, get_args

from pydantic import AfterValidator, BeforeValidator, ConfigDict, Field

from agent_s.conventions import PointConvention
from agent_s.desktop.monitors import MonitorChoice, parse_monitor_choice
from agent_s.errors import AgentSError
from agent_s.keys import normalize_key
from agent_s.models.endpoints import (
    DEFAULT_TIMEOUT_S,
    PROVIDER_NAMES,
    PROVIDERS,
    ProviderName,
    ProviderSettings,
)
from agent_s.models.errors import mask_secret

GroundMode = Literal["auto", "ocr", "a11y", "model", "native"]
SafetyMode = Literal["auto", "confirm", "confirm-all", "deny-risky"]
RuleEffect = Literal["allow", "risky", "deny"]
SandboxName = Literal["auto", "bwrap", "none"]

DEFAULT_MAX_STEPS = 30
# a settings table's rules: unknown keys are errors, keys may be given by field name too
_TABLE = ConfigDict(extra="forbid", populate_by_name=True)


def _choices(literal: Any) -> str:
    """``Literal["a", "b", "c"]`` -> ``"a, b or c"``, for messages."""
    names = get_args(literal)
    return ", ".join(names[:-1]) + f" or {names[-1]}" if len(names) > 1 else names[0]


def _one_or_more(value: Any) -> Any:
    return [value] if isinstance(value, str) else value


# a configuration value that is a string or a list of strings (``apps = "galculator"``)
Strings = Annotated[tuple[str, ...], BeforeValidator(_one_or_more)]
# a folder or file the user names; ``~`` means their home
UserPath = Annotated[Path, AfterValidator(Path.expanduser)]


class ConfigError(AgentSError, ValueError):
    """The configuration is incomplete or invalid; the message says which setting and where it
    was set. ``setting``: the flag, the variable or the file's key (``code_agent.timeout``)."""

    def __init__(self, message: str, *, setting: str) -> None:
        super().__init__(message)
        self.setting = setting


class ModelConfig(ProviderSettings):
    """The generation model: a ``ProviderSettings`` named by the provider name users give
    (``openai``, ``anthropic``, ``openai-compatible``, ``openai-responses``) instead of the API
    kind. The key never appears in its repr."""

    def __init__(
        self,
        provider: ProviderName,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        key_source: str = "",
        timeout_s: float | None = None,
        *,
        temperature: float | None = None,
        azure_api_version: str | None = None,
    ) -> None:
        """``timeout_s``: each attempt's, as given; None: a default that grows with the request
        (``agent_s.models.retry.request_timeout``). ``temperature``: fixed for every request
        (None: the model's default). ``azure_api_version``: ``base_url`` is an Azure OpenAI
        resource and ``model`` a deployment there (``provider`` is ``openai``)."""
        if provider not in PROVIDERS:
            raise ConfigError(
                f"unknown provider {provider!r}; use one of {', '.join(PROVIDERS)}",
                setting="--provider",
            )
        if not model:
            raise ConfigError("a model name is required (--model)", setting="--model")
        timeout = DEFAULT_TIMEOUT_S if timeout_s is None else timeout_s
        api = PROVIDERS[provider]
        if temperature is not None and not 0 <= temperature <= 2:
            raise ConfigError(
                f"temperature must be between 0 and 2, not {temperature}", setting="temperature"
            )
        if azure_api_version is not None and (provider != "openai" or not base_url):
            raise ConfigError(
                "an Azure OpenAI deployment is reached with provider openai and the resource's "
                "endpoint (https://NAME.openai.azure.com) as base_url",
                setting="azure_endpoint",
            )
        super().__init__(
            api,
            model,
            base_url,
            api_key,
            key_source,
            timeout,
            timeout_s is None,
            temperature,
            azure_api_version,
        )

    def __repr__(self) -> str:
        return (
            f"ModelConfig(provider={self.provider!r}, model={self.model!r}, "
            f"base_url={self.base_url!r}, api_key={mask_secret(self.api_key)}, "
            f"temperature={self.temperature}, azure_api_version={self.azure_api_version!r})"
        )

    @property
    def provider(self) -> ProviderName:
        return PROVIDER_NAMES[self.api]

    def settings(self) -> ProviderSettings:
        """The same values as a plain ``ProviderSettings`` (which ``dataclasses.replace`` takes)."""
        return ProviderSettings(**{f.name: getattr(self, f.name) for f in fields(self)})

    @classmethod
    def from_env(
        cls,
        *,
        provider: str | None = None,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> ModelConfig:
        """The settings (the file, ``AGENT_S_*``, these arguments) and the provider's usual key
        variable, unless ``api_key`` is given: ``agent_s.settings.read.Settings.build_model``."""
        given = {"--provider": provider, "--model": model, "--base-url": base_url}
        return READERS.get().model(given, api_key, environ)


class SettingsReader(Protocol):
    """What ``from_env`` asks of ``agent_s.settings.read``: these objects, built from the
    settings (the file, ``AGENT_S_*``, the values given as flags)."""

    def model(
        self,
        given: Mapping[str, str | None],
        api_key: str | None,
        environ: Mapping[str, str] | None,
    ) -> ModelConfig: ...

    def grounding(
        self, given: Mapping[str, str | None], environ: Mapping[str, str] | None
    ) -> GroundingConfig: ...

    def agent(
        self, environ: Mapping[str, str] | None, explicit: Mapping[str, object]
    ) -> AgentConfig: ...


class _Readers:
    """The reader behind ``from_env``. ``agent_s.settings.read`` builds these objects, so this
    module imports nothing of it: that module installs itself here when imported, and the
    package ``agent_s.settings`` imports it before anything of the package is used."""

    def __init__(self) -> None:
        self._reader: SettingsReader | None = None

    def install(self, reader: SettingsReader) -> None:
        self._reader = reader

    def get(self) -> SettingsReader:
        if self._reader is None:  # only if this file were loaded outside its package
            raise RuntimeError("agent_s.settings.read is not loaded: import agent_s.settings")
        return self._reader


READERS = _Readers()


PlanMode = Literal["off", "auto", "always"]
PLAN_MODES: tuple[PlanMode, ...] = ("off", "auto", "always")


@dataclass(frozen=True)
class PlanSettings:
    """``mode``: off (never plan: the flat loop), auto (plan a long task up front, or any task
    once a step failed twice), always. ``subtask_steps``: each subtask's step budget.
    ``max_replans``: replans allowed per run."""

    mode: PlanMode = "auto"
    subtask_steps: int = 15
    max_replans: int = 2

    def __post_init__(self) -> None:
        if self.mode not in PLAN_MODES:
            raise ValueError(f"plan mode must be one of {', '.join(PLAN_MODES)}, not {self.mode!r}")
        if self.subtask_steps < 1:
            raise ValueError("subtask_steps must be at least 1")
        if self.max_replans < 0:
            raise ValueError("max_replans must not be negative")


@dataclass(frozen=True)
class ContextPolicy:
    """Bounds on what a request carries. Character limits apply per item."""

    keep_images: int = 3  # screenshots per worker request, the current one included
    history_steps: int = 10  # compact lines kept; steps before them are only counted
    reasoning_chars: int = 120  # reasoning quoted per compact line
    action_chars: int = 200  # action text per compact line
    outcome_chars: int = 200  # outcome detail per compact line
    reply_chars: int = 3000  # a kept step's reply (its image is kept too)
    result_chars: int = 1500  # a kept step's outcome detail, e.g. a code-agent summary
    notes_chars: int = 2000  # all notes together; the oldest are left out first

    def __post_init__(self) -> None:
        if self.keep_images < 1:
            raise ValueError("keep_images must be at least 1: the current screen is always sent")
        for name in ("reasoning_chars", "action_chars", "outcome_chars", "history_steps"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative")
        for name in ("reply_chars", "result_chars", "notes_chars"):
            if getattr(self, name) < 20:
                raise ValueError(f"{name} must be at least 20")


@dataclass(frozen=True)
class GroundingConfig:
    """How referring expressions become points; ``model`` mode needs ``model`` (and ``url``).
    ``marks``: set-of-marks, the screenshot sent carries numbered marks on its controls, which
    the model may name (``agent.click(mark=17)``) besides describing elements for ``mode``'s
    grounder (``agent_s.marks.setofmarks``). ``convention``: how the model that points writes
    a point (the grounding model in ``model`` and ``auto`` mode, the generation model in
    ``native`` mode; ``agent_s.conventions``); None: the model profile's ``point_convention``,
    else the grounding model family's, else the image's pixels."""

    mode: GroundMode = "auto"
    url: str | None = None
    model: str | None = None
    api_key: str | None = field(default=None, repr=False)
    marks: bool = False
    convention: PointConvention | None = None

    def __post_init__(self) -> None:
        if self.mode not in get_args(GroundMode):
            raise ConfigError(
                f"unknown grounding mode {self.mode!r}; use {_choices(GroundMode)}",
                setting="--ground",
            )
        if self.mode == "model" and not self.model:
            raise ConfigError(
                "--ground model needs a grounding model: pass --ground-model NAME and "
                "--ground-url URL (or set AGENT_S_GROUND_MODEL / AGENT_S_GROUND_URL)",
                setting="--ground-model",
            )

    def settings(self) -> ProviderSettings | None:
        """The grounding model's endpoint (an OpenAI-compatible server), if one is set."""
        if not self.model:
            return None
        return ProviderSettings(
            "openai_compatible", self.model, self.url, self.api_key, scale_timeout=True
        )

    @classmethod
    def from_env(
        cls,
        *,
        mode: str | None = None,
        url: str | None = None,
        model: str | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> GroundingConfig:
        """The settings (the file, ``AGENT_S_GROUND*``, these arguments) and the grounding
        server's key variable: ``agent_s.settings.read.Settings.build_grounding``."""
        given = {"--ground": mode, "--ground-url": url, "--ground-model": model}
        return READERS.get().grounding(given, environ)


def key_combo(text: str, setting: str = "keys") -> frozenset[str]:
    """``"ctrl+alt+Delete"`` -> the normalised key names, left/right variants folded."""
    parts = [p.strip() for p in text.split("+")]
    if not text.strip() or any(not p for p in parts):
        raise ConfigError(
            f"{setting}: {text!r} is not a key combination such as 'ctrl+q'", setting=setting
        )
    try:
        return frozenset(fold_key(normalize_key(p)) for p in parts)
    except ValueError as err:
        raise ConfigError(f"{setting}: {err}", setting=setting) from None


_FOLDED = {
    "ctrlleft": "ctrl",
    "ctrlright": "ctrl",
    "altleft": "alt",
    "altright": "alt",
    "shiftleft": "shift",
    "shiftright": "shift",
    "winleft": "win",
    "winright": "win",
    "optionleft": "option",
    "optionright": "option",
    "del": "delete",
    "return": "enter",
    "esc": "escape",
}


def fold_key(key: str) -> str:
    """One name per physical meaning: left/right modifiers and aliases folded together."""
    return _FOLDED.get(key, key)


@dataclass(frozen=True)
class SafetyRule:
    """A user's rule (a ``[[safety.rules]]`` table). Every matcher given must match (one given
    at least):

    ``actions`` action names (``type``, ``open``, ``hotkey``, ...; ``run_code`` for a code block),
    ``apps`` the application acted on (window class) or opened, ``keys`` key combinations such
    as ``"ctrl+q"`` (a combination pressed that contains one of them matches), ``text`` a regular
    expression searched in the text typed, the code run, or the file or app opened.
    ``effect``: ``allow`` (never asked), ``risky`` (asked or refused as the mode says) or ``deny``
    (always refused, in every mode). Deny rules win over allow rules, which win over the rest.
    """

    __pydantic_config__ = _TABLE

    effect: RuleEffect
    actions: Strings = ()
    apps: Strings = ()
    keys: Strings = ()
    text: str = ""
    note: str = ""

    def __post_init__(self) -> None:
        if self.effect not in get_args(RuleEffect):
            raise ConfigError(
                f"a rule's effect must be {_choices(RuleEffect)}, not {self.effect!r}",
                setting="safety.rules.effect",
            )
        if not (self.actions or self.apps or self.keys or self.text):
            raise ConfigError(
                "a safety rule needs at least one of actions, apps, keys, text",
                setting="safety.rules",
            )
        for combo in self.keys:
            key_combo(combo, "safety.rules.keys")
        if self.text:
            try:
                re.compile(self.text)
            except re.error as err:
                raise ConfigError(
                    f"safety rule text {self.text!r} is not a regular expression: {err}",
                    setting="safety.rules.text",
                ) from None

    @property
    def combos(self) -> tuple[frozenset[str], ...]:
        return tuple(key_combo(c) for c in self.keys)


@dataclass(frozen=True)
class SafetyConfig:
    """What the agent may do without asking (``agent_s.safety.gate`` applies it to every action);
    the ``[safety]`` table.

    ``mode``: ``auto`` allows everything no rule denies; ``confirm`` asks before risky actions;
    ``confirm-all`` asks before every action that does something; ``deny-risky`` refuses risky
    actions. The SDK's default is ``auto``; ``agent-s run`` defaults to ``confirm``.
    ``allow_apps`` / ``allow_paths``: applications and folders ``open`` may use without that
    being risky. In every mode, ``auto`` included, the user decides before a secret value is
    typed outside ``secret_apps`` (applications or window titles) and before a web host is
    opened that neither the task names nor ``allow_hosts`` lists (``agent_s.safety.leaks``).
    """

    __pydantic_config__ = _TABLE

    mode: SafetyMode = "auto"
    rules: tuple[SafetyRule, ...] = ()
    allow_apps: Strings = ()
    allow_paths: Strings = ()
    secret_apps: Strings = ()
    allow_hosts: Strings = ()

    def __post_init__(self) -> None:
        if self.mode not in get_args(SafetyMode):
            raise ConfigError(
                f"unknown safety mode {self.mode!r}; use {_choices(SafetyMode)}",
                setting="--safety",
            )


@dataclass(frozen=True)
class CodeAgentConfig:
    """The coding sub-agent (``call_code_agent``) and how its code runs (``agent_s.coding.runner``);
    the ``[code_agent]`` table, where ``timeout_s`` is ``timeout``.

    ``workdir`` None: the desktop's home folder. ``sandbox`` ``bwrap``: bubblewrap, with the file
    system read-only except ``workdir``, ``writable`` and a scratch folder, and no network;
    ``auto`` (the default): bubblewrap where it works here, else ``none``, a PID namespace alone
    (``agent_s.coding.containment.resolve_sandbox``; the command says so once).
    ``output_bytes``: kept of each stream of a block (half its start, half its end); the code
    model sees at most ``model_output_chars`` of it, the GUI worker's summary ``summary_chars``.
    """

    __pydantic_config__ = _TABLE

    enabled: bool = True
    max_steps: int = 20
    timeout_s: Annotated[float, Field(alias="timeout")] = 60.0
    memory_mb: int | None = 2048
    sandbox: SandboxName = "auto"
    workdir: UserPath | None = None
    writable: tuple[UserPath, ...] = ()
    output_bytes: int = 32_000
    model_output_chars: int = 4_000
    summary_chars: int = 1_400
    python: str | None = None  # the interpreter; None: python3 on PATH

    def __post_init__(self) -> None:
        checks = (
            (self.max_steps >= 1, "code agent max_steps must be at least 1", "--code-steps"),
            (self.timeout_s > 0, "the code timeout must be positive", "--code-timeout"),
            (
                self.memory_mb is None or self.memory_mb >= 16,
                "memory_mb must be at least 16",
                "code_agent.memory_mb",
            ),
            (
                self.sandbox in get_args(SandboxName),
                f"unknown code sandbox {self.sandbox!r}; use {_choices(SandboxName)}",
                "--code-sandbox",
            ),
            (
                self.output_bytes >= 1000,
                "output_bytes must be at least 1000",
                "code_agent.output_bytes",
            ),
            (
                self.model_output_chars >= 200 and self.summary_chars >= 200,
                "output character limits must be at least 200",
                "code_agent.summary_chars",
            ),
        )
        for passed, message, setting in checks:
            if not passed:
                raise ConfigError(message, setting=setting)


@dataclass(frozen=True)
class SecretsConfig:
    """Values the user marks secret (redacted everywhere, ``agent_s.guards.redaction``); the
    ``[secrets]``
    table. ``env`` names environment variables holding one; each non-empty line of each of
    ``files`` is one. API keys, and variables whose name looks secret (``*_TOKEN``,
    ``*PASSWORD*``), need no mark."""

    __pydantic_config__ = _TABLE

    env: Strings = ()
    files: tuple[UserPath, ...] = ()

    def values(self, environ: Mapping[str, str]) -> tuple[str, ...]:
        """The values: each named variable's (an unset one has none), each file's lines. A
        file that cannot be read is an error: a secret the user named must not be missed."""
        found = [environ.get(name, "").strip() for name in self.env]
        for path in self.files:
            try:
                found += path.read_text(encoding="utf-8").splitlines()
            except (OSError, UnicodeDecodeError) as err:
                raise ConfigError(
                    f"cannot read secret file {path} ([secrets] files): {err}",
                    setting="secrets.files",
                ) from err
        return tuple(dict.fromkeys(v.strip() for v in found if v.strip()))


@dataclass(frozen=True)
class MemoryConfig:
    """How a run uses the memory store it is given (``Agent(memory=store)``; no store: none).

    ``k``: at most this many entries shown in a prompt (the planner's, the code agent's, the
    worker's first request when no plan is made); ``retrieve``: show them; ``learn``: store the
    run's summary, lessons and (only where a check passed; verified only when the user gave it)
    skills when it ends (a harness that judges runs by its own evaluator learns itself);
    ``write`` False: the store is only read, not even a retrieval is counted (a harness's
    frozen memory)."""

    k: int = 5
    retrieve: bool = True
    learn: bool = True
    write: bool = True

    def __post_init__(self) -> None:
        if not 0 <= self.k <= 50:
            raise ConfigError(
                f"memory k must be between 0 and 50, got {self.k}", setting="memory.k"
            )


#: the most actions a reply may carry (``AgentConfig.max_actions_per_reply``)
MAX_ACTIONS_PER_REPLY = 10


@dataclass(frozen=True)
class AgentConfig:
    """How a run behaves: limits, retries, reflection, recording. Plain values, no I/O."""

    max_steps: int = DEFAULT_MAX_STEPS
    max_cost_usd: float | None = None
    max_tokens: int | None = None
    max_seconds: float | None = None  # wall time for the whole run
    max_invalid_replies: int = 2  # re-asks per step after a reply that does not parse
    reflection: bool = False
    record_dir: Path | None = None  # None: no trajectory folder
    dry_run: bool = False  # predict and ground, draw the plan, execute nothing
    settle_seconds: float = 0.4  # after an action, the longest wait for a still screen
    retry_attempts: int = 4  # HTTP attempts per model call (the retry layer)
    context: ContextPolicy = field(default_factory=ContextPolicy)
    desktop_name: str = ""  # the desktop environment, for prompt hints ("gnome", "openbox")
    # list the active window's named elements (role, name) in each worker request, when the
    # accessibility tree is available; off by default (it costs tokens and an AT-SPI walk)
    a11y_snapshot: bool = False
    # at most this many actions per model reply, carried out one by one while the screen is
    # still the one they were chosen on (agent_s.loop.sequence); 1: one action per reply
    max_actions_per_reply: int = 1
    # which monitor each step captures: "all", "active" (the active window's) or a number
    monitor: MonitorChoice = "all"
    safety: SafetyConfig = field(default_factory=lambda: SafetyConfig())  # the SDK: "auto"
    code: CodeAgentConfig = field(default_factory=lambda: CodeAgentConfig())
    # planning: off, auto (a long task, or once a step failed twice), always; see
    # agent_s.planning.manager
    plan: PlanSettings = field(default_factory=PlanSettings)
    # what a run does with the memory store it is given (``Agent(memory=...)``)
    memory: MemoryConfig = field(default_factory=MemoryConfig)
    # values never written or sent to a model, besides the API keys (``[secrets]``)
    secrets: tuple[str, ...] = field(default=(), repr=False)

    def __post_init__(self) -> None:
        if self.max_steps < 1:
            raise ConfigError(
                f"max_steps must be at least 1, got {self.max_steps}", setting="--max-steps"
            )
        if self.max_invalid_replies < 0:
            raise ConfigError(
                "max_invalid_replies must not be negative", setting="max_invalid_replies"
            )
        if not 1 <= self.max_actions_per_reply <= MAX_ACTIONS_PER_REPLY:
            raise ConfigError(
                f"max_actions_per_reply must be between 1 and {MAX_ACTIONS_PER_REPLY}, got "
                f"{self.max_actions_per_reply}",
                setting="--max-actions-per-reply",
            )
        if self.max_seconds is not None and self.max_seconds <= 0:
            raise ConfigError("max_seconds must be positive", setting="AGENT_S_MAX_SECONDS")
        if self.max_cost_usd is not None and self.max_cost_usd < 0:
            raise ConfigError("--max-cost must not be negative", setting="--max-cost")
        if self.settle_seconds < 0:
            raise ConfigError("settle_seconds must not be negative", setting="settle_seconds")
        if self.retry_attempts < 1:
            raise ConfigError("retry_attempts must be at least 1", setting="retry_attempts")
        try:
            object.__setattr__(self, "monitor", parse_monitor_choice(self.monitor))
        except ValueError as err:
            raise ConfigError(str(err), setting="--monitor") from err

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **explicit: object) -> AgentConfig:
        """The settings (the file, ``AGENT_S_*``); keyword arguments (``AgentConfig`` fields)
        that are not None win: ``agent_s.settings.read.Settings.build_agent_config``."""
        given = {k: v for k, v in explicit.items() if v is not None}
        return READERS.get().agent(environ, given)


__all__ = [
    "DEFAULT_MAX_STEPS",
    "MAX_ACTIONS_PER_REPLY",
    "PROVIDERS",
    "AgentConfig",
    "CodeAgentConfig",
    "ConfigError",
    "GroundMode",
    "GroundingConfig",
    "MemoryConfig",
    "ModelConfig",
    "ProviderName",
    "RuleEffect",
    "SafetyConfig",
    "SafetyMode",
    "SafetyRule",
    "SandboxName",
    "SecretsConfig",
    "Strings",
    "UserPath",
    "fold_key",
    "key_combo",
]
