"""The safety gate: every action (GUI or code) is judged before it runs: allow, ask, or deny.

    gate = SafetyGate(SafetyConfig(mode="confirm"), approver=my_callback)
    decision = gate.check(subject_for_code("bash", "rm -r build"))
    decision.allowed, decision.decided_by        # (True, "approver") if my_callback said yes

The policy (``Policy``) looks at what an action would do (``Subject``) and finds its risks:
running code, typing into a terminal (the window that gets the text is a terminal emulator),
pasting into a terminal, key combinations that end a session or close windows without saving
(``RISKY_KEYS``), opening an application or file outside the allow lists, and whatever a
user's ``risky`` rule matches. User rules decide first: ``deny`` beats ``allow`` beats the
rest. Then the mode: ``auto`` allows, ``confirm`` asks when there is a risk, ``confirm-all``
asks for every action that does something, ``deny-risky`` refuses what is risky.

"Ask" goes to the approver (the SDK's callback, ``cli.approve`` in the CLI) with the exact
text or code and, for screen actions, a crop of the screen with the target marked. When no
approver is wired, or it fails, the action is refused and the model is told why: an action
that needs approval is never silently allowed. An approval "always for this run" covers later
requests with the same risks until ``reset()``. ``done`` and ``fail`` are always allowed.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from PIL import Image, ImageDraw

from agent_s.actions import (
    ACTION_MODELS,
    ActionModel,
    CallCodeAgentAction,
    ClickAction,
    DragAndDropAction,
    HighlightTextSpanAction,
    HoldAndPressAction,
    HotkeyAction,
    OpenAction,
    SaveToKnowledgeAction,
    ScrollAction,
    SetCellValuesAction,
    SwitchApplicationsAction,
    TypeAction,
    WaitAction,
)
from agent_s.config import ConfigError, SafetyConfig, fold_key, key_combo
from agent_s.desktop.base import Screenshot, WindowInfo
from agent_s.desktop.ops import Point

Verdict = Literal["allow", "ask", "deny"]
RUN_CODE = "run_code"

#: Window classes (WM_CLASS, lower case) of terminal emulators; any class containing "term"
#: counts too (xterm, uxterm, gnome-terminal-server, xfce4-terminal, ...).
TERMINALS = frozenset({
    "konsole", "alacritty", "kitty", "tilix", "terminator", "urxvt", "rxvt", "st", "st-256color",
    "wezterm", "org.wezfurlong.wezterm", "foot", "footclient", "guake", "tilda", "yakuake",
    "sakura", "kgx", "org.gnome.console", "ptyxis", "org.gnome.ptyxis", "blackbox",
    "cool-retro-term", "qterminal", "lxterminal", "mate-terminal", "terminology", "eterm",
    "hyper", "tabby", "warp",
})  # fmt: skip

#: Key combinations that end a session, lock the screen or close/quit without saving.
RISKY_KEYS: tuple[tuple[str, str], ...] = (
    ("ctrl+alt+delete", "opens the log-out / restart dialog"),
    ("ctrl+alt+backspace", "kills the graphical session"),
    ("alt+f4", "closes the window, possibly without saving"),
    ("ctrl+f4", "closes the document, possibly without saving"),
    ("ctrl+w", "closes the document or tab, possibly without saving"),
    ("ctrl+q", "quits the application, possibly without saving"),
    ("win+l", "locks the screen"),
    ("ctrl+alt+l", "locks the screen"),
    ("command+q", "quits the application, possibly without saving"),
    ("command+w", "closes the window, possibly without saving"),
    ("command+option+escape", "opens the force-quit dialog"),
    ("ctrl+command+q", "locks the screen"),
    ("sleep", "suspends the computer"),
    *((f"ctrl+alt+f{n}", "switches to another virtual console") for n in range(1, 13)),
)
_TERMINAL_PASTE = (frozenset({"ctrl", "shift", "v"}), frozenset({"shift", "insert"}))
_RISKY_COMBOS = tuple((key_combo(combo), combo, reason) for combo, reason in RISKY_KEYS)
_ACTION_NAMES = frozenset(ACTION_MODELS) | {RUN_CODE}


def is_terminal(app: str | None) -> bool:
    """Whether a window class names a terminal emulator."""
    if not app:
        return False
    name = app.strip().lower()
    return name in TERMINALS or "term" in name


@dataclass(frozen=True)
class Risk:
    """Why an action is risky; ``key`` is what an "always for this run" approval covers."""

    key: str
    reason: str


@dataclass(frozen=True)
class Subject:
    """What the policy judges: one action, or one block of code, and what it acts on."""

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

    @property
    def noun(self) -> str:
        return "code block" if self.action == RUN_CODE else "action"


def subject_for_code(language: str, code: str) -> Subject:
    return Subject(RUN_CODE, f"run {language} code ({len(code.splitlines())} lines)", code,
                   (code,), language=language)  # fmt: skip


def subject_for_action(
    action: ActionModel, points: Sequence[Point], windows: Sequence[WindowInfo], text: str
) -> Subject:
    """The subject of a GUI action; ``windows`` front-most first; ``text`` its call text."""
    points = tuple(points)
    window = _window_at(points[0], windows) if points else None
    window = window or next((w for w in windows if w.active), None)
    app = window.app if window is not None else None
    base: dict[str, Any] = {"description": text, "window": window, "points": points, "app": app}
    name = action.action
    match action:
        case TypeAction():
            shown = action.text + ("\n" if action.enter else "")
            return Subject(name, shown=shown, texts=(action.text,), **base)
        case ClickAction():
            keys = (_fold(action.hold_keys),) if action.hold_keys else ()
            return Subject(name, keys=keys, button=action.button_type, **base)
        case DragAndDropAction():
            keys = (_fold(action.hold_keys),) if action.hold_keys else ()
            return Subject(name, keys=keys, **base)
        case HotkeyAction():
            return Subject(name, shown="+".join(action.keys), keys=(_fold(action.keys),), **base)
        case HoldAndPressAction():
            combos = tuple(_fold((*action.hold_keys, k)) for k in action.press_keys)
            shown = f"hold {'+'.join(action.hold_keys)}, press {' '.join(action.press_keys)}"
            return Subject(name, shown=shown, keys=combos, **base)
        case OpenAction() | SwitchApplicationsAction():
            target = action.app_or_filename if isinstance(action, OpenAction) else action.app_code
            base.update(app=target, window=None)
            return Subject(name, shown=target, texts=(target,), **base)
        case SetCellValuesAction():
            values = tuple(str(v) for v in action.cell_values.values() if v is not None)
            shown = "\n".join(f"{k} = {v!r}" for k, v in action.cell_values.items())
            return Subject(name, shown=shown, texts=(*values, action.app_name), **base)
        case CallCodeAgentAction():
            task = action.task or ""
            return Subject(name, shown=task, texts=(task,), delegates=True, **base)
        case SaveToKnowledgeAction() | WaitAction():
            notes = action.text if isinstance(action, SaveToKnowledgeAction) else ()
            return Subject(name, texts=tuple(notes), inert=True, **base)
        case ScrollAction() | HighlightTextSpanAction():
            return Subject(name, **base)
        case _:  # done, fail: always allowed
            return Subject(name, inert=True, **base)


def _fold(keys: Sequence[str]) -> frozenset[str]:
    return frozenset(fold_key(k) for k in keys)


def _window_at(point: Point, windows: Sequence[WindowInfo]) -> WindowInfo | None:
    for w in windows:  # front-most first
        if w.x <= point.x < w.x + w.width and w.y <= point.y < w.y + w.height:
            return w
    return None


@dataclass(frozen=True)
class Assessment:
    """The policy's answer for one subject, before anyone is asked."""

    verdict: Verdict
    risks: tuple[Risk, ...]
    decided_by: str  # "mode confirm", "rule 2", "always allowed"
    rule_note: str = ""


