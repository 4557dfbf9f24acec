"""A repeated task for free, on the session's virtual desktop: a run whose check passed is kept
as a verified workflow (``--save-workflow``), and a later task that is the same with other
values replays it (``--reuse auto``, the default) with no model call: the scripted server has
nothing queued, and mousepad saves the file with the new text. ``--reuse off`` asks the model
from step 1; a run that diverges (a galculator button that does not exist) asks the model from
the divergence on; a workflow that is unverified or was changed in the memory file is never
reused, and the run says so."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from clean_env import clean_env
from polling import poll
from scripted_cli import model_options
from typer.testing import CliRunner

from agent_s import Agent, AgentConfig, GroundingConfig, ModelConfig, load_trajectory
from agent_s.cli.main import app
from agent_s.grounding import AccessibilityTree
from agent_s.memory import MemoryStore
from agent_s.replay.reuse import Reuse
from agent_s.replay.workflow import Workflow
from agent_s.report.pages import write_report
from agent_s.testing.scripted_replies import reply
from agent_s.testing.scripted_server import ScriptedModelServer

pytestmark = pytest.mark.desktop
KEY = "sk-reuse-test-0000"
_CLEAN = clean_env()
TASK = "In the text editor, replace all the text of todo.txt with the single line '{}' and save it."


@pytest.fixture(scope="module", autouse=True)
def _accessibility_bus(desktop: Any) -> None:
    """Bind AT-SPI in this process before ``apps`` notes the running processes."""
    AccessibilityTree().applications()


def act(code: str) -> str:
    return f"Next step.\n```python\n{code}\n```"


def edits(text: str) -> list[Any]:
    """The model's replies that put ``text`` in the open document and save it."""
    return [
        reply(act('agent.hotkey(["ctrl", "a"])')),
        reply(act(f"agent.type(text={text!r})")),
        reply(act('agent.hotkey(["ctrl", "s"])')),
        reply(act("agent.done()")),
    ]


def mousepad(apps: Any, x11: Any, tmp_path: Path) -> Path:
    doc = tmp_path / "todo.txt"
    doc.write_text("draft line\nsecond draft\n")
    apps(["mousepad", str(doc)], window="todo.txt")
    x11.activate("todo.txt")
    return doc


def run(
    x11: Any, tmp_path: Path, url: str, text: str, doc: Path, *more: str, check: bool = True
) -> Any:
    """``agent-s run`` of the task for ``text``, as JSON; ``check``: checked by the file's
    content (a run whose check passed teaches memory a verified skill)."""
    args = ["run", *model_options(url, key=KEY), "--ground", "auto", "--safety", "auto"]
    args += ["--no-pause-on-input", "--record", str(tmp_path / "runs"), "--json"]
    args += ["--check", f"grep -qx '{text}' {doc}"] if check else []
    env = {**_CLEAN, **x11.env, "HOME": str(tmp_path)}
    env["AGENT_S_MEMORY_DB"] = str(tmp_path / "memory.sqlite3")
    return CliRunner().invoke(app, [*args, *more, TASK.format(text)], env=env)


def result_of(done: Any) -> dict[str, Any]:
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert len(lines) == 1, done.output
    return json.loads(lines[0])


def chosen(result: dict[str, Any]) -> list[str]:
    return [step.chosen_by for step in load_trajectory(result["trajectory_dir"]).steps]


def saved(doc: Path, text: str) -> bool:
    return poll(lambda: doc.read_text().strip() == text)


CLICKS = ["the AC button", "the 7 button", "the * button", "the 6 button", "the = button"]


def calculator(apps: Any, x11: Any) -> list[Any]:
    """galculator in front, the clipboard empty; the model's replies that click 7 x 6."""
    apps(["galculator"], window="galculator")
    x11.activate("galculator")
    x11.clipboard_set("")
    return [reply(act(f"agent.click({c!r})")) for c in CLICKS]


def sdk_agent(
    x11: Any,
    tmp_path: Path,
    server: ScriptedModelServer,
    *,
    reuse: MemoryStore | None = None,
    learns: MemoryStore | None = None,
    max_seconds: float | None = None,
    wait_seconds: float = 3,
) -> Agent:
    """An SDK agent of the scripted model at ``server``; ``reuse``: replaying the workflows and
    skills of that store; ``learns``: keeping memory there."""
    model = ModelConfig("openai-compatible", "scripted-model", server.openai_base_url, KEY)
    settings = AgentConfig(
        record_dir=tmp_path / "runs", settle_seconds=0.5, max_seconds=max_seconds
    )
    return Agent(
        model,
        settings=settings,
        grounding=GroundingConfig("auto"),
        backend=x11,
        reuse=Reuse(reuse, wait_seconds=wait_seconds) if reuse is not None else None,
        memory=learns,
    )


