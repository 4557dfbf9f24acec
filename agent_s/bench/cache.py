"""OSWorld's file cache, kept locally: every file a suite's setup and evaluators download.

    needs = suite_needs(tasks)                       # each URL and the tasks that need it
    report = fill_cache(needs, Path("cache"))        # parallel, resumable, checksums recorded
    find_cached(Path("cache"), url)                  # the local copy (None: not there)

What a task needs: the ``url`` of every file of a ``download`` step (setup and postconfig) and
the ``path`` (one URL, or a list with ``multi``) of every ``cloud_file`` getter (result and
expected). ``bench run --file-cache CACHE`` then serves these files from the cache only
(``environment``, ``getters``): it never reaches the network for them.

Layout: OSWorld's URLs point into a Hugging Face dataset (``.../resolve/main/<domain>/<task
id>/<file>``); such a file is kept as ``<cache>/<domain>/<task id>/<file>``, the dataset's own
layout, so a copy of the dataset is a cache as it is. Any other URL is kept under
``<cache>/_web/<host>/<path>``, and one whose path cannot be a safe file name (``..``, a query,
a name too long) under ``<cache>/_url/<hash>/<name>``. ``manifest.json`` maps each URL to its
file, size and SHA-256; ``find_cached`` reads it first.

Resume: a download is written to ``<file>.part``, beside it ``<file>.part.json`` (the URL and
the server's ETag / Last-Modified). The next attempt asks for the rest (``Range``, with
``If-Range`` so a file changed on the server comes whole) and starts over when the server sends
the whole file. A file in the manifest whose size and SHA-256 still match is not fetched again;
one that does not match is fetched again. A dropped connection, a timeout, HTTP 408, 429 and
5xx are retried (``retries`` times, each resuming where the last stopped); any other HTTP error
and a host name that does not resolve (no network) are not. Two fills of one cache at once are
refused (a lock file, ``.lock``).

``endpoint`` fetches huggingface.co's files from a mirror (the CLI's ``--endpoint``, env
``HF_ENDPOINT``); the manifest keeps the task's own URL.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shlex
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from http.client import HTTPException
from pathlib import Path, PurePosixPath
from typing import Any, Literal
from urllib.parse import unquote, urlparse

from agent_s.bench.tasks import Task
from agent_s.guards import files as guard

MANIFEST = "manifest.json"
LOCK = ".lock"
PART = ".part"
HF_HOST = "huggingface.co"
_HF_MARK = "/resolve/main/"
CHUNK = 256 * 1024
MAX_NAME = 200  # bytes of one path segment kept as it is (file systems allow 255)
DEFAULT_WORKERS = 4
DEFAULT_TIMEOUT = 60.0  # seconds without a byte before an attempt counts as dropped
DEFAULT_RETRIES = 3
CANCEL_GRACE = 2.0  # seconds a cancelled fill waits for its downloads to stop
_RANGE = re.compile(r"bytes\s+(\d+)-(\d+)/(\d+|\*)")
_TOTAL = re.compile(r"bytes\s+\*/(\d+)")

Status = Literal["cached", "downloaded", "resumed", "failed", "cancelled"]


class CacheError(RuntimeError):
    """The cache folder cannot be used (not writable, locked, a broken manifest); the message
    says how to fix it."""


class CacheCancelled(KeyboardInterrupt):
    """``fill_cache`` was interrupted: the report of the files that ended (partial downloads
    stay as ``.part`` files and resume on the next fill)."""

    def __init__(self, report: CacheReport) -> None:
        super().__init__("cancelled")
        self.report = report


# -- what a suite needs ----------------------------------------------------------------------------


def _specs(values: Iterable[Mapping[str, Any] | None]) -> Iterator[Mapping[str, Any]]:
    for spec in values:
        if isinstance(spec, Mapping):
            yield spec


def task_urls(task: Task) -> list[str]:
    """Every file-cache URL ``task`` needs: its ``download`` steps' files (setup and
    postconfig) and its ``cloud_file`` getters' paths, in task order, each once."""
    urls: dict[str, None] = {}
    for step in (*task.config, *task.evaluator.postconfig):
        if step.type == "download":
            files = step.parameters.get("files", [])
            for item in files if isinstance(files, list) else []:
                if isinstance(item, Mapping) and item.get("url"):
                    urls[str(item["url"])] = None
    for spec in _specs((*task.evaluator.results, *task.evaluator.expected)):
        if spec.get("type") == "cloud_file":
            path = spec.get("path")
            for url in path if isinstance(path, list) else [path]:
                if url:
                    urls[str(url)] = None
    return list(urls)


