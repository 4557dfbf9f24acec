"""The trajectory writer and loader: typed round trip, redaction, torn last lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_s.models.types import Usage
from agent_s.result import PostconditionResult, RunResult, RunStatus, Timings
from agent_s.trajectory import (
    GroundingEntry,
    ModelCall,
    StepEntry,
    TrajectoryWriter,
    find_secrets,
    load_trajectory,
)

SECRET = "sk-live-abcdefghijklmnop"  # noqa: S105 - a fake key to search for


def entry(step: int, reply: str = "ok") -> StepEntry:
    return StepEntry(
        step=step,
        started_at=1.0,
        seconds=0.5,
        screenshot=f"step_{step:03d}.png",
        screen=(1280, 800),
        active_window="Mousepad: a.txt",
        request={"messages": 2},
        calls=(ModelCall("generate", reply, 10, 5, 0.001, 0.2),),
        reply=reply,
        action={"action": "click", "element_description": "OK"},
        action_text="agent.click(element_description='OK')",
        grounding=(GroundingEntry("OK", "element", "a11y", (5, 6), (0, 0, 10, 12), 0.9, "name"),),
        executed=({"op": "Click", "at": {"x": 5, "y": 6}},),
        code="pyautogui.click(5, 6)",
        outcome="ok",
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


def test_a_torn_last_line_is_skipped_but_a_torn_middle_is_an_error(tmp_path: Path) -> None:
    writer = TrajectoryWriter(tmp_path / "run")
    writer.write_step(entry(1))
    writer.close()
    lines = tmp_path / "run" / "trajectory.jsonl"
    with open(lines, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(entry(2).to_json())[:50])
    loaded = load_trajectory(tmp_path / "run")
    assert [s.step for s in loaded.steps] == [1]
    assert loaded.torn_last_line
    assert loaded.result is None
    with open(lines, "a", encoding="utf-8") as handle:
        handle.write("\n" + json.dumps(entry(3).to_json()) + "\n")
    with pytest.raises(ValueError, match="trajectory.jsonl:2"):
        load_trajectory(tmp_path / "run")


def test_not_a_trajectory_folder(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no trajectory.jsonl"):
        load_trajectory(tmp_path)
