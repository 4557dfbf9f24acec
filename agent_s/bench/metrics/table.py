"""Spreadsheet metrics: ``compare_table`` over all of OSWorld's rule types, and ``compare_csv``.

``compare_table(result, expected, rules=[...])`` passes only when every rule passes. Sheets are
named by an int (a result sheet by position) or a string: ``RI<n>`` / ``RN<name>`` a result
sheet by index / name, ``EI<n>`` / ``EN<name>`` an expected one. Rule types: ``sheet_name``,
``sheet_data`` (pandas frames rounded to ``precision``), ``sheet_print`` (the CSV exports
``<book>-<sheet>.csv`` beside the workbook), ``sheet_fuzzy``, ``sparkline``, ``chart``,
``style``, ``freeze``, ``zoom``, ``data_validation``, ``row_props``, ``col_props``,
``filter``, ``pivot_table``, ``check_cell``. Cell values are read from the file's XML as
OSWorld reads them (numbers as float, shared and inline strings, formula text results).

Not reproduced: conditional formats whose condition is a formula expression (OSWorld compiles
them with the ``formulas`` package); ``cellIs`` rules with constant operands are applied, and
the others are skipped, as OSWorld skips formulas it cannot compile.
"""

from __future__ import annotations

import contextlib
import operator
import os
import re
import zipfile
from collections.abc import Callable, Mapping, Sequence
from itertools import dropwhile
from typing import Any
from xml.etree import ElementTree

_NS = {
    "oo": "http://schemas.openxmlformats.org/spreadsheetml/2006/main",
    "r": "http://schemas.openxmlformats.org/officeDocument/2006/relationships",
    "rel": "http://schemas.openxmlformats.org/package/2006/relationships",
    "x14": "http://schemas.microsoft.com/office/spreadsheetml/2009/9/main",
    "xm": "http://schemas.microsoft.com/office/excel/2006/main",
}
_ENCODINGS = ("utf-8", "utf-8-sig", "latin-1")


def _xml(data: bytes) -> ElementTree.Element:
    # The workbook is a file from the task's own desktop, parsed without entity expansion
    # concerns beyond the standard library's defaults (no external entities are fetched).
    return ElementTree.fromstring(data)  # noqa: S314


# -- reading cells and sheets straight from the XML ---------------------------------------------


def _sheet_paths(archive: zipfile.ZipFile) -> dict[str, str]:
    book = _xml(archive.read("xl/workbook.xml"))
    rels = _xml(archive.read("xl/_rels/workbook.xml.rels"))
    targets = {r.get("Id"): r.get("Target", "") for r in rels.findall("rel:Relationship", _NS)}
    paths = {}
    for sheet in book.findall("oo:sheets/oo:sheet", _NS):
        target = targets.get(sheet.get(f"{{{_NS['r']}}}id"), "")
        target = target.lstrip("/")
        paths[sheet.get("name", "")] = target if target.startswith("xl/") else f"xl/{target}"
    return paths


def read_cell_value(xlsx_file: str, sheet_name: str, coordinate: str) -> Any:
    """The stored value of one cell: float for numbers, text for strings, None if empty."""
    try:
        with zipfile.ZipFile(xlsx_file) as archive:
            shared: list[str] = []
            if "xl/sharedStrings.xml" in archive.namelist():
                sst = _xml(archive.read("xl/sharedStrings.xml"))
                shared = [
                    "".join(t.text or "" for t in si.iter(f"{{{_NS['oo']}}}t"))
                    for si in sst.findall("oo:si", _NS)
                ]
            sheet = _xml(archive.read(_sheet_paths(archive)[sheet_name]))
    except (OSError, KeyError, zipfile.BadZipFile, ElementTree.ParseError):
        return None
    cell = next((c for c in sheet.iter(f"{{{_NS['oo']}}}c") if c.get("r") == coordinate), None)
    if cell is None:
        return None
    kind = cell.get("t", "n")
    value = cell.find("oo:v", _NS)
    text = value.text if value is not None else None
    try:
        if kind == "n":
            return float(text) if text is not None else None
        if kind == "s":
            return shared[int(text)] if text is not None else None
        if kind in ("str", "e"):
            return text
        if kind == "inlineStr":
            return "".join(t.text or "" for t in cell.iter(f"{{{_NS['oo']}}}t"))
    except (ValueError, IndexError):
        return None
    return None  # booleans and dates-as-ISO are not read (as in OSWorld)


