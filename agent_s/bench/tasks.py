"""OSWorld task files as typed objects, and suites (an index file plus the task files).

    suite = load_suite("smoke")                       # the project's suite (package data)
    suite = load_suite("../shared/osworld")           # OSWorld's own folder
    for task in suite.tasks(): task.id, task.domain, task.evaluator.funcs

A suite folder holds ``examples/<domain>/<id>.json`` and index files ``test_*.json`` mapping a
domain to task ids (OSWorld's ``test_all.json`` layout). Fields other tools do not know are
kept: ``reference`` (our suites' reference solution, a list of action calls in our syntax) and
OSWorld-Verified's ``proxy``, ``fixed_ip`` and ``possibility_of_env_change``.

Reference solutions for task files we do not write (OSWorld's own) live in a references file,
``{task id: [action call, ...]}``; the package ships one for OSWorld (``REFERENCES_FILE``):

    refs = load_references()                          # the shipped file, or load_references(path)
    lines = reference_for(task, refs)                 # the file's entry, else the task's own
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Literal

Conj = Literal["and", "or"]
_SUITES_PACKAGE = "agent_s.bench"
REFERENCES_FILE = "_references/osworld.json"  # in the package's ``suites`` folder

References = Mapping[str, tuple[str, ...]]


class TaskFormatError(ValueError):
    """A task or index file does not have OSWorld's shape; the message names file and field."""


@dataclass(frozen=True)
class SetupStep:
    """One ``config`` / ``postconfig`` step: ``{"type": ..., "parameters": {...}}``."""

    type: str
    parameters: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any, where: str) -> SetupStep:
        if not isinstance(data, Mapping) or not isinstance(data.get("type"), str):
            raise TaskFormatError(f"{where}: a setup step needs a string 'type'")
        params = data.get("parameters", {})
        if not isinstance(params, Mapping):
            raise TaskFormatError(f"{where}: 'parameters' of a {data['type']} step is no object")
        return cls(data["type"], dict(params))


@dataclass(frozen=True)
class Evaluator:
    """``evaluator``: metric function(s), getter specs, options, postconfig, conj.

    ``funcs`` is always a tuple; ``results``/``expected``/``options`` are tuples of the same
    length (``None`` where a func has none), so a single func and a list read alike.
    """

    funcs: tuple[str, ...]
    results: tuple[Mapping[str, Any] | None, ...]
    expected: tuple[Mapping[str, Any] | None, ...]
    options: tuple[Mapping[str, Any], ...]
    postconfig: tuple[SetupStep, ...] = ()
    conj: Conj = "and"
    is_list: bool = False

    @property
    def infeasible(self) -> bool:
        return self.funcs == ("infeasible",)

    @classmethod
    def from_json(cls, data: Any, where: str) -> Evaluator:
        if not isinstance(data, Mapping) or "func" not in data:
            raise TaskFormatError(f"{where}: 'evaluator' needs a 'func'")
        func = data["func"]
        is_list = isinstance(func, list)
        funcs = tuple(func) if is_list else (func,)
        if not funcs or not all(isinstance(f, str) for f in funcs):
            raise TaskFormatError(f"{where}: 'func' must be a name or a list of names")
        n = len(funcs)

        def spread(key: str, default: Any) -> tuple[Any, ...]:
            value = data.get(key, default)
            if is_list and isinstance(value, list):
                if len(value) != n:
                    raise TaskFormatError(f"{where}: '{key}' has {len(value)} items for {n} funcs")
                return tuple(value)
            return (value,) * n  # one spec shared by every func (OSWorld allows this)

        conj = data.get("conj", "and")
        if conj not in ("and", "or"):
            raise TaskFormatError(f"{where}: 'conj' must be 'and' or 'or', got {conj!r}")
        post = data.get("postconfig", [])
        if not isinstance(post, list):
            raise TaskFormatError(f"{where}: 'postconfig' must be a list")
        options = tuple(o or {} for o in spread("options", {}))
        return cls(
            funcs,
            spread("result", None),
            spread("expected", None),
            options,
            tuple(SetupStep.from_json(s, f"{where} postconfig") for s in post),
            conj,
            is_list,
        )

    def getter_types(self) -> set[str]:
        specs = [*self.results, *self.expected]
        return {str(s["type"]) for s in specs if isinstance(s, Mapping) and "type" in s}