class Policy:
    """Applies a ``SafetyConfig`` (mode, allow lists, user rules) to subjects."""

    def __init__(self, config: SafetyConfig) -> None:
        for number, rule in enumerate(config.rules, 1):
            unknown = sorted(set(rule.actions) - _ACTION_NAMES)
            if unknown:
                raise ConfigError(
                    f"safety rule {number}: unknown action {unknown[0]!r}; actions are "
                    f"{', '.join(sorted(_ACTION_NAMES))}", setting="safety.rules.actions",
                )  # fmt: skip
        self.config = config
        self._rules = [
            (n, r, r.combos, re.compile(r.text) if r.text else None)
            for n, r in enumerate(config.rules, 1)
        ]
        self._allowed_paths = [_normal(p) for p in config.allow_paths]
        self._allowed_apps = {a.strip().lower() for a in config.allow_apps}

    @property
    def mode(self) -> str:
        return self.config.mode

    def assess(self, subject: Subject) -> Assessment:
        if subject.action in ("done", "fail"):
            return Assessment("allow", (), "always allowed (ends the task)")
        risks = list(self.risks(subject))
        matched = [(n, rule) for n, rule, combos, text in self._rules
                   if _matches(rule, combos, text, subject)]  # fmt: skip
        for n, rule in matched:
            if rule.effect == "deny":
                return Assessment("deny", tuple(risks), f"rule {n}", rule.note)
        for n, rule in matched:
            if rule.effect == "allow":
                return Assessment("allow", tuple(risks), f"rule {n}", rule.note)
        for n, rule in matched:
            risks.append(Risk(f"rule:{n}", rule.note or f"is marked risky by safety rule {n}"))
        by = f"mode {self.mode}"
        mode = self.mode
        if subject.inert or mode == "auto":
            return Assessment("allow", tuple(risks), by)
        if subject.delegates:  # its code blocks are judged one by one
            verdict: Verdict = "deny" if mode == "deny-risky" else "allow"
            reason = (Risk(RUN_CODE, "starts the code agent, which runs code"),)
            return Assessment(verdict, reason if verdict == "deny" else (), by)
        if mode == "confirm-all":
            return Assessment("ask", tuple(risks), by)
        if not risks:
            return Assessment("allow", (), by)
        return Assessment("ask" if mode == "confirm" else "deny", tuple(risks), by)

    def risks(self, subject: Subject) -> list[Risk]:
        """The built-in risks of a subject (user rules come on top)."""
        found: list[Risk] = []
        if subject.action == RUN_CODE:
            found.append(Risk(RUN_CODE, f"runs {subject.language or 'program'} code"))
        terminal = subject.window is not None and is_terminal(subject.app)
        if terminal and subject.action == "type":
            found.append(Risk(f"terminal:{subject.app}", f"types into a terminal ({subject.app})"))
        for combo in subject.keys:
            for risky, name, reason in _RISKY_COMBOS:
                if risky <= combo:
                    found.append(Risk(f"keys:{name}", f"presses {name}, which {reason}"))
            if terminal and any(paste <= combo for paste in _TERMINAL_PASTE):
                found.append(Risk(f"terminal:{subject.app}",
                                  f"pastes into a terminal ({subject.app})"))  # fmt: skip
        if terminal and subject.button == "middle":
            found.append(Risk(f"terminal:{subject.app}",
                              f"middle-click pastes into a terminal ({subject.app})"))  # fmt: skip
        if subject.action == "open" and not self._open_allowed(subject.shown):
            reason = f"opens {subject.shown!r}, which is not in the allow list"
            found.append(Risk(f"open:{subject.shown}", reason))
        unique = {risk.key + risk.reason: risk for risk in found}
        return list(unique.values())

    def _open_allowed(self, target: str) -> bool:
        target = target.strip()
        if "://" in target:
            return False
        if "/" in target or target.startswith("~"):
            path = _normal(target)
            return any(path == folder or folder in path.parents for folder in self._allowed_paths)
        return target.lower() in self._allowed_apps


