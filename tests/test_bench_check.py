"""``agent-s bench check``: every need of a task (apps, internet, file cache, sudo, getters,
metrics, setup steps, VS Code, a Google account, GNOME) on small task files of our own, met or
not on a described machine; ``--assume``; and the counts on OSWorld's 369 task files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent_s.bench.check import (
    CATEGORIES,
    Machine,
    Need,
    check_tasks,
    command_programs,
    parse_assume,
    task_needs,
)
from agent_s.bench.tasks import Task, load_suite
from agent_s.cli.main import app

OSWORLD = Path(__file__).resolve().parents[1].parent / "shared" / "osworld"
needs_osworld = pytest.mark.skipif(
    not (OSWORLD / "examples").is_dir(),
    reason=f"OSWorld's task files are not at {OSWORLD} (the shared folder beside the repo)",
)
CACHE_URL = "https://huggingface.co/datasets/xlangai/ubuntu_osworld_file_cache/resolve/main/"


def _task(
    config: list[dict[str, Any]] | None = None,
    evaluator: dict[str, Any] | None = None,
    **extra: Any,
) -> Task:
    data = {
        "id": "t1",
        "instruction": extra.pop("instruction", "do it"),
        "config": config or [],
        "evaluator": evaluator or {"func": "exact_match", "result": _rule(), "expected": _rule()},
        **extra,
    }
    return Task.from_json(data, domain="os")


def _rule() -> dict[str, Any]:
    return {"type": "rule", "rules": {"expected": "x"}}


def _everything(name: str) -> str | None:
    return f"/usr/bin/{name}"


def _nothing(name: str) -> str | None:
    return None


SHELL = {"shell": True}  # a task file's shell flag
FULL = Machine(which=_everything, sudo=True)


def _unmet(task: Task, machine: Machine = FULL) -> list[tuple[str, str]]:
    return [(n.category, n.detail) for n in task_needs(task, machine) if not n.met]


def _needs(task: Task, machine: Machine = FULL) -> dict[str, list[Need]]:
    found: dict[str, list[Need]] = {}
    for need in task_needs(task, machine):
        found.setdefault(need.category, []).append(need)
    return found


def _step(kind: str, **parameters: Any) -> dict[str, Any]:
    return {"type": kind, "parameters": parameters}


def test_a_plain_task_needs_nothing_it_lacks() -> None:
    assert _unmet(_task()) == []
    needs = _needs(_task())
    assert [n.detail for n in needs["metric"]] == ["exact_match"]
    assert [n.detail for n in needs["getter"]] == ["rule"]
    assert all(n.met for ns in needs.values() for n in ns)


def test_apps_from_launch_commands_related_apps_and_opened_files() -> None:
    task = _task(
        [
            _step("launch", command=["gimp", "/home/user/a.png"]),
            _step("launch", command="VLC_VERBOSE=-1 vlc --no-audio", **SHELL),
            _step("execute", command=["/bin/bash", "-c", "cd ~ && unzip -q a.zip && rm a.zip"]),
            _step("execute", command="echo hi > log.txt; wmctrl -lx 2>/dev/null | grep x"),
            _step("launch", command=["libreoffice", "--writer", "/home/user/a.docx"]),
            _step("open", path="/home/user/b.pptx"),
            _step("launch", command=["socat", "tcp-listen:9222"]),
            _step("execute", command=["python", "-c", "import pyautogui"]),
            _step("execute", command="./setup.sh", **SHELL),
        ],
        related_apps=["thunderbird"],
    )
    names = [n.detail for n in _needs(task)["app"]]
    assert names == [
        "thunderbird",
        "libreoffice-impress",
        "gimp",
        "vlc",
        "unzip",
        "rm",
        "wmctrl",
        "grep",
        "libreoffice-writer",
    ]
    # the file of a redirection, shell words, our python, socat and the task's script: none
    for word in ("log.txt", "echo", "cd", "python", "socat", "./setup.sh", "setup.sh"):
        assert word not in names
    missing = {"gimp", "wmctrl", "thunderbird"}
    machine = Machine(which=lambda n: None if n in missing else f"/usr/bin/{n}", sudo=True)
    assert sorted(d for c, d in _unmet(task, machine) if c == "app") == sorted(missing)
    assert {c for c, _ in _unmet(task, Machine(which=_nothing))} == {"app"}


def test_command_programs_reads_shell_text_and_argv() -> None:
    assert command_programs(["tar", "-xzf", "a.tgz"], shell_text=False) == ["tar"]
    snippet = 'TEXT=$(timeout 10 gsettings get a b 2>/dev/null | head -1); [ -n "$TEXT" ]'
    assert command_programs(snippet, shell_text=True) == ["gsettings", "head"]
    sudo = "echo {CLIENT_PASSWORD} | sudo -S apt-get install -y jq && jq . a > temp"
    assert command_programs(sudo, shell_text=True) == ["apt-get", "jq"]
    assert command_programs(["bash", "-c", "export A=1\nxsel -bc"], shell_text=False) == ["xsel"]


def test_internet_at_run_time_not_downloads() -> None:
    web = _task(
        [
            _step("chrome_open_tabs", urls_to_open=["https://www.delta.com/", "file:///x.html"]),
            _step("chrome_open_tabs", urls_to_open=["http://localhost:8000/a"]),
        ]
    )
    assert _unmet(web) == [("internet", "www.delta.com")]
    proxied = _task(proxy=True)
    assert _unmet(proxied) == [("internet", "proxy")]
    packages = _task(
        [
            _step("execute", command="pip install PyMuPDF", **SHELL),
            _step("execute", command=["pip", "install", "/home/user/x-1.0-py3-none-any.whl"]),
            _step("execute", command=["code", "--install-extension", "ms-python.python"]),
        ]
    )
    (internet,) = [d for c, d in _unmet(packages) if c == "internet"]
    assert internet == "pip install, extension store"
    local = _task([_step("execute", command=["code", "--install-extension", "a/eval-0.1.vsix"])])
    assert [c for c, _ in _unmet(local)] == []
    getter = _task(
        evaluator={
            "func": "compare_pdfs",
            "result": {"type": "pdf_from_url", "path": "https://lilianweng.github.io/p/"},
            "expected": {"type": "vm_file", "path": "/home/user/a.pdf", "dest": "a.pdf"},
        }
    )
    assert ("internet", "lilianweng.github.io") in _unmet(getter)
    # a download from the file cache is not internet at run time
    cached = _task([_step("download", files=[{"url": CACHE_URL + "a.txt", "path": "a.txt"}])])
    assert [c for c, _ in _unmet(cached)] == ["cache"]


def test_internet_named_by_the_instruction() -> None:
    def unmet(instruction: str, **extra: Any) -> list[tuple[str, str]]:
        return _unmet(_task(instruction=instruction, **extra))

    assert unmet("Clone https://github.com/xlang-ai/x to /home/user.") == [
        ("internet", "instruction: github.com")
    ]
    assert unmet("Please install Spotify on my system.") == [
        ("internet", "instruction: install software")
    ]
    assert unmet("Install the extension in the Desktop directory into Chrome.") == []
    assert unmet("Install an extension from a local VSIX file /home/user/t.vsix.") == []
    assert unmet("Open file:///home/user/a.html and http://localhost:8000/.") == []
    infeasible = {"func": "infeasible"}
    assert unmet("Install Photoshop from https://adobe.com", evaluator=infeasible) == []


def test_file_cache_met_when_the_files_are_in_the_folder(tmp_path: Path) -> None:
    task = _task(
        [_step("download", files=[{"url": CACHE_URL + "os/t1/a.txt", "path": "/home/user/a"}])],
        evaluator={
            "func": "compare_text_file",
            "result": {"type": "vm_file", "path": "/home/user/a", "dest": "a"},
            "expected": {"type": "cloud_file", "path": CACHE_URL + "os/t1/gold.txt", "dest": "g"},
        },
    )
    assert _unmet(task) == [("cache", "2 of 2 file(s) missing: a.txt, gold.txt")]
    (tmp_path / "os" / "t1").mkdir(parents=True)
    (tmp_path / "os" / "t1" / "a.txt").write_text("a")
    half = Machine(file_cache=tmp_path, which=_everything, sudo=True)
    assert _unmet(task, half) == [("cache", "1 of 2 file(s) missing: gold.txt")]
    (tmp_path / "gold.txt").write_text("g")
    assert _unmet(task, half) == []
    (need,) = _needs(task, half)["cache"]
    assert need.met
    assert (need.how, need.detail) == ("in the file cache", "2 file(s)")


def test_sudo_met_only_with_rights_and_a_harness_that_runs_it() -> None:
    task = _task([_step("execute", command="echo {CLIENT_PASSWORD} | sudo -S mkdir /x")])
    assert _unmet(task) == []
    no_rights = Machine(which=_everything, sudo=False)
    assert _unmet(task, no_rights) == [("sudo", "sudo, {CLIENT_PASSWORD}")]
    assert _unmet(task, Machine(which=_everything, sudo=False, assume=frozenset({"sudo"}))) == []


def test_getters_metrics_and_setup_steps_we_lack() -> None:
    task = _task(
        [_step("no_such_step", history=[]), _step("sleep", seconds=1)],
        evaluator={
            "func": ["no_such_metric", "exact_match"],
            "result": [{"type": "no_such_getter"}, _rule()],
            "expected": [_rule(), _rule()],
        },
    )
    assert _unmet(task) == [
        ("getter", "no_such_getter"),
        ("metric", "no_such_metric"),
        ("setup", "no_such_step"),
    ]
    everything = Machine(which=_everything, sudo=True, assume=frozenset(parse_assume("all")))
    assert len(_unmet(task, everything)) == 3  # code we lack is never assumed


def test_vscode_google_and_gnome() -> None:
    code = _task([_step("launch", command=["code", "/home/user/p"])])
    assert _unmet(code) == []
    assert _unmet(code, Machine(which=_nothing)) == [("vscode", "code")]
    google = _task(
        [
            _step("googledrive", settings_file="s.yml", operation=["delete"], args=[{}]),
            _step("login", settings_file="s.json", platform="googledrive"),
        ],
        evaluator={
            "func": "compare_pdfs",
            "result": {"type": "googledrive_file", "query": []},
            "expected": _rule(),
        },
    )
    assert ("google", "setup step googledrive") in _unmet(google)
    assert ("google", "setup step login") in _unmet(google)
    assert ("google", "googledrive_file (Google Drive)") in _unmet(google)
    gnome = _task(
        [
            _step("execute", command=["gsettings", "set", "org.gnome.desktop.session", "x", "1"]),
            _step("launch", command=["nautilus", "/home/user"]),
            _step(
                "execute",
                command="export A='unix:path=/run/user/1000/bus'\ngnome-terminal",
                **SHELL,
            ),
            _step("execute", command=["bash", "-c", "killall gnome-terminal-server"]),
        ]
    )
    # GNOME's settings and terminal without GNOME Shell: apps, met when installed; OSWorld's
    # runtime folder is the desktop's own (nothing to need)
    assert _unmet(gnome) == []
    apps = [n.detail for n in _needs(gnome)["app"]]
    assert apps == [
        "gsettings",
        "nautilus",
        "gnome-terminal",
        "killall",
        "gsettings schema org.gnome.desktop.session",
    ]
    assert "gnome" not in _needs(gnome)
    bare = Machine(which=lambda n: None if n in ("gsettings", "gnome-terminal") else "/bin/" + n)
    assert _unmet(gnome, bare) == [
        ("app", "gsettings"),
        ("app", "gnome-terminal"),
        ("app", "gsettings schema org.gnome.desktop.session"),
    ]
    # Nautilus runs on any desktop: an app, met when installed
    assert ("app", "nautilus") in _unmet(gnome, Machine(which=_nothing))
    wallpaper = _task(
        evaluator={
            "func": "compare_images",
            "result": {"type": "vm_wallpaper", "dest": "w.png"},
            "expected": {"type": "vm_file", "path": "/home/user/w.png", "dest": "x.png"},
        }
    )
    assert _unmet(wallpaper) == []
    assert _unmet(wallpaper, Machine(which=_nothing)) == [
        ("app", "gsettings"),
        ("app", "gsettings schema org.gnome.desktop.background"),
    ]
    # only GNOME Shell itself is "gnome": its programs and its D-Bus name
    shell = _task(
        [
            _step("execute", command=["gnome-extensions", "enable", "x@y"]),
            _step("execute", command="gdbus call --session --dest org.gnome.Shell --object-path /"),
        ]
    )
    assert _unmet(shell) == [("gnome", "gnome-extensions, org.gnome.Shell")]


def test_gsettings_schemas_and_the_dconf_backend_are_read_from_the_machine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the real ``which``: a schema is met when a ``*.gschema.xml`` declares it (in
    ``GSETTINGS_SCHEMA_DIR`` or a data folder), ``gsettings`` when the dconf backend is there."""
    from agent_s.bench import check

    schemas = tmp_path / "schemas"
    schemas.mkdir()
    (schemas / "org.example.demo.gschema.xml").write_text(
        '<schemalist><schema id="org.example.demo" path="/org/example/demo/">'
        '<key name="on" type="b"><default>false</default></key></schema></schemalist>'
    )
    monkeypatch.setenv("GSETTINGS_SCHEMA_DIR", str(schemas))
    monkeypatch.setenv("XDG_DATA_DIRS", str(tmp_path / "nowhere"))
    check.installed_schemas.cache_clear()
    try:
        found = check.installed_schemas()
        assert found == {"org.example.demo"}
        has_gsettings = shutil.which("gsettings") is not None
        assert check.app_installed("gsettings schema org.example.demo") == has_gsettings
        assert not check.app_installed("gsettings schema org.gnome.shell")
    finally:
        check.installed_schemas.cache_clear()
    gio = Path("/usr/lib").glob("*/gio/modules/libdconfsettings.so")
    dconf = any(gio) or Path("/usr/lib/gio/modules/libdconfsettings.so").is_file()
    assert check.dconf_backend_installed() == dconf
    assert check.app_installed("gsettings") == (has_gsettings and dconf)


