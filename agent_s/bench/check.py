"""``agent-s bench check DIR``: what each task needs, which of it this machine has, and so
which tasks can run here and exactly why not the others.

Each task gets every need that applies, each either met here or not (an unmet need is a
``Reason``; a task with none can run):

- ``app``: a program the task drives or its commands call (from ``launch`` steps, the
  commands of setup and getters, the task's ``related_apps`` and the files it opens), met
  when it is installed (LibreOffice Writer / Impress / Calc each count on their own);
- ``internet``: pages or packages the task reaches while it runs (web pages opened in the
  browser, OSWorld-Verified's ``proxy``, ``pip install``, ``apt-get``, extension stores,
  getters that load a URL, web pages the instruction names, software it asks to install from
  no local file), never met offline;
- ``cache``: files its setup (``download``) or evaluator (``cloud_file``) take from
  OSWorld's file cache, met when they are in the ``--file-cache`` folder;
- ``sudo``: a command run as root (``sudo``, the VM's ``{CLIENT_PASSWORD}``), met when the
  harness runs such steps and has the rights (root, or sudo without a password);
- ``getter`` / ``metric`` / ``setup``: an evaluator getter, metric or setup step this
  harness does not have;
- ``vscode``: Visual Studio Code (not shipped by Debian), met when ``code`` is installed;
- ``google``: a Google account (Google Drive steps and getters, Google log-ins), never met;
- ``gnome``: what only a running GNOME Shell does (``gnome-shell``, ``gnome-extensions``, the
  Shell's D-Bus name ``org.gnome.Shell``, GNOME's session and control center), never met on
  this harness's openbox desktop.

GNOME's settings and programs that work without the Shell are apps: ``gsettings`` (met when
GLib's tool and the dconf backend are installed: each task desktop has its own session bus,
and dconf keeps the settings under its HOME), each schema a ``gsettings`` command names
(``gsettings schema org.gnome.shell``, met when a ``*.gschema.xml`` declares it, e.g. from
``gnome-shell-common``), ``gnome-terminal`` (and its server), and the wallpaper getter's
``gsettings``. OSWorld's ``/run/user/1000`` (its user's runtime folder and session bus) is
the task desktop's own runtime folder (``environment``), so it needs nothing more.

``assume`` marks needs as met whatever this machine has (``{"cache", "internet"}``: what
would run with a full file cache and the internet). The classification is static: it reads
the task file and looks at this machine (programs on PATH, the file cache folder, the user's
rights); it starts nothing.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shlex
import shutil
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from agent_s.bench.environment import (
    HANDLED_PROGRAMS,
    TERMINAL_ARGV,
    TaskEnvironment,
    launch_argv,
)
from agent_s.bench.getters import NeedsFileCache, cache_lookup
from agent_s.bench.metrics import known_metric
from agent_s.bench.registry import GETTERS
from agent_s.bench.tasks import SetupStep, Task

#: Every kind of need, in report order, and what an unmet one says.
CATEGORIES = {
    "app": "needs an app that is not installed",
    "internet": "needs the internet while it runs",
    "cache": "needs the file cache",
    "sudo": "needs sudo",
    "getter": "needs a getter we do not have",
    "metric": "needs a metric we do not have",
    "setup": "needs a setup step we do not have",
    "vscode": "needs VS Code",
    "google": "needs a Google account",
    "gnome": "needs GNOME",
}
#: Needs ``--assume`` may mark as met (the others are code this harness lacks).
ASSUMABLE = ("app", "internet", "cache", "sudo", "vscode", "google", "gnome")
#: What the issue's target allows a task to be blocked by: access this harness cannot give.
OUTSIDE = frozenset({"internet", "vscode", "google"})
#: The setup steps this harness does: each ``TaskEnvironment._step_<type>`` handler.
SETUP_STEPS = frozenset(
    name.removeprefix("_step_") for name in dir(TaskEnvironment) if name.startswith("_step_")
)
GOOGLE_STEPS = {"googledrive", "login"}
GOOGLE_GETTERS = {"googledrive_file"}
#: Getters that read a GNOME setting or program, and the apps (and schemas) each needs.
GNOME_GETTERS: Mapping[str, tuple[str, ...]] = {
    "vm_wallpaper": ("gsettings", "gsettings schema org.gnome.desktop.background"),
}
#: Getters that read an app of the task's desktop, and the apps each needs.
GETTER_APPS: Mapping[str, tuple[str, ...]] = {"vm_terminal_output": (TERMINAL_ARGV[0],)}
#: Where GLib looks for settings schemas (below each XDG data folder) and the dconf backend.
SCHEMA_FOLDER = "glib-2.0/schemas"
DCONF_BACKEND = "gio/modules/libdconfsettings.so"
SCHEMA_PREFIX = "gsettings schema "
#: Getters that load a web page themselves (OSWorld opens it in the browser or fetches it).
WEB_GETTERS = {
    "pdf_from_url",
    "page_info",
    "info_from_website",
    "gotoRecreationPage_and_get_html_content",
}
#: ``related_apps`` and the program (or LibreOffice component) each stands for.
APPS = {
    "chrome": "chromium",
    "gimp": "gimp",
    "libreoffice_calc": "libreoffice-calc",
    "libreoffice_impress": "libreoffice-impress",
    "libreoffice_writer": "libreoffice-writer",
    "thunderbird": "thunderbird",
    "vlc": "vlc",
    "vs_code": "code",
    "terminal": TERMINAL_ARGV[0],
}
#: LibreOffice's components: the library each needs in its program folder.
OFFICE_PARTS = {
    "libreoffice-calc": "libsclo.so",
    "libreoffice-impress": "libsdlo.so",
    "libreoffice-writer": "libswlo.so",
}
OFFICE_SWITCHES = {"--calc": "libreoffice-calc", "--impress": "libreoffice-impress"}
OFFICE_SWITCHES["--writer"] = "libreoffice-writer"
OFFICE_FILES = {
    "libreoffice-writer": (".docx", ".doc", ".odt", ".rtf"),
    "libreoffice-impress": (".pptx", ".ppt", ".odp"),
    "libreoffice-calc": (".xlsx", ".xls", ".ods"),
}
#: Words that start a shell command but are no program to look for.
_SHELL_WORDS = frozenset(
    [
        "!",
        "[",
        "[[",
        "]]",
        "{",
        "}",
        ".",
        ":",
        "alias",
        "case",
        "cd",
        "do",
        "done",
        "elif",
        "else",
        "esac",
        "exit",
        "export",
        "fi",
        "for",
        "function",
        "history",
        "if",
        "in",
        "local",
        "read",
        "return",
        "set",
        "shift",
        "source",
        "test",
        "then",
        "time",
        "true",
        "false",
        "until",
        "unset",
        "wait",
        "while",
        "echo",
        "printf",
        "pwd",
        "type",
        "command",
    ]
)
_PROGRAM = re.compile(r"^(?:/[\w.+-]+)*/?[A-Za-z_][\w.+-]*$")  # a name or absolute path
_OURS = frozenset({"python", "python3", "sh", "bash"})  # our interpreter and shells
#: What only a running GNOME Shell answers: its D-Bus name (``gdbus call --dest org.gnome.Shell``).
_GNOME_SHELL_TEXT = re.compile(r"\borg\.gnome\.Shell\b")
#: Programs that need GNOME Shell itself (other GNOME programs run on any desktop: apps).
_GNOME_PROGRAMS = re.compile(
    r"^(gnome-shell|gnome-extensions|gnome-session[a-z-]*|gnome-control-center)$"
)
#: A ``gsettings`` command's schema (``gsettings get org.gnome.desktop.session idle-delay``).
_GSETTINGS_SCHEMA = re.compile(
    r"\bgsettings\s+(?:--schemadir\s+\S+\s+)?"
    r"(?:get|set|reset|reset-recursively|list-keys|list-recursively|range|describe|writable|monitor)"
    r"\s+['\"]?([A-Za-z][\w.-]*)"
)
#: Text that names a GNOME program the task's commands reach (``killall gnome-terminal-server``).
_GNOME_TERMINAL_TEXT = re.compile(r"\bgnome-terminal-server\b")
_SUDO_TEXT = re.compile(r"\bsudo\b|\{CLIENT_PASSWORD\}")
_NET_COMMANDS = (
    (re.compile(r"\bapt(?:-get)?\s+(?:-\S+\s+)*(?:install|update|upgrade)\b"), "apt"),
    (re.compile(r"\bpip3?\s+install\s+(?:-\S+\s+)*(?!\S*\.whl\b)[\w\[]"), "pip install"),
    (re.compile(r"--install-extension\s+(?!\S*\.vsix\b)[\w-]+\.[\w-]+"), "extension store"),
    (re.compile(r"\b(?:wget|curl)\b|\bgit\s+clone\s+\S*://"), "download"),
)
_URL = re.compile(r"https?://[^\s'\"\\)]+")
_INSTALL = re.compile(r"\binstall", re.IGNORECASE)
#: An install from a file on the machine (a folder on the Desktop, a .vsix, "local"): offline.
#: ("Desktop" with its capital: the folder, not "my GNOME desktop").
_LOCAL_SOURCE = re.compile(r"(?i:\blocal\b)|/home/|\bDesktop\b|(?i:\.vsix\b)")
_LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})


@dataclass(frozen=True)
class Need:
    """One thing a task needs, and whether this machine has it (``how``: why it counts as
    met, e.g. "installed", "assumed")."""

    category: str
    detail: str
    met: bool
    how: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"category": self.category, "detail": self.detail, "met": self.met, "how": self.how}


@dataclass(frozen=True)
class Reason:
    """An unmet need: why the task cannot run here."""

    category: str
    detail: str

    def __str__(self) -> str:
        return f"{CATEGORIES[self.category]}: {self.detail}"


# -- what the task's commands say ----------------------------------------------------------------


def _text(command: Any) -> str:
    return command if isinstance(command, str) else " ".join(map(str, command))


def _step_commands(task: Task) -> Iterator[tuple[SetupStep | None, Any]]:
    """Every command of the task: setup and postconfig steps, and getters' commands."""
    for step in (*task.config, *task.evaluator.postconfig):
        command = step.parameters.get("command")
        if command is not None:
            yield step, command
    for spec in (*task.evaluator.results, *task.evaluator.expected):
        if isinstance(spec, Mapping) and "command" in spec:
            yield None, spec["command"]