@dataclass(frozen=True)
class Need:
    """One URL and the tasks (``domain/id``) that need it."""

    url: str
    tasks: tuple[str, ...]


def suite_needs(tasks: Iterable[Task]) -> list[Need]:
    """Every URL the tasks need, once, in suite order, with the tasks that need each."""
    users: dict[str, list[str]] = {}
    for task in tasks:
        for url in task_urls(task):
            users.setdefault(url, []).append(f"{task.domain}/{task.id}")
    return [Need(url, tuple(names)) for url, names in users.items()]


# -- where a URL's file lives ----------------------------------------------------------------------


def _safe_parts(parts: Sequence[str]) -> bool:
    return bool(parts) and all(
        p not in ("", ".", "..")
        and "\x00" not in p
        and "\\" not in p
        and len(p.encode("utf-8", "surrogateescape")) <= MAX_NAME
        for p in parts
    )


def _hashed(url: str) -> PurePosixPath:
    name = unquote(urlparse(url).path).rsplit("/", 1)[-1]
    if not _safe_parts([name]):
        name = "file"
    return PurePosixPath("_url", hashlib.sha256(url.encode("utf-8")).hexdigest()[:16], name)


def relative_path(url: str) -> PurePosixPath:
    """Where ``url``'s file is kept in a cache (see the module docstring); never outside it."""
    parsed = urlparse(url)
    path = unquote(parsed.path)
    if parsed.query or parsed.params:
        return _hashed(url)
    if _HF_MARK in path:
        parts = path.split(_HF_MARK, 1)[1].split("/")
    else:
        parts = [parsed.hostname or "", *path.lstrip("/").split("/")]
        parts = ["_web", *parts] if _safe_parts(parts) else []
    return PurePosixPath(*parts) if _safe_parts(parts) else _hashed(url)


def fetch_url(url: str, endpoint: str | None) -> str:
    """The URL to download: huggingface.co's replaced by ``endpoint`` (a mirror), if given."""
    parsed = urlparse(url)
    if not endpoint or parsed.hostname != HF_HOST:
        return url
    rest = parsed.path + (f"?{parsed.query}" if parsed.query else "")
    return endpoint.rstrip("/") + rest


# -- the manifest ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    """A file in the cache: the URL it came from, its path in the cache, size, SHA-256."""

    url: str
    path: str
    size: int
    sha256: str
    fetched_at: float = 0.0


class Manifest:
    """``<cache>/manifest.json``: ``{"version": 1, "files": {url: {path, size, sha256}}}``.
    Thread-safe; ``save`` replaces the file whole (never torn)."""

    def __init__(self, root: Path, entries: Mapping[str, Entry] | None = None) -> None:
        self.root = root
        self.entries: dict[str, Entry] = dict(entries or {})
        self._lock = threading.Lock()

    @classmethod
    def load(cls, root: Path) -> Manifest:
        """The manifest of ``root`` (empty when there is none); ``CacheError`` when broken."""
        path = root / MANIFEST
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return cls(root)
        except (OSError, ValueError) as err:
            raise CacheError(f"{path} cannot be read ({err}): delete it and fill again") from err
        try:
            files = data["files"]
            entries = {
                str(url): Entry(
                    str(url),
                    str(e["path"]),
                    int(e["size"]),
                    str(e["sha256"]),
                    float(e.get("fetched_at", 0.0)),
                )
                for url, e in files.items()
            }
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise CacheError(
                f"{path} is not a file-cache manifest: delete it and fill again"
            ) from err
        return cls(root, entries)

    def get(self, url: str) -> Entry | None:
        with self._lock:
            return self.entries.get(url)

    def paths(self) -> dict[str, str]:
        """Each cache path in the manifest and the URL it belongs to."""
        with self._lock:
            return {e.path: url for url, e in self.entries.items()}

    def put(self, entry: Entry) -> None:
        with self._lock:
            self.entries[entry.url] = entry
            self._save_locked()

    def drop(self, url: str) -> None:
        with self._lock:
            if self.entries.pop(url, None) is not None:
                self._save_locked()

    def save(self) -> None:
        with self._lock:
            self._save_locked()

    def _save_locked(self) -> None:
        files = {
            url: {k: v for k, v in asdict(e).items() if k != "url"}
            for url, e in sorted(self.entries.items())
        }
        text = json.dumps({"version": 1, "files": files}, indent=1) + "\n"
        guard.write_text(self.root / MANIFEST, text)


