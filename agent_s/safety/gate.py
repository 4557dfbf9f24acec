"""The safety gate: every action (GUI or code) is judged before it runs: allow, ask, or deny.

    gate = SafetyGate(SafetyConfig(mode="confirm"), approver=my_callback)
    decision = gate.check(subject_for_code("bash", "rm -r build"))
    decision.allowed, decision.decided_by        # (True, "approver") if my_callback said yes

The policy (``Policy``) judges what an action will do, not its name: the action is planned into
primitive operations and walked with the keyboard focus (``agent_s.safety.effects``), so each key,
character, click, launch and focus change is tied to the window that receives it (after any
window switch the action itself makes). Its risks: running code; any characters or keys (not
only modifiers) reaching a terminal emulator, whichever action carries them (``type``,
``hotkey``, ``hold_and_press``, ``set_cell_values`` aimed at a terminal); keys reaching a window
that cannot be identified beforehand (after alt+tab inside ``hold_and_press``, say); pasting into
a terminal (keys, middle click, a drop, its right-click or modifier-click menus); key
combinations that end a session, close without saving or launch programs (``RISKY_KEYS``);
opening an application, URL, program or desktop entry outside the allow lists (and, when
``allow_apps`` is set, switching to an application outside it); whatever a user's ``risky``
rule matches. An action or operation the gate does not know is refused in every mode.

User rules decide next: ``deny`` beats ``allow`` beats the rest (an ``apps`` allow rule covers
an action only when every window it reaches is listed). Then the mode: ``auto`` allows,
``confirm`` asks when there is a risk, ``confirm-all`` asks for every action that does
something, ``deny-risky`` refuses what is risky. The agent judges an action against the windows
as they are when it runs, and ``SafetyGate.guard`` judges each operation again just before it is
carried out, so a window that takes the focus meanwhile cannot receive what was approved for
another.

"Ask" goes to the approver (the SDK's callback, ``cli.approve`` in the CLI) with the exact
text or code and, for screen actions, a crop of the screen with the target marked. When no
approver is wired, or it fails, the action is refused and the model is told why: an action
that needs approval is never silently allowed. An approval "always for this run" covers later
requests with the same risks until ``reset()``. ``done`` and ``fail`` are always allowed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from typing_extensions import assert_never

from agent_s.actions import (
    ACTION_MODELS,
)
from agent_s.desktop import ops
from agent_s.desktop.base import Screenshot, WindowInfo
from agent_s.desktop.ops import Point
from agent_s.errors import ActionExecutionError
from agent_s.guards.redaction import Redactor
from agent_s.marks import drawing as marks
from agent_s.safety.effects import (
    RUN_CODE,
    Effect,
    Subject,
    plan_effects,
    subject_for_action,
    subject_for_code,
)
from agent_s.safety.leaks import LeakWatch, key_chars
from agent_s.settings.config import ConfigError, SafetyConfig, key_combo

Verdict = Literal["allow", "ask", "deny"]

#: Window classes (WM_CLASS, lower case) of terminal emulators; any class containing "term"
#: counts too (xterm, uxterm, gnome-terminal-server, xfce4-terminal, ...).
TERMINALS = frozenset(
    {
        "konsole",
        "alacritty",
        "kitty",
        "tilix",
        "terminator",
        "urxvt",
        "rxvt",
        "st",
        "st-256color",
        "wezterm",
        "org.wezfurlong.wezterm",
        "foot",
        "footclient",
        "guake",
        "tilda",
        "yakuake",
        "sakura",
        "kgx",
        "org.gnome.console",
        "ptyxis",
        "org.gnome.ptyxis",
        "blackbox",
        "cool-retro-term",
        "qterminal",
        "lxterminal",
        "mate-terminal",
        "terminology",
        "eterm",
        "hyper",
        "tabby",
        "warp",
    }
)

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
    ("ctrl+alt+t", "opens a terminal on many desktops"),
    ("alt+f2", "opens a run-a-command dialog"),
    ("alt+f1", "opens the application launcher"),
    ("win", "opens the desktop's launcher or runs its shortcuts"),
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
    hard: bool = False  # needs the user even in mode auto (agent_s.safety.leaks)


@dataclass(frozen=True)
class Assessment:
    """The policy's answer for one subject, before anyone is asked."""

    verdict: Verdict
    risks: tuple[Risk, ...]
    decided_by: str  # "mode confirm", "rule 2", "always allowed"
    rule_note: str = ""


