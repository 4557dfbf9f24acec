"""The runner on a Ray cluster: a real head node started on loopback inside the test.

The cluster lives on 127.0.0.2: Ray rewrites 127.0.0.1 and "localhost" to the machine's
interface address, and this test must talk to nothing but loopback.

Each Ray task runs a smoke task on its own virtual desktop in a scratch folder and sends the
files back; the results folder must look exactly as after a local run (minus the task's
HOME, which stays on the node), and the scores must be the reference policy's 1.0.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from ray_cluster import HOST, free_port, ray_cluster

from agent_s.bench.distributed import write_back
from agent_s.bench.runner import RunOptions, run_suite, task_folder
from agent_s.bench.tasks import load_suite

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def ray_address() -> Iterator[str]:
    """A one-node Ray cluster on loopback (tests/ray_cluster.py)."""
    with ray_cluster() as address:
        yield address


def test_write_back_stays_inside_the_task_folder(tmp_path: Path) -> None:
    folder = tmp_path / "task"
    write_back(folder, {"result.txt": b"1.0\n", "trajectory/result.json": b"{}"})
    assert (folder / "result.txt").read_bytes() == b"1.0\n"
    assert (folder / "trajectory" / "result.json").is_file()
    with pytest.raises(ValueError, match="outside"):
        write_back(folder, {"../escape.txt": b"x"})
    assert not (tmp_path / "escape.txt").exists()


def test_run_options_check_the_backend(tmp_path: Path) -> None:
    suite = load_suite("smoke")
    with pytest.raises(ValueError, match="backend"):
        RunOptions(suite=suite, results=tmp_path, backend="cloud")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="ray backend only"):
        RunOptions(suite=suite, results=tmp_path, address="127.0.0.1:1")


@pytest.mark.desktop
@pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is not installed")
def test_reference_run_on_a_local_ray_cluster(tmp_path: Path, ray_address: str) -> None:
    suite = load_suite("smoke")
    results = tmp_path / "results"
    options = RunOptions(
        suite=suite,
        results=results,
        policy="reference",
        workers=2,
        domains=("os",),
        backend="ray",
        address=ray_address,
    )
    records = run_suite(options)
    tasks = list(suite.tasks(["os"]))
    assert [r["task_id"] for r in records] == [t.id for t in tasks]
    assert all(r["status"] != "error" for r in records), records
    assert {r["task_id"]: r["score"] for r in records} == {t.id: 1.0 for t in tasks}
    assert not ray.is_initialized()  # the run connected and disconnected
    for task in tasks:
        folder = task_folder(options, task)
        assert (folder / "result.txt").read_text() == "1.0\n"
        assert json.loads((folder / "result.json").read_text())["score"] == 1.0
        lines = (folder / "traj.jsonl").read_text().splitlines()
        assert len(lines) == len(task.reference or ())
        assert "ran on Ray node" in (folder / "worker.log").read_text()
        assert not (folder / "home").exists()  # the HOME stayed on the node
    again = run_suite(options)  # resume works the same on the cluster
    assert all(r.get("resumed") for r in again)


def test_an_unreachable_cluster_is_a_clear_error_at_once(tmp_path: Path) -> None:
    closed = f"{HOST}:{free_port()}"  # nothing listens there
    started = time.monotonic()
    result = subprocess.run(
        [
            str(Path(sys.executable).with_name("agent-s")),
            "bench",
            "run",
            "smoke",
            "--policy",
            "reference",
            "--backend",
            "ray",
            "--address",
            closed,
            "--results",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"no Ray cluster answers at {closed}" in result.stderr
    assert "Traceback" not in result.stderr
    assert time.monotonic() - started < 60
