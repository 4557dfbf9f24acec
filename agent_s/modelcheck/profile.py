"""``--save-profile NAME``: the convention the check found, written into the configuration file
as the model profile ``[profiles."NAME"]``'s ``point_convention`` (NAME is a pattern matched
against model names, as every profile's is; ``agent_s.models.profiles``), so that `agent-s run`
reads the model's points right with no flag.

Written safely: the file (``$AGENT_S_CONFIG`` or ``~/.config/agent-s/config.toml``) is never
followed through a symbolic link, everything else in it is kept as it was (one line is replaced
or added, or the table appended), and the new text must load as settings before it replaces
the old one, atomically, with the old file's permissions (0600 for a new one).
"""

from __future__ import annotations

import os
import re
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path

from agent_s.conventions import PointConvention
from agent_s.settings.config import ConfigError
from agent_s.settings.read import config_path, load_settings

_KEY = "point_convention"


def _quoted(name: str) -> str:
    if not name or any(ord(c) < 32 or c == "\x7f" for c in name):
        raise ConfigError(
            f"a profile name is a model name or pattern on one line, not {name!r}",
            setting="--save-profile",
        )
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _edited(text: str, name: str, convention: PointConvention) -> str:
    """``text`` with ``[profiles."name"]``'s point_convention set, the rest kept."""
    quoted = _quoted(name)
    line = f'{_KEY} = "{convention}"'
    header = re.compile(r"^\s*\[\s*profiles\s*\.\s*" + re.escape(quoted) + r"\s*\]\s*(#.*)?$")
    lines = text.splitlines()
    start = next((i for i, text_line in enumerate(lines) if header.match(text_line)), None)
    if start is None:
        tail = "" if not text or text.endswith("\n") else "\n"
        gap = "\n" if text.strip() else ""
        return f"{text}{tail}{gap}[profiles.{quoted}]\n{line}\n"
    end = next(
        (i for i in range(start + 1, len(lines)) if lines[i].lstrip().startswith("[")),
        len(lines),
    )
    key = re.compile(rf"^\s*{_KEY}\s*=")
    found = next((i for i in range(start + 1, end) if key.match(lines[i])), None)
    if found is None:
        lines.insert(start + 1, line)
    else:
        lines[found] = line
    return "\n".join(lines) + "\n"


def save_profile(
    name: str, convention: PointConvention, environ: Mapping[str, str] | None = None
) -> Path:
    """Write ``convention`` as ``[profiles."name"] point_convention`` into the configuration
    file; the file's path. ``ConfigError`` (naming the fix) when it cannot be done safely."""
    path, _ = config_path(os.environ if environ is None else environ)
    text, mode = "", 0o600
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        info = None
    if info is not None:
        if stat.S_ISLNK(info.st_mode):
            raise ConfigError(
                f"{path} is a symbolic link; agent-s writes no file through a link: set "
                "AGENT_S_CONFIG to the file it points to, or add the profile yourself",
                setting="--save-profile",
            )
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError(f"{path} is not a regular file", setting="--save-profile")
        mode = stat.S_IMODE(info.st_mode)
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(descriptor, encoding="utf-8") as handle:
            text = handle.read()
    else:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    edited = _edited(text, name, convention)
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(edited)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, mode)
        try:
            load_settings(path=Path(temporary), read_env=False)  # the whole file still loads
        except ConfigError as err:
            raise ConfigError(
                f"{path} would not load with the profile added ({err}); it was left as it was: "
                "fix the file, then save the profile again",
                setting="--save-profile",
            ) from err
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


__all__ = ["save_profile"]
