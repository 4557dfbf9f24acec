"""OSWorld's application-state metrics: VS Code extensions, Chrome tabs, GIMP's gimprc,
Thunderbird's prefs.js. Each returns a float in [0, 1]; a getter that found nothing (``None``)
scores 0.
"""

from __future__ import annotations

import functools
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


@functools.cache
def _domain_parts() -> Any:
    """tldextract with its bundled public-suffix snapshot: never fetches the list, never
    writes a cache."""
    import tldextract

    return tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)


def normalize_url(url: str, *, full: bool = True) -> str:
    """A URL as OSWorld compares it: ``http://`` when it has no scheme; the scheme in lower
    case; the host reduced by tldextract to ``subdomain.domain`` (the public suffix and any
    port dropped, a lone ``www`` subdomain dropped); a path of just ``/`` is empty (other
    trailing slashes stay); ``full=False`` also drops params, query and fragment."""
    parsed = urlparse(url if _SCHEME.match(url) else f"http://{url}")
    parts = _domain_parts()(parsed.netloc.lower())
    subdomain = "" if parts.subdomain == "www" else parts.subdomain
    netloc = f"{subdomain}.{parts.domain}" if subdomain else parts.domain
    return urlunparse(
        (
            parsed.scheme.lower(),
            netloc,
            "" if parsed.path == "/" else parsed.path,
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
    (``open_tabs``: ``[{"title", "url"}, ...]``). No tabs, or another type, scores 0."""
    if not open_tabs or rule["type"] != "url":
        return 0.0
    # Deliberately not OSWorld's: it reads tab["url"] and raises on a tab given as a plain
    # URL string (the task unscored). Its getter, and ours, give {"title", "url"} records,
    # so no real task has such tabs; a plain string is read as that tab's URL.
    actual = [_url_of(tab) for tab in open_tabs]
    return 1.0 if _lists_match(rule["urls"], actual, compare_urls) else 0.0


def is_expected_active_tab(active_tab: Any, rule: Mapping[str, Any], **_: Any) -> float:
    """``{"type": "url", "url": ...}``: the active tab shows this URL (``active_tab``: a URL
    or ``{"url": ...}``). Another type scores 0."""
    if not active_tab or rule["type"] != "url":
        return 0.0
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
        # Deliberately not OSWorld's: it skips only "#" lines and lines that are exactly a
        # newline, so a line of spaces (or a bare "()") makes its items[0] raise and leaves
        # the task unscored. GIMP writes no such line, and it says nothing about any key:
        # we skip it.
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
            # Deliberately not OSWorld's: its json.loads raises here and leaves the task
            # unscored. Thunderbird writes only JSON literals as values, so no real prefs.js
            # has such a line; we skip it (that pref counts as unset).
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


def is_expected_active_tab_approximate(active_tab: Any, rule: Mapping[str, Any], **_: Any) -> float:
    """``{"type": "url", "url": ...}``: the active tab's URL equals it once both lose their
    query string (no other normalisation). Another type scores 0."""
    if not active_tab or rule["type"] != "url":
        return 0.0
    actual: Any = active_tab.get("url") if isinstance(active_tab, Mapping) else active_tab

    def without_query(url: Any) -> Any:  # (urlparse raises on what is not a URL, as there)
        return urlunparse(urlparse(url)._replace(query=""))

    return 1.0 if without_query(rule["url"]) == without_query(actual) else 0.0


def is_expected_search_query(active_tab: Any, rules: Mapping[str, Any], **_: Any) -> float:
    """The active tab's URL matches the regex ``rules["expect"]["pattern"]``."""
    if not active_tab:
        return 0.0
    return 1.0 if re.search(rules["expect"]["pattern"], active_tab["url"]) else 0.0


def is_expected_installed_extensions(
    installed: Any, expected: Mapping[str, Any], **_: Any
) -> float:
    """Every extension of ``expected["expected"]`` is among the installed ones."""
    if not installed:
        return 0.0
    return 1.0 if set(expected["expected"]) <= set(installed) else 0.0


def _bar_children(bookmarks: Mapping[str, Any], kind: str) -> list[Mapping[str, Any]]:
    return [b for b in bookmarks["bookmark_bar"]["children"] if b["type"] == kind]


def is_expected_bookmarks(bookmarks: Any, rule: Mapping[str, Any], **_: Any) -> float:
    """Chrome's bookmarks (the Bookmarks file's ``roots``) against ``rule["type"]``:
    ``bookmark_bar_folders_names`` / ``bookmark_bar_websites_urls``: the bar's folders' names /
    sites' URLs are exactly ``rule["names"]`` / ``rule["urls"]`` (as sets);
    ``liked_authors_websites_urls``: a bar folder named one of ``rule["names"]`` (default
    "Liked Authors") holds exactly one URL of each ``rule["urls"]`` item (a URL or a list of
    alternatives). No bookmarks score 0; another type raises TypeError, as in OSWorld."""
    import itertools

    if not bookmarks:
        return 0.0
    kind = rule["type"]
    if kind == "bookmark_bar_folders_names":
        names = {b["name"] for b in _bar_children(bookmarks, "folder")}
        return 1.0 if names == set(rule["names"]) else 0.0
    if kind == "bookmark_bar_websites_urls":
        urls = {b["url"] for b in _bar_children(bookmarks, "url")}
        return 1.0 if urls == set(rule["urls"]) else 0.0
    if kind == "liked_authors_websites_urls":
        allowed = rule.get("names", ["Liked Authors"])
        folder = next((b for b in _bar_children(bookmarks, "folder") if b["name"] in allowed), None)
        if folder is None:
            return 0.0
        liked = {b["url"] for b in folder["children"] if b["type"] == "url"}
        options = [[u] if isinstance(u, str) else list(u) for u in rule["urls"]]
        combos = itertools.product(*options)
        return 1.0 if any(set(combo) == liked for combo in combos) else 0.0
    raise TypeError(f"{kind} not supported by is_expected_bookmarks")


def is_cookie_deleted(cookie_data: Any, rule: Mapping[str, Any], **_: Any) -> float:
    """``{"type": "domains", "domains": [...]}``: no cookie's host (the second column of
    Chrome's cookies rows) is any of these domains, compared as URLs (``compare_urls``)."""
    if rule["type"] != "domains":
        raise TypeError(f"{rule['type']} not supported by is_cookie_deleted")
    hosts = [cookie[1] for cookie in cookie_data]
    gone = not any(compare_urls(domain, host) for domain in rule["domains"] for host in hosts)
    return 1.0 if gone else 0.0


def check_history_deleted(history_data: Any, rule: Mapping[str, Any], **_: Any) -> float:
    """``{"type": "keywords", "keywords": [...]}``: no history entry's URL (the first column)
    contains any keyword."""
    if rule["type"] != "keywords":
        raise TypeError(f"{rule['type']} not supported by check_history_deleted")
    urls = [entry[0] for entry in history_data]
    found = any(keyword in url for keyword in rule["keywords"] for url in urls)
    return 0.0 if found else 1.0


def is_shortcut_on_desktop(
    shortcuts: Mapping[str, str], rule: Mapping[str, Any], **_: Any
) -> float:
    """Some desktop shortcut (path -> .desktop text) has the line ``Name=<rule["name"]>``
    (``type: name``) or ``Exec=<rule["exec"]>`` (``type: exec``)."""
    kind = rule["type"]
    if kind not in ("name", "exec"):
        raise TypeError(f"{kind} not supported by is_shortcut_on_desktop")
    line = f"{kind.capitalize()}={rule[kind]}\n"
    return 1.0 if any(line in text for text in shortcuts.values()) else 0.0


def check_font_size(font_size: Mapping[str, Any], rule: Mapping[str, Any], **_: Any) -> float:
    """Chrome's default font size is ``rule["value"]`` (``type: value``) or strictly between
    ``rule["min"]`` and ``rule["max"]`` (``type: range``)."""
    size = font_size["default_font_size"]
    if rule["type"] == "value":
        return 1.0 if size == rule["value"] else 0.0
    if rule["type"] == "range":
        return 1.0 if rule["min"] < size < rule["max"] else 0.0
    raise TypeError(f"{rule['type']} not supported by check_font_size")


def is_added_to_steam_cart(
    active_tab_info: Mapping[str, Any], rule: Mapping[str, Any], **_: Any
) -> float:
    """Every item of ``rule["items"]`` is in the active page's content (``content``)."""
    content = active_tab_info["content"]
    return 1.0 if all(item in content for item in rule["items"]) else 0.0


_FILTER_CONDITION = re.compile(
    r"\b(?:AND|OR) \((?:[\w ]+),(?:[\w ']+),(?:\"(?:(?:[^\"]|\")+)\"|(?:[^)]+))\)|\bALL\b"
)
_FILTER_FIELDS = (
    ("name=", "name"),
    ("enabled=", "enabled"),
    ("type=", "type"),
    ("action=", "action"),
    ("actionValue=", "actionValue"),
)


def _filter_value(line: str, prefix: str) -> str:
    """The quoted value of a msgFilterRules.dat line (``key="value"`` and its newline), with
    ``\\"`` and ``\\\\`` unescaped."""
    raw = line[len(prefix) + 1 : -2]
    return raw.replace('\\"', '"').replace("\\\\", "\\")


def read_thunderbird_filters(path: Any) -> list[dict[str, Any]]:
    """The filters of a Thunderbird msgFilterRules.dat: name, enabled, type, action,
    actionValue and the list of conditions (each ``AND (field,op,value)`` / ``ALL``). A
    filter is complete at its ``condition=`` line."""
    filters: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.startswith("name="):
                current = {"name": _filter_value(line, "name=")}
                continue
            for prefix, key in _FILTER_FIELDS[1:]:
                if line.startswith(prefix):
                    if current is None:
                        raise ValueError(f"{prefix} before any filter's name=")
                    current[key] = _filter_value(line, prefix)
                    break
            else:
                if line.startswith("condition="):
                    if current is None:
                        raise ValueError("condition= before any filter's name=")
                    value = _filter_value(line, "condition=")
                    current["condition"] = _FILTER_CONDITION.findall(value)
                    filters.append(current)
    return filters


def check_thunderbird_filter(result: Any, rules: Mapping[str, Any], **_: Any) -> float:
    """Over the filters of msgFilterRules.dat: each ``expect`` record (key -> value, the
    condition a list of condition strings) matches some filter, and no ``unexpect`` record
    matches any."""
    if result is None:
        return 0.0
    expect = list(rules.get("expect", []))
    unexpect = list(rules.get("unexpect", []))
    found = [False] * len(expect)
    clean = True
    for flt in read_thunderbird_filters(result):
        found = [f or _record_matches(r, flt) for f, r in zip(found, expect, strict=True)]
        clean = clean and not any(_record_matches(r, flt) for r in unexpect)
    return 1.0 if all(found) and clean else 0.0


def _record_matches(pattern: Mapping[str, Any], record: Mapping[str, Any]) -> bool:
    return all(key in record and record[key] == value for key, value in pattern.items())


def _thunderbird_folder_text(path: Any, options: Mapping[str, Any]) -> str:
    """A Thunderbird folder file as OSWorld's check_thunderbird_folder reads it: split at
    "FROM - " and, as its code stands, only the *blank* pieces are kept (each becomes
    "FROM - "), the rest skipped; sorted, and de-duplicated unless ``remove_duplicate`` is
    off. An mbox written by Thunderbird ("From - ...") is one non-blank piece, so it reads as
    "" while an empty file reads as "FROM - "."""
    data = Path(str(path)).read_text(encoding="utf-8").strip()
    messages = []
    for mail in data.split("FROM - "):
        if mail.strip():
            continue
        if options.get("remove_deleted", True) and re.search(r"X-Mozilla-Status: 000[89]", mail):
            continue
        text = mail
        if options.get("ignore_status", False):
            text = re.sub(r"X-Mozilla-Status\d?:[\s\d]+", "", text)
        if options.get("ignore_keys", False):
            text = re.sub(r"(X-Mozilla-Keys:[^\n]*?)\n(MIME-Version)", r"\2", text)
        messages.append("FROM - " + text.strip())
    unique = set(messages) if options.get("remove_duplicate", True) else messages
    return "\n".join(sorted(unique))


def check_thunderbird_folder(result: Any, reference: Any, **kwargs: Any) -> float:
    """Each result folder file reads the same as its reference (see
    ``_thunderbird_folder_text``); lists are paired in order. A missing result scores 0; a
    missing reference raises, as in OSWorld."""
    if not isinstance(reference, list):
        result, reference = [result], [reference]
    for pred, gold in zip(result, reference, strict=False):
        if pred is None:
            return 0.0
        if _thunderbird_folder_text(pred, kwargs) != _thunderbird_folder_text(gold, kwargs):
            return 0.0
    return 1.0
