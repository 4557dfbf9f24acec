"""Model-written code runs contained by default (issue 27): ``agent-s run`` and the SDK with no
``--code-sandbox``, attacked as a hostile model would, judged by effect (the file not written,
the display not reached); where bubblewrap cannot run the command says so once and runs the
reduced containment; ``agent-s doctor`` names the containment in force."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from escapes import broken_bwrap, outside_tmp
from scripted_cli import model_options

from agent_s import Agent, AgentConfig, GroundingConfig, ModelConfig, RunStatus, load_trajectory
from agent_s.coding.runner import sandbox_problem
from agent_s.settings.config import CodeAgentConfig, SafetyConfig
from agent_s.testing.scripted_replies import reply
from agent_s.testing.scripted_server import ScriptedModelServer

pytestmark = pytest.mark.desktop
AGENT_S = str(Path(sys.executable).parent / "agent-s")
BWRAP = sandbox_problem()
needs_bwrap = pytest.mark.skipif(BWRAP is not None, reason=f"bubblewrap cannot run: {BWRAP}")
FALLBACK = "without the bubblewrap sandbox"


def act(code: str) -> str:
    return f"Next.\n```python\n{code}\n```"


def block(language: str, code: str) -> str:
    return f"Run this.\n```{language}\n{code}\n```"


@pytest.fixture
def outside(tmp_path: Path) -> Iterator[Path]:
    with outside_tmp(tmp_path) as folder:
        yield folder


# What a hostile block tries. Its words to look for are built at run time, so that the code's
# own text (which the trajectory records too) never holds them.
_HOSTILE = """import os, socket, sys
def say(*words):
    print("-".join(words), flush=True)
for target in sys.argv[1:] or {targets!r}:
    try:
        with open(target, "a") as out:
            out.write("escaped\\n")
        say("ESC", "APED", target)
    except OSError as err:
        say("KEPT", "IN", target, err.strerror)
for n in range(200):
    for address in (f"/tmp/.X11-unix/X{{n}}", f"\\0/tmp/.X11-unix/X{{n}}"):
        s = socket.socket(socket.AF_UNIX)
        try:
            s.connect(address)
            say("DISPLAY", "REACHED", address.replace("\\0", "@"))
        except OSError:
            pass
        finally:
            s.close()
open("mine.txt", "w").write("mine")
say("WROTE", "OWN", os.getcwd())
"""


def hostile(*targets: Path) -> str:
    return _HOSTILE.format(targets=[str(t) for t in targets])


def code_output(folder: Path) -> str:
    """Everything the code agent's blocks printed in the run recorded in ``folder``."""
    steps = load_trajectory(folder).steps
    return "\n".join(json.dumps(sub.model_dump(mode="json")) for s in steps for sub in s.substeps)


