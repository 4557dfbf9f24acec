"""Prompt templates: strict rendering, platform-specific hints, and snapshots of every role.

Snapshots live in tests/snapshots/. After changing a template on purpose, rewrite them with
``AGENT_S_UPDATE_SNAPSHOTS=1 .venv/bin/pytest tests/test_prompts.py`` and review the diff.
"""

from __future__ import annotations

import re
from datetime import date
from importlib import resources

import pytest
from PIL import Image
from snapshots_check import UPDATE, assert_snapshot

from agent_s.actions import parse_action
from agent_s.actions.catalogue import action_catalogue
from agent_s.desktop.base import WindowInfo
from agent_s.grounding import TargetGrounding
from agent_s.grounding.query import parse_query
from agent_s.images import EncodedImage, ImageSpec, encode_screenshot
from agent_s.loop.context import build_messages, build_reflection_messages
from agent_s.models.types import ImagePart, Message, TextPart
from agent_s.prompting import (
    KNOWN_DESKTOPS,
    ROLES,
    Platform,
    PromptTemplate,
    PromptTemplateError,
    accessibility_snapshot,
    code_agent_system_prompt,
    detect_platform,
    grounding_query_prompt,
    load_template,
    open_windows,
    reflection_system_prompt,
    render,
    text_span_prompt,
    today_line,
    worker_system_prompt,
)
from agent_s.record.step import Step

LINUX = Platform("linux", 1920, 1080, desktop="openbox")
GNOME = Platform("linux", 1280, 800, desktop="gnome")
WINDOWS = Platform("windows", 2560, 1440, monitors=2)
MAC = Platform("darwin", 1440, 900)


def _conversation(messages: tuple[Message, ...]) -> str:
    """A request as text, images shown as placeholders: what the snapshot pins."""
    out = []
    for message in messages:
        out.append(f"===== {message.role}")
        for part in message.parts:
            if isinstance(part, ImagePart):
                out.append(f"[image {part.media_type} {part.width}x{part.height}]")
            else:
                assert isinstance(part, TextPart)
                out.append(part.text)
    return "\n".join(out) + "\n"


# -- snapshots ---------------------------------------------------------------------------------

# One worker snapshot carries the real generated catalogue (so a change to the actions shows up
# in exactly one file); the platform variants use a stand-in to pin the template alone.
STAND_IN = "(the action catalogue)"

RENDERED = {
    "worker_linux_openbox": lambda: worker_system_prompt(LINUX),
    "worker_linux_gnome": lambda: worker_system_prompt(GNOME, catalogue=STAND_IN),
    "worker_windows_two_monitors": lambda: worker_system_prompt(WINDOWS, catalogue=STAND_IN),
    "worker_darwin": lambda: worker_system_prompt(MAC, catalogue=STAND_IN),
    "worker_linux_native": lambda: worker_system_prompt(
        LINUX, catalogue=STAND_IN, native_image=(1280, 720)
    ),
    "worker_linux_appearance": lambda: worker_system_prompt(
        LINUX, catalogue=STAND_IN, style="appearance"
    ),
    "worker_linux_without_code_agent": lambda: worker_system_prompt(
        LINUX, catalogue=STAND_IN, code_agent=False
    ),
    "worker_accessibility": lambda: accessibility_snapshot(
        "Mousepad: notes.txt - Mousepad", ['- menu "File"', '- push button "Save" (Save file)'], 12
    ),
    "reflection_linux": lambda: reflection_system_prompt(LINUX),
    "reflection_without_code_agent": lambda: reflection_system_prompt(MAC, code_agent=False),
    "code_agent_linux": lambda: code_agent_system_prompt(LINUX, max_steps=20, timeout_seconds=60),
    "code_agent_windows": lambda: code_agent_system_prompt(
        WINDOWS, max_steps=20, timeout_seconds=60
    ),
    "code_agent_result": lambda: render(
        "code_agent",
        "result",
        step=3,
        language="bash",
        exit_status=0,
        output="total.ods\nreport.txt",
        remaining=17,
    ),
    "grounding_query_pixels": lambda: grounding_query_prompt(
        "the Save button in the toolbar", width=1280, height=720
    ),
    "grounding_query_grid1000": lambda: grounding_query_prompt(
        "the Save button in the toolbar", width=1280, height=720, frame="grid1000"
    ),
    "text_span": lambda: text_span_prompt(
        "The quick",
        "lazy dog.",
        ["The", "quick", "brown", "fox", "jumps", "over", "the", "lazy", "dog."],
    ),
}


