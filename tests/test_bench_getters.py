"""OSWorld's getters that read the desktop directly: Chromium's profile files (Preferences,
Bookmarks, Cookies, History), desktop launchers, URL parsing, relative dates in rules, VLC's
configuration and HTTP status, the default video player, slides' audio and backgrounds, the
last row of a sheet, screen and window sizes and VS Code's command palette. Each on fixtures
written here, in the shapes the real programs write."""

from __future__ import annotations

import base64
import datetime
import http.server
import json
import re
import shutil
import sqlite3
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_s.bench.browser_getters import (
    chrome_profile,
    macys_url_parse,
    url_dash_part,
    url_query_values,
)
from agent_s.bench.getters import GetterContext
from agent_s.bench.registry import GETTERS
from agent_s.bench.relative_dates import format_day, range_days, single_day

OSWORLD = Path(__file__).resolve().parents[1].parent / "shared" / "osworld"


@pytest.fixture
def ctx(tmp_path: Path) -> GetterContext:
    home, cache = tmp_path / "home", tmp_path / "cache"
    home.mkdir()
    cache.mkdir()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home)}
    return GetterContext(home=home, env=env, cache_dir=cache)


def _profile(ctx: GetterContext, browser: str = "chromium") -> Path:
    folder = ctx.home / ".config" / browser / "Default"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _prefs(ctx: GetterContext, data: dict[str, Any], browser: str = "chromium") -> None:
    (_profile(ctx, browser) / "Preferences").write_text(json.dumps(data))


def _get(ctx: GetterContext, kind: str, **config: Any) -> Any:
    return GETTERS[kind](ctx, {"type": kind, **config})


# -- Chromium's Preferences ----------------------------------------------------------------------


def test_preferences_getters_read_the_profile(ctx: GetterContext) -> None:
    _prefs(
        ctx,
        {
            "default_search_provider_data": {"template_url_data": {"short_name": "Bing"}},
            "profile": {"name": "Thomas", "default_content_setting_values": {"cookies": 4}},
            "webkit": {"webprefs": {"default_font_size": 20, "minimum_font_size": 8}},
            "enable_do_not_track": True,
            "safebrowsing": {"enabled": True, "enhanced": False},
            "session": {"restore_on_startup": 5},
            "extensions": {
                "settings": {
                    "abc": {
                        "path": "/home/user/Desktop/helloExtension",
                        "manifest": {"name": "Hi"},
                    },
                    "def": {"path": "def/1.0_0", "manifest": {"name": "Dark Reader"}},
                }
            },
            "browser": {"theme": {"color_scheme2": 2}},
        },
    )
    assert _get(ctx, "default_search_engine") == "Bing"
    assert _get(ctx, "profile_name") == "Thomas"
    assert _get(ctx, "chrome_font_size") == {"default_font_size": 20, "minimum_font_size": 8}
    assert _get(ctx, "enable_do_not_track") == "true"
    assert _get(ctx, "enable_safe_browsing") == "true"
    assert _get(ctx, "new_startup_page") == "true"
    assert _get(ctx, "data_delete_automacally") == "true"
    assert _get(ctx, "find_unpacked_extension_path") == [
        "/home/user/Desktop/helloExtension",
        "def/1.0_0",
    ]
    assert _get(ctx, "find_installed_extension_name") == ["Hi", "Dark Reader"]
    assert _get(ctx, "chrome_appearance_mode_ui") == "dark"