def _shell_programs(text: str) -> list[str]:
    """The programs a shell snippet starts: the first word of each simple command."""
    lexer = shlex.shlex(text, posix=True, punctuation_chars="();<>|&\n")
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:  # unbalanced quotes: fall back to words
        tokens = text.split()
    programs: list[str] = []
    start = True
    prefix = ""  # a word that runs the next one: sudo, timeout, ...
    redirect = False
    for token in tokens:
        if token and all(c in "();<>|&\n" for c in token):
            redirect = ("<" in token or ">" in token) and not token.endswith("(")
            if not redirect:
                start, prefix = True, ""
            continue
        if redirect:  # the file of a redirection, not a program
            redirect = False
            continue
        if not start:
            continue
        if "=" in token and not token.startswith(("-", "/")) and token.split("=")[0].isidentifier():
            continue  # VAR=value before the program
        if prefix and (token.startswith("-") or (prefix == "timeout" and token[:1].isdigit())):
            continue  # the options of sudo, timeout's duration
        if token in ("sudo", "timeout", "nohup", "exec", "env"):
            prefix = token
            continue
        start, prefix = False, ""
        if token in _SHELL_WORDS or not _PROGRAM.match(token):
            continue
        programs.append(token)
    return programs


def command_programs(command: Any, *, shell_text: bool) -> list[str]:
    """The programs a task command runs (``bash -c TEXT`` and shell strings parsed)."""
    if isinstance(command, str):
        return _shell_programs(command) if shell_text or " " in command else [command]
    argv = [str(c) for c in command]
    if not argv:
        return []
    if os.path.basename(argv[0]) in ("bash", "sh") and "-c" in argv[1:-1]:
        return _shell_programs(argv[argv.index("-c") + 1])
    return [argv[0]]


