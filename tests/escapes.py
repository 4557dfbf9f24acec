"""What the tests of containment share: a machine where bubblewrap cannot run, and a folder
outside /tmp (which the sandbox covers with an empty tmpfs, so a write there proves nothing)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def broken_bwrap(tmp_path: Path) -> str:
    """A PATH whose ``bwrap`` cannot make a sandbox, as where user namespaces are disabled."""
    folder = tmp_path / "broken-bin"
    folder.mkdir(exist_ok=True)
    fake = folder / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    return f"{folder}:{os.environ['PATH']}"


@contextmanager
def outside_tmp(fallback: Path) -> Iterator[Path]:
    """A fresh folder under /var/tmp (``fallback`` where that is not writable), removed after:
    where a user's files live, the sandbox sees them, read-only."""
    base = Path("/var/tmp") if os.access("/var/tmp", os.W_OK) else fallback  # noqa: S108
    folder = Path(tempfile.mkdtemp(prefix="agent-s-outside-", dir=base))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
