"""``agent-s bench check DIR``: which tasks this machine can run, and why not the others.

Each task gets every reason that applies, in these categories:

- ``metric``: a metric function we do not have;
- ``getter``: a getter (result / expected ``type``) we do not have;
- ``setup``: a setup step this harness does not do;
- ``app``: an application that is not installed (from ``launch`` steps and related apps);
- ``gnome``: needs GNOME or sudo (gsettings, the VM's password, the GNOME session bus, ...);
- ``web``: needs the live web (a proxy, web pages opened by setup, Google Drive, log-ins);
- ``cache``: needs OSWorld's file cache (``download`` steps, ``cloud_file``), when the files
  are not in the ``--file-cache`` folder.

The classification is static: it reads the task file and looks at this machine (programs on
PATH, the file cache folder); it starts nothing.
"""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from agent_s.bench.environment import HANDLED_PROGRAMS, launch_argv
from agent_s.bench.getters import GETTERS, NeedsFileCache, cache_lookup
from agent_s.bench.metrics import known_metric
from agent_s.bench.tasks import Task

CATEGORIES = {
    "metric": "needs a metric we do not have",
    "getter": "needs a getter we do not have",
    "setup": "needs a setup step we do not have",
    "app": "needs an app that is not installed",
    "gnome": "needs GNOME/sudo",
    "web": "needs live web",
    "cache": "needs the file cache",
}
SETUP_STEPS = {
    "launch",
    "open",
    "execute",
    "command",
    "sleep",
    "activate_window",
    "close_window",
    "download",
    "chrome_open_tabs",
    "chrome_close_tabs",
}
WEB_STEPS = {"googledrive", "login", "update_browse_history"}
APPS = {
    "chrome": "chromium",
    "gimp": "gimp",
    "libreoffice_calc": "soffice",
    "libreoffice_impress": "soffice",
    "libreoffice_writer": "soffice",
    "thunderbird": "thunderbird",
    "vlc": "vlc",
    "vs_code": "code",
    "terminal": "xterm",
}
_GNOME = re.compile(
    r"\bsudo\b|\{CLIENT_PASSWORD\}|\bgsettings\b|\bdconf\b|/run/user/1000|\bgio\b|"
    r"\bnautilus\b|\bgnome-(?!terminal)[a-z-]+|\btimedatectl\b|\bpactl\b|\bsystemctl\b"
)


@dataclass(frozen=True)
class Reason:
    category: str
    detail: str

    def __str__(self) -> str:
        return f"{CATEGORIES[self.category]}: {self.detail}"


def _commands(task: Task) -> Iterable[str]:
    for step in (*task.config, *task.evaluator.postconfig):
        command = step.parameters.get("command")
        if command is not None:
            yield command if isinstance(command, str) else " ".join(map(str, command))
    for spec in (*task.evaluator.results, *task.evaluator.expected):
        if isinstance(spec, Mapping) and "command" in spec:
            command = spec["command"]
            yield command if isinstance(command, str) else " ".join(map(str, command))


def _web_tabs(task: Task) -> list[str]:
    """Pages on the web that setup opens in the browser (local files and hosts are fine)."""
    hosts = []
    for step in task.config:
        if step.type == "chrome_open_tabs":
            for url in step.parameters.get("urls_to_open", []):
                host = urlparse(str(url)).hostname
                if host and host not in ("localhost", "127.0.0.1"):
                    hosts.append(host)
    return hosts


def _cache_urls(task: Task) -> list[str]:
    urls: list[str] = []
    for step in (*task.config, *task.evaluator.postconfig):
        if step.type == "download":
            urls.extend(str(f.get("url", "")) for f in step.parameters.get("files", []))
    for spec in (*task.evaluator.results, *task.evaluator.expected):
        if isinstance(spec, Mapping) and spec.get("type") == "cloud_file":
            path = spec.get("path")
            urls.extend(path if isinstance(path, list) else [str(path)])
    return urls


