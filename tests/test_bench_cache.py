"""``agent-s bench cache``: OSWorld's file cache filled from a local HTTP server, then served.

The server (``http.server`` on loopback, in a thread) serves generated files under OSWorld's
URL layout (``/datasets/xlangai/ubuntu_osworld_file_cache/resolve/main/<domain>/<id>/<file>``),
answers ``Range`` requests, and can misbehave on purpose: drop the connection half-way through
a file, ignore ``Range``, answer slowly, 404. Task files of our own point at it; OSWorld's own
task files reach it through ``--endpoint`` (huggingface.co replaced). Nothing reaches the
network. The last test runs ``bench run`` on a desktop with the server stopped: setup and
evaluator files come from the cache only.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent_s.bench.cache import (
    MANIFEST,
    CacheError,
    Manifest,
    fill_cache,
    find_cached,
    missing_note,
    relative_path,
    suite_needs,
    task_urls,
)
from agent_s.bench.check import classify
from agent_s.bench.getters import GetterContext, NeedsFileCache, cache_lookup
from agent_s.bench.registry import GETTERS
from agent_s.bench.tasks import load_suite, load_task
from agent_s.cli.main import app

OSWORLD = Path(__file__).resolve().parents[1].parent / "shared" / "osworld"
DATASET = "/datasets/xlangai/ubuntu_osworld_file_cache/resolve/main"
AGENT_S = Path(sys.executable).with_name("agent-s")


@dataclass
class Server:
    """What the test server serves and how; ``requests``: (path, Range header) of each GET."""

    files: dict[str, bytes] = field(default_factory=dict)
    drop_once: set[str] = field(default_factory=set)  # send half, then close the connection
    drop_always: set[str] = field(default_factory=set)
    no_range: set[str] = field(default_factory=set)  # always the whole file, 200
    slow: set[str] = field(default_factory=set)  # 8 KB every 50 ms
    delay: float = 0.0
    requests: list[tuple[str, str]] = field(default_factory=list)
    in_flight: int = 0
    most_in_flight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    port: int = 0

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def gets(self, path: str) -> list[str]:
        """The Range header of each request for ``path`` ("" when it had none)."""
        return [r for p, r in self.requests if p == path]


def _handler(state: Server) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

        def do_GET(self) -> None:  # noqa: N802
            path = self.path
            with state.lock:
                state.requests.append((path, self.headers.get("Range", "")))
                state.in_flight += 1
                state.most_in_flight = max(state.most_in_flight, state.in_flight)
            # counted while the answer is held back: once answered, the client may ask again
            # before this thread would get to count down after the answer
            try:
                time.sleep(state.delay)
            finally:
                with state.lock:
                    state.in_flight -= 1
            self._answer(path)

        def _answer(self, path: str) -> None:
            body = state.files.get(path)
            if body is None:
                self.send_response(404, "Not Found")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
            start = 0
            wanted = self.headers.get("Range", "")
            if wanted and path not in state.no_range:
                start = int(wanted.removeprefix("bytes=").split("-")[0])
                if self.headers.get("If-Range") not in (None, etag):
                    start = 0  # the file changed: the whole of it
            if start >= len(body) and start:
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(body)}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            chunk = body[start:]
            self.send_response(206 if start else 200)
            if start:
                self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
            self.send_header("Content-Length", str(len(chunk)))
            self.send_header("ETag", etag)
            self.end_headers()
            dropping = path in state.drop_always
            with state.lock:
                if path in state.drop_once:
                    state.drop_once.discard(path)
                    dropping = True
            if dropping:
                self.wfile.write(chunk[: len(chunk) // 2])
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(2)  # the socket: both ways, at once
                return
            if path in state.slow:
                for at in range(0, len(chunk), 8192):
                    self.wfile.write(chunk[at : at + 8192])
                    self.wfile.flush()
                    time.sleep(0.05)
                return
            self.wfile.write(chunk)

    return Handler


@pytest.fixture(autouse=True)
def _no_mirror(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--endpoint`` reads HF_ENDPOINT: a mirror set for the user must not redirect tests."""
    monkeypatch.delenv("HF_ENDPOINT", raising=False)


@pytest.fixture
def server() -> Iterator[Server]:
    state = Server()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    httpd.daemon_threads = True
    state.port = httpd.server_address[1]
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()


