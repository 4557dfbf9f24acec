"""Polling for the tests: wait until a condition holds on the desktop, or fail saying what."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def wait_until(predicate: Callable[[], Any], timeout: float = 8.0, what: str = "condition") -> Any:
    """The first truthy value ``predicate`` returns; ``AssertionError`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)
