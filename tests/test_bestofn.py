"""Best-of-N on live virtual desktops (``agent_s.bestofn``), with the scripted model.

The attempts run in parallel, so the script is routed per attempt: an attempt's first request
claims the next unclaimed route, and every later request of it carries that route's marker
(its replies' reasoning is in the history), so it gets that route's next reply. Each route
is strict (every step used, none beyond), as is the judge's script.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from clean_env import clean_env
from escapes import outside_tmp
from PIL import Image
from ray_cluster import ray_cluster
from scripted_cli import key_file, model_options

from agent_s.bestofn.judge import Candidate, Judge, parse_pick
from agent_s.bestofn.narrative import changed_regions, narrate_steps
from agent_s.models.endpoints import ProviderSettings
from agent_s.models.factory import build_provider
from agent_s.prompting import Platform
from agent_s.record.result import RunEnded, RunResult
from agent_s.record.step import Step as AgentStep
from agent_s.testing.scripted_replies import Step, reply
from agent_s.testing.scripted_server import RecordedRequest, ScriptedModelServer

AGENT_S = str(Path(sys.executable).parent / "agent-s")
_CLEAN = clean_env("DISPLAY", "XAUTHORITY")
JUDGE_SYSTEM = "You judge the work of an agent"


def act(route: str, code: str) -> Step:
    return reply(f"[route {route}] Next step.\n```python\n{code}\n```")


def _texts(request: RecordedRequest) -> list[str]:
    """Every text part of the request, in order (OpenAI Chat Completions)."""
    found: list[str] = []
    for message in request.body.get("messages", []):
        content = message.get("content")
        if isinstance(content, str):
            found.append(content)
        elif isinstance(content, list):
            found.extend(str(p.get("text", "")) for p in content if p.get("type") == "text")
    return found


class RoutedScript:
    """A strict script per attempt, plus the judge's (see the module docstring)."""

    def __init__(
        self, routes: dict[str, list[Step]], judge: list[Callable[[RecordedRequest], Step]]
    ) -> None:
        self.routes, self.judge = routes, list(judge)
        self.served = {name: 0 for name in routes}
        self.judge_requests: list[RecordedRequest] = []
        self._lock = threading.Lock()

    def __call__(self, request: RecordedRequest) -> Step:
        texts = _texts(request)
        with self._lock:
            if any(JUDGE_SYSTEM in t for t in texts):
                self.judge_requests.append(request)
                if not self.judge:
                    raise AssertionError("a judge request beyond the script")
                return self.judge.pop(0)(request)
            body = "\n".join(texts)
            started = [n for n, k in self.served.items() if k and f"[route {n}]" in body]
            if len(started) > 1:
                raise AssertionError(f"a request carries several routes: {started}")
            name = started[0] if started else next(n for n, k in self.served.items() if k == 0)
            steps = self.routes[name]
            if self.served[name] >= len(steps):
                raise AssertionError(f"route {name}: a request beyond its {len(steps)} steps")
            self.served[name] += 1
            return steps[self.served[name] - 1]

    def verify(self) -> None:
        unused = {
            n: len(s) - self.served[n] for n, s in self.routes.items() if self.served[n] < len(s)
        }
        assert not unused, f"route steps never requested: {unused}"
        assert not self.judge, f"{len(self.judge)} judge replies never requested"


def _attempt_blocks(request: RecordedRequest) -> dict[int, str]:
    """The judge request's attempt blocks by number (the text before each screenshot)."""
    blocks: dict[int, str] = {}
    for text in _texts(request):
        found = re.match(r"Attempt (\d+) \(", text)
        if found:
            blocks[int(found[1])] = text
    return blocks


def pick_where(marker: str, reason: str) -> Callable[[RecordedRequest], Step]:
    """A judge reply naming the attempt whose narrative contains ``marker``."""

    def answer(request: RecordedRequest) -> Step:
        blocks = _attempt_blocks(request)
        (number,) = [n for n, text in blocks.items() if marker in text]
        return reply(f"ATTEMPT: {number}\nREASON: {reason}")

    return answer


