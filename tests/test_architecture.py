"""The house by stage: packages that show the architecture, layers that hold, no import cycle.

The import graph is read by grimp (import-linter's graph library) from the source, with
``cli/`` and ``grounding/`` in their installed places (``agent_s.cli``, ``agent_s.grounding``):
a copy of the three folders is laid out as the installed package is. Imports made only for type
checking are left out (they run nothing); imports inside functions count.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import grimp
import pytest

from agent_s._moved import MOVED

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
FOLDERS = {"agent_s": "agent_s", "cli": "agent_s/cli", "grounding": "agent_s/grounding"}


@pytest.fixture(scope="module")
def installed_layout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """agent_s/ with cli/ and grounding/ inside it, as installed (Python files only)."""
    top = tmp_path_factory.mktemp("layout")
    for source, target in FOLDERS.items():
        shutil.copytree(
            ROOT / source,
            top / target,
            ignore=shutil.ignore_patterns("__pycache__", "static", "*.md", "*.txt", "*.json"),
        )
    return top


def _graph(top: Path) -> grimp.ImportGraph:
    sys.path.insert(0, str(top))
    saved = {
        name: module for name, module in sys.modules.items() if name.split(".")[0] == "agent_s"
    }
    try:
        for name in saved:
            del sys.modules[name]
        return grimp.build_graph("agent_s", exclude_type_checking_imports=True, cache_dir=None)
    finally:
        sys.path.remove(str(top))
        for name in [n for n in sys.modules if n.split(".")[0] == "agent_s"]:
            del sys.modules[name]
        sys.modules.update(saved)


def _cycles(graph: grimp.ImportGraph) -> Iterator[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    counter = 0
    for start in sorted(graph.modules):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.find_modules_directly_imported_by(start))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append(
                        (child, iter(sorted(graph.find_modules_directly_imported_by(child))))
                    )
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        yield sorted(component)


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = grimp.ImportGraph()
    for name in ("p", "p.a", "p.b", "p.c"):
        graph.add_module(name)
    graph.add_import(importer="p.a", imported="p.b")
    graph.add_import(importer="p.b", imported="p.c")
    graph.add_import(importer="p.c", imported="p.a")
    assert list(_cycles(graph)) == [["p.a", "p.b", "p.c"]]
    graph.remove_import(importer="p.c", imported="p.a")
    assert list(_cycles(graph)) == []


def test_no_module_imports_itself_round_a_cycle(installed_layout: Path) -> None:
    graph = _graph(installed_layout)
    assert "agent_s.cli.main" in graph.modules
    assert "agent_s.grounding.chain" in graph.modules
    found = []
    for component in _cycles(graph):
        first, second = (
            component[0],
            next(m for m in component[1:] if graph.chain_exists(importer=component[0], imported=m)),
        )
        there = graph.find_shortest_chain(importer=first, imported=second) or ()
        back = graph.find_shortest_chain(importer=second, imported=first) or ()
        found.append(" -> ".join([*there, *back[1:]]))
    assert not found, "import cycles:\n" + "\n".join(found)


def _lint_imports(top: Path) -> subprocess.CompletedProcess[str]:
    """import-linter's ``lint-imports`` with pyproject.toml's contracts, on the layout at top."""
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
        cwd=top,
        env={**os.environ, "PYTHONPATH": str(top)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_layers_hold(installed_layout: Path) -> None:
    """import-linter's contracts in pyproject.toml: no stage imports one above it."""
    done = _lint_imports(installed_layout)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 kept, 0 broken" in done.stdout, done.stdout


def test_a_stage_that_imports_one_above_it_breaks_the_layers(installed_layout: Path) -> None:
    """The contract can fail: a settings module importing the loop is reported."""
    broken = installed_layout.parent / "broken"
    shutil.copytree(installed_layout, broken)
    (broken / "agent_s" / "settings" / "intruder.py").write_text("import agent_s.loop.agent\n")
    done = _lint_imports(broken)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "agent_s.settings.intruder -> agent_s.loop.agent" in done.stdout, done.stdout


def test_agent_s_reads_as_its_stages() -> None:
    """At most a dozen modules at the top; every package says what it holds and may use."""
    top = sorted(p.name for p in (ROOT / "agent_s").glob("*.py"))
    assert len(top) <= 12, top
    packages = [p for p in (ROOT / "agent_s").iterdir() if (p / "__init__.py").is_file()]
    packages += [ROOT / "cli", ROOT / "grounding"]
    unsaid = []
    for package in packages:
        doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""
        if not doc or "May use" not in doc:
            unsaid.append(package.name)
    assert not unsaid, f"packages whose docstring does not say what they may use: {unsaid}"


