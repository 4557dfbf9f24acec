"""Workflows on the session's virtual desktop: a run of the scripted model in a real xterm that
writes a file named in the task with text from the task is saved as a workflow, then run again
with a new file name and new text, from the CLI and from the SDK, with no model call (nothing
is configured that a model could be reached at: the replay's model is an address nothing
listens on). The new files' contents are checked on disk. And the errors a person meets: an
unknown workflow, an unknown parameter, a run that did not succeed."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import pytest
from clean_env import clean_env
from polling import poll
from typer.testing import CliRunner

from agent_s import Agent, AgentConfig, GroundingConfig, ModelConfig, RunStatus
from agent_s.cli.main import app
from agent_s.memory import MemoryStore
from agent_s.replay.workflow import Workflow
from agent_s.testing.scripted_replies import reply
from agent_s.testing.scripted_server import ScriptedModelServer

pytestmark = pytest.mark.desktop
KEY = "sk-workflow-test-0000"
_CLEAN = clean_env()
TERMINAL = "agent-s-terminal"


def act(code: str) -> str:
    return f"Next step.\n```python\n{code}\n```"


def settings(tmp_path: Path) -> AgentConfig:
    return AgentConfig(record_dir=tmp_path / "runs", settle_seconds=0.4)


def terminal(apps: Any, x11: Any, cwd: Path) -> Any:
    """An xterm whose title stays put (no shell start-up files, no title escapes)."""
    argv = ["xterm", "-T", TERMINAL, "-xrm", "XTerm*allowTitleOps: false"]
    argv += ["-e", "bash", "--norc", "--noprofile"]
    launched = apps(argv, window=TERMINAL, cwd=cwd)
    x11.activate(TERMINAL)
    return launched


def write_note(x11: Any, tmp_path: Path, note: Path, text: str) -> Path:
    """A successful recorded run that writes ``text`` to ``note``: its folder."""
    task = f"In the terminal, write the text '{text}' into the file {note}"
    command = f"echo {shlex.quote(text)} > {note}"
    with ScriptedModelServer(
        [reply(act(f"agent.type(text={command!r}, enter=True)")), reply(act("agent.done()"))]
    ) as server:
        model = ModelConfig("openai-compatible", "scripted-model", server.openai_base_url, KEY)
        agent = Agent(
            model, settings=settings(tmp_path), grounding=GroundingConfig("auto"), backend=x11
        )
        result = agent.run(task)
    assert result.status is RunStatus.SUCCEEDED, result
    assert poll(lambda: note.is_file() and note.read_text() == f"{text}\n")
    assert result.trajectory_dir is not None
    return result.trajectory_dir


def cli(x11: Any, tmp_path: Path, *args: str) -> Any:
    env = {**_CLEAN, **x11.env, "HOME": str(tmp_path)}
    return CliRunner().invoke(app, list(args), env=env)


def test_a_saved_workflow_runs_with_a_new_file_and_new_text_and_no_model_call(
    apps: Any, x11: Any, tmp_path: Path
) -> None:
    work = tmp_path / "notes"
    work.mkdir()
    terminal(apps, x11, work)
    folder = write_note(x11, tmp_path, work / "note.txt", "hello there")
    db = str(tmp_path / "memory.sqlite3")

    saved = cli(x11, tmp_path, "workflow", "save", str(folder), "write-note", "--db", db)
    assert saved.exit_code == 0, saved.output
    assert "saved workflow write-note: 2 steps" in saved.output
    assert "--set text_1=hello there" in saved.output, saved.output
    assert f"--set file_1={work / 'note.txt'}" in saved.output, saved.output

    shown = cli(x11, tmp_path, "workflow", "show", "write-note", "--db", db, "--json")
    assert shown.exit_code == 0, shown.output
    assert '"run": "' + folder.name in shown.output

    # the CLI: a new file in the same folder, new text
    first = work / "greeting.txt"
    args = ["workflow", "run", "write-note", "--db", db, "--safety", "auto"]
    args += ["--set", f"file_1={first}", "--set", "text_1=good morning"]
    args += ["--record", str(tmp_path / "replays")]
    done = cli(x11, tmp_path, *args)
    assert done.exit_code == 0, done.output
    # the 2 recorded steps are 3 in the new run: the typing, then Enter, then done
    assert "replayed: 3 steps (2 recorded" in done.output, done.output
    assert "3 steps, 0 model calls" in done.output, done.output
    assert poll(lambda: first.is_file() and first.read_text() == "good morning\n")
    assert (work / "note.txt").read_text() == "hello there\n"  # the recorded file untouched

    # the SDK: the same workflow, loaded from the store, run with other values
    second = work / "evening.txt"
    with MemoryStore(Path(db)) as store:
        flow = Workflow.load("write-note", store)
    assert flow.provenance.run_id == folder.name
    assert flow.parameters == {"text_1": "hello there", "file_1": str(work / "note.txt")}
    result = flow.run(
        {"file_1": str(second), "text_1": "see you later"},
        backend=x11,
        settings=settings(tmp_path),
    )
    assert result.status == "replayed", result.divergence
    assert result.ok
    assert result.model_calls == 0
    assert (result.recorded, result.replayed) == (2, 3)
    assert (
        result.run.task == f"In the terminal, write the text 'see you later' into the file {second}"
    )
    assert poll(lambda: second.is_file() and second.read_text() == "see you later\n")


def _one_line_error(done: Any) -> str:
    assert "Traceback" not in done.output, done.output
    lines = [line for line in done.output.splitlines() if line.strip()]
    assert len(lines) == 1, done.output
    assert lines[0].startswith("error: "), done.output
    return lines[0]


def test_errors_name_the_fix(apps: Any, x11: Any, tmp_path: Path) -> None:
    work = tmp_path / "notes"
    work.mkdir()
    terminal(apps, x11, work)
    folder = write_note(x11, tmp_path, work / "note.txt", "hello there")
    db = str(tmp_path / "memory.sqlite3")
    assert (
        cli(x11, tmp_path, "workflow", "save", str(folder), "write-note", "--db", db).exit_code == 0
    )

    unknown = cli(x11, tmp_path, "workflow", "run", "write-notes", "--db", db)
    assert unknown.exit_code == 1
    line = _one_line_error(unknown)
    assert "no workflow named 'write-notes' (stored: write-note)" in line
    assert "agent-s workflow save RUN_DIR NAME" in line

    wrong = cli(x11, tmp_path, "workflow", "run", "write-note", "--db", db, "--set", "colour=red")
    assert wrong.exit_code == 2
    line = _one_line_error(wrong)
    assert "no parameter 'colour'" in line
    assert "text_1 (recorded 'hello there')" in line
    assert "file_1" in line

    again = cli(x11, tmp_path, "workflow", "save", str(folder), "write-note", "--db", db)
    assert again.exit_code == 2
    assert "--replace" in _one_line_error(again)

    # a run that failed: the model gave up
    with ScriptedModelServer([reply(act('agent.fail("the terminal is gone")'))]) as server:
        model = ModelConfig("openai-compatible", "scripted-model", server.openai_base_url, KEY)
        agent = Agent(
            model, settings=settings(tmp_path), grounding=GroundingConfig("auto"), backend=x11
        )
        failed = agent.run("In the terminal, write the text 'x' into the file /tmp/x.txt")
    assert failed.status is RunStatus.FAILED
    refused = cli(
        x11, tmp_path, "workflow", "save", str(failed.trajectory_dir), "gave-up", "--db", db
    )
    assert refused.exit_code == 2
    line = _one_line_error(refused)
    assert "did not succeed (failed)" in line
    assert "only a successful run can become a workflow" in line

    missing = cli(x11, tmp_path, "workflow", "save", str(tmp_path / "nowhere"), "x", "--db", db)
    assert missing.exit_code == 2
    _one_line_error(missing)

    with MemoryStore(Path(db)) as store:
        with pytest.raises(KeyError, match="no workflow named 'nothing'"):
            Workflow.load("nothing", store)
        flow = Workflow.load("write-note", store)
    with pytest.raises(ValueError, match="no parameter 'colour'"):
        flow.with_values({"colour": "red"})


def test_a_workflow_never_gives_the_recorded_run_s_answer_again(
    apps: Any, x11: Any, tmp_path: Path
) -> None:
    """A run that answered (``done(answer="3")``: what its terminal showed) saved as a
    workflow and run for another file: the replay counts that file's lines but does not claim
    the old answer. Without a model it stops at the answer, saying how to have it read; with
    ``heal`` the model is asked once and gives the new one."""
    work = tmp_path / "count"
    work.mkdir()
    (work / "three.txt").write_text("a\nb\nc\n")
    (work / "five.txt").write_text("a\nb\nc\nd\ne\n")
    terminal(apps, x11, work)
    task = f"In the terminal, count the lines of the file {work / 'three.txt'} and tell me"
    typed = f"wc -l < {work / 'three.txt'}"
    script = [reply(act(f"agent.type(text={typed!r}, enter=True)"))]
    script += [reply(act('agent.done(answer="3")'))]
    with ScriptedModelServer(script) as server:
        model = ModelConfig("openai-compatible", "scripted-model", server.openai_base_url, KEY)
        agent = Agent(
            model, settings=settings(tmp_path), grounding=GroundingConfig("auto"), backend=x11
        )
        recorded = agent.run(task)
    assert recorded.answer == "3", recorded
    assert recorded.trajectory_dir is not None
    flow = Workflow.from_run(recorded.trajectory_dir, "count-lines")
    assert flow.parameters == {"file_1": str(work / "three.txt")}
    values = {"file_1": str(work / "five.txt")}

    offline = flow.run(values, backend=x11, settings=settings(tmp_path))
    assert offline.status == "diverged"
    assert offline.divergence is not None
    assert offline.divergence.kind == "needs_model"
    assert "--heal" in offline.divergence.reason
    assert offline.run.answer is None
    assert not offline.ok

    with ScriptedModelServer([reply(act('agent.done(answer="5")'))]) as server:
        model = ModelConfig("openai-compatible", "scripted-model", server.openai_base_url, KEY)
        healed = flow.run(values, backend=x11, settings=settings(tmp_path), model=model, heal=True)
        asked = len(server.requests)
    assert healed.status == "healed", healed.divergence
    assert healed.run.answer == "5"
    assert asked == 1
