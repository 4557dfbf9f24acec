"""The conversation history policy: what goes into each request, and that its size is bounded."""

from __future__ import annotations

from datetime import date

import pytest
from PIL import Image, ImageDraw

from agent_s.desktop.base import WindowInfo
from agent_s.grounding import TargetGrounding
from agent_s.images import EncodedImage, ImageSpec, encode_screenshot
from agent_s.loop.context import (
    ContextPolicy,
    build_messages,
    build_reflection_messages,
    describe_outcome,
    history_lines,
    measure,
    step_line,
    thoughts,
    with_feedback,
)
from agent_s.models.types import ImagePart, Message, TextPart
from agent_s.prompting import (
    Platform,
    open_windows,
    reflection_system_prompt,
    today_line,
    worker_system_prompt,
)
from agent_s.record.step import Step, StepOutcome

SPEC = ImageSpec(format="jpeg", quality=85, max_long_side=1280)
PLATFORM = Platform("linux", 1920, 1080, desktop="openbox")


def _screen(n: int) -> EncodedImage:
    """A distinct 1920x1080 screenshot per ``n``, all encoding to about the same size."""
    image = Image.new("RGB", (1920, 1080), (40 + n % 50, 70, 110))
    draw = ImageDraw.Draw(image)
    for row in range(30):
        draw.text((40, 40 + row * 32), f"line {row} of window {n}: some text", fill="white")
    draw.rectangle((800 + n % 7 * 20, 300, 1400, 700), fill=(230, 230, 230))
    return encode_screenshot(image, SPEC)


SCREENS = [_screen(n) for n in range(4)]


def _reply(step: int, length: int = 400) -> str:
    reasoning = f"Step {step}: " + ("the dialog shows the export options. " * 600)[:length]
    return f'{reasoning}\n```python\nclick(element_description="the OK button {step}")\n```'


def _record(
    step: int, *, reply_length: int = 400, outcome: StepOutcome = "ok", detail: str = ""
) -> Step:
    target = f"the OK button {step}"
    return Step(
        step=step,
        image=SCREENS[step % len(SCREENS)],
        reply=_reply(step, reply_length),
        action_text=f'click(element_description="{target}")',
        outcome=outcome,
        detail=detail,
        grounding=(_grounding(target, "ui-tars-1.5", (900 + step, 500)),),
    )


def _grounding(target: str, grounder: str, point: tuple[int, int] | None) -> TargetGrounding:
    return TargetGrounding(target=target, kind="element", grounder=grounder, point=point)


def _steps(count: int, **kwargs: object) -> list[Step]:
    return [_record(n, **kwargs) for n in range(1, count + 1)]  # type: ignore[arg-type]


def _image(step: Step) -> EncodedImage:
    assert step.image is not None
    return step.image


def _texts(message: Message) -> str:
    return "\n".join(p.text for p in message.parts if isinstance(p, TextPart))


def _images(messages: tuple[Message, ...]) -> list[ImagePart]:
    return [p for m in messages for p in m.parts if isinstance(p, ImagePart)]


# -- layout ------------------------------------------------------------------------------------


def test_first_step_is_system_then_task_with_the_current_screen() -> None:
    current = SCREENS[0]
    messages = build_messages("SYSTEM", "Rename the file", [], current, max_steps=15)
    assert [m.role for m in messages] == ["system", "user"]
    assert _texts(messages[0]) == "SYSTEM"
    assert _images(messages) == [current.to_part()]
    text = _texts(messages[1])
    assert "Rename the file" in text
    assert "step 1 of at most 15" in text


def test_the_date_follows_the_task_and_the_windows_follow_the_current_screen() -> None:
    records = _steps(4)
    today = today_line(date(2026, 1, 5))
    windows = open_windows([WindowInfo(1, "a.txt - Mousepad", "Mousepad", 1, 0, 0, 9, 9, True)])
    messages = build_messages(
        "SYSTEM", "Rename the file", records, SCREENS[0], ["n"], today=today, windows=windows
    )
    first, last = messages[1], messages[-1]
    assert _texts(first).startswith(f"Your task: Rename the file\n\n{today}\n\n")
    assert today not in _texts(last)
    assert "Mousepad" not in _texts(first)
    # the current screen, then the windows, then notes and the closing instruction
    kinds = ["image" if isinstance(p, ImagePart) else p.text for p in last.parts]
    image_at = kinds.index("image")
    after = "\n".join(k for k in kinds[image_at + 1 :] if k != "image")
    assert after.startswith(
        'Open windows, front-most first:\n<screen-content source="window titles">\n'
        '- "a.txt - Mousepad" (Mousepad)'
    )
    assert after.index("Open windows") < after.index("Your notes") < after.index("This is step")
    # the system prompt and the rest of the request are unchanged by the two additions
    plain = build_messages("SYSTEM", "Rename the file", records, SCREENS[0], ["n"])
    assert messages[0] == plain[0]
    assert len(messages) == len(plain)
    assert "Today is" not in str(plain)
    assert "Open windows" not in str(plain)


