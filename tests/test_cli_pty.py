"""``agent-s run`` as a person at a terminal sees it: the installed command in a real
pseudo-terminal (pexpect), a scripted model server and a real desktop.

The task prompt (a typed task runs; an empty answer, end of input or Ctrl-C each end it with one
line), the approval prompt (y / n / always, the marked screen crop it names, the refusal the run
records), Ctrl-C during a ``--virtual`` run (130, ``cancelled`` in result.json, nothing of the
run left running), ``NO_COLOR``, and which stream carries what: progress and prompts on stderr,
only the result on stdout (``--json``: one JSON object per run, one line each).
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pexpect
import psutil
import pytest
from clean_env import clean_env
from PIL import Image
from scripted_cli import key_file, run_options

from agent_s.desktop.virtual import marked_processes
from agent_s.record.trajectory import load_trajectory
from agent_s.testing.scripted_replies import reply
from agent_s.testing.scripted_server import ScriptedModelServer

pytestmark = pytest.mark.desktop

AGENT_S = str(Path(sys.executable).parent / "agent-s")
PROMPT = "Task (empty line to quit): "
ASK = "Allow it? [y]es / [n]o / [a]lways for this run: "
ANSI = "\x1b["
ESCAPES = re.compile(
    r"\x1b(\[[0-9;?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[()][0-9A-Za-z]|[=>])"
)
XTERM = ["xterm", "-fa", "DejaVu Sans Mono", "-fs", "11", "-geometry", "90x16+60+60"]


def act(code: str) -> str:
    return f"The window has focus.\n```python\n{code}\n```"


def environment(tmp_path: Path, desktop: Any = None, **extra: str) -> dict[str, str]:
    """The user's environment: no AGENT_S_* settings, an empty config file, a colour terminal."""
    env = clean_env("NO_COLOR", "FORCE_COLOR", "COLUMNS")
    config = tmp_path / "config.toml"
    config.write_text("")
    env.update(AGENT_S_CONFIG=str(config), TERM="xterm-256color")
    if desktop is not None:
        env.update(desktop.env)
    env.update(extra)
    return env


def model_args(server: ScriptedModelServer, tmp_path: Path) -> list[str]:
    key = key_file(tmp_path, "sk-pty-SECRET")
    return run_options(server.openai_base_url, tmp_path / "runs", key=key)


class Terminal:
    """``agent-s`` in a pseudo-terminal of 50x250. ``seen``: everything it showed there, escape
    codes and all; ``plain``: the same without them, as a person reads it."""

    def __init__(self, argv: list[str], env: dict[str, str], timeout: float = 60) -> None:
        self.child = pexpect.spawn(
            argv[0],
            argv[1:],
            env=env,
            encoding="utf-8",
            codec_errors="replace",
            timeout=timeout,
            dimensions=(50, 250),
        )
        self.log = io.StringIO()
        self.child.logfile_read = self.log
        self.read_to = 0  # in ``plain``: where the last expected text ended

    @property
    def seen(self) -> str:
        return self.log.getvalue()

    @property
    def plain(self) -> str:
        return ESCAPES.sub("", self.seen).replace("\r\n", "\n")

    def expect(self, text: str, timeout: float | None = None) -> None:
        """Wait until the terminal shows ``text`` (after what was expected before)."""
        deadline = time.monotonic() + (timeout or self.child.timeout)
        while True:
            at = self.plain.find(text, self.read_to)
            if at >= 0:
                self.read_to = at + len(text)
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"never showed {text!r}; it showed:\n{self.plain}")
            try:
                self.child.read_nonblocking(4096, timeout=0.2)
            except pexpect.TIMEOUT:
                continue
            except pexpect.EOF:
                if self.plain.find(text, self.read_to) < 0:
                    raise AssertionError(
                        f"ended without showing {text!r}; it showed:\n{self.plain}"
                    ) from None

    def answer(self, line: str) -> None:
        self.child.sendline(line)

    def finish(self, timeout: float = 60) -> int:
        """Wait for the end; its exit code (128 + N for a signal)."""
        self.child.expect(pexpect.EOF, timeout=timeout)
        self.child.close()
        if self.child.signalstatus is not None:
            return 128 + int(self.child.signalstatus)
        assert self.child.exitstatus is not None
        return int(self.child.exitstatus)


