"""OSWorld's VLC metrics over VLC's settings file (vlcrc) and the window size. Each returns a
float in [0, 1] with OSWorld's verdict on the same file (our own code, written from its
behaviour).

As in OSWorld, a setting is read from every line that *contains* ``key=``, commented-out
lines included (vlcrc lists every default as ``#key=value``); the last such line wins, and a
key on no line has VLC's default.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

DEFAULT_SLIDER_COLOURS = "153;210;153;20;210;20;255;199;15;245;39;29"
_BLACKISH = 100  # every channel below this is "blackish"


def _lines(config_path: Any) -> list[str]:
    return Path(config_path).read_bytes().decode("utf-8").split("\n")


def _setting(config_path: Any, key: str, default: str) -> str:
    value = default
    for line in _lines(config_path):
        if f"{key}=" in line:
            value = line.split("=")[-1].strip()
    return value


def _as_text(value: Any) -> Any:
    return str(value) if isinstance(value, int) else value


def is_vlc_recordings_folder(actual_config_path: Any, rule: Mapping[str, Any], **_: Any) -> float:
    """The first uncommented line naming ``input-record-path`` sets it to
    ``rule["recording_file_path"]``."""
    for line in _lines(actual_config_path):
        if line.startswith("#") or not line.strip():
            continue
        if "input-record-path" in line:
            current = line.split("=")[-1].strip()
            return 1.0 if current == rule["recording_file_path"] else 0.0
    return 0.0


def is_vlc_fullscreen(actual_window_size: Any, screen_size: Any, **_: Any) -> float:
    """VLC's window is exactly the screen's size (either unknown: not full screen)."""
    if screen_size is None or actual_window_size is None:
        return 0.0
    same = (actual_window_size["width"], actual_window_size["height"]) == (
        screen_size["width"],
        screen_size["height"],
    )
    return 1.0 if same else 0.0


def _setting_is(config_path: Any, key: str, default: str, expected: Any) -> float:
    return 1.0 if _setting(config_path, key, default) == _as_text(expected) else 0.0


def check_qt_bgcone(actual_config_path: Any, rule: Mapping[str, Any], **_: Any) -> float:
    """``qt-bgcone`` (default 1) is ``rule["expected_qt_bgcone"]``."""
    return _setting_is(actual_config_path, "qt-bgcone", "1", rule["expected_qt_bgcone"])


def check_qt_max_volume(actual_config_path: Any, rule: Mapping[str, Any], **_: Any) -> float:
    """``qt-max-volume`` (default 125) is ``rule["expected_qt_max_volume"]``."""
    expected = rule["expected_qt_max_volume"]
    return _setting_is(actual_config_path, "qt-max-volume", "125", expected)


def check_qt_minimal_view(actual_config_path: Any, rule: Mapping[str, Any], **_: Any) -> float:
    """``qt-minimal-view`` (default 0) is ``rule["expected_qt_minimal_view"]``."""
    expected = rule["expected_qt_minimal_view"]
    return _setting_is(actual_config_path, "qt-minimal-view", "0", expected)


def check_one_instance_when_started_from_file(
    actual_config_path: Any, rule: Mapping[str, Any], **_: Any
) -> float:
    """``one-instance-when-started-from-file`` (default 1) is the rule's expected value."""
    expected = rule["expected_one_instance_when_started_from_file"]
    key = "one-instance-when-started-from-file"
    return _setting_is(actual_config_path, key, "1", expected)


def check_global_key_play_pause(
    actual_config_path: Any, rule: Mapping[str, Any], **_: Any
) -> float:
    """Whether a global play/pause key is set ("1") or not ("0") matches the rule's
    ``expected_global_key_play_pause``."""
    state = "0"
    for line in _lines(actual_config_path):
        if "global-key-play-pause=" in line:
            state = "0" if line.split("=")[-1].strip() == "" else "1"
    return 1.0 if state == _as_text(rule["expected_global_key_play_pause"]) else 0.0


