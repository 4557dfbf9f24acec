"""Tasks on a Ray cluster: ``agent-s bench run ... --backend ray --address HOST:PORT``.

Each task is one Ray task (one CPU). On whatever node it lands, it runs the same worker
process as a local run (``python -m agent_s.bench.worker``: its own virtual desktop) in a
scratch folder, then sends the task's files back; the driver writes them into the results
folder, so nodes need no shared storage. The task file travels with the task. Every node
needs agent-s (with the ``ray`` extra) and the apps the tasks use; a ``--file-cache`` folder
must exist at the same path on every node. The task's HOME (``home/``) stays on the node and
is deleted with the scratch folder.

    with RayBackend("127.0.0.1:6379") as ray_backend:
        code = ray_backend.run(spec, task_text, api_key, timeout, folder)
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from agent_s.bench.worker import LIFELINE_VAR, SPEC_FILE
from agent_s.guards import files as guard

#: Folders of a task that stay on the node: the desktop's HOME.
NODE_ONLY = ("home",)


class RayUnavailable(RuntimeError):
    """``--backend ray`` without Ray installed, or no cluster at the address."""


STOP_GRACE = 30.0  # seconds a worker has to stop its desktop after SIGTERM, before SIGKILL


class Workers:
    """The worker processes running now, so that a cancelled run ends them and starts no more.

    Each worker's stdin is a pipe whose write end only this process holds (its lifeline): if
    this process dies, even by SIGKILL, the worker reads end of file and stops as on SIGTERM.
    """

    def __init__(self) -> None:
        self._procs: set[subprocess.Popen[bytes]] = set()
        self._lock = threading.Lock()
        self.cancelled = False

    def start(self, argv: list[str], **kwargs: Any) -> subprocess.Popen[bytes] | None:
        """Start a worker, unless the run is cancelled (then ``None``)."""
        with self._lock:
            if self.cancelled:
                return None
            proc = subprocess.Popen(argv, **kwargs)
            self._procs.add(proc)
            return proc

    def finished(self, proc: subprocess.Popen[bytes]) -> None:
        with self._lock:
            self._procs.discard(proc)

    def cancel(self, grace: float = STOP_GRACE) -> None:
        """Start no more workers; SIGTERM the running ones (each stops its desktop and writes
        its record) and wait for them; SIGKILL any still running after ``grace`` seconds."""
        with self._lock:
            self.cancelled = True
            procs = list(self._procs)
        _stop(procs, grace)


def _stop(procs: list[subprocess.Popen[bytes]], grace: float) -> None:
    """SIGTERM each, wait up to ``grace`` seconds for all, SIGKILL those still running."""
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + grace
    while any(proc.poll() is None for proc in procs) and time.monotonic() < deadline:
        time.sleep(0.05)
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def run_worker(
    spec: dict[str, Any],
    folder: Path,
    api_key: str | None,
    timeout: float,
    workers: Workers | None = None,
    module: str = "agent_s.bench.worker",
) -> int | str:
    """Run one task's worker process on this machine (the local backend does this too);
    its output goes to ``worker.log`` in the folder. The exit status, or why there is none.
    ``workers``: the run's running workers (``Workers.cancel`` ends them). ``module``: the
    worker's module (a best-of-N attempt runs ``agent_s.bestofn.attempt``)."""
    guard.write_text(folder / SPEC_FILE, json.dumps(spec, indent=1))
    env = dict(os.environ)
    env.pop("AGENT_S_BENCH_API_KEY", None)
    if api_key:
        env["AGENT_S_BENCH_API_KEY"] = api_key
    env[LIFELINE_VAR] = "0"  # its stdin
    argv = [sys.executable, "-m", module, str((folder / SPEC_FILE).resolve())]
    workers = Workers() if workers is None else workers
    with open(folder / "worker.log", "wb") as log:
        read_fd, write_fd = os.pipe()
        try:
            # cwd is the task folder: ``python -m`` puts its cwd first on sys.path, and a
            # checkout's own agent_s/ folder there would shadow the installed package.
            proc = workers.start(
                argv, env=env, cwd=folder, stdin=read_fd, stdout=log, stderr=subprocess.STDOUT
            )
        except BaseException:
            os.close(write_fd)
            raise
        finally:
            os.close(read_fd)
        if proc is None:
            os.close(write_fd)
            return "not started: the run was cancelled"
        try:
            return proc.wait(timeout)
        except subprocess.TimeoutExpired:
            _stop([proc], STOP_GRACE)
            return f"timed out after {timeout:g} s"
        except BaseException:  # interrupted here: the worker must not outlive the call
            _stop([proc], STOP_GRACE)
            raise
        finally:
            workers.finished(proc)
            os.close(write_fd)


