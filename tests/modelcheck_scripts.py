"""Scripts for the scripted model server that answer `agent-s model check`'s battery as a model
of a given reply style and coordinate convention would, in the battery's order (reach, code,
see, act, native, ground, judge), computed from the shipped screens' truth boxes by hand here
(not by agent-s's transform chain), so a wrong reading in agent-s shows as a miss."""

from __future__ import annotations

from agent_s.modelcheck.battery import JUDGE_CASES, TASKS
from agent_s.modelcheck.screens import Control, Screen, screens
from agent_s.testing.scripted_replies import Step, reply


def _smart_resize(width: int, height: int) -> tuple[int, int]:
    """Qwen2.5-VL's size for the shipped screens (all well inside its pixel bounds)."""
    return round(width / 28) * 28, round(height / 28) * 28


def point_in(convention: str, screen: Screen, control: Control) -> tuple[float, float]:
    """Where a model of ``convention`` would point at ``control``'s centre, in its order."""
    width, height = screen.size
    cx = control.box.x + control.box.width / 2
    cy = control.box.y + control.box.height / 2
    frame, _, order = convention.partition("-")
    if frame == "pixels":
        x, y = cx, cy
    elif frame == "grid1000":
        x, y = cx * 1000 / width, cy * 1000 / height
    elif frame == "unit":
        x, y = cx / width, cy / height
    elif frame == "smart_resize":
        rw, rh = _smart_resize(width, height)
        x, y = cx * rw / width, cy * rh / height
    else:  # WxH: pixels of a fixed frame
        fw, fh = (int(v) for v in frame.split("x"))
        x, y = cx * fw / width, cy * fh / height
    return (y, x) if order == "yx" else (x, y)


def _text(point: tuple[float, float], convention: str) -> tuple[str, str]:
    digits = 3 if convention.startswith("unit") else 0
    a, b = (f"{v:.{digits}f}" for v in point)
    return a, b


def act_reply(style: str, convention: str, screen: Screen, control: Control) -> str:
    """A reply to a worker request in ``style``; coordinate styles point at ``control``."""
    a, b = _text(point_in(convention, screen, control), convention)
    if style == "calls":
        return f'I will click it.\n```python\nagent.click("{control.target}")\n```'
    if style == "json":
        return f'{{"name": "click", "arguments": {{"element_description": "{control.target}"}}}}'
    if style == "ui-tars":
        return f"Thought: click {control.target}.\nAction: click(start_box='({a},{b})')"
    if style == "qwen-vl":
        return (
            '<tool_call>{"name": "computer_use", "arguments": {"action": "left_click", '
            f'"coordinate": [{a}, {b}]}}}}</tool_call>'
        )
    if style == "pyautogui":
        return f"```python\npyautogui.click({a}, {b})\n```"
    raise ValueError(style)


def native_reply(style: str, convention: str, screen: Screen, control: Control) -> str:
    """A reply to the native worker request: the point written after the description."""
    if style in ("calls", "json"):
        a, b = _text(point_in(convention, screen, control), convention)
        return f'```python\nagent.click("{control.target} ({a}, {b})")\n```'
    return act_reply(style, convention, screen, control)


def ground_reply(convention: str, screen: Screen, control: Control) -> str:
    a, b = _text(point_in(convention, screen, control), convention)
    return f"({a}, {b})" if not convention.endswith("-yx") else f"[{a}, {b}]"


def battery_script(
    *,
    style: str = "calls",
    convention: str = "pixels",
    native_convention: str | None = None,
    sees: bool = True,
    feedback: bool = False,
) -> list[Step]:
    """Every answer of a model that replies in ``style``, points in ``convention`` (as a
    grounding model; ``native_convention`` as a native worker, default the same), reads the
    screen when ``sees``, and needs the invalid-reply feedback once per task if ``feedback``."""
    native_convention = native_convention or convention
    shown = screens()
    steps = [reply("ready")]
    steps.append(reply("I will count them.\n```bash\nwc -l < notes.txt > count.txt\n```"))
    steps.append(reply(shown[2].word if sees else "I see a desktop."))
    for screen in shown:
        if screen.name not in TASKS:
            continue
        if feedback:
            steps.append(reply("I would click the seven, I think."))
        steps.append(reply(act_reply(style, native_convention, screen, screen.controls[0])))
    for screen in shown:
        steps.append(reply(native_reply(style, native_convention, screen, screen.controls[0])))
    for screen in shown:
        for control in screen.controls[:2]:
            steps.append(reply(ground_reply(convention, screen, control)))
    for _, _, there in JUDGE_CASES:
        right = there if sees else not there
        steps.append(reply(("VERIFIED" if right else "NOT VERIFIED") + "\nAs the screen shows."))
    return steps