class Policy:
    """Applies a ``SafetyConfig`` (mode, allow lists, user rules) to subjects."""

    def __init__(self, config: SafetyConfig, watch: LeakWatch | None = None) -> None:
        for number, rule in enumerate(config.rules, 1):
            unknown = sorted(set(rule.actions) - _ACTION_NAMES)
            if unknown:
                raise ConfigError(
                    f"safety rule {number}: unknown action {unknown[0]!r}; actions are "
                    f"{', '.join(sorted(_ACTION_NAMES))}",
                    setting="safety.rules.actions",
                )
        self.config = config
        self._rules = [
            (n, r, r.combos, re.compile(r.text) if r.text else None)
            for n, r in enumerate(config.rules, 1)
        ]
        self._allowed_paths = [_normal(p) for p in config.allow_paths]
        self._allowed_apps = {a.strip().lower() for a in config.allow_apps}
        self.watch = watch or LeakWatch(Redactor(), config.secret_apps, config.allow_hosts)

    @property
    def mode(self) -> str:
        return self.config.mode

    def assess(self, subject: Subject) -> Assessment:
        if subject.unknown or any(e.kind == "unknown" for e in subject.effects):
            why = subject.unknown or "the action does something the safety gate cannot describe"
            return Assessment("deny", (Risk("unknown", why),), "unknown to the safety gate")
        if subject.action in ("done", "fail"):
            return Assessment("allow", (), "always allowed (ends the task)")
        risks = list(self.risks(subject))
        matched = [
            (n, rule)
            for n, rule, combos, text in self._rules
            if _matches(rule, combos, text, subject)
        ]
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
        if subject.inert or (mode == "auto" and not any(r.hard for r in risks)):
            return Assessment("allow", tuple(risks), by)
        if mode == "auto":  # a secret or a new web host: the user decides (agent_s.safety.leaks)
            return Assessment("ask", tuple(r for r in risks if r.hard), by)
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
        """The built-in risks of a subject's effects (user rules come on top)."""
        found: list[Risk] = []
        for effect in subject.effects:
            found.extend(self._effect_risks(effect))
        found += [Risk(key, reason, hard=True) for key, reason in self._leaks(subject)]
        unique = {risk.key + risk.reason: risk for risk in found}
        return list(unique.values())

    def _leaks(self, subject: Subject) -> Iterator[tuple[str, str]]:
        """Secrets and new web hosts (``agent_s.safety.leaks``): the characters each window receives
        from this subject, what it opens, the code it runs."""
        for window, chars in typed_chars(subject.effects).items():
            url_opens = window is None or is_terminal(window.app)
            yield from self.watch.typing_risks(window, chars, url_opens=url_opens)
        for effect in subject.effects:
            if effect.kind == "launch":
                yield from self.watch.launch_risks(effect.target)
            elif effect.kind == "code":
                yield from self.watch.code_risks(effect.text)

    def _effect_risks(self, effect: Effect) -> Iterator[Risk]:
        window = effect.window
        terminal = window.app if window is not None and is_terminal(window.app) else None
        match effect.kind:
            case "code":
                yield Risk(RUN_CODE, f"runs {effect.language or 'program'} code")
            case "key" | "text":
                if effect.delivers_input and not effect.known:
                    yield Risk(
                        "window:unknown",
                        "types into a window that cannot be identified "
                        "beforehand (it may be a terminal)",
                    )
                elif effect.delivers_input and terminal:
                    yield Risk(f"terminal:{terminal}", f"types into a terminal ({terminal})")
                for risky, name, reason in _RISKY_COMBOS:
                    if risky <= effect.keys:
                        yield Risk(f"keys:{name}", f"presses {name}, which {reason}")
                if terminal and any(paste <= effect.keys for paste in _TERMINAL_PASTE):
                    yield Risk(f"terminal:{terminal}", f"pastes into a terminal ({terminal})")
            case "click" | "drag":
                drop = effect.drop
                if effect.kind == "drag" and drop is not None and is_terminal(drop.app):
                    yield Risk(
                        f"terminal:{drop.app}",
                        f"drops onto a terminal ({drop.app}), which pastes what is dropped",
                    )
                if terminal and effect.button == "middle":
                    yield Risk(
                        f"terminal:{terminal}", f"middle-click pastes into a terminal ({terminal})"
                    )
                elif terminal and (effect.button != "left" or effect.keys):
                    how = "+".join((*sorted(effect.keys), effect.button or "left"))
                    yield Risk(
                        f"terminal:{terminal}",
                        f"{how}-clicks a terminal ({terminal}), "
                        "whose menus can paste or send signals",
                    )
            case "launch":
                if not self._open_allowed(effect.target):
                    reason = f"opens {effect.target!r}, which is not in the allow list"
                    yield Risk(f"open:{effect.target}", reason)
            case "focus":
                if self._allowed_apps and not (window and self._app_allowed(window)):
                    name = f"{window.app} ({window.title})" if window else repr(effect.target)
                    yield Risk(
                        f"focus:{effect.target}",
                        f"switches to {name}, which is not in the allow list",
                    )
            case "unknown":
                yield Risk("unknown", "does something the safety gate cannot describe")
            case "scroll" | "move" | "sleep" | "note" | "end" | "delegate":
                pass
            case _:
                assert_never(effect.kind)

    def _app_allowed(self, window: WindowInfo) -> bool:
        names = {window.app.strip().lower(), window.title.strip().lower()}
        return bool(names & self._allowed_apps)

    def _open_allowed(self, target: str) -> bool:
        target = target.strip()
        if "://" in target:
            return False
        if "/" in target or target.startswith("~"):
            path = _normal(target)
            inside = any(path == folder or folder in path.parents for folder in self._allowed_paths)
            return inside and not _runnable(path)
        return target.lower() in self._allowed_apps


