"""OSWorld getters: read the state a metric scores (a file, a command's output, a rule).

    value = GETTERS["vm_file"](ctx, {"path": "/home/user/a.txt", "dest": "a.txt"})

``ctx`` is a ``GetterContext``: the task's HOME (``/home/user`` maps there), the desktop's
environment for commands, the task's cache folder (where files are copied for metrics and
where ``stdout`` of setup commands goes), and the local file cache for ``cloud_file``. A file
that does not exist gives ``None`` (metrics score it 0); a ``cloud_file`` missing from the
file cache raises ``NeedsFileCache`` (the task is skipped, never scored).
"""

from __future__ import annotations

import shutil
import subprocess
import xml.etree.ElementTree as ET  # noqa: N817  (only builds XML, never parses)
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from agent_s.bench.cache import fetch_command, find_cached

OSWORLD_HOME = "/home/user"
#: OSWorld's user's runtime folder (its session bus): the task desktop's XDG_RUNTIME_DIR here.
OSWORLD_RUNTIME_DIR = "/run/user/1000"
COMMAND_TIMEOUT = 120.0


class NeedsFileCache(RuntimeError):
    """A file the task needs is not in the local file cache (or no cache was given); the
    message names the URL and the command that fetches it (``fetch``, see ``cache``)."""

    def __init__(self, url: str, cache_dir: Path | None, fetch: str = "") -> None:
        where = f"not in {cache_dir}" if cache_dir else "no --file-cache folder given"
        fetch = fetch or fetch_command(None, cache_dir)
        then = " and pass --file-cache CACHE" if cache_dir is None else ""
        super().__init__(f"needs file cache: {url} ({where}); fetch with: {fetch}{then}")
        self.url = url


@dataclass
class GetterContext:
    home: Path
    env: Mapping[str, str]
    cache_dir: Path  # this task's own folder for copies and command output
    file_cache: Path | None = None
    a11y_tree: Callable[[], str] | None = None
    shell_allowed: bool = True  # task-author commands only: see run_task_command
    extra: dict[str, Any] = field(default_factory=dict)

    def resolve(self, path: str) -> Path:
        """An OSWorld path on this desktop: /home/user and ~ -> HOME; relative -> under HOME."""
        text = map_text(path, self.home)
        mapped = self.home / text[1:].lstrip("/") if text.startswith("~") else Path(text)
        return mapped if mapped.is_absolute() else self.home / mapped


def map_text(text: str, home: Path) -> str:
    """Replace OSWorld's home folder in a path or command with this task's HOME."""
    return text.replace(OSWORLD_HOME, str(home))


def map_runtime(text: str, env: Mapping[str, str]) -> str:
    """Replace OSWorld's runtime folder (``/run/user/1000``, where its commands find the
    session bus) with the desktop's ``XDG_RUNTIME_DIR``."""
    runtime = env.get("XDG_RUNTIME_DIR")
    return text.replace(OSWORLD_RUNTIME_DIR, runtime) if runtime else text


def cache_lookup(file_cache: Path | None, url: str, *, fetch: str = "") -> Path:
    """The local copy of an OSWorld file-cache URL (``cache.find_cached``: the manifest
    ``agent-s bench cache`` writes, else ``<cache>/<path after resolve/main/>``, e.g.
    ``os/<task id>/setup.sh``, else ``<cache>/<file name>``). ``fetch``: the command that
    fills the cache, for the message of ``NeedsFileCache``."""
    if file_cache is None:
        raise NeedsFileCache(url, None, fetch)
    found = find_cached(file_cache, url)
    if found is None:
        raise NeedsFileCache(url, file_cache, fetch)
    return found


