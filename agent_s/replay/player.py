"""Replaying a recorded run on the live desktop, re-grounding every target on the screen as it
is now; with ``heal``, the agent takes over where the replay diverges.

    result = replay("runs/run-20260101-120000-4242")  # ReplayResult; this session's desktop
    result.status          # "replayed", "diverged", "healed", "heal_failed" or "stopped"
    result.divergence      # None, or the step and why it could not be replayed
    result.run             # the new run's RunResult (its folder: result.run.trajectory_dir)

What is replayed is a ``Script``: the recorded run's steps that did something (``script_of``),
each with its typed action, the window that was active when it was recorded, the screen's size,
and, for a target the model gave as coordinates (native grounding, a literal ``(x, y)``), the
screen point it was carried out at. Each step goes through the agent's own step
(``Agent.step(given=...)``): its targets are grounded again by the same grounding chain the
agent uses (accessibility, OCR, a grounding model when configured; never the recorded pixels),
the safety gate judges it as it would judge the model's action, and it is recorded in a new run
folder like any step. A step the model gave as coordinates is carried out at its recorded
screen point only when the screen has the recorded size; a set-of-marks step (``mark=17``) is
found again by the mark's text. Nothing asks the model unless the replay diverges and ``heal``
is on (or a recorded ``call_code_agent`` step needs the code agent's model).

After typing, the replay waits (at most ``wait_seconds``) until the focused field shows the
text typed, when it can be read: the application may still be taking it. Typing that ends with
Enter is replayed as the text, that wait, then Enter (two steps in the new run): a dialog still
taking the text (a file chooser reading the folder typed) drops an Enter sent at once.

Divergence: before an input step (click, type, keys, scroll, drag) the replay waits, at most
``wait_seconds``, for the recorded window to be the active one (titles compared without the
``*`` of a modified document, a path by its file name, digits as one: "Untitled 2" is
"Untitled 1"); a target that is
not found, an action the safety gate refuses or that fails, a screen of another size for
recorded coordinates, or the postcondition failing after ``done``: each stops the replay with a
``Divergence`` naming the step and why. With ``heal`` and a model, the rest of the task
goes to the agent in the same run: it is given a note of what was replayed and where and why it
diverged (a ``save_to_knowledge`` step, shown to the model on every later step), sees the
replayed steps in its history, and carries on until ``done``; the repaired run is one folder
that can itself be replayed.

Step numbers are the new run's everywhere (its per-step lines, its trajectory and report, the
divergence, the counts): a recorded step left out (``Script.skipped``: a failed step, a
question) takes no number, and typing that ended with Enter takes two. Where the recorded
number differs, the divergence says it too (``recorded as step 7``).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from typing_extensions import Unpack

from agent_s.actions import (
    Action,
    CallCodeAgentAction,
    DoneAction,
    FailAction,
    HighlightTextSpanAction,
    HotkeyAction,
    OpenAction,
    SaveToKnowledgeAction,
    SwitchApplicationsAction,
    TypeAction,
    WaitAction,
)
from agent_s.actions.models import ActionModel
from agent_s.desktop.base import DesktopBackend, WindowInfo
from agent_s.desktop.ops import Point
from agent_s.desktop.watch import FieldReader, await_typed
from agent_s.errors import AgentSError, describe_error
from agent_s.grounding import Grounder, GroundingChain, GroundingResult, Observation
from agent_s.grounding.locate import build_grounder
from agent_s.models.factory import build_provider
from agent_s.record.result import (
    Cause,
    Ending,
    Postcondition,
    RunResult,
    RunStatus,
    error_ending,
    final_ending,
)
from agent_s.record.step import Step
from agent_s.replay.script import (
    Script,
    ScriptStep,
    parse_action_data,
    script_of,
    with_fields,
)
from agent_s.safety.gate import Approver
from agent_s.settings.config import AgentConfig, GroundingConfig, ModelConfig

if TYPE_CHECKING:
    from agent_s.loop.agent import Agent

#: How long a step waits for its recorded window to be the active one.
WAIT_SECONDS = 10.0
_POLL = 0.1
#: The model configured when replaying without one: never called (see ``_offline_model``).
_NO_MODEL = "none (replay)"

DivergenceKind = Literal[
    "window", "not_found", "refused", "failed", "screen_size", "check", "needs_model", "coordinates"
]
ReplayStatus = Literal["replayed", "diverged", "healed", "heal_failed", "stopped"]


@dataclass(frozen=True)
class Divergence:
    """Where and why a replay stopped. ``step``: the new run's step number, the one its
    per-step lines, trajectory and report show (the step that failed, or for one that was not
    carried out, the number it would have had); ``recorded``: its number in the recorded run,
    which differs where the recording had steps left out (``Script.skipped``) or typing that
    ended with Enter (replayed as two steps); ``action``: the recorded action."""

    step: int
    action: str
    kind: DivergenceKind
    reason: str
    recorded: int

    def describe(self) -> str:
        where = f"; recorded as step {self.recorded}" if self.recorded != self.step else ""
        return f"step {self.step} ({self.action}{where}): {self.reason}"

    def to_json(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "recorded_step": self.recorded,
            "action": self.action,
            "kind": self.kind,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class ReplayResult:
    """How a replay went. ``run``: the new run's result (its folder, steps, model calls);
    ``replayed``: how many of the new run's steps carried out recorded steps (its steps 1 to
    ``replayed``; more than ``recorded`` where typing that ended with Enter was replayed as
    two steps); ``recorded``: how many recorded steps they carried out; ``healed``: the steps
    the agent took after the divergence."""

    status: ReplayStatus
    source: str
    run: RunResult
    replayed: int
    divergence: Divergence | None = None
    healed: int = 0
    steps: tuple[Step, ...] = field(default=(), repr=False)
    recorded: int = 0

    @property
    def ok(self) -> bool:
        return self.status in ("replayed", "healed") and self.run.succeeded

    @property
    def model_calls(self) -> int:
        return self.run.model_calls

    @property
    def seconds(self) -> float:
        return self.run.timings.total

    @property
    def trajectory_dir(self) -> Path | None:
        return self.run.trajectory_dir

    @property
    def exit_code(self) -> int:
        """0 replayed (or healed) and succeeded; 1 diverged or failed; the run's code for a
        limit, a question or an interruption."""
        if self.ok:
            return 0
        return self.run.exit_code or 1

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "source": self.source,
            "replayed": self.replayed,
            "recorded": self.recorded,
            "healed": self.healed,
            "divergence": self.divergence.to_json() if self.divergence else None,
            "result": self.run.to_json(),
        }


# -- replaying ------------------------------------------------------------------------------------


def _offline_model() -> ModelConfig:
    """The model of a replay that has none: an address nothing listens on, never called (a step
    that would need the model is a divergence, ``needs_model``, before it runs)."""
    return ModelConfig("openai-compatible", _NO_MODEL, "http://127.0.0.1:9/v1", None)


class _PinnedChain(GroundingChain):
    """The agent's grounding chain, answering first the points a replay pins (recorded
    coordinates, carried out as recorded)."""

    def __init__(self, inner: Grounder) -> None:
        members = inner.grounders if isinstance(inner, GroundingChain) else (inner,)
        super().__init__(members, min_confidence=getattr(inner, "min_confidence", 0.7))
        self.name = inner.name
        self.pins: dict[str, tuple[Point, str]] = {}

    def ground(self, expression: str, observation: Observation) -> GroundingResult:
        pinned = self.pins.get(expression)
        if pinned is None:
            return super().ground(expression, observation)
        point, evidence = pinned
        return GroundingResult(expression, point, "recorded", 1.0, evidence)


def _grounder(grounding: GroundingConfig) -> _PinnedChain:
    """The grounding chain the agent would build for ``grounding`` (a grounding model when one
    is configured); native grounding has no descriptions to ground: ``auto`` grounds them."""
    model = None
    settings = grounding.settings()
    if settings is not None and grounding.mode in ("model", "auto"):
        model = build_provider(settings)
    mode = "auto" if grounding.mode == "native" else grounding.mode
    return _PinnedChain(build_grounder(mode, model=model))


_DIGITS = re.compile(r"\d+")
_SPACE = re.compile(r"\s+")
_FOLDERS = re.compile(r"(?<!\S)~?/(?:[^\s/]+/)*(?=[^\s/])")  # the folders of a path in a title


def window_key(text: str) -> str:
    """A window's ``"App: title"`` as compared: case folded, without a modified document's
    ``*``, a path by its last part (``/home/ann/todo.txt`` is ``todo.txt``: another HOME,
    another machine), runs of digits as one ``#``, white space collapsed."""
    text = _FOLDERS.sub("", text.replace("*", " ")).casefold()
    return _SPACE.sub(" ", _DIGITS.sub("#", text)).strip()


