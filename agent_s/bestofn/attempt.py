"""One best-of-N attempt in its own process: ``python -m agent_s.bestofn.attempt SPEC.json``.

pyautogui binds to one display per process, so each attempt of ``agent-s run --virtual
--best-of N`` runs here: a fresh virtual desktop whose HOME is ``<attempt folder>/home``, the
agent with the settings resolved once by the command (``Settings.to_json``; the API key comes
in ``AGENT_S_BENCH_API_KEY``, never in a file), the ``--check`` command run against this
desktop's HOME. Unattended: no approver and nobody to answer a question (actions the safety
mode holds are refused, a question ends the attempt as ``needs_input``).

It writes into the attempt folder: ``trajectory/`` (with ``narrative.json``, see
``narrative``), ``home/`` (the attempt's files, kept until the judge has picked) and
``attempt.json`` (the RunResult and the narrative), written last. A stop signal or the
runner's lifeline closing stops the desktop and records the attempt ``cancelled``.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from dataclasses import replace
from pathlib import Path
from typing import Any

from agent_s import lifecycle
from agent_s.bench.worker import LIFELINE_VAR
from agent_s.bestofn.narrative import Caption, Narrative, narrate
from agent_s.guards import files
from agent_s.record.step import Step

ATTEMPT_FILE = "attempt.json"
KEY_VAR = "AGENT_S_BENCH_API_KEY"


def write_json(path: Path, data: dict[str, Any]) -> None:
    """``data`` into ``path`` atomically, following no link (``agent_s.guards.files``)."""
    files.write_text(path, json.dumps(data, indent=1, ensure_ascii=False) + "\n")


def settle_trajectory(folder: Path, trajectory: Path | None) -> Path | None:
    """The run's trajectory folder moved to ``folder/trajectory`` (a stable place)."""
    if trajectory is None or not trajectory.is_dir():
        return None
    target = folder / "trajectory"
    if trajectory.resolve() != target.resolve():
        trajectory.rename(target)
    return target


def narrative_of(trajectory: Path | None, caption: Caption | None = None) -> Narrative:
    """The attempt's narrative (written into its trajectory), or an empty one without it."""
    if trajectory is None:
        return Narrative(ending="no trajectory was recorded")
    try:
        return narrate(trajectory, caption)
    except (OSError, ValueError) as err:
        return Narrative(ending=f"the trajectory could not be read: {err}")


def _progress(step: Step) -> None:
    """One line per step in the attempt's ``worker.log``."""
    sys.stdout.write(f"step {step.step}: {step.action_text}\n")
    sys.stdout.flush()


def run_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """Run the attempt ``spec`` describes; its record (also written to ``attempt.json``)."""
    from agent_s.bestofn.captions import captioner
    from agent_s.desktop.choose import desktop_backend
    from agent_s.desktop.virtual import VirtualDesktop
    from agent_s.loop.agent import Agent
    from agent_s.record.result import CommandCheck, RunResult, RunStatus
    from agent_s.settings.read import Settings

    folder = Path(spec["folder"])
    settings = Settings.from_json(spec["settings"])
    key = os.environ.pop(KEY_VAR, "") or None
    model = settings.build_model(key)
    record: dict[str, Any] = {"number": spec["number"], "result": None, "narrative": None}
    trajectory: Path | None = None
    interrupted: KeyboardInterrupt | None = None
    try:
        agent = Agent(
            model,
            settings=settings.build_agent_config(record_dir=folder, dry_run=False),
            grounding=settings.build_grounding(),
            profiles=settings.build_profiles(),
            on_step=_progress,
        )
        home = folder / "home"
        desktop = VirtualDesktop(home=home, monitors=spec.get("monitors"), kind=spec["kind"])
        with desktop as desk, desk.exported(), desktop_backend(desk) as backend:
            agent.backend = backend
            argv = spec.get("check")
            check = CommandCheck(tuple(argv), env=dict(desk.env)) if argv else None
            result = agent.run(spec["task"], postcondition=check)
        trajectory = settle_trajectory(folder, result.trajectory_dir)
        result = replace(result, trajectory_dir=trajectory)
        record["result"] = result.to_json()
        if result.status is RunStatus.CANCELLED:
            signum = lifecycle.received()
            if signum is not None:
                raise lifecycle.Terminated(signum)
    except KeyboardInterrupt as err:
        interrupted = err
        record["error"] = str(err) or "interrupted"
    except Exception as err:  # the record must say what went wrong, whatever it was
        record["error"] = f"{type(err).__name__}: {err}"
        record["traceback"] = traceback.format_exc()[-3000:]
    if trajectory is None:
        found = sorted(p for p in folder.glob("run-*") if p.is_dir())
        trajectory = settle_trajectory(folder, found[-1] if found else None)
    if spec.get("captions") and interrupted is None and record["result"] is not None:
        done = RunResult.from_json(record["result"])
        limit = settings.limits.max_cost
        left = None if limit is None else max(limit - done.usage.cost_usd, 0.0)
        caption, meter = captioner(settings, key, left)
        narrative = narrative_of(trajectory, caption)
        if narrative.captions:  # the captions are the attempt's calls and cost too
            calls = {**done.calls, "caption": narrative.captions}
            done = replace(
                done,
                usage=done.usage + meter.total,
                model_calls=done.model_calls + narrative.captions,
                calls=calls,
            )
            record["result"] = done.to_json()
    else:
        narrative = narrative_of(trajectory)
    record["narrative"] = narrative.to_json()
    write_json(folder / ATTEMPT_FILE, record)
    if interrupted is not None:
        raise interrupted
    return record


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        sys.stderr.write("usage: python -m agent_s.bestofn.attempt SPEC.json\n")
        return 2
    lifeline = os.environ.pop(LIFELINE_VAR, "")
    with lifecycle.stop_signals_interrupt():
        if lifeline.isdigit():
            lifecycle.watch_lifeline(int(lifeline))
        try:
            run_spec(json.loads(Path(args[0]).read_text(encoding="utf-8")))
        except KeyboardInterrupt as err:
            sys.stderr.write(f"cancelled: {err or 'interrupted'}\n")
            return 130
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
