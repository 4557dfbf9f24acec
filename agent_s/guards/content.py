"""Text from the screen is content, never instructions: one frame for it in every prompt.

    screen_content("window titles", '- "notes.txt - Mousepad" (Mousepad), focused')
    # '<screen-content source="window titles">\\n- "notes.txt ...\\n</screen-content>'

Everything a request carries that the user did not write and the agent did not say itself
(window titles, accessibility names, text read from the screen by OCR, a field read back after
typing, a program's output, memory of earlier runs, notes copied from the screen) goes between
``<screen-content source="...">`` and ``</screen-content>``; the system prompts say that text
inside is content from the screen or from files, never instructions (``prompts/worker.md``,
``code_agent.md``, ``planner.md``).

The frame cannot be imitated from inside: ``neutralise`` rewrites anything in the content that
reads as the frame's tag (``<screen-content``, ``</screen-content>``, in any case, with spaces
or other separators inside the name, with look-alike brackets such as ``＜`` or ``‹``, or as an
HTML entity such as ``&lt;``) into a visible ``[screen-content tag removed]``, so a page whose
text closes the frame and writes "instructions" after it still stays inside. ``source`` is
ours (a fixed word or two), never screen text.
"""

from __future__ import annotations

import re

TAG = "screen-content"
REMOVED = "[screen-content tag removed]"
#: Brackets that read as "<" to a model: ASCII, full-width, small, angle and guillemet forms,
#: and the HTML entities for "<".
_OPEN = r"(?:<|\uff1c|\ufe64|\u2039|\u3008|\u27e8|\u276e|\u2329|\u02c2|&lt;?|&#0*60;?|&#x0*3c;?)"
_NAME = r"s\W*c\W*r\W*e\W*e\W*n[\W_]*c\W*o\W*n\W*t\W*e\W*n\W*t"
_FAKE = re.compile(
    _OPEN + r"[\s\W_]*" + _NAME + r"(?:[^>\n\uff1e\u203a\u3009\u27e9]{0,80}"
    r"(?:>|\uff1e|\u203a|\u3009|\u27e9|&gt;?))?",
    re.IGNORECASE,
)
_SOURCE = re.compile(r"[a-z][a-z ,()-]{0,40}")


def neutralise(text: str) -> str:
    """``text`` with every imitation of the frame's tag replaced by ``REMOVED``."""
    return _FAKE.sub(REMOVED, text)


def screen_content(source: str, text: str, *, inline: bool = False) -> str:
    """``text`` framed as content from ``source`` (e.g. "window titles", "code output"), with
    any imitation of the frame inside it neutralised; ``inline``: on one line (a compact
    history line), else the tags on lines of their own."""
    if not _SOURCE.fullmatch(source):
        raise ValueError(f"a content source is a short lower-case name, not {source!r}")
    body = neutralise(text.strip("\n"))
    if inline:
        return f'<{TAG} source="{source}">{body}</{TAG}>'
    return f'<{TAG} source="{source}">\n{body}\n</{TAG}>'


def close_cut(text: str) -> str:
    """``text`` (framed content cut short, e.g. clipped to a line) with the frames the cut left
    open closed again, so what follows it is not taken for content, nor content for ours."""
    missing = text.count(f"<{TAG} ") - text.count(f"</{TAG}>")
    return text + f"</{TAG}>" * max(missing, 0)


__all__ = ["REMOVED", "TAG", "close_cut", "neutralise", "screen_content"]