def no_traceback(text: str) -> None:
    assert "Traceback" not in text, text


def wait_for(predicate: Callable[[], Any], timeout: float = 10.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.05)


def results(tmp_path: Path) -> list[dict[str, Any]]:
    found = sorted((tmp_path / "runs").glob("*/result.json"))
    return [json.loads(path.read_text()) for path in found]


# -- the task prompt ---------------------------------------------------------------------------


def test_without_a_task_it_asks_for_one_and_runs_it(tmp_path: Path, desktop: Any) -> None:
    script = [reply(act('agent.done(answer="hi")')), reply(act("agent.done()"))]
    with ScriptedModelServer(script) as server:
        term = Terminal([AGENT_S, *model_args(server, tmp_path)], environment(tmp_path, desktop))
        term.expect(PROMPT)
        term.answer("Say hi to the user")
        term.expect("succeeded")
        term.expect(PROMPT)  # asked again after each run
        term.answer("Now finish")
        term.expect(PROMPT)
        term.answer("")
        code = term.finish()
        tasks = [json.dumps(r.body) for r in server.requests]
    no_traceback(term.plain)
    assert code == 0, term.plain
    assert "Say hi to the user" in tasks[0]
    assert "Now finish" in tasks[1]
    done = results(tmp_path)
    assert sorted(r["status"] for r in done) == ["succeeded", "succeeded"]
    assert "answer: hi" in term.plain
    assert "no task given" not in term.plain  # quitting after a run is not a mistake


@pytest.mark.parametrize("how", ["empty line", "end of input", "ctrl-c"])
def test_no_answer_at_the_prompt_ends_with_one_line(how: str, tmp_path: Path, desktop: Any) -> None:
    with ScriptedModelServer([]) as server:  # no request may reach the model
        term = Terminal([AGENT_S, *model_args(server, tmp_path)], environment(tmp_path, desktop))
        term.expect(PROMPT)
        before = term.read_to
        if how == "empty line":
            term.answer("   ")
        elif how == "end of input":
            term.child.sendeof()
        else:
            term.child.sendintr()
        code = term.finish()
    after = term.plain[before:]
    no_traceback(term.plain)
    lines = [line.strip() for line in after.splitlines() if line.strip()]
    if how == "ctrl-c":
        assert code == 130, term.plain
        assert lines[-1] == "interrupted", lines
    else:
        assert code == 0, term.plain
        assert lines == [
            "no task given, nothing done: type one at the prompt, or give it on the command "
            'line: agent-s run "TASK"'
        ], after
    assert results(tmp_path) == []


# -- the model's questions (agent.ask_user) -----------------------------------------------------


def test_a_question_is_asked_at_the_terminal_and_the_answer_reaches_the_model(
    tmp_path: Path, desktop: Any
) -> None:
    script = [
        reply(act('agent.ask_user("Which report, March or April?")')),
        reply(act('agent.done(answer="April")')),
    ]
    with ScriptedModelServer(script) as server:
        argv = [AGENT_S, *model_args(server, tmp_path), "Open the report"]
        term = Terminal(argv, environment(tmp_path, desktop))
        term.expect("the agent asks: Which report, March or April?")
        term.expect("Your answer (empty line: no answer, the run stops): ")
        term.answer("April, the newer one")
        term.expect("succeeded")
        code = term.finish()
        second = json.dumps(server.requests[1].body)
    no_traceback(term.plain)
    assert code == 0, term.plain
    assert "the user answered: April, the newer one" in second
    assert [r["status"] for r in results(tmp_path)] == ["succeeded"]