@dataclass(frozen=True)
class Task:
    """One OSWorld task file."""

    id: str
    instruction: str
    domain: str
    config: tuple[SetupStep, ...]
    evaluator: Evaluator
    related_apps: tuple[str, ...] = ()
    snapshot: str = ""
    source: str = ""
    proxy: bool = False
    fixed_ip: bool = False
    possibility_of_env_change: str = ""
    reference: tuple[str, ...] | None = None  # our suites: the reference solution
    path: Path | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def infeasible(self) -> bool:
        return self.evaluator.infeasible

    @property
    def setup_types(self) -> set[str]:
        return {s.type for s in (*self.config, *self.evaluator.postconfig)}

    @classmethod
    def from_json(cls, data: Any, *, domain: str = "", path: Path | None = None) -> Task:
        where = str(path) if path else "task"
        if not isinstance(data, Mapping):
            raise TaskFormatError(f"{where}: a task file holds a JSON object")
        for key in ("id", "instruction", "evaluator"):
            if key not in data:
                raise TaskFormatError(f"{where}: missing '{key}'")
        config = data.get("config", [])
        if not isinstance(config, list):
            raise TaskFormatError(f"{where}: 'config' must be a list")
        reference = data.get("reference")
        if reference is not None and not (
            isinstance(reference, list) and all(isinstance(r, str) for r in reference)
        ):
            raise TaskFormatError(f"{where}: 'reference' must be a list of action calls")
        return cls(
            id=str(data["id"]),
            instruction=str(data["instruction"]),
            domain=domain or (path.parent.name if path else ""),
            config=tuple(SetupStep.from_json(s, f"{where} config") for s in config),
            evaluator=Evaluator.from_json(data["evaluator"], where),
            related_apps=tuple(str(a) for a in data.get("related_apps", [])),
            snapshot=str(data.get("snapshot", "")),
            source=str(data.get("source", "")),
            proxy=bool(data.get("proxy", False)),
            fixed_ip=bool(data.get("fixed_ip", False)),
            possibility_of_env_change=str(data.get("possibility_of_env_change", "")),
            reference=tuple(reference) if reference is not None else None,
            path=path,
            raw=dict(data),
        )


def load_task(path: str | Path, *, domain: str = "") -> Task:
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise TaskFormatError(f"{path}: not JSON ({err})") from err
    return Task.from_json(data, domain=domain or path.parent.name, path=path)


def load_index(path: str | Path) -> dict[str, list[str]]:
    """An index file: ``{domain: [task id, ...]}``."""
    path = Path(path)
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, Mapping) or not all(
        isinstance(ids, list) and all(isinstance(i, str) for i in ids) for ids in data.values()
    ):
        raise TaskFormatError(f"{path}: an index maps each domain to a list of task ids")
    return {str(domain): list(ids) for domain, ids in data.items()}


@dataclass(frozen=True)
class Suite:
    """A folder of task files and the index that selects them."""

    name: str
    root: Path
    index: Mapping[str, Sequence[str]]

    def task_path(self, domain: str, task_id: str) -> Path:
        return self.root / "examples" / domain / f"{task_id}.json"

    def tasks(self, domains: Sequence[str] = ()) -> Iterator[Task]:
        for domain, ids in self.index.items():
            if domains and domain not in domains:
                continue
            for task_id in ids:
                yield load_task(self.task_path(domain, task_id), domain=domain)

    def load(self, domains: Sequence[str] = ()) -> tuple[list[Task], list[BadTaskFile]]:
        """Every task of the index (or of ``domains``) that loads, and every task file that
        does not (missing, not JSON, or not OSWorld's shape), so one bad file stops nothing."""
        good: list[Task] = []
        bad: list[BadTaskFile] = []
        for domain, ids in self.index.items():
            if domains and domain not in domains:
                continue
            for task_id in ids:
                path = self.task_path(domain, task_id)
                try:
                    good.append(load_task(path, domain=domain))
                except (OSError, ValueError, TypeError) as err:  # TaskFormatError is a ValueError
                    bad.append(BadTaskFile(path, domain, task_id, _problem(err, path)))
        return good, bad

    def __len__(self) -> int:
        return sum(len(ids) for ids in self.index.values())


