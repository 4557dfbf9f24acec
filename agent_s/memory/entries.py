"""What memory holds: entries with their provenance, skills and their hashes, errors."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from agent_s.errors import AgentSError
from agent_s.guards.trust import TrustLevel

Kind = Literal["run", "lesson", "skill"]
KINDS: tuple[Kind, ...] = ("run", "lesson", "skill")


class MemoryStoreError(AgentSError, RuntimeError):
    """The memory file cannot be used; the message names the fix."""


class SchemaTooNew(MemoryStoreError):
    """The file was written by a newer agent-s than this one."""


class TamperedEntry(MemoryStoreError):
    """A skill's code no longer matches the sha256 stored with it."""


# -- the data -----------------------------------------------------------------------------------

_Frozen = ConfigDict(frozen=True, extra="forbid")


class Provenance(BaseModel):
    """Where an entry came from, and who checked it (``checked_by``, ``agent_s.guards.trust``):
    ``user`` - a check the user or the harness's evaluator gave passed (a command's exit status,
    a benchmark's evaluator); ``model-check`` - only a check a model wrote passed (a plan's
    subtask check, a practice task's check); ``none`` - nothing checked it. ``verified`` is
    True exactly when ``checked_by`` is ``user``; give either one."""

    model_config = _Frozen
    run_id: str = Field(min_length=1)  # the trajectory folder's name
    steps: tuple[int, ...] = ()
    created: datetime = Field(default_factory=lambda: datetime.now(timezone.utc))
    model: str
    verified: bool = False
    checked_by: TrustLevel = "none"
    task: str

    @model_validator(mode="before")
    @classmethod
    def _level(cls, data: Any) -> Any:
        if isinstance(data, dict):
            by, verified = data.get("checked_by"), data.get("verified")
            if by is None:
                data = {**data, "checked_by": "user" if verified else "none"}
            elif verified is None:
                data = {**data, "verified": by == "user"}
        return data

    @model_validator(mode="after")
    def _consistent(self) -> Provenance:
        if self.verified != (self.checked_by == "user"):
            raise ValueError(
                "verified is true exactly when checked_by is 'user' (a check the user gave)"
            )
        return self

    def trusted_as(self, level: TrustLevel) -> Provenance:
        """This provenance at ``level`` (a lower one: what cannot be trusted is not)."""
        return self.model_copy(update={"checked_by": level, "verified": level == "user"})


class RunSummary(BaseModel):
    model_config = _Frozen
    kind: Literal["run"] = "run"
    status: str  # the run's outcome, e.g. "success", "failed", "max_steps"
    summary: str
    key_steps: tuple[str, ...] = ()

    def text(self) -> str:
        return "\n".join([self.status, self.summary, *self.key_steps])


class Lesson(BaseModel):
    model_config = _Frozen
    kind: Literal["lesson"] = "lesson"
    worked: str = ""  # what worked
    failed: str = ""  # what failed
    why: str = ""  # and why

    def text(self) -> str:
        return "\n".join(part for part in (self.worked, self.failed, self.why) if part)


ANSWER_OUTPUT = "the run's answer: "  # the outputs line of an action sequence whose run answered


class Skill(BaseModel):
    """The exact code of a code-agent step (``python``/``bash``, ``code`` byte for byte) or the
    exact action sequence of a GUI subtask (``actions``: one action call per item), with what
    it takes and gives, the check that passed, and its parameters: literal values it shares
    with its task (``{"file_1": "sales.csv"}``), which ``instantiate`` replaces."""

    model_config = _Frozen
    kind: Literal["skill"] = "skill"
    description: str
    language: Literal["python", "bash", "actions"]
    code: str = ""
    actions: tuple[str, ...] = ()
    # an action sequence's: the window ("App: title") active before each action, "" unknown;
    # a replay waits for it before acting there (agent_s.replay.workflow.Workflow.from_skill)
    windows: tuple[str, ...] = ()
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    check: str = ""  # the check that passed
    parameters: dict[str, str] = Field(default_factory=dict)  # name -> the literal in the code

    @property
    def sha256(self) -> str:
        return code_sha256(self)

    @property
    def answer(self) -> str | None:
        """The answer the run of an action sequence ended with (an ``outputs`` line), if any:
        what the screen showed then, which a replay with other values must read again."""
        for line in self.outputs:
            if line.startswith(ANSWER_OUTPUT):
                return line.removeprefix(ANSWER_OUTPUT).strip() or None
        return None

    def text(self) -> str:
        return "\n".join([self.description, *self.inputs, *self.outputs, self.check])


Body = Annotated[RunSummary | Lesson | Skill, Field(discriminator="kind")]


def code_bytes(skill: Skill) -> bytes:
    """The bytes a skill's hash is taken of: the code as UTF-8, or for an action sequence its
    calls as a compact JSON list (so a newline inside a call cannot join two calls)."""
    if skill.language == "actions":
        return json.dumps(list(skill.actions), ensure_ascii=False, separators=(",", ":")).encode()
    return skill.code.encode("utf-8", "surrogatepass")


def code_sha256(skill: Skill) -> str:
    return hashlib.sha256(code_bytes(skill)).hexdigest()


class Entry(BaseModel):
    """One stored entry, as read back (``id`` is the store's; ``retrieved`` counts its uses)."""

    model_config = _Frozen
    id: int
    provenance: Provenance
    body: Body
    retrieved: int = 0
    sha256: str | None = None  # skills only: sha256 of the code bytes
    # this store's key sealed the entry as it reads now (False: imported, edited in the file,
    # or written before entries were sealed; its provenance then says "none")
    sealed: bool = False

    @property
    def kind(self) -> Kind:
        return self.body.kind


class ExportedEntry(BaseModel):
    """One line of an export: every field, provenance and hash included."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    format: Literal["agent-s-memory/1"] = "agent-s-memory/1"
    id: int
    kind: Kind
    provenance: Provenance
    body: Body
    retrieved: int = Field(0, ge=0)
    sha256: str | None = None

    @field_validator("sha256")
    @classmethod
    def _hex(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"[0-9a-f]{64}", value):
            raise ValueError("sha256 must be 64 lowercase hex digits")
        return value


@dataclass(frozen=True)
class Hit:
    entry: Entry
    score: float  # higher is more relevant (bm25, unverified entries weighed down)


@dataclass(frozen=True)
class ImportReport:
    added: int
    skipped: int  # already in the store
    stopped: str = ""  # why it stopped before the end of the file ("" when it read it all)
    left: int = 0  # entries of the file not imported because it stopped


__all__ = [
    "ANSWER_OUTPUT",
    "KINDS",
    "Body",
    "Entry",
    "ExportedEntry",
    "Hit",
    "ImportReport",
    "Kind",
    "Lesson",
    "MemoryStoreError",
    "Provenance",
    "RunSummary",
    "SchemaTooNew",
    "Skill",
    "TamperedEntry",
    "code_bytes",
    "code_sha256",
]
