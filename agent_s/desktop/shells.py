"""A login shell for the desktop's programs.

Terminals (foot, xterm, GNOME Terminal) start ``$SHELL``, or the user's shell from the
password database when ``SHELL`` is unset. A session started from a service or a CI job may
have no ``SHELL``, and the unprivileged user a root process runs a Wayland desktop as has
``/usr/sbin/nologin``: foot then runs nologin, which prints "This account is currently not
available" and exits 1, and foot with it. ``session_shell`` gives the desktop's programs a
shell that can run commands, as a login gives them.
"""

from __future__ import annotations

import os
import pwd
from collections.abc import Iterable, MutableMapping
from pathlib import Path

#: Shells that refuse a session; a user with one of these cannot run a terminal's commands.
REFUSING = frozenset({"nologin", "false", "true", "sync", "halt", "shutdown"})
#: Tried in this order when neither the environment nor the password database gives a shell.
FALLBACKS = ("/bin/bash", "/usr/bin/bash", "/bin/sh", "/usr/bin/sh")


def usable(path: str | None) -> bool:
    """A shell that runs commands: an absolute path to an executable that is not a refuser."""
    if not path or not os.path.isabs(path) or Path(path).name in REFUSING:
        return False
    return os.path.isfile(path) and os.access(path, os.X_OK)


def account_shell(uid: int | None = None) -> str | None:
    """The shell the password database gives ``uid`` (this process's user by default)."""
    try:
        return pwd.getpwuid(os.getuid() if uid is None else uid).pw_shell or None
    except KeyError:
        return None


def choose(candidates: Iterable[str | None]) -> str | None:
    return next((path for path in candidates if usable(path)), None)


def session_shell(env: MutableMapping[str, str], uid: int | None = None) -> str | None:
    """Set ``env["SHELL"]`` (in place) to a shell that runs commands and return it: the one
    ``env`` names if usable, else ``uid``'s own, else bash or sh; None when there is none."""
    shell = choose((env.get("SHELL"), account_shell(uid), *FALLBACKS))
    if shell is not None:
        env["SHELL"] = shell
    return shell


__all__ = ["FALLBACKS", "REFUSING", "account_shell", "choose", "session_shell", "usable"]
