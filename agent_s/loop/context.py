"""The conversation history policy: what of the steps so far goes into each model request.

The loop records one ``Step`` per step (``agent_s.record.step``). ``build_messages`` turns the steps
into a worker request: the newest ``keep_images`` screenshots (the current one included) go in as
images with the model's full replies; older steps become one compact text line each (the action
taken, where it was grounded, its outcome, the start of the reasoning); steps older than the
newest ``history_steps`` compact lines are only counted. Every piece of text is clipped to a
bound, so once a run is past ``keep_images + history_steps`` steps the request stops growing:
its size depends on the policy, not on the step number.

Message layout (the system prompt, fixed for a run, comes first so prompt caching can reuse it):

    system     the system prompt
    user       task, today's date, compact history, the screen at the oldest kept step (image)
    assistant  the model's reply at that step
    user       result of that step, the screen at the next step (image)   ... and so on, until
    user       result of the last step, the current screen, the open windows, notes,
               reflection, what to do now

The date and the open windows are request text, not part of the system prompt: the caller
renders them (``agent_s.prompting.today_line`` / ``open_windows``) and passes them in. The notes
(often copied from the screen) are framed as screen content (``agent_s.guards.content``).

The framing text comes from the role's template (``prompts/worker.md``, ``reflection.md``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agent_s.guards.content import TAG, close_cut, screen_content
from agent_s.models.types import ImagePart, Message, Part, Role, TextPart
from agent_s.prompting import render
from agent_s.settings.config import ContextPolicy

if TYPE_CHECKING:  # config reads ContextPolicy: keep this module light to import
    from agent_s.images import EncodedImage
    from agent_s.record.step import Step, StepOutcome

_FENCE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_SPACE = re.compile(r"\s+")
_ELLIPSIS = "…"
_EMPTY = "(empty reply)"  # an assistant turn must have text
_LABELS: dict[StepOutcome, str] = {
    "ok": "ok",
    "error": "failed",
    "invalid": "reply not used",
    "terminal": "ok",
    "cancelled": "cancelled",
}


DEFAULT_POLICY = ContextPolicy()


@dataclass(frozen=True)
class RequestSize:
    """What a request carries: text as characters and UTF-8 bytes, images as encoded bytes."""

    messages: int
    text_chars: int
    text_bytes: int
    images: int
    image_bytes: int

    @property
    def total_bytes(self) -> int:
        return self.text_bytes + self.image_bytes


def measure(messages: Sequence[Message]) -> RequestSize:
    """The size of a request in our message form (before any vendor wire encoding)."""
    texts = [p.text for m in messages for p in m.parts if isinstance(p, TextPart)]
    images = [p for m in messages for p in m.parts if isinstance(p, ImagePart)]
    return RequestSize(
        messages=len(messages),
        text_chars=sum(len(t) for t in texts),
        text_bytes=sum(len(t.encode("utf-8")) for t in texts),
        images=len(images),
        image_bytes=sum(len(p.data) for p in images),
    )


def thoughts(reply: str) -> str:
    """The reasoning part of a reply: fenced blocks removed, whitespace collapsed."""
    return _SPACE.sub(" ", _FENCE.sub(" ", reply)).strip()


def describe_outcome(step: Step, limit: int) -> str:
    """How the step ended, e.g. ``failed: window 'Export' not found`` (detail clipped). What a
    step that went well saw happen (titles, a field's text) is framed as screen content; a
    detail framed already (the code agent's report) has its frames closed after the clip."""
    detail = close_cut(_clip_line(step.detail, limit))
    if detail and step.outcome == "ok" and f"<{TAG} " not in detail:
        detail = screen_content("what the screen showed", detail, inline=True)
    return f"{_LABELS[step.outcome]}: {detail}" if detail else _LABELS[step.outcome]


def step_line(record: Step, policy: ContextPolicy = DEFAULT_POLICY) -> str:
    """One step as a compact, bounded line: number, action, grounding, outcome, reasoning."""
    line = f"{record.step}. {_action(record, policy)}"
    line += f" -> {describe_outcome(record, policy.outcome_chars)}"
    reasoning = _clip_line(thoughts(record.reply), policy.reasoning_chars)
    return f"{line} | reasoning: {reasoning}" if reasoning else line


def history_lines(steps: Sequence[Step], policy: ContextPolicy = DEFAULT_POLICY) -> str:
    """Compact lines for ``steps``: the newest ``history_steps`` in full, the rest counted."""
    shown = list(steps[max(0, len(steps) - policy.history_steps) :]) if policy.history_steps else []
    dropped = steps[: len(steps) - len(shown)]
    lines = [step_line(r, policy) for r in shown]
    if dropped:
        counts = {label: 0 for label in _LABELS.values()}
        for record in dropped:
            counts[_LABELS[record.outcome]] += 1
        tally = ", ".join(f"{n} {label}" for label, n in counts.items() if n)
        span = f"{dropped[0].step}-{dropped[-1].step}" if len(dropped) > 1 else dropped[0].step
        lines.insert(0, f"(steps {span} not listed: {tally})")
    return "\n".join(lines)


def build_messages(
    system_prompt: str,
    task: str,
    steps: Sequence[Step],
    current_observation: EncodedImage,
    notes: Sequence[str] = (),
    *,
    policy: ContextPolicy = DEFAULT_POLICY,
    reflection: str | None = None,
    max_steps: int | None = None,
    today: str | None = None,
    windows: str | None = None,
    most: int = 1,
) -> tuple[Message, ...]:
    """The worker request for the step after ``steps`` (see the module docstring for layout).
    ``today``: the date line, after the task; ``windows``: the open windows, after the current
    screen (both already rendered; None leaves them out); ``most``: the actions a reply may
    hold. A step that carried out a later action of an earlier reply (``Step.sequence``) adds
    its result to that reply's turn: the model saw no screen and wrote no reply of its own."""
    _check_order(steps)
    current = steps[-1].step + 1 if steps else 1
    keep = policy.keep_images - 1  # the current screen is the last image
    kept = list(steps[max(0, len(steps) - keep) :]) if keep else []
    older = steps[: len(steps) - len(kept)]

    messages: list[Message] = [Message.text("system", system_prompt)]
    parts: list[Part] = [TextPart(render("worker", "task", task=task.strip()))]
    if today:
        parts.append(TextPart(today))
    if older:
        parts.append(TextPart(render("worker", "history", lines=history_lines(older, policy))))
    for record in kept:
        if record.sequence is not None and record.sequence.shared:
            result = _result(record, policy)
            parts.append(TextPart(render("worker", "result", step=record.step, result=result)))
            continue
        parts += [
            TextPart(render("worker", "screen", step=record.step)),
            _image(record, history=True).to_part(),
        ]
        messages.append(_message("user", parts))
        messages.append(_message("assistant", [TextPart(_reply_text(record, policy))]))
        result = _result(record, policy)
        parts = [TextPart(render("worker", "result", step=record.step, result=result))]
    parts += [TextPart(render("worker", "screen", step=current)), current_observation.to_part()]
    if windows:
        parts.append(TextPart(windows))
    if notes:
        kept_notes = screen_content("notes", _notes(notes, policy.notes_chars))
        parts.append(TextPart(render("worker", "notes", notes=kept_notes)))
    if reflection and reflection.strip():
        clipped = _clip_block(reflection.strip(), policy.result_chars)
        parts.append(TextPart(render("worker", "reflection", reflection=clipped)))
    parts.append(TextPart(_closing(current, max_steps, most)))
    messages.append(_message("user", parts))
    return tuple(messages)


def _closing(step: int, max_steps: int | None, most: int) -> str:
    """What to do now: reply with one action (or up to ``most``), at step ``step``."""
    several = {"most": most} if most > 1 else {}
    name = "next_sequence" if several else "next"
    if max_steps is None:
        return render("worker", name, step=step, **several)
    return render("worker", f"{name}_limited", step=step, max_steps=max_steps, **several)


def with_feedback(
    messages: Sequence[Message],
    reply: str,
    error: str,
    *,
    policy: ContextPolicy = DEFAULT_POLICY,
    most: int = 1,
) -> tuple[Message, ...]:
    """``messages`` plus a rejected ``reply`` and the feedback for it, to ask again (for a
    reply of up to ``most`` actions)."""
    error = _clip_block(error.strip(), policy.result_chars)
    if most > 1:
        feedback = render("worker", "invalid_reply_sequence", error=error, most=most)
    else:
        feedback = render("worker", "invalid_reply", error=error)
    return (
        *messages,
        Message.text("assistant", _clip_block(reply.strip(), policy.reply_chars) or _EMPTY),
        Message.text("user", feedback),
    )


def build_reflection_messages(
    system_prompt: str,
    task: str,
    steps: Sequence[Step],
    current_observation: EncodedImage,
    *,
    policy: ContextPolicy = DEFAULT_POLICY,
) -> tuple[Message, ...]:
    """A reviewer request: the trajectory as compact lines, the screens around the last step."""
    if not steps:
        raise ValueError("there is nothing to reflect on before the first step")
    _check_order(steps)
    last = steps[-1]
    lines = history_lines(steps, policy)
    trajectory = render("reflection", "trajectory", task=task.strip(), lines=lines)
    parts: list[Part] = [
        TextPart(trajectory),
        TextPart(render("reflection", "screen_before", step=last.step)),
        _image(last, history=True).to_part(),
        TextPart(render("reflection", "screen_after", step=last.step)),
        current_observation.to_part(),
        TextPart(render("reflection", "request", step=last.step)),
    ]
    return (Message.text("system", system_prompt), _message("user", parts))


# -- helpers -----------------------------------------------------------------------------------


def _check_order(steps: Sequence[Step]) -> None:
    for before, after in zip(steps, steps[1:], strict=False):
        if after.step <= before.step:
            raise ValueError(f"step records out of order: {before.step} then {after.step}")


def _image(step: Step, *, history: bool = False) -> EncodedImage:
    """A step's screenshot as sent; ``history``: its smaller copy for later requests, when
    the step has one (``history_spec``)."""
    if history and step.history_image is not None:
        return step.history_image
    if step.image is None:  # a step loaded from a trajectory: its image is a file
        raise ValueError(f"step {step.step} has no screenshot in memory to send")
    return step.image


def _message(role: Role, parts: Sequence[Part]) -> Message:
    """A message with adjacent text parts joined by a blank line."""
    merged: list[Part] = []
    for part in parts:
        if isinstance(part, TextPart) and merged and isinstance(merged[-1], TextPart):
            merged[-1] = TextPart(f"{merged[-1].text}\n\n{part.text}")
        else:
            merged.append(part)
    return Message(role, tuple(merged))


def _reply_text(record: Step, policy: ContextPolicy) -> str:
    return _clip_block(record.reply.strip(), policy.reply_chars) or _EMPTY


def _action(record: Step, policy: ContextPolicy) -> str:
    """The action and where its targets were grounded (at most four of them)."""
    action = _clip_line(record.action_text, policy.action_chars) or "(no action)"
    where = "; ".join(g.describe() for g in record.grounding[:4])
    return f"{action} {where}" if where else action


def _result(record: Step, policy: ContextPolicy) -> str:
    return f"{_action(record, policy)} -> {describe_outcome(record, policy.result_chars)}"


def _notes(notes: Sequence[str], budget: int) -> str:
    """Newest notes first into the budget, listed oldest first; a count of those left out."""
    kept: list[str] = []
    used = 0
    for note in reversed(notes):
        line = f"- {_clip_line(note, budget - 2)}"
        if kept and used + len(line) + 1 > budget:
            break
        kept.append(line)
        used += len(line) + 1
    left_out = len(notes) - len(kept)
    header = [f"({left_out} older notes not shown)"] if left_out else []
    return "\n".join(header + kept[::-1])


def _clip_line(text: str, limit: int) -> str:
    """``text`` on one line, at most ``limit`` characters."""
    flat = _SPACE.sub(" ", text).strip()
    if len(flat) <= limit:
        return flat
    return flat[: max(0, limit - 1)].rstrip() + _ELLIPSIS if limit else ""


def _clip_block(text: str, limit: int) -> str:
    """``text`` with line breaks kept, at most ``limit`` characters: its start and its end."""
    if len(text) <= limit:
        return text
    head = (limit * 2) // 3
    tail = limit - head - 3
    return f"{text[:head].rstrip()}\n{_ELLIPSIS}\n{text[len(text) - tail :].lstrip()}"
