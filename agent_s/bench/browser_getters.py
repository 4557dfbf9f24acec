"""OSWorld's browser getters, read from Chromium's own files as OSWorld reads Chrome's:
the profile's Preferences (search engine, fonts, privacy, start-up page, extensions, theme),
Bookmarks, the Cookies and History databases, the Desktop's launchers, and the active tab's URL
taken apart (query values, path parts, Macy's listing filters).

    GETTERS["bookmarks"](ctx, {"type": "bookmarks"})      # the Bookmarks file's roots

Where OSWorld's getter falls back to a value when the file is missing or broken (often
``"Google"``), these give the same value. Importing ``agent_s.bench.getters`` registers them.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import sqlite3
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

from agent_s.bench.getters import GETTERS, GetterContext, _copy, get_active_url

#: What OSWorld's Preferences getters give when the file cannot be read.
_FONT_DEFAULTS = {"default_fixed_font_size": 13, "default_font_size": 16, "minimum_font_size": 13}


def chrome_profile(ctx: GetterContext) -> Path:
    """The browser's ``Default`` profile folder: this harness's Chromium profile
    (``~/.config/chromium``), else Google Chrome's (``~/.config/google-chrome``) where a task
    wrote one; ``ctx.extra["chrome_profile"]`` overrides."""
    given = ctx.extra.get("chrome_profile")
    if given:
        return Path(str(given))
    for name in ("chromium", "google-chrome"):
        folder = ctx.home / ".config" / name / "Default"
        if folder.is_dir():
            return folder
    return ctx.home / ".config" / "chromium" / "Default"


def _preferences(ctx: GetterContext) -> dict[str, Any]:
    """The profile's Preferences; ``ValueError`` when missing or not JSON (OSWorld's
    getters then fall back, each to its own value)."""
    path = chrome_profile(ctx) / "Preferences"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"cannot read {path}: {err}") from err
    if not isinstance(data, dict):
        raise ValueError(f"{path} is not a JSON object")
    return data


def _pref(ctx: GetterContext, read: Callable[[dict[str, Any]], Any], fallback: Any) -> Any:
    try:
        return read(_preferences(ctx))
    except (ValueError, KeyError, TypeError, AttributeError):
        return fallback


def get_default_search_engine(ctx: GetterContext, config: Mapping[str, Any]) -> Any:
    """The default search engine's short name (``Google`` when unset or unreadable)."""
    return _pref(
        ctx,
        lambda d: (
            d.get("default_search_provider_data", {})
            .get("template_url_data", {})
            .get("short_name", "Google")
        ),
        "Google",
    )


def get_profile_name(ctx: GetterContext, config: Mapping[str, Any]) -> Any:
    """The profile's name (``profile.name``), ``None`` when unset or unreadable."""
    return _pref(ctx, lambda d: d.get("profile", {}).get("name", None), None)


def get_chrome_font_size(ctx: GetterContext, config: Mapping[str, Any]) -> Any:
    """``webkit.webprefs`` (font sizes), Chrome's defaults when unset."""
    fallback = {"default_fixed_font_size": 13, "default_font_size": 16}
    return _pref(ctx, lambda d: d.get("webkit", {}).get("webprefs", dict(_FONT_DEFAULTS)), fallback)


def get_enable_do_not_track(ctx: GetterContext, config: Mapping[str, Any]) -> str:
    """``"true"`` when Do Not Track is on, else ``"false"``."""
    on = _pref(ctx, lambda d: bool(d.get("enable_do_not_track", {})), False)
    return "true" if on else "false"


def get_enable_safe_browsing(ctx: GetterContext, config: Mapping[str, Any]) -> str:
    """``"true"`` when safe browsing (standard or enhanced) is on, else ``"false"``."""

    def read(d: dict[str, Any]) -> bool:
        safe = d.get("safebrowsing", {})
        return bool(safe.get("enhanced", False)) or bool(safe.get("enabled", False))

    return "true" if _pref(ctx, read, False) else "false"


def get_new_startup_page(ctx: GetterContext, config: Mapping[str, Any]) -> str:
    """``"true"`` when Chrome opens the New Tab page on start-up (no ``session`` key, or
    ``restore_on_startup`` 5); ``"Google"`` when unreadable, as OSWorld."""

    def read(d: dict[str, Any]) -> str:
        if "session" not in d:
            return "true"
        return "true" if d.get("session", {}).get("restore_on_startup", {}) == 5 else "false"

    return str(_pref(ctx, read, "Google"))


