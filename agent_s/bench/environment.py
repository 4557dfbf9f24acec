"""One task's environment: a fresh virtual desktop with its own HOME, and OSWorld's setup steps.

    with TaskEnvironment(task, folder, file_cache=cache) as env:   # desktop up, config run
        ...                                  # the policy acts on env.backend
        score = evaluate(task, last, env.context, env.run_steps)

The task's folder holds ``home/`` (the desktop's HOME: OSWorld's /home/user, with its Desktop,
Documents, ... folders) and ``cache/`` (files copied for metrics, ``stdout`` of setup commands);
both are made fresh on start, so a task killed half-way reruns cleanly. Placeholders
``{SCREEN_WIDTH}``, ``{SCREEN_HEIGHT}``, ``{SCREEN_WIDTH_HALF}``, ``{SCREEN_HEIGHT_HALF}`` are
filled from the screen size.

Setup steps: launch, open, execute / command (``stdout`` saved in the cache), sleep,
activate_window, close_window, download (from the local file cache), chrome_open_tabs and
chrome_close_tabs (over DevTools, see ``chrome``). GNOME's Ctrl+Alt+T in a setup snippet is
handled by starting the terminal directly (LXTerminal titled "Terminal": a VTE terminal, as
GNOME's, whose text the accessibility tree shows). Chromium always starts
with remote debugging on a port of its own and a profile under HOME; OSWorld's ``socat``
forward is not needed, and ``pkill NAME`` ends only this desktop's matching programs. Steps
this harness cannot do raise ``SkipTask`` with the reason ``agent-s bench check`` also gives.

GNOME without GNOME Shell: OSWorld's ``/run/user/1000`` (its user's runtime folder, where its
commands find the session bus) stands for this desktop's own ``XDG_RUNTIME_DIR`` in every task
command and getter, so ``export DBUS_SESSION_BUS_ADDRESS='unix:path=/run/user/1000/bus'``
reaches this desktop's bus. On it ``gsettings`` keeps settings with dconf (in HOME's
``.config/dconf``: fresh per task) and ``gnome-terminal`` starts its server. A task whose
commands use the sound server (``pactl``) gets one: PulseAudio on the desktop's runtime
folder, its output at ``START_VOLUME``.

sudo: OSWorld's setups run ``echo {CLIENT_PASSWORD} | sudo -S ...`` on a VM whose user's password
is ``password``. Here such a step (any command running ``sudo``) runs when the harness has the
rights (``sudo_rights``): as root (with a stand-in ``sudo`` on the commands' PATH when none is
installed: it drops sudo's options and runs the command, as ``runuser`` for ``-u USER``), or as
a user whose sudo needs no password (``sudo -n true`` succeeds). ``{CLIENT_PASSWORD}`` becomes
``password``, which such a sudo does not read. Without the rights the task is skipped, saying so.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from agent_s.bench.cache import fetch_command
from agent_s.bench.chrome import DevTools, DevToolsError, chromium_argv, free_port, is_chromium
from agent_s.bench.getters import (
    GetterContext,
    NeedsFileCache,
    accessibility_xml,
    cache_lookup,
    map_runtime,
    map_text,
    run_task_command,
)
from agent_s.bench.tasks import SetupStep, Task

SETUP_TIMEOUT = 120.0
WINDOW_WAIT = 10.0
#: How long a launched program may take to settle (``_wait_started``): idle is under
#: ``IDLE_SHARE`` of a core in two ``IDLE_INTERVAL`` samples in a row.
START_WAIT = 30.0
IDLE_INTERVAL = 0.5
IDLE_SHARE = 0.1
BROWSER_WAIT = 30.0
#: Launch steps done another way here: ``socat`` (OSWorld's port forward for the VM's host),
#: ``pkill`` (limited to this desktop's programs).
HANDLED_PROGRAMS = frozenset({"socat", "pkill"})
#: A VTE terminal like GNOME's: ``vm_terminal_output`` reads its text from the accessibility tree.
TERMINAL_ARGV = ("lxterminal", "--no-remote", "--title=Terminal")
_CTRL_ALT_T = re.compile(r"hotkey\(\s*['\"]ctrl['\"]\s*,\s*['\"]alt['\"]\s*,\s*['\"]t['\"]\s*\)")
#: A sound server's tools in a task's commands: the desktop then has one (``_start_sound``), its
#: output below full volume as on a desktop in use (a fresh null sink starts at 100%, where
#: OSWorld's "turn the volume up" would be done before it starts).
_SOUND = re.compile(r"\b(?:pactl|pacmd|pulseaudio|amixer)\b")
START_VOLUME = "40%"
_PLACEHOLDER = re.compile(r"\{(SCREEN_WIDTH|SCREEN_HEIGHT|SCREEN_WIDTH_HALF|SCREEN_HEIGHT_HALF)\}")
#: The folders of OSWorld's /home/user (an Ubuntu desktop user's).
HOME_FOLDERS = (
    "Desktop",
    "Documents",
    "Downloads",
    "Music",
    "Pictures",
    "Public",
    "Templates",
    "Videos",
)
#: LibreOffice's settings in HOME, and those of OSWorld's VM, where LibreOffice has run before:
#: no first-run "Tip of the Day" dialog (on a fresh profile it pops up seconds after the
#: window and takes the keys a setup snippet presses).
LIBREOFFICE_SETTINGS = ".config/libreoffice/4/user/registrymodifications.xcu"
LIBREOFFICE_USED = """<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry"
 xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<item oor:path="/org.openoffice.Office.Common/Misc"><prop oor:name="ShowTipOfTheDay" oor:op="fuse">\
