"""``bench run --policy agent`` carries the safety settings to its workers, by their effects:
``--safety deny-risky`` keeps the model's command out of the task's terminal, and model-written
code runs under bubblewrap by default (a write outside the task's folders does not land on the
machine), unless ``--code-sandbox none`` says otherwise."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from scripted_cli import model_options
from typer.testing import CliRunner

from agent_s.bench.tasks import load_suite
from agent_s.cli.main import app
from agent_s.coding.runner import sandbox_problem
from agent_s.testing.scripted_replies import reply
from agent_s.testing.scripted_server import ScriptedModelServer

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is not installed"),
]


def act(code: str) -> str:
    return f"Next.\n```python\n{code}\n```"


def notes_task_suite(tmp_path: Path) -> tuple[str, Path]:
    """An index with only the smoke suite's notes task (a terminal is open; the model must
    write ~/notes.txt); its id."""
    task = next(t for t in load_suite("smoke").tasks(["os"]) if "notes.txt" in t.instruction)
    folder = tmp_path / "suite" / "examples" / "os"
    folder.mkdir(parents=True)
    shutil.copy(task.path, folder / f"{task.id}.json")
    index = tmp_path / "suite" / "test_one.json"
    index.write_text(json.dumps({"os": [task.id]}))
    return task.id, index


def bench(server: ScriptedModelServer, index: Path, results: Path, *extra: str) -> dict:
    argv = [
        "bench",
        "run",
        str(index),
        "--policy",
        "agent",
        *model_options(server.openai_base_url),
        "--max-steps",
        "5",
        "--results",
        str(results),
        "--json",
        *extra,
    ]
    config = results.parent / "config.toml"  # an empty file: no rules of this machine's user
    config.write_text("")
    result = CliRunner().invoke(app, argv, env={"AGENT_S_CONFIG": str(config)})
    assert result.exit_code in (0, 1), result.output
    (record,) = json.loads(result.stdout)["records"]
    return record


def test_deny_risky_keeps_the_command_out_of_the_terminal(tmp_path: Path) -> None:
    task_id, index = notes_task_suite(tmp_path)
    script = [
        reply(act("agent.type(text=\"echo 'hello bench' > ~/notes.txt\", enter=True)")),
        reply(act("agent.done()")),
    ]
    with ScriptedModelServer(script) as server:
        record = bench(server, index, tmp_path / "results", "--safety", "deny-risky")
    assert record["score"] == 0.0  # the file was never written (with auto it scores 1)
    folder = tmp_path / "results" / "pyautogui" / "screenshot" / "scripted-model" / "os" / task_id
    first = json.loads((folder / "trajectory" / "trajectory.jsonl").read_text().splitlines()[0])
    assert first["safety"]["allowed"] is False
    assert first["executed"] == []


@pytest.mark.skipif(sandbox_problem() is not None, reason=str(sandbox_problem()))
@pytest.mark.parametrize("sandbox", ["default", "none"])
def test_model_code_is_sandboxed_by_default(sandbox: str, tmp_path: Path) -> None:
    _, index = notes_task_suite(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    target = outside / "escaped.txt"
    script = [
        reply(act("agent.call_code_agent('write a file')")),
        reply(f"Run this.\n```bash\necho escaped > {target}\n```"),
        reply("Finished.\nDONE"),
        reply(act("agent.done()")),
    ]
    extra = () if sandbox == "default" else ("--code-sandbox", "none")
    with ScriptedModelServer(script) as server:
        bench(server, index, tmp_path / "results", *extra)
    assert target.exists() == (sandbox == "none")
