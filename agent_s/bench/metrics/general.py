"""OSWorld's general metrics: text, rules, JSON, lists, URLs, CSV, SQLite. Each returns a
float in [0, 1].

Semantics follow OSWorld's current evaluators (same inputs, same verdicts, including their
quirks, noted where they matter); the code is our own. A getter that found nothing gives
``None``, which most metrics score 0; where OSWorld's metric raises instead (``is_in_list``,
``check_direct_json_object`` on text that is not JSON, ...) ours raises too, and scoring then
leaves the task unscored (see ``agent_s.bench.scoring``).
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


def _read(path: Any, errors: str = "replace") -> str | None:
    if not path:
        return None
    try:
        return Path(path).read_text(encoding="utf-8", errors=errors)
    except OSError:
        return None


def check_include_exclude(result: Any, rules: Mapping[str, Any], **_: Any) -> float:
    """1 when every ``include`` string is in the result and no ``exclude`` string is (a text
    is searched for substrings, a list for items, as OSWorld's ``in``)."""
    if result is None:
        return 0.0
    include = rules.get("include", [])
    exclude = rules.get("exclude", [])
    # membership in the result as it is (a substring of a text, an item of a list)
    ok = all(s in result for s in include) and all(s not in result for s in exclude)
    return 1.0 if ok else 0.0


def exact_match(result: Any, rules: Mapping[str, Any], **_: Any) -> float:
    """1 when the value equals ``rules["expected"]`` exactly (trailing newlines count)."""
    return 1.0 if result == rules["expected"] else 0.0


def literal_match(result: Any, expected: Any, **options: Any) -> float:
    """Equality of two literals; lists compare in order, ``ignore_case`` for strings."""
    literal_type = options.get("type", "str")
    if literal_type == "str":
        ignore_case = options.get("ignore_case", False)
        a, b = str(result), str(expected)
        return 1.0 if (a.lower() == b.lower() if ignore_case else a == b) else 0.0
    if literal_type == "list":
        if not isinstance(result, list | tuple) or not isinstance(expected, list | tuple):
            return 0.0
        if len(result) != len(expected):
            return 0.0
        ignore_case = options.get("ignore_case", False)
        pairs = zip(map(str, result), map(str, expected), strict=True)
        same = all((a.lower() == b.lower()) if ignore_case else a == b for a, b in pairs)
        return 1.0 if same else 0.0
    raise NotImplementedError(f"literal_match does not know type {literal_type!r}")


def is_in_list(result: Any, rules: Mapping[str, Any], **_: Any) -> float:
    """1 when ``rules["expected"]`` is an element of the result list (a result that is no
    container, e.g. ``None``, raises ``TypeError`` as in OSWorld: the task is not scored)."""
    return 1.0 if rules["expected"] in result else 0.0


def match_in_list(result: Any, rules: Mapping[str, Any], **_: Any) -> float:
    """1 when the result equals one of ``rules["expected"]``."""
    return 1.0 if result in rules["expected"] else 0.0


def check_direct_json_object(result: Any, rules: Mapping[str, Any], **_: Any) -> float:
    """Compare a JSON object (or its text, single quotes allowed) with ``rules["expected"]``.

    Default: every expected key must have an equal value (``ignore_list_order`` inside the
    expected object sorts both lists, as OSWorld reads it there). ``expect_in_result``: a list
    value passes when any of its items is in the result's list or equals the result's string,
    a string when it is a substring of the result's value; any other kind of value fails.
    An expected value ``"__EVALUATION_FAILED__"`` fails. Text that is not JSON raises
    ``ValueError`` (OSWorld's ``json.loads`` raises there: the task is left unscored).
    """
    if isinstance(result, str):
        try:
            result = json.loads(result.strip().replace("'", '"'))
        except json.JSONDecodeError as err:
            raise ValueError(f"the result is not JSON: {err}") from err
    if result is None:
        return 0.0
    expected = rules.get("expected", {})
    if isinstance(expected, Mapping) and any(
        v == "__EVALUATION_FAILED__" for v in expected.values()
    ):
        return 0.0
    try:
        expected = rules["expected"]
        if not rules.get("expect_in_result", False):
            for key, want in expected.items():
                got: Any = result.get(key)  # a JSON value; None (missing) fails sorted() below
                if expected.get("ignore_list_order", False):
                    want, got = sorted(want), sorted(got)
                if want != got:
                    return 0.0
            return 1.0
        for key, want in expected.items():
            got = result.get(key)
            if isinstance(want, list):
                if isinstance(got, list):
                    found = any(item in got for item in want)
                else:
                    found = isinstance(got, str) and any(item == got for item in want)
                if not found:
                    return 0.0
            elif isinstance(want, str):
                if want not in got:
                    return 0.0
            else:
                return 0.0
        return 1.0
    except (TypeError, AttributeError, KeyError):  # unsortable, unsearchable, not an object
        return 0.0


def compare_text_file(actual: Any, expected: Any, **options: Any) -> float:
    """Two text files equal (``ignore_blanks``: runs of whitespace are one space;
    ``ignore_case``)."""
    # Deliberately not OSWorld's: it reads both files as UTF-8 and raises on other bytes, so
    # two identical Latin-1 files leave its task unscored. No real task's file is in another
    # encoding, and a crash is no verdict: bytes that are not UTF-8 are kept as they are
    # (surrogateescape), so identical files score 1 and files differing there still differ.
    text1, text2 = _read(actual, "surrogateescape"), _read(expected, "surrogateescape")
    if text1 is None or text2 is None:
        return 0.0
    if options.get("ignore_blanks", False):
        text1 = re.sub(r"\s+", " ", re.sub(r"[\t\n]", " ", text1).strip())
        text2 = re.sub(r"\s+", " ", re.sub(r"[\t\n]", " ", text2).strip())
    if options.get("ignore_case", False):
        text1, text2 = text1.lower(), text2.lower()
    return 1.0 if text1 == text2 else 0.0


def diff_text_file(actual: Any, expected: Any, **_: Any) -> float:
    """Similarity of two text files by lines, 0..1: difflib's ``SequenceMatcher.ratio`` over
    the two lists of lines (``str.splitlines``), as OSWorld computes it."""
    text1, text2 = _read(actual), _read(expected)
    if text1 is None or text2 is None:
        return 0.0
    return difflib.SequenceMatcher(a=text1.splitlines(), b=text2.splitlines()).ratio()


def file_contains(path: Any, config: Mapping[str, Any], **_: Any) -> float:
    """1 when the file holds every string of ``config["expected"]``."""
    text = _read(path)
    if text is None:
        return 0.0
    return 1.0 if all(s in text for s in config["expected"]) else 0.0


def _file_lines(text: str) -> list[str]:
    """The lines a text file iterates over (``\\n`` ends a line; ``_read`` has already turned
    ``\\r\\n`` and ``\\r`` into ``\\n``): unlike ``str.splitlines``, form feeds and U+2028 do
    not end a line."""
    lines = text.split("\n")
    last = lines.pop()
    return [line + "\n" for line in lines] + ([last] if last else [])


def check_list(result: Any, rules: Mapping[str, Any], **_: Any) -> float:
    """Over the lines of a file: each ``expect`` regex matches some line, and no
    ``unexpect`` regex matches any line."""
    text = _read(result)
    if text is None:
        return 0.0
    expect = [re.compile(p) for p in rules.get("expect", [])]
    unexpect = [re.compile(p) for p in rules.get("unexpect", [])]
    found = [False] * len(expect)
    clean = True
    for line in _file_lines(text):
        for i, pattern in enumerate(expect):
            found[i] = found[i] or pattern.search(line) is not None
        clean = clean and all(p.search(line) is None for p in unexpect)
    return 1.0 if all(found) and clean else 0.0


def check_json(result: Any, rules: Mapping[str, Any], is_yaml: bool = False, **_: Any) -> float:
    """Key paths into a JSON (or YAML) file, each matched by ``{method, ref}``: ``expect``
    rules must match, ``unexpect`` rules must not.

    As OSWorld: a file that does not parse (or YAML that is empty) scores 0; an ``expect``
    key that is missing scores 0; an ``unexpect`` key that is missing is matched as ``None``
    (so ``ne`` matches it, ``eq`` does not), and a rule that cannot be applied to its value
    (e.g. a regex against ``None``) scores 0.
    """
    from agent_s.bench.metrics.table import match_value_to_rule

    if not result:
        return 0.0
    try:
        text = Path(result).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return 0.0
    import yaml

    try:
        data = yaml.safe_load(text) if is_yaml else json.loads(text)
    except (ValueError, yaml.YAMLError):  # a broken file scores 0, it is no scoring fault
        return 0.0
    if is_yaml and data is None:
        return 0.0

    def pick(path: Sequence[Any]) -> Any:
        value = data
        for key in path:
            value = value[key]
        return value

    def applies(value: Any, rule: Mapping[str, Any]) -> bool | None:
        """Whether the rule matches; ``None`` when it cannot be applied (OSWorld: 0)."""
        try:
            return bool(match_value_to_rule(value, rule))
        except Exception:  # OSWorld catches any error of a rule here and scores 0
            return None

    for rule in rules.get("expect", []):
        try:
            value = pick(rule["key"])
        except (KeyError, IndexError, TypeError):
            return 0.0
        if not applies(value, rule):
            return 0.0
    for rule in rules.get("unexpect", []):
        try:
            value = pick(rule["key"])
        except (KeyError, TypeError):
            value = None
        except IndexError:  # OSWorld: an error outside the key lookup's own catch scores 0
            return 0.0
        matched = applies(value, rule)
        if matched is None or matched:
            return 0.0
    return 1.0


def check_json_settings(actual: Any, expected: Mapping[str, Any], **_: Any) -> float:
    """1 when the settings file's top level holds every key of ``expected["expected"]`` with
    an equal value (the file updated with the expected keys is unchanged)."""
    text = _read(actual)
    if text is None:
        return 0.0
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return 0.0
    if not isinstance(data, dict):
        return 0.0
    return 1.0 if {**data, **expected["expected"]} == data else 0.0


def is_expected_url_pattern_match(result: Any, rules: Mapping[str, Any], **_: Any) -> float:
    """1 when every regex of ``rules["expected"]`` is found in the URL (or ``result["url"]``)."""
    if not result:
        return 0.0
    url = result if isinstance(result, str) else None
    if isinstance(result, Mapping) and "url" in result:
        url = result["url"]
    if url is None:
        return 0.0
    return 1.0 if all(re.search(p, url) for p in rules["expected"]) else 0.0


def indel_ratio(a: str, b: str) -> float:
    """Similarity 0..100 from the insert/delete distance: rapidfuzz's ``fuzz.ratio``, which
    OSWorld calls, 100 * (1 - indel / (len(a) + len(b)))."""
    from rapidfuzz import fuzz

    return float(fuzz.ratio(a, b))


_TIME = re.compile(r"([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)")


def check_line_number(file_path: Any, line_number: Mapping[str, Any], **_: Any) -> float:
    """The number of lines holding a time of day (HH:MM:SS) is ``line_number["expected"]``;
    a missing or unreadable file scores 0."""
    if not file_path or not Path(file_path).is_file():
        return 0.0
    try:
        with open(file_path, encoding="utf-8") as handle:
            count = sum(1 for line in handle if _TIME.search(line))
        return 1.0 if count == int(line_number["expected"]) else 0.0
    except (OSError, UnicodeDecodeError, ValueError, TypeError, KeyError):
        return 0.0


def _python_lines(text: str) -> str:
    """OSWorld's normalisation of a Python file: up to three leading shebang / coding lines
    dropped, blank lines dropped, tabs expanded to 4 and trailing spaces removed."""
    lines = text.splitlines()
    start = 0
    while start < min(len(lines), 3):
        head = lines[start].strip()
        if head.startswith(("#!", "# -*- coding:", "# coding:", "# coding=")):
            start += 1
            continue
        break
    kept = [line.expandtabs(4).rstrip() for line in lines[start:] if line.strip()]
    return "\n".join(kept)


def compare_python_pure_text(py_file_path: Any, gold_file_path: Any, **_: Any) -> float:
    """Two Python files agree line by line once normalised (see ``_python_lines``)."""
    if not py_file_path or not gold_file_path:
        return 0.0
    try:
        mine = Path(py_file_path).read_text(encoding="utf-8")
        gold = Path(gold_file_path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return 0.0
    return 1.0 if _python_lines(mine) == _python_lines(gold) else 0.0


def _match_record(pattern: Mapping[str, Any], record: Mapping[str, Any]) -> bool:
    return all(key in record and record[key] == value for key, value in pattern.items())


def check_csv(result: Any, rules: Mapping[str, Any], **_: Any) -> float:
    """Over the rows of a CSV file with a header: each ``expect`` pattern (column -> value)
    matches some row and no ``unexpect`` pattern matches any row."""
    import csv

    if result is None:
        return 0.0
    expect = list(rules.get("expect", []))
    unexpect = list(rules.get("unexpect", []))
    found = [False] * len(expect)
    clean = True
    with open(result, encoding="utf-8", newline="") as handle:
        for record in csv.DictReader(handle):
            found = [f or _match_record(p, record) for f, p in zip(found, expect, strict=True)]
            clean = clean and not any(_match_record(p, record) for p in unexpect)
    return 1.0 if all(found) and clean else 0.0


def run_sqlite3(result: Any, rules: Mapping[str, Any], **_: Any) -> float:
    """The first column of the first row ``rules["sql"]`` (task-author SQL) returns from the
    database file, as a number (an empty answer is 0). The file is opened read-only."""
    import sqlite3

    if not result:
        raise ValueError("no database file to query")
    uri = Path(result).resolve().as_uri() + "?mode=ro"
    connection = sqlite3.connect(uri, uri=True)
    try:
        row = connection.execute(rules["sql"]).fetchone()
    finally:
        connection.close()
    return float(row[0] or 0)


def fuzzy_place_math(result_file_path: Any, rules: Mapping[str, Any], **_: Any) -> float:
    """The .docx holds exactly three words; each scores its best fuzzy similarity with the
    ``rules["expected"]`` answers, and the score is their mean."""
    import docx
    from rapidfuzz import fuzz

    if result_file_path is None:
        return 0.0
    document = docx.Document(str(result_file_path))
    words = [word for paragraph in document.paragraphs for word in paragraph.text.split()]
    if len(words) != 3:
        return 0.0
    answers = rules["expected"]
    best = [max([fuzz.ratio(w, a) / 100 for a in answers], default=0.0) for w in words]
    return sum(best) / 3


# OSWorld's namespaces of accessibility-tree attributes, by operating system.
A11Y_NAMESPACES: dict[str, dict[str, str]] = {
    osname: {
        prefix: f"https://accessibility.{osname}.example.org/ns/{suffix}"
        for prefix, suffix in pairs
    }
    for osname, pairs in (
        (
            "ubuntu",
            (
                ("st", "state"),
                ("attr", "attributes"),
                ("cp", "component"),
                ("doc", "document"),
                ("docattr", "document/attributes"),
                ("txt", "text"),
                ("val", "value"),
                ("act", "action"),
            ),
        ),
        (
            "windows",
            (
                ("st", "state"),
                ("attr", "attributes"),
                ("cp", "component"),
                ("doc", "document"),
                ("docattr", "document/attributes"),
                ("txt", "text"),
                ("val", "value"),
                ("act", "action"),
                ("class", "class"),
            ),
        ),
        (
            "macos",
            (
                ("st", "state"),
                ("attr", "attributes"),
                ("cp", "component"),
                ("doc", "document"),
                ("txt", "text"),
                ("val", "value"),
                ("act", "action"),
                ("role", "role"),
            ),
        ),
    )
}


def check_accessibility_tree(
    result: Any, rules: Sequence[Mapping[str, Any]], osname: str = "ubuntu", **_: Any
) -> float:
    """Every rule finds an element in the accessibility-tree XML: ``xpath`` (first), or the
    CSS ``selectors`` joined by ", " (``attr|id`` is the ``id`` attribute in OSWorld's
    ``attr`` namespace, see ``A11Y_NAMESPACES``). With ``text``, the best match of an
    element's text scores: equality when ``exact``, else rapidfuzz's ratio; the rules'
    scores multiply. A rule with neither selector raises, as in OSWorld."""
    import importlib

    from rapidfuzz import fuzz

    etree = importlib.import_module("lxml.etree")  # lxml has no type information
    cssselect = importlib.import_module("lxml.cssselect")
    namespaces = A11Y_NAMESPACES[osname]
    tree = etree.fromstring(result)
    total = 1.0
    for rule in rules:
        if "xpath" in rule:
            elements = tree.xpath(rule["xpath"], namespaces=namespaces)
        elif "selectors" in rule:
            selector = cssselect.CSSSelector(", ".join(rule["selectors"]), namespaces=namespaces)
            elements = selector(tree)
        else:
            raise ValueError("an accessibility-tree rule needs xpath or selectors")
        if len(elements) == 0:
            return 0.0
        if "text" in rule:
            exact = rule["exact"]
            score = 0.0
            for element in elements:
                text = element.text or None
                if exact:
                    score = max(score, float(text == rule["text"]))
                else:
                    similar = 0.0 if text is None else fuzz.ratio(rule["text"], text) / 100.0
                    score = max(score, similar)
            total *= score
    return float(total)