def test_assume_words() -> None:
    assert parse_assume("cache, internet") == {"cache", "internet"}
    assert parse_assume("apps") == {"app"}
    assert parse_assume(None) == frozenset()
    assert "gnome" in parse_assume("all")
    with pytest.raises(ValueError, match="unknown: metric"):
        parse_assume("metric")


def test_report_counts_per_need_and_domain() -> None:
    tasks = [
        _task(),
        _task([_step("chrome_open_tabs", urls_to_open=["https://example.org/"])]),
        _task([_step("launch", command=["code"])], proxy=True),
    ]
    machine = Machine(which=lambda n: None if n == "code" else "/usr/bin/" + n, sudo=True)
    report = check_tasks(tasks, machine=machine)
    assert report.runnable == 1
    assert report.only_outside == 2
    needs = report.needs()
    assert needs["internet"] == {"tasks": 2, "blocked": 2}
    assert needs["vscode"] == {"tasks": 1, "blocked": 1}
    assert needs["metric"] == {"tasks": 3, "blocked": 0}
    assert report.domains()["os"]["blocked_by"] == {"internet": 2, "vscode": 1}
    data = report.to_json()
    assert data["needs"] == needs
    assert [t["runnable"] for t in data["tasks"]] == [True, False, False]
    assert [r["category"] for r in data["tasks"][2]["reasons"]] == ["internet", "vscode"]
    assumed = check_tasks(
        tasks, machine=Machine(which=machine.which, assume=frozenset({"internet"}))
    )
    assert assumed.runnable == 2
    (need,) = [n for n in assumed.tasks[1][1] if n.category == "internet"]
    assert need.met
    assert need.how == "assumed"


