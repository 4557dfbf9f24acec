"""A new user's first hour with ``agent-s run``, ``ground`` and ``doctor``, as the README has it:
each mistake ends with one line naming the fix and no traceback; ``--virtual`` grounds by the
accessibility tree; ``--check "test -f ~/out.txt"`` means the desktop's HOME."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from clean_env import MEMORY_VARIABLES, clean_env
from PIL import Image
from scripted_cli import UNREACHABLE, key_file, model_options

from agent_s.record.trajectory import load_trajectory
from agent_s.testing.scripted_replies import reply
from agent_s.testing.scripted_server import ScriptedModelServer

AGENT_S = str(Path(sys.executable).parent / "agent-s")
_CLEAN = clean_env("DISPLAY", "XAUTHORITY")
_NO_DISPLAY = {**_CLEAN, "DISPLAY": ":999"}  # a display that does not exist: never touched


def act(code: str) -> str:
    return f"Working.\n```python\n{code}\n```"


def _agent_s(
    args: list[str], env: dict[str, str], timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [AGENT_S, *args], env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    return done


def _model(tmp_path: Path, url: str = UNREACHABLE) -> list[str]:
    return model_options(url, key=key_file(tmp_path, "sk-first-hour-SECRET"))


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- 1 and 2: --virtual uses the accessibility tree; --check expands ~ -------------------------


def test_virtual_run_grounds_by_the_accessibility_tree(tmp_path: Path) -> None:
    host_home = tmp_path / "host-home"  # the check must look in the virtual desktop's HOME
    host_home.mkdir()
    script = [
        reply(act('agent.open("galculator")')),
        reply(act("agent.wait(3)")),
        reply(act('agent.click("the 7 button")')),
        reply(act('agent.done(answer="7")')),
    ]
    with ScriptedModelServer(script) as server:
        done = _agent_s(
            [
                "run",
                *_model(tmp_path, server.openai_base_url),
                "--virtual",
                "--safety",
                "auto",
                "--record",
                str(tmp_path / "runs"),
                "--check",
                "test -f ~/.config/gtk-3.0/settings.ini",
                "Press 7 on the calculator",
            ],
            env={**_CLEAN, "HOME": str(host_home)},
            timeout=180,
        )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "check passed" in done.stdout
    (folder,) = (tmp_path / "runs").iterdir()
    clicks = [s for s in load_trajectory(folder).steps if s.grounding]
    assert clicks, "the click was not grounded"
    assert clicks[0].grounding[0].grounder == "a11y", done.stderr
    assert "session bus" not in done.stderr


def test_a_check_with_a_tilde_means_the_home_folder(tmp_path: Path, desktop: Any) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "out.txt").write_text("written\n")
    with ScriptedModelServer([reply(act('agent.done(answer="ok")'))]) as server:
        done = _agent_s(
            [
                "run",
                *_model(tmp_path, server.openai_base_url),
                "--ground",
                "native",
                "--record",
                str(tmp_path / "runs"),
                "--check",
                "test -f ~/out.txt",
                "Write ~/out.txt",
            ],
            env={**_CLEAN, **desktop.env, "HOME": str(home)},
        )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "check passed: test -f ~/out.txt" in done.stdout


# -- 3: one line and exit 2, before the desktop is touched ------------------------------------


def test_an_empty_task_is_a_usage_error(tmp_path: Path) -> None:
    done = _agent_s(["run", *_model(tmp_path), ""], env=_NO_DISPLAY)
    assert done.returncode == 2
    assert _lines(done.stderr) == [
        'error: the task is empty: give one, e.g. agent-s run "open the calculator"'
    ]


def test_record_into_a_file_or_an_impossible_place_fails_before_the_desktop(
    tmp_path: Path,
) -> None:
    afile = tmp_path / "afile"
    afile.write_text("")
    for place, why in (
        (afile, "is a file"),
        (afile / "runs", "cannot create it"),
        (Path("/proc/agent-s-runs"), "cannot create it"),
    ):
        done = _agent_s(["run", *_model(tmp_path), "--record", str(place), "x"], env=_NO_DISPLAY)
        assert done.returncode == 2, done.stderr
        (line,) = _lines(done.stderr)
        assert line.startswith(f"error: --record {place}")
        assert why in line
        assert "folder" in line
        assert "display" not in done.stderr


def test_annotate_into_a_missing_folder_is_a_usage_error(tmp_path: Path) -> None:
    image = tmp_path / "screen.png"
    Image.new("RGB", (200, 100), "white").save(image)
    out = tmp_path / "missing" / "out.png"
    done = _agent_s(
        ["ground", "the Save button", "--image", str(image), "--annotate", str(out)], _CLEAN
    )
    assert done.returncode == 2
    assert f"error: --annotate {out}: the folder {out.parent} does not exist" in done.stderr
    assert "create it first" in done.stderr


def test_doctor_without_the_xauthority_file_fails_the_display_check(
    tmp_path: Path, desktop: Any
) -> None:
    missing = tmp_path / "no-such-xauthority"
    done = _agent_s(["doctor"], env={**_CLEAN, **desktop.env, "XAUTHORITY": str(missing)})
    assert done.returncode == 1
    (line,) = [line for line in done.stdout.splitlines() if "display" in line.split()[:2]]
    assert line.startswith("FAIL  display")
    assert str(missing) in line
    assert "set XAUTHORITY" in line


# -- 4: ground says what exists, and when there is nothing to annotate ------------------------


def test_ground_without_a_display_suggests_what_it_has() -> None:
    done = _agent_s(["ground", "the Save button"], env=_CLEAN)
    assert done.returncode == 2
    (line,) = _lines(done.stderr)
    assert "--image FILE" in line
    assert "--virtual" not in line


def test_annotate_says_when_the_element_is_not_found(tmp_path: Path) -> None:
    image = tmp_path / "screen.png"
    Image.new("RGB", (200, 100), "white").save(image)
    out = tmp_path / "out.png"
    done = _agent_s(
        [
            "ground",
            "the Save button",
            "--image",
            str(image),
            "--ground",
            "ocr",
            "--annotate",
            str(out),
        ],
        env={**_CLEAN},
    )
    assert done.returncode == 1
    assert "not annotated: 'the Save button' was not found" in done.stderr
    assert not out.exists()


# -- 5: base URLs ------------------------------------------------------------------------------


def test_a_base_url_without_a_scheme_is_a_usage_error(tmp_path: Path) -> None:
    done = _agent_s(["run", *_model(tmp_path, "notaurl"), "x"], env=_NO_DISPLAY)
    assert done.returncode == 2
    (line,) = _lines(done.stderr)
    assert line.startswith("error: --base-url: 'notaurl' is not an http(s) URL")
    assert "http://localhost:8000/v1" in line


def test_an_unreachable_server_is_named_once(tmp_path: Path, desktop: Any) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    done = _agent_s(
        ["run", *_model(tmp_path, url), "--record", str(tmp_path / "runs"), "x"],
        env={**_CLEAN, **desktop.env},
        timeout=120,
    )
    assert done.returncode == 1, done.stderr
    assert f"cannot reach the server at {url} (" in done.stdout
    assert done.stdout.count(url) == 1, done.stdout


# -- 6: help -----------------------------------------------------------------------------------


def _commands() -> list[tuple[str, ...]]:
    """Every command and subcommand of ``agent-s``, the root included: from the CLI itself, so
    that a new one is checked too."""
    import typer.main

    from agent_s.cli.main import app

    found: list[tuple[str, ...]] = []

    def walk(command: Any, path: tuple[str, ...]) -> None:
        found.append(path)
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, (*path, name))

    walk(typer.main.get_command(app), ())
    return found


def _help_blocks(text: str) -> dict[str, str]:
    """Each option's help in ``--help`` as one line: its first name -> its names and text."""
    blocks: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        stripped = line.strip()
        if line.startswith("  -") and not line.startswith("   "):  # "--name" or "-h, --help"
            current = next(w.rstrip(",") for w in stripped.split() if w.startswith("--"))
            blocks[current] = [stripped]
        elif current and line.startswith("    ") and stripped:
            blocks[current].append(stripped)
        else:
            current = None
    return {name: " ".join(" ".join(lines).split()) for name, lines in blocks.items()}


