"""Files stay in their folder (issue 27), tried as an attacker would: a crafted run folder whose
steps name ``../../secret/id_rsa``, an absolute path or a link planted in the folder; links
planted at an output file's name and at its old temporary name (standing in for ``~/.bashrc``);
an output folder that is a link; a ``run.json`` that links out of the MCP record folder. Each is
checked by its effect (the secret's bytes in no output, the planted target unchanged, the refused
folder untouched, a line naming what was skipped), through the CLI and the SDK; then the lock
itself (``agent_s.guards.files``) as a unit, with generated names."""

from __future__ import annotations

import base64
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from clean_env import clean_env
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image
from typer.testing import CliRunner

from agent_s.cli.main import app
from agent_s.guards import files
from agent_s.memory import MemoryStore
from agent_s.record.result import RunResult, RunStatus, Timings
from agent_s.record.step import Step
from agent_s.record.trajectory import TrajectoryWriter, load_trajectory
from agent_s.report.export import export
from agent_s.report.pages import write_report

AGENT_S = str(Path(sys.executable).parent / "agent-s")
SECRET = b"\x89PNG\r\n\x1a\n-----BEGIN OPENSSH PRIVATE KEY----- attacker-wants-this 0123456789"
BASHRC = "# the user's ~/.bashrc\nexport PATH=$HOME/bin:$PATH\n"
_CLEAN = clean_env()


def _png(colour: str = "white") -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (64, 40), colour).save(buffer, "PNG")
    return buffer.getvalue()


def crafted_run(tmp_path: Path) -> tuple[Path, Path]:
    """``tmp_path/runs/run-1``: step 1's screenshot is a real one; the others name the secret
    (``tmp_path/secret/id_rsa``, also as ``key.png``) by ``..``, by its absolute path, and
    through links planted in the folder (a screenshot and an approver's image). The folder and
    the secret."""
    secret = tmp_path / "secret" / "id_rsa"
    secret.parent.mkdir()
    secret.write_bytes(SECRET)
    (secret.parent / "key.png").write_bytes(SECRET)
    writer = TrajectoryWriter(tmp_path / "runs" / "run-1")
    writer.write_run({"task": "crafted", "model": "scripted-model"})
    writer.write_image("step_001.png", _png())
    (writer.folder / "planted.png").symlink_to(secret)
    (writer.folder / "approval.png").symlink_to(secret)
    names = [
        "step_001.png",
        "../../secret/id_rsa",
        str(secret),
        "planted.png",
        "../../secret/key.png",
        "sub/../../../secret/key.png",
    ]
    for n, name in enumerate(names, 1):
        writer.write_step(
            Step(
                step=n,
                started_at=1_700_000_000.0 + n,
                screenshot=name,
                screen=(64, 40),
                action_text="agent.type(text='hello', enter=True)",
                outcome="ok",
                safety={"allowed": True, "decided_by": "approver", "image": "approval.png"},
            )
        )
    writer.close()
    return writer.folder, secret


def _bashrc(tmp_path: Path) -> Path:
    target = tmp_path / "home" / ".bashrc"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(BASHRC)
    return target


def leaked(*roots: Path) -> list[str]:
    """Files under ``roots`` (links not followed) that hold the secret, raw or as base64."""
    marks = (SECRET, base64.b64encode(SECRET), b"attacker-wants-this")
    found = []
    for root in roots:
        walk = [root] if root.is_file() else [Path(d) / f for d, _, fs in os.walk(root) for f in fs]
        for path in walk:
            if path.is_symlink():
                continue
            data = path.read_bytes()
            if any(mark in data for mark in marks):
                found.append(str(path))
    return found


def _cli(*args: str) -> Any:
    return CliRunner().invoke(app, list(args), env=_CLEAN)


# -- report -------------------------------------------------------------------------------------


