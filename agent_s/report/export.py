"""A recorded run in other tools' formats: OSWorld's ``traj.jsonl``, or a provider's message
list (OpenAI Chat Completions, Anthropic Messages) with the screenshots as base64 images.

    export("runs/run-20260101-120000-4242", "osworld")     # runs/.../osworld/traj.jsonl
    export(run_dir, "openai", Path("chat.json"))           # {"messages": [...], ...}

OSWorld (its runner's ``lib_run_single``): one JSON line per step, ``step_num``,
``action_timestamp`` (``%Y%m%d@%H%M%S%f``, as its runner writes it), ``action`` (the step's
pyautogui code, or ``DONE`` / ``FAIL`` / ``WAIT``), ``response`` (the model's reply),
``reward`` (0: the score is the evaluator's), ``done``, ``info`` (the step's outcome and
action here) and ``screenshot_file``: the screen after the step, as OSWorld records it (the next
step's screenshot; the last step's own, as no later one was taken), written beside ``traj.jsonl`` as
PNG. The folder is ``--out`` (default ``RUN_DIR/osworld``).

Messages: the task and each step's screenshot in a user message, the model's reply as the
assistant's (a replayed or given step, with no reply, as its action call), then the step's
result with the next screenshot, and so on: a conversation the provider's API accepts as it
is (``client.chat.completions.create(model=..., messages=data["messages"])``,
``client.messages.create(model=..., max_tokens=..., messages=data["messages"])``). Written as
one JSON object (``format``, ``model``, ``task``, ``messages``) to ``--out`` (default
``RUN_DIR/messages-openai.json`` or ``-anthropic.json``). Screenshots are as they were sent
to the model (their pixels are not redacted; the text is, as the trajectory's is).

Files stay in their folder (``agent_s.guards.files``): a screenshot the trajectory names is read
only when it resolves inside the run folder (else it is left out, with a line naming it), and
every file is written through a temporary file of unpredictable name and a rename, never through
a link; an output folder that is a symbolic link is refused.
"""

from __future__ import annotations

import base64
import io
import json
import time
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from PIL import Image

from agent_s.guards import files
from agent_s.loop.context import describe_outcome
from agent_s.record.step import Step
from agent_s.record.trajectory import Trajectory, load_trajectory

ExportFormat = Literal["osworld", "openai", "anthropic"]
FORMATS: tuple[ExportFormat, ...] = ("osworld", "openai", "anthropic")
_STAMP = "%Y%m%d@%H%M%S%f"  # OSWorld's action_timestamp (and agent_s.bench.policies')
_MEDIA = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".webp": "image/webp"}