def run_task_command(
    ctx: GetterContext, command: str | Sequence[str], *, shell: bool, timeout: float
) -> subprocess.CompletedProcess[str]:
    """Run a command from the task file (task-author data, never model text) on the desktop.

    A list is an argv (``python`` is our interpreter, so pyautogui snippets reach the task's
    display); a string with ``shell: true`` is an OSWorld shell snippet run as
    ``["bash", "-c", text]``: only suite files reach here, and a task is trusted like a test.
    """
    import sys

    if isinstance(command, str):
        if not shell or not ctx.shell_allowed:
            argv = command.split()
        else:
            argv = ["bash", "-c", map_runtime(map_text(command, ctx.home), ctx.env)]
    else:
        argv = [map_runtime(map_text(str(a), ctx.home), ctx.env) for a in command]
    if argv and argv[0] in ("python", "python3"):
        argv[0] = sys.executable
    return subprocess.run(
        argv,
        env=dict(ctx.env),
        cwd=ctx.home,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def _copy(ctx: GetterContext, source: Path, dest: str) -> str | None:
    if not source.is_file():
        return None
    target = ctx.cache_dir / dest
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    return str(target)


def _pick(values: list[Any], config: Mapping[str, Any]) -> Any:
    gives = config.get("gives", [0])
    return values[gives[0]] if len(gives) == 1 else [values[i] for i in gives]


def get_vm_file(ctx: GetterContext, config: Mapping[str, Any]) -> Any:
    """A copy of a desktop file in the task cache (``multi``: several, ``gives`` picks)."""
    if config.get("multi", False):
        paths, dests = config["path"], config["dest"]
        found = [_copy(ctx, ctx.resolve(p), d) for p, d in zip(paths, dests, strict=True)]
        return _pick(found, config)
    dest = config.get("dest") or Path(config["path"]).name
    return _copy(ctx, ctx.resolve(config["path"]), dest)


def get_cloud_file(ctx: GetterContext, config: Mapping[str, Any]) -> Any:
    """A reference file from the local file cache (``NeedsFileCache`` when it is missing)."""
    fetch = str(ctx.extra.get("fetch_command") or "")
    if config.get("multi", False):
        found = [
            _copy(ctx, cache_lookup(ctx.file_cache, url, fetch=fetch), dest)
            for url, dest in zip(config["path"], config["dest"], strict=True)
        ]
        return _pick(found, config)
    dest = config.get("dest") or Path(urlparse(config["path"]).path).name
    return _copy(ctx, cache_lookup(ctx.file_cache, config["path"], fetch=fetch), dest)


def get_cache_file(ctx: GetterContext, config: Mapping[str, Any]) -> str | None:
    """A file written into the task cache (e.g. a setup command's ``stdout``)."""
    path = ctx.cache_dir / config["path"]
    return str(path) if path.is_file() else None


def _vm_command(
    ctx: GetterContext, config: Mapping[str, Any]
) -> subprocess.CompletedProcess[str] | None:
    """The finished command of a ``vm_command_*`` getter; ``None`` when its program cannot be
    started (OSWorld's VM server answers an error there, and its getter gives ``None``: never
    a ``FileNotFoundError``, which its evaluator would score as a missing file)."""
    try:
        return run_task_command(
            ctx, config["command"], shell=bool(config.get("shell", False)), timeout=COMMAND_TIMEOUT
        )
    except OSError:
        return None


def get_vm_command_line(ctx: GetterContext, config: Mapping[str, Any]) -> str | None:
    """The standard output of a command run on the desktop."""
    done = _vm_command(ctx, config)
    return None if done is None else done.stdout


def get_vm_command_error(ctx: GetterContext, config: Mapping[str, Any]) -> str | None:
    """The standard error of a command run on the desktop."""
    done = _vm_command(ctx, config)
    return None if done is None else done.stderr


def get_rule(ctx: GetterContext, config: Mapping[str, Any]) -> Any:
    return config["rules"]


def get_list_directory(ctx: GetterContext, config: Mapping[str, Any]) -> dict[str, Any] | None:
    """The folder as a tree: ``{"type": "directory", "name", "children": [...]}``."""
    root = ctx.resolve(config["path"])
    if not root.is_dir():
        return None

    def tree(path: Path) -> dict[str, Any]:
        if path.is_dir() and not path.is_symlink():
            children = [tree(p) for p in sorted(path.iterdir())]
            return {"type": "directory", "name": path.name, "children": children}
        return {"type": "file", "name": path.name}

    return tree(root)


def get_open_tabs_info(
    ctx: GetterContext, config: Mapping[str, Any]
) -> list[dict[str, str]] | None:
    """The browser's open pages as ``[{"title", "url"}]`` (``None``: no browser answers)."""
    from agent_s.bench.chrome import DevTools, DevToolsError

    port = ctx.extra.get("chrome_port")
    if port is None:
        return None
    try:
        return [tab.info() for tab in DevTools(int(port)).tabs()]
    except DevToolsError:
        return None


def get_active_tab_info(ctx: GetterContext, config: Mapping[str, Any]) -> dict[str, str] | None:
    """The active tab as ``{"title", "url"}`` (OSWorld adds the page's HTML; no metric we
    have reads it)."""
    from agent_s.bench.chrome import DevTools, DevToolsError

    port = ctx.extra.get("chrome_port")
    if port is None:
        return None
    try:
        tab = DevTools(int(port)).active_tab()
    except DevToolsError:
        return None
    return tab.info() if tab is not None else None


def get_active_url(ctx: GetterContext, config: Mapping[str, Any]) -> str | None:
    """The active tab's URL. OSWorld reads the address bar's text from the accessibility tree
    and puts ``goto_prefix`` before it (Chrome hides ``https://www.``); DevTools gives the
    full URL, which the URL metrics compare the same way."""
    info = get_active_tab_info(ctx, config)
    return info["url"] if info is not None else None


def get_gimp_config_file(ctx: GetterContext, config: Mapping[str, Any]) -> str | None:
    """A copy of one of GIMP 2.10's config files (``file_name``, e.g. ``gimprc``)."""
    source = ctx.home / ".config" / "GIMP" / "2.10" / config["file_name"]
    return _copy(ctx, source, config.get("dest") or config["file_name"])


def get_accessibility_tree(ctx: GetterContext, config: Mapping[str, Any]) -> str | None:
    """The desktop's accessibility tree as XML (one element per showing, named element)."""
    return ctx.a11y_tree() if ctx.a11y_tree is not None else None


def accessibility_xml(elements: Sequence[Any]) -> str:
    """XML of AT-SPI elements grouped by application: ``<desktop-frame><application name>
    <push-button name="OK" x y w h/>``. Flat within an application: our tree reader keeps
    the named, showing elements only, not OSWorld's full nesting."""
    root = ET.Element("desktop-frame")
    apps: dict[str, ET.Element] = {}
    for element in elements:
        app = apps.get(element.app)
        if app is None:
            app = apps[element.app] = ET.SubElement(root, "application", name=element.app)
        tag = element.role.replace(" ", "-") or "unknown"
        box = element.box
        ET.SubElement(
            app,
            tag,
            name=element.name,
            description=element.description,
            window=element.window,
            x=str(box.x),
            y=str(box.y),
            w=str(box.width),
            h=str(box.height),
        )
    return ET.tostring(root, encoding="unicode")


Getter = Callable[[GetterContext, Mapping[str, Any]], Any]
GETTERS: dict[str, Getter] = {
    "vm_file": get_vm_file,
    "cloud_file": get_cloud_file,
    "cache_file": get_cache_file,
    "vm_command_line": get_vm_command_line,
    "vm_command_error": get_vm_command_error,
    "rule": get_rule,
    "list_directory": get_list_directory,
    "accessibility_tree": get_accessibility_tree,
    "open_tabs_info": get_open_tabs_info,
    "active_tab_info": get_active_tab_info,
    "active_url_from_accessTree": get_active_url,
    "gimp_config_file": get_gimp_config_file,
}

__all__ = [
    "GETTERS",
    "OSWORLD_HOME",
    "Getter",
    "GetterContext",
    "NeedsFileCache",
    "accessibility_xml",
    "cache_lookup",
    "map_text",
    "run_task_command",
]
