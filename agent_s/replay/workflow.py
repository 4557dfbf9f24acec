"""Named, parameterised workflows: a successful run kept in the memory store, replayed with new
values.

    flow = Workflow.from_run("runs/run-20260101-120000-4242", "save-note")
    flow.parameters          # {"text_1": "hello there", "file_1": "/tmp/note.txt"}
    flow.save()              # into the memory store (agent_s.memory), with its provenance
    Workflow.load("save-note").run({"file_1": "~/other.txt"})  # on this session's desktop

A workflow is the run's replay ``Script`` (``agent_s.replay.player``) with its parameters: the
literal
values of the task text (quoted text, file names and paths, numbers:
``agent_s.memory.parameters``) that the recorded actions typed, clicked or opened, and the text
typed that the task has as it is, quoted or not. Running it with new values puts each value
where its literal stood, in the actions' text fields, in the recorded window titles (a
document's name) and in the task, then replays it: every target is grounded again, nothing asks
a model unless the replay diverges and ``heal`` is on. Only the text fields change: a parameter
never rewrites a number of clicks or a step number. A value with a quote, backslash or control
character is refused, as is a number parameter given something else than a number. A value
that starts with ``~`` (``~`` or ``~/...``) is a path in the HOME of the desktop it runs on (a
virtual desktop's own HOME, not the user's): written out in full, or left for the application to
read where the recorded value started with ``~`` too.

Only a run that succeeded can be saved; its provenance names the run, the date, the model and
the task (``Provenance``), and is unverified: what a run folder says of its own check is a
claim in a file, not a check this store saw pass. The caller that saw the run's check of the
user's (or an evaluator's) pass says so (``from_run(..., verified=True)``: ``agent-s run
--check ... --save-workflow NAME``); only such a workflow is reused by a later run whose task
matches it (``agent_s.replay.reuse``). A stored workflow is verified only when the store's key
sealed it so (``agent_s.guards.trust``): a workflow edited in the file, body and hash
together, loads as unverified.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from typing_extensions import Unpack

from agent_s.actions import DoneAction, TypeAction, literal_point, parse_action
from agent_s.desktop.base import DesktopBackend, desktop_home
from agent_s.errors import ActionParseError
from agent_s.memory.entries import Entry, Provenance, Skill
from agent_s.memory.parameters import extract_parameters, instantiate
from agent_s.memory.store import MemoryStore, StoredWorkflow, check_workflow_name
from agent_s.record.result import Postcondition, RunStatus
from agent_s.record.trajectory import load_trajectory
from agent_s.replay.player import (
    Replayer,
    ReplayOptions,
    ReplayResult,
    Script,
    ScriptStep,
    script_of,
)


class Workflow(BaseModel):
    """A named replay script with parameters (see the module docstring)."""

    model_config = ConfigDict(frozen=True)

    name: str
    script: Script
    parameters: dict[str, str] = Field(default_factory=dict)  # name -> the literal recorded
    provenance: Provenance

    @property
    def task(self) -> str:
        return self.script.task

    # -- making one --

    @classmethod
    def from_run(cls, run_dir: Path | str, name: str, *, verified: bool = False) -> Workflow:
        """The workflow of a successful recorded run (ValueError for any other run).
        ``verified``: the caller saw a check of the user's or an evaluator's pass for this
        very run (its ``RunResult.verified``, a benchmark evaluator's full score): the
        workflow is stored as checked by the user, and ``agent-s run`` may reuse it
        (``agent_s.replay.reuse``). What the folder says of its own check never counts."""
        check_workflow_name(name)
        trajectory = load_trajectory(run_dir)
        result = trajectory.result
        if result is None or result.status is not RunStatus.SUCCEEDED:
            status = result.status.value if result is not None else "unfinished (no result.json)"
            raise ValueError(
                f"{trajectory.folder} did not succeed ({status}): only a successful run can "
                "become a workflow; save one that ended with done"
            )
        script = script_of(trajectory)
        if not any(step.action.is_desktop for step in script.steps):
            raise ValueError(f"{trajectory.folder} did nothing on the desktop: nothing to replay")
        provenance = Provenance(
            run_id=trajectory.folder.name,
            steps=tuple(step.step for step in script.steps),
            model=result.model or script.model or "unknown",
            # a run folder's result.json is a file anyone may have edited: its "verified" is a
            # claim, not a check this process saw pass; only the caller's word counts
            verified=verified,
            task=script.task,
        )
        return cls(name=name, script=script, parameters=_parameters(script), provenance=provenance)

    @classmethod
    def from_skill(cls, entry: Entry) -> Workflow | None:
        """The workflow of a memory entry that is a whole run's action sequence (a skill
        ``agent_s.memory.learn`` kept from a run whose check passed), then ``done``; None for
        any other entry, or for one with an action that no longer parses or a target given as
        screen coordinates (only a recording's size and point carry those again). Its steps wait
        for the windows the skill recorded (none for a skill learnt before it kept them); its
        provenance is the entry's, as the store trusts it."""
        skill, task = entry.body, entry.provenance.task
        if not isinstance(skill, Skill) or skill.language != "actions":
            return None
        if skill.description != f"actions for: {task}":  # a planned subtask's, or cut short
            return None
        numbers = entry.provenance.steps
        steps: list[ScriptStep] = []
        for index, text in enumerate(skill.actions):
            try:
                action = parse_action(text)
            except ActionParseError:
                return None
            if any(literal_point(target.text) is not None for target in action.targets()):
                return None
            number = numbers[index] if index < len(numbers) else index + 1
            window = skill.windows[index] if index < len(skill.windows) else ""
            steps.append(ScriptStep(step=number, action=action, window=window or None))
        if not any(step.action.is_desktop for step in steps):
            return None
        end = (numbers[-1] if numbers else len(steps)) + 1
        done = DoneAction(answer=skill.answer)  # what the run answered: read again (reuse)
        steps.append(ScriptStep(step=max(end, len(steps) + 1), action=done))
        script = Script(task=task, source=f"memory entry {entry.id}", model=entry.provenance.model)
        script = script.model_copy(update={"steps": tuple(steps)})
        return cls(
            name=f"skill-{entry.id}",
            script=script,
            parameters=_parameters(script),
            provenance=entry.provenance,
        )

    # -- the memory store --

    def save(self, store: MemoryStore | None = None, *, replace: bool = False) -> Workflow:
        """Keep it in the memory store (the default one unless given); a name already taken
        is refused unless ``replace``."""
        with _store(store) as memory:
            memory.save_workflow(
                self.name, self.model_dump_json(), self.provenance, replace=replace
            )
        return self

    @classmethod
    def load(cls, name: str, store: MemoryStore | None = None) -> Workflow:
        """The stored workflow ``name``; KeyError naming the workflows there are."""
        with _store(store) as memory:
            try:
                stored = memory.workflow(name)
            except KeyError:
                known = ", ".join(w.name for w in memory.workflows()) or "none yet"
                raise KeyError(
                    f"no workflow named {name!r} (stored: {known}); save one with agent-s "
                    "workflow save RUN_DIR NAME"
                ) from None
        return cls._of(stored)

    @classmethod
    def _of(cls, stored: StoredWorkflow) -> Workflow:
        """The workflow as stored, with the store's word on its provenance: verified only when
        this store's key sealed it so (the body's own claim is not believed)."""
        flow = cls.model_validate_json(stored.body)
        return flow.model_copy(update={"provenance": stored.provenance})

    @classmethod
    def stored(cls, store: MemoryStore | None = None) -> list[Workflow]:
        """Every stored workflow, by name."""
        with _store(store) as memory:
            return [cls._of(w) for w in memory.workflows()]

    # -- running --

    def with_values(self, values: Mapping[str, str], *, home: Path | None = None) -> Script:
        """The script with each parameter's literal replaced by its new value (ValueError for an
        unknown name or an unsafe value; see the module docstring). ``home``: the desktop's
        HOME, where a value starting with ``~`` is a path, written out in full unless the
        recorded value started with ``~`` too (the recording shows that the application reads
        ``~`` there, as the desktop's HOME); None leaves ``~`` as it is. A recorded ``done``'s
        answer is never given again: the replay diverges there (``Script.read_answer``)."""
        if not values:
            return self.script.model_copy(update={"read_answer": True})
        if home is not None:
            values = {
                name: value
                if self.parameters.get(name, "").startswith("~")
                else home_path(value, home)
                for name, value in values.items()
            }
        fields = _text_fields(self.script)
        task_index = len(fields)
        texts = (*(text for _, text in fields), self.script.task)
        skill = Skill(
            description=self.name,
            language="actions",
            actions=texts,
            parameters=dict(self.parameters),
        )
        new = instantiate(skill, dict(values)).actions
        steps = [step.model_dump(mode="json") for step in self.script.steps]
        for (where, _), text in zip(fields, new[:task_index], strict=True):
            index, key = where
            if key == "window":
                steps[index]["window"] = text
            else:
                steps[index]["action"][key] = text
        rebuilt = tuple(ScriptStep.model_validate(data) for data in steps)
        update = {"steps": rebuilt, "task": new[task_index], "read_answer": True}
        return self.script.model_copy(update=update)

    def run(
        self,
        params: Mapping[str, str] | None = None,
        *,
        backend: DesktopBackend | None = None,
        postcondition: Postcondition | None = None,
        **options: Unpack[ReplayOptions],
    ) -> ReplayResult:
        """Replay the workflow with ``params`` (new values by parameter name) on ``backend``;
        unless one is given, this session's desktop, as ``Agent`` picks it (``Agent.backend``).
        A value starting with ``~`` is a path in that desktop's HOME. ``options``: as for
        ``agent_s.replay.player.replay`` (``ReplayOptions``)."""
        replayer = Replayer(backend, **options)
        script = self.with_values(params or {}, home=desktop_home(replayer.backend))
        return replayer.run(script, postcondition)


def _parameters(script: Script) -> dict[str, str]:
    """The literal values of the script's task that its actions typed, clicked or opened, and
    the text typed that the task has as it is (``agent_s.memory.parameters``)."""
    fields = [text for _, text in _text_fields(script)]
    typed = [s.action.text for s in script.steps if isinstance(s.action, TypeAction)]
    return extract_parameters(script.task, json.dumps(fields, ensure_ascii=False), typed)


def _text_fields(script: Script) -> list[tuple[tuple[int, str], str]]:
    """Every text a parameter may stand in, in order: each step's text-valued action fields,
    then its recorded window (``((step index, field), text)``)."""
    found: list[tuple[tuple[int, str], str]] = []
    for index, step in enumerate(script.steps):
        for key, value in step.action.model_dump().items():
            if key != "action" and isinstance(value, str) and value:
                found.append(((index, key), value))
        if step.window:
            found.append(((index, "window"), step.window))
    return found


@contextlib.contextmanager
def _store(given: MemoryStore | None) -> Iterator[MemoryStore]:
    """The given store (left open), or the default one (closed afterwards)."""
    if given is not None:
        yield given
        return
    with MemoryStore() as opened:
        yield opened


def parse_values(pairs: Iterable[str]) -> dict[str, str]:
    """``KEY=VALUE`` pairs (``--set``) as a dict; ValueError naming the bad one."""
    values: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--set {pair!r}: give KEY=VALUE, e.g. --set file_1=/tmp/new.txt")
        values[key.strip()] = value
    return values


def home_path(value: str, home: Path) -> str:
    """``value`` with a leading ``~`` (``~`` or ``~/...``) turned into ``home``, as a shell
    would; any other value as it is."""
    if value == "~" or value.startswith("~/"):
        return str(home) + value[1:]
    return value


def _inside(path: str, folder: Path) -> bool:
    """Whether ``path`` is ``folder`` or inside it (as written: ``..`` resolved, no links)."""
    given, top = os.path.normpath(path), os.path.normpath(folder)
    return given == top or given.startswith(top.rstrip("/") + "/")


def refuse_user_home(values: Mapping[str, str], home: Path, user_home: Path) -> None:
    """ValueError, in one line, for a value in ``user_home`` (the user's own HOME) and not in
    ``home`` (a virtual desktop's): the shell turns an unquoted ``~`` (``--set file_1=~/x.txt``)
    into the user's HOME before agent-s sees it, so the workflow would write outside the
    desktop's HOME. The value is to be quoted (``'~/x.txt'``), or a path inside ``home``."""
    if os.path.normpath(user_home) == "/":
        return  # every absolute path is "inside" /: nothing to tell apart
    for name, value in values.items():
        if _inside(value, user_home) and not _inside(value, home):
            rest = os.path.relpath(os.path.normpath(value), user_home)
            quoted = "~" if rest == "." else f"~/{rest}"
            raise ValueError(
                f"--set {name}={value} is in your own HOME ({user_home}), outside the virtual "
                f"desktop's HOME ({home}): the shell turns an unquoted ~ into your HOME before "
                f"agent-s sees it. Quote it, --set '{name}={quoted}', for the virtual desktop's "
                "HOME, or give a path inside it"
            )


def describe(flow: Workflow) -> dict[str, Any]:
    """The workflow for people and ``--json``: name, task, parameters, steps, provenance."""
    prov = flow.provenance
    return {
        "name": flow.name,
        "task": flow.task,
        "parameters": dict(flow.parameters),
        "steps": [step.text for step in flow.script.steps],
        "source": flow.script.source,
        "run": prov.run_id,
        "created": prov.created.isoformat(),
        "model": prov.model,
        "verified": prov.verified,
        "checked_by": prov.checked_by,
    }


__all__ = ["Workflow", "describe", "home_path", "parse_values", "refuse_user_home"]
