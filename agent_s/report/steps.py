"""One step of a run in its report (``agent_s.report.run``): its card, with the screenshot and the
action drawn over it (``agent_s.report.overlay``), the model's reply, the grounding, the desktop
operations performed, the model calls, the safety decision, the code agent's turns with their
code and output, the marks, the timings and the request."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agent_s.guards.files import contained
from agent_s.record.step import Step, SubStep
from agent_s.report.html import Assets, badge, esc, kv, money, picture, pre, seconds, table
from agent_s.report.overlay import Frame, image_size, op_point, overlay

_REPLY_CHARS = 20_000  # of one reply shown on the page (the trajectory keeps it whole)
_OUTPUT_CHARS = 8_000  # of one stream of a code block's output


def _figure(
    path: Path | str | None,
    assets: Assets,
    caption: str,
    step: Step,
    frame: Frame,
    fallback: tuple[int, int],
) -> str:
    if path is None:
        return '<div class="noshot">no screenshot recorded for this step</div>'
    if isinstance(path, str):  # a recorded name that leads out of the run folder: skipped
        return f'<div class="noshot">{esc(path)} is outside the run folder: not shown</div>'
    src = assets.src(path)
    if src is None:
        return f'<div class="noshot">{esc(path.name)} is missing from the run folder</div>'
    width, height = image_size(path, fallback)
    alt = f"step {step.step} screenshot"
    drawn = overlay(step, frame, (width, height))
    return (
        '<figure class="shot">'
        f"{picture(src, alt, size=(width, height), over=drawn, data={'step': step.step})}"
        f"<figcaption>{esc(caption)}</figcaption></figure>"
    )


# who chose a step's action (``Step.chosen_by``), as its badge says it
_CHOSEN = {"model": "chosen by the model", "replay": "replayed", "planner": "handed by the plan"}


def step_card(step: Step, folder: Path, assets: Assets, frame: Frame, after: Path | None) -> str:
    tokens = sum(c.input_tokens + c.output_tokens for c in step.calls)
    tokens += sum(s.call.input_tokens + s.call.output_tokens for s in step.substeps if s.call)
    cost = sum(c.cost_usd for c in step.calls) + sum(
        s.call.cost_usd for s in step.substeps if s.call
    )
    head = [
        f'<div class="head"><h3><a href="#step-{step.step}">Step {step.step}</a>'
        f"{badge(step.outcome)}"
    ]
    if step.safety is not None:
        head.append(badge("allowed" if step.safety.get("allowed", True) else "refused"))
    head.append(badge(_CHOSEN[step.chosen_by], "chosen"))
    facts = [
        f"subtask {step.subtask}" if step.subtask else "",
        seconds(step.seconds),
        f"{tokens:,} tokens" if tokens else "",
        money(cost) if cost else "",
        f"run total {step.usage.total_tokens:,} tokens, {money(step.usage.cost_usd)}"
        if step.usage.total_tokens
        else "",
    ]
    head.append(f' <span class="meta">{esc(" · ".join(f for f in facts if f))}</span></h3></div>')
    picture: Path | str | None
    if step.screenshot:
        picture = contained(folder, step.screenshot, f"step {step.step}'s screenshot")
        picture = step.screenshot if picture is None else picture
        caption = f"as the model saw it · {step.active_window or 'no active window'}"
    elif after is not None:
        picture, caption = after, "the screen after the step"
    else:
        picture, caption = None, ""
    sent = step.request.get("sent_size") if isinstance(step.request, dict) else None
    fallback = tuple(sent) if isinstance(sent, list) and len(sent) == 2 else step.screen
    left = _figure(picture, assets, caption, step, frame, (int(fallback[0]), int(fallback[1])))
    left += _extra_images(step, folder, assets)
    right = _step_details(step)
    return (
        f'<section class="card step" id="step-{step.step}">{"".join(head)}'
        f"<div>{left}</div><div>{right}</div></section>\n"
    )


def _extra_images(step: Step, folder: Path, assets: Assets) -> str:
    """The dry run's planned picture and the crop an approver was shown."""
    parts = []
    names = [("planned (dry run)", step.dry_run_image)]
    image = (step.safety or {}).get("image")
    if isinstance(image, str):
        names.append(("shown to the approver", Path(image).name))
    for sub in step.substeps:
        sub_image = (sub.safety or {}).get("image")
        if isinstance(sub_image, str):
            names.append((f"shown to the approver (code turn {sub.substep})", Path(sub_image).name))
    for caption, name in names:
        if not name:
            continue
        path = contained(folder, Path(name).name, f"step {step.step}'s image")
        src = assets.src(path) if path is not None else None
        if src is not None:
            parts.append(
                f'<figure class="extra"><figcaption>{esc(caption)}</figcaption>'
                f"{picture(src, caption)}</figure>"
            )
    return "".join(parts)