def test_preferences_getters_defaults_and_fallbacks(ctx: GetterContext) -> None:
    # no Preferences at all: OSWorld's fallback values
    assert _get(ctx, "default_search_engine") == "Google"
    assert _get(ctx, "profile_name") is None
    assert _get(ctx, "chrome_font_size") == {"default_fixed_font_size": 13, "default_font_size": 16}
    assert _get(ctx, "enable_do_not_track") == "false"
    assert _get(ctx, "enable_safe_browsing") == "false"
    assert _get(ctx, "new_startup_page") == "Google"
    assert _get(ctx, "data_delete_automacally") == "Google"
    assert _get(ctx, "find_unpacked_extension_path") == "Google"
    assert _get(ctx, "chrome_appearance_mode_ui") == "system"
    # a fresh profile: no session (new tab page), Chrome's font defaults, no site settings
    _prefs(ctx, {"profile": {}, "safebrowsing": {"enabled": False}})
    assert _get(ctx, "new_startup_page") == "true"
    assert _get(ctx, "chrome_font_size") == {
        "default_fixed_font_size": 13,
        "default_font_size": 16,
        "minimum_font_size": 13,
    }
    assert _get(ctx, "data_delete_automacally") == "false"
    assert _get(ctx, "enable_safe_browsing") == "false"
    assert _get(ctx, "find_installed_extension_name") == []
    _prefs(ctx, {"session": {"restore_on_startup": 4, "startup_urls": ["http://a.org/"]}})
    assert _get(ctx, "new_startup_page") == "false"
    _prefs(ctx, {"browser": {"theme": {"color_scheme": 1}}})
    assert _get(ctx, "chrome_appearance_mode_ui") == "light"
    _prefs(
        ctx,
        {"browser": {"theme": {"color_scheme2": 2}}, "extensions": {"theme": {"system_theme": 0}}},
    )
    assert _get(ctx, "chrome_appearance_mode_ui") == "light"  # GTK theme off wins, as OSWorld
    (_profile(ctx) / "Preferences").write_text("{broken")
    assert _get(ctx, "default_search_engine") == "Google"


def test_profile_folder_chromium_first_then_google_chrome(ctx: GetterContext) -> None:
    _prefs(ctx, {"profile": {"name": "Chrome's"}}, browser="google-chrome")
    assert chrome_profile(ctx) == ctx.home / ".config/google-chrome/Default"
    assert _get(ctx, "profile_name") == "Chrome's"
    _prefs(ctx, {"profile": {"name": "Chromium's"}})
    assert chrome_profile(ctx) == ctx.home / ".config/chromium/Default"
    assert _get(ctx, "profile_name") == "Chromium's"


# -- Bookmarks, Cookies, History, desktop launchers -----------------------------------------------


def test_bookmarks_roots(ctx: GetterContext) -> None:
    assert _get(ctx, "bookmarks") == []
    roots = {
        "bookmark_bar": {
            "children": [{"type": "folder", "name": "Favorites", "children": []}],
            "type": "folder",
        },
        "other": {"children": [], "type": "folder"},
    }
    (_profile(ctx) / "Bookmarks").write_text(json.dumps({"version": 1, "roots": roots}))
    assert _get(ctx, "bookmarks") == roots