_OLD = re.compile(r"(?<![\w.])(" + "|".join(re.escape(m) for m in MOVED) + r")(?![\w])")


def test_nothing_here_uses_an_old_module_path() -> None:
    used = []
    for folder in ("agent_s", "cli", "grounding", "tests", "scripts"):
        for source in (ROOT / folder).rglob("*.py"):
            if source.name == "_moved.py" or source == Path(__file__):
                continue
            for number, line in enumerate(source.read_text().splitlines(), 1):
                if _OLD.search(line):
                    used.append(f"{source.relative_to(ROOT)}:{number}: {line.strip()}")
    for number, line in enumerate((ROOT / "README.md").read_text().splitlines(), 1):
        if _OLD.search(line) and "moved" not in line:  # but where it says what moved where
            used.append(f"README.md:{number}: {line.strip()}")
    assert not used, "old module paths:\n" + "\n".join(used)


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_module_path_still_works_with_a_warning(old: str) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-W",
            "always::DeprecationWarning",
            "-c",
            f"import {old} as m; print(m.__name__)",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == MOVED[old]
    assert f"{old} moved to {MOVED[old]}" in done.stderr


def test_a_package_that_took_a_module_s_name_hands_out_its_names_with_a_warning() -> None:
    from agent_s.record.trajectory import load_trajectory
    from agent_s.safety.gate import SafetyGate

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        from agent_s.record import trajectory  # a submodule: no warning
        from agent_s.report import write_report
        from agent_s.safety import SafetyGate as Old

    assert Old is SafetyGate
    assert trajectory.load_trajectory is load_trajectory
    assert write_report.__module__ == "agent_s.report.pages"
    said = [str(w.message) for w in seen if issubclass(w.category, DeprecationWarning)]
    assert any("agent_s.safety.SafetyGate moved to agent_s.safety.gate" in s for s in said), said
    assert not any("trajectory" in s for s in said), said


def test_the_loop_reads_in_one_sitting() -> None:
    """agent.py stays a short loop: features are collaborators at named points, not branches
    (agent_s.loop.collaborators), and it asks no collaborator what it is."""
    source = (ROOT / "agent_s" / "loop" / "agent.py").read_text()
    assert len(source.splitlines()) < 450
    tree = ast.parse(source)
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)]
    asked = [ast.unparse(c) for c in calls if c.func.id in ("getattr", "hasattr")]
    assert not asked, asked
    points = [c for c in ast.walk(tree) if isinstance(c, ast.Attribute) and c.attr == "_points"]
    assert len(points) >= 8  # the named points are where the features come in


def test_a_desktop_backend_writes_only_its_primitives() -> None:
    """The X11 and Wayland backends share their actions (``common.BackendBase``); a new one
    implements exactly the primitives ``agent_s.desktop``'s docstring lists, no more: a
    class that leaves one out cannot be made, and says which."""
    import agent_s.desktop as desktop
    from agent_s.desktop.common import BackendBase
    from agent_s.desktop.wayland import WaylandBackend
    from agent_s.desktop.x11 import X11Backend

    assert desktop.__doc__ is not None
    listed = desktop.__doc__.split("implements only these primitives:", 1)[1]
    listed = listed.split("It may override", 1)[0]
    assert set(re.findall(r"``(\w+)\(", listed)) == set(BackendBase.__abstractmethods__)
    actions = ("move", "click", "drag", "scroll", "hotkey", "hold_and_press", "type_text")
    actions += ("capture", "clipboard_get", "clipboard_set", "activate", "open", "sleep")
    for backend in (X11Backend, WaylandBackend):
        assert issubclass(backend, BackendBase)
        assert not [name for name in actions if name in vars(backend)], backend

    class Half(BackendBase):
        def close(self) -> None: ...

    with pytest.raises(TypeError, match="_pointer_to"):
        Half(env={})  # type: ignore[abstract]


def test_the_package_holds_only_its_own_modules() -> None:
    """In a checkout, cli/, grounding/ and prompts/ join the package and nothing else of it:
    no second copy of agent_s inside itself, so walking the package ends."""
    code = (
        "import agent_s, importlib, pkgutil\n"
        "names = {m.name for m in pkgutil.walk_packages(agent_s.__path__, 'agent_s.')}\n"
        "assert 'agent_s.loop.agent' in names, names\n"
        "import agent_s.cli.main, agent_s.grounding.chain, agent_s.prompts\n"
        "assert not any(n.startswith(('agent_s.agent_s', 'agent_s.tests')) for n in names)\n"
        "try:\n"
        "    importlib.import_module('agent_s.agent_s')\n"
        "except ModuleNotFoundError:\n"
        "    print('ok')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.stdout.strip() == "ok", done.stderr[-2000:]
