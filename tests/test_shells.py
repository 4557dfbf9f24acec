"""The desktop's programs get a shell that runs commands (agent_s.desktop.shells)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from agent_s.desktop import shells


def test_the_environments_shell_is_kept_when_it_runs_commands() -> None:
    env = {"SHELL": "/bin/sh"}
    assert shells.session_shell(env) == "/bin/sh"
    assert env == {"SHELL": "/bin/sh"}


def test_a_refusing_or_missing_shell_is_replaced() -> None:
    for bad in ("/usr/sbin/nologin", "/bin/false", "/no/such/shell", "sh", ""):
        env = {"SHELL": bad}
        chosen = shells.session_shell(env)
        assert chosen is not None
        assert env["SHELL"] == chosen
        assert shells.usable(chosen)
        assert Path(chosen).name not in shells.REFUSING


def test_no_shell_in_the_environment_takes_the_accounts_then_a_fallback() -> None:
    env: dict[str, str] = {}
    account = shells.account_shell()
    chosen = shells.session_shell(env)
    assert chosen == (account if shells.usable(account) else shells.choose(shells.FALLBACKS))
    # a user whose account shell refuses (a system user's nologin) still gets one
    nobody = 65534
    env = {}
    chosen = shells.session_shell(env, uid=nobody)
    assert chosen in shells.FALLBACKS


def test_a_file_that_is_not_executable_is_not_a_shell(tmp_path: Path) -> None:
    fake = tmp_path / "bash"
    fake.write_text("#!/bin/sh\n")
    assert not shells.usable(str(fake))
    fake.chmod(0o755)
    assert shells.usable(str(fake))
    assert not shells.usable(str(tmp_path))  # a folder


def test_the_chosen_shell_runs_a_command() -> None:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    shell = shells.session_shell(env)
    assert shell is not None
    out = subprocess.run([shell, "-c", "echo $((6 * 7))"], capture_output=True, text=True)
    assert out.stdout.strip() == "42"
