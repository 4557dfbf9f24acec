"""Reading what models and people say: coordinate replies, span choices, referring expressions,
and phrase matching with disambiguation (no screen needed)."""

from __future__ import annotations

import pytest

from agent_s.desktop.base import WindowInfo
from agent_s.grounding.matching import Match, choose, text_similarity
from agent_s.grounding.model import convention_for_model
from agent_s.grounding.query import normalize, parse_query, tokens
from agent_s.grounding.replies import ReplySaysNotFound, parse_location, parse_span_choice
from agent_s.grounding.types import Box, GroundingReplyError

# -- coordinate replies ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "kind", "values", "unit"),
    [
        ("click(start_box='(512,384)')", "point", (512, 384), False),
        (
            "Thought: the button.\nAction: click(start_box='<|box_start|>(100,200)<|box_end|>')",
            "point",
            (100, 200),
            False,
        ),
        ("click(start_box='(10,20,30,40)')", "box", (10, 20, 30, 40), False),
        ("click(point='<point>44 55</point>')", "point", (44, 55), False),
        ("drag(start_box='(1,2)', end_box='(3,4)')", "point", (1, 2), False),
        ("<point>400 300</point>", "point", (400, 300), False),
        ("<bbox>10 20 30 40</bbox>", "box", (10, 20, 30, 40), False),
        ("The element is at [10, 20, 30, 40].", "box", (10, 20, 30, 40), False),
        ("(0.5, 0.25)", "point", (0.5, 0.25), True),
        ("[0.1, 0.2, 0.3, 0.4]", "box", (0.1, 0.2, 0.3, 0.4), True),
        ("(12.5, 30.25)", "point", (12.5, 30.25), False),
        ('{"x": 5, "y": 7}', "point", (5, 7), False),
        ('```json\n{"coordinate": [640, 400]}\n```', "point", (640, 400), False),
        ("512 384", "point", (512, 384), False),
        ("(1, 1)", "point", (1, 1), False),  # integers are pixels or grid cells, not fractions
    ],
)
def test_every_reply_format_is_read(reply: str, kind: str, values: tuple, unit: bool) -> None:
    location = parse_location(reply)
    assert (location.kind, location.values, location.unit) == (kind, values, unit)


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("", "empty"),
        ("I would click the save button", "unparseable"),
        ("(100, 200) or maybe (300, 400)", "several locations"),
        ("(-5, 10)", "out of bounds"),
        ("[30, 40, 10, 20]", "bad box"),
        ("click(start_box='somewhere')", "unparseable"),
        ('{"coordinate": [1, 2, 3]}', "unparseable"),
    ],
)
def test_bad_replies_are_refused_with_a_reason(reply: str, reason: str) -> None:
    with pytest.raises(GroundingReplyError) as err:
        parse_location(reply)
    assert err.value.reason == reason
    assert err.value.reply == reply


def test_a_not_found_reply_is_not_a_point() -> None:
    with pytest.raises(ReplySaysNotFound):
        parse_location("The element is not found on this screen.")
    # Coordinates win over hedging words around them.
    assert parse_location("Cannot find it exactly, but (10, 20)").values == (10, 20)


def test_span_choices_are_checked_never_defaulted() -> None:
    assert parse_span_choice('{"start": 2, "end": 5}', 6) == (2, 5)
    assert parse_span_choice('Answer: {"start": null, "end": null}', 6) is None
    for bad in (
        '{"start": 5, "end": 2}',
        '{"start": 0, "end": 6}',
        '{"start": "a", "end": 1}',
        "start 1 end 2",
        '{"start": 1}',
        '{"start": true, "end": 1}',
    ):
        with pytest.raises(GroundingReplyError):
            parse_span_choice(bad, 6)


@pytest.mark.parametrize(
    ("model", "convention"),
    [
        ("ByteDance-Seed/UI-TARS-1.5-7B", "smart_resize"),
        ("ui-tars-1.5-7b", "smart_resize"),
        ("Qwen/Qwen2.5-VL-7B-Instruct", "smart_resize"),
        ("HelloKKMe/GTA1-7B", "smart_resize"),
        ("bytedance-research/UI-TARS-72B-DPO", "grid1000"),
        ("doubao-1.5-ui-tars", "grid1000"),
        ("seed-1.6-vision", "grid1000"),
        ("gpt-4o", "pixels"),
        ("claude-sonnet-4-5", "pixels"),
    ],
)
def test_the_frame_comes_from_the_model_family(model: str, convention: str) -> None:
    assert convention_for_model(model) == convention


# -- referring expressions ----------------------------------------------------------------


def test_expressions_are_read_into_phrase_role_and_hints() -> None:
    q = parse_query("the second OK button in the Save dialog")
    assert (q.phrase, q.role, q.ordinal, q.context, q.container) == (
        ("ok",),
        "button",
        2,
        ("save",),
        "dialog",
    )
    assert parse_query('the "Log in" link').phrases == (("log", "in"),)
    assert parse_query("Sign in button").phrase == ("sign", "in")  # "in" stays in a label
    assert parse_query("the Menu button").phrase == ("menu",)  # the last role word is the role
    assert parse_query("the Edit menu").role == "menu"
    assert parse_query("the text field labelled Name").phrase == ("name",)
    assert parse_query("the text field labelled Name").role == "field"
    q = parse_query("bottom Cancel button")
    assert q.phrase == ("cancel",)
    assert q.positions == {"bottom"}
    assert parse_query("the Cancel button on the left").positions == {"left"}
    assert parse_query("the last Delete link").ordinal == -1
    assert parse_query("the Top button").phrase == ("top",)  # a label made of a hint word
    with pytest.raises(ValueError, match="empty"):
        parse_query("   ")


