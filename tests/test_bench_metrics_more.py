"""OSWorld's media, e-book, web-page, Thunderbird, test-suite and accessibility-tree metrics
on fixture files made here. Expected figures were computed by OSWorld's own code on the same
fixtures (librosa + fastdtw for audio, imagehash for video, scikit-image for colours)."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import cv2
import docx
import numpy as np
import pytest
import soundfile
from docx.shared import RGBColor
from mutagen.easyid3 import EasyID3
from mutagen.id3 import ID3, ID3NoHeaderError

from agent_s.bench.metrics import METRICS, known_metric
from agent_s.bench.metrics import python_suite as suite_module
from agent_s.bench.metrics.apps import check_thunderbird_folder
from agent_s.bench.metrics.colour import colour_difference
from agent_s.bench.metrics.documents import compare_epub, compare_htmls
from agent_s.bench.metrics.general import check_accessibility_tree
from agent_s.bench.metrics.media import check_mp3_meta, compare_audios, compare_videos, fastdtw
from agent_s.bench.metrics.python_suite import check_python_file_by_test_suite
from agent_s.bench.metrics.vlc import check_play_and_exit, is_vlc_playing
from agent_s.bench.metrics.writer import evaluate_colored_words_in_tables

NEW = (
    "compare_audios",
    "compare_videos",
    "check_mp3_meta",
    "is_vlc_playing",
    "check_play_and_exit",
    "compare_epub",
    "compare_htmls",
    "evaluate_colored_words_in_tables",
    "check_thunderbird_folder",
    "check_python_file_by_test_suite",
    "check_accessibility_tree",
)


def test_new_metrics_are_known() -> None:
    for name in NEW:
        assert known_metric(name)
        assert callable(METRICS[name])


# -- audio -------------------------------------------------------------------------------------


def _tone(rate: int) -> np.ndarray:
    t = np.arange(int(rate * 2.0)) / rate
    return 0.4 * np.sin(2 * np.pi * 440 * t) + 0.2 * np.sin(2 * np.pi * 660 * t * (1 + 0.1 * t))


@pytest.fixture
def sounds(tmp_path: Path) -> dict[str, str]:
    paths = {name: str(tmp_path / name) for name in ("a.wav", "stereo.wav", "noise.wav")}
    soundfile.write(paths["a.wav"], _tone(22050).astype(np.float32), 22050)
    tone = _tone(44100)
    stereo = np.stack([tone, tone], axis=1).astype(np.float32)
    soundfile.write(paths["stereo.wav"], stereo, 44100)
    noise = np.random.default_rng(0).normal(0, 0.3, size=int(22050 * 1.5)).astype(np.float32)
    soundfile.write(paths["noise.wav"], noise, 22050)
    paths["a.mp3"] = str(tmp_path / "a.mp3")
    soundfile.write(paths["a.mp3"], stereo, 44100, format="MP3")
    paths["empty.wav"] = str(tmp_path / "empty.wav")
    Path(paths["empty.wav"]).write_bytes(b"")
    return paths


def test_compare_audios_gives_osworlds_similarity(sounds: dict[str, str]) -> None:
    assert compare_audios(sounds["a.wav"], sounds["a.wav"]) == pytest.approx(1.0)
    # the same sound at 44.1 kHz in stereo: resampled and averaged as librosa does
    assert compare_audios(sounds["a.wav"], sounds["stereo.wav"]) == pytest.approx(
        0.9997931395176796, rel=1e-6
    )
    assert compare_audios(sounds["a.wav"], sounds["noise.wav"]) == pytest.approx(
        0.3248406667304011, rel=1e-6
    )
    # an MP3 of the same sound is close, not equal (the encoder's loss)
    assert 0.95 < compare_audios(sounds["a.wav"], sounds["a.mp3"]) < 0.999


def test_compare_audios_unreadable_files(sounds: dict[str, str], tmp_path: Path) -> None:
    missing = str(tmp_path / "missing.mp3")
    assert compare_audios(sounds["a.wav"], sounds["empty.wav"]) == 0.0
    assert compare_audios(missing, sounds["a.wav"]) == 0.0
    # OSWorld: two files that are both empty or unreadable are "perfectly similar"
    assert compare_audios(sounds["empty.wav"], missing) == 1.0
    assert compare_audios(None, sounds["a.wav"]) == 0.0


def test_fastdtw_prefers_osworlds_path_on_ties() -> None:
    x = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    distance, path = fastdtw(x, x)
    assert distance == pytest.approx(0.0, abs=1e-12)
    assert path == [(0, 0), (1, 1), (2, 2)]
    long = np.random.default_rng(2).normal(size=(40, 3))
    distance, path = fastdtw(long, long[::2])
    # the fastdtw package's figures on the same input (cosine distance, radius 1)
    assert distance == pytest.approx(17.086957288659583, rel=1e-9)
    assert len(path) == 41
    assert path[:6] == [(0, 0), (1, 1), (2, 1), (3, 1), (4, 2), (5, 2)]
    assert path[-1] == (39, 19)
    assert all(a <= c and b <= d for (a, b), (c, d) in zip(path, path[1:], strict=False))


# -- video -------------------------------------------------------------------------------------


def _video(path: Path, frames: list[np.ndarray]) -> str:
    height, width = frames[0].shape[:2]
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), 10, (width, height))
    assert writer.isOpened()
    for frame in frames:
        writer.write(frame)
    writer.release()
    return str(path)


@pytest.fixture
def videos(tmp_path: Path) -> dict[str, str]:
    frames = []
    for i in range(30):
        frame = np.zeros((120, 160, 3), np.uint8)
        cv2.rectangle(frame, (10 + 3 * i, 20), (60 + 3 * i, 80), (0, 200, 255), -1)
        cv2.circle(frame, (120, 30 + 2 * i), 15, (255, 80, 0), -1)
        cv2.putText(frame, "A", (20, 110), cv2.FONT_HERSHEY_SIMPLEX, 1, (255, 255, 255), 2)
        frames.append(frame)
    return {
        "video": _video(tmp_path / "v.mp4", frames),
        "copy": _video(tmp_path / "copy.mp4", frames),
        "flipped": _video(tmp_path / "flipped.mp4", [cv2.flip(f, -1) for f in frames]),
        "short": _video(tmp_path / "short.mp4", frames[:20]),
        "missing": str(tmp_path / "missing.mp4"),
    }


def test_compare_videos(videos: dict[str, str]) -> None:
    assert compare_videos(videos["video"], videos["copy"]) == 1.0
    assert compare_videos(videos["video"], videos["flipped"]) == 0.0
    # a shorter video differs, unless only its length's worth of frames is checked
    assert compare_videos(videos["video"], videos["short"]) == 0.0
    assert compare_videos(videos["video"], videos["short"], max_frames_to_check=20) == 1.0
    assert compare_videos(videos["video"], videos["missing"]) == 0.0
    assert compare_videos(videos["missing"], videos["missing"] + "2") == 1.0  # as OSWorld


# -- mp3 tags ----------------------------------------------------------------------------------


def test_check_mp3_meta(tmp_path: Path) -> None:
    song = tmp_path / "Cheng Xiang - Missing You.mp3"
    soundfile.write(str(song), np.zeros(4410, np.float32), 44100, format="MP3")
    rules = {
        "title": {"method": "eq", "ref": "Missing You"},
        "artist": {"method": "eq", "ref": "Cheng Xiang"},
    }
    with pytest.raises(ID3NoHeaderError):  # no tag at all: OSWorld's EasyID3 raises
        check_mp3_meta(str(song), rules)
    ID3().save(str(song))
    assert check_mp3_meta(str(song), rules) == 0.0  # blank tags
    tags = EasyID3(str(song))
    tags["title"] = "Missing You"
    tags["artist"] = "Cheng Xiang"
    tags.save()
    assert check_mp3_meta(str(song), rules) == 1.0
    tags["artist"] = ["Cheng Xiang", "Guest"]
    tags.save()
    assert check_mp3_meta(str(song), rules) == 0.0  # "Cheng Xiang,Guest"
    assert check_mp3_meta(str(song), {"artist": {"method": "re", "ref": "^Cheng"}}) == 1.0
    assert check_mp3_meta(None, rules) == 0.0


# -- VLC ---------------------------------------------------------------------------------------


def _status(path: Path, state: str, infos: dict[str, str]) -> str:
    meta = "".join(f"<info name='{k}'>{v}</info>" for k, v in infos.items())
    path.write_text(
        f"<?xml version='1.0' encoding='utf-8'?><root><state>{state}</state><information>"
        f"<category name='meta'>{meta}</category></information></root>",
        encoding="utf-8",
    )
    return str(path)


def test_is_vlc_playing(tmp_path: Path) -> None:
    name = "Rick Astley - Never Gonna Give You Up (Official Music Video).mp4"
    by_name = {"type": "file_name", "file_name": name}
    status = tmp_path / "status.xml"
    assert is_vlc_playing(_status(status, "playing", {"filename": name}), by_name) == 1.0
    assert is_vlc_playing(_status(status, "playing", {"uri": f"/home/user/{name}"}), by_name) == 1.0
    assert is_vlc_playing(_status(status, "paused", {"filename": name}), by_name) == 0.0
    assert is_vlc_playing(_status(status, "playing", {"filename": "other.mp4"}), by_name) == 0.0
    assert is_vlc_playing(_status(status, "playing", {}), by_name) == 0.0
    url = "https://devstreaming-cdn.apple.com/videos/streaming/examples/bipbop/master.m3u8"
    by_url = {"type": "url", "url": url}
    assert is_vlc_playing(_status(status, "playing", {"url": url}), by_url) == 1.0
    assert is_vlc_playing(_status(status, "playing", {"title": "master.m3u8"}), by_url) == 1.0
    assert (
        is_vlc_playing(_status(status, "playing", {"url": "https://x.org/a.m3u8"}), by_url) == 0.0
    )
    status.write_text("<root><volume>256</volume></root>", encoding="utf-8")
    with pytest.raises(ValueError, match="state"):
        is_vlc_playing(str(status), by_name)


def test_check_play_and_exit(tmp_path: Path) -> None:
    vlcrc = tmp_path / "vlcrc"
    rule = {"expected_play_and_exit": 0}
    vlcrc.write_text("[core]\n# Play and exit (boolean)\n#play-and-exit=0\n", encoding="utf-8")
    assert check_play_and_exit(str(vlcrc), rule) == 1.0
    vlcrc.write_text("[core]\n#play-and-exit=0\nplay-and-exit=1\n", encoding="utf-8")
    assert check_play_and_exit(str(vlcrc), rule) == 0.0
    vlcrc.write_text("[core]\nvolume=100\n", encoding="utf-8")  # VLC's default: 0
    assert check_play_and_exit(str(vlcrc), rule) == 1.0
    assert check_play_and_exit(str(vlcrc), {"expected_play_and_exit": 1}) == 0.0


# -- e-books and web pages ---------------------------------------------------------------------


def _epub(path: Path, chapter: str, identifier: str, folder: str = "") -> str:
    with zipfile.ZipFile(path, "w") as book:
        book.writestr("mimetype", "application/epub+zip")
        book.writestr(
            "toc.ncx",
            "<ncx>\n<navMap>\n<navPoint id='n1' playOrder='1'>\n<text>One</text>\n"
            "</navMap>\n</ncx>\n",
        )
        book.writestr(
            "content.opf",
            f"<package>\n<dc:title>Pass Through</dc:title>\n"
            f"<dc:identifier id='uid'>{identifier}</dc:identifier>\n</package>\n",
        )
        book.writestr(f"{folder}index_split_000.html", chapter)
    return str(path)


def test_compare_epub(tmp_path: Path) -> None:
    chapter = "<html>\n<body>\n<p>One</p>\n<p>Two</p>\n</body>\n</html>"
    gold = _epub(tmp_path / "gold.epub", chapter, "uuid-1")
    # another identifier, other line breaks, other navPoints: the same book
    same = _epub(tmp_path / "same.epub", chapter.replace("\n", "\r\n"), "uuid-2")
    assert compare_epub(same, gold) == 1.0
    # one of the chapter's four pretty-printed lines (<html><body>, <p>One</p>, <p>Two</p>,
    # </body></html>) differs: difflib's 2 * 3 / 8
    other = _epub(tmp_path / "other.epub", chapter.replace("Two", "Three"), "uuid-1")
    assert compare_epub(other, gold) == pytest.approx(6 / 8)
    assert compare_epub(None, gold) == 0.0
    not_zip = tmp_path / "text.epub"
    not_zip.write_text("not an epub", encoding="utf-8")
    assert compare_epub(str(not_zip), gold) == 1.0  # OSWorld: no parts, nothing differs
    nested = _epub(tmp_path / "nested.epub", chapter, "uuid-1", folder="OEBPS/")
    with pytest.raises(FileNotFoundError):
        compare_epub(nested, gold)
    with zipfile.ZipFile(tmp_path / "bare.epub", "w") as bare:
        bare.writestr("index.html", chapter)
    with pytest.raises(KeyError):
        compare_epub(str(tmp_path / "bare.epub"), gold)


def test_compare_htmls(tmp_path: Path) -> None:
    def page(name: str, body: str) -> str:
        path = tmp_path / name
        path.write_text(f"<html><body><table>{body}</table></body></html>", encoding="utf-8")
        return str(path)

    gold = page("gold.html", '<tr><td sdnum="1033;0;0.00" align="right">1.50</td></tr>')
    renumbered = page("mine.html", '<tr><td sdnum="1033;0;#,##0.00" align="right">1.50</td></tr>')
    assert compare_htmls(renumbered, gold) == 0.0
    assert compare_htmls(renumbered, gold, ignore_sdnum=True) == 1.0
    realigned = page("align.html", '<tr><td sdnum="1033;0;0.00" align="left">1.50</td></tr>')
    assert compare_htmls(realigned, gold, ignore_sdnum=True) == 0.0
    other_text = page("text.html", '<tr><td sdnum="1033;0;0.00" align="right">1.5</td></tr>')
    assert compare_htmls(other_text, gold) == 0.0
    assert compare_htmls(gold, gold) == 1.0


# -- Writer: coloured words --------------------------------------------------------------------


def _word_table(
    path: Path, colours: dict[str, tuple[int, int, int] | None], title: str = "Dolch Primer"
) -> str:
    document = docx.Document()
    document.add_paragraph(title)
    table = document.add_table(rows=len(colours), cols=1)
    for row, (word, colour) in zip(table.rows, colours.items(), strict=True):
        run = row.cells[0].paragraphs[0].add_run(word)
        if colour is not None:
            run.font.color.rgb = RGBColor(*colour)
    document.save(str(path))
    return str(path)


def test_evaluate_colored_words_in_tables(tmp_path: Path) -> None:
    red, blue = (255, 0, 0), (0, 0, 255)
    gold = _word_table(tmp_path / "gold.docx", {"all": red, "be": blue, "eat": red})
    right = _word_table(tmp_path / "right.docx", {"all": red, "be": blue, "eat": red})
    assert evaluate_colored_words_in_tables(right, gold) == 1.0
    near = _word_table(tmp_path / "near.docx", {"all": (250, 5, 5), "be": blue, "eat": red})
    assert colour_difference((250, 5, 5), red) < 3.5
    assert evaluate_colored_words_in_tables(near, gold) == 1.0
    dark = _word_table(tmp_path / "dark.docx", {"all": (200, 0, 0), "be": blue, "eat": red})
    assert colour_difference((200, 0, 0), red) == pytest.approx(11.82953867937177)
    assert evaluate_colored_words_in_tables(dark, gold) == 0.0
    swapped = _word_table(tmp_path / "swap.docx", {"all": blue, "be": blue, "eat": red})
    assert evaluate_colored_words_in_tables(swapped, gold) == 0.0
    assert evaluate_colored_words_in_tables(swapped, gold, threshold=1000) == 1.0
    # OSWorld's text check (compare_docx_files) reads the body's paragraphs, not the tables
    other_words = _word_table(tmp_path / "words.docx", {"all": red, "by": blue, "eat": red})
    assert evaluate_colored_words_in_tables(other_words, gold) == 1.0
    retitled = _word_table(tmp_path / "title.docx", {"all": red, "be": blue, "eat": red}, "Mine")
    assert evaluate_colored_words_in_tables(retitled, gold) == 0.0
    uncoloured = _word_table(tmp_path / "plain.docx", {"all": None, "be": blue, "eat": red})
    with pytest.raises(ValueError, match="no RGB"):
        evaluate_colored_words_in_tables(uncoloured, gold)
    assert evaluate_colored_words_in_tables(None, gold) == 0.0


# -- Thunderbird folders -----------------------------------------------------------------------

_MBOX = (
    "From - Mon Jan 01 00:00:00 2024\nX-Mozilla-Status: 0001\nSubject: {subject}\n"
    "MIME-Version: 1.0\n\nbody\n"
)


def test_check_thunderbird_folder(tmp_path: Path) -> None:
    options = {"remove_deleted": True, "remove_duplicate": True}
    seen = tmp_path / "have_seen"
    seen.write_text(_MBOX.format(subject="Invoice"), encoding="utf-8")
    gold_seen = tmp_path / "have_seen_gold"
    gold_seen.write_text(_MBOX.format(subject="Receipt"), encoding="utf-8")
    empty = tmp_path / "Bills"
    empty.write_text("", encoding="utf-8")
    gold_empty = tmp_path / "Bills_gold"
    gold_empty.write_text("\n", encoding="utf-8")
    # OSWorld's code keeps only the blank pieces between "FROM - " markers: any two
    # Thunderbird folders with mail read alike, an empty folder differs from one with mail
    assert check_thunderbird_folder(str(seen), str(gold_seen), **options) == 1.0
    assert (
        check_thunderbird_folder([str(seen), str(empty)], [str(gold_seen), str(gold_empty)]) == 1.0
    )
    assert (
        check_thunderbird_folder([str(seen), str(empty)], [str(gold_seen), str(gold_seen)]) == 0.0
    )
    assert check_thunderbird_folder(str(empty), str(gold_seen)) == 0.0
    assert check_thunderbird_folder([None, str(empty)], [str(gold_seen), str(gold_empty)]) == 0.0
    with pytest.raises(FileNotFoundError):
        check_thunderbird_folder(str(seen), str(tmp_path / "no_gold"))


# -- Python test suites ------------------------------------------------------------------------


def _suite(folder: Path, test_body: str) -> str:
    folder.mkdir()
    (folder / "snake.py").write_text(
        "def eats(head, food):\n    return head == food\n", encoding="utf-8"
    )
    (folder / "test_suite.py").write_text(test_body, encoding="utf-8")
    return str(folder / "test_suite.py")


def test_check_python_file_by_test_suite_scores_the_test(tmp_path: Path) -> None:
    passing = _suite(
        tmp_path / "pass",
        "import os\nfrom snake import eats\n\n"
        "def test():\n    open('left_behind.txt', 'w').close()\n"
        "    return eats((1, 2), (1, 2)) and os.path.exists('snake.py')\n",
    )
    actual = str(Path(passing).parent / "snake.py")
    assert check_python_file_by_test_suite(actual, passing) == 1.0
    # it ran on a copy: nothing it wrote is left beside the task's files
    assert not (Path(passing).parent / "left_behind.txt").exists()
    failing = _suite(
        tmp_path / "fail", "from snake import eats\n\ndef test():\n    return eats(1, 2)\n"
    )
    assert check_python_file_by_test_suite(actual, failing) == 0.0
    half = _suite(tmp_path / "half", "def check():\n    return 0.5\n\ndef test():\n    return 7\n")
    assert check_python_file_by_test_suite(actual, half, test_function_name="check") == 0.5
    assert check_python_file_by_test_suite(actual, half) == 1.0  # clamped to [0, 1]
    raising = _suite(tmp_path / "raise", "def test():\n    raise RuntimeError('crash')\n")
    assert check_python_file_by_test_suite(actual, raising) == 0.0
    broken = _suite(tmp_path / "broken", "import no_such_module_here\n")
    assert check_python_file_by_test_suite(actual, broken) == 0.0
    assert check_python_file_by_test_suite(actual, str(tmp_path / "none.py")) == 0.0
    assert check_python_file_by_test_suite(actual, None) == 0.0


def test_check_python_file_by_test_suite_runs_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the test's process is not ours: its exit or its endless loop leaves the task unscored
    quits = _suite(tmp_path / "quits", "import os\n\ndef test():\n    os._exit(3)\n")
    with pytest.raises(RuntimeError, match="ended with 3"):
        check_python_file_by_test_suite(None, quits)
    before = os.getcwd()
    monkeypatch.setattr(suite_module, "TIMEOUT_SECONDS", 3.0)
    hangs = _suite(tmp_path / "hangs", "import time\n\ndef test():\n    time.sleep(600)\n")
    with pytest.raises(TimeoutError):
        check_python_file_by_test_suite(None, hangs)
    assert os.getcwd() == before


# -- accessibility tree ------------------------------------------------------------------------

_ATTR = "https://accessibility.ubuntu.example.org/ns/attributes"
_ST = "https://accessibility.ubuntu.example.org/ns/state"


def _tree(recipients: list[str], tab: str = "About Profiles") -> str:
    pills = "".join(
        f'<section attr:class="address-pill" name="{r}"><label attr:class="pill-label" '
        f'name="{r}">{r}</label></section>'
        for r in recipients
    )
    return (
        f'<desktop-frame xmlns:attr="{_ATTR}" xmlns:st="{_ST}"><application name="Thunderbird">'
        f'<frame name="Write: Reminder"><tool-bar attr:id="MsgHeadersToolbar">'
        f'<label name="To">To</label>{pills}</tool-bar>'
        f'<page-tab-list attr:id="tabmail-tabs"><page-tab name="{tab}" st:selected="true"/>'
        f'</page-tab-list><entry name="Email address">anonym-x2024@outlook.com</entry>'
        f'<password-text name="Password"/></frame></application></desktop-frame>'
    )


def test_check_accessibility_tree_with_osworlds_selectors() -> None:
    pill = (
        'tool-bar[attr|id=MsgHeadersToolbar] label[name=To]~[attr|class="address-pill"]>'
        'label[attr|class="pill-label"][name*="{}"]'
    )
    rules = [{"selectors": [pill.format(a)]} for a in ("fox@x.edu", "iron@x.edu")]
    assert check_accessibility_tree(_tree(["fox@x.edu", "iron@x.edu"]), rules) == 1.0
    assert check_accessibility_tree(_tree(["fox@x.edu"]), rules) == 0.0
    tab = [
        {
            "selectors": [
                'application[name=Thunderbird] page-tab-list[attr|id="tabmail-tabs"]>'
                'page-tab[name="About Profiles"]'
            ]
        }
    ]
    assert check_accessibility_tree(_tree([]), tab) == 1.0
    assert check_accessibility_tree(_tree([], tab="Inbox"), tab) == 0.0


def test_check_accessibility_tree_with_xpath_and_text() -> None:
    account = [
        {
            "xpath": "//application[@name='Thunderbird']//*[contains(text(), "
            "'anonym-x2024@outlook.com') or contains(@name, 'anonym-x2024@outlook.com')]"
        },
        {"xpath": "//application[@name='Thunderbird']//*[contains(@name, 'Password')]"},
    ]
    assert check_accessibility_tree(_tree([]), account) == 1.0
    assert check_accessibility_tree(_tree([]).replace("anonym-x2024", "someone"), account) == 0.0
    exact = [{"xpath": "//entry", "text": "anonym-x2024@outlook.com", "exact": True}]
    assert check_accessibility_tree(_tree([]), exact) == 1.0
    fuzzy = [{"xpath": "//entry", "text": "anonym-x2024@outlook.org", "exact": False}]
    # rapidfuzz's ratio: 22 characters in common ("...outlook." and the "o" of org/com)
    assert check_accessibility_tree(_tree([]), fuzzy) == pytest.approx(44 / 48)
    with pytest.raises(ValueError, match="xpath or selectors"):
        check_accessibility_tree(_tree([]), [{"text": "x"}])