@pytest.mark.parametrize(
    ("keep", "steps"), [(1, 5), (2, 5), (3, 0), (3, 1), (3, 2), (3, 12), (5, 3), (5, 12)]
)
def test_keeps_the_newest_screenshots_and_alternates_roles(keep: int, steps: int) -> None:
    records = _steps(steps)
    current = SCREENS[3]
    messages = build_messages(
        "SYSTEM", "task", records, current, policy=ContextPolicy(keep_images=keep)
    )
    kept = records[len(records) - min(keep - 1, len(records)) :] if keep > 1 else []
    assert _images(messages) == [_image(r).to_part() for r in kept] + [current.to_part()]
    roles = [m.role for m in messages]
    assert roles[0] == "system"
    assert roles[1:] == ["user", "assistant"] * len(kept) + ["user"]
    # The assistant turns are the kept steps' replies, in order.
    replies = [_texts(m) for m in messages if m.role == "assistant"]
    assert replies == [r.reply for r in kept]


def test_older_steps_become_compact_lines_with_action_grounding_and_outcome() -> None:
    records = _steps(6)
    records[1] = _record(2, outcome="error", detail="window 'Export' not found")
    records[2] = _record(3, outcome="invalid", detail="unknown action 'clik'")
    messages = build_messages("SYSTEM", "task", records, SCREENS[0])
    first_user = _texts(messages[1])
    for record in records[:4]:  # steps 1-4 are compact; 5 and 6 keep their screenshots
        assert record.action_text in first_user
        assert f"at ({900 + record.step}, 500) via ui-tars-1.5" in first_user
    assert "-> failed: window 'Export' not found" in first_user
    assert "-> reply not used: unknown action 'clik'" in first_user
    assert 'click(element_description="the OK button 5")' not in first_user
    # The result of each kept step is reported right after its reply.
    assert "Result of step 5:" in _texts(messages[3])
    assert "Result of step 6:" in _texts(messages[5])


def test_compact_lines_quote_bounded_reasoning_without_the_code_block() -> None:
    policy = ContextPolicy(reasoning_chars=80)
    line = step_line(_record(7, reply_length=2000), policy)
    reasoning = line.split(" | reasoning: ", 1)[1]
    assert len(reasoning) == 80
    assert reasoning.endswith("…")
    assert "```" not in line
    assert thoughts("Look.\n```python\nclick('x')\n```\nThen wait.") == "Look. Then wait."


def test_lines_beyond_the_cap_are_counted_not_listed() -> None:
    records = _steps(30)
    records[3] = _record(4, outcome="error", detail="boom")
    records[5] = _record(6, outcome="invalid", detail="no action")
    text = history_lines(records, ContextPolicy(history_steps=10))
    lines = text.splitlines()
    assert lines[0] == "(steps 1-20 not listed: 18 ok, 1 failed, 1 reply not used)"
    assert [line.split(".", 1)[0] for line in lines[1:]] == [str(n) for n in range(21, 31)]
    assert history_lines(records, ContextPolicy(history_steps=0)).splitlines() == [
        "(steps 1-30 not listed: 28 ok, 1 failed, 1 reply not used)"
    ]


def test_a_failed_grounding_is_reported() -> None:
    record = Step(
        step=3,
        image=SCREENS[0],
        reply="Click it.",
        action_text="click('the Save icon')",
        outcome="error",
        detail="not found",
        grounding=(_grounding("the Save icon", "ocr", None),),
    )
    assert "click('the Save icon') not found by ocr -> failed: not found" in step_line(record)


def test_notes_reflection_and_budget_go_into_the_last_message() -> None:
    messages = build_messages(
        "SYSTEM",
        "task",
        _steps(2),
        SCREENS[0],
        ["total is 42", "file is ~/a.txt"],
        reflection="OFF TRACK\nThe click missed.",
        max_steps=20,
    )
    last = _texts(messages[-1])
    assert last.index("- total is 42") < last.index("- file is ~/a.txt")
    assert "The click missed." in last
    assert "step 3 of at most 20" in last
    assert isinstance(messages[-1].parts[-1], TextPart)  # the screen's image precedes the text
    assert isinstance(messages[-1].parts[-2], ImagePart)


def test_notes_keep_the_newest_within_their_budget() -> None:
    notes = [f"note number {i} " + "x" * 80 for i in range(50)]
    policy = ContextPolicy(notes_chars=500)
    messages = build_messages("S", "t", [], SCREENS[0], notes, policy=policy)
    last = _texts(messages[-1])
    assert "note number 49" in last
    assert "note number 0 " not in last
    shown = sum(f"note number {i} " in last for i in range(50))
    assert f"({50 - shown} older notes not shown)" in last
    assert shown * 90 <= 500


def test_task_text_with_dollar_signs_is_sent_as_written() -> None:
    messages = build_messages("S", "Set price to $5 in ${cell}", [], SCREENS[0])
    assert "Set price to $5 in ${cell}" in _texts(messages[1])