def _blob(name: str, size: int) -> bytes:
    """``size`` bytes that differ from file to file and from place to place."""
    seed = hashlib.sha256(name.encode()).digest()
    out = bytearray()
    while len(out) < size:
        seed = hashlib.sha256(seed).digest()
        out += seed
    return bytes(out[:size])


def _write_suite(root: Path, tasks: dict[str, dict[str, Any]]) -> Path:
    """A suite folder: ``examples/<domain>/<id>.json`` for each ``"domain/id"`` and an index."""
    index: dict[str, list[str]] = {}
    for key, data in tasks.items():
        domain, task_id = key.split("/")
        folder = root / "examples" / domain
        folder.mkdir(parents=True, exist_ok=True)
        body = {"id": task_id, "instruction": f"task {task_id}", **data}
        (folder / f"{task_id}.json").write_text(json.dumps(body, indent=1))
        index.setdefault(domain, []).append(task_id)
    (root / "test_all.json").write_text(json.dumps(index))
    return root


def _shapes_suite(root: Path, server: Server) -> tuple[Path, dict[str, bytes]]:
    """Tasks with every shape OSWorld's task files take file-cache URLs in; the files."""

    def put(rel: str, size: int) -> str:
        path = f"{DATASET}/{rel}"
        server.files[path] = _blob(rel, size)
        return server.url(path)

    a = put("os/t1/setup.sh", 3000)
    b = put("os/t1/Mixed%20Name%20%5B1%5D.txt", 5000)  # quoted: kept unquoted in the cache
    gold = put("os/t1/gold.txt", 700)
    post = put("os/t1/eval.sh", 400)
    m1, m2 = put("calc/t2/gold_1.xlsx", 90_000), put("calc/t2/gold_2.csv", 2000)
    shared = put("shared/common.bin", 300_000)
    tasks = {
        "os/t1": {
            "config": [
                {
                    "type": "download",
                    "parameters": {
                        "files": [
                            {"url": a, "path": "/home/user/setup.sh"},
                            {"url": b, "path": "/home/user/Desktop/b.txt"},
                        ]
                    },
                },
                {"type": "download", "parameters": {"files": [{"url": shared, "path": "c.bin"}]}},
            ],
            "evaluator": {
                "func": "compare_text_file",
                "result": {"type": "cloud_file", "path": gold, "dest": "gold.txt"},
                "expected": {"type": "vm_file", "path": "/home/user/x.txt", "dest": "x.txt"},
                "postconfig": [
                    {
                        "type": "download",
                        "parameters": {"files": [{"url": post, "path": "/home/user/eval.sh"}]},
                    }
                ],
            },
        },
        "calc/t2": {
            "config": [
                {"type": "download", "parameters": {"files": [{"url": shared, "path": "c.bin"}]}}
            ],
            "evaluator": {
                "func": ["compare_table", "exact_match"],
                "result": [
                    {"type": "vm_file", "path": "/home/user/a.xlsx", "dest": "a.xlsx"},
                    {"type": "rule", "rules": {}},
                ],
                "expected": [
                    {
                        "type": "cloud_file",
                        "multi": "true",
                        "path": [m1, m2],
                        "dest": ["gold_1.xlsx", "gold_2.csv"],
                        "gives": [0, 1],
                    },
                    {"type": "rule", "rules": {"expected": "x"}},
                ],
            },
        },
    }
    files = {u: server.files[u.split(str(server.port), 1)[1]] for u in (a, b, gold, post, m1, m2)}
    files[shared] = server.files[shared.split(str(server.port), 1)[1]]
    return _write_suite(root, tasks), files


# -- what a suite needs, where a file goes ---------------------------------------------------------


def test_every_shape_of_url_is_found_once_with_the_tasks_that_need_it(
    tmp_path: Path, server: Server
) -> None:
    root, files = _shapes_suite(tmp_path / "suite", server)
    tasks = list(load_suite(root).tasks())
    first = {t.id: task_urls(t) for t in tasks}
    assert len(first["t1"]) == 5
    assert len(first["t2"]) == 3
    needs = suite_needs(tasks)
    assert {n.url for n in needs} == set(files)
    assert len(needs) == len(files)  # the shared file once
    shared = next(n for n in needs if n.url.endswith("common.bin"))
    assert shared.tasks == ("os/t1", "calc/t2")


