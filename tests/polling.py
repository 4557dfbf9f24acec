"""Polling for the tests: wait until a condition holds on the desktop, or fail saying what."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def poll(predicate: Callable[[], Any], timeout: float = 8.0) -> Any:
    """The first truthy value ``predicate`` returns, else its last (falsy) value after
    ``timeout`` s: for checks that score a result rather than fail the test."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.05)


def wait_until(predicate: Callable[[], Any], timeout: float = 8.0, what: str = "condition") -> Any:
    """The first truthy value ``predicate`` returns; ``AssertionError`` after ``timeout`` s."""
    value = poll(predicate, timeout)
    if not value:
        raise AssertionError(f"timed out waiting for {what}")
    return value