def run_on_node(
    spec: dict[str, Any], task_text: str, api_key: str | None, timeout: float
) -> tuple[int | str, str, dict[str, bytes]]:
    """The body of a Ray task: run the worker in a scratch folder on this node; return its
    exit status, the node's host name and the task's files (relative path -> bytes)."""

    scratch = Path(tempfile.mkdtemp(prefix="agent-s-ray-"))
    try:
        folder = scratch / "task"
        folder.mkdir()
        task_path = scratch / "task.json"
        task_path.write_text(task_text, encoding="utf-8")
        code = run_worker(
            {**spec, "folder": str(folder), "task_path": str(task_path)}, folder, api_key, timeout
        )
        files = {}
        for path in sorted(folder.rglob("*")):
            relative = path.relative_to(folder)
            if path.is_file() and not path.is_symlink() and relative.parts[0] not in NODE_ONLY:
                files[relative.as_posix()] = path.read_bytes()
        return code, socket.gethostname(), files
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def write_back(folder: Path, files: dict[str, bytes]) -> None:
    """Write a task's files, as sent by a node, under its results folder (nothing outside)."""
    for name, data in files.items():
        try:
            target = guard.inside(folder, name)
        except guard.OutsideFolder:
            raise ValueError(f"a node sent a file outside the task folder: {name!r}") from None
        guard.output_folder(target.parent, base=folder.resolve())
        guard.write_bytes(target, data)


def _reachable(address: str, timeout: float = 5.0) -> str:
    """The host of ``host:port`` once a TCP connection to it succeeds; a clear error if not
    (Ray itself retries an unreachable cluster for minutes)."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise RayUnavailable(f"a Ray address is host:port, not {address!r}")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            return host
    except OSError as err:
        raise RayUnavailable(f"no Ray cluster answers at {address}: {err}") from err


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


class RayBackend:
    """A connection to a Ray cluster for one run (``ray.init`` / ``ray.shutdown``)."""

    def __init__(self, address: str | None) -> None:
        self.address = address
        self._remote: Any = None
        self._started = False
        self._refs: set[Any] = set()  # the Ray tasks in flight
        self._lock = threading.Lock()

    def __enter__(self) -> RayBackend:
        try:
            import ray
        except ImportError as err:
            raise RayUnavailable("--backend ray needs Ray: pip install 'agent-s[ray]'") from err
        if not ray.is_initialized():
            extra: dict[str, Any] = {}
            if self.address:
                host = _reachable(self.address)
                if _is_loopback(host):
                    # The driver joins the node on that same loopback address rather than
                    # announcing the machine's interface address.
                    extra["_node_ip_address"] = host
            try:
                ray.init(
                    address=self.address or "auto",
                    log_to_driver=False,
                    logging_level=logging.WARNING,
                    **extra,
                )
            except (ConnectionError, RuntimeError) as err:
                raise RayUnavailable(f"no Ray cluster at {self.address or 'auto'}: {err}") from err
            self._started = True
        self._remote = ray.remote(num_cpus=1, max_retries=0)(run_on_node)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._started:
            import ray

            ray.shutdown()
            self._started = False

    def run(
        self,
        spec: dict[str, Any],
        task_text: str,
        api_key: str | None,
        timeout: float,
        folder: Path,
    ) -> int | str:
        """Run one task on the cluster and write its files into ``folder``; the exit status."""
        import ray

        if self._remote is None:
            raise RayUnavailable("the Ray backend is not connected (use it in a with block)")
        ref = self._remote.remote(spec, task_text, api_key, timeout)
        with self._lock:
            self._refs.add(ref)
        try:
            code, node, files = ray.get(ref, timeout=timeout + 120.0)
        except ray.exceptions.GetTimeoutError:
            ray.cancel(ref, force=True)
            return f"no answer from the Ray task after {timeout + 120.0:g} s"
        except ray.exceptions.RayError as err:
            return f"the Ray task failed: {type(err).__name__}: {str(err)[:500]}"
        finally:
            with self._lock:
                self._refs.discard(ref)
        write_back(folder, files)
        with guard.open_append(folder / "worker.log") as log:
            log.write(f"\n[agent-s] ran on Ray node {node}\n")
        return code

    def cancel(self) -> None:
        """Force-cancel the tasks in flight: Ray kills their processes, so each worker's
        lifeline closes and the worker stops its desktop."""
        import ray

        with self._lock:
            refs = list(self._refs)
        for ref in refs:
            with contextlib.suppress(Exception):  # a task that just ended cannot be cancelled
                ray.cancel(ref, force=True)


__all__ = [
    "NODE_ONLY",
    "RayBackend",
    "RayUnavailable",
    "Workers",
    "run_on_node",
    "run_worker",
    "write_back",
]