def _is_local_path(program: str) -> bool:
    """A script of the task's own (``/home/user/x.sh``), not a program to install."""
    return program.startswith("/home/") or program.endswith((".sh", ".py"))


def _web_urls(task: Task) -> list[str]:
    """Web pages the task opens while it runs (local files and hosts are fine)."""
    urls: list[str] = []
    for step in task.config:
        if step.type == "chrome_open_tabs":
            urls.extend(str(u) for u in step.parameters.get("urls_to_open", []))
        elif step.type in ("open", "launch", "execute", "command"):
            value = step.parameters.get("path", step.parameters.get("command", ""))
            urls.extend(_URL.findall(_text(value)))
    for spec in (*task.evaluator.results, *task.evaluator.expected):
        if isinstance(spec, Mapping) and spec.get("type") in WEB_GETTERS:
            urls.append(str(spec.get("url") or spec.get("path") or spec["type"]))
    web = []
    for url in urls:
        host = urlparse(url).hostname
        if host is not None and host not in _LOCAL_HOSTS:
            web.append(url)
        elif host is None and not url.startswith(("file:", "/", "~", "chrome:")):
            web.append(url)  # a getter's page given without a scheme
    return list(dict.fromkeys(web))


def _instruction_needs(instruction: str) -> list[str]:
    """What the instruction itself sends the agent to the internet for: the web pages it
    names, and software to install that is not on the machine already (no local file named)."""
    found = []
    for url in _URL.findall(instruction):
        host = urlparse(url.rstrip(".,;:!?'\"")).hostname
        if host is not None and host not in _LOCAL_HOSTS:
            found.append(f"instruction: {host}")
    if _INSTALL.search(instruction) and not _LOCAL_SOURCE.search(instruction):
        found.append("instruction: install software")
    return found


