"""Which desktop backend drives this session, and why: X11, or Wayland through sway.

``choose_backend(env)`` reads the session's variables and answers with a ``BackendChoice``:
the kind (``"x11"``, ``"wayland"``, or ``None`` when none can drive this session) and a reason
a person can read (``agent-s doctor`` prints it; ``open_backend`` raises it). The rules:

- ``AGENT_S_BACKEND=x11|wayland`` forces the kind (e.g. ``x11`` to drive a GNOME Wayland
  session's XWayland windows only);
- a Wayland session (``WAYLAND_DISPLAY`` set, or ``XDG_SESSION_TYPE=wayland``) with sway's IPC
  socket: the Wayland backend;
- a Wayland session of GNOME (mutter) or KDE (KWin): neither lets a client capture the screen
  or send input except through the xdg-desktop-portal's RemoteDesktop and ScreenCast portals,
  which agent-s does not speak yet, so no backend, and the message says so (X11 tools there
  see only XWayland windows, and their input does not reach native ones);
- other Wayland compositors: the same, naming what is missing (sway's IPC);
- otherwise ``DISPLAY``: the X11 backend.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from agent_s.errors import DisplayUnavailableError

if TYPE_CHECKING:
    from agent_s.desktop.virtual import VirtualDesktop
    from agent_s.desktop.wayland import WaylandBackend
    from agent_s.desktop.x11 import X11Backend

BACKEND_VAR = "AGENT_S_BACKEND"
Kind = Literal["x11", "wayland"]
_X11_SESSIONS = {"GNOME": "GNOME on Xorg", "KDE": "Plasma (X11)"}
_PORTAL = (
    "the remote-desktop portal (xdg-desktop-portal's RemoteDesktop and ScreenCast "
    "interfaces), which agent-s does not support yet"
)


@dataclass(frozen=True)
class BackendChoice:
    """``kind``: the backend to use, or None (``reason`` says why none, and ``fix`` what to do)."""

    kind: Kind | None
    reason: str
    fix: str = ""


def _desktop_family(env: Mapping[str, str]) -> str:
    names = " ".join(
        env.get(key, "")
        for key in ("XDG_CURRENT_DESKTOP", "XDG_SESSION_DESKTOP", "DESKTOP_SESSION")
    ).casefold()
    if "gnome" in names or "ubuntu" in names or "unity" in names:
        return "GNOME"
    if "kde" in names or "plasma" in names or env.get("KDE_FULL_SESSION"):
        return "KDE"
    return ""


def choose_backend(env: Mapping[str, str]) -> BackendChoice:
    """The backend for the session ``env`` describes (see the module for the rules)."""
    from agent_s.desktop.wayland import find_sway_socket

    forced = env.get(BACKEND_VAR, "").strip().casefold()
    if forced and forced not in ("x11", "wayland"):
        return BackendChoice(
            None,
            f"{BACKEND_VAR}={forced!r} names no backend",
            f"set {BACKEND_VAR} to x11 or wayland, or unset it to choose by the session",
        )
    wayland_display = env.get("WAYLAND_DISPLAY", "")
    x_display = env.get("DISPLAY", "")
    sway = find_sway_socket(env)
    if forced == "x11":
        return BackendChoice("x11", f"{BACKEND_VAR}=x11 (X display {x_display or 'unset'})")
    if forced == "wayland":
        return BackendChoice(
            "wayland", f"{BACKEND_VAR}=wayland (WAYLAND_DISPLAY={wayland_display})"
        )
    is_wayland = bool(wayland_display) or env.get("XDG_SESSION_TYPE", "").casefold() == "wayland"
    if is_wayland and sway is not None:
        return BackendChoice(
            "wayland",
            f"a Wayland session (WAYLAND_DISPLAY={wayland_display or 'unset'}) of sway "
            f"(IPC socket {sway}): screenshots by grim, keys by wtype and a virtual keyboard, "
            "the pointer by the virtual-pointer protocol",
        )
    if is_wayland:
        family = _desktop_family(env)
        if family:
            return BackendChoice(
                None,
                f"a {family} Wayland session: its compositor lets no program see the screen "
                f"or send input except through {_PORTAL}",
                f"log in to an X11 session ({_X11_SESSIONS[family]}), use sway, or run agent-s "
                f"on a virtual desktop (--virtual); {BACKEND_VAR}=x11 drives only the XWayland "
                "windows",
            )
        return BackendChoice(
            None,
            f"a Wayland session (WAYLAND_DISPLAY={wayland_display or 'unset'}) without sway's "
            "IPC socket: agent-s drives wlroots compositors through sway's IPC (SWAYSOCK), and "
            f"other compositors through {_PORTAL}",
            "run in a sway session (with SWAYSOCK set), or on a virtual desktop (--virtual)",
        )
    if x_display:
        return BackendChoice("x11", f"an X11 session (DISPLAY={x_display})")
    return BackendChoice(
        None,
        "no desktop session: neither DISPLAY nor WAYLAND_DISPLAY is set",
        "run inside a desktop session, or let agent-s start a virtual one (--virtual on the "
        "command line; in Python, an Agent with backend= on a VirtualDesktop, as the README "
        "shows)",
    )


def open_backend(env: Mapping[str, str] | None = None) -> X11Backend | WaylandBackend:
    """The backend ``choose_backend`` picks for ``env`` (this process's by default); raise
    ``DisplayUnavailableError`` with the reason and the fix when none can drive it."""
    import os

    session = os.environ if env is None else env
    choice = choose_backend(session)
    if choice.kind == "wayland":
        from agent_s.desktop.wayland import WaylandBackend

        return WaylandBackend(env)
    if choice.kind == "x11":
        from agent_s.desktop.x11 import X11Backend

        return X11Backend(env=env)
    raise DisplayUnavailableError(f"{choice.reason}; {choice.fix}")


def virtual_kind(env: Mapping[str, str]) -> Kind:
    """The kind of virtual desktop ``--virtual`` starts: ``AGENT_S_BACKEND``, else X11."""
    return "wayland" if env.get(BACKEND_VAR, "").strip().casefold() == "wayland" else "x11"


def desktop_backend(desk: VirtualDesktop) -> X11Backend | WaylandBackend:
    """The backend that drives the virtual desktop ``desk``, of either kind."""
    if getattr(desk, "kind", "x11") == "wayland":
        from agent_s.desktop.wayland import WaylandBackend

        return WaylandBackend(desk.env, launcher=getattr(desk, "launcher", ()))
    from agent_s.desktop.x11 import X11Backend

    return X11Backend(desk.display, env=desk.env)
