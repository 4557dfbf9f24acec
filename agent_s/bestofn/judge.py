"""The best-of-N judge: one model call that compares the attempts and picks one, with a reason.

``comparative`` (as Agent S3 does) shows every attempt at once: its narrative and its final
screenshot; ``tournament`` compares them two at a time, the winner of each round meeting the
next attempt (N - 1 calls). The reply is two lines, ``ATTEMPT: n`` and ``REASON: ...``, read
strictly through ``agent_s.loop.generation.generate_parsed``: a reply that names no attempt,
several,
or one that does not exist goes back to the model with what was wrong, and it is asked again.

    judge = Judge(provider, platform, mode="comparative")
    verdict = judge.pick(task, candidates)   # Verdict(picked=2, reason="...", calls=(...))
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from PIL import Image

from agent_s.images import png_bytes
from agent_s.loop.generation import generate_parsed
from agent_s.models.types import (
    ImagePart,
    Message,
    ModelReply,
    ModelRequest,
    Provider,
    TextPart,
    Usage,
)
from agent_s.prompting import Platform, judge_system_prompt, load_template
from agent_s.record.result import RunEnded, RunStatus
from agent_s.record.step import ModelCall

JudgeMode = Literal["comparative", "tournament"]
JUDGE_MODES: tuple[JudgeMode, ...] = ("comparative", "tournament")
IMAGE_WIDTH = 1024  # final screenshots are shown at most this wide
MAX_NARRATIVE_LINES = 40  # per attempt; the first and last steps are kept
_ATTEMPT = re.compile(r"^\s*\**\s*ATTEMPT\s*\**\s*:\s*\**\s*(.*?)\s*\**\s*$", re.I | re.M)
_REASON = re.compile(r"^\s*\**\s*REASON\s*\**\s*:\s*\**\s*(.+)$", re.I | re.M)


@dataclass(frozen=True)
class Candidate:
    """One attempt as the judge sees it."""

    number: int
    narrative: tuple[str, ...]
    ending: str  # "succeeded: done, and the check passed"
    steps: int
    final_screenshot: Path | None = None


@dataclass(frozen=True)
class Verdict:
    picked: int
    reason: str
    by: str  # a JudgeMode, or "only" when there was one candidate
    calls: tuple[ModelCall, ...] = ()
    usage: Usage = field(default_factory=Usage)


class JudgeFailed(RunEnded):
    """The judge gave no usable pick; the calls it made (and their usage) all the same."""

    def __init__(self, message: str, calls: Sequence[ModelCall], usage: Usage) -> None:
        super().__init__(message, status=RunStatus.FAILED, cause="invalid_replies")
        self.calls, self.usage = tuple(calls), usage


def _numbers(numbers: Sequence[int]) -> str:
    return ", ".join(str(n) for n in numbers)


def parse_pick(text: str, numbers: Sequence[int]) -> tuple[int, str]:
    """(the attempt picked, the reason) from a judge's reply; ValueError saying what is wrong
    (no pick, several, not a number, an attempt that does not exist, no reason)."""
    picks = [m.group(1) for m in _ATTEMPT.finditer(text)]
    if not picks:
        raise ValueError(f"the reply has no line 'ATTEMPT: N' (N one of {_numbers(numbers)})")
    if len(set(picks)) > 1:
        raise ValueError(f"the reply names several attempts ({', '.join(picks)}): pick one")
    value = picks[0].strip().strip(".").removeprefix("#")
    if not value.isdigit():
        raise ValueError(f"'ATTEMPT: {picks[0]}' is not an attempt number: write the number alone")
    number = int(value)
    if number not in numbers:
        raise ValueError(
            f"there is no attempt {number}: pick one of the attempts {_numbers(numbers)}"
        )
    reason = _REASON.search(text)
    if reason is None or not reason.group(1).strip():
        raise ValueError("the reply has no line 'REASON: ...' giving the reason for the pick")
    return number, " ".join(reason.group(1).split())[:500]


def _screenshot(path: Path | None) -> ImagePart | None:
    if path is None:
        return None
    try:
        with Image.open(path) as opened:
            image = opened.convert("RGB")
    except (OSError, ValueError):
        return None
    if image.width > IMAGE_WIDTH:
        height = max(1, round(image.height * IMAGE_WIDTH / image.width))
        image = image.resize((IMAGE_WIDTH, height), Image.Resampling.LANCZOS)
    return ImagePart(png_bytes(image), "image/png", image.width, image.height)


def _bounded(lines: Sequence[str]) -> str:
    if len(lines) <= MAX_NARRATIVE_LINES:
        return "\n".join(lines) or "(no steps)"
    head, tail = MAX_NARRATIVE_LINES // 2, MAX_NARRATIVE_LINES - MAX_NARRATIVE_LINES // 2
    cut = len(lines) - head - tail
    return "\n".join([*lines[:head], f"... ({cut} steps not shown)", *lines[-tail:]])


class Judge:
    """Picks one of several attempts (see the module docstring). ``provider``: the generation
    model, metered (its usage is the verdict's); ``tries``: replies per question."""

    def __init__(
        self,
        provider: Provider,
        platform: Platform,
        *,
        mode: JudgeMode = "comparative",
        tries: int = 3,
    ) -> None:
        if mode not in JUDGE_MODES:
            raise ValueError(f"the judge mode is comparative or tournament, not {mode!r}")
        if tries < 1:
            raise ValueError("the judge needs at least one try")
        self.provider, self.platform, self.mode, self.tries = provider, platform, mode, tries

    def pick(self, task: str, candidates: Sequence[Candidate]) -> Verdict:
        """The attempt that did ``task`` best (``RunEnded`` when no usable reply came)."""
        if not candidates:
            raise ValueError("there is no attempt to judge")
        if len(candidates) == 1:
            only = candidates[0]
            return Verdict(only.number, "the only attempt left to judge", "only")
        if self.mode == "comparative":
            return self._ask(task, candidates, "comparative")
        winner = candidates[0]
        calls: list[ModelCall] = []
        usage = Usage()
        reason = ""
        for challenger in candidates[1:]:
            try:
                verdict = self._ask(task, (winner, challenger), "pairwise")
            except JudgeFailed as err:  # the earlier rounds' calls count too
                raise JudgeFailed(str(err), [*calls, *err.calls], usage + err.usage) from err
            calls.extend(verdict.calls)
            usage = usage + verdict.usage
            reason = verdict.reason
            winner = winner if verdict.picked == winner.number else challenger
        return Verdict(winner.number, reason, "tournament", tuple(calls), usage)

    def _ask(self, task: str, candidates: Sequence[Candidate], section: str) -> Verdict:
        template = load_template("judge")
        numbers = [c.number for c in candidates]
        parts: list[TextPart | ImagePart] = []
        blocks: list[str] = []
        for candidate in candidates:
            block = template.render(
                "attempt",
                number=candidate.number,
                steps=candidate.steps,
                ending=candidate.ending or "without a result",
                narrative=_bounded(candidate.narrative),
            )
            blocks.append(block)
        marker = "\u0000attempts\u0000"  # where the attempt blocks (text and images) go
        request = template.render(section, task=task, attempts=marker, numbers=_numbers(numbers))
        before, _, after = request.partition(marker)
        parts.append(TextPart(before.rstrip("\n") + "\n\n"))
        for candidate, block in zip(candidates, blocks, strict=True):
            image = _screenshot(candidate.final_screenshot)
            parts.append(TextPart(block if image else block + " (none was recorded)"))
            if image is not None:
                parts.append(image)
        parts.append(TextPart("\n\n" + after.lstrip("\n")))
        messages = (
            Message.text("system", judge_system_prompt(self.platform)),
            Message("user", tuple(parts)),
        )
        calls: list[ModelCall] = []
        usage = [Usage()]

        def call(sent: Sequence[Message]) -> ModelReply:
            reply = self.provider.complete(ModelRequest(tuple(sent), metadata={"purpose": "judge"}))
            usage[0] = usage[0] + reply.usage
            return reply

        def feedback(sent: Sequence[Message], reply: str, problem: str) -> list[Message]:
            text = template.render("invalid_reply", error=problem, numbers=_numbers(numbers))
            shown = reply.strip()[:2000] or "(empty)"
            return [*sent, Message.text("assistant", shown), Message.text("user", text)]

        try:
            (picked, reason), _ = generate_parsed(
                call,
                messages,
                lambda text: parse_pick(text, numbers),
                tries=self.tries,
                purpose="judge",
                on_call=calls.append,
                feedback=feedback,
                what="pick",
            )
        except RunEnded as err:
            raise JudgeFailed(str(err), calls, usage[0]) from err
        return Verdict(picked, reason, self.mode, tuple(calls), usage[0])


__all__ = [
    "JUDGE_MODES",
    "Candidate",
    "Judge",
    "JudgeFailed",
    "JudgeMode",
    "Verdict",
    "parse_pick",
]
