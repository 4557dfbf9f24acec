"""Option groups: options that several commands take, defined once and taken as one parameter.

A group is a frozen dataclass whose fields are typer options (``Annotated`` aliases, each with
its default); a field may itself be a group. A command decorated with ``grouped`` names the group
as a parameter's type, and typer sees the group's fields as the command's own options, in the
group's place (so ``--help`` lists them where the group stands); the command is called with the
group built from what was given::

    @dataclass(frozen=True)
    class ModelFlags:
        provider: Provider = None
        model: Model = None

    @grouped
    def run(task: Task = None, *, models: ModelFlags, max_steps: MaxSteps = None) -> None:
        models.model  # --model's value

``settings_flags`` turns groups and single options into the ``{"--model": ...}`` mapping that
``agent_s.settings.read.flag_values`` reads.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, TypeVar, get_type_hints

_R = TypeVar("_R")


def _is_group(hint: Any) -> bool:
    return isinstance(hint, type) and dataclasses.is_dataclass(hint)


@functools.cache
def _fields(group: type) -> tuple[tuple[str, Any, Any], ...]:
    """(name, type with its typer option, default) of each field of ``group``."""
    hints = get_type_hints(group, include_extras=True)
    return tuple((f.name, hints[f.name], f.default) for f in dataclasses.fields(group))


def _options(group: type) -> list[inspect.Parameter]:
    """The options a group stands for, as parameters of a command, nested groups flattened."""
    found: list[inspect.Parameter] = []
    for name, hint, default in _fields(group):
        if _is_group(hint):
            found += _options(hint)
        else:
            kind = inspect.Parameter.KEYWORD_ONLY
            found.append(inspect.Parameter(name, kind, default=default, annotation=hint))
    return found


def _build(group: type, given: dict[str, Any]) -> Any:
    """The group made of its options' values, taken out of ``given``."""
    values = {
        name: _build(hint, given) if _is_group(hint) else given.pop(name)
        for name, hint, _ in _fields(group)
    }
    return group(**values)


def grouped(command: Callable[..., _R]) -> Callable[..., _R]:
    """``command`` as typer should see it: each parameter whose type is a group (a dataclass)
    replaced by the group's options; the command itself gets the group."""
    hints = get_type_hints(command, include_extras=True)
    params: list[inspect.Parameter] = []
    groups: dict[str, type] = {}
    for name, param in inspect.signature(command).parameters.items():
        hint = hints.get(name, param.annotation)
        if _is_group(hint):
            groups[name] = hint
            params += _options(hint)
        else:
            params.append(param.replace(annotation=hint, kind=inspect.Parameter.KEYWORD_ONLY))
    names = [p.name for p in params]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise TypeError(f"{command.__name__}: options given twice: {', '.join(twice)}")

    @functools.wraps(command)
    def call(**given: Any) -> _R:
        for name, group in groups.items():
            given[name] = _build(group, given)
        return command(**given)

    call.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    call.__annotations__ = {p.name: p.annotation for p in params}
    return call


class SettingsGroup:
    """A group whose options are settings (``agent_s.settings.read``): each field an option
    named as the field (``base_url``: ``--base-url``), but those of ``not_settings``."""

    not_settings: ClassVar[frozenset[str]] = frozenset()

    def flags(self) -> dict[str, Any]:
        """``{"--base-url": value, ...}``: the group's settings (None: not given)."""
        return {
            flag(f.name): getattr(self, f.name)
            for f in dataclasses.fields(self)  # type: ignore[arg-type]
            if f.name not in self.not_settings
        }


def flag(name: str) -> str:
    """The option a parameter named ``name`` stands for: ``max_steps``: ``--max-steps``."""
    return "--" + name.replace("_", "-")


def settings_flags(*groups: SettingsGroup, **given: Any) -> Mapping[str, Any]:
    """The settings ``groups`` and the single options ``given`` (by parameter name) stand for,
    as ``agent_s.settings.read.flag_values`` takes them: ``{"--max-steps": 5, ...}``."""
    found: dict[str, Any] = {}
    for group in groups:
        found.update(group.flags())
    found.update((flag(name), value) for name, value in given.items())
    return found


__all__ = ["SettingsGroup", "flag", "grouped", "settings_flags"]
