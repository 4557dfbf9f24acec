"""KdeBackend on a real virtual KWin (``kwin_wayland --virtual``): the shared backend checks,
KWin's authorisation, and agent-s run/doctor on a KDE desktop.

Every test here goes through KWin's real authorisation: the virtual desktop builds agent-s's
helper and its desktop entry (``kde_access``) and KWin grants the helper ScreenShot2 and fake
input because of that entry (no permission check is switched off). The GTK probe
(tests/apps/probe_gtk.py, a native Wayland client), mousepad and lxterminal show what arrives as
applications see it; files on disk are the proof.

Skipped, saying why, only when kwin_wayland, wl-clipboard or a C compiler is missing
(scripts/setup.sh --desktops installs them); any other failure to start KWin is an error.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import backend_checks
import psutil
import pytest
from clean_env import clean_env
from conftest import AppRunner, Probe, app_runner, start_probe
from polling import wait_until as _wait
from scripted_cli import model_options

from agent_s.desktop import kde_access
from agent_s.desktop.base import DesktopBackend
from agent_s.desktop.choose import choose_backend, desktop_backend
from agent_s.desktop.kde import KdeBackend
from agent_s.desktop.ops import Point
from agent_s.desktop.virtual import VirtualDesktop, marked_processes
from agent_s.errors import DesktopSetupError
from agent_s.grounding import AccessibilityGrounder
from agent_s.grounding.types import GrounderUnavailable
from agent_s.loop.observe import capture
from agent_s.record.trajectory import load_trajectory
from agent_s.testing.scripted_replies import reply
from agent_s.testing.scripted_server import RecordedRequest, ScriptedModelServer

PROBE = Path(__file__).parent / "apps" / "probe_gtk.py"
AGENT_S = str(Path(sys.executable).with_name("agent-s"))
# foot 1.13 dies of SIGFPE on KWin's virtual output: lxterminal (GTK, VTE) is the terminal here
_TOOLS = (
    "kwin_wayland",
    "wl-copy",
    "wl-paste",
    "dbus-daemon",
    "lxterminal",
    "mousepad",
    "galculator",
)
_MISSING = [tool for tool in _TOOLS if shutil.which(tool) is None]
if not any(shutil.which(c) for c in ("cc", "gcc", "clang")):
    _MISSING.append("cc")
NO_KWIN = (
    f"{', '.join(_MISSING)} not installed: KDE tests need KWin and a C compiler "
    "(apt-get install kwin-wayland wl-clipboard gcc lxterminal mousepad galculator, or run "
    "scripts/setup.sh --desktops)"
)
on_kwin = [pytest.mark.desktop, pytest.mark.skipif(bool(_MISSING), reason=NO_KWIN)]
_CLEAN = {k: v for k, v in clean_env().items() if not k.endswith("_API_KEY")}
for _name in ("DISPLAY", "XAUTHORITY", "WAYLAND_DISPLAY", "SWAYSOCK", "DBUS_SESSION_BUS_ADDRESS"):
    _CLEAN.pop(_name, None)


def _marks(test: Callable[..., None]) -> Callable[..., None]:
    for mark in on_kwin:
        test = mark(test)
    return test


def act(code: str) -> str:
    return f"Next.\n```python\n{code}\n```"


# -- the desktop ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def kde_desktop() -> Iterator[VirtualDesktop]:
    if _MISSING:
        pytest.skip(NO_KWIN)
    with VirtualDesktop(1280, 800, home="temp", kind="kde") as desk:
        config = desk.home / ".config"
        (config / "mimeapps.list").write_text(
            "[Default Applications]\ntext/plain=org.xfce.mousepad.desktop\n", encoding="utf-8"
        )
        yield desk


@pytest.fixture(scope="module")
def kde(kde_desktop: VirtualDesktop) -> Iterator[KdeBackend]:
    backend = desktop_backend(kde_desktop)
    assert isinstance(backend, KdeBackend)
    yield backend
    backend.close()


@pytest.fixture
def work(kde_desktop: VirtualDesktop) -> Iterator[Path]:
    folder = kde_desktop.home / f"work-{time.monotonic_ns()}"
    folder.mkdir()
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def kde_apps(kde_desktop: VirtualDesktop, kde: KdeBackend) -> Iterator[AppRunner]:
    with app_runner(kde_desktop, kde) as runner:
        yield runner


class KwinProbe(Probe):
    """The GTK probe window: positions in its window, which KWin places."""

    def origin(self) -> Point:
        window = next(w for w in self.backend.windows() if w.id == self.window.id)
        return Point(window.x, window.y)

    def ready(self, events: list[dict[str, Any]]) -> bool:
        boxes = [e for e in events if e["type"] == "boxes"]
        window = next((w for w in self.backend.windows() if w.id == self.window.id), None)
        return bool(boxes) and window is not None and window.width > 0


@pytest.fixture
def probe(kde_apps: AppRunner, kde: KdeBackend, kde_desktop: VirtualDesktop) -> KwinProbe:
    log = kde_desktop.home / f"probe-{time.monotonic_ns()}.jsonl"
    log.touch()
    return start_probe(kde_apps, kde, log, KwinProbe, PROBE)


# -- the session and its authorisation --------------------------------------------------------


@_marks
def test_the_virtual_desktop_is_a_kde_wayland_session_driven_by_kde_backend(
    kde: KdeBackend, kde_desktop: VirtualDesktop
) -> None:
    assert isinstance(kde, DesktopBackend)
    assert "DISPLAY" not in kde.env
    with kde_desktop.exported():
        choice = choose_backend(os.environ)
        assert choice.kind == "kde", choice
        assert os.environ["XDG_CURRENT_DESKTOP"] == "KDE"
    # KWin runs a copy of its binary (the installed one carries a file capability), with the
    # helper's entry in a data folder of its own, not in the desktop's HOME.
    helper = Path(kde_desktop.env[kde_access.HELPER_VAR])
    entry = helper.parent / "applications" / "agent-s-kwin-access.desktop"
    assert f"Exec={helper}\n" in entry.read_text()
    assert not list(kde_desktop.home.rglob("*.desktop"))
    assert kde_access.authorisation(kde_desktop.env).ok
    # The helper is this session's only client of KWin's restricted interfaces: the process
    # at the other end of the backend's connections.
    assert psutil.Process(kde._access.helper.pid).exe() == str(helper)


@_marks
def test_a_helper_without_an_entry_is_refused_and_told_the_fix(
    kde_desktop: VirtualDesktop, tmp_path: Path
) -> None:
    """KWin's own check, for real: the same helper at a path no desktop entry names gets
    neither fake input nor screenshots, and the error names the entry to install."""
    stranger = tmp_path / "elsewhere" / kde_access.HELPER_NAME
    stranger.parent.mkdir()
    shutil.copyfile(kde_desktop.env[kde_access.HELPER_VAR], stranger)
    stranger.chmod(0o755)
    env = {**kde_desktop.env, kde_access.HELPER_VAR: str(stranger)}
    with pytest.raises(DesktopSetupError) as caught:
        KdeBackend(env)
    message = str(caught.value)
    assert "fake-input" in message
    assert f"Exec={stranger.resolve()}" in message
    assert "X-KDE-Wayland-Interfaces=org_kde_kwin_fake_input" in message
    assert "agent-s setup kde" in message


@_marks
def test_setup_kde_installs_the_entry_and_doctor_reads_it(tmp_path: Path) -> None:
    """In a KDE Wayland session whose KWin is not reachable, doctor names the backend, says
    agent-s is not authorised and prints the entry and the command; ``agent-s setup kde``
    installs them and doctor then says the authorisation is in place (KWin still away)."""
    home = tmp_path / "home"
    home.mkdir()
    env = {
        **_CLEAN,
        "HOME": str(home),
        "XDG_SESSION_TYPE": "wayland",
        "XDG_CURRENT_DESKTOP": "KDE",
        "WAYLAND_DISPLAY": "wayland-nothing",
        "XDG_RUNTIME_DIR": str(tmp_path),
        "DBUS_SESSION_BUS_ADDRESS": f"unix:path={tmp_path / 'no-bus'}",
    }
    env.pop("XDG_DATA_HOME", None)

    def doctor() -> dict[str, Any]:
        done = subprocess.run(
            [AGENT_S, "doctor", "--json"], env=env, capture_output=True, text=True, timeout=120
        )
        assert "Traceback" not in done.stdout + done.stderr
        assert done.returncode == 1
        return {c["name"]: c for c in json.loads(done.stdout)["checks"]}

    checks = doctor()
    assert checks["display"]["status"] == "fail"
    assert "KWin cannot be used" in checks["display"]["detail"]
    granted = checks["authorisation"]
    assert granted["status"] == "fail"
    assert "not authorised" in granted["detail"]
    helper = home / ".local/share/agent-s/agent-s-kwin-access"
    assert "agent-s setup kde" in granted["fix"]
    assert f"Exec={helper}" in granted["fix"]
    assert "X-KDE-DBUS-Restricted-Interfaces=org.kde.KWin.ScreenShot2" in granted["fix"]

    done = subprocess.run(
        [AGENT_S, "setup", "kde"], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    entry = home / ".local/share/applications/agent-s-kwin-access.desktop"
    assert f"Exec={helper}\n" in entry.read_text()
    assert os.access(helper, os.X_OK)
    checks = doctor()
    assert checks["authorisation"]["status"] == "ok", checks["authorisation"]
    assert checks["display"]["status"] == "fail"
    assert "wayland-nothing" in checks["display"]["detail"]


def test_setup_kde_writes_through_no_planted_link(tmp_path: Path) -> None:
    """Links planted where ``agent-s setup kde`` writes the helper and the entry are replaced,
    never written through: the files they point at stay as they were."""
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler: apt-get install gcc")
    home = tmp_path / "home"
    for folder in ("agent-s", "applications"):
        (home / ".local/share" / folder).mkdir(parents=True)
    victims = {name: tmp_path / f"victim-{name}" for name in ("helper", "entry")}
    for victim in victims.values():
        victim.write_text("untouched\n")
    helper = home / ".local/share/agent-s/agent-s-kwin-access"
    entry = home / ".local/share/applications/agent-s-kwin-access.desktop"
    helper.symlink_to(victims["helper"])
    entry.symlink_to(victims["entry"])
    env = {**_CLEAN, "HOME": str(home)}
    env.pop("XDG_DATA_HOME", None)
    done = subprocess.run(
        [AGENT_S, "setup", "kde"], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    for victim in victims.values():
        assert victim.read_text() == "untouched\n"
    assert not helper.is_symlink()
    assert os.access(helper, os.X_OK)
    assert not entry.is_symlink()
    assert f"Exec={helper}\n" in entry.read_text()


@_marks
def test_doctor_on_a_virtual_kde_desktop_names_the_backend_and_each_capability() -> None:
    done = subprocess.run(
        [AGENT_S, "doctor", "--virtual", "--desktop", "kde", "--json"],
        env=_CLEAN,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert "Traceback" not in done.stdout + done.stderr
    checks = {c["name"]: c for c in json.loads(done.stdout)["checks"]}
    for name in ("display", "authorisation", "capture", "input", "text", "clipboard", "windows"):
        assert checks[name]["status"] == "ok", checks[name]
    assert "kde backend" in checks["display"]["detail"]
    assert "KWin" in checks["display"]["detail"]
    assert "1280x800" in checks["capture"]["detail"]
    assert "ScreenShot2" in checks["capture"]["detail"]
    assert "fake input" in checks["input"]["detail"]
    assert checks["open"]["status"] in ("ok", "warn")


# -- screen -----------------------------------------------------------------------------------


@_marks
def test_geometry_and_capture_of_the_whole_screen(kde: KdeBackend, probe: KwinProbe) -> None:
    shot = backend_checks.whole_screen(kde, probe)
    part = kde.capture(0)
    assert part.origin == Point(0, 0)
    assert part.image.size == shot.image.size
    with pytest.raises(ValueError, match="does not exist"):
        kde.capture(3)


@_marks
def test_accessibility_boxes_are_not_used_for_points_on_kwin(
    kde: KdeBackend, kde_desktop: VirtualDesktop, probe: KwinProbe
) -> None:
    """KWin tells Wayland clients no position, so GTK's AT-SPI extents are relative to the
    window (its frame at 0, 0 where KWin shows it elsewhere): the accessibility grounder
    does not answer with points here."""
    window = next(w for w in kde.windows() if w.id == probe.window.id)
    assert (window.x, window.y) != (0, 0)
    code = (
        "import sys, gi\n"
        "gi.require_version('Atspi', '2.0')\n"
        "from gi.repository import Atspi\n"
        "d = Atspi.get_desktop(0)\n"
        "for i in range(d.get_child_count()):\n"
        "    app = d.get_child_at_index(i)\n"
        "    for j in range(app.get_child_count() if app else 0):\n"
        "        f = app.get_child_at_index(j)\n"
        "        if f is not None and f.get_name() == sys.argv[1]:\n"
        "            e = f.get_extents(Atspi.CoordType.SCREEN)\n"
        "            print(e.x, e.y)\n"
    )
    read = subprocess.run(
        [sys.executable, "-c", code, probe.window.title],
        env=kde_desktop.env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert read.stdout.split() == ["0", "0"], read.stdout + read.stderr
    with kde_desktop.exported():
        observation = capture(kde, "all")
        assert not observation.screenshot.accessibility_boxes
        with pytest.raises(GrounderUnavailable, match="relative to their window"):
            AccessibilityGrounder().ground("the entry", observation)


# -- mouse ------------------------------------------------------------------------------------


@_marks
@pytest.mark.parametrize(("button", "number"), [("left", 1), ("middle", 2), ("right", 3)])
def test_click_buttons_and_counts(
    kde: KdeBackend, probe: KwinProbe, button: str, number: int
) -> None:
    backend_checks.click_buttons_and_counts(kde, probe, button, number)


@_marks
def test_click_with_held_modifiers(kde: KdeBackend, probe: KwinProbe) -> None:
    backend_checks.click_with_held_modifiers(kde, probe)


@_marks
def test_points_off_the_screen_are_refused_not_clamped(kde: KdeBackend, probe: KwinProbe) -> None:
    backend_checks.points_off_the_screen_are_refused(kde, probe)


@_marks
def test_drag_presses_at_start_moves_and_releases_at_end(kde: KdeBackend, probe: KwinProbe) -> None:
    backend_checks.drag_presses_moves_and_releases(kde, probe)


@_marks
def test_scroll_vertical_and_horizontal(
    kde: KdeBackend, kde_apps: AppRunner, kde_desktop: VirtualDesktop
) -> None:
    """Wheel turns arrive as scrolling, each its own event (as smooth scrolling: KWin's fake
    input has no wheel steps, see probe_gtk.py --smooth)."""
    log = kde_desktop.home / f"probe-{time.monotonic_ns()}.jsonl"
    log.touch()
    title = f"smooth-{time.monotonic_ns()}"
    launched = kde_apps(
        [sys.executable, str(PROBE), str(log), "--title", title, "--smooth"], window=title
    )
    assert launched.window is not None
    probe = KwinProbe(log, launched.window, kde)
    probe.wait_for(probe.ready, timeout=10)
    kde.activate(title)
    probe.reset()
    backend_checks.scroll_both_ways(kde, probe)


# -- keyboard ---------------------------------------------------------------------------------


@_marks
def test_hold_and_press_and_hotkey_reach_the_focused_widget(
    kde: KdeBackend, probe: KwinProbe
) -> None:
    backend_checks.hold_and_press_and_hotkey(kde, probe, "<")


@_marks
def test_type_text_in_chunks(
    kde: KdeBackend, probe: KwinProbe, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend_checks.type_text_in_chunks(kde, probe, monkeypatch)


@_marks
def test_type_text_refuses_control_characters(kde: KdeBackend) -> None:
    backend_checks.refuses_control_characters(kde)


@_marks
def test_typing_non_ascii_puts_the_clipboard_back(kde: KdeBackend, probe: KwinProbe) -> None:
    kde.clipboard_set("kept ✓")
    kde.click(probe.point("entry"))
    kde.type_text("<é> 日本")
    probe.wait_for(lambda ev: any(e.get("text") == "<é> 日本" for e in ev))
    assert kde.clipboard_get() == "kept ✓"


@_marks
def test_type_text_into_mousepad_saves_exactly_that_text(
    kde: KdeBackend, kde_apps: AppRunner, work: Path
) -> None:
    path = work / "typed.txt"
    path.write_text("")
    backend_checks.type_into_mousepad(kde, kde_apps, path)


@_marks
def test_type_text_into_a_terminal_gives_the_same_bytes(
    kde: KdeBackend, kde_apps: AppRunner, work: Path
) -> None:
    """In a terminal the paste of what the keymap lacks is Ctrl+Shift+V."""
    out = work / "from_terminal.txt"
    backend_checks.type_into_terminal(kde, kde_apps, _terminal, out)


def _terminal(title: str) -> list[str]:
    return ["lxterminal", "--no-remote", f"--title={title}", "-e"]


@_marks
def test_hotkeys_select_copy_and_save_in_mousepad(
    kde: KdeBackend, kde_apps: AppRunner, work: Path
) -> None:
    path = work / "keys.txt"
    path.write_text("first line\nsecond line")
    backend_checks.hotkeys_in_mousepad(kde, kde_apps, path)


# -- clipboard --------------------------------------------------------------------------------


@_marks
def test_clipboard_round_trip_with_unicode(kde: KdeBackend) -> None:
    backend_checks.clipboard_round_trip(kde)


@_marks
def test_clipboard_feeds_a_real_paste(kde: KdeBackend, probe: KwinProbe) -> None:
    backend_checks.clipboard_feeds_a_paste(kde, probe)


# -- windows and programs ---------------------------------------------------------------------


@_marks
def test_windows_listed_and_activated(
    kde: KdeBackend, kde_apps: AppRunner, probe: KwinProbe, work: Path
) -> None:
    title = f"second-{time.monotonic_ns()}"
    terminal = kde_apps([*_terminal(title), "sh"], window=title).window
    assert terminal is not None
    assert terminal.app == "lxterminal"
    assert terminal.pid
    assert psutil.Process(terminal.pid).name() == "lxterminal"
    window = kde.activate(probe.window.title)
    assert window.id == probe.window.id
    assert window.active
    assert kde.windows()[0].id == probe.window.id
    kde.click(probe.point("entry"))
    kde.type_text("to the probe")
    probe.wait_for(lambda ev: any(e.get("text") == "to the probe" for e in ev))
    window = kde.activate(title)
    assert window.id == terminal.id
    assert kde.window_order()[0] == terminal.id
    out = work / "from-activated.txt"
    kde.type_text(f"echo activated > {out}\n")
    _wait(lambda: out.exists() and out.read_text() == "activated\n", what=f"{out}")
    with pytest.raises(Exception, match="no open window matches"):
        kde.activate("no-such-window-anywhere")


@_marks
def test_open_application_by_name_and_again_brings_it_forward(
    kde: KdeBackend, kde_apps: AppRunner
) -> None:
    before = {w.id for w in kde.windows()}
    assert kde.open("galculator") is None
    window = kde.wait_for_window(lambda w: w.id not in before and w.app == "galculator", timeout=15)
    try:
        if len(kde.windows()) > 1:
            kde.activate(next(w.title for w in kde.windows() if w.id != window.id))
        again = kde.open("galculator")
        assert again is not None
        assert again.id == window.id
        assert again.active
    finally:
        if window.pid:
            psutil.Process(window.pid).terminate()


@_marks
def test_open_file_uses_its_default_application(kde: KdeBackend, work: Path) -> None:
    path = work / f"notes-{time.monotonic_ns()}.txt"
    path.write_text("opened by its default application\n")
    assert kde.open(str(path)) is None
    window = kde.wait_for_window(path.name, timeout=20)
    try:
        assert window.app == "mousepad"
        assert window.pid is not None
    finally:
        if window.pid:
            psutil.Process(window.pid).terminate()


# -- agent-s run on a virtual KDE desktop ----------------------------------------------------


def _kde_run(
    server: ScriptedModelServer, runs: Path, task: str, ground: str = "native"
) -> list[str]:
    """``agent-s run --virtual --desktop kde`` with the scripted model, grounding by
    ``ground`` (native: the model's own coordinates), recording into ``runs``."""
    model = model_options(server.openai_base_url, key="sk-kde-test")
    record = ["--ground", ground, "--safety", "auto", "--record", str(runs)]
    return [AGENT_S, "run", "--virtual", "--desktop", "kde", *model, *record, task]


def _ocr_digits(path: Path) -> str:
    import pytesseract
    from PIL import Image

    with Image.open(path) as image:
        gray = image.convert("L")
        box = gray.getbbox()  # the windows: KWin draws no wallpaper, and black confuses OCR
        return str(pytesseract.image_to_string(gray.crop(box) if box else gray))


@_marks
def test_a_calculator_task_on_a_virtual_kde_desktop(tmp_path: Path) -> None:
    """The scripted model opens galculator, clicks its 7 (grounded on the screenshot: the
    accessibility boxes are not screen coordinates on KWin, so that grounder declines) and
    types the rest; the screen it is shown next has the product on it (read by tesseract)."""
    script = [
        reply(act('agent.open("galculator")')),
        reply(act("agent.wait(3)")),
        reply(act('agent.click("the 7 button")')),
        reply(act('agent.type(text="*3=")')),
        reply(act('agent.done(answer="21")')),
    ]
    runs = tmp_path / "runs"
    with ScriptedModelServer(script) as server:
        done = subprocess.run(
            _kde_run(server, runs, "Multiply 7 by 3 on the calculator", ground="auto"),
            env=_CLEAN,
            capture_output=True,
            text=True,
            timeout=240,
        )
    assert "Traceback" not in done.stdout + done.stderr
    assert done.returncode == 0, done.stdout + done.stderr
    (folder,) = runs.iterdir()
    shots = sorted(folder.glob("step_*.png"))
    assert len(shots) == 5
    assert "21" not in _ocr_digits(shots[-2])  # the calculator, before the keys
    assert "21" in _ocr_digits(shots[-1]), "the product is not on the screen"
    (click,) = [s for s in load_trajectory(folder).steps if s.grounding]
    grounding = click.grounding[0]
    assert grounding.grounder != "a11y"
    declined = [a for a in grounding.attempts if a.grounder == "a11y"]
    assert [a.outcome for a in declined] == ["unavailable"]
    assert "relative to their window" in declined[0].reason


def _long_wait(request: RecordedRequest) -> Any:
    return reply(act("agent.wait(0.1)" if request.index == 1 else "agent.wait(30)"))


def _helpers_of(workdir: str) -> list[int]:
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        cmdline = proc.info["cmdline"] or []
        if proc.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        if any(workdir in part for part in cmdline):
            found.append(proc.pid)
    return found


@_marks
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_a_signal_ending_of_a_kde_run_leaves_nothing_running(
    tmp_path: Path, sig: signal.Signals
) -> None:
    """agent-s run --virtual --desktop kde ended by SIGTERM (it stops the desktop) or SIGKILL
    (its watchdog does): KWin, the session bus, what the bus started and agent-s's helper
    are all gone."""
    state = tmp_path / "state"
    env = {**_CLEAN, "AGENT_S_STATE_DIR": str(state)}
    runs = tmp_path / "runs"
    with ScriptedModelServer(_long_wait) as server:
        proc = subprocess.Popen(
            _kde_run(server, runs, "Wait a long time"),
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            _wait(lambda: len(server.requests) >= 2, what="the second step", timeout=120)
            (record,) = (state / "desktops").glob("*.json")
            desktop = json.loads(record.read_text())
            token, workdir = desktop["token"], desktop["paths"][0]
            kwin = [p for p in marked_processes(token) if "kwin_wayland" in _cmd(p)]
            assert kwin, "KWin is not running"
            assert _helpers_of(workdir), "agent-s's helper is not running"
            os.kill(proc.pid, sig)
            proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()

    def gone() -> bool:
        left = [p for p in marked_processes(token) if _alive(p)]
        return not left and not _helpers_of(workdir)

    _wait(gone, what="every process of the desktop to end", timeout=30)
    _wait(lambda: not Path(workdir).exists(), what=f"{workdir} to be removed", timeout=15)


def _cmd(pid: int) -> str:
    try:
        return " ".join(psutil.Process(pid).cmdline())
    except psutil.Error:
        return ""


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


_HOLD_AND_DIE = """
import sys, time
from agent_s.desktop.kde import KdeBackend
from agent_s.desktop.ops import Point
env = dict(arg.split("=", 1) for arg in sys.argv[3:])
backend = KdeBackend(env)
x, y = int(sys.argv[1]), int(sys.argv[2])
backend.move(Point(x, y))
with backend._holding(["Control_L", "Shift_L"]), backend._button_down("left"):
    backend._wl.roundtrip()
    print("down", flush=True)
    time.sleep(60)
"""


@_marks
def test_keys_and_buttons_of_a_killed_process_do_not_stay_down(
    kde: KdeBackend, probe: KwinProbe, kde_desktop: VirtualDesktop
) -> None:
    """SIGKILL skips every ``finally``, and KWin keeps what a dead fake-input client held
    down: the next backend lets go of the modifiers, so no click carries them."""
    at = probe.point("canvas", 0.3, 0.3)
    names = ("WAYLAND_DISPLAY", "XDG_RUNTIME_DIR", "DBUS_SESSION_BUS_ADDRESS", "PATH")
    env = [f"{k}={v}" for k, v in kde_desktop.env.items() if k in (*names, kde_access.HELPER_VAR)]
    child = subprocess.Popen(
        [sys.executable, "-c", _HOLD_AND_DIE, str(at.x), str(at.y), *env],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "down"
        events = probe.wait_for(lambda ev: any(e["type"] == "press" for e in ev))
        (press,) = [e for e in events if e["type"] == "press"]
        assert sorted(press["mods"]) == ["ctrl", "shift"]
    finally:
        child.kill()
        child.wait()
    with KdeBackend(kde_desktop.env) as after:  # the next agent-s start
        backend_checks.nothing_held_after_a_kill(after, probe)