def load_sparklines(xlsx_file: str, sheet_name: str) -> dict[str, str]:
    try:
        with zipfile.ZipFile(xlsx_file) as archive:
            sheet = _xml(archive.read(_sheet_paths(archive)[sheet_name]))
    except (OSError, KeyError, zipfile.BadZipFile):
        return {}
    found = {}
    for spark in sheet.iter(f"{{{_NS['x14']}}}sparkline"):
        ref = spark.find("xm:sqref", _NS)
        formula = spark.find("xm:f", _NS)
        if ref is not None and formula is not None:
            found[ref.text or ""] = formula.text or ""
    return found


def _read_csv_lines(path: str) -> list[str]:
    for encoding in _ENCODINGS:
        try:
            with open(path, encoding=encoding) as handle:
                return handle.read().splitlines()
        except UnicodeDecodeError:
            continue
    with open(path, encoding="utf-8", errors="replace") as handle:
        return handle.read().splitlines()


# -- sheet selection ----------------------------------------------------------------------------


def _parse_sheet_idx(
    idx: int | str,
    result: Any,
    expected: Any,
    result_names: Sequence[str],
    expected_names: Sequence[str] | None,
) -> tuple[Any, str]:
    if isinstance(idx, int):
        return result, result_names[idx] if 0 <= idx < len(result_names) else ""
    prefix, rest = idx[:2], idx[2:]
    if prefix == "RI":
        with contextlib.suppress(ValueError, IndexError):
            return result, result_names[int(rest)]
        return result, ""
    if prefix == "RN":
        return result, rest
    if prefix == "EI":
        with contextlib.suppress(ValueError, IndexError):
            if expected_names is not None:  # (no expected workbook: no sheet)
                return expected, expected_names[int(rest)]
        return expected, ""
    if prefix == "EN":
        return expected, rest
    raise ValueError(f"unrecognised sheet index {idx!r}")


def _load_sheet(book: Any, name: str) -> Any:
    import openpyxl
    import pandas as pd

    try:
        if isinstance(book, str):
            lines = _read_csv_lines(f"{os.path.splitext(book)[0]}-{name}.csv")
            stripped = (x.strip() for x in reversed(lines))
            return list(dropwhile(lambda line: len(line) == 0, stripped))
        if isinstance(book, pd.ExcelFile):
            return pd.read_excel(book, name)
        if isinstance(book, openpyxl.Workbook):
            return book[name]
    except (OSError, KeyError, ValueError):
        return None
    raise NotImplementedError(f"not a workbook: {type(book).__name__}")


# -- value rules (shared with check_json) --------------------------------------------------------


def match_value_to_rule(value: Any, rule: Mapping[str, Any]) -> bool:
    """``{"method": ..., "ref": ...}``: re[.FLAGS], eq/ne/le/lt/ge/gt, approx:T,
    spreadsheet_range, range.XY (X, Y in e/t: inclusive or not), str_list_eq, str_set_eq."""
    from openpyxl.worksheet.cell_range import MultiCellRange

    method: str = rule["method"]
    ref: Any = rule.get("ref")  # a JSON value whose shape the method decides
    if method.startswith("re"):
        flags = 0
        for name in method.split(".")[1:]:
            flags |= getattr(re, name)
        return re.search(ref, value, flags) is not None
    if method in ("eq", "ne", "le", "lt", "ge", "gt"):
        return bool(getattr(operator, method)(value, ref))
    if method.startswith("approx"):
        threshold = float(method.split(":")[1])
        try:
            return abs(float(value) - ref) <= threshold
        except (TypeError, ValueError):
            return False
    if method == "spreadsheet_range":
        low, high = MultiCellRange(ref[0]), MultiCellRange(ref[1])
        return all(r in value for r in low) and all(r in high for r in value)
    if method.startswith("range."):
        left, right = method[6], method[7]
        return bool(
            getattr(operator, "l" + left)(ref[0], value)
            and getattr(operator, "l" + right)(value, ref[1])
        )
    if method in ("str_list_eq", "str_set_eq"):
        items = value.strip("\"'").split(",")
        if method == "str_list_eq":
            return list(items) == list(ref)
        return set(items) == set(ref)
    raise NotImplementedError(f"unknown rule method {method!r}")


# -- workbook features -------------------------------------------------------------------------


