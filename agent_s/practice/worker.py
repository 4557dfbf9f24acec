"""One practice desktop in its own process: ``python -m agent_s.practice.worker SPEC.json``.

pyautogui binds to ``$DISPLAY`` when first imported and AT-SPI to one session bus, so each
desktop of a practice session lives in a worker process of its own. The spec (written by
``run_worker`` into the job's folder; the API key comes in ``AGENT_S_PRACTICE_API_KEY``, never in
the file) names the job, the application, the check and the resolved settings
(``agent_s.settings.read.Settings.to_json``). The worker starts a fresh virtual desktop (its own
HOME),
starts the application and waits for its window, then:

- ``probe``: runs the check once on that untouched desktop;
- ``attempt``: runs the agent on the task, the check as its postcondition (``record_dir``: where
  its trajectory goes).

It prints one JSON line per agent step (``{"kind": "step", "text": ...}``) and, last, its result
(``{"kind": "result", "status": "done" | "error" | "cancelled", ...}``); its stderr is the job's
``worker.log``. Its stdin is a lifeline: when the parent is gone (even killed by SIGKILL) the
worker stops as on SIGTERM, and a stop signal stops the run and the desktop cleanly.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from agent_s.errors import AgentSError
from agent_s.practice.curriculum import (
    CHECK_TIMEOUT,
    CheckPostcondition,
    CheckSpec,
    PracticeError,
    run_check,
)

if TYPE_CHECKING:
    from agent_s.desktop.apps import Launch
    from agent_s.record.step import Step

KEY_VAR = "AGENT_S_PRACTICE_API_KEY"  # the worker's API key, never in its spec file
APP_WAIT = 30.0  # seconds for the application's first window
STOP_GRACE = 30.0  # seconds a stopped worker has to stop its desktop, before SIGKILL


def resolve(app: str, env: Mapping[str, str]) -> Launch:
    """How to start ``app`` (``agent_s.desktop.apps.resolve_app``), or PracticeError."""
    from agent_s.desktop.apps import resolve_app
    from agent_s.errors import AppNotFoundError

    try:
        return resolve_app(app, env)
    except AppNotFoundError as err:
        raise PracticeError(f"{err}; practise an installed application or a suite") from None


def run_worker(
    spec: Mapping[str, Any],
    folder: Path,
    api_key: str | None,
    timeout: float,
    on_line: Callable[[Mapping[str, Any]], None] = lambda data: None,
) -> dict[str, Any]:
    """Run one worker (``python -m agent_s.practice.worker SPEC``) in ``folder``: its JSON lines to
    ``on_line``, its last (``kind: result``) returned. Its stderr goes to ``worker.log``; its
    stdin is its lifeline. Stopped (SIGTERM, then SIGKILL) past ``timeout`` or when this
    process is interrupted (the interrupt then propagates)."""
    path = folder / "spec.json"
    path.write_text(json.dumps(spec, indent=1), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != KEY_VAR}
    if api_key:
        env[KEY_VAR] = api_key
    read_fd, write_fd = os.pipe()
    try:
        with open(folder / "worker.log", "wb") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "agent_s.practice.worker", str(path.resolve())],
                cwd=folder,  # not a checkout's folder: its agent_s/ would come first on sys.path
                env=env,
                stdin=read_fd,
                stdout=subprocess.PIPE,
                stderr=log,
            )
            os.close(read_fd)
            read_fd = -1
            timer = threading.Timer(timeout, _stop, (proc,))
            timer.daemon = True
            timer.start()
            try:
                result = _read_lines(proc.stdout, on_line)
                proc.wait()
            except BaseException:
                _stop(proc)
                raise
            finally:
                timer.cancel()
                if proc.stdout is not None:
                    proc.stdout.close()
    finally:
        for fd in (read_fd, write_fd):
            if fd >= 0:
                os.close(fd)
    if result is None:
        tail = (folder / "worker.log").read_text(encoding="utf-8", errors="replace")[-400:]
        why = f"exit status {proc.returncode}" if proc.returncode >= 0 else "stopped"
        return {"status": "error", "detail": f"the worker ended without a result ({why}): {tail}"}
    return result


def _read_lines(
    stream: IO[bytes] | None, on_line: Callable[[Mapping[str, Any]], None]
) -> dict[str, Any] | None:
    result = None
    for raw in stream or ():
        with contextlib.suppress(ValueError):
            data = json.loads(raw)
            if isinstance(data, dict) and data.get("kind") == "result":
                result = data
            elif isinstance(data, dict):
                on_line(data)
    return result


def _stop(proc: subprocess.Popen[bytes], grace: float = STOP_GRACE) -> None:
    """SIGTERM (the worker stops its desktop), then SIGKILL after ``grace`` seconds."""
    if proc.poll() is None:
        with contextlib.suppress(OSError):
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _emit(data: Mapping[str, Any]) -> None:
    sys.stdout.write(json.dumps(data) + "\n")
    sys.stdout.flush()


def _step_text(step: Step) -> str:
    return f"{step.step:>3} {step.action_text[:100]}" + (
        f"  ({step.outcome})" if step.outcome not in ("ok", "terminal") else ""
    )


def _job(spec: Mapping[str, Any], api_key: str | None) -> dict[str, Any]:
    """One worker's job on a fresh virtual desktop with the application started: ``probe``
    runs the check; ``attempt`` runs the agent with the check as its postcondition."""
    from pydantic import TypeAdapter

    from agent_s.coding.agent import runner_settings
    from agent_s.desktop.apps import windows_of
    from agent_s.desktop.choose import desktop_backend, virtual_kind
    from agent_s.desktop.virtual import VirtualDesktop
    from agent_s.errors import DesktopSetupError
    from agent_s.loop.agent import Agent
    from agent_s.settings.read import Settings

    settings = Settings.from_json(spec["settings"])
    check: CheckSpec = TypeAdapter(CheckSpec).validate_python(spec["check"])
    app = str(spec["app"])
    with (
        VirtualDesktop(home="temp", kind=virtual_kind(os.environ)) as desk,
        desk.exported(),
        desktop_backend(desk) as backend,
    ):
        launch = resolve(app, desk.env)
        desk.launch(launch.argv, cwd=launch.cwd or desk.home)
        deadline = time.monotonic() + APP_WAIT
        while not windows_of(launch, app, backend.windows()):
            if time.monotonic() > deadline:
                raise DesktopSetupError(f"{app} showed no window within {APP_WAIT:g} s")
            time.sleep(0.2)
        time.sleep(0.5)  # its first paint
        secret = [s for s in (api_key, *settings.secret_values()) if s]
        runner = runner_settings(settings.code_agent, desk.home, desk.env, secret)
        runner = replace(runner, timeout_s=min(runner.timeout_s, CHECK_TIMEOUT))
        if spec["job"] == "probe":
            return {"kind": "result", "status": "done", "check": asdict(run_check(check, runner))}
        config = settings.build_agent_config(
            record_dir=Path(spec["record_dir"]),
            max_steps=int(spec["max_steps"]),
            max_seconds=spec.get("max_seconds"),
            max_cost_usd=spec.get("max_cost"),
            dry_run=False,
        )
        agent = Agent(
            settings.build_model(api_key),
            settings=config,
            grounding=settings.build_grounding(),
            backend=backend,
            profiles=settings.build_profiles(),
            on_step=lambda step: _emit({"kind": "step", "text": _step_text(step)}),
        )
        postcondition = CheckPostcondition(check, runner)
        result = agent.run(str(spec["task"]), postcondition=postcondition)
        outcome = asdict(postcondition.outcome) if postcondition.outcome else None
        return {"kind": "result", "status": "done", "result": result.to_json(), "check": outcome}


def _worker_main(argv: Sequence[str]) -> int:
    from agent_s import lifecycle

    if len(argv) != 2:
        sys.stderr.write("usage: python -m agent_s.practice.worker SPEC.json\n")
        return 2
    spec = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
    api_key = os.environ.pop(KEY_VAR, None)
    lifecycle.watch_lifeline(0)
    with lifecycle.stop_signals_interrupt():
        try:
            out = _job(spec, api_key)
        except KeyboardInterrupt:
            out = {"kind": "result", "status": "cancelled", "detail": "interrupted"}
        except AgentSError as err:
            out = {"kind": "result", "status": "error", "detail": str(err)}
        except Exception as err:  # a bug: the log keeps the traceback, the parent the reason
            traceback.print_exc()
            out = {"kind": "result", "status": "error", "detail": f"{type(err).__name__}: {err}"}
    _emit(out)
    return 0


__all__ = ["KEY_VAR", "resolve", "run_worker"]

if __name__ == "__main__":
    sys.exit(_worker_main(sys.argv))