@pytest.mark.skipif(not OSWORLD.is_dir(), reason=f"OSWorld's task files are not at {OSWORLD}")
def test_osworld_task_files_need_what_their_download_steps_and_cloud_files_name() -> None:
    tasks = [t for d in ("os", "libreoffice_calc", "multi_apps", "gimp") for t in _osworld(d)]
    needs = suite_needs(tasks)
    assert needs, "OSWorld's tasks name file-cache URLs"
    for need in needs:
        assert need.url.startswith("https://huggingface.co/datasets/xlangai/")
        rel = relative_path(need.url)  # the dataset's layout: <domain>/<task id>/<file>
        assert rel.parts[0] != "_url"
        assert ".." not in rel.parts
        assert len(rel.parts) >= 3
        assert need.tasks
    # every URL in a download step or a cloud_file of these files, found by reading the JSON
    expected: set[str] = set()
    for task in tasks:
        text = Path(str(task.path)).read_text()
        data = json.loads(text)
        for step in [*data.get("config", []), *data["evaluator"].get("postconfig", [])]:
            if step["type"] == "download":
                expected.update(f["url"] for f in step["parameters"]["files"])
        for key in ("result", "expected"):
            specs = data["evaluator"].get(key, [])
            for spec in specs if isinstance(specs, list) else [specs]:
                if isinstance(spec, dict) and spec.get("type") == "cloud_file":
                    path = spec["path"]
                    expected.update(path if isinstance(path, list) else [path])
    assert {n.url for n in needs} == expected


def _osworld(domain: str) -> list[Any]:
    return [load_task(p) for p in sorted((OSWORLD / "examples" / domain).glob("*.json"))]


def test_relative_paths_stay_inside_the_cache() -> None:
    hf = "https://huggingface.co/datasets/x/y/resolve/main/os/abc/Some%20File.txt"
    assert str(relative_path(hf)) == "os/abc/Some File.txt"
    assert str(relative_path("https://example.org/a/b.txt")) == "_web/example.org/a/b.txt"
    for hostile in (
        "https://huggingface.co/datasets/x/resolve/main/../../etc/passwd",
        "https://huggingface.co/datasets/x/resolve/main/os/%2e%2e/%2e%2e/x",
        "https://example.org/a/../../b",
        "https://example.org/a?b=1",
        "https://example.org/" + "n" * 300,
        "https://example.org/",
    ):
        rel = relative_path(hostile)
        assert rel.parts[0] == "_url", hostile
        assert ".." not in rel.parts
        assert len(rel.parts) == 3


# -- filling the cache -----------------------------------------------------------------------------


def _manifest(cache: Path) -> dict[str, Any]:
    files: dict[str, Any] = json.loads((cache / MANIFEST).read_text())["files"]
    return files


def test_fill_downloads_in_parallel_records_checksums_then_skips_what_matches(
    tmp_path: Path, server: Server
) -> None:
    root, files = _shapes_suite(tmp_path / "suite", server)
    for i in range(6):  # more files than workers, each answered slowly
        path = f"{DATASET}/slow/f{i}.bin"
        server.files[path] = _blob(path, 10_000)
        files[server.url(path)] = server.files[path]
    server.delay = 0.3
    from agent_s.bench.cache import Need

    needs = [Need(url, ("d/t",)) for url in files]
    cache = tmp_path / "cache"
    events: list[Any] = []
    report = fill_cache(needs, cache, workers=3, on_event=events.append)
    assert [f.status for f in report.files] == ["downloaded"] * len(files)
    assert 1 < server.most_in_flight <= 3  # parallel, and never more than the workers
    manifest = _manifest(cache)
    assert set(manifest) == set(files)
    for url, body in files.items():
        entry = manifest[url]
        local = cache / entry["path"]
        assert local.read_bytes() == body
        assert entry["size"] == len(body)
        assert entry["sha256"] == hashlib.sha256(body).hexdigest()
        assert find_cached(cache, url) == local
    mixed = next(u for u in files if "Mixed" in u)
    assert (cache / "os" / "t1" / "Mixed Name [1].txt").is_file()
    assert find_cached(cache, mixed) == cache / "os" / "t1" / "Mixed Name [1].txt"
    assert sum(e.amount for e in events if e.kind == "bytes") == sum(map(len, files.values()))
    assert [e.kind for e in events].count("end") == len(files)
    assert not list(cache.rglob("*.part*"))

    # again: every file is there with its checksum, nothing is asked of the server
    asked = len(server.requests)
    server.delay = 0.0
    again = fill_cache(needs, cache, workers=3)
    assert [f.status for f in again.files] == ["cached"] * len(files)
    assert len(server.requests) == asked

    # a file changed in the cache (same size) no longer matches: fetched again, the rest not
    victim = cache / manifest[mixed]["path"]
    victim.write_bytes(b"x" * len(files[mixed]))
    third = fill_cache(needs, cache, workers=2)
    statuses = {f.url: f.status for f in third.files}
    assert statuses[mixed] == "downloaded"
    assert [s for u, s in statuses.items() if u != mixed] == ["cached"] * (len(files) - 1)
    assert victim.read_bytes() == files[mixed]
    assert len(server.requests) == asked + 1

    # changed in the cache and gone from the server: failed, and never served as it is
    (cache / manifest[mixed]["path"]).write_bytes(b"y" * len(files[mixed]))
    del server.files[mixed.split(str(server.port), 1)[1]]
    fourth = fill_cache(needs, cache, workers=2)
    assert [(f.url, f.error) for f in fourth.failed] == [(mixed, "HTTP 404 Not Found")]
    assert find_cached(cache, mixed) is None
    assert mixed not in _manifest(cache)