def _cell_style(name: str, cell: Any, diff: Any = None) -> Any:
    from openpyxl.cell.cell import MergedCell

    source = diff if diff is not None else cell
    has_value = cell.value is not None
    if name == "number_format":
        if not (has_value and cell.data_type == "n"):
            return None
        return cell.number_format if diff is None else diff.numFmt.formatCode
    font_props = {
        "font_name": "name",
        "font_family": "family",
        "font_bold": "bold",
        "font_italic": "italic",
        "font_underline": "underline",
        "font_size": "size",
    }
    if name in font_props:
        return getattr(source.font, font_props[name]) if has_value else None
    if name == "font_color":
        return source.font.color.rgb if has_value and source.font.color is not None else None
    if name == "fill_type":
        return getattr(source.fill, "tagname", None)
    if name in ("bgcolor", "fgcolor"):
        try:
            return diff.fill.bgColor.rgb if diff is not None else cell.fill.fgColor.rgb
        except AttributeError:
            return None
    if name == "hyperlink":
        return (cell.hyperlink or "") if has_value else None
    if name == "merge":
        return isinstance(cell, MergedCell)
    raise NotImplementedError(f"unsupported cell style {name!r}")


# conditional formatting's cellIs operators: (cell value, the rule's numbers) -> applies
_CF_OPERATORS: dict[str, Callable[[Any, list[float]], bool]] = {
    "lessThanOrEqual": lambda v, r: v <= r[0],
    "lessThan": lambda v, r: v < r[0],
    "equal": lambda v, r: v == r[0],
    "greaterThanOrEqual": lambda v, r: v >= r[0],
    "notEqual": lambda v, r: v != r[0],
    "greaterThan": lambda v, r: v > r[0],
    "between": lambda v, r: min(r) <= v <= max(r),
    "notBetween": lambda v, r: v < min(r) or v > max(r),
}


def load_xlsx_styles(book: Any, sheet_name: str, path: str, **options: Any) -> dict[str, list[Any]]:
    try:
        sheet = book[sheet_name]
    except KeyError:
        return {}
    props = options.get("props", [])
    styles = {
        cell.coordinate: [_cell_style(p, cell) for p in props]
        for column in sheet.iter_cols()
        for cell in column
    }
    for formatting in sheet.conditional_formatting:
        for rule in formatting.rules:
            if rule.type != "cellIs" or rule.operator not in _CF_OPERATORS:
                continue  # formula expressions: not evaluated (see the module docstring)
            try:
                refs = [float(f) for f in rule.formula]
            except (TypeError, ValueError):
                continue
            test = _CF_OPERATORS[rule.operator]
            for cell_range in formatting.cells:
                for row, col in cell_range.cells:
                    cell = sheet.cell(row=row, column=col)
                    value = read_cell_value(path, sheet_name, cell.coordinate)
                    try:
                        active = value is not None and test(value, refs)
                    except (TypeError, IndexError):
                        active = False
                    if active:
                        styles[cell.coordinate] = [_cell_style(p, cell, rule.dxf) for p in props]
    return styles


def _title(axis_or_chart: Any) -> Any:
    try:
        return axis_or_chart.title.tx.rich.p[0].r[0].t
    except (AttributeError, IndexError, TypeError):
        return None


def load_charts(book: Any, sheet_name: str, **options: Any) -> dict[str, Any]:
    try:
        sheet = book[sheet_name]
    except KeyError:
        return {}
    props = set(options.get("chart_props", []))
    charts = {}
    for chart in sheet._charts:
        series = []
        for item in chart.series:
            refs = []
            for part in (item.val, item.cat):
                ref = getattr(getattr(part, "numRef", None), "f", None)
                ref = ref or getattr(getattr(part, "strRef", None), "f", None)
                refs.append(ref or "")
            series.append(f"{refs[0]},{refs[1]}")
        info: dict[str, Any] = {}
        if "title" in props:
            info["title"] = _title(chart)
        if "legend" in props:
            info["legend"] = chart.legend.position if chart.legend is not None else None
        if "anchor" in props:
            anchor = chart.anchor
            info["anchor"] = [
                anchor.editAs,
                anchor._from.col,
                anchor.to.row,
                anchor.to.col,
                anchor.to.row,
            ]  # OSWorld lists to.row twice
        for prop, attr in (
            ("width", "width"),
            ("height", "height"),
            ("type", "tagname"),
            ("direction", "barDir"),
        ):
            if prop in props:
                info[prop] = getattr(chart, attr, None)
        for prop, axis in (("xtitle", "x_axis"), ("ytitle", "y_axis"), ("ztitle", "z_axis")):
            if prop in props:
                info[prop] = _title(getattr(chart, axis, None))
        charts[";".join(series)] = info
    return charts


