"""A replay's script: the steps of a recorded run that did something, each with its typed
action, the window active when it was recorded, the screen's size and, for a target the model
gave as coordinates, the screen point it was carried out at (``script_of``); a set-of-marks
target becomes the mark's text. ``agent_s.replay.player`` carries a script out; a workflow
(``agent_s.replay.workflow``) is a script with parameters.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from agent_s.actions import Action, AskUserAction, SaveToKnowledgeAction, parse_action
from agent_s.actions.models import ActionModel
from agent_s.errors import ActionParseError
from agent_s.grounding.locate import literal_point
from agent_s.record.step import Step, call_text
from agent_s.record.trajectory import Trajectory, load_trajectory

#: Grounders whose point is the model's own coordinates (or a replay's recorded point).
PINNED_GROUNDERS = frozenset({"native", "point", "recorded"})


class ScriptStep(BaseModel):
    """One recorded step to replay: its number in the recording, its action (set-of-marks
    targets already turned into the marks' text), the active window when it was recorded
    (``"App: title"``), the screenshot's size, and per target the recorded screen point to
    use as it is (the model's own coordinates), or None to ground the description again."""

    model_config = ConfigDict(frozen=True)

    step: int
    action: Action
    window: str | None = None
    screen: tuple[int, int] = (0, 0)
    pinned: tuple[tuple[int, int] | None, ...] = ()

    @property
    def text(self) -> str:
        return call_text(self.action)


class Script(BaseModel):
    """What a replay carries out: a recorded run's task and the steps that did something."""

    model_config = ConfigDict(frozen=True)

    task: str
    source: str = ""  # the recorded run's folder
    model: str = ""  # the model that recorded it
    steps: tuple[ScriptStep, ...] = ()
    skipped: tuple[str, ...] = ()  # recorded steps left out, and why
    # a recorded done's answer is not given again (it is what the recorded screen showed): the
    # replay diverges there for the model to read it (a workflow's, a reused run's)
    read_answer: bool = False


def script_of(recording: Trajectory | Path | str) -> Script:
    """The steps of a recorded run to replay: those that went well (outcome ok, or the final
    done / fail), in order. Steps that only talked to the model (a question to the user, the
    note a replay left where it diverged) and steps that failed or were refused are left out,
    each noted in ``skipped``."""
    trajectory = recording if isinstance(recording, Trajectory) else load_trajectory(recording)
    task = str(trajectory.run.get("task") or (trajectory.result.task if trajectory.result else ""))
    if not task:
        raise ValueError(f"{trajectory.folder} has no task in run.json: not a recorded run")
    steps: list[ScriptStep] = []
    skipped: list[str] = []
    for recorded in trajectory.steps:
        action = _action_of(recorded)
        if action is None:
            skipped.append(f"step {recorded.step}: no action")
            continue
        if recorded.outcome not in ("ok", "terminal"):
            skipped.append(f"step {recorded.step}: {recorded.outcome} ({recorded.action_text})")
            continue
        if isinstance(action, AskUserAction):
            skipped.append(f"step {recorded.step}: a question to the user")
            continue
        if isinstance(action, SaveToKnowledgeAction) and recorded.chosen_by == "replay":
            skipped.append(f"step {recorded.step}: a replay's note to the model")
            continue
        action, pinned = _targets_of(recorded, action)
        steps.append(
            ScriptStep(
                step=recorded.step,
                action=action,
                window=recorded.active_window,
                screen=recorded.screen,
                pinned=pinned,
            )
        )
    model = str(trajectory.run.get("model") or "")
    return Script(
        task=task,
        source=str(trajectory.folder),
        model=model,
        steps=tuple(steps),
        skipped=tuple(skipped),
    )


def _action_of(recorded: Step) -> Action | None:
    if recorded.action is not None:
        return recorded.action
    if not recorded.action_text:
        return None
    try:
        return parse_action(recorded.action_text)
    except ActionParseError:
        return None


def _targets_of(
    recorded: Step, action: Action
) -> tuple[Action, tuple[tuple[int, int] | None, ...]]:
    """The action with each mark replaced by the mark's text, and the recorded screen point of
    each target given as coordinates (None for a description to ground again)."""
    marks = {entry.number: entry for entry in recorded.marks}
    updates: dict[str, Any] = {}
    for description, mark, _ in action.marked:
        number = getattr(action, mark)
        if number is None:
            continue
        entry = marks.get(number)
        text = entry.text.strip() if entry is not None else ""
        # a mark with no words is found again at its recorded point (if the screen matches)
        updates[mark] = None
        updates[description] = text or f"mark {number}"
    if updates:
        action = with_fields(action, updates)
    pinned: list[tuple[int, int] | None] = []
    for index, target in enumerate(action.targets()):
        grounding = recorded.grounding[index] if index < len(recorded.grounding) else None
        coordinates = literal_point(target.text) is not None or target.text.startswith("mark ")
        if grounding is not None and grounding.grounder in PINNED_GROUNDERS:
            coordinates = True
        if coordinates and grounding is not None and grounding.point is not None:
            pinned.append(grounding.point)
        else:
            pinned.append(None)
    return action, tuple(pinned)


def with_fields(action: ActionModel, updates: Mapping[str, Any]) -> Action:
    """A copy of ``action`` with these fields changed, validated again."""
    data = {**action.model_dump(), **updates}
    return parse_action_data(data)


def parse_action_data(data: Mapping[str, Any]) -> Action:
    """An action from its JSON fields (``{"action": "click", ...}``), validated."""
    return ScriptStep.model_validate({"step": 0, "action": dict(data)}).action


__all__ = ["Script", "ScriptStep", "parse_action_data", "script_of"]