@pytest.mark.parametrize("embed", [True, False])
def test_report_reads_no_screenshot_outside_the_run_folder(tmp_path: Path, embed: bool) -> None:
    run, secret = crafted_run(tmp_path)
    out = tmp_path / "out" / "page.html"
    done = _cli("report", str(run), "--out", str(out), *(["--embed"] if embed else []))
    assert done.exit_code == 0, done.output
    assert leaked(tmp_path / "out") == []
    page = out.read_text()
    sources = re.findall(r'<img src="([^"]*)"', page)
    assert sources
    assert all(s.startswith(("data:image/png;base64,", "page_files/")) for s in sources)
    for name in ("../../secret/id_rsa", str(secret), "planted.png", "approval.png"):
        assert name in done.stderr, (name, done.stderr)
    assert "Traceback" not in done.output
    if embed:  # the one screenshot inside the folder is still shown
        assert base64.b64encode(_png()).decode() in page
    else:
        assert sorted(p.name for p in (tmp_path / "out" / "page_files").iterdir()) == [
            "step_001.png"
        ]


def test_report_in_the_run_folder_writes_through_no_planted_link(tmp_path: Path) -> None:
    run, _ = crafted_run(tmp_path)
    bashrc = _bashrc(tmp_path)
    (run / ".report.html.tmp").symlink_to(bashrc)  # the temporary name it used to write
    page = write_report(run, embed=True)  # the SDK
    assert bashrc.read_text() == BASHRC
    assert leaked(page) == []
    assert page.read_text().startswith("<!DOCTYPE html>")
    (run / "report.html").unlink()
    (run / "report.html").symlink_to(bashrc)  # the page's own name
    assert _cli("report", str(run)).exit_code == 0
    assert bashrc.read_text() == BASHRC
    assert not (run / "report.html").is_symlink()
    leftovers = [p.name for p in run.iterdir() if p.name.endswith(".tmp") and not p.is_symlink()]
    assert leftovers == []


def test_report_refuses_a_linked_images_folder_and_output_folder(tmp_path: Path) -> None:
    run, _ = crafted_run(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "page_files").symlink_to(elsewhere)
    done = _cli("report", str(run), "--out", str(tmp_path / "out" / "page.html"))
    assert done.exit_code == 1
    assert "symbolic link" in done.output
    assert "Traceback" not in done.output
    assert list(elsewhere.iterdir()) == []
    (tmp_path / "linked").symlink_to(elsewhere)
    done = _cli("report", str(run), "--out", str(tmp_path / "linked" / "page.html"))
    assert done.exit_code == 1
    assert "symbolic link" in done.output
    assert list(elsewhere.iterdir()) == []


# -- export ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["openai", "anthropic"])
def test_export_messages_carry_no_outside_file(tmp_path: Path, fmt: str) -> None:
    run, secret = crafted_run(tmp_path)
    bashrc = _bashrc(tmp_path)
    (run / f".messages-{fmt}.json.tmp").symlink_to(bashrc)
    done = _cli("export", str(run), "--format", fmt)
    assert done.exit_code == 0, done.output
    written = run / f"messages-{fmt}.json"
    assert bashrc.read_text() == BASHRC
    assert leaked(written) == []
    data = json.loads(written.read_text())
    images = [c for m in data["messages"] if m["role"] == "user" for c in m["content"]]
    assert sum(1 for c in images if c["type"] in ("image", "image_url")) == 1  # step 1's own
    for name in ("../../secret/id_rsa", str(secret), "planted.png"):
        assert name in done.stderr


def test_export_writes_through_no_link_at_its_file(tmp_path: Path) -> None:
    run, _ = crafted_run(tmp_path)
    bashrc = _bashrc(tmp_path)
    profile = _bashrc(tmp_path / "other")
    (tmp_path / "chat.json").symlink_to(bashrc)
    (tmp_path / ".chat.json.tmp").symlink_to(profile)
    written = export(run, "openai", tmp_path / "chat.json")  # the SDK
    assert bashrc.read_text() == BASHRC
    assert profile.read_text() == BASHRC
    assert json.loads(written.read_text())["format"] == "openai-chat"


