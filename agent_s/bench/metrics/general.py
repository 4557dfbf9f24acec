"""OSWorld's general metrics: text, rules, JSON, lists, URLs. Each returns a float in [0, 1].

Semantics follow OSWorld's evaluators (same inputs, same verdicts, including their quirks,
noted where they matter); the code is our own. A getter that found nothing gives ``None``,
and every metric scores ``None`` as 0.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


def _read(path: Any) -> str | None:
    if not path:
        return None
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def check_include_exclude(result: Any, rules: Mapping[str, Any], **_: Any) -> float:
    """1 when every ``include`` string is in the text and no ``exclude`` string is."""
    if result is None:
        return 0.0
    text = str(result)
    include = rules.get("include", [])
    exclude = rules.get("exclude", [])
    ok = all(s in text for s in include) and all(s not in text for s in exclude)
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
    """1 when ``rules["expected"]`` is an element of the result list."""
    return 1.0 if rules["expected"] in (result or []) else 0.0


def match_in_list(result: Any, rules: Mapping[str, Any], **_: Any) -> float:
    """1 when the result equals one of ``rules["expected"]``."""
    return 1.0 if result in rules["expected"] else 0.0


def check_direct_json_object(result: Any, rules: Mapping[str, Any], **_: Any) -> float:
    """Compare a JSON object (or its text, single quotes allowed) with ``rules["expected"]``.

    Default: every expected key must have an equal value (``ignore_list_order`` inside the
    expected object sorts both lists, as OSWorld reads it there). ``expect_in_result``: a list
    value passes when any of its items is in the result's list, a string when it is a
    substring of the result's value; any other kind of value fails.
    """
    if isinstance(result, str):
        try:
            result = json.loads(result.strip().replace("'", '"'))
        except json.JSONDecodeError:
            return 0.0
    if not isinstance(result, Mapping):
        return 0.0
    expected = rules["expected"]
    try:
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
                if not (isinstance(got, list) and any(item in got for item in want)):
                    return 0.0
            elif isinstance(want, str):
                if got is None or want not in got:
                    return 0.0
            else:
                return 0.0
        return 1.0
    except TypeError:  # unsortable or unsearchable values: not a match
        return 0.0


def compare_text_file(actual: Any, expected: Any, **options: Any) -> float:
    """Two text files equal (``ignore_blanks``: runs of whitespace are one space;
    ``ignore_case``)."""
    text1, text2 = _read(actual), _read(expected)
    if text1 is None or text2 is None:
        return 0.0
    if options.get("ignore_blanks", False):
        text1 = re.sub(r"\s+", " ", re.sub(r"[\t\n]", " ", text1).strip())
        text2 = re.sub(r"\s+", " ", re.sub(r"[\t\n]", " ", text2).strip())
    if options.get("ignore_case", False):
        text1, text2 = text1.lower(), text2.lower()
    return 1.0 if text1 == text2 else 0.0


def diff_text_file(actual: Any, expected: Any, **_: Any) -> float:
    """Similarity of two text files, 0..1 (rapidfuzz's ``ratio`` / 100)."""
    text1, text2 = _read(actual), _read(expected)
    if text1 is None or text2 is None:
        return 0.0
    return indel_ratio(text1, text2) / 100.0


def file_contains(path: Any, config: Mapping[str, Any], **_: Any) -> float:
    """1 when the file holds every string of ``config["expected"]``."""
    text = _read(path)
    if text is None:
        return 0.0
    return 1.0 if all(s in text for s in config["expected"]) else 0.0


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
    for line in text.splitlines(keepends=True):
        for i, pattern in enumerate(expect):
            found[i] = found[i] or pattern.search(line) is not None
        clean = clean and all(p.search(line) is None for p in unexpect)
    return 1.0 if all(found) and clean else 0.0


def check_json(result: Any, rules: Mapping[str, Any], is_yaml: bool = False, **_: Any) -> float:
    """Key paths into a JSON (or YAML) file, each matched by ``{method, ref}``: ``expect``
    rules must match, ``unexpect`` rules must not."""
    from agent_s.bench.metrics.table import match_value_to_rule

    text = _read(result)
    if text is None:
        return 0.0
    try:
        if is_yaml:
            import yaml

            data = yaml.safe_load(text)
        else:
            data = json.loads(text)
    except (json.JSONDecodeError, ValueError):
        return 0.0

    def pick(path: Sequence[Any]) -> Any:
        value = data
        for key in path:
            value = value[key]
        return value

    for rule in rules.get("expect", []):
        try:
            value = pick(rule["key"])
        except (KeyError, IndexError, TypeError):
            return 0.0
        if not match_value_to_rule(value, rule):
            return 0.0
    for rule in rules.get("unexpect", []):
        try:
            value = pick(rule["key"])
        except (KeyError, IndexError, TypeError):
            continue
        if match_value_to_rule(value, rule):
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
    url = result if isinstance(result, str) else result.get("url")
    if not isinstance(url, str):
        return 0.0
    return 1.0 if all(re.search(p, url) for p in rules["expected"]) else 0.0


def indel_ratio(a: str, b: str) -> float:
    """Similarity 0..100 from the insert/delete distance (what rapidfuzz's ``fuzz.ratio``
    computes): 100 * (1 - indel / (len(a) + len(b)))."""
    total = len(a) + len(b)
    if total == 0:
        return 100.0
    # longest common subsequence, one row at a time
    previous = [0] * (len(b) + 1)
    for ch in a:
        current = [0]
        for j, other in enumerate(b, 1):
            current.append(previous[j - 1] + 1 if ch == other else max(previous[j], current[-1]))
        previous = current
    indel = total - 2 * previous[-1]
    return 100.0 * (1 - indel / total)