def test_steps_out_of_order_are_refused() -> None:
    with pytest.raises(ValueError, match="out of order"):
        build_messages("S", "t", [_record(2), _record(1)], SCREENS[0])


@pytest.mark.parametrize("kwargs", [{"keep_images": 0}, {"history_steps": -1}, {"reply_chars": 5}])
def test_policy_rejects_settings_that_cannot_work(kwargs: dict[str, int]) -> None:
    with pytest.raises(ValueError, match="must"):
        ContextPolicy(**kwargs)


def test_with_feedback_appends_the_rejected_reply_and_the_error() -> None:
    base = build_messages("S", "t", [], SCREENS[0])
    again = with_feedback(base, "I will clik it.\n```python\nclik()\n```", "unknown action 'clik'")
    assert again[: len(base)] == base
    assert [m.role for m in again[len(base) :]] == ["assistant", "user"]
    assert "clik()" in _texts(again[-2])
    assert "unknown action 'clik'" in _texts(again[-1])
    assert _texts(with_feedback(base, "  ", "empty")[-2]) == "(empty reply)"


def test_reflection_sees_the_trajectory_and_the_screens_around_the_last_step() -> None:
    records = _steps(5)
    system = reflection_system_prompt(PLATFORM)
    messages = build_reflection_messages(system, "Rename the file", records, SCREENS[3])
    assert [m.role for m in messages] == ["system", "user"]
    assert _images(messages) == [_image(records[-1]).to_part(), SCREENS[3].to_part()]
    text = _texts(messages[1])
    assert "Rename the file" in text
    for record in records:
        assert record.action_text in text
    assert "Judge step 5" in text
    with pytest.raises(ValueError, match="nothing to reflect"):
        build_reflection_messages(system, "t", [], SCREENS[0])


# -- bounded size ------------------------------------------------------------------------------


def _request_at(
    step: int, *, policy: ContextPolicy, reply_length: int = 600
) -> tuple[Message, ...]:
    system = worker_system_prompt(PLATFORM)
    records = _steps(step - 1, reply_length=reply_length)
    notes = ["the invoice total is 1234.50 EUR", "the customer is listed in row 17"]
    return build_messages(
        system,
        "Copy the invoice total into the spreadsheet and save it as total.ods.",
        records,
        SCREENS[step % len(SCREENS)],
        notes,
        policy=policy,
        max_steps=100,
    )


@pytest.mark.parametrize("keep", [1, 2, 3, 4])
def test_request_at_step_50_is_at_most_1_2_times_the_request_at_step_10(keep: int) -> None:
    policy = ContextPolicy(keep_images=keep)
    at_10 = measure(_request_at(10, policy=policy))
    at_50 = measure(_request_at(50, policy=policy))
    assert at_10.images == at_50.images == keep
    assert at_50.total_bytes <= 1.2 * at_10.total_bytes
    assert at_50.text_chars <= 1.2 * at_10.text_chars


def test_request_stops_growing_once_past_the_caps() -> None:
    # Worst case: every reply far longer than the limits; the size must still be flat.
    policy = ContextPolicy()
    steps = (20, 50, 120, 200)
    sizes = [measure(_request_at(n, policy=policy, reply_length=20_000)) for n in steps]
    assert {size.images for size in sizes} == {policy.keep_images}
    # Past the caps only the step numbers in the text get longer: 120 and 200 have as many
    # digits, so their requests are exactly as large.
    assert sizes[2].text_chars == sizes[3].text_chars
    assert sizes[1].text_chars - sizes[0].text_chars <= 10
    ceiling = (
        len(worker_system_prompt(PLATFORM))
        + (policy.keep_images - 1) * (policy.reply_chars + policy.result_chars + 400)
        + policy.history_steps
        * (policy.action_chars + policy.outcome_chars + policy.reasoning_chars + 120)
        + policy.notes_chars
        + 1000
    )
    assert sizes[3].text_chars <= ceiling


def test_measure_counts_text_and_image_bytes() -> None:
    messages = (
        Message.text("system", "héllo"),
        Message("user", (TextPart("abc"), SCREENS[0].to_part())),
    )
    size = measure(messages)
    assert (size.messages, size.text_chars, size.text_bytes, size.images) == (2, 8, 9, 1)
    assert size.image_bytes == SCREENS[0].nbytes
    assert size.total_bytes == 9 + SCREENS[0].nbytes


def test_a_step_loaded_without_its_image_is_listed_but_cannot_be_shown() -> None:
    loaded = _record(1).model_copy(update={"image": None})  # as load_trajectory gives it
    assert step_line(loaded).startswith('1. click(element_description="the OK button 1")')
    with pytest.raises(ValueError, match="step 1 has no screenshot in memory"):
        build_messages("S", "t", [loaded], SCREENS[0])
    done = _record(2, outcome="terminal")
    assert describe_outcome(done, 100) == "ok"
    assert describe_outcome(_record(3, outcome="error", detail="a\n b"), 100) == "failed: a b"