def load_pivot_tables(book: Any, sheet_name: str, **options: Any) -> dict[str, Any]:
    from openpyxl.utils import coordinate_to_tuple

    try:
        sheet = book[sheet_name]
    except KeyError:
        return {}
    props = set(options.get("pivot_props", []))
    pivots = {}
    for pivot in sheet._pivots:
        raw = [[(i.h, i.x) for i in f.items if i.x is not None] for f in pivot.pivotFields]
        trimmed = list(dropwhile(lambda row: not row, raw))
        left = len(raw) - len(trimmed)
        selection = list(dropwhile(lambda row: not row, reversed(trimmed)))[::-1]
        right = len(trimmed) - len(selection)
        source = pivot.cache.cacheSource
        first, last = source.worksheetSource.ref.split(":")
        c1, c2 = coordinate_to_tuple(first), coordinate_to_tuple(last)
        key = (
            f"{source.type};{(c1[0], c1[1] + left)}:{(c2[0], c2[1] - right)};"
            f"{source.worksheetSource.sheet}"
        )
        info: dict[str, Any] = {}
        for prop, attr in (
            ("name", "name"),
            ("show_total", "visualTotals"),
            ("show_empty_row", "showEmptyRow"),
            ("show_empty_col", "showEmptyCol"),
            ("show_headers", "showHeaders"),
            ("location", "location"),
        ):
            if prop in props:
                info[prop] = getattr(pivot, attr)
        if "filter" in props or "selection" in props:
            info["selection"] = selection if "ordered" in props else [set(r) for r in selection]
        if "filter" in props:
            info["filter_fields"] = {f.fld for f in pivot.pageFields}
        if "col_fields" in props:
            info["col_fields"] = [f.x - left for f in pivot.colFields]
        if "row_fields" in props:
            info["row_fields"] = [f.x - left for f in pivot.rowFields]
        if "data_fields" in props:
            named = "data_fields_name" in props
            info["data_fields"] = [
                f"{f.fld - left:d};{f.name if named else ''};{f.subtotal};{f.showDataAs}"
                for f in pivot.dataFields
            ]
        pivots[key] = info
    return pivots


def load_rows_or_cols(
    book: Any, sheet_name: str, *, obj: str, **options: Any
) -> dict[str, dict[str, Any]]:
    try:
        sheet = book[sheet_name]
    except KeyError:
        return {}
    props = set(options.get("props", []))
    holder = getattr(sheet, f"{obj}_dimensions")
    return {key: {p: getattr(dims, p) for p in props} for key, dims in holder.items()}


def load_filters(book: Any, sheet_name: str, **_: Any) -> dict[str, Any]:
    try:
        sheet = book[sheet_name]
    except KeyError:
        return {}
    auto = sheet.auto_filter
    columns = []
    for fc in auto.filterColumn:
        column: dict[str, Any] = {
            "col_id": fc.colId,
            "hidden_button": fc.hiddenButton,
            "show_button": fc.showButton,
        }
        if fc.filters is not None:
            column["filters_blank"] = fc.filters.blank
            column["filters"] = set(fc.filters.filter)
        if fc.customFilters is not None:
            column["custom_filters_op"] = fc.customFilters._and
            column["custom_filters"] = {(f.operator, f.val) for f in fc.customFilters.customFilter}
        columns.append(column)
    found: dict[str, Any] = {"ref": auto.ref, "filter_column": sorted(columns, key=_col_id)}
    state = auto.sortState
    if state is not None:
        found["sort_state"] = {
            "sort": state.columnSort,
            "case": state.caseSensitive,
            "method": state.sortMethod,
            "ref": state.ref,
            "condition": [
                {
                    "descending": c.descending,
                    "key": c.sortBy,
                    "ref": c.ref,
                    "custom_list": c.customList,
                    "dxf_id": c.dxfId,
                    "icon": c.iconSet,
                    "iconid": c.iconId,
                }
                for c in state.sortCondition
            ],
        }
    return found


def _col_id(column: Mapping[str, Any]) -> Any:
    return column["col_id"]


def _freeze_key(sheet: Any) -> tuple[Any, ...]:
    pane = sheet.sheet_view.pane
    if pane is None:
        return ("none",)
    state = (pane.state or "").lower()
    xs, ys = int(pane.xSplit or 0), int(pane.ySplit or 0)
    if state in ("frozen", "frozensplit"):
        return ("frozen", xs, ys)
    return ("other", xs, ys, pane.topLeftCell)