def _cache_urls(task: Task) -> list[str]:
    urls: list[str] = []
    for step in (*task.config, *task.evaluator.postconfig):
        if step.type == "download":
            urls.extend(str(f.get("url", "")) for f in step.parameters.get("files", []))
    for spec in (*task.evaluator.results, *task.evaluator.expected):
        if isinstance(spec, Mapping) and spec.get("type") == "cloud_file":
            path = spec.get("path")
            urls.extend(str(p) for p in (path if isinstance(path, list) else [path]))
    return list(dict.fromkeys(urls))


# -- what this machine has -----------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def _office_folder() -> Path | None:
    for name in ("soffice", "libreoffice"):
        found = shutil.which(name)
        if found is not None:
            return Path(os.path.realpath(found)).parent
    return None


def _data_folders() -> list[Path]:
    folders = [os.environ.get("XDG_DATA_HOME", "") or str(Path.home() / ".local" / "share")]
    folders += (os.environ.get("XDG_DATA_DIRS", "") or "/usr/local/share:/usr/share").split(":")
    return [Path(f) for f in folders if f]


@functools.lru_cache(maxsize=1)
def installed_schemas() -> frozenset[str]:
    """The GSettings schemas installed here (the ids the ``*.gschema.xml`` files declare)."""
    folders = [Path(f) for f in os.environ.get("GSETTINGS_SCHEMA_DIR", "").split(":") if f]
    folders += [folder / SCHEMA_FOLDER for folder in _data_folders()]
    found: set[str] = set()
    for folder in folders:
        for path in sorted(folder.glob("*.gschema.xml")) if folder.is_dir() else []:
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            found.update(re.findall(r"<schema\b[^>]*\bid=[\"']([^\"']+)", text))
    return frozenset(found)


@functools.lru_cache(maxsize=1)
def dconf_backend_installed() -> bool:
    """Whether GSettings keeps settings in dconf here (without it ``gsettings set`` only
    changes memory, and the next command reads the default)."""
    folders = [Path(os.environ["GIO_MODULE_DIR"])] if os.environ.get("GIO_MODULE_DIR") else []
    folders += [Path("/usr/lib"), *Path("/usr/lib").glob("*-linux-gnu*")]
    return any((folder / DCONF_BACKEND).is_file() for folder in folders)


