"""Typed actions: the models, the static parser for model replies, the catalogue and renderer.

action = parse_action('agent.click("the OK button", num_clicks=2)')
action.targets()                 # (Target(kind="element", text="the OK button"),)
action.plan([Point(640, 400)])   # [Click(at=Point(640, 400), clicks=2, ...)]
action.to_pyautogui([Point(640, 400)])
action.plan([Point(640, 400)], os="darwin")  # key names of the platform (command+a)

Replies in other families' formats (UI-TARS, Anthropic / OpenAI computer use, Qwen-VL tool
calls, pyautogui code) are translated statically into the same actions; a literal coordinate
becomes the element description "(x, y)" (``agent_s.actions.pointing``).

May use: desktop (its operations), keys, errors. Used by: every stage that reads or carries
out an action (parse: the model's reply becomes one of these, never code that runs).
"""

from agent_s.actions.catalogue import action_catalogue, action_json_schema
from agent_s.actions.models import (
    ACTION_MODELS,
    Action,
    ActionModel,
    AskUserAction,
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
)
from agent_s.actions.parse import REPLY_STYLES, ParsedReply, ReplyStyle, parse_action, parse_reply
from agent_s.actions.pointing import literal_point, point_description
from agent_s.actions.render import render
from agent_s.errors import ActionParseError
from agent_s.keys import PLATFORMS, OsName, primary_modifier

__all__ = [
    "ACTION_MODELS",
    "REPLY_STYLES",
    "ParsedReply",
    "ReplyStyle",
    "parse_reply",
    "Action",
    "ActionModel",
    "ActionParseError",
    "AskUserAction",
    "PLATFORMS",
    "OsName",
    "CallCodeAgentAction",
    "ClickAction",
    "DoneAction",
    "DragAndDropAction",
    "FailAction",
    "HighlightTextSpanAction",
    "HoldAndPressAction",
    "HotkeyAction",
    "OpenAction",
    "SaveToKnowledgeAction",
    "ScrollAction",
    "SetCellValuesAction",
    "SwitchApplicationsAction",
    "Target",
    "TypeAction",
    "WaitAction",
    "action_catalogue",
    "action_json_schema",
    "literal_point",
    "parse_action",
    "point_description",
    "primary_modifier",
    "render",
]