def _normal(path: str) -> Path:
    return Path(os.path.normpath(os.path.expanduser(path))).resolve()


def _matches(rule: Any, combos: Sequence[frozenset[str]], text: re.Pattern[str] | None,
             subject: Subject) -> bool:  # fmt: skip
    if rule.actions and subject.action not in rule.actions:
        return False
    if rule.apps:
        app = (subject.app or "").strip().lower()
        names = {app, Path(app).name, Path(app).stem} - {""}
        if not names & {a.strip().lower() for a in rule.apps}:
            return False
    if combos and not any(c <= pressed for c in combos for pressed in subject.keys):
        return False
    return not (text is not None and not any(text.search(t) for t in subject.texts))


# -- asking --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ApprovalRequest:
    """What an approver is asked about. ``image``: PNG of the screen around the target with
    the target marked (``image_path`` where it was saved), for screen actions."""

    subject: Subject
    risks: tuple[Risk, ...]
    mode: str
    step: int | None = None
    substep: int | None = None
    image: bytes | None = field(default=None, repr=False)
    image_path: Path | None = None


@dataclass(frozen=True)
class Approval:
    """An approver's answer. ``always``: also grant later requests with the same risks in this
    run. ``by``: who decided (recorded in the trajectory)."""

    granted: bool
    by: str = ""
    always: bool = False
    note: str = ""