def _database(path: Path, schema: str, rows: list[tuple[Any, ...]], table: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(path) as db:
        db.execute(schema)
        marks = ", ".join("?" * len(rows[0]))
        db.executemany(f"INSERT INTO {table} VALUES ({marks})", rows)  # noqa: S608 (fixture)


def test_cookie_data_and_history_read_copies_of_the_databases(ctx: GetterContext) -> None:
    assert _get(ctx, "cookie_data", dest="Cookies") is None
    assert _get(ctx, "history", dest="history.sqlite") is None
    cookies = [(13350000000000000, ".amazon.com", "session-id", "x"), (1, ".a.org", "k", "v")]
    _database(
        _profile(ctx) / "Cookies",
        "CREATE TABLE cookies (creation_utc INTEGER, host_key TEXT, name TEXT, value TEXT)",
        cookies,
        "cookies",
    )
    assert _get(ctx, "cookie_data", dest="Cookies") == cookies
    assert (ctx.cache_dir / "Cookies").is_file()
    visits = [(1, "https://www.youtube.com/", "YouTube", 3, 13350000000000000)]
    _database(
        _profile(ctx) / "History",
        "CREATE TABLE urls (id INTEGER, url TEXT, title TEXT, visit_count INTEGER, "
        "last_visit_time INTEGER)",
        visits,
        "urls",
    )
    assert _get(ctx, "history", dest="history.sqlite") == [
        ("https://www.youtube.com/", "YouTube", 13350000000000000)
    ]
    (_profile(ctx) / "Cookies").write_text("not a database")
    assert _get(ctx, "cookie_data", dest="Cookies") is None


def test_shortcuts_on_desktop(ctx: GetterContext) -> None:
    assert _get(ctx, "shortcuts_on_desktop") == {}
    desktop = ctx.home / "Desktop"
    desktop.mkdir()
    launcher = "[Desktop Entry]\nName=Maths is Fun\nExec=chromium https://www.mathsisfun.com/\n"
    (desktop / "maths.desktop").write_text(launcher)
    (desktop / "notes.txt").write_text("not a launcher")
    assert _get(ctx, "shortcuts_on_desktop") == {"maths.desktop": launcher}


# -- the active tab's URL ------------------------------------------------------------------------


def test_url_getters_parse_as_osworld() -> None:
    url = (
        "https://www.rentalcars.com/search-results?locationName=Zurich&dropLocationName=Zurich"
        "&filterCriteria_carCategory=large&filterCriteria_sortBy=PRICE"
    )
    keys = ["locationName", "filterCriteria_carCategory", "filterCriteria_sortBy", "missing"]
    assert url_query_values(url, {"parse_keys": keys}) == {
        "locationName": "Zurich",
        "filterCriteria_carCategory": "large",
        "filterCriteria_sortBy": "PRICE",
        "missing": "",
    }
    renamed = url_query_values(
        url, {"parse_keys": ["locationName"], "replace": {"locationName": "to"}}
    )
    assert renamed == {"to": "Zurich"}
    assert url_query_values("https://a.org/?x=1,2", {"parse_keys": ["x"], "split_list": True}) == {
        "x": ["1", "2"]
    }
    page = "https://www.recreation.gov/camping/campgrounds/233115?tab=x"
    assert url_dash_part(page, {"partIndex": -1, "returnType": "string"}) == "233115?tab=x"
    config = {"partIndex": -1, "needDeleteId": True, "returnType": "json", "key": "id"}
    assert url_dash_part(page, config) == {"id": "233115"}
    assert url_dash_part(page, {"partIndex": 40, "returnType": "string"}) is None
    assert url_dash_part(page, {"partIndex": "x", "returnType": "string"}) is None
    macys = (
        "https://www.macys.com/shop/mens-clothing/mens-casual-shirts/Men_regular_size_t,"
        "Price_discount_range,Sleeve_length/L,50_PERCENT_%20off%20%26%20more,Short%20Sleeve"
    )
    keys = ["mens_clothing", "shirts", "Men_regular_size_t", "Price_discount_range", "short_sleeve"]
    assert macys_url_parse(macys, {"parse_keys": keys}) == {
        "mens_clothing": True,
        "shirts": True,
        "short_sleeve": True,
        "Men_regular_size_t": "L",
        "Price_discount_range": "50_PERCENT_ off & more",
    }
    plain = macys_url_parse("https://www.macys.com/shop/womens", {"parse_keys": keys})
    assert plain == {
        "mens_clothing": None,
        "shirts": None,
        "short_sleeve": None,
        "Men_regular_size_t": None,
        "Price_discount_range": "not_50_PERCENT_ off & more",
    }


def test_url_getters_without_a_browser_give_none(ctx: GetterContext) -> None:
    # no browser on this task's desktop: nothing to read, as OSWorld without an address bar
    assert _get(ctx, "active_tab_url_parse", parse_keys=["a"]) is None
    assert _get(ctx, "url_dashPart", partIndex=-1, returnType="string") is None
    assert _get(ctx, "url_path_parse", parse_keys=["shirts"]) is None


# -- relative dates ------------------------------------------------------------------------------

TUESDAY = datetime.datetime(2026, 12, 1, 15, 30, tzinfo=datetime.timezone.utc)


def test_relative_days_from_a_tuesday_in_december() -> None:
    assert single_day("tomorrow", TUESDAY).date() == datetime.date(2026, 12, 2)
    assert single_day("next Monday", TUESDAY).date() == datetime.date(2026, 12, 7)
    assert single_day("10th next month", TUESDAY).date() == datetime.date(2027, 1, 10)
    assert single_day("this month", TUESDAY) == TUESDAY
    # August 2027 starts on a Sunday
    assert single_day("first monday eight months later", TUESDAY).date() == datetime.date(
        2027, 8, 2
    )
    with pytest.raises(ValueError, match="month"):  # (12 + 4) % 12 = 4: fine; August: 0
        single_day("first monday four months later", TUESDAY.replace(month=8))
    with pytest.raises(KeyError):
        single_day("next Saturday", TUESDAY)  # a range name only
    first, last = range_days("next week Saturday", "next week Sunday", TUESDAY)
    assert (first.date(), last.date()) == (datetime.date(2026, 12, 12), datetime.date(2026, 12, 13))
    first, last = range_days("next Monday split", "next Friday split", TUESDAY)
    assert (first.date(), last.date()) == (datetime.date(2026, 12, 7), datetime.date(2026, 12, 11))
    first, last = range_days("10th next month", "11th next month", TUESDAY)
    assert (first.day, last.day, last.month) == (10, 11, 1)
    saturday = TUESDAY.replace(day=5)
    first, last = range_days("next Saturday", "next Sunday", saturday)
    assert (first.date(), last.date()) == (datetime.date(2026, 12, 12), datetime.date(2026, 12, 13))


def test_format_day_placeholders() -> None:
    day = datetime.datetime(2027, 1, 5)
    text = "{DoW}, {Month} {Day0D}, {Year} {DayD}/{MonthD}/{Month0D} {month} {MonthFull} {DoWJ}"
    assert format_day(text, day) == "Tue, Jan 05, 2027 5/1/01 january January 火"


def test_rule_relative_time_fills_the_expected_rules(ctx: GetterContext) -> None:
    rules = {
        "relativeTime": {"from": "next week Friday", "to": "next week Sunday"},
        "timezone": "America/New_York",
        "expected": {
            "from": "Check In{DoW}, {Month} {Day0D}",
            "to": "Check Out{DoW}, {Month} {Day0D}",
        },
    }
    config = {"type": "rule_relativeTime", "rules": rules}
    got = GETTERS["rule_relativeTime"](ctx, config, now=TUESDAY)
    assert got["expected"] == {"from": "Check InFri, Dec 11", "to": "Check OutSun, Dec 13"}
    assert rules["expected"]["from"] == "Check In{DoW}, {Month} {Day0D}"  # the task is untouched
    single = {
        "relativeTime": {"from": "next Monday"},
        "expected": {"time": ["{Year}-{Month0D}-{Day0D}"]},
    }
    got = GETTERS["rule_relativeTime"](ctx, {"rules": single}, now=TUESDAY)
    assert got["expected"]["time"] == ["2026-12-07"]
    split = {
        "relativeTime": {"from": "next Monday split", "to": "next Friday split"},
        "expected": {k: "{DayD}" for k in ("puDay", "doDay")}
        | {"puMonth": "{MonthD}", "puYear": "{Year}", "doMonth": "{MonthD}", "doYear": "{Year}"},
    }
    got = GETTERS["rule_relativeTime"](ctx, {"rules": split}, now=TUESDAY)
    assert got["expected"] == {
        "puDay": "7",
        "doDay": "11",
        "puMonth": "12",
        "puYear": "2026",
        "doMonth": "12",
        "doYear": "2026",
    }


@pytest.mark.skipif(not (OSWORLD / "examples").is_dir(), reason="OSWorld's tasks are not there")
def test_rule_relative_time_on_every_osworld_task(ctx: GetterContext) -> None:
    from agent_s.bench.tasks import load_suite

    specs = [
        spec
        for task in load_suite(OSWORLD).tasks()
        for spec in (*task.evaluator.results, *task.evaluator.expected)
        if isinstance(spec, dict) and spec.get("type") == "rule_relativeTime"
    ]
    assert len(specs) >= 9
    for spec in specs:
        got = GETTERS["rule_relativeTime"](ctx, spec, now=TUESDAY)
        assert not re.search(r"\{[A-Za-z0-9]+\}", json.dumps(got["expected"])), got


# -- VLC -------------------------------------------------------------------------------------------


def test_vlc_config_copies_vlcrc(ctx: GetterContext) -> None:
    assert _get(ctx, "vlc_config", dest="vlcrc") is None
    (ctx.home / ".config/vlc").mkdir(parents=True)
    (ctx.home / ".config/vlc/vlcrc").write_text("[core]\nplay-and-exit=1\n")
    got = _get(ctx, "vlc_config", dest="vlcrc")
    assert Path(got).read_text() == "[core]\nplay-and-exit=1\n"


STATUS = b"<?xml version='1.0'?><root><state>playing</state></root>"


@pytest.fixture
def vlc_http() -> Iterator[tuple[int, list[str]]]:
    """VLC's HTTP interface as OSWorld's image has it: ``/requests/status.xml`` behind basic
    authentication with an empty user and the password ``password``."""
    seen: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.path)
            wanted = "Basic " + base64.b64encode(b":password").decode()
            if self.headers.get("Authorization") != wanted:
                self.send_response(401)
                self.end_headers()
                return
            self.send_response(200)
            self.end_headers()
            self.wfile.write(STATUS)

        def log_message(self, *args: Any) -> None:
            return None

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1], seen
    server.shutdown()
    server.server_close()


