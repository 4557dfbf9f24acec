"""Behaviour narratives: what each step of an attempt was seen to do, in short factual lines.

A narrative is made from what the trajectory folder already holds, without a model call: the
step's action, the difference between its screenshot and the next one (the regions of the
screen that changed, found with numpy), the active window's title before and after, and what
the agent saw the action do (``Step.observed``: windows opening, closing and being retitled,
the focus moving, the focused field's text changing, read through AT-SPI). Only when none of
those signals shows anything while the screen did change, and a ``caption`` function is given
(a model call, off by default), is that step's change captioned: at most one call per step.

    narrative = narrate(Path("runs/run-.../trajectory"))
    narrative.lines()   # ["1. agent.type(text='hello') - the text field now reads 'hello'", ...]
    narrative.write(folder)  # narrative.json beside trajectory.jsonl

The last step's screenshot is the attempt's final screen (the judge is shown it).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from agent_s.errors import AgentSError, describe_error
from agent_s.guards import files
from agent_s.models.errors import BudgetExceeded
from agent_s.record.step import Step
from agent_s.record.trajectory import load_trajectory

NARRATIVE_FILE = "narrative.json"
CELL = 16  # pixels per side of the grid the difference is found on
THRESHOLD = 24  # a pixel changed when a channel moved by more than this (0-255)
MAX_REGIONS = 3  # regions named per step; the rest are counted
MAX_LINE = 600  # characters of one step's line

#: ``caption(before_png, after_png, action_text)``: one sentence on what changed (a model call).
Caption = Callable[[bytes, bytes, str], str]


@dataclass(frozen=True)
class Region:
    """A changed part of the screen, in screen pixels."""

    x: int
    y: int
    width: int
    height: int

    def describe(self) -> str:
        return f"({self.x}, {self.y})-({self.x + self.width}, {self.y + self.height})"


@dataclass(frozen=True)
class StepNarrative:
    """One step: the action and what changed after it."""

    step: int
    action: str
    changes: tuple[str, ...] = ()
    regions: tuple[Region, ...] = ()
    changed_fraction: float = 0.0  # of the screen's area
    captioned: bool = False  # a caption call described the change

    def line(self) -> str:
        said = "; ".join(self.changes) if self.changes else "no visible change"
        return f"{self.step}. {self.action} - {said}"[:MAX_LINE]


@dataclass(frozen=True)
class Narrative:
    """An attempt's narrative: each step's line, how the attempt ended, its final screen."""

    steps: tuple[StepNarrative, ...] = ()
    ending: str = ""  # "succeeded: done, and the check passed"
    final_screenshot: str | None = None  # file name in the trajectory folder
    captions: int = 0  # caption calls made
    extra: dict[str, Any] = field(default_factory=dict)

    def lines(self) -> list[str]:
        lines = [s.line() for s in self.steps]
        if self.ending:
            lines.append(f"ended {self.ending}")
        return lines

    def text(self) -> str:
        return "\n".join(self.lines()) or "(no steps)"

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "lines": self.lines()}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Narrative:
        steps = tuple(
            StepNarrative(
                step=int(s["step"]),
                action=str(s["action"]),
                changes=tuple(s.get("changes", ())),
                regions=tuple(Region(**r) for r in s.get("regions", ())),
                changed_fraction=float(s.get("changed_fraction", 0.0)),
                captioned=bool(s.get("captioned", False)),
            )
            for s in data.get("steps", ())
        )
        return cls(
            steps=steps,
            ending=str(data.get("ending", "")),
            final_screenshot=data.get("final_screenshot"),
            captions=int(data.get("captions", 0)),
            extra=dict(data.get("extra", {})),
        )

    def write(self, folder: Path) -> Path:
        return files.write_text(
            folder / NARRATIVE_FILE, json.dumps(self.to_json(), indent=1, ensure_ascii=False)
        )


def _pair(folder: Path, step: Step, after: Step | None) -> tuple[Path, Path] | None:
    """The screenshots before and after ``step`` (sent to a captioning model) when both are
    inside the attempt's folder; one that leads out is skipped, said on a line."""
    if after is None or not step.screenshot or not after.screenshot:
        return None
    first = files.contained(folder, step.screenshot, f"step {step.step}'s screenshot")
    second = files.contained(folder, after.screenshot, f"step {after.step}'s screenshot")
    return None if first is None or second is None else (first, second)


def _pixels(path: Path) -> np.ndarray[Any, Any] | None:
    try:
        with Image.open(path) as image:
            return np.asarray(image.convert("RGB"), dtype=np.int16)
    except (OSError, ValueError):
        return None


def _groups(cells: np.ndarray[Any, Any]) -> list[tuple[int, int, int, int]]:
    """The boxes (top, left, bottom, right; in cells, ends exclusive) of the groups of changed
    cells, where cells up to one cell apart (diagonals too) are one group."""
    rows, cols = cells.shape
    seen = np.zeros_like(cells)
    boxes: list[tuple[int, int, int, int]] = []
    for start in zip(*np.nonzero(cells), strict=True):
        r0, c0 = int(start[0]), int(start[1])
        if seen[r0, c0]:
            continue
        seen[r0, c0] = True
        stack, box = [(r0, c0)], [r0, c0, r0 + 1, c0 + 1]
        while stack:
            r, c = stack.pop()
            box = [min(box[0], r), min(box[1], c), max(box[2], r + 1), max(box[3], c + 1)]
            for nr in range(max(r - 2, 0), min(r + 3, rows)):
                for nc in range(max(c - 2, 0), min(c + 3, cols)):
                    if cells[nr, nc] and not seen[nr, nc]:
                        seen[nr, nc] = True
                        stack.append((nr, nc))
        boxes.append((box[0], box[1], box[2], box[3]))
    return boxes


