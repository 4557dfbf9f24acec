"""Which tasks a stored workflow matches (``agent_s.replay.reuse.values_for``), without a
desktop: the same words around new values of the right kinds; and a long task, made to make a
backtracking pattern try every split, is answered at once rather than after hours."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from clean_env import MEMORY_VARIABLES, clean_env
from scripted_cli import model_options

from agent_s.actions import TypeAction
from agent_s.memory.entries import Provenance
from agent_s.replay.reuse import values_for
from agent_s.replay.script import Script, ScriptStep
from agent_s.replay.workflow import Workflow

AGENT_S = str(Path(sys.executable).parent / "agent-s")


def flow(task: str, typed: str, parameters: dict[str, str]) -> Workflow:
    script = Script(task=task, steps=(ScriptStep(step=1, action=TypeAction(text=typed)),))
    provenance = Provenance(run_id="run-1", model="m", verified=True, task=task)
    return Workflow(name="w", script=script, parameters=parameters, provenance=provenance)


def test_a_task_with_new_values_of_the_right_kinds_matches() -> None:
    copy = flow(
        "Copy report.txt to the folder backup 3 times",
        "cp report.txt backup",
        {"file_1": "report.txt", "text_1": "backup", "number_1": "3"},
    )
    assert values_for(copy, "Copy  notes.md to the folder archive 12 times") == {
        "file_1": "notes.md",
        "text_1": "archive",
        "number_1": "12",
    }
    assert values_for(copy, "Copy notes.md to the folder archive many times") is None  # a number
    assert values_for(copy, "Copy my notes.md to the folder archive 2 times") is None  # one word
    assert values_for(copy, "Move notes.md to the folder archive 2 times") is None  # other words


def test_a_value_given_twice_must_be_the_same_both_times() -> None:
    twice = flow("Compute 7 times 6 and type 7 again", "7*6", {"number_1": "7", "number_2": "6"})
    assert values_for(twice, "Compute 8 times 3 and type 8 again") == {
        "number_1": "8",
        "number_2": "3",
    }
    assert values_for(twice, "Compute 8 times 3 and type 9 again") is None


def test_text_values_split_at_the_first_following_words() -> None:
    words = flow("type hello then world now", "hello world", {"text_1": "hello", "text_2": "world"})
    assert values_for(words, "type good morning then dear friend now") == {
        "text_1": "good morning",
        "text_2": "dear friend",
    }
    assert values_for(words, "type a then b then c now") == {"text_1": "a", "text_2": "b then c"}


def test_a_long_task_is_matched_at_once() -> None:
    """Four text values separated by the same word, and a task that repeats that word three
    thousand times without the ending: lazy groups that backtrack try every way to split it
    (about n**4 / 24 tries: hours); the matcher answers in well under the timeout."""
    code = (
        "from test_reuse_match import flow\n"
        "from agent_s.replay.reuse import values_for\n"
        "f = flow('type a then b then c then d now', 'a b c d',"
        " {'text_1': 'a', 'text_2': 'b', 'text_3': 'c', 'text_4': 'd'})\n"
        "print(values_for(f, 'type ' + 'x then ' * 3000 + 'x'))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=__file__.rsplit("/", 1)[0],
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "None"


@pytest.mark.parametrize(
    ("given", "said"),
    [
        (["--reuse", "skills"], "--reuse skills: give auto (the default), workflows or off"),
        (
            ["--save-workflow", "note"],
            '--save-workflow note keeps a run whose check passed: add --check "COMMAND"',
        ),
    ],
)
def test_a_reuse_option_s_usage_error_is_one_line_and_writes_nothing(
    tmp_path: Path, given: list[str], said: str
) -> None:
    """``--reuse skills`` (a name it once had), or ``--save-workflow`` without ``--check``:
    exit 2 with one line, before the memory file, its key or any folder is made in HOME."""
    env = {k: v for k, v in clean_env().items() if k not in MEMORY_VARIABLES}
    env.update(HOME=str(tmp_path), AGENT_S_CONFIG=os.devnull, AGENT_S_COMPATIBLE_API_KEY="sk-x")
    for variable in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME"):
        env.pop(variable, None)
    done = subprocess.run(
        [AGENT_S, "run", *model_options(), *given, "open the calculator"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == f"error: {said}"
    assert list(tmp_path.iterdir()) == []