def _window_name(window: WindowInfo | None) -> str | None:
    return f"{window.app}: {window.title}" if window is not None else None


def _answers(action: ActionModel) -> bool:
    """A ``done`` that gave an answer."""
    return isinstance(action, DoneAction) and bool(action.answer)


def _acts_on_a_window(action: ActionModel) -> bool:
    """Input that lands in the active window (not ``open``, a wait, notes or the end)."""
    quiet = (
        OpenAction,
        SwitchApplicationsAction,
        WaitAction,
        SaveToKnowledgeAction,
        DoneAction,
        FailAction,
        CallCodeAgentAction,
    )
    return not isinstance(action, quiet)


@dataclass
class Progress:
    """How far a replay got: the new run's steps, how many recorded steps were carried out and
    by how many of the new run's steps (the first ``replayed``)."""

    steps: list[Step] = field(default_factory=list)
    recorded: int = 0
    replayed: int = 0

    def next_step(self) -> int:
        """The new run's number for its next step."""
        return self.steps[-1].step + 1 if self.steps else 1


class ReplayOptions(TypedDict, total=False):
    """How a replay goes: the keyword arguments of ``Replayer``, ``replay`` and ``Workflow.run``.

    ``model``: only for ``heal`` (and recorded code-agent steps); without one (the default)
    nothing can call a model. ``settings``: the agent's (default ``AgentConfig()``);
    ``settings.record_dir`` is where the new run folder goes (None: not recorded).
    ``grounding``: default ``GroundingConfig()``. ``heal``: hand the rest of the task to the
    agent where the replay diverges (default off; needs ``model``). ``approver``: asked about
    what the safety gate holds (default none). ``wait_seconds``: how long a step waits for its
    recorded window (default ``WAIT_SECONDS``). ``on_step``, ``on_divergence``: called with
    each step of the new run, and with the divergence."""

    model: ModelConfig | None
    settings: AgentConfig | None
    grounding: GroundingConfig | None
    heal: bool
    approver: Approver | None
    wait_seconds: float
    on_step: Callable[[Step], None] | None
    on_divergence: Callable[[Divergence], None] | None


