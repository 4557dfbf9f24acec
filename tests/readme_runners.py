"""What tests/test_readme.py shares with its runners, and the runners of the README's
"Replay, workflows and export" block: a terminal run recorded by the scripted model on the test
desktop, carried out again, kept as a workflow and run with new values, exported (each effect
checked on disk; no model call after the recording)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PIL import Image
from polling import poll

from agent_s.memory import MemoryStore
from agent_s.record.trajectory import load_trajectory
from agent_s.replay.player import script_of
from agent_s.replay.workflow import Workflow
from agent_s.testing.scripted_replies import reply
from agent_s.testing.scripted_server import ScriptedModelServer

AGENT_S = str(Path(sys.executable).parent / "agent-s")

_SESSION = ("DISPLAY", "XAUTHORITY", "DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR")
_CLEAN = {
    k: v
    for k, v in os.environ.items()
    if not k.startswith("AGENT_S_")
    and k not in _SESSION
    and not k.endswith("_API_KEY")
    and k not in ("NO_COLOR", "COLUMNS")
}


def act(code: str) -> str:
    return f"Next step.\n```python\n{code}\n```"


@dataclass(frozen=True)
class Command:
    """One command line of an ``sh`` block, split as the shell would split it."""

    block: int  # index among the sh blocks
    line: str
    env: Mapping[str, str]  # NAME=VALUE words before the program
    argv: tuple[str, ...]  # the program and its arguments (up to a && or ;)
    chained: tuple[tuple[str, ...], ...] = field(default=())  # commands after && or ;

    @property
    def program(self) -> str:
        return self.argv[0]

    @property
    def is_agent_s(self) -> bool:
        return Path(self.program).name == "agent-s"

    @property
    def subcommand(self) -> tuple[str, ...]:
        """``("run",)``, ``("bench", "run")``, ``("workflow", "save")``: the agent-s command
        the line invokes."""
        args = self.argv[1:]
        if not args:
            return ()
        two = args[0] in ("bench", "workflow", "model") and len(args) > 1
        return tuple(args[:2]) if two else (args[0],)

    def value(self, flag: str) -> str | None:
        args = list(self.argv)
        for index, arg in enumerate(args):
            if arg == flag and index + 1 < len(args):
                return args[index + 1]
            if arg.startswith(flag + "="):
                return arg.split("=", 1)[1]
        return None

    def flags(self) -> list[str]:
        found = []
        for argv in (self.argv, *self.chained):
            found += [arg.split("=", 1)[0] for arg in argv if arg.startswith("--")]
        return found


@dataclass
class Scene:
    """What a block's commands run against: the scratch folder, HOME, the test desktop."""

    cwd: Path
    home: Path
    config: Path
    desktop: Any
    apps: Any
    x11: Any
    seen: list[tuple[str, ...]] = field(default_factory=list)  # the agent-s lines run so far


def _model_env(command: Command, server: ScriptedModelServer) -> tuple[dict[str, str], list[str]]:
    """The environment and argv for a line that talks to a model: the scripted server stands
    in for the provider; the key variable stays as written."""
    anthropic = command.value("--provider") == "anthropic"
    url = server.base_url if anthropic else server.openai_base_url
    argv = list(command.argv)
    env = {**command.env}
    if "--base-url" in argv:
        argv[argv.index("--base-url") + 1] = url
    else:
        env["AGENT_S_BASE_URL"] = url
    if command.value("--model") is None:
        env["AGENT_S_MODEL"] = "gpt-4o"  # a configured model, as the README's [model] has it
    return env, [AGENT_S, *argv[1:]]


