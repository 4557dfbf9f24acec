"""Steps and model calls of a related second task, with memory off and on (issue 17).

    .venv/bin/python scripts/bench_memory.py [--json OUT] [--keep DIR]

Runs a pair of related smoke tasks in order, one worker (so the first is done, scored and learned
from before the second starts): 7d2a4c61 (move every .log file in ~/logs into ~/logs/archive),
then 3c9e7a52 (move every .tmp file in ~/cache into ~/cache/old), with
``agent-s bench run --policy agent --plan off`` once with ``--memory off`` and once with
``--memory learning`` and a fresh ``--memory-db``, each task on a fresh virtual desktop, against
a local scripted model (the real openai SDK over HTTP).

THE REPLIES ARE SCRIPTED: the figures show what the memory plumbing changes (what is stored, what
the prompts show, what reusing it saves), not how well any model uses memory. The scripted model
behaves like a model that follows advice, deciding only from the text of each request:

- without a fitting verified skill in its prompt, the worker works the task out step by step:
  it has the code agent list the folder, then has it move the files (code the scripted model
  writes from the task's values), then says done;
- when its prompt shows a VERIFIED skill (python code) from a task of the same form (move every
  X file in A into a new folder B), it hands the code agent one job, and the code agent runs the
  code of the skill its own prompt shows, with this task's values in place of the old task's
  (string literals replaced; nothing else changed), then both say done.

The second task's figures (steps, model calls by purpose from its ``trajectory/result.json``,
score) are printed for both modes, with the estimated prompt tokens of its first worker request
(text at 4 characters a token, screenshots by OpenAI's high-detail tile rule: the scripted
server reports no real usage) and of all its requests, and what memory showed
(``memory.jsonl``).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image

from agent_s.bench.tasks import Task, load_suite
from agent_s.memory.recall import retrievals
from agent_s.record.trajectory import load_trajectory
from agent_s.testing.scripted_replies import Step, reply
from agent_s.testing.scripted_server import RecordedRequest, ScriptedModelServer

AGENT_S = str(Path(sys.executable).parent / "agent-s")
FIRST = "7d2a4c61-3e9b-4b7a-8f25-6a1d9e3c4b02"  # .log files into ~/logs/archive
SECOND = "3c9e7a52-5d1f-4e8b-9a64-1b7f0c2e5d07"  # .tmp files into ~/cache/old
INDEX = "test_memory_pair.json"
# the form both tasks share; a skill "fits" when its task has it too
FORM = re.compile(r"Move every (\.\w+) file in ~/([\w./-]+) into a new folder ~/([\w./-]+),")
SKILL = re.compile(
    r"^\[\d+\] Skill \(python code\): .*\n"
    r"    (VERIFIED|UNVERIFIED): .*?; task: (.*)\n"
    r"(?:    .*\n)*?"
    r"(`{3,})python\n([\s\S]*?)\n\3$",
    re.MULTILINE,
)


@dataclass(frozen=True)
class Values:
    """A task's values: the extension, the folder and the new folder (relative to HOME)."""

    ext: str
    source: str
    target: str

    @classmethod
    def of(cls, instruction: str) -> Values | None:
        found = FORM.search(instruction)
        return cls(*found.groups()) if found else None


@dataclass(frozen=True)
class ShownSkill:
    verified: bool
    task: str
    code: str


def _texts(request: RecordedRequest) -> tuple[str, str]:
    """(the system prompt, every other text) of a Chat Completions request."""
    system, rest = "", []
    for message in request.body.get("messages", []):
        content = message["content"]
        texts = (
            [content]
            if isinstance(content, str)
            else [p.get("text", "") for p in content if p.get("type") == "text"]
        )
        if message["role"] == "system":
            system += "\n".join(texts)
        else:
            rest.extend(texts)
    return system, "\n".join(rest)


def shown_skills(text: str) -> list[ShownSkill]:
    """The python-code skills a prompt's memory section shows, as the model reads them."""
    return [
        ShownSkill(m.group(1) == "VERIFIED", m.group(2).strip(), m.group(4))
        for m in SKILL.finditer(text)
    ]


def fitting_skill(text: str, values: Values) -> tuple[ShownSkill, Values] | None:
    """A verified skill that moves files, from a task of the same form, and its task's values."""
    for skill in shown_skills(text):
        old = Values.of(skill.task)
        if skill.verified and old is not None and "shutil.move" in skill.code:
            return skill, old
    return None


def list_code(values: Values) -> str:
    return (
        "from pathlib import Path\n"
        "\n"
        f"for path in sorted((Path.cwd() / {values.source!r}).iterdir()):\n"
        "    print(path.name)\n"
    )


def move_code(values: Values) -> str:
    """The code the scripted model writes itself (the blocks run in HOME: the current folder)."""
    return (
        "import shutil\n"
        "from pathlib import Path\n"
        "\n"
        f"source = Path.cwd() / {values.source!r}\n"
        f"target = Path.cwd() / {values.target!r}\n"
        "target.mkdir(parents=True, exist_ok=True)\n"
        "for path in sorted(source.iterdir()):\n"
        f"    if path.is_file() and path.suffix == {values.ext!r}:\n"
        "        shutil.move(str(path), str(target / path.name))\n"
        "        print('moved', path.name)\n"
    )