@dataclass(frozen=True)
class BadTaskFile:
    """A task file of the index that cannot be used, and what is wrong with it."""

    path: Path
    domain: str
    task_id: str
    problem: str

    def __str__(self) -> str:
        return f"{self.path}: {self.problem}"

    def to_json(self) -> dict[str, str]:
        return {
            "path": str(self.path),
            "domain": self.domain,
            "task_id": self.task_id,
            "problem": self.problem,
        }


def _problem(err: Exception, path: Path) -> str:
    if isinstance(err, FileNotFoundError):
        return "no such task file"
    if isinstance(err, OSError):
        return f"cannot be read ({err.strerror or err})"
    if isinstance(err, UnicodeDecodeError):
        return "not UTF-8 text"
    if not isinstance(err, TaskFormatError):
        return f"a field has the wrong type ({type(err).__name__}: {err})"
    return str(err).removeprefix(f"{path}: ")


def load_references(path: str | Path | None = None) -> dict[str, tuple[str, ...]]:
    """A references file: ``{task id: [action call, ...]}`` (None: the file the package ships).
    Keys starting with ``_`` are comments and left out."""
    if path is None:
        folder = resources.files(_SUITES_PACKAGE) / "suites"
        text = folder.joinpath(*REFERENCES_FILE.split("/")).read_text("utf-8")
        where = REFERENCES_FILE
    else:
        text, where = Path(path).expanduser().read_text(encoding="utf-8"), str(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise TaskFormatError(f"{where}: not JSON ({err})") from err
    if not isinstance(data, Mapping):
        raise TaskFormatError(f"{where}: a references file maps task ids to action lists")
    refs: dict[str, tuple[str, ...]] = {}
    for task_id, lines in data.items():
        if str(task_id).startswith("_"):
            continue
        if not isinstance(lines, list) or not all(isinstance(line, str) for line in lines):
            raise TaskFormatError(f"{where}: {task_id}: a reference is a list of action calls")
        refs[str(task_id)] = tuple(lines)
    return refs


def reference_for(task: Task, references: References) -> tuple[str, ...] | None:
    """The task's reference solution: the references file's entry, else the task file's own."""
    return references.get(task.id, task.reference)


def builtin_suites() -> list[str]:
    folder = resources.files(_SUITES_PACKAGE) / "suites"
    return sorted(p.name for p in folder.iterdir() if p.is_dir() and not p.name.startswith("_"))


def load_suite(name_or_path: str | Path, *, index: str | None = None) -> Suite:
    """A built-in suite by name (``smoke``), a suite folder, or an index file inside one.

    In a folder the index is ``index`` if given, else ``test_<name>.json`` for a built-in
    suite, else ``test_all.json``, else the only ``test_*.json``.
    """
    text = str(name_or_path)
    path = Path(text).expanduser()
    if not path.exists() and text in builtin_suites():
        root = Path(str(resources.files(_SUITES_PACKAGE) / "suites" / text))
        return Suite(text, root, load_index(root / (index or f"test_{text}.json")))
    if path.is_file():
        return Suite(path.stem.removeprefix("test_"), path.parent, load_index(path))
    if not path.is_dir():
        known = ", ".join(builtin_suites()) or "none"
        raise FileNotFoundError(f"no suite {text!r}: not a folder or file (built-in: {known})")
    if index is not None:
        chosen = path / index
    elif (path / "test_all.json").exists():
        chosen = path / "test_all.json"
    else:
        found = sorted(path.glob("test_*.json"))
        if len(found) != 1:
            raise FileNotFoundError(f"{path}: pass --index, found {[p.name for p in found]}")
        chosen = found[0]
    return Suite(chosen.stem.removeprefix("test_"), path, load_index(chosen))


__all__ = [
    "REFERENCES_FILE",
    "BadTaskFile",
    "Evaluator",
    "References",
    "SetupStep",
    "Suite",
    "Task",
    "TaskFormatError",
    "builtin_suites",
    "load_index",
    "load_references",
    "load_suite",
    "load_task",
    "reference_for",
]