@pytest.mark.parametrize("name", sorted(RENDERED))
def test_rendered_prompt_matches_its_snapshot(name: str) -> None:
    text = RENDERED[name]()
    assert text == text.strip()  # no stray blank lines at either end
    assert not re.search(r"\$\{?[a-z_]", text)  # every placeholder was filled
    assert_snapshot(name, text + "\n")


def _records() -> tuple[list[Step], EncodedImage]:
    blank = Image.new("RGB", (1920, 1080), "white")
    screen = encode_screenshot(blank, ImageSpec(max_long_side=1280))
    replies = [
        (
            "The desktop is empty. I open the text editor.",
            'agent.open(app_or_filename="mousepad")',
            ("ok", ""),
            (),
        ),
        (
            "The editor is open. I type the greeting.",
            'agent.type(text="Hello")',
            ("ok", ""),
            (),
        ),
        (
            "I save with the menu.",
            'agent.click(element_description="the File menu")',
            ("error", "the grounder found two File menus"),
            (TargetGrounding(target="the File menu", kind="element", grounder="ocr", point=None),),
        ),
        (
            "The File menu is in the editor window's menu bar.",
            'agent.click(element_description="File in the editor menu bar")',
            ("ok", ""),
            (
                TargetGrounding(
                    target="File in the editor menu bar",
                    kind="element",
                    grounder="ui-tars-1.5-7b",
                    point=(42, 61),
                ),
            ),
        ),
    ]
    records = [
        Step(
            step=i,
            image=screen,
            reply=f"{why}\n```python\n{action}\n```",
            action_text=action,
            outcome=outcome,
            detail=detail,
            grounding=grounding,
        )
        for i, (why, action, (outcome, detail), grounding) in enumerate(replies, 1)
    ]
    return records, screen


def test_worker_conversation_matches_its_snapshot() -> None:
    records, screen = _records()
    windows = [
        WindowInfo(1, "*Untitled 1 - Mousepad", "Mousepad", 10, 0, 0, 800, 600, active=True),
        WindowInfo(2, "Terminal", "XTerm", 11, 0, 0, 640, 400),
    ]
    messages = build_messages(
        "(system prompt)",
        "Write Hello in a new file and save it as hello.txt in the home folder.",
        records,
        screen,
        ["the file must be called hello.txt"],
        reflection="LOOPING\nThe File menu was clicked twice without effect.",
        max_steps=15,
        today=today_line(date(2026, 3, 14)),
        windows=open_windows(windows),
    )
    assert_snapshot("conversation_worker", _conversation(messages))


def test_reflection_conversation_matches_its_snapshot() -> None:
    records, screen = _records()
    messages = build_reflection_messages(
        "(system prompt)", "Write Hello in a new file and save it as hello.txt.", records, screen
    )
    assert_snapshot("conversation_reflection", _conversation(messages))


def test_a_changed_prompt_fails_its_snapshot() -> None:
    if UPDATE:
        pytest.skip("snapshots are being rewritten")
    changed = worker_system_prompt(LINUX).replace("exactly one action", "one or two actions")
    with pytest.raises(pytest.fail.Exception, match="differs from its snapshot"):
        assert_snapshot("worker_linux_openbox", changed + "\n")


# -- the worker prompt's content ---------------------------------------------------------------


def test_worker_prompt_carries_the_generated_catalogue() -> None:
    catalogue = action_catalogue().strip()
    assert catalogue
    assert catalogue in worker_system_prompt(LINUX)


def test_actions_named_in_the_worker_template_exist() -> None:
    text = resources.files("agent_s.prompts").joinpath("worker.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`([a-z_]+)`", text))
    assert named  # the template does refer to actions by name
    catalogue = action_catalogue()
    missing = sorted(n for n in named if not re.search(rf"\b{n}\(", catalogue))
    assert not missing, f"worker.md names actions the catalogue does not have: {missing}"


def test_hints_follow_the_observed_platform() -> None:
    linux, windows, mac = (worker_system_prompt(p) for p in (LINUX, WINDOWS, MAC))
    assert "Linux (openbox desktop), one 1920x1080 screen" in linux
    assert "no panel, no taskbar" in linux
    assert "ctrl+s" in linux
    assert "C:\\Users" not in linux
    assert "Spotlight" not in linux
    assert "Windows, 2 monitors forming a 2560x1440 screen" in windows
    assert "C:\\Users" in windows
    assert "all 2 monitors" in windows
    assert "/home/" not in windows
    assert "command+s" in mac
    assert "ctrl+s" not in mac
    assert "Spotlight" in mac
    assert "Activities overview" in worker_system_prompt(GNOME)
    assert "Activities overview" not in linux


