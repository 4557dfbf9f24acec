"""OSWorld's getters of the desktop's state: VLC (its configuration file and its HTTP status),
the default video player, the screen's and a window's size, the wallpaper, a slide's audio or
background picture, a sheet's last row, a file VS Code writes from a palette command, and the
text of the terminal in front.

    GETTERS["vm_window_size"](ctx, {"type": "vm_window_size", "app_class_name": "vlc"})

OSWorld asks its VM's HTTP server for these; here they are read directly on the task's desktop
(X tools with the desktop's environment, files under its HOME). Importing
``agent_s.bench.getters`` registers them.
"""

from __future__ import annotations

import os
import posixpath
import re
import shutil
import time
import xml.etree.ElementTree as ET  # noqa: N817
import zipfile
from collections import Counter
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote, urlparse

from agent_s.bench.getters import (
    COMMAND_TIMEOUT,
    GETTERS,
    GetterContext,
    _copy,
    run_task_command,
)

#: The video types OSWorld asks ``xdg-mime`` about for the default video player.
VIDEO_TYPES = (
    "3gp",
    "3gpp",
    "3gpp2",
    "avi",
    "divx",
    "dv",
    "fli",
    "flv",
    "mp2t",
    "mp4",
    "mp4v-es",
    "mpeg",
    "mpeg-system",
    "msvideo",
    "ogg",
    "quicktime",
    "vnd.divx",
    "vnd.mpegurl",
    "vnd.rn-realvideo",
    "webm",
    "x-anim",
    "x-avi",
    "x-flc",
    "x-fli",
    "x-flv",
    "x-m4v",
    "x-matroska",
    "x-mpeg",
    "x-mpeg-system",
    "x-mpeg2",
    "x-ms-asf",
    "x-ms-asf-plugin",
    "x-ms-asx",
    "x-ms-wm",
    "x-ms-wmv",
    "x-ms-wmx",
    "x-ms-wvx",
    "x-msvideo",
    "x-nsv",
    "x-ogm",
    "x-ogm+ogg",
    "x-theora",
    "x-theora+ogg",
)


def get_vlc_config(ctx: GetterContext, config: Mapping[str, Any]) -> str | None:
    """A copy of VLC's configuration (``~/.config/vlc/vlcrc``)."""
    return _copy(ctx, ctx.home / ".config" / "vlc" / "vlcrc", config.get("dest") or "vlcrc")


def get_vlc_playing_info(ctx: GetterContext, config: Mapping[str, Any]) -> str | None:
    """VLC's ``status.xml`` from its HTTP interface (on ``ctx.extra["vlc_port"]``, default
    8080, password ``password`` as in OSWorld's image), saved as ``dest``. OSWorld's image
    always has that interface on; here a VLC without it raises (the task is left unscored,
    never scored 0 for what the agent did not cause)."""
    import base64
    import urllib.error
    import urllib.request

    port = int(ctx.extra.get("vlc_port", 8080))
    password = str(ctx.extra.get("vlc_password", "password"))
    request = urllib.request.Request(f"http://127.0.0.1:{port}/requests/status.xml")
    token = base64.b64encode(f":{password}".encode()).decode()
    request.add_header("Authorization", f"Basic {token}")
    content: bytes | None = None
    for attempt in range(5):
        try:
            with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 (loopback)
                content = response.read()
            break
        except (urllib.error.URLError, OSError):
            if attempt < 4:
                time.sleep(1)
    if content is None:
        raise RuntimeError(
            f"VLC's HTTP interface does not answer on 127.0.0.1:{port}: VLC must run with "
            f"--extraintf http --http-port {port} --http-password {password}"
        )
    target = ctx.cache_dir / (config.get("dest") or "status.xml")
    target.write_bytes(content)
    return str(target)


def get_default_video_player(ctx: GetterContext, config: Mapping[str, Any]) -> str:
    """The desktop file most video types open with (``xdg-mime``), ``unknown`` if none."""
    apps = []
    for kind in VIDEO_TYPES:
        argv = ["xdg-mime", "query", "default", f"video/{kind}"]
        try:
            out = run_task_command(ctx, argv, shell=False, timeout=COMMAND_TIMEOUT).stdout
        except OSError:
            return "unknown"
        if out:
            apps.append(out)
    return Counter(apps).most_common(1)[0][0] if apps else "unknown"


def _x_output(ctx: GetterContext, *argv: str) -> str:
    done = run_task_command(ctx, list(argv), shell=False, timeout=COMMAND_TIMEOUT)
    return done.stdout if done.returncode == 0 else ""