def _step_details(step: Step) -> str:
    parts = []
    if step.action_text:
        parts.append(f'<p><code class="action">{esc(step.action_text)}</code></p>')
    rows = [
        ("detail", esc(step.detail)),
        ("window", esc(step.active_window or "")),
        ("code", pre(step.code, code=True) if step.code else ""),
    ]
    parts.append(kv(rows))
    if step.observed:
        parts.append(
            "<p class='meta'>seen to happen:</p><ul>"
            + "".join(f"<li>{esc(o)}</li>" for o in step.observed)
            + "</ul>"
        )
    if step.errors:
        parts.append(
            "<p class='meta'>errors:</p><ul>"
            + "".join(f"<li>{esc(e)}</li>" for e in step.errors)
            + "</ul>"
        )
    if step.reply:
        parts.append(
            "<details open><summary>The model's reply</summary>"
            + pre(clip(step.reply, _REPLY_CHARS))
            + "</details>"
        )
    if step.safety is not None:
        parts.append("<h3>Safety</h3>" + _safety(step.safety))
    if step.grounding:
        rows_g = [
            [
                esc(g.target),
                esc(g.kind),
                esc(g.grounder),
                esc(f"({g.point[0]}, {g.point[1]})" if g.point else "not found"),
                esc("({}, {}) {}x{}".format(*g.box) if g.box else ""),
                esc(f"{g.confidence:.2f}" if g.confidence is not None else ""),
                esc(g.matched or g.evidence),
            ]
            for g in step.grounding
        ]
        head = ["target", "kind", "grounder", "point", "box", "conf.", "evidence"]
        parts.append("<h3>Grounding</h3>" + table(head, rows_g))
    if step.executed:
        items = "".join(f"<li><code>{esc(_op_text(op))}</code></li>" for op in step.executed)
        parts.append(f"<h3>Performed</h3><ol>{items}</ol>")
    if step.calls:
        parts.append("<h3>Model calls</h3>" + _calls(step))
    if step.substeps:
        parts.append(f"<h3>Code agent ({len(step.substeps)} turns)</h3>")
        parts.extend(_substep(sub) for sub in step.substeps)
    if step.marks:
        rows_m = [
            [esc(m.number), esc(m.source), esc(m.role), esc(m.text), esc(m.box)] for m in step.marks
        ]
        parts.append(
            f"<details><summary>Marks ({len(step.marks)})</summary>"
            + table(["#", "source", "role", "text", "box"], rows_m)
            + "</details>"
        )
    timings = [[esc(k), esc(seconds(v))] for k, v in step.timings.items() if v]
    if timings:
        parts.append(
            "<details><summary>Timings</summary>"
            + table(["part", "time"], timings, frozenset({1}))
            + "</details>"
        )
    if step.request:
        shown = {k: v for k, v in step.request.items() if v not in (None, "", [], {})}
        parts.append(
            "<details><summary>Request</summary>"
            + pre(json.dumps(shown, ensure_ascii=False, indent=1)[:4000])
            + "</details>"
        )
    return "".join(parts)


