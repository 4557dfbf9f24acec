"""The agent as the planning manager sees it (``agent_s.planning.manager.PlanHost``): a look
at the screen, model calls, subtasks worked by the loop or handed to the code agent, commands
run behind the safety gate, and the plan's events recorded."""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping, Sequence
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_s.actions import CallCodeAgentAction
from agent_s.coding.agent import runner_settings, workdir_for
from agent_s.images import EncodedImage, encode_screenshot
from agent_s.loop.observe import capture
from agent_s.models.types import Message, ModelReply
from agent_s.planning.manager import contained_command
from agent_s.prompting import Platform, today_line
from agent_s.record.step import Step
from agent_s.safety.effects import subject_for_code

if TYPE_CHECKING:
    from agent_s.loop.agent import Agent


class PlanHost:
    """The agent as the manager sees it (``agent_s.planning.manager.PlanHost``)."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent

    @property
    def task(self) -> str:
        return self.agent._task

    @property
    def code_enabled(self) -> bool:
        return self.agent.settings.code.enabled

    @property
    def steps_left(self) -> int:
        return self.agent.settings.max_steps - len(self.agent._steps)

    def look(self) -> tuple[EncodedImage, Platform]:
        agent = self.agent
        observation = capture(agent.backend, agent.settings.monitor)
        sent = encode_screenshot(observation.screenshot.image, agent._profile.image_spec)
        agent._requests.system(observation, True, sent, desktop=agent._desktop_name())
        return sent, agent._requests.platform

    def today(self) -> str:
        day = self.agent._requests.today
        return today_line(day if day is not None else date.today())

    def ask(self, messages: Sequence[Message], purpose: str) -> ModelReply:
        self.agent._points.before_step()
        self.agent._calls.check_time()
        return self.agent._calls.call(messages, purpose)

    def _focus(self, text: str, subtask: str) -> None:
        agent = self.agent
        agent._focus, agent._subtask, agent._history = text, subtask, []

    def work(self, text: str, subtask: str, limit: int) -> Step | None:
        self._focus(text, subtask)
        for _ in range(limit):
            step = self.agent.step()
            if step.action is not None and step.terminal is not None:
                return step
        return None

    def hand_to_code(self, text: str, subtask: str) -> Step:
        self._focus(text, subtask)
        self.agent._calls.check_time()
        return self.agent.step(given=CallCodeAgentAction(task=text))

    def windows(self) -> Sequence[str]:
        return [window.title for window in self.agent.backend.windows()]

    def _env(self) -> Mapping[str, str] | None:
        backend = self.agent._backend
        return backend.env if backend is not None else None

    def home(self) -> Path:
        return Path((self._env() or os.environ).get("HOME") or Path.home())

    def run_command(self, argv: Sequence[str]) -> tuple[bool, str]:
        agent = self.agent
        code = shlex.join(argv)
        decision = agent._gate.check(
            subject_for_code("bash", code), step=len(agent._steps), ask=True
        )
        if not decision.allowed:
            return False, f"not run: {decision.message}"
        env = self._env()
        settings = agent.settings.code
        secrets = [s for s in agent._secrets if s]
        runner = runner_settings(settings, workdir_for(settings, env), env, secrets)
        return contained_command(argv, runner)

    def event(self, kind: str, data: dict[str, Any]) -> None:
        agent = self.agent
        agent._recording.event({"event": kind, "after_step": len(agent._steps), **data})
        if agent.on_plan is not None:
            agent.on_plan(kind, data)

    def recall(self, query: str) -> str:
        return self.agent._recall("planner", query, "plan")


__all__ = ["PlanHost"]
