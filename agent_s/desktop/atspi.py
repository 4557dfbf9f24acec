"""The AT-SPI bindings, bound once per process, without letting libatspi end the process.

libatspi connects to the accessibility bus once, in ``Atspi.init``. When it cannot (a session
bus with no ``at-spi-bus-launcher`` behind it, a desktop that was stopped), ``init`` returns 2
and every later call, from anyone in the process, aborts it with SIGTRAP ("dbind-ERROR: AT-SPI:
Couldn't connect to accessibility bus"): no exception, no result written. So every user of
AT-SPI here (the accessibility grounder, the field reader of ``agent_s.desktop.watch``, doctor)
gets the bindings from ``bindings()``, which:

- asks the session bus for the accessibility bus's address first (``org.a11y.Bus.GetAddress``,
  bounded) and does not call ``init`` at all when there is none, so that a later try (once a
  desktop is up) can still bind;
- calls ``init`` once, and when it fails remembers that for the rest of the process: libatspi
  cannot be bound again, and no AT-SPI call is ever made after a failed ``init``;
- once bound, answers only while ``DBUS_SESSION_BUS_ADDRESS`` names the session it bound to:
  libatspi cannot move to another desktop's bus, and must not read one desktop's tree for
  another (a process that drives its own screen and a virtual desktop, as ``agent-s mcp``
  does, reads the tree of the first it bound to, and does without it on the other).

``ATSPI_LOCK``: libatspi is not thread-safe; every caller holds this lock for its calls.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from agent_s.errors import AgentSError

ATSPI_LOCK = threading.Lock()
ADDRESS_TIMEOUT_MS = 1500  # the session bus's answer to GetAddress
_STATE = threading.Lock()
_bound: Any = None  # the Atspi module once ``init`` succeeded
_bound_session = ""  # the session bus it was bound on
_failed = ""  # why ``init`` failed: final for this process


class AccessibilityUnavailable(AgentSError):
    """AT-SPI cannot be used here; ``reason`` is short, the message names the fix."""

    def __init__(self, message: str, *, reason: str, final: bool = False) -> None:
        super().__init__(message)
        self.reason = reason
        self.final = final  # True: not in this process any more (a failed init)


def bindings(timeout_ms: int = 1500) -> Any:
    """The ``gi.repository.Atspi`` module, bound to the accessibility bus; raises
    ``AccessibilityUnavailable`` (never calls into libatspi when it could abort)."""
    global _bound, _bound_session, _failed
    with _STATE:
        session = os.environ.get("DBUS_SESSION_BUS_ADDRESS")
        if not session:  # asked first, as a run without a session bus has no tree to read
            raise AccessibilityUnavailable(
                "accessibility needs a D-Bus session bus, and DBUS_SESSION_BUS_ADDRESS is unset",
                reason="no D-Bus session bus",
            )
        if _bound is not None and session != _bound_session:
            raise AccessibilityUnavailable(
                "accessibility in this process reads the desktop whose session bus it bound to "
                f"first ({_bound_session}), not the one of this session bus ({session}): "
                "libatspi cannot move to another bus",
                reason="bound to another desktop",
            )
        if _bound is not None:
            return _bound
        if _failed:
            raise AccessibilityUnavailable(_failed, reason="no accessibility bus", final=True)
        try:
            import gi

            gi.require_version("Atspi", "2.0")
            gi.require_version("Gio", "2.0")
            from gi.repository import Atspi, Gio, GLib
        except (ImportError, ValueError) as err:
            raise AccessibilityUnavailable(
                f"the AT-SPI bindings are missing ({err}); apt-get install gir1.2-atspi-2.0 "
                "python3-gi, and use a Python that sees them",
                reason="Atspi bindings missing",
            ) from err
        if not os.environ.get("AT_SPI_BUS_ADDRESS"):
            try:
                _accessibility_bus_address(Gio, GLib, session)
            except GLib.Error as err:
                raise AccessibilityUnavailable(
                    "the D-Bus session bus has no accessibility bus (org.a11y.Bus: "
                    f"{err.message}); install at-spi2-core, or run with --virtual",
                    reason="no accessibility bus",
                ) from err
        if Atspi.init() == 2:
            _failed = (
                "libatspi could not connect to the accessibility bus, and cannot try again in "
                "this process; check that at-spi-bus-launcher runs (at-spi2-core), then restart"
            )
            raise AccessibilityUnavailable(_failed, reason="no accessibility bus", final=True)
        Atspi.set_timeout(timeout_ms, timeout_ms * 2)  # no call hangs on a stuck application
        _bound, _bound_session = Atspi, session
        return Atspi


def _accessibility_bus_address(gio: Any, glib: Any, session: str) -> str:
    """The accessibility bus's address, asked of the session bus (raises ``GLib.Error``)."""
    flags = (
        gio.DBusConnectionFlags.AUTHENTICATION_CLIENT
        | gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION
    )
    connection = gio.DBusConnection.new_for_address_sync(session, flags, None, None)
    try:
        reply = connection.call_sync(
            "org.a11y.Bus",
            "/org/a11y/bus",
            "org.a11y.Bus",
            "GetAddress",
            None,
            glib.VariantType.new("(s)"),
            gio.DBusCallFlags.NONE,
            ADDRESS_TIMEOUT_MS,
            None,
        )
    finally:
        connection.close_sync(None)
    (address,) = reply.unpack()
    return str(address)


__all__ = ["ATSPI_LOCK", "AccessibilityUnavailable", "bindings"]
