"""mutter's own D-Bus interfaces, spoken from one long-lived connection: a RemoteDesktop session
linked to a ScreenCast session, its PipeWire streams read with GStreamer, and its clipboard.

mutter ends a remote-desktop session when the connection that made it leaves the bus, so a
``MutterSession`` owns one private connection to the session bus for its whole life, and a
thread of its own runs the GLib main loop that connection's signals arrive on (the stream's
PipeWire node, and the clipboard requests of applications that paste what we offered).

- ``org.gnome.Mutter.RemoteDesktop``: ``CreateSession``; input goes to its session object
  (``NotifyPointerMotionAbsolute`` on a stream, ``NotifyPointerButton`` with evdev codes,
  ``NotifyPointerAxisDiscrete``, ``NotifyKeyboardKeysym``); its clipboard is
  ``EnableClipboard``, ``SetSelection`` / ``SelectionTransfer`` / ``SelectionWrite`` (what we
  offer) and ``SelectionRead`` (what another client offers);
- ``org.gnome.Mutter.ScreenCast``: ``CreateSession`` with ``remote-desktop-session-id``, one
  ``RecordMonitor`` per monitor with the cursor hidden; ``Start`` (of the remote-desktop
  session) makes each stream announce its PipeWire node (``PipeWireStreamAdded``);
- ``org.gnome.Mutter.DisplayConfig``: ``GetCurrentState``, the monitors and their layout.

Each stream is read by ``pipewiresrc fd=F path=N ! videoconvert ! appsink`` on a socket of our
own to the session's PipeWire (so this process's environment does not matter). mutter sends a
frame when the screen changes, and none while it stays still, so the latest one is kept.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_s.errors import ActionExecutionError, DesktopSetupError, DisplayUnavailableError

REMOTE_DESKTOP = "org.gnome.Mutter.RemoteDesktop"
SCREEN_CAST = "org.gnome.Mutter.ScreenCast"
DISPLAY_CONFIG = "org.gnome.Mutter.DisplayConfig"
CALL_TIMEOUT_MS = 5000
STREAM_TIMEOUT = 10.0  # the PipeWire node of a stream, then its first frame
FIRST_FRAME_TIMEOUT = 5.0
FRESH_AFTER_INPUT = 0.1  # a capture this soon after input waits for the frames it caused
_CURSOR_HIDDEN = 0  # RecordMonitor's cursor-mode: hidden, embedded, metadata
TEXT_MIME = "text/plain;charset=utf-8"
_TEXT_MIMES = (TEXT_MIME, "text/plain", "UTF8_STRING", "STRING", "TEXT")


def gi_modules() -> tuple[Any, Any, Any]:
    """(Gio, GLib, Gst), or ``DesktopSetupError`` naming the packages."""
    try:
        import gi

        gi.require_version("Gio", "2.0")
        gi.require_version("Gst", "1.0")
        from gi.repository import Gio, GLib, Gst
    except (ImportError, ValueError) as err:
        raise DesktopSetupError(
            f"the GNOME backend needs PyGObject and GStreamer's bindings ({err}): apt-get "
            "install python3-gi gir1.2-gstreamer-1.0 gstreamer1.0-pipewire, and use a Python "
            "that sees them (a venv made with --system-site-packages)"
        ) from err
    Gst.init(None)
    if Gst.ElementFactory.find("pipewiresrc") is None:
        raise DesktopSetupError(
            "GStreamer has no pipewiresrc, which reads mutter's screencast: apt-get install "
            "gstreamer1.0-pipewire"
        )
    return Gio, GLib, Gst


@dataclass(frozen=True)
class MutterMonitor:
    """A monitor as mutter lays it out: ``x, y, width, height`` in logical points, ``scale``
    pixels per point, ``connector`` its name (what ``RecordMonitor`` takes)."""

    connector: str
    x: int
    y: int
    width: int
    height: int
    scale: float
    primary: bool


class _Stream:
    """One monitor's screencast: its D-Bus object, its PipeWire node, its GStreamer reader."""

    def __init__(self, monitor: MutterMonitor, path: str) -> None:
        self.monitor = monitor
        self.path = path
        self.node: int | None = None
        self.pipeline: Any = None
        self.sink: Any = None
        self.socket: socket.socket | None = None
        self.frame: tuple[int, int, bytes] | None = None  # width, height, RGBx bytes


