"""Workflows as a person writes and runs them, on real desktops with real mousepad and real files:
the parameters of a task written as people write it (a path that ends a sentence, text typed that
the task has unquoted); ``--set`` values with ``~`` meaning the desktop's HOME (with --virtual,
the virtual desktop's: the file is written there); a value the shell turned into the user's own
HOME refused under --virtual, leaving no file anywhere; a replay's lines, summary and trajectory
numbering its steps alike; and ``Workflow.run`` on this session's desktop with no backend given.
The scripted model answers only the recording: any request from a replay fails the test."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from clean_env import clean_env
from conftest import AppRunner
from polling import poll

from agent_s import Agent, AgentConfig, GroundingConfig, ModelConfig, RunStatus
from agent_s.record.trajectory import load_trajectory
from agent_s.testing.scripted_replies import reply
from agent_s.testing.scripted_server import ScriptedModelServer

pytestmark = pytest.mark.desktop
AGENT_S = str(Path(sys.executable).parent / "agent-s")
_CLEAN = clean_env("DISPLAY", "XAUTHORITY")
NAME = "save-note"
KEY = "sk-workflow-values-0000"
_STEP_LINE = re.compile(r"^  (\d+) (agent\.\w+)\(", re.MULTILINE)


def act(code: str) -> str:
    return f"Working.\n```python\n{code}\n```"


@dataclass(frozen=True)
class Saved:
    """The recorded run (on the session desktop), the workflow saved from it and where."""

    root: Path
    host_home: Path  # HOME of every agent-s started here: the user's own
    note: Path  # the file the recorded run wrote
    folder: Path  # the recorded run
    db: Path
    saved: str  # what `workflow save` printed

    @property
    def env(self) -> dict[str, str]:
        return {**_CLEAN, "HOME": str(self.host_home)}

    def workflow_run(self, *more: str) -> list[str]:
        return [AGENT_S, "workflow", "run", NAME, "--db", str(self.db), "--virtual", *more]


def _agent_s(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``argv`` (agent-s, or Python with the SDK) run to its end: no traceback reaches a user."""
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=240, check=False)
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    return done


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory, desktop: Any, x11: Any) -> Saved:
    """A run on the session desktop that writes "hello world" into a new mousepad document and
    saves it at the path that ends its task's sentence; saved as the workflow ``save-note``."""
    root = tmp_path_factory.mktemp("workflow-values")
    host_home = root / "host-home"
    host_home.mkdir()
    note = root / "out" / "note.txt"
    note.parent.mkdir()
    task = f"Write hello world in a new document and save it as {note}."
    actions = [
        'agent.open("mousepad")',
        'agent.type(text="hello world")',
        'agent.hotkey(["ctrl", "s"])',
        f"agent.type(text={str(note)!r}, enter=True)",
        # mousepad writes the file after the dialog's Enter: the replays' checks, and the end
        # of their virtual desktops, come after it
        "agent.wait(2)",
        "agent.done()",
    ]
    opened = AppRunner(desktop, x11)  # ends the mousepad the run opens
    try:
        with ScriptedModelServer([reply(act(a)) for a in actions]) as server:
            model = ModelConfig("openai-compatible", "scripted-model", server.openai_base_url, KEY)
            settings = AgentConfig(record_dir=root / "runs", settle_seconds=0.4)
            grounding = GroundingConfig("auto")
            agent = Agent(model, settings=settings, grounding=grounding, backend=x11)
            result = agent.run(task)
        assert result.status is RunStatus.SUCCEEDED, result
        assert poll(lambda: note.is_file() and note.read_text().startswith("hello world"))
    finally:
        opened.close()
    assert result.trajectory_dir is not None
    db = root / "memory.sqlite3"
    argv = [AGENT_S, "workflow", "save", str(result.trajectory_dir), NAME, "--db", str(db)]
    kept = _agent_s(argv, {**_CLEAN, "HOME": str(host_home)})
    assert kept.returncode == 0, kept.stdout + kept.stderr
    return Saved(root, host_home, note, result.trajectory_dir, db, kept.stdout)


def test_a_path_ending_a_sentence_and_text_typed_unquoted_are_parameters(saved: Saved) -> None:
    assert f"saved workflow {NAME}: 6 steps\n" in saved.saved, saved.saved
    # the task's full stop is not part of the path; "hello world" was typed as the task has it
    assert "  --set text_1=hello world\n" in saved.saved, saved.saved
    assert f"  --set file_1={saved.note}\n" in saved.saved, saved.saved


def _files_named(root: Path, name: str) -> list[Path]:
    return sorted(root.rglob(name))


