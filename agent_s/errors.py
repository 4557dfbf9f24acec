"""Error types, grouped by who must act on them.

- The model: ``ActionParseError`` (its reply could not be read as one valid action); the message
  is written to be sent back to the model as feedback.
- The caller: ``DisplayUnavailableError``, ``DesktopSetupError`` (fix the environment or the
  arguments, then try again).
- The run: ``ActionExecutionError`` and its kinds (the action was valid, doing it failed).

Exceptions carry data as attributes and do nothing in ``__init__`` beyond storing it.
"""

from __future__ import annotations


class AgentSError(Exception):
    """Base of every error agent-s raises on purpose."""


class ActionParseError(AgentSError, ValueError):
    """A model reply is not exactly one valid action. ``str(err)`` is feedback for the model."""

    def __init__(self, message: str, *, kind: str) -> None:
        super().__init__(message)
        # "none", "several", "unknown_action", "bad_argument", "non_literal" or "syntax"
        self.kind = kind


class DisplayUnavailableError(AgentSError, RuntimeError):
    """No X display can be reached (DISPLAY unset or the server is gone)."""


class DisplayAuthorizationError(DisplayUnavailableError):
    """The X server asks for a cookie this process does not have (or refused the one given)."""


class DesktopSetupError(AgentSError, RuntimeError):
    """A virtual desktop or one of its programs could not be started."""


class ActionExecutionError(AgentSError, RuntimeError):
    """A valid action could not be carried out on the desktop."""


class AppNotFoundError(ActionExecutionError):
    """``open`` found no application or file of that name."""

    def __init__(self, message: str, *, name: str, candidates: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.name = name
        self.candidates = candidates


class WindowNotFoundError(ActionExecutionError):
    """``switch_applications`` found no open window matching the name."""

    def __init__(self, message: str, *, name: str, open_windows: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.name = name
        self.open_windows = open_windows


def describe_error(err: BaseException) -> str:
    """``Type: message`` (or just the type when the message is empty), for results and logs."""
    text = str(err)
    return f"{type(err).__name__}: {text}" if text else type(err).__name__
