"""A one-node Ray cluster on loopback for the tests that run on the Ray backend.

It lives on 127.0.0.2: Ray rewrites 127.0.0.1 and "localhost" to the machine's interface
address, and these tests must talk to nothing but loopback. Every process of the cluster is in
the head's process group, which is killed at the end: on SIGTERM Ray drains for up to 30 s
first, and a test has no work left on it to drain.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

HOST = "127.0.0.2"
RAY = Path(sys.executable).with_name("ray")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def _start_head(temp: Path) -> tuple[subprocess.Popen[bytes], str] | None:
    """Start a head on a free port; its address once it says it has started, or None if it
    exited first (another process took the port between our look and its bind: the Ray
    clusters of two test files start side by side on their own random ports)."""
    port = free_port()
    argv = [
        str(RAY),
        "start",
        "--head",
        "--block",
        f"--node-ip-address={HOST}",
        f"--port={port}",
        "--num-cpus=2",
        "--include-dashboard=false",
        "--disable-usage-stats",
        f"--temp-dir={temp}",
    ]
    log = temp / "head.log"
    with log.open("ab") as out:
        head = subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    # Its GCS port listens seconds before the node is up (3 s against 1.2 s here when idle,
    # longer under load): a client that connects in between can fail. "ray start" says when.
    deadline = time.monotonic() + 90
    while "Ray runtime started" not in log.read_text("utf-8", "replace"):
        if head.poll() is not None:
            _kill(head)  # whatever it had started
            return None
        if time.monotonic() > deadline:
            _kill(head)
            pytest.fail(f"the Ray head did not start in 90 s: {log.read_text()}")
        time.sleep(0.3)
    return head, f"{HOST}:{port}"


def _kill(head: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(head.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        head.wait(10)


@contextlib.contextmanager
def ray_cluster() -> Iterator[str]:
    """Start the head (2 CPUs, no dashboard) and yield its address; skip without Ray."""
    pytest.importorskip("ray")
    if not RAY.exists():
        pytest.skip("the ray command is not installed next to this Python")
    temp = Path(tempfile.mkdtemp(prefix="rt", dir="/tmp"))  # short: Ray's socket paths
    started = None
    try:
        for _ in range(3):
            started = _start_head(temp)
            if started is not None:
                break
        if started is None:
            pytest.fail(f"the Ray head exited three times: {(temp / 'head.log').read_text()}")
        yield started[1]
    finally:
        if started is not None:
            _kill(started[0])
        shutil.rmtree(temp, ignore_errors=True)