# an option that shares a setting's flag but is not that setting: bench run's --max-cost is the
# limit for the whole suite, not AGENT_S_MAX_COST (each run's)
_NOT_THE_SETTING = {(("bench", "run"), "--max-cost")}


@pytest.mark.parametrize("columns", ["80", "50"])
def test_every_help_shows_flags_as_flags_and_whole_variable_names(columns: str) -> None:
    import typer.main

    from agent_s.cli.main import app
    from agent_s.settings.read import SETTINGS

    variables = {variable for _, variable in SETTINGS.values() if variable}
    by_flag = {flag: variable for flag, variable in SETTINGS.values() if flag and variable}
    commands = _commands()
    assert {("run",), ("doctor",), ("ground",), ("bench", "check"), ("bench", "report")} <= set(
        commands
    )
    root = typer.main.get_command(app)
    for path in commands:
        done = _agent_s([*path, "--help"], env={**_CLEAN, "COLUMNS": columns})
        shown = f"agent-s {' '.join(path)} --help at {columns} columns:\n{done.stdout}"
        assert done.returncode == 0, shown
        assert done.stderr == "", done.stderr
        assert "<bool>" not in done.stdout, shown
        assert "\u2026" not in done.stdout, shown  # nothing cut short with an ellipsis
        assert "\x1b[" not in done.stdout, shown
        assert max(len(line) for line in done.stdout.splitlines()) <= int(columns), shown
        blocks = _help_blocks(done.stdout)
        assert blocks["--help"] == "-h, --help Show this message and exit.", shown
        for variable in re.findall(r"AGENT_S_[A-Z0-9_]*(?![A-Z0-9_*])", done.stdout):
            assert variable in variables, f"{variable} is cut or unknown in {shown}"
        command = root
        for name in path:
            command = command.commands[name]  # type: ignore[attr-defined]
        for param in command.params:
            if param.param_type_name != "option" or param.hidden:
                continue
            (name, *_) = param.opts
            block = blocks.get(name)
            assert block, f"{name} is missing from {shown}"
            if getattr(param, "is_flag", False):  # names, then the text: no value placeholder
                names = " / ".join([*param.opts, *param.secondary_opts])
                assert block.startswith(names + " "), shown
                assert not block[len(names) :].lstrip().startswith("<"), shown
            variable = by_flag.get(name)
            if variable and (path, name) not in _NOT_THE_SETTING:
                assert f"env {variable})" in block, f"{name} does not name {variable}: {shown}"


