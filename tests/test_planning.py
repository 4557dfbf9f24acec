"""Plans read from the model's reply: what is accepted, what is refused and the feedback given,
the order subtasks run in, and the planner's own example."""

from __future__ import annotations

import json

import pytest

from agent_s.planning.manager import EXAMPLE_PLAN
from agent_s.planning.plan import (
    PLAN_MODES,
    CommandCheck,
    FileCheck,
    PlanError,
    PlanSettings,
    is_long,
    parse_plan,
)
from agent_s.prompting import load_template


def _plan(*subtasks: dict[str, object], **top: object) -> str:
    return "Plan:\n```json\n" + json.dumps({"subtasks": list(subtasks), **top}) + "\n```"


def _sub(id: str, *deps: str, **more: object) -> dict[str, object]:
    return {"id": id, "description": f"do {id}", "depends_on": list(deps), **more}


def test_the_planner_prompt_example_is_a_valid_plan() -> None:
    template = load_template("planner")
    system = template.render(
        "system",
        platform_summary="Linux",
        workers=template.render("workers_both"),
        example=EXAMPLE_PLAN,
    )
    assert EXAMPLE_PLAN in system
    plan = parse_plan(EXAMPLE_PLAN)
    assert [s.id for s in plan.order()] == ["write", "save"]
    assert plan.subtasks[1].check == FileCheck(kind="file", path="~/list.txt", contains="milk")


def test_dependencies_come_first_and_ties_keep_the_listed_order() -> None:
    plan = parse_plan(_plan(_sub("c", "b"), _sub("a"), _sub("b", "a"), _sub("d")))
    assert [s.id for s in plan.order()] == ["a", "b", "c", "d"]


def test_a_plan_without_a_fence_is_read_from_its_braces() -> None:
    text = 'Here it is: {"subtasks": [{"id": "one", "description": "x"}]} Good luck.'
    assert parse_plan(text).ids() == ("one",)


@pytest.mark.parametrize(
    ("reply", "feedback"),
    [
        (_plan(), "the plan has no subtasks"),
        (_plan(_sub("a", "b"), _sub("b", "c"), _sub("c", "a")), "cycle: a -> b -> c -> a"),
        (_plan(_sub("a", "a")), "depends on itself"),
        (_plan(_sub("a", "ghost")), "depends on 'ghost', which is not in the plan"),
        (_plan(_sub("a"), _sub("a")), "the subtask id 'a' is used twice"),
        (_plan(feasible=False), "an infeasible plan must give its reason"),
        ("I would open the editor first.", "the reply has no JSON object"),
        ("```json\n{subtasks: []}\n```", "not valid JSON"),
        ("```json\n[1, 2]\n```", "one JSON object"),
        (_plan({"id": "has space", "description": "x"}), "subtasks.0.id"),
        (_plan({"id": "a", "description": ""}), "subtasks.0.description"),
        (_plan(_sub("a", worker="robot")), "subtasks.0.worker"),
        (_plan(_sub("a", check={"kind": "shell", "cmd": "rm -rf ~"})), "subtasks.0.check"),
        (_plan(_sub("a", check={"kind": "command", "argv": []})), "subtasks.0.check.command.argv"),
        (_plan(*[_sub(f"s{i}") for i in range(13)]), "subtasks"),
    ],
)
def test_an_unusable_plan_is_refused_with_feedback(reply: str, feedback: str) -> None:
    with pytest.raises(PlanError) as caught:
        parse_plan(reply)
    assert feedback in str(caught.value)


def test_an_infeasible_plan_needs_no_subtasks() -> None:
    plan = parse_plan(_plan(feasible=False, reason="LibreOffice has no such setting"))
    assert not plan.feasible
    assert plan.reason == "LibreOffice has no such setting"
    assert plan.order() == []


def test_a_replan_may_depend_on_finished_subtasks_but_not_reuse_their_ids() -> None:
    plan = parse_plan(_plan(_sub("next", "done1")), done=["done1"])
    assert plan.subtasks[0].depends_on == ("done1",)
    assert [s.id for s in plan.order()] == ["next"]
    with pytest.raises(PlanError, match="'done1' is used twice"):
        parse_plan(_plan(_sub("done1")), done=["done1"])


def test_checks_are_data_a_command_is_an_argument_list() -> None:
    argv = ["test", "-s", "/tmp/out file.csv"]
    plan = parse_plan(_plan(_sub("a", check={"kind": "command", "argv": argv})))
    assert plan.subtasks[0].check == CommandCheck(kind="command", argv=tuple(argv))
    with pytest.raises(PlanError):  # a shell string is not an argument list
        parse_plan(_plan(_sub("a", check={"kind": "command", "argv": "test -s x"})))


def test_settings_and_the_auto_rule() -> None:
    assert PLAN_MODES == ("off", "auto", "always")
    assert PlanSettings().mode == "auto"
    with pytest.raises(ValueError, match="plan mode"):
        PlanSettings(mode="sometimes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="subtask_steps"):
        PlanSettings(subtask_steps=0)
    assert not is_long("Open the calculator and compute 7 times 6")
    assert is_long(" ".join(["word"] * 30))