def test_a_dropped_download_resumes_with_range_on_the_next_run(
    tmp_path: Path, server: Server
) -> None:
    from agent_s.bench.cache import Need

    path = f"{DATASET}/vlc/t3/movie.mp4"
    body = server.files[path] = _blob(path, 400_000)
    server.drop_once.add(path)
    url = server.url(path)
    cache = tmp_path / "cache"
    first = fill_cache([Need(url, ("vlc/t3",))], cache, retries=0)
    (result,) = first.files
    assert result.status == "failed"
    assert "connection dropped after 200000 of 400000 bytes" in result.error
    part = cache / "vlc" / "t3" / "movie.mp4.part"
    assert part.read_bytes() == body[:200_000]
    assert find_cached(cache, url) is None
    assert url not in Manifest.load(cache).entries

    second = fill_cache([Need(url, ("vlc/t3",))], cache, retries=0)
    (result,) = second.files
    assert result.status == "resumed"
    assert result.received == 200_000  # only the rest came over the wire
    assert server.gets(path) == ["", "bytes=200000-"]
    assert (cache / "vlc" / "t3" / "movie.mp4").read_bytes() == body
    assert _manifest(cache)[url]["sha256"] == hashlib.sha256(body).hexdigest()
    assert not part.exists()


def test_a_drop_is_retried_in_the_same_run_and_a_server_without_range_restarts(
    tmp_path: Path, server: Server
) -> None:
    from agent_s.bench.cache import Need

    resumable = f"{DATASET}/gimp/t4/big.xcf"
    whole = f"{DATASET}/gimp/t4/other.png"
    server.files[resumable] = _blob(resumable, 300_000)
    server.files[whole] = _blob(whole, 300_000)
    server.drop_once.update({resumable, whole})
    server.no_range.add(whole)
    needs = [Need(server.url(resumable), ("a/b",)), Need(server.url(whole), ("a/b",))]
    report = fill_cache(needs, tmp_path / "cache", retries=2)
    assert [(f.status, f.attempts) for f in report.files] == [("resumed", 2), ("downloaded", 2)]
    assert server.gets(resumable) == ["", "bytes=150000-"]
    assert server.gets(whole) == ["", "bytes=150000-"]  # asked, got the whole file: restarted
    for path in (resumable, whole):
        assert (tmp_path / "cache" / path.split("main/", 1)[1]).read_bytes() == server.files[path]


