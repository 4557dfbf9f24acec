"""Agent S3's OSWorld runners with only the import line changed, on the virtual desktop.

Two runner flows are reproduced here (written for this test, call for call):

- Agent S3's own ``osworld_setup/s3`` runner: it builds ``OSWorldACI(env=..., platform=...,
  engine_params_for_generation=..., engine_params_for_grounding=..., width=..., height=...)``,
  passes it to ``AgentS3(engine_params, grounding_agent, platform=...)`` (reflection on by
  default), then per task ``agent.reset(runtime_logger)`` (falling back to ``reset()``),
  ``env.reset(task_config=...)``, ``env._get_obs()``, and ``predict`` / ``env.step`` until done;
- OSWorld's ``lib_run_single``: ``env.reset`` first, then ``agent.reset(runtime_logger,
  vm_ip=env.vm_ip)``.

``OSWorldLikeEnv`` stands in for OSWorld's ``DesktopEnv`` on our virtual desktop: ``step`` runs
the returned pyautogui code in a separate ``python -c`` with the prefix OSWorld's controller
puts before it, and handles the ``DONE`` / ``FAIL`` / ``WAIT`` strings as it does. The models
are the scripted server: a generation model and a UI-TARS-style grounding model that answers
in the ``grounding_width`` x ``grounding_height`` frame the runner sets. The checks are real
effects: the saved file, the calculator's result.
"""

from __future__ import annotations

import datetime
import io
import json
import logging
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pictures import png
from PIL import Image
from polling import poll

from agent_s.compat import AgentS3, OSWorldACI  # the only line a runner changes
from agent_s.grounding import AccessibilityTree
from agent_s.testing.scripted_replies import reply
from agent_s.testing.scripted_server import ScriptedModelServer

pytestmark = pytest.mark.desktop

# what OSWorld's controller runs a pyautogui action with
OSWORLD_PREFIX = "import pyautogui; import time; pyautogui.FAILSAFE = False; {command}"
GROUNDING_FRAME = (1000, 1000)  # grounding_width, grounding_height: not the screen's size
REVIEW = "ON TRACK: the latest action did what the agent intended."


def act(code: str) -> str:
    return f"Next step.\n```python\n{code}\n```"


class OSWorldLikeEnv:
    """OSWorld's ``DesktopEnv`` surface over the session's virtual desktop."""

    vm_ip = "127.0.0.1"

    def __init__(
        self,
        desktop: Any,
        x11: Any,
        start: Callable[[dict[str, Any]], None],
        evaluate: Callable[[], float],
    ) -> None:
        self.desktop, self.x11 = desktop, x11
        self._start, self._evaluate = start, evaluate
        self.executed: list[str] = []

    def reset(self, task_config: dict[str, Any]) -> dict[str, Any]:
        self._start(task_config)
        return self._get_obs()

    def _get_obs(self) -> dict[str, Any]:
        return {"screenshot": png(self.x11.capture().image)}

    def step(self, action: str, pause: float = 0.5) -> tuple[dict[str, Any], float, bool, dict]:
        done = False
        if action == "WAIT":
            time.sleep(pause)
        elif action in ("DONE", "FAIL"):
            done = True
        else:
            subprocess.run(
                [sys.executable, "-c", OSWORLD_PREFIX.format(command=action)],
                env=self.desktop.env,
                check=True,
                timeout=60,
            )
            time.sleep(pause)
        self.executed.append(action)
        return self._get_obs(), 0.0, done, {"done": done}

    def evaluate(self) -> float:
        return self._evaluate()


def _runtime_logger(result_dir: Path) -> logging.Logger:
    runtime = logging.getLogger(f"desktopenv.example.{result_dir.name}")
    runtime.setLevel(logging.DEBUG)
    runtime.addHandler(logging.FileHandler(result_dir / "runtime.log"))
    return runtime


def _steps(
    agent: Any,
    env: OSWorldLikeEnv,
    obs: dict[str, Any],
    instruction: str,
    max_steps: int,
    out: Path,
) -> None:
    """The loop both runners share: predict, then each action through env.step, recorded."""
    done, step_idx = False, 0
    while not done and step_idx < max_steps:
        response, actions = agent.predict(instruction, obs)
        for action in actions:
            stamp = datetime.datetime.now().strftime("%Y%m%d@%H%M%S%f")
            obs, reward, done, info = env.step(action, 0.5)
            (out / f"step_{step_idx + 1}_{stamp}.png").write_bytes(obs["screenshot"])
            response.update(
                {
                    "step_num": step_idx + 1,
                    "action_timestamp": stamp,
                    "action": action,
                    "reward": reward,
                    "done": done,
                    "info": info,
                    "screenshot_file": f"step_{step_idx + 1}_{stamp}.png",
                }
            )
            with open(out / "traj.jsonl", "a", encoding="utf-8") as f:
                f.write(json.dumps(response, ensure_ascii=False) + "\n")
            if done:
                break
        step_idx += 1