def _agent_s(
    argv: list[str],
    scene: Scene,
    env: Mapping[str, str],
    *,
    virtual: bool = False,
    stdin: str | None = None,
    timeout: float = 240,
) -> subprocess.CompletedProcess[str]:
    base = {**_CLEAN, "HOME": str(scene.home), "AGENT_S_CONFIG": str(scene.config)}
    if not virtual:
        base.update(scene.desktop.env)
        base["HOME"] = str(scene.home)
    done = subprocess.run(
        argv,
        cwd=scene.cwd,
        env={**base, **env, "COLUMNS": "120"},
        input=stdin if stdin is not None else "",
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    return done


# -- replay, workflows and export -----------------------------------------------------------------

TERMINAL = "agent-s-terminal"
_TASK = re.compile(r"In the terminal, write the text '([^']+)' into the file (~/\S+)")
_RUNS = "~/.local/share/agent-s/runs/run-"
_DB = ".local/share/agent-s/memory.sqlite3"  # in HOME
# what OSWorld's runner (lib_run_single) writes per step
OSWORLD_FIELDS = {
    "step_num",
    "action_timestamp",
    "action",
    "response",
    "reward",
    "done",
    "info",
    "screenshot_file",
}


def _note(scene: Scene, task: str) -> tuple[str, Path]:
    """The text a task of the block writes and the file (in the scene's HOME) it writes it to."""
    found = _TASK.fullmatch(task)
    assert found, f"no scripted model for the task {task!r}"
    return found[1], scene.home / found[2][2:]


def _recorded(scene: Scene) -> Path:
    """The folder the block's ``agent-s run`` line recorded: the first run in HOME (the replays
    come after it)."""
    runs = sorted((scene.home / ".local/share/agent-s/runs").glob("run-*"))
    assert runs, "no agent-s run line above recorded a run"
    return runs[0]


def _with_run(command: Command, scene: Scene) -> list[str]:
    """The line's argv with the folder the README names (as ``run`` prints it) replaced by the
    one the run line recorded here."""
    folder = str(_recorded(scene))
    assert any(a.startswith(_RUNS) for a in command.argv), command.line
    return [AGENT_S, *(folder if a.startswith(_RUNS) else a for a in command.argv[1:])]


def _memory(scene: Scene, env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with the memory file in the scene's HOME where it is by default (the test
    desktop's environment names the session's, shared by every test)."""
    return {**env, "AGENT_S_MEMORY_DB": str(scene.home / _DB)}


def _replayed(done: subprocess.CompletedProcess[str], recorded: int) -> Path:
    """A replay's stdout says it replayed every one of the ``recorded`` steps with no model
    call, counting the new run's steps as its trajectory numbers them (typing that ended with
    Enter is two): the new run's folder."""
    assert done.returncode == 0, done.stdout + done.stderr
    made = re.search(r"^trajectory: (.+)$", done.stdout, re.MULTILINE)
    assert made, done.stdout
    steps = len(load_trajectory(made[1]).steps)
    head = f"replayed: {steps} steps" + (f" ({recorded} recorded" if steps != recorded else ",")
    assert done.stdout.startswith(head), done.stdout
    assert re.search(rf"^{steps} steps, 0 model calls, 0 tokens", done.stdout, re.M), done.stdout
    return Path(made[1])


def recorded_run_line(command: Command, scene: Scene) -> None:
    """``agent-s run`` of the block: an xterm on the test desktop (its shell's HOME is the
    scene's), where the scripted model types the command that writes the file the task names."""
    (task,) = [a for a in command.argv if _TASK.fullmatch(a)]
    text, note = _note(scene, task)
    xterm = ["xterm", "-T", TERMINAL, "-xrm", "XTerm*allowTitleOps: false"]
    xterm += ["-e", "bash", "--norc", "--noprofile"]  # a title that stays put
    scene.apps(xterm, window=TERMINAL, cwd=scene.home, env={"HOME": str(scene.home)})
    scene.x11.activate(TERMINAL)
    typed = f"echo '{text}' > {task.rsplit(' ', 1)[1]}"
    script = [reply(act(f"agent.type(text={typed!r}, enter=True)")), reply(act("agent.done()"))]
    with ScriptedModelServer(script) as server:
        env, argv = _model_env(command, server)
        done = _agent_s(argv, scene, _memory(scene, env))
        asked = len(server.requests)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("succeeded:"), done.stdout
    assert asked == len(script)
    assert poll(lambda: note.is_file() and note.read_text() == f"{text}\n")


def replay_line(command: Command, scene: Scene) -> None:
    """``agent-s replay RUN_DIR --heal``: the file the run wrote is deleted; the replay writes
    it again, grounding each step on the screen as it is now, and asks the model (configured,
    as ``--heal`` needs) nothing: every request to it is counted."""
    folder = _recorded(scene)
    text, note = _note(scene, script_of(folder).task)
    note.unlink()
    with ScriptedModelServer([]) as server:
        env, _ = _model_env(command, server)
        done = _agent_s(_with_run(command, scene), scene, _memory(scene, env))
        asked = len(server.requests)
    assert asked == 0
    made = _replayed(done, len(load_trajectory(folder).steps))
    assert made.is_dir()
    assert made != folder
    assert poll(lambda: note.is_file() and note.read_text() == f"{text}\n")