def fixed(text: str) -> Callable[[RecordedRequest], Step]:
    return lambda request: reply(text)


def _model_args(tmp_path: Path, url: str) -> list[str]:
    return model_options(url, key=key_file(tmp_path, "sk-best-of-SECRET"))


def _agent_s(args: list[str], timeout: float = 400) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [AGENT_S, *args], env=_CLEAN, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    return done


TERMINAL = 'agent.open("xterm")'


def _write(word: str) -> str:
    """Type a command that writes ``word`` into ~/result.txt and retitles the terminal."""
    command = f"echo {word} > ~/result.txt; echo -ne '\\\\033]2;wrote {word}\\\\007'"
    return f'agent.type(text="{command}", enter=True)'


# -- the whole thing: three attempts, one succeeds, the judge picks it, its files are kept -----


@pytest.mark.desktop
def test_three_attempts_the_judge_picks_the_one_that_succeeded(tmp_path: Path) -> None:
    routes = {
        "bad": [act("bad", TERMINAL), act("bad", _write("bad")), act("bad", "agent.done()")],
        "good": [act("good", TERMINAL), act("good", _write("good")), act("good", "agent.done()")],
        "quit": [act("quit", 'agent.fail("I cannot find a way to do it")')],
    }
    script = RoutedScript(
        routes,
        [
            fixed("ATTEMPT: 7\nREASON: it looks best"),  # no such attempt: asked again
            pick_where("wrote good", "its terminal shows good written to the file"),
        ],
    )
    with ScriptedModelServer(script) as server:
        done = _agent_s(
            [
                "run",
                *_model_args(tmp_path, server.openai_base_url),
                "--virtual",
                "--best-of",
                "3",
                "--workers",
                "3",
                "--safety",
                "auto",
                "--max-steps",
                "6",
                "--record",
                str(tmp_path / "runs"),
                "--check",
                "grep -qx good ~/result.txt",
                "--json",
                "Write the word good into ~/result.txt",
            ]
        )
    script.verify()
    assert done.returncode == 0, done.stdout + done.stderr
    result = RunResult.from_json(json.loads(done.stdout.splitlines()[0]))
    assert result.best_of is not None
    best = result.best_of
    attempts = {a.number: a for a in best.attempts}
    good = next(n for n, a in attempts.items() if any("wrote good" in line for line in a.narrative))
    assert best.picked == good
    assert best.by == "comparative"
    assert "good written" in best.reason
    assert result.verified
    assert result.postcondition is not None
    assert sorted(a.status for a in best.attempts) == ["failed", "failed", "succeeded"]
    assert best.judge_calls == 2  # the rejected pick, then the valid one
    # the rejected pick went back to the judge with what was wrong
    second = script.judge_requests[1]
    assert any("there is no attempt 7" in t for t in _texts(second))
    # each narrative says what really happened, from the window titles and the screen
    assert any("'wrote good'" in line for line in attempts[good].narrative)
    bad = next(n for n, a in attempts.items() if any("wrote bad" in x for x in a.narrative))
    assert any("new window" in line and "xterm" in line.lower() for line in attempts[bad].narrative)
    assert any("the screen changed in" in line for line in attempts[bad].narrative)
    # the picked attempt's HOME is the one handed back; the others are gone
    (folder,) = (tmp_path / "runs").iterdir()
    assert (folder / "home" / "result.txt").read_text() == "good\n"
    for number in attempts:
        assert not (folder / f"attempt-{number}" / "home").exists()
        assert (folder / f"attempt-{number}" / "trajectory" / "narrative.json").is_file()
    saved = json.loads((folder / "best_of.json").read_text())
    assert saved["picked"] == good
    assert saved["home"] == str(folder / "home")
    assert [a["narrative"] for a in saved["attempts"]] == [list(a.narrative) for a in best.attempts]
    # the usage covers every attempt and the judge
    assert result.calls["judge"] == 2
    assert result.model_calls == 3 + 3 + 1 + 2
    for path in folder.rglob("*"):
        if path.is_file() and path.suffix in (".json", ".jsonl", ".log"):
            assert "sk-best-of-SECRET" not in path.read_text(errors="replace"), path