def _op_text(op: Mapping[str, Any]) -> str:
    def value(v: Any) -> str:
        point = op_point(v)
        if point is not None:
            return f"({point[0]:g}, {point[1]:g})"
        return repr(v)

    rest = ", ".join(f"{k}={value(v)}" for k, v in op.items() if k != "op")
    return f"{op.get('op', '?')}({rest})"


def _safety(decision: Mapping[str, Any]) -> str:
    allowed = bool(decision.get("allowed", True))
    risks = decision.get("risks") or []
    rows = [
        ("decision", badge("allowed" if allowed else "refused")),
        ("decided by", esc(decision.get("decided_by", ""))),
        ("approver", esc(decision.get("approver") or "")),
        ("mode", esc(decision.get("mode", ""))),
        ("verdict", esc(decision.get("verdict", ""))),
        ("risks", esc("; ".join(map(str, risks))) if isinstance(risks, list) else esc(risks)),
        ("message", esc(decision.get("message", ""))),
    ]
    return kv(rows)


def _calls(step: Step) -> str:
    rows = []
    for call in step.calls:
        reply = ""
        if call.reply and call.reply != step.reply:
            reply = (
                f"<details><summary>reply</summary>{pre(clip(call.reply, _REPLY_CHARS))}</details>"
            )
        rows.append(
            [
                esc(call.purpose),
                esc(f"{call.input_tokens:,}"),
                esc(f"{call.output_tokens:,}"),
                esc(money(call.cost_usd)),
                esc(seconds(call.seconds)),
                esc(call.http_attempts),
                esc(call.error) + reply,
            ]
        )
    head = ["purpose", "in", "out", "cost", "time", "tries", "error / reply"]
    return table(head, rows, frozenset({1, 2, 3, 4, 5}))


def _substep(sub: SubStep) -> str:
    parts = [f'<div class="sub"><p><b>Turn {sub.substep}</b>{badge(sub.kind)}']
    if sub.status:
        parts.append(badge(sub.status, "passed" if sub.status == "done" else "failed"))
    if sub.call is not None:
        call = sub.call
        parts.append(
            f' <span class="meta">{esc(call.input_tokens + call.output_tokens)} tokens · '
            f"{esc(money(call.cost_usd))} · {esc(seconds(call.seconds))}</span>"
        )
    parts.append("</p>")
    if sub.call is not None and sub.call.reply:
        parts.append(
            "<details><summary>reply</summary>"
            + pre(clip(sub.call.reply, _REPLY_CHARS))
            + "</details>"
        )
    if sub.code:
        parts.append(f"<p class='meta'>{esc(sub.language or 'code')}:</p>" + pre(sub.code))
    if sub.safety is not None:
        parts.append(_safety(sub.safety))
    if sub.run is not None:
        parts.append(_code_run(sub.run))
    parts.append(kv([("summary", esc(sub.summary)), ("error", esc(sub.error))]))
    parts.append("</div>")
    return "".join(parts)


def _code_run(run: Mapping[str, Any]) -> str:
    """A code block's run as the trajectory records it: exit status, stdout, stderr, ..."""
    rows = []
    streams = []
    for key, value in run.items():
        if key in ("stdout", "stderr"):
            text = value.get("text", "") if isinstance(value, dict) else str(value or "")
            cut = ""
            if isinstance(value, dict) and value.get("truncated"):
                cut = f" (cut: {value.get('total_bytes', 0):,} bytes in all)"
            if text:
                label = f"<p class='meta'>{esc(key)}{esc(cut)}:</p>"
                streams.append(label + pre(clip(text, _OUTPUT_CHARS)))
        elif value not in (None, "", [], {}):
            shown = value if isinstance(value, (str, int, float, bool)) else json.dumps(value)
            rows.append((key.replace("_", " "), esc(shown)))
    return kv(rows) + "".join(streams)


def clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n... ({len(text) - limit:,} more characters in trajectory.jsonl)"


__all__ = ["clip", "step_card"]