Approver = Callable[[ApprovalRequest], "Approval | bool"]


@dataclass(frozen=True)
class GateDecision:
    """The gate's final word on one subject, as recorded in the trajectory."""

    allowed: bool
    verdict: Verdict  # the policy's
    decided_by: str  # "mode auto", "rule 2", "approver", "approver (always for this run)", ...
    mode: str
    risks: tuple[Risk, ...] = ()
    approver: str | None = None  # who approved or refused, when someone was asked
    message: str = ""  # for the model, when refused
    image: str | None = None  # the approval image, when one was saved

    def to_json(self) -> dict[str, Any]:
        return {
            "allowed": self.allowed, "verdict": self.verdict, "decided_by": self.decided_by,
            "mode": self.mode, "risks": [r.reason for r in self.risks],
            "approver": self.approver, "message": self.message, "image": self.image,
        }  # fmt: skip


ImageMaker = Callable[[], "tuple[bytes, Path | None]"]


class SafetyGate:
    """The policy plus the approver, with this run's "always" grants."""

    def __init__(self, config: SafetyConfig, approver: Approver | None = None) -> None:
        self.policy = Policy(config)
        self.approver = approver
        self.name = str(getattr(approver, "name", "sdk callback")) if approver else None
        self._always: dict[str, str] = {}  # risk key -> who granted it

    def reset(self) -> None:
        """Forget the "always for this run" grants (a new run starts)."""
        self._always.clear()

    def check(
        self,
        subject: Subject,
        *,
        step: int | None = None,
        substep: int | None = None,
        ask: bool = True,
        image: ImageMaker | None = None,
    ) -> GateDecision:
        """Decide; ask the approver when the policy says so (``ask`` False: a dry run, where
        nothing is executed and nobody is asked)."""
        found = self.policy.assess(subject)
        mode, risks = self.policy.mode, found.risks
        reasons = "; ".join(r.reason for r in risks) or "every action needs approval"
        if found.verdict == "allow":
            return GateDecision(True, "allow", found.decided_by, mode, risks)
        if found.verdict == "deny":
            note = f" ({found.rule_note})" if found.rule_note else ""
            why = (f"the user's safety {found.decided_by}{note} forbids it"
                   if found.decided_by.startswith("rule") else
                   f"it {reasons}, and risky actions are not allowed in this run")  # fmt: skip
            return GateDecision(False, "deny", found.decided_by, mode, risks,
                                message=_refusal(subject, why))  # fmt: skip
        keys = {r.key for r in risks} or {f"action:{subject.action}"}
        if keys <= self._always.keys():
            who = ", ".join(sorted({self._always[k] for k in keys}))
            return GateDecision(True, "ask", "approver (always for this run)", mode, risks, who)
        if not ask:
            return GateDecision(True, "ask", "not asked (dry run)", mode, risks)
        if self.approver is None:
            why = (f"it needs the user's approval ({reasons}) and nobody can approve actions "
                   "in this run")  # fmt: skip
            return GateDecision(False, "ask", "nobody (no approver)", mode, risks,
                                message=_refusal(subject, why))  # fmt: skip
        data, path = image() if image is not None else (None, None)
        request = ApprovalRequest(subject, risks, mode, step, substep, data, path)
        saved = str(path.name) if path is not None else None
        try:
            answer = self.approver(request)
        except Exception as err:  # an approver that breaks refuses; Ctrl-C still stops the run
            why = f"asking for approval failed ({type(err).__name__}: {err})"
            return GateDecision(False, "ask", "approver failed", mode, risks, self.name,
                                _refusal(subject, why), saved)  # fmt: skip
        if isinstance(answer, bool):
            answer = Approval(answer)
        if not isinstance(answer, Approval):
            why = f"the approver answered {answer!r}, not an Approval or a bool"
            return GateDecision(False, "ask", "approver failed", mode, risks, self.name,
                                _refusal(subject, why), saved)  # fmt: skip
        who = answer.by or self.name or "approver"
        if not answer.granted:
            note = f": {answer.note}" if answer.note else ""
            why = f"the user ({who}) refused it{note}"
            return GateDecision(False, "ask", "approver", mode, risks, who,
                                _refusal(subject, why), saved)  # fmt: skip
        if answer.always:
            self._always.update(dict.fromkeys(keys, who))
        by = "approver (always for this run from now)" if answer.always else "approver"
        return GateDecision(True, "ask", by, mode, risks, who, image=saved)


