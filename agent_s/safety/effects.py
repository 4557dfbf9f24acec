"""What an action will do to the desktop: its effects, read from the plan, for the safety gate.

``subject_for_action`` / ``subject_for_code`` build what the policy (``agent_s.safety.gate``)
judges:
the effects plus the words an approver and the user's rules need.

The gate (``agent_s.safety.gate``) judges effects, not action names. Every desktop action is first
planned into primitive operations (``agent_s.desktop.ops``); this module walks that plan and
follows the keyboard focus through it, so that each key, character, click, launch and focus
change is tied to the window that will receive it:

    effects = plan_effects(action.plan(points), windows)   # windows front-most first
    [e.kind for e in effects]        # e.g. ["focus", "key", "text", "key"] for set_cell_values

Rules of the walk (X11 with a click-to-focus window manager):
- keys and text go to the focused window: at the start the active window, after a click the
  window under the click, after ``Activate`` the window the backend would pick (the same
  matcher, ``agent_s.desktop.apps.match_windows``);
- after anything that may move the focus where we cannot follow (a launch, a window-switching
  key such as alt+tab, a click outside every known window while nothing was focused) the
  receiving window is unknown (``window`` None with ``known`` False), and the gate treats input
  to an unknown window as input that may reach a terminal;
- keys held during a click or a drag go to the window focused before it and to the one after.

Agent-level actions (notes, the code agent, done/fail) have effects of their own kinds. An
operation this module does not know becomes an ``unknown`` effect, which the gate refuses.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, TypedDict, TypeGuard

from typing_extensions import Never, Unpack

from agent_s.actions import (
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
    OsName,
    SaveToKnowledgeAction,
    ScrollAction,
    SetCellValuesAction,
    SwitchApplicationsAction,
    TypeAction,
    WaitAction,
)
from agent_s.desktop import ops
from agent_s.desktop.apps import match_windows
from agent_s.desktop.base import WindowInfo
from agent_s.desktop.ops import Point
from agent_s.keys import MODIFIERS
from agent_s.settings.config import fold_key, key_combo

EffectKind = Literal[
    "key",  # a key combination pressed (``keys``) into ``window``
    "text",  # characters typed (``text``) into ``window``
    "click",  # a mouse click (``button``) on ``window``
    "drag",  # a press on ``window`` dragged to and released on ``drop``
    "scroll",  # the wheel over ``window``
    "move",  # the pointer moved
    "launch",  # an application or file opened (``target``)
    "focus",  # ``window`` brought to the front (asked for as ``target``)
    "sleep",  # time passes
    "code",  # code runs (``text``, in ``language``)
    "delegate",  # the code agent starts; each of its code blocks is judged when written
    "note",  # notes kept for the model; nothing happens on the desktop
    "end",  # the task ends
    "unknown",  # something this module cannot describe: refused
]

RUN_CODE = "run_code"  # the subject name of a block of code (not an action)
_FOLDED_MODIFIERS = frozenset(fold_key(k) for k in MODIFIERS)
#: Key combinations after which the focused window cannot be predicted: window switchers,
#: workspace switchers, launchers and menus of desktop environments and window managers.
WINDOW_SWITCHERS: tuple[frozenset[str], ...] = tuple(
    key_combo(combo)
    for combo in (
        "alt+tab",
        "alt+escape",
        "alt+`",
        "alt+f1",
        "alt+f2",
        "alt+f6",
        "alt+f7",
        "win",
        "ctrl+alt+left",
        "ctrl+alt+right",
        "ctrl+alt+up",
        "ctrl+alt+down",
        "ctrl+alt+t",
        "ctrl+alt+tab",
        "ctrl+escape",
        "command+tab",
        "command+space",
        "command+`",
    )
)


@dataclass(frozen=True)
class Effect:
    """One thing an action does. ``window``: the window receiving it (None: none, or unknown:
    see ``known``). ``keys``: the key names pressed together, folded (``ctrl``, not
    ``ctrlleft``)."""

    kind: EffectKind
    window: WindowInfo | None = None
    known: bool = True  # False: the receiving window cannot be predicted
    keys: frozenset[str] = frozenset()  # key: pressed together; click, drag: held meanwhile
    text: str = ""
    button: str | None = None
    target: str = ""  # launch / focus: what was asked for
    drop: WindowInfo | None = None  # drag: the window it is released on
    language: str | None = None

    @property
    def delivers_input(self) -> bool:
        """Whether it sends characters or key presses (not only modifiers) to a window."""
        if self.kind == "text":
            return bool(self.text)
        return self.kind == "key" and bool(self.keys - _FOLDED_MODIFIERS)


def window_at(point: ops.Point, windows: Sequence[WindowInfo]) -> WindowInfo | None:
    """The front-most window containing ``point`` (``windows`` front-most first)."""
    for w in windows:
        if w.x <= point.x < w.x + w.width and w.y <= point.y < w.y + w.height:
            return w
    return None


def switches_windows(keys: Iterable[str]) -> bool:
    """Whether pressing ``keys`` together may move the focus to another window."""
    pressed = frozenset(fold_key(k) for k in keys)
    return any(combo <= pressed for combo in WINDOW_SWITCHERS)


class _EffectFields(TypedDict, total=False):
    """``Effect``'s fields after ``kind``, ``window`` and ``known``, as keywords."""

    keys: frozenset[str]
    text: str
    button: str | None
    target: str
    drop: WindowInfo | None
    language: str | None