# -- the judge on its own ----------------------------------------------------------------------


def _provider(url: str) -> Any:
    settings = ProviderSettings(
        api="openai_compatible", model="scripted-model", base_url=url, api_key="sk-test"
    )
    return build_provider(settings)


def _candidates(tmp_path: Path) -> list[Candidate]:
    shots = []
    for number, colour in ((1, "white"), (2, "black")):
        path = tmp_path / f"final-{number}.png"
        Image.new("RGB", (1600, 1000), colour).save(path)
        shots.append(path)
    return [
        Candidate(
            1, ("1. agent.type(text='x') - the screen did not change",), "failed: no", 1, shots[0]
        ),
        Candidate(
            2,
            ("1. agent.type(text='y') - window 'a' is now titled 'y saved'",),
            "succeeded: done",
            1,
            shots[1],
        ),
    ]


LINUX = Platform("linux", 1280, 800, desktop="openbox")


def test_a_pick_of_an_attempt_that_does_not_exist_is_sent_back(tmp_path: Path) -> None:
    script = [
        reply("ATTEMPT: 3\nREASON: it saved the file"),
        reply("Attempt two is better."),
        reply("ATTEMPT: 2\nREASON: its window is titled y saved"),
    ]
    with ScriptedModelServer(script) as server:
        judge = Judge(_provider(server.openai_base_url), LINUX)
        verdict = judge.pick("Save y", _candidates(tmp_path))
    assert (verdict.picked, verdict.by) == (2, "comparative")
    assert verdict.reason == "its window is titled y saved"
    assert [c.error for c in verdict.calls] == [
        "there is no attempt 3: pick one of the attempts 1, 2",
        "the reply has no line 'ATTEMPT: N' (N one of 1, 2)",
        "",
    ]
    second = server.requests[1].body["messages"]
    assert second[-2] == {"role": "assistant", "content": "ATTEMPT: 3\nREASON: it saved the file"}
    assert "there is no attempt 3" in second[-1]["content"]
    # both final screenshots were shown, scaled down, after their narratives
    images = server.requests[0].images()
    assert len(images) == 2
    assert all(Image.open(__import__("io").BytesIO(data)).width == 1024 for _, data in images)


def test_a_judge_that_never_picks_a_real_attempt_ends_with_the_reason(tmp_path: Path) -> None:
    script = [reply("ATTEMPT: 0\nREASON: none"), reply("ATTEMPT: 5\nREASON: x")]
    with ScriptedModelServer(script) as server:
        judge = Judge(_provider(server.openai_base_url), LINUX, tries=2)
        with pytest.raises(RunEnded, match="no usable pick after 2 replies.*no attempt 5"):
            judge.pick("Save y", _candidates(tmp_path))


