"""One settings model: each setting from each source (the file, an ``AGENT_S_*`` variable, a
flag), the precedence between them (file < variable < flag), each command's defaults, the
resolved settings handed to harness workers, and one clear error per bad value with its source.

Values are resolved through the functions the commands call (``run_settings``,
``bench_settings``); one real ``agent-s run`` shows a price from the file reaching the cost."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from clean_env import clean_env
from scripted_cli import run_options
from typer.testing import CliRunner

from agent_s import AgentConfig, GroundingConfig, ModelConfig
from agent_s.cli.bench import bench_settings
from agent_s.cli.main import app
from agent_s.cli.run import RUN_DEFAULTS, run_settings
from agent_s.models.endpoints import ProviderSettings
from agent_s.settings.config import ConfigError, SafetyRule
from agent_s.settings.read import Settings, load_settings
from agent_s.testing.scripted_replies import reply
from agent_s.testing.scripted_server import ScriptedModelServer

_CLEAN = clean_env()


def _prices(settings: Settings) -> tuple[float | None, float | None]:
    profile = settings.build_profiles().resolve("priced-model-7b", "openai_compatible")
    return profile.input_price, profile.output_price


@dataclass(frozen=True)
class Case:
    """One setting: how the file, a variable and a flag set it, and what each resolves to.
    ``flag`` None: no command-line flag; the explicit value is then an SDK argument
    (``explicit``, nested as the settings are), given to ``load_settings`` directly."""

    name: str
    get: Callable[[Settings], Any]
    toml: str
    in_file: Any
    env: tuple[str, str] | None
    in_env: Any
    flag: tuple[str, Any] | None
    in_flag: Any
    explicit: Mapping[str, Any] | None = None


RULE_FILE = SafetyRule("deny", keys=("ctrl+q",), note="from the file")
RULE_ARG = SafetyRule("allow", apps=("galculator",))
CASES = [
    Case(
        "model",
        lambda s: s.model.name,
        '[model]\nname = "file-model"\n',
        "file-model",
        ("AGENT_S_MODEL", "env-model"),
        "env-model",
        ("--model", "flag-model"),
        "flag-model",
    ),
    Case(
        "provider",
        lambda s: s.model.provider,
        '[model]\nprovider = "anthropic"\n',
        "anthropic",
        ("AGENT_S_PROVIDER", "openai-responses"),
        "openai-responses",
        ("--provider", "openai-compatible"),
        "openai-compatible",
    ),
    Case(
        "base_url",
        lambda s: s.model.base_url,
        '[model]\nbase_url = "http://file:1/v1"\n',
        "http://file:1/v1",
        ("AGENT_S_BASE_URL", "http://env:2/v1"),
        "http://env:2/v1",
        ("--base-url", "http://flag:3/v1"),
        "http://flag:3/v1",
    ),
    Case(
        "max_steps",
        lambda s: s.limits.max_steps,
        "[limits]\nmax_steps = 11\n",
        11,
        ("AGENT_S_MAX_STEPS", "12"),
        12,
        ("--max-steps", 13),
        13,
    ),
    Case(
        "max_cost",
        lambda s: s.limits.max_cost,
        "[limits]\nmax_cost = 1.5\n",
        1.5,
        ("AGENT_S_MAX_COST", "2.5"),
        2.5,
        ("--max-cost", 3.5),
        3.5,
    ),
    Case(
        "safety mode",
        lambda s: s.safety.mode,
        '[safety]\nmode = "deny-risky"\n',
        "deny-risky",
        ("AGENT_S_SAFETY", "confirm-all"),
        "confirm-all",
        ("--safety", "auto"),
        "auto",
    ),
    Case(
        "safety rule",
        lambda s: s.safety.rules,
        '[[safety.rules]]\neffect = "deny"\nkeys = "ctrl+q"\nnote = "from the file"\n',
        (RULE_FILE,),
        None,
        None,
        None,
        (RULE_ARG,),
        explicit={"safety": {"rules": [{"effect": "allow", "apps": ["galculator"]}]}},
    ),
    Case(
        "code sandbox",
        lambda s: s.code_agent.sandbox,
        '[code_agent]\nsandbox = "bwrap"\n',
        "bwrap",
        ("AGENT_S_CODE_SANDBOX", "none"),  # run's default too: file + variable shows it wins
        "none",
        ("--code-sandbox", "bwrap"),
        "bwrap",
    ),
    Case(
        "code timeout",
        lambda s: s.code_agent.timeout_s,
        "[code_agent]\ntimeout = 11.5\n",
        11.5,
        ("AGENT_S_CODE_TIMEOUT", "12.5"),
        12.5,
        ("--code-timeout", 13.5),
        13.5,
    ),
    Case(
        "profile prices",
        _prices,
        '[profiles."priced-*"]\ninput_price = 1.0\noutput_price = 2.0\n',
        (1.0, 2.0),
        None,
        None,
        None,
        (5.0, 6.0),
        explicit={"profiles": {"priced-*": {"input_price": 5, "output_price": 6}}},
    ),
    Case(
        "grounding mode",
        lambda s: s.grounding.mode,
        '[grounding]\nmode = "ocr"\n',
        "ocr",
        ("AGENT_S_GROUND", "a11y"),
        "a11y",
        ("--ground", "native"),
        "native",
    ),
]
SOURCES = [
    ("file",),
    ("env",),
    ("flag",),
    ("file", "env"),
    ("env", "flag"),
    ("file", "flag"),
    ("file", "env", "flag"),
]


def resolve(tmp_path: Path, case: Case, sources: tuple[str, ...]) -> Settings:
    config = tmp_path / "config.toml"
    config.write_text(case.toml if "file" in sources else "")
    environ = {"AGENT_S_CONFIG": str(config)}
    if "env" in sources and case.env is not None:
        environ[case.env[0]] = case.env[1]
    if case.flag is not None:
        flags = dict([case.flag]) if "flag" in sources else {}
        return run_settings(flags, environ)
    explicit = case.explicit if "flag" in sources else None
    return load_settings(explicit, environ=environ, defaults=RUN_DEFAULTS)


@pytest.mark.parametrize(
    ("case", "sources"),
    [
        pytest.param(case, sources, id=f"{case.name}:{'+'.join(sources)}")
        for case in CASES
        for sources in SOURCES
        if case.env is not None or "env" not in sources  # each source the setting has
    ],
)
def test_each_setting_from_each_source_file_below_env_below_flag(
    case: Case, sources: tuple[str, ...], tmp_path: Path
) -> None:
    expected = {"file": case.in_file, "env": case.in_env, "flag": case.in_flag}[sources[-1]]
    assert case.get(resolve(tmp_path, case, sources)) == expected


def test_nothing_set_gives_each_commands_defaults(tmp_path: Path) -> None:
    environ = {"AGENT_S_CONFIG": str(tmp_path / "empty.toml")}
    (tmp_path / "empty.toml").write_text("")
    run = run_settings({}, environ)
    assert run.safety.mode == "confirm"  # agent-s run asks before risky actions
    assert run.run.record_dir == Path("~/.local/share/agent-s/runs").expanduser()
    assert (run.code_agent.sandbox, run.limits.max_steps, run.grounding.mode) == (
        "auto",  # bubblewrap where it works, resolved by the command (Settings.contained)
        30,
        "auto",
    )
    bench = bench_settings({}, None, environ)  # bubblewrap works here
    assert (bench.safety.mode, bench.code_agent.sandbox) == ("auto", "bwrap")
    assert bench_settings({}, "no bwrap", environ).code_agent.sandbox == "none"
    assert bench.run.record_dir is None
    sdk = AgentConfig.from_env(environ)  # the SDK: no command, its own defaults
    assert (sdk.safety.mode, sdk.code.sandbox, sdk.record_dir) == ("auto", "auto", None)
    (tmp_path / "empty.toml").write_text('[safety]\nmode = "deny-risky"\n')
    assert bench_settings({}, None, environ).safety.mode == "deny-risky"  # the file wins


def test_names_marked_secret_add_up_over_the_sources(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[secrets]\nenv = "FILE_PIN"\n')
    environ = {
        "AGENT_S_CONFIG": str(config),
        "AGENT_S_SECRET_ENV": "ENV_PIN, OTHER",
        "FILE_PIN": "pin-from-file-1234",
        "ENV_PIN": "pin-from-env-5678",
        "ARG_PIN": "pin-from-arg-9012",
    }
    assert load_settings(environ={**environ, "AGENT_S_SECRET_ENV": ""}).secrets.env == ("FILE_PIN",)
    explicit = {"secrets": {"env": ["ARG_PIN"]}}
    assert load_settings(explicit, environ={"AGENT_S_CONFIG": str(config)}).secrets.env == (
        "FILE_PIN",
        "ARG_PIN",
    )
    settings = load_settings(explicit, environ=environ)
    assert settings.secrets.env == ("FILE_PIN", "ENV_PIN", "OTHER", "ARG_PIN")
    assert settings.secret_values(environ) == (
        "pin-from-file-1234",
        "pin-from-env-5678",
        "pin-from-arg-9012",
    )
    assert settings.build_agent_config(environ).secrets == settings.secret_values(environ)


def test_the_sdk_constructors_resolve_through_the_settings(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        '[model]\nname = "claude-sonnet-4-5"\n[grounding]\nmode = "model"\n'
        'model = "ui-tars-1.5-7b"\nurl = "http://127.0.0.1:9/v1"\n[limits]\nmax_steps = 7\n'
    )
    environ = {
        "AGENT_S_CONFIG": str(config),
        "ANTHROPIC_API_KEY": "sk-ant-from-env",
        "AGENT_S_COMPATIBLE_API_KEY": "sk-ground",
    }
    model = ModelConfig.from_env(environ=environ)
    assert (model.provider, model.api, model.model) == (
        "anthropic",
        "anthropic",
        "claude-sonnet-4-5",
    )
    assert (model.api_key, model.key_source) == ("sk-ant-from-env", "ANTHROPIC_API_KEY")
    assert ModelConfig.from_env(model="gpt-4o", api_key="sk-x", environ=environ).provider == (
        "openai"
    )
    grounding = GroundingConfig.from_env(environ=environ)
    assert (grounding.mode, grounding.model, grounding.api_key) == (
        "model",
        "ui-tars-1.5-7b",
        "sk-ground",
    )
    assert GroundingConfig.from_env(mode="ocr", environ=environ).mode == "ocr"
    assert AgentConfig.from_env(environ).max_steps == 7
    assert AgentConfig.from_env(environ, max_steps=3).max_steps == 3


def test_model_config_is_provider_settings_named_by_provider() -> None:
    model = ModelConfig("openai-compatible", "m", "http://127.0.0.1:9/v1", "sk-secret-1")
    assert isinstance(model, ProviderSettings)
    assert (model.api, model.provider) == ("openai_compatible", "openai-compatible")
    plain = model.settings()
    assert type(plain) is ProviderSettings
    assert (plain.api, plain.model, plain.base_url, plain.api_key) == (
        "openai_compatible",
        "m",
        "http://127.0.0.1:9/v1",
        "sk-secret-1",
    )
    assert "sk-secret-1" not in repr(model) + repr(plain)
    with pytest.raises(ConfigError, match="unknown provider 'acme'"):
        ModelConfig("acme", "m")  # type: ignore[arg-type]


def test_resolved_settings_travel_to_workers_as_json_without_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        '[safety]\nallow_apps = "mousepad"\n[[safety.rules]]\neffect = "deny"\ntext = "rm -rf"\n'
        '[code_agent]\ntimeout = 9\nwritable = ["~/out"]\n[secrets]\nfiles = ["~/pins.txt"]\n'
        '[profiles."priced-*"]\ninput_price = 1.0\n'
    )
    environ = {"AGENT_S_CONFIG": str(config), "OPENAI_API_KEY": "sk-never-in-json"}
    settings = bench_settings({"--model": "gpt-4o", "--safety": "deny-risky"}, None, environ)
    data = settings.to_json()
    text = json.dumps(data)
    assert "sk-never-in-json" not in text
    assert data["code_agent"]["timeout"] == 9
    assert data["code_agent"]["writable"] == [str(Path("~/out").expanduser())]
    monkeypatch.setenv("AGENT_S_MAX_STEPS", "99")  # a worker's variables are not read again
    monkeypatch.setenv("AGENT_S_CONFIG", str(tmp_path / "not-there.toml"))
    again = Settings.from_json(json.loads(text))
    assert again == settings
    assert again.limits.max_steps == 30
    assert again.safety.rules == (SafetyRule("deny", text="rm -rf"),)
    capped = settings.with_cost_limit(0.25)
    assert (capped.limits.max_cost, capped.with_cost_limit(1.0).limits.max_cost) == (0.25, 0.25)
    assert settings.limits.max_cost is None  # unchanged: settings are frozen


@pytest.mark.parametrize(
    ("toml", "env", "argv", "message", "setting"),
    [
        (
            "[code_agent]\ntimout = 5\n",
            {},
            [],
            "{config}: code_agent.timout: unknown setting; known: enabled,",
            "code_agent.timout",
        ),
        (
            '[limits]\nmax_steps = "many"\n',
            {},
            [],
            "{config}: limits.max_steps: Input should be a valid integer",
            "limits.max_steps",
        ),
        (
            "",
            {"AGENT_S_MAX_COST": "cheap"},
            [],
            "AGENT_S_MAX_COST='cheap': Input should be a valid number",
            "AGENT_S_MAX_COST",
        ),
        (
            "",
            {"AGENT_S_SAFETY": "sometimes"},
            [],
            "AGENT_S_SAFETY='sometimes': unknown safety mode 'sometimes'; use 'auto', 'confirm'",
            "AGENT_S_SAFETY",
        ),
        (
            '[safety]\nmode = "deny-risky"\n',
            {},
            ["--safety", "yolo"],
            "--safety: unknown safety mode 'yolo'",
            "--safety",
        ),
        (
            '[profiles."gpt-4o*"]\ninput_price = "cheap"\n',
            {},
            [],
            '{config}: profiles."gpt-4o*".input_price: expected a non-negative number',
            'profiles."gpt-4o*".input_price',
        ),
    ],
)
def test_a_bad_value_is_one_error_naming_the_setting_and_its_source(
    toml: str, env: dict[str, str], argv: list[str], message: str, setting: str, tmp_path: Path
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(toml)
    environ = {"AGENT_S_CONFIG": str(config), **env}
    flags = dict(zip(argv[::2], argv[1::2], strict=True))
    with pytest.raises(ConfigError) as caught:
        run_settings(flags, environ)
    assert str(caught.value).startswith(message.format(config=config))
    assert caught.value.setting == setting
    commands = [
        ["run", "--model", "gpt-4o", *argv, "a task"],
        ["bench", "run", "smoke", "--model", "gpt-4o", *argv],
    ]
    if not argv:  # doctor has no --safety
        commands.append(["doctor"])
    cli_env = {**_CLEAN, **environ, "DISPLAY": ":999", "COLUMNS": "300"}  # one line each
    for command in commands:
        result = CliRunner().invoke(app, command, env=cli_env)
        assert result.exit_code == 2, (command, result.output)
        assert isinstance(result.exception, SystemExit)
        assert message.format(config=config) in result.output.replace("\n", ""), result.output
        assert "Traceback" not in result.output


def test_a_configuration_file_named_but_missing_is_an_error(tmp_path: Path) -> None:
    missing = tmp_path / "missing.toml"
    with pytest.raises(ConfigError, match=f"{missing} does not exist .named by AGENT_S_CONFIG."):
        run_settings({}, {"AGENT_S_CONFIG": str(missing)})
    broken = tmp_path / "broken.toml"
    broken.write_text("[model\n")
    with pytest.raises(ConfigError, match=f"cannot read configuration file {broken}"):
        run_settings({}, {"AGENT_S_CONFIG": str(broken)})


def act(code: str) -> str:
    return f"Working.\n```python\n{code}\n```"


@pytest.mark.usefixtures("desktop")
def test_a_profile_price_from_the_file_is_what_agent_s_run_charges(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[profiles."scripted-*"]\ninput_price = 10.0\noutput_price = 20.0\n')
    script = [reply(act("agent.done()"), input_tokens=1000, output_tokens=100)]
    with ScriptedModelServer(script) as server:
        argv = [*run_options(server.openai_base_url, tmp_path / "runs"), "--json", "Look around"]
        result = CliRunner().invoke(app, argv, env={"AGENT_S_CONFIG": str(config)})
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    # a local server's default price is 0: the cost is the file's prices
    assert data["usage"]["cost_usd"] == pytest.approx((1000 * 10.0 + 100 * 20.0) / 1e6)
