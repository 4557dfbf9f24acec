"""Planned runs on the session's virtual desktop: real apps, real grounding and input, a scripted
model behind the OpenAI SDK. A plan of three subtasks across the calculator, the editor and a
terminal; checks that fail and a switch to the code agent; a replan that reorders the rest; the
replan limit; the feasibility gate; and ``--plan off`` / ``auto`` making the calls they should."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from polling import poll

from agent_s import Agent, AgentConfig, GroundingConfig, ModelConfig, RunStatus, load_trajectory
from agent_s.grounding import AccessibilityTree
from agent_s.planning.plan import PlanSettings
from agent_s.settings.config import CodeAgentConfig
from agent_s.testing.scripted_replies import reply
from agent_s.testing.scripted_server import ScriptedModelServer

pytestmark = pytest.mark.desktop
KEY = "sk-plan-test-0000"


@pytest.fixture(scope="module", autouse=True)
def _accessibility_bus(desktop: Any) -> None:
    AccessibilityTree().applications()  # bound before ``apps`` notes the running processes


def act(code: str) -> str:
    return f"Next step.\n```python\n{code}\n```"


def plan(*subtasks: dict[str, Any], feasible: bool = True, reason: str = "") -> str:
    body = {"feasible": feasible, "reason": reason, "subtasks": list(subtasks)}
    return "The plan:\n```json\n" + json.dumps(body, indent=1) + "\n```"


def agent_for(
    server: ScriptedModelServer, x11: Any, tmp_path: Path, mode: str = "always", **settings: Any
) -> Agent:
    model = ModelConfig("openai-compatible", "scripted-model", server.openai_base_url, KEY)
    planning = PlanSettings(mode, **settings.pop("planning", {}))  # type: ignore[arg-type]
    settings.setdefault("code", CodeAgentConfig(enabled=False))  # on: the tests that switch
    config = AgentConfig(
        record_dir=tmp_path / "runs", settle_seconds=0.3, plan=planning, **settings
    )
    return Agent(model, settings=config, grounding=GroundingConfig("auto"), backend=x11)


def _texts(request: Any) -> str:
    """Every text part of a recorded Chat Completions request, joined."""
    parts = []
    for message in request.body["messages"]:
        content = message["content"]
        if isinstance(content, str):
            parts.append(content)
        else:
            parts.extend(p.get("text", "") for p in content if p.get("type") == "text")
    return "\n".join(parts)


def _events(result: Any) -> list[dict[str, Any]]:
    lines = (result.trajectory_dir / "plan.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def _xterm(apps: Any, title: str, cwd: Path) -> None:
    argv = ["xterm", "-fa", "DejaVu Sans Mono", "-fs", "12", "-geometry", "70x10+600+420"]
    apps([*argv, "-title", title, "-e", "sh"], window=title, cwd=cwd)


def test_three_subtasks_across_calculator_editor_and_terminal_run_in_order(
    apps: Any, x11: Any, tmp_path: Path
) -> None:
    note, size = tmp_path / "note.txt", tmp_path / "size.txt"
    note.write_text("")
    apps(["galculator"], window="galculator")
    apps(["mousepad", str(note)], window="note.txt")
    _xterm(apps, "plan-term", tmp_path)
    the_plan = plan(
        {
            "id": "save",
            "description": "Type the product into note.txt in the editor and save it",
            "depends_on": ["calc"],
            "evidence": "note.txt holds the product",
            "check": {"kind": "file", "path": str(note), "contains": "42"},
        },
        {
            "id": "calc",
            "description": "Compute 7 times 6 with the calculator",
            "evidence": "the calculator's display shows 42",
        },
        {
            "id": "size",
            "description": "In the terminal, write the size of note.txt to size.txt",
            "depends_on": ["save"],
            "evidence": "size.txt exists",
            "check": {"kind": "file", "path": str(size)},
            "worker": "gui",
        },
    )
    script = [
        reply(the_plan),
        # calc (listed second, runs first: "save" depends on it)
        reply(act('agent.switch_applications("galculator")')),
        reply(act('agent.click("the AC button")')),
        reply(act('agent.click("the 7 button")')),
        reply(act('agent.type(text="*6", enter=True)')),
        reply(act('agent.done(answer="42")')),
        reply("VERIFIED\nThe calculator's display shows 42."),
        # save
        reply(act('agent.switch_applications("note.txt")')),
        reply(act('agent.type(text="42")')),
        reply(act('agent.hotkey(["ctrl", "s"])')),
        reply(act("agent.done()")),
        # size
        reply(act('agent.switch_applications("plan-term")')),
        reply(act('agent.type(text="wc -c < note.txt > size.txt", enter=True)')),
        reply(act("agent.done()")),
    ]
    task = "Multiply 7 by 6, put the product in note.txt, then record the size of note.txt"
    with ScriptedModelServer(script) as server:
        result = agent_for(server, x11, tmp_path).run(task)
        requests = server.requests
    assert result.status is RunStatus.SUCCEEDED, result
    assert note.read_text().strip() == "42"
    assert poll(lambda: size.exists() and size.read_text().strip()) == "2"
    report = result.plan
    assert report is not None
    assert [(s["id"], s["status"], s["attempts"]) for s in report["subtasks"]] == [
        ("calc", "done", 1),
        ("save", "done", 1),
        ("size", "done", 1),
    ]
    assert [c["by"] for s in report["subtasks"] for c in s["checks"]] == [
        "verifier",
        "file",
        "file",
    ]
    assert result.calls == {"plan": 1, "generate": 12, "verify": 1}
    assert result.model_calls == 14
    # the worker works on the subtask, and gets the results of what it depends on
    save_request = _texts(requests[7])
    assert "Type the product into note.txt" in save_request
    assert "- calc: 42" in save_request
    assert "Compute 7 times 6" not in _texts(requests[11])  # not the other subtasks' text
    steps = load_trajectory(result.trajectory_dir).steps
    assert [s.subtask for s in steps] == ["calc"] * 5 + ["save"] * 4 + ["size"] * 3
    kinds = [e["event"] for e in _events(result)]
    assert kinds == ["plan", "check", "check", "check"]
    saved = json.loads((result.trajectory_dir / "result.json").read_text())
    assert saved["plan"]["subtasks"][0]["id"] == "calc"
    assert saved["calls"] == {"plan": 1, "generate": 12, "verify": 1}


def test_a_check_that_fails_twice_switches_to_the_code_agent_which_succeeds(
    apps: Any, x11: Any, tmp_path: Path
) -> None:
    out = tmp_path / "report.csv"
    _xterm(apps, "switch-term", tmp_path)
    check = {"kind": "file", "path": str(out), "contains": "total,200"}
    script = [
        reply(plan({"id": "csv", "description": "Write total,200 to report.csv", "check": check})),
        reply(act("agent.done()")),  # attempt 1: nothing written
        reply(act('agent.type(text="echo total > report.csv", enter=True)')),  # attempt 2: wrong
        reply(act("agent.done()")),
        # the switch: the code agent gets the subtask
        reply(f"Writing it.\n```bash\nprintf 'total,200\\n' > {out}\n```"),
        reply("Wrote total,200 to report.csv.\nDONE"),
    ]
    code = CodeAgentConfig(enabled=True, workdir=str(tmp_path))
    with ScriptedModelServer(script) as server:
        agent = agent_for(server, x11, tmp_path, code=code)
        x11.activate("switch-term")
        result = agent.run("Put total,200 into report.csv")
        requests = server.requests
    assert result.status is RunStatus.SUCCEEDED, result
    assert out.read_text() == "total,200\n"
    record = result.plan["subtasks"][0]  # type: ignore[index]
    assert (record["worker"], record["strategy"], record["switched"]) == ("gui", "code", True)
    assert [(c["by"], c["passed"]) for c in record["checks"]] == [
        ("file", False),
        ("file", False),
        ("file", True),
    ]
    assert result.plan["switches"] == 1  # type: ignore[index]
    # the second attempt was told why the first failed
    assert f"{out} does not exist" in _texts(requests[2])
    assert result.calls == {"plan": 1, "generate": 3, "code": 2}
    assert [e["event"] for e in _events(result)] == ["plan", "check", "check", "switch", "check"]


def test_a_failed_subtask_is_replanned_and_the_new_order_is_followed(
    apps: Any, x11: Any, tmp_path: Path
) -> None:
    first, second = tmp_path / "first.txt", tmp_path / "second.txt"
    _xterm(apps, "replan-term", tmp_path)

    def check(path: Path) -> dict[str, Any]:
        return {"kind": "file", "path": str(path)}

    script = [
        reply(
            plan(
                {"id": "a", "description": "create first.txt", "check": check(first)},
                {"id": "b", "description": "create second.txt", "check": check(second)},
            )
        ),
        reply(act('agent.fail(reason="the terminal does not answer")')),
        reply(act("agent.done()")),
        # replan: second first, then first again under a new id
        reply(
            plan(
                {"id": "b2", "description": "create second.txt", "check": check(second)},
                {
                    "id": "a2",
                    "description": "create first.txt",
                    "depends_on": ["b2"],
                    "check": check(first),
                },
            )
        ),
        reply(act('agent.type(text="touch second.txt", enter=True)')),
        reply(act("agent.done()")),
        reply(act('agent.type(text="touch first.txt", enter=True)')),
        reply(act("agent.done()")),
    ]
    with ScriptedModelServer(script) as server:
        x11.activate("replan-term")
        result = agent_for(server, x11, tmp_path).run("Create first.txt and second.txt")
        requests = server.requests
    assert result.status is RunStatus.SUCCEEDED, result
    assert poll(lambda: first.exists() and second.exists())
    report = result.plan
    assert report is not None
    assert [(s["id"], s["status"]) for s in report["subtasks"]] == [
        ("a", "failed"),
        ("b", "replaced"),
        ("b2", "done"),
        ("a2", "done"),
    ]
    assert report["replans"] == 1
    replan_text = _texts(requests[3])
    assert f"{first} does not exist" in replan_text
    assert "the remaining work was a, b" in replan_text
    assert result.calls == {"plan": 1, "replan": 1, "generate": 6}


def test_the_replan_limit_ends_the_run_as_a_typed_failure(
    apps: Any, x11: Any, tmp_path: Path
) -> None:
    missing = tmp_path / "never.txt"
    script = [
        reply(
            plan(
                {
                    "id": "a",
                    "description": "make never.txt",
                    "check": {"kind": "file", "path": str(missing)},
                }
            )
        ),
        reply(act("agent.done()")),
        reply(act("agent.done()")),
    ]
    with ScriptedModelServer(script) as server:
        agent = agent_for(server, x11, tmp_path, planning={"max_replans": 0})
        result = agent.run("Make never.txt")
    assert result.status is RunStatus.FAILED
    assert result.cause == "replan_limit"
    assert "replan limit (0)" in result.reason
    assert "never.txt does not exist" in result.reason
    assert result.exit_code == 1
    assert result.plan["subtasks"][0]["attempts"] == 2  # type: ignore[index]


def test_an_infeasible_task_is_gated_before_any_action(x11: Any, tmp_path: Path) -> None:
    reason = "galculator has no spreadsheet mode"
    script = [reply(plan(feasible=False, reason=reason))]
    with ScriptedModelServer(script) as server:
        result = agent_for(server, x11, tmp_path).run("Open galculator's spreadsheet mode")
    assert result.status is RunStatus.INFEASIBLE
    assert result.cause == "infeasible_gate"
    assert reason in result.reason
    assert result.steps == 0
    assert result.plan == {
        "mode": "always",
        "trigger": "always",
        "feasible": False,
        "reason": reason,
        "subtasks": [],
        "replans": 0,
        "switches": 0,
        "plans": 1,
    }
    assert result.calls == {"plan": 1}


def test_an_invalid_plan_goes_back_with_the_reason(x11: Any, tmp_path: Path) -> None:
    cyclic = plan(
        {"id": "a", "description": "x", "depends_on": ["b"]},
        {"id": "b", "description": "y", "depends_on": ["a"]},
    )
    script = [
        reply(cyclic),
        reply(plan({"id": "a", "description": "say done"})),
        reply(act("agent.done()")),
        reply("VERIFIED\nNothing to see, as asked."),
    ]
    with ScriptedModelServer(script) as server:
        result = agent_for(server, x11, tmp_path).run("Say done")
        requests = server.requests
    assert result.succeeded, result
    assert "the dependencies form a cycle: a -> b -> a" in _texts(requests[1])
    events = _events(result)
    assert [(e["event"], e["accepted"]) for e in events[:2]] == [("plan", False), ("plan", True)]


def test_plan_off_and_auto_on_a_short_task_make_only_todays_calls(x11: Any, tmp_path: Path) -> None:
    long_task = " ".join(["Please just say that this task is done."] * 5)
    for mode, task in (("off", long_task), ("auto", "Say done")):
        with ScriptedModelServer([reply(act("agent.done()"))]) as server:
            result = agent_for(server, x11, tmp_path / mode, mode=mode).run(task)
        assert result.succeeded, result
        assert result.calls == {"generate": 1}
        assert result.plan is None
        assert not (result.trajectory_dir / "plan.jsonl").exists()


def test_auto_plans_a_long_task_and_after_a_step_failed_twice(x11: Any, tmp_path: Path) -> None:
    long_task = " ".join(["Please just say that this task is done."] * 5)
    script = [reply(plan({"id": "only", "description": "say done"})), reply(act("agent.done()"))]
    script.append(reply("VERIFIED\nDone."))
    with ScriptedModelServer(script) as server:
        result = agent_for(server, x11, tmp_path / "long", mode="auto").run(long_task)
    assert result.succeeded
    assert result.plan["trigger"] == "a long task"
    # two steps in a row whose target is nowhere on the screen: plan the rest
    script = [
        reply(act('agent.click("the Frobnicate button")')),
        reply(act('agent.click("the Frobnicate button")')),
        reply(plan({"id": "only", "description": "say done"})),
        reply(act("agent.done()")),
        reply("VERIFIED\nDone."),
    ]
    with ScriptedModelServer(script) as server:
        result = agent_for(server, x11, tmp_path / "fails", mode="auto").run("Press Frobnicate")
    assert result.succeeded, result
    assert result.plan["trigger"] == "a step failed twice"  # type: ignore[index]
    assert result.calls == {"generate": 3, "plan": 1, "verify": 1}
    assert result.steps == 3


def test_an_ambiguous_task_is_answered_through_the_callback(x11: Any, tmp_path: Path) -> None:
    asked: list[str] = []

    def answer(question: str) -> str | None:
        asked.append(question)
        return "the April one" if len(asked) == 1 else None

    script = [
        reply(act('agent.ask_user("Which report: March or April?")')),
        reply(act('agent.done(answer="April")')),
    ]
    with ScriptedModelServer(script) as server:
        agent = agent_for(server, x11, tmp_path / "one", mode="off")
        agent.ask_user = answer
        result = agent.run("Open the report")
        second = _texts(server.requests[1])
    assert result.succeeded, result
    assert asked == ["Which report: March or April?"]
    assert "the user answered: the April one" in second
    # the callback has no answer the second time: the run stops, it does not guess
    script = [reply(act('agent.ask_user(question="And which year?")'))]
    with ScriptedModelServer(script) as server:
        agent = agent_for(server, x11, tmp_path / "two", mode="off")
        agent.ask_user = answer
        result = agent.run("Open the report")
    assert result.status is RunStatus.NEEDS_INPUT
    assert (result.cause, result.question, result.exit_code) == (
        "needs_input",
        "And which year?",
        4,
    )
    step = load_trajectory(result.trajectory_dir).steps[-1]
    assert step.action_text.startswith("agent.ask_user(")


def test_code_subtasks_and_command_checks_run_only_in_the_contained_runner(
    apps: Any, x11: Any, tmp_path: Path
) -> None:
    data, marker = tmp_path / "data.csv", tmp_path / "check-ran"
    _xterm(apps, "cmd-term", tmp_path)
    command = {"kind": "command", "argv": ["grep", "-q", "n,3", str(data)]}
    window = {"kind": "window", "title_contains": "CMD-TERM"}
    script = [
        reply(
            plan(
                {
                    "id": "csv",
                    "description": "write n,3 to data.csv",
                    "worker": "code",
                    "check": command,
                },
                {"id": "term", "description": "bring the terminal up", "check": window},
            )
        ),
        reply(f"Writing.\n```bash\nprintf 'n,3\\n' > {data}\n```"),
        reply("Wrote data.csv.\nDONE"),
        reply(act('agent.switch_applications("cmd-term")')),
        reply(act("agent.done()")),
    ]
    code = CodeAgentConfig(enabled=True, workdir=str(tmp_path))
    with ScriptedModelServer(script) as server:
        result = agent_for(server, x11, tmp_path / "on", code=code).run("Write n,3 to data.csv")
    assert result.succeeded, result
    checks = [c for s in result.plan["subtasks"] for c in s["checks"]]  # type: ignore[index]
    assert [(c["by"], c["passed"]) for c in checks] == [("command", True), ("window", True)]
    assert checks[0]["detail"].startswith(f"grep -q n,3 {data}: exit status 0")
    assert result.calls == {"plan": 1, "code": 2, "generate": 2}
    # with the code agent off, a plan's command is never run: the check fails, nothing ran
    touch = {"kind": "command", "argv": ["touch", str(marker)]}
    script = [
        reply(plan({"id": "a", "description": "say done", "check": touch})),
        reply(act("agent.done()")),
        reply(act("agent.done()")),
    ]
    with ScriptedModelServer(script) as server:
        agent = agent_for(server, x11, tmp_path / "off", planning={"max_replans": 0})
        result = agent.run("Say done")
    assert result.cause == "replan_limit"
    assert "command checks need the code agent" in result.reason
    assert not marker.exists()