@pytest.mark.parametrize("how", ["empty line", "end of input", "no terminal"])
def test_an_unanswered_question_ends_the_run_needing_input(
    how: str, tmp_path: Path, desktop: Any
) -> None:
    question = "Delete both files named March, or only the older one?"
    script = [reply(act(f"agent.ask_user({question!r})"))]  # and nothing after: no guess
    with ScriptedModelServer(script) as server:
        argv = [*model_args(server, tmp_path), "Delete the March file"]
        if how == "no terminal":
            done = subprocess.run(
                [AGENT_S, *argv],
                env=environment(tmp_path, desktop),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
            code, shown, stdout = done.returncode, done.stderr + done.stdout, done.stdout
        else:
            term = Terminal([AGENT_S, *argv], environment(tmp_path, desktop))
            term.expect("Your answer")
            if how == "empty line":
                term.answer("")
            else:
                term.child.sendeof()
            code = term.finish()
            shown = stdout = term.plain
    no_traceback(shown)
    assert code == 4, shown
    assert "needs_input:" in stdout
    assert f"question: {question}" in stdout
    [result] = results(tmp_path)
    assert (result["status"], result["cause"], result["question"]) == (
        "needs_input",
        "needs_input",
        question,
    )


# -- the approval prompt -----------------------------------------------------------------------


def _type(text: str) -> str:
    return act(f"agent.type(text={text!r}, enter=True)")


def test_approval_prompt_yes_no_always(apps: Any, x11: Any, tmp_path: Path, desktop: Any) -> None:
    apps([*XTERM, "-title", "agent-sh", "-e", "sh"], window="agent-sh", cwd=tmp_path)
    x11.activate("agent-sh")
    out = tmp_path / "out.txt"
    script = [
        reply(_type("echo one >> out.txt")),  # asked: y (once)
        reply(_type("echo two >> out.txt")),  # asked again: n
        reply(_type("echo three >> out.txt")),  # asked: a (always for this run)
        reply(_type("echo four >> out.txt")),  # the same risk: not asked
        reply(act("agent.done()")),
    ]
    with ScriptedModelServer(script) as server:
        args = [*model_args(server, tmp_path), "Write out.txt"]
        term = Terminal([AGENT_S, *args], environment(tmp_path, desktop))
        term.expect(ASK)
        term.answer("maybe")
        term.expect("Please answer y, n or a.")
        term.expect(ASK)
        term.answer("y")
        term.expect(ASK)
        term.answer("n")
        term.expect(ASK)
        term.answer("a")
        term.expect("succeeded")
        code = term.finish()
        told = json.dumps(server.requests[2].body)
    no_traceback(term.plain)
    assert code == 0, term.plain
    assert wait_for(lambda: out.exists() and out.read_text() == "one\nthree\nfour\n"), (
        out.read_text() if out.exists() else "no out.txt"
    )
    # what the user was shown: three approvals, each with the exact text and a marked crop
    assert term.plain.count("Approval needed") == 3, term.plain
    assert term.plain.count(ASK) == 4  # one repeated after "maybe"
    assert term.plain.count("types into a terminal (XTerm)") == 3
    for word in ("one", "two", "three"):
        assert f"echo {word} >> out.txt" in term.plain
    shown = re.findall(r"screen, target marked: (\S+\.png)", term.plain)
    (folder,) = (Path(r["trajectory_dir"]) for r in results(tmp_path))
    assert [Path(p) for p in shown] == [folder / f"step_00{n}_approval.png" for n in (1, 2, 3)]
    for path in shown:
        crop = Image.open(path).convert("RGB")
        assert crop.getpixel((9, crop.size[1] // 2)) == (255, 0, 0)  # the terminal's outline
    # what the run recorded
    steps = load_trajectory(folder).steps
    safety = [s.safety or {} for s in steps[:4]]
    assert [s.get("allowed") for s in safety] == [True, False, True, True]
    assert [s.get("decided_by") for s in safety] == [
        "approver",
        "approver",
        "approver (always for this run from now)",
        "approver (always for this run)",
    ]
    assert str(safety[1].get("approver", "")).endswith("(cli)")
    assert steps[1].executed == ()
    assert "Refused: this action was not carried out" in steps[1].detail
    assert "refused" in told  # the model heard of it


@pytest.mark.parametrize("how", ["end of input", "ctrl-c"])
def test_no_answer_at_the_approval_prompt_types_nothing(
    how: str, apps: Any, x11: Any, tmp_path: Path, desktop: Any
) -> None:
    apps([*XTERM, "-title", "agent-sh", "-e", "sh"], window="agent-sh", cwd=tmp_path)
    x11.activate("agent-sh")
    out = tmp_path / "out.txt"
    script = [reply(_type("echo one >> out.txt"))]
    if how == "end of input":  # refused: the model hears of it and ends the task
        script.append(reply(act('agent.fail(reason="not allowed")')))
    with ScriptedModelServer(script) as server:
        args = [*model_args(server, tmp_path), "Write out.txt"]
        term = Terminal([AGENT_S, *args], environment(tmp_path, desktop))
        term.expect(ASK)
        if how == "end of input":
            term.child.sendeof()
            term.expect("no answer (end of input): refused")
        else:
            term.child.sendintr()
        code = term.finish()
    no_traceback(term.plain)
    (result,) = results(tmp_path)
    step = load_trajectory(Path(result["trajectory_dir"])).steps[0]
    assert step.executed == ()
    time.sleep(0.5)  # had anything been typed, the shell would have written the file by now
    assert not out.exists()
    if how == "end of input":
        assert (code, result["status"]) == (1, "failed"), term.plain
        assert step.safety is not None
        assert step.safety["allowed"] is False
    else:
        assert (code, result["status"]) == (130, "cancelled"), term.plain
        assert "cancelled" in term.plain


def test_model_text_cannot_drive_the_terminal(tmp_path: Path, desktop: Any) -> None:
    """Escape sequences, a bell, a carriage return, a bidi override and a zero-width space in
    what the model asks to type and in its answer are shown written out, never sent to the
    terminal as they are (typed text may hold no escape or bell: the parser refuses those)."""
    typed = r"echo hi\u202eevil\rX\u200bY"  # as the model writes them
    answer = r"done\x1b]0;pwned\x07\x1b[2J\x1b[1A\u202eevil\rend"
    script = [
        reply(act(f'agent.type(text="{typed}")')),  # confirm-all asks: refused
        reply(act(f'agent.done(answer="{answer}")')),
    ]
    with ScriptedModelServer(script) as server:
        args = [*model_args(server, tmp_path), "--safety", "confirm-all", "Say hi"]
        term = Terminal([AGENT_S, *args], environment(tmp_path, desktop))
        term.expect(ASK)
        term.answer("n")
        code = term.finish()
    no_traceback(term.plain)
    assert code == 0, term.plain
    (result,) = results(tmp_path)
    assert result["answer"] == "done\x1b]0;pwned\x07\x1b[2J\x1b[1A\u202eevil\rend"  # kept as given
    for raw in ("\x1b]0;", "\x07", "\x1b[2J", "\x1b[1A", "\u202e", "\u200b", "evil\r"):
        assert raw not in term.seen, (raw, term.seen)
    assert "echo hi<U+202E>evil␍X<U+200B>Y" in term.plain  # the text to type, as shown
    assert "answer: done␛]0;pwned␇␛[2J␛[1A<U+202E>evil␍end" in term.plain


# -- Ctrl-C during a run -----------------------------------------------------------------------


def _waiting(request: Any) -> Any:
    return reply(act("agent.wait(0.3)"))


def _desktop_state(state: Path) -> dict[str, Any] | None:
    for path in state.glob("*/*.json"):
        data = json.loads(path.read_text() or "{}")
        if data.get("token"):
            return dict(data)
    return None


def _processes_of(token: str, display: str) -> list[str]:
    """What still runs of that desktop: its marked processes (the apps on it, its session
    services), its X server, its watchdog; each as "pid command line"."""
    marked = set(marked_processes(token))
    left = []
    for proc in psutil.process_iter(["pid", "cmdline", "status"]):
        cmdline = proc.info["cmdline"] or []
        if proc.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        server = bool(cmdline) and "Xvfb" in cmdline[0] and display in cmdline
        if proc.info["pid"] in marked or server or any(token in part for part in cmdline):
            left.append(f"{proc.info['pid']} {' '.join(cmdline)}")
    return left


def test_ctrl_c_during_a_virtual_run_cancels_it_and_ends_everything(tmp_path: Path) -> None:
    state = tmp_path / "state"
    opened: list[bool] = []

    def scripted(request: Any) -> Any:  # open a terminal, then wait step after step
        if not opened:
            opened.append(True)
            return reply(act('agent.open("xterm")'))
        return _waiting(request)

    env = environment(tmp_path, AGENT_S_STATE_DIR=str(state))
    with ScriptedModelServer(scripted) as server:
        args = [*model_args(server, tmp_path), "--virtual", "--safety", "auto", "Wait forever"]
        term = Terminal([AGENT_S, *args], env, timeout=90)
        term.expect("virtual desktop :")
        desk = wait_for(lambda: _desktop_state(state))
        assert desk, term.plain
        token, display = desk["token"], desk["display"]
        # the xterm it opened is up and the run goes on waiting
        assert wait_for(lambda: any("xterm" in p for p in _processes_of(token, display)), 30)
        term.expect("agent.wait", timeout=60)
        term.child.sendintr()  # the terminal's Ctrl-C: SIGINT to the foreground process group
        code = term.finish(timeout=60)
    no_traceback(term.plain)
    assert code == 130, term.plain
    (result,) = results(tmp_path)
    assert result["status"] == "cancelled"
    lines = term.plain.splitlines()
    assert any(line.startswith("cancelled: interrupted") for line in lines), term.plain
    assert _processes_of(token, display) == []  # nothing of the run is left, at once
    assert _desktop_state(state) is None  # and nothing is left for the next start to sweep


# -- colour and streams ------------------------------------------------------------------------


@pytest.mark.parametrize("no_color", [False, True])
def test_no_color_means_no_escape_codes(no_color: bool, tmp_path: Path, desktop: Any) -> None:
    script = [reply(act("agent.wait(0.01)")), reply(act('agent.done(answer="ok")'))]
    extra = {"NO_COLOR": "1"} if no_color else {}
    with ScriptedModelServer(script) as server:
        env = environment(tmp_path, desktop, **extra)
        term = Terminal([AGENT_S, *model_args(server, tmp_path)], env)
        term.expect(PROMPT)
        term.answer("Wait a moment")
        term.expect("succeeded")
        term.expect(PROMPT)
        term.answer("")
        assert term.finish() == 0, term.plain
    no_traceback(term.plain)
    if no_color:
        assert ANSI not in term.seen, repr(term.seen)
    else:  # the same run in colour: the check above can see escape codes
        assert ANSI in term.seen


def _bench_suite(root: Path) -> Path:
    """One task that runs (and fails under --policy noop)."""
    folder = root / "suite" / "examples" / "os"
    folder.mkdir(parents=True)
    echo = {"type": "vm_command_line", "command": ["echo", "hi"]}
    task = {
        "id": "echo",
        "instruction": "say hi",
        "config": [],
        "evaluator": {
            "func": "exact_match",
            "result": echo,
            "expected": {"type": "rule", "rules": {"expected": "bye\n"}},
        },
    }
    (folder / "echo.json").write_text(json.dumps(task))
    index = root / "suite" / "test_all.json"
    index.write_text(json.dumps({"os": ["echo"]}))
    return index


@pytest.mark.parametrize("command", ["bench run", "bench check", "doctor", "ground", "help"])
def test_no_color_holds_for_every_command(command: str, tmp_path: Path, desktop: Any) -> None:
    picture = tmp_path / "screen.png"
    Image.new("RGB", (200, 100), "white").save(picture)
    index = _bench_suite(tmp_path)
    args = {
        "bench run": ["bench", "run", str(index), "--policy", "noop", "--results", str(tmp_path)],
        "bench check": ["bench", "check", str(index)],
        "doctor": ["doctor", "--timeout", "1"],
        "ground": ["ground", "(10, 20)", "--image", str(picture), "--ground", "native"],
        "help": ["run", "--help"],
    }[command]
    seen = {}
    for no_color in (False, True):
        extra = {"NO_COLOR": "1"} if no_color else {}
        term = Terminal([AGENT_S, *args], environment(tmp_path, desktop, **extra), timeout=120)
        term.finish(timeout=120)
        no_traceback(term.plain)
        seen[no_color] = term.seen
    assert ANSI not in seen[True], repr(seen[True])
    assert seen[True].strip()
    if command not in ("help", "ground"):  # plain text either way; the others are coloured
        assert ANSI in seen[False]


def _split_streams(
    args: list[str], env: dict[str, str], tmp_path: Path, terminal: bool
) -> tuple[int, str, str]:
    """(exit code, stdout, everything else the user saw): stdout to a file, stdin and stderr a
    terminal (``agent-s run ... > file`` typed at a terminal), or everything piped."""
    stdout = tmp_path / "stdout.txt"
    if not terminal:
        done = subprocess.run(
            [AGENT_S, *args], env=env, capture_output=True, text=True, timeout=120, check=False
        )
        return done.returncode, done.stdout, done.stderr
    # a constant shell script: the file and the command are its arguments, never its text
    wrapper = ["/bin/sh", "-c", 'out=$1; shift; exec "$@" > "$out"', "sh", str(stdout)]
    term = Terminal([*wrapper, AGENT_S, *args], env)
    code = term.finish(timeout=120)
    return code, stdout.read_text(), term.plain


@pytest.mark.parametrize("terminal", [True, False], ids=["terminal", "piped"])
@pytest.mark.parametrize("as_json", [True, False], ids=["json", "text"])
def test_stdout_holds_only_the_result(
    as_json: bool, terminal: bool, tmp_path: Path, desktop: Any
) -> None:
    script = [reply(act("agent.wait(0.01)")), reply(act('agent.done(answer="forty-two")'))]
    with ScriptedModelServer(script) as server:
        args = [*model_args(server, tmp_path), *(["--json"] if as_json else []), "Count"]
        code, stdout, stderr = _split_streams(
            args, environment(tmp_path, desktop), tmp_path, terminal
        )
    no_traceback(stdout + stderr)
    assert code == 0, stderr
    assert ANSI not in stdout  # a file or a pipe gets no colour
    (result,) = results(tmp_path)
    # progress went to stderr: the task line and each step
    assert "task: Count" in stderr
    assert "agent.wait(seconds=0.01)" in stderr
    assert "agent.wait" not in stdout
    if as_json:
        lines = stdout.splitlines()
        assert len(lines) == 1, stdout  # one run, one line of JSON, nothing else
        data = json.loads(lines[0])
        assert data["status"] == "succeeded"
        assert data["answer"] == "forty-two"
        assert data["trajectory_dir"] == result["trajectory_dir"]
        assert '"status"' not in stderr
        return
    lines = stdout.splitlines()
    assert lines[0].startswith("succeeded: ")
    assert lines[1] == "answer: forty-two"
    assert lines[2].startswith("not verified: the model said done; add --check")  # honest
    assert re.fullmatch(r"2 steps, 2 model calls, \d+ tokens, \$\d+\.\d{4}, [\d.]+ s", lines[3])
    assert lines[4] == f"trajectory: {result['trajectory_dir']}"
    assert len(lines) == 5, stdout
    assert "answer: forty-two" not in stderr


def test_json_for_tasks_typed_at_the_prompt_is_one_line_per_run(
    tmp_path: Path, desktop: Any
) -> None:
    script = [reply(act('agent.done(answer="one")')), reply(act('agent.fail(reason="two")'))]
    stdout = tmp_path / "stdout.txt"
    with ScriptedModelServer(script) as server:
        wrapper = ["/bin/sh", "-c", 'out=$1; shift; exec "$@" > "$out"', "sh", str(stdout)]
        args = [*model_args(server, tmp_path), "--json"]
        term = Terminal([*wrapper, AGENT_S, *args], environment(tmp_path, desktop))
        for task in ("First task", "Second task"):
            term.expect(PROMPT)
            term.answer(task)
        term.expect(PROMPT)
        term.answer("")
        code = term.finish()
    no_traceback(term.plain)
    assert code == 1, term.plain  # the exit code of the last run: failed
    runs = [json.loads(line) for line in stdout.read_text().splitlines()]
    assert [(r["status"], r["answer"] or r["reason"]) for r in runs] == [
        ("succeeded", "one"),
        ("failed", "two"),
    ]
    assert '"status"' not in term.plain  # the terminal (stderr) got no JSON