def reuse(code: str, old: Values, new: Values) -> str:
    """The skill's code with each string literal holding an old value given the new one."""
    mapping = {old.ext: new.ext, old.source: new.source, old.target: new.target}
    return re.sub(r"'([^'\n]*)'", lambda m: repr(mapping.get(m.group(1), m.group(1))), code)


def act(call: str) -> Step:
    return reply(f"Next.\n```python\n{call}\n```")


class AdviceFollowingModel:
    """The worker's and the code agent's replies for the pair (see the module docstring)."""

    def __init__(self, tasks: list[Task]) -> None:
        self.tasks = tasks
        self.plans: dict[str, list[str]] = {}  # task id -> the worker's remaining actions
        self.first_worker: dict[str, RecordedRequest] = {}
        self.asked: dict[str, list[RecordedRequest]] = {}  # task id -> its requests
        self.reused: dict[str, str] = {}  # task id -> the code run from a shown skill
        self.lock = threading.Lock()

    def _task(self, text: str) -> Task:
        """The task a request is for: the instruction it names first (memory, which may name
        the other task, comes after the task and the job)."""
        places = [(text.find(t.instruction), t) for t in self.tasks if t.instruction in text]
        if not places:
            raise AssertionError(f"request names no task: {text[:200]!r}")
        return min(places, key=lambda p: p[0])[1]

    def __call__(self, request: RecordedRequest) -> Step:
        system, text = _texts(request)
        task = self._task(text)
        with self.lock:
            self.asked.setdefault(task.id, []).append(request)
        values = Values.of(task.instruction)
        if values is None:
            raise AssertionError(f"not a task of the pair: {task.instruction}")
        if system.startswith("You complete a job on a computer"):
            return self._code(request, task, values, text)
        if not system.startswith("You operate a computer"):
            raise AssertionError(f"unexpected request: {system[:120]!r}")
        with self.lock:
            if task.id not in self.plans:
                self.first_worker[task.id] = request
                self.plans[task.id] = self._plan(task, values, text)
            plan = self.plans[task.id]
            call = plan.pop(0) if len(plan) > 1 else plan[0]
        return act(call)

    def _plan(self, task: Task, values: Values, text: str) -> list[str]:
        about = f" (The task: {task.instruction})"
        move = f"Move the {values.ext} files in ~/{values.source} into ~/{values.target}"
        if fitting_skill(text, values) is not None:
            job = f"{move}, reusing the verified skill shown from memory with these values.{about}"
            return [f"agent.call_code_agent({job!r})", "agent.done()"]
        listing = f"List the files in ~/{values.source}.{about}"
        return [
            f"agent.call_code_agent({listing!r})",
            f"agent.call_code_agent({(move + ', creating it.' + about)!r})",
            "agent.done()",
        ]

    def _code(self, request: RecordedRequest, task: Task, values: Values, text: str) -> Step:
        if re.search(r"block exited with status 0\b", text):  # its block ran: finish
            return reply("The block did the job.\nDONE")
        if "Your job: List the files" in text:
            code = list_code(values)
        else:
            found = fitting_skill(text, values)
            if found is not None:
                code = reuse(found[0].code, found[1], values) + "\n"  # shown without it
                with self.lock:
                    self.reused[task.id] = code
            else:
                code = move_code(values)
        return reply(f"I run this.\n```python\n{code}```")


# -- measuring ------------------------------------------------------------------------------------


def image_tokens(width: int, height: int) -> int:
    """OpenAI, detail high: fit in 2048x2048, the short side to 768; 85 + 170 per 512 tile."""
    scale = min(1.0, 2048 / max(width, height))
    w, h = width * scale, height * scale
    scale = min(1.0, 768 / min(w, h))
    w, h = w * scale, h * scale
    return 85 + 170 * math.ceil(w / 512) * math.ceil(h / 512)


def prompt_tokens(request: RecordedRequest) -> dict[str, int]:
    """The request's prompt, estimated: its text at 4 characters a token, its images."""
    system, rest = _texts(request)
    sizes = [Image.open(io.BytesIO(data)).size for _, data in request.images()]
    text = math.ceil(len(system + rest) / 4)
    images = sum(image_tokens(w, h) for w, h in sizes)
    shown = "From memory of earlier runs" in rest
    return {"total": text + images, "text": text, "images": images, "memory_shown": int(shown)}


