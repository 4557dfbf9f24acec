"""The desktop's programs get a locale the machine has (agent_s.desktop.locales)."""

from __future__ import annotations

import subprocess

from agent_s.desktop import locales

KNOWN = frozenset({"C", "C.utf8", "POSIX", "de_DE.utf8"})


def test_names_of_one_locale_compare_equal() -> None:
    assert locales.normalise("en_US.UTF-8") == locales.normalise("en_US.utf8") == "en_US.utf8"
    assert locales.normalise("de_DE.UTF-8@euro") == "de_DE.utf8@euro"
    assert locales.normalise("POSIX") == "POSIX"


def test_a_missing_locale_is_dropped_and_c_utf8_given() -> None:
    env = {"LANG": "en_US.UTF-8", "LC_ALL": "en_US.UTF-8", "LC_TIME": "de_DE.UTF-8", "X": "1"}
    assert locales.session_locale(env, KNOWN) == ["LC_ALL", "LANG"]
    assert env == {"LANG": "C.UTF-8", "LC_TIME": "de_DE.UTF-8", "X": "1"}


def test_a_locale_the_machine_has_is_kept() -> None:
    for value in ("de_DE.UTF-8", "de_DE.utf8", "C", "POSIX"):
        env = {"LANG": value}
        assert locales.session_locale(env, KNOWN) == []
        assert env == {"LANG": value}
    env = {"LC_CTYPE": "de_DE.UTF-8"}  # a character set is named: no LANG added
    locales.session_locale(env, KNOWN)
    assert env == {"LC_CTYPE": "de_DE.UTF-8"}


def test_no_locale_at_all_becomes_utf8() -> None:
    env: dict[str, str] = {"LANGUAGE": "de"}
    locales.session_locale(env, KNOWN)
    assert env == {"LANGUAGE": "de", "LANG": "C.UTF-8"}


def test_unknown_listing_changes_nothing() -> None:
    env = {"LANG": "xx_YY.UTF-8"}
    assert locales.session_locale(env, frozenset()) == []
    assert env == {"LANG": "xx_YY.UTF-8"}


def test_this_machines_listing_is_read_and_c_utf8_works() -> None:
    known = locales.available()
    assert "C" in known or "POSIX" in known
    env = {"LANG": "en_ZZ.UTF-8", "PATH": "/usr/bin:/bin"}
    locales.session_locale(env, known)
    assert env["LANG"] != "en_ZZ.UTF-8"
    # the chosen locale loads: Python's own setlocale in a child with that environment
    out = subprocess.run(
        ["python3", "-c", "import locale; print(locale.setlocale(locale.LC_ALL, ''))"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() in ("C.UTF-8", "C")