class _Focus:
    """The window keys go to, followed through a plan."""

    def __init__(self, windows: Sequence[WindowInfo]) -> None:
        self.windows = tuple(windows)
        self.window = next((w for w in self.windows if w.active), None)
        self.known = self.window is not None

    def lose(self) -> None:
        self.window, self.known = None, False

    def to(self, window: WindowInfo | None) -> None:
        if window is not None:  # a click outside every window leaves the focus where it was
            self.window, self.known = window, True

    def effect(self, kind: EffectKind, **fields: Unpack[_EffectFields]) -> Effect:
        return Effect(kind, self.window, self.known, **fields)


def plan_effects(plan: Sequence[ops.Op], windows: Sequence[WindowInfo]) -> tuple[Effect, ...]:
    """The effects of carrying out ``plan`` on a desktop whose windows are ``windows``."""
    focus = _Focus(windows)
    found: list[Effect] = []
    for op in plan:
        match op:
            case ops.MoveTo():
                found.append(Effect("move"))
            case ops.Click(at=at, button=button, hold_keys=hold):
                target = window_at(at, focus.windows)
                if hold:
                    found.append(focus.effect("key", keys=_fold(hold)))
                focus.to(target)
                if hold:
                    found.append(focus.effect("key", keys=_fold(hold)))
                found.append(focus.effect("click", button=button, keys=_fold(hold)))
            case ops.Drag(start=start, end=end, button=button, hold_keys=hold):
                if hold:
                    found.append(focus.effect("key", keys=_fold(hold)))
                focus.to(window_at(start, focus.windows))
                drop = window_at(end, focus.windows)
                found.append(focus.effect("drag", button=button, drop=drop, keys=_fold(hold)))
                if hold:
                    found.append(focus.effect("key", keys=_fold(hold)))
            case ops.Scroll(at=at):
                found.append(Effect("scroll", window_at(at, focus.windows)))
            case ops.Hotkey(keys=keys):
                found.append(focus.effect("key", keys=_fold(keys)))
                if switches_windows(keys):
                    focus.lose()
            case ops.HoldAndPress(hold_keys=hold, press_keys=press):
                for key in press:
                    combo = (*hold, key)
                    found.append(focus.effect("key", keys=_fold(combo)))
                    if switches_windows(combo):
                        focus.lose()
            case ops.TypeText(text=text):
                found.append(focus.effect("text", text=text))
            case ops.Sleep():
                found.append(Effect("sleep"))
            case ops.Open(target=target):
                found.append(Effect("launch", target=target))
                focus.lose()  # the new window may take the focus
            case ops.Activate(app=app):
                matches = match_windows(app, focus.windows, fuzzy=True)
                if matches:
                    focus.to(matches[0])
                else:  # the backend refuses; if it did not, where the focus goes is unknown
                    focus.lose()
                found.append(focus.effect("focus", target=app))
            case _:
                found.append(Effect("unknown", text=repr(op)))
    return tuple(found)


# -- what the safety policy judges ------------------------------------------------------------


@dataclass(frozen=True)
class Subject:
    """What the policy judges: one action, or one block of code, and what it does.

    ``effects`` (``agent_s.safety.effects``) are what the policy reads: each key, character, click,
    launch and focus change with the window that receives it. The other fields describe the
    action for user rules and for the approver. ``unknown``: why the gate cannot judge it (an
    action it does not know): such a subject is refused in every mode."""

    action: str  # the action's name, or "run_code"
    description: str  # the action as one call, e.g. agent.type(text='ls')
    shown: str = ""  # the exact text, code or target, as an approver must see it
    texts: tuple[str, ...] = ()  # what ``text`` rules are matched against
    keys: tuple[frozenset[str], ...] = ()  # key combinations pressed, names folded
    app: str | None = None  # the window class acted on, or the app / file opened
    window: WindowInfo | None = None  # the window the action goes to, when known
    points: tuple[Point, ...] = ()
    language: str | None = None  # code: "python" or "bash"
    button: str | None = None  # click: the mouse button
    inert: bool = False  # does nothing on the desktop (wait, notes)
    delegates: bool = False  # call_code_agent: each block is judged when it is written
    effects: tuple[Effect, ...] = ()
    unknown: str = ""

    @property
    def noun(self) -> str:
        return "code block" if self.action == RUN_CODE else "action"


