"""The coding sub-agent inside whole runs: the model is scripted (and strict: one extra or
missing request fails the test), the desktop is a recording one, the code runs for real."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from agent_s import Agent, AgentConfig, GroundingConfig, ModelConfig, RunStatus, load_trajectory
from agent_s.coding.agent import parse_code_reply
from agent_s.desktop import RecordingBackend
from agent_s.safety.gate import Approval, ApprovalRequest
from agent_s.settings.config import CodeAgentConfig, SafetyConfig
from agent_s.testing.scripted_replies import reply
from agent_s.testing.scripted_server import ScriptedModelServer

KEY = "sk-code-SECRET-0123456789"
CSV = "item,qty,price\napple,3,0.5\npear,2,0.75\n"


def act(code: str) -> str:
    return f"The screen shows the desktop.\n```python\n{code}\n```"


def block(language: str, code: str, thought: str = "Next block.") -> str:
    return f"{thought}\n```{language}\n{textwrap.dedent(code).strip()}\n```"


def screens(n: int) -> list[Image.Image]:
    return [Image.new("RGB", (1280, 800), (40, 40, 40 + i)) for i in range(n)]


def conversation(request: Any) -> str:
    """Every text part of a request, in order."""
    parts = []
    for message in request.body["messages"]:
        content = message["content"]
        if isinstance(content, str):
            parts.append(content)
        else:
            parts += [p.get("text", "") for p in content if p.get("type") == "text"]
    return "\n".join(parts)


def make_agent(
    server: ScriptedModelServer,
    backend: RecordingBackend,
    tmp_path: Path,
    *,
    approver: Any = None,
    safety: SafetyConfig | None = None,
    **code: Any,
) -> Agent:
    code.setdefault("workdir", tmp_path / "work")
    code.setdefault("python", sys.executable)
    config = AgentConfig(
        settle_seconds=0,
        record_dir=tmp_path / "runs",
        retry_attempts=1,
        code=CodeAgentConfig(**code),
        safety=safety or SafetyConfig(),
    )
    model = ModelConfig("openai-compatible", "scripted-model", server.openai_base_url, KEY)
    return Agent(
        model,
        settings=config,
        grounding=GroundingConfig("native"),
        backend=backend,
        approver=approver,
    )


@pytest.fixture
def work(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "data.csv").write_text(CSV)
    return folder


# -- reading replies -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kind", "detail"),
    [
        ("Look.\n```bash\nls -la\n```", "block", "bash"),
        ("Compute.\n```py\nprint(1)\n```\n", "block", "python"),
        ("```sh\necho hi\n```", "block", "bash"),
        ("Two.\n```bash\nls\n```\n```python\nprint(1)\n```", "invalid", "2 code blocks"),
        ("Cut off.\n```python\nprint(1)\n", "invalid", "not closed"),
        ("Empty.\n```python\n\n```", "invalid", "empty"),
        ("Wrote total.csv with 3 rows.\nDONE", "final", "done"),
        ("No permission to write there.\n**FAIL**", "final", "fail"),
        ("The file is:\n```csv\na,b\n```\nDONE", "final", "done"),
        ("```json\n{}\n```", "invalid", "not ```json"),
        ("I think it is finished.", "invalid", "no ```python or ```bash block"),
        ("", "invalid", "no ```python"),
    ],
)
def test_reading_a_code_reply(text: str, kind: str, detail: str) -> None:
    parsed = parse_code_reply(text)
    assert parsed.kind == kind
    shown = {"block": parsed.language, "final": parsed.status, "invalid": parsed.error}[kind]
    assert detail in str(shown)


def test_the_final_summary_is_the_reply_without_its_last_line() -> None:
    parsed = parse_code_reply("Added a total column.\nTotal: 3.0\n\nDONE\n")
    assert parsed.summary == "Added a total column.\nTotal: 3.0"


# -- whole runs ------------------------------------------------------------------------------------


def test_the_code_agent_edits_a_csv_once_and_the_worker_sees_what_happened(
    work: Path, tmp_path: Path
) -> None:
    edit = """
        import csv
        rows = list(csv.DictReader(open("data.csv")))
        with open("data.csv", "w", newline="") as out:
            writer = csv.writer(out, lineterminator="\\n")
            writer.writerow(["item", "qty", "price", "total"])
            for row in rows:
                total = int(row["qty"]) * float(row["price"])
                writer.writerow([row["item"], row["qty"], row["price"], total])
        print("rows written:", len(rows))
    """
    script = [
        reply(act('agent.call_code_agent("Add a total column (qty * price) to data.csv")')),
        reply(block("bash", "cat data.csv\necho ran >> runs.log", "Look first.")),
        reply(block("python", edit, "Now add the column.")),
        reply("Added a total column to data.csv: apple 1.5, pear 1.5.\nDONE"),
        reply(act("agent.done()")),
    ]
    backend = RecordingBackend(screens(2))
    with ScriptedModelServer(script) as server:
        agent = make_agent(server, backend, tmp_path)
        result = agent.run("Add a total column to data.csv")
    assert result.status is RunStatus.SUCCEEDED, result
    assert result.model_calls == 5  # 2 worker steps + 3 code-agent turns, nothing twice
    edited = "item,qty,price,total\napple,3,0.5,1.5\npear,2,0.75,1.5\n"
    assert (work / "data.csv").read_text() == edited
    assert (work / "runs.log").read_text() == "ran\n"  # the block ran exactly once
    assert backend.ops == []  # the code agent never touches the screen

    worker_system = conversation(server.requests[0])
    assert "agent.call_code_agent(" in worker_system  # offered in the catalogue
    first_turn = conversation(server.requests[1])
    assert "writing code that is run for you" in first_turn  # the code agent's own prompt
    assert "Your job: Add a total column (qty * price) to data.csv" in first_turn
    assert f"Your blocks run in the folder {work.resolve()}" in first_turn
    second_turn = conversation(server.requests[2])
    assert "Turn 1: the bash block exited with status 0" in second_turn
    assert "apple,3,0.5" in second_turn  # the real output, not only the code
    assert "rows written: 2" in conversation(server.requests[3])

    told = conversation(server.requests[4])  # the worker, after the call
    assert "The code agent finished (DONE) after 3 turn(s); 2 block(s) ran" in told
    assert "Its summary: Added a total column to data.csv" in told
    assert f"modified data.csv ({len(CSV)} -> {len(edited)} bytes)" in told
    assert "created runs.log" in told
    assert "rows written: 2" in told  # what the code printed reaches the worker

    step = load_trajectory(result.trajectory_dir).steps[0]
    assert step.outcome == "ok"
    assert step.safety == {
        "allowed": True,
        "verdict": "allow",
        "decided_by": "mode auto",
        "mode": "auto",
        "risks": [],
        "approver": None,
        "message": "",
        "image": None,
        "reason": "",
    }
    kinds = [s.kind for s in step.substeps]
    assert kinds == ["block", "block", "final"]
    assert [s.substep for s in step.substeps] == [1, 2, 3]
    assert step.substeps[0].run is not None
    assert step.substeps[0].run["exit_status"] == 0
    assert "pear,2,0.75" in step.substeps[0].run["stdout"]["text"]
    assert step.substeps[1].language == "python"
    assert step.substeps[1].safety is not None
    assert step.substeps[1].safety["verdict"] == "allow"
    assert step.substeps[2].status == "done"
    assert step.substeps[0].call is not None
    assert step.substeps[0].call.purpose == "code"
    assert "rows written: 2" in step.detail


def test_a_hanging_block_and_fifty_megabytes_of_output_do_not_stop_the_run(
    work: Path, tmp_path: Path
) -> None:
    hang = 'print("before the hang", flush=True)\nimport time\ntime.sleep(600)'
    flood = 'line = "y" * 999\nfor _ in range(50_000):\n    print(line)'
    script = [
        reply(act('agent.call_code_agent("Summarise the log")')),
        reply(block("python", hang)),
        reply(block("python", flood)),
        reply(block("bash", "echo still working")),
        reply("Could not summarise: the tool hangs and floods.\nFAIL"),
        reply(act('agent.fail(reason="the code agent could not do it")')),
    ]
    with ScriptedModelServer(script) as server:
        agent = make_agent(server, RecordingBackend(screens(2)), tmp_path, timeout_s=1.5)
        start = time.monotonic()
        result = agent.run("Summarise the log")
        elapsed = time.monotonic() - start
    assert result.status is RunStatus.FAILED
    assert result.cause == "model_gave_up"
    assert elapsed < 15
    after_hang = conversation(server.requests[2])
    assert "was stopped: it was still running at the 1.5 s time limit" in after_hang
    assert "before the hang" in after_hang
    after_flood = server.requests[3]
    assert "Turn 2: the python block exited with status 0" in conversation(after_flood)
    assert "left out ...]" in conversation(after_flood)
    assert "(50,000,000 bytes in all)" in conversation(after_flood)
    assert len(after_flood.raw) < 40_000  # the code model gets a bounded excerpt
    assert "still working" in conversation(server.requests[4])
    told = conversation(server.requests[5])
    assert "The code agent gave up (FAIL) after 4 turn(s); 3 block(s) ran" in told
    assert "still working" in told
    step = load_trajectory(result.trajectory_dir).steps[0]
    assert step.outcome == "error"
    runs = [s.run for s in step.substeps if s.run is not None]
    assert runs[0]["timed_out"] is True
    assert runs[0]["stopped"] == "stopped at the time limit"
    assert runs[1]["stdout"]["truncated"] is True
    assert runs[1]["stdout"]["total_bytes"] == 50_000_000
    assert len(runs[1]["stdout"]["text"]) < 40_000
    trajectory = result.trajectory_dir / "trajectory.jsonl"
    assert trajectory.stat().st_size < 300_000


def test_the_turn_budget_bounds_the_loop_and_bad_replies_count(work: Path, tmp_path: Path) -> None:
    script = [
        reply(act("agent.call_code_agent()")),
        reply("I will now think about it."),  # no block, no DONE: sent back, counts as a turn
        reply(block("bash", "echo 42 > answer.txt; cat answer.txt")),
        reply(act("agent.done()")),
    ]
    with ScriptedModelServer(script) as server:
        result = make_agent(server, RecordingBackend(screens(2)), tmp_path, max_steps=2).run(
            "Write the answer to answer.txt"
        )
    assert result.succeeded
    assert "Turn 1: your reply could not be used: it has no ```python" in conversation(
        server.requests[2]
    )
    assert "Your job: Write the answer to answer.txt" in conversation(server.requests[1])
    told = conversation(server.requests[3])
    assert "ran out of turns without finishing after 2 turn(s)" in told
    assert "created answer.txt" in told
    assert "42" in told


class Answers:
    name = "test approver"

    def __init__(self, *answers: Approval) -> None:
        self.answers = list(answers)
        self.requests: list[ApprovalRequest] = []

    def __call__(self, request: ApprovalRequest) -> Approval:
        self.requests.append(request)
        return self.answers.pop(0)


def test_code_blocks_are_approved_or_refused_one_by_one(work: Path, tmp_path: Path) -> None:
    approver = Answers(Approval(False, by="erin", note="not that"), Approval(True, by="erin"))
    script = [
        reply(act('agent.call_code_agent("clean up")')),
        reply(block("bash", "rm data.csv")),
        reply(block("bash", "echo kept > note.txt")),
        reply("Left data.csv alone and wrote note.txt.\nDONE"),
        reply(act("agent.done()")),
    ]
    with ScriptedModelServer(script) as server:
        agent = make_agent(
            server,
            RecordingBackend(screens(2)),
            tmp_path,
            approver=approver,
            safety=SafetyConfig(mode="confirm"),
        )
        result = agent.run("Clean up the folder")
    assert result.succeeded
    assert (work / "data.csv").read_text() == CSV  # the refused block never ran
    assert (work / "note.txt").read_text() == "kept\n"
    shown = [r.subject.shown for r in approver.requests]
    assert shown == ["rm data.csv\n", "echo kept > note.txt\n"]  # the exact code
    assert [(r.step, r.substep) for r in approver.requests] == [(1, 1), (1, 2)]
    refused = conversation(server.requests[2])
    assert "Turn 1: the block was not run. Refused: this code block was not carried out" in refused
    assert "the user (erin) refused it: not that" in refused
    step = load_trajectory(result.trajectory_dir).steps[0]
    first, second = step.substeps[0], step.substeps[1]
    assert first.kind == "refused"
    assert first.run is None
    assert first.safety is not None
    assert second.safety is not None
    assert (first.safety["allowed"], first.safety["approver"]) == (False, "erin")
    assert (second.safety["allowed"], second.safety["decided_by"]) == (True, "approver")
    assert step.safety is not None
    assert step.safety["decided_by"] == "mode confirm"  # the call itself; blocks are asked


def test_without_an_approver_code_is_refused_and_deny_risky_refuses_the_call(
    work: Path, tmp_path: Path
) -> None:
    script = [
        reply(act("agent.call_code_agent()")),
        reply(block("bash", "touch made.txt")),
        reply("Nothing could run.\nFAIL"),
        reply(act('agent.fail(reason="no code allowed")')),
    ]
    with ScriptedModelServer(script) as server:
        agent = make_agent(
            server, RecordingBackend(screens(2)), tmp_path, safety=SafetyConfig(mode="confirm")
        )
        result = agent.run("Make a file")
    assert result.status is RunStatus.FAILED
    assert not (work / "made.txt").exists()
    assert "nobody can approve actions in this run" in conversation(server.requests[2])
    sub = load_trajectory(result.trajectory_dir).steps[0].substeps[0]
    assert sub.safety is not None
    assert sub.safety["decided_by"] == "nobody (no approver)"

    script = [reply(act("agent.call_code_agent()")), reply(act("agent.fail()"))]
    with ScriptedModelServer(script) as server:  # strict: no code-model request may be made
        agent = make_agent(
            server, RecordingBackend(screens(2)), tmp_path, safety=SafetyConfig(mode="deny-risky")
        )
        result = agent.run("Make a file")
    told = conversation(server.requests[1])
    assert "starts the code agent, which runs code, and risky actions are not allowed" in told
    step = load_trajectory(result.trajectory_dir).steps[0]
    assert (step.outcome, step.substeps) == ("error", ())
    assert step.safety is not None
    assert step.safety["allowed"] is False


def test_the_code_agent_is_not_offered_when_the_caller_executes_or_it_is_off(
    tmp_path: Path,
) -> None:
    script = [reply(act("agent.call_code_agent()"))]
    with ScriptedModelServer(script) as server:
        agent = make_agent(server, RecordingBackend(screens(1)), tmp_path)
        agent.start("Sum column B")
        step = agent.step(execute=False)  # e.g. an OSWorld runner executes the actions
    assert "agent.call_code_agent(" not in conversation(server.requests[0])
    assert step.outcome == "error"
    assert "not available in this run" in step.detail
    assert step.substeps == ()

    script = [reply(act("agent.call_code_agent()")), reply(act("agent.fail()"))]
    with ScriptedModelServer(script) as server:  # switched off: not offered, not run
        make_agent(server, RecordingBackend(screens(2)), tmp_path, enabled=False).run("Sum it")
    assert "agent.call_code_agent(" not in conversation(server.requests[0])
    assert "call_code_agent is not available in this run" in conversation(server.requests[1])


def test_a_working_folder_that_does_not_exist_is_reported_to_the_worker(tmp_path: Path) -> None:
    script = [reply(act("agent.call_code_agent()")), reply(act("agent.fail()"))]
    with ScriptedModelServer(script) as server:  # strict: no code-model request is made
        agent = make_agent(server, RecordingBackend(screens(2)), tmp_path, workdir=tmp_path / "no")
        result = agent.run("Sum column B")
    assert result.status is RunStatus.FAILED
    told = conversation(server.requests[1])
    assert "The code agent could not start, so no code was run" in told
    assert "does not exist" in told


_KILL_DRIVER = """
import json, sys
from pathlib import Path
from PIL import Image
from agent_s import Agent, AgentConfig, GroundingConfig, ModelConfig
from agent_s.settings.config import CodeAgentConfig
from agent_s.desktop import RecordingBackend
from agent_s.testing.scripted_replies import reply
from agent_s.testing.scripted_server import ScriptedModelServer

