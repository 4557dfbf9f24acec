"""Drive Agent S3 (PyPI ``gui-agents`` 0.3.2) for the benchmark scripts, in its own venv.

Agent S3 is installed apart from agent-s, in ``.venv-s3`` (it pins other versions of shared
dependencies, and none of its code may enter ours):

    python3 -m venv .venv-s3
    .venv-s3/bin/pip install --no-deps gui-agents==0.3.2
    .venv-s3/bin/pip install "openai<3" "anthropic<1" backoff numpy pillow pytesseract \
        pyautogui mss

(what its request-building path and its actions import, the SDKs at the major versions of its
time: anthropic 2.x no longer takes the ``temperature`` it passes; its full dependency list,
paddleocr and all, is not needed). ``bench_context.py`` and ``bench_step.py`` start this
file under ``.venv-s3/bin/python`` (``S3Process``) and talk to it one JSON line at a time:

- ``init``: build ``AgentS3(worker params, OSWorldACI(...))`` as OSWorld's runners do, the
  models pointing at a scripted model server;
- ``predict``: one ``agent.predict(instruction, {"screenshot": png})`` on a PNG file;
- ``step``: one step of a local run on ``$DISPLAY``, as S3's own CLI takes it: capture the
  screen and save it as PNG, ``predict``, execute the code it returns.

Each answer says how long the step took and how much of that was spent inside the model
clients' ``generate`` calls (timed by wrapping the engines' ``generate``; nothing else of S3 is
changed). The returned code runs in a Python interpreter started once (``python -i`` reading
its stdin), so its time is the time of the pyautogui calls, as in S3's CLI, without an
interpreter start per action.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

VENV = Path(__file__).resolve().parent.parent / ".venv-s3"
INSTALL = (
    "python3 -m venv .venv-s3 && .venv-s3/bin/pip install --no-deps gui-agents==0.3.2 && "
    '.venv-s3/bin/pip install "openai<3" "anthropic<1" backoff numpy pillow pytesseract '
    "pyautogui mss"
)
_DONE = "<<s3-driver-done>>"
CLI_SLEEP = 1.0  # S3's CLI sleeps this long before each action and again after it


def s3_python() -> Path | None:
    """The venv's Python when Agent S3 is installed in it, else None."""
    python = VENV / "bin" / "python"
    if not python.exists():
        return None
    found = subprocess.run(
        [str(python), "-c", "import gui_agents.s3.agents.agent_s"],
        capture_output=True,
        check=False,
        timeout=120,
    )
    return python if found.returncode == 0 else None


