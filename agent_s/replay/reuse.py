"""A repeated task for free: a run whose task matches a stored, verified workflow replays it
first, every target grounded again, and asks the model only from the first divergence.

    agent = Agent(model, reuse=Reuse(MemoryStore()))   # agent-s run does this (--reuse auto)
    result = agent.run("In the terminal, write the text 'good night' into the file ~/b.txt")
    result.reused   # {"workflow": "write-note", "replayed": [1, 2, 3], "model": [], ...}

A task matches a workflow when it is the workflow's task with other values where its parameters
stood (``template``): the literal text between the values is the same (white space aside), each
value is of its parameter's kind (a number for ``number_N``, one word or path for ``file_N``,
text without quotes for ``text_N``), and a value given twice is the same both times; of several,
the one with the fewest parameters, then the newest, is reused. Only a workflow the store holds
as verified is reused: saved from a run whose check of the user's (``--check``) or an
evaluator's passed in the process that saved it, and sealed by the store's key
(``agent_s.guards.trust``). A workflow that matches but is unverified (saved from a run folder,
edited in the file) or tampered with (its body no longer matches its hash) is never reused: the
run says so, and the model does the task. When no workflow matches, a verified skill that is a
whole run's action sequence (``agent_s.memory.learn`` keeps one from each run whose check
passed; ``Workflow.from_skill``) is reused the same way, the newest first: each step waits
for the window its run acted in (the skill keeps them) and grounds its target again, and
where a window never comes or a target is not found the model takes over. ``workflows``
(``--reuse workflows``, ``Reuse(skills=False)``) reuses only the workflows saved by name.

The reuse is a collaborator of the loop (``agent_s.loop.collaborators``, the ``lead`` point):
as ``Agent.run`` begins, the workflow's script, with this task's values, is carried out through
the agent's own steps (``agent_s.replay.player.Player``: waits for each recorded window,
grounds each target again, the safety gate judges each action), each recorded with
``chosen_by`` ``replay``. Where it diverges (a window that never came, a target not found, a
refusal, a failed check after ``done``), the model is told what was replayed and where it
stopped (a ``save_to_knowledge`` step) and carries on in the same run, its steps
``chosen_by`` ``model``. A recorded ``done`` whose check passes ends the run with no model call; one
that gave an answer is not replayed (the answer was read from the recorded run's screen): the
model is asked for it, from the screen this run's values made.
The result says what was reused (``RunResult.reused``).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from agent_s.desktop.base import desktop_home
from agent_s.loop.collaborators import Collaborator
from agent_s.memory import MemoryStore, TamperedEntry
from agent_s.record.result import Ending, Postcondition
from agent_s.record.step import Step
from agent_s.replay.player import WAIT_SECONDS, Player, Progress
from agent_s.replay.workflow import Workflow

if TYPE_CHECKING:
    from agent_s.loop.agent import Agent

#: What a value of each kind of parameter may be (a value is checked again when put in place).
_KINDS = {
    "number": r"-?\d+(?:\.\d+)?",
    "file": r"[^\s'\"`\\]+?",
    "text": r"[^\n'\"`\\]+?",
}
_SPACE = re.compile(r"\s+")
REUSE_MODES = ("auto", "workflows", "off")  # --reuse
_OFF = "--reuse off (Agent(reuse=None)) turns it off"


def _kind(name: str) -> str:
    kind = name.rsplit("_", 1)[0]
    return kind if kind in _KINDS else "text"


def template(flow: Workflow) -> re.Pattern[str]:
    """The pattern of the tasks ``flow`` does: its task with a named group where each
    parameter's literal stands (whole tokens, the longest literal first), white space as any
    run of white space. Each value but the last, with the text after it, is matched once (an
    atomic group: the value ends where that text first follows it), so a long task is
    matched in time linear in its length: plain lazy groups backtrack through every split, a
    task of a few thousand characters taking minutes against four parameters."""
    task = flow.task
    spans: list[tuple[int, int, str]] = []
    for name, literal in sorted(flow.parameters.items(), key=lambda p: -len(p[1])):
        token = rf"(?<![\w.\-]){re.escape(literal)}(?!\w|[.\-]\w)"
        for found in re.finditer(token, task):
            if not any(found.start() < end and start < found.end() for start, end, _ in spans):
                spans.append((found.start(), found.end(), name))
    spans.sort()
    parts = [_literal(task[: spans[0][0]] if spans else task)]
    seen: set[str] = set()
    for index, (_, end, name) in enumerate(spans):
        value = f"(?P={name})" if name in seen else f"(?P<{name}>{_KINDS[_kind(name)]})"
        seen.add(name)
        after = _literal(task[end : spans[index + 1][0] if index + 1 < len(spans) else None])
        if index + 1 < len(spans):  # atomic, as Python 3.10's re writes it: a lookahead's
            atom = f"_atom{index}"  # match, taken whole by a backreference
            parts.append(f"(?=(?P<{atom}>{value}{after}))(?P={atom})")
        else:
            parts.append(value + after)
    return re.compile("".join(parts))


def _literal(text: str) -> str:
    return r"\s+".join(re.escape(word) for word in _SPACE.split(text))


def values_for(flow: Workflow, task: str) -> dict[str, str] | None:
    """The values ``task`` gives ``flow``'s parameters when it is the workflow's task with
    other values (see the module docstring); None when it is another task. Values the
    workflow would refuse (a quote, a control character) are no match either."""
    found = template(flow).fullmatch(task.strip())
    if found is None:
        return None
    values = {
        name: value
        for name, value in found.groupdict().items()
        if value is not None and not name.startswith("_atom")  # the template's own groups
    }
    try:
        flow.with_values(values)
    except ValueError:
        return None
    return values


@dataclass(frozen=True)
class Match:
    """A stored workflow a task matches, with the task's values for its parameters."""

    flow: Workflow
    values: Mapping[str, str]