def by_the_model(
    x11: Any, tmp_path: Path, doc: Path, text: str, *more: str, check: bool = True
) -> Any:
    """The run of the task for ``text`` when the model does it: its four replies are asked
    for, and the file is saved with ``text``."""
    with ScriptedModelServer(edits(text)) as server:
        done = run(x11, tmp_path, server.openai_base_url, text, doc, *more, check=check)
        asked = len(server.requests)
    assert done.exit_code == 0, done.output
    assert asked == 4
    assert saved(doc, text)
    return done


def test_a_task_with_new_values_replays_its_verified_workflow_with_no_model_call(
    apps: Any, x11: Any, tmp_path: Path
) -> None:
    doc = mousepad(apps, x11, tmp_path)
    with ScriptedModelServer(edits("buy milk")) as server:
        first = run(
            x11, tmp_path, server.openai_base_url, "buy milk", doc, "--save-workflow", "todo"
        )
    assert first.exit_code == 0, first.output
    assert saved(doc, "buy milk")
    assert (
        "saved workflow todo: 4 steps, verified --set file_1=todo.txt --set text_1=buy milk"
        in first.output
    )
    assert result_of(first)["reused"] is None

    with ScriptedModelServer([]) as server:  # nothing queued: any model call is an error
        again = run(x11, tmp_path, server.openai_base_url, "buy bread", doc)
    assert again.exit_code == 0, again.output
    assert server.requests == []
    assert saved(doc, "buy bread")
    said = " ".join(again.stderr.split())  # as one line: the console wraps long ones
    before, _, after = said.partition(" reuse: reusing workflow todo ")
    assert before.startswith("task: "), said  # the run's first line after the task's
    assert "(scripted-model, grounding auto)" in before, said
    assert after.startswith("with file_1=todo.txt, text_1=buy bread: its 4 steps are replayed")
    assert "--reuse off" in after.split(" 1 agent.hotkey")[0], said
    assert " 1 agent.hotkey(keys=('ctrl', 'a')) replayed " in said, said  # its live line
    result = result_of(again)
    assert result["status"] == "succeeded", result
    assert result["verified"]
    assert result["model_calls"] == 0
    assert result["reused"]["workflow"] == "todo"
    assert result["reused"]["replayed"] == [1, 2, 3, 4]
    assert result["reused"]["model"] == []
    assert chosen(result) == ["replay"] * 4
    page = write_report(result["trajectory_dir"]).read_text()
    assert page.count('<span class="badge chosen">replayed</span>') == 4

    off = by_the_model(x11, tmp_path, doc, "buy eggs", "--reuse", "off")
    assert "reusing" not in off.output
    result = result_of(off)
    assert result["reused"] is None
    assert chosen(result) == ["model"] * 4
    page = write_report(result["trajectory_dir"]).read_text()
    assert page.count('<span class="badge chosen">chosen by the model</span>') == 4


def test_a_run_whose_check_passed_teaches_a_skill_a_later_task_replays(
    apps: Any, x11: Any, tmp_path: Path
) -> None:
    """No --save-workflow: memory keeps the action sequence of a run whose check passed as a
    verified skill; a later task with other values replays it (--reuse auto, the default);
    --reuse workflows reuses only the workflows the user saved."""
    doc = mousepad(apps, x11, tmp_path)
    by_the_model(x11, tmp_path, doc, "buy milk")
    workflows = by_the_model(x11, tmp_path, doc, "buy tea", "--reuse", "workflows")
    assert "reusing" not in workflows.stderr
    with ScriptedModelServer([]) as server:
        again = run(x11, tmp_path, server.openai_base_url, "buy bread", doc)
    assert again.exit_code == 0, again.output
    assert server.requests == []
    assert saved(doc, "buy bread")
    said = " ".join(again.stderr.split())
    assert "reuse: reusing the skill of memory entry " in said, said
    result = result_of(again)
    assert result["verified"]
    assert result["model_calls"] == 0
    assert result["reused"]["workflow"].startswith("skill-")
    assert chosen(result) == ["replay"] * 4


