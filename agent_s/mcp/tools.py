"""agent-s's MCP tools that only look (``agent_s.mcp.server``): ``ground`` (where an expression is
on the server's screen), ``screenshot``'s observation, and ``list_trajectories`` /
``read_trajectory`` over the record folder (``Tools.folder`` keeps reads inside it, and every
file a trajectory names is read only inside its folder: ``agent_s.guards.files``; what leads out
is listed as ``skipped``)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError

from agent_s.errors import AgentSError
from agent_s.guards import files
from agent_s.mcp.bridge import WHERE_SETTINGS, Tools
from agent_s.mcp.models import (
    GroundOutcome,
    RunOutcome,
    ScreenBox,
    ScreenPoint,
    StepGrounding,
    StepSummary,
    TrajectoryEntry,
    TrajectoryList,
    TrajectoryOutcome,
)
from agent_s.record.step import Step
from agent_s.record.trajectory import load_trajectory, started_at


def observe(environ: Mapping[str, str], with_windows: bool) -> Any:
    """The server's screen now (an ``Observation``); ToolError when there is none."""
    from agent_s.desktop.base import extents_on_screen
    from agent_s.desktop.choose import open_backend
    from agent_s.grounding import Observation

    try:
        with open_backend(environ) as backend:
            if not with_windows:
                return Observation(backend.capture())
            return Observation(
                backend.capture(),
                tuple(backend.windows()),
                backend.geometry(),
                extents_on_screen(backend),
            )
    except AgentSError as error:
        raise ToolError(
            f"no screen to look at: {error} (start agent-s mcp inside an X or sway session, or "
            "use run_task with virtual=true)"
        ) from None


def _grounder(mode: str, tools: Tools) -> Any:
    from agent_s.grounding.locate import build_grounder
    from agent_s.models.factory import build_provider

    if mode == "native":
        raise ToolError(
            "grounding native means the generation model's own coordinates: use auto, a11y, "
            "ocr or model"
        )
    try:
        config = tools.resolve({"--ground": mode}).build_grounding(tools.environ)
    except (AgentSError, ValueError) as error:
        raise ToolError(f"{error} {WHERE_SETTINGS}") from None
    settings = config.settings()
    model = build_provider(settings) if settings is not None and mode in ("model", "auto") else None
    try:
        return build_grounder(config.mode, model=model)
    except ValueError as error:
        raise ToolError(f"{error} (set them where agent-s mcp starts)") from None


def ground_expression(expression: str, mode: str, tools: Tools) -> GroundOutcome:
    from agent_s.grounding import GroundingError, NotFound

    grounder = _grounder(mode, tools)
    observation = observe(tools.environ, with_windows=True)
    try:
        found = grounder.ground(expression, observation)
    except NotFound as error:
        seen = "; ".join(c.describe() for c in error.candidates[:8]) or "none"
        raise ToolError(
            f"not found: {error} (candidates seen: {seen}); describe the element by its label "
            "as shown on screen, or take a screenshot to look"
        ) from None
    except (GroundingError, AgentSError, ValueError) as error:
        raise ToolError(f"grounding failed: {error}") from None
    box = found.box
    return GroundOutcome(
        expression=expression,
        point=ScreenPoint(x=found.point.x, y=found.point.y),
        box=ScreenBox(x=box.x, y=box.y, width=box.width, height=box.height) if box else None,
        source=found.grounder,
        confidence=round(found.confidence, 3),
        evidence=found.evidence,
    )


def _entry(folder: Path) -> TrajectoryEntry | None:
    try:
        loaded = load_trajectory(folder)
    except (OSError, ValueError):
        return None
    result = loaded.result
    return TrajectoryEntry(
        id=folder.name,
        task=str(loaded.run.get("task", "")),
        status=result.status.value if result else None,
        steps=result.steps if result else len(loaded.steps),
        started_at=loaded.run.get("started_at"),
        folder=str(folder),
    )


def list_runs(tools: Tools, limit: int) -> TrajectoryList:
    root = tools.root()
    found: list[TrajectoryEntry] = []
    with files.collect_skips() as skipped:
        if root.is_dir():
            folders = [p for p in root.iterdir() if p.is_dir() and not p.is_symlink()]
            # newest first by when each run started (a folder's time moves when a report is
            # written into it later); a folder whose start cannot be read goes last
            folders.sort(key=lambda p: started_at(p) or 0.0, reverse=True)
            for folder in folders:
                if len(found) >= limit:
                    break
                if (entry := _entry(folder)) is not None:
                    found.append(entry)
    return TrajectoryList(record_folder=str(root), trajectories=found, skipped=skipped)


def read_run(tools: Tools, given: str) -> TrajectoryOutcome:
    folder = tools.folder(given)
    with files.collect_skips() as skipped:
        try:
            loaded = load_trajectory(folder)
        except (OSError, ValueError) as error:
            raise ToolError(f"cannot read the trajectory {given!r}: {error}") from None
        shots = [_screenshot(folder, step) for step in loaded.steps]
    steps = []
    for step, shot in zip(loaded.steps, shots, strict=True):
        grounded = [
            StepGrounding(
                target=g.target,
                point=ScreenPoint(x=g.point[0], y=g.point[1]) if g.point else None,
                source=g.grounder,
            )
            for g in step.grounding
        ]
        safety = step.safety
        verdict = None
        if safety is not None:
            verdict = "allowed" if safety.get("allowed") else "refused"
            verdict += f" by {safety.get('decided_by', '?')}"
            if safety.get("approver"):
                verdict += f" ({safety['approver']})"
        steps.append(
            StepSummary(
                step=step.step,
                action=step.action_text,
                outcome=step.outcome,
                detail=step.detail,
                grounding=grounded,
                safety=verdict,
                screenshot=shot,
                cost_usd=round(step.usage.cost_usd, 6),
            )
        )
    return TrajectoryOutcome(
        id=folder.name,
        folder=str(folder),
        task=str(loaded.run.get("task", "")),
        model=str(loaded.run.get("model", "")),
        steps=steps,
        result=RunOutcome.of(loaded.result) if loaded.result else None,
        torn_last_line=loaded.torn_last_line,
        skipped=skipped,
    )


def _screenshot(folder: Path, step: Step) -> str | None:
    """The step's screenshot name when it is a file inside the trajectory's folder."""
    if not step.screenshot:
        return None
    inside = files.contained(folder, step.screenshot, f"step {step.step}'s screenshot")
    return step.screenshot if inside is not None else None


__all__ = ["ground_expression", "list_runs", "observe", "read_run"]
