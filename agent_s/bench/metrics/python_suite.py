"""OSWorld's ``check_python_file_by_test_suite``: run a task's test file against the files
the agent fixed. OSWorld imports and calls it in its own process; we run it in a child
process (``agent_s.bench.metrics.suite_runner``) on a copy of the test file's folder, with
the harness's Python and a time limit, so a test can neither hang nor change the harness.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

TIMEOUT_SECONDS = 120.0


def check_python_file_by_test_suite(actual_files: Any, test_file: Any, **options: Any) -> float:
    """The score of ``test_function_name()`` (default ``test``) in ``test_file``, run with the
    test file's folder (where the task's files were fetched too) as working directory and
    import path. No test file: 0. A test that outlives ``TIMEOUT_SECONDS`` or kills its
    process raises (OSWorld would hang or stop with it): the task is left unscored."""
    function_name = str(options.get("test_function_name", "test"))
    if not test_file:
        return 0.0
    source = Path(str(test_file)).resolve()
    if not source.is_file():
        return 0.0
    with tempfile.TemporaryDirectory(prefix="agent-s-suite-") as scratch:
        work = Path(scratch) / "suite"
        shutil.copytree(source.parent, work, symlinks=True)
        score_file = Path(scratch) / "score.json"
        argv = [
            sys.executable,
            "-m",
            "agent_s.bench.metrics.suite_runner",
            str(work / source.name),
            function_name,
            str(score_file),
        ]
        child = subprocess.Popen(
            argv,
            cwd=work,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        try:
            _, error = child.communicate(timeout=TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
            raise TimeoutError(
                f"{source.name}: {function_name}() ran over {TIMEOUT_SECONDS:.0f} s"
            ) from None
        finally:
            if child.poll() is None:
                os.killpg(child.pid, signal.SIGKILL)
                child.wait()
        if not score_file.is_file():
            tail = error.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no output"]
            raise RuntimeError(
                f"{source.name}: the test process ended with {child.returncode}: {tail[0]}"
            )
        return float(json.loads(score_file.read_text(encoding="utf-8")))