def changed_regions(
    before: Path, after: Path, screen: tuple[int, int] = (0, 0)
) -> tuple[tuple[Region, ...], float] | None:
    """The regions where ``after`` differs from ``before`` (largest first, in the screen's
    pixels when ``screen`` is its size, else the image's) and the changed fraction of the
    area; None when either image cannot be read or their sizes differ."""
    a, b = _pixels(before), _pixels(after)
    if a is None or b is None or a.shape != b.shape:
        return None
    height, width = a.shape[:2]
    changed = (np.abs(a - b) > THRESHOLD).any(axis=2)
    rows, cols = -(-height // CELL), -(-width // CELL)
    padded = np.zeros((rows * CELL, cols * CELL), dtype=bool)
    padded[:height, :width] = changed
    cells = np.asarray(padded.reshape(rows, CELL, cols, CELL).any(axis=(1, 3)))
    sx = screen[0] / width if screen[0] else 1.0
    sy = screen[1] / height if screen[1] else 1.0
    regions: list[tuple[int, Region]] = []
    for top, left, bottom, right in _groups(cells):
        x0, x1 = left * CELL, min(right * CELL, width)
        y0, y1 = top * CELL, min(bottom * CELL, height)
        area = int(changed[y0:y1, x0:x1].sum())
        box = Region(round(x0 * sx), round(y0 * sy), round((x1 - x0) * sx), round((y1 - y0) * sy))
        regions.append((area, box))
    regions.sort(key=lambda item: -item[0])
    fraction = float(changed.mean())
    return tuple(r for _, r in regions), fraction


def _region_sentence(regions: Sequence[Region], fraction: float) -> str:
    if not regions:
        return "the screen did not change"
    named = ", ".join(r.describe() for r in regions[:MAX_REGIONS])
    more = len(regions) - MAX_REGIONS
    rest = f" and {more} more" if more > 0 else ""
    share = f"{fraction:.0%}" if fraction >= 0.01 else "under 1%"
    noun = "region" if len(regions) == 1 else "regions"
    return f"the screen changed in {len(regions)} {noun} ({share} of it): {named}{rest}"


def narrate_steps(
    folder: Path, steps: Sequence[Step], caption: Caption | None = None
) -> tuple[tuple[StepNarrative, ...], int]:
    """Each step's narrative (see the module docstring) and the caption calls made."""
    narratives: list[StepNarrative] = []
    calls = 0
    for i, step in enumerate(steps):
        after_step = steps[i + 1] if i + 1 < len(steps) else None
        changes: list[str] = []
        if step.outcome in ("error", "invalid", "cancelled") and step.detail:
            changes.append(f"{step.outcome}: {step.detail[:200]}")
        changes.extend(step.observed)
        if (
            after_step is not None
            and step.active_window != after_step.active_window
            and not any("titled" in c or "focus moved" in c for c in step.observed)
        ):
            was, now = step.active_window or "none", after_step.active_window or "none"
            changes.append(f"the active window went from {was!r} to {now!r}")
        regions: tuple[Region, ...] = ()
        fraction = 0.0
        captioned = False
        pair = _pair(folder, step, after_step)
        if pair is not None:
            before, after = pair
            found = changed_regions(before, after, step.screen)
            if found is not None:
                regions, fraction = found
                changes.append(_region_sentence(regions, fraction))
                unexplained = regions and not step.observed and len(changes) == 1
                if caption is not None and unexplained:
                    calls += 1
                    try:
                        shown = files.read_bytes(before), files.read_bytes(after)
                        text = caption(*shown, step.action_text)
                    except (OSError, ValueError, AgentSError) as err:  # the narrative stands
                        changes.append(f"(no caption: {describe_error(err)})"[:300])
                        if isinstance(err, BudgetExceeded):
                            caption = None  # the budget is spent: no further calls
                    else:
                        captioned = True
                        changes.append(" ".join(text.split())[:300])
        elif step.terminal is not None:
            changes.append(f"the agent said {step.terminal}")
        narratives.append(
            StepNarrative(
                step=step.step,
                action=step.action_text or (step.code or "no action"),
                changes=tuple(changes),
                regions=regions,
                changed_fraction=round(fraction, 4),
                captioned=captioned,
            )
        )
    return tuple(narratives), calls


def narrate(folder: Path, caption: Caption | None = None, *, write: bool = True) -> Narrative:
    """The narrative of the trajectory folder ``folder`` (written there as ``narrative.json``
    unless ``write`` is False)."""
    trajectory = load_trajectory(folder)
    steps, calls = narrate_steps(folder, trajectory.steps, caption)
    ending = ""
    if trajectory.result is not None:
        ending = f"{trajectory.result.status.value}: {trajectory.result.reason}"[:300]
    shots = [s.screenshot for s in trajectory.steps if s.screenshot]
    narrative = Narrative(
        steps=steps, ending=ending, final_screenshot=shots[-1] if shots else None, captions=calls
    )
    if write:
        narrative.write(folder)
    return narrative


__all__ = [
    "NARRATIVE_FILE",
    "Caption",
    "Narrative",
    "Region",
    "StepNarrative",
    "changed_regions",
    "narrate",
    "narrate_steps",
]