def app_installed(name: str, which: Callable[[str], str | None] = shutil.which) -> bool:
    """Whether a program (or a LibreOffice component, or a GSettings schema: ``gsettings
    schema ID``) is installed here. With a ``which`` other than the real one (a machine
    described by a test), a schema and the dconf backend are there when ``gsettings`` is."""
    real = which is shutil.which
    if name.startswith(SCHEMA_PREFIX):
        if which("gsettings") is None:
            return False
        return not real or name.removeprefix(SCHEMA_PREFIX) in installed_schemas()
    if name == "gsettings":
        return which(name) is not None and (not real or dconf_backend_installed())
    if name in OFFICE_PARTS:
        if which("soffice") is None:
            return False
        folder = _office_folder() if which is shutil.which else None
        return folder is None or (folder / OFFICE_PARTS[name]).exists()
    return which(name) is not None


def harness_runs_sudo() -> bool:
    """Whether task steps that use sudo run here (``environment.sudo_rights``: as root, or
    with a sudo that asks no password)."""
    from agent_s.bench.environment import sudo_rights

    return sudo_rights() is not None


@dataclass(frozen=True)
class Machine:
    """What this machine has, as the classification sees it."""

    file_cache: Path | None = None
    which: Callable[[str], str | None] = shutil.which
    sudo: bool = False
    assume: frozenset[str] = frozenset()

    @classmethod
    def here(cls, *, file_cache: Path | None = None, assume: Iterable[str] = ()) -> Machine:
        return cls(file_cache=file_cache, sudo=harness_runs_sudo(), assume=frozenset(assume))


# -- classification ------------------------------------------------------------------------------


def task_needs(task: Task, machine: Machine) -> list[Need]:
    """Everything ``task`` needs, each marked met or not on ``machine`` (see the docstring)."""
    needs: list[Need] = []

    def add(category: str, detail: str, met: bool, how: str = "") -> None:
        if not met and category in machine.assume:
            met, how = True, "assumed"
        needs.append(Need(category, detail, met, how))

    for func in dict.fromkeys(task.evaluator.funcs):
        add("metric", func, known_metric(func), "implemented")
    for kind in sorted(task.evaluator.getter_types()):
        if kind in GOOGLE_GETTERS:  # Google's API with a real account: the need is the account
            add("google", f"{kind} (Google Drive)", False)
        else:
            add("getter", kind, kind in GETTERS, "implemented")
    gnome: dict[str, None] = {}
    for kind in sorted(task.setup_types - GOOGLE_STEPS):
        add("setup", kind, kind in SETUP_STEPS, "implemented")
    for kind in sorted(task.setup_types & GOOGLE_STEPS):
        add("google", f"setup step {kind}", False)

    texts = [_text(c) for _, c in _step_commands(task)]
    programs = _programs(task)
    getter_apps = {**GNOME_GETTERS, **GETTER_APPS}
    for kind in sorted(task.evaluator.getter_types() & set(getter_apps)):
        programs.extend(p for p in getter_apps[kind] if p not in programs)
    for text in texts:
        if _GNOME_TERMINAL_TEXT.search(text) and "gnome-terminal" not in programs:
            programs.append("gnome-terminal")
        for match in _GSETTINGS_SCHEMA.finditer(text):
            schema = SCHEMA_PREFIX + match.group(1)
            if schema not in programs:
                programs.append(schema)
    for program in programs:
        if program == "code":
            add("vscode", "code", app_installed("code", machine.which), "installed")
        elif _GNOME_PROGRAMS.match(program):
            gnome[program] = None
        else:
            add("app", program, app_installed(program, machine.which), "installed")
    for text in texts:
        for match in _GNOME_SHELL_TEXT.finditer(text):
            gnome[match.group(0)] = None
    if gnome:
        add("gnome", ", ".join(sorted(gnome)), False)

    sudo = sorted({m.group(0) for text in texts for m in _SUDO_TEXT.finditer(text)})
    if sudo:
        add("sudo", ", ".join(sudo), machine.sudo, "root or sudo")

    internet: list[str] = ["proxy"] if task.proxy else []
    for text in texts:
        internet.extend(label for pattern, label in _NET_COMMANDS if pattern.search(text))
    web = _web_urls(task)
    internet.extend(urlparse(u).hostname or u for u in web)
    if not task.infeasible:
        internet.extend(_instruction_needs(task.instruction))
    if internet:
        add("internet", ", ".join(dict.fromkeys(internet)), False)

    urls = _cache_urls(task)
    missing = []
    for url in urls:
        try:
            cache_lookup(machine.file_cache, url)
        except NeedsFileCache:
            missing.append(url.rsplit("/", 1)[-1])
    if urls:
        detail = f"{len(urls)} file(s)"
        if missing:
            more = f" (+{len(missing) - 3} more)" if len(missing) > 3 else ""
            detail = f"{len(missing)} of {len(urls)} file(s) missing: " + ", ".join(missing[:3])
            detail += more
        add("cache", detail, not missing, "in the file cache")
    order = list(CATEGORIES)
    return sorted(needs, key=lambda n: order.index(n.category))