def workflow_line(command: Command, scene: Scene) -> None:
    """``agent-s workflow save|list|show|run|forget``, in the memory file of the scene's HOME:
    ``run`` with new values writes a new file with the new text, asking no model."""
    action, name = command.argv[2], command.argv[3] if len(command.argv) > 3 else None
    db = scene.home / _DB
    recorded = script_of(_recorded(scene)).task
    text, note = _note(scene, recorded)
    file_1 = recorded.rsplit(" ", 1)[1]
    if action == "save":
        done = _agent_s(_with_run(command, scene), scene, _memory(scene, command.env))
        name = command.argv[4]
    else:
        with ScriptedModelServer([]) as server:  # any request to the model is counted
            env, argv = _model_env(command, server)
            done = _agent_s(argv, scene, _memory(scene, env))
            assert server.requests == []
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    if action in ("save", "show"):
        assert f"--set text_1={text}\n" in out, out
        assert f"--set file_1={file_1}\n" in out, out
        with MemoryStore(db) as store:
            flow = Workflow.load(str(name), store)
        assert flow.parameters == {"text_1": text, "file_1": file_1}
        assert flow.provenance.run_id == _recorded(scene).name
    if action == "save":
        assert out.startswith(f"saved workflow {name}: 2 steps"), out
    elif action == "show":
        assert f"name: {name}\ntask: {recorded}\n" in out, out
        assert re.search(r"^steps:\n  1\. .+\n  2\. .+$", out, re.MULTILINE), out
    elif action == "list":
        row = rf"^\S+  2 steps  text_1, file_1  unverified  {re.escape(recorded)}$"
        assert re.search(row, out, re.MULTILINE), out
    elif action == "run":
        values = dict(v.split("=", 1) for v in command.argv if re.match(r"\w+_\d+=", v))
        new = scene.home / values["file_1"].removeprefix("~/")
        made = _replayed(done, 2)
        assert script_of(made).task == recorded.replace(text, values["text_1"]).replace(
            file_1, values["file_1"]
        )
        assert poll(lambda: new.is_file() and new.read_text() == f"{values['text_1']}\n")
        assert note.read_text() == f"{text}\n"  # the recorded run's file untouched
    elif action == "forget":
        assert out == f"forgot workflow {name}\n", out
        with MemoryStore(db) as store:
            assert not Workflow.stored(store)
    else:
        raise AssertionError(f"no check for {command.line}")


def export_line(command: Command, scene: Scene) -> None:
    """``agent-s export RUN_DIR --format osworld|openai|anthropic [--out PATH]``: OSWorld's
    traj.jsonl with its runner's fields and the screenshots it names, or a message list."""
    folder = _recorded(scene)
    steps = load_trajectory(folder).steps
    done = _agent_s(_with_run(command, scene), scene, command.env, virtual=True)
    assert done.returncode == 0, done.stdout + done.stderr
    fmt, given = command.value("--format"), command.value("--out")
    written = Path(done.stdout.strip())
    written = written if written.is_absolute() else scene.cwd / written
    if fmt == "osworld":
        assert written.resolve() == (scene.cwd / str(given or folder / "osworld")).resolve()
        lines = [json.loads(line) for line in (written / "traj.jsonl").read_text().splitlines()]
        assert len(lines) == len(steps) == 2
        for number, (line, step) in enumerate(zip(lines, steps, strict=True), 1):
            assert set(line) == OSWORLD_FIELDS, line
            assert (line["step_num"], line["response"]) == (number, step.reply)
            with Image.open(written / line["screenshot_file"]) as image:
                assert image.format == "PNG"
        assert (lines[-1]["action"], lines[-1]["done"]) == ("DONE", True)
        return
    assert fmt in ("openai", "anthropic"), command.line
    out = Path(given) if given else folder
    assert written.resolve() == (scene.cwd / out / f"messages-{fmt}.json").resolve()
    data = json.loads(written.read_text())
    assert data["task"] == script_of(folder).task
    assert [m["role"] for m in data["messages"]] == ["user", "assistant"] * len(steps)


def workflow_example(code: str, scene: Scene) -> None:
    """The SDK's workflow example, after the lines of the block that record the terminal run and
    save it as a workflow: run from Python with new values, it writes a new file with the new
    text; no model is configured (so none can be asked)."""
    env = {k: v for k, v in scene.desktop.env.items() if not k.startswith("AGENT_S_")}
    env.update({"HOME": str(scene.home), "AGENT_S_CONFIG": str(scene.config)})
    env = _memory(scene, {k: v for k, v in env.items() if not k.endswith("_API_KEY")})
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=scene.cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "replayed 0\n", done.stdout + done.stderr
    values = re.search(r"values = (\{.*\})", code)
    assert values, code
    new = json.loads(values[1])
    made = scene.home / new["file_1"].removeprefix("~/")
    assert poll(lambda: made.is_file() and made.read_text() == f"{new['text_1']}\n")