def test_a_wrong_folder_or_an_empty_search_says_what_to_give(tmp_path: Path) -> None:
    """Each names the folder to give instead; a search that finds nothing is an answer (exit
    1, as grep), not an error."""
    env = {**_NO_DISPLAY, "HOME": str(tmp_path), "AGENT_S_MEMORY_DB": str(tmp_path / "m.db")}
    for args in (["replay", str(tmp_path)], ["export", str(tmp_path), "--format", "osworld"]):
        done = _agent_s(args, env=env)
        assert done.returncode == 2, done.stderr
        (line,) = _lines(done.stderr)
        assert line == (
            f"error: {tmp_path} is not a trajectory folder: no trajectory.jsonl (give the folder "
            "agent-s run printed as trajectory:, under ~/.local/share/agent-s/runs by default)"
        )
    done = _agent_s(["bench", "report", str(tmp_path / "runs")], env=env)
    assert done.returncode == 2
    (line,) = _lines(done.stderr)
    assert line == (
        f"error: no task results under {tmp_path / 'runs'} (it does not exist): give the folder "
        "agent-s bench run wrote them to (its --results)"
    )
    done = _agent_s(["memory", "search", "calculator"], env=env)
    assert done.returncode == 1
    assert _lines(done.stderr) == [
        "nothing matched 'calculator' (0 entries in the memory; agent-s memory list shows them)"
    ]
    done = _agent_s(["memory", "search", "[red]x"], env=env)  # the words as typed, no markup
    assert _lines(done.stderr)[0].startswith("nothing matched '[red]x' (0 entries"), done.stderr


def test_with_nobody_to_approve_the_warning_says_how_to_allow_actions(tmp_path: Path) -> None:
    env = {**_NO_DISPLAY, "AGENT_S_CONFIG": str(tmp_path / "config.toml")}
    (tmp_path / "config.toml").write_text("")
    done = _agent_s(["run", *_model(tmp_path), "open the calculator"], env=env)
    warning = " ".join(done.stderr.split())  # one message, however the terminal wraps it
    assert "nobody can approve" in warning
    assert "--safety auto" in warning
    assert "[safety] allow_apps" in warning
    assert "[[safety.rules]] with effect = 'allow'" in warning