def typed_chars(effects: Sequence[Effect]) -> dict[WindowInfo | None, str]:
    """The characters each window receives, in order (None: a window not known beforehand):
    typed text, and printable keys pressed alone or with shift."""
    typed: dict[WindowInfo | None, str] = {}
    for effect in effects:
        chars = effect.text if effect.kind == "text" else ""
        if effect.kind == "key" and effect.delivers_input:
            chars = key_chars(effect.keys)
        if chars:
            window = effect.window if effect.known else None
            typed[window] = typed.get(window, "") + chars
    return typed


def _normal(path: str) -> Path:
    return Path(os.path.normpath(os.path.expanduser(path))).resolve()


def _runnable(path: Path) -> bool:
    """Whether opening ``path`` may run it: a program, a script or a desktop entry."""
    if path.suffix.lower() in (".desktop", ".sh", ".bash", ".py", ".run", ".appimage", ".bin"):
        return True
    return path.is_file() and os.access(path, os.X_OK)


def _matches(
    rule: Any, combos: Sequence[frozenset[str]], text: re.Pattern[str] | None, subject: Subject
) -> bool:
    """Whether a user rule matches. ``apps``: a deny or risky rule matches when any window the
    action reaches (or app it opens) is listed; an allow rule only when every one is."""
    if rule.actions and subject.action not in rule.actions:
        return False
    if rule.apps:
        wanted = {a.strip().lower() for a in rule.apps}
        reached = [_app_names(app) for app in _reached_apps(subject)] or [set()]
        hits = [bool(names & wanted) for names in reached]
        if not (all(hits) if rule.effect == "allow" else any(hits)):
            return False
    if combos and not any(c <= pressed for c in combos for pressed in subject.keys):
        return False
    return not (text is not None and not any(text.search(t) for t in subject.texts))


def _app_names(app: str) -> set[str]:
    app = app.strip().lower()
    return {app, Path(app).name, Path(app).stem} - {""}


def _reached_apps(subject: Subject) -> list[str]:
    """The applications an action reaches: every window its effects go to, what it opens."""
    apps = [subject.app] if subject.app else []
    for effect in subject.effects:
        if effect.kind in ("launch", "focus") and effect.target:
            apps.append(effect.target)
        for window in (effect.window, effect.drop):
            if window is not None:
                apps.append(window.app)
    return apps


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
    reason: str = ""  # why it was refused, for the user ("it needs the user's approval ...")

    def to_json(self) -> dict[str, Any]:
        return {
            "allowed": self.allowed,
            "verdict": self.verdict,
            "decided_by": self.decided_by,
            "mode": self.mode,
            "risks": [r.reason for r in self.risks],
            "approver": self.approver,
            "message": self.message,
            "image": self.image,
            "reason": self.reason,
        }


