"""Shared fixtures. Desktop tests run on ONE virtual X desktop for the whole session.

- ``desktop``: the session's ``VirtualDesktop`` (1280x800, temporary HOME, D-Bus session with
  the accessibility bus; LibreOffice's start-up tips turned off in that HOME). It also points
  this process's DISPLAY/XAUTHORITY/D-Bus variables at it, because pyautogui binds to
  ``$DISPLAY`` when first imported.
- ``x11``: an ``X11Backend`` bound to that desktop.
- ``apps``: starts programs on the desktop and, after the test, ends every process the test
  started there (found by the desktop's marker), so no window leaks into the next test.
  Session services that a program woke (the accessibility bus, dconf) are left running.
- ``atspi_texts(desktop, app)``: an application's text elements with each character's box on
  screen, from the accessibility tree (read in a separate process).
- ``probe``: the Tk probe window (tests/apps/probe_tk.py), started and ready to be clicked.

Every test that uses the desktop is marked ``desktop`` here (``pytest -m "not desktop"`` runs the
rest). Such tests are skipped, with the reason, only when Xvfb is not installed; any other
failure to start the desktop is an error.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import psutil
import pytest

from agent_s.desktop.base import WindowInfo
from agent_s.desktop.virtual import VirtualDesktop, marked_processes

APPS_DIR = Path(__file__).parent / "apps"
# ``agent-s run`` keeps memory by default: runs made in this process (and in processes given
# the desktop's environment, which copies this) learn in a file of this session, never in the
# user's own; a process given neither keeps it in its HOME's data folder
_MEMORY = Path(tempfile.mkdtemp(prefix="agent-s-memory-"))
atexit.register(shutil.rmtree, _MEMORY, ignore_errors=True)
os.environ["AGENT_S_MEMORY_DB"] = str(_MEMORY / "memory.sqlite3")
# and seal them with a key of this session (agent_s.guards.trust), never the user's own
os.environ["AGENT_S_MEMORY_KEY"] = str(_MEMORY / "memory.key")
PROBE = APPS_DIR / "probe_tk.py"


@pytest.fixture(autouse=True)
def _memory_of_its_own() -> None:
    """Each test starts with the session's memory file empty: a run whose check passed leaves a
    verified skill there, which a later run of the same task with other values replays by
    default (agent_s.replay.reuse), so one test would otherwise change what the next one's
    model is asked. Processes started with ``tests/clean_env.py``'s environment or the
    desktop's use this file too."""
    for name in ("memory.sqlite3", "memory.sqlite3-wal", "memory.sqlite3-shm"):
        (_MEMORY / name).unlink(missing_ok=True)


