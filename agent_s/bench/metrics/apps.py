"""OSWorld's application-state metrics: VS Code extensions, Chrome tabs, GIMP's gimprc,
Thunderbird's prefs.js. Each returns a float in [0, 1]; a getter that found nothing (``None``)
scores 0.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlparse, urlunparse

from agent_s.bench.metrics.table import match_value_to_rule

_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+\-.]*://")
_PREF = re.compile(r'^user_pref\("(?P<key>(?:[^"]|\\")+)", (?P<val>.+)\);$')


def is_extension_installed(result: Any, rules: Mapping[str, Any], **_: Any) -> float:
    """``rules["type"]`` ``contain``: the extension id is in the command's output
    (``code --list-extensions``); ``not_contain``: it is not."""
    if result is None:
        return 0.0
    kind = rules["type"]
    if kind == "contain":
        return 1.0 if rules["expected"] in result else 0.0
    if kind == "not_contain":
        return 1.0 if rules["expected"] not in result else 0.0
    raise NotImplementedError(f"is_extension_installed does not know type {kind!r}")


def normalize_url(url: str, *, full: bool = True) -> str:
    """A URL as OSWorld compares it: ``http://`` when it has no scheme, scheme and host in
    lower case without ``www.``, no trailing ``/`` on the path; ``full=False`` also drops
    params, query and fragment."""
    parsed = urlparse(url if _SCHEME.match(url) else f"http://{url}")
    netloc = parsed.netloc.lower()
    netloc = netloc[4:] if netloc.startswith("www.") else netloc
    return urlunparse(
        (
            parsed.scheme.lower(),
            netloc,
            parsed.path.rstrip("/"),
            parsed.params if full else "",
            parsed.query if full else "",
            parsed.fragment if full else "",
        )
    )


def compare_urls(url1: str | None, url2: str | None, *, full: bool = True) -> bool:
    if url1 is None or url2 is None:
        return url1 == url2
    return normalize_url(url1, full=full) == normalize_url(url2, full=full)


def _lists_match(a: Sequence[Any], b: Sequence[Any], same: Callable[[Any, Any], bool]) -> bool:
    """Same length, and every item of ``a`` matches some item of ``b`` (OSWorld's check)."""
    return len(a) == len(b) and all(any(same(x, y) for y in b) for x in a)


def _url_of(tab: Any) -> str | None:
    if isinstance(tab, Mapping):
        url = tab.get("url")
        return url if isinstance(url, str) else None
    return tab if isinstance(tab, str) else None


def is_expected_tabs(open_tabs: Any, rule: Mapping[str, Any], **_: Any) -> float:
    """``{"type": "url", "urls": [...]}``: the open tabs are exactly these URLs, in any order
    (``open_tabs``: ``[{"title", "url"}, ...]``)."""
    if open_tabs is None:
        return 0.0
    kind = rule["type"]
    if kind != "url":
        raise NotImplementedError(f"is_expected_tabs does not know type {kind!r}")
    actual = [_url_of(tab) for tab in open_tabs]
    return 1.0 if _lists_match(rule["urls"], actual, compare_urls) else 0.0


def is_expected_active_tab(active_tab: Any, rule: Mapping[str, Any], **_: Any) -> float:
    """``{"type": "url", "url": ...}``: the active tab shows this URL (``active_tab``: a URL
    or ``{"url": ...}``)."""
    if active_tab is None:
        return 0.0
    kind = rule["type"]
    if kind != "url":
        raise NotImplementedError(f"is_expected_active_tab does not know type {kind!r}")
    actual = _url_of(active_tab)
    if actual is None:
        return 0.0
    return 1.0 if compare_urls(rule["url"], actual) else 0.0


def check_config_status(config_path: Any, rule: Mapping[str, Any], **_: Any) -> float:
    """A GIMP-style config file (``(key value)`` per line, ``#`` comments) has a line whose
    first word is ``rule["key"]`` (or whose first two words are a two-item key) and whose
    last word is ``rule["value"]`` (quotes included, e.g. ``"\\"Light\\""``)."""
    if not config_path:
        return 0.0
    try:
        lines = Path(config_path).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return 0.0
    key, value = rule["key"], rule["value"]
    if not (isinstance(key, str) or (isinstance(key, list) and len(key) == 2)):
        raise NotImplementedError(f"check_config_status does not know key {key!r}")
    for line in lines:
        if line.startswith("#") or not line.strip():
            continue
        items = line.strip().lstrip("(").rstrip(")").split()
        if not items or items[-1] != value:
            continue
        if isinstance(key, str) and items[0] == key:
            return 1.0
        if isinstance(key, list) and len(items) >= 2 and items[:2] == key:
            return 1.0
    return 0.0


def read_prefs(path: Any) -> dict[str, Any] | None:
    """``user_pref("key", value);`` lines of a Mozilla prefs.js, values read as JSON."""
    try:
        lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    prefs: dict[str, Any] = {}
    for line in lines:
        match = _PREF.match(line.strip())
        if match is None:
            continue
        try:
            prefs[match.group("key")] = json.loads(match.group("val"))
        except json.JSONDecodeError:
            continue
    return prefs


def check_thunderbird_prefs(result: Any, rule: Mapping[str, Any], **_: Any) -> float:
    """Every ``expect`` pref is set and matches its ``{method, ref}``; no ``unexpect`` pref
    that is set matches its rule (an unset pref passes)."""
    if not result:
        return 0.0
    prefs = read_prefs(result)
    if prefs is None:
        return 0.0

    def matches(value: Any, pref_rule: Mapping[str, Any]) -> bool:
        try:
            return match_value_to_rule(value, pref_rule)
        except TypeError:  # e.g. a regex against a number: not a match
            return False

    for key, pref_rule in rule.get("expect", {}).items():
        if key not in prefs or not matches(prefs[key], pref_rule):
            return 0.0
    for key, pref_rule in rule.get("unexpect", {}).items():
        if key in prefs and matches(prefs[key], pref_rule):
            return 0.0
    return 1.0