def _env(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_S_", "XDG_"))}
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text("")
    return keep | {"HOME": str(home), "AGENT_S_CONFIG": str(home / "config.toml")} | (extra or {})


def _run(server: ScriptedModelServer, tmp_path: Path, *extra: str) -> list[str]:
    return [
        AGENT_S,
        "run",
        *model_options(server.openai_base_url, key="sk-default-sandbox"),
        "--ground",
        "native",
        "--safety",
        "auto",
        "--record",
        str(tmp_path / "runs"),
        "--json",
        *extra,
    ]


@needs_bwrap
def test_run_with_no_flag_keeps_the_code_agent_in_its_desktops_home(
    tmp_path: Path, desktop: Any, outside: Path
) -> None:
    """``agent-s run --virtual`` with no --code-sandbox: the code agent's block writes outside
    the virtual desktop's HOME, into the real user's home, and reaches for the X displays."""
    home = tmp_path / "home"  # the real user's home
    (home / ".bashrc").parent.mkdir(parents=True)
    (home / ".bashrc").write_text("# mine\n")
    escaped = outside / "escaped.txt"
    code = hostile(escaped, home / "planted.txt", home / ".bashrc")
    script = [
        reply(act('agent.call_code_agent("Tidy up the files")')),
        reply(block("python", code)),
        reply("Tidied.\nDONE"),
        reply(act("agent.done()")),
    ]
    with ScriptedModelServer(script) as server:
        done = subprocess.run(
            [*_run(server, tmp_path, "--virtual"), "Tidy up the files"],
            env=_env(home, {"DISPLAY": desktop.display}),
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    assert FALLBACK not in done.stderr  # bubblewrap works here: nothing to say
    assert not escaped.exists()
    assert not (home / "planted.txt").exists()
    assert (home / ".bashrc").read_text() == "# mine\n"
    printed = code_output(Path(json.loads(done.stdout)["trajectory_dir"]))
    assert "WROTE-OWN" in printed, printed  # the block did run, in the desktop's HOME
    assert "DISPLAY-REACHED" not in printed
    assert "ESC-APED" not in printed


def sdk_agent(
    server: ScriptedModelServer, x11: Any, tmp_path: Path, work: Path, **config: Any
) -> Agent:
    """An SDK agent with the defaults but for its working folder (and ``config``)."""
    model = ModelConfig("openai-compatible", "scripted-model", server.openai_base_url, "sk-x")
    settings = AgentConfig(
        record_dir=tmp_path / "runs",
        settle_seconds=0.1,
        safety=SafetyConfig(mode="auto"),
        code=CodeAgentConfig(workdir=work, python=sys.executable, timeout_s=30),
        **config,
    )
    return Agent(model, settings=settings, grounding=GroundingConfig("a11y"), backend=x11)


@needs_bwrap
def test_the_sdk_with_its_defaults_keeps_code_in_the_working_folder(
    tmp_path: Path, x11: Any, outside: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    script = [
        reply(act('agent.call_code_agent("Tidy up the files")')),
        reply(block("python", hostile(outside / "escaped.txt"))),
        reply("Tidied.\nDONE"),
        reply(act("agent.done()")),
    ]
    with ScriptedModelServer(script) as server:
        agent = sdk_agent(server, x11, tmp_path, work)
        result = agent.run("Tidy up the files")
    assert result.status is RunStatus.SUCCEEDED, result
    assert (work / "mine.txt").read_text() == "mine"
    assert not (outside / "escaped.txt").exists()
    assert agent.settings.code.sandbox == "bwrap"  # auto, resolved where bubblewrap works
    assert result.trajectory_dir is not None
    printed = code_output(result.trajectory_dir)
    assert "KEPT-IN" in printed
    assert "DISPLAY-REACHED" not in printed


def test_where_bubblewrap_cannot_run_run_says_so_once_and_runs_the_code_contained(
    tmp_path: Path, desktop: Any
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    home = tmp_path / "home"
    path = broken_bwrap(tmp_path)
    config = f'[code_agent]\nworkdir = "{work}"\npython = "{sys.executable}"\n'

    def script(tag: str) -> list[Any]:
        return [
            reply(act('agent.call_code_agent("Write one file")')),
            reply(block("bash", f"echo {tag} > one-{tag}.txt")),
            reply("Wrote it.\nDONE"),
            reply(act('agent.call_code_agent("Write another file")')),
            reply(block("bash", f"echo {tag} > two-{tag}.txt")),
            reply("Wrote it.\nDONE"),
            reply(act("agent.done()")),
        ]

    runs = {}
    for tag, extra in (("auto", ()), ("none", ("--code-sandbox", "none"))):
        with ScriptedModelServer(script(tag)) as server:
            env = _env(home / tag, {"PATH": path, "DISPLAY": desktop.display})
            (home / tag / "config.toml").write_text(config)
            runs[tag] = subprocess.run(
                [*_run(server, tmp_path, "--virtual", *extra), "Write two files"],
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
            )
    auto, none = runs["auto"], runs["none"]
    assert auto.returncode == 0, auto.stderr
    said = [line for line in auto.stderr.splitlines() if FALLBACK in line]
    assert len(said) == 1, auto.stderr  # once, though two code agent calls ran code
    assert "No permissions to create new namespace" in said[0]
    assert "install bubblewrap" in said[0]
    assert "--code-sandbox none" in said[0]
    assert "Traceback" not in auto.stderr
    # the reduced containment ran the code (nothing would be written in the sandbox: /tmp)
    assert (work / "one-auto.txt").read_text() == "auto\n"
    assert (work / "two-auto.txt").read_text() == "auto\n"
    # --code-sandbox none, given: accepted, nothing to say
    assert none.returncode == 0, none.stderr
    assert FALLBACK not in none.stderr
    assert (work / "two-none.txt").read_text() == "none\n"


def _doctor(env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run(
        [AGENT_S, "doctor", "--json"], env=env, capture_output=True, text=True, timeout=120
    )
    checks = json.loads(done.stdout)["checks"]
    found: dict[str, Any] = next(c for c in checks if c["name"] == "code sandbox")
    return found


def test_doctor_names_the_containment_in_force(tmp_path: Path, desktop: Any) -> None:
    home = tmp_path / "home"
    base = _env(home, {"DISPLAY": desktop.display})
    broken = _doctor(base | {"PATH": broken_bwrap(tmp_path)})
    assert broken["status"] == "warn"
    assert broken["detail"].startswith("no sandbox (--code-sandbox auto, but bwrap cannot")
    assert "it can write wherever you can" in broken["detail"]
    assert "bubblewrap" in broken["fix"]
    assert "--code-sandbox none" in broken["fix"]
    chosen = _doctor(base | {"AGENT_S_CODE_SANDBOX": "none"})
    assert chosen["status"] == "warn"
    assert chosen["detail"].startswith("no sandbox (--code-sandbox none)")
    if BWRAP is None:
        default = _doctor(base)
        assert default["status"] == "ok"
        assert default["detail"].startswith("bubblewrap (--code-sandbox auto)")
        assert "--code-sandbox auto" in chosen["fix"]


@needs_bwrap
def test_a_plans_command_check_runs_contained_by_default(
    tmp_path: Path, x11: Any, outside: Path
) -> None:
    """A plan's subtask check is model-written too: with the SDK's defaults it may write in
    the working folder only and reaches no display."""
    from agent_s.planning.plan import PlanSettings

    work = tmp_path / "work"
    work.mkdir()
    escaped = outside / "escaped.txt"
    check = {"kind": "command", "argv": ["python3", "-c", hostile(), str(escaped)]}
    subtask = {"id": "look", "description": "Look at the screen", "check": check}
    body = {"feasible": True, "reason": "", "subtasks": [subtask]}
    script = [
        reply("The plan:\n```json\n" + json.dumps(body) + "\n```"),
        reply(act("agent.done()")),
    ]
    with ScriptedModelServer(script) as server:
        agent = sdk_agent(server, x11, tmp_path, work, plan=PlanSettings("always"))
        result = agent.run("Look at the screen")
    assert not escaped.exists()
    assert (work / "mine.txt").read_text() == "mine"  # the check ran, in the working folder
    assert result.plan is not None
    (record,) = result.plan["subtasks"]
    detail = " ".join(c["detail"] for c in record["checks"])
    assert "KEPT-IN" in detail, detail
    assert "DISPLAY-REACHED" not in detail


_SDK_TWICE = """
from agent_s import Agent, AgentConfig, ModelConfig
model = ModelConfig("openai-compatible", "scripted-model", "http://127.0.0.1:9/v1", "sk-x")
for _ in range(2):
    agent = Agent(model, settings=AgentConfig())
    print(agent.settings.code.sandbox)
"""


def test_the_sdk_where_bubblewrap_cannot_run_warns_once_and_falls_back(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _SDK_TWICE],
        env={**os.environ, "PATH": broken_bwrap(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["none", "none"]
    assert done.stderr.count("ContainmentWarning") == 1, done.stderr
    assert FALLBACK in done.stderr
    assert "--code-sandbox none" in done.stderr
