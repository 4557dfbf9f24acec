"""OSWorld metric functions on fixture files made here (text, JSON, CSV, xlsx)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from openpyxl import Workbook
from openpyxl.chart import BarChart, Reference
from openpyxl.styles import Font, PatternFill
from openpyxl.worksheet.datavalidation import DataValidation

from agent_s.bench.metrics import METRICS, call_metric, known_metric
from agent_s.bench.metrics.general import (
    check_direct_json_object,
    check_include_exclude,
    check_json,
    check_json_settings,
    check_list,
    compare_text_file,
    exact_match,
    indel_ratio,
    is_expected_url_pattern_match,
    literal_match,
)
from agent_s.bench.metrics.sheets import compare_csv, compare_table
from agent_s.bench.metrics.table import match_value_to_rule, read_cell_value


def _write(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_check_include_exclude() -> None:
    rules = {"include": ["43 132"], "exclude": ["error"]}
    assert check_include_exclude("rows 43 132\n", rules) == 1.0
    assert check_include_exclude("43 132 error", rules) == 0.0
    assert check_include_exclude("43 13", rules) == 0.0
    assert check_include_exclude(None, rules) == 0.0


def test_exact_match_counts_the_newline() -> None:
    assert exact_match("true\n", {"expected": "true\n"}) == 1.0
    assert exact_match("true", {"expected": "true\n"}) == 0.0


def test_literal_match_types() -> None:
    assert literal_match("Abc", "abc", ignore_case=True) == 1.0
    assert literal_match("Abc", "abc") == 0.0
    assert literal_match(["a", "B"], ["a", "b"], type="list", ignore_case=True) == 1.0
    assert literal_match(["a"], ["a", "b"], type="list") == 0.0


def test_check_direct_json_object_default_and_text() -> None:
    rules = {"expected": {"a": 1, "b": "x"}}
    assert check_direct_json_object({"a": 1, "b": "x", "c": 3}, rules) == 1.0
    assert check_direct_json_object({"a": 2, "b": "x"}, rules) == 0.0
    assert check_direct_json_object("{'a': 1, 'b': 'x'}", rules) == 1.0  # single quotes too
    assert check_direct_json_object("not json", rules) == 0.0
    assert check_direct_json_object(None, rules) == 0.0


def test_check_direct_json_object_expect_in_result() -> None:
    rules = {"expect_in_result": True, "expected": {"tags": ["x", "y"], "name": "ell"}}
    assert check_direct_json_object({"tags": ["z", "y"], "name": "hello"}, rules) == 1.0
    assert check_direct_json_object({"tags": ["z"], "name": "hello"}, rules) == 0.0
    assert check_direct_json_object({"tags": ["x"], "name": "nope"}, rules) == 0.0
    assert (
        check_direct_json_object({"n": 1}, {"expect_in_result": True, "expected": {"n": 1}}) == 0.0
    )


def test_compare_text_file_options(tmp_path: Path) -> None:
    a = _write(tmp_path / "a.txt", "Buy  milk\n\n")
    b = _write(tmp_path / "b.txt", "buy milk")
    assert compare_text_file(a, b) == 0.0
    assert compare_text_file(a, b, ignore_blanks=True) == 0.0
    assert compare_text_file(a, b, ignore_blanks=True, ignore_case=True) == 1.0
    assert compare_text_file(str(tmp_path / "missing"), b) == 0.0
    assert compare_text_file(None, b) == 0.0


def test_check_list_expect_and_unexpect(tmp_path: Path) -> None:
    out = _write(tmp_path / "w.out", "0x1 org.gnome.Nautilus OSWorld\n0x2 xterm.XTerm ~\n")
    assert check_list(out, {"expect": [r"Nautilus.*OSWorld", r"XTerm"]}) == 1.0
    assert check_list(out, {"expect": [r"Firefox"]}) == 0.0
    assert check_list(out, {"unexpect": [r".+"]}) == 0.0
    empty = _write(tmp_path / "diff.out", "")
    assert check_list(empty, {"unexpect": [r".+"]}) == 1.0
    assert check_list(None, {"unexpect": [r".+"]}) == 0.0


def test_check_json_settings(tmp_path: Path) -> None:
    path = _write(tmp_path / "s.json", json.dumps({"editor.wordWrapColumn": 50, "x": [1]}))
    assert check_json_settings(path, {"expected": {"editor.wordWrapColumn": 50}}) == 1.0
    assert check_json_settings(path, {"expected": {"editor.wordWrapColumn": 40}}) == 0.0
    assert check_json_settings(path, {"expected": {"missing": 1}}) == 0.0
    broken = _write(tmp_path / "b.json", "{not json")
    assert check_json_settings(broken, {"expected": {}}) == 0.0


def test_check_json_key_paths(tmp_path: Path) -> None:
    path = _write(tmp_path / "c.json", json.dumps({"a": {"b": [1, 5]}}))
    assert check_json(path, {"expect": [{"key": ["a", "b", 1], "method": "eq", "ref": 5}]}) == 1.0
    assert check_json(path, {"expect": [{"key": ["a", "c"], "method": "eq", "ref": 5}]}) == 0.0
    assert check_json(path, {"unexpect": [{"key": ["a", "b", 0], "method": "eq", "ref": 1}]}) == 0.0


def test_is_expected_url_pattern_match() -> None:
    rules = {"expected": ["/manchester/", r"reservation#/vehicles"]}
    url = "https://www.example.com/manchester/reservation#/vehicles"
    assert is_expected_url_pattern_match(url, rules) == 1.0
    assert is_expected_url_pattern_match({"url": url}, rules) == 1.0
    assert is_expected_url_pattern_match("https://www.example.com/leeds/", rules) == 0.0
    assert is_expected_url_pattern_match(None, rules) == 0.0


def test_indel_ratio_matches_rapidfuzz_definition() -> None:
    assert indel_ratio("", "") == 100.0
    assert indel_ratio("abc", "abc") == 100.0
    assert indel_ratio("abc", "xyz") == 0.0
    # "kitten" / "sitting": LCS 4 ("ittn"), indel = 13 - 8 = 5 -> 100 * (1 - 5/13)
    assert indel_ratio("kitten", "sitting") == pytest.approx(100 * 8 / 13)


def test_compare_csv(tmp_path: Path) -> None:
    a = _write(tmp_path / "a.csv", "x,y\n1,2 \n")
    b = _write(tmp_path / "b.csv", "X,Y\n1,2\n")
    assert compare_csv(a, b) == 0.0
    assert compare_csv(a, b, strict=False, ignore_case=True) == 1.0
    assert compare_csv(a, [str(tmp_path / "nope.csv"), b], strict=False, ignore_case=True) == 1.0
    assert compare_csv(None, b) == 0.0


def test_match_value_to_rule_methods() -> None:
    assert match_value_to_rule("Total 42", {"method": "re.I", "ref": "total"})
    assert match_value_to_rule(3, {"method": "le", "ref": 3})
    assert not match_value_to_rule(3, {"method": "gt", "ref": 3})
    assert match_value_to_rule("1.05", {"method": "approx:0.1", "ref": 1.0})
    assert not match_value_to_rule("x", {"method": "approx:0.1", "ref": 1.0})
    assert match_value_to_rule(5, {"method": "range.te", "ref": [4, 5]})
    assert not match_value_to_rule(4, {"method": "range.te", "ref": [4, 5]})
    assert match_value_to_rule('"b,a"', {"method": "str_set_eq", "ref": ["a", "b"]})
    assert not match_value_to_rule("b,a", {"method": "str_list_eq", "ref": ["a", "b"]})
    with pytest.raises(NotImplementedError):
        match_value_to_rule(1, {"method": "nope", "ref": 1})


# -- compare_table ---------------------------------------------------------------------------------


def _book(
    path: Path,
    rows: list[list[object]],
    *,
    title: str = "Sheet1",
    bold_a1: bool = False,
    fill: str | None = None,
    freeze: str | None = None,
    zoom: int | None = None,
    chart: bool = False,
    validation: bool = False,
    merge: str | None = None,
) -> str:
    wb = Workbook()
    ws = wb.active
    ws.title = title
    for row in rows:
        ws.append(row)
    if bold_a1:
        ws["A1"].font = Font(bold=True)
    if fill:
        ws["B2"].fill = PatternFill("solid", fgColor=fill)
    if freeze:
        ws.freeze_panes = freeze
    if zoom:
        ws.sheet_view.zoomScale = zoom
    if chart:
        bar = BarChart()
        bar.add_data(Reference(ws, min_col=2, min_row=1, max_row=len(rows)), titles_from_data=True)
        ws.add_chart(bar, "E2")
    if validation:
        dv = DataValidation(type="list", formula1='"Yes,No"')
        dv.add("C2:C10")
        ws.add_data_validation(dv)
    if merge:
        ws.merge_cells(merge)
    wb.create_sheet("Notes")
    wb.save(path)
    return str(path)


ROWS = [["name", "value"], ["a", 1.23456], ["b", 2.0]]


def test_compare_table_sheet_data_and_precision(tmp_path: Path) -> None:
    result = _book(tmp_path / "r.xlsx", ROWS)
    same = _book(tmp_path / "e.xlsx", [["name", "value"], ["a", 1.234561], ["b", 2.0]])
    other = _book(tmp_path / "o.xlsx", [["name", "value"], ["a", 9.0], ["b", 2.0]])
    rule = {"type": "sheet_data", "sheet_idx0": 0, "sheet_idx1": "EI0"}
    assert compare_table(result, same, rules=[rule]) == 1.0
    assert compare_table(result, other, rules=[rule]) == 0.0
    assert compare_table(result, same, rules=[{**rule, "precision": 6}]) == 0.0
    assert compare_table(str(tmp_path / "missing.xlsx"), same, rules=[rule]) == 0.0
    assert compare_table(result, same, rules=[{**rule, "sheet_idx1": "ENNotes"}]) == 0.0


def test_compare_table_sheet_name_and_index_forms(tmp_path: Path) -> None:
    result = _book(tmp_path / "r.xlsx", ROWS)
    renamed = _book(tmp_path / "e.xlsx", ROWS, title="Data")
    assert compare_table(result, result, rules=[{"type": "sheet_name"}]) == 1.0
    assert compare_table(result, renamed, rules=[{"type": "sheet_name"}]) == 0.0
    rule = {"type": "sheet_data", "sheet_idx0": "RNSheet1", "sheet_idx1": "ENData"}
    assert compare_table(result, renamed, rules=[rule]) == 1.0
    with pytest.raises(ValueError, match="sheet index"):
        compare_table(result, renamed, rules=[{**rule, "sheet_idx1": "XX0"}])


def test_compare_table_check_cell_value_style_merge(tmp_path: Path) -> None:
    path = _book(tmp_path / "r.xlsx", ROWS, bold_a1=True, fill="FFFF0000", merge="D1:E1")
    assert read_cell_value(path, "Sheet1", "B2") == 1.23456
    assert read_cell_value(path, "Sheet1", "A1") == "name"
    assert read_cell_value(path, "Sheet1", "Z9") is None
    cell = {
        "type": "check_cell",
        "sheet_idx": 0,
        "coordinate": "B2",
        "props": {
            "value": {"method": "approx:0.001", "ref": 1.2345},
            "bgcolor": {"method": "eq", "ref": "FFFF0000"},
        },
    }
    assert compare_table(path, rules=[cell]) == 1.0
    bold = {
        "type": "check_cell",
        "sheet_idx": 0,
        "coordinate": "A1",
        "props": {"font_bold": {"method": "eq", "ref": True}},
    }
    assert compare_table(path, rules=[bold]) == 1.0
    merged = {
        "type": "check_cell",
        "sheet_idx": 0,
        "coordinate": "E1",
        "props": {"merge": {"method": "eq", "ref": True}},
    }
    assert compare_table(path, rules=[merged]) == 1.0
    wrong = {**cell, "props": {"value": {"method": "eq", "ref": 5.0}}}
    assert compare_table(path, rules=[wrong]) == 0.0


def test_compare_table_sheet_print_reads_csv_exports(tmp_path: Path) -> None:
    result = _book(tmp_path / "r.xlsx", ROWS)
    expected = _book(tmp_path / "e.xlsx", ROWS)
    _write(tmp_path / "r-Sheet1.csv", "name,value\nA,1\n\n")
    _write(tmp_path / "e-Sheet1.csv", "name,value\na,1\n")
    rule = {"type": "sheet_print", "sheet_idx0": "RNSheet1", "sheet_idx1": "ENSheet1"}
    assert compare_table(result, expected, rules=[rule]) == 0.0
    assert compare_table(result, expected, rules=[{**rule, "ignore_case": True}]) == 1.0


def test_compare_table_sheet_fuzzy(tmp_path: Path) -> None:
    result = _book(tmp_path / "r.xlsx", [["Hello World "], ["x-1"]])
    expected = _book(tmp_path / "e.xlsx", [["hello world"], ["x1"]])
    fuzzy = {
        "type": "sheet_fuzzy",
        "sheet_idx0": "RNSheet1",
        "sheet_idx1": "ENSheet1",
        "rules": [
            {"range": ["A1:A1"], "type": "exact_match", "ignore_case": True, "trim_trailings": " "},
            {"range": ["A2:A2"], "type": "exact_match", "ignore_chars": "-"},
        ],
    }
    assert compare_table(result, expected, rules=[fuzzy]) == 1.0
    strict = {**fuzzy, "rules": [{"range": ["A1:A1"], "type": "exact_match"}]}
    assert compare_table(result, expected, rules=[strict]) == 0.0
    near = {**fuzzy, "rules": [{"range": ["A1"], "type": "fuzzy_match", "threshold": 78}]}
    assert compare_table(result, expected, rules=[near]) == 1.0  # 100 * (1 - 5/23) = 78.3
    too_far = {**near, "rules": [{**near["rules"][0], "threshold": 79}]}
    assert compare_table(result, expected, rules=[too_far]) == 0.0


def test_compare_table_freeze_zoom_validation_chart_style(tmp_path: Path) -> None:
    result = _book(
        tmp_path / "r.xlsx", ROWS, freeze="B2", zoom=150, chart=True, validation=True, bold_a1=True
    )
    plain = _book(tmp_path / "p.xlsx", ROWS)
    same = _book(tmp_path / "s.xlsx", ROWS, freeze="B2", chart=True, bold_a1=True)
    freeze = {"type": "freeze", "sheet_idx0": "RNSheet1", "sheet_idx1": "ENSheet1"}
    assert compare_table(result, same, rules=[freeze]) == 1.0
    assert compare_table(result, plain, rules=[freeze]) == 0.0
    zoom = {"type": "zoom", "sheet_idx": 0, "method": "ge", "ref": 140}
    assert compare_table(result, rules=[zoom]) == 1.0
    assert compare_table(plain, rules=[zoom]) == 0.0
    dv = {
        "type": "data_validation",
        "sheet_idx": 0,
        "dv_props": [
            {
                "type": {"method": "eq", "ref": "list"},
                "formula1": {"method": "eq", "ref": '"Yes,No"'},
            }
        ],
    }
    assert compare_table(result, rules=[dv]) == 1.0
    assert compare_table(plain, rules=[dv]) == 0.0
    chart = {
        "type": "chart",
        "sheet_idx0": "RNSheet1",
        "sheet_idx1": "ENSheet1",
        "chart_props": ["type"],
    }
    assert compare_table(result, same, rules=[chart]) == 1.0
    assert compare_table(result, plain, rules=[chart]) == 0.0
    style = {
        "type": "style",
        "sheet_idx0": "RNSheet1",
        "sheet_idx1": "ENSheet1",
        "props": ["font_bold"],
    }
    assert compare_table(result, same, rules=[style]) == 1.0
    assert compare_table(result, plain, rules=[style]) == 0.0
    with pytest.raises(NotImplementedError):
        compare_table(result, same, rules=[{"type": "nonsense"}])


def test_registry_and_call_convention(tmp_path: Path) -> None:
    assert known_metric("infeasible")
    assert known_metric("compare_table")
    assert not known_metric("no_such_metric")
    # called without ``expected`` when the task has none (OSWorld's convention)
    path = _book(tmp_path / "r.xlsx", ROWS, zoom=150)
    zoom = {"type": "zoom", "sheet_idx": 0, "method": "eq", "ref": 150}
    assert call_metric("compare_table", path, None, {"rules": [zoom]}) == 1.0
    assert set(METRICS) >= {
        "compare_table",
        "check_include_exclude",
        "check_direct_json_object",
        "exact_match",
        "is_expected_url_pattern_match",
        "check_list",
        "check_json_settings",
        "compare_text_file",
        "compare_csv",
    }