def test_errors_are_per_url_and_a_second_fill_of_one_cache_is_refused(
    tmp_path: Path, server: Server
) -> None:
    from agent_s.bench.cache import Need

    good = f"{DATASET}/os/t5/ok.txt"
    server.files[good] = b"fine\n"
    broken = f"{DATASET}/os/t5/always-drops.bin"
    server.files[broken] = _blob(broken, 50_000)
    server.drop_always.add(broken)
    needs = [
        Need(server.url(f"{DATASET}/os/t5/missing.txt"), ("os/t5",)),
        Need(server.url(good), ("os/t5",)),
        Need(server.url(broken), ("os/t5",)),
        Need("ftp://127.0.0.1/file.txt", ("os/t6",)),
    ]
    report = fill_cache(needs, tmp_path / "cache", retries=1)
    got = [(f.status, f.error) for f in report.files]
    assert got[0] == ("failed", "HTTP 404 Not Found")
    assert got[1] == ("downloaded", "")
    assert got[2][0] == "failed"
    assert "after 2 attempt(s)" in got[2][1]
    assert got[3] == ("failed", "not an http(s) URL: ftp://127.0.0.1/file.txt")
    assert server.gets(f"{DATASET}/os/t5/missing.txt") == [""]  # a 404 is not retried
    assert len(server.gets(broken)) == 2
    assert [f.tasks for f in report.failed] == [("os/t5",), ("os/t5",), ("os/t6",)]

    import fcntl

    with (tmp_path / "cache" / ".lock").open("a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(CacheError, match="another 'agent-s bench cache' is filling"):
            fill_cache(needs[1:2], tmp_path / "cache")


# -- the command -----------------------------------------------------------------------------------


def test_the_installed_command_fills_the_cache_reports_failures_and_resumes(
    tmp_path: Path, server: Server
) -> None:
    root, files = _shapes_suite(tmp_path / "suite", server)
    gone = server.url(f"{DATASET}/os/t9/gone.txt")
    dropped = f"{DATASET}/os/t9/half.bin"
    server.files[dropped] = _blob(dropped, 120_000)
    server.drop_once.add(dropped)
    task = {
        "config": [
            {
                "type": "download",
                "parameters": {
                    "files": [
                        {"url": gone, "path": "/home/user/gone.txt"},
                        {"url": server.url(dropped), "path": "/home/user/half.bin"},
                    ]
                },
            }
        ],
        "evaluator": {"func": "infeasible"},
    }
    (root / "examples" / "os" / "t9.json").write_text(
        json.dumps({"id": "t9", "instruction": "fetch two files", **task})
    )
    index = json.loads((root / "test_all.json").read_text())
    index["os"].append("t9")
    (root / "test_all.json").write_text(json.dumps(index))
    cache = tmp_path / "cache"
    argv = [str(AGENT_S), "bench", "cache", str(root), "--dir", str(cache), "--retries", "0"]
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "300"}
    first = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    assert first.returncode == 1, first.stderr
    assert "\x1b[" not in first.stderr + first.stdout  # NO_COLOR: no escape codes
    assert f"failed: {gone}: HTTP 404 Not Found (needed by os/t9)" in first.stdout
    assert f"failed: {server.url(dropped)}: connection dropped after 60000 of 120000" in (
        first.stdout
    )
    assert f"failed: {gone}: HTTP 404 Not Found" in first.stderr  # as it happened
    assert "9 files for 3 task(s): 0 cached, 7 downloaded, 2 failed" in first.stdout
    assert "Traceback" not in first.stderr

    second = subprocess.run([*argv, "--json"], capture_output=True, text=True, env=env, timeout=120)
    assert second.returncode == 1, second.stderr
    summary = json.loads(second.stdout)
    assert (summary["cached"], summary["resumed"], summary["failed"]) == (7, 1, 1)
    assert summary["bytes_received"] == 60_000
    assert summary["tasks"] == 3
    assert summary["files"] == 9
    (failure,) = [r for r in summary["results"] if r["status"] == "failed"]
    assert failure["url"] == gone
    assert failure["tasks"] == ["os/t9"]
    assert (cache / "os" / "t9" / "half.bin").read_bytes() == server.files[dropped]
    for url, body in files.items():
        assert find_cached(cache, url) is not None
        assert find_cached(cache, url).read_bytes() == body  # type: ignore[union-attr]

    # the one task file alone, and a usage error
    alone = CliRunner().invoke(
        app, ["bench", "cache", str(root / "examples" / "os" / "t1.json"), "--dir", str(cache)]
    )
    assert alone.exit_code == 0, alone.output
    assert "5 files for 1 task(s): 5 cached, 0 downloaded, 0 failed" in alone.stdout
    assert f"every file is in the cache; run: agent-s bench run {root} --file-cache" in (
        alone.stdout
    )
    nothing = CliRunner().invoke(app, ["bench", "cache", str(tmp_path / "nope"), "--dir", "c"])
    assert nothing.exit_code == 2
    assert "no suite" in nothing.stderr


