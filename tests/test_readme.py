"""The README's examples run as written: the configuration file is read by the settings model,
and each Python example runs in a fresh interpreter (the SDK example against the scripted model
server, on the test desktop, doing the task it names)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from agent_s.settings import load_settings
from agent_s.testing.scripted_replies import reply
from agent_s.testing.scripted_server import ScriptedModelServer

README = Path(__file__).resolve().parent.parent / "README.md"
_BLOCK = re.compile(r"^```(\w+)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def blocks(language: str) -> list[str]:
    return [body for lang, body in _BLOCK.findall(README.read_text()) if lang == language]


def run_python(code: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def test_the_readme_has_the_examples_these_tests_run() -> None:
    assert len(blocks("toml")) == 1
    assert len(blocks("python")) == 3


def test_the_configuration_example_is_read_as_documented(tmp_path: Path) -> None:
    (config := tmp_path / "config.toml").write_text(blocks("toml")[0])
    settings = load_settings(environ={"AGENT_S_CONFIG": str(config)})
    assert settings.limits.max_cost == 0.5
    assert settings.safety.mode == "confirm"
    assert settings.code_agent.sandbox == "bwrap"
    assert settings.secrets.env == ("DB_PASSWORD",)
    assert settings.profiles["my-vlm*"]["input_price"] == 0.2


def test_the_actions_and_desktop_examples_run(tmp_path: Path) -> None:
    _, actions, desktop = blocks("python")
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "XAUTHORITY")}
    for code in (actions, desktop):
        done = run_python(code, tmp_path, env)
        assert done.returncode == 0, done.stderr


def test_the_sdk_example_does_its_task(tmp_path: Path, desktop: Any) -> None:
    """ "rename every .jpeg in ~/Pictures to .jpg": the scripted model hands it to the code agent,
    whose code really runs (the SDK's safety mode is auto)."""
    home = tmp_path / "home"
    (pictures := home / "Pictures").mkdir(parents=True)
    for name in ("a.jpeg", "b.jpeg", "keep.png"):
        (pictures / name).write_bytes(b"x")
    rename = 'cd ~/Pictures && for f in *.jpeg; do mv -- "$f" "${f%.jpeg}.jpg"; done'
    script = [
        reply("I hand this to the code agent.\n```python\nagent.call_code_agent()\n```"),
        reply(f"Rename them.\n```bash\n{rename}\n```"),
        reply("Renamed the two .jpeg files.\nDONE"),
        reply("All renamed.\n```python\nagent.done()\n```"),
    ]
    with ScriptedModelServer(script) as server:
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("AGENT_S_")},
            **desktop.env,
            "HOME": str(home),
            "OPENAI_API_KEY": "sk-readme-example",
            "AGENT_S_BASE_URL": server.openai_base_url,
            "AGENT_S_CONFIG": str(tmp_path / "empty.toml"),
        }
        (tmp_path / "empty.toml").write_text("")
        done = run_python(blocks("python")[0], tmp_path, env)
    assert done.returncode == 0, done.stderr
    assert "succeeded" in done.stdout.lower(), done.stdout
    assert sorted(p.name for p in pictures.iterdir()) == ["a.jpg", "b.jpg", "keep.png"]
    assert (tmp_path / "runs").is_dir()  # record_dir=Path("runs"), as the example says
