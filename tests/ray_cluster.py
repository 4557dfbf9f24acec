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


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((HOST, port)) == 0


@contextlib.contextmanager
def ray_cluster() -> Iterator[str]:
    """Start the head (2 CPUs, no dashboard) and yield its address; skip without Ray."""
    pytest.importorskip("ray")
    if not RAY.exists():
        pytest.skip("the ray command is not installed next to this Python")
    port = free_port()
    temp = Path(tempfile.mkdtemp(prefix="rt", dir="/tmp"))  # short: Ray's socket paths
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
    log = open(temp / "head.log", "wb")  # noqa: SIM115  (closed below)
    head = subprocess.Popen(
        argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 60
        while not _listening(port):
            if head.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the Ray head did not start: {(temp / 'head.log').read_text()}")
            time.sleep(0.3)
        yield f"{HOST}:{port}"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(head.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            head.wait(10)
        log.close()
        shutil.rmtree(temp, ignore_errors=True)