def test_a_tournament_compares_two_at_a_time(tmp_path: Path) -> None:
    three = [
        *_candidates(tmp_path),
        Candidate(3, ("1. agent.done() - no visible change",), "succeeded: done", 1),
    ]
    script = [
        reply("ATTEMPT: 2\nREASON: 2 saved it"),
        reply("ATTEMPT: 2\nREASON: 3 changed nothing"),
    ]
    with ScriptedModelServer(script) as server:
        verdict = Judge(_provider(server.openai_base_url), LINUX, mode="tournament").pick(
            "Save y", three
        )
    assert (verdict.picked, verdict.by, len(verdict.calls)) == (2, "tournament", 2)
    first, second = (_attempt_blocks(r) for r in server.requests)
    assert sorted(first) == [1, 2]
    assert sorted(second) == [2, 3]
    assert "none was recorded" in second[3]  # attempt 3 had no final screenshot


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("ATTEMPT: 1\nATTEMPT: 2\nREASON: both", "several attempts"),
        ("ATTEMPT: two\nREASON: x", "not an attempt number"),
        ("ATTEMPT: 2", "no line 'REASON"),
        ("I pick 2", "no line 'ATTEMPT"),
    ],
)
def test_replies_that_are_no_pick_are_refused(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        parse_pick(text, [1, 2])
    assert parse_pick("**ATTEMPT:** 2\n**REASON:** it is done", [1, 2]) == (2, "it is done")


# -- bench: every attempt scored, the judge's pick and the oracle reported ---------------------

NOTES = "hello bench"


def _notes_suite(tmp_path: Path) -> Path:
    """An index with only the smoke suite's notes task (its setup opens a terminal)."""
    from agent_s.bench.tasks import load_suite

    task = next(t for t in load_suite("smoke").tasks(["os"]) if "notes.txt" in t.instruction)
    (tmp_path / "suite" / "examples" / "os").mkdir(parents=True)
    shutil.copy(str(task.path), tmp_path / "suite" / "examples" / "os" / f"{task.id}.json")
    index = tmp_path / "suite" / "test_one.json"
    index.write_text(json.dumps({"os": [task.id]}))
    return index


def _bench_routes() -> dict[str, list[Step]]:
    def typed(route: str, words: str) -> Step:
        return act(route, f"agent.type(text=\"echo '{words}' > ~/notes.txt\", enter=True)")

    return {
        "wrong": [typed("wrong", "hello"), act("wrong", "agent.done()")],
        "right": [typed("right", NOTES), act("right", "agent.done()")],
        "quit": [act("quit", 'agent.fail("the terminal is not there")')],
    }


def _bench_run(tmp_path: Path, server: ScriptedModelServer, *extra: str) -> dict[str, Any]:
    from typer.testing import CliRunner

    from agent_s.cli.main import app

    argv = [
        "bench",
        "run",
        str(_notes_suite(tmp_path)),
        "--policy",
        "agent",
        *model_options(server.openai_base_url, key="sk-test-secret-key"),
        "--max-steps",
        "4",
        "--results",
        str(tmp_path / "results"),
        "--best-of",
        "3",
        "--json",
        *extra,
    ]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0, result.output
    payload: dict[str, Any] = json.loads(result.stdout)
    return payload


def _check_bench_record(tmp_path: Path, payload: dict[str, Any], folder_name: str) -> None:
    (record,) = payload["records"]
    best = record["best_of"]
    numbers = {a["number"]: a for a in best["attempts"]}
    right = next(n for n, a in numbers.items() if any(f"'{NOTES}'" in x for x in a["narrative"]))
    assert best["picked"] == right
    assert record["score"] == 1.0  # the picked attempt's score is the task's
    assert sorted(a["score"] for a in best["attempts"]) == [0.0, 0.0, 1.0]
    assert (best["single"], best["picked_score"], best["oracle"]) == (0.3333, 1.0, 1.0)
    rates = payload["summary"]["best_of"]
    assert rates == {
        "tasks": 1,
        "attempts": 3,
        "single_success": 0.3333,
        "picked_success": 1.0,
        "oracle_success": 1.0,
    }
    (folder,) = (tmp_path / "results").glob(f"*/*/{folder_name}/os/*")
    assert (folder / "result.txt").read_text() == "1.0\n"
    for number in numbers:
        attempt = folder / "attempts" / str(number)
        assert json.loads((attempt / "result.json").read_text())["score"] in (0.0, 1.0)
        assert (attempt / "trajectory" / "narrative.json").is_file()
    assert json.loads((folder / "best_of.json").read_text())["picked"] == right


@pytest.mark.desktop
def test_bench_scores_every_attempt_and_reports_single_picked_and_oracle(tmp_path: Path) -> None:
    script = RoutedScript(
        _bench_routes(), [pick_where(f"'{NOTES}'", "it wrote the line the task asks for")]
    )
    with ScriptedModelServer(script) as server:
        payload = _bench_run(tmp_path, server, "--workers", "3")
    script.verify()
    _check_bench_record(tmp_path, payload, "scripted-model")
    # the report reads the task folder's record, not the attempts' as tasks of their own
    from typer.testing import CliRunner

    from agent_s.cli.main import app

    shown = CliRunner().invoke(app, ["bench", "report", str(tmp_path / "results")])
    assert shown.exit_code == 0, shown.output
    assert "single attempt 33.3%, judge's pick 100.0%, oracle 100.0%" in shown.stdout
    shown = CliRunner().invoke(app, ["bench", "report", str(tmp_path / "results"), "--json"])
    report = json.loads(shown.stdout)
    assert [r["task_id"] for r in report["records"]] == [payload["records"][0]["task_id"]]
    assert report["summary"]["best_of"] == payload["summary"]["best_of"]


def test_best_of_is_for_the_agent_policy(tmp_path: Path) -> None:
    from agent_s.bench.runner import RunOptions
    from agent_s.bench.tasks import load_suite

    with pytest.raises(ValueError, match="--best-of is for --policy agent"):
        RunOptions(suite=load_suite("smoke"), results=tmp_path, policy="reference", best_of=3)
    with pytest.raises(ValueError, match="comparative or tournament"):
        RunOptions(
            suite=load_suite("smoke"),
            results=tmp_path,
            policy="reference",
            judge="vote",  # type: ignore[arg-type]
        )


# -- the attempts on a Ray cluster (loopback, as tests/test_bench_ray.py) ----------------------


@pytest.fixture
def ray_address() -> Iterator[str]:
    with ray_cluster() as address:
        yield address


@pytest.mark.desktop
def test_the_attempts_run_on_a_ray_cluster(tmp_path: Path, ray_address: str) -> None:
    script = RoutedScript(
        _bench_routes(), [pick_where(f"'{NOTES}'", "it wrote the line the task asks for")]
    )
    with ScriptedModelServer(script) as server:
        payload = _bench_run(
            tmp_path, server, "--workers", "2", "--backend", "ray", "--address", ray_address
        )
    script.verify()
    _check_bench_record(tmp_path, payload, "scripted-model")
    (folder,) = (tmp_path / "results").glob("*/*/scripted-model/os/*")
    for attempt in sorted((folder / "attempts").iterdir()):
        assert "ran on Ray node" in (attempt / "worker.log").read_text()
        assert not (attempt / "home").exists()  # each attempt's HOME stayed on the node


# -- early stop, budgets, usage errors ---------------------------------------------------------


@pytest.mark.desktop
def test_attempts_that_agree_with_their_check_passed_stop_the_rest(tmp_path: Path) -> None:
    routes = {
        name: [act(name, TERMINAL), act(name, _write("good")), act(name, "agent.done()")]
        for name in ("one", "two")
    }
    script = RoutedScript(routes, [])  # no judge call: two attempts agreed
    with ScriptedModelServer(script) as server:
        done = subprocess.run(
            [
                AGENT_S,
                "run",
                *_model_args(tmp_path, server.openai_base_url),
                "--virtual",
                "--best-of",
                "3",
                "--workers",
                "1",
                "--safety",
                "auto",
                "--record",
                str(tmp_path / "runs"),
                "--check",
                "grep -qx good ~/result.txt",
                "Write the word good into ~/result.txt",
            ],
            env={**_CLEAN, "AGENT_S_BEST_OF_AGREE": "2"},
            capture_output=True,
            text=True,
            timeout=400,
            check=False,
        )
    script.verify()
    assert "Traceback" not in done.stderr
    assert done.returncode == 0, done.stdout + done.stderr
    assert "picked attempt 1 of 3 (agreement)" in done.stdout, done.stdout
    (folder,) = (tmp_path / "runs").iterdir()
    saved = json.loads((folder / "best_of.json").read_text())
    assert [a["status"] for a in saved["attempts"]] == ["succeeded", "succeeded", "cancelled"]
    assert saved["judge_calls"] == 0
    assert (folder / "home" / "result.txt").read_text() == "good\n"
    assert not (folder / "attempt-2" / "home").exists()


@pytest.mark.desktop
def test_the_picked_attempt_is_saved_as_a_workflow_the_next_task_replays(tmp_path: Path) -> None:
    """``--save-workflow NAME`` keeps the picked attempt whose check passed; a later task with
    another file name replays it on a fresh desktop with no model call."""
    routes = {
        name: [act(name, TERMINAL), act(name, _write("good")), act(name, "agent.done()")]
        for name in ("one", "two")
    }
    memory = {
        "AGENT_S_MEMORY_DB": str(tmp_path / "memory.sqlite3"),
        "AGENT_S_MEMORY_KEY": str(tmp_path / "memory.key"),
    }
    script = RoutedScript(routes, [])  # the two attempts agree: no judge call
    args = ["--virtual", "--safety", "auto", "--record", str(tmp_path / "runs")]
    with ScriptedModelServer(script) as server:
        done = subprocess.run(
            [
                AGENT_S,
                "run",
                *_model_args(tmp_path, server.openai_base_url),
                *args,
                "--best-of",
                "2",
                "--workers",
                "1",
                "--check",
                "grep -qx good ~/result.txt",
                "--save-workflow",
                "good-word",
                "Write the word good into ~/result.txt",
            ],
            env={**_CLEAN, **memory, "AGENT_S_BEST_OF_AGREE": "2"},
            capture_output=True,
            text=True,
            timeout=400,
            check=False,
        )
    script.verify()
    assert done.returncode == 0, done.stdout + done.stderr
    assert "saved workflow good-word: 3 steps, verified --set file_1=~/result.txt" in done.stderr

    with ScriptedModelServer([]) as server:  # nothing queued: a model call would be an error
        again = subprocess.run(
            [
                AGENT_S,
                "run",
                *_model_args(tmp_path, server.openai_base_url),
                *args,
                "--check",
                "grep -qx good ~/other.txt",
                "--json",
                "Write the word good into ~/other.txt",
            ],
            env={**_CLEAN, **memory},
            capture_output=True,
            text=True,
            timeout=400,
            check=False,
        )
        assert server.requests == []
    assert again.returncode == 0, again.stdout + again.stderr
    assert "reuse: reusing workflow good-word with file_1=~/other.txt" in again.stderr
    result = json.loads(again.stdout.splitlines()[0])
    assert result["verified"]  # the check found the word in the new file
    assert result["model_calls"] == 0
    assert result["reused"]["workflow"] == "good-word"


def test_the_budget_covers_every_attempt_and_the_judge() -> None:
    from agent_s.bestofn.config import BestOfConfig
    from agent_s.bestofn.live import attempt_settings
    from agent_s.settings.read import load_settings

    settings = load_settings(
        {"limits": {"max_cost": 1.0, "max_steps": 30, "max_seconds": 600}}, environ={}
    )
    config = BestOfConfig(4, judge_share=0.2, max_total_steps=60)
    each = attempt_settings(settings, config, 450.0).limits
    assert each.max_cost == pytest.approx(0.2)  # (1.0 - 20% for the judge) / 4
    assert each.max_steps == 15
    assert each.max_seconds == 450.0
    assert BestOfConfig(3).attempt_steps(30) == 30  # no total: each attempt's own limit
    env = {"AGENT_S_BEST_OF_JUDGE": "tournament", "AGENT_S_BEST_OF_AGREE": "2"}
    got = BestOfConfig.from_environ(env, n=3, judge=None)
    assert (got.judge, got.agree, got.at_once) == ("tournament", 2, 3)
    with pytest.raises(ValueError, match="AGENT_S_BEST_OF_AGREE='x' is not valid"):
        BestOfConfig.from_environ({"AGENT_S_BEST_OF_AGREE": "x"}, n=3)
    with pytest.raises(ValueError, match="agree must be between 1 and the 3 attempts"):
        BestOfConfig(3, agree=4)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--best-of", "3"], "--best-of runs each attempt on its own virtual desktop"),
        (["--virtual", "--best-of", "3", "--dry-run"], "leave out --dry-run"),
        (["--virtual", "--best-of", "3", "--view"], "leave out --view"),
        (["--virtual", "--workers", "2"], "--workers and --judge go with --best-of N"),
        (["--virtual", "--best-of", "17"], "--best-of takes 1 to 16 attempts"),
        (["--virtual", "--best-of", "2", "--judge", "vote"], "comparative or tournament"),
    ],
)
def test_best_of_usage_errors_are_one_line_and_exit_2(
    tmp_path: Path, extra: list[str], message: str
) -> None:
    done = _agent_s(
        ["run", *_model_args(tmp_path, "http://127.0.0.1:9/v1"), *extra, "do it"], timeout=60
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in done.stderr
    assert len([line for line in done.stderr.splitlines() if "error" in line]) == 1


# -- narratives from the signals alone ---------------------------------------------------------


def test_changed_regions_are_found_and_scaled_to_the_screen(tmp_path: Path) -> None:
    before, after = tmp_path / "before.png", tmp_path / "after.png"
    Image.new("RGB", (640, 400), "white").save(before)
    changed = Image.new("RGB", (640, 400), "white")
    changed.paste((0, 0, 0), (100, 50, 200, 90))  # a dialog-sized change
    changed.paste((0, 0, 0), (600, 380, 604, 384))  # a cursor-sized one, far away
    changed.save(after)
    found = changed_regions(before, after, (1280, 800))
    assert found is not None
    regions, fraction = found
    assert len(regions) == 2
    big = regions[0]  # the largest first, in screen pixels (the image was half size)
    assert big.x <= 200
    assert big.y <= 100
    assert big.x + big.width >= 400
    assert big.y + big.height >= 180
    assert 0.0 < fraction < 0.05
    assert changed_regions(before, before) == ((), 0.0)


def test_a_step_narrative_says_what_the_signals_show(tmp_path: Path) -> None:
    from agent_s.actions import parse_action
    from agent_s.record.step import call_text

    shots = []
    for number, colour in ((1, "white"), (2, "white"), (3, "grey")):
        Image.new("RGB", (320, 200), colour).save(tmp_path / f"step_{number:03d}.png")
        shots.append(f"step_{number:03d}.png")
    typed = parse_action('agent.type(text="hello")')
    steps = [
        AgentStep(
            step=1,
            screenshot=shots[0],
            screen=(320, 200),
            active_window="Untitled 1 - Mousepad",
            action=typed,
            action_text=call_text(typed),
            observed=("the text field now reads 'hello'",),
        ),
        AgentStep(step=2, screenshot=shots[1], screen=(320, 200), active_window="*Untitled 1"),
        AgentStep(step=3, screenshot=shots[2], screen=(320, 200), active_window="*Untitled 1"),
    ]
    asked: list[str] = []

    def caption(before: bytes, after: bytes, action: str) -> str:
        asked.append(action)
        return "the whole window turned grey"

    lines, calls = narrate_steps(tmp_path, steps, caption)
    first = lines[0].line()
    assert "the text field now reads 'hello'" in first
    assert "from 'Untitled 1 - Mousepad' to '*Untitled 1'" in first
    assert "the screen did not change" in first
    # step 2's change has no window or field to explain it: one caption call, and only there
    assert calls == 1
    assert len(asked) == 1
    assert lines[1].captioned
    assert "the whole window turned grey" in lines[1].line()
    assert "no visible change" in lines[2].line()  # the last step has no screen after it


def test_a_caption_is_one_call_with_both_screens(tmp_path: Path) -> None:
    import io

    from agent_s.bestofn.captions import caption_with

    pictures = []
    for colour in ("white", "black"):
        buffer = io.BytesIO()
        Image.new("RGB", (1600, 1000), colour).save(buffer, format="PNG")
        pictures.append(buffer.getvalue())
    with ScriptedModelServer([reply("  A dark dialog now covers the screen.\n")]) as server:
        caption = caption_with(_provider(server.openai_base_url))
        text = caption(pictures[0], pictures[1], "agent.hotkey(keys=['ctrl', 's'])")
    assert text == "A dark dialog now covers the screen."
    (request,) = server.requests
    assert "agent.hotkey(keys=['ctrl', 's'])" in "\n".join(_texts(request))
    images = request.images()
    assert len(images) == 2
    widths = [Image.open(io.BytesIO(data)).width for _, data in images]
    assert widths == [768, 768]


@pytest.mark.desktop
def test_a_judge_without_a_usable_pick_keeps_every_attempts_files(tmp_path: Path) -> None:
    routes = {name: [act(name, 'agent.fail("no way")')] for name in ("one", "two")}
    script = RoutedScript(routes, [fixed("Both are fine.")] * 3)
    with ScriptedModelServer(script) as server:
        done = _agent_s(
            [
                "run",
                *_model_args(tmp_path, server.openai_base_url),
                "--virtual",
                "--best-of",
                "2",
                "--record",
                str(tmp_path / "runs"),
                "--json",
                "Write the word good into ~/result.txt",
            ]
        )
    script.verify()
    assert done.returncode == 1, done.stdout + done.stderr
    result = RunResult.from_json(json.loads(done.stdout.splitlines()[0]))
    assert result.status.value == "error"
    assert "the judge gave no usable pick" in result.reason
    assert "no usable pick after 3 replies" in result.reason
    assert result.best_of is not None
    assert result.best_of.picked == 0
    (folder,) = (tmp_path / "runs").iterdir()
    assert (folder / "attempt-1" / "home").is_dir()
    assert (folder / "attempt-2" / "home").is_dir()
    assert result.calls == {"generate": 2, "judge": 3}  # unusable, but made and paid for
    assert result.best_of.judge_calls == 3


# -- one attempt's code cannot reach another attempt's files ----------------------------------

_INTO_SIBLINGS = """import glob, os, time
mine = os.path.realpath(os.getcwd())
tried = {}
end = time.time() + 30
while time.time() < end and not tried:
    for home in glob.glob('../../attempt-*/home'):
        path = os.path.realpath(home)
        if path != mine:
            try:
                with open(os.path.join(path, 'result.txt'), 'w') as out:
                    out.write('planted by another attempt')
                tried[path] = 'PLA' + 'NTED'
            except OSError as err:
                tried[path] = 'REFU' + f'SED {err.strerror}'
    time.sleep(0.2)
print('siblings:', tried)"""


def _pick_without(marker: str) -> Callable[[RecordedRequest], Step]:
    """A judge reply naming the one attempt whose narrative lacks ``marker``."""

    def answer(request: RecordedRequest) -> Step:
        blocks = _attempt_blocks(request)
        (number,) = [n for n, text in blocks.items() if marker not in text]
        return reply(f"ATTEMPT: {number}\nREASON: it did only what was asked")

    return answer


@pytest.mark.desktop
def test_an_attempts_code_cannot_write_into_another_attempts_home(tmp_path: Path) -> None:
    """The attack on issue 27: with no --code-sandbox flag, one attempt's code block writes
    into the other attempt's HOME, the one the judge then hands back."""
    fence = "```"
    routes = {
        "evil": [
            act("evil", 'agent.call_code_agent("[route evil] tidy the files up")'),
            reply(f"Run this.\n{fence}python\n{_INTO_SIBLINGS}\n{fence}"),
            reply("Tidied.\nDONE"),
            act("evil", "agent.done()"),
        ],
        "good": [act("good", "agent.wait(2)"), act("good", "agent.done()")],
    }
    script = RoutedScript(routes, [_pick_without("call_code_agent")])
    # the records where a user keeps them (~/.local/share/...): not under /tmp, which the
    # sandbox covers anyway
    with outside_tmp(tmp_path) as runs:
        _attack_siblings(tmp_path, runs, script)


def _attack_siblings(tmp_path: Path, runs: Path, script: RoutedScript) -> None:
    with ScriptedModelServer(script) as server:
        done = _agent_s(
            [
                "run",
                *_model_args(tmp_path, server.openai_base_url),
                "--virtual",
                "--best-of",
                "2",
                "--workers",
                "2",
                "--safety",
                "auto",
                "--record",
                str(runs),
                "--json",
                "Look at the desktop and say when you are done",
            ]
        )
    script.verify()
    assert done.returncode == 0, done.stdout + done.stderr
    (folder,) = runs.iterdir()
    # the HOME handed back (the other attempt's) holds nothing the evil attempt wrote ...
    assert (folder / "home").is_dir()
    assert not (folder / "home" / "result.txt").exists()
    # ... and the evil attempt's code did find it: it was refused writing there
    logs = [p.read_text() for p in folder.rglob("trajectory.jsonl")]
    assert not any("PLANTED" in text for text in logs)
    assert any("REFUSED" in text for text in logs), logs
