"""Secrets never leave: not in the trajectory folder, not in any request a model receives, not
on the command line. Models are scripted (the real SDKs talk to a local server that records
every request); code runs for real; the CLI runs as a real process on the virtual desktop."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from clean_env import clean_env
from PIL import Image, ImageDraw, ImageFont
from scripted_cli import run_options
from typer.testing import CliRunner

from agent_s import Agent, AgentConfig, GroundingConfig, ModelConfig, RunStatus, load_trajectory
from agent_s.cli.main import app
from agent_s.cli.options import _without_key
from agent_s.desktop import RecordingBackend
from agent_s.grounding import AccessibilityTree
from agent_s.guards.redaction import PLACEHOLDER, Redactor
from agent_s.record.trajectory import find_secrets
from agent_s.settings.config import CodeAgentConfig, ConfigError
from agent_s.settings.read import load_settings
from agent_s.testing.scripted_replies import reply, server_error
from agent_s.testing.scripted_server import RecordedRequest, ScriptedModelServer

KEY = "sk-proj-SECRET-7f3a9c2e41d8b6"  # the API key given to the agent
PIN = "shop-pin-4417-9921-zeta"  # marked secret by its variable's name
VAULT = "vault-phrase-ocelot-88"  # marked secret by a value file
WORD = "quokkamarmalade"  # shown on the screen
FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
AGENT_S = str(Path(sys.executable).parent / "agent-s")
_CLEAN = clean_env()


def act(code: str, thought: str = "Working.") -> str:
    return f"{thought}\n```python\n{code}\n```"


def leaks(value: str) -> list[str]:
    """The value and the encodings a printout of it would show."""
    raw = value.encode()
    return [value, base64.b64encode(raw).decode(), raw.hex()]


def texts(request: RecordedRequest) -> str:
    """Every text part of a request, in order."""
    parts = []
    for message in request.body["messages"]:
        content = message["content"]
        if isinstance(content, str):
            parts.append(content)
        else:
            parts += [p.get("text", "") for p in content if p.get("type") == "text"]
    return "\n".join(parts)


def sent(server: ScriptedModelServer, secrets: list[str]) -> list[int]:
    """The requests (1-based) whose body holds any of ``secrets`` in any printed form."""
    forms = [form.encode() for s in secrets for form in leaks(s)]
    return [r.index for r in server.requests if any(f in r.raw for f in forms)]


# -- the redactor and where secrets are named -------------------------------------------------


def test_every_printed_form_is_redacted_longest_first_and_short_values_are_ignored() -> None:
    redactor = Redactor([KEY, KEY[:12], "EMPTY", None])
    assert redactor.values == (KEY, KEY[:12])  # "EMPTY" is too short to be worth mangling text
    for form in leaks(KEY):
        assert redactor.text(f"<{form}>") == f"<{PLACEHOLDER}>", form
    assert redactor.text(f"{KEY} and {KEY[:12]}!") == f"{PLACEHOLDER} and {PLACEHOLDER}!"
    assert redactor.text("EMPTY stays") == "EMPTY stays"
    basic = base64.b64encode(f"alice:{KEY}".encode()).decode()  # an Authorization: Basic value
    assert PLACEHOLDER in redactor.text(basic)
    nested = redactor.data({"out": [f"key={KEY}", (KEY, 3)], KEY: None})
    assert nested == {"out": [f"key={PLACEHOLDER}", (PLACEHOLDER, 3)], PLACEHOLDER: None}
    assert KEY not in repr(redactor)


def test_variables_that_look_secret_are_redacted_without_being_named() -> None:
    environ = {
        "GITHUB_TOKEN": "ghp_abcdefgh1234",
        "DB_PASSWORD": "hunter2hunter2",
        "PASSWORD_STORE_DIR": "/home/u/.password-store",
        "API_KEY": "short",
        "EDITOR": "mousepad-editor",
    }
    redactor = Redactor(environ=environ)
    assert set(redactor.values) == {"ghp_abcdefgh1234", "hunter2hunter2"}  # no paths, no "short"
    assert redactor.text("mousepad-editor, ghp_abcdefgh1234") == f"mousepad-editor, {PLACEHOLDER}"


def read_secrets(path: Path | None = None, *, environ: Mapping[str, str]) -> tuple[str, ...]:
    """The values marked secret by the settings (``[secrets]`` and ``AGENT_S_SECRET_ENV``)."""
    return load_settings(path=path, environ=environ).secret_values(environ)


def test_secrets_are_named_in_the_config_file_and_by_variable(tmp_path: Path) -> None:
    (tmp_path / "vault.txt").write_text(f"{VAULT}\n\n  second-value-1234 \n")
    config = tmp_path / "config.toml"
    config.write_text(f'[secrets]\nenv = ["SHOP_PIN"]\nfiles = ["{tmp_path / "vault.txt"}"]\n')
    environ = {
        "AGENT_S_SECRET_ENV": " OTHER_NAME , UNSET",
        "SHOP_PIN": PIN,
        "OTHER_NAME": "other-secret-99",
    }
    values = read_secrets(config, environ=environ)
    assert values == (PIN, "other-secret-99", VAULT, "second-value-1234")
    assert read_secrets(environ={**environ, "AGENT_S_CONFIG": str(config)}) == values
    with pytest.raises(ConfigError, match="does not exist"):
        read_secrets(tmp_path / "none.toml", environ={})
    config.write_text('[secrets]\nfiles = ["/no/such/secret/file"]\n')
    with pytest.raises(ConfigError, match="cannot read secret file /no/such/secret/file"):
        read_secrets(config, environ={})
    config.write_text('[secrets]\nvalues = ["x"]\n')
    with pytest.raises(ConfigError, match=r"secrets\.values: unknown setting; known: env, files"):
        read_secrets(config, environ={})
    from_env = AgentConfig.from_env({"AGENT_S_SECRET_ENV": "SHOP_PIN", "SHOP_PIN": PIN})
    assert from_env.secrets == (PIN,)
    assert PIN not in repr(AgentConfig(secrets=(PIN,)))


# -- a whole run: code that prints secrets ------------------------------------------------------


def test_secrets_printed_by_code_reach_no_file_and_no_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "key.txt").write_text(KEY + "\n")  # where a careless script finds the key
    (tmp_path / "vault.txt").write_text(VAULT + "\n")
    config = tmp_path / "config.toml"
    config.write_text(f'[secrets]\nfiles = ["{tmp_path / "vault.txt"}"]\n')
    monkeypatch.setenv("SHOP_PIN", PIN)  # the code's environment: not a secret-looking name
    monkeypatch.setenv("AGENT_S_SECRET_ENV", "SHOP_PIN")
    secrets = read_secrets(config, environ=os.environ)
    assert set(secrets) == {PIN, VAULT}
    code = (
        "import base64, os\n"
        "key = open('key.txt').read().strip()\n"
        "print('key:', key)\n"
        "print('b64:', base64.b64encode(key.encode()).decode())\n"
        "print('basic:', base64.b64encode(('bob:' + key).encode()).decode())\n"
        "print('pin:', os.environ['SHOP_PIN'])\n"
        f"print('vault:', open('{tmp_path / 'vault.txt'}').read().strip())\n"
    )
    script = [
        reply(act('agent.call_code_agent("Print the shop credentials")')),
        reply(f"Read them.\n```python\n{code}```"),
        reply("Printed the key, the PIN and the vault phrase.\nDONE"),
        reply(act(f'agent.done(answer="the key is {KEY}")')),  # a model that saw it anyway
    ]
    with ScriptedModelServer(script) as server:
        settings = AgentConfig(
            settle_seconds=0,
            record_dir=tmp_path / "runs",
            retry_attempts=1,
            secrets=secrets,
            # outside the sandbox, the code reads the PIN variable and the vault under /tmp
            code=CodeAgentConfig(workdir=work, python=sys.executable, sandbox="none"),
        )
        model = ModelConfig("openai-compatible", "scripted-model", server.openai_base_url, KEY)
        agent = Agent(
            model,
            settings=settings,
            grounding=GroundingConfig("native"),
            backend=RecordingBackend([Image.new("RGB", (640, 480))] * 2),
        )
        result = agent.run(f"Check that the shop PIN {PIN} still works")
    assert result.status is RunStatus.SUCCEEDED, result
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"  # the key still works

    assert sent(server, [KEY, PIN, VAULT]) == []  # not the task, not the output, in no form
    fed_back = texts(server.requests[2])  # the code model, after its block ran
    assert "Turn 1: the python block exited with status 0" in fed_back
    for label in ("key", "b64", "pin", "vault"):
        assert f"{label}: {PLACEHOLDER}" in fed_back, label
    basic = next(line for line in fed_back.splitlines() if line.startswith("basic: "))
    assert basic.startswith("basic: Ym9i")  # base64("bob:" + key): the key's part is gone
    assert PLACEHOLDER in basic
    told = texts(server.requests[3])  # the GUI worker, after the code agent
    assert f"pin: {PLACEHOLDER}" in told
    assert f"the shop PIN {PLACEHOLDER}" in texts(server.requests[0])

    folder = result.trajectory_dir
    assert folder is not None
    forms = [form for s in (KEY, PIN, VAULT) for form in leaks(s)]
    assert find_secrets(folder, forms) == []
    loaded = load_trajectory(folder)
    assert loaded.result is not None
    assert loaded.result.answer == f"the key is {PLACEHOLDER}"
    assert result.answer == f"the key is {PLACEHOLDER}"
    run = loaded.steps[0].substeps[0].run
    assert run is not None
    output = run["stdout"]["text"]
    assert f"key: {PLACEHOLDER}" in output
    assert loaded.run["task"] == f"Check that the shop PIN {PLACEHOLDER} still works"
    assert loaded.run["settings"]["secrets"] == 2  # how many, never which


# -- what the screen shows: OCR evidence and the accessibility snapshot -------------------------


def test_ocr_text_of_a_secret_on_the_screen_is_redacted_in_the_feedback(tmp_path: Path) -> None:
    screen = Image.new("RGB", (1280, 800), (246, 245, 244))
    draw = ImageDraw.Draw(screen)
    font = ImageFont.truetype(FONT, 20)
    draw.text((80, 100), f"Vault password: {WORD}", font=font, fill=(20, 20, 20))
    draw.text((80, 200), "Cancel", font=font, fill=(20, 20, 20))
    script = [reply(act('agent.click("the Quit button")')), reply(act("agent.fail()"))]
    with ScriptedModelServer(script) as server:
        model = ModelConfig("openai-compatible", "scripted-model", server.openai_base_url, KEY)
        settings = AgentConfig(settle_seconds=0, record_dir=tmp_path, secrets=(WORD,))
        agent = Agent(
            model,
            settings=settings,
            grounding=GroundingConfig("ocr"),
            backend=RecordingBackend([screen, screen]),
        )
        result = agent.run("Quit the vault")
    told = texts(server.requests[1])
    assert "could not find 'the Quit button'" in told
    assert f"'Vault password: {PLACEHOLDER}'" in told  # what OCR read, without the secret
    assert sent(server, [WORD]) == []
    assert result.trajectory_dir is not None
    assert find_secrets(result.trajectory_dir, [WORD]) == []  # the screenshot is pixels


def test_a_retry_line_quoting_a_secret_is_redacted(tmp_path: Path) -> None:
    """The live progress line for a retry shows the server's words; a secret in them is not."""
    script = [server_error(500, f"upstream rejected {WORD}"), reply(act("agent.done()"))]
    lines: list[str] = []
    with ScriptedModelServer(script) as server:
        model = ModelConfig("openai-compatible", "scripted-model", server.openai_base_url, KEY)
        settings = AgentConfig(settle_seconds=0, record_dir=tmp_path, secrets=(WORD,))
        agent = Agent(
            model,
            settings=settings,
            backend=RecordingBackend([Image.new("RGB", (640, 480))] * 2),
            on_retry=lines.append,
        )
        result = agent.run("Say done")
    assert result.succeeded, result.reason
    (line,) = lines
    assert "waiting for the model: attempt 2/" in line
    assert PLACEHOLDER in line
    assert WORD not in line