<value>false</value></prop></item>
<item oor:path="/org.openoffice.Office.Common/Misc"><prop oor:name="FirstRun" oor:op="fuse">\
<value>false</value></prop></item>
</oor:items>
"""
#: OSWorld's VM user's password, which its setup commands pipe to ``sudo -S``.
CLIENT_PASSWORD = "password"  # noqa: S105 (OSWorld's published VM default, not a secret)
_SUDO_WORD = re.compile(r"(?:^|[\s;&|(`/])sudo(?=\s|$)")
#: ``sudo`` for a harness running as root on a machine without sudo (see the module docstring).
SUDO_STAND_IN = """#!/bin/sh
# agent-s: sudo for a harness that already runs as root (no sudo is installed). OSWorld's task
# setups pipe the VM's password to `sudo -S`; root needs none. Drop sudo's options, run the rest.
user=""
while [ "$#" -gt 0 ]; do
  case "$1" in
    -u) user="$2"; shift 2 ;;
    --user=*) user="${1#--user=}"; shift ;;
    -g|-p|-C|-D|-r|-t|-T|-U) shift 2 ;;
    --) shift; break ;;
    -*) shift ;;
    *) break ;;
  esac
done
[ "$#" -gt 0 ] || exit 0
if [ -n "$user" ] && [ "$user" != root ] && [ "$user" != "#0" ]; then
  exec runuser -u "$user" -- "$@"
fi
exec "$@"
"""
SudoRights = Literal["root", "sudo"]
#: Programs OSWorld's Ubuntu image has, and what starts the same job here.
APP_ALIASES: Mapping[str, tuple[str, ...]] = {
    "google-chrome": ("chromium", "--no-sandbox", "--force-renderer-accessibility"),
    "gnome-terminal": TERMINAL_ARGV,
}


class SkipTask(RuntimeError):
    """This machine cannot run the task; ``reason`` is what ``bench check`` reports."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class SetupFailed(RuntimeError):
    """A setup step failed on a task this machine should be able to run."""


def fill_placeholders(text: str, width: int, height: int) -> str:
    values = {
        "SCREEN_WIDTH": width,
        "SCREEN_HEIGHT": height,
        "SCREEN_WIDTH_HALF": width // 2,
        "SCREEN_HEIGHT_HALF": height // 2,
    }
    return _PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), text)


def uses_sudo(command: Any) -> bool:
    """Whether a task command (text or argv) runs ``sudo`` or needs the VM's password."""
    text = command if isinstance(command, str) else " ".join(map(str, command))
    return "{CLIENT_PASSWORD}" in text or _SUDO_WORD.search(text) is not None