def find(
    task: str, store: MemoryStore, say: Callable[[str], None], *, skills: bool = True
) -> Match | None:
    """The verified workflow ``task`` matches (when several do, the one with the fewest
    parameters, then the newest), else with
    ``skills`` the newest verified skill of a whole run it matches (``Workflow.from_skill``),
    or None. A match that cannot be reused (unverified, tampered with) is said with ``say``."""
    flows: list[Match] = []
    for name in store.workflow_names():
        try:
            flow = Workflow.load(name, store)
        except TamperedEntry as err:
            say(f"not reused: {err}")
            continue
        match = _verified(flow, task, say)
        if match is not None:
            flows.append(match)
    if flows or not skills:
        # the most particular (fewest values to fill in), then the newest
        return max(flows, key=lambda m: (-len(m.values), m.flow.provenance.created), default=None)
    for entry_id in store.entry_ids(["skill"]):  # newest first
        try:
            skill = Workflow.from_skill(store.get(entry_id))
        except TamperedEntry:  # changed in the file: never used (agent-s memory list says so)
            continue
        match = _verified(skill, task, say) if skill is not None else None
        if match is not None:
            return match
    return None


def _verified(flow: Workflow, task: str, say: Callable[[str], None]) -> Match | None:
    """``flow`` with ``task``'s values when the task matches it and it is verified; a match
    that is not verified is said."""
    values = values_for(flow, task)
    if values is None:
        return None
    if not flow.provenance.verified:
        say(
            f"{_what(flow)} matches this task but is not verified (checked by "
            f"{flow.provenance.checked_by}): not reused; keep one whose check passed with "
            "agent-s run --check COMMAND --save-workflow NAME"
        )
        return None
    return Match(flow, values)


def _what(flow: Workflow) -> str:
    """The workflow, or the skill a workflow was made of, as the user hears of it."""
    if flow.script.source.startswith("memory entry"):
        return f"the skill of {flow.script.source} (run {flow.provenance.run_id})"
    return f"workflow {flow.name}"


