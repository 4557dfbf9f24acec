"""Prompt templates: loaded from package data, rendered strictly.

Each role has one template file in ``prompts/`` (installed as ``agent_s.prompts``): worker,
reflection, code_agent, grounding_query, text_span. A file holds named sections, each starting
with a marker line ``<!-- section: NAME -->``; text before the first marker is a header comment
for people and is never sent. Variants of a role (one OS's hints, one coordinate convention) are
sections of the same file, not copies of it.

Each section is a Jinja2 template (``{{ name }}`` placeholders), rendered as plain text: no
autoescaping (prompts are not HTML) and ``StrictUndefined``. Rendering is strict: a placeholder
without a value, a value without a placeholder (checked against
``jinja2.meta.find_undeclared_variables``) and a syntax error all raise ``PromptTemplateError``
naming the template, the section and the variable. Values are text or integers; they are not
rendered again, so a task text containing ``{{`` or ``$`` is sent as written.

The role functions at the bottom assemble complete prompts; OS-specific text comes from the
``Platform`` passed in, never from the machine the code runs on. The worker's system prompt
also follows the grounder in use (``DescriptionStyle``): model-free grounders match labels, a
grounding model sees appearance, and with native grounding the model writes the point itself.
With set-of-marks (``marks``), the screenshot carries numbered marks the model may name
(``mark=17``) before that guidance, and each request lists the marks (``mark_list``).
What changes during a run (the open windows, today's date) is never part of a system prompt:
it goes into the requests (``open_windows``, ``today_line``), so the system prompt stays the
same for the whole run and a fixed date can be given to tests.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Literal

import jinja2
from jinja2 import meta

from agent_s.errors import AgentSError
from agent_s.guards.content import screen_content
from agent_s.keys import PLATFORMS, OsName, primary_modifier

if TYPE_CHECKING:
    from agent_s.desktop.base import WindowInfo

ROLES = (
    "worker",
    "reflection",
    "code_agent",
    "grounding_query",
    "text_span",
    "planner",
    "verifier",
    "judge",
    "practice",
    "model_check",
)
GroundingFrame = Literal["pixels", "grid1000"]
#: How the worker refers to elements: ``labels`` for the model-free grounders (accessibility
#: tree, OCR), which match text; ``appearance`` for a grounding model, which sees the image;
#: ``native``: the generation model writes the point itself.
DescriptionStyle = Literal["labels", "appearance", "native"]
OS_NAMES = PLATFORMS  # the OS names prompts have hints for: those actions are planned for

_SECTION = re.compile(r"^<!-- section: ([a-z][a-z0-9_.]*) -->[ \t]*$", re.MULTILINE)
_OS_NAMES: dict[str, str] = {"linux": "Linux", "windows": "Windows", "darwin": "macOS"}
#: Linux desktops that have their own hints section (``desktop.NAME`` in worker.md).
KNOWN_DESKTOPS = ("gnome", "kde", "xfce", "openbox")
# Plain text, not HTML: nothing is escaped. A missing value fails instead of rendering as "".
_JINJA = jinja2.Environment(
    autoescape=False,  # noqa: S701 - prompts are plain text sent to a model, never HTML
    undefined=jinja2.StrictUndefined,
    keep_trailing_newline=True,
)


class PromptTemplateError(AgentSError, ValueError):
    """A template could not be loaded or rendered with the values given."""

    def __init__(
        self, message: str, *, template: str, section: str = "", variables: Sequence[str] = ()
    ) -> None:
        super().__init__(message)
        self.template = template
        self.section = section
        self.variables = tuple(variables)


@dataclass(frozen=True)
class Platform:
    """The observed desktop the agent works on: OS, desktop environment, screen."""

    os: OsName
    screen_width: int
    screen_height: int
    desktop: str = ""  # lower-case desktop environment / window manager, "" if unknown
    monitors: int = 1

    def __post_init__(self) -> None:
        if self.os not in _OS_NAMES:
            raise ValueError(f"os must be one of {sorted(_OS_NAMES)}, not {self.os!r}")
        if self.screen_width < 1 or self.screen_height < 1 or self.monitors < 1:
            raise ValueError("screen size and monitor count must be positive")

    @property
    def os_label(self) -> str:
        return _OS_NAMES[self.os]

    @property
    def primary_modifier(self) -> str:
        """The key most shortcuts use, as an action key name."""
        return primary_modifier(self.os)

    def summary(self) -> str:
        """One line for prompts, e.g. ``Linux (openbox desktop), one 1920x1080 screen``."""
        desktop = f" ({self.desktop} desktop)" if self.desktop else ""
        screens = "one" if self.monitors == 1 else f"{self.monitors} monitors forming a"
        size = f"{self.screen_width}x{self.screen_height}"
        return f"{self.os_label}{desktop}, {screens} {size} screen"


def detect_platform(
    screen_width: int,
    screen_height: int,
    *,
    system: str,
    environ: Mapping[str, str],
    monitors: int = 1,
) -> Platform:
    """Build a ``Platform`` from ``sys.platform`` (or an OS name the user chose: ``linux``,
    ``windows``, ``darwin``) and the environment, read by the caller."""
    if system.startswith("linux"):
        os_name: OsName = "linux"
    elif system in ("win32", "cygwin", "windows"):
        os_name = "windows"
    elif system == "darwin":
        os_name = "darwin"
    else:
        raise ValueError(f"unsupported platform {system!r}")
    desktop = ""
    if os_name == "linux":
        named = ":".join(environ.get(k, "") for k in ("XDG_CURRENT_DESKTOP", "DESKTOP_SESSION"))
        parts = [p.strip().lower() for p in named.split(":") if p.strip()]
        known = [p for p in parts if p in KNOWN_DESKTOPS or p == "plasma"]
        chosen = known[0] if known else (parts[0] if parts else "")
        desktop = "kde" if chosen == "plasma" else chosen
    return Platform(os_name, screen_width, screen_height, desktop=desktop, monitors=monitors)


class PromptTemplate:
    """One role's template file: its sections, each compiled as a Jinja2 template."""

    def __init__(self, name: str, text: str) -> None:
        self.name = name
        markers = list(_SECTION.finditer(text))
        if not markers:
            raise PromptTemplateError(f"template {name!r} has no sections", template=name)
        sections: dict[str, str] = {}
        for marker, following in zip(markers, [*markers[1:], None], strict=True):
            section = marker.group(1)
            if section in sections:
                raise PromptTemplateError(
                    f"template {name!r} defines section {section!r} twice",
                    template=name,
                    section=section,
                )
            end = following.start() if following else len(text)
            sections[section] = text[marker.end() : end].strip("\n").rstrip()
        self._compiled: dict[str, jinja2.Template] = {}
        self._placeholders: dict[str, frozenset[str]] = {}
        for section, body in sections.items():
            try:
                self._placeholders[section] = frozenset(
                    meta.find_undeclared_variables(_JINJA.parse(body))
                )
                self._compiled[section] = _JINJA.from_string(body)
            except jinja2.TemplateSyntaxError as err:
                raise PromptTemplateError(
                    f"template {name!r} section {section!r} line {err.lineno}: {err.message}",
                    template=name,
                    section=section,
                ) from err

    @property
    def sections(self) -> tuple[str, ...]:
        return tuple(self._compiled)

    def has(self, section: str) -> bool:
        return section in self._compiled

    def placeholders(self, section: str) -> frozenset[str]:
        """The variables ``section`` reads (``jinja2.meta.find_undeclared_variables``)."""
        self._require(section)
        return self._placeholders[section]

    def render(self, section: str, /, **values: str | int) -> str:
        """Fill ``section``; every placeholder needs a value and every value a placeholder."""
        wanted = self.placeholders(section)
        missing = sorted(wanted - values.keys())
        if missing:
            raise PromptTemplateError(
                f"template {self.name!r} section {section!r}: no value for " + ", ".join(missing),
                template=self.name,
                section=section,
                variables=missing,
            )
        extra = sorted(values.keys() - wanted)
        if extra:
            raise PromptTemplateError(
                f"template {self.name!r} section {section!r} does not use " + ", ".join(extra),
                template=self.name,
                section=section,
                variables=extra,
            )
        for key, value in values.items():
            if not isinstance(value, (str, int)) or isinstance(value, bool):
                raise PromptTemplateError(
                    f"template {self.name!r} section {section!r}: {key} must be text or an "
                    f"integer, not {type(value).__name__}",
                    template=self.name,
                    section=section,
                    variables=[key],
                )
        try:
            return self._compiled[section].render(values)
        except jinja2.UndefinedError as err:  # e.g. an attribute the value does not have
            raise PromptTemplateError(
                f"template {self.name!r} section {section!r}: {err.message}",
                template=self.name,
                section=section,
            ) from err

    def _require(self, section: str) -> None:
        if section not in self._compiled:
            raise PromptTemplateError(
                f"template {self.name!r} has no section {section!r} "
                f"(it has: {', '.join(self._compiled)})",
                template=self.name,
                section=section,
            )