def _check_json(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(app, ["bench", "check", str(OSWORLD), "--json", *args])
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


@needs_osworld
def test_osworld_needs_offline_and_with_cache_and_internet_assumed() -> None:
    offline = _check_json()
    online = _check_json("--assume", "cache,internet")
    assert offline["total"] == online["total"] == 369
    assert online["assume"] == ["cache", "internet"]
    needs = offline["needs"]
    assert set(needs) == set(CATEGORIES)
    # offline: every task with a cloud file or a download is blocked by the cache
    assert needs["cache"]["tasks"] == needs["cache"]["blocked"] > 250
    assert needs["internet"]["blocked"] == needs["internet"]["tasks"] > 40
    assert needs["google"]["tasks"] == 8
    assert online["needs"]["cache"]["blocked"] == online["needs"]["internet"]["blocked"] == 0
    assert online["runnable"] > offline["runnable"]
    for data in (offline, online):
        assert sum(d["runnable"] for d in data["domains"].values()) == data["runnable"]
        assert sum(t["runnable"] for t in data["tasks"]) == data["runnable"]
        for task in data["tasks"]:
            unmet = [n for n in task["needs"] if not n["met"]]
            assert [(n["category"], n["detail"]) for n in unmet] == [
                (r["category"], r["detail"]) for r in task["reasons"]
            ]
            assert task["runnable"] == (not unmet)
    by_id = {t["id"]: t for t in offline["tasks"]}
    # a Google Drive task, a web task, a VS Code task, a gsettings task: each says so
    drive = by_id["46407397-a7d5-4c6b-92c6-dbe038b1457b"]
    assert {"google", "cache"} <= {r["category"] for r in drive["reasons"]}
    suite = load_suite(OSWORLD)
    vs_code = next(suite.tasks(["vs_code"]))
    assert any(n["category"] == "vscode" for n in by_id[vs_code.id]["needs"])
    # GNOME's settings are apps (gsettings and each schema), no task needs GNOME Shell itself
    assert needs["gnome"]["tasks"] == 0
    favorites = by_id["ec4e3f68-9ea4-4c18-a5c9-69f89d1178b3"]["needs"]
    assert {("app", "gsettings"), ("app", "gsettings schema org.gnome.shell")} <= {
        (n["category"], n["detail"]) for n in favorites
    }


@needs_osworld
def test_osworld_check_text_lists_needs_apps_and_every_reason() -> None:
    result = CliRunner().invoke(app, ["bench", "check", str(OSWORLD), "--assume", "cache"])
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert "(assuming cache)" in text
    for category in CATEGORIES:
        assert category in text
    assert "apps (tasks): chromium" in text
    assert "blocked only by internet, VS Code or a Google account:" in text
    data = _check_json("--assume", "cache")
    lines = text.splitlines()
    for task in data["tasks"]:
        if task["reasons"]:
            reasons = "; ".join(r["text"] for r in task["reasons"])
            assert f"{task['domain']}/{task['id']}: {reasons}" in lines
    bad = CliRunner().invoke(app, ["bench", "check", str(OSWORLD), "--assume", "metric"])
    assert bad.exit_code == 2
    assert "unknown: metric" in bad.output