def _entries(retrieval: dict[str, object]) -> list[dict[str, Any]]:
    """The entries one ``memory.jsonl`` line names."""
    entries = retrieval.get("entries")
    return [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []


def run_mode(mode: str, suite: Path, url: str, folder: Path) -> dict[str, dict[str, Any]]:
    """The pair with ``--memory mode``; per task: steps, calls, score, what memory did."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_S_")}
    config = folder / "config.toml"
    config.write_text("")
    env.update(AGENT_S_CONFIG=str(config), OPENAI_API_KEY="sk-scripted")
    results = folder / "results"
    argv = [AGENT_S, "bench", "run", str(suite), "--index", INDEX, "--policy", "agent"]
    argv += ["--provider", "openai-compatible", "--model", "scripted", "--base-url", url]
    argv += ["--workers", "1", "--plan", "off", "--safety", "auto", "--max-steps", "10"]
    argv += ["--results", str(results), "--memory", mode]
    if mode != "off":
        argv += ["--memory-db", str(folder / "memory.sqlite3")]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=1800, check=False)
    if done.returncode not in (0, 1):
        raise SystemExit(f"bench run failed ({done.returncode}):\n{done.stderr[-2000:]}")
    found: dict[str, dict[str, Any]] = {}
    for task_id in (FIRST, SECOND):
        (task_folder,) = results.glob(f"pyautogui/screenshot/*/os/{task_id}")
        ours = json.loads((task_folder / "trajectory" / "result.json").read_text())
        bench = json.loads((task_folder / "result.json").read_text())
        score = task_folder / "result.txt"
        shown = retrievals(task_folder / "trajectory")
        steps = load_trajectory(task_folder / "trajectory").steps
        ran = [b.code_sha256 for st in steps for b in st.substeps if b.run is not None]
        found[task_id] = {
            "score": float(score.read_text()) if score.is_file() else None,
            "status": ours["status"],
            "steps": ours["steps"],
            "model_calls": ours.get("model_calls", 0),
            "calls": ours.get("calls", {}),
            "memory": bench.get("memory"),
            "blocks_run": ran,  # the sha256 of each code-agent block that ran
            "skills_shown": sorted(
                {str(e["sha256"]) for r in shown for e in _entries(r) if e.get("sha256")}
            ),
            "shown": {str(r["purpose"]): [str(e["kind"]) for e in _entries(r)] for r in shown},
        }
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", type=Path)
    parser.add_argument("--keep", type=Path, help="keep each mode's results folder under KEEP")
    args = parser.parse_args()
    source = load_suite("smoke")
    tasks = [t for t in source.tasks(["os"]) if t.id in (FIRST, SECOND)]
    second = next(t for t in tasks if t.id == SECOND)
    report: dict[str, Any] = {"scripted": True, "modes": {}}
    print("SCRIPTED REPLIES: these figures show the memory plumbing's effect, not a model's.")
    for mode in ("off", "learning"):
        model = AdviceFollowingModel(tasks)
        with ScriptedModelServer(model) as server, tempfile.TemporaryDirectory() as tmp:
            suite = Path(tmp) / "suite"
            shutil.copytree(source.root, suite)
            (suite / INDEX).write_text(json.dumps({"os": [FIRST, SECOND]}))
            results = run_mode(mode, suite, server.openai_base_url, Path(tmp))
            if args.keep is not None:
                shutil.copytree(Path(tmp), args.keep / mode, dirs_exist_ok=True)
        first_request = model.first_worker.get(SECOND)
        tokens = prompt_tokens(first_request) if first_request is not None else {}
        results[SECOND]["first_request_tokens"] = tokens
        every = sum(prompt_tokens(r)["total"] for r in model.asked.get(SECOND, []))
        results[SECOND]["all_requests_tokens"] = every
        reused = model.reused.get(SECOND)
        results[SECOND]["reused_skill_code"] = reused
        results[SECOND]["block_is_reused_skill"] = reused is not None and results[SECOND][
            "blocks_run"
        ] == [hashlib.sha256(reused.encode()).hexdigest()]
        report["modes"][mode] = results
        for task_id, result in results.items():
            which = "second" if task_id == SECOND else "first "
            calls = ", ".join(f"{k} {v}" for k, v in sorted(result["calls"].items()))
            print(
                f"--memory {mode:8} {which} task {task_id[:8]}: score {result['score']}, "
                f"{result['steps']} steps, {result['model_calls']} model calls ({calls})"
            )
            if result["shown"]:
                shown = "; ".join(f"{p}: {', '.join(k)}" for p, k in result["shown"].items())
                print(f"{'':20} memory showed {shown}")
            if result["memory"] and result["memory"].get("learned"):
                print(f"{'':20} learned {result['memory']['learned']} entries once scored")
        if results[SECOND].get("block_is_reused_skill"):
            print(
                f"{'':20} second task's one code block: a shown skill's code with the new "
                "values (its sha256 is the one recorded when it ran)"
            )
        print(
            f"{'':20} second task's first request: ~{tokens.get('total', 0):,} prompt tokens "
            f"(text {tokens.get('text', 0):,}, screenshots {tokens.get('images', 0):,}; "
            f"memory section {'shown' if tokens.get('memory_shown') else 'none'}); "
            f"all its requests: ~{every:,}"
        )
    off, on = (report["modes"][m][SECOND] for m in ("off", "learning"))
    print(
        f"second task ({second.instruction}): steps {off['steps']} -> {on['steps']}, "
        f"model calls {off['model_calls']} -> {on['model_calls']}, first request's prompt "
        f"~{off['first_request_tokens'].get('total', 0):,} -> "
        f"~{on['first_request_tokens'].get('total', 0):,} tokens (memory off -> on; "
        "scripted replies: the plumbing's effect, not a model's quality)"
    )
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
