"""The X cookie file a client of this display uses, found as libX11 (and so xdpyinfo) finds it.

python-xlib differs from libX11 here: it refuses to connect when ``~/.Xauthority`` is missing
and prints a warning on stdout when the file is empty, where libX11 simply connects without a
cookie (a server started without ``-auth``: the usual Docker and CI way). ``cookie_file`` hands
it a file that behaves as libX11 would.
"""

from __future__ import annotations

import os


def cookie_file(xauthority: str | None) -> str:
    """The cookie file to hand python-xlib, found as libX11 (and so xdpyinfo) finds it.

    ``xauthority`` (the XAUTHORITY variable), else ``~/.Xauthority``; a file that does not exist,
    cannot be read or is empty holds no cookie, so the connection is tried without one, as
    libX11 does for a server started without ``-auth``. python-xlib instead refuses to connect
    when that file is missing (and prints a warning on stdout when it is empty), hence a cookie
    file of ours in its place that names no display (``no_cookie_file``).
    """
    path = xauthority or os.path.join(os.path.expanduser("~"), ".Xauthority")
    try:
        with open(path, "rb") as cookies:
            if cookies.read(1):
                return path
    except OSError:
        pass
    return no_cookie_file()


_NO_COOKIE: list[str] = []  # the path of the one file below, made once per process


def no_cookie_file() -> str:
    """A cookie file whose one entry matches no display: python-xlib then sends no cookie.

    It lives in memory (memfd, read through /proc/self/fd), so nothing is written to disk and
    no other process can plant or change it; without memfd, the empty ``os.devnull``.
    """
    if not _NO_COOKIE:
        path = os.devnull
        if hasattr(os, "memfd_create") and os.path.isdir("/proc/self/fd"):
            fd = os.memfd_create("agent-s-no-cookie", os.MFD_CLOEXEC)
            # family FamilyLocal (256), address, display "none", scheme, a zero cookie
            fields = [b"agent-s:no-cookie", b"none", b"MIT-MAGIC-COOKIE-1", bytes(16)]
            record = (256).to_bytes(2, "big") + b"".join(
                len(f).to_bytes(2, "big") + f for f in fields
            )
            os.write(fd, record)
            path = f"/proc/self/fd/{fd}"
        _NO_COOKIE.append(path)
    return _NO_COOKIE[0]


__all__ = ["cookie_file", "no_cookie_file"]
