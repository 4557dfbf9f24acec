"""The typed actions: one frozen pydantic model per action, a closed union tagged by ``action``.

The field descriptions and the first line of each docstring are the model-facing documentation:
the prompt's action catalogue and the JSON schema for tool-calling models are generated from
them (``agent_s.actions.catalogue``), and the same definitions validate a parsed reply.

Each action knows which referring expressions must be grounded to screen points
(``targets()``) and what primitive desktop operations it becomes once they have been
(``plan(points)``); ``to_pyautogui(points)`` renders that plan as pyautogui code.

The pointing actions (click, type into a field, scroll, drag and drop) take each element in one
of two forms: a description (``element_description``), or the number of a mark drawn on the
screenshot (``mark=17``, ``starting_mark`` / ``ending_mark``) when the run shows marks
(set-of-marks, ``agent_s.marks.setofmarks``). A mark is a target like a description
(``Target.mark``); whether it is on the step's screenshot is checked against that step's mark
table, not here, since parsing knows nothing of the screen.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agent_s.actions.fields import (
    AppCode,
    Button,
    CellValues,
    Description,
    Float,
    Int,
    KeyList,
    MarkNumber,
    Note,
    Notes,
    PressKeys,
    ScrollClicks,
    SheetName,
    TypableText,
)
from agent_s.desktop import ops
from agent_s.keys import OsName, primary_modifier

TargetKind = Literal["element", "text_start", "text_end"]
Grounded = tuple[tuple[TargetKind, str], ...]
#: seconds between typed text and the Enter after it (GTK's file dialog drops one sent 50 ms after)
ENTER_PAUSE = 0.25
#: seconds between raising Calc or focusing its Name Box and typing a cell reference into it
NAME_BOX_PAUSE = 0.6


@dataclass(frozen=True)
class Target:
    """A referring expression to ground: a screen element, or the first/last words of a span.
    ``mark``: the element is the one under this numbered mark of the step's screenshot (its
    ``text`` is then ``"mark 17"``), found in the step's mark table rather than by a grounder."""

    kind: TargetKind
    text: str
    mark: int | None = None

    def __str__(self) -> str:
        return self.text


# -- the actions ----------------------------------------------------------------------------------


