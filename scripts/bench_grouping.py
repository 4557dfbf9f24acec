"""Model calls per task with one action per reply and with up to four (``--max-actions-per-reply``).

    .venv/bin/python scripts/bench_grouping.py [--suite smoke] [--most 4] [--out DIR] [--json]

Each task runs twice on a fresh virtual desktop of its own (``agent_s.bench.environment``), a real
``Agent.run`` each time (screenshots, grounding, the safety gate, the model's HTTP calls through
the OpenAI SDK): once with ``max_actions_per_reply`` 1, once with ``--most``. The model is scripted:
it answers with the task's reference solution, one line per reply, or, when a reply may hold
several, groups the lines the way the prompt allows (``prompts/worker.md``, ``sequence``): at most
``--most`` per reply, ``done`` and ``fail`` alone, and a reply ends after an action that opens or
switches a window. When the agent stops a sequence (the next request says how many of its
actions ran) the scripted model goes on from the first action that did not run.

The tasks: the suite's tasks that have a reference solution (scored by their evaluators), and
four forms, each checked by its effect: an address typed into mousepad and saved (the file on
disk), a new mousepad document saved under a name (whose reply the Save As dialog stops before
the name is typed: the file on disk), gtk3-demo's dialog form filled in (the entries' text, read
from the accessibility tree) and a row typed into a new LibreOffice Calc sheet (the cells,
copied from Calc). A line per task
gives the calls and scores both ways; the suite's, the forms' and the total, the calls saved.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

_KEY = "sk-bench-grouping-0000"
_ALONE = ("agent.done(", "agent.fail(", "agent.ask_user(", "agent.call_code_agent(")
_ENDS_REPLY = ("agent.open(", "agent.switch_applications(")
_RAN = re.compile(r"held (\d+) actions; (\d+) ran")
FORM = "Dialogs and Message Boxes"

# the forms: setup (OSWorld task config), the reference solution, what to check afterwards
FORMS: dict[str, dict[str, Any]] = {
    "mousepad_address": {
        "instruction": "Write the address Ada Lovelace, 12 St James's Square, London SW1Y 4JH "
        "in address.txt, one line each, and save it.",
        "config": [
            {
                "type": "execute",
                "parameters": {"command": "touch /home/user/address.txt", "shell": True},
            },
            {"type": "launch", "parameters": {"command": ["mousepad", "/home/user/address.txt"]}},
            {"type": "sleep", "parameters": {"seconds": 1}},
            {"type": "activate_window", "parameters": {"window_name": "address.txt"}},
        ],
        "reference": [
            "agent.type(text='Ada Lovelace\\n')",
            'agent.type(text="12 St James\'s Square\\n")',
            "agent.type(text='London SW1Y 4JH\\n')",
            "agent.hotkey(keys=['ctrl', 's'])",
            "agent.wait(seconds=1)",
            "agent.done()",
        ],
    },
    "mousepad_save_as": {  # a reply that saves and names the file: the dialog stops it
        "instruction": "Write hello grouping in a new document and save it as ~/saved.txt.",
        "config": [
            {"type": "launch", "parameters": {"command": ["mousepad"]}},
            {"type": "sleep", "parameters": {"seconds": 1}},
            {"type": "activate_window", "parameters": {"window_name": "Mousepad"}},
        ],
        "reference": [
            "agent.type(text='hello grouping\\n')",
            "agent.hotkey(keys=['ctrl', 's'])",
            "agent.type(text='{home}/saved.txt', enter=True)",
            "agent.wait(seconds=1)",
            "agent.done()",
        ],
    },
    "gtk_form": {
        "instruction": "In the form, fill in Entry 1 with Ada and Entry 2 with Lovelace.",
        "config": [
            {"type": "launch", "parameters": {"command": ["gtk3-demo", "--run=dialog"]}},
            {"type": "sleep", "parameters": {"seconds": 1}},
            {"type": "activate_window", "parameters": {"window_name": FORM}},
        ],
        "reference": [
            "agent.click(element_description='the \"Entry 1\" field')",
            "agent.type(text='Ada')",
            "agent.hotkey(keys=['tab'])",
            "agent.type(text='Lovelace')",
            "agent.done()",
        ],
    },
    "calc_row": {
        "instruction": "In the new spreadsheet, type the row Ada, Lovelace, 1815 from A1.",
        "config": [
            {"type": "launch", "parameters": {"command": ["localc", "--norestore"]}},
            {"type": "sleep", "parameters": {"seconds": 5}},
            {"type": "activate_window", "parameters": {"window_name": "LibreOffice Calc"}},
        ],
        "reference": [
            "agent.type(text='Ada')",
            "agent.hotkey(keys=['tab'])",
            "agent.type(text='Lovelace')",
            "agent.hotkey(keys=['tab'])",
            "agent.type(text='1815')",
            "agent.hotkey(keys=['enter'])",
            "agent.done()",
        ],
    },
}


def groups(lines: Sequence[str], most: int) -> list[list[str]]:
    """The reference lines as a model allowed ``most`` actions per reply would send them."""
    found: list[list[str]] = []
    for line in lines:
        alone = line.startswith(_ALONE)
        last = found[-1] if found else None
        if last is None or alone or len(last) >= most or last[-1].startswith(_ALONE + _ENDS_REPLY):
            found.append([line])
        else:
            last.append(line)
    return found


class GroupingModel:
    """The scripted model: the reference in groups (see the module docstring)."""

    def __init__(self, lines: Sequence[str], most: int) -> None:
        self.lines, self.most = list(lines), most
        self.start, self.size = 0, 0  # the last reply's first line and its number of lines

    def __call__(self, request: Any) -> str:
        last = request.body["messages"][-1]["content"]
        text = last if isinstance(last, str) else " ".join(p.get("text", "") for p in last)
        ran = _RAN.search(text)
        cursor = self.start + (int(ran.group(2)) if ran else self.size)
        if "could not be used" in text:  # an invalid reply: the same lines again
            cursor = self.start
        group = groups(self.lines[cursor:], self.most)[0] if cursor < len(self.lines) else []
        self.start, self.size = cursor, len(group)
        body = "\n".join(group or ["agent.fail()"])
        return f"The next actions of the task.\n```python\n{body}\n```"


def _form_check(name: str, env: Any) -> float:
    """1.0 when the form shows what the task asked for, else 0.0."""
    if name == "mousepad_address":
        path = Path(env.desktop.home) / "address.txt"
        wanted = "Ada Lovelace\n12 St James's Square\nLondon SW1Y 4JH"
        deadline = time.monotonic() + 3
        while path.read_text().strip() != wanted and time.monotonic() < deadline:
            time.sleep(0.1)
        return float(path.read_text().strip() == wanted)
    if name == "mousepad_save_as":
        path = Path(env.desktop.home) / "saved.txt"
        deadline = time.monotonic() + 3
        while not path.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        return float(path.exists() and path.read_text().strip() == "hello grouping")
    if name == "gtk_form":
        return float(_entries(env) == {"Entry 1": "Ada", "Entry 2": "Lovelace"})
    backend = env.backend  # calc_row: the row as Calc copies it
    backend.clipboard_set("")
    for keys in (["ctrl", "home"], ["ctrl", "shift", "end"], ["ctrl", "c"]):
        backend.hotkey(keys)
        time.sleep(0.3)
    deadline = time.monotonic() + 3
    while not backend.clipboard_get().strip() and time.monotonic() < deadline:
        time.sleep(0.1)
    return float(backend.clipboard_get().strip().split("\t") == ["Ada", "Lovelace", "1815"])


_ENTRIES = """
import json
import gi
gi.require_version("Atspi", "2.0")
from gi.repository import Atspi, GLib

