"""Practice tasks as the model proposes them (``Proposal``), and the checks that decide them.

    proposal = parse_proposal(reply_text, min_difficulty=2, seen=earlier_tasks)  # or ValueError
    outcome = run_check(proposal.check, runner_settings)                         # CheckOutcome

A proposal is one JSON object: the task, its difficulty (1-10) and its check, either an argument
list (``{"argv": ["grep", "-qx", "buy milk", "~/todo.txt"]}``: each word quoted for Bash, so no
word is shell syntax; a leading ``~`` is the desktop's HOME) or a short Bash script the model
wrote (``{"bash": "..."}``). Both run as one Bash block in the code agent's contained runner
(``agent_s.coding.runner``): bounded in time and output, every process it starts ended with it.
Exit status 0 passes. ``parse_proposal`` reads a reply strictly; what it refuses comes back as a
ValueError whose message is for the model (``agent_s.practice.session`` feeds it back).
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from agent_s.errors import AgentSError

if TYPE_CHECKING:
    from agent_s.coding.runner import RunnerSettings

CHECK_TIMEOUT = 60.0  # seconds a check may run
_OUTPUT = 300  # characters of a check's output kept


class PracticeError(AgentSError, ValueError):
    """Practice cannot start as asked (no such application or suite, a budget that cannot be
    kept); the message names the fix. Nothing was started."""


# -- proposals ----------------------------------------------------------------------

_Frozen = ConfigDict(frozen=True, extra="forbid")


class CommandCheckSpec(BaseModel):
    """A check command as an argument list (never a shell string); ``~`` leads to HOME."""

    model_config = _Frozen
    argv: tuple[str, ...] = Field(min_length=1, max_length=64)

    @field_validator("argv")
    @classmethod
    def _words(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not value[0].strip():
            raise ValueError("the program (the first word) is empty")
        if any("\0" in word or len(word) > 2000 for word in value):
            raise ValueError("an argument holds a NUL character or is over 2000 characters")
        return value

    def text(self) -> str:
        """The command as a shell would take it, ``~`` as written."""
        return " ".join(
            "~" + shlex.quote(w[1:]) if w.startswith("~/") else w if w == "~" else shlex.quote(w)
            for w in self.argv
        )

    def code(self, home: str) -> str:
        """One Bash line running the command: each word quoted (no word is shell syntax)."""
        expanded = [home + w[1:] if w == "~" or w.startswith("~/") else w for w in self.argv]
        return shlex.join(expanded)


class BashCheckSpec(BaseModel):
    """A check as a short Bash script the model wrote, run as a file by the contained runner."""

    model_config = _Frozen
    bash: str = Field(min_length=1, max_length=4000)

    @field_validator("bash")
    @classmethod
    def _script(cls, value: str) -> str:
        if not value.strip() or "\0" in value:
            raise ValueError("the script is empty or holds a NUL character")
        return value

    def text(self) -> str:
        return self.bash

    def code(self, home: str) -> str:
        return self.bash


CheckSpec = CommandCheckSpec | BashCheckSpec


class Proposal(BaseModel):
    """One practice task as the model proposes it."""

    model_config = _Frozen
    task: str = Field(min_length=8, max_length=1000)
    difficulty: int = Field(ge=1, le=10)
    check: CommandCheckSpec | BashCheckSpec

    @field_validator("task")
    @classmethod
    def _task(cls, value: str) -> str:
        value = " ".join(value.split())
        if len(value) < 8:
            raise ValueError("the task is too short to be an instruction")
        return value


_FENCE = re.compile(r"```[ \t]*(?:json)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)


def parse_proposal(text: str, *, min_difficulty: int = 1, seen: Sequence[str] = ()) -> Proposal:
    """The proposal in a reply: one JSON object, in a ```json block or alone. ValueError
    (the reason, for the model) for anything else, a difficulty below ``min_difficulty`` or a
    task already in ``seen``."""
    blocks = _FENCE.findall(text)
    if len(blocks) > 1:
        raise ValueError(f"the reply has {len(blocks)} code blocks; give exactly one")
    raw = (blocks[0] if blocks else text).strip()
    if not raw:
        raise ValueError("the reply holds no proposal")
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as err:
        raise ValueError(
            f"the JSON does not parse: {err.msg} (line {err.lineno} column {err.colno})"
        ) from None
    except RecursionError:
        raise ValueError("the JSON is nested too deeply") from None
    if not isinstance(data, dict):
        raise ValueError(f"the JSON must be one object, not a {type(data).__name__}")
    try:
        proposal = Proposal.model_validate(data)
    except ValidationError as err:
        problems = [
            f"{'.'.join(str(p) for p in e['loc']) or 'the object'}: {e['msg']}"
            for e in err.errors()[:6]
        ]
        raise ValueError("; ".join(problems)) from None
    if proposal.difficulty < min_difficulty:
        raise ValueError(
            f"difficulty {proposal.difficulty} is below {min_difficulty}: the tasks must not get "
            "easier than the ones that passed"
        )
    if proposal.task.casefold() in {" ".join(t.split()).casefold() for t in seen}:
        raise ValueError("that task was proposed before; propose a different one")
    return proposal


EXAMPLE = """```json
{"task": "In mousepad, write the line 'buy milk' and save the document as ~/todo.txt",
 "difficulty": 2,
 "check": {"argv": ["grep", "-qx", "buy milk", "~/todo.txt"]}}
```"""


@dataclass(frozen=True)
class CheckOutcome:
    """One run of a check: passed (exit status 0), its status and why, in words."""

    passed: bool
    exit_status: int | None
    detail: str


# -- checks ---------------------------------------------------------------------------------------


def run_check(check: CheckSpec, runner: RunnerSettings) -> CheckOutcome:
    """Run ``check`` once as Bash in the code agent's contained runner (``runner``: the
    desktop's HOME as its folder, the desktop's environment)."""
    from agent_s.coding.runner import CodeRunner

    home = (runner.env or {}).get("HOME") or str(runner.workdir)
    with CodeRunner(runner) as code:
        run = code.run("bash", check.code(home))
    output = clip(run.stdout.text + " " + run.stderr.text, _OUTPUT)
    return CheckOutcome(run.ok, run.exit_status, run.stopped + (f": {output}" if output else ""))


class CheckPostcondition:
    """The check as the attempt's postcondition: named by its text, its last outcome kept."""

    def __init__(self, check: CheckSpec, runner: RunnerSettings) -> None:
        self.check, self.runner = check, runner
        self.__name__ = check.text()
        self.outcome: CheckOutcome | None = None

    def __call__(self) -> bool:
        self.outcome = run_check(self.check, self.runner)
        return self.outcome.passed


def clip(text: str, limit: int) -> str:
    """``text`` on one line, at most ``limit`` characters."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


__all__ = [
    "CHECK_TIMEOUT",
    "EXAMPLE",
    "BashCheckSpec",
    "CheckOutcome",
    "CheckPostcondition",
    "CheckSpec",
    "CommandCheckSpec",
    "PracticeError",
    "Proposal",
    "clip",
    "parse_proposal",
    "run_check",
]