def _programs(task: Task) -> list[str]:
    """The programs and LibreOffice components the task uses, in order, once each."""
    found: dict[str, None] = {}
    for app in task.related_apps:
        if app in APPS:
            found[APPS[app]] = None
    for opened in task.config:
        if opened.type == "open":
            name = str(opened.parameters.get("path", "")).lower()
            for part, endings in OFFICE_FILES.items():
                if name.endswith(endings):
                    found[part] = None
    for step, command in _step_commands(task):
        shell = bool(step.parameters.get("shell", False)) if step is not None else True
        if isinstance(command, list) and step is not None and step.type == "launch":
            argv = launch_argv([str(c) for c in command])
            programs = [argv[0]] if argv else []
            if argv and os.path.basename(argv[0]) in ("libreoffice", "soffice"):
                parts = [OFFICE_SWITCHES[a] for a in argv[1:] if a in OFFICE_SWITCHES]
                programs = parts or ["soffice"]
        else:
            programs = command_programs(command, shell_text=shell)
            # a command's own gnome-terminal is GNOME's (only a launch step stands xterm in)
            programs = [p if p == "gnome-terminal" else launch_argv([p])[0] for p in programs]
        for program in programs:
            name = os.path.basename(program)
            if name in HANDLED_PROGRAMS or name in _OURS or _is_local_path(program):
                continue
            if name == "libreoffice":
                name = "soffice"
            found[name] = None
    return list(found)


def classify(
    task: Task,
    *,
    file_cache: Path | None = None,
    which: Callable[[str], str | None] = shutil.which,
    machine: Machine | None = None,
) -> list[Reason]:
    """Every reason this machine cannot run ``task`` (empty: it can)."""
    if machine is None:
        machine = Machine(file_cache=file_cache, which=which, sudo=harness_runs_sudo())
    return [Reason(n.category, n.detail) for n in task_needs(task, machine) if not n.met]