_MANIFESTS: dict[Path, tuple[tuple[int, int], Manifest]] = {}
_MANIFESTS_LOCK = threading.Lock()


def _read_manifest(root: Path) -> Manifest:
    """The manifest as last written (re-read when the file changes); an unreadable one is
    read as empty: the files at their usual paths are still found."""
    path = root / MANIFEST
    try:
        stat = path.stat()
    except OSError:
        return Manifest(root)
    stamp = (stat.st_mtime_ns, stat.st_size)
    with _MANIFESTS_LOCK:
        known = _MANIFESTS.get(path)
        if known is not None and known[0] == stamp:
            return known[1]
    try:
        manifest = Manifest.load(root)
    except CacheError:
        manifest = Manifest(root)
    with _MANIFESTS_LOCK:
        _MANIFESTS[path] = (stamp, manifest)
    return manifest


def find_cached(file_cache: Path, url: str) -> Path | None:
    """The local copy of ``url`` in ``file_cache``: the manifest's file (when its size still
    matches), else ``relative_path(url)``, else a file of the same name at the top (a cache
    filled by hand); a path the manifest gives another URL is never taken. None: not there."""
    manifest = _read_manifest(file_cache)
    entry = manifest.get(url)
    if entry is not None:
        path = file_cache / entry.path
        with contextlib.suppress(OSError):
            if path.is_file() and path.stat().st_size == entry.size:
                return path
    owners = manifest.paths()
    name = unquote(urlparse(url).path).rsplit("/", 1)[-1]
    candidates = [str(relative_path(url))]
    if _safe_parts([name]):
        candidates.append(name)
    for rel in candidates:
        if owners.get(rel, url) == url and (file_cache / rel).is_file():
            return file_cache / rel
    return None


def _builtin_suites_folder() -> Path:
    from importlib import resources

    return Path(str(resources.files("agent_s.bench") / "suites"))


def fetch_command(task: Task | None, file_cache: Path | None) -> str:
    """The command that fills ``file_cache`` with what ``task`` needs: for its suite when the
    task is in a suite folder ``bench cache`` reads without ``--index`` (a built-in suite by
    name), else for the task file alone."""
    cache = shlex.quote(str(file_cache)) if file_cache is not None else "CACHE"
    target = "SUITE"
    if task is not None and task.path is not None:
        path = Path(task.path)
        root = path.parent.parent.parent
        whole = path.parent.parent.name == "examples" and (
            (root / "test_all.json").is_file() or len(list(root.glob("test_*.json"))) == 1
        )
        if not whole:
            target = shlex.quote(str(path))
        elif root.parent == _builtin_suites_folder():
            target = shlex.quote(root.name)
        else:
            target = shlex.quote(str(root))
    return f"agent-s bench cache {target} --dir {cache}"


def missing_note(task: Task, file_cache: Path | None, *, shown: int = 5) -> str:
    """Which of ``task``'s files are not in ``file_cache`` (their URLs) and the command that
    fetches them; "" when none is missing."""
    if file_cache is None:
        missing = task_urls(task)
        where = "needed, and no --file-cache folder given"
    else:
        missing = [u for u in task_urls(task) if find_cached(file_cache, u) is None]
        where = f"not in {file_cache}"
    if not missing:
        return ""
    listed = ", ".join(missing[:shown])
    more = f" (+{len(missing) - shown} more)" if len(missing) > shown else ""
    then = " and pass --file-cache CACHE" if file_cache is None else ""
    fetch = fetch_command(task, file_cache)
    return f"{len(missing)} file(s) {where}: {listed}{more}; fetch with: {fetch}{then}"


# -- filling a cache -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fetched:
    """What became of one URL. ``received``: bytes over the network this time."""

    url: str
    status: Status
    path: str = ""  # in the cache
    size: int = 0
    sha256: str = ""
    received: int = 0
    attempts: int = 0
    error: str = ""
    tasks: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "tasks": list(self.tasks)}


