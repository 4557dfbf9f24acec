"""Options shared by several commands are defined once (``agent_s.cli.options``) and taken as a
group (``agent_s.cli.grouped``): a command lists a group's options in the group's place, gets
the group built from what was given, and passes its settings on by flag; the commands of
agent-s that share a group show the very same options."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

import pytest
import typer
import typer.main
from typer.testing import CliRunner

from agent_s.cli.grouped import SettingsGroup, grouped, settings_flags
from agent_s.cli.helptext import Command
from agent_s.cli.main import app
from agent_s.cli.options import GroundFlags, ModelFlags

_Colour = Annotated[str | None, typer.Option(help="The colour (env COLOUR).")]
_Size = Annotated[int, typer.Option(min=1, help="The size.")]


@dataclass(frozen=True)
class _Paint(SettingsGroup):
    colour: _Colour = None
    size: _Size = 3


@dataclass(frozen=True)
class _Job(SettingsGroup):
    not_settings = frozenset({"loud"})

    loud: Annotated[bool, typer.Option("--loud", help="Say it.")] = False
    paint: _Paint = _Paint()


def _app(seen: list[Any]) -> typer.Typer:
    tool = typer.Typer(rich_markup_mode=None)

    @tool.command(cls=Command)
    @grouped
    def paint(
        wall: Annotated[str, typer.Argument(help="The wall.")],
        first: Annotated[str, typer.Option(help="First of all.")] = "a",
        *,
        job: _Job,
        last: Annotated[str, typer.Option(help="Last of all.")] = "z",
    ) -> None:
        seen.append((wall, first, job, last))

    @tool.command()
    def other() -> None:  # a second command: typer then names each one
        pass

    return tool


def test_a_group_s_options_stand_in_its_place_and_reach_the_command_as_the_group() -> None:
    seen: list[Any] = []
    tool = _app(seen)
    shown = CliRunner().invoke(tool, ["paint", "--help"], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    order = ("--first", "--loud", "--colour", "--size", "--last")
    places = [shown.output.index(name) for name in order]
    assert places == sorted(places), shown.output
    assert "The colour (env COLOUR)." in shown.output

    done = CliRunner().invoke(tool, ["paint", "north", "--colour", "red", "--loud", "--last", "y"])
    assert done.exit_code == 0, done.output
    assert seen == [("north", "a", _Job(loud=True, paint=_Paint("red", 3)), "y")]
    refused = CliRunner().invoke(tool, ["paint", "north", "--size", "0"])
    assert refused.exit_code == 2  # the field's own constraint (min=1) holds
    assert "--size" in refused.output


def test_settings_flags_names_each_setting_by_its_option() -> None:
    job = _Job(loud=True, paint=_Paint("red", 3))
    assert job.paint.flags() == {"--colour": "red", "--size": 3}
    flags = settings_flags(ModelFlags(model="m", api_key="sk-x"), GroundFlags(), max_steps=4)
    assert flags == {
        "--provider": None,
        "--model": "m",
        "--base-url": None,
        "--ground": None,
        "--ground-url": None,
        "--ground-model": None,
        "--ground-convention": None,
        "--max-steps": 4,
    }  # the key is not a setting: ModelFlags.key() gives it
    assert ModelFlags(api_key="sk-x").key() == "sk-x"


def test_an_option_two_groups_both_give_is_refused_by_name() -> None:
    def twice(*, first: _Paint, second: _Paint) -> None:
        pass

    with pytest.raises(TypeError, match="options given twice: colour, size"):
        grouped(twice)


def _options(command: Any) -> dict[str, tuple[Any, ...]]:
    return {
        p.name: (tuple(p.opts), p.help, p.default, p.envvar, p.metavar)
        for p in command.params
        if p.name
    }


@pytest.mark.parametrize(
    "path",
    [
        ("doctor",),
        ("mcp",),
        ("bench", "run"),
        ("practice",),
        ("replay",),
        ("workflow", "run"),
    ],
)
def test_every_command_with_the_model_options_shows_the_same_ones(path: tuple[str, ...]) -> None:
    tree: Any = typer.main.get_command(app)
    run = _options(tree.commands["run"])
    command = tree
    for name in path:
        command = command.commands[name]
    theirs = _options(command)
    for name in ("provider", "model", "base_url", "api_key", "api_key_file"):
        assert theirs[name] == run[name], (path, name)
    if path != ("practice",):  # practice grounds with --ground alone
        for name in ("ground", "ground_url", "ground_model"):
            assert theirs[name] == run[name], (path, name)