def test_a_workflow_that_is_unverified_or_changed_in_the_file_is_not_reused(
    apps: Any, x11: Any, tmp_path: Path
) -> None:
    """No run here has a check: none teaches memory a verified skill."""
    doc = mousepad(apps, x11, tmp_path)
    folder = result_of(by_the_model(x11, tmp_path, doc, "buy milk", check=False))["trajectory_dir"]
    db = tmp_path / "memory.sqlite3"
    with MemoryStore(db) as store:  # saved from the folder: what it says of its check is a claim
        Workflow.from_run(folder, "from-folder").save(store)

    unverified = by_the_model(x11, tmp_path, doc, "buy bread", check=False)
    assert "workflow from-folder matches this task but is not verified" in unverified.stderr
    assert result_of(unverified)["reused"] is None

    # a verified one, then its typed text edited in the file with its hash: no longer sealed
    with MemoryStore(db) as store:
        store.forget_workflow("from-folder")
        Workflow.from_run(folder, "edited", verified=True).save(store)
    with sqlite3.connect(db) as raw:
        (body,) = raw.execute("SELECT body FROM workflows WHERE name = 'edited'").fetchone()
        body = body.replace("ctrl", "alt")
        sha = hashlib.sha256(body.encode()).hexdigest()
        raw.execute("UPDATE workflows SET body = ?, sha256 = ? WHERE name = 'edited'", (body, sha))
    edited = by_the_model(x11, tmp_path, doc, "buy tea", check=False)
    assert "workflow edited matches this task but is not verified" in edited.stderr

    # and its body changed alone: it no longer matches its hash
    with sqlite3.connect(db) as raw:
        raw.execute("UPDATE workflows SET body = replace(body, 'alt', 'ctrl')")
    tampered = by_the_model(x11, tmp_path, doc, "buy jam", check=False)
    assert "not reused: workflow 'edited' does not match its stored sha256" in tampered.stderr


def test_a_run_that_diverges_asks_the_model_from_the_divergence_on(
    apps: Any, x11: Any, tmp_path: Path
) -> None:
    script = calculator(apps, x11)
    task = "Use the calculator to compute {} × {}, then copy the result to the clipboard."
    script += [reply(act('agent.hotkey(["ctrl", "c"])')), reply(act("agent.done()"))]
    db = tmp_path / "memory.sqlite3"

    def agent(server: ScriptedModelServer, store: MemoryStore | None) -> Agent:
        return sdk_agent(x11, tmp_path, server, reuse=store)

    def copied(value: str) -> bool:
        return x11.clipboard_get().strip() == value

    with ScriptedModelServer(script) as server:
        first = agent(server, None).run(task.format(7, 6), postcondition=lambda: copied("42"))
    assert first.verified, first
    assert first.trajectory_dir is not None
    with MemoryStore(db) as store:
        flow = Workflow.from_run(first.trajectory_dir, "multiply", verified=True).save(store)
    assert flow.parameters == {"number_1": "7", "number_2": "6"}

    # 7 x 12: AC, 7 and * replay; "the 12 button" is nowhere: the model does the rest
    x11.clipboard_set("")
    rest = ["the 1 button", "the 2 button", "the = button"]
    script = [reply(act(f"agent.click({c!r})")) for c in rest]
    script += [reply(act('agent.hotkey(["ctrl", "c"])')), reply(act("agent.done()"))]
    with ScriptedModelServer(script) as server, MemoryStore(db) as store:
        result = agent(server, store).run(task.format(7, 12), postcondition=lambda: copied("84"))
        requests = len(server.requests)
    assert result.verified, result
    assert poll(lambda: copied("84"))
    assert requests == 5
    assert result.reused is not None
    assert result.reused["divergence"]["kind"] == "not_found"
    assert result.reused["divergence"]["step"] == 4
    assert result.reused["replayed"] == [1, 2, 3, 4, 5]  # 4: the click not found; 5: the note
    assert result.reused["model"] == [6, 7, 8, 9, 10]
    steps = load_trajectory(result.trajectory_dir).steps
    assert [len(step.calls) for step in steps[:5]] == [0] * 5
    assert all(step.calls for step in steps[5:])
    assert steps[3].action_text == "agent.click(element_description='the 12 button')"
    assert steps[3].outcome == "error"

    # the repaired run is a workflow of its own: without the click that failed nor the note
    with MemoryStore(db) as store:
        flow = Workflow.from_run(result.trajectory_dir, "times-12", verified=True).save(store)
    assert flow.parameters == {"number_1": "7"}  # 12 was clicked as 1 and 2: no parameter
    assert [s.split(":")[0] for s in flow.script.skipped] == ["step 4", "step 5"]
    assert "a replay's note to the model" in flow.script.skipped[1]
    x11.clipboard_set("")
    with ScriptedModelServer([]) as server, MemoryStore(db) as store:
        again = agent(server, store).run(task.format(7, 12), postcondition=lambda: copied("84"))
        assert server.requests == []
    assert again.verified, again
    assert again.reused is not None
    assert again.reused["workflow"] == "times-12"
    assert again.reused["model"] == []


