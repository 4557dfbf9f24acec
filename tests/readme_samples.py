"""The README's sample outputs, and the check that a command printed them: each sample line is
a line of the real output, in order, numbers aside (tests/test_readme_claims.py and the tests
that run the command a sample shows)."""

from __future__ import annotations

import re
from pathlib import Path

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


def samples_after(marker: str) -> list[str]:
    """The lines of the first ``text`` block after the prose ``marker``."""
    start = README.index(marker)
    block = BLOCK.search(README, start)
    assert block is not None
    assert block.group(1) == "text"
    return block.group(2).splitlines()


def _shape(line: str) -> str:
    """A line with runs of spaces folded and numbers, timings, displays and absolute paths
    (a temporary folder's random name, the user's HOME) set aside."""
    line = re.sub(r"(?<![\w.~])/[^\s,)]+", "/PATH", line.strip())
    line = re.sub(r"\d+", "0", line)
    return re.sub(r"\s+", " ", line)


def assert_printed(sample: list[str], printed: str) -> None:
    """Each sample line is a line of ``printed``, in order; a sample line ending in ``(...)``
    or ``...`` stands for a line that starts so."""
    real = [_shape(line) for line in printed.splitlines() if line.strip()]
    at = 0
    for line in sample:
        want = _shape(line)
        if not want:
            continue
        prefix = want.endswith("(...)") or want.endswith("...")
        want = want.removesuffix("(...)").removesuffix("...").rstrip()
        while at < len(real) and not (real[at].startswith(want) if prefix else real[at] == want):
            at += 1
        assert at < len(real), f"the README shows {line.strip()!r}; the command printed:\n{printed}"
        at += 1
