"""Every line of the README is true: its flags, its variables and its sample outputs.

``tests/test_readme.py`` runs the README's fenced examples; this module holds the prose to
account as well:

- every ``--flag`` the README names anywhere is an option of some ``agent-s`` command (read from
  the command tree itself, the one ``--help`` prints), or of a tool named here with the reason;
  in an inline ``agent-s CMD ...`` span, each flag is an option of that very command;
- every ``AGENT_S_*`` variable the code reads or names in a message is in the README (but for
  the few agent-s sets for its own child processes, listed here), and every setting's variable
  stands in the README's settings table beside its flag and key;
- the sample outputs of ``agent-s doctor`` and ``agent-s bench check`` are what the commands
  print: each sample line is a line of the real output, in order, numbers aside.
"""

from __future__ import annotations

import functools
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer.main
from clean_env import clean_env
from readme_samples import BLOCK, README, assert_printed, samples_after

from agent_s.cli.main import app
from agent_s.settings.read import SETTINGS

ROOT = Path(__file__).resolve().parent.parent
AGENT_S = str(Path(sys.executable).with_name("agent-s"))
_FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9]*(?:-[a-z0-9]+)*")
_VARIABLE = re.compile(r"(?<![\w])AGENT_S_[A-Z0-9_]*[A-Z0-9]")

# Flags the README names of other programs, each with where it belongs.
OTHER_TOOLS = {
    "--dev": "scripts/setup.sh's own option (tests/test_readme.py checks it there)",
    "--desktops": "scripts/setup.sh's own option (tests/test_readme.py checks it there)",
    "--listmonitors": "xrandr's, named to say where monitors are read from",
    "--no-deps": "pip's, in the line that installs Agent S3 for the side-by-side benchmark",
}
# Variables agent-s sets for processes of its own; no user sets them.
INTERNAL = {
    "AGENT_S_BENCH_API_KEY": "the model key handed to a harness worker, never on its command line",
    "AGENT_S_PRACTICE_API_KEY": "the model key handed to a practice worker",
    "AGENT_S_BENCH_LIFELINE": "the pipe a harness worker watches to end with its parent",
    "AGENT_S_VIEW_TASK": "which task's desktop bench run --view shows, for its workers",
    "AGENT_S_VIRTUAL_DESKTOP": "the mark on a virtual desktop's processes, for clean-up",
}