def export(run_dir: Path | str, fmt: str, out: Path | None = None) -> Path:
    """Write the run recorded in ``run_dir`` as ``fmt``; the path written (the folder holding
    ``traj.jsonl`` for ``osworld``, the JSON file otherwise)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r}; use one of {', '.join(FORMATS)}")
    trajectory = load_trajectory(run_dir)
    if fmt == "osworld":
        folder = Path(out) if out is not None else trajectory.folder.resolve() / "osworld"
        write_osworld(trajectory, folder)
        return folder
    path = Path(out) if out is not None else trajectory.folder.resolve() / f"messages-{fmt}.json"
    if path.is_dir():
        path = path / f"messages-{fmt}.json"
    data = {
        "format": "openai-chat" if fmt == "openai" else "anthropic-messages",
        "model": str(trajectory.run.get("model") or ""),
        "task": _task(trajectory),
        "messages": messages(trajectory, "openai" if fmt == "openai" else "anthropic"),
    }
    files.write_bytes(path, (json.dumps(data, ensure_ascii=False) + "\n").encode("utf-8"))
    return path


# -- OSWorld ------------------------------------------------------------------------------------


def osworld_lines(trajectory: Trajectory) -> list[tuple[dict[str, Any], Path | None]]:
    """Each step's ``traj.jsonl`` record, with the screenshot file its ``screenshot_file``
    names (None when the run recorded no screenshot for it)."""
    steps = trajectory.steps
    shots = [_screenshot(trajectory.folder, step) for step in steps]
    lines: list[tuple[dict[str, Any], Path | None]] = []
    for index, step in enumerate(steps):
        stamp = datetime.fromtimestamp(step.started_at or time.time()).strftime(_STAMP)
        after = next((s for s in shots[index + 1 :] if s is not None), None)
        source = after or shots[index]
        code = step.code or ""
        record: dict[str, Any] = {
            "step_num": index + 1,
            "action_timestamp": stamp,
            "action": code,
            "response": step.reply,
            "reward": 0,
            "done": step.outcome == "terminal" or index == len(steps) - 1,
            "info": {
                "agent_s_step": step.step,
                "action_text": step.action_text,
                "outcome": step.outcome,
                "detail": step.detail,
            },
        }
        if source is not None and source.is_file():
            record["screenshot_file"] = f"step_{index + 1}_{stamp}.png"
        else:
            source = None
        lines.append((record, source))
    return lines


def write_osworld(trajectory: Trajectory, folder: Path) -> None:
    """``traj.jsonl`` and its screenshots (PNG) in ``folder`` (made; refused when it is a
    symbolic link)."""
    files.output_folder(folder)
    text = []
    for record, source in osworld_lines(trajectory):
        if source is not None:
            files.write_bytes(folder / record["screenshot_file"], _png(source))
        text.append(json.dumps(record, ensure_ascii=False))
    files.write_bytes(folder / "traj.jsonl", ("\n".join(text) + "\n").encode("utf-8"))


def _png(path: Path) -> bytes:
    data = files.read_bytes(path)
    if path.suffix.lower() == ".png":
        return data
    with Image.open(io.BytesIO(data)) as image:
        buffer = io.BytesIO()
        image.save(buffer, "PNG")
        return buffer.getvalue()


# -- message lists --------------------------------------------------------------------------------


def messages(trajectory: Trajectory, provider: Literal["openai", "anthropic"]) -> list[Any]:
    """The run as the provider's message list (see the module docstring)."""
    found: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = [_text(f"Task: {_task(trajectory)}")]
    for step in trajectory.steps:
        pending.append(_text(f"Step {step.step}: the screen"))
        image = _image(trajectory.folder, step, provider)
        if image is not None:
            pending.append(image)
        found.append({"role": "user", "content": pending})
        found.append({"role": "assistant", "content": _assistant(step, provider)})
        result = describe_outcome(step, 600)
        pending = [_text(f"Result of step {step.step}: {result}")]
    return found


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _assistant(step: Step, provider: str) -> Any:
    text = step.reply.strip()
    if not text:  # a step given to the agent (a replay, a plan's hand-over): its action call
        text = f"```python\n{step.action_text or '(no action)'}\n```"
    return text if provider == "openai" else [_text(text)]


def _image(folder: Path, step: Step, provider: str) -> dict[str, Any] | None:
    path = _screenshot(folder, step)
    if path is None:
        return None
    media = _MEDIA.get(path.suffix.lower(), "image/png")
    data = base64.b64encode(files.read_bytes(path)).decode("ascii")
    if provider == "openai":
        return {"type": "image_url", "image_url": {"url": f"data:{media};base64,{data}"}}
    return {"type": "image", "source": {"type": "base64", "media_type": media, "data": data}}


def _task(trajectory: Trajectory) -> str:
    task = trajectory.run.get("task")
    if isinstance(task, str) and task:
        return task
    return trajectory.result.task if trajectory.result is not None else ""


def _screenshot(folder: Path, step: Step) -> Path | None:
    """The step's screenshot file, when the run folder holds it (one whose recorded name leads
    out of the folder is skipped, said on a line)."""
    if not step.screenshot:
        return None
    path = files.contained(folder, step.screenshot, f"step {step.step}'s screenshot")
    return path if path is not None and path.is_file() else None


__all__ = ["FORMATS", "ExportFormat", "export", "messages", "osworld_lines", "write_osworld"]