def test_replayed_steps_keep_to_the_run_s_time_limit(apps: Any, x11: Any, tmp_path: Path) -> None:
    """A replay is no way around ``[limits] max_seconds``: the limit is checked before each
    replayed step as before each step the model chooses, and the run ends at it."""
    script = calculator(apps, x11) + [reply(act("agent.done()"))]
    task = "Use the calculator to compute {} × {}."
    db = tmp_path / "memory.sqlite3"

    def agent(server: ScriptedModelServer, store: MemoryStore | None, limit: float | None) -> Agent:
        return sdk_agent(x11, tmp_path, server, reuse=store, max_seconds=limit)

    with ScriptedModelServer(script) as server:
        first = agent(server, None, None).run(task.format(7, 6))
    assert first.status.value == "succeeded", first
    assert first.trajectory_dir is not None
    with MemoryStore(db) as store:
        Workflow.from_run(first.trajectory_dir, "multiply", verified=True).save(store)

    with ScriptedModelServer([]) as server, MemoryStore(db) as store:
        result = agent(server, store, 0.5).run(task.format(8, 3))
        assert server.requests == []
    assert result.status.value == "budget_exceeded", result
    assert "the time limit of 0.5 s was reached" in result.reason
    assert result.reused is not None
    assert 1 <= len(result.reused["replayed"]) < 6  # not every step of the workflow
    assert len(load_trajectory(result.trajectory_dir).steps) == len(result.reused["replayed"])


def test_a_replay_asks_the_model_for_an_answer_the_recorded_run_read_from_its_screen(
    apps: Any, x11: Any, tmp_path: Path
) -> None:
    """A run that answered (``done(answer="42")``) teaches memory a skill that keeps that it
    answered; a task with other values replays its clicks but never claims the old answer: the
    model is asked once, for the answer this screen shows."""
    script = calculator(apps, x11)
    task = "Use the calculator to compute {} × {}, copy the result and tell me what it is."
    script += [reply(act('agent.hotkey(["ctrl", "c"])')), reply(act('agent.done(answer="42")'))]
    db = tmp_path / "memory.sqlite3"

    def agent(server: ScriptedModelServer, store: MemoryStore, learns: bool) -> Agent:
        return sdk_agent(x11, tmp_path, server, reuse=store, learns=store if learns else None)

    def copied(value: str) -> bool:
        return x11.clipboard_get().strip() == value

    with ScriptedModelServer(script) as server, MemoryStore(db) as store:
        first = agent(server, store, True).run(
            task.format(7, 6), postcondition=lambda: copied("42")
        )
    assert first.verified, first
    assert first.answer == "42"

    x11.clipboard_set("")
    with (
        ScriptedModelServer([reply(act('agent.done(answer="24")'))]) as server,
        MemoryStore(db) as store,
    ):
        result = agent(server, store, False).run(
            task.format(8, 3), postcondition=lambda: copied("24")
        )
        sent = json.dumps([request.body for request in server.requests])
    assert result.verified, result
    assert result.answer == "24"
    assert result.model_calls == 1
    assert result.reused is not None
    assert result.reused["workflow"].startswith("skill-")
    assert result.reused["divergence"]["kind"] == "needs_model"
    assert result.reused["replayed"] == [1, 2, 3, 4, 5, 6, 7]  # the clicks, the copy, the note
    assert result.reused["model"] == [8]
    assert "the answer is read from this screen" in sent
    assert 'answer=\\"42\\"' not in sent
    assert "answer='42'" not in sent


def test_a_skill_waits_for_the_window_its_run_acted_in(apps: Any, x11: Any, tmp_path: Path) -> None:
    """A skill keeps the window each action was made in: replayed while another window is in
    front, it waits for its own, then the model takes over; nothing is typed into the other
    window and the document is not touched."""
    doc = mousepad(apps, x11, tmp_path)
    by_the_model(x11, tmp_path, doc, "buy milk")  # its check passed: memory keeps the skill
    apps(["galculator"], window="galculator")
    x11.activate("galculator")
    x11.clipboard_set("")
    gave_up = [reply(act('agent.fail(reason="the text editor is not in front")'))]
    with ScriptedModelServer(gave_up) as server, MemoryStore(tmp_path / "memory.sqlite3") as store:
        agent = sdk_agent(x11, tmp_path, server, reuse=store, wait_seconds=2)
        result = agent.run(TASK.format("buy bread"))
    assert result.reused is not None
    assert result.reused["workflow"].startswith("skill-")
    divergence = result.reused["divergence"]
    assert divergence["kind"] == "window"
    assert divergence["step"] == 1
    assert "todo.txt" in divergence["reason"]
    assert result.status.value == "failed"
    assert doc.read_text().strip() == "buy milk"
    steps = load_trajectory(result.trajectory_dir).steps
    assert [s.action_text.split("(")[0] for s in steps] == ["agent.save_to_knowledge", "agent.fail"]