@cache
def load_template(role: str) -> PromptTemplate:
    """The template for ``role`` (one of ``ROLES``), read once from package data."""
    if role not in ROLES:
        raise PromptTemplateError(
            f"no prompt template for role {role!r}; roles are {', '.join(ROLES)}", template=role
        )
    text = resources.files("agent_s.prompts").joinpath(f"{role}.md").read_text(encoding="utf-8")
    return PromptTemplate(role, text)


def render(role: str, section: str, /, **values: str | int) -> str:
    """Render one section of one role's template strictly."""
    return load_template(role).render(section, **values)


# -- complete prompts, one function per role ---------------------------------------------------


def worker_system_prompt(
    platform: Platform,
    *,
    catalogue: str | None = None,
    style: DescriptionStyle = "labels",
    native_image: tuple[int, int] | None = None,
    code_agent: bool | None = None,
    marks: bool = False,
) -> str:
    """The GUI worker's system prompt: platform hints, the action catalogue, how to reply.

    ``catalogue`` defaults to the one generated from the action definitions. ``style`` says
    how to describe elements for the grounder in use (``DescriptionStyle``); ``native`` needs
    ``native_image`` (width, height of the screenshot as sent), in which the model writes each
    element's centre pixel after its description, and ``native_image`` alone implies it.
    ``code_agent``: whether ``call_code_agent`` is offered (None: whether the catalogue lists
    it); when it is not, the prompt does not mention the code agent at all. ``marks``: the
    screenshots carry numbered marks (set-of-marks), named with ``mark=N``; pass a catalogue
    made with ``action_catalogue(marks=True)`` (the default one is, then).
    """
    if catalogue is None:
        from agent_s.actions.catalogue import action_catalogue

        catalogue = action_catalogue(marks=marks)
    if code_agent is None:
        code_agent = "call_code_agent(" in catalogue
    template = load_template("worker")
    modifier = platform.primary_modifier
    hints = [template.render(f"hints.{platform.os}", primary_modifier=modifier)]
    if platform.os == "linux" and template.has(f"desktop.{platform.desktop}"):
        hints.append(template.render(f"desktop.{platform.desktop}"))
    if platform.monitors > 1:
        hints.append(template.render("multi_monitor", monitors=platform.monitors))
    if native_image is not None:
        style = "native"
    if style == "native":
        if native_image is None:
            raise ValueError("native grounding needs the size of the image sent (native_image)")
        width, height = native_image
        if width < 1 or height < 1:
            raise ValueError(f"the image size must be positive, not {width}x{height}")
        grounding = template.render("grounding.native", width=width, height=height)
    elif style in ("labels", "appearance"):
        grounding = template.render(f"grounding.{style}")
    else:
        raise ValueError(f"unknown description style {style!r}; use labels, appearance or native")
    if marks:
        grounding = template.render("grounding.marks") + "\n" + grounding
    return template.render(
        "system",
        platform_summary=platform.summary(),
        platform_hints="\n".join(hints),
        grounding=grounding,
        action_catalogue=catalogue.strip(),
        primary_modifier=modifier,
        code_agent=template.render("work.code_agent") if code_agent else "",
    )


