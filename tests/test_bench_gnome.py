"""GNOME's settings, terminal and sound on the harness's openbox task desktops, and VLC as root.

Task files of our own in OSWorld's shapes run through ``agent-s bench run``, each on its own
virtual desktop: ``gsettings`` with OSWorld's ``export DBUS_SESSION_BUS_ADDRESS=
'unix:path=/run/user/1000/bus'`` (the desktop's own runtime folder and bus here), the
wallpaper getter (GNOME's ``picture-uri``), GNOME Terminal started by a setup snippet, the
sound server a ``pactl`` task gets. ``--policy reference`` scores 1 on each, ``--policy noop``
0 where doing nothing must fail. Then ``scripts/vlc_as_root.py``: VLC through libvlc as root.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent_s.bench.check import app_installed
from agent_s.bench.environment import START_VOLUME, needs_sound
from agent_s.bench.tasks import Task
from agent_s.cli.main import app

ROOT = Path(__file__).resolve().parents[1]
BUS = "export DBUS_SESSION_BUS_ADDRESS='unix:path=/run/user/1000/bus'\n"
FAVORITES = "org.gnome.shell favorite-apps"

no_xvfb = pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is not installed")


def _shell(command: str) -> dict[str, Any]:
    return {"type": "execute", "parameters": {"command": command, "shell": True}}


def _in_xterm(command: str) -> list[str]:
    return [
        'agent.open("xterm")',
        "agent.wait(seconds=2)",
        f"agent.type(text={json.dumps(command)}, enter=True)",
        "agent.wait(seconds=2)",
        "agent.done()",
    ]


def _suite(root: Path, tasks: dict[str, dict[str, Any]]) -> Path:
    for task_id, body in tasks.items():
        folder = root / "examples" / "os"
        folder.mkdir(parents=True, exist_ok=True)
        data = {"id": task_id, "instruction": f"task {task_id}", "config": [], **body}
        (folder / f"{task_id}.json").write_text(json.dumps(data))
    (root / "test_all.json").write_text(json.dumps({"os": list(tasks)}))
    return root


def _run(suite: Path, policy: str, results: Path, refs: Path) -> dict[str, dict[str, Any]]:
    argv = ["bench", "run", str(suite), "--policy", policy, "--workers", "2"]
    argv += ["--references", str(refs), "--results", str(results), "--json"]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0, result.output
    return {r["task_id"]: r for r in json.loads(result.stdout)["records"]}


GSETTINGS_TASK = {  # as os/ec4e3f68: OSWorld's bus path in the setup and in the getter
    "config": [_shell(BUS + f"gsettings set {FAVORITES} \"['a.desktop', 'vim.desktop']\"")],
    "evaluator": {
        "func": "check_gnome_favorite_apps",
        "result": {
            "type": "vm_command_line",
            "command": BUS + f"gsettings get {FAVORITES}",
            "shell": True,
        },
        "expected": {"type": "rule", "rules": {"expected": ["a.desktop"]}},
    },
}
WALLPAPER_TASK = {  # as vlc/efcf0d81: a picture made by setup, to become the wallpaper
    "config": [
        {
            "type": "execute",
            "parameters": {
                "command": [
                    "python",
                    "-c",
                    "from PIL import Image; Image.new('RGB', (64, 48), (200, 40, 90))"
                    ".save('/home/user/Pictures/red.png')",
                ]
            },
        }
    ],
    "evaluator": {
        "func": "compare_images",
        "result": {"type": "vm_wallpaper", "dest": "wallpaper.png"},
        "expected": {"type": "vm_file", "path": "/home/user/Pictures/red.png", "dest": "red.png"},
    },
}
TERMINAL_TASK = {  # as multi_apps/2b9493d7: GNOME Terminal from a setup snippet
    "config": [
        _shell(BUS + "gnome-terminal --maximize --working-directory=/home/user/"),
        {"type": "sleep", "parameters": {"seconds": 3}},
    ],
    "evaluator": {
        "func": "check_include_exclude",
        "result": {"type": "vm_command_line", "command": ["wmctrl", "-lx"]},
        "expected": {"type": "rule", "rules": {"include": ["gnome-terminal-server"]}},
    },
}
SOUND_TASK = {  # as os/28cc3b7e: the sound server starts below full volume
    "evaluator": {
        "func": "exact_match",
        "result": {
            "type": "vm_command_line",
            "command": "pulseaudio --start\npactl list sinks | grep '^[[:space:]]Volume:' | "
            "head -n 1 | awk '{print $5}' | sed 's/%//g'",
            "shell": True,
        },
        "expected": {"type": "rule", "rules": {"expected": "100\n"}},
    },
}


def _needs(*apps: str) -> None:
    missing = [a for a in apps if not app_installed(a)]
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)} (scripts/setup.sh --bench-apps)")


@pytest.mark.desktop
@no_xvfb
def test_gsettings_and_the_wallpaper_on_the_task_desktop(tmp_path: Path) -> None:
    _needs("gsettings", "gsettings schema org.gnome.shell", "xterm")
    _needs("gsettings schema org.gnome.desktop.background")
    suite = _suite(tmp_path / "suite", {"gs1": GSETTINGS_TASK, "wp1": WALLPAPER_TASK})
    refs = tmp_path / "refs.json"
    wallpaper = (
        'gsettings set org.gnome.desktop.background picture-uri "file://$HOME/Pictures/red.png"'
    )
    refs.write_text(
        json.dumps(
            {
                # the agent's terminal has the desktop's bus: no export
                "gs1": _in_xterm(f"gsettings set {FAVORITES} \"['a.desktop']\""),
                "wp1": _in_xterm(wallpaper),
            }
        )
    )
    done = _run(suite, "reference", tmp_path / "ref", refs)
    assert {k: r["score"] for k, r in done.items()} == {"gs1": 1.0, "wp1": 1.0}, done
    # settings live in the task's HOME (dconf), written through the desktop's own bus
    home = tmp_path / "ref" / "pyautogui" / "screenshot" / "reference" / "os" / "gs1" / "home"
    assert (home / ".config" / "dconf" / "user").is_file()

    noop = _run(suite, "noop", tmp_path / "noop", refs)
    assert noop["gs1"]["score"] == 0.0, noop["gs1"]
    # no wallpaper set: GNOME's default picture (or none), not the task's; where the default
    # picture is installed (gnome-backgrounds, with GNOME Shell), its SSIM against the flat
    # red picture is about 0.5, as OSWorld would score it: far from the reference's 1
    assert noop["wp1"]["score"] < 0.75, noop["wp1"]


def _processes_with(text: str) -> list[int]:
    """Processes whose environment mentions ``text`` (a task folder: HOME and the like)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and text.encode() in (entry / "environ").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