def test_vlc_playing_info_saves_status_xml(
    ctx: GetterContext, vlc_http: tuple[int, list[str]]
) -> None:
    port, seen = vlc_http
    ctx.extra["vlc_port"] = port
    got = _get(ctx, "vlc_playing_info", dest="status.xml")
    assert Path(got).read_bytes() == STATUS
    assert seen == ["/requests/status.xml"]


def test_vlc_playing_info_without_the_interface_raises(ctx: GetterContext) -> None:
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        ctx.extra["vlc_port"] = sock.getsockname()[1]
    with pytest.raises(RuntimeError, match="--extraintf http"):
        _get(ctx, "vlc_playing_info", dest="status.xml")


@pytest.mark.skipif(shutil.which("xdg-mime") is None, reason="xdg-mime is not installed")
def test_default_video_player_from_mimeapps(ctx: GetterContext) -> None:
    from agent_s.bench.desktop_getters import VIDEO_TYPES

    before = _get(ctx, "default_video_player")  # this machine's own defaults
    assert "myplayer.desktop" not in before
    apps = ctx.home / ".local/share/applications"
    apps.mkdir(parents=True)
    (apps / "myplayer.desktop").write_text(
        "[Desktop Entry]\nType=Application\nName=My Player\nExec=true %f\n"
        "MimeType=" + "".join(f"video/{t};" for t in VIDEO_TYPES) + "\n"
    )
    (ctx.home / ".config").mkdir()
    lines = ["[Default Applications]", *(f"video/{t}=myplayer.desktop" for t in VIDEO_TYPES)]
    (ctx.home / ".config/mimeapps.list").write_text("\n".join(lines) + "\n")
    assert _get(ctx, "default_video_player").strip() == "myplayer.desktop"


