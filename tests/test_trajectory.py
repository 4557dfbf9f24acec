"""The trajectory writer and loader: typed round trip, redaction, torn last lines, and
trajectories written before the ``Step`` model (the fixtures in tests/fixtures/)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from agent_s.actions import ClickAction, DoneAction, FailAction
from agent_s.grounding import AttemptRecord, TargetGrounding
from agent_s.images import ImageSpec, encode_screenshot
from agent_s.models.types import Usage
from agent_s.record.result import PostconditionResult, RunResult, RunStatus, Timings
from agent_s.record.step import ModelCall, Step, SubStep
from agent_s.record.trajectory import TrajectoryWriter, find_secrets, load_trajectory

SECRET = "sk-live-abcdefghijklmnop"  # noqa: S105 - a fake key to search for
BEFORE_STEP = Path(__file__).parent / "fixtures" / "trajectory_before_step_model"


def entry(step: int, reply: str = "ok") -> Step:
    return Step(
        step=step,
        started_at=1.0,
        seconds=0.5,
        screenshot=f"step_{step:03d}.png",
        screen=(1280, 800),
        active_window="Mousepad: a.txt",
        request={"messages": 2},
        calls=(
            ModelCall(
                purpose="generate",
                reply=reply,
                input_tokens=10,
                output_tokens=5,
                cost_usd=0.001,
                seconds=0.2,
            ),
        ),
        reply=reply,
        action=ClickAction(element_description="OK"),
        action_text="agent.click(element_description='OK')",
        grounding=(
            TargetGrounding(
                target="OK",
                kind="element",
                grounder="a11y",
                point=(5, 6),
                box=(0, 0, 10, 12),
                confidence=0.9,
                evidence="name",
                attempts=(AttemptRecord(grounder="a11y", outcome="answered", reason="name"),),
            ),
        ),
        executed=({"op": "Click", "at": {"x": 5, "y": 6}},),
        code="pyautogui.click(5, 6)",
        outcome="ok",
        usage=Usage(10, 5, calls=1, cost_usd=0.001),
    )


def test_round_trip_and_redaction(tmp_path: Path) -> None:
    writer = TrajectoryWriter.create(tmp_path, secrets=[SECRET, None])
    writer.write_run({"task": "t", "note": f"key {SECRET}"})
    writer.write_step(entry(1))
    writer.write_step(entry(2, reply=f"the key is {SECRET}"))
    result = RunResult(
        "t",
        RunStatus.SUCCEEDED,
        "done",
        usage=Usage(10, 5, calls=1, cost_usd=0.001),
        steps=2,
        timings=Timings(total=1.5),
        trajectory_dir=writer.folder,
        verified=True,
        postcondition=PostconditionResult("test -e x", True, "exit status 0", 0.01),
    )
    writer.write_result(result)
    writer.close()
    loaded = load_trajectory(writer.folder)
    assert loaded.steps[0] == entry(1)
    assert loaded.result == result
    assert loaded.steps[1].reply == "the key is [redacted]"
    assert find_secrets(writer.folder, [SECRET]) == []


def test_the_image_sent_travels_with_the_step_but_is_not_written(tmp_path: Path) -> None:
    sent = encode_screenshot(Image.new("RGB", (64, 40), "white"), ImageSpec())
    step = entry(1).model_copy(update={"image": sent})
    assert step.image is sent
    assert "image" not in json.loads(step.model_dump_json())
    writer = TrajectoryWriter(tmp_path / "run")
    writer.write_step(step)
    writer.close()
    (loaded,) = load_trajectory(tmp_path / "run").steps
    assert loaded.image is None
    assert loaded == entry(1)


def test_a_queued_screenshot_is_on_disk_before_the_line_naming_it(tmp_path: Path) -> None:
    """The screenshot is written while the step goes on; its line waits for it, and a
    screenshot that cannot be written stops the line."""
    writer = TrajectoryWriter(tmp_path / "run")
    data = encode_screenshot(Image.new("RGB", (64, 40), "white"), ImageSpec()).data
    assert writer.queue_image("step_001.png", data) == "step_001.png"
    writer.write_step(entry(1))
    assert (writer.folder / "step_001.png").read_bytes() == data
    (writer.folder / "step_002.png").mkdir()  # a folder in its place: it cannot be written
    writer.queue_image("step_002.png", data)
    with pytest.raises(IsADirectoryError):
        writer.write_step(entry(2))
    writer.close()
    assert [s.step for s in load_trajectory(writer.folder).steps] == [1]


def test_a_torn_last_line_is_skipped_but_a_torn_middle_is_an_error(tmp_path: Path) -> None:
    writer = TrajectoryWriter(tmp_path / "run")
    writer.write_step(entry(1))
    writer.close()
    lines = tmp_path / "run" / "trajectory.jsonl"
    with open(lines, "a", encoding="utf-8") as handle:
        handle.write(entry(2).model_dump_json()[:50])
    loaded = load_trajectory(tmp_path / "run")
    assert [s.step for s in loaded.steps] == [1]
    assert loaded.torn_last_line
    assert loaded.result is None
    with open(lines, "a", encoding="utf-8") as handle:
        handle.write("\n" + entry(3).model_dump_json() + "\n")
    with pytest.raises(ValueError, match="trajectory.jsonl:2"):
        load_trajectory(tmp_path / "run")


def test_a_line_that_is_no_step_is_an_error_naming_it(tmp_path: Path) -> None:
    writer = TrajectoryWriter(tmp_path / "run")
    writer.write_step(entry(1))
    writer.close()
    with open(tmp_path / "run" / "trajectory.jsonl", "a", encoding="utf-8") as handle:
        handle.write(json.dumps({"step": "two", "outcome": "maybe"}) + "\n")
    with pytest.raises(ValueError, match=r"trajectory.jsonl:2: not a step"):
        load_trajectory(tmp_path / "run")


def test_not_a_trajectory_folder(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no trajectory.jsonl"):
        load_trajectory(tmp_path)


# -- trajectories written before the Step model (StepEntry lines, dict sub-steps) ---------------


def test_an_earlier_trajectory_with_the_code_agent_loads_typed() -> None:
    loaded = load_trajectory(BEFORE_STEP / "code_agent")
    assert [s.step for s in loaded.steps] == [1, 2, 3, 4]
    assert [s.outcome for s in loaded.steps] == ["ok", "ok", "ok", "terminal"]
    assert not loaded.torn_last_line
    assert loaded.result is not None
    assert (loaded.result.status, loaded.result.answer) == (RunStatus.SUCCEEDED, "1")
    first, span, code, done = loaded.steps
    assert isinstance(first.action, ClickAction)
    assert first.action.element_description == "(640, 400)"
    assert first.grounding[0].point == (640, 400)
    assert first.grounding[0].grounder == "native"
    assert [c.error != "" for c in first.calls] == [True, False]  # a reply fed back, then one
    assert first.executed[0]["op"] == "Click"
    assert first.safety is not None
    assert first.safety["verdict"] == "allow"
    assert [(g.kind, g.point) for g in span.grounding] == [
        ("text_start", (100, 200)),
        ("text_end", (300, 200)),
    ]
    assert [s.kind for s in code.substeps] == ["block", "final"]
    block, final = code.substeps
    assert isinstance(block, SubStep)
    assert (block.language, block.code) == ("bash", "wc -l notes.txt\n")
    assert block.run is not None
    assert block.run["stdout"]["text"] == "1 notes.txt\n"
    assert block.call is not None
    assert block.call.purpose == "code"
    assert (final.status, final.summary) == ("done", "There is 1 line.")
    assert "The code agent finished (DONE)" in code.detail
    assert isinstance(done.action, DoneAction)
    assert done.terminal == "done"
    assert done.usage == Usage()  # not recorded then


def test_an_earlier_trajectory_with_chain_grounding_loads_typed() -> None:
    found, missing, failed = load_trajectory(BEFORE_STEP / "auto").steps
    (grounding,) = found.grounding
    assert (grounding.grounder, grounding.point, grounding.box) == (
        "ocr",
        (234, 315),
        (202, 306, 66, 20),
    )
    assert [(a.grounder, a.outcome) for a in grounding.attempts] == [
        ("a11y", "unavailable"),
        ("ocr", "answered"),
    ]
    assert missing.outcome == "error"
    assert missing.grounding[0].point is None
    assert missing.grounding[0].describe() == "not found by auto"
    assert "closest things seen: 'Save'" in missing.detail
    assert isinstance(failed.action, FailAction)
    assert failed.terminal == "fail"


def test_an_earlier_trajectory_round_trips_through_the_step_model(tmp_path: Path) -> None:
    """Loaded and written again, every earlier line keeps its fields and values (the fields
    added since get their defaults: ``usage``, ``observed``, a grounding's image frame)."""
    source = BEFORE_STEP / "code_agent" / "trajectory.jsonl"
    writer = TrajectoryWriter(tmp_path / "again")
    for step in load_trajectory(source.parent).steps:
        writer.write_step(step)
    writer.close()
    before = [json.loads(line) for line in source.read_text().splitlines()]
    after = [json.loads(line) for line in (tmp_path / "again" / "trajectory.jsonl").open()]
    for old, new in zip(before, after, strict=True):
        assert new.pop("usage") == {
            "input_tokens": 0,
            "output_tokens": 0,
            "cached_input_tokens": 0,
            "image_tokens": 0,
            "calls": 0,
            "cost_usd": 0.0,
        }
        assert new.pop("observed") == []
        assert new.pop("subtask") is None
        assert new.pop("marks") == []  # set-of-marks: the screenshot's mark table
        assert new.pop("chosen_by") == "model"  # who chose the action (a replay, the plan)
        assert new.pop("sequence") is None  # one action of several in a reply
        if new["action"] is not None:  # the pointing actions' mark fields, unset
            marks = ("mark", "starting_mark", "ending_mark")
            assert all(new["action"].pop(k) is None for k in marks if k in new["action"])
        for grounding in new["grounding"]:
            added = ("model_point", "image_point", "image_size", "matched")
            assert [grounding.pop(k) for k in added] == [None, None, None, ""]
        new["substeps"] = [
            {k: v for k, v in s.items() if k in o}
            for s, o in zip(new["substeps"], old["substeps"], strict=True)
        ]
        assert new == old