@pytest.mark.desktop
@no_xvfb
def test_gnome_terminal_and_the_sound_server(tmp_path: Path) -> None:
    _needs("gnome-terminal", "wmctrl", "pulseaudio", "pactl", "xterm")
    suite = _suite(tmp_path / "suite", {"term1": TERMINAL_TASK, "snd1": SOUND_TASK})
    refs = tmp_path / "refs.json"
    refs.write_text(
        json.dumps(
            {
                "term1": ["agent.done()"],
                "snd1": _in_xterm("pactl set-sink-volume @DEFAULT_SINK@ 100%"),
            }
        )
    )
    done = _run(suite, "reference", tmp_path / "ref", refs)
    assert done["term1"]["score"] == 1.0, done["term1"]
    assert done["snd1"]["score"] == 1.0, done["snd1"]
    noop = _run(suite, "noop", tmp_path / "noop", refs)
    assert noop["snd1"]["score"] == 0.0, noop["snd1"]  # it starts at START_VOLUME
    volume = START_VOLUME.rstrip("%") + "\n"
    assert noop["snd1"]["evaluation"]["parts"][0]["result"] == repr(volume)
    # the terminal's server and the sound server went with their desktops
    assert _processes_with(str(tmp_path)) == []


def test_only_tasks_that_use_the_sound_server_get_one() -> None:
    def task(command: Any) -> Task:
        data = {"id": "t", "instruction": "x", "config": [{"type": "execute", "parameters": {}}]}
        data["config"][0]["parameters"]["command"] = command
        data["evaluator"] = {"func": "exact_match", "result": {"type": "rule"}, "expected": {}}
        return Task.from_json(data, domain="os")

    assert needs_sound(task("pactl set-sink-volume @DEFAULT_SINK@ 50%"))
    assert needs_sound(task(["amixer", "sset", "Master", "10%"]))
    assert not needs_sound(task(["echo", "impactly"]))
    sound = Task.from_json({"id": "s", "instruction": "x", **SOUND_TASK}, domain="os")
    assert needs_sound(sound)  # a getter's command counts


def _vlc_script(*args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, str(ROOT / "scripts" / "vlc_as_root.py"), *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.skipif(os.geteuid() != 0, reason="VLC as root is tested as root")
@pytest.mark.skipif(
    not any(Path("/usr/lib").glob("*/libvlc.so.5")), reason="libvlc is not installed"
)
def test_vlc_as_root_starts_vlc_through_libvlc(tmp_path: Path) -> None:
    """As root the script runs VLC through libvlc (the packaged front end would refuse); its
    interfaces and options are VLC's own: an unknown option fails as VLC's would."""
    done = _vlc_script("--version")
    assert done.returncode == 0, done.stderr
    assert "VLC version" in done.stdout + done.stderr
    assert "not supposed to be run as root" not in done.stdout + done.stderr
    bad = _vlc_script("--no-such-option-here", "-I", "dummy")
    assert bad.returncode == 1
    # a whole run: the dummy interface plays nothing and quits (vlc://quit), saving nothing
    env = {**os.environ, "HOME": str(tmp_path)}
    argv = [sys.executable, str(ROOT / "scripts" / "vlc_as_root.py"), "-I", "dummy"]
    run = subprocess.run(
        [*argv, "--no-audio", "vlc://quit"], env=env, capture_output=True, timeout=60, check=False
    )
    assert run.returncode == 0, run.stderr


@pytest.mark.skipif(
    not Path("/usr/bin/vlc.distrib").is_file(),
    reason="scripts/setup.sh --bench-apps has not put scripts/vlc_as_root.py at /usr/bin/vlc",
)
def test_vlc_for_other_users_is_the_packaged_program() -> None:
    if shutil.which("runuser") is None or os.geteuid() != 0:
        pytest.skip("needs root and runuser to run as another user")
    done = subprocess.run(
        ["runuser", "-u", "nobody", "--", "/usr/bin/vlc", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "VLC version" in done.stdout + done.stderr
    listed = subprocess.run(
        ["dpkg-divert", "--truename", "/usr/bin/vlc"], capture_output=True, text=True, check=False
    )
    assert listed.stdout.strip() == "/usr/bin/vlc.distrib"
    assert 'DISTRIB = "/usr/bin/vlc.distrib"' in Path("/usr/bin/vlc").read_text()  # the script