def test_native_grounding_asks_for_a_point_in_the_image_sent() -> None:
    described = worker_system_prompt(LINUX, catalogue=STAND_IN)
    native = worker_system_prompt(LINUX, catalogue=STAND_IN, native_image=(1280, 720))
    assert "Never write coordinates yourself" in described
    assert "Never write coordinates" not in native
    assert "Every screenshot you are sent is 1280x720 pixels" in native
    assert "1280x720" not in described
    # Everything else is shared: the native prompt differs only in the grounding paragraph.
    assert native.split("You point at")[0] == described.split("Another component")[0]
    with pytest.raises(ValueError, match="must be positive"):
        worker_system_prompt(LINUX, catalogue=STAND_IN, native_image=(0, 720))


def test_description_guidance_follows_the_grounder() -> None:
    labels = worker_system_prompt(LINUX, catalogue=STAND_IN)  # the default: auto, a11y, ocr
    appearance = worker_system_prompt(LINUX, catalogue=STAND_IN, style="appearance")
    assert labels == worker_system_prompt(LINUX, catalogue=STAND_IN, style="labels")
    assert "exact visible label in double quotes first, then the kind of control" in labels
    assert "cannot see colours" in labels
    assert "blue" not in labels  # nothing invites a colour the grounder cannot match
    assert 'the blue "Send" button below the message box' in appearance
    assert "exact visible label" not in appearance
    for prompt in (labels, appearance):
        assert "Never write coordinates yourself" in prompt
    assert labels.split("Another component")[0] == appearance.split("Another component")[0]
    with pytest.raises(ValueError, match="needs the size of the image"):
        worker_system_prompt(LINUX, catalogue=STAND_IN, style="native")
    with pytest.raises(ValueError, match="unknown description style"):
        worker_system_prompt(LINUX, catalogue=STAND_IN, style="looks")  # type: ignore[arg-type]


def test_the_label_examples_are_what_the_model_free_grounders_read() -> None:
    """Each example description the labels guidance gives is read as a quoted label, with
    the kind of control (or an ordinal, container or position) the grounder uses."""
    text = render("worker", "grounding.labels")
    examples = re.findall(r"'(the [^']+)'", text)
    assert len(examples) >= 7
    for example in examples:
        query = parse_query(example)
        label = re.search(r'"([^"]+)"', example)
        assert label is not None, example
        assert query.quoted, example
        assert tuple(label.group(1).lower().split()) in query.phrases, (example, query)
        assert query.role or query.ordinal or query.container or query.positions, example


def test_every_action_call_in_the_worker_templates_parses() -> None:
    text = resources.files("agent_s.prompts").joinpath("worker.md").read_text(encoding="utf-8")
    calls = re.findall(r"`(agent\.([a-z_]+)\(.*?\))`", text)
    assert len(calls) >= 4
    for call, name in calls:
        action = parse_action(f"```python\n{call}\n```")
        assert action.action == name, call


def test_the_code_agent_is_mentioned_only_when_offered() -> None:
    offered = worker_system_prompt(LINUX)
    without = worker_system_prompt(LINUX, catalogue=action_catalogue(exclude=("call_code_agent",)))
    assert "call_code_agent" in offered
    assert "Save the file you are editing before you hand it over" in offered
    assert "reopen or reload it" in offered
    assert "code agent" not in without.lower()
    assert "call_code_agent" not in without
    assert "code agent" not in worker_system_prompt(LINUX, catalogue=STAND_IN).lower()
    assert "code agent" in worker_system_prompt(LINUX, catalogue=STAND_IN, code_agent=True)
    # the list stays a list: no blank line where the hint is left out
    assert "\n\n- Save facts" not in without
    reviewer = reflection_system_prompt(LINUX)
    assert "legitimate progress" in reviewer
    assert "code agent" not in reflection_system_prompt(LINUX, code_agent=False).lower()


def test_the_worker_is_told_what_vendors_tell_computer_use_models() -> None:
    prompt = worker_system_prompt(LINUX, catalogue=STAND_IN)
    for phrase in (
        "Drop-down lists, sliders and spin boxes are easier with the keyboard",
        "Page down, page up and the arrow keys also scroll",
        "scroll, enlarge the window or zoom out before concluding",
        "Close first-run dialogs",
        "may take a few seconds to show its window",
        "instead of opening it again",
        "a list of the open windows",
    ):
        assert phrase in prompt, phrase
    assert "Today is" not in prompt  # the date is request text, not the cached system prompt


