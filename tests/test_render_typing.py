"""Rendered typing code, run for real: ``render([TypeText(text)])`` executed by a separate Python
process the way OSWorld's controller runs it (``python -c "import pyautogui; import time;
pyautogui.FAILSAFE = False; " + code``), into two terminal emulators (xterm, rxvt-unicode) and a
GTK editor (mousepad). Each check reads what arrived: the terminal runs ``cat > FILE`` on its tty,
mousepad saves its buffer.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from polling import wait_until

from agent_s.actions import render
from agent_s.desktop import ops
from agent_s.desktop.virtual import VirtualDesktop

OSWORLD_PREFIX = "import pyautogui; import time; pyautogui.FAILSAFE = False; "
TEXT = (
    "héllo <wörld> ÉÄ 中文 😀 ß ё€ 'single' \"double\" \\ $HOME `id` ; a>b<c\tafter-tab\n"
    "second line: ÀÉÎÕÜ çñ ø 한국어 <<>>"
)
UTF8 = {"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}


def _terminal(name: str, title: str, script: str) -> list[str]:
    """argv of terminal emulator ``name`` titled ``title`` running ``sh -c script``."""
    if name == "xterm":
        return [
            *("xterm", "-u8", "-fa", "DejaVu Sans Mono", "-fs", "11", "-title", title),
            *("-e", "sh", "-c", script),
        ]
    if name == "urxvt":
        return ["urxvt", "-title", title, "-e", "sh", "-c", script]
    # VTE, as GNOME Terminal on OSWorld's image; -e takes one command line
    return ["lxterminal", "--no-remote", "-t", title, "-e", f"sh -c '{script}'"]


TERMINALS = ("xterm", "urxvt", "lxterminal")


def run_rendered(code: str, desktop: VirtualDesktop) -> None:
    result = subprocess.run(
        [sys.executable, "-c", OSWORLD_PREFIX + code],
        env=desktop.env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, f"{code}\n{result.stderr}"


def _cat_into(apps: Any, x11: Any, terminal: str, folder: Path) -> Path:
    """Start ``terminal`` running ``cat >> FILE`` on its tty, active; FILE is returned."""
    if shutil.which(terminal) is None:
        pytest.skip(f"{terminal} is not installed (bash scripts/setup.sh installs it)")
    out, ready = folder / "typed.txt", folder / "ready"
    title = f"typing-{terminal}-{time.monotonic_ns()}"
    script = f"stty -ixon; : > {out}; : > {ready}; exec cat >> {out}"
    apps(_terminal(terminal, title, script), window=title, env=UTF8)
    wait_until(ready.exists, what="the terminal's shell")
    x11.activate(title)
    return out


@pytest.mark.parametrize("terminal", TERMINALS)
def test_rendered_text_reaches_a_terminal_exactly(
    terminal: str, apps: Any, x11: Any, desktop: VirtualDesktop, tmp_path: Path
) -> None:
    out = _cat_into(apps, x11, terminal, tmp_path)
    run_rendered(render([ops.TypeText(TEXT + "\n")]), desktop)
    wait_until(
        lambda: out.read_text(encoding="utf-8").count("\n") >= 2,
        what=f"both lines in {out}",
        timeout=20,
    )
    assert out.read_text(encoding="utf-8") == TEXT + "\n"


def test_rendered_text_reaches_an_editor_exactly(
    apps: Any, x11: Any, desktop: VirtualDesktop, tmp_path: Path
) -> None:
    path = tmp_path / "typed-in-mousepad.txt"
    path.write_text("", encoding="utf-8")
    window = apps(["mousepad", str(path)], window=path.name).window
    x11.activate(window.title)
    run_rendered(render([ops.TypeText(TEXT), ops.Hotkey(("ctrl", "s"))]), desktop)
    wait_until(lambda: path.read_text(encoding="utf-8") != "", what="mousepad's save")
    assert path.read_text(encoding="utf-8").rstrip("\n") == TEXT


def test_a_long_text_with_more_characters_than_spare_keycodes(
    apps: Any, x11: Any, desktop: VirtualDesktop, tmp_path: Path
) -> None:
    """Over 300 distinct characters: keycodes are rebound between pieces, none is lost."""
    text = "".join(chr(c) for c in range(0x4E00, 0x4E00 + 320)) + " <ok>"
    out = _cat_into(apps, x11, "xterm", tmp_path)
    run_rendered(render([ops.TypeText(text + "\n")]), desktop)
    wait_until(lambda: out.read_text(encoding="utf-8").endswith("\n"), what=str(out), timeout=60)
    assert out.read_text(encoding="utf-8") == text + "\n"