def _refusal(subject: Subject, why: str) -> str:
    return (
        f"Refused: this {subject.noun} was not carried out, because {why}. Do not try it again; "
        "do the task another way, or end it with fail if it cannot be done without it."
    )


# -- the picture an approver sees ---------------------------------------------------------------


def approval_image(
    screenshot: Screenshot,
    points: Sequence[Point],
    window: WindowInfo | None,
    *,
    max_side: int = 1280,
) -> bytes:
    """PNG: the screen around the action's targets (each marked with a red ring and cross),
    or the window it goes to (outlined), or the whole screen; at most ``max_side`` pixels."""
    image = screenshot.image.convert("RGB")
    draw = ImageDraw.Draw(image)
    scale, origin = screenshot.scale, screenshot.origin

    def pixel(x: float, y: float) -> tuple[float, float]:
        return (x - origin.x) * scale, (y - origin.y) * scale

    box: tuple[float, float, float, float] = (0, 0, image.width, image.height)
    if points:
        marks = [pixel(p.x, p.y) for p in points]
        red = (255, 0, 0)
        for x, y in marks:  # a ring, with ticks outside it, leaves the target itself readable
            draw.ellipse((x - 30, y - 30, x + 30, y + 30), outline=red, width=3)
            for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1)):
                draw.line((x + dx * 33, y + dy * 33, x + dx * 48, y + dy * 48), fill=red, width=3)
            draw.point((x, y), fill=red)
        xs, ys = [m[0] for m in marks], [m[1] for m in marks]
        margin_x = max(240, (max(xs) - min(xs)) * 0.2)
        margin_y = max(160, (max(ys) - min(ys)) * 0.2)
        box = (min(xs) - margin_x, min(ys) - margin_y, max(xs) + margin_x, max(ys) + margin_y)
    elif window is not None:
        left, top = pixel(window.x, window.y)
        right, bottom = pixel(window.x + window.width, window.y + window.height)
        draw.rectangle((left, top, right - 1, bottom - 1), outline=(255, 0, 0), width=4)
        box = (left - 8, top - 8, right + 8, bottom + 8)
    clamped = (max(0, int(box[0])), max(0, int(box[1])),
               min(image.width, int(box[2])), min(image.height, int(box[3])))  # fmt: skip
    if clamped[2] - clamped[0] >= 8 and clamped[3] - clamped[1] >= 8:
        image = image.crop(clamped)
    image.thumbnail((max_side, max_side), Image.Resampling.LANCZOS)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", compress_level=3)
    return buffer.getvalue()


__all__ = [
    "RISKY_KEYS", "RUN_CODE", "TERMINALS", "Approval", "ApprovalRequest", "Approver",
    "Assessment", "GateDecision", "Policy", "Risk", "SafetyGate", "Subject", "Verdict",
    "approval_image", "is_terminal", "subject_for_action", "subject_for_code",
]  # fmt: skip
