"""Typed actions: the models, the static parser for model replies, the catalogue and renderer.

action = parse_action('agent.click("the OK button", num_clicks=2)')
action.targets()                 # (Target(kind="element", text="the OK button"),)
action.plan([Point(640, 400)])   # [Click(at=Point(640, 400), clicks=2, ...)]
action.to_pyautogui([Point(640, 400)])
"""

from agent_s.actions.catalogue import action_catalogue, action_json_schema
from agent_s.actions.models import (
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
)
from agent_s.actions.parse import parse_action
from agent_s.actions.render import render
from agent_s.errors import ActionParseError

__all__ = [
    "ACTION_MODELS",
    "Action",
    "ActionModel",
    "ActionParseError",
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
    "parse_action",
    "render",
]
