"""A new user's first hour with ``agent-s run``, ``ground`` and ``doctor``, as the README has it:
each mistake ends with one line naming the fix and no traceback; ``--virtual`` grounds by the
accessibility tree; ``--check "test -f ~/out.txt"`` means the desktop's HOME."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from PIL import Image

from agent_s.testing.scripted_replies import reply
from agent_s.testing.scripted_server import ScriptedModelServer
from agent_s.trajectory import load_trajectory

AGENT_S = str(Path(sys.executable).parent / "agent-s")
_CLEAN = {
    k: v
    for k, v in os.environ.items()
    if not k.startswith("AGENT_S_") and k not in ("DISPLAY", "XAUTHORITY")
}
_NO_DISPLAY = {**_CLEAN, "DISPLAY": ":999"}  # a display that does not exist: never touched
_MODEL = [
    "--provider",
    "openai-compatible",
    "--model",
    "scripted-model",
    "--api-key-file",
]


def act(code: str) -> str:
    return f"Working.\n```python\n{code}\n```"


def _agent_s(
    args: list[str], env: dict[str, str], timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [AGENT_S, *args], env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    return done


def _model(tmp_path: Path, url: str = "http://127.0.0.1:9/v1") -> list[str]:
    key = tmp_path / "key"
    key.write_text("sk-first-hour-SECRET\n")
    key.chmod(0o600)
    return [*_MODEL, str(key), "--base-url", url]


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- 1 and 2: --virtual uses the accessibility tree; --check expands ~ -------------------------


def test_virtual_run_grounds_by_the_accessibility_tree(tmp_path: Path) -> None:
    host_home = tmp_path / "host-home"  # the check must look in the virtual desktop's HOME
    host_home.mkdir()
    script = [
        reply(act('agent.open("galculator")')),
        reply(act("agent.wait(3)")),
        reply(act('agent.click("the 7 button")')),
        reply(act('agent.done(answer="7")')),
    ]
    with ScriptedModelServer(script) as server:
        done = _agent_s(
            [
                "run",
                *_model(tmp_path, server.openai_base_url),
                "--virtual",
                "--safety",
                "auto",
                "--record",
                str(tmp_path / "runs"),
                "--check",
                "test -f ~/.config/gtk-3.0/settings.ini",
                "Press 7 on the calculator",
            ],
            env={**_CLEAN, "HOME": str(host_home)},
            timeout=180,
        )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "check passed" in done.stdout
    (folder,) = (tmp_path / "runs").iterdir()
    clicks = [s for s in load_trajectory(folder).steps if s.grounding]
    assert clicks, "the click was not grounded"
    assert clicks[0].grounding[0].grounder == "a11y", done.stderr
    assert "session bus" not in done.stderr


def test_a_check_with_a_tilde_means_the_home_folder(tmp_path: Path, desktop: Any) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "out.txt").write_text("written\n")
    with ScriptedModelServer([reply(act('agent.done(answer="ok")'))]) as server:
        done = _agent_s(
            [
                "run",
                *_model(tmp_path, server.openai_base_url),
                "--ground",
                "native",
                "--record",
                str(tmp_path / "runs"),
                "--check",
                "test -f ~/out.txt",
                "Write ~/out.txt",
            ],
            env={**_CLEAN, **desktop.env, "HOME": str(home)},
        )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "check passed: test -f ~/out.txt" in done.stdout


# -- 3: one line and exit 2, before the desktop is touched ------------------------------------


def test_an_empty_task_is_a_usage_error(tmp_path: Path) -> None:
    done = _agent_s(["run", *_model(tmp_path), ""], env=_NO_DISPLAY)
    assert done.returncode == 2
    assert _lines(done.stderr) == [
        'error: the task is empty: give one, e.g. agent-s run "open the calculator"'
    ]


def test_record_into_a_file_or_an_impossible_place_fails_before_the_desktop(
    tmp_path: Path,
) -> None:
    afile = tmp_path / "afile"
    afile.write_text("")
    for place, why in (
        (afile, "is a file"),
        (afile / "runs", "cannot create it"),
        (Path("/proc/agent-s-runs"), "cannot create it"),
    ):
        done = _agent_s(["run", *_model(tmp_path), "--record", str(place), "x"], env=_NO_DISPLAY)
        assert done.returncode == 2, done.stderr
        (line,) = _lines(done.stderr)
        assert line.startswith(f"error: --record {place}")
        assert why in line
        assert "folder" in line
        assert "display" not in done.stderr


def test_annotate_into_a_missing_folder_is_a_usage_error(tmp_path: Path) -> None:
    image = tmp_path / "screen.png"
    Image.new("RGB", (200, 100), "white").save(image)
    out = tmp_path / "missing" / "out.png"
    done = _agent_s(
        ["ground", "the Save button", "--image", str(image), "--annotate", str(out)], _CLEAN
    )
    assert done.returncode == 2
    assert f"error: --annotate {out}: the folder {out.parent} does not exist" in done.stderr
    assert "create it first" in done.stderr


def test_doctor_without_the_xauthority_file_fails_the_display_check(
    tmp_path: Path, desktop: Any
) -> None:
    missing = tmp_path / "no-such-xauthority"
    done = _agent_s(["doctor"], env={**_CLEAN, **desktop.env, "XAUTHORITY": str(missing)})
    assert done.returncode == 1
    (line,) = [line for line in done.stdout.splitlines() if "display" in line.split()[:2]]
    assert line.startswith("FAIL  display")
    assert str(missing) in line
    assert "set XAUTHORITY" in line


# -- 4: ground says what exists, and when there is nothing to annotate ------------------------


def test_ground_without_a_display_suggests_what_it_has() -> None:
    done = _agent_s(["ground", "the Save button"], env=_CLEAN)
    assert done.returncode == 2
    (line,) = _lines(done.stderr)
    assert "--image FILE" in line
    assert "--virtual" not in line


def test_annotate_says_when_the_element_is_not_found(tmp_path: Path) -> None:
    image = tmp_path / "screen.png"
    Image.new("RGB", (200, 100), "white").save(image)
    out = tmp_path / "out.png"
    done = _agent_s(
        [
            "ground",
            "the Save button",
            "--image",
            str(image),
            "--ground",
            "ocr",
            "--annotate",
            str(out),
        ],
        env={**_CLEAN},
    )
    assert done.returncode == 1
    assert "not annotated: 'the Save button' was not found" in done.stderr
    assert not out.exists()


# -- 5: base URLs ------------------------------------------------------------------------------


def test_a_base_url_without_a_scheme_is_a_usage_error(tmp_path: Path) -> None:
    done = _agent_s(["run", *_model(tmp_path, "notaurl"), "x"], env=_NO_DISPLAY)
    assert done.returncode == 2
    (line,) = _lines(done.stderr)
    assert line.startswith("error: --base-url: 'notaurl' is not an http(s) URL")
    assert "http://localhost:8000/v1" in line


def test_an_unreachable_server_is_named_once(tmp_path: Path, desktop: Any) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    done = _agent_s(
        ["run", *_model(tmp_path, url), "--record", str(tmp_path / "runs"), "x"],
        env={**_CLEAN, **desktop.env},
        timeout=120,
    )
    assert done.returncode == 1, done.stderr
    assert f"cannot reach the server at {url} (" in done.stdout
    assert done.stdout.count(url) == 1, done.stdout


# -- 6: help -----------------------------------------------------------------------------------


def test_help_shows_variables_and_flags_as_flags() -> None:
    done = _agent_s(["run", "--help"], env={**_CLEAN, "COLUMNS": "200"})
    assert done.returncode == 0
    for variable in ("AGENT_S_PROVIDER", "AGENT_S_MODEL", "AGENT_S_BASE_URL", "AGENT_S_GROUND"):
        assert variable in done.stdout
    for flag in ("--json", "--virtual", "--dry-run", "--reflection", "--code-agent"):
        (line,) = [line for line in done.stdout.splitlines() if f" {flag} " in line]
        assert "<bool>" not in line, line


def test_with_nobody_to_approve_the_warning_says_how_to_allow_actions(tmp_path: Path) -> None:
    env = {**_NO_DISPLAY, "AGENT_S_CONFIG": str(tmp_path / "config.toml")}
    (tmp_path / "config.toml").write_text("")
    done = _agent_s(["run", *_model(tmp_path), "open the calculator"], env=env)
    warning = " ".join(done.stderr.split())  # one message, however the terminal wraps it
    assert "nobody can approve" in warning
    assert "--safety auto" in warning
    assert "[safety] allow_apps" in warning
    assert "[[safety.rules]] with effect = 'allow'" in warning