ImageMaker = Callable[[], "tuple[bytes, Path | None]"]


class SafetyGate:
    """The policy plus the approver, with this run's "always" grants."""

    def __init__(
        self,
        config: SafetyConfig,
        approver: Approver | None = None,
        *,
        redactor: Redactor | None = None,
    ) -> None:
        """``redactor``: the run's, whose secrets are never typed outside ``secret_apps``."""
        watch = LeakWatch(redactor or Redactor(), config.secret_apps, config.allow_hosts)
        self.policy = Policy(config, watch)
        self.approver = approver
        self.name = str(getattr(approver, "name", "sdk callback")) if approver else None
        self._always: dict[str, str] = {}  # risk key -> who granted it

    def reset(self) -> None:
        """Forget the "always for this run" grants (a new run starts)."""
        self._always.clear()
        self.policy.watch.begin("")

    def begin(self, task: str) -> None:
        """A new task: the web hosts it names may be opened (``agent_s.safety.leaks``)."""
        self.reset()
        self.policy.watch.begin(task)

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
        nothing is executed and nobody is asked). What an allowed action types is remembered
        per window, so that a secret typed in pieces is seen whole (``agent_s.safety.leaks``)."""
        decision = self._decide(subject, step=step, substep=substep, ask=ask, image=image)
        if decision.allowed:
            for window, chars in typed_chars(subject.effects).items():
                self.policy.watch.typed(window, chars)
        return decision

    def _decide(
        self,
        subject: Subject,
        *,
        step: int | None,
        substep: int | None,
        ask: bool,
        image: ImageMaker | None,
    ) -> GateDecision:
        found = self.policy.assess(subject)
        mode, risks = self.policy.mode, found.risks
        reasons = "; ".join(r.reason for r in risks) or "every action needs approval"
        if found.verdict == "allow":
            return GateDecision(True, "allow", found.decided_by, mode, risks)
        if found.verdict == "deny":
            note = f" ({found.rule_note})" if found.rule_note else ""
            why = (
                f"the user's safety {found.decided_by}{note} forbids it"
                if found.decided_by.startswith("rule")
                else f"it {reasons}, and risky actions are not allowed in this run"
            )
            return _refused(subject, why, "deny", found.decided_by, mode, risks)
        keys = {r.key for r in risks} or {f"action:{subject.action}"}
        if keys <= self._always.keys():
            who = ", ".join(sorted({self._always[k] for k in keys}))
            return GateDecision(True, "ask", "approver (always for this run)", mode, risks, who)
        if not ask:
            return GateDecision(True, "ask", "not asked (dry run)", mode, risks)
        if self.approver is None:
            why = (
                f"it needs the user's approval ({reasons}) and nobody can approve actions "
                "in this run"
            )
            return _refused(subject, why, "ask", "nobody (no approver)", mode, risks)
        data, path = image() if image is not None else (None, None)
        request = ApprovalRequest(subject, risks, mode, step, substep, data, path)
        saved = str(path.name) if path is not None else None
        answer: object = None
        try:
            answer = self.approver(request)
        except Exception as err:  # an approver that breaks refuses; Ctrl-C still stops the run
            problem = f"asking for approval failed ({type(err).__name__}: {err})"
        else:
            problem = f"the approver answered {answer!r}, not an Approval or a bool"
        if isinstance(answer, bool):
            answer = Approval(answer)
        if not isinstance(answer, Approval):  # the approver failed: refused, and why
            return _refused(
                subject, problem, "ask", "approver failed", mode, risks, self.name, saved
            )
        who = answer.by or self.name or "approver"
        if not answer.granted:
            note = f": {answer.note}" if answer.note else ""
            why = f"the user ({who}) refused it{note}"
            return _refused(subject, why, "ask", "approver", mode, risks, who, saved)
        if answer.always:
            self._always.update(dict.fromkeys(keys, who))
        by = "approver (always for this run from now)" if answer.always else "approver"
        return GateDecision(True, "ask", by, mode, risks, who, image=saved)

    def guard(
        self,
        subject: Subject,
        decision: GateDecision,
        windows: Callable[[], Sequence[WindowInfo]],
        *,
        order: Callable[[], tuple[int, tuple[int, ...]]] | None = None,
        listed: Sequence[WindowInfo] | None = None,
    ) -> Callable[[ops.Op], None]:
        """A check to run before each operation of an allowed action (``perform(before=...)``):
        each key press, text and click is judged again against the windows as they are at that
        moment (``windows()``), so a window that takes the focus while the action runs (a slow
        program opening, a dialog) cannot receive what was approved for another. It raises
        ``GuardStopped`` when the operation now has a risk that was not allowed.

        ``order`` (``X11Backend.window_order``: the active window and the stacking, cheaply):
        the windows are listed again only when it changed since ``listed`` (the windows the
        decision was judged on) or the last listing."""
        approved = {r.key for r in decision.risks} | set(self._always)
        quiet = not any(e.kind in ("text", "key", "launch") for e in subject.effects)
        if self.policy.mode == "auto" and not self.policy.config.rules and quiet:
            return lambda op: None  # nothing is ever refused: no need to look
        seen = {_order_of(listed): tuple(listed)} if listed is not None else {}

        def current() -> Sequence[WindowInfo]:
            if order is None:
                return windows()
            now = order()
            if now not in seen:
                seen.clear()
                seen[now] = tuple(windows())
            return seen[now]

        def check(op: ops.Op) -> None:
            if not isinstance(op, _INPUT_OPS):
                return
            now = replace(subject, effects=plan_effects([op], current()))
            found = self.policy.assess(now)
            new = [r for r in found.risks if r.key not in approved]
            if found.verdict == "allow" or (found.verdict == "ask" and not new):
                return
            why = "; ".join(r.reason for r in new) or f"it is refused by {found.decided_by}"
            raise GuardStopped(
                f"stopped in the middle of the action, before {_op_words(op)}: the screen changed "
                f"since it was approved, and it now {why}. Look at the screen again."
            )

        return check


def _order_of(windows: Sequence[WindowInfo]) -> tuple[int, tuple[int, ...]]:
    """``X11Backend.window_order`` for a desktop whose windows are ``windows``."""
    return next((w.id for w in windows if w.active), 0), tuple(w.id for w in windows)


class GuardStopped(ActionExecutionError):
    """An allowed action was stopped part-way: an operation now has a risk not allowed."""


_INPUT_OPS = (
    ops.Click,
    ops.Drag,
    ops.Hotkey,
    ops.HoldAndPress,
    ops.TypeText,
    ops.Open,
    ops.Activate,
)


def _op_words(op: ops.Op) -> str:
    match op:
        case ops.TypeText(text=text):
            return f"typing {len(text)} characters"
        case ops.Hotkey(keys=keys):
            return f"pressing {'+'.join(keys)}"
        case _:
            return type(op).__name__.lower()


def _refused(
    subject: Subject,
    why: str,
    verdict: Verdict,
    decided_by: str,
    mode: str,
    risks: tuple[Risk, ...],
    approver: str | None = None,
    image: str | None = None,
) -> GateDecision:
    """A refusal: ``why`` for the user, and a message telling the model what to do instead."""
    message = (
        f"Refused: this {subject.noun} was not carried out, because {why}. Do not try it again; "
        "do the task another way, or end it with fail if it cannot be done without it."
    )
    return GateDecision(False, verdict, decided_by, mode, risks, approver, message, image, why)


# -- the picture an approver sees ---------------------------------------------------------------


def approval_image(
    screenshot: Screenshot,
    points: Sequence[Point],
    window: WindowInfo | None,
    *,
    max_side: int = 1280,
) -> bytes:
    """PNG: the screen around the action's targets (each marked with a red ring and ticks),
    or the window it goes to (outlined), or the whole screen; at most ``max_side`` pixels."""
    return marks.png(marks.approval_picture(screenshot, points, window, max_side=max_side))


__all__ = [
    "RISKY_KEYS",
    "RUN_CODE",
    "TERMINALS",
    "Approval",
    "ApprovalRequest",
    "Approver",
    "Assessment",
    "GateDecision",
    "GuardStopped",
    "Policy",
    "Risk",
    "SafetyGate",
    "Subject",
    "Verdict",
    "approval_image",
    "is_terminal",
    "subject_for_action",
    "subject_for_code",
]