work, runs = Path(sys.argv[1]), Path(sys.argv[2])
hang = "sleep 300 &\\necho $! > child.pid\\necho $$ > block.pid\\nsleep 300"
script = [reply("Delegate.\\n```python\\nagent.call_code_agent()\\n```"),
          reply("Run it.\\n```bash\\n" + hang + "\\n```")]
with ScriptedModelServer(script) as server:
    model = ModelConfig("openai-compatible", "m", server.openai_base_url, "sk-x")
    config = AgentConfig(settle_seconds=0, record_dir=runs, code=CodeAgentConfig(
        workdir=work, timeout_s=120, python=sys.executable))
    backend = RecordingBackend([Image.new("RGB", (640, 480))])
    result = Agent(model, settings=config, grounding=GroundingConfig("native"),
                   backend=backend).run("hang")
print(json.dumps(result.to_json()))
"""


def running_in(folder: Path) -> list[int]:
    """Live processes working in ``folder`` (a block's pids are those of its PID namespace)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            if state not in ("Z", "X") and (entry / "cwd").resolve() == folder.resolve():
                found.append(int(entry.name))  # a zombie is dead (this init may not reap)
        except (OSError, IndexError, ValueError):
            continue
    return found


def test_ctrl_c_during_code_cancels_the_run_and_kills_the_code(work: Path, tmp_path: Path) -> None:
    driver = subprocess.Popen(
        [sys.executable, "-c", _KILL_DRIVER, str(work), str(tmp_path / "runs")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    while not (work / "block.pid").exists() or not (work / "block.pid").read_text().strip():
        assert driver.poll() is None, driver.communicate()
        assert time.monotonic() < deadline, "the code never started"
        time.sleep(0.05)
    os.kill(driver.pid, signal.SIGINT)
    stdout, stderr = driver.communicate(timeout=20)
    assert driver.returncode == 0, stderr
    result = json.loads(stdout)
    assert (result["status"], result["cause"]) == ("cancelled", "interrupted")
    assert not running_in(work)
    step = load_trajectory(result["trajectory_dir"]).steps[0]
    assert step.outcome == "cancelled"
    (turn,) = step.substeps  # the turn that was cut short, with the code it was running
    assert (turn.kind, turn.language) == ("interrupted", "bash")
    assert "sleep 300" in turn.code


# -- what the code agent is told about the screen -------------------------------------------------


def test_the_file_on_screen_is_found_from_the_window_title(tmp_path: Path) -> None:
    from agent_s.coding.agent import ScreenContext

    docs = tmp_path / "Documents"
    docs.mkdir()
    (docs / "notes.txt").write_text("x")
    (docs / "draft - v2.txt").write_text("x")
    (tmp_path / "a.txt").write_text("x")
    (docs / "a.txt").write_text("x")
    files = ("Documents/notes.txt", "Documents/draft - v2.txt", "a.txt", "Documents/a.txt")
    cases = {
        "*notes.txt - Mousepad": docs / "notes.txt",  # found once in the working folder
        f"notes.txt ({docs}) - gedit": docs / "notes.txt",  # gedit: name (folder)
        f"\u25cf {docs}/notes.txt - Visual Studio Code": docs / "notes.txt",  # a full path
        "draft - v2.txt - Mousepad": docs / "draft - v2.txt",  # " - " inside the name
        "a.txt - Mousepad": None,  # two files of that name: not guessed
        "missing.ods - LibreOffice Calc": None,  # named, but not on disk
        "google.com - Chromium": None,
        "Calculator": None,
    }
    for title, expected in cases.items():
        screen = ScreenContext(title, "App")
        assert screen.file(tmp_path, files) == expected, title
    assert ScreenContext.of(None) is None


def test_the_code_agent_is_told_the_active_window_and_the_file_it_shows(
    work: Path, tmp_path: Path
) -> None:
    """The worker hands over while Mousepad shows data.csv: the code model's first message
    names the window and the file's path; its system prompt says blocks share no state."""
    from agent_s.desktop.base import WindowInfo

    windows = [
        WindowInfo(5, "*data.csv - Mousepad", "Mousepad", 9, 0, 0, 800, 600, active=True),
        WindowInfo(6, "Terminal", "XTerm", 10, 0, 0, 400, 300),
    ]
    script = [
        reply(act('agent.call_code_agent(task="Sort the rows of this file by price")')),
        reply("Nothing to do in this test.\nDONE"),
        reply(act("agent.done()")),
    ]
    backend = RecordingBackend(screens(2), windows=windows)
    with ScriptedModelServer(script) as server:
        result = make_agent(server, backend, tmp_path).run("Sort data.csv by price")
    assert result.status is RunStatus.SUCCEEDED, result
    worker = conversation(server.requests[0])
    assert '- "*data.csv - Mousepad" (Mousepad), focused' in worker
    assert "Save the file you are editing before you hand it over" in worker
    code = conversation(server.requests[1])
    assert (
        'On the screen, the active window is:\n<screen-content source="window titles">\n'
        '"*data.csv - Mousepad" (Mousepad)\n</screen-content>'
    ) in code
    assert f"That window shows the file {work.resolve() / 'data.csv'}." in code
    assert "Each block runs in a fresh process" in code
    assert "keep its format" in code