#: At most this many open windows are listed in a request, and each title at most this long.
MAX_WINDOWS = 12
MAX_TITLE_CHARS = 80


def open_windows(windows: Sequence[WindowInfo]) -> str:
    """The open windows for a worker request, front-most first (as ``windows`` lists them):
    title, application, and which one has the keyboard focus; bounded, and framed as screen
    content (``agent_s.guards.content``): a title is text any program chooses."""
    if not windows:
        return render("worker", "no_windows")
    lines = []
    for window in windows[:MAX_WINDOWS]:
        title = " ".join(window.title.split()) or "(no title)"
        if len(title) > MAX_TITLE_CHARS:
            title = title[: MAX_TITLE_CHARS - 1].rstrip() + "\u2026"
        app = " ".join(window.app.split())
        line = f'- "{title}"' + (f" ({app})" if app else "")
        lines.append(line + (", focused" if window.active else ""))
    if len(windows) > MAX_WINDOWS:
        lines.append(f"- and {len(windows) - MAX_WINDOWS} more")
    return render("worker", "windows", lines=screen_content("window titles", "\n".join(lines)))


WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


def today_line(day: date) -> str:
    """``Today is Tuesday, 1 December 2026 (2026-12-01).``: English whatever the locale."""
    text = f"{WEEKDAYS[day.weekday()]}, {day.day} {MONTHS[day.month - 1]} {day.year}"
    return render("worker", "today", date=f"{text} ({day.isoformat()})")