def test_export_osworld_refuses_a_linked_folder_and_copies_no_outside_file(tmp_path: Path) -> None:
    run, _ = crafted_run(tmp_path)
    elsewhere = tmp_path / "autostart"
    elsewhere.mkdir()
    (run / "osworld").symlink_to(elsewhere)  # planted at the default output folder
    done = _cli("export", str(run), "--format", "osworld")
    assert done.exit_code != 0
    assert "symbolic link" in done.output
    assert "Traceback" not in done.output
    assert len(done.output.strip().splitlines()) == 1 + done.stderr.count("skipped")
    assert list(elsewhere.iterdir()) == []
    (tmp_path / "given").symlink_to(elsewhere)
    with pytest.raises(files.UnsafeFolder):
        export(run, "osworld", tmp_path / "given")
    assert list(elsewhere.iterdir()) == []

    (run / "osworld").unlink()
    bashrc = _bashrc(tmp_path)
    (run / "osworld").mkdir()
    (run / "osworld" / "traj.jsonl").symlink_to(bashrc)
    (run / "osworld" / ".traj.jsonl.tmp").symlink_to(bashrc)
    folder = export(run, "osworld")
    assert bashrc.read_text() == BASHRC
    assert leaked(folder) == []
    lines = [json.loads(x) for x in (folder / "traj.jsonl").read_text().splitlines()]
    shots = [x["screenshot_file"] for x in lines if "screenshot_file" in x]
    assert shots
    assert all((folder / s).read_bytes() == _png() for s in shots)


# -- reading a run: replay, workflow save, the loader ---------------------------------------------


def test_workflow_save_reads_no_result_linked_from_outside(tmp_path: Path) -> None:
    run, _ = crafted_run(tmp_path)
    other = tmp_path / "elsewhere" / "result.json"
    other.parent.mkdir()
    won = RunResult(
        task="crafted",
        status=RunStatus.SUCCEEDED,
        cause="done",
        reason="",
        steps=1,
        timings=Timings(total=1.0),
        trajectory_dir=run,
    )
    other.write_text(json.dumps(won.to_json()))
    (run / "result.json").symlink_to(other)  # the run never ended; a success linked in
    db = tmp_path / "memory.sqlite3"
    done = _cli("workflow", "save", str(run), "crafted-flow", "--db", str(db))
    assert done.exit_code != 0, done.output
    assert "result.json" in done.stderr
    assert "did not succeed" in done.output
    listed = _cli("workflow", "list", "--db", str(db))
    assert "crafted-flow" not in listed.output
    assert load_trajectory(run).result is None  # the SDK's loader
    (run / "trajectory.jsonl").rename(tmp_path / "elsewhere" / "trajectory.jsonl")
    (run / "trajectory.jsonl").symlink_to(tmp_path / "elsewhere" / "trajectory.jsonl")
    with pytest.raises(FileNotFoundError):
        load_trajectory(run)
    replayed = _cli("replay", str(run))
    assert replayed.exit_code != 0
    assert "trajectory.jsonl" in replayed.output
    assert "Traceback" not in replayed.output


# -- MCP: the record folder ---------------------------------------------------------------------