def test_a_run_that_cannot_start_says_only_why(tmp_path: Path) -> None:
    """A missing key or model exits 2 with one error, not after a warning about approvals
    that no run will need; the error names the key's variable and --api-key-file."""
    env = {k: v for k, v in _NO_DISPLAY.items() if k != "OPENAI_API_KEY"}
    env["AGENT_S_CONFIG"] = str(tmp_path / "config.toml")
    (tmp_path / "config.toml").write_text("")
    no_key = _agent_s(["run", "--model", "gpt-4o", "open the calculator"], env=env)
    assert no_key.returncode == 2
    assert _lines(no_key.stderr) == [
        "error: OPENAI_API_KEY is not set: the OpenAI API needs an API key"
    ]
    no_model = _agent_s(["run", "open the calculator"], env=env)
    assert no_model.returncode == 2
    (line,) = _lines(no_model.stderr)
    assert line.startswith("error: no model configured: pass --model NAME"), line
    assert "OPENAI_API_KEY" in line, line
    assert "--api-key-file PATH" in line, line


# -- 7: bench tables are whole at any width, piped or not -------------------------------------

_DOMAIN = "libreoffice_impress_with_a_long_domain_name"
_ECHO = {"type": "vm_command_line", "command": ["echo", "hi"]}


def _bench_suite(root: Path) -> Path:
    """A suite with a long domain name: two blocked tasks with long ids and long reasons, and
    one that runs (and fails under --policy noop)."""
    tasks = {
        "0f4a8c55-5b8e-4bd5-9a0d-00b7e53fb5a1-blocked-by-a-metric": {
            "func": "a_metric_nobody_has_written_with_a_very_long_name",
            "result": _ECHO,
            "expected": {"type": "rule", "rules": {"expected": "hi\n"}},
        },
        "7e2bc1d0-33f4-4a47-b7f5-8c1f1d6a4c22-blocked-by-a-getter": {
            "func": "exact_match",
            "result": {"type": "a_getter_nobody_has_written_with_a_very_long_name"},
            "expected": {"type": "rule", "rules": {"expected": "hi\n"}},
        },
        "c3d7b3a8-1f0e-4c39-8a52-5a9f0e3b7d11-runs-and-fails-under-noop": {
            "func": "exact_match",
            "result": _ECHO,
            "expected": {"type": "rule", "rules": {"expected": "bye\n"}},
        },
    }
    folder = root / "suite" / "examples" / _DOMAIN
    folder.mkdir(parents=True)
    for task_id, evaluator in tasks.items():
        task = {
            "id": task_id,
            "instruction": f"task {task_id}",
            "config": [],
            "evaluator": evaluator,
            "reference": ["agent.done()"],
        }
        (folder / f"{task_id}.json").write_text(json.dumps(task))
    index = root / "suite" / "test_all.json"
    index.write_text(json.dumps({_DOMAIN: list(tasks)}))
    return index


def _table_rows(text: str) -> list[list[str]]:
    return [line.split() for line in text.splitlines() if line.strip()]


def test_bench_check_prints_every_column_and_reason_whole_at_80_columns(tmp_path: Path) -> None:
    from agent_s.bench.check import CATEGORIES

    index = _bench_suite(tmp_path)
    env = {**_CLEAN, "COLUMNS": "80"}
    done = _agent_s(["bench", "check", str(index)], env=env)  # piped: not a terminal
    assert done.returncode == 0, done.stderr
    assert "\u2026" not in done.stdout, done.stdout
    rows = _table_rows(done.stdout)
    assert ["domain", "tasks", "runnable", *CATEGORIES] in rows, done.stdout
    (row,) = [r for r in rows if r[0] == _DOMAIN]
    report = json.loads(_agent_s(["bench", "check", str(index), "--json"], env=env).stdout)
    counts = report["domains"][_DOMAIN]
    blocked = [str(counts["blocked_by"].get(c, 0)) for c in CATEGORIES]
    assert row == [_DOMAIN, str(counts["total"]), str(counts["runnable"]), *blocked]
    lines = done.stdout.splitlines()
    reasons = [t for t in report["tasks"] if t["reasons"]]
    assert len(reasons) == 2
    for task in reasons:  # one whole line per blocked task: its id and every reason
        text = "; ".join(r["text"] for r in task["reasons"])
        assert f"{task['domain']}/{task['id']}: {text}" in lines, done.stdout