def test_a_tilde_value_is_a_path_in_the_virtual_desktops_home(saved: Saved) -> None:
    replays = saved.root / "tilde-replays"
    argv = saved.workflow_run("--safety", "auto", "--record", str(replays))
    argv += ["--set", "file_1=~/greeting.txt", "--set", "text_1=good morning"]
    argv += ["--check", "grep -qx 'good morning' ~/greeting.txt"]  # run in the desktop's HOME
    done = _agent_s(argv, saved.env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "check passed" in done.stdout, done.stdout
    home = re.search(r"virtual desktop \S+ \(\S+\), HOME=(\S+)", done.stderr)
    assert home, done.stderr
    (made,) = replays.iterdir()
    # the file was saved in the virtual desktop's HOME, and nowhere here
    task = load_trajectory(made).run["task"]
    assert task == f"Write good morning in a new document and save it as {home[1]}/greeting.txt."
    assert _files_named(saved.root, "greeting.txt") == []
    assert not Path(home[1]).exists()  # the virtual HOME went with its desktop


def test_the_shells_tilde_under_virtual_is_refused_and_writes_nothing(saved: Saved) -> None:
    """``--set file_1=~/greeting.txt`` unquoted: bash gives agent-s the user's own HOME."""
    replays = saved.root / "refused-replays"
    argv = saved.workflow_run("--safety", "auto", "--record", str(replays))
    line = shlex.join(argv) + " --set file_1=~/greeting.txt --set text_1=hi"
    done = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", line],
        env=saved.env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    errors = [x for x in done.stderr.splitlines() if x.startswith("error:")]
    assert len(errors) == 1, done.stderr
    (error,) = errors
    assert f"--set file_1={saved.host_home}/greeting.txt is in your own HOME" in error, error
    assert "--set 'file_1=~/greeting.txt'" in error, error  # the fix: quote it
    assert "inside it" in error, error  # or a path inside the virtual HOME
    assert done.stdout == ""
    assert _files_named(saved.root, "greeting.txt") == []
    assert not any(replays.glob("run-*"))  # nothing was replayed


def test_a_replays_lines_summary_and_trajectory_number_the_steps_alike(saved: Saved) -> None:
    """Typing that ended with Enter is two steps of the new run: the summary and the divergence
    count as the lines and the trajectory do, and name the recorded step where it differs."""
    replays = saved.root / "numbered-replays"
    argv = saved.workflow_run("--safety", "auto", "--record", str(replays))
    argv += ["--set", "file_1=~/numbered.txt", "--check", "test -f ~/nothing-here.txt"]
    done = _agent_s(argv, saved.env)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = [(int(n), what) for n, what in _STEP_LINE.findall(done.stderr)]
    assert [n for n, _ in lines] == [1, 2, 3, 4, 5, 6, 7], done.stderr
    (made,) = replays.iterdir()
    steps = load_trajectory(made).steps
    assert [(s.step, s.action_text.split("(")[0]) for s in steps] == lines
    done_step = next(n for n, what in lines if what == "agent.done")
    said = f"diverged at step {done_step} (agent.done(); recorded as step 6): the check"
    assert said in done.stdout, done.stdout
    assert f"\n{len(steps)} steps, 0 model calls" in done.stdout, done.stdout
    # the fix fits the divergence: the check failed, not the desktop's layout
    assert "compare what --check tests" in done.stdout, done.stdout
    assert "look as it did" not in done.stdout

    again = _agent_s([*argv, "--json"], saved.env)
    data = json.loads(again.stdout)
    assert data["divergence"]["step"] == done_step
    assert data["divergence"]["recorded_step"] == 6
    assert (data["replayed"], data["recorded"]) == (7, 6)


def test_workflow_run_uses_this_sessions_desktop_by_default(
    saved: Saved, desktop: Any, apps: Any, tmp_path: Path
) -> None:
    """No backend given: the desktop in $DISPLAY, as ``Agent`` picks it; ``~`` is its HOME."""
    home = tmp_path / "home"
    home.mkdir()
    code = """
import sys
from pathlib import Path
from agent_s import AgentConfig
from agent_s.memory import MemoryStore
from agent_s.replay.workflow import Workflow

with MemoryStore(Path(sys.argv[1])) as store:
    flow = Workflow.load("save-note", store)
values = {"file_1": "~/evening.txt", "text_1": "see you later"}
result = flow.run(values, settings=AgentConfig(record_dir=Path(sys.argv[2]), settle_seconds=0.4))
print(result.status, result.model_calls, result.run.task)
"""
    env = {**_CLEAN, **desktop.env, "HOME": str(home)}  # no model is configured
    done = _agent_s([sys.executable, "-c", code, str(saved.db), str(tmp_path / "runs")], env)
    assert done.returncode == 0, done.stderr
    wrote = home / "evening.txt"
    said = f"replayed 0 Write see you later in a new document and save it as {wrote}.\n"
    assert done.stdout == said, done.stdout + done.stderr
    assert poll(lambda: wrote.is_file() and wrote.read_text().startswith("see you later"))