@pytest.mark.desktop
def test_a_secret_in_a_window_is_redacted_from_the_accessibility_snapshot(
    apps: Any, x11: Any, tmp_path: Path
) -> None:
    AccessibilityTree().applications()  # bind AT-SPI before apps notes the running processes
    doc = tmp_path / f"{WORD}.txt"  # the window title shows the secret
    doc.write_text(f"The vault phrase is {WORD}\n")
    apps(["mousepad", str(doc)], window=f"{WORD}.txt")
    x11.activate(f"{WORD}.txt")
    with ScriptedModelServer([reply(act("agent.done()"))]) as server:
        model = ModelConfig("openai-compatible", "scripted-model", server.openai_base_url, KEY)
        settings = AgentConfig(
            settle_seconds=0, record_dir=tmp_path / "runs", a11y_snapshot=True, secrets=(WORD,)
        )
        agent = Agent(model, settings=settings, grounding=GroundingConfig("ocr"), backend=x11)
        result = agent.run("Read the vault phrase")
    snapshot = next(
        t for t in texts(server.requests[0]).split("\n\n") if "The accessibility tree" in t
    )
    assert f"{PLACEHOLDER}.txt" in snapshot  # the title was there, without the secret
    assert sent(server, [WORD]) == []
    assert result.trajectory_dir is not None
    assert find_secrets(result.trajectory_dir, [WORD]) == []
    assert load_trajectory(result.trajectory_dir).steps[0].active_window is not None


