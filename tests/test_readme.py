"""Every example in the README runs as written.

The fenced blocks are found generically, and each must be covered:

- ``toml``: the configuration file is read by the settings model as the README says.
- ``python``: each example runs in a fresh interpreter (the SDK and compat examples against the
  scripted model server, on the test desktop, doing the task they name).
- ``sh``: every command line is first checked statically (the block passes ``bash -n``; every
  flag of an ``agent-s`` command is in that command's ``--help``; every path it names in this
  repository exists), then executed, in order, in a scratch folder: ``agent-s run`` lines with
  the scripted model server standing in for the provider (the key variable as written, the
  server's URL in ``AGENT_S_BASE_URL`` or in place of ``--base-url``) on the test desktop, or on
  their own ``--virtual`` one; ``ground``, ``doctor`` and ``bench`` as written (``bench run
  --policy agent`` with the scripted model; benchmark scripts with their smallest options).
  Lines that need the network (installing Agent S3 from PyPI) or a Ray cluster are checked as
  far as possible without them; the set-up block is what CI runs (``.ci/run``), so here it is
  compared with ``.ci/run`` and checked.
- ``text``: output excerpts, shown as the commands above them print them; not run.

A command line no rule here knows fails ``test_every_command_line_is_covered``: a new example
needs a test.
"""

from __future__ import annotations

import ast
import base64
import functools
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from modelcheck_scripts import battery_script
from packaging.requirements import Requirement
from PIL import Image
from readme_runners import (
    _CLEAN,
    AGENT_S,
    Command,
    Scene,
    _agent_s,
    _model_env,
    act,
    export_line,
    recorded_run_line,
    replay_line,
    workflow_example,
    workflow_line,
)
from readme_samples import assert_printed, samples_after

from agent_s.bench.tasks import load_suite
from agent_s.errors import WindowNotFoundError
from agent_s.memory import MemoryStore, Skill
from agent_s.record.trajectory import load_trajectory
from agent_s.settings.read import load_settings
from agent_s.testing.scripted_replies import Step, reply
from agent_s.testing.scripted_server import RecordedRequest, ScriptedModelServer

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
_BLOCK = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
# json: the MCP client configuration, started and used by tests/test_mcp.py
LANGUAGES = ("sh", "toml", "python", "text", "json")
# The benchmark scripts with their smallest options (a new script needs an entry).
SMALLEST = {
    "scripts/bench_capture.py": ["--rounds", "1"],
    "scripts/bench_context.py": ["--steps", "2", "--modelled"],
    "scripts/bench_grounding.py": ["--apps", "galculator", "--max", "2", "--no-ocr-variants"],
    "scripts/bench_step.py": ["--steps", "2", "--no-ocr"],
    "scripts/bench_harness.py": ["--copies", "1", "--workers", "2"],
    "scripts/bench_injection.py": ["--modes", "deny-risky", "--only", "window title: run"],
}


def fenced() -> list[tuple[str, str]]:
    """Every fenced block of the README: (language, body)."""
    return [(lang, body) for lang, body in _BLOCK.findall(README.read_text())]


def blocks(language: str) -> list[str]:
    return [body for lang, body in fenced() if lang == language]


