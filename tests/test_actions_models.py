"""The typed actions: constraints, key normalisation, targets, plans, sentinels, the catalogue."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from agent_s.actions import (
    ACTION_MODELS,
    Action,
    ActionModel,
    CallCodeAgentAction,
    ClickAction,
    DoneAction,
    DragAndDropAction,
    FailAction,
    HighlightTextSpanAction,
    HoldAndPressAction,
    HotkeyAction,
    OpenAction,
    SaveToKnowledgeAction,
    ScrollAction,
    SetCellValuesAction,
    SwitchApplicationsAction,
    Target,
    TypeAction,
    WaitAction,
    action_catalogue,
    action_json_schema,
)
from agent_s.actions.models import ENTER_PAUSE, NAME_BOX_PAUSE
from agent_s.desktop import ops

P, Q = ops.Point(10, 20), ops.Point(300, 400)

S3_ACTIONS = {
    "click",
    "type",
    "scroll",
    "drag_and_drop",
    "highlight_text_span",
    "hotkey",
    "hold_and_press",
    "open",
    "switch_applications",
    "set_cell_values",
    "save_to_knowledge",
    "call_code_agent",
    "wait",
    "done",
    "fail",
}
#: Our actions beyond Agent S3's: a question to the user (agent_s.loop.agent's ask_user).
ACTIONS = S3_ACTIONS | {"ask_user"}


def _error(model: type[ActionModel], **arguments: Any) -> str:
    with pytest.raises(ValidationError) as info:
        model(**arguments)
    return str(info.value)


def test_the_union_is_closed_over_the_s3_action_names() -> None:
    assert set(ACTION_MODELS) == ACTIONS
    adapter = TypeAdapter(Action)
    for name, model in ACTION_MODELS.items():
        assert model.model_fields["action"].default == name
        assert model.model_config["frozen"] is True
        assert model.model_config["extra"] == "forbid"
    action = adapter.validate_python({"action": "hotkey", "keys": ["Ctrl", "C"]})
    assert action == HotkeyAction(keys=("ctrl", "c"))
    with pytest.raises(ValidationError, match="does not match any of the expected tags"):
        adapter.validate_python({"action": "frobnicate"})


# -- plans and targets ----------------------------------------------------------------------------

PLANS: list[tuple[ActionModel, list[ops.Point], list[ops.Op]]] = [
    (
        ClickAction(
            element_description="OK", num_clicks=2, button_type="right", hold_keys=["Shift"]
        ),
        [P],
        [ops.Click(P, "right", 2, ("shift",))],
    ),
    (TypeAction(text="héllo"), [], [ops.TypeText("héllo")]),
    (
        TypeAction(element_description="the search box", text="x", overwrite=True, enter=True),
        [P],
        [
            ops.Click(P),
            ops.Hotkey(("ctrl", "a")),
            ops.Hotkey(("backspace",)),
            ops.TypeText("x"),
            ops.Sleep(ENTER_PAUSE),  # a dialog still taking the text drops an Enter sent at once
            ops.Hotkey(("enter",)),
        ],
    ),
    (
        TypeAction(element_description="box", enter=True),
        [P],
        [ops.Click(P), ops.Hotkey(("enter",))],
    ),
    (TypeAction(enter=True), [], [ops.Hotkey(("enter",))]),
    (ScrollAction(element_description="list", clicks=-3), [P], [ops.Scroll(P, -3)]),
    (
        ScrollAction(element_description="table", clicks=2, shift=True),
        [P],
        [ops.Scroll(P, 2, horizontal=True)],
    ),
    (
        DragAndDropAction(starting_description="a", ending_description="b", hold_keys=["alt"]),
        [P, Q],
        [ops.Drag(P, Q, hold_keys=("alt",))],
    ),
    (
        HighlightTextSpanAction(
            starting_phrase="Once upon", ending_phrase="the end", button="middle"
        ),
        [P, Q],
        [ops.Drag(P, Q, "middle")],
    ),
    (HotkeyAction(keys=["Control", "S"]), [], [ops.Hotkey(("ctrl", "s"))]),
    (
        HoldAndPressAction(hold_keys=["shift"], press_keys=["down", "down", "End"]),
        [],
        [ops.HoldAndPress(("shift",), ("down", "down", "end"))],
    ),
    (OpenAction(app_or_filename=" ~/notes.txt "), [], [ops.Open("~/notes.txt")]),
    (SwitchApplicationsAction(app_code="LibreOffice Calc"), [], [ops.Activate("LibreOffice Calc")]),
    (WaitAction(seconds=1.5), [], [ops.Sleep(1.5)]),
    (SaveToKnowledgeAction(text=["the code is 42"]), [], []),
    (ACTION_MODELS["ask_user"](question="Which March file?"), [], []),
    (CallCodeAgentAction(task="sum column B"), [], []),
    (CallCodeAgentAction(), [], []),
    (DoneAction(), [], []),
    (FailAction(reason="no such file"), [], []),
]


@pytest.mark.parametrize(
    ("action", "points", "expected"), PLANS, ids=lambda v: getattr(v, "action", "")
)
def test_plan(action: ActionModel, points: list[ops.Point], expected: list[ops.Op]) -> None:
    assert action.plan(points) == expected
    assert action.is_desktop is bool(expected)
    with pytest.raises(ValueError, match="point"):
        action.plan([*points, P])


def test_every_action_has_a_plan_example() -> None:
    assert {action.action for action, _, _ in PLANS} | {"set_cell_values"} == ACTIONS


def test_targets_name_elements_and_text_span_ends_in_order() -> None:
    assert ClickAction(element_description=" OK ").targets() == (Target("element", "OK"),)
    assert TypeAction(text="x").targets() == ()
    assert TypeAction(element_description="box", text="x").targets() == (Target("element", "box"),)
    assert ScrollAction(element_description="list", clicks=1).targets() == (
        Target("element", "list"),
    )
    drag = DragAndDropAction(starting_description="file", ending_description="bin")
    assert drag.targets() == (Target("element", "file"), Target("element", "bin"))
    span = HighlightTextSpanAction(starting_phrase="Once", ending_phrase="end.")
    assert span.targets() == (Target("text_start", "Once"), Target("text_end", "end."))
    assert str(span.targets()[0]) == "Once"
    for action in (HotkeyAction(keys=["a"]), WaitAction(seconds=1), DoneAction()):
        assert action.targets() == ()


def test_terminal_and_sentinels() -> None:
    assert DoneAction(answer="42").is_terminal
    assert FailAction().is_terminal
    assert not ClickAction(element_description="x").is_terminal
    assert DoneAction().to_pyautogui() == "DONE"
    assert FailAction().to_pyautogui() == "FAIL"
    assert SaveToKnowledgeAction(text=["n"]).to_pyautogui() == "WAIT"
    assert CallCodeAgentAction().to_pyautogui() == "WAIT"
    assert not DoneAction().is_desktop
    assert not SaveToKnowledgeAction(text=["n"]).is_desktop
    code = ClickAction(element_description="x", num_clicks=2).to_pyautogui([P])
    assert "pyautogui.click(10, 20, clicks=2, interval=0.05, button='left')" in code
    with pytest.raises(ValueError, match="1 point"):
        ClickAction(element_description="x").to_pyautogui()
    assert WaitAction(seconds=2).to_pyautogui() == "import time\ntime.sleep(2.0)"


def test_set_cell_values_plan_goes_through_the_name_box() -> None:
    action = SetCellValuesAction(
        cell_values={"b3": "he", "$C$1": 2.5, "D1": True, "E1": None, "F1": "a\nb", "G1": -7},
        app_name="budget.ods",
        sheet_name="It's data",
    )
    assert list(action.cell_values) == ["B3", "C1", "D1", "E1", "F1", "G1"]

    def goto(ref: str) -> list[ops.Op]:
        return [
            ops.Hotkey(("ctrl", "shift", "f5")),
            # until the Name Box has the focus (it takes a moment to take keys)
            ops.Sleep(NAME_BOX_PAUSE, settle=True, name_box=True, cell=ref),
            ops.TypeText(f"$'It''s data'.{ref}"),
            ops.Hotkey(("enter",)),
            ops.Hotkey(("delete",)),
        ]

    edit, commit = [ops.Hotkey(("f2",))], [ops.Hotkey(("delete",)), ops.Hotkey(("enter",))]
    assert action.plan([]) == [
        ops.Activate("budget.ods"),
        ops.Sleep(NAME_BOX_PAUSE, settle=True),
        *goto("B3"),
        *edit,
        ops.TypeText("he"),
        *commit,
        *goto("C1"),
        *edit,
        ops.TypeText("2.5"),
        *commit,
        *goto("D1"),
        *edit,
        ops.TypeText("TRUE"),
        *commit,
        *goto("E1"),
        *goto("F1"),
        *edit,
        ops.TypeText("a"),
        ops.Hotkey(("ctrl", "enter")),
        ops.TypeText("b"),
        *commit,
        *goto("G1"),
        *edit,
        ops.TypeText("-7"),
        *commit,
    ]
    plain = SetCellValuesAction(cell_values={"A1": False, "A2": ""}, app_name="Calc")
    assert plain.plan()[2:6] == [
        ops.Hotkey(("ctrl", "shift", "f5")),
        ops.Sleep(NAME_BOX_PAUSE, settle=True, name_box=True, cell="A1"),
        ops.TypeText("A1"),
        ops.Hotkey(("enter",)),
    ]
    assert ops.TypeText("FALSE") in plain.plan()
    assert hash(plain) == hash(
        SetCellValuesAction(cell_values={"A1": False, "A2": ""}, app_name="Calc")
    )


# -- keys -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("written", "canonical"),
    [
        ("Ctrl", "ctrl"),
        ("CONTROL", "ctrl"),
        ("Enter", "enter"),
        ("Return", "return"),
        ("cmd", "command"),
        ("super", "win"),
        ("PgDown", "pagedown"),
        ("F5", "f5"),
        ("A", "a"),
        ("/", "/"),
        ("arrowup", "up"),
    ],
)
def test_keys_are_normalised(written: str, canonical: str) -> None:
    assert HotkeyAction(keys=[written]).keys == (canonical,)
    assert ClickAction(element_description="x", hold_keys=[written]).hold_keys == (canonical,)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"keys": ["ctrl", "frobnicate"]}, "unknown key 'frobnicate'"),
        ({"keys": "ctrl+kk"}, "unknown key 'kk'"),
        ({"keys": ["ctrl+s", "s"]}, "key 's' is listed twice"),
        ({"keys": []}, "at least 1 item"),
        ({"keys": ["a"] * 7}, "at most 6 items"),
        ({"keys": ["ctrl", "Control"]}, "key 'ctrl' is listed twice"),
        ({"keys": [3]}, "a key must be a string"),
        ({"keys": [""]}, "key name must be a non-empty string"),
    ],
)
def test_bad_keys_are_rejected_clearly(arguments: dict[str, Any], message: str) -> None:
    assert message in _error(HotkeyAction, **arguments)


def test_hold_and_press_limits() -> None:
    assert "at least 1 item" in _error(HoldAndPressAction, hold_keys=[], press_keys=["a"])
    assert "at most 20 items" in _error(
        HoldAndPressAction, hold_keys=["shift"], press_keys=["a"] * 21
    )
    assert "at most 4 items" in _error(
        ClickAction, element_description="x", hold_keys=list("abcde")
    )


# -- constraints ----------------------------------------------------------------------------------

REJECTED: list[tuple[type[ActionModel], dict[str, Any], str]] = [
    (ClickAction, {}, "element_description\n  Field required"),
    (ClickAction, {"element_description": "   "}, "at least 1 character"),
    (ClickAction, {"element_description": "x" * 501}, "at most 500 characters"),
    (ClickAction, {"element_description": "x", "num_clicks": 0}, "greater than or equal to 1"),
    (ClickAction, {"element_description": "x", "num_clicks": 4}, "less than or equal to 3"),
    (ClickAction, {"element_description": "x", "num_clicks": True}, "got the boolean True"),
    (ClickAction, {"element_description": "x", "num_clicks": 1.5}, "fractional part"),
    (
        ClickAction,
        {"element_description": "x", "button_type": "top"},
        "'left', 'middle' or 'right'",
    ),
    (ClickAction, {"element_description": "x", "bogus": 1}, "Extra inputs are not permitted"),
    (TypeAction, {}, "type needs the text to type"),
    (TypeAction, {"element_description": "hello"}, "Give the text as text=..."),
    (TypeAction, {"text": "x" * 20_001}, "at most 20000 characters"),
    (TypeAction, {"text": "a\x00b"}, "U+0000, which cannot be typed"),
    (TypeAction, {"text": "a\x1bb"}, "U+001B"),
    (TypeAction, {"text": "\ud800"}, "unicode string"),
    (TypeAction, {"text": 2.5}, "the text to type must be a quoted string"),
    (TypeAction, {"text": True}, "got the boolean True"),
    (TypeAction, {"text": [1]}, "valid string"),
    (ScrollAction, {"element_description": "x", "clicks": 0}, "must not be 0"),
    (ScrollAction, {"element_description": "x", "clicks": 51}, "less than or equal to 50"),
    (ScrollAction, {"element_description": "x", "clicks": -51}, "greater than or equal to -50"),
    (DragAndDropAction, {"starting_description": "a"}, "ending_description"),
    (HighlightTextSpanAction, {"starting_phrase": "a", "ending_phrase": ""}, "at least 1 char"),
    (OpenAction, {"app_or_filename": ""}, "at least 1 character"),
    (SwitchApplicationsAction, {"app_code": "x" * 201}, "at most 200 characters"),
    (WaitAction, {"seconds": 0}, "greater than 0"),
    (WaitAction, {"seconds": 61}, "less than or equal to 60"),
    (WaitAction, {"seconds": float("nan")}, "finite number"),
    (WaitAction, {"seconds": False}, "got the boolean False"),
    (WaitAction, {"seconds": 1, "time": 2}, "give seconds or time, not both"),
    (SaveToKnowledgeAction, {"text": []}, "at least 1 item"),
    (SaveToKnowledgeAction, {"text": ["n"] * 51}, "at most 50 items"),
    (SaveToKnowledgeAction, {"text": [" "]}, "at least 1 character"),
    (CallCodeAgentAction, {"task": "x" * 2001}, "at most 2000 characters"),
    (DoneAction, {"answer": [42]}, "valid string"),
    (DoneAction, {"answer": False}, "got the boolean False"),
    (SaveToKnowledgeAction, {"text": True}, "valid tuple"),
]


@pytest.mark.parametrize(("model", "arguments", "message"), REJECTED)
def test_constraints_are_enforced(
    model: type[ActionModel], arguments: dict[str, Any], message: str
) -> None:
    assert message in _error(model, **arguments)


@pytest.mark.parametrize(
    ("cells", "message"),
    [
        ({}, "at least 1 item"),
        ({"B": 1}, "cell 'B' is not an A1 reference such as 'B3'"),
        ({"B0": 1}, "outside the sheet"),
        ({"XFE1": 1}, "outside the sheet"),
        ({"A1048577": 1}, "outside the sheet"),
        ({"Sheet2.A1": 1}, "not an A1 reference"),
        ({"a1": 1, "A1": 2}, "cell A1 is given twice"),
        ({"A1": [1]}, "cell A1: a value must be text, a number, true/false or None"),
        ({"A1": float("inf")}, "cell A1: inf is not a finite number"),
        ({"A1": "a\tb"}, "a tab or carriage return cannot go in a cell"),
        ({"A1": "a\x07"}, "U+0007"),
        ({f"A{n}": n for n in range(1, 1002)}, "at most 1000 items"),
    ],
)
def test_cell_values_are_checked(cells: dict[str, Any], message: str) -> None:
    assert message in _error(SetCellValuesAction, cell_values=cells, app_name="x.ods")


@pytest.mark.parametrize("sheet", ["a/b", "q?", "[x]", "'quoted'", ""])
def test_sheet_names_calc_cannot_have_are_rejected(sheet: str) -> None:
    _error(SetCellValuesAction, cell_values={"A1": 1}, app_name="x", sheet_name=sheet)


def test_values_keep_their_types_and_texts_are_stripped() -> None:
    action = SetCellValuesAction(
        cell_values={"A1": "1", "A2": 1, "A3": 1.0, "A4": True, "A5": None}, app_name=" x.ods "
    )
    assert [type(v) for v in action.cell_values.values()] == [str, int, float, bool, type(None)]
    assert action.app_name == "x.ods"
    assert TypeAction(text="  keep spaces  ").text == "  keep spaces  "
    assert TypeAction(text="tab\tand\nnewline\r\n").text == "tab\tand\nnewline\r\n"


def test_wait_accepts_s3_time_alias() -> None:
    assert WaitAction.model_validate({"time": 3}) == WaitAction(seconds=3)
    assert WaitAction(time=0.5).seconds == 0.5  # type: ignore[call-arg]


def test_actions_are_frozen_and_hashable() -> None:
    click = ClickAction(element_description="x")
    with pytest.raises(ValidationError, match="frozen"):
        click.num_clicks = 2  # type: ignore[misc]
    assert {click, ClickAction(element_description="x")} == {click}
    assert hash(SaveToKnowledgeAction(text=["a"])) == hash(SaveToKnowledgeAction(text=("a",)))


# -- catalogue and schemas ------------------------------------------------------------------------


def test_every_field_is_documented() -> None:
    for model in ACTION_MODELS.values():
        assert (model.__doc__ or "").strip(), model
        for name, field in model.model_fields.items():
            if name != "action":
                assert field.description, f"{model.__name__}.{name} has no description"


def test_catalogue_mentions_every_action_and_field_with_constraints() -> None:
    catalogue = action_catalogue()
    marked = action_catalogue(marks=True)  # the mark arguments are listed only with marks
    assert catalogue == action_catalogue()  # deterministic
    for name, model in ACTION_MODELS.items():
        assert f"agent.{name}(" in catalogue
        assert model.__doc__.strip().splitlines()[0] in catalogue  # type: ignore[union-attr]
        mark_fields = {mark for _, mark, _ in model.marked}
        for field_name, field in model.model_fields.items():
            if field_name != "action":
                line = f"    - {field_name}: {field.description}"
                assert line in marked
                assert (line in catalogue) is (field_name not in mark_fields), line
    assert (
        "agent.click(element_description: str, num_clicks: int = 1, "
        "button_type: 'left' | 'middle' | 'right' = 'left', hold_keys: list[str] = [])"
    ) in catalogue
    assert "- num_clicks: 1 for a click, 2 for a double click (1 to 3)" in catalogue
    assert "(required; more than 0 and at most 60)" in catalogue
    assert "agent.type(element_description: str | None = None, text: str = ''" in catalogue
    assert "Key names are pyautogui's" in catalogue


def test_json_schema_covers_every_action() -> None:
    schema = action_json_schema()
    assert json.dumps(schema, sort_keys=True) == json.dumps(action_json_schema(), sort_keys=True)
    assert set(schema["discriminator"]["mapping"]) == ACTIONS
    assert len(schema["oneOf"]) == len(ACTIONS)
    click = schema["$defs"]["ClickAction"]
    assert click["additionalProperties"] is False
    assert click["properties"]["num_clicks"] == {
        "default": 1,
        "description": "1 for a click, 2 for a double click",
        "maximum": 3,
        "minimum": 1,
        "type": "integer",
    }


# -- forgiving where the meaning is plain ---------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "arguments", "field", "value"),
    [
        (DoneAction, {"answer": 42}, "answer", "42"),
        (DoneAction, {"answer": 3.5}, "answer", "3.5"),
        (FailAction, {"reason": 404}, "reason", "404"),
        (SaveToKnowledgeAction, {"text": "the code is 4411"}, "text", ("the code is 4411",)),
        (SaveToKnowledgeAction, {"text": ["a", 7]}, "text", ("a", "7")),
        (HotkeyAction, {"keys": "ctrl+s"}, "keys", ("ctrl", "s")),
        (HotkeyAction, {"keys": ["ctrl+s"]}, "keys", ("ctrl", "s")),
        (HotkeyAction, {"keys": ["Ctrl+Shift+T"]}, "keys", ("ctrl", "shift", "t")),
        (HotkeyAction, {"keys": "ctrl c"}, "keys", ("ctrl", "c")),
        (HotkeyAction, {"keys": "enter"}, "keys", ("enter",)),
        (HotkeyAction, {"keys": "Return"}, "keys", ("return",)),
        (HotkeyAction, {"keys": "ctrl++"}, "keys", ("ctrl", "+")),
        (HotkeyAction, {"keys": "ctrl+plus"}, "keys", ("ctrl", "+")),
        (HotkeyAction, {"keys": "+"}, "keys", ("+",)),
        (HotkeyAction, {"keys": "page up"}, "keys", ("pageup",)),
        (HotkeyAction, {"keys": ["CTRL", "ALT", "T"]}, "keys", ("ctrl", "alt", "t")),
        (ClickAction, {"element_description": "x", "hold_keys": "ctrl"}, "hold_keys", ("ctrl",)),
        (HoldAndPressAction, {"hold_keys": "shift", "press_keys": "down"}, "press_keys", ("down",)),
        (TypeAction, {"text": 2026}, "text", "2026"),
    ],
)
def test_plain_values_are_read_as_they_obviously_mean(
    model: type[ActionModel], arguments: dict[str, Any], field: str, value: object
) -> None:
    assert getattr(model(**arguments), field) == value


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"hold_keys": ["shift"], "press_keys": "hello"}, "not the string 'hello'"),
        ({"hold_keys": ["shift"], "press_keys": ["ctrl+c"]}, "is a key combination"),
    ],
)
def test_press_keys_refuse_what_is_not_one_key_at_a_time(
    arguments: dict[str, Any], message: str
) -> None:
    assert message in _error(HoldAndPressAction, **arguments)


def test_type_with_an_element_and_no_text_is_refused_with_text_named() -> None:
    message = _error(TypeAction, element_description="hello")
    assert "text=" in message
    assert 'agent.type(text="hello")' in message
    # with something to do, an element alone is fine
    assert TypeAction(element_description="the Name field", overwrite=True).overwrite


# -- key names per platform -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("os", "modifier"), [("linux", "ctrl"), ("windows", "ctrl"), ("darwin", "command")]
)
def test_overwrite_selects_all_with_the_platform_modifier(os: Any, modifier: str) -> None:
    action = TypeAction(element_description="box", text="x", overwrite=True)
    assert action.plan([P], os=os) == [
        ops.Click(P),
        ops.Hotkey((modifier, "a")),
        ops.Hotkey(("backspace",)),
        ops.TypeText("x"),
    ]
    assert f"pyautogui.hotkey('{modifier}', 'a')" in action.to_pyautogui([P], os=os)


@pytest.mark.parametrize(("os", "modifier"), [("linux", "ctrl"), ("darwin", "command")])
def test_calc_shortcuts_use_the_platform_modifier(os: Any, modifier: str) -> None:
    plan = SetCellValuesAction(cell_values={"A1": "a\nb"}, app_name="x.ods").plan(os=os)
    combos = [op.keys for op in plan if isinstance(op, ops.Hotkey) and len(op.keys) > 1]
    assert combos == [(modifier, "shift", "f5"), (modifier, "enter")]


def test_every_plan_is_free_of_ctrl_on_macos_unless_the_model_wrote_it() -> None:
    for name, model in ACTION_MODELS.items():
        for call in model.examples:
            from agent_s.actions import parse_action

            action = parse_action(call)
            points = [ops.Point(1, 1)] * len(action.targets())
            written = "ctrl" in call
            for op in action.plan(points, os="darwin"):
                keys = getattr(op, "keys", ()) + getattr(op, "hold_keys", ())
                assert written or "ctrl" not in keys, (name, call, op)


def test_an_unknown_platform_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown platform"):
        HotkeyAction(keys=["a"]).plan(os="beos")  # type: ignore[arg-type]


def test_the_catalogue_names_the_platform_modifiers() -> None:
    assert "'command', 'option'" in action_catalogue(os="darwin")
    assert "'ctrl', 'alt', 'shift', 'win'" in action_catalogue()