def accessibility_snapshot(window: str, lines: Sequence[str], total: int) -> str:
    """The active window's named elements for a worker request (``lines`` already bounded)."""
    if not lines:
        raise ValueError("an accessibility snapshot needs at least one element")
    return render(
        "worker",
        "accessibility",
        elements=screen_content("accessibility names", "\n".join([f"window: {window}", *lines])),
        shown=len(lines),
        total=max(total, len(lines)),
    )


def mark_list(lines: Sequence[str], total: int) -> str:
    """The marks on the current screenshot for a worker request (``17: push button "Save"``
    per line, already bounded), of ``total`` controls found."""
    if not lines:
        return render("worker", "no_marks")
    return render(
        "worker",
        "marks",
        lines=screen_content("text on the screen", "\n".join(lines)),
        shown=len(lines),
        total=max(total, len(lines)),
    )


def reflection_system_prompt(platform: Platform, *, code_agent: bool = True) -> str:
    """The reviewer's system prompt: judge the progress (a verdict and its reason), never
    prescribe the next action. ``code_agent``: the worker may call the code agent, whose file
    edits the reviewer must count as progress."""
    template = load_template("reflection")
    return template.render(
        "system",
        platform_summary=platform.summary(),
        code_agent=template.render("code_agent") if code_agent else "",
    )


def code_agent_system_prompt(platform: Platform, *, max_steps: int, timeout_seconds: int) -> str:
    """The coding sub-agent's system prompt: one Python or Bash block per turn, then DONE/FAIL."""
    template = load_template("code_agent")
    return template.render(
        "system",
        platform_summary=platform.summary(),
        os_hints=template.render(f"hints.{platform.os}"),
        max_steps=max_steps,
        timeout_seconds=timeout_seconds,
    )


def grounding_query_prompt(
    expression: str, *, width: int, height: int, frame: GroundingFrame = "pixels"
) -> str:
    """Ask a grounding model where ``expression`` is in a ``width`` x ``height`` image.

    ``frame`` picks the coordinate convention the grounding model is asked to answer in.
    """
    values: dict[str, str | int] = {"expression": expression.strip()}
    if frame == "pixels":
        values.update(width=width, height=height)
    return render("grounding_query", frame, **values)


def judge_system_prompt(platform: Platform) -> str:
    """The best-of-N judge's system prompt: compare attempts' narratives and final screens,
    pick one (``ATTEMPT: n`` and ``REASON: ...``)."""
    return render("judge", "system", platform_summary=platform.summary())


def text_span_prompt(start_phrase: str, end_phrase: str, words: Sequence[str]) -> str:
    """Ask a model which numbered OCR words start and end a phrase span."""
    if not words:
        raise ValueError("text_span_prompt needs at least one OCR word")
    numbered = "\n".join(f"{i}: {word}" for i, word in enumerate(words))
    return render(
        "text_span",
        "query",
        start_phrase=start_phrase.strip(),
        end_phrase=end_phrase.strip(),
        words=numbered,
        last_index=len(words) - 1,
    )
