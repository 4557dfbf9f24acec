"""Which desktop backend drives this session, and why: X11, sway, GNOME (mutter) or KDE (KWin).

``choose_backend(env)`` reads the session's variables and answers with a ``BackendChoice``:
the kind (``"x11"``, ``"wayland"`` (sway), ``"gnome"``, ``"kde"``, or ``None`` when none can
drive this session) and a reason
a person can read (``agent-s doctor`` prints it; ``open_backend`` raises it). The rules:

- ``AGENT_S_BACKEND=x11|wayland|gnome|kde`` forces the kind (e.g. ``x11`` to drive a GNOME
  Wayland session's XWayland windows only);
- a Wayland session (``WAYLAND_DISPLAY`` set, or ``XDG_SESSION_TYPE=wayland``) with sway's IPC
  socket: the Wayland backend;
- a Wayland session of GNOME (mutter): the GNOME backend (mutter's ScreenCast and
  RemoteDesktop D-Bus interfaces); of KDE Plasma (KWin): the KDE backend (KWin's screenshot
  interface and fake input, which the user authorises once);
- other Wayland compositors: none, naming what is missing (sway's IPC);
- otherwise ``DISPLAY``: the X11 backend.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from agent_s.errors import DisplayUnavailableError

if TYPE_CHECKING:
    from agent_s.desktop.common import BackendBase
    from agent_s.desktop.virtual import VirtualDesktop

BACKEND_VAR = "AGENT_S_BACKEND"
Kind = Literal["x11", "wayland", "gnome", "kde"]
#: the backends but X11's, as (module, class): each takes the session's ``env`` and a
#: ``launcher`` (an argv prefix for the programs it opens), and is imported on first use
BACKEND_CLASSES: dict[str, tuple[str, str]] = {
    "wayland": ("agent_s.desktop.wayland", "WaylandBackend"),
    "gnome": ("agent_s.desktop.gnome", "GnomeBackend"),
    "kde": ("agent_s.desktop.kde", "KdeBackend"),
}
#: what ``--desktop`` names -> the kind of virtual desktop ``--virtual`` starts
DESKTOPS: dict[str, Kind] = {"openbox": "x11", "sway": "wayland", "gnome": "gnome", "kde": "kde"}
_KINDS = ("x11", *BACKEND_CLASSES)
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
    if forced and forced not in _KINDS:
        return BackendChoice(
            None,
            f"{BACKEND_VAR}={forced!r} names no backend",
            f"set {BACKEND_VAR} to x11, wayland, gnome or kde, or unset it to choose by the "
            "session",
        )
    wayland_display = env.get("WAYLAND_DISPLAY", "")
    x_display = env.get("DISPLAY", "")
    sway = find_sway_socket(env)
    if forced == "x11":
        return BackendChoice("x11", f"{BACKEND_VAR}=x11 (X display {x_display or 'unset'})")
    if forced in BACKEND_CLASSES:
        return BackendChoice(
            forced,  # type: ignore[arg-type]
            f"{BACKEND_VAR}={forced} (WAYLAND_DISPLAY={wayland_display})",
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
        if family == "GNOME":
            return BackendChoice(
                "gnome",
                f"a GNOME Wayland session (WAYLAND_DISPLAY={wayland_display or 'unset'}): "
                "screenshots and input through mutter's ScreenCast and RemoteDesktop D-Bus "
                "interfaces",
            )
        if family == "KDE":
            return BackendChoice(
                "kde",
                f"a KDE Plasma Wayland session (WAYLAND_DISPLAY={wayland_display or 'unset'}): "
                "screenshots through KWin's ScreenShot2 interface, input through its fake-input "
                "protocol",
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


def _backend_class(kind: str) -> type[Any]:
    module_name, class_name = BACKEND_CLASSES[kind]
    return getattr(importlib.import_module(module_name), class_name)


def open_backend(env: Mapping[str, str] | None = None) -> BackendBase:
    """The backend ``choose_backend`` picks for ``env`` (this process's by default); raise
    ``DisplayUnavailableError`` with the reason and the fix when none can drive it."""
    import os

    session = os.environ if env is None else env
    choice = choose_backend(session)
    if choice.kind in BACKEND_CLASSES:
        return _backend_class(choice.kind)(env)
    if choice.kind == "x11":
        from agent_s.desktop.x11 import X11Backend

        return X11Backend(env=env)
    raise DisplayUnavailableError(f"{choice.reason}; {choice.fix}")


def virtual_kind(env: Mapping[str, str], desktop: str | None = None) -> Kind:
    """The kind of virtual desktop ``--virtual`` starts: the one ``desktop`` names
    (``DESKTOPS``: openbox, sway, gnome, kde), else ``AGENT_S_BACKEND``'s, else X11."""
    if desktop:
        try:
            return DESKTOPS[desktop.strip().casefold()]
        except KeyError:
            names = ", ".join(DESKTOPS)
            raise ValueError(
                f"--desktop {desktop!r} names no desktop: use one of {names}"
            ) from None
    forced = env.get(BACKEND_VAR, "").strip().casefold()
    return forced if forced in BACKEND_CLASSES else "x11"  # type: ignore[return-value]


def desktop_backend(desk: VirtualDesktop) -> BackendBase:
    """The backend that drives the virtual desktop ``desk``, of any kind."""
    kind = getattr(desk, "kind", "x11")
    if kind in BACKEND_CLASSES:
        return _backend_class(kind)(desk.env, launcher=getattr(desk, "launcher", ()))
    from agent_s.desktop.x11 import X11Backend

    return X11Backend(desk.display, env=desk.env)
