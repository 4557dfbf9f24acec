"""OSWorld metric functions by name: ``metric(result, expected, **options) -> float``.

    METRICS["compare_table"](result_path, expected_path, rules=[...])

``infeasible`` is not a function of the desktop: scoring decides it from the agent's last
action (see ``agent_s.bench.scoring``). Names not in ``METRICS`` make a task "needs a metric
we do not have" in ``agent-s bench check``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agent_s.bench.metrics.apps import (
    check_config_status,
    check_thunderbird_prefs,
    is_expected_active_tab,
    is_expected_tabs,
    is_extension_installed,
)
from agent_s.bench.metrics.documents import compare_docx_files, compare_docx_tables, compare_pdfs
from agent_s.bench.metrics.general import (
    check_direct_json_object,
    check_include_exclude,
    check_json,
    check_json_settings,
    check_list,
    compare_text_file,
    diff_text_file,
    exact_match,
    file_contains,
    is_expected_url_pattern_match,
    is_in_list,
    literal_match,
    match_in_list,
)
from agent_s.bench.metrics.images import compare_images
from agent_s.bench.metrics.sheets import compare_csv, compare_table
from agent_s.bench.metrics.slides import compare_pptx_files

Metric = Callable[..., float]

METRICS: dict[str, Metric] = {
    "check_config_status": check_config_status,
    "check_direct_json_object": check_direct_json_object,
    "check_include_exclude": check_include_exclude,
    "check_json": check_json,
    "check_json_settings": check_json_settings,
    "check_list": check_list,
    "check_thunderbird_prefs": check_thunderbird_prefs,
    "compare_csv": compare_csv,
    "compare_docx_files": compare_docx_files,
    "compare_docx_tables": compare_docx_tables,
    "compare_images": compare_images,
    "compare_pdfs": compare_pdfs,
    "compare_pptx_files": compare_pptx_files,
    "compare_table": compare_table,
    "compare_text_file": compare_text_file,
    "diff_text_file": diff_text_file,
    "exact_match": exact_match,
    "file_contains": file_contains,
    "is_expected_active_tab": is_expected_active_tab,
    "is_expected_tabs": is_expected_tabs,
    "is_expected_url_pattern_match": is_expected_url_pattern_match,
    "is_extension_installed": is_extension_installed,
    "is_in_list": is_in_list,
    "literal_match": literal_match,
    "match_in_list": match_in_list,
}
INFEASIBLE = "infeasible"


def known_metric(name: str) -> bool:
    return name == INFEASIBLE or name in METRICS


def call_metric(name: str, result: Any, expected: Any, options: dict[str, Any]) -> float:
    """Call a metric as OSWorld does: with ``expected`` only when the task has one."""
    metric = METRICS[name]
    if expected is None:
        return float(metric(result, **options))
    return float(metric(result, expected, **options))


__all__ = ["INFEASIBLE", "METRICS", "Metric", "call_metric", "known_metric"]