class ActionModel(BaseModel):
    """Base of every action."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    action: str
    terminal: ClassVar[bool] = False
    # (kind, field) of each referring expression to ground; an optional field left out is skipped
    grounded: ClassVar[Grounded] = ()
    sentinel: ClassVar[str | None] = None  # what OSWorld runners get instead of code
    # calls that parse to this action, shown in the catalogue and in error hints (tested)
    examples: ClassVar[tuple[str, ...]] = ()
    # (description field, its mark field, whether one of the two is required): the elements
    # that may be named by a mark instead of described; a mark wins over nothing, never both
    marked: ClassVar[tuple[tuple[str, str, bool], ...]] = ()
    mark_example: ClassVar[str] = ""  # a call naming a mark, shown when the run shows marks

    @model_validator(mode="before")
    @classmethod
    def _mark_stands_for_description(cls, data: Any) -> Any:
        # a required description is left out when its mark is given; elsewhere it stays required
        if isinstance(data, dict):
            for description, mark, required in cls.marked:
                if required and data.get(mark) is not None and description not in data:
                    data = {**data, description: None}
        return data

    @model_validator(mode="after")
    def _one_form_per_element(self) -> ActionModel:
        for description, mark, required in self.marked:
            described, numbered = getattr(self, description), getattr(self, mark)
            if described is not None and numbered is not None:
                raise ValueError(
                    f"give {description} or {mark}, not both: the mark alone names the element"
                )
            if required and described is None and numbered is None:
                shown = self.examples[0] if self.examples else f"agent.{self.action}()"
                raise ValueError(
                    f"missing required argument {description!r}: "
                    f"{type(self).model_fields[description].description}, e.g. {shown}"
                )
        return self

    @classmethod
    def argument_names(cls) -> tuple[str, ...]:
        """The arguments in positional order (every field but the ``action`` tag and the marks,
        ``mark_names``, which are given by name)."""
        marks = cls.mark_names()
        return tuple(name for name in cls.model_fields if name != "action" and name not in marks)

    @classmethod
    def mark_names(cls) -> tuple[str, ...]:
        """The mark arguments (``mark=17``), given by name only, after the others."""
        return tuple(mark for _, mark, _ in cls.marked)

    def targets(self) -> tuple[Target, ...]:
        """The referring expressions to ground to screen points, in order: each element's
        mark when it names one, else its description (an optional one left out is skipped)."""
        marks = {description: mark for description, mark, _ in self.marked}
        found: list[Target] = []
        for kind, name in self.grounded:
            number = getattr(self, marks[name]) if name in marks else None
            if number is not None:
                found.append(Target(kind, f"mark {number}", mark=number))
            elif (text := getattr(self, name)) is not None:
                found.append(Target(kind, text))
        return tuple(found)

    @property
    def mark_numbers(self) -> tuple[int, ...]:
        """The marks this action names, in order (none unless a mark field is set)."""
        return tuple(t.mark for t in self.targets() if t.mark is not None)

    def plan(self, points: Sequence[ops.Point] = (), *, os: OsName = "linux") -> list[ops.Op]:
        """The primitive desktop operations, given one screen point per target, with the key
        names of ``os`` ("linux", "windows" or "darwin": command+a rather than ctrl+a)."""
        points = list(points)
        if len(points) != len(self.targets()):
            raise ValueError(
                f"{self.action} needs {len(self.targets())} point(s), one per target; "
                f"got {len(points)}"
            )
        primary_modifier(os)  # rejects an unknown platform
        return self._plan_on(points, os)

    def _plan_on(self, points: list[ops.Point], os: OsName) -> list[ops.Op]:
        """The plan on ``os``; actions whose keys differ per platform override this."""
        return self._plan(points)

    def _plan(self, points: list[ops.Point]) -> list[ops.Op]:
        return []

    @property
    def is_terminal(self) -> bool:
        """Whether this action ends the task (``done``, ``fail``)."""
        return self.terminal

    @property
    def is_desktop(self) -> bool:
        """Whether this action does anything on the desktop (has a non-empty plan)."""
        return bool(self.plan([ops.Point(0, 0)] * len(self.targets())))

    def to_pyautogui(self, points: Sequence[ops.Point] = (), *, os: OsName = "linux") -> str:
        """pyautogui code for runners that execute code strings (OSWorld), or the sentinel
        "DONE" / "FAIL" / "WAIT" for an action that does nothing on the desktop."""
        from agent_s.actions.render import render

        plan = self.plan(points, os=os)
        return self.sentinel if self.sentinel is not None else render(plan, os=os)


class ClickAction(ActionModel):
    """Click an element on the screen."""

    action: Literal["click"] = "click"
    grounded: ClassVar[Grounded] = (("element", "element_description"),)
    examples: ClassVar[tuple[str, ...]] = (
        'agent.click("the Save button in the toolbar")',
        'agent.click("the file report.txt", num_clicks=2)',
        'agent.click("the selected paragraph", button_type="right")',
        'agent.click("the second row of the list", hold_keys=["ctrl"])',
    )
    marked: ClassVar[tuple[tuple[str, str, bool], ...]] = (("element_description", "mark", True),)
    mark_example: ClassVar[str] = "agent.click(mark=17)"
    element_description: Description | None = Field(
        description="the element to click, described by its visible text, icon, colour and "
        "position so that only one element on the screen fits",
    )
    num_clicks: Int = Field(1, ge=1, le=3, description="1 for a click, 2 for a double click")
    button_type: Button = Field("left", description="the mouse button")
    hold_keys: KeyList = Field(
        (), max_length=4, description="keys held down during the click, e.g. ['ctrl']"
    )
    mark: MarkNumber | None = Field(
        None, description="instead of element_description: the number of the mark on the element"
    )

    def _plan(self, points: list[ops.Point]) -> list[ops.Op]:
        (at,) = points
        return [ops.Click(at, self.button_type, self.num_clicks, self.hold_keys)]


class TypeAction(ActionModel):
    """Type text, optionally into an element that is clicked first."""

    action: Literal["type"] = "type"
    grounded: ClassVar[Grounded] = (("element", "element_description"),)
    examples: ClassVar[tuple[str, ...]] = (
        'agent.type(text="hello world")',
        'agent.type("the Search field", text="weather", enter=True)',
        'agent.type("the Name field", text="Ada", overwrite=True)',
    )
    marked: ClassVar[tuple[tuple[str, str, bool], ...]] = (("element_description", "mark", False),)
    mark_example: ClassVar[str] = 'agent.type(mark=4, text="weather", enter=True)'
    element_description: Description | None = Field(
        None,
        description="the text field to click before typing; omit it to type where the "
        "keyboard focus already is",
    )
    text: TypableText = Field("", description="the text to type, exactly as it should appear")
    overwrite: bool = Field(False, description="select all and delete the old text first")
    enter: bool = Field(False, description="press Enter after typing")
    mark: MarkNumber | None = Field(
        None,
        description="instead of element_description: the number of the mark on the text field",
    )

    @model_validator(mode="after")
    def _does_something(self) -> TypeAction:
        if self.text or self.overwrite or self.enter:
            return self
        if self.element_description:
            # agent.type("hello") reads "hello" as the element: refuse rather than type nothing
            raise ValueError(
                f"no text to type: {self.element_description!r} is the element to type into, "
                "not the text. Give the text as text=..., e.g. "
                f"agent.type(text={_quoted(self.element_description)}) to type it where the "
                'focus is, or agent.type("the Search field", text="weather") to click a field '
                "first"
            )
        raise ValueError(
            'type needs the text to type, e.g. agent.type(text="hello world") '
            "(or overwrite=True to clear a field, or enter=True)"
        )

    def _plan_on(self, points: list[ops.Point], os: OsName) -> list[ops.Op]:
        plan: list[ops.Op] = [ops.Click(at) for at in points]
        if self.overwrite:
            plan += [ops.Hotkey((primary_modifier(os), "a")), ops.Hotkey(("backspace",))]
        if self.text:
            plan.append(ops.TypeText(self.text))
        if self.enter:
            if self.text:  # a dialog that is still taking the text drops an Enter sent at once
                plan.append(ops.Sleep(ENTER_PAUSE))
            plan.append(ops.Hotkey(("enter",)))
        return plan


class ScrollAction(ActionModel):
    """Scroll inside an element."""

    action: Literal["scroll"] = "scroll"
    grounded: ClassVar[Grounded] = (("element", "element_description"),)
    examples: ClassVar[tuple[str, ...]] = (
        'agent.scroll("the list of messages", -5)',
        'agent.scroll("the wide table", 3, shift=True)',
    )
    marked: ClassVar[tuple[tuple[str, str, bool], ...]] = (("element_description", "mark", True),)
    mark_example: ClassVar[str] = "agent.scroll(mark=9, clicks=-5)"
    element_description: Description | None = Field(description="the element to scroll in")
    clicks: ScrollClicks = Field(
        ge=-50,
        le=50,
        description="wheel notches, not zero: positive scrolls up (or right with "
        "shift), negative scrolls down (or left with shift)",
    )
    shift: bool = Field(False, description="scroll horizontally instead of vertically")
    mark: MarkNumber | None = Field(
        None, description="instead of element_description: the number of the mark to scroll in"
    )

    def _plan(self, points: list[ops.Point]) -> list[ops.Op]:
        (at,) = points
        return [ops.Scroll(at, self.clicks, horizontal=self.shift)]


class DragAndDropAction(ActionModel):
    """Drag from one element and drop it on another."""

    action: Literal["drag_and_drop"] = "drag_and_drop"
    grounded: ClassVar[Grounded] = (
        ("element", "starting_description"),
        ("element", "ending_description"),
    )
    examples: ClassVar[tuple[str, ...]] = (
        'agent.drag_and_drop("the file notes.txt", "the Documents folder")',
    )
    marked: ClassVar[tuple[tuple[str, str, bool], ...]] = (
        ("starting_description", "starting_mark", True),
        ("ending_description", "ending_mark", True),
    )
    mark_example: ClassVar[str] = "agent.drag_and_drop(starting_mark=12, ending_mark=3)"
    starting_description: Description | None = Field(description="the element to drag")
    ending_description: Description | None = Field(description="where to drop it")
    hold_keys: KeyList = Field((), max_length=4, description="keys held down during the drag")
    starting_mark: MarkNumber | None = Field(
        None, description="instead of starting_description: the number of the mark to drag"
    )
    ending_mark: MarkNumber | None = Field(
        None, description="instead of ending_description: the number of the mark to drop on"
    )

    def _plan(self, points: list[ops.Point]) -> list[ops.Op]:
        start, end = points
        return [ops.Drag(start, end, hold_keys=self.hold_keys)]


class HighlightTextSpanAction(ActionModel):
    """Select a span of text on the screen by dragging from its first words to its last."""

    action: Literal["highlight_text_span"] = "highlight_text_span"
    grounded: ClassVar[Grounded] = (
        ("text_start", "starting_phrase"),
        ("text_end", "ending_phrase"),
    )
    examples: ClassVar[tuple[str, ...]] = (
        'agent.highlight_text_span("Once upon", "happily ever after.")',
    )
    starting_phrase: Description = Field(
        description="the first words of the span, exactly as they appear on the screen"
    )
    ending_phrase: Description = Field(
        description="the last words of the span, exactly as they appear on the screen"
    )
    button: Button = Field("left", description="the mouse button to drag with")

    def _plan(self, points: list[ops.Point]) -> list[ops.Op]:
        start, end = points
        return [ops.Drag(start, end, self.button)]


class HotkeyAction(ActionModel):
    """Press a key or a key combination."""

    action: Literal["hotkey"] = "hotkey"
    examples: ClassVar[tuple[str, ...]] = (
        'agent.hotkey(["ctrl", "s"])',
        'agent.hotkey(["enter"])',
    )
    keys: KeyList = Field(
        min_length=1,
        max_length=6,
        description="key names pressed together in this order, e.g. ['ctrl', 'c'] or ['enter']",
    )

    def _plan(self, points: list[ops.Point]) -> list[ops.Op]:
        return [ops.Hotkey(self.keys)]


class HoldAndPressAction(ActionModel):
    """Hold some keys down while pressing other keys one after another."""

    action: Literal["hold_and_press"] = "hold_and_press"
    examples: ClassVar[tuple[str, ...]] = (
        'agent.hold_and_press(["shift"], ["down", "down", "down"])',
        'agent.hold_and_press(hold_keys=["alt"], press_keys=["tab", "tab"])',
    )
    hold_keys: KeyList = Field(min_length=1, max_length=4, description="keys held down")
    press_keys: PressKeys = Field(
        min_length=1, max_length=20, description="keys pressed in turn while the others are held"
    )

    def _plan(self, points: list[ops.Point]) -> list[ops.Op]:
        return [ops.HoldAndPress(self.hold_keys, self.press_keys)]


class OpenAction(ActionModel):
    """Open an application by name, or a file by its path."""

    action: Literal["open"] = "open"
    examples: ClassVar[tuple[str, ...]] = (
        'agent.open("gedit")',
        'agent.open("~/Documents/report.odt")',
    )
    app_or_filename: Description = Field(
        description="an application name (e.g. 'gedit') or a file path (e.g. '~/notes.txt')"
    )

    def _plan(self, points: list[ops.Point]) -> list[ops.Op]:
        return [ops.Open(self.app_or_filename)]


class SwitchApplicationsAction(ActionModel):
    """Bring the window of an application that is already open to the front."""

    action: Literal["switch_applications"] = "switch_applications"
    examples: ClassVar[tuple[str, ...]] = ('agent.switch_applications("Firefox")',)
    app_code: AppCode = Field(description="the application's name or part of its window title")

    def _plan(self, points: list[ops.Point]) -> list[ops.Op]:
        return [ops.Activate(self.app_code)]


class SetCellValuesAction(ActionModel):
    """Write values into cells of a spreadsheet open in LibreOffice Calc."""

    action: Literal["set_cell_values"] = "set_cell_values"
    examples: ClassVar[tuple[str, ...]] = (
        'agent.set_cell_values({"A1": "Name", "B1": 3.5}, "budget.ods")',
        'agent.set_cell_values({"C2": "=SUM(A2:B2)"}, "budget.ods", sheet_name="Totals")',
    )
    cell_values: CellValues = Field(
        min_length=1,
        max_length=1000,
        description="cell reference -> value, e.g. {'A1': 'Name', "
        "'B1': 3.5, 'C1': True, 'D1': None}; None empties the cell. Text is typed into the cell, "
        "so Calc reads it as typed: '=SUM(B1:B9)' is a formula, a leading apostrophe keeps "
        "'007' as text, and AutoCorrect may change it (it capitalises the first word of a line)",
    )
    app_name: Description = Field(
        description="the spreadsheet's window, e.g. its file name as shown in the title bar"
    )
    sheet_name: SheetName | None = Field(
        None, description="the sheet to write to; omit it for the sheet on screen"
    )

    def __hash__(self) -> int:  # the dict field is not hashable; its items are
        return hash((type(self), tuple(self.cell_values.items()), self.app_name, self.sheet_name))

    def _plan_on(self, points: list[ops.Point], os: OsName) -> list[ops.Op]:
        # LibreOffice on macOS puts its ctrl shortcuts on command ("Command+Shift+F5").
        mod = primary_modifier(os)
        # Calc takes a moment after it is raised, and after ctrl+shift+F5, before keys reach
        # the Name Box: sent at once, the reference lands in the cell under the cursor. A busy
        # Calc (loaded machine, recalculation) takes longer than any fixed pause: the live
        # backends wait until Calc is idle (settle), and for the Name Box's focus (below);
        # rendered code pauses only.
        plan: list[ops.Op] = [ops.Activate(self.app_name), ops.Sleep(NAME_BOX_PAUSE, settle=True)]
        prefix = ""
        if self.sheet_name is not None:
            # Calc's own syntax for a cell of another sheet: $'Sheet name'.B3 ('' inside quotes).
            prefix = "$'" + self.sheet_name.replace("'", "''") + "'."
        for ref, value in self.cell_values.items():
            # ctrl+shift+F5 focuses Calc's Name Box (checked on LibreOffice 7.4 on a virtual
            # desktop: the box gets focus with its text selected; typing a reference and Enter
            # moves the cell cursor there, on another sheet too). It avoids F5 (the Navigator)
            # and does not depend on where the cursor was, unlike ctrl+Home plus arrow keys.
            # The live backends then wait until the Name Box shows that it has the focus (in
            # the accessibility tree), and stop the action if it never does.
            plan += [
                ops.Hotkey((mod, "shift", "f5")),
                ops.Sleep(NAME_BOX_PAUSE, settle=True, name_box=True, cell=ref),
            ]
            plan.append(ops.TypeText(prefix + ref))
            # Delete empties the selected cell. F2 then edits it: typing into a cell that is only
            # selected would replace whatever an earlier paste (non-ASCII text) put there.
            plan += [ops.Hotkey(("enter",)), ops.Hotkey(("delete",))]
            if value is None:
                continue
            plan.append(ops.Hotkey(("f2",)))
            for index, line in enumerate(_cell_text(value).split("\n")):
                if index:
                    plan.append(ops.Hotkey((mod, "enter")))  # a line break inside the cell
                if line:
                    plan.append(ops.TypeText(line))
            # AutoInput proposes the rest of a matching entry from the same column ("he" ->
            # "hello") as selected text that Enter would accept; Delete removes the proposal
            # and is a no-op at the end of typed text.
            plan += [ops.Hotkey(("delete",)), ops.Hotkey(("enter",))]
        return plan


def _quoted(text: str, limit: int = 60) -> str:
    """``text`` as a double-quoted literal for an example call, shortened to ``limit``."""
    text = " ".join(text.split())
    return json.dumps(text if len(text) <= limit else text[: limit - 3] + "...", ensure_ascii=False)


def _cell_text(value: str | int | float | bool) -> str:
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float):
        return repr(float(value))
    return value


class SaveToKnowledgeAction(ActionModel):
    """Keep notes that are shown to you on every later step of this task."""

    action: Literal["save_to_knowledge"] = "save_to_knowledge"
    examples: ClassVar[tuple[str, ...]] = (
        'agent.save_to_knowledge(["the invoice total is 418.20 EUR", "the order is 55-1234"])',
    )
    sentinel: ClassVar[str | None] = "WAIT"  # agent-level: nothing happens on the desktop
    text: Notes = Field(min_length=1, max_length=50, description="the notes, one fact per item")


class CallCodeAgentAction(ActionModel):
    """Hand a job to the code agent, which writes and runs code, then reports back."""

    action: Literal["call_code_agent"] = "call_code_agent"
    examples: ClassVar[tuple[str, ...]] = (
        'agent.call_code_agent("rename every .jpeg file in ~/Pictures to .jpg")',
        "agent.call_code_agent()",
    )
    sentinel: ClassVar[str | None] = "WAIT"
    task: Note | None = Field(
        None, description="what the code should do; omit it to hand over the whole task"
    )


class AskUserAction(ActionModel):
    """Ask the user one question, when the task is ambiguous and guessing could do harm."""

    action: Literal["ask_user"] = "ask_user"
    examples: ClassVar[tuple[str, ...]] = (
        'agent.ask_user("Which of the two invoices named March should I delete?")',
    )
    sentinel: ClassVar[str | None] = "WAIT"  # agent-level: nothing happens on the desktop
    question: Note = Field(description="the question, complete in itself")


class WaitAction(ActionModel):
    """Wait for the screen to change, e.g. while something loads."""

    action: Literal["wait"] = "wait"
    examples: ClassVar[tuple[str, ...]] = ("agent.wait(2)", "agent.wait(seconds=0.5)")
    seconds: Float = Field(
        gt=0, le=60, allow_inf_nan=False, description="how long to wait (also accepted as 'time')"
    )

    @model_validator(mode="before")
    @classmethod
    def _time_alias(cls, data: Any) -> Any:
        if isinstance(data, dict) and "time" in data:
            if "seconds" in data:
                raise ValueError("give seconds or time, not both")
            data = {("seconds" if k == "time" else k): v for k, v in data.items()}
        return data

    def _plan(self, points: list[ops.Point]) -> list[ops.Op]:
        return [ops.Sleep(self.seconds)]


class DoneAction(ActionModel):
    """End the task: it is complete."""

    action: Literal["done"] = "done"
    examples: ClassVar[tuple[str, ...]] = ("agent.done()", 'agent.done(answer="42 files")')
    terminal: ClassVar[bool] = True
    sentinel: ClassVar[str | None] = "DONE"
    answer: Note | None = Field(None, description="the answer, if the task asked a question")


class FailAction(ActionModel):
    """End the task: it cannot be completed."""

    action: Literal["fail"] = "fail"
    examples: ClassVar[tuple[str, ...]] = (
        'agent.fail(reason="the file does not exist and the task names no other")',
    )
    terminal: ClassVar[bool] = True
    sentinel: ClassVar[str | None] = "FAIL"
    reason: Note | None = Field(None, description="why the task cannot be completed")


Action = Annotated[
    ClickAction
    | TypeAction
    | ScrollAction
    | DragAndDropAction
    | HighlightTextSpanAction
    | HotkeyAction
    | HoldAndPressAction
    | OpenAction
    | SwitchApplicationsAction
    | SetCellValuesAction
    | SaveToKnowledgeAction
    | CallCodeAgentAction
    | AskUserAction
    | WaitAction
    | DoneAction
    | FailAction,
    Field(discriminator="action"),
]
"""Any action: a closed union discriminated by the ``action`` tag."""

#: Every action model by its name, in catalogue order.
ACTION_MODELS: dict[str, type[ActionModel]] = {
    model.model_fields["action"].default: model for model in get_args(get_args(Action)[0])
}