def check_qt_slider_colours(actual_config_path: Any, rule: Mapping[str, Any], **_: Any) -> float:
    """``qt-slider-colours``: equal to ``expected_qt_slider_colours`` (``type: match``), or
    every colour of it blackish (``type: blackish``). A value that does not parse scores 0."""
    value = DEFAULT_SLIDER_COLOURS
    for line in _lines(actual_config_path):
        if "qt-slider-colours" in line:
            value = line.split("=")[-1].strip()
    kind = rule["type"]
    if kind == "match":
        return 1.0 if value == rule["expected_qt_slider_colours"] else 0.0
    if kind == "blackish":
        try:
            numbers = [int(x) for x in value.split(";")]
        except ValueError:
            return 0.0
        colours = zip(numbers[0::3], numbers[1::3], numbers[2::3], strict=False)
        return 1.0 if all(all(c < _BLACKISH for c in colour) for colour in colours) else 0.0
    raise ValueError(f"check_qt_slider_colours does not know type {kind!r}")


def check_play_and_exit(actual_config_path: Any, rule: Mapping[str, Any], **_: Any) -> float:
    """``play-and-exit`` (VLC quits at the end of the playlist; default 0) is
    ``rule["expected_play_and_exit"]``."""
    expected = rule["expected_play_and_exit"]
    return _setting_is(actual_config_path, "play-and-exit", "0", expected)


# Where VLC's status.xml may name what is playing, in the order OSWorld looks.
_META = 'information/category[@name="meta"]/info[@name="{}"]'
_FILE_FIELDS = ("filename", "title", "uri", "location", "name")
_URL_FIELDS = ("url", "URI", "location", "title", "filename")
_STREAM_FIELDS = ("Codec", "Type", "Language")
_STREAM = 'information/category[@name="Stream 0"]/info[@name="{}"]'


def _first_info(tree: ET.Element, paths: Sequence[str]) -> str | None:
    for path in paths:
        element = tree.find(path)
        if element is not None and element.text:
            return element.text
    return None


def _same_file(info: str, expected: str) -> bool:
    return os.path.basename(info) == expected or info.endswith(expected)


def _same_url(info: str, expected: str) -> bool:
    if expected in info or info.endswith(expected):
        return True
    try:
        wanted = urlparse(expected)
        if info == os.path.basename(wanted.path):  # HLS: VLC shows the playlist's name
            return True
        if "://" in info:
            actual = urlparse(info)
            return wanted.netloc == actual.netloc and wanted.path in actual.path
    except ValueError:  # a URL urlparse rejects (a bad IPv6 host) matches nothing
        return False
    return False


def is_vlc_playing(actual_status_path: Any, rule: Mapping[str, Any], **_: Any) -> float:
    """VLC's ``status.xml`` (the ``vlc_playing_info`` getter) says ``playing``, and what it
    plays is ``rule["file_name"]`` (``type: file_name``: the base name, or a path ending in
    it) or ``rule["url"]`` (``type: url``: contained in it, the playlist's file name, or the
    same host with the path inside). A status without ``<state>`` raises, as OSWorld's."""
    tree = ET.fromstring(Path(actual_status_path).read_bytes().decode("utf-8"))  # noqa: S314
    state = tree.find("state")
    if state is None:
        raise ValueError("VLC's status.xml has no <state>: not a VLC status reply")
    if state.text != "playing":
        return 0.0
    kind = rule["type"]
    if kind == "file_name":
        info = _first_info(tree, [_META.format(name) for name in _FILE_FIELDS])
        return 1.0 if info and _same_file(info, rule["file_name"]) else 0.0
    if kind == "url":
        paths = [_META.format(n) for n in _URL_FIELDS] + [_STREAM.format(n) for n in _STREAM_FIELDS]
        info = _first_info(tree, paths)
        return 1.0 if info and _same_url(info, rule["url"]) else 0.0
    return 0.0