@pytest.mark.desktop
def test_bench_summary_and_report_are_whole_at_80_columns(tmp_path: Path) -> None:
    index, results = _bench_suite(tmp_path), tmp_path / "results"
    env = {**_CLEAN, "COLUMNS": "80"}
    run = ["bench", "run", str(index), "--policy", "noop", "--results", str(results)]
    done = _agent_s(run, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    report = _agent_s(["bench", "report", str(results)], env=env)
    assert report.returncode == 0, report.stderr
    as_json = json.loads(_agent_s(["bench", "report", str(results), "--json"], env=env).stdout)
    summary = as_json["summary"]
    header = ["domain", "tasks", "scored", "success", "skipped", "errors", "steps", "secs", "$"]
    for text in (done.stdout, report.stdout):
        assert "\u2026" not in text, text
        rows = _table_rows(text)
        assert rows[rows.index(header) + 2][0] == _DOMAIN, text  # after the rule under it
    ids = [path.stem for path in (index.parent / "examples" / _DOMAIN).glob("*.json")]
    for task_id in ids:  # each task's progress line and summary line: its id whole
        assert f"{_DOMAIN}/{task_id}: " in done.stderr, done.stderr
        assert any(line.startswith(f"{_DOMAIN}/{task_id}: ") for line in done.stdout.splitlines())
    reason = "needs a metric we do not have: a_metric_nobody_has_written_with_a_very_long_name"
    assert any(line.endswith(reason) for line in done.stdout.splitlines()), done.stdout
    (failed,) = summary["not_succeeded"]  # the report: the task that ran and failed, whole
    line = f"{failed['domain']}/{failed['task_id']}: {failed['outcome']} score={failed['score']}"
    line += f" {failed['reason']}"
    assert line in [text.strip() for text in report.stdout.splitlines()], report.stdout


# -- 8: more mistakes, one line each -----------------------------------------------------------


def test_a_check_that_cannot_be_split_is_one_line_naming_the_flag(tmp_path: Path) -> None:
    env = {**_NO_DISPLAY, "AGENT_S_CONFIG": str(tmp_path / "config.toml")}
    (tmp_path / "config.toml").write_text("")
    for check, expected in (
        ("'unbalanced", "error: --check 'unbalanced: no closing quotation; quote the command"),
        ("  ", 'error: --check needs a command, e.g. --check "test -f ~/out.txt"'),
    ):
        done = _agent_s(["run", *_model(tmp_path), "--check", check, "x"], env=env)
        assert done.returncode == 2, done.stderr
        (line,) = _lines(done.stderr)
        assert line.startswith(expected), line
        assert done.stdout == ""


def test_ground_reads_the_grounding_settings_and_names_a_bad_image(tmp_path: Path) -> None:
    env = {**_CLEAN, "AGENT_S_CONFIG": str(tmp_path / "config.toml")}
    (tmp_path / "config.toml").write_text("")
    done = _agent_s(["ground", "x", "--image", str(tmp_path)], env={**env, "AGENT_S_GROUND": "?"})
    assert done.returncode == 2
    (line,) = _lines(done.stderr)
    assert line.startswith("error: AGENT_S_GROUND='?': unknown grounding mode '?'"), line
    not_an_image = tmp_path / "notes.txt"
    not_an_image.write_text("text")
    done = _agent_s(["ground", "x", "--image", str(not_an_image)], env=env)
    assert done.returncode == 2
    (line,) = _lines(done.stderr)
    assert line.startswith(f"error: --image {not_an_image}: cannot read it as an image ("), line
    picture = tmp_path / "screen.png"
    Image.new("RGB", (200, 100), "white").save(picture)
    done = _agent_s(  # the variable chooses the grounder when no flag does
        ["ground", "(10, 20)", "--image", str(picture), "--json"],
        env={**env, "AGENT_S_GROUND": "native"},
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert (found["grounder"], found["point"]) == ("native", [10, 20])


# -- input that is not UTF-8, a HOME that cannot be written: one line, never a traceback -----


def test_a_task_or_a_variable_that_is_not_utf8_is_refused_before_anything_starts(
    tmp_path: Path,
) -> None:
    task = os.fsdecode(b"compute caf\xe9")  # as Python hands such a command-line argument over
    with ScriptedModelServer([]) as server:  # strict: a request would fail the test
        done = _agent_s(
            ["run", *_model(tmp_path, server.openai_base_url), "--virtual", task], _CLEAN
        )
        assert done.returncode == 2, done.stderr
        (line,) = _lines(done.stderr)
        assert "b'compute caf\\xe9'" in line
        assert "not UTF-8" in line
        assert "LANG=C.UTF-8" in line
        assert "virtual desktop" not in done.stderr  # refused before the desktop started
        env = {**_CLEAN, "AGENT_S_MODEL": os.fsdecode(b"m\xe9")}
        done = _agent_s(["run", *_model(tmp_path, server.openai_base_url), "x"], env)
        assert done.returncode == 2
        (line,) = _lines(done.stderr)
        assert line.startswith("error: the variable AGENT_S_MODEL (b'm\\xe9')")


def test_a_task_typed_at_the_prompt_that_is_not_utf8_is_asked_again(tmp_path: Path) -> None:
    with ScriptedModelServer([]) as server:
        done = subprocess.run(
            [AGENT_S, "run", *_model(tmp_path, server.openai_base_url), "--virtual"],
            env={**_CLEAN, "LANG": "C.UTF-8"},
            input=b"caf\xe9\n\n",
            capture_output=True,
            timeout=120,
            check=False,
        )
    stderr = done.stderr.decode("utf-8", "replace")
    assert "Traceback" not in stderr
    assert done.returncode == 0, stderr
    assert "that task has bytes that are not UTF-8, nothing done" in stderr
    assert stderr.count("Task (empty line to quit):") == 2  # asked again, then the empty line


def _as_nobody(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    argv = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", AGENT_S, *args]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    return done


@pytest.mark.skipif(os.geteuid() != 0, reason="runs agent-s as another user: needs root")
def test_a_home_that_cannot_be_written_takes_one_fix(tmp_path: Path) -> None:
    drop = ("PYTEST_XDIST_WORKER", *MEMORY_VARIABLES)  # nobody's memory is in its HOME too
    env = {k: v for k, v in _CLEAN.items() if not k.startswith("XDG_") and k not in drop}
    env["HOME"] = "/nonexistent"  # nobody's HOME: it cannot be made
    env["AGENT_S_COMPATIBLE_API_KEY"] = "sk-first-hour-SECRET"
    with ScriptedModelServer([]) as server:
        model = model_options(server.openai_base_url)
        done = _as_nobody(["run", *model, "--virtual", "--safety", "auto", "x"], env)
    assert done.returncode == 2, done.stderr
    (line,) = _lines(done.stderr)
    assert "HOME (/nonexistent) is not writable" in line
    for variable in ("AGENT_S_STATE_DIR", "AGENT_S_RECORD_DIR", "AGENT_S_MEMORY_DB"):
        assert variable in line
    done = _as_nobody(["doctor", "--virtual", "--json"], env)
    assert done.returncode == 1
    display = {c["name"]: c for c in json.loads(done.stdout)["checks"]}["display"]
    assert display["status"] == "fail"
    assert "AGENT_S_STATE_DIR" in display["detail"]


def test_a_long_task_is_shown_short_and_said_to_go_whole_into_each_request(
    tmp_path: Path,
) -> None:
    task = "type the following text: " + "lorem ipsum " * 1_000  # 12,025 characters
    with ScriptedModelServer([reply(act('agent.done(answer="ok")'))]) as server:
        done = _agent_s(
            ["run", *_model(tmp_path, server.openai_base_url), "--virtual", "--safety", "auto"]
            + ["--plan", "off", "--record", str(tmp_path / "runs"), task],
            _CLEAN,
            timeout=120,
        )
        sent = json.dumps(server.requests[0].body)
    assert done.returncode == 0, done.stderr
    said = " ".join(done.stderr.split())  # lines wrap at the terminal's width
    assert "lorem ipsum... (12,025 characters in all)" in said
    assert said.count("lorem ipsum") < 30  # not echoed whole
    assert "12,025 characters long: it goes whole into every request" in said
    assert sent.count("lorem ipsum") >= 1_000  # the model still gets all of it


def test_h_is_help_and_an_unknown_domain_is_a_usage_error(tmp_path: Path) -> None:
    for command in (["run"], ["bench", "run"], ["memory", "list"], []):
        done = _agent_s([*command, "-h"], _CLEAN)
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith(f"Usage: agent-s {' '.join(command)}".rstrip())
    done = _agent_s(
        ["bench", "run", "smoke", "--domain", "nosuch", "--results", str(tmp_path / "r")], _CLEAN
    )
    assert done.returncode == 2
    assert "--domain nosuch: the suite smoke has no such domain" in " ".join(done.stderr.split())
    assert not (tmp_path / "r").exists()