@dataclass(frozen=True)
class CheckReport:
    """Per task: its needs; per need and per domain: how many tasks, how many blocked."""

    tasks: tuple[tuple[Task, tuple[Need, ...]], ...]
    assume: frozenset[str] = frozenset()

    @staticmethod
    def reasons_of(needs: Iterable[Need]) -> tuple[Reason, ...]:
        return tuple(Reason(n.category, n.detail) for n in needs if not n.met)

    def blocked(self) -> Iterator[tuple[Task, tuple[Reason, ...]]]:
        for task, needs in self.tasks:
            reasons = self.reasons_of(needs)
            if reasons:
                yield task, reasons

    @property
    def runnable(self) -> int:
        return sum(1 for _, needs in self.tasks if all(n.met for n in needs))

    @property
    def only_outside(self) -> int:
        """Blocked tasks whose every reason is access the harness cannot give (internet,
        VS Code, a Google account)."""
        return sum(1 for _, rs in self.blocked() if {r.category for r in rs} <= OUTSIDE)

    def domains(self) -> dict[str, dict[str, Any]]:
        summary: dict[str, dict[str, Any]] = {}
        for task, needs in self.tasks:
            row = summary.setdefault(
                task.domain, {"total": 0, "runnable": 0, "blocked_by": Counter()}
            )
            row["total"] += 1
            reasons = self.reasons_of(needs)
            if not reasons:
                row["runnable"] += 1
            for category in dict.fromkeys(r.category for r in reasons):
                row["blocked_by"][category] += 1
        return summary

    def needs(self) -> dict[str, dict[str, int]]:
        """Per category: tasks that need it, and tasks blocked by it."""
        rows = {c: {"tasks": 0, "blocked": 0} for c in CATEGORIES}
        for _, needs in self.tasks:
            for category in dict.fromkeys(n.category for n in needs):
                rows[category]["tasks"] += 1
                if any(not n.met for n in needs if n.category == category):
                    rows[category]["blocked"] += 1
        return rows

    def details(self, category: str) -> dict[str, dict[str, Any]]:
        """Per detail of one category (an app, a getter): tasks, and whether it is met."""
        rows: dict[str, dict[str, Any]] = {}
        for _, needs in self.tasks:
            for need in needs:
                if need.category == category:
                    row = rows.setdefault(need.detail, {"tasks": 0, "met": need.met})
                    row["tasks"] += 1
        return dict(sorted(rows.items(), key=lambda kv: (-kv[1]["tasks"], kv[0])))

    def to_json(self) -> dict[str, Any]:
        return {
            "total": len(self.tasks),
            "runnable": self.runnable,
            "blocked_only_by_outside_access": self.only_outside,
            "assume": sorted(self.assume),
            "needs": self.needs(),
            "apps": self.details("app"),
            "missing_getters": {
                k: v["tasks"] for k, v in self.details("getter").items() if not v["met"]
            },
            "missing_metrics": {
                k: v["tasks"] for k, v in self.details("metric").items() if not v["met"]
            },
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
                    "runnable": all(n.met for n in needs),
                    "needs": [n.to_json() for n in needs],
                    "reasons": [
                        {"category": r.category, "detail": r.detail, "text": str(r)}
                        for r in self.reasons_of(needs)
                    ],
                }
                for t, needs in self.tasks
            ],
        }


def parse_assume(text: str | None) -> frozenset[str]:
    """``--assume cache,internet`` -> the need categories to count as met (``apps`` and
    ``all`` accepted); ``ValueError`` names the accepted words."""
    if not text:
        return frozenset()
    words = {w.strip().lower() for w in text.split(",") if w.strip()}
    if "all" in words:
        return frozenset(ASSUMABLE)
    words = {"app" if w == "apps" else w for w in words}
    unknown = sorted(words - set(ASSUMABLE))
    if unknown:
        raise ValueError(
            f"--assume takes a comma-separated list of {', '.join(ASSUMABLE)} or all; "
            f"unknown: {', '.join(unknown)}"
        )
    return frozenset(words)


def check_tasks(
    tasks: Iterable[Task],
    *,
    file_cache: Path | None = None,
    assume: Iterable[str] = (),
    machine: Machine | None = None,
) -> CheckReport:
    if machine is None:
        machine = Machine.here(file_cache=file_cache, assume=assume)
    return CheckReport(tuple((t, tuple(task_needs(t, machine))) for t in tasks), machine.assume)


def dumps(report: CheckReport) -> str:
    return json.dumps(report.to_json(), indent=1)


__all__ = [
    "ASSUMABLE",
    "CATEGORIES",
    "CheckReport",
    "Machine",
    "Need",
    "Reason",
    "app_installed",
    "check_tasks",
    "classify",
    "command_programs",
    "harness_runs_sudo",
    "parse_assume",
    "task_needs",
]