def _walk(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        yield from _walk(sub, (*path, name))


@functools.cache
def _commands() -> dict[tuple[str, ...], frozenset[str]]:
    """Each command path (``("bench", "run")``) and its options, as --help lists them."""
    found = {}
    for path, command in _walk(typer.main.get_command(app)):
        names = set()
        for param in command.params:
            names.update(param.opts)
            names.update(getattr(param, "secondary_opts", ()))
        found[path] = frozenset(n for n in names if n.startswith("--"))
    return found


def _readme_line(offset: int) -> str:
    number = README.count("\n", 0, offset) + 1
    return f"README.md:{number}: {README.splitlines()[number - 1].strip()}"


def test_every_flag_the_readme_names_is_an_option_of_agent_s() -> None:
    every = set().union(*_commands().values())
    unknown = [
        _readme_line(found.start())
        for found in _FLAG.finditer(README)
        if found.group() not in every and found.group() not in OTHER_TOOLS
    ]
    assert not unknown, "flags that no agent-s command has:\n" + "\n".join(unknown)


def _inline_commands() -> Iterator[tuple[int, list[str]]]:
    """Each ``agent-s ...`` in backticks in the prose: (offset, its words)."""
    prose = BLOCK.sub(lambda block: " " * len(block.group()), README)  # blocks: test_readme
    for span in re.finditer(r"`([^`\n]*)`", prose):
        words = span.group(1).split()
        if "agent-s" in words:
            yield span.start(), words[words.index("agent-s") + 1 :]


def test_each_agent_s_command_in_the_prose_has_the_flags_it_is_shown_with() -> None:
    commands = _commands()
    wrong = []
    for offset, words in _inline_commands():
        path: tuple[str, ...] = ()
        for word in words:
            if (*path, word) not in commands:
                break
            path = (*path, word)
        flags = [w.split("=", 1)[0] for w in words if _FLAG.fullmatch(w.split("=", 1)[0])]
        wrong += [f"{_readme_line(offset)}: {f}" for f in flags if f not in commands[path]]
    assert not wrong, "flags shown with a command that does not have them:\n" + "\n".join(wrong)


def _named_in_the_code() -> set[str]:
    names = set()
    for folder in ("agent_s", "cli", "grounding"):
        for source in (ROOT / folder).rglob("*.py"):
            names.update(_VARIABLE.findall(source.read_text()))
    return names


def test_every_variable_the_code_names_is_in_the_readme() -> None:
    named = _named_in_the_code()
    missing = sorted(name for name in named - set(INTERNAL) if name not in README)
    assert not missing, f"variables agent-s reads or names that the README does not: {missing}"
    assert set(INTERNAL) <= named, "an internal variable is gone: drop it from INTERNAL"


def test_every_setting_is_in_the_readmes_table_with_its_flag_and_variable() -> None:
    rows = {line for line in README.splitlines() if line.startswith("| `[")}
    for (table, key), (flag, variable) in SETTINGS.items():
        cells = [
            f"`[{table}] {key}`",
            f"`{flag}`" if flag else "",
            f"`{variable}`" if variable else "",
        ]
        row = re.sub(r"\|  \|", "| |", "| " + " | ".join(cells) + " |")
        assert row in rows, f"the README's settings table has no row {row}"


# -- sample outputs -----------------------------------------------------------------------------


def _clean_env() -> dict[str, str]:
    env = clean_env()
    for key in ("DISPLAY", "XAUTHORITY", "WAYLAND_DISPLAY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        env.pop(key, None)
    return {**env, "COLUMNS": "120", "NO_COLOR": "1"}


def test_the_bench_check_sample_is_what_it_prints() -> None:
    done = subprocess.run(
        [AGENT_S, "bench", "check", "smoke"],
        env=_clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert_printed(samples_after("`bench check` says, per domain"), done.stdout)


@pytest.mark.desktop
def test_the_doctor_sample_is_what_it_prints() -> None:
    done = subprocess.run(
        [AGENT_S, "doctor", "--virtual"],
        env=_clean_env(),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert_printed(samples_after("`agent-s doctor` checks this machine"), done.stdout)


def test_a_sample_line_that_was_not_printed_fails() -> None:
    with pytest.raises(AssertionError, match="the README shows"):
        assert_printed(["  ok  tools   xdotool is installed"], "  ok  tools   xclip is installed")
    assert_printed(["  ok  capture   1280x800 in 28 ms"], "  ok  capture   1024x768 in 9 ms\n")


@pytest.mark.desktop
def test_the_run_sample_is_what_it_prints(tmp_path: Path) -> None:
    """The README's galculator run, with a scripted model in gpt-4o's place: its stderr lines
    (desktop, task, steps) and its stdout lines (the result) as shown."""
    from agent_s.testing.scripted_replies import reply
    from agent_s.testing.scripted_server import ScriptedModelServer

    def act(code: str) -> Any:
        return reply(f"Next step.\n```python\n{code}\n```")

    buttons = ["the 7 button", "the * button", "the 6 button", "the = button"]
    script = [
        act("agent.open(app_or_filename='galculator')"),
        act("agent.wait(seconds=2.0)"),
        *(act(f"agent.click(element_description={b!r})") for b in buttons),
        act("agent.done(answer='42')"),
    ]
    (config := tmp_path / "config.toml").write_text("")
    (home := tmp_path / "home").mkdir()
    with ScriptedModelServer(script) as server:
        env = {
            **_clean_env(),
            "HOME": str(home),
            "AGENT_S_CONFIG": str(config),
            "AGENT_S_BASE_URL": server.openai_base_url,
            "OPENAI_API_KEY": "sk-readme",
        }
        argv = [AGENT_S, "run", "--model", "gpt-4o", "--provider", "openai", "--no-memory"]
        done = subprocess.run(
            [*argv, "compute 7*6 on the calculator", "--virtual", "--safety", "auto"],
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
            check=False,
        )
    assert done.returncode == 0, done.stdout + done.stderr
    sample = samples_after("computing 7*6 on galculator looks like this")
    first_result = next(i for i, line in enumerate(sample) if line.startswith("succeeded"))
    assert_printed(sample[:first_result], done.stderr)
    assert_printed(sample[first_result:], done.stdout)


# The prose before each sample output and the test that runs its command and compares.
SAMPLES = {
    "computing 7*6 on galculator looks like this": "test_the_run_sample_is_what_it_prints",
    "With mousepad's Save As dialog open": "test_readme.py::_ground_line",
    "`agent-s doctor` checks this machine": "test_the_doctor_sample_is_what_it_prints",
    "`practice-<time>` folder beside the runs": "test_readme.py::_practice_line",
    "`bench check` says, per domain": "test_the_bench_check_sample_is_what_it_prints",
    "Progress and one line per task go to stderr": "test_bench_run.py (reference policy)",
    "Against a Qwen2.5-VL served by Ollama": "test_readme.py::_model_check_line",
}


def test_every_sample_output_is_compared_with_its_command() -> None:
    """A new ``text`` block in the README needs its marker above and a test that runs it."""
    after = (BLOCK.search(README, README.index(marker)) for marker in SAMPLES)
    checked = {block.start() for block in after if block is not None}
    blocks = {m.start() for m in BLOCK.finditer(README) if m.group(1) == "text"}
    unchecked = [_readme_line(at) for at in sorted(blocks - checked)]
    assert not unchecked, f"sample outputs no test compares with the command: {unchecked}"
