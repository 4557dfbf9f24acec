"""OSWorld's browser getters, read from Chromium's own files as OSWorld reads Chrome's:
the profile's Preferences (search engine, fonts, privacy, start-up page, extensions, theme),
Bookmarks, the Cookies and History databases, the Desktop's launchers, and the active tab's URL
taken apart (query values, path parts, Macy's listing filters); and, over DevTools, the page
itself: elements of the active tab (``active_tab_html_parse``), a page's title and HTML
(``page_info``), a page printed to PDF (``pdf_from_url``), values read off a site
(``info_from_website``, ``gotoRecreationPage_and_get_html_content``).

    GETTERS["bookmarks"](ctx, {"type": "bookmarks"})      # the Bookmarks file's roots

OSWorld reads pages with Playwright connected to Chrome over CDP; here the same DevTools
protocol is spoken directly (``chrome.Page``). Where OSWorld starts Chrome because none answers,
these start the task's Chromium again on its own profile (``ctx.extra["chrome_port"]`` is then
the new one's port).

Where OSWorld's getter falls back to a value when the file is missing or broken (often
``"Google"``), these give the same value. Importing ``agent_s.bench.getters`` registers them.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import shutil
import sqlite3
import subprocess
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

from agent_s.bench.chrome import DevTools, DevToolsError, Page, chromium_argv, free_port
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


# -- pages, read over DevTools ------------------------------------------------------------------

#: How long OSWorld lets a page reach network idle (``page_info``, ``active_tab_html_parse``).
IDLE_TIMEOUT = 60.0
#: Playwright's ``wait_for_selector`` timeout in ``info_from_website``.
SELECTOR_TIMEOUT = 10.0
#: The site ``gotoRecreationPage_and_get_html_content`` searches.
RECREATION_URL = "https://www.recreation.gov/"

_TEXTS = """(s) => {
    try { return Array.from(document.querySelectorAll(s), (e) => e.textContent); }
    catch (err) { return []; }
}"""
#: The direct text nodes of the first element (OSWorld's own script for ``_child``).
_DIRECT_TEXTS = """(s) => {
    let found;
    try { found = document.querySelector(s); } catch (err) { return []; }
    if (!found) return [];
    return Array.from(found.childNodes)
        .filter((n) => n.nodeType === Node.TEXT_NODE)
        .map((n) => n.textContent.trim())
        .filter(Boolean);
}"""
_SUB_TEXTS = """(s, inner, prop) => {
    let found;
    try { found = document.querySelectorAll(s); } catch (err) { return []; }
    const out = [];
    for (const e of found) {
        const sub = e.querySelector(inner);
        if (sub) out.push(sub[prop]);
    }
    return out;
}"""
_XPATH_FIRST = """(x, prop) => {
    let snap;
    try {
        snap = document.evaluate(x, document, null, XPathResult.ORDERED_NODE_SNAPSHOT_TYPE, null);
    } catch (err) { return {found: false}; }
    for (let i = 0; i < snap.snapshotLength; i++) {
        const node = snap.snapshotItem(i);
        if (node.nodeType !== Node.ELEMENT_NODE) continue;
        if (prop === 'value') {
            const isField = node instanceof HTMLInputElement
                || node instanceof HTMLTextAreaElement || node instanceof HTMLSelectElement;
            return isField ? {found: true, value: node.value} : {found: true, value: null};
        }
        return {found: true, value: node.textContent};
    }
    return {found: false};
}"""
#: Playwright's ``text=`` selector: the innermost elements whose text holds the label
#: (case and runs of white space ignored), the first in document order.
_LABEL_TEXT = """(label) => {
    const norm = (t) => (t || '').replace(/\\s+/g, ' ').trim().toLowerCase();
    const wanted = norm(label);
    const skip = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'HEAD', 'TEMPLATE']);
    const holds = (e) => !skip.has(e.tagName) && norm(e.textContent).includes(wanted);
    const walk = (e) => {
        if (!holds(e)) return null;
        for (const child of e.children) {
            const inner = walk(child);
            if (inner) return inner;
        }
        return e;
    };
    const found = document.body ? walk(document.body) : null;
    return found ? found.textContent : null;
}"""
_FIRST = """(s, prop, attribute) => {
    const e = document.querySelector(s);
    if (!e) return {found: false};
    return {found: true, value: prop === 'attribute' ? e.getAttribute(attribute) : e[prop]};
}"""


def _browser(ctx: GetterContext) -> DevTools:
    """The task's Chromium; started again on the task's profile when none answers (as
    OSWorld's getters start Chrome)."""
    port = ctx.extra.get("chrome_port")
    if port is not None and DevTools(int(port)).ready():
        return DevTools(int(port))
    from agent_s.bench.environment import BROWSER_WAIT, launch_argv

    argv = launch_argv(["google-chrome"])
    if shutil.which(argv[0], path=ctx.env.get("PATH")) is None:
        raise DevToolsError(f"no browser to read the page with: {argv[0]} is not installed")
    port = free_port()
    profile = ctx.home / ".config" / "chromium"
    subprocess.Popen(  # noqa: S603  (our own argv; ended with the task's desktop)
        chromium_argv(argv, port, profile),
        env=dict(ctx.env),
        cwd=ctx.home,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    ctx.extra["chrome_port"] = port
    devtools = DevTools(port)
    devtools.wait_ready(BROWSER_WAIT)
    return devtools


def _running_browser(ctx: GetterContext) -> DevTools | None:
    port = ctx.extra.get("chrome_port")
    if port is None or not DevTools(int(port)).ready():
        return None
    return DevTools(int(port))


def _stripped(values: Any) -> list[str]:
    return [str(v).strip() for v in values or [] if v is not None]


def _pick_ranks(texts: list[str], ranks: Mapping[str, str], found: dict[str, Any]) -> None:
    """``{rank: key}``: the rank-th text (``""`` when there are fewer) under each key."""
    for order, key in ranks.items():
        index = int(order)
        found[key] = texts[index] if len(texts) > index else ""


def _class_values(page: Page, config: Mapping[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for name, ranks in dict(config.get("class_multiObject", {})).items():
        _pick_ranks(_stripped(page.settled_value(_TEXTS, "." + name)), ranks, found)
    for name, ranks in dict(config.get("class_multiObject_child", {})).items():
        _pick_ranks(list(page.settled_value(_DIRECT_TEXTS, "." + name)), ranks, found)
    for name, ranks in dict(config.get("class_multiObject_only_child", {})).items():
        texts = _stripped(page.settled_value(_SUB_TEXTS, "." + name, "h3", "textContent"))
        _pick_ranks(texts, ranks, found)
    for name, wanted in dict(config.get("class_multiObject_search_exist", {})).items():
        texts = _stripped(page.settled_value(_TEXTS, "." + name))
        for item in wanted:
            if item != "is_other_exist":
                found[item] = item in texts
        if "is_other_exist" in wanted:
            found["is_other_exist"] = any(text not in wanted for text in texts)
    for name, key in dict(config.get("class_singleObject", {})).items():
        texts = _stripped(page.settled_value(_TEXTS, "." + name))
        found[key] = texts[0] if texts else ""
    return found


def _choices(texts: list[str], wanted: list[str], found: dict[str, Any]) -> None:
    """``class&url``: each wanted label shown (any case), and whether any other is."""
    for key in wanted:
        if any(key.lower() == text.lower() for text in texts):
            found[key.lower()] = True
    for text in texts:
        if all(text.lower() not in item.lower() for item in wanted):
            found["is_other_exist"] = True
            break
    found.setdefault("is_other_exist", False)


def _class_and_url_values(page: Page, config: Mapping[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for name, wanted in dict(config.get("class_multiObject", {})).items():
        _choices(_stripped(page.settled_value(_TEXTS, "." + name)), list(wanted), found)
    for name, wanted in dict(config.get("class_multiObject_li", {})).items():
        selector = "." + name + " li.catAllProducts"
        texts = _stripped(page.settled_value(_SUB_TEXTS, selector, "span", "innerText"))
        _choices(texts, list(wanted), found)
    url = page.url.lower()
    for key in config.get("url_include_expected", []):
        found.setdefault(key.lower(), key.lower() in url)
    for key, value in dict(config.get("url_include_expected_multichoice", {})).items():
        found.setdefault(value.lower(), key.lower() in url)
    return found


def _xpath_values(page: Page, objects: Mapping[str, str], prop: str) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for xpath, key in objects.items():
        hit = page.settled_value(_XPATH_FIRST, xpath, prop)
        value = hit.get("value") if isinstance(hit, dict) and hit.get("found") else None
        found[key] = str(value).strip() if value else ""
    return found


def active_tab_values(page: Page, config: Mapping[str, Any]) -> dict[str, Any]:
    """``active_tab_html_parse`` on an open page: the text (or field value) of the elements
    the config names, under the keys it gives (``""`` for an element not found)."""
    category = config["category"]
    if category == "class":
        return _class_values(page, config)
    if category == "label":
        found: dict[str, Any] = {}
        for label, key in dict(config.get("labelObject", {})).items():
            text = page.settled_value(_LABEL_TEXT, label)
            found[key] = str(text).strip() if text else ""
        return found
    if category == "xpath":
        return _xpath_values(page, dict(config.get("xpathObject", {})), "text")
    if category == "input":
        return _xpath_values(page, dict(config.get("inputObject", {})), "value")
    if category == "class&url":
        return _class_and_url_values(page, config)
    return {}


def get_active_tab_html_parse(ctx: GetterContext, config: Mapping[str, Any]) -> Any:
    """Text of elements of the active tab (by class, XPath, label, or a field's value), as
    ``{key: text}``; ``None`` when no browser answers, ``{}`` when the page never settles.

    OSWorld finds the tab whose URL equals the address bar's (read from the accessibility
    tree, ``goto_prefix`` before it); DevTools names the active tab itself."""
    devtools = _running_browser(ctx)
    if devtools is None:
        return None
    tab = devtools.active_tab()
    if tab is None:
        return None
    with devtools.page(tab) as page:
        try:
            page.wait_idle(IDLE_TIMEOUT)
        except DevToolsError:
            return {}
        return active_tab_values(page, config)


def get_page_info(ctx: GetterContext, config: Mapping[str, Any]) -> dict[str, str]:
    """``{"title", "url", "content"}`` of ``url`` loaded in a new tab of the task's browser
    (its cookies: a shop's cart shows what the agent put in it); OSWorld's fallbacks when
    it cannot load."""
    url = str(config["url"])
    for attempt in range(2):
        try:
            with _browser(ctx).new_page() as page:
                page.goto(url, IDLE_TIMEOUT, until="networkidle")
                try:
                    page.wait_idle(IDLE_TIMEOUT)
                    return {"title": page.title(), "url": page.url, "content": page.content()}
                except DevToolsError:
                    return {"title": "Load timeout", "url": page.url, "content": page.content()}
        except DevToolsError:
            if attempt == 0:
                time.sleep(3)
    return {"title": "Connection failed", "url": url, "content": ""}


def get_pdf_from_url(ctx: GetterContext, config: Mapping[str, Any]) -> str:
    """``path`` (a URL) loaded in a new tab and printed to PDF as Playwright's ``page.pdf()``
    prints (US Letter, no margins), saved as ``dest`` in the task cache."""
    target = ctx.cache_dir / config["dest"]
    target.parent.mkdir(parents=True, exist_ok=True)
    with _browser(ctx).new_page() as page:
        page.goto(str(config["path"]))
        target.write_bytes(page.pdf())
    return str(target)


def _first(page: Page, selector: str, prop: str, attribute: str = "") -> Any:
    hit = page.settled_value(_FIRST, selector, prop, attribute)
    if not isinstance(hit, dict) or not hit.get("found"):
        raise DevToolsError(f"no element matches {selector!r}")
    return hit.get("value")


def website_values(page: Page, url: str, infos: list[Mapping[str, Any]]) -> list[Any]:
    """``info_from_website``'s reading of ``url`` in ``page`` (raises when any fails)."""
    page.goto(url)
    values: list[Any] = []
    for info in infos:
        if page.url != url:
            page.goto(url)
        action = info.get("action", "inner_text")
        selectors = info["selector"]
        if action in ("inner_text", "attribute"):
            selectors = [selectors]
        elif action not in ("click_and_inner_text", "click_and_attribute"):
            raise NotImplementedError(f"the action {action} is not supported yet")
        for link in selectors[:-1]:
            page.wait_for_selector(link, SELECTOR_TIMEOUT)
            page.click(link)
            page.wait_load()
        page.wait_for_selector(selectors[-1], SELECTOR_TIMEOUT)
        if action.endswith("inner_text"):
            values.append(_first(page, selectors[-1], "innerText"))
        else:
            values.append(_first(page, selectors[-1], "attribute", str(info["attribute"])))
    return values


def get_info_from_website(ctx: GetterContext, config: Mapping[str, Any]) -> Any:
    """Values read off ``url`` (``infos``: an element's text or attribute, after clicking
    through links); ``backups`` when anything fails, as OSWorld."""
    try:
        with _browser(ctx).new_page() as page:
            return website_values(page, str(config["url"]), list(config.get("infos", [])))
    except (DevToolsError, LookupError, TypeError, ValueError, NotImplementedError):
        return config.get("backups", None)


def recreation_next_available(
    devtools: DevTools, start_url: str, config: Mapping[str, Any]
) -> dict[str, Any]:
    """OSWorld's walk through recreation.gov from ``start_url``: search "Albion Basin", open
    the first result (a new tab), press "Next Available", then read the ``class`` element
    (the ``order``-th one) as ``{"expected": {class: text}}``."""
    with devtools.new_page() as page:
        page.goto(start_url)
        page.fill("input#hero-search-input", "Albion Basin")
        page.click("button.nav-search-button")
        time.sleep(2)
        before = {tab.id for tab in devtools.tabs()}
        page.click(".search-result-highlight--success")
        deadline = time.monotonic() + page.timeout
        popup = None
        while popup is None:
            popup = next((t for t in devtools.tabs() if t.id not in before), None)
            if popup is None:
                if time.monotonic() >= deadline:
                    raise DevToolsError("the search result opened no new tab")
                time.sleep(0.1)
        try:
            with devtools.page(popup) as result:
                result.wait_load()
                time.sleep(2)
                result.click("button.next-available")
                values: dict[str, Any] = {}
                if config["selector"] == "class":
                    name = str(config["class"])
                    texts = result.settled_value(_TEXTS, "." + name)
                    index = int(config["order"]) if "order" in config else 0
                    values[name] = str(texts[index]).strip()
                return {"expected": values}
        finally:
            with contextlib.suppress(DevToolsError):
                devtools.close_tab(popup.id)


def get_gotoRecreationPage_and_get_html_content(  # noqa: N802  (OSWorld's getter name)
    ctx: GetterContext, config: Mapping[str, Any]
) -> dict[str, Any]:
    """The "Next Available" column header of Albion Basin on recreation.gov, reached as a
    user would (see ``recreation_next_available``)."""
    return recreation_next_available(_browser(ctx), RECREATION_URL, config)


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
        "active_tab_html_parse": get_active_tab_html_parse,
        "page_info": get_page_info,
        "pdf_from_url": get_pdf_from_url,
        "info_from_website": get_info_from_website,
        "gotoRecreationPage_and_get_html_content": get_gotoRecreationPage_and_get_html_content,
    }
)


__all__ = [
    "RECREATION_URL",
    "active_tab_values",
    "chrome_profile",
    "macys_url_parse",
    "recreation_next_available",
    "url_dash_part",
    "url_query_values",
    "website_values",
]
