"""OSWorld metric functions by name: ``metric(result, expected, **options) -> float``.

    METRICS["compare_table"](result_path, expected_path, rules=[...])

``infeasible`` is not a function of the desktop: scoring decides it from the agent's last
action (see ``agent_s.bench.scoring``). Names not in ``METRICS`` make a task "needs a metric
we do not have" in ``agent-s bench check``. Each metric gives OSWorld's verdict on the same
inputs, and raises where OSWorld's raises (the task is then left unscored, not scored 0).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agent_s.bench.metrics.apps import (
    check_config_status,
    check_font_size,
    check_history_deleted,
    check_thunderbird_filter,
    check_thunderbird_folder,
    check_thunderbird_prefs,
    is_added_to_steam_cart,
    is_cookie_deleted,
    is_expected_active_tab,
    is_expected_active_tab_approximate,
    is_expected_bookmarks,
    is_expected_installed_extensions,
    is_expected_search_query,
    is_expected_tabs,
    is_extension_installed,
    is_shortcut_on_desktop,
)
from agent_s.bench.metrics.documents import (
    compare_archive,
    compare_docx_files,
    compare_docx_tables,
    compare_epub,
    compare_htmls,
    compare_pdfs,
)
from agent_s.bench.metrics.general import (
    check_accessibility_tree,
    check_csv,
    check_direct_json_object,
    check_include_exclude,
    check_json,
    check_json_settings,
    check_line_number,
    check_list,
    compare_python_pure_text,
    compare_text_file,
    diff_text_file,
    exact_match,
    file_contains,
    fuzzy_place_math,
    is_expected_url_pattern_match,
    is_in_list,
    literal_match,
    match_in_list,
    run_sqlite3,
)
from agent_s.bench.metrics.gimp import (
    check_brightness_decrease_and_structure_sim,
    check_contrast_increase_and_structure_sim,
    check_file_exists_and_structure_sim,
    check_green_background,
    check_image_mirror,
    check_palette_and_structure_sim,
    check_saturation_increase_and_structure_sim,
    check_structure_sim,
    check_structure_sim_resized,
    check_structure_sim_with_threshold,
)
from agent_s.bench.metrics.images import (
    check_image_file_size,
    check_image_size,
    check_textbox_on_leftside,
    check_triangle_position,
    compare_image_list,
    compare_image_text,
    compare_images,
)
from agent_s.bench.metrics.impress import (
    check_auto_saving_time,
    check_image_stretch_and_center,
    check_left_panel,
    check_page_number_colors,
    check_presenter_console_disable,
    check_slide_orientation_Portrait,
    check_strikethrough,
    check_transition,
    evaluate_presentation_fill_to_rgb_distance,
)
from agent_s.bench.metrics.media import check_mp3_meta, compare_audios, compare_videos
from agent_s.bench.metrics.pdf import check_pdf_pages, compare_pdf_images
from agent_s.bench.metrics.python_suite import check_python_file_by_test_suite
from agent_s.bench.metrics.sheets import (
    compare_conference_city_in_order,
    compare_csv,
    compare_table,
)
from agent_s.bench.metrics.slides import compare_pptx_files
from agent_s.bench.metrics.system import (
    check_gnome_favorite_apps,
    check_moved_jpgs,
    is_in_vm_clickboard,
    is_utc_0,
)
from agent_s.bench.metrics.vlc import (
    check_global_key_play_pause,
    check_one_instance_when_started_from_file,
    check_play_and_exit,
    check_qt_bgcone,
    check_qt_max_volume,
    check_qt_minimal_view,
    check_qt_slider_colours,
    is_vlc_fullscreen,
    is_vlc_playing,
    is_vlc_recordings_folder,
)
from agent_s.bench.metrics.vscode import (
    check_json_keybindings,
    compare_config,
    compare_result_files,
    compare_zip_files,
)
from agent_s.bench.metrics.writer import (
    check_highlighted_words,
    check_italic_font_size_14,
    check_tabstops,
    compare_docx_files_and_ignore_new_lines,
    compare_docx_images,
    compare_font_names,
    compare_line_spacing,
    compare_references,
    compare_subscript_contains,
    compare_unique_train_records,
    contains_page_break,
    evaluate_colored_words_in_tables,
    evaluate_strike_through_last_paragraph,
    find_default_font,
    has_page_numbers_in_footers,
    is_first_line_centered,
)

Metric = Callable[..., float]

METRICS: dict[str, Metric] = {
    "check_accessibility_tree": check_accessibility_tree,
    "check_auto_saving_time": check_auto_saving_time,
    "check_brightness_decrease_and_structure_sim": check_brightness_decrease_and_structure_sim,
    "check_config_status": check_config_status,
    "check_contrast_increase_and_structure_sim": check_contrast_increase_and_structure_sim,
    "check_csv": check_csv,
    "check_direct_json_object": check_direct_json_object,
    "check_file_exists_and_structure_sim": check_file_exists_and_structure_sim,
    "check_font_size": check_font_size,
    "check_global_key_play_pause": check_global_key_play_pause,
    "check_gnome_favorite_apps": check_gnome_favorite_apps,
    "check_green_background": check_green_background,
    "check_highlighted_words": check_highlighted_words,
    "check_history_deleted": check_history_deleted,
    "check_image_file_size": check_image_file_size,
    "check_image_mirror": check_image_mirror,
    "check_image_size": check_image_size,
    "check_image_stretch_and_center": check_image_stretch_and_center,
    "check_include_exclude": check_include_exclude,
    "check_italic_font_size_14": check_italic_font_size_14,
    "check_json": check_json,
    "check_json_keybindings": check_json_keybindings,
    "check_json_settings": check_json_settings,
    "check_left_panel": check_left_panel,
    "check_line_number": check_line_number,
    "check_list": check_list,
    "check_moved_jpgs": check_moved_jpgs,
    "check_mp3_meta": check_mp3_meta,
    "check_one_instance_when_started_from_file": check_one_instance_when_started_from_file,
    "check_page_number_colors": check_page_number_colors,
    "check_palette_and_structure_sim": check_palette_and_structure_sim,
    "check_pdf_pages": check_pdf_pages,
    "check_play_and_exit": check_play_and_exit,
    "check_presenter_console_disable": check_presenter_console_disable,
    "check_python_file_by_test_suite": check_python_file_by_test_suite,
    "check_qt_bgcone": check_qt_bgcone,
    "check_qt_max_volume": check_qt_max_volume,
    "check_qt_minimal_view": check_qt_minimal_view,
    "check_qt_slider_colours": check_qt_slider_colours,
    "check_saturation_increase_and_structure_sim": check_saturation_increase_and_structure_sim,
    "check_slide_orientation_Portrait": check_slide_orientation_Portrait,
    "check_strikethrough": check_strikethrough,
    "check_structure_sim": check_structure_sim,
    "check_structure_sim_resized": check_structure_sim_resized,
    "check_structure_sim_with_threshold": check_structure_sim_with_threshold,
    "check_tabstops": check_tabstops,
    "check_textbox_on_leftside": check_textbox_on_leftside,
    "check_thunderbird_filter": check_thunderbird_filter,
    "check_thunderbird_folder": check_thunderbird_folder,
    "check_thunderbird_prefs": check_thunderbird_prefs,
    "check_transition": check_transition,
    "check_triangle_position": check_triangle_position,
    "compare_archive": compare_archive,
    "compare_audios": compare_audios,
    "compare_conference_city_in_order": compare_conference_city_in_order,
    "compare_config": compare_config,
    "compare_csv": compare_csv,
    "compare_docx_files": compare_docx_files,
    "compare_docx_files_and_ignore_new_lines": compare_docx_files_and_ignore_new_lines,
    "compare_docx_images": compare_docx_images,
    "compare_docx_tables": compare_docx_tables,
    "compare_epub": compare_epub,
    "compare_font_names": compare_font_names,
    "compare_htmls": compare_htmls,
    "compare_image_list": compare_image_list,
    "compare_image_text": compare_image_text,
    "compare_images": compare_images,
    "compare_line_spacing": compare_line_spacing,
    "compare_pdf_images": compare_pdf_images,
    "compare_pdfs": compare_pdfs,
    "compare_pptx_files": compare_pptx_files,
    "compare_python_pure_text": compare_python_pure_text,
    "compare_references": compare_references,
    "compare_result_files": compare_result_files,
    "compare_subscript_contains": compare_subscript_contains,
    "compare_table": compare_table,
    "compare_text_file": compare_text_file,
    "compare_unique_train_records": compare_unique_train_records,
    "compare_videos": compare_videos,
    "compare_zip_files": compare_zip_files,
    "contains_page_break": contains_page_break,
    "diff_text_file": diff_text_file,
    "evaluate_colored_words_in_tables": evaluate_colored_words_in_tables,
    "evaluate_presentation_fill_to_rgb_distance": evaluate_presentation_fill_to_rgb_distance,
    "evaluate_strike_through_last_paragraph": evaluate_strike_through_last_paragraph,
    "exact_match": exact_match,
    "file_contains": file_contains,
    "find_default_font": find_default_font,
    "fuzzy_place_math": fuzzy_place_math,
    "has_page_numbers_in_footers": has_page_numbers_in_footers,
    "is_added_to_steam_cart": is_added_to_steam_cart,
    "is_cookie_deleted": is_cookie_deleted,
    "is_expected_active_tab": is_expected_active_tab,
    "is_expected_active_tab_approximate": is_expected_active_tab_approximate,
    "is_expected_bookmarks": is_expected_bookmarks,
    "is_expected_installed_extensions": is_expected_installed_extensions,
    "is_expected_search_query": is_expected_search_query,
    "is_expected_tabs": is_expected_tabs,
    "is_expected_url_pattern_match": is_expected_url_pattern_match,
    "is_extension_installed": is_extension_installed,
    "is_first_line_centered": is_first_line_centered,
    "is_in_list": is_in_list,
    "is_in_vm_clickboard": is_in_vm_clickboard,
    "is_shortcut_on_desktop": is_shortcut_on_desktop,
    "is_utc_0": is_utc_0,
    "is_vlc_fullscreen": is_vlc_fullscreen,
    "is_vlc_playing": is_vlc_playing,
    "is_vlc_recordings_folder": is_vlc_recordings_folder,
    "literal_match": literal_match,
    "match_in_list": match_in_list,
    "run_sqlite3": run_sqlite3,
}
INFEASIBLE = "infeasible"


def known_metric(name: str) -> bool:
    return name == INFEASIBLE or name in METRICS


def call_metric(
    name: str,
    result: Any,
    expected: Any,
    options: dict[str, Any],
    *,
    pass_expected: bool | None = None,
) -> float:
    """Call a metric as OSWorld does: with ``expected`` only when the task has one
    (``pass_expected``; by default, when ``expected`` is not ``None``)."""
    metric = METRICS[name]
    if not (expected is not None if pass_expected is None else pass_expected):
        return float(metric(result, **options))
    return float(metric(result, expected, **options))


__all__ = ["INFEASIBLE", "METRICS", "Metric", "call_metric", "known_metric"]