def test_the_reviewer_judges_and_does_not_prescribe() -> None:
    prompt = reflection_system_prompt(LINUX)
    for verdict in ("ON TRACK:", "OFF TRACK:", "LOOPING:", "TASK COMPLETE:"):
        assert verdict in prompt
    assert "Judge, do not plan" in prompt
    assert "Do not tell the agent what to do next" in prompt
    assert "what to do next." not in prompt.replace("Do not tell the agent what to do next", "")
    assert "LOOPING" in render("reflection", "request", step=4)


def test_open_windows_are_listed_compactly_and_bounded() -> None:
    windows = [
        WindowInfo(1, "notes.txt  -\nMousepad", "Mousepad", 1, 0, 0, 10, 10, active=True),
        WindowInfo(2, "", "XTerm", 2, 0, 0, 10, 10),
        WindowInfo(3, "x" * 200, "", 3, 0, 0, 10, 10),
    ]
    text = open_windows(windows)
    assert text.splitlines() == [
        "Open windows, front-most first:",
        '<screen-content source="window titles">',
        '- "notes.txt - Mousepad" (Mousepad), focused',
        '- "(no title)" (XTerm)',
        '- "' + "x" * 79 + '\u2026"',
        "</screen-content>",
    ]
    many = [WindowInfo(i, f"w{i}", "App", i, 0, 0, 1, 1) for i in range(20)]
    lines = open_windows(many).splitlines()
    assert len(lines) == 1 + 1 + 12 + 1 + 1
    assert lines[-2] == "- and 8 more"
    assert open_windows([]) == "No windows are open."


def test_today_is_written_in_english_with_the_iso_date() -> None:
    assert today_line(date(2026, 12, 1)) == "Today is Tuesday, 1 December 2026 (2026-12-01)."
    assert today_line(date(2024, 2, 29)) == "Today is Thursday, 29 February 2024 (2024-02-29)."


def test_the_native_example_is_read_by_the_native_grounder() -> None:
    """The syntax the prompt teaches is the one ``grounding.native`` reads."""
    from agent_s.grounding.replies import parse_location

    native = worker_system_prompt(LINUX, catalogue=STAND_IN, native_image=(1280, 720))
    example = re.search(r'for example "([^"]+)"', native)
    assert example is not None
    location = parse_location(example.group(1))
    assert (location.kind, location.values, location.unit) == ("point", (1032.0, 688.0), False)


def test_no_credentials_sudo_or_benchmark_rules_in_any_template() -> None:
    forbidden = [
        r"password\s*(is|:|=)",
        r"\bsudo\s+(-\w|apt|pip|dnf|yum|sh\b)",
        r"\|\s*sudo",
        r"/home/user\b",
        r"osworld",
        r"windowsagentarena",
        r"androidworld",
    ]
    for role in ROLES:
        text = resources.files("agent_s.prompts").joinpath(f"{role}.md").read_text("utf-8")
        for pattern in forbidden:
            assert not re.search(pattern, text, re.IGNORECASE), (role, pattern)


# -- strict rendering --------------------------------------------------------------------------


@pytest.mark.parametrize("role", ROLES)
def test_every_section_of_every_template_renders(role: str) -> None:
    template = load_template(role)
    assert template.sections
    for section in template.sections:
        values = {name: f"<{name}>" for name in template.placeholders(section)}
        text = template.render(section, **values)
        assert text.strip()
        for name in values:
            assert f"<{name}>" in text


def test_sections_the_code_relies_on_exist() -> None:
    worker, code = load_template("worker"), load_template("code_agent")
    for os_name in ("linux", "windows", "darwin"):
        assert worker.has(f"hints.{os_name}")
        assert code.has(f"hints.{os_name}")
    for desktop in KNOWN_DESKTOPS:
        assert worker.has(f"desktop.{desktop}")


def test_a_missing_variable_names_the_template_section_and_variable() -> None:
    with pytest.raises(PromptTemplateError, match=r"'worker' section 'result': no value") as caught:
        render("worker", "result", step=3)
    assert "no value for result" in str(caught.value)
    error = caught.value
    assert (error.template, error.section, error.variables) == ("worker", "result", ("result",))


def test_an_unused_variable_fails() -> None:
    with pytest.raises(PromptTemplateError, match="does not use colour") as caught:
        render("worker", "task", task="x", colour="red")
    assert caught.value.variables == ("colour",)


def test_values_must_be_text_or_integers() -> None:
    with pytest.raises(PromptTemplateError, match=r"step must be text or an integer"):
        render("worker", "screen", step=2.5)  # type: ignore[arg-type]
    with pytest.raises(PromptTemplateError, match="must be text or an integer"):
        render("worker", "screen", step=True)


