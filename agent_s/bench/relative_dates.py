"""``rule_relativeTime``: a task's rules with relative dates ("tomorrow", "next week
Saturday", "10th next month", ...) made absolute, as OSWorld's getter does.

    rules = GETTERS["rule_relativeTime"](ctx, spec)      # expected.time: "Wed, Dec 02, 2026"

The names each mean what OSWorld's code makes of them (its arithmetic kept, quirks included);
a name it does not know raises, as there. Importing ``agent_s.bench.getters`` registers it.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

from agent_s.bench.getters import GETTERS, GetterContext
from agent_s.prompting import MONTHS, WEEKDAYS

_DAYS_JA = ("月", "火", "水", "木", "金", "土", "日")


def format_day(template: str, day: datetime.datetime) -> str:
    """OSWorld's date placeholders: ``{DoW}`` Mon, ``{Month}`` Jan, ``{MonthFull}`` January,
    ``{month}`` january, ``{DayD}`` 5, ``{Day0D}`` 05, ``{MonthD}`` 1, ``{Month0D}`` 01,
    ``{Year}``, ``{DoWJ}`` (Japanese day); each replaced once."""
    values = (
        ("{DoW}", WEEKDAYS[day.weekday()][:3]),
        ("{Month}", MONTHS[day.month - 1][:3]),
        ("{DayD}", str(day.day)),
        ("{Year}", str(day.year)),
        ("{Month0D}", f"{day.month:02d}"),
        ("{month}", MONTHS[day.month - 1].lower()),
        ("{MonthFull}", MONTHS[day.month - 1]),
        ("{Day0D}", f"{day.day:02d}"),
        ("{MonthD}", str(day.month)),
        ("{DoWJ}", _DAYS_JA[day.weekday()]),
    )
    for key, value in values:
        template = template.replace(key, value, 1)
    return template


def _format(template: Any, day: datetime.datetime) -> Any:
    if isinstance(template, list):
        return [_format(t, day) for t in template]
    return format_day(str(template), day)


def _next_month(now: datetime.datetime, day: int) -> datetime.datetime:
    year, month = (now.year + 1, 1) if now.month == 12 else (now.year, now.month + 1)
    return datetime.datetime(year, month, day, tzinfo=now.tzinfo)


def _first_monday(now: datetime.datetime, months: int, wrap_from: int) -> datetime.datetime:
    """OSWorld's "first monday N months later", its arithmetic kept (a month that comes out
    as 0 raises there and here: the task is then left unscored)."""
    year = now.year + 1 if now.month >= wrap_from else now.year
    first = datetime.datetime(year, (now.month + months) % 12, 1, tzinfo=now.tzinfo)
    return first + datetime.timedelta(days=(7 - first.weekday()) % 7)


def _plus(now: datetime.datetime, days: int) -> datetime.datetime:
    return now + datetime.timedelta(days=days)


def single_day(name: str, now: datetime.datetime) -> datetime.datetime:
    """The day a lone ``relativeTime.from`` means (OSWorld knows these names only; any
    other raises)."""
    wd = now.weekday()
    if name == "tomorrow":
        return _plus(now, 1)
    if name in ("5th next month", "10th next month"):
        return _next_month(now, int(name.split("th", 1)[0]))
    if name == "this month":
        return now
    if name == "next Monday":
        return _plus(now, 7 - wd)
    if name == "first monday four months later":
        return _first_monday(now, 4, 9)
    if name == "first monday eight months later":
        return _first_monday(now, 8, 5)
    raise KeyError(f"relative time {name!r} is not known as a single day")


def range_days(
    start: str, end: str, now: datetime.datetime
) -> tuple[datetime.datetime, datetime.datetime]:
    """The first and last day a ``relativeTime`` range ``from`` / ``to`` means."""
    wd = now.weekday()
    first_offsets = {
        "tomorrow": 1,
        "this Saturday": 5 - wd,
        "next Monday": 7 - wd,
        "next Monday split": 7 - wd,
        "next Friday": 4 - wd if wd < 4 else (7 if wd == 4 else 7 - wd + 4),
        "next Saturday": 5 - wd if wd < 5 else (7 if wd == 5 else 6),
        "next week Friday": 7 - wd + 4,
        "next week Saturday": 7 - wd + 5,
        "next week Sunday": 7 - wd + 6,
    }
    if start == "10th next month":
        first = _next_month(now, 10)
    elif start in first_offsets:
        first = _plus(now, first_offsets[start])
    else:
        raise KeyError(f"relative time {start!r} is not known as the start of a range")
    if end == "tomorrow":
        last = _plus(now, 1)
    elif end == "this Sunday":
        last = _plus(now, 6 - wd)
    elif end == "11th next month":
        last = _next_month(now, 11)
    elif end in ("next Friday", "next Friday split"):
        if start in ("next Monday", "next Monday split"):
            last = _plus(first, 4)  # the Friday of that Monday's week
        else:
            last = _plus(now, 4 - wd if wd < 4 else 6 - wd + 5)
    elif end == "next Sunday":
        if start in ("next Friday", "next Saturday"):
            last = _plus(first, 6 - first.weekday())  # the same weekend
        else:
            last = _plus(now, 6 - wd if wd < 6 else 7)
    elif end == "next week Sunday":
        if start in ("next week Friday", "next week Saturday"):
            last = _plus(first, 6 - first.weekday())
        else:
            last = _plus(now, 7 - wd + 6)
    else:
        raise KeyError(f"relative time {end!r} is not known as the end of a range")
    return first, last


def _rule_timezone(rules: Mapping[str, Any]) -> datetime.tzinfo:
    """The rule's ``timezone``; else this machine's own zone (OSWorld asks an IP-location
    service for the machine's zone, and uses UTC when it cannot)."""
    import zoneinfo

    name = rules.get("timezone")
    if name:
        try:
            return zoneinfo.ZoneInfo(str(name))
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            return datetime.timezone.utc
    return datetime.datetime.now().astimezone().tzinfo or datetime.timezone.utc


def get_rule_relative_time(
    ctx: GetterContext, config: Mapping[str, Any], *, now: datetime.datetime | None = None
) -> Any:
    """The task's ``rules`` with relative dates made absolute: ``relativeTime.from`` fills
    ``expected.time`` (or ``from``, with ``to`` filling ``expected.to``; the "split" names fill
    ``puDay``/``puMonth``/``puYear`` and ``doDay``/``doMonth``/``doYear``)."""
    import copy

    rules = copy.deepcopy(dict(config["rules"]))
    relative = rules["relativeTime"]
    expected = rules["expected"]
    now = now or datetime.datetime.now(_rule_timezone(rules))
    if "to" not in relative:
        expected["time"] = _format(expected["time"], single_day(relative["from"], now))
        return rules
    first, last = range_days(relative["from"], relative["to"], now)
    if relative["from"] == "next Monday split":
        for key in ("puDay", "puMonth", "puYear"):
            expected[key] = _format(expected[key], first)
    else:
        expected["from"] = _format(expected["from"], first)
    if relative["to"] == "next Friday split":
        for key in ("doDay", "doMonth", "doYear"):
            expected[key] = _format(expected[key], last)
    else:
        expected["to"] = _format(expected["to"], last)
    return rules


GETTERS.update(
    {
        "rule_relativeTime": get_rule_relative_time,
    }
)


__all__ = ["format_day", "range_days", "single_day"]