class Player:
    """Carries out a ``Script``'s steps through ``agent``'s own step, up to the first divergence
    (see the module docstring): ``Replayer`` with an agent of its own, ``agent_s.replay.reuse``
    with the agent of a run, before its model is asked. ``grounder``: the agent's grounding
    chain when it answers recorded points (``_PinnedChain``); None: a step the model gave as
    coordinates is a divergence (it is not grounded again). ``has_model``: whether a
    code-agent step can be carried out."""

    def __init__(
        self,
        agent: Agent,
        *,
        grounder: _PinnedChain | None = None,
        wait_seconds: float = WAIT_SECONDS,
        has_model: bool = True,
    ) -> None:
        self.agent, self.grounder = agent, grounder
        self.wait_seconds, self.has_model = wait_seconds, has_model
        self._fields = FieldReader()

    @property
    def backend(self) -> DesktopBackend:
        """The desktop replayed on: the agent's (``Agent.backend``)."""
        return self.agent.backend

    def play(
        self, script: Script, progress: Progress, postcondition: Postcondition | None
    ) -> tuple[Ending | None, Divergence | None]:
        """Carry out ``script``'s steps in the agent's current task, counting them in
        ``progress``: (how the run ends, None) when a recorded ``done`` or ``fail`` ended it;
        (None, the divergence) where one stopped it; (None, None) when every step was carried
        out and none ended the task."""
        for planned in script.steps:
            if script.read_answer and _answers(planned.action):
                return None, self._answer_read_again(planned, progress.next_step())
            divergence = self._before(planned, progress.next_step())
            if divergence is None:
                for step in self._carry_out(planned):
                    progress.steps.append(step)
                    divergence = self._after(planned, step)
                    if divergence is not None:
                        break
            if divergence is not None:
                return None, divergence
            progress.recorded += 1
            progress.replayed = len(progress.steps)
            if planned.action.is_terminal:
                ending = final_ending(planned.action, postcondition)
                if ending.cause != "postcondition_failed":
                    return ending, None
                reason = f"the check after done failed: {ending.reason}"
                return None, _diverged(planned, progress.steps[-1].step, "check", reason)
        return None, None

    # -- one step --

    def _answer_read_again(self, planned: ScriptStep, number: int) -> Divergence:
        """A recorded ``done`` that answered, where the answer must be read again
        (``Script.read_answer``): it is what the recorded run's screen showed."""
        reason = (
            "the recorded run answered from its screen: the answer is read from this screen, "
            "which this run's values made"
        )
        if not self.has_model:
            reason += " (give a model and --heal for it to be read)"
        # the action as the model would see it, without the old answer it might repeat
        return Divergence(number, "agent.done(answer=...)", "needs_model", reason, planned.step)

    def _before(self, planned: ScriptStep, number: int) -> Divergence | None:
        """What stops the step (the new run's step ``number``) before it runs: it needs the
        model, its recorded coordinates are for another screen size, or its window is not the
        active one."""
        action = planned.action
        if isinstance(action, CallCodeAgentAction) and not self.has_model:
            reason = (
                "the code agent's step needs the model: replay with --model (its code is "
                "written again by the model) or --heal"
            )
            return _diverged(planned, number, "needs_model", reason)
        if any(p is not None for p in planned.pinned):
            if self.grounder is None:
                reason = (
                    "the model gave this step as screen coordinates, which only a replay "
                    "(agent-s replay, agent-s workflow run) carries out again"
                )
                return _diverged(planned, number, "coordinates", reason)
            if isinstance(action, HighlightTextSpanAction):
                reason = "a text span given as coordinates cannot be found again"
                return _diverged(planned, number, "screen_size", reason)
            size = self.backend.capture().image.size
            if planned.screen != (0, 0) and tuple(size) != tuple(planned.screen):
                reason = (
                    f"the model gave coordinates for a {planned.screen[0]}x{planned.screen[1]} "
                    f"screen, this one is {size[0]}x{size[1]}: they cannot be replayed"
                )
                return _diverged(planned, number, "screen_size", reason)
        if planned.window is not None and _acts_on_a_window(action):
            return self._await_window(planned, planned.window, number)
        return None

    def _await_window(self, planned: ScriptStep, window: str, number: int) -> Divergence | None:
        """Wait (at most ``wait_seconds``) for the recorded ``window`` to be the active one."""
        wanted = window_key(window)
        deadline = time.monotonic() + self.wait_seconds
        now: str | None = None
        while True:
            try:
                windows = self.backend.windows()
            except AgentSError:
                return None  # the window list is unavailable: nothing to compare with
            now = _window_name(next((w for w in windows if w.active), None))
            if now is not None and window_key(now) == wanted:
                return None
            if time.monotonic() >= deadline:
                break
            time.sleep(_POLL)
        shown = repr(now) if now is not None else "no window"
        reason = (
            f"it was recorded in the window {window!r}; after {self.wait_seconds:g} s "
            f"the active window is {shown}"
        )
        return _diverged(planned, number, "window", reason)

    def _carry_out(self, planned: ScriptStep) -> Iterator[Step]:
        """The step through the agent's own step: grounded again, judged, executed, recorded.
        Typing that ends with Enter is two steps: the text, then (once the focused field shows
        it, when it can be read: ``_await_typed``) Enter, as a step of its own; a dialog still
        taking the text, such as a file chooser reading the folder typed, drops an Enter that
        comes at once."""
        action = self._pinned(planned)
        if isinstance(action, TypeAction) and action.text and action.enter:
            typed = self.agent.step(given=with_fields(action, {"enter": False}), by="replay")
            yield typed
            if typed.outcome != "ok":
                return
            self._await_typed(action.text)
            yield self.agent.step(given=HotkeyAction(keys=("enter",)), by="replay")
            return
        step = self.agent.step(given=action, by="replay")
        yield step
        if step.outcome == "ok" and isinstance(action, TypeAction) and action.text:
            self._await_typed(action.text)

    def _pinned(self, planned: ScriptStep) -> Action:
        """The step's action, each target given as recorded coordinates pinned (see
        ``_PinnedChain``)."""
        action = planned.action
        if self.grounder is None:
            return action
        self.grounder.pins.clear()
        if any(p is not None for p in planned.pinned):
            names = _target_fields(action)
            updates: dict[str, Any] = {}
            for name, point in zip(names, planned.pinned, strict=False):
                if point is None:
                    continue
                expression = f"recorded point {point[0]},{point[1]} of step {planned.step}"
                evidence = (
                    f"the screen point recorded at step {planned.step} (the model's coordinates; "
                    "the screen has the recorded size)"
                )
                self.grounder.pins[expression] = (Point(point[0], point[1]), evidence)
                updates[name] = expression
            action = with_fields(action, updates)
        return action

    def _after(self, planned: ScriptStep, step: Step) -> Divergence | None:
        if step.outcome in ("ok", "terminal"):
            return None
        missing = next((g for g in step.grounding if g.point is None), None)
        if missing is not None:
            return _diverged(planned, step.step, "not_found", step.detail)
        safety = step.safety or {}
        if safety and not safety.get("allowed", True):
            return _diverged(planned, step.step, "refused", step.detail)
        return _diverged(planned, step.step, "failed", step.detail or step.outcome)

    def _await_typed(self, text: str) -> None:
        """After typing, wait (at most ``wait_seconds``) until the focused field shows the
        end of the text typed (``agent_s.desktop.watch.await_typed``): the next step must not
        run ahead of the application (a model's thinking time gave it that time)."""
        await_typed(self._fields, self.backend.windows, text, self.wait_seconds, _POLL)

    def hand_over(
        self, script: Script, progress: Progress, divergence: Divergence, what: str
    ) -> None:
        """Tell the agent's model, in a step of its own (``save_to_knowledge``, shown on every
        later step), what ``what`` (``a replay of a recorded run``) carried out and where and
        why it diverged, for it to do the rest. The note names the steps by this run's
        numbers, as the model's history shows them."""
        if progress.replayed:
            recorded = ", ".join(str(s.step) for s in script.steps[: progress.recorded])
            done = (
                f"steps 1 to {progress.replayed} of this run carried out its steps {recorded} again"
            )
        else:
            done = "none of its steps could be carried out again"
        note = (
            f"This task is {what}: {done}; then the replay diverged at "
            f"{divergence.describe()}. Do the rest of the task from the screen as it is now; "
            "do not repeat what is already done."
        )
        given = SaveToKnowledgeAction(text=(note[:1000],))
        progress.steps.append(self.agent.step(given=given, by="replay"))