class S3Process:
    """The client side: this file running under the S3 venv, driven in lock-step."""

    def __init__(self, python: Path, env: Mapping[str, str] | None = None) -> None:
        self._proc = subprocess.Popen(
            [str(python), __file__],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,  # S3 prints and logs as it goes
            text=True,
            env=dict(os.environ if env is None else env),
        )

    def ask(self, **message: Any) -> dict[str, Any]:
        stdin, stdout = _pipes(self._proc)
        stdin.write(json.dumps(message) + "\n")
        stdin.flush()
        line = stdout.readline()
        if not line:
            raise RuntimeError(f"the Agent S3 driver exited (status {self._proc.wait()})")
        answer: dict[str, Any] = json.loads(line)
        if "error" in answer:
            raise RuntimeError(f"Agent S3 driver: {answer['error']}")
        return answer

    def close(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()

    def __enter__(self) -> S3Process:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _pipes(proc: subprocess.Popen[str]) -> tuple[IO[str], IO[str]]:
    if proc.stdin is None or proc.stdout is None:
        raise RuntimeError("the process was started without pipes")
    return proc.stdin, proc.stdout


# -- the driver side (runs under .venv-s3) --------------------------------------------------------


class _ModelClock:
    """Seconds spent inside the model engines' ``generate`` calls."""

    def __init__(self) -> None:
        self.seconds = 0.0

    def wrap(self, generate: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return generate(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - start

        return timed


class _Executor:
    """A Python interpreter that runs each code string it is given, in order."""

    def __init__(self) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, "-i", "-q", "-u"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.run("import pyautogui, time\npyautogui.FAILSAFE = False")  # as OSWorld's runner

    def run(self, code: str) -> None:
        stdin, stdout = _pipes(self._proc)
        stdin.write(f"{code}\n\nprint({_DONE!r})\n")
        stdin.flush()
        while (line := stdout.readline()) and _DONE not in line:
            pass
        if not line:
            raise RuntimeError("the action interpreter exited")


def _cli_sleep() -> float:
    """One of S3's CLI's fixed waits around an action, as long as it really took."""
    start = time.perf_counter()
    time.sleep(CLI_SLEEP)
    return time.perf_counter() - start


class _Driver:
    def __init__(self, message: dict[str, Any]) -> None:
        from gui_agents.s3.agents.agent_s import AgentS3
        from gui_agents.s3.agents.grounding import OSWorldACI
        from gui_agents.s3.core import engine

        self.clock = _ModelClock()
        for name in ("LMMEngineOpenAI", "LMMEngineAnthropic", "LMMEngineHuggingFace"):
            cls = getattr(engine, name)
            cls.generate = self.clock.wrap(cls.generate)
        width, height = message["width"], message["height"]
        aci = OSWorldACI(
            env=None,
            platform="linux",
            engine_params_for_generation=message["engine"],
            engine_params_for_grounding=message["grounding"],
            width=width,
            height=height,
        )
        self.agent = AgentS3(message["engine"], aci, platform="linux")
        self.instruction = message["instruction"]
        self.size = (width, height)
        self._executor: _Executor | None = None
        self._grabber: Any = None

    def predict(self, png: bytes) -> tuple[list[str], float, float]:
        before, start = self.clock.seconds, time.perf_counter()
        _, actions = self.agent.predict(
            instruction=self.instruction, observation={"screenshot": png}
        )
        return actions, time.perf_counter() - start, self.clock.seconds - before

    def step(self, sleeps: bool = False) -> dict[str, Any]:
        """Capture, predict, execute: S3's CLI loop; with ``sleeps``, its fixed waits around
        the action too (1 s before it and 1 s after it, ``gui_agents.s3.cli_app``), timed
        apart as ``settle``."""
        import mss
        from PIL import Image

        start = time.perf_counter()
        if self._grabber is None:
            self._grabber = mss.MSS()  # pyautogui.screenshot needs gnome-screenshot here
            self._executor = _Executor()
        shot = self._grabber.grab(self._grabber.monitors[0])
        image = Image.frombytes("RGB", shot.size, shot.bgra, "raw", "BGRX")
        image = image.resize(self.size, Image.Resampling.LANCZOS)
        buffer = io.BytesIO()
        image.save(buffer, format="PNG")
        captured = time.perf_counter()
        actions, predict_s, model_s = self.predict(buffer.getvalue())
        executed = time.perf_counter()
        code = actions[0]
        slept = 0.0
        if code not in ("DONE", "FAIL", "WAIT", "NEXT") and self._executor is not None:
            slept += _cli_sleep() if sleeps else 0.0
            self._executor.run(code)
            slept += _cli_sleep() if sleeps else 0.0
        end = time.perf_counter()
        return {
            "settle": slept,
            "actions": actions,
            "seconds": end - start,
            "model": model_s,
            "capture": captured - start,
            "predict": predict_s - model_s,
            "execute": end - executed - slept,
        }

    def handle(self, message: dict[str, Any]) -> dict[str, Any]:
        if message["op"] == "predict":
            actions, seconds, model = self.predict(Path(message["screenshot"]).read_bytes())
            return {"actions": actions, "seconds": seconds, "model": model}
        if message["op"] == "step":
            return self.step(bool(message.get("sleeps")))
        raise ValueError(f"unknown op {message['op']!r}")


def main() -> None:
    protocol = sys.stdout
    sys.stdout = sys.stderr  # S3 prints as it goes; the protocol keeps the real stdout
    driver: _Driver | None = None
    for line in sys.stdin:
        message = json.loads(line)
        try:
            if message["op"] == "init":
                driver = _Driver(message)
                answer: dict[str, Any] = {"ok": True}
            elif driver is None:
                raise RuntimeError("init first")
            else:
                answer = driver.handle(message)
        except Exception as err:  # noqa: BLE001 - reported to the benchmark, which stops
            answer = {"error": f"{type(err).__name__}: {err}"}
        protocol.write(json.dumps(answer) + "\n")
        protocol.flush()


if __name__ == "__main__":
    main()
