"""The plan of a run in its report (``agent_s.report.run``): the manager's report
(``RunResult.plan``:
mode, why planned, feasibility, each subtask's status, attempts and checks) and the events of
``plan.jsonl`` in order (each plan and replan with its subtasks, checks, strategy switches)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent_s.report.html import badge, esc, kv, pre, table


def plan_events(path: Path) -> tuple[list[dict[str, Any]], int]:
    """The events of ``plan.jsonl`` and how many of its lines could not be read."""
    if not path.is_file():
        return [], 0
    events, bad = [], 0
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            if not line.strip():
                continue
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                bad += 1
                continue
            if isinstance(event, dict):
                events.append(event)
            else:
                bad += 1
    return events, bad


def plan_card(events: list[dict[str, Any]], report: dict[str, Any] | None) -> str:
    if not events and not report:
        return ""
    parts = ['<section class="card" id="plan"><h2>Plan</h2>']
    if report:
        parts.append(
            kv(
                [
                    ("mode", esc(report.get("mode", ""))),
                    ("why planned", esc(report.get("trigger", ""))),
                    ("feasible", esc(report.get("feasible", ""))),
                    ("reason", esc(report.get("reason", ""))),
                    (
                        "repairs",
                        esc(
                            f"{report.get('replans', 0)} replan(s), "
                            f"{report.get('switches', 0)} strategy switch(es)"
                        ),
                    ),
                ]
            )
        )
        rows = []
        for sub in report.get("subtasks") or []:
            if not isinstance(sub, dict):
                continue
            checks = "<br>".join(
                f"{badge('passed' if c.get('passed') else 'failed')} "
                f"#{esc(c.get('attempt', ''))} by {esc(c.get('by', ''))}: "
                f"{esc(c.get('detail', ''))}"
                for c in sub.get("checks") or []
                if isinstance(c, dict)
            )
            rows.append(
                [
                    f"<code>{esc(sub.get('id', ''))}</code>",
                    esc(sub.get("description", "")),
                    badge(str(sub.get("status", ""))),
                    esc(sub.get("strategy", "")),
                    esc(sub.get("attempts", "")),
                    checks,
                    esc(sub.get("result", "")),
                ]
            )
        parts.append(
            table(["subtask", "description", "status", "by", "attempts", "checks", "result"], rows)
        )
    if events:
        parts.append(f"<h3>Events ({len(events)})</h3>")
        rows = [[esc(e.get("after_step", "")), esc(e.get("event", "")), _event(e)] for e in events]
        parts.append(table(["after step", "event", "what"], rows))
    parts.append("</section>\n")
    return "".join(parts)


def _event(event: dict[str, Any]) -> str:
    kind = event.get("event")
    if kind in ("plan", "replan"):
        if not event.get("accepted"):
            return (
                f"{badge('refused')} {esc(event.get('problem', ''))}"
                f"<details><summary>reply</summary>{pre(str(event.get('reply', '')))}</details>"
            )
        given = event.get("plan")
        plan: dict[str, Any] = given if isinstance(given, dict) else {}
        items = "".join(
            f"<li><code>{esc(s.get('id', ''))}</code> {esc(s.get('description', ''))}"
            + (
                " <span class='meta'>after "
                + esc(", ".join(map(str, s.get("depends_on") or [])))
                + "</span>"
                if s.get("depends_on")
                else ""
            )
            + (
                f" <span class='meta'>check {esc(json.dumps(s['check']))}</span>"
                if s.get("check")
                else ""
            )
            + "</li>"
            for s in plan.get("subtasks") or []
            if isinstance(s, dict)
        )
        feasible = "" if plan.get("feasible", True) else f"{badge('infeasible')} "
        return f"{feasible}{esc(plan.get('reason', ''))}<ol>{items}</ol>"
    if kind == "check":
        verdict = badge("passed" if event.get("passed") else "failed")
        return (
            f"{verdict} <code>{esc(event.get('subtask', ''))}</code> attempt "
            f"{esc(event.get('attempt', ''))} by {esc(event.get('by', ''))}: "
            f"{esc(event.get('detail', ''))}"
        )
    if kind == "switch":
        return (
            f"<code>{esc(event.get('subtask', ''))}</code> switched to "
            f"{esc(event.get('to', ''))} after: {esc(event.get('after', ''))}"
        )
    rest = {k: v for k, v in event.items() if k not in ("event", "after_step")}
    return f"<code>{esc(json.dumps(rest, ensure_ascii=False)[:2000])}</code>"


__all__ = ["plan_card", "plan_events"]
