"""Configuration: typed settings objects, read once at the edge (CLI flags, ``AGENT_S_*``).

    model = ModelConfig.from_env(provider="anthropic", model="claude-sonnet-4-5")
    agent = Agent(model, settings=AgentConfig(max_steps=20), grounding=GroundingConfig("ocr"))

``ModelConfig.from_env`` / ``GroundingConfig.from_env`` / ``AgentConfig.from_env`` are the only
functions here that read the environment (an explicit value always wins over a variable);
everything below them receives these objects. A missing model is a ``ConfigError`` that names
the flag and the variable to set, raised before anything touches the desktop.

Environment variables: ``AGENT_S_PROVIDER``, ``AGENT_S_MODEL``, ``AGENT_S_BASE_URL``,
``AGENT_S_GROUND`` (auto|ocr|a11y|model|native), ``AGENT_S_GROUND_URL``,
``AGENT_S_GROUND_MODEL``, ``AGENT_S_MAX_STEPS``, ``AGENT_S_MAX_COST``, ``AGENT_S_MAX_TOKENS``,
``AGENT_S_MAX_SECONDS``, ``AGENT_S_REFLECTION`` (1/0), ``AGENT_S_RECORD_DIR``,
``AGENT_S_SAFETY`` (auto|confirm|confirm-all|deny-risky), ``AGENT_S_CODE_SANDBOX`` (none|bwrap),
``AGENT_S_CODE_TIMEOUT`` (seconds per code block), ``AGENT_S_CODE_STEPS``; API keys come
from the usual variables (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``, ...).

The configuration file (``$AGENT_S_CONFIG`` or ``~/.config/agent-s/config.toml``) may hold
``[safety]`` (mode, allow lists, ``[[safety.rules]]``) and ``[code_agent]`` tables; see
``SafetyConfig.from_mapping`` and ``CodeAgentConfig.from_mapping``. Its ``[secrets]`` table
(``env`` variable names, ``files`` holding values) and ``AGENT_S_SECRET_ENV`` (comma-separated
names) mark values that are never written or sent to a model: ``read_secrets``.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, cast, get_args

from agent_s.context import ContextPolicy
from agent_s.errors import AgentSError
from agent_s.keys import normalize_key
from agent_s.models.endpoints import ProviderSettings, settings_from_env
from agent_s.models.errors import mask_secret
from agent_s.models.profiles import ApiKind, config_path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

ProviderName = Literal["openai", "anthropic", "openai-compatible", "openai-responses"]
GroundModeName = Literal["auto", "ocr", "a11y", "model", "native"]
SafetyMode = Literal["auto", "confirm", "confirm-all", "deny-risky"]
RuleEffect = Literal["allow", "risky", "deny"]
SandboxName = Literal["none", "bwrap"]

PROVIDERS: Mapping[ProviderName, ApiKind] = {
    "openai": "openai_chat",
    "anthropic": "anthropic",
    "openai-compatible": "openai_compatible",
    "openai-responses": "openai_responses",
}
DEFAULT_MAX_STEPS = 30


class ConfigError(AgentSError, ValueError):
    """The configuration is incomplete or invalid; the message says which flag or variable."""

    def __init__(self, message: str, *, setting: str) -> None:
        super().__init__(message)
        self.setting = setting


def _env(environ: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if environ is None else environ


def _number(environ: Mapping[str, str], name: str, kind: type[int] | type[float]) -> float | None:
    raw = environ.get(name, "").strip()
    if not raw:
        return None
    try:
        return kind(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a number", setting=name) from None


def _flag(environ: Mapping[str, str], name: str) -> bool | None:
    raw = environ.get(name, "").strip().lower()
    if not raw:
        return None
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"{name}={raw!r} must be 1 or 0", setting=name)


def _guess_provider(model: str, base_url: str | None) -> ProviderName | None:
    if base_url:
        return "openai-compatible"
    lowered = model.lower()
    if lowered.startswith("claude"):
        return "anthropic"
    if lowered.startswith(("gpt", "o1", "o3", "o4", "computer-use")):
        return "openai"
    return None


@dataclass(frozen=True)
class ModelConfig:
    """The generation model: which API, which model, where, with which key (never shown)."""

    provider: ProviderName
    model: str
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    key_source: str = ""
    timeout_s: float = 120.0

    def __post_init__(self) -> None:
        if self.provider not in PROVIDERS:
            raise ConfigError(
                f"unknown provider {self.provider!r}; use one of {', '.join(PROVIDERS)}",
                setting="--provider",
            )
        if not self.model:
            raise ConfigError("a model name is required (--model)", setting="--model")

    def __repr__(self) -> str:
        return (
            f"ModelConfig(provider={self.provider!r}, model={self.model!r}, "
            f"base_url={self.base_url!r}, api_key={mask_secret(self.api_key)})"
        )

    @property
    def api(self) -> ApiKind:
        return PROVIDERS[self.provider]

    def settings(self) -> ProviderSettings:
        return ProviderSettings(
            self.api, self.model, self.base_url, self.api_key, self.key_source, self.timeout_s
        )

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
        """The edge: flags first, then ``AGENT_S_*``, then the provider's usual key variable."""
        env = _env(environ)
        model = model or env.get("AGENT_S_MODEL") or None
        base_url = base_url or env.get("AGENT_S_BASE_URL") or None
        provider = provider or env.get("AGENT_S_PROVIDER") or None
        if not model:
            raise ConfigError(
                "no model configured: pass --model NAME (and --provider "
                f"{'|'.join(PROVIDERS)}), or set AGENT_S_MODEL and AGENT_S_PROVIDER; "
                "the API key comes from --api-key or the provider's variable "
                "(OPENAI_API_KEY, ANTHROPIC_API_KEY)",
                setting="--model",
            )
        if provider is None:
            provider = _guess_provider(model, base_url)
            if provider is None:
                raise ConfigError(
                    f"cannot tell which API serves {model!r}: pass --provider "
                    f"{'|'.join(PROVIDERS)} or set AGENT_S_PROVIDER",
                    setting="--provider",
                )
        if provider not in PROVIDERS:
            raise ConfigError(
                f"unknown provider {provider!r}; use one of {', '.join(PROVIDERS)}",
                setting="--provider",
            )
        name = cast(ProviderName, provider)
        found = settings_from_env(
            PROVIDERS[name], model, base_url=base_url, api_key=api_key, environ=env
        )
        return cls(name, model, base_url, found.api_key, found.key_source)