class MutterSession:
    """A remote-desktop session with a screencast of every monitor, owned by one private
    connection to the session bus named in ``env`` (``DBUS_SESSION_BUS_ADDRESS``), and the
    PipeWire socket of ``env``'s runtime folder. ``close()`` stops the session."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self._gio, self._glib, self._gst = gi_modules()
        address = env.get("DBUS_SESSION_BUS_ADDRESS")
        if not address:
            raise DisplayUnavailableError(
                "the GNOME backend reaches mutter on the session bus, and "
                "DBUS_SESSION_BUS_ADDRESS is not set: run inside the GNOME session"
            )
        self._env = dict(env)
        self._context = self._glib.MainContext.new()
        self._loop = self._glib.MainLoop.new(self._context, False)
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._offer: str | None = None  # the text our clipboard offers, None: not ours
        self._owner_changes = 0
        self._closed = False
        self.last_input = 0.0  # monotonic time of the last input sent
        self.clipboard = False  # the session's clipboard is enabled
        self.clipboard_error = ""
        self._subscriptions: list[int] = []
        self._conn = self._connect(address)
        self.streams: list[_Stream] = []
        self.session = ""
        # Subscribed before the loop runs (its context is then the loop thread's), for every
        # object path; each handler picks its own objects.
        self._subscribe(f"{SCREEN_CAST}.Stream", "PipeWireStreamAdded", self._node_added)
        session_signals: dict[str, Callable[..., None]] = {
            "SelectionTransfer": self._selection_transfer,
            "SelectionOwnerChanged": self._owner_changed,
            "Closed": self._session_closed,
        }
        for member, handler in session_signals.items():
            self._subscribe(f"{REMOTE_DESKTOP}.Session", member, handler)
        self._thread = threading.Thread(target=self._run_loop, name="mutter", daemon=True)
        self._thread.start()
        try:
            self._start()
        except BaseException:
            self.close()
            raise

    # -- the connection and its loop ------------------------------------------------------------

    def _connect(self, address: str) -> Any:
        gio, glib = self._gio, self._glib
        flags = (
            gio.DBusConnectionFlags.AUTHENTICATION_CLIENT
            | gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION
        )
        self._context.push_thread_default()  # signals arrive on our loop's context
        try:
            return gio.DBusConnection.new_for_address_sync(address, flags, None, None)
        except glib.Error as err:
            raise DisplayUnavailableError(
                f"cannot reach the session bus {address}: {err.message}. Run inside the GNOME "
                "session (DBUS_SESSION_BUS_ADDRESS names its bus)"
            ) from err
        finally:
            self._context.pop_thread_default()

    def _run_loop(self) -> None:
        self._context.push_thread_default()
        try:
            self._loop.run()
        finally:
            self._context.pop_thread_default()

    def _subscribe(self, interface: str, member: str, handler: Callable[..., None]) -> None:
        """``handler(path, *values)`` for the signal from any object."""

        def on_signal(_c: Any, _s: Any, path: str, _i: Any, _m: Any, params: Any) -> None:
            handler(path, *params.unpack())

        self._context.push_thread_default()
        try:
            self._subscriptions.append(
                self._conn.signal_subscribe(
                    None, interface, member, None, None, self._gio.DBusSignalFlags.NONE, on_signal
                )
            )
        finally:
            self._context.pop_thread_default()

    def call(
        self,
        name: str,
        path: str,
        interface: str,
        method: str,
        args: str | None = None,
        *values: Any,
        fds: list[int] | None = None,
    ) -> Any:
        """Call a method; the reply's values (file descriptors as ints we own). D-Bus errors
        become ``ActionExecutionError`` naming the method, or ``DisplayUnavailableError`` when
        mutter is gone."""
        gio, glib = self._gio, self._glib
        params = glib.Variant(args, values) if args is not None else None
        in_fds = None
        if fds:
            in_fds = gio.UnixFDList.new()
            for fd in fds:
                in_fds.append(fd)
        try:
            reply, out_fds = self._conn.call_with_unix_fd_list_sync(
                name,
                path,
                interface,
                method,
                params,
                None,
                gio.DBusCallFlags.NONE,
                CALL_TIMEOUT_MS,
                in_fds,
                None,
            )
        except glib.Error as err:
            gone = ("ServiceUnknown", "NameHasNoOwner", "Disconnected", "UnknownObject", "closed")
            if any(g in err.message for g in gone):
                raise DisplayUnavailableError(
                    f"mutter is not reachable ({interface}.{method}: {err.message}); is the "
                    "GNOME session still running?"
                ) from err
            raise ActionExecutionError(f"mutter refused {method}: {err.message}") from err
        values_out = reply.unpack() if reply is not None else ()
        if out_fds is not None and out_fds.get_length():
            return values_out, out_fds.steal_fds()
        return values_out

    # -- the session ----------------------------------------------------------------------------

    def monitors(self) -> list[MutterMonitor]:
        """The logical monitors, from ``DisplayConfig.GetCurrentState``."""
        _serial, physical, logical, props = self.call(
            DISPLAY_CONFIG,
            "/org/gnome/Mutter/DisplayConfig",
            DISPLAY_CONFIG,
            "GetCurrentState",
        )
        sizes: dict[str, tuple[int, int]] = {}
        for (connector, *_ids), modes, _mprops in physical:
            for _id, width, height, _rate, _pref, _scales, mode_props in modes:
                if mode_props.get("is-current"):
                    sizes[connector] = (width, height)
        physical_layout = props.get("layout-mode") == 2
        found = []
        for x, y, scale, transform, primary, members, _lprops in logical:
            connector = members[0][0]
            width, height = sizes.get(connector, (0, 0))
            if transform % 2:  # 90 or 270 degrees
                width, height = height, width
            if not physical_layout:
                width, height = round(width / scale), round(height / scale)
            found.append(MutterMonitor(connector, x, y, width, height, float(scale), primary))
        return found

    def _start(self) -> None:
        try:
            (rd_path,) = self.call(
                REMOTE_DESKTOP, "/org/gnome/Mutter/RemoteDesktop", REMOTE_DESKTOP, "CreateSession"
            )
        except DisplayUnavailableError as err:
            raise DisplayUnavailableError(
                f"mutter's {REMOTE_DESKTOP} is not on the session bus "
                f"({self._env.get('DBUS_SESSION_BUS_ADDRESS')}): the GNOME backend drives GNOME "
                "Shell through mutter's RemoteDesktop and ScreenCast D-Bus interfaces "
                f"({err.__cause__ or err})"
            ) from err
        self.session = rd_path
        session_id = self.call(
            REMOTE_DESKTOP,
            rd_path,
            "org.freedesktop.DBus.Properties",
            "Get",
            "(ss)",
            f"{REMOTE_DESKTOP}.Session",
            "SessionId",
        )[0]
        (sc_path,) = self.call(
            SCREEN_CAST,
            "/org/gnome/Mutter/ScreenCast",
            SCREEN_CAST,
            "CreateSession",
            "(a{sv})",
            {"remote-desktop-session-id": self._glib.Variant("s", session_id)},
        )
        for monitor in self.monitors():
            (path,) = self.call(
                SCREEN_CAST,
                sc_path,
                f"{SCREEN_CAST}.Session",
                "RecordMonitor",
                "(sa{sv})",
                monitor.connector,
                {"cursor-mode": self._glib.Variant("u", _CURSOR_HIDDEN)},
            )
            with self._lock:
                self.streams.append(_Stream(monitor, path))
        self.session_call("Start")
        deadline = time.monotonic() + STREAM_TIMEOUT
        with self._changed:
            while any(s.node is None for s in self.streams):
                if time.monotonic() > deadline:
                    raise DesktopSetupError(
                        f"mutter's screencast gave no PipeWire stream in {STREAM_TIMEOUT:.0f} s: "
                        "is PipeWire running in the GNOME session?"
                    )
                self._changed.wait(0.1)
        for stream in self.streams:
            self._read_stream(stream)
        try:
            self.session_call("EnableClipboard", "(a{sv})", {})
        except ActionExecutionError as err:  # mutter before 42 has no clipboard here
            self.clipboard_error = str(err)
        else:
            self.clipboard = True

    def session_call(self, method: str, args: str | None = None, *values: Any) -> Any:
        """A method of the remote-desktop session object."""
        if method.startswith("Notify"):
            self.last_input = time.monotonic()
        return self.call(
            REMOTE_DESKTOP, self.session, f"{REMOTE_DESKTOP}.Session", method, args, *values
        )

    def _node_added(self, path: str, node: int) -> None:
        with self._changed:
            for stream in self.streams:
                if stream.path == path:
                    stream.node = int(node)
            self._changed.notify_all()

    def _session_closed(self, path: str) -> None:
        with self._changed:
            if path == self.session:
                self._closed = True
            self._changed.notify_all()

    @property
    def closed(self) -> bool:
        """mutter ended the session (the shell went away or stopped it)."""
        return self._closed

    # -- pixels ---------------------------------------------------------------------------------

    def _read_stream(self, stream: _Stream) -> None:
        gst = self._gst
        runtime = self._env.get("PIPEWIRE_RUNTIME_DIR") or self._env.get("XDG_RUNTIME_DIR", "")
        remote = Path(runtime) / (self._env.get("PIPEWIRE_REMOTE") or "pipewire-0")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(str(remote))
        except OSError as err:
            sock.close()
            raise DesktopSetupError(
                f"cannot reach PipeWire at {remote}: {err}. mutter's screencast goes through "
                "PipeWire: start it in the GNOME session (pipewire, wireplumber)"
            ) from err
        stream.socket = sock
        pipeline = gst.parse_launch(
            f"pipewiresrc fd={sock.fileno()} path={stream.node} always-copy=true "
            "! videoconvert ! video/x-raw,format=RGBx "
            "! appsink name=sink max-buffers=1 drop=true sync=false"
        )
        stream.pipeline = pipeline
        stream.sink = pipeline.get_by_name("sink")
        pipeline.set_state(gst.State.PLAYING)
        if not self._take(stream, FIRST_FRAME_TIMEOUT):
            raise DesktopSetupError(
                f"mutter's screencast of {stream.monitor.connector} sent no frame in "
                f"{FIRST_FRAME_TIMEOUT:.0f} s"
            )

    def _take(self, stream: _Stream, timeout: float) -> bool:
        """Keep the newest frame the stream sent, waiting up to ``timeout`` for one; False
        when none came (mutter sends none while the screen stays still)."""
        sample = stream.sink.emit("try-pull-sample", int(timeout * self._gst.SECOND))
        if sample is None:
            return False
        structure = sample.get_caps().get_structure(0)
        width, height = structure.get_value("width"), structure.get_value("height")
        buffer = sample.get_buffer()
        ok, info = buffer.map(self._gst.MapFlags.READ)
        if ok:
            try:
                stream.frame = (width, height, bytes(info.data))
            finally:
                buffer.unmap(info)
        return True

    def frame(self, stream: _Stream) -> tuple[int, int, bytes]:
        """The stream's latest frame: (width, height, RGBx bytes). Shortly after input, the
        frames mutter sends for it are waited for (``FRESH_AFTER_INPUT``), so that a capture
        right after a click shows what the click did."""
        self._take(stream, 0.0)
        until = self.last_input + FRESH_AFTER_INPUT
        while (left := until - time.monotonic()) > 0 and self._take(stream, left):
            pass
        if stream.frame is None:
            raise ActionExecutionError(f"no frame of {stream.monitor.connector} yet")
        return stream.frame

    # -- clipboard ------------------------------------------------------------------------------

    def offer(self, text: str) -> None:
        """Own the clipboard with ``text`` (served on request while this session lives)."""
        if not self.clipboard:
            raise ActionExecutionError(
                f"mutter refused this session a clipboard ({self.clipboard_error}): the "
                "clipboard and typing text with no key on the keymap need GNOME 42 or newer"
            )
        with self._lock:
            self._offer = text
        mimes = self._glib.Variant("as", list(_TEXT_MIMES))
        self.session_call("SetSelection", "(a{sv})", {"mime-types": mimes})

    def _owner_changed(self, path: str, options: dict[str, Any]) -> None:
        if path != self.session:
            return
        with self._changed:
            if not options.get("session-is-owner", False):
                self._offer = None
            self._owner_changes += 1
            self._changed.notify_all()

    def _selection_transfer(self, path: str, mime: str, serial: int) -> None:
        """An application pastes what we offer: write it to the fd mutter gives for it."""
        if path != self.session:
            return
        with self._lock:
            text = self._offer
        threading.Thread(
            target=self._write_selection, args=(text, serial), name="mutter-paste", daemon=True
        ).start()

    def _write_selection(self, text: str | None, serial: int) -> None:
        ok = False
        with contextlib.suppress(Exception):
            _values, fds = self.call(
                REMOTE_DESKTOP,
                self.session,
                f"{REMOTE_DESKTOP}.Session",
                "SelectionWrite",
                "(u)",
                serial,
            )
            with os.fdopen(fds[0], "wb") as out:
                if text is not None:
                    out.write(text.encode("utf-8"))
                    ok = True
        with contextlib.suppress(Exception):
            self.session_call("SelectionWriteDone", "(ub)", serial, ok)

    def offered(self) -> str | None:
        """The text this session's clipboard offers, if it still owns the clipboard."""
        with self._lock:
            return self._offer

    def read_selection(self) -> str:
        """The clipboard's text as its owner gives it; ``""`` when it holds no text."""
        for mime in _TEXT_MIMES:
            try:
                _values, fds = self.call(
                    REMOTE_DESKTOP,
                    self.session,
                    f"{REMOTE_DESKTOP}.Session",
                    "SelectionRead",
                    "(s)",
                    mime,
                )
            except ActionExecutionError:
                continue  # no owner, or not this type
            with os.fdopen(fds[0], "rb") as source:
                return _read_all(source.fileno()).decode("utf-8", "replace")
        return ""

    # -- the end --------------------------------------------------------------------------------

    def close(self) -> None:
        for stream in self.streams:
            with contextlib.suppress(Exception):
                if stream.pipeline is not None:
                    stream.pipeline.set_state(self._gst.State.NULL)
            if stream.socket is not None:
                stream.socket.close()
        if self.session and not self._closed:
            with contextlib.suppress(Exception):
                self.session_call("Stop")
        for sub in self._subscriptions:
            self._conn.signal_unsubscribe(sub)
        self._subscriptions.clear()
        with contextlib.suppress(Exception):
            self._conn.close_sync(None)
        self._loop.quit()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(2.0)


def _read_all(fd: int, timeout: float = 2.0) -> bytes:
    """What the writer at the other end of ``fd`` sends until it closes (bounded in time)."""
    import selectors

    data = b""
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not sel.select(remaining):
                raise ActionExecutionError("the clipboard's owner did not send its text in time")
            chunk = os.read(fd, 65536)
            if not chunk:
                return data
            data += chunk


__all__ = ["TEXT_MIME", "MutterMonitor", "MutterSession", "gi_modules"]