def classify(
    task: Task,
    *,
    file_cache: Path | None = None,
    which: Callable[[str], str | None] = shutil.which,
) -> list[Reason]:
    """Every reason this machine cannot run ``task`` (empty: it can)."""
    reasons: list[Reason] = []
    for func in dict.fromkeys(task.evaluator.funcs):
        if not known_metric(func):
            reasons.append(Reason("metric", func))
    for kind in sorted(task.evaluator.getter_types() - set(GETTERS)):
        reasons.append(Reason("getter", kind))
    for kind in sorted(task.setup_types - SETUP_STEPS - WEB_STEPS):
        reasons.append(Reason("setup", kind))
    programs: dict[str, None] = {}
    for app in task.related_apps:
        if app in APPS:
            programs[APPS[app]] = None
    for step in (*task.config, *task.evaluator.postconfig):
        command = step.parameters.get("command")
        if step.type == "launch" and isinstance(command, list) and command:
            program = launch_argv([str(c) for c in command])[0]
            if program not in HANDLED_PROGRAMS:
                programs[program] = None
    for program in programs:
        if which(program) is None:
            reasons.append(Reason("app", program))
    gnome = sorted({m.group(0) for text in _commands(task) for m in _GNOME.finditer(text)})
    if gnome:
        reasons.append(Reason("gnome", ", ".join(gnome)))
    web = sorted(task.setup_types & WEB_STEPS)
    if _web_tabs(task):
        web.append("chrome_open_tabs of web pages")
    if task.proxy:
        web.insert(0, "proxy")
    if web:
        reasons.append(Reason("web", ", ".join(web)))
    missing = []
    for url in _cache_urls(task):
        try:
            cache_lookup(file_cache, url)
        except NeedsFileCache:
            missing.append(url.rsplit("/", 1)[-1])
    if missing:
        more = f" (+{len(missing) - 3} more)" if len(missing) > 3 else ""
        shown = ", ".join(missing[:3]) + more
        reasons.append(Reason("cache", f"{len(missing)} file(s): {shown}"))
    return reasons


@dataclass(frozen=True)
class CheckReport:
    """Per task: its reasons; per domain: how many can run and what stops the others."""

    tasks: tuple[tuple[Task, tuple[Reason, ...]], ...]

    def domains(self) -> dict[str, dict[str, Any]]:
        summary: dict[str, dict[str, Any]] = {}
        for task, reasons in self.tasks:
            fresh = {"total": 0, "runnable": 0, "blocked_by": Counter(), "first": Counter()}
            row = summary.setdefault(task.domain, fresh)
            row["total"] += 1
            if not reasons:
                row["runnable"] += 1
            for category in dict.fromkeys(r.category for r in reasons):
                row["blocked_by"][category] += 1
            if reasons:
                row["first"][reasons[0].category] += 1
        return summary

    @property
    def runnable(self) -> int:
        return sum(1 for _, reasons in self.tasks if not reasons)

    def to_json(self) -> dict[str, Any]:
        return {
            "total": len(self.tasks),
            "runnable": self.runnable,
            "domains": {
                d: {
                    "total": r["total"],
                    "runnable": r["runnable"],
                    "blocked_by": dict(r["blocked_by"]),
                }
                for d, r in self.domains().items()
            },
            "tasks": [
                {
                    "id": t.id,
                    "domain": t.domain,
                    "runnable": not reasons,
                    "reasons": [
                        {"category": r.category, "detail": r.detail, "text": str(r)}
                        for r in reasons
                    ],
                }
                for t, reasons in self.tasks
            ],
        }


def check_tasks(tasks: Iterable[Task], *, file_cache: Path | None = None) -> CheckReport:
    return CheckReport(tuple((t, tuple(classify(t, file_cache=file_cache))) for t in tasks))


def dumps(report: CheckReport) -> str:
    return json.dumps(report.to_json(), indent=1)