def test_values_are_not_scanned_for_placeholders() -> None:
    assert render("worker", "task", task="pay $5 to ${name}") == "Your task: pay $5 to ${name}"
    text = "{{ task }} {% if x %}{# note #}"
    assert render("worker", "task", task=text) == f"Your task: {text}"


def test_text_is_not_escaped() -> None:
    text = '<b>Tom & Jerry\'s</b> "notes"'
    assert render("worker", "task", task=text) == f"Your task: {text}"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("no sections here", "has no sections"),
        ("<!-- section: a -->\nx\n<!-- section: a -->\ny", "defines section 'a' twice"),
        ("<!-- section: a -->\ncosts {{ 5", "section 'a' line 1: unexpected end of template"),
        ("<!-- section: a -->\nx\n{% if y %}", "section 'a' line 2: Unexpected end of template"),
    ],
)
def test_malformed_templates_are_refused(text: str, message: str) -> None:
    with pytest.raises(PromptTemplateError, match=message):
        PromptTemplate("custom", text)


def test_sections_and_roles_must_exist() -> None:
    with pytest.raises(PromptTemplateError, match="has no section 'nope'"):
        render("worker", "nope")
    with pytest.raises(PromptTemplateError, match="no prompt template for role 'nope'"):
        load_template("nope")


def test_header_comment_is_not_part_of_any_section() -> None:
    template = PromptTemplate(
        "t", "<!-- notes {{ ignored }} -->\n<!-- section: a -->\n\nHi {{ who }}\n\n"
    )
    assert template.sections == ("a",)
    assert template.render("a", who="you") == "Hi you"


# -- role helpers ------------------------------------------------------------------------------


def test_grounding_query_frames() -> None:
    pixels = grounding_query_prompt("  the OK button ", width=1280, height=720)
    assert "1280 x 720 pixel screenshot" in pixels
    assert "0 <= x < 1280 and 0 <= y < 720" in pixels
    assert "Find this element: the OK button\n" in pixels
    grid = grounding_query_prompt("the OK button", width=1280, height=720, frame="grid1000")
    assert "1000" in grid
    assert "1280" not in grid


def test_text_span_numbers_the_words() -> None:
    prompt = text_span_prompt("Hello", "world", ["Hello", "big", "world"])
    assert "0: Hello\n1: big\n2: world" in prompt
    assert "<= 2" in prompt
    assert '{"start": null, "end": null}' in prompt
    with pytest.raises(ValueError, match="at least one"):
        text_span_prompt("a", "b", [])


def test_code_agent_prompt_states_its_limits() -> None:
    prompt = code_agent_system_prompt(LINUX, max_steps=12, timeout_seconds=45)
    assert "at most 12 turns" in prompt
    assert "after 45 seconds" in prompt
    assert "DONE or FAIL" in prompt
    assert "Bash and python3 are available" in prompt
    assert "Each block runs in a fresh process" in prompt
    assert "keep its format" in prompt
    assert "numbers stay numbers" in prompt


@pytest.mark.parametrize(
    ("system", "environ", "expected"),
    [
        ("linux", {"XDG_CURRENT_DESKTOP": "ubuntu:GNOME"}, ("linux", "gnome")),
        ("linux", {"XDG_CURRENT_DESKTOP": "KDE"}, ("linux", "kde")),
        ("linux", {"DESKTOP_SESSION": "plasma"}, ("linux", "kde")),
        ("linux", {"XDG_CURRENT_DESKTOP": "XFCE"}, ("linux", "xfce")),
        ("linux", {"DESKTOP_SESSION": "sway"}, ("linux", "sway")),
        ("linux", {}, ("linux", "")),
        ("win32", {"XDG_CURRENT_DESKTOP": "GNOME"}, ("windows", "")),
        ("windows", {"XDG_CURRENT_DESKTOP": "GNOME"}, ("windows", "")),
        ("darwin", {}, ("darwin", "")),
    ],
)
def test_detect_platform(system: str, environ: dict[str, str], expected: tuple[str, str]) -> None:
    platform = detect_platform(1920, 1080, system=system, environ=environ)
    assert (platform.os, platform.desktop) == expected
    assert (platform.screen_width, platform.screen_height) == (1920, 1080)


def test_platform_rejects_unknown_systems_and_sizes() -> None:
    with pytest.raises(ValueError, match="unsupported platform"):
        detect_platform(800, 600, system="freebsd14", environ={})
    with pytest.raises(ValueError, match="os must be"):
        Platform("beos", 800, 600)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="positive"):
        Platform("linux", 0, 600)