def get_vm_screen_size(ctx: GetterContext, config: Mapping[str, Any]) -> dict[str, int] | None:
    """The screen as ``{"width", "height"}`` in pixels."""
    found = re.search(r"dimensions:\s+(\d+)x(\d+) pixels", _x_output(ctx, "xdpyinfo"))
    return {"width": int(found[1]), "height": int(found[2])} if found else None


def get_vm_window_size(ctx: GetterContext, config: Mapping[str, Any]) -> dict[str, int] | None:
    """The first managed window whose class (either WM_CLASS name, any case) is
    ``app_class_name``, as ``{"width", "height"}``; ``None`` when there is none."""
    wanted = str(config["app_class_name"]).lower()
    listing = _x_output(ctx, "xprop", "-root", "_NET_CLIENT_LIST")
    for window in re.findall(r"0x[0-9a-fA-F]+", listing.partition("#")[2]):
        names = re.findall(r'"([^"]*)"', _x_output(ctx, "xprop", "-id", window, "WM_CLASS"))
        if wanted not in (n.lower() for n in names):
            continue
        info = _x_output(ctx, "xwininfo", "-id", window)
        width, height = re.search(r"Width: (\d+)", info), re.search(r"Height: (\d+)", info)
        if width and height:
            return {"width": int(width[1]), "height": int(height[1])}
    return None


def get_vm_wallpaper(ctx: GetterContext, config: Mapping[str, Any]) -> str:
    """A copy of the desktop's wallpaper as ``dest`` (GNOME's ``picture-uri``); an empty file
    when there is none, as OSWorld."""
    target = ctx.cache_dir / config["dest"]
    target.parent.mkdir(parents=True, exist_ok=True)
    argv = ["gsettings", "get", "org.gnome.desktop.background", "picture-uri"]
    try:
        uri = run_task_command(ctx, argv, shell=False, timeout=COMMAND_TIMEOUT).stdout
    except OSError:
        uri = ""
    path = unquote(urlparse(uri.strip().strip("'")).path)
    source = ctx.resolve(path) if path else None
    if source is not None and source.is_file():
        shutil.copyfile(source, target)
    else:
        target.write_bytes(b"")
    return str(target)


_REL_NS = "{http://schemas.openxmlformats.org/package/2006/relationships}"
_PML = "{http://schemas.openxmlformats.org/presentationml/2006/main}"
_DML = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
_EMBED = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}embed"


def _slide_part(
    ctx: GetterContext, config: Mapping[str, Any], kind: str, rel_id: str | None
) -> str | None:
    """The file of a slide's relationship of ``kind`` (``rel_id``: that one only): extracted
    next to the deck's copy when inside it, else copied from the desktop as ``dest``."""
    deck_path = str(config["ppt_file_path"])
    copy = _copy(ctx, ctx.resolve(deck_path), os.path.basename(deck_path))
    if copy is None:
        raise FileNotFoundError(f"no presentation at {deck_path}")
    slide = int(config["slide_index"]) + 1
    external = None
    with zipfile.ZipFile(copy) as deck:
        rels = f"ppt/slides/_rels/slide{slide}.xml.rels"
        if rels not in deck.namelist():
            return None
        root = _parse_xml(deck.read(rels))
        for rel in root.iter(f"{_REL_NS}Relationship"):
            if kind not in rel.get("Type", "") or (rel_id is not None and rel.get("Id") != rel_id):
                continue
            target = rel.get("Target", "")
            if target.startswith(".."):
                inner = posixpath.normpath(posixpath.join("ppt/slides", target))
                deck.extract(inner, os.path.dirname(copy))
                return os.path.join(os.path.dirname(copy), inner)
            if not target.startswith("file://"):
                raise ValueError(f"slide {slide}: {kind} target {target!r} is not a file URL")
            external = target[len("file://") :]
            break
    if external is None:
        return None
    return _copy(ctx, ctx.resolve(external), config["dest"])


def _parse_xml(data: bytes) -> Any:
    return ET.fromstring(data)  # noqa: S314  (a deck of the task's desktop)


def get_audio_in_slide(ctx: GetterContext, config: Mapping[str, Any]) -> str | None:
    """The audio file of slide ``slide_index`` (0-based) of ``ppt_file_path``."""
    return _slide_part(ctx, config, "audio", None)