@dataclass(frozen=True)
class CacheEvent:
    """Progress: ``start`` (``total``: the file's size when the server said it, ``have``: bytes
    already there from an earlier attempt), ``bytes`` (``amount`` more arrived), ``end``."""

    kind: Literal["start", "bytes", "end"]
    url: str
    amount: int = 0
    total: int | None = None
    have: int = 0
    result: Fetched | None = None


@dataclass
class CacheReport:
    root: Path
    files: list[Fetched] = field(default_factory=list)
    seconds: float = 0.0

    def count(self, status: Status) -> int:
        return sum(1 for f in self.files if f.status == status)

    @property
    def failed(self) -> list[Fetched]:
        return [f for f in self.files if f.status in ("failed", "cancelled")]

    @property
    def received(self) -> int:
        return sum(f.received for f in self.files)

    @property
    def size(self) -> int:
        return sum(f.size for f in self.files if f.status not in ("failed", "cancelled"))

    def to_json(self) -> dict[str, Any]:
        statuses: tuple[Status, ...] = ("cached", "downloaded", "resumed", "failed", "cancelled")
        return {
            "dir": str(self.root),
            "manifest": str(self.root / MANIFEST),
            "files": len(self.files),
            **{s: self.count(s) for s in statuses},
            "bytes_received": self.received,
            "bytes_in_cache": self.size,
            "seconds": round(self.seconds, 2),
            "results": [f.to_json() for f in self.files],
        }


class _Retry(Exception):
    """An attempt failed in a way another attempt may not (dropped, timed out, 5xx);
    ``received``: the bytes it wrote before it failed."""

    def __init__(self, text: str, received: int = 0) -> None:
        super().__init__(text)
        self.received = received


class _Fatal(Exception):
    """An attempt failed in a way another would too (404, not http)."""


class _Stopped(Exception):
    pass


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


@contextlib.contextmanager
def _locked(root: Path) -> Iterator[None]:
    with (root / LOCK).open("a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise CacheError(
                f"another 'agent-s bench cache' is filling {root}: wait for it, or end it"
            ) from None
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