class Reuse(Collaborator):
    """The ``Agent`` option that replays a stored, verified workflow the task matches before
    the model is asked (see the module docstring). ``store``: the memory store the workflows
    are in (None: the default one, opened for each run); ``say``: a line for the user (the
    workflow reused, a match not reused, the divergence); ``skills``: reuse a verified skill
    of a whole run too, when no workflow matches (see the module docstring);
    ``wait_seconds``: how long a step waits for its recorded window."""

    def __init__(
        self,
        store: MemoryStore | None = None,
        *,
        say: Callable[[str], None] | None = None,
        skills: bool = True,
        wait_seconds: float = WAIT_SECONDS,
    ) -> None:
        self.store, self.wait_seconds, self.skills = store, wait_seconds, skills
        self.say = say or (lambda line: None)
        self.reset()

    def reset(self) -> None:
        self.task = ""
        self.record: dict[str, Any] | None = None

    def started(self, task: str) -> None:
        self.reset()
        self.task = task

    @contextlib.contextmanager
    def _stored(self) -> Iterator[MemoryStore]:
        if self.store is not None:
            yield self.store
            return
        with MemoryStore() as opened:
            yield opened

    def lead(self, agent: Agent, postcondition: Postcondition | None) -> Ending | None:
        if agent.settings.dry_run or not self.task:
            return None
        with self._stored() as store:
            match = find(self.task, store, self.say, skills=self.skills)
        if match is None:
            return None
        flow = match.flow
        script = flow.with_values(match.values, home=desktop_home(agent.backend))
        if len(script.steps) > agent.settings.max_steps:
            limit = agent.settings.max_steps
            self.say(
                f"{_what(flow)} has {len(script.steps)} steps, over --max-steps {limit}: not reused"
            )
            return None
        shown = ", ".join(f"{k}={v}" for k, v in match.values.items())
        with_values = f" with {shown}" if shown else ""
        self.say(
            f"reusing {_what(flow)}{with_values}: its {len(script.steps)} steps are "
            f"replayed first and the model is asked only where they diverge; {_OFF}"
        )
        self.record = {
            "workflow": flow.name,
            "values": dict(match.values),
            "replayed": [],
            "model": [],
            "divergence": None,
        }
        player = Player(agent, wait_seconds=self.wait_seconds)
        progress = Progress()
        ending, divergence = player.play(script, progress, postcondition)
        if ending is not None:
            return ending
        if divergence is not None:
            self.record["divergence"] = divergence.to_json()
            self.say(f"the replay diverged at {divergence.describe()}: the model takes over")
            what = f"{_what(flow)} replayed with this task's values"
            player.hand_over(script, progress, divergence, what)
        else:
            self.say(f"every step of {_what(flow)} was replayed; it did not end with done")
        return None

    def after_step(self, step: Step) -> None:
        if self.record is not None:
            self.record["replayed" if step.chosen_by == "replay" else "model"].append(step.step)

    def ending(self, ending: Ending) -> Ending:
        return replace(ending, reused=self.record) if self.record is not None else ending


def check_reuse(mode: str) -> str:
    """``mode`` when it is one of ``REUSE_MODES``, else ValueError naming them."""
    if mode not in REUSE_MODES:
        raise ValueError(f"--reuse {mode}: give auto (the default), workflows or off")
    return mode


def reuse_of(
    mode: str, store: MemoryStore | None, say: Callable[[str], None] | None = None
) -> Reuse | None:
    """The ``--reuse`` option's collaborator: ``auto`` (workflows, then verified skills) or
    ``workflows`` (only workflows saved by name) with a memory store, else None (``off``, or
    no memory)."""
    if check_reuse(mode) == "off" or store is None:
        return None
    return Reuse(store, say=say, skills=mode == "auto")


__all__ = [
    "REUSE_MODES",
    "Match",
    "Reuse",
    "check_reuse",
    "find",
    "reuse_of",
    "template",
    "values_for",
]