def run_python(code: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


# -- the command lines ----------------------------------------------------------------------------


def _split(block: int, line: str) -> Command:
    words = shlex.split(line, comments=True)
    commands: list[list[str]] = [[]]
    for word in words:
        if word in ("&&", ";", "||"):
            commands.append([])
        else:
            commands[-1].append(word)
    first = commands[0]
    env = {}
    while first and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", first[0]):
        name, value = first.pop(0).split("=", 1)
        env[name] = value
    return Command(block, line, env, tuple(first), tuple(tuple(c) for c in commands[1:]))


def commands() -> list[Command]:
    found = []
    for index, body in enumerate(blocks("sh")):
        for line in body.splitlines():
            if shlex.split(line, comments=True):
                found.append(_split(index, line))
    return found


@functools.cache
def help_text(subcommand: tuple[str, ...]) -> str:
    done = subprocess.run(
        [AGENT_S, *subcommand, "--help"],
        env={**_CLEAN, "COLUMNS": "250", "NO_COLOR": "1", "TERM": "dumb"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def takes_value(subcommand: tuple[str, ...], flag: str) -> bool:
    """Whether ``flag`` takes a value, as the command's ``--help`` shows it (a metavar)."""
    for line in help_text(subcommand).splitlines():
        found = re.search(rf"(?<![\w-]){re.escape(flag)}(?:\s+--[\w-]+)?\s+(\S+)", line)
        if found:
            shown = found.group(1)
            return shown != "<bool>" and (shown.startswith("<") or shown.isupper())
    raise AssertionError(f"{flag} is not in agent-s {' '.join(subcommand)} --help")


def positional(command: Command) -> str | None:
    """The one argument of an agent-s command that is no option nor an option's value."""
    args = command.argv[1 + len(command.subcommand) :]
    found = []
    for index, arg in enumerate(args):
        before = args[index - 1] if index else ""
        if arg.startswith("-"):
            continue
        flag = before.startswith("--") and "=" not in before
        if flag and takes_value(command.subcommand, before):
            continue
        found.append(arg)
    assert len(found) <= 1, (command.line, found)
    return found[0] if found else None


_OUTPUTS = ("--results", "--record", "--annotate")  # what these name is made by the command


def _repo_paths(command: Command) -> list[str]:
    """The words of a command that name something in this repository (scripts/setup.sh,
    .venv/bin/agent-s): their first folder exists here; outputs and user folders do not."""
    found = []
    for argv in (command.argv, *command.chained):
        for before, word in zip(("", *argv), argv, strict=False):
            if "/" not in word or "://" in word or word.startswith("-") or before in _OUTPUTS:
                continue
            head = word.split("/", 1)[0]
            if head not in ("", ".", "..", "~") and (ROOT / head).exists():
                found.append(word)
    return found


@functools.cache
def _replay_blocks() -> frozenset[int]:
    """The sh blocks that replay, keep or export a run their own ``agent-s run`` line recorded."""
    subs = (("replay",), ("export",), ("workflow",))
    return frozenset(c.block for c in commands() if c.is_agent_s and c.subcommand[:1] in subs)


def kind(command: Command) -> str:
    """How a command line is covered; "" when no rule here covers it."""
    if command.block == 0:
        return "ci"  # the set-up block: .ci/run runs exactly these lines
    if command.argv[:3] == ("python3", "-m", "venv"):
        return "network"  # the folder Agent S3 is installed into, from PyPI
    if Path(command.program).name == "pip" and "install" in command.argv:
        return "network"
    if command.is_agent_s:
        sub = command.subcommand
        if sub == ("bench", "run") and command.value("--backend") == "ray":
            return "cluster"
        if sub == ("bench", "cache") or (
            sub == ("bench", "run") and command.value("--file-cache") is not None
        ):
            return "network"  # OSWorld's files come from the web (tests/test_bench_cache.py)
        if sub == ("run",) and command.value("--best-of") is not None:
            return "run best-of"
        if sub == ("run",) and command.block in _replay_blocks():
            return "run to replay"  # a terminal run recorded, then replayed (readme_runners.py)
        if sub in (("replay",), ("export",)) or sub[:1] == ("workflow",):
            return sub[0]
        if sub in (("run",), ("ground",), ("doctor",), ("bench", "check"), ("bench", "run")):
            return " ".join(sub)
        if sub == ("bench", "report"):
            return "bench report"
        if sub == ("model", "check"):
            return "model check"
        if sub in (("memory",), ("report",), ("practice",)):
            return sub[0]
        return ""
    if (
        command.program.endswith("bin/python")
        and command.argv[1:2]
        and (command.argv[1] in SMALLEST)
    ):
        return "script"
    return ""


def test_every_fenced_block_is_of_a_kind_these_tests_handle() -> None:
    languages = [lang for lang, _ in fenced()]
    assert set(languages) <= set(LANGUAGES), languages
    assert blocks("sh")
    assert len(blocks("toml")) == 1
    # a command in an output block would escape the tests: commands go in sh blocks
    for body in blocks("text"):
        for line in body.splitlines():
            assert not line.startswith(("agent-s ", ".venv/bin/", "$ ")), line


def test_every_command_line_is_covered() -> None:
    uncovered = [c.line for c in commands() if not kind(c)]
    assert not uncovered, f"README command lines with no test in tests/test_readme.py: {uncovered}"
    scripts = {c.argv[1] for c in commands() if kind(c) == "script"}
    assert scripts <= set(SMALLEST), scripts


def test_every_sh_block_is_valid_bash_with_real_flags_and_paths() -> None:
    for index, body in enumerate(blocks("sh")):
        done = subprocess.run(["bash", "-n"], input=body, text=True, capture_output=True)
        assert done.returncode == 0, (index, done.stderr)
    for command in commands():
        for path in _repo_paths(command):
            assert (ROOT / path).exists(), f"{command.line}: {path} does not exist"
        argvs = [command.argv, *command.chained]
        for argv in argvs:
            if argv and Path(argv[0]).name == "agent-s":
                sub = _split(command.block, shlex.join(argv))
                text = help_text(sub.subcommand)
                for flag in sub.flags():
                    pattern = rf"(?<![\w-]){re.escape(flag)}(?![\w-])"
                    assert re.search(pattern, text), f"{command.line}: {flag} not in --help"


def test_setup_options_and_the_ci_script_are_the_readmes() -> None:
    setup = ROOT / "scripts" / "setup.sh"
    assert subprocess.run(["bash", "-n", str(setup)], check=False).returncode == 0
    text = setup.read_text()
    for options in re.findall(r"scripts/setup\.sh((?: --[\w-]+)+)", README.read_text()):
        for option in options.split():
            assert f'"{option}"' in text, f"scripts/setup.sh has no {option} option"
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    first = [line for line in blocks("sh")[0].splitlines() if line.strip()]
    assert first
    assert all(line in ci for line in first), (first, ci)
    commands_run = [line for line in ci if line and not line.startswith(("#", "set ", "cd ", "#!"))]
    assert commands_run == first, "the CI script must run exactly the README's set-up commands"


def test_network_lines_are_well_formed() -> None:
    """``pip install`` lines name real requirements; the Agent S3 version is the one the
    benchmark scripts drive (scripts/s3_driver.py)."""
    driver = (ROOT / "scripts" / "s3_driver.py").read_text()
    for command in commands():
        if kind(command) != "network" or "install" not in command.argv:
            continue
        specs = [a for a in command.argv[command.argv.index("install") + 1 :] if a[0] != "-"]
        assert specs, command.line
        for spec in specs:
            requirement = Requirement(spec)
            if requirement.name == "gui-agents":
                version = str(requirement.specifier).removeprefix("==")
                assert version in driver, f"s3_driver.py does not drive gui-agents {version}"


# -- running the sh blocks ------------------------------------------------------------------------


def _run_line(command: Command, scene: Scene) -> None:
    """``agent-s run``: the scripted model finishes the task (through the code agent when a
    ``--check test -f PATH`` must pass); the result is the one the README describes."""
    check = command.value("--check")
    made = None
    if check is not None:
        words = shlex.split(check)
        assert words[:2] == ["test", "-f"], f"no scripted model for the check {check!r}"
        made = words[2]
        touch = f"touch {made}"
        script = [
            reply(act("agent.call_code_agent()")),
            reply(f"Create it.\n```bash\n{touch}\n```"),
            reply("Created.\nDONE"),
            reply(act('agent.done(answer="done")')),
        ]
        # the user allows exactly this code, as [[safety.rules]] lets them
        rule = f"[[safety.rules]]\neffect = 'allow'\nactions = ['run_code']\ntext = '^{touch}$'\n"
        scene.config.write_text(rule)
    else:
        script = [reply(act('agent.done(answer="done")'))]
    given = positional(command)
    with ScriptedModelServer(script) as server:
        env, argv = _model_env(command, server)
        stdin = None if given else "open the calculator\n\n"
        done = _agent_s(argv, scene, env, virtual="--virtual" in argv, stdin=stdin)
        requests = list(server.requests)
    scene.config.write_text("")
    assert done.returncode == 0, done.stdout + done.stderr
    if "--json" in argv:
        result = json.loads(done.stdout)
        assert result["status"] == "succeeded"
        if check is not None:
            assert result["postcondition"]["passed"] is True
    else:
        assert done.stdout.startswith("succeeded:"), done.stdout
    if given is None:
        assert done.stderr.count("Task (empty line to quit)") == 2, done.stderr
    first = requests[0]
    wire = "/messages" if command.value("--provider") == "anthropic" else "/chat/completions"
    assert first.path.endswith(wire), first
    assert first.model == (command.value("--model") or "gpt-4o")
    assert (given or "open the calculator") in json.dumps(first.body)
    if made is not None:  # the check passed on the run's desktop, where the file was made
        assert made.startswith("~/")
        assert not (scene.home / made[2:]).exists()


def _best_of_line(command: Command, scene: Scene) -> None:
    """``agent-s run --best-of N``: each attempt says done at once, and the judge (told apart
    by its system prompt) picks the last attempt; its HOME is the one handed back."""
    n = int(command.value("--best-of") or 0)

    def script(request: RecordedRequest) -> Step:
        if "You judge the work of an agent" in json.dumps(request.body):
            return reply(f"ATTEMPT: {n}\nREASON: its narrative shows the task done")
        return reply(act('agent.done(answer="done")'))

    with ScriptedModelServer(script) as server:
        env, argv = _model_env(command, server)
        done = _agent_s(argv, scene, env, virtual=True, timeout=400)
        judged = [r for r in server.requests if "You judge" in json.dumps(r.body)]
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("succeeded:"), done.stdout
    assert f"picked attempt {n} of {n} (comparative)" in done.stdout, done.stdout
    assert len(judged) == 1
    assert len(server.requests) == n + 1
    files = re.search(r"^files: (.+)$", done.stdout, re.MULTILINE)
    assert files, done.stdout
    assert Path(files[1]).is_dir()


def _ground_line(command: Command, scene: Scene) -> None:
    """``agent-s ground``: the element named is put on the screen, then found there."""
    expression = positional(command)
    assert expression == "the Save button", f"no scene for {expression!r}"
    # mousepad keeps its session in HOME: a fresh one, so no earlier session is offered back
    shutil.copytree(scene.desktop.home / ".config" / "gtk-3.0", scene.home / ".config" / "gtk-3.0")
    scene.apps(["mousepad"], window="mousepad", env={"HOME": str(scene.home)})
    for _ in range(4):  # a freshly mapped window may not have the keyboard yet: ask again
        scene.x11.activate("mousepad")
        scene.x11.hotkey(["ctrl", "s"])
        try:
            scene.x11.wait_for_window(lambda w: "save" in w.title.casefold(), timeout=5)
            break
        except WindowNotFoundError:
            continue
    else:
        raise AssertionError(f"mousepad showed no Save As dialog: {scene.x11.windows()}")
    done = _agent_s([AGENT_S, *command.argv[1:]], scene, {})
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"^grounder\s+a11y", done.stdout, re.MULTILINE), done.stdout
    # the result on stdout, then the annotated screenshot's line on stderr
    assert_printed(samples_after("With mousepad's Save As dialog open"), done.stdout + done.stderr)
    annotate = command.value("--annotate")
    if annotate is not None:
        with Image.open(scene.cwd / annotate) as image:
            assert image.size == (1280, 800)


def _doctor_line(command: Command, scene: Scene) -> None:
    done = _agent_s([AGENT_S, *command.argv[1:]], scene, command.env)
    assert done.returncode == 0, done.stdout + done.stderr
    names = {line.split()[1] for line in done.stdout.splitlines() if line[:4].strip()}
    assert {"display", "capture", "input", "ocr", "accessibility"} <= names, done.stdout
    assert re.search(r"^\s*ok\s+accessibility", done.stdout, re.MULTILINE), done.stdout


def _bench_line(command: Command, scene: Scene) -> None:
    """``bench check``/``run``/``report`` as written; ``--policy agent`` with a scripted model
    that says done at once (each task is then scored as OSWorld does: not solved)."""
    again = command.argv in scene.seen
    sub = command.subcommand
    if sub == ("bench", "run") and command.value("--policy") == "agent":

        def done_at_once(request: RecordedRequest) -> Step:
            return reply(act("agent.done()"))

        with ScriptedModelServer(done_at_once) as server:
            env, argv = _model_env(command, server)
            done = _agent_s(argv, scene, env, virtual=True, timeout=400)
        assert bool(server.requests) != again, "a resumed run asks the model nothing"
    else:
        done = _agent_s([AGENT_S, *command.argv[1:]], scene, command.env, virtual=True)
    assert done.returncode == 0, done.stdout + done.stderr
    if sub == ("bench", "check"):
        assert re.search(r"smoke: (\d+) of \1 tasks can run here", done.stdout), done.stdout
    elif sub == ("bench", "run"):
        n = len(load_suite("smoke"))  # the README shows the same count
        assert re.search(rf"^ overall\s+{n}\s+{n}\s", done.stdout, re.MULTILINE), done.stdout
        assert (f"resumed: skipped {n} of {n} tasks" in done.stderr) == again, done.stderr
    else:
        assert "run: " in done.stdout, done.stdout
        assert " overall " in done.stdout, done.stdout
    scene.seen.append(command.argv)


def _memory_line(command: Command, scene: Scene) -> None:
    """``agent-s memory``: what the ``agent-s run --check`` line above stored in HOME's data
    folder: a verified skill (the code that passed the check), listed, found, exported."""
    # no desktop needed: HOME alone says where the memory file is
    done = _agent_s([AGENT_S, *command.argv[1:]], scene, command.env, virtual=True)
    assert done.returncode == 0, done.stdout + done.stderr
    action = command.argv[2]  # agent-s memory ACTION ...
    if action in ("list", "search"):
        skill = re.compile(r"^\s*\d+\s+skill\s+bash: .*, verified\]", re.MULTILINE)
        assert skill.search(done.stdout), done.stdout
    elif action == "export":
        lines = (scene.cwd / command.argv[3]).read_text().splitlines()
        exported = [json.loads(line) for line in lines]
        skills = [e for e in exported if e["kind"] == "skill"]
        assert skills, exported
        assert all(e["provenance"]["verified"] and e["sha256"] for e in skills)
        assert {e["kind"] for e in exported} >= {"run", "lesson", "skill"}
    else:
        raise AssertionError(f"no check for {command.line}")


def _report_line(command: Command, scene: Scene) -> None:
    """``agent-s report RUN_DIR``: the README names one folder as ``run`` prints it; here it
    is the one the ``agent-s run`` line above recorded in HOME. The page shows each step's
    screenshot: beside the page, copied next to ``--out``, or inside it with ``--embed``."""
    given = positional(command)
    assert (given or "").startswith("~/.local/share/agent-s/runs/run-"), command.line
    made = sorted((scene.home / ".local/share/agent-s/runs").glob("run-*"))
    assert made, f"no agent-s run line above {command.line} recorded a run"
    folder = made[-1]
    argv = [AGENT_S, *(str(folder) if a == given else a for a in command.argv[1:])]
    done = _agent_s(argv, scene, command.env, virtual=True)
    assert done.returncode == 0, done.stdout + done.stderr
    out = command.value("--out")
    page = scene.cwd / out if out else folder / "report.html"
    assert (scene.cwd / done.stdout.strip()).resolve() == page.resolve(), done.stdout
    html = page.read_text()
    shots = [s.screenshot for s in load_trajectory(folder).steps if s.screenshot]
    assert shots
    sources = re.findall(r'<img[^>]* src="([^"]+)"', html)
    if "--embed" in argv:
        embedded = [s for s in sources if s.startswith("data:image/png;base64,")]
        assert len(embedded) >= len(shots), sources
        picture = Image.open(io.BytesIO(base64.b64decode(embedded[0].split(",", 1)[1])))
        with Image.open(folder / str(shots[0])) as first:
            assert picture.convert("RGB").tobytes() == first.convert("RGB").tobytes()
        return
    for shot in shots:  # each step's screenshot, byte for byte, where the page looks for it
        name = Path(str(shot)).name
        found = [s for s in sources if Path(s).name == name]
        assert found, (name, sources)
        assert (page.parent / found[0]).read_bytes() == (folder / str(shot)).read_bytes()


def _practice_line(command: Command, scene: Scene) -> None:
    """``agent-s practice xterm --tasks 3``: the scripted model proposes a task whose check
    already passes (rejected on the untouched desktop), one the agent does (its check passes:
    a verified skill) and one it gives up on (unverified lessons, no skill)."""
    assert (positional(command), command.value("--tasks")) == ("xterm", "3"), command.line
    hello = "In the terminal, create the file ~/hello.txt holding the single line hello"
    typed = "echo hello > ~/hello.txt"
    bye = "In the terminal, create the file ~/bye.txt holding the single line bye"

    def proposal(task: str, check: dict[str, Any], difficulty: int) -> Step:
        body = {"task": task, "difficulty": difficulty, "check": check}
        return reply("A task.\n```json\n" + json.dumps(body) + "\n```")

    script = [
        proposal("Check that the home folder exists and say so", {"argv": ["test", "-d", "~"]}, 1),
        proposal(hello, {"argv": ["grep", "-qx", "hello", "~/hello.txt"]}, 2),
        reply(act(f'agent.type(text="{typed}", enter=True)')),
        reply(act("agent.done()")),
        proposal(bye, {"bash": 'test "$(cat ~/bye.txt)" = bye'}, 2),
        reply(act('agent.fail(reason="the terminal does not answer")')),
    ]
    with ScriptedModelServer(script) as server:
        env, argv = _model_env(command, server)
        done = _agent_s(argv, scene, env, virtual=True, timeout=600)
        asked = len(server.requests)
    assert done.returncode == 0, done.stdout + done.stderr
    assert asked == len(script)
    out = done.stdout
    assert_printed(samples_after("`practice-<time>` folder beside the runs"), out)
    assert out.startswith("practice xterm (xterm): tasks: all 3 tasks were proposed"), out
    assert "3 proposed, 1 rejected (0 with no usable proposal), 2 attempted, 1 passed" in out
    statuses = re.findall(r"^ +\d+ (\w+) ", out, re.MULTILINE)  # a line per task
    assert statuses == ["rejected", "passed", "failed"], out
    learned = re.search(r"^learned: skills ([\d, ]+); lessons ([\d, ]+)$", out, re.MULTILINE)
    assert learned, out
    data, key = scene.home / ".local/share/agent-s", scene.home / ".config/agent-s/memory.key"
    with MemoryStore(data / "memory.sqlite3", key=key) as store:  # the user's file and key
        entries = {e.id: e for e in store.entries()}
    skills = [e for e in entries.values() if isinstance(e.body, Skill)]
    assert [str(e.id) for e in skills] == learned[1].split(", ")
    (skill,) = skills
    # the model wrote the check: what it passed is kept as model-checked, never as verified
    assert (skill.provenance.checked_by, skill.provenance.task) == ("model-check", hello)
    assert isinstance(skill.body, Skill)
    assert skill.body.actions == (f"agent.type(text='{typed}', enter=True)",)
    lessons = [entries[int(i)] for i in learned[2].split(", ")]
    assert {e.provenance.task: e.provenance.checked_by for e in lessons} == {
        hello: "model-check",
        bye: "none",
    }


def _model_check_line(command: Command, scene: Scene) -> None:
    """``agent-s model check``: the scripted model answers the battery as a Qwen2.5-VL would
    (its computer_use tool calls, points in its resized frame); the report is the sample and
    the profile is saved where `run` reads it."""
    with ScriptedModelServer(battery_script(style="qwen-vl", convention="smart_resize")) as server:
        env, argv = _model_env(command, server)
        done = _agent_s(argv, scene, env, virtual=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert_printed(samples_after("Against a Qwen2.5-VL served by Ollama"), done.stdout)
    profiles = load_settings(path=scene.config, environ={}).build_profiles()
    saved = profiles.resolve(command.value("--model") or "", "openai_compatible")
    assert saved.point_convention == "smart_resize"


def _script_line(command: Command, scene: Scene) -> None:
    argv = [sys.executable, str(ROOT / command.argv[1]), *SMALLEST[command.argv[1]]]
    env = {**_CLEAN, "HOME": str(scene.home)}
    done = subprocess.run(
        argv, cwd=scene.cwd, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip(), f"{command.line} printed no figures"


RUNNERS: dict[str, Callable[[Command, Scene], None]] = {
    "run": _run_line,
    "run best-of": _best_of_line,
    "ground": _ground_line,
    "doctor": _doctor_line,
    "bench check": _bench_line,
    "bench run": _bench_line,
    "bench report": _bench_line,
    "script": _script_line,
    "memory": _memory_line,
    "report": _report_line,
    "practice": _practice_line,
    "run to replay": recorded_run_line,
    "replay": replay_line,
    "workflow": workflow_line,
    "export": export_line,
    "model check": _model_check_line,
}
# Checked above, not run here: what CI runs itself, what needs the network or a Ray cluster.
CHECKED_ONLY = ("ci", "network", "cluster")


def _runnable_blocks() -> Iterator[Any]:
    """The sh blocks with a line to run here (the others are checked above)."""
    for index, body in enumerate(blocks("sh")):
        if any(kind(c) not in CHECKED_ONLY for c in commands() if c.block == index):
            first = body.strip().splitlines()[0][:50]
            yield pytest.param(index, id=f"sh{index}:{first}")


@pytest.mark.parametrize("index", list(_runnable_blocks()))
def test_the_sh_block_runs(index: int, tmp_path: Path, desktop: Any, apps: Any, x11: Any) -> None:
    (home := tmp_path / "home").mkdir()
    (cwd := tmp_path / "cwd").mkdir()
    (config := tmp_path / "config.toml").write_text("")
    scene = Scene(cwd, home, config, desktop, apps, x11)
    for command in commands():
        if command.block == index and kind(command) not in CHECKED_ONLY:
            RUNNERS[kind(command)](command, scene)


# -- the configuration file and the Python examples -----------------------------------------------


def test_the_configuration_example_is_read_as_documented(tmp_path: Path) -> None:
    (config := tmp_path / "config.toml").write_text(blocks("toml")[0])
    settings = load_settings(environ={"AGENT_S_CONFIG": str(config)})
    assert settings.model.name == "gpt-4o"
    assert settings.model.timeout == 90
    assert settings.grounding.mode == "auto"
    assert settings.limits.max_cost == 0.5
    assert settings.run.record_dir == Path("~/agent-s-runs").expanduser()
    assert settings.safety.mode == "confirm"
    assert settings.safety.allow_apps == ("galculator", "mousepad")
    assert settings.safety.rules[0].effect == "deny"
    assert settings.code_agent.sandbox == "bwrap"
    assert settings.secrets.env == ("DB_PASSWORD",)
    assert (settings.plan.mode, settings.plan.max_replans) == ("auto", 2)
    assert settings.profiles["my-vlm*"]["input_price"] == 0.2
    # precedence: file < variable < flag
    env = {"AGENT_S_CONFIG": str(config), "AGENT_S_MAX_COST": "0.25"}
    assert load_settings(environ=env).limits.max_cost == 0.25
    flags = {"limits": {"max_cost": 0.1}}
    assert load_settings(flags, environ=env).limits.max_cost == 0.1
    # every table of the settings is in the example and in the README's table of keys
    text = README.read_text()
    tables = ("model", "grounding", "limits", "run", "plan", "safety", "code_agent", "secrets")
    for table in tables:
        assert f"[{table}]" in blocks("toml")[0], table
        assert f"| `[{table}]` |" in text, table


_PYTHON = {
    "sdk": "agent.run(",
    "compat": "AgentS3(",
    "actions": "parse_action(",
    "desktop": "VirtualDesktop(",
    "workflow": "Workflow.load(",
}


def python_example(name: str) -> str:
    found = [body for body in blocks("python") if _PYTHON[name] in body]
    assert len(found) == 1, (name, len(found))
    return found[0]


def test_every_python_example_has_a_test() -> None:
    for body in blocks("python"):
        assert sum(marker in body for marker in _PYTHON.values()) == 1, body


def test_the_actions_example_runs(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "XAUTHORITY")}
    done = run_python(python_example("actions"), tmp_path, env)
    assert done.returncode == 0, done.stderr


def test_the_virtual_desktop_example_runs_an_agent_there(tmp_path: Path) -> None:
    """No screen at all (DISPLAY unset): the agent works on the example's own desktop, and its
    typing reaches mousepad there (its title marks the document changed)."""
    script = [reply(act('agent.type(text="hello")')), reply(act("agent.done()"))]
    session = ("DISPLAY", "XAUTHORITY", "WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS")
    (tmp_path / "empty.toml").write_text("")
    with ScriptedModelServer(script) as server:
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("AGENT_S_")},
            "HOME": str(tmp_path),
            "OPENAI_API_KEY": "sk-readme-example",
            "AGENT_S_BASE_URL": server.openai_base_url,
            "AGENT_S_CONFIG": str(tmp_path / "empty.toml"),
        }
        for name in session:
            env.pop(name, None)
        done = run_python(python_example("desktop"), tmp_path, env)
        requests = list(server.requests)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("RunStatus.SUCCEEDED"), done.stdout
    assert len(requests) == 2
    told = json.dumps(requests[1].body)
    assert "*Untitled 1 - Mousepad" in told, told[-3000:]  # mousepad's title: its text changed


def _sdk_env(
    tmp_path: Path, desktop: Any, server: ScriptedModelServer, home: Path
) -> dict[str, str]:
    (tmp_path / "empty.toml").write_text("")
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith("AGENT_S_")},
        **desktop.env,
        "HOME": str(home),
        "OPENAI_API_KEY": "sk-readme-example",
        "AGENT_S_BASE_URL": server.openai_base_url,
        "AGENT_S_CONFIG": str(tmp_path / "empty.toml"),
    }


