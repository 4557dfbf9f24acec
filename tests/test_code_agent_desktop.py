"""The code agent on the session's virtual desktop with a scripted model: it edits a CSV and the
GUI worker then finds the new content on the screen; and ``agent-s run`` asks at a terminal
(a real pseudo-terminal: y / n per code block) or, with no terminal, refuses."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from clean_env import clean_env
from scripted_cli import run_options
from typer.testing import CliRunner

from agent_s import Agent, AgentConfig, GroundingConfig, ModelConfig, RunStatus, load_trajectory
from agent_s.cli.main import app
from agent_s.safety.gate import Approval
from agent_s.settings.config import CodeAgentConfig, SafetyConfig
from agent_s.testing.scripted_replies import reply
from agent_s.testing.scripted_server import ScriptedModelServer

pytestmark = pytest.mark.desktop
AGENT_S = str(Path(sys.executable).parent / "agent-s")
_CLEAN = clean_env()


def act(code: str) -> str:
    return f"Next.\n```python\n{code}\n```"


def block(language: str, code: str) -> str:
    return f"Run this.\n```{language}\n{code}\n```"


def test_the_code_agent_edits_a_csv_and_the_worker_sees_it_on_screen(
    apps: Any, x11: Any, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "sales.csv").write_text("region,amount\nnorth,120\nsouth,80\n")
    edit = (
        "import csv\n"
        "rows = list(csv.reader(open('sales.csv')))\n"
        "total = sum(int(r[1]) for r in rows[1:])\n"
        "rows.append(['Grandtotal', str(total)])\n"
        "csv.writer(open('sales.csv', 'w', newline=''), lineterminator='\\n').writerows(rows)\n"
        "print('total', total)"
    )
    apps(
        [
            "xterm",
            "-fa",
            "DejaVu Sans Mono",
            "-fs",
            "13",
            "-geometry",
            "60x12+80+80",
            "-title",
            "agent-check",
            "-e",
            "sh",
        ],
        window="agent-check",
        cwd=work,
    )
    x11.activate("agent-check")
    script = [
        reply(act('agent.call_code_agent("Append a Grandtotal row summing amount to sales.csv")')),
        reply(block("python", edit)),
        reply("Appended Grandtotal,200 to sales.csv.\nDONE"),
        reply(act('agent.type(text="clear; cat sales.csv", enter=True)')),
        reply(act('agent.click("Grandtotal")')),  # found only if the row is really there
        reply(act('agent.done(answer="200")')),
    ]
    approvals: list[str] = []

    def approve(request: Any) -> Approval:
        approvals.append(request.subject.action)
        return Approval(True, by="tester")

    with ScriptedModelServer(script) as server:
        model = ModelConfig("openai-compatible", "scripted-model", server.openai_base_url, "sk-x")
        config = AgentConfig(
            record_dir=tmp_path / "runs",
            settle_seconds=0.3,
            safety=SafetyConfig(mode="confirm"),
            code=CodeAgentConfig(workdir=work, python=sys.executable, timeout_s=20),
        )
        agent = Agent(
            model, settings=config, grounding=GroundingConfig("auto"), backend=x11, approver=approve
        )
        result = agent.run("Add a grand total to sales.csv and check it")
    assert result.status is RunStatus.SUCCEEDED, result
    assert (work / "sales.csv").read_text().endswith("south,80\nGrandtotal,200\n")
    assert approvals == ["run_code", "type"]  # the code block, then typing into the terminal
    steps = load_trajectory(result.trajectory_dir).steps
    assert [s.kind for s in steps[0].substeps] == ["block", "final"]
    assert "total 200" in steps[0].detail  # the worker was told what the code printed
    check = steps[2].grounding[0]
    assert check.point is not None, check
    window = x11.windows()
    term = next(w for w in window if w.title == "agent-check")
    assert term.x <= check.point[0] < term.x + term.width
    assert term.y <= check.point[1] < term.y + term.height


def _cli(server: ScriptedModelServer, tmp_path: Path, *extra: str) -> list[str]:
    return [*run_options(server.openai_base_url, tmp_path / "runs", key="sk-cli-key"), *extra]


def _config(tmp_path: Path, work: Path) -> dict[str, str]:
    path = tmp_path / "config.toml"
    path.write_text(f'[code_agent]\nworkdir = "{work}"\npython = "{sys.executable}"\n')
    return {"AGENT_S_CONFIG": str(path)}


def test_cli_asks_at_a_terminal_y_and_n_per_code_block(tmp_path: Path, desktop: Any) -> None:
    work = tmp_path / "work"
    work.mkdir()
    script = [
        reply(act("agent.call_code_agent()")),
        reply(block("bash", "touch refused.txt")),
        reply(block("bash", "echo from-cli > cli.txt")),
        reply("Wrote cli.txt.\nDONE"),
        reply(act("agent.done()")),
    ]
    with ScriptedModelServer(script) as server:
        master, slave = pty.openpty()
        env = {**_CLEAN, **desktop.env, **_config(tmp_path, work), "NO_COLOR": "1"}
        proc = subprocess.Popen(
            [AGENT_S, *_cli(server, tmp_path, "--code-timeout", "20", "--json"), "Write cli.txt"],
            stdin=slave,
            stderr=slave,
            stdout=subprocess.PIPE,
            env=env,
            text=True,
        )
        os.close(slave)
        seen = ""
        for answer in ("n", "y"):
            seen = _read_until(master, seen, "for this run: ", proc)
            os.write(master, f"{answer}\n".encode())
            seen += "\x00"  # mark the answer so the next wait needs a new prompt
        stdout, _ = proc.communicate(timeout=60)
        os.close(master)
    assert proc.returncode == 0, seen
    assert json.loads(stdout)["status"] == "succeeded"
    assert (work / "cli.txt").read_text() == "from-cli\n"
    assert not (work / "refused.txt").exists()
    assert "bash code to run" in seen
    assert "touch refused.txt" in seen
    assert "it runs bash code" in seen
    folder = Path(json.loads(stdout)["trajectory_dir"])
    subs = load_trajectory(folder).steps[0].substeps
    assert [(s.safety or {}).get("allowed") for s in subs[:2]] == [False, True]
    assert subs[0].safety is not None
    assert subs[0].safety["approver"].endswith("(cli)")


def _read_until(fd: int, seen: str, marker: str, proc: subprocess.Popen[str]) -> str:
    deadline = time.monotonic() + 40
    start = seen.rfind("\x00") + 1
    while marker not in seen[start:]:
        assert time.monotonic() < deadline, f"no prompt; output so far:\n{seen}"
        assert proc.poll() is None, f"the CLI ended early:\n{seen}"
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                seen += os.read(fd, 65536).decode("utf-8", "replace")
            except OSError:
                break
    return seen


def test_cli_without_a_terminal_refuses_and_says_so(tmp_path: Path, desktop: Any) -> None:
    work = tmp_path / "work"
    work.mkdir()
    script = [
        reply(act("agent.call_code_agent()")),
        reply(block("bash", "touch made.txt")),
        reply("Nothing could run.\nFAIL"),
        reply(act('agent.fail(reason="no approval")')),
    ]
    with ScriptedModelServer(script) as server:
        env = {**_CLEAN, **desktop.env, **_config(tmp_path, work)}
        result = CliRunner().invoke(
            app, [*_cli(server, tmp_path), "--json", "Make a file"], env=env
        )
    assert result.exit_code == 1, result.output
    assert "nobody can approve" in result.stderr
    assert not (work / "made.txt").exists()
    folder = Path(json.loads(result.stdout)["trajectory_dir"])
    sub = load_trajectory(folder).steps[0].substeps[0]
    assert sub.safety is not None
    assert (sub.kind, sub.safety["decided_by"]) == ("refused", "nobody (no approver)")