def subject_for_code(language: str, code: str) -> Subject:
    effect = Effect("code", text=code, language=language)
    return Subject(
        RUN_CODE,
        f"run {language} code ({len(code.splitlines())} lines)",
        code,
        (code,),
        language=language,
        effects=(effect,),
    )


_KNOWN_ACTIONS = frozenset(ACTION_MODELS.values())
_INERT = frozenset({"sleep", "note", "end", "move"})


def subject_for_action(
    action: ActionModel,
    points: Sequence[Point],
    windows: Sequence[WindowInfo],
    text: str,
    *,
    os: OsName = "linux",
) -> Subject:
    """The subject of a GUI action; ``windows`` front-most first (as they are when it runs);
    ``text`` its call text; ``os`` the platform whose key names the plan uses (the plan judged
    is the plan carried out). Every action of the union is matched here; one that is not (an
    action added without teaching the gate) gets an ``unknown`` subject, refused in every mode."""
    points, windows = tuple(points), tuple(windows)
    name = action.action
    if not _is_known(action):  # not one of the union's own models
        return Subject(name, text, unknown=f"the safety gate does not know {name!r}")
    shown = ""
    match action:
        case TypeAction():
            shown = action.text + ("\n" if action.enter else "")
        case HotkeyAction():
            shown = "+".join(action.keys)
        case HoldAndPressAction():
            shown = f"hold {'+'.join(action.hold_keys)}, press {' '.join(action.press_keys)}"
        case OpenAction():
            shown = action.app_or_filename
        case SwitchApplicationsAction():
            shown = action.app_code
        case SetCellValuesAction():
            shown = "\n".join(f"{k} = {v!r}" for k, v in action.cell_values.items())
            shown = f"in {action.app_name!r}:\n{shown}"
        case ClickAction() | ScrollAction() | DragAndDropAction() | HighlightTextSpanAction():
            pass
        case WaitAction():
            pass
        case SaveToKnowledgeAction():
            notes = "\n".join(action.text)
            return Subject(
                name,
                text,
                texts=tuple(action.text),
                inert=True,
                effects=(Effect("note", text=notes),),
            )
        case CallCodeAgentAction():
            task = action.task or ""
            return Subject(
                name,
                text,
                shown=task,
                texts=(task,),
                delegates=True,
                effects=(Effect("delegate", text=task),),
            )
        case DoneAction() | FailAction():
            return Subject(name, text, inert=True, effects=(Effect("end"),))
        case AskUserAction():  # the question goes to the user, nothing to the desktop
            return Subject(
                name,
                text,
                shown=action.question,
                texts=(action.question,),
                inert=True,
                effects=(Effect("note", text=action.question),),
            )
        case _:
            _exhaustive(action)
            return Subject(name, text, unknown=f"the safety gate does not know {name!r}")
    effects = plan_effects(action.plan(points, os=os), windows)
    window = _receiver(effects, windows)
    app = window.app if window is not None else None
    if isinstance(action, OpenAction):
        app, window = action.app_or_filename, None
    elif isinstance(action, SwitchApplicationsAction) and window is None:
        app = action.app_code
    texts = [e.text for e in effects if e.kind == "text"]
    texts += [e.target for e in effects if e.kind in ("launch", "focus")]
    return Subject(
        name,
        text,
        shown=shown,
        texts=tuple(texts),
        keys=tuple(e.keys for e in effects if e.kind == "key"),
        app=app,
        window=window,
        points=points,
        button=next((e.button for e in effects if e.kind == "click"), None),
        inert=all(e.kind in _INERT for e in effects),
        effects=effects,
    )


def _is_known(action: ActionModel) -> TypeGuard[Action]:
    return type(action) in _KNOWN_ACTIONS


def _exhaustive(action: Never) -> None:
    """The type checker proves every action of the union is matched above (``assert_never``
    without the exception: at run time an unknown action is refused, not a crash)."""


def _receiver(effects: Sequence[Effect], windows: Sequence[WindowInfo]) -> WindowInfo | None:
    """The window the action mainly acts on: where its first input, click or focus goes."""
    for effect in effects:
        if effect.kind in ("key", "text", "click", "drag", "scroll", "focus") and effect.window:
            return effect.window
    return next((w for w in windows if w.active), None)


def _fold(keys: Iterable[str]) -> frozenset[str]:
    return frozenset(fold_key(k) for k in keys)


__all__ = [
    "RUN_CODE",
    "WINDOW_SWITCHERS",
    "Effect",
    "EffectKind",
    "Subject",
    "plan_effects",
    "subject_for_action",
    "subject_for_code",
    "switches_windows",
    "window_at",
]