def run_like_agent_s3(
    agent: Any, env: OSWorldLikeEnv, example: dict[str, Any], max_steps: int, out: Path
) -> float:
    """Agent S3's osworld_setup/s3 lib_run_single flow."""
    runtime = _runtime_logger(out)
    try:
        agent.reset(runtime)
    except Exception:  # noqa: BLE001 - the runner's own fallback
        agent.reset()
    env.reset(task_config=example)
    obs = env._get_obs()
    (out / "step_0.png").write_bytes(obs["screenshot"])
    (out / "instruction.txt").write_text(example["instruction"], encoding="utf-8")
    _steps(agent, env, obs, example["instruction"], max_steps, out)
    result = env.evaluate()
    (out / "result.txt").write_text(f"{result}\n", encoding="utf-8")
    return result


def run_like_osworld(
    agent: Any, env: OSWorldLikeEnv, example: dict[str, Any], max_steps: int, out: Path
) -> float:
    """OSWorld's lib_run_single flow: the environment first, then the agent with the VM's IP."""
    runtime = _runtime_logger(out)
    env.reset(task_config=example)
    try:
        agent.reset(runtime, vm_ip=env.vm_ip)
    except Exception:  # noqa: BLE001 - the runner's own fallback
        agent.reset(vm_ip=env.vm_ip)
    obs = env._get_obs()
    _steps(agent, env, obs, example["instruction"], max_steps, out)
    result = env.evaluate()
    (out / "result.txt").write_text(f"{result}\n", encoding="utf-8")
    return result


def build_agent(server: ScriptedModelServer, env: OSWorldLikeEnv, screen: tuple[int, int]) -> Any:
    """What Agent S3's runner builds from its flags (--model_provider openai --model gpt-4o
    --ground_provider huggingface --ground_model ui-tars-1.5-7b --grounding_width ...)."""
    engine_params = {
        "engine_type": "openai",
        "model": "gpt-4o",
        "base_url": server.openai_base_url,
        "api_key": "sk-dropin-test-1234",
        "temperature": None,
    }
    engine_params_for_grounding = {
        "engine_type": "huggingface",
        "model": "ui-tars-1.5-7b",
        "base_url": server.openai_base_url,
        "api_key": "",
        "grounding_width": GROUNDING_FRAME[0],
        "grounding_height": GROUNDING_FRAME[1],
    }
    grounding_agent = OSWorldACI(
        env=env,
        platform="linux",
        engine_params_for_generation=engine_params,
        engine_params_for_grounding=engine_params_for_grounding,
        width=screen[0],
        height=screen[1],
    )
    return AgentS3(engine_params, grounding_agent, platform="linux")


def _in_frame(x: int, y: int, screen: tuple[int, int]) -> str:
    """A screen point as the grounding model writes it, in its own frame."""
    gx, gy = round(x * GROUNDING_FRAME[0] / screen[0]), round(y * GROUNDING_FRAME[1] / screen[1])
    return f"({gx}, {gy})"


@pytest.fixture
def bus(desktop: Any) -> None:
    """Bind AT-SPI in this process before ``apps`` notes the running processes."""
    AccessibilityTree().applications()


def _is_review(request: Any) -> bool:
    first = request.body["messages"][0]
    return first["role"] == "system" and "You review the progress" in str(first["content"])