def get_data_delete_automacally(ctx: GetterContext, config: Mapping[str, Any]) -> str:
    """``"true"`` when the profile has site-data settings (``default_content_setting_values``)."""
    return str(
        _pref(
            ctx,
            lambda d: "true" if d["profile"].get("default_content_setting_values") else "false",
            "Google",
        )
    )


def get_find_unpacked_extension_path(ctx: GetterContext, config: Mapping[str, Any]) -> Any:
    """The folders of every extension in the profile (unpacked ones are where they were
    loaded from)."""
    return _pref(
        ctx,
        lambda d: [e["path"] for e in d.get("extensions", {}).get("settings", {}).values()],
        "Google",
    )


def get_find_installed_extension_name(ctx: GetterContext, config: Mapping[str, Any]) -> Any:
    """The names of every extension in the profile."""
    return _pref(
        ctx,
        lambda d: [
            e["manifest"]["name"] for e in d.get("extensions", {}).get("settings", {}).values()
        ],
        "Google",
    )


def _color_scheme(value: Any) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        text = value.strip().lower()
        names = {"system": "system", "default": "system", "0": "system"}
        names |= {"light": "light", "1": "light", "dark": "dark", "2": "dark"}
        return names.get(text)
    if isinstance(value, int | float):
        return {0: "system", 1: "light", 2: "dark"}.get(int(value))
    return None


def get_chrome_appearance_mode_ui(ctx: GetterContext, config: Mapping[str, Any]) -> str:
    """Chrome's appearance mode: ``"light"``, ``"dark"`` or ``"system"``, read from the
    profile's theme settings (OSWorld reads the settings page first and these settings when
    that fails; both show the same saved choice)."""

    def read(d: dict[str, Any]) -> str:
        theme = d.get("browser", {}).get("theme", {})
        mode = _color_scheme(theme.get("color_scheme2", theme.get("color_scheme")))
        if d.get("extensions", {}).get("theme", {}).get("system_theme") in (0, "0", False):
            return "light"
        return mode or "system"

    return str(_pref(ctx, read, "system"))


def get_bookmarks(ctx: GetterContext, config: Mapping[str, Any]) -> Any:
    """The ``roots`` of the profile's Bookmarks (``[]`` when there is no Bookmarks file)."""
    path = chrome_profile(ctx) / "Bookmarks"
    try:
        content = path.read_text(encoding="utf-8")
    except OSError:
        return []
    if not content:
        return []
    return json.loads(content).get("roots", {})


def _sqlite_rows(ctx: GetterContext, name: str, dest: str, query: str) -> list[Any] | None:
    """Rows of ``query`` on a copy of one of the profile's databases (``None``: no such file
    or not a database, as OSWorld)."""
    copied = _copy(ctx, chrome_profile(ctx) / name, dest)
    if copied is None:
        return None
    try:
        with contextlib.closing(sqlite3.connect(copied)) as db:
            return list(db.execute(query).fetchall())
    except sqlite3.Error:
        return None


def get_cookie_data(ctx: GetterContext, config: Mapping[str, Any]) -> list[Any] | None:
    """Every row of the profile's ``cookies`` table (a copy is kept as ``dest``)."""
    return _sqlite_rows(ctx, "Cookies", config.get("dest") or "Cookies", "SELECT * FROM cookies")


def get_history(ctx: GetterContext, config: Mapping[str, Any]) -> list[Any] | None:
    """``(url, title, last_visit_time)`` of every row of the profile's history."""
    query = "SELECT url, title, last_visit_time FROM urls"
    return _sqlite_rows(ctx, "History", config.get("dest") or "History", query)


def get_shortcuts_on_desktop(ctx: GetterContext, config: Mapping[str, Any]) -> dict[str, str]:
    """``{file name: text}`` of every ``.desktop`` launcher on the Desktop."""
    desktop = ctx.home / "Desktop"
    if not desktop.is_dir():
        return {}
    return {
        p.name: p.read_text(encoding="utf-8")
        for p in sorted(desktop.iterdir())
        if p.name.endswith(".desktop") and p.is_file()
    }


# -- the active tab's URL, parsed ---------------------------------------------------------------


def get_active_tab_url_parse(ctx: GetterContext, config: Mapping[str, Any]) -> Any:
    """The query parameters ``parse_keys`` of the active tab's URL (``""`` when absent);
    ``replace`` renames keys, ``split_list`` splits values at commas."""
    url = get_active_url(ctx, config)
    return None if url is None else url_query_values(url, config)