# -- the command line ----------------------------------------------------------------------------


def _cli(server: ScriptedModelServer, tmp_path: Path, *extra: str) -> list[str]:
    return [*run_options(server.openai_base_url, tmp_path), "--json", *extra]


def test_api_key_leaves_the_command_line_at_once(tmp_path: Path, desktop: Any) -> None:
    asked, release = threading.Event(), threading.Event()

    def answer(request: RecordedRequest) -> Any:
        asked.set()
        release.wait(30)  # the process waits on the model while the test looks at it
        return reply(act("agent.done()"))

    with ScriptedModelServer(answer) as server:
        proc = subprocess.Popen(
            [AGENT_S, *_cli(server, tmp_path, "--api-key", KEY, "Look around")],
            env={**_CLEAN, **desktop.env},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            deadline = time.monotonic() + 60
            while not asked.wait(0.1):
                assert proc.poll() is None, proc.communicate()
                assert time.monotonic() < deadline, "the run never called the model"
            cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes()
            shown = subprocess.run(
                ["ps", "-o", "args=", "-p", str(proc.pid)],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        finally:
            release.set()
            stdout, stderr = proc.communicate(timeout=60)
    assert KEY.encode() not in cmdline
    assert b"scripted-model" in cmdline  # the rest of the command is still shown
    assert KEY not in shown
    assert proc.returncode == 0, stderr
    assert "--api-key shows the key to other users" in stderr
    assert "--api-key-file PATH" in stderr
    assert KEY not in stderr + stdout
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"  # moved, still used
    folder = Path(json.loads(stdout)["trajectory_dir"])
    assert find_secrets(folder, [KEY]) == []


@pytest.mark.parametrize(
    ("argv", "kept", "key"),
    [
        (["run", "--api-key=sk-a", "task"], ["run", "task"], "sk-a"),
        (["run", "--api-key", "sk-a", "--api-key", "sk-b"], ["run"], "sk-b"),  # the last wins
        (["run", "--", "--api-key", "sk-a"], ["run", "--", "--api-key", "sk-a"], None),
        (["run", "--api-key"], ["run", "--api-key"], None),  # the parser says what is missing
    ],
)
def test_which_arguments_are_taken_off_the_command_line(
    argv: list[str], kept: list[str], key: str | None
) -> None:
    assert _without_key(argv) == (kept, key)


@pytest.mark.usefixtures("desktop")
def test_api_key_file_gives_the_key_from_its_first_line(tmp_path: Path) -> None:
    key_file = tmp_path / "key"
    key_file.write_text(f"  {KEY}  \nnot the key\n")
    with ScriptedModelServer([reply(act("agent.done()"))]) as server:
        args = _cli(server, tmp_path / "runs", "--api-key-file", str(key_file), "Look")
        result = CliRunner().invoke(app, args, env={"OPENAI_API_KEY": ""})
    assert result.exit_code == 0, result.output
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    assert "shows the key to other users" not in result.output


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot read {} (No such file"),
        ("\n\nsk-later-line\n", "the first line of {} is empty"),
    ],
)
def test_an_unusable_api_key_file_is_a_usage_error_that_names_the_fix(
    tmp_path: Path, content: str | None, message: str
) -> None:
    key_file = tmp_path / "key"
    if content is not None:
        key_file.write_text(content)
    args = [
        "run",
        "--provider",
        "openai",
        "--model",
        "gpt-4o",
        "--api-key-file",
        str(key_file),
        "Look",
    ]
    environ = {**_CLEAN, "DISPLAY": ":999", "COLUMNS": "400"}  # one line, no wrapping
    result = CliRunner().invoke(app, args, env=environ)
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit)
    assert message.format(key_file) in result.output
    assert "OPENAI_API_KEY" in result.output  # the fix: the variable, or a readable file
    assert "Traceback" not in result.output

    both = ["run", "--model", "gpt-4o", "--api-key", KEY, "--api-key-file", __file__, "Look"]
    result = CliRunner().invoke(app, both, env=environ)
    assert result.exit_code == 2
    assert "not both" in result.output