class _Filler:
    def __init__(
        self,
        root: Path,
        manifest: Manifest,
        *,
        endpoint: str | None,
        timeout: float,
        retries: int,
        emit: Callable[[CacheEvent], None],
        stop: threading.Event,
    ) -> None:
        self.root, self.manifest = root, manifest
        self.endpoint, self.timeout, self.retries = endpoint, timeout, retries
        self.emit, self.stop = emit, stop
        from agent_s import __version__

        self.opener = urllib.request.build_opener()
        self.opener.addheaders = [("User-Agent", f"agent-s/{__version__} (bench cache)")]

    def plan(self, needs: Sequence[Need]) -> dict[str, str]:
        """Each URL's path in the cache: the manifest's, else ``relative_path``; a path that
        another URL already has gets a hashed one."""
        taken = self.manifest.paths()
        plan: dict[str, str] = {}
        for need in needs:
            entry = self.manifest.get(need.url)
            if entry is not None:
                plan[need.url] = entry.path
                continue
            rel = str(relative_path(need.url))
            if taken.get(rel, need.url) != need.url:
                rel = str(_hashed(need.url))
            taken[rel] = need.url
            plan[need.url] = rel
        return plan

    def one(self, need: Need, rel: str) -> Fetched:
        target = self.root / rel
        entry = self.manifest.get(need.url)
        if entry is not None and entry.path == rel and target.is_file():
            with contextlib.suppress(OSError):
                if target.stat().st_size == entry.size and _sha256(target) == entry.sha256:
                    return Fetched(need.url, "cached", rel, entry.size, entry.sha256)
        if entry is not None:  # changed or gone: never served again until fetched anew
            self.manifest.drop(need.url)
            with contextlib.suppress(OSError):
                (self.root / entry.path).unlink(missing_ok=True)
        part = target.with_name(target.name + PART)
        meta = target.with_name(target.name + PART + ".json")
        attempts, received, resumed = 0, 0, False
        last_error = ""
        while True:
            if self.stop.is_set():
                return Fetched(need.url, "cancelled", rel, 0, "", received, attempts, "cancelled")
            attempts += 1
            try:
                got, was_resumed = self._attempt(need.url, target, part, meta)
                received += got
                resumed = resumed or was_resumed
                break
            except _Stopped:
                return Fetched(need.url, "cancelled", rel, 0, "", received, attempts, "cancelled")
            except _Fatal as err:
                return Fetched(need.url, "failed", rel, 0, "", received, attempts, str(err))
            except _Retry as err:
                last_error = str(err)
                received += err.received
                if attempts > self.retries:
                    again = "resume" if part.is_file() and part.stat().st_size else "retry"
                    error = f"{last_error} (after {attempts} attempt(s); run again to {again})"
                    return Fetched(need.url, "failed", rel, 0, "", received, attempts, error)
                self.stop.wait(min(0.5 * 2 ** (attempts - 1), 8.0))
        size = part.stat().st_size
        digest = _sha256(part)
        os.replace(part, target)
        meta.unlink(missing_ok=True)
        self.manifest.put(Entry(need.url, rel, size, digest, round(time.time(), 3)))
        status: Status = "resumed" if resumed else "downloaded"
        return Fetched(need.url, status, rel, size, digest, received, attempts, "")

    def _attempt(self, url: str, target: Path, part: Path, meta: Path) -> tuple[int, bool]:
        """One request; the bytes received and whether it resumed. Raises _Retry / _Fatal."""
        scheme = urlparse(url).scheme
        if scheme not in ("http", "https"):
            raise _Fatal(f"not an http(s) URL: {url}")
        known = _read_json(meta)
        have = part.stat().st_size if part.is_file() else 0
        if have and known.get("url") != url:
            have = 0  # a part of something else: start over
        headers = {"Accept-Encoding": "identity"}
        if have:
            headers["Range"] = f"bytes={have}-"
            etag = str(known.get("etag") or "")
            validator = etag if etag and not etag.startswith("W/") else known.get("modified")
            if validator:
                headers["If-Range"] = str(validator)
        # http(s) only (checked above)
        request = urllib.request.Request(fetch_url(url, self.endpoint), headers=headers)  # noqa: S310
        try:
            response = self.opener.open(request, timeout=self.timeout)
        except urllib.error.HTTPError as err:
            with err:
                if err.code == 416 and have:
                    whole = _TOTAL.search(err.headers.get("Content-Range", "") or "")
                    if whole is not None and int(whole.group(1)) == have:
                        self.emit(CacheEvent("start", url, total=have, have=have))
                        return 0, True  # the part was the whole file
                    part.unlink(missing_ok=True)
                    raise _Retry("the server refused to resume; starting over") from None
                text = f"HTTP {err.code} {err.reason}"
                if err.code in (408, 429) or err.code >= 500:
                    raise _Retry(text) from None
                raise _Fatal(text) from None
        except (urllib.error.URLError, HTTPException, OSError) as err:
            reason = getattr(err, "reason", None) or err
            host = urlparse(request.full_url).hostname
            if isinstance(reason, socket.gaierror):  # no such host, or no network at all
                raise _Fatal(f"cannot find the host {host} ({reason.strerror})") from None
            raise _Retry(f"cannot connect to {host}: {reason}") from None
        with response:
            target.parent.mkdir(parents=True, exist_ok=True)
            status = int(response.status)
            if status == 206 and have:
                match = _RANGE.search(response.headers.get("Content-Range", "") or "")
                if match is None or int(match.group(1)) != have:
                    part.unlink(missing_ok=True)
                    raise _Retry("the server resumed at the wrong place; starting over")
                total = None if match.group(3) == "*" else int(match.group(3))
                mode, resumed = "ab", True
            elif status == 200:
                length = response.headers.get("Content-Length")
                total = int(length) if length and length.isdigit() else None
                mode, resumed, have = "wb", False, 0
                info = {
                    "url": url,
                    "etag": response.headers.get("ETag"),
                    "modified": response.headers.get("Last-Modified"),
                }
                meta.write_text(json.dumps(info), encoding="utf-8")
            else:
                raise _Fatal(f"HTTP {status}: unexpected answer to a download")
            self.emit(CacheEvent("start", url, total=total, have=have))
            got = 0
            with part.open(mode) as out:
                while True:
                    if self.stop.is_set():
                        raise _Stopped
                    try:
                        chunk = response.read(CHUNK)
                    except (HTTPException, OSError) as err:
                        text = f"connection dropped after {have + got} bytes ({err})"
                        raise _Retry(text, got) from None
                    if not chunk:
                        break
                    out.write(chunk)
                    got += len(chunk)
                    self.emit(CacheEvent("bytes", url, amount=len(chunk)))
        size = have + got
        if total is not None and size != total:
            if size > total:
                part.unlink(missing_ok=True)
            raise _Retry(f"connection dropped after {size} of {total} bytes", got)
        return got, resumed