def test_agent_s3_runner_edits_and_saves_a_file(
    bus: None, apps: Any, x11: Any, desktop: Any, tmp_path: Path
) -> None:
    doc = tmp_path / "list.txt"
    doc.write_text("Shopping list\n", encoding="utf-8")
    screen = x11.capture().image.size
    launched: dict[str, Any] = {}

    def start(task_config: dict[str, Any]) -> None:
        launched["window"] = apps(["mousepad", str(doc)], window="list.txt").window
        x11.activate("list.txt")

    def evaluate() -> float:
        wanted = "Shopping list\nmilk, eggs and crème fraîche"
        text = poll(lambda: wanted in doc.read_text(encoding="utf-8") and doc.read_text())
        return 1.0 if text and text.startswith(wanted) else 0.0

    env = OSWorldLikeEnv(desktop, x11, start, evaluate)

    def script(request: Any) -> Any:
        """The models' side: the grounding model finds the document's text area (the window's
        middle, in its frame); the reviewer approves; the worker follows its plan."""
        if request.body["model"] == "ui-tars-1.5-7b":
            window = launched["window"]
            return reply(
                _in_frame(window.x + window.width // 2, window.y + window.height // 2, screen)
            )
        if _is_review(request):
            return reply(REVIEW)
        return plan.pop(0)

    plan = [
        reply(act('agent.click("the text area of the document list.txt")')),
        reply(act('agent.hotkey(["ctrl", "end"])')),
        reply(act('agent.type(text="milk, eggs and crème fraîche")')),
        reply(act('agent.hotkey(["ctrl", "s"])')),
        reply(act("agent.done()")),
    ]
    out = tmp_path / "results" / "pyautogui" / "screenshot" / "gpt-4o" / "os" / "task-1"
    out.mkdir(parents=True)
    with ScriptedModelServer(script) as server:
        agent = build_agent(server, env, screen)
        example = {"id": "task-1", "instruction": "Add milk, eggs and crème fraîche to the list"}
        result = run_like_agent_s3(agent, env, example, max_steps=15, out=out)
    assert result == 1.0, (doc.read_text(encoding="utf-8"), env.executed)
    assert (out / "result.txt").read_text() == "1.0\n"
    assert len(env.executed) == 5, env.executed
    assert env.executed[-1] == "DONE"
    window = launched["window"]
    clicked = env.executed[0]
    assert "pyautogui.click(" in clicked
    x, y = (int(v) for v in clicked.split("pyautogui.click(")[1].split(",")[:2])
    assert abs(x - (window.x + window.width // 2)) <= 2, clicked
    assert abs(y - (window.y + window.height // 2)) <= 2, clicked
    # reflection is on, as in Agent S3: a review before every step after the first
    reviews = [r for r in server.requests if _is_review(r)]
    assert len(reviews) == 4
    lines = [json.loads(line) for line in (out / "traj.jsonl").read_text().splitlines()]
    assert [line["action"] for line in lines] == env.executed
    assert "step 1:" in (out / "runtime.log").read_text()


def test_osworld_lib_run_single_computes_in_galculator(
    bus: None, apps: Any, x11: Any, desktop: Any, tmp_path: Path
) -> None:
    screen = x11.capture().image.size

    def start(task_config: dict[str, Any]) -> None:
        apps(["galculator"], window="galculator")
        x11.activate("galculator")
        x11.clipboard_set("")

    def evaluate() -> float:
        return 1.0 if poll(lambda: x11.clipboard_get().strip() == "63") else 0.0

    def button(label: str) -> tuple[int, int]:
        found = [
            e
            for e in AccessibilityTree().elements()
            if e.app.casefold() == "galculator" and e.name == label and "button" in e.role
        ]
        assert found, f"galculator has no {label!r} button in the accessibility tree"
        return found[0].box.center.x, found[0].box.center.y

    env = OSWorldLikeEnv(desktop, x11, start, evaluate)
    asked: list[str] = []
    nine: list[tuple[int, int]] = []

    def literal_nine(request: Any) -> Any:
        """The worker writes the 9 button's point itself, in the pixels of the image it saw."""
        nine.append(button("9"))
        _, data = request.images()[-1]
        with Image.open(io.BytesIO(data)) as seen:
            sx, sy = seen.width / screen[0], seen.height / screen[1]
        x, y = round(nine[0][0] * sx), round(nine[0][1] * sy)
        return reply(act(f'agent.click("({x}, {y})")'))

    def script(request: Any) -> Any:
        if request.body["model"] == "ui-tars-1.5-7b":
            query = str(request.body["messages"])
            label = next(name for name in ("AC", "7", "9") if f"the {name} button" in query)
            asked.append(label)
            return reply(_in_frame(*button(label), screen))
        if _is_review(request):
            return reply(REVIEW)
        step = plan.pop(0)
        return step(request) if callable(step) else step

    plan: list[Any] = [
        reply(act('agent.click("the AC button")')),
        reply(act('agent.click("the 7 button")')),
        reply(act('agent.type(text="*")')),
        literal_nine,  # a literal point: used as is, no grounding call
        reply(act('agent.type(text="=")')),
        reply(act('agent.hotkey(["ctrl", "c"])')),
        reply(act("agent.done()")),
    ]
    out = tmp_path / "results" / "task-2"
    out.mkdir(parents=True)
    with ScriptedModelServer(script) as server:
        agent = build_agent(server, env, screen)
        example = {"id": "task-2", "instruction": "Compute 7 times 9 and copy the result"}
        result = run_like_osworld(agent, env, example, max_steps=15, out=out)
    assert result == 1.0, (x11.clipboard_get(), env.executed)
    assert asked == ["AC", "7"]  # the literal point needed no grounding model
    assert len(server.requests) == 2 + 7 + 6  # groundings, worker steps, reviews
    assert f"pyautogui.click({nine[0][0]}, {nine[0][1]}," in env.executed[3], env.executed
    assert env.executed[-1] == "DONE"