def test_the_sdk_example_does_its_task(tmp_path: Path, desktop: Any) -> None:
    """ "rename every .jpeg in ~/Pictures to .jpg": the scripted model hands it to the code agent,
    whose code really runs (the SDK's safety mode is auto)."""
    home = tmp_path / "home"
    (pictures := home / "Pictures").mkdir(parents=True)
    for name in ("a.jpeg", "b.jpeg", "keep.png"):
        (pictures / name).write_bytes(b"x")
    rename = 'cd ~/Pictures && for f in *.jpeg; do mv -- "$f" "${f%.jpeg}.jpg"; done'
    script = [
        reply("I hand this to the code agent.\n```python\nagent.call_code_agent()\n```"),
        reply(f"Rename them.\n```bash\n{rename}\n```"),
        reply("Renamed the two .jpeg files.\nDONE"),
        reply("All renamed.\n```python\nagent.done()\n```"),
    ]
    with ScriptedModelServer(script) as server:
        env = _sdk_env(tmp_path, desktop, server, home)
        done = run_python(python_example("sdk"), tmp_path, env)
    assert done.returncode == 0, done.stderr
    assert "succeeded" in done.stdout.lower(), done.stdout
    assert sorted(p.name for p in pictures.iterdir()) == ["a.jpg", "b.jpg", "keep.png"]
    assert (tmp_path / "runs").is_dir()  # record_dir=Path("runs"), as the example says