@dataclass(frozen=True)
class GroundingConfig:
    """How referring expressions become points; ``model`` mode needs ``model`` (and ``url``)."""

    mode: GroundModeName = "auto"
    url: str | None = None
    model: str | None = None
    api_key: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.mode not in get_args(GroundModeName):
            raise ConfigError(
                f"unknown grounding mode {self.mode!r}; use auto, ocr, a11y, model or native",
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
        return ProviderSettings("openai_compatible", self.model, self.url, self.api_key)

    @classmethod
    def from_env(
        cls,
        *,
        mode: str | None = None,
        url: str | None = None,
        model: str | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> GroundingConfig:
        env = _env(environ)
        mode = mode or env.get("AGENT_S_GROUND") or "auto"
        url = url or env.get("AGENT_S_GROUND_URL") or None
        model = model or env.get("AGENT_S_GROUND_MODEL") or None
        key = None
        if model:
            key = settings_from_env("openai_compatible", model, base_url=url, environ=env).api_key
        return cls(cast(GroundModeName, mode), url, model, key)


def _strings(value: Any, setting: str) -> tuple[str, ...]:
    """A TOML value that must be a string or a list of strings, as a tuple."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{setting} must be a string or a list of strings", setting=setting)
    return tuple(value)


def _unknown(table: Mapping[str, Any], known: tuple[str, ...], where: str) -> None:
    extra = sorted(set(table) - set(known))
    if extra:
        raise ConfigError(
            f"[{where}] has unknown keys {', '.join(extra)}; known: {', '.join(known)}",
            setting=f"{where}.{extra[0]}",
        )


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
    """A user's rule. Every matcher given must match (one given at least):

    ``actions`` action names (``type``, ``open``, ``hotkey``, ...; ``run_code`` for a code block),
    ``apps`` the application acted on (window class) or opened, ``keys`` key combinations such
    as ``"ctrl+q"`` (a combination pressed that contains one of them matches), ``text`` a regular
    expression searched in the text typed, the code run, or the file or app opened.
    ``effect``: ``allow`` (never asked), ``risky`` (asked or refused as the mode says) or ``deny``
    (always refused, in every mode). Deny rules win over allow rules, which win over the rest.
    """

    effect: RuleEffect
    actions: tuple[str, ...] = ()
    apps: tuple[str, ...] = ()
    keys: tuple[str, ...] = ()
    text: str = ""
    note: str = ""

    def __post_init__(self) -> None:
        if self.effect not in get_args(RuleEffect):
            raise ConfigError(
                f"a rule's effect must be allow, risky or deny, not {self.effect!r}",
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

    @classmethod
    def from_mapping(cls, table: Mapping[str, Any]) -> SafetyRule:
        known = ("effect", "actions", "apps", "keys", "text", "note")
        _unknown(table, known, "safety.rules")
        text, note = table.get("text", ""), table.get("note", "")
        if not isinstance(text, str) or not isinstance(note, str):
            raise ConfigError("safety rule text and note must be strings", setting="safety.rules")
        return cls(
            effect=table.get("effect", ""),
            actions=_strings(table.get("actions", ()), "safety.rules.actions"),
            apps=_strings(table.get("apps", ()), "safety.rules.apps"),
            keys=_strings(table.get("keys", ()), "safety.rules.keys"),
            text=text,
            note=note,
        )


@dataclass(frozen=True)
class SafetyConfig:
    """What the agent may do without asking (``agent_s.safety`` applies it to every action).

    ``mode``: ``auto`` allows everything no rule denies; ``confirm`` asks before risky actions;
    ``confirm-all`` asks before every action that does something; ``deny-risky`` refuses risky
    actions. The SDK's default is ``auto``; ``agent-s run`` defaults to ``confirm``.
    ``allow_apps`` / ``allow_paths``: applications and folders ``open`` may use without that
    being risky.
    """

    mode: SafetyMode = "auto"
    rules: tuple[SafetyRule, ...] = ()
    allow_apps: tuple[str, ...] = ()
    allow_paths: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.mode not in get_args(SafetyMode):
            raise ConfigError(
                f"unknown safety mode {self.mode!r}; use auto, confirm, confirm-all or deny-risky",
                setting="--safety",
            )

    def with_env(self, environ: Mapping[str, str]) -> SafetyConfig:
        mode = environ.get("AGENT_S_SAFETY", "").strip()
        return replace(self, mode=cast(SafetyMode, mode)) if mode else self

    def to_mapping(self) -> dict[str, Any]:
        """The ``[safety]`` table that ``from_mapping`` reads back (for harness workers)."""
        rules = [{k: v for k, v in asdict(rule).items() if v} for rule in self.rules]
        return {
            "mode": self.mode,
            "allow_apps": list(self.allow_apps),
            "allow_paths": list(self.allow_paths),
            "rules": rules,
        }

    @classmethod
    def from_mapping(cls, table: Mapping[str, Any], default_mode: str = "auto") -> SafetyConfig:
        """From the ``[safety]`` table: mode, allow_apps, allow_paths, ``[[safety.rules]]``."""
        _unknown(table, ("mode", "allow_apps", "allow_paths", "rules"), "safety")
        rules = table.get("rules", [])
        if not isinstance(rules, list) or not all(isinstance(r, Mapping) for r in rules):
            raise ConfigError("[[safety.rules]] must be tables", setting="safety.rules")
        return cls(
            mode=table.get("mode", default_mode),
            rules=tuple(SafetyRule.from_mapping(r) for r in rules),
            allow_apps=_strings(table.get("allow_apps", ()), "safety.allow_apps"),
            allow_paths=_strings(table.get("allow_paths", ()), "safety.allow_paths"),
        )


@dataclass(frozen=True)
class CodeAgentConfig:
    """The coding sub-agent (``call_code_agent``) and how its code runs (``agent_s.code_runner``).

    ``workdir`` None: the desktop's home folder. ``sandbox`` ``bwrap``: bubblewrap, with the file
    system read-only except ``workdir``, ``writable`` and a scratch folder, and no network.
    ``output_bytes``: kept of each stream of a block (half its start, half its end); the code
    model sees at most ``model_output_chars`` of it, the GUI worker's summary ``summary_chars``.
    """

    enabled: bool = True
    max_steps: int = 20
    timeout_s: float = 60.0
    memory_mb: int | None = 2048
    sandbox: SandboxName = "none"
    workdir: Path | None = None
    writable: tuple[Path, ...] = ()
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
                f"unknown code sandbox {self.sandbox!r}; use none or bwrap",
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

    def with_env(self, environ: Mapping[str, str]) -> CodeAgentConfig:
        values: dict[str, Any] = {}
        sandbox = environ.get("AGENT_S_CODE_SANDBOX", "").strip()
        if sandbox:
            values["sandbox"] = sandbox
        timeout = _number(environ, "AGENT_S_CODE_TIMEOUT", float)
        if timeout is not None:
            values["timeout_s"] = timeout
        steps = _number(environ, "AGENT_S_CODE_STEPS", int)
        if steps is not None:
            values["max_steps"] = int(steps)
        return replace(self, **values) if values else self

    def to_mapping(self) -> dict[str, Any]:
        """The ``[code_agent]`` table that ``from_mapping`` reads back (for harness workers)."""
        table = asdict(self)
        table["timeout"] = table.pop("timeout_s")
        del table["workdir"]
        if self.workdir is not None:
            table["workdir"] = str(self.workdir)
        table["writable"] = [str(w) for w in self.writable]
        return table

    @classmethod
    def from_mapping(cls, table: Mapping[str, Any]) -> CodeAgentConfig:
        """From the ``[code_agent]`` table; ``timeout`` is in seconds, paths may use ``~``."""
        names = (
            "enabled",
            "max_steps",
            "timeout",
            "memory_mb",
            "sandbox",
            "workdir",
            "writable",
            "output_bytes",
            "model_output_chars",
            "summary_chars",
            "python",
        )
        _unknown(table, names, "code_agent")
        values: dict[str, Any] = {k: v for k, v in table.items() if k in names}
        if "timeout" in values:
            values["timeout_s"] = values.pop("timeout")
        if "workdir" in values:
            values["workdir"] = Path(str(values["workdir"])).expanduser()
        if "writable" in values:
            folders = _strings(values["writable"], "code_agent.writable")
            values["writable"] = tuple(Path(f).expanduser() for f in folders)
        return cls(**values)


def read_config_file(
    path: Path | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    default_mode: SafetyMode = "auto",
    default_sandbox: SandboxName = "none",
) -> tuple[SafetyConfig, CodeAgentConfig]:
    """The edge: the ``[safety]`` and ``[code_agent]`` tables of the configuration file
    (``path``, ``$AGENT_S_CONFIG`` or ``~/.config/agent-s/config.toml``); defaults when the
    default file is missing. A file the user named that is missing, or bad TOML, is an error.
    ``default_mode``: the safety mode when the file names none (the CLI's is ``confirm``);
    ``default_sandbox``: the code sandbox when the file names none (``bench run``'s is bwrap
    where bubblewrap works)."""
    explicit = path is not None
    if path is None:
        path, explicit = config_path(_env(environ))
    if not path.is_file():
        if explicit:
            raise ConfigError(f"configuration file {path} does not exist", setting="--config")
        return SafetyConfig(mode=default_mode), CodeAgentConfig(sandbox=default_sandbox)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        raise ConfigError(
            f"cannot read configuration file {path}: {err}", setting="--config"
        ) from err
    tables = []
    for name in ("safety", "code_agent"):
        table = data.get(name, {})
        if not isinstance(table, Mapping):
            raise ConfigError(f"{path}: [{name}] must be a table", setting=name)
        tables.append(table)
    try:
        safety = SafetyConfig.from_mapping(tables[0], default_mode)
        code = dict(tables[1])
        code.setdefault("sandbox", default_sandbox)
        return safety, CodeAgentConfig.from_mapping(code)
    except (ConfigError, TypeError) as err:
        raise ConfigError(f"{path}: {err}", setting=getattr(err, "setting", "--config")) from err


@dataclass(frozen=True)
class SecretsConfig:
    """Values the user marks secret (redacted everywhere, ``agent_s.redact``): ``env`` names
    environment variables holding one; each non-empty line of each of ``files`` is one. API
    keys, and variables whose name looks secret (``*_TOKEN``, ``*PASSWORD*``), need no mark."""

    env: tuple[str, ...] = ()
    files: tuple[Path, ...] = ()

    def with_env(self, environ: Mapping[str, str]) -> SecretsConfig:
        """Plus the names in ``AGENT_S_SECRET_ENV`` (comma-separated)."""
        raw = environ.get("AGENT_S_SECRET_ENV", "")
        names = tuple(n.strip() for n in raw.split(",") if n.strip())
        return replace(self, env=(*self.env, *names)) if names else self

    @classmethod
    def from_mapping(cls, table: Mapping[str, Any]) -> SecretsConfig:
        """From the ``[secrets]`` table: ``env = ["DB_PASSWORD"]``, ``files = ["~/.pw"]``."""
        _unknown(table, ("env", "files"), "secrets")
        files = _strings(table.get("files", ()), "secrets.files")
        env = _strings(table.get("env", ()), "secrets.env")
        return cls(env, tuple(Path(f).expanduser() for f in files))

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


def read_secrets(
    path: Path | None = None, *, environ: Mapping[str, str] | None = None
) -> tuple[str, ...]:
    """The edge: the values marked secret by ``[secrets]`` in the configuration file (as in
    ``read_config_file``) and by ``AGENT_S_SECRET_ENV``, for ``AgentConfig.secrets``."""
    env = _env(environ)
    explicit = path is not None
    if path is None:
        path, explicit = config_path(env)
    table: Any = {}
    if path.is_file():
        try:
            table = tomllib.loads(path.read_text(encoding="utf-8")).get("secrets", {})
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
            raise ConfigError(
                f"cannot read configuration file {path}: {err}", setting="--config"
            ) from err
    elif explicit:
        raise ConfigError(f"configuration file {path} does not exist", setting="--config")
    if not isinstance(table, Mapping):
        raise ConfigError(f"{path}: [secrets] must be a table", setting="secrets")
    return SecretsConfig.from_mapping(table).with_env(env).values(env)


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
    settle_seconds: float = 0.4  # after an action, before the next screenshot
    retry_attempts: int = 4  # HTTP attempts per model call (the retry layer)
    context: ContextPolicy = field(default_factory=ContextPolicy)
    desktop_name: str = ""  # the desktop environment, for prompt hints ("gnome", "openbox")
    # list the active window's named elements (role, name) in each worker request, when the
    # accessibility tree is available; off by default (it costs tokens and an AT-SPI walk)
    a11y_snapshot: bool = False
    safety: SafetyConfig = field(default_factory=lambda: SafetyConfig())  # the SDK: "auto"
    code: CodeAgentConfig = field(default_factory=lambda: CodeAgentConfig())
    # values never written or sent to a model, besides the API keys (``read_secrets``)
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
        if self.max_seconds is not None and self.max_seconds <= 0:
            raise ConfigError("max_seconds must be positive", setting="AGENT_S_MAX_SECONDS")
        if self.max_cost_usd is not None and self.max_cost_usd < 0:
            raise ConfigError("--max-cost must not be negative", setting="--max-cost")
        if self.settle_seconds < 0:
            raise ConfigError("settle_seconds must not be negative", setting="settle_seconds")
        if self.retry_attempts < 1:
            raise ConfigError("retry_attempts must be at least 1", setting="retry_attempts")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **explicit: object) -> AgentConfig:
        """Settings from ``AGENT_S_*`` variables; keyword arguments that are not None win."""
        env = _env(environ)
        values: dict[str, object] = {}
        steps = _number(env, "AGENT_S_MAX_STEPS", int)
        if steps is not None:
            values["max_steps"] = int(steps)
        for name, key, kind in (
            ("AGENT_S_MAX_COST", "max_cost_usd", float),
            ("AGENT_S_MAX_TOKENS", "max_tokens", int),
            ("AGENT_S_MAX_SECONDS", "max_seconds", float),
        ):
            number = _number(env, name, kind)
            if number is not None:
                values[key] = number
        for name, key in (
            ("AGENT_S_REFLECTION", "reflection"),
            ("AGENT_S_A11Y_SNAPSHOT", "a11y_snapshot"),
        ):
            flag = _flag(env, name)
            if flag is not None:
                values[key] = flag
        if env.get("AGENT_S_RECORD_DIR"):
            values["record_dir"] = Path(env["AGENT_S_RECORD_DIR"]).expanduser()
        desktop = env.get("XDG_CURRENT_DESKTOP") or env.get("DESKTOP_SESSION") or ""
        values["desktop_name"] = desktop
        values["safety"] = SafetyConfig().with_env(env)
        values["code"] = CodeAgentConfig().with_env(env)
        values["secrets"] = SecretsConfig().with_env(env).values(env)  # AGENT_S_SECRET_ENV
        values.update({k: v for k, v in explicit.items() if v is not None})
        return cls(**values)  # type: ignore[arg-type]


__all__ = [
    "DEFAULT_MAX_STEPS",
    "PROVIDERS",
    "AgentConfig",
    "CodeAgentConfig",
    "ConfigError",
    "GroundModeName",
    "GroundingConfig",
    "ModelConfig",
    "ProviderName",
    "RuleEffect",
    "SafetyConfig",
    "SafetyMode",
    "SafetyRule",
    "SandboxName",
    "SecretsConfig",
    "fold_key",
    "key_combo",
    "read_config_file",
    "read_secrets",
]