def url_query_values(url: str, config: Mapping[str, Any]) -> dict[str, Any]:
    """``active_tab_url_parse`` on a URL."""
    query = parse_qs(urlparse(url).query)
    found = {key: query.get(key, [""])[0] for key in config["parse_keys"]}
    for old, new in dict(config.get("replace", {})).items():
        found[new] = found.pop(old)
    if config.get("split_list", False):
        return {key: value.split(",") for key, value in found.items()}
    return found


def get_url_dash_part(ctx: GetterContext, config: Mapping[str, Any]) -> Any:
    """One ``/``-separated part of the active tab's URL (``partIndex``), as a string or as
    ``{key: part}`` (``returnType`` "json"); ``needDeleteId`` drops a query after it."""
    url = get_active_url(ctx, config)
    return None if url is None else url_dash_part(url, config)


def url_dash_part(url: str, config: Mapping[str, Any]) -> Any:
    """``url_dashPart`` on a URL."""
    try:
        index = int(config["partIndex"])
    except (TypeError, ValueError):
        return None
    parts = url.split("/")
    if index >= len(parts):
        return None
    part = parts[index]
    if config.get("needDeleteId", False):
        part = part.split("?")[0]
    if config["returnType"] == "string":
        return part
    if config["returnType"] == "json":
        return {config["key"]: part}
    return None


def get_url_path_parse(ctx: GetterContext, config: Mapping[str, Any]) -> Any:
    """Macy's product-listing URL as OSWorld reads it: ``mens_clothing``, ``shirts``,
    ``short_sleeve`` flags and the ``parse_keys`` found in the path's ``keys/values`` pair."""
    url = get_active_url(ctx, config)
    return None if url is None else macys_url_parse(url, config)


def macys_url_parse(url: str, config: Mapping[str, Any]) -> dict[str, Any]:
    """``url_path_parse`` on a URL."""
    path = unquote(urlparse(url).path)
    result: dict[str, Any] = {"mens_clothing": True if "mens-clothing" in path else None}
    parts = path.strip("/").split("/")
    pairs: dict[str, Any] = {}
    shirts, short_sleeve = "shirts" in path, "short-sleeve" in path
    for keys_part, values_part in itertools.pairwise(parts):
        if "," in keys_part and "," in values_part:
            keys = [k.strip() for k in keys_part.split(",")]
            values = [v.strip() for v in values_part.split(",")]
            for key, value in zip(keys, values, strict=False):
                if key == "Price_discount_range":
                    pairs[key] = [i.strip() for i in value.split("|")] if value else None
                else:
                    pairs[key] = value or None
                if key == "Product_department" and value in ("shirts", "Shirts", "Shirt"):
                    shirts = True
                if key == "Sleeve_length" and value in ("short-sleeve", "Short Sleeve"):
                    short_sleeve = True
            break
    for name in ("Men_regular_size_t", "Price_discount_range"):
        pairs.setdefault(name, None)
    result["shirts"] = True if shirts else None
    result["short_sleeve"] = True if short_sleeve else None
    for key in config["parse_keys"]:
        if key not in pairs:
            continue
        if key == "Price_discount_range":
            ranges = pairs[key] or []
            only_50 = "50_PERCENT_ off & more" in ranges and not (
                "30_PERCENT_ off & more" in ranges or "20_PERCENT_ off & more" in ranges
            )
            result[key] = "50_PERCENT_ off & more" if only_50 else "not_50_PERCENT_ off & more"
        else:
            result[key] = pairs[key]
    return result


GETTERS.update(
    {
        "default_search_engine": get_default_search_engine,
        "profile_name": get_profile_name,
        "chrome_font_size": get_chrome_font_size,
        "enable_do_not_track": get_enable_do_not_track,
        "enable_safe_browsing": get_enable_safe_browsing,
        "new_startup_page": get_new_startup_page,
        "data_delete_automacally": get_data_delete_automacally,
        "find_unpacked_extension_path": get_find_unpacked_extension_path,
        "find_installed_extension_name": get_find_installed_extension_name,
        "chrome_appearance_mode_ui": get_chrome_appearance_mode_ui,
        "bookmarks": get_bookmarks,
        "cookie_data": get_cookie_data,
        "history": get_history,
        "shortcuts_on_desktop": get_shortcuts_on_desktop,
        "active_tab_url_parse": get_active_tab_url_parse,
        "url_dashPart": get_url_dash_part,
        "url_path_parse": get_url_path_parse,
    }
)


__all__ = ["chrome_profile", "macys_url_parse", "url_dash_part", "url_query_values"]