def prepare_cache(root: Path) -> None:
    """Make the cache folder, or raise ``CacheError``: it cannot be written, or its manifest
    cannot be read."""
    try:
        root.mkdir(parents=True, exist_ok=True)
        probe = root / f".write-test.{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as err:
        reason = err.strerror or str(err)
        raise CacheError(f"cannot write to the cache folder {root} ({reason})") from err
    Manifest.load(root)


def fill_cache(
    needs: Sequence[Need],
    root: Path,
    *,
    workers: int = DEFAULT_WORKERS,
    endpoint: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    retries: int = DEFAULT_RETRIES,
    on_event: Callable[[CacheEvent], None] | None = None,
) -> CacheReport:
    """Download every needed file into ``root`` (see the module docstring), ``workers`` at
    once; the report lists each URL's outcome in ``needs`` order. ``CacheError``: the folder
    cannot be used. Ctrl-C (KeyboardInterrupt): the downloads stop, the manifest keeps what
    finished, and ``CacheCancelled`` carries the report."""
    if workers < 1:
        raise ValueError("workers must be at least 1")
    if retries < 0:
        raise ValueError("retries cannot be negative")
    if endpoint and urlparse(endpoint).scheme not in ("http", "https"):
        raise ValueError(f"the endpoint must be an http(s) URL, not {endpoint!r}")
    emit = on_event or (lambda event: None)
    started = time.monotonic()
    prepare_cache(root)
    report = CacheReport(root)
    with _locked(root):
        manifest = Manifest.load(root)
        stop = threading.Event()
        filler = _Filler(
            root,
            manifest,
            endpoint=endpoint,
            timeout=timeout,
            retries=retries,
            emit=emit,
            stop=stop,
        )
        plan = filler.plan(needs)
        results: dict[int, Fetched] = {}

        def work(i: int, need: Need) -> None:
            try:
                fetched = filler.one(need, plan[need.url])
            except OSError as err:  # the cache's own disk: full, not writable
                fetched = Fetched(need.url, "failed", plan[need.url], error=str(err))
            results[i] = fetched = replace(fetched, tasks=need.tasks)
            emit(CacheEvent("end", need.url, result=fetched))

        queue = list(enumerate(needs))
        queue_lock = threading.Lock()

        def worker() -> None:
            while not stop.is_set():
                with queue_lock:
                    if not queue:
                        return
                    i, need = queue.pop(0)
                work(i, need)

        # daemon threads: a cancelled fill does not wait for a server that stopped answering
        threads = [
            threading.Thread(target=worker, name=f"bench-cache-{n}", daemon=True)
            for n in range(min(workers, max(len(needs), 1)))
        ]
        for thread in threads:
            thread.start()
        try:
            for thread in threads:
                while thread.is_alive():
                    thread.join(0.2)
        except KeyboardInterrupt:
            stop.set()
            deadline = time.monotonic() + CANCEL_GRACE
            for thread in threads:  # a moment to finish the chunk each is writing
                thread.join(max(deadline - time.monotonic(), 0.0))
            report.files = [results[i] for i in sorted(results)]
            report.seconds = time.monotonic() - started
            manifest.save()
            raise CacheCancelled(report) from None
        report.files = [results[i] for i in sorted(results)]
    report.seconds = time.monotonic() - started
    return report


__all__ = [
    "MANIFEST",
    "CacheCancelled",
    "CacheError",
    "CacheEvent",
    "CacheReport",
    "Entry",
    "Fetched",
    "Manifest",
    "Need",
    "fetch_command",
    "fetch_url",
    "fill_cache",
    "find_cached",
    "prepare_cache",
    "missing_note",
    "relative_path",
    "suite_needs",
    "task_urls",
]