def get_background_image_in_slide(ctx: GetterContext, config: Mapping[str, Any]) -> str | None:
    """The background picture of slide ``slide_index`` (0-based) of ``ppt_file_path``."""
    deck_path = str(config["ppt_file_path"])
    copy = _copy(ctx, ctx.resolve(deck_path), os.path.basename(deck_path))
    if copy is None:
        raise FileNotFoundError(f"no presentation at {deck_path}")
    name = f"ppt/slides/slide{int(config['slide_index']) + 1}.xml"
    with zipfile.ZipFile(copy) as deck:
        if name not in deck.namelist():
            return None
        root = _parse_xml(deck.read(name))
    image_id = None
    for background in root.iter(f"{_PML}bgPr"):
        for blip in background.iter(f"{_DML}blip"):
            image_id = blip.get(_EMBED)
            break
        if image_id is not None:
            break
    if image_id is None:
        return None
    return _slide_part(ctx, config, "image", image_id)


def get_content_from_vm_file(ctx: GetterContext, config: Mapping[str, Any]) -> Any:
    """Part of a desktop file: for ``file_type`` xlsx and ``file_content`` last_row, the
    sheet's last row as text (pandas' reading, as OSWorld)."""
    path = str(config["path"])
    copy = _copy(ctx, ctx.resolve(path), os.path.basename(path))
    file_type, part = config["file_type"], config["file_content"]
    if file_type != "xlsx":
        raise NotImplementedError(f"file type {file_type} is not supported")
    if part != "last_row":
        return None
    import pandas as pd

    frame = pd.read_excel(copy)
    return [str(v) for v in frame.iloc[-1].astype(str).tolist()]


def get_vscode_config(ctx: GetterContext, config: Mapping[str, Any]) -> str | None:
    """Run a VS Code command from its palette (Ctrl+Shift+P, the command, Enter) on the
    desktop, then copy the file it writes (``path`` as ``dest``)."""
    command = str(config["vscode_extension_command"])
    for argv in (
        ["xdotool", "key", "--clearmodifiers", "ctrl+shift+p"],
        ["xdotool", "type", "--delay", "20", "--", command],
        ["xdotool", "key", "Return"],
    ):
        run_task_command(ctx, argv, shell=False, timeout=COMMAND_TIMEOUT)
        time.sleep(0.3)
    time.sleep(1.0)
    return _copy(ctx, ctx.resolve(config["path"]), config["dest"])


def terminal_text(timeout_ms: int = 1500) -> str | None:
    """The text of the focused terminal in the active window, read from the accessibility
    tree (a VTE terminal's ``terminal`` element: GNOME Terminal's, LXTerminal's), right-hand
    white space removed; ``None`` unless exactly one such terminal is focused."""
    from agent_s.desktop.atspi import ATSPI_LOCK, AccessibilityUnavailable, bindings

    try:
        atspi = bindings(timeout_ms)
    except AccessibilityUnavailable:
        return None
    texts: list[str] = []

    def walk(node: Any, depth: int) -> None:
        if node is None or depth > 40:
            return
        role = node.get_role()
        if role == atspi.Role.TERMINAL:
            if node.get_state_set().contains(atspi.StateType.FOCUSED):
                texts.append(atspi.Text.get_text(node, 0, atspi.Text.get_character_count(node)))
            return
        for index in range(min(node.get_child_count(), 500)):
            walk(node.get_child_at_index(index), depth + 1)

    from gi.repository import GLib

    with ATSPI_LOCK:
        desktop = atspi.get_desktop(0)
        for index in range(desktop.get_child_count()):
            app = desktop.get_child_at_index(index)
            try:
                frames = [app.get_child_at_index(i) for i in range(app.get_child_count())]
                for frame in frames:
                    if (
                        frame is not None
                        and frame.get_role() == atspi.Role.FRAME
                        and frame.get_state_set().contains(atspi.StateType.ACTIVE)
                    ):
                        walk(frame, 0)
            except (GLib.Error, AttributeError):  # an application that went away meanwhile
                pass
    return texts[0].rstrip() if len(texts) == 1 else None


def get_vm_terminal_output(ctx: GetterContext, config: Mapping[str, Any]) -> str | None:
    """What the terminal in front shows (``terminal_text``), as OSWorld reads GNOME
    Terminal's through the accessibility tree; ``None`` when no terminal has the focus."""
    return terminal_text()


GETTERS.update(
    {
        "vlc_config": get_vlc_config,
        "vlc_playing_info": get_vlc_playing_info,
        "default_video_player": get_default_video_player,
        "vm_screen_size": get_vm_screen_size,
        "vm_window_size": get_vm_window_size,
        "vm_wallpaper": get_vm_wallpaper,
        "audio_in_slide": get_audio_in_slide,
        "background_image_in_slide": get_background_image_in_slide,
        "content_from_vm_file": get_content_from_vm_file,
        "vscode_config": get_vscode_config,
        "vm_terminal_output": get_vm_terminal_output,
    }
)


__all__ = ["VIDEO_TYPES", "terminal_text"]