def sudo_rights(env: Mapping[str, str] | None = None) -> SudoRights | None:
    """How this harness can run a task's sudo: ``"root"`` (it runs as root), ``"sudo"`` (a
    sudo on PATH that asks no password), or ``None``."""
    if os.geteuid() == 0:
        return "root"
    path = (os.environ if env is None else env).get("PATH", os.defpath)
    sudo = shutil.which("sudo", path=path)
    if sudo is None:
        return None
    try:
        done = subprocess.run(
            [sudo, "-n", "true"], capture_output=True, timeout=10, check=False, env=env
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return "sudo" if done.returncode == 0 else None


NO_SUDO = (
    "needs sudo: the setup runs sudo; run the harness as root or as a user with "
    "passwordless sudo (sudo -n true must succeed)"
)


def needs_sound(task: Task) -> bool:
    """Whether the task's commands (setup, postconfig, getters) use the sound server."""
    steps = (*task.config, *task.evaluator.postconfig)
    commands = [s.parameters.get("command", "") for s in steps]
    specs = (*task.evaluator.results, *task.evaluator.expected)
    commands += [s.get("command", "") for s in specs if isinstance(s, Mapping)]
    texts = (c if isinstance(c, str) else " ".join(map(str, c)) for c in commands)
    return any(_SOUND.search(text) for text in texts)


def opens_terminal(command: Any) -> bool:
    """A GNOME convenience snippet that presses Ctrl+Alt+T to get a terminal."""
    text = command if isinstance(command, str) else " ".join(map(str, command))
    return _CTRL_ALT_T.search(text) is not None


def launch_argv(command: Sequence[str]) -> list[str]:
    """The argv that starts ``command`` here (aliases for OSWorld's programs; root Chromium)."""
    argv = list(command)
    alias = APP_ALIASES.get(os.path.basename(argv[0])) if argv else None
    if alias is not None:
        argv = [*alias, *argv[1:]]
        if argv[0] == "chromium" and os.geteuid() != 0:
            argv.remove("--no-sandbox")
    return argv


class TaskEnvironment:
    """The desktop of one task (see the module docstring)."""

    def __init__(
        self,
        task: Task,
        folder: Path,
        *,
        file_cache: Path | None = None,
        width: int = 1280,
        height: int = 800,
        log: list[str] | None = None,
    ) -> None:
        self.task = task
        self.folder = Path(folder)
        self.file_cache = file_cache
        self.width, self.height = width, height
        self.log = log if log is not None else []
        self.desktop: Any = None
        self.backend: Any = None
        self.context: GetterContext | None = None
        self.chrome_port: int | None = None
        self._launched: list[Any] = []  # Popen of every program setup started
        self._sudo: SudoRights | None | Literal["unknown"] = "unknown"

    def __enter__(self) -> TaskEnvironment:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self, *, run_config: bool = True) -> TaskEnvironment:
        from agent_s.desktop.virtual import VirtualDesktop
        from agent_s.desktop.x11 import X11Backend

        if self.sudo_rights() is None and any(
            uses_sudo(step.parameters.get("command", ""))
            for step in (*self.task.config, *self.task.evaluator.postconfig)
        ):
            raise SkipTask(NO_SUDO)  # before any step runs: no half-done setup
        home, cache = self.folder / "home", self.folder / "cache"
        for path in (home, cache):
            shutil.rmtree(path, ignore_errors=True)
            path.mkdir(parents=True)
        for name in HOME_FOLDERS:  # tasks write to ~/Desktop and the like without making it
            (home / name).mkdir()
        office = home / LIBREOFFICE_SETTINGS
        office.parent.mkdir(parents=True)
        office.write_text(LIBREOFFICE_USED, encoding="utf-8")
        self.desktop = VirtualDesktop(self.width, self.height, home=home).start()
        # One task per process: pyautogui, AT-SPI and the grounders read these at first use.
        for key in ("DISPLAY", "XAUTHORITY", "DBUS_SESSION_BUS_ADDRESS"):
            if key in self.desktop.env:
                os.environ[key] = self.desktop.env[key]
        try:
            self.backend = X11Backend(self.desktop.display, env=self.desktop.env)
            self.context = GetterContext(
                home=home,
                env=self._command_env(),
                cache_dir=cache,
                file_cache=self.file_cache,
                a11y_tree=_a11y_reader(),
                extra={"fetch_command": fetch_command(self.task, self.file_cache)},
            )
            if needs_sound(self.task):
                self._start_sound()
            if run_config:
                self.run_steps(self.task.config)
        except BaseException:
            self.stop()
            raise
        return self

    def _start_sound(self) -> None:
        """The desktop's sound server (PulseAudio, on the desktop's runtime folder and HOME),
        its output at ``START_VOLUME``. Without PulseAudio the task's own commands fail, and
        ``bench check`` names the missing app."""
        env = self._ctx().env
        if shutil.which("pulseaudio", path=env.get("PATH")) is None:
            return
        for argv in (
            ["pulseaudio", "--start", "--exit-idle-time=-1"],
            ["pactl", "set-sink-volume", "@DEFAULT_SINK@", START_VOLUME],
        ):
            done = subprocess.run(
                argv, env=dict(env), capture_output=True, text=True, timeout=30, check=False
            )
            if done.returncode != 0:
                raise SetupFailed(f"sound server: {' '.join(argv)}: {done.stderr.strip()[-300:]}")

    def stop(self) -> None:
        if self.backend is not None:
            self.backend.close()
            self.backend = None
        if self.desktop is not None:
            self.desktop.stop()
            self.desktop = None

    @property
    def home(self) -> Path:
        return self.folder / "home"

    # -- setup steps ------------------------------------------------------------------------------

    def run_steps(self, steps: Sequence[SetupStep]) -> None:
        for step in steps:
            handler = getattr(self, f"_step_{step.type}", None)
            if handler is None:
                raise SkipTask(f"needs setup step {step.type!r}, which this harness does not do")
            self.log.append(f"{step.type} {dict(step.parameters)}"[:300])
            handler(step.parameters)

    def _ctx(self) -> GetterContext:
        if self.context is None:
            raise SetupFailed("the task environment is not started")
        return self.context

    def _command_env(self) -> dict[str, str]:
        """The environment of task commands: the desktop's, with the stand-in ``sudo`` first
        on PATH when the harness runs as root and no sudo is installed."""
        env = dict(self.desktop.env)
        path = env.get("PATH", os.defpath)
        if os.geteuid() == 0 and shutil.which("sudo", path=path) is None:
            tools = self.folder / "tools"
            tools.mkdir(parents=True, exist_ok=True)
            stand_in = tools / "sudo"
            stand_in.write_text(SUDO_STAND_IN, encoding="utf-8")
            stand_in.chmod(0o755)
            env["PATH"] = f"{tools}{os.pathsep}{path}"
        return env

    def sudo_rights(self) -> SudoRights | None:
        """``sudo_rights`` for this desktop's commands, asked once."""
        if self._sudo == "unknown":
            self._sudo = sudo_rights(self.context.env if self.context else None)
        return self._sudo

    def _fill(self, value: Any) -> Any:
        if isinstance(value, str):
            if uses_sudo(value):
                if self.sudo_rights() is None:
                    raise SkipTask(NO_SUDO)
                value = value.replace("{CLIENT_PASSWORD}", CLIENT_PASSWORD)
            value = map_runtime(value, self.desktop.env)  # OSWorld's /run/user/1000
            return fill_placeholders(value, self.width, self.height)
        if isinstance(value, list):
            return [self._fill(v) for v in value]
        return value

    def _wait_new_window(self, before: int, timeout: float = WINDOW_WAIT) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if len(self.backend.windows()) > before:
                return
            time.sleep(0.1)
        self.log.append(f"no new window within {timeout:g} s")

    def _launch(self, argv: Sequence[str]) -> None:
        before = len(self.backend.windows())
        if is_chromium(list(argv)):
            if self.chrome_port is None:
                self.chrome_port = free_port()
                self._ctx().extra["chrome_port"] = self.chrome_port
            profile = self.home / ".config" / "chromium"
            argv = chromium_argv(list(argv), self.chrome_port, profile)
        proc = self.desktop.launch(list(argv), cwd=self.home)
        self._launched.append(proc)
        self._wait_new_window(before)
        self._wait_started(proc.pid)

    def _wait_started(self, group: int, timeout: float = START_WAIT) -> None:
        """Wait until the program started as process group ``group`` is idle: its first
        window (a splash screen, say) comes before it takes input, and OSWorld's setups press
        keys a fixed time after the launch, timed for its VM and not for a busy machine."""
        tick = os.sysconf("SC_CLK_TCK")
        deadline = time.monotonic() + timeout
        used, quiet = _group_cpu_ticks(group), 0
        while time.monotonic() < deadline:
            time.sleep(IDLE_INTERVAL)
            now = _group_cpu_ticks(group)
            busy = (now - used) / tick > IDLE_INTERVAL * IDLE_SHARE
            used, quiet = now, 0 if busy else quiet + 1
            if quiet >= 2 or now == 0:
                return
        self.log.append(f"the launched program was still busy after {timeout:g} s")

    def _desktop_pids(self) -> set[int]:
        """This desktop's processes: those with its marker, and the process groups of the
        programs setup started (Chromium overwrites its environment with its title)."""
        from agent_s.desktop.virtual import marked_processes

        pids = set(marked_processes(self.desktop.token))
        groups = {proc.pid for proc in self._launched if proc.poll() is None}
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or not groups:
                continue
            try:
                stat = (entry / "stat").read_text(encoding="utf-8").rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(stat[2]) in groups:
                pids.add(int(entry.name))
        return pids

    def _pkill(self, pattern: str) -> None:
        """``pkill PATTERN`` over this desktop's programs only (OSWorld's "chrome" also
        matches our chromium)."""
        if pattern in ("chrome", "google-chrome"):
            pattern = "chrome|chromium"
        matcher = re.compile(pattern)
        for pid in sorted(self._desktop_pids()):
            try:
                name = Path(f"/proc/{pid}/comm").read_text(encoding="utf-8").strip()
            except OSError:
                continue
            if matcher.search(name):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGTERM)

    def _step_launch(self, params: Mapping[str, Any]) -> None:
        command = self._fill(params["command"])
        if isinstance(command, str):
            if params.get("shell", False):
                self._launch(["bash", "-c", map_text(command, self.home)])  # task-author text
                return
            command = command.split()
        argv = launch_argv([map_text(c, self.home) for c in command])
        if argv and argv[0] == "socat":
            self.log.append("launch socat: not needed, DevTools is reached on its own port")
            return
        if argv and argv[0] == "pkill":
            for pattern in (a for a in argv[1:] if not a.startswith("-")):
                self._pkill(pattern)
            return
        if shutil.which(argv[0], path=self.desktop.env.get("PATH")) is None:
            raise SkipTask(f"needs an app that is not installed: {argv[0]}")
        self._launch(argv)

    def _step_open(self, params: Mapping[str, Any]) -> None:
        path = self._ctx().resolve(self._fill(params["path"]))
        if not path.exists():
            raise SetupFailed(f"open: {path} does not exist")
        before = len(self.backend.windows())
        self.backend.open(str(path))
        self._wait_new_window(before)

    def _step_execute(self, params: Mapping[str, Any]) -> None:
        command = self._fill(params["command"])
        done = run_task_command(
            self._ctx(), command, shell=bool(params.get("shell", False)), timeout=SETUP_TIMEOUT
        )
        if opens_terminal(command):
            # GNOME's Ctrl+Alt+T opens a terminal; here the snippet's keys go nowhere, and the
            # terminal is started directly (after them, so they cannot reach it).
            self._launch(TERMINAL_ARGV)
        for key in ("stdout", "stderr"):
            if params.get(key):
                target = self._ctx().cache_dir / params[key]
                target.write_text(getattr(done, key), encoding="utf-8")
        if done.returncode != 0:
            self.log.append(f"exit status {done.returncode}: {done.stderr.strip()[-300:]}")

    _step_command = _step_execute

    def _step_sleep(self, params: Mapping[str, Any]) -> None:
        time.sleep(float(params["seconds"]))

    def _step_activate_window(self, params: Mapping[str, Any]) -> None:
        from agent_s.errors import AgentSError

        try:
            self.backend.activate(params["window_name"])
        except AgentSError as err:  # OSWorld only logs a window it cannot find
            self.log.append(f"activate_window: {err}")

    def _step_close_window(self, params: Mapping[str, Any]) -> None:
        from agent_s.errors import AgentSError

        try:
            self.backend.activate(params["window_name"])
            self.backend.hotkey(["alt", "F4"])  # openbox closes the active window
        except AgentSError as err:
            self.log.append(f"close_window: {err}")

    def _browser(self) -> DevTools:
        """This task's Chromium, started (as OSWorld does) when it is not running yet."""
        if self.chrome_port is not None and DevTools(self.chrome_port).ready():
            return DevTools(self.chrome_port)
        argv = launch_argv(["google-chrome"])
        if shutil.which(argv[0], path=self.desktop.env.get("PATH")) is None:
            raise SkipTask(f"needs an app that is not installed: {argv[0]}")
        self._launch(argv)
        devtools = DevTools(self.chrome_port or 0)
        try:
            devtools.wait_ready(BROWSER_WAIT)
        except DevToolsError as err:
            raise SetupFailed(str(err)) from err
        return devtools

    def _step_chrome_open_tabs(self, params: Mapping[str, Any]) -> None:
        devtools = self._browser()
        for url in params["urls_to_open"]:
            try:
                devtools.open_tab(map_text(self._fill(str(url)), self.home))
            except DevToolsError as err:
                raise SetupFailed(f"chrome_open_tabs: {err}") from err

    def _step_chrome_close_tabs(self, params: Mapping[str, Any]) -> None:
        from agent_s.bench.metrics.apps import compare_urls

        devtools = self._browser()
        try:
            closed: set[str] = set()
            for url in params["urls_to_close"]:
                wanted = map_text(self._fill(str(url)), self.home)
                for tab in devtools.tabs():
                    if tab.id not in closed and compare_urls(tab.url, wanted):
                        devtools.close_tab(tab.id)
                        closed.add(tab.id)
            devtools.wait_closed(closed, WINDOW_WAIT)
        except DevToolsError as err:
            raise SetupFailed(f"chrome_close_tabs: {err}") from err

    def _step_update_browse_history(self, params: Mapping[str, Any]) -> None:
        """The Chromium profile's History replaced by one holding ``history`` (OSWorld's)."""
        from agent_s.bench.chrome import write_history

        browser = launch_argv(["google-chrome"])
        if shutil.which(browser[0], path=self.desktop.env.get("PATH")) is None:
            raise SkipTask(f"needs an app that is not installed: {browser[0]}")
        profile = self.home / ".config" / "chromium"
        scratch = self.folder / "history-scratch"
        try:
            write_history(
                profile, params["history"], browser=browser, env=self.desktop.env, scratch=scratch
            )
        except (DevToolsError, OSError, sqlite3.Error) as err:
            raise SetupFailed(f"update_browse_history: {err}") from err

    def _step_download(self, params: Mapping[str, Any]) -> None:
        for item in params["files"]:
            try:
                fetch = fetch_command(self.task, self.file_cache)
                source = cache_lookup(self.file_cache, item["url"], fetch=fetch)
            except NeedsFileCache as err:
                raise SkipTask(str(err)) from err
            target = self._ctx().resolve(item["path"])
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)


def _group_cpu_ticks(group: int) -> int:
    """The CPU time (clock ticks) the processes of process group ``group`` have used."""
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text(encoding="utf-8").rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == group:
            total += int(fields[11]) + int(fields[12])  # utime, stime
    return total


def _a11y_reader() -> Any:
    def read() -> str:
        from agent_s.grounding.accessibility import AccessibilityTree

        return accessibility_xml(AccessibilityTree().elements())

    return read


__all__ = [
    "APP_ALIASES",
    "CLIENT_PASSWORD",
    "HANDLED_PROGRAMS",
    "HOME_FOLDERS",
    "NO_SUDO",
    "SUDO_STAND_IN",
    "SetupFailed",
    "SkipTask",
    "TERMINAL_ARGV",
    "TaskEnvironment",
    "fill_placeholders",
    "launch_argv",
    "needs_sound",
    "opens_terminal",
    "sudo_rights",
    "uses_sudo",
]