class Replayer(Player):
    """Carries out a ``Script`` through an agent of its own (see the module docstring).
    ``backend``: the desktop; None, as for ``Agent``: this session's (``Agent.backend``); the
    rest: ``ReplayOptions``."""

    def __init__(
        self, backend: DesktopBackend | None = None, **options: Unpack[ReplayOptions]
    ) -> None:
        unknown = sorted(set(options) - ReplayOptions.__optional_keys__)
        if unknown:  # as a function with these keyword parameters would say
            raise TypeError(f"unexpected keyword arguments: {', '.join(unknown)}")
        from agent_s.loop.agent import Agent

        model, heal = options.get("model"), options.get("heal", False)
        grounding, settings = options.get("grounding"), options.get("settings")
        if heal and model is None:
            raise ValueError(
                "--heal needs a model to hand the rest of the task to: pass --model (and "
                "--provider, --base-url), or set AGENT_S_MODEL"
            )
        self.heal = heal
        self.on_divergence = options.get("on_divergence")
        self.grounding = grounding or GroundingConfig()
        self.settings = settings or AgentConfig()
        grounder = _grounder(self.grounding)
        agent = Agent(
            model or _offline_model(),
            settings=self.settings,
            grounding=self.grounding,
            backend=backend,
            grounder=grounder,
            approver=options.get("approver"),
            on_step=options.get("on_step"),
        )
        wait = options.get("wait_seconds", WAIT_SECONDS)
        super().__init__(agent, grounder=grounder, wait_seconds=wait, has_model=model is not None)

    def run(self, script: Script, postcondition: Postcondition | None = None) -> ReplayResult:
        """Replay ``script``; with ``heal``, the agent finishes what the replay could not."""
        agent = self.agent
        agent.start(script.task)
        progress = Progress()
        divergence: Divergence | None = None
        try:
            ending, divergence = self.play(script, progress, postcondition)
            if ending is not None:
                return self._done(script, agent.end(ending), progress)
            if divergence is None:
                reason = "every recorded step was replayed; the recording did not end with done"
                run = agent.end(Ending(RunStatus.MAX_STEPS, "max_steps", reason))
                return self._done(script, run, progress)
            if self.on_divergence is not None:
                self.on_divergence(divergence)
            if not self.heal:
                reason = f"the replay diverged at {divergence.describe()}"
                cause: Cause = "refused" if divergence.kind == "refused" else "replay_diverged"
                run = agent.end(Ending(RunStatus.FAILED, cause, reason))
                return self._done(script, run, progress, divergence)
            return self._heal(script, progress, divergence, postcondition)
        except BaseException as err:
            stopped = error_ending(err)
            if stopped is None:
                if isinstance(err, Exception):
                    agent.end(Ending(RunStatus.ERROR, "internal_error", describe_error(err)))
                raise
            run = agent.end(stopped)
            result = self._done(script, run, progress, divergence)
            return replace(result, status="stopped")  # a limit, Ctrl-C, the model or desktop

    def _done(
        self,
        script: Script,
        run: RunResult,
        progress: Progress,
        divergence: Divergence | None = None,
        healed: int = 0,
    ) -> ReplayResult:
        if divergence is None:
            status: ReplayStatus = "replayed"
        elif healed or self.heal:
            status = "healed" if run.succeeded else "heal_failed"
        else:
            status = "diverged"
        return ReplayResult(
            status,
            script.source,
            run,
            progress.replayed,
            divergence,
            healed,
            tuple(progress.steps),
            progress.recorded,
        )

    # -- healing --

    def _heal(
        self,
        script: Script,
        progress: Progress,
        divergence: Divergence,
        postcondition: Postcondition | None,
    ) -> ReplayResult:
        """The rest of the task to the agent, in the same run (see the module docstring)."""
        agent = self.agent
        self.hand_over(script, progress, divergence, "a replay of a recorded run")
        steps = progress.steps
        healed = 0
        limit = self.settings.max_steps
        while healed < limit:
            step = agent.step()
            steps.append(step)
            healed += 1
            if step.action is not None and step.terminal is not None:
                run = agent.end(final_ending(step.action, postcondition))
                return self._done(script, run, progress, divergence, healed)
        reason = f"the agent did not finish the rest of the task in {limit} steps"
        run = agent.end(Ending(RunStatus.MAX_STEPS, "max_steps", reason))
        return self._done(script, run, progress, divergence, healed)