def test_programs_the_agent_starts_do_not_inherit_its_keys(desktop: Any, apps: Any) -> None:
    """An app opened by the agent (``open``) and a program on a virtual desktop: neither has
    the API key in its environment, where a terminal's ``env`` would show it on the screen."""
    from agent_s.desktop.virtual import VirtualDesktop
    from agent_s.desktop.x11 import X11Backend

    leaked = {**desktop.env, "OPENAI_API_KEY": KEY, "SHOP_TOKEN": PIN}
    backend = X11Backend(desktop.display, env=leaked)
    try:
        before = {w.id for w in backend.windows()}
        backend.open("xterm")
        window = backend.wait_for_window(lambda w: w.id not in before and w.app == "XTerm")
    finally:
        backend.close()
    assert window.pid is not None
    environ = Path(f"/proc/{window.pid}/environ").read_bytes()
    os.kill(window.pid, 15)
    assert KEY.encode() not in environ
    assert PIN.encode() not in environ
    assert b"DISPLAY=" in environ  # the rest of the environment is there
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENAI_API_KEY", KEY)
        with VirtualDesktop(320, 200, window_manager=False, accessibility=False) as desk:
            proc = desk.launch(["sleep", "30"])
            environ = Path(f"/proc/{proc.pid}/environ").read_bytes()
    assert KEY.encode() not in environ