NO_XVFB = (
    "Xvfb is not installed: desktop tests need a virtual X display "
    "(apt-get install xvfb xauth openbox dbus-x11 at-spi2-core xdotool xclip)"
)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``pytest`` with no arguments (or with folders) runs on several worker processes, each
    with its own virtual desktop: one more than the cores, at most 4 (on 2 cores, 3 workers
    took 605 s where 2 took 670 to 757; the keys that Calc and xterm once lost under that
    load were the product's own faults, fixed: see agent_s.desktop.settle and KeyBinder).
    Chosen tests (a file, a test id, ``-k``) run in this process. ``-n N`` on the command
    line, or PYTEST_XDIST_AUTO_NUM_WORKERS, decides instead."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # xdist's own hook reads it
    chosen = config.args_source is pytest.Config.ArgsSource.ARGS and not all(
        Path(arg).is_dir() for arg in config.args
    )
    if chosen or config.getoption("keyword") or config.getoption("markexpr"):
        return 0
    return min(4, (os.cpu_count() or 1) + 1)


# The files that take longest (measured with --durations=0), longest first: the workers take
# whole files (--dist loadfile, so a file's tests run in order on one desktop) in collection
# order, and starting with the long ones leaves no worker alone with one at the end.
_LONGEST_FIRST = (
    "test_osworld_reference.py",  # only with scripts/setup.sh --bench-apps
    "test_readme.py",
    "test_desktop_actions.py",
    "test_bestofn.py",
    "test_cli_first_hour.py",
    "test_cli_pty.py",
    "test_packaging.py",
    "test_bench_run.py",
    "test_practice.py",
    "test_report.py",
    "test_liveview.py",
    "test_lifecycle.py",
    "test_safety_routes.py",
    "test_injection.py",
    "test_mcp.py",
    "test_bench_getters_dom.py",
    "test_models_timeouts.py",
    "test_virtual_parity.py",
    "test_bench_gnome.py",
    "test_memory_agent.py",
    "test_bench_chrome.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test that uses the desktop (directly or through ``x11``, ``apps``,
    ``probe``) as ``desktop``; skip those, saying why, when Xvfb is missing. Put the
    longest files first (``_LONGEST_FIRST``)."""
    rank = {name: index for index, name in enumerate(_LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: order kept
    skip = pytest.mark.skip(reason=NO_XVFB) if shutil.which("Xvfb") is None else None
    for item in items:
        if "desktop" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.desktop)
        if skip is not None and item.get_closest_marker("desktop") is not None:
            item.add_marker(skip)


_LIBREOFFICE_SETTINGS = """<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry"
 xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<item oor:path="/org.openoffice.Office.Common/Misc"><prop oor:name="ShowTipOfTheDay" oor:op="fuse"><value>false</value></prop></item>
<item oor:path="/org.openoffice.Office.Common/Misc"><prop oor:name="FirstRun" oor:op="fuse"><value>false</value></prop></item>
</oor:items>
"""  # noqa: E501 - one registry item per line, as LibreOffice writes them


def _quiet_libreoffice(home: Path) -> None:
    """No "Tip of the Day" dialog: on a fresh profile it pops up seconds after the window and
    takes the keyboard from whatever a test is typing."""
    profile = home / ".config/libreoffice/4/user"
    profile.mkdir(parents=True, exist_ok=True)
    (profile / "registrymodifications.xcu").write_text(_LIBREOFFICE_SETTINGS)


def _text_files_open_in_mousepad(home: Path) -> None:
    """xdg-open's choice for text files, whatever else is installed (LibreOffice Writer, which
    ``scripts/setup.sh --bench-apps`` adds, also claims them)."""
    config = home / ".config"
    config.mkdir(parents=True, exist_ok=True)
    (config / "mimeapps.list").write_text(
        "[Default Applications]\ntext/plain=org.xfce.mousepad.desktop\n", encoding="utf-8"
    )


# The session desktop, once started, with the processes it started with (its X server, window
# manager, buses): what every test file leaves it as (``_each_file_leaves_no_program``).
_SESSION_DESKTOP: list[tuple[VirtualDesktop, frozenset[int]]] = []


def _mousepad_never_restores(desk: VirtualDesktop) -> None:
    """No "restore the session?" window: mousepad ended by a test's clean-up counts as a crash,
    and its default (session-restore 'after-a-crash') offers that session back at the next
    start, in a window titled "Mousepad" that takes the place of the document a later test
    (or test file, on another worker's order) opens."""
    subprocess.run(
        ["gsettings", "set", "org.xfce.mousepad.preferences.file", "session-restore", "never"],
        env=desk.env,
        check=True,
        capture_output=True,
        timeout=30,
    )


@pytest.fixture(scope="session")
def desktop() -> Iterator[VirtualDesktop]:
    if shutil.which("Xvfb") is None:
        pytest.skip(NO_XVFB)
    with VirtualDesktop(1280, 800, home="temp") as desk:
        _quiet_libreoffice(desk.home)
        _text_files_open_in_mousepad(desk.home)
        _mousepad_never_restores(desk)
        _SESSION_DESKTOP.append((desk, frozenset(marked_processes(desk.token))))
        try:
            with desk.exported():
                yield desk
        finally:
            _SESSION_DESKTOP.clear()


@pytest.fixture(scope="module", autouse=True)
def _each_file_leaves_no_program() -> Iterator[None]:
    """When a test file is done, every program its tests left on the session desktop ends
    (an application the agent opened, say): the files run in any order, on any worker
    (pytest-xdist), and a single-instance application left running (mousepad) would take the
    next file's window. Session services stay (see ``_SESSION_SERVICES``)."""
    yield
    if not _SESSION_DESKTOP:
        return
    from agent_s.desktop.x11 import X11Backend

    desk, own = _SESSION_DESKTOP[0]
    started = [p for p in marked_processes(desk.token) if p not in own]
    services = _session_services(started)
    end_processes([p for p in started if p not in services])
    # and whatever still shows a window, marked or not (started with another environment)
    backend = X11Backend(desk.display, env=desk.env)
    try:
        stray = {w.pid: f"{w.app}: {w.title}" for w in backend.windows() if w.pid}
    finally:
        backend.close()
    stray = {pid: what for pid, what in stray.items() if pid not in own}
    if stray:
        warnings.warn(f"left with a window: {sorted(stray.values())}", stacklevel=1)
        end_processes(sorted(stray))


@pytest.fixture(scope="session")
def x11(desktop: VirtualDesktop) -> Iterator[Any]:
    from agent_s.desktop.x11 import X11Backend

    backend = X11Backend(desktop.display, env=desktop.env)
    yield backend
    backend.close()


# Session services that programs wake on demand (D-Bus activation); several daemonise, so their
# parent is init, not the bus. They serve every later test and must outlive the one that woke
# them (this process's Atspi, for one, cannot reconnect to a new accessibility bus). Names as
# the kernel keeps them (at most 15 characters).
_SESSION_SERVICES = frozenset(
    {"dbus-daemon", "at-spi-bus-laun", "at-spi2-registr", "dconf-service", "gvfsd"}
)


# Services that start helpers of their own: the accessibility bus (its dbus-daemon, the
# registry), gvfs (its backends). A program the session bus started on demand is NOT a
# service: mousepad, for one, is D-Bus activated when a text file is opened with xdg-open.
_SERVICE_PARENTS = frozenset({"at-spi-bus-laun", "gvfsd"})


def _session_services(pids: Sequence[int]) -> set[int]:
    """Those of ``pids`` that are session services or helpers started by one."""
    services = set()
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            proc = psutil.Process(pid)
            # psutil may give the full name from the command line: compare the kernel's part
            if proc.name()[:15] in _SESSION_SERVICES or any(
                p.name()[:15] in _SERVICE_PARENTS for p in proc.parents()
            ):
                services.add(pid)
    return services


def end_processes(pids: Sequence[int], grace: float = 2.0) -> None:
    """SIGTERM, then SIGKILL after ``grace`` seconds, for processes this test session started."""
    procs = []
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            procs.append(psutil.Process(pid))
    for sig in (signal.SIGTERM, signal.SIGKILL):
        alive = []
        for proc in procs:
            with contextlib.suppress(psutil.Error):
                proc.send_signal(sig)  # only if the pid is still that process
                alive.append(proc)
        deadline = time.monotonic() + grace
        while alive and time.monotonic() < deadline:
            time.sleep(0.03)
            alive = [p for p in alive if _running(p)]
        if not alive:
            return
        procs = alive


def _running(proc: psutil.Process) -> bool:
    """Still running: a zombie is dead (this container's init may not reap it)."""
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


@dataclass
class Launched:
    proc: subprocess.Popen[bytes]
    window: WindowInfo | None


class AppRunner:
    """Starts programs on the session desktop; ``close()`` ends all the test started there."""

    def __init__(self, desktop: VirtualDesktop, backend: Any) -> None:
        self.desktop = desktop
        self.backend = backend
        self.baseline = set(marked_processes(desktop.token))
        self.procs: list[subprocess.Popen[bytes]] = []

    def __call__(
        self,
        argv: Sequence[str],
        *,
        window: str | Callable[[WindowInfo], bool] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float = 20.0,
    ) -> Launched:
        """Start ``argv``; with ``window``, wait for a NEW window matching it and return it."""
        before = {w.id for w in self.backend.windows()}
        proc = self.desktop.launch(argv, cwd=cwd, env=env)
        self.procs.append(proc)
        if window is None:
            return Launched(proc, None)
        if callable(window):
            matcher = window
        else:
            name = window.casefold()

            def matcher(w: WindowInfo) -> bool:
                return name in w.app.casefold() or name in w.title.casefold()

        found = self.backend.wait_for_window(
            lambda w: w.id not in before and matcher(w), timeout=timeout
        )
        return Launched(proc, found)

    def new_processes(self) -> list[int]:
        started = [p for p in marked_processes(self.desktop.token) if p not in self.baseline]
        services = _session_services(started)
        return [p for p in started if p not in services]

    def close(self) -> None:
        end_processes(self.new_processes())
        for proc in self.procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(2)


@contextlib.contextmanager
def app_runner(desktop: VirtualDesktop, backend: Any) -> Iterator[AppRunner]:
    """An ``AppRunner`` for a test; afterwards its programs end and their windows go."""
    windows_before = {w.id for w in backend.windows()}
    runner = AppRunner(desktop, backend)
    try:
        yield runner
    finally:
        runner.close()
        # Let the window manager drop the closed windows before the next test looks.
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline and {w.id for w in backend.windows()} - windows_before:
            time.sleep(0.05)


@pytest.fixture
def apps(desktop: VirtualDesktop, x11: Any) -> Iterator[AppRunner]:
    with app_runner(desktop, x11) as runner:
        yield runner


_ATSPI_TEXTS = """
import json, sys
import gi
gi.require_version("Atspi", "2.0")
from gi.repository import Atspi

wanted = sys.argv[1].casefold()
found = []
def walk(node, depth):
    if node is None or depth > 30:
        return
    try:
        count = Atspi.Text.get_character_count(node)
    except Exception:
        count = -1
    if count >= 0:
        content = Atspi.Text.get_text(node, 0, count)
        boxes = []
        for offset in range(min(count, 400)):
            e = Atspi.Text.get_character_extents(node, offset, Atspi.CoordType.SCREEN)
            boxes.append([e.x, e.y, e.width, e.height])
        found.append({"role": node.get_role_name(), "text": content, "chars": boxes})
    for index in range(node.get_child_count()):
        walk(node.get_child_at_index(index), depth + 1)

desktop = Atspi.get_desktop(0)
for index in range(desktop.get_child_count()):
    app = desktop.get_child_at_index(index)
    if app is not None and (app.get_name() or "").casefold() == wanted:
        walk(app, 0)
print(json.dumps(found))
"""


def atspi_texts(desktop: VirtualDesktop, app: str) -> list[dict[str, Any]]:
    """Every text element of the application ``app`` as the accessibility tree shows it:
    its role, its text and each character's box on screen. Runs in a separate process with
    the desktop's environment, because AT-SPI binds to one D-Bus session per process."""
    result = subprocess.run(
        [sys.executable, "-c", _ATSPI_TEXTS, app],
        env=desktop.env,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return json.loads(result.stdout)


class Probe:
    """The probe window and the events it logged (see tests/apps/probe_tk.py)."""

    def __init__(self, log: Path, window: WindowInfo, backend: Any) -> None:
        self.log = log
        self.window = window
        self.backend = backend
        self.mark = 0  # events before this index are ignored by ``events()``

    def all_events(self) -> list[dict[str, Any]]:
        lines = self.log.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]

    def events(self, kind: str | None = None) -> list[dict[str, Any]]:
        found = self.all_events()[self.mark :]
        return [e for e in found if kind is None or e["type"] == kind]

    def reset(self) -> None:
        """Forget the events so far: later ``events()`` calls see only newer ones."""
        self.mark = len(self.all_events())

    def wait_for(
        self, predicate: Callable[[list[dict[str, Any]]], bool], timeout: float = 5.0
    ) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while True:
            events = self.events()
            if predicate(events):
                return events
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"probe did not see the expected events; got {events}; "
                    f"all: {self.all_events()}; windows: {self.backend.windows()}"
                )
            time.sleep(0.03)

    def ready(self, events: list[dict[str, Any]]) -> bool:
        """Whether the probe has reported where its widgets are."""
        return any(e["type"] == "boxes" for e in events)

    @property
    def boxes(self) -> dict[str, list[int]]:
        found = [e for e in self.all_events() if e["type"] == "boxes"]
        assert found, "the probe has not reported its widgets yet"
        return found[-1]

    def origin(self) -> Any:
        """The screen point the probe's positions count from: the Tk probe gives screen
        positions (a probe that gives them in its window says where the window is)."""
        from agent_s.desktop.ops import Point

        return Point(0, 0)

    def point(self, widget: str, fx: float = 0.5, fy: float = 0.5) -> Any:
        """A point inside a widget, at fractions of its width and height, on the screen."""
        from agent_s.desktop.ops import Point

        x, y, w, h = self.boxes[widget]
        origin = self.origin()
        return Point(origin.x + x + int(w * fx), origin.y + y + int(h * fy))

    def screen(self, event: dict[str, Any]) -> tuple[int, int]:
        """Where on the screen an event (a press, a release, a motion) happened."""
        origin = self.origin()
        return origin.x + event["x"], origin.y + event["y"]


_P = TypeVar("_P", bound=Probe)


def start_probe(
    apps: AppRunner, backend: Any, log: Path, kind: type[_P] = Probe, script: Path = PROBE
) -> _P:
    """A probe window (``script``, logging to ``log``) started with ``apps``, ready
    (``kind.ready``) and in front, with its events so far forgotten."""
    title = f"probe-{time.monotonic_ns()}"
    launched = apps([sys.executable, str(script), str(log), "--title", title], window=title)
    assert launched.window is not None
    result = kind(log, launched.window, backend)
    result.wait_for(result.ready, timeout=10)
    backend.activate(title)
    result.reset()
    return result


@pytest.fixture
def probe(apps: AppRunner, x11: Any, tmp_path: Path) -> Probe:
    return start_probe(apps, x11, tmp_path / "probe.jsonl")