def _diverged(planned: ScriptStep, number: int, kind: DivergenceKind, reason: str) -> Divergence:
    """The divergence at the new run's step ``number``, which was to carry out ``planned``."""
    return Divergence(number, planned.text, kind, reason, planned.step)


def _target_fields(action: ActionModel) -> list[str]:
    """The fields holding the action's targets, in ``targets()`` order."""
    return [name for _, name in action.grounded if getattr(action, name) is not None]


def replay(
    run_dir: Path | str | Script,
    backend: DesktopBackend | None = None,
    *,
    postcondition: Postcondition | None = None,
    **options: Unpack[ReplayOptions],
) -> ReplayResult:
    """Replay the run recorded in ``run_dir`` (or a ``Script``) on ``backend`` (None: this
    session's desktop, as for ``Agent``), as ``options`` say (``ReplayOptions``: the model, only
    to ``heal``; the settings, whose ``record_dir`` is where the new run folder goes)."""
    script = run_dir if isinstance(run_dir, Script) else script_of(run_dir)
    return Replayer(backend, **options).run(script, postcondition)


__all__ = [
    "WAIT_SECONDS",
    "Divergence",
    "DivergenceKind",
    "Player",
    "Progress",
    "ReplayOptions",
    "ReplayResult",
    "ReplayStatus",
    "Replayer",
    "Script",
    "ScriptStep",
    "parse_action_data",
    "replay",
    "script_of",
    "window_key",
]