def test_mcp_lists_and_reads_nothing_linked_out_of_the_record_folder(tmp_path: Path) -> None:
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    runs = tmp_path / "runs"
    run, secret = crafted_run(tmp_path)
    outside = tmp_path / "private.json"
    outside.write_text(json.dumps({"task": "PRIVATE-TASK-TEXT attacker-wants-this"}))
    (run / "run.json").unlink()
    (run / "run.json").symlink_to(outside)
    env = {**_CLEAN, "AGENT_S_RECORD_DIR": str(runs), "DISPLAY": ":999"}
    params = StdioServerParameters(command=AGENT_S, args=["mcp"], env=env)

    async def main() -> tuple[dict[str, Any], Any]:
        async with (
            stdio_client(params) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            listed = await session.call_tool("list_trajectories", {})
            one = await session.call_tool("read_trajectory", {"run": "run-1"})
            assert not listed.is_error, listed
            if one.is_error:  # a folder whose own files link out is refused whole
                return dict(listed.structured_content or {}), one.content
            return dict(listed.structured_content or {}), dict(one.structured_content or {})

    listed, refused = anyio.run(main)
    assert "PRIVATE-TASK-TEXT" not in json.dumps(listed) + str(refused)
    assert any("run.json" in line for line in listed["skipped"]), listed["skipped"]
    assert [t["id"] for t in listed["trajectories"]] == ["run-1"]
    assert "outside the record folder" in str(refused)

    (run / "run.json").unlink()  # now only the steps' screenshots lead out
    _, one = anyio.run(main)
    shots = [s["screenshot"] for s in one["steps"]]
    assert shots == ["step_001.png", None, None, None, None, None]
    for name in ("../../secret/id_rsa", str(secret), "planted.png"):
        assert any(name in line for line in one["skipped"]), (name, one["skipped"])


# -- memory export and bench results --------------------------------------------------------------


def test_memory_export_writes_through_no_planted_link(tmp_path: Path) -> None:
    bashrc = _bashrc(tmp_path)
    db = tmp_path / "memory.sqlite3"
    MemoryStore(db).close()
    (tmp_path / "export.jsonl").symlink_to(bashrc)
    done = _cli("memory", "export", str(tmp_path / "export.jsonl"), "--db", str(db))
    assert done.exit_code == 0, done.output
    assert bashrc.read_text() == BASHRC
    exported = tmp_path / "export.jsonl"
    assert not exported.is_symlink()
    assert exported.stat().st_mode & 0o777 == 0o600


def test_bench_results_refuse_a_linked_folder_on_the_way(tmp_path: Path) -> None:
    """``bench run`` would empty and write a task's folder under a planted link (rmtree of the
    task folder, then its results): refused before any task starts, in one line."""
    results = tmp_path / "results"
    victim = tmp_path / "victim"
    (victim / "keep").mkdir(parents=True)
    (victim / "keep" / "data.txt").write_text("the user's")
    from agent_s.bench.runner import RunOptions, task_folder
    from agent_s.bench.tasks import load_suite

    suite = load_suite("smoke")
    task = next(suite.tasks(["text_editor"]))
    domain = task_folder(RunOptions(suite=suite, results=results, policy="noop"), task).parent
    domain.parent.mkdir(parents=True)
    domain.symlink_to(victim)
    (victim / task.id).mkdir()
    (victim / task.id / "mine.txt").write_text("the user's")
    argv = [AGENT_S, "bench", "run", "smoke", "--results", str(results)]
    done = subprocess.run(
        [*argv, "--policy", "noop", "--domain", "text_editor"],
        env=_CLEAN,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "symbolic link" in done.stderr
    assert "Traceback" not in done.stderr
    assert (victim / task.id / "mine.txt").read_text() == "the user's"
    assert sorted(p.name for p in victim.iterdir()) == sorted(["keep", task.id])


def test_bench_report_shows_no_screenshot_linked_out_of_a_task(tmp_path: Path) -> None:
    secret = tmp_path / "secret.png"
    secret.write_bytes(SECRET)
    task = tmp_path / "results" / "pyautogui" / "screenshot" / "m" / "os" / "t1"
    task.mkdir(parents=True)
    (task / "result.json").write_text(
        json.dumps({"task_id": "t1", "domain": "os", "status": "ok", "score": 0.0})
    )
    (task / "result.txt").write_text("0.0\n")
    (task / "step_1_x.png").symlink_to(secret)
    line = {"step_num": 1, "action": "DONE", "screenshot_file": "step_1_x.png", "done": True}
    (task / "traj.jsonl").write_text(json.dumps(line) + "\n")
    out = tmp_path / "page" / "index.html"
    done = _cli("report", str(tmp_path / "results"), "--out", str(out), "--embed")
    assert done.exit_code == 0, done.output
    assert leaked(tmp_path / "page") == []
    assert "step_1_x.png" in done.stderr


# -- the lock itself ------------------------------------------------------------------------------


def test_inside_refuses_every_way_out(tmp_path: Path) -> None:
    root = tmp_path / "run"
    (root / "sub").mkdir(parents=True)
    (root / "a.png").write_bytes(b"a")
    (tmp_path / "out.png").write_bytes(b"o")
    (root / "in_link.png").symlink_to(root / "a.png")
    (root / "out_link.png").symlink_to(tmp_path / "out.png")
    (root / "out_dir").symlink_to(tmp_path)
    (root / "loop").symlink_to(root / "loop")
    assert files.inside(root, "a.png") == (root / "a.png").resolve()
    assert files.inside(root, "sub/../a.png") == (root / "a.png").resolve()
    assert files.inside(root, "in_link.png") == (root / "a.png").resolve()
    for name in (
        "../out.png",
        "sub/../../out.png",
        str(tmp_path / "out.png"),
        "/etc/passwd",
        "out_link.png",
        "out_dir/out.png",
        "loop",
        "",
        "a\x00.png",
    ):
        with pytest.raises(files.OutsideFolder):
            files.inside(root, name)
    with files.collect_skips() as said:
        assert files.contained(root, "../out.png", "step 2's screenshot") is None
    assert said == [
        f"step 2's screenshot '../out.png': it climbs out of {root} with '..'; not read"
    ]


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    parts=st.lists(st.sampled_from(["..", ".", "a", "b", "up", "pic.png", "/", "~"]), max_size=6)
)
def test_whatever_a_name_says_the_path_given_is_inside(tmp_path: Path, parts: list[str]) -> None:
    root = tmp_path / "gen" / "run"
    if not root.exists():
        (root / "a" / "b").mkdir(parents=True)
        (root / "up").symlink_to(tmp_path / "gen")
    name = "/".join(parts)
    try:
        real = files.inside(root, name)
    except files.OutsideFolder:
        return
    top = root.resolve()
    assert real == top or top in real.parents


def test_writes_replace_links_and_leave_no_temporary_file(tmp_path: Path) -> None:
    bashrc = _bashrc(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "page.html").symlink_to(bashrc)
    (out / ".page.html.tmp").symlink_to(bashrc)
    files.write_text(out / "page.html", "<p>hi</p>")
    assert bashrc.read_text() == BASHRC
    assert (out / "page.html").read_text() == "<p>hi</p>"
    assert not (out / "page.html").is_symlink()
    assert sorted(p.name for p in out.iterdir()) == [".page.html.tmp", "page.html"]

    def half_a_page() -> None:
        with files.AtomicFile(out / "half.html", text=True) as half:
            half.file.write("half a page")
            raise RuntimeError("the page failed half-way")

    with pytest.raises(RuntimeError):
        half_a_page()
    assert not (out / "half.html").exists()
    assert sorted(p.name for p in out.iterdir()) == [".page.html.tmp", "page.html"]
    (out / "log.jsonl").symlink_to(bashrc)
    with pytest.raises(OSError, match="symbolic link"):
        files.open_append(out / "log.jsonl")
    assert bashrc.read_text() == BASHRC
    written = files.write_bytes(out / "secret.json", b"{}", mode=0o600)
    assert written.stat().st_mode & 0o777 == 0o600


def test_output_folders_follow_no_link(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "link").symlink_to(elsewhere)
    with pytest.raises(files.UnsafeFolder, match="symbolic link"):
        files.write_text(tmp_path / "link" / "x.txt", "x")
    with pytest.raises(files.UnsafeFolder, match="symbolic link"):
        files.output_folder(tmp_path / "link" / "new", base=tmp_path)
    with pytest.raises(files.UnsafeFolder, match="symbolic link"):
        files.output_folder(tmp_path / "link", base=tmp_path / "link")
    assert list(elsewhere.iterdir()) == []
    made = files.output_folder(tmp_path / "a" / "b" / "c", base=tmp_path)
    assert made.is_dir()
    assert not made.is_symlink()
    (tmp_path / "plain").write_text("x")
    with pytest.raises(files.UnsafeFolder, match="not a folder"):
        files.output_folder(tmp_path / "plain")
    source = tmp_path / "a" / "shot.png"
    source.write_bytes(b"png")
    files.copy_into(files.inside(tmp_path / "a", "shot.png"), tmp_path / "a" / "b" / "copy.png")
    assert (tmp_path / "a" / "b" / "copy.png").read_bytes() == b"png"


def test_a_skipped_path_is_said_once_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "run").mkdir()
    for _ in range(3):
        assert files.contained(tmp_path / "run", "/etc/passwd", "step 9's screenshot") is None
    said = capsys.readouterr().err.splitlines()
    assert said == [
        "agent-s: skipped step 9's screenshot '/etc/passwd': it is an absolute path, not a name "
        f"inside {tmp_path / 'run'}; not read"
    ]
