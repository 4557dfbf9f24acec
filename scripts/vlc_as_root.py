#!/usr/bin/python3
"""VLC that also starts as root (installed as /usr/bin/vlc by ``scripts/setup.sh --bench-apps``).

Debian's ``/usr/bin/vlc`` is a small front end to libvlc that refuses to run as root (it checks
``geteuid()`` and exits); the library itself has no such check. OSWorld's harness here (and CI)
runs as root, so ``setup.sh`` moves the packaged program aside with ``dpkg-divert`` (to
``/usr/bin/vlc.distrib``, kept across upgrades) and installs this file in its place:

- not root: runs the packaged program unchanged (``exec``);
- root: does what the packaged front end does, through libvlc: the same options first
  (``--no-ignore-config``: read and save ``~/.config/vlc/vlcrc``, ``--media-library``,
  ``--stats``), then the command line (files, ``--extraintf http``, ...), the hotkeys, global
  hotkeys and D-Bus control interfaces (one instance, MPRIS), the default interface (Qt), the
  playlist started; it waits until VLC quits (Quit in the menu) or a signal ends it.

So ``vlc FILE``, ``cvlc``, the desktop file's ``/usr/bin/vlc --started-from-file`` and VLC's
configuration file and HTTP interface behave as with the packaged program.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading

DISTRIB = "/usr/bin/vlc.distrib"  # where dpkg-divert --rename moves the packaged program
LIBVLC = "libvlc.so.5"
#: The options Debian's front end gives libvlc before the command line (bin/vlc.c).
FRONT_END_OPTIONS = ("--no-ignore-config", "--media-library", "--stats")
#: The control interfaces it adds, each optional ("...,none").
CONTROL_INTERFACES = (b"hotkeys,none", b"globalhotkeys,none", b"dbus,none")
STOP_SIGNALS = (signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGTERM)
EXIT_HANDLER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


def _packaged() -> str:
    return DISTRIB if os.path.exists(DISTRIB) else ""


def run_as_root(args: list[str]) -> int:
    lib = ctypes.CDLL(LIBVLC)
    lib.libvlc_new.restype = ctypes.c_void_p
    lib.libvlc_new.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
    lib.libvlc_add_intf.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    lib.libvlc_playlist_play.argtypes = [ctypes.c_void_p]
    lib.libvlc_set_exit_handler.argtypes = [ctypes.c_void_p, EXIT_HANDLER, ctypes.c_void_p]
    lib.libvlc_set_app_id.argtypes = [ctypes.c_void_p, *[ctypes.c_char_p] * 3]
    lib.libvlc_set_user_agent.argtypes = [ctypes.c_void_p, *[ctypes.c_char_p] * 2]
    lib.libvlc_release.argtypes = [ctypes.c_void_p]
    lib.libvlc_get_version.restype = ctypes.c_char_p

    words = [*FRONT_END_OPTIONS, *args]
    argv = (ctypes.c_char_p * (len(words) + 1))(*[os.fsencode(w) for w in words], None)
    # libvlc's threads inherit this mask: the stop signals reach only sigtimedwait below.
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    instance = lib.libvlc_new(len(words), argv)
    if not instance:  # --help, --version, or options libvlc refused (it said why)
        return 0 if {"--help", "-h", "--version", "-H", "--longhelp"} & set(args) else 1
    quit_event = threading.Event()
    on_exit = EXIT_HANDLER(lambda _opaque: quit_event.set())  # kept alive until release
    lib.libvlc_set_exit_handler(instance, on_exit, None)
    version = (lib.libvlc_get_version() or b"3").split()[0]
    lib.libvlc_set_app_id(instance, b"org.VideoLAN.VLC", version, b"vlc")
    lib.libvlc_set_user_agent(instance, b"VLC media player", b"VLC/" + version)
    for interface in CONTROL_INTERFACES:
        lib.libvlc_add_intf(instance, interface)
    status = 0
    if lib.libvlc_add_intf(instance, None) != 0:
        print("vlc: cannot start any interface. Exiting.", file=sys.stderr)
        status = 1
    else:
        lib.libvlc_playlist_play(instance)
        while not quit_event.is_set():
            if signal.sigtimedwait(STOP_SIGNALS, 0.2) is not None:
                break
    lib.libvlc_release(instance)
    return status


def main() -> int:
    args = sys.argv[1:]
    packaged = _packaged()
    if os.geteuid() != 0 and packaged:
        os.execv(packaged, ["vlc", *args])  # noqa: S606  (the packaged VLC, same arguments)
    return run_as_root(args)


if __name__ == "__main__":
    sys.exit(main())
