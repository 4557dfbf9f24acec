"""A locale the desktop's programs can load.

A machine may name a locale it does not have (``LANG=en_US.UTF-8`` where no locales were
generated, common on servers and CI machines); most programs then fall back to "C" quietly,
but some refuse to start (foot: "setlocale() failed", exit status 230). And a session with no
locale at all is not what any desktop gives its programs: they get UTF-8. ``session_locale``
drops the variables that name a missing locale and, when nothing is left, gives the
programs ``LANG=C.UTF-8`` (built into glibc since 2.35).
"""

from __future__ import annotations

import functools
import subprocess
from collections.abc import MutableMapping

#: Variables that name a locale (``LANGUAGE`` is a list of message languages, not a locale).
LOCALE_VARS = (
    "LC_ALL",
    "LANG",
    "LC_CTYPE",
    "LC_NUMERIC",
    "LC_TIME",
    "LC_COLLATE",
    "LC_MONETARY",
    "LC_MESSAGES",
    "LC_PAPER",
    "LC_NAME",
    "LC_ADDRESS",
    "LC_TELEPHONE",
    "LC_MEASUREMENT",
    "LC_IDENTIFICATION",
)
FALLBACK = "C.UTF-8"


def normalise(name: str) -> str:
    """``en_US.UTF-8`` and ``en_US.utf8`` name one locale: the codeset compared in lower case,
    without dashes (as ``locale -a`` lists it); the language, territory and modifier as given."""
    base, dot, rest = name.partition(".")
    if not dot:
        return name
    codeset, at, modifier = rest.partition("@")
    return f"{base}.{codeset.lower().replace('-', '')}{at}{modifier}"


@functools.cache
def available() -> frozenset[str]:
    """The locales this machine has (``locale -a``), normalised; empty when that cannot be
    told (no ``locale`` program), in which case nothing is changed."""
    try:
        listing = subprocess.run(
            ["locale", "-a"], capture_output=True, text=True, timeout=10, check=False
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return frozenset()
    return frozenset(normalise(name) for name in listing.split())


def usable(name: str, known: frozenset[str]) -> bool:
    return name in ("C", "POSIX") or normalise(name) in known


def session_locale(env: MutableMapping[str, str], known: frozenset[str] | None = None) -> list[str]:
    """Make ``env``'s locale one the machine has (in place); return the variables dropped."""
    known = available() if known is None else known
    if not known:
        return []
    dropped = [key for key in LOCALE_VARS if env.get(key) and not usable(env[key], known)]
    for key in dropped:
        del env[key]
    if not any(env.get(key) for key in ("LC_ALL", "LC_CTYPE", "LANG")) and usable(FALLBACK, known):
        env["LANG"] = FALLBACK
    return dropped


__all__ = ["FALLBACK", "LOCALE_VARS", "available", "normalise", "session_locale", "usable"]
