"""Task files, index files, suites, ``bench check`` on OSWorld's 369 real task files, getters
and OSWorld's scoring rules (no desktop)."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_s.actions import parse_action
from agent_s.bench.check import Machine, check_tasks, classify
from agent_s.bench.environment import fill_placeholders, launch_argv, opens_terminal
from agent_s.bench.getters import GetterContext, NeedsFileCache, cache_lookup
from agent_s.bench.metrics import known_metric
from agent_s.bench.registry import GETTERS
from agent_s.bench.scoring import combine, evaluate
from agent_s.bench.tasks import SetupStep, Task, TaskFormatError, load_index, load_suite
from agent_s.cli.main import app

OSWORLD = Path(__file__).resolve().parents[1].parent / "shared" / "osworld"
needs_osworld = pytest.mark.skipif(
    not (OSWORLD / "examples").is_dir(),
    reason=f"OSWorld's task files are not at {OSWORLD} (the shared folder beside the repo)",
)


@needs_osworld
def test_all_369_osworld_tasks_parse() -> None:
    suite = load_suite(OSWORLD)
    tasks = list(suite.tasks())
    assert len(tasks) == 369 == len(suite)
    counts = {d: len(ids) for d, ids in load_index(OSWORLD / "test_all.json").items()}
    assert counts["multi_apps"] == 101
    assert counts["chrome"] == 46
    assert sum(t.infeasible for t in tasks) == 29
    files = sorted((OSWORLD / "examples").glob("*/*.json"))
    assert {f.stem for f in files} == {t.id for t in tasks}
    listed = [t for t in tasks if t.evaluator.is_list]
    assert all(len(t.evaluator.results) == len(t.evaluator.funcs) for t in listed)


@needs_osworld
def test_check_gives_exact_reasons_on_real_tasks() -> None:
    suite = load_suite(OSWORLD)
    report = check_tasks(suite.tasks(), machine=Machine(sudo=False))
    by_id = {t.id: reasons for t, reasons in report.blocked()}
    # a sudo task (on a machine where sudo steps cannot run); a calc task needs the file cache
    sudo = by_id["5812b315-e7bd-4265-b51f-863c02174c28"]
    assert any(r.category == "sudo" and "CLIENT_PASSWORD" in r.detail for r in sudo)
    calc = load_suite(OSWORLD).index["libreoffice_calc"][0]
    assert any(r.category == "cache" for r in by_id[calc])
    impress = [r for t, rs in report.blocked() if t.domain == "libreoffice_impress" for r in rs]
    assert impress, "some Impress tasks need the file cache here"
    # every metric OSWorld's tasks use is implemented: no task is blocked by a missing one
    assert not any(r.category == "metric" for _t, rs in report.blocked() for r in rs)
    # every blocked task says why, and the runnable ones use only what we have
    for _task, reasons in report.blocked():
        assert reasons
    for task, needs in report.tasks:
        if all(n.met for n in needs):
            assert all(known_metric(f) for f in task.evaluator.funcs)
            assert task.evaluator.getter_types() <= set(GETTERS)
    assert 0 < report.runnable < 369
    # with every program missing, every task that names an app is blocked by it
    blocked = classify(next(load_suite(OSWORLD).tasks(["vlc"])), which=lambda name: None)
    assert any(r.category == "app" and r.detail == "vlc" for r in blocked)


@needs_osworld
def test_bench_check_cli_prints_domains_and_reasons() -> None:
    result = CliRunner().invoke(app, ["bench", "check", str(OSWORLD), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["total"] == 369
    assert set(data["domains"]) == set(load_index(OSWORLD / "test_all.json"))
    assert sum(d["runnable"] for d in data["domains"].values()) == data["runnable"]
    blocked = [t for t in data["tasks"] if not t["runnable"]]
    assert blocked
    assert all(t["reasons"] for t in blocked)
    text = CliRunner().invoke(app, ["bench", "check", str(OSWORLD)])
    assert text.exit_code == 0
    assert "libreoffice_calc" in text.stdout
    assert "needs the file cache" in text.stdout


def test_smoke_suite_is_package_data_with_parseable_references() -> None:
    suite = load_suite("smoke")
    tasks = list(suite.tasks())
    assert 5 <= len(tasks) <= 8
    assert {"os", "text_editor", "calculator"} <= {t.domain for t in tasks}
    assert any(t.infeasible for t in tasks)
    for task in tasks:
        assert task.reference, task.id
        actions = [parse_action(line) for line in task.reference]
        assert actions[-1].action == ("fail" if task.infeasible else "done")
        assert classify(task) == [], task.id  # this machine can run its own suite


def test_task_format_errors(tmp_path: Path) -> None:
    with pytest.raises(TaskFormatError, match="missing 'evaluator'"):
        Task.from_json({"id": "x", "instruction": "y"})
    with pytest.raises(TaskFormatError, match="conj"):
        Task.from_json({"id": "x", "instruction": "y", "evaluator": {"func": "a", "conj": "xor"}})
    with pytest.raises(TaskFormatError, match="2 items for 3 funcs"):
        Task.from_json(
            {
                "id": "x",
                "instruction": "y",
                "evaluator": {"func": ["a", "b", "c"], "result": [{}, {}]},
            }
        )
    with pytest.raises(TaskFormatError, match="reference"):
        Task.from_json(
            {"id": "x", "instruction": "y", "evaluator": {"func": "a"}, "reference": "agent.done()"}
        )
    bad = tmp_path / "test_x.json"
    bad.write_text(json.dumps({"os": "not a list"}))
    with pytest.raises(TaskFormatError):
        load_index(bad)
    with pytest.raises(FileNotFoundError, match="built-in: smoke"):
        load_suite(tmp_path / "nowhere")


def test_placeholders_terminal_and_aliases() -> None:
    snippet = "pyautogui.click({SCREEN_WIDTH_HALF}, {SCREEN_HEIGHT_HALF}); x={SCREEN_WIDTH}"
    assert fill_placeholders(snippet, 1920, 1080) == "pyautogui.click(960, 540); x=1920"
    assert opens_terminal(["python", "-c", "pyautogui.hotkey('ctrl', 'alt', 't')"])
    assert opens_terminal('pyautogui.hotkey("ctrl","alt","t")')
    assert not opens_terminal(["python", "-c", "pyautogui.hotkey('ctrl', 's')"])
    assert launch_argv(["gnome-terminal"])[0] == "lxterminal"
    assert launch_argv(["google-chrome", "--x"])[0] == "chromium"
    assert launch_argv(["mousepad", "a.txt"]) == ["mousepad", "a.txt"]


# -- getters ---------------------------------------------------------------------------------------


@pytest.fixture
def ctx(tmp_path: Path) -> GetterContext:
    home, cache, files = tmp_path / "home", tmp_path / "cache", tmp_path / "filecache"
    for path in (home, cache, files / "os" / "t1"):
        path.mkdir(parents=True)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home)}
    return GetterContext(home=home, env=env, cache_dir=cache, file_cache=files)


def test_vm_file_maps_home_and_copies(ctx: GetterContext) -> None:
    (ctx.home / "Desktop").mkdir()
    (ctx.home / "Desktop" / "a.txt").write_text("hi")
    got = GETTERS["vm_file"](ctx, {"path": "/home/user/Desktop/a.txt", "dest": "a.txt"})
    assert got == str(ctx.cache_dir / "a.txt")
    assert Path(got).read_text() == "hi"
    assert GETTERS["vm_file"](ctx, {"path": "/home/user/none.txt", "dest": "n.txt"}) is None
    multi = {
        "path": ["~/Desktop/a.txt", "Desktop/a.txt"],
        "dest": ["x", "y"],
        "multi": True,
        "gives": [0, 1],
    }
    assert GETTERS["vm_file"](ctx, multi) == [str(ctx.cache_dir / "x"), str(ctx.cache_dir / "y")]


def test_command_getters_run_argv_and_task_shell(ctx: GetterContext) -> None:
    (ctx.home / "f.txt").write_text("one\n")
    out = GETTERS["vm_command_line"](ctx, {"command": ["cat", "/home/user/f.txt"]})
    assert out == "one\n"
    shell = {"command": "cat ~/f.txt | tr a-z A-Z", "shell": True}
    assert GETTERS["vm_command_line"](ctx, shell) == "ONE\n"
    code = [sys.executable, "-c", "import sys; sys.stderr.write('Error: no module')"]
    assert "Error:" in GETTERS["vm_command_error"](ctx, {"command": code})
    # without shell: true a string is split into words, never given to a shell
    assert GETTERS["vm_command_line"](ctx, {"command": "echo a|b"}) == "a|b\n"


def test_rule_cache_file_list_directory_cloud_file(ctx: GetterContext) -> None:
    assert GETTERS["rule"](ctx, {"type": "rule", "rules": {"expected": 1}}) == {"expected": 1}
    (ctx.cache_dir / "diff.out").write_text("")
    assert GETTERS["cache_file"](ctx, {"path": "diff.out"}) == str(ctx.cache_dir / "diff.out")
    assert GETTERS["cache_file"](ctx, {"path": "none.out"}) is None
    (ctx.home / "d" / "sub").mkdir(parents=True)
    (ctx.home / "d" / "x.jpg").write_text("")
    tree = GETTERS["list_directory"](ctx, {"path": "/home/user/d"})
    assert [c["name"] for c in tree["children"]] == ["sub", "x.jpg"]
    assert tree["children"][0]["type"] == "directory"
    url = "https://example.org/datasets/x/resolve/main/os/t1/gold.txt"
    with pytest.raises(NeedsFileCache, match="needs file cache"):
        GETTERS["cloud_file"](ctx, {"path": url, "dest": "gold.txt"})
    assert ctx.file_cache is not None
    (ctx.file_cache / "os" / "t1" / "gold.txt").write_text("gold")
    assert cache_lookup(ctx.file_cache, url) == ctx.file_cache / "os" / "t1" / "gold.txt"
    got = GETTERS["cloud_file"](ctx, {"path": url, "dest": "gold.txt"})
    assert Path(got).read_text() == "gold"
    with pytest.raises(NeedsFileCache, match="no --file-cache"):
        cache_lookup(None, url)


# -- scoring ---------------------------------------------------------------------------------------


def _task(evaluator: dict) -> Task:
    return Task.from_json({"id": "t", "instruction": "i", "evaluator": evaluator}, domain="os")


def _rule(expected: str) -> dict:
    return {"type": "rule", "rules": {"expected": expected}}


def _cmd(text: str) -> dict:
    return {"type": "vm_command_line", "command": ["printf", text]}


def test_scoring_rules_infeasible_fail_and_postconfig_first(ctx: GetterContext) -> None:
    ran: list[str] = []

    def post(steps: Sequence[SetupStep]) -> None:
        ran.extend(s.type for s in steps)

    sleep = {"type": "sleep", "parameters": {"seconds": 0}}
    infeasible = _task({"func": "infeasible", "postconfig": [sleep]})
    assert evaluate(infeasible, "FAIL", ctx, post).value == 1.0
    assert ran == ["sleep"]  # postconfig ran before anything was scored
    assert evaluate(infeasible, "DONE", ctx, post).value == 0.0
    assert evaluate(infeasible, None, ctx, post).value == 0.0
    feasible = _task({"func": "exact_match", "result": _cmd("a"), "expected": _rule("a")})
    assert evaluate(feasible, "DONE", ctx, post).value == 1.0
    assert evaluate(feasible, "OTHER", ctx, post).value == 1.0  # the state decides
    assert evaluate(feasible, "FAIL", ctx, post).value == 0.0  # ended with fail: 0


def test_scoring_conj_and_or(ctx: GetterContext) -> None:
    def post(steps: Sequence[SetupStep]) -> None:
        return None

    both = {"func": ["exact_match", "exact_match"], "result": [_cmd("a"), _cmd("b")]}
    one_wrong = _task({**both, "expected": [_rule("a"), _rule("x")]})
    assert evaluate(one_wrong, "DONE", ctx, post).value == 0.0
    assert (
        evaluate(_task({**one_wrong.raw["evaluator"], "conj": "or"}), "DONE", ctx, post).value
        == 1.0
    )
    right = _task({**both, "expected": [_rule("a"), _rule("b")]})
    assert evaluate(right, "DONE", ctx, post).value == 1.0
    assert combine([0.5, 1.0], "and") == 0.75
    assert combine([0.5, 0.25], "or") == 0.5
    assert combine([0.5, 0.0], "and") == 0.0
    broken = _task(
        {"func": "check_json_settings", "result": {"type": "nope"}, "expected": _rule("x")}
    )
    score = evaluate(broken, "DONE", ctx, post)
    assert score.value == 0.0
    assert "no getter" in score.parts[0].error