def test_numbers_and_symbols_survive_normalisation() -> None:
    assert tokens("Total: 3.14 + 1,024 <- = %") == ("total", "3.14", "+", "1,024", "<-", "=", "%")
    assert normalize("(Save)") == "save"
    assert normalize("...") == "..."
    assert parse_query("the + key").phrase == ("+",)
    assert parse_query("the 42 in the results").phrase == ("42",)


@pytest.mark.parametrize(
    ("phrase", "words", "matches"),
    [
        ("Save As", "Save As...", True),  # punctuation
        ("save as", "SAVE AS", True),  # case
        ("Save As", "SaveAs", True),  # joined by OCR
        ("Calculator", "Iculator", True),  # a clipped first letter
        ("Help", "HeIp", True),  # l read as I
        ("Open File", "0pen File", True),  # O read as 0
        ("Preferences", "Preferenc3s", True),
        ("OK", "OK", True),
        ("OK", "0K", False),  # two characters: no room for error
        ("C", "c", True),
        ("=", "-", False),
        ("42", "4Z", False),  # numbers are never fuzzy-matched to words
        ("3.14", "3.15", False),
        ("123456", "123457", False),
        ("1,024", "1024", True),
        ("Help", "Hello", False),
        ("Save", "Saved", False),
    ],
)
def test_phrase_similarity_tolerates_ocr_but_not_other_words(
    phrase: str, words: str, matches: bool
) -> None:
    assert (text_similarity(tokens(phrase), tokens(words)) >= 0.8) is matches


# -- choosing among matches ----------------------------------------------------------------


def _match(x: int, y: int, score: float = 1.0, **kw: object) -> Match:
    return Match(text="OK", score=score, box=Box(x, y, 40, 20), **kw)  # type: ignore[arg-type]


def test_ordinals_and_positions_pick_in_reading_order() -> None:
    grid = [_match(300, 100), _match(100, 100), _match(100, 300), _match(300, 300)]
    assert choose(parse_query("the first OK"), grid).match is grid[1]
    assert choose(parse_query("the second OK"), grid).match is grid[0]
    assert choose(parse_query("the last OK"), grid).match is grid[3]
    assert choose(parse_query("the bottom left OK"), grid).match is grid[2]
    assert choose(parse_query("the OK at the top right"), grid).match is grid[0]
    assert choose(parse_query("the fifth OK"), grid) is None  # never a made-up fifth


def test_better_matches_win_and_equal_ones_are_reported() -> None:
    a, b = _match(100, 100, 0.83), _match(300, 300, 1.0)
    choice = choose(parse_query("OK"), [a, b])
    assert choice.match is b
    assert choice.contenders == 1
    c, d = _match(300, 100), _match(100, 100)
    choice = choose(parse_query("OK"), [c, d])
    assert choice.match is d
    assert choice.contenders == 2


def test_role_words_and_dialogs_disambiguate() -> None:
    label = _match(100, 100, isolated=False, role="label", role_agrees=False)
    button = _match(100, 300, isolated=True, role="push button", role_agrees=True)
    assert choose(parse_query("the OK button"), [label, button]).match is button
    main = WindowInfo(1, "Editor", "Mousepad", 10, 0, 0, 1280, 800)
    dialog = WindowInfo(2, "Save As", "Mousepad", 10, 400, 300, 400, 200, active=True)
    behind, front = _match(50, 50, window=main), _match(500, 400, window=dialog)
    windows = [dialog, main]  # front-most first
    assert choose(parse_query("OK in the dialog"), [behind, front], windows).match is front
    assert choose(parse_query("OK in the Editor window"), [behind, front], windows).match is behind


def test_kind_words_inside_a_label_and_capitalised_fillers_are_label_words() -> None:
    # "Flow Box" is a list row's name: "box" is a kind word, but not the kind said last
    assert ("flow", "box") in parse_query("the Flow Box cell").phrases
    assert parse_query("the Email input field").phrase == ("email",)
    # a filler word written with a capital is the label ("Entry" is a row of gtk3-demo)
    assert parse_query("the Entry cell").phrase == ("entry",)
    assert parse_query("the Entry cell").role == "cell"
    assert parse_query("the text field").label_free  # lower case: still a kind only


def test_the_letter_case_written_tells_equal_labels_apart() -> None:
    tab = Match(text="Page 1", score=1.0, box=Box(500, 10, 120, 40), isolated=True)
    others = [
        Match(text="page 1", score=1.0, box=Box(x, 600, 60, 20), isolated=True)
        for x in (40, 640, 1040)
    ]
    choice = choose(parse_query("Page 1"), [*others, tab])
    assert choice.match is tab
    assert not choice.ambiguous
    assert any("case" in r for r in choice.reasons)
    # written in lower case: the three that read so are still tied
    assert choose(parse_query("page 1"), [*others, tab]).ambiguous
    # a letter OCR misread is no other label: the two Apply buttons stay tied
    apply = [
        Match(text=t, score=1.0, box=Box(x, 300, 60, 20)) for t, x in (("Apply", 0), ("AppIy", 400))
    ]
    assert choose(parse_query("the Apply button"), apply).ambiguous
    # all-capital labels say nothing about case ("OK" and "Ok" are not told apart this way)
    assert choose(parse_query("OK"), [_match(100, 100), _match(300, 300)]).ambiguous


def test_a_cell_is_not_the_same_text_inside_a_button() -> None:
    combo = Match(text="Andrea", score=1.0, box=Box(400, 240, 140, 30), role_agrees=False)
    cell = Match(text="Andrea", score=1.0, box=Box(1170, 88, 70, 20))
    assert choose(parse_query("the Andrea cell"), [combo, cell]).match is cell
    assert choose(parse_query("Andrea"), [combo, cell]).ambiguous  # nothing tells them apart