def test_the_compat_example_returns_pyautogui_code(tmp_path: Path, desktop: Any) -> None:
    """``predict(instruction, observation)``: one step on the screenshot given, nothing
    executed here, the action as pyautogui code for the runner."""
    buffer = io.BytesIO()
    Image.new("RGB", (1280, 800), "white").save(buffer, "PNG")
    (tmp_path / "screen.png").write_bytes(buffer.getvalue())
    script = [reply(act('agent.hotkey(["ctrl", "s"])'))]
    with ScriptedModelServer(script) as server:
        env = _sdk_env(tmp_path, desktop, server, tmp_path)
        done = run_python(python_example("compat"), tmp_path, env)
        (request,) = server.requests
    assert done.returncode == 0, done.stderr
    actions = ast.literal_eval(done.stdout.strip())  # the example prints the list
    assert actions == ["import pyautogui\npyautogui.hotkey('ctrl', 's')"], actions
    assert "save the document" in json.dumps(request.body)


def test_the_workflow_example_runs_it_with_new_values(
    tmp_path: Path, desktop: Any, apps: Any, x11: Any
) -> None:
    (home := tmp_path / "home").mkdir()
    (cwd := tmp_path / "cwd").mkdir()
    (config := tmp_path / "config.toml").write_text("")
    scene = Scene(cwd, home, config, desktop, apps, x11)
    for command in commands():  # the run recorded and saved as the sh block above it does
        if kind(command) == "run to replay" or command.subcommand == ("workflow", "save"):
            RUNNERS[kind(command)](command, scene)
    workflow_example(python_example("workflow"), scene)
