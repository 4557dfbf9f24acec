"""Child-process side of ``check_python_file_by_test_suite``: import a task's test file and
call its test function, as OSWorld does in its own process, and write the score as JSON.

    python -m agent_s.bench.metrics.suite_runner TEST_FILE FUNCTION SCORE_FILE

The test file's folder is the working directory and the first import path (the task's files
beside it are what it tests). As in OSWorld, a test that cannot be loaded, has no such
function, or raises scores 0; its result counts as a bool, or a number clamped to [0, 1].
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import uuid
from pathlib import Path
from typing import Any


def _score(result: Any) -> float:
    if isinstance(result, bool):
        return 1.0 if result else 0.0
    if isinstance(result, (int, float)):
        return max(0.0, min(1.0, float(result)))
    return 1.0 if result else 0.0


def run_test(test_file: Path, function_name: str) -> float:
    """Load ``test_file`` as a fresh module and score ``function_name()``."""
    spec = importlib.util.spec_from_file_location(f"task_test_{uuid.uuid4().hex[:8]}", test_file)
    if spec is None or spec.loader is None:
        return 0.0
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    except Exception:  # OSWorld: a test file that does not load scores 0
        return 0.0
    function = getattr(module, function_name, None)
    if not callable(function):
        return 0.0
    try:
        return _score(function())
    except Exception:  # OSWorld: a test that raises scores 0
        return 0.0


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        sys.stderr.write("usage: suite_runner TEST_FILE FUNCTION SCORE_FILE\n")
        return 2
    test_file, function_name, score_file = Path(argv[0]).resolve(), argv[1], Path(argv[2])
    os.chdir(test_file.parent)
    sys.path.insert(0, str(test_file.parent))
    score = run_test(test_file, function_name)
    score_file.write_text(json.dumps(score), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