def test_ctrl_c_stops_at_once_and_the_next_run_resumes(tmp_path: Path, server: Server) -> None:
    path = f"{DATASET}/vlc/t7/slow.mp4"
    body = server.files[path] = _blob(path, 2_000_000)  # 12 s at the slow server's pace
    server.slow.add(path)
    task = {
        "config": [
            {
                "type": "download",
                "parameters": {"files": [{"url": server.url(path), "path": "/home/user/a.mp4"}]},
            }
        ],
        "evaluator": {"func": "infeasible"},
    }
    root = _write_suite(tmp_path / "suite", {"vlc/t7": task})
    cache = tmp_path / "cache"
    part = cache / "vlc" / "t7" / "slow.mp4.part"
    argv = [str(AGENT_S), "bench", "cache", str(root), "--dir", str(cache)]
    env = {**os.environ, "NO_COLOR": "1"}
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    deadline = time.monotonic() + 30
    while not (part.is_file() and part.stat().st_size > 50_000):
        assert time.monotonic() < deadline, "the download did not start"
        assert proc.poll() is None
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    stopped = time.monotonic()
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert time.monotonic() - stopped < 5
    assert "cancelled: 0 of 1 files ended; run the same command again to resume" in err
    assert "Traceback" not in err
    kept = part.stat().st_size
    assert 50_000 <= kept < len(body)
    assert part.read_bytes() == body[:kept]

    server.slow.clear()
    again = CliRunner().invoke(app, ["bench", "cache", str(root), "--dir", str(cache), "--json"])
    assert again.exit_code == 0, again.output
    summary = json.loads(again.stdout)
    assert summary["resumed"] == 1
    assert summary["bytes_received"] == len(body) - kept
    assert server.gets(path)[-1] == f"bytes={kept}-"
    assert (cache / "vlc" / "t7" / "slow.mp4").read_bytes() == body


@pytest.mark.skipif(not OSWORLD.is_dir(), reason=f"OSWorld's task files are not at {OSWORLD}")
def test_osworld_task_files_through_a_mirror_endpoint(tmp_path: Path, server: Server) -> None:
    """Real task files (read from ../shared/osworld, never copied): their huggingface.co URLs
    fetched from the local server as ``--endpoint``, kept under the task's own URL."""
    picked = [
        OSWORLD / "examples" / "libreoffice_calc" / "a01fbce3-2793-461f-ab86-43680ccbae25.json",
        OSWORLD / "examples" / "multi_apps" / "a0b9dc9c-fc07-4a88-8c5d-5e3ecad91bcb.json",
        OSWORLD / "examples" / "gimp" / "06ca5602-62ca-47f6-ad4f-da151cde54cc.json",
    ]
    picked = [p for p in picked if p.is_file()]
    if not picked:
        pytest.skip("the picked OSWorld task files are not there")
    cache = tmp_path / "cache"
    for task_file in picked:
        task = load_task(task_file)
        urls = task_urls(task)
        assert urls
        for url in urls:
            path = url.removeprefix("https://huggingface.co")
            server.files[path] = _blob(url, 1000 + len(url))
        done = CliRunner().invoke(
            app,
            ["bench", "cache", str(task_file), "--dir", str(cache), "--json"],
            env={"HF_ENDPOINT": f"http://127.0.0.1:{server.port}"},
        )
        assert done.exit_code == 0, done.output
        assert json.loads(done.stdout)["downloaded"] == len(urls)
        for url in urls:
            local = cache_lookup(cache, url)
            assert local.read_bytes() == _blob(url, 1000 + len(url))
            assert local == cache / relative_path(url)
            assert _manifest(cache)[url]["path"] == str(relative_path(url))
        assert not [r for r in classify(task, file_cache=cache) if r.category == "cache"]


# -- serving from the cache ------------------------------------------------------------------------