# -- slides and sheets ---------------------------------------------------------------------------

_RELS = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">{}'
    "</Relationships>"
)
_REL = '<Relationship Id="{}" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/{}" Target="{}"{}/>'  # noqa: E501
_SLIDE = (
    '<p:sld xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" '
    'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" '
    'xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"><p:cSld>{}'
    "<p:spTree/></p:cSld></p:sld>"
)


def _deck(path: Path, slides: dict[int, tuple[str, str]], media: dict[str, bytes]) -> None:
    """A .pptx holding each slide's XML and relationships, and the media files."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as deck:
        for number, (body, rels) in slides.items():
            deck.writestr(f"ppt/slides/slide{number}.xml", _SLIDE.format(body))
            deck.writestr(f"ppt/slides/_rels/slide{number}.xml.rels", _RELS.format(rels))
        for name, data in media.items():
            deck.writestr(f"ppt/media/{name}", data)


def test_audio_in_slide_embedded_and_linked(ctx: GetterContext) -> None:
    deck = ctx.home / "Desktop/talk.pptx"
    embedded = _REL.format("rId2", "audio", "../media/media1.mp3", "")
    linked = _REL.format(
        "rId3", "audio", "file:///home/user/Music/song.mp3", ' TargetMode="External"'
    )
    _deck(deck, {1: ("", embedded), 2: ("", linked), 3: ("", "")}, {"media1.mp3": b"ID3-one"})
    config = {"ppt_file_path": "/home/user/Desktop/talk.pptx", "dest": "a.mp3"}
    got = _get(ctx, "audio_in_slide", slide_index=0, **config)
    assert Path(got).read_bytes() == b"ID3-one"
    assert _get(ctx, "audio_in_slide", slide_index=1, **config) is None  # the linked file is gone
    (ctx.home / "Music").mkdir()
    (ctx.home / "Music/song.mp3").write_bytes(b"ID3-two")
    got = _get(ctx, "audio_in_slide", slide_index=1, **config)
    assert (Path(got).name, Path(got).read_bytes()) == ("a.mp3", b"ID3-two")
    assert _get(ctx, "audio_in_slide", slide_index=2, **config) is None  # no audio
    assert _get(ctx, "audio_in_slide", slide_index=7, **config) is None  # no such slide
    with pytest.raises(FileNotFoundError):
        _get(ctx, "audio_in_slide", slide_index=0, ppt_file_path="/home/user/none.pptx", dest="x")


def test_background_image_in_slide(ctx: GetterContext) -> None:
    background = '<p:bg><p:bgPr><a:blipFill><a:blip r:embed="rId5"/></a:blipFill></p:bgPr></p:bg>'
    rels = _REL.format("rId4", "image", "../media/other.png", "")
    rels += _REL.format("rId5", "image", "../media/landscape.png", "")
    _deck(
        ctx.home / "Desktop/d.pptx",
        {1: ("", rels), 2: (background, rels)},
        {"landscape.png": b"PNG-landscape", "other.png": b"PNG-other"},
    )
    config = {"ppt_file_path": "/home/user/Desktop/d.pptx", "dest": "landscape.png"}
    got = _get(ctx, "background_image_in_slide", slide_index=1, **config)
    assert Path(got).read_bytes() == b"PNG-landscape"
    assert _get(ctx, "background_image_in_slide", slide_index=0, **config) is None


def test_content_from_vm_file_last_row(ctx: GetterContext) -> None:
    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    assert sheet is not None
    for row in (["Name", "Citations", "h-index"], ["Ada", 120, 5], ["Alan", 3400, 21.5]):
        sheet.append(row)
    (ctx.home / "Desktop").mkdir()
    book.save(ctx.home / "Desktop/researchers.xlsx")
    config = {"path": "/home/user/Desktop/researchers.xlsx", "file_type": "xlsx"}
    assert _get(ctx, "content_from_vm_file", file_content="last_row", **config) == [
        "Alan",
        "3400",
        "21.5",
    ]
    with pytest.raises(NotImplementedError):
        _get(
            ctx, "content_from_vm_file", path="/home/user/a.csv", file_type="csv", file_content="x"
        )


# -- the desktop: screen, windows, wallpaper, VS Code's palette ----------------------------------


@pytest.mark.desktop
def test_screen_and_window_sizes(desktop: Any, apps: Any, x11: Any, tmp_path: Path) -> None:
    ctx = GetterContext(home=desktop.home, env=dict(desktop.env), cache_dir=tmp_path)
    assert _get(ctx, "vm_screen_size") == {"width": 1280, "height": 800}
    assert _get(ctx, "vm_window_size", app_class_name="SizeProbe") is None
    launched = apps(
        ["xterm", "-class", "SizeProbe", "-geometry", "60x10+40+40"], window="SizeProbe"
    )
    window = launched.window
    got = _get(ctx, "vm_window_size", app_class_name="sizeprobe")  # any case, as OSWorld
    assert got == {"width": window.width, "height": window.height}
    assert 200 < got["width"] < 1280


@pytest.mark.desktop
def test_vscode_config_types_the_command_into_the_focused_window(
    desktop: Any, apps: Any, tmp_path: Path
) -> None:
    out = desktop.home / "OpenProject.txt"
    out.unlink(missing_ok=True)
    script = f'read -r line; printf %s "$line" > {out}'
    apps(["xterm", "-title", "Palette", "-e", "bash", "-c", script], window="Palette")
    ctx = GetterContext(home=desktop.home, env=dict(desktop.env), cache_dir=tmp_path)
    config = {"vscode_extension_command": "OpenProject", "path": str(out), "dest": "o.txt"}
    got = _get(ctx, "vscode_config", **config)
    assert got is not None
    assert Path(got).read_text().endswith("OpenProject")


def _has_background_schema() -> bool:
    import subprocess

    if shutil.which("gsettings") is None:
        return False
    done = subprocess.run(
        ["gsettings", "list-schemas"], capture_output=True, text=True, check=False
    )
    return "org.gnome.desktop.background" in done.stdout.split()


@pytest.mark.skipif(not _has_background_schema(), reason="GNOME's background schema is missing")
def test_wallpaper_follows_the_picture_uri_setting(ctx: GetterContext) -> None:
    settings = ctx.home / ".config/glib-2.0/settings"
    settings.mkdir(parents=True)
    keyfile = settings / "keyfile"
    ctx.env = {**ctx.env, "GSETTINGS_BACKEND": "keyfile"}  # the setting in a file under HOME
    keyfile.write_text("[org/gnome/desktop/background]\npicture-uri='file:///home/user/P/w.png'\n")
    got = _get(ctx, "vm_wallpaper", dest="background.png")
    assert Path(got).read_bytes() == b""  # the picture is not there: OSWorld's empty file
    (ctx.home / "P").mkdir()
    (ctx.home / "P/w.png").write_bytes(b"PNG-wallpaper")
    got = _get(ctx, "vm_wallpaper", dest="background.png")
    assert (Path(got).name, Path(got).read_bytes()) == ("background.png", b"PNG-wallpaper")