found = []
def walk(node, depth):
    if node is None or depth > 30:
        return
    try:
        role = node.get_role_name()
        if role in ("text", "label"):
            count = Atspi.Text.get_character_count(node)
            found.append((role, Atspi.Text.get_text(node, 0, count) if count >= 0 else ""))
        children = [node.get_child_at_index(i) for i in range(node.get_child_count())]
    except GLib.Error:
        return
    for child in children:
        walk(child, depth + 1)

desktop = Atspi.get_desktop(0)
for index in range(desktop.get_child_count()):
    app = desktop.get_child_at_index(index)
    if app is not None and (app.get_name() or "") == "gtk3-demo":
        walk(app, 0)
print(json.dumps(found))
"""


def _entries(env: Any) -> dict[str, str]:
    """gtk3-demo's entries by their labels, from the accessibility tree (each entry is listed
    just before its label), read by a process of its own on the desktop's bus."""
    done = subprocess.run(
        [sys.executable, "-c", _ENTRIES],
        env=env.desktop.env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    found = [tuple(item) for item in json.loads(done.stdout)]
    return {
        label: text
        for (role, text), (kind, label) in zip(found, found[1:], strict=False)
        if role == "text" and kind == "label" and label in ("Entry 1", "Entry 2")
    }


def phase(task_path: str, domain: str, form: str, most: int, folder: Path) -> dict[str, Any]:
    """One run of one task in this process, with up to ``most`` actions per reply."""
    from agent_s import Agent, AgentConfig, GroundingConfig, ModelConfig
    from agent_s.bench.environment import TaskEnvironment
    from agent_s.bench.scoring import evaluate
    from agent_s.bench.tasks import load_task
    from agent_s.record.trajectory import load_trajectory
    from agent_s.testing.scripted_server import ScriptedModelServer

    task = load_task(task_path, domain=domain)
    settings = AgentConfig(record_dir=folder / "runs", max_actions_per_reply=most)
    with TaskEnvironment(task, folder, log=[]) as env:
        home = str(env.desktop.home)
        lines = [line.replace("{home}", home) for line in task.reference or ()]
        with ScriptedModelServer(GroupingModel(lines, most)) as server:
            model = ModelConfig("openai-compatible", "scripted-model", server.openai_base_url, _KEY)
            agent = Agent(
                model, settings=settings, grounding=GroundingConfig("auto"), backend=env.backend
            )
            result = agent.run(task.instruction)
        steps = load_trajectory(result.trajectory_dir).steps if result.trajectory_dir else []
        if form:
            score = _form_check(form, env)
        else:
            code = steps[-1].code if steps else None
            last = code if code in ("DONE", "FAIL", "WAIT") or code is None else "OTHER"
            if env.context is None:
                raise RuntimeError("the task environment has no context")
            score = evaluate(task, last, env.context, env.run_steps).value
    return {
        "status": result.status.value,
        "steps": result.steps,
        "model_calls": result.model_calls,
        "stopped": sum(1 for s in steps if "was dropped" in " ".join(s.errors)),
        "score": score,
    }


def _in_process(args: list[str]) -> dict[str, Any]:
    """A run in a child process (its own accessibility bus connection): its JSON line."""
    argv = [sys.executable, str(Path(__file__).resolve()), "--phase", *args]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
        return {"status": "error", "error": " | ".join(tail), "model_calls": 0, "score": None}
    line: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return line


def _form_tasks(folder: Path) -> list[tuple[str, str, str]]:
    """(task file, domain, form name) of each form, written as task files in ``folder``."""
    found = []
    for name, form in FORMS.items():
        data = {
            "id": name,
            "snapshot": "forms",
            "instruction": form["instruction"],
            "source": "scripts/bench_grouping.py",
            "config": form["config"],
            "evaluator": {"func": "infeasible"},  # unused: checked by its effect
            "reference": form["reference"],
        }
        path = folder / "forms" / f"{name}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=2))
        found.append((str(path), "forms", name))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", default="smoke")
    parser.add_argument("--most", type=int, default=4, help="Actions per reply when grouped.")
    parser.add_argument("--out", type=Path, default=None, help="Folder for the runs.")
    parser.add_argument("--json", action="store_true", help="One JSON object per task.")
    parser.add_argument("--only", action="append", help="Only tasks whose id starts so.")
    parser.add_argument("--phase", nargs=5, help=argparse.SUPPRESS)  # the child's arguments
    given = parser.parse_args(argv)
    if given.phase:
        task_path, domain, form, most, folder = given.phase
        print(json.dumps(phase(task_path, domain, form, int(most), Path(folder))))
        return 0

    from agent_s.bench.tasks import load_suite

    out = given.out or Path(tempfile.mkdtemp(prefix="bench-grouping-"))
    tasks, _ = load_suite(given.suite).load()
    runs = [(str(t.path), t.domain, "") for t in tasks if t.reference]
    runs += _form_tasks(out)
    if given.only:
        runs = [r for r in runs if any(Path(r[0]).stem.startswith(o) for o in given.only)]
    rows = []
    for path, domain, form in runs:
        name = f"{domain}/{Path(path).stem[:16]}"
        one, several = (
            _in_process([path, domain, form, str(most), str(out / f"n{most}" / Path(path).stem)])
            for most in (1, given.most)
        )
        row = {"task": name, "n1": one, f"n{given.most}": several}
        rows.append(row)
        print(json.dumps(row) if given.json else _line(name, one, several), flush=True)
    parts = {
        f"suite {given.suite}": [r for r in rows if not r["task"].startswith("forms/")],
        "forms": [r for r in rows if r["task"].startswith("forms/")],
        "total": rows,
    }
    totals = {name: _total(part, given.most) for name, part in parts.items() if part}
    if given.json:
        print(json.dumps({**totals, "out": str(out)}))
        return 0
    for name, total in totals.items():
        print(
            f"{name:28} N=1: {total['n1']:3d} calls | N={given.most}: {total['grouped']:3d} calls"
            f" | {total['fewer']:.0%} fewer model calls | scores "
            + ("the same" if total["same"] else "DIFFER")
        )
    print(f"runs in {out}")
    return 0


def _total(rows: list[dict[str, Any]], most: int) -> dict[str, Any]:
    """The calls of ``rows`` both ways, the share saved, and whether every score is the same."""
    one = sum(r["n1"]["model_calls"] for r in rows)
    grouped = sum(r[f"n{most}"]["model_calls"] for r in rows)
    same = all(r["n1"].get("score") == r[f"n{most}"].get("score") for r in rows)
    return {"n1": one, "grouped": grouped, "fewer": 1 - grouped / one if one else 0.0, "same": same}


def _line(name: str, one: dict[str, Any], several: dict[str, Any]) -> str:
    def shown(found: dict[str, Any]) -> str:
        score = found.get("score")
        text = f"{found['model_calls']:2d} calls, {found.get('status', '')}"
        text += f" score {score:g}" if isinstance(score, int | float) else ""
        text += f", {found['stopped']} stopped" if found.get("stopped") else ""
        return text + (f" error: {found['error']}" if "error" in found else "")

    return f"{name:28} N=1: {shown(one)} | grouped: {shown(several)}"


if __name__ == "__main__":
    sys.exit(main())