def test_getters_and_missing_files_name_the_url_and_the_command(
    tmp_path: Path, server: Server
) -> None:
    root, files = _shapes_suite(tmp_path / "suite", server)
    task = load_task(root / "examples" / "calc" / "t2.json")
    cache = tmp_path / "cache"
    note = missing_note(task, cache)
    for url in task_urls(task):
        assert url in note
    assert f"fetch with: agent-s bench cache {root} --dir {cache}" in note
    assert "no --file-cache folder given" in missing_note(task, None)
    assert "and pass --file-cache CACHE" in missing_note(task, None)
    fill_cache(suite_needs([task]), cache)
    assert missing_note(task, cache) == ""

    home, own = tmp_path / "home", tmp_path / "task-cache"
    home.mkdir()
    own.mkdir()
    fetch = f"agent-s bench cache {root} --dir {cache}"
    ctx = GetterContext(home, {}, own, cache, extra={"fetch_command": fetch})
    spec = task.evaluator.expected[0]
    assert spec is not None
    got = GETTERS["cloud_file"](ctx, spec)
    assert [Path(p).read_bytes() for p in got] == [files[u] for u in spec["path"]]

    other = server.url(f"{DATASET}/calc/t2/not-fetched.xlsx")
    with pytest.raises(NeedsFileCache) as raised:
        GETTERS["cloud_file"](ctx, {"path": other, "dest": "x.xlsx"})
    assert str(raised.value) == (f"needs file cache: {other} (not in {cache}); fetch with: {fetch}")


@pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is not installed")
@pytest.mark.desktop
def test_bench_run_serves_setup_and_evaluator_files_from_the_cache_only(
    tmp_path: Path, server: Server
) -> None:
    data = f"{DATASET}/os/up/in.txt"
    gold = f"{DATASET}/os/up/gold.txt"
    server.files[data] = b"hello from the cache\nsecond line\n"
    server.files[gold] = b"HELLO FROM THE CACHE\nSECOND LINE\n"
    never = server.url(f"{DATASET}/os/nofile/in.txt")
    terminal = {
        "type": "execute",
        "parameters": {
            "command": [
                "python",
                "-c",
                "import pyautogui, time; pyautogui.hotkey('ctrl', 'alt', 't'); time.sleep(0.5)",
            ]
        },
    }

    def task(url: str) -> dict[str, Any]:
        return {
            "config": [
                {
                    "type": "download",
                    "parameters": {"files": [{"url": url, "path": "/home/user/in.txt"}]},
                },
                terminal,
                {"type": "activate_window", "parameters": {"window_name": "Terminal"}},
            ],
            "related_apps": ["os", "terminal"],
            "evaluator": {
                "func": "compare_text_file",
                "result": {"type": "vm_file", "path": "/home/user/out.txt", "dest": "out.txt"},
                "expected": {"type": "cloud_file", "path": server.url(gold), "dest": "gold.txt"},
            },
            "reference": [
                'agent.type(text="tr a-z A-Z < ~/in.txt > ~/out.txt", enter=True)',
                "agent.wait(seconds=0.5)",
                "agent.done()",
            ],
        }

    root = _write_suite(
        tmp_path / "suite", {"os/upper": task(server.url(data)), "os/nofile": task(never)}
    )
    cache = tmp_path / "cache"
    filled = CliRunner().invoke(
        app, ["bench", "cache", str(root), "--dir", str(cache), "--retries", "0"]
    )
    assert filled.exit_code == 1  # ``never`` is not on the server
    assert f"failed: {never}: HTTP 404 Not Found (needed by os/nofile)" in filled.stdout
    asked = len(server.requests)

    def run(policy: str) -> dict[str, dict[str, Any]]:
        argv = ["bench", "run", str(root), "--policy", policy, "--file-cache", str(cache)]
        argv += ["--results", str(tmp_path / "results"), "--json"]
        done = CliRunner().invoke(app, argv)
        assert done.exit_code == 0, done.output
        return {r["task_id"]: r for r in json.loads(done.stdout)["records"]}

    records = run("reference")
    assert len(server.requests) == asked  # the run asked the server for nothing
    assert records["upper"]["score"] == 1.0, records["upper"]
    home = tmp_path / "results" / "pyautogui" / "screenshot" / "reference" / "os" / "upper"
    assert (home / "home" / "in.txt").read_bytes() == server.files[data]
    skipped = records["nofile"]
    assert skipped["status"] == "skipped"
    assert skipped["score"] is None
    assert never in skipped["reason"]
    assert f"agent-s bench cache {root} --dir {cache}" in skipped["reason"]

    records = run("noop")  # the file is there, the work is not done: 0
    assert records["upper"]["score"] == 0.0
    assert len(server.requests) == asked
