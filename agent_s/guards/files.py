"""Files stay in their folder: the lock every reader of a recorded folder and every writer of
an output file takes.

Reading: a name taken from a recorded file (a step's screenshot, a task's ``screenshot_file``,
the folder's own ``run.json``) is looked up with ``inside(folder, name)``, which gives the real
path only when it resolves inside ``folder``: an absolute name, a ``..`` that climbs out, and a
symbolic link (anywhere on the way) that leads out are refused (``OutsideFolder``). ``contained``
does the same but skips: the refusal becomes one line naming the path (``skipped``) and the
caller carries on without the file. ``read_bytes`` / ``read_text`` open the checked path with
``O_NOFOLLOW``.

    shot = contained(run_dir, step.screenshot, "step 3's screenshot")   # None: skipped, said so

Writing: ``write_bytes`` / ``write_text`` / ``AtomicFile`` (a page written part by part) /
``copy_into`` create a temporary file in the output folder (``O_CREAT | O_EXCL | O_NOFOLLOW``
under an unpredictable name, opened relative to the folder's own descriptor), then rename it onto
the final name (``os.replace``, which replaces a symbolic link planted there instead of writing
through it). ``open_append`` opens a log for appending with ``O_NOFOLLOW``. The output folder is
made by ``output_folder``: ``mkdir`` of each missing folder (which follows no link) and a folder
that is a symbolic link (or, below ``base``, has one on the way) refused with one line
(``UnsafeFolder``).

Standard library only: every stage may import this module.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import sys
from collections import deque
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path, PurePath
from types import TracebackType
from typing import IO, Any, TypeVar

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


_Self = TypeVar("_Self", bound="AtomicFile")


class OutsideFolder(ValueError):
    """A path taken from a recorded file leads out of its folder; never read."""

    def __init__(self, name: str, folder: Path, why: str) -> None:
        super().__init__(f"{name!r}: it {why}")
        self.name = name
        self.folder = folder


class UnsafeFolder(OSError):
    """An output folder that is a symbolic link (or not a folder): nothing is written there."""


# -- reading a recorded folder ----------------------------------------------------------------


def inside(folder: Path | str, name: str | PurePath) -> Path:
    """The real path of ``name`` (relative, as a recorded file gives it) in ``folder``, when it
    resolves inside ``folder``; ``OutsideFolder`` when it is absolute, climbs out with ``..``,
    or passes through a symbolic link that leads out."""
    text = os.fspath(name)
    base = Path(folder)
    if not text or "\x00" in text:
        raise OutsideFolder(text, base, f"is not a file name in {base}")
    if PurePath(text).is_absolute() or text.startswith(("/", "\\")):
        raise OutsideFolder(text, base, f"is an absolute path, not a name inside {base}")
    try:
        top = base.resolve()
        real = (top / text).resolve()
    except (OSError, RuntimeError, ValueError):  # a loop of links, a bad name
        raise OutsideFolder(text, base, f"cannot be resolved inside {base}") from None
    if real != top and top not in real.parents:
        if ".." in PurePath(text).parts:
            raise OutsideFolder(text, base, f"climbs out of {base} with '..'")
        raise OutsideFolder(text, base, f"leads out of {base} through a symbolic link")
    return real


_SINK: ContextVar[list[str] | None] = ContextVar("agent_s_skipped_paths", default=None)
_SAID: deque[str] = deque(maxlen=256)  # lines already written to stderr (one line per path)


def skipped(message: str) -> None:
    """Say that a path was skipped: into the list ``collect_skips`` gives, when one is open,
    else as one line on stderr (each line once)."""
    sink = _SINK.get()
    if sink is not None:
        if message not in sink:
            sink.append(message)
        return
    if message in _SAID:
        return
    _SAID.append(message)
    sys.stderr.write(f"agent-s: skipped {message}\n")
    sys.stderr.flush()


@contextlib.contextmanager
def collect_skips() -> Iterator[list[str]]:
    """Inside this block, ``skipped`` lines go into the list given (to put them in a result)
    instead of stderr."""
    found: list[str] = []
    token = _SINK.set(found)
    try:
        yield found
    finally:
        _SINK.reset(token)


def contained(folder: Path | str, name: str | PurePath, what: str = "") -> Path | None:
    """``inside(folder, name)``, or None after saying (``skipped``) which path was left out."""
    try:
        return inside(folder, name)
    except OutsideFolder as refused:
        skipped(f"{what + ' ' if what else ''}{refused}; not read")
        return None


def read_bytes(path: Path) -> bytes:
    """The bytes of ``path`` (one ``inside`` gave), opened without following a link."""
    fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC)
    with os.fdopen(fd, "rb") as handle:
        return handle.read()


def read_text(path: Path, errors: str = "strict") -> str:
    """``read_bytes`` as UTF-8 text."""
    return read_bytes(path).decode("utf-8", errors)


def open_read(path: Path) -> IO[bytes]:
    """``path`` (one ``inside`` gave) open for reading, without following a link."""
    return os.fdopen(os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC), "rb")


# -- writing output files -----------------------------------------------------------------------


def _refuse_link(folder: Path) -> None:
    if folder.is_symlink():
        raise UnsafeFolder(
            f"{folder} is a symbolic link: agent-s writes only into a real folder; give the "
            f"folder it points to ({os.path.realpath(folder)}) or another one"
        )
    if os.path.lexists(folder) and not folder.is_dir():
        raise UnsafeFolder(f"{folder} is not a folder: give a folder to write into")


def output_folder(folder: Path | str, *, base: Path | str | None = None, mode: int = 0o777) -> Path:
    """``folder``, made when missing (``mkdir``, which follows no link, for each missing
    folder, with ``mode`` less the umask); ``UnsafeFolder`` when it is a symbolic link, or when a
    folder below ``base`` on the way to it is one."""
    folder = Path(folder)
    chain = [folder, *folder.parents]
    below = chain.index(Path(base)) if base is not None and Path(base) in chain else 1
    chain = chain[: max(below, 1)]  # the folder itself always, and each one below ``base``
    for step in reversed(chain):  # the outermost first: each checked before it is entered
        _refuse_link(step)
        if not os.path.lexists(step):
            step.parent.mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(FileExistsError):
                os.mkdir(step, mode)
            _refuse_link(step)
    return folder


def _open_folder(folder: Path) -> int:
    try:
        return os.open(folder, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC)
    except OSError as err:
        if err.errno in (errno.ELOOP, errno.ENOTDIR):
            _refuse_link(folder)
        raise


class AtomicFile:
    """A file written into a temporary file in its folder (created with ``O_EXCL |
    O_NOFOLLOW``, under an unpredictable name) that replaces ``path`` on ``commit``; nothing is
    left behind by ``abandon``. ``mode``: the new file's permissions (less the umask)."""

    def __init__(self, path: Path | str, *, mode: int = 0o666, text: bool = False) -> None:
        self.path = Path(path)
        output_folder(self.path.parent)
        self._dir = _open_folder(self.path.parent)
        self._temp = ""
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
        try:
            for _ in range(100):
                name = f".{self.path.name[:200]}.{secrets.token_hex(8)}.tmp"
                try:
                    fd = os.open(name, flags, mode, dir_fd=self._dir)
                except FileExistsError:
                    continue
                self._temp = name
                break
            else:
                raise FileExistsError(f"cannot make a temporary file in {self.path.parent}")
        except BaseException:
            os.close(self._dir)
            raise
        self.file: IO[Any] = (
            os.fdopen(fd, "w", encoding="utf-8", newline="") if text else os.fdopen(fd, "wb")
        )

    def commit(self, *, sync: bool = False) -> Path:
        """The temporary file becomes ``path`` (a link planted at ``path`` is replaced)."""
        try:
            self.file.flush()
            if sync:
                os.fsync(self.file.fileno())
            self.file.close()
            os.replace(self._temp, self.path.name, src_dir_fd=self._dir, dst_dir_fd=self._dir)
            if sync:
                os.fsync(self._dir)
        except BaseException:
            self.abandon()
            raise
        os.close(self._dir)
        self._dir = -1
        return self.path

    def abandon(self) -> None:
        """Close and remove the temporary file; ``path`` is left as it was."""
        self.file.close()
        if self._dir >= 0:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._temp, dir_fd=self._dir)
            os.close(self._dir)
            self._dir = -1

    def __enter__(self: _Self) -> _Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if kind is None:
            self.commit()
        else:
            self.abandon()


def write_bytes(path: Path | str, data: bytes, *, mode: int = 0o666, sync: bool = False) -> Path:
    """``data`` as the file ``path``, atomically and following no link (``AtomicFile``)."""
    target = AtomicFile(path, mode=mode)
    try:
        target.file.write(data)
    except BaseException:
        target.abandon()
        raise
    return target.commit(sync=sync)


def write_text(path: Path | str, text: str, *, mode: int = 0o666, sync: bool = False) -> Path:
    """``text`` (UTF-8) as the file ``path``: ``write_bytes``."""
    return write_bytes(path, text.encode("utf-8"), mode=mode, sync=sync)


def copy_into(source: Path, target: Path | str) -> Path:
    """Copy ``source`` (a path ``inside`` gave, opened without following a link) to ``target``
    (``AtomicFile``)."""
    with open_read(source) as reader, AtomicFile(target) as out:
        while chunk := reader.read(1 << 20):
            out.file.write(chunk)
    return Path(target)


def open_append(path: Path | str, *, mode: int = 0o666) -> IO[str]:
    """``path`` open for appending text (made when missing), following no link: a link planted
    at ``path`` is refused (``OSError``), and so is a folder that is one."""
    path = Path(path)
    folder = _open_folder(output_folder(path.parent))
    try:
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW | _CLOEXEC
        fd = os.open(path.name, flags, mode, dir_fd=folder)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise UnsafeFolder(
                f"{path} is a symbolic link: agent-s appends only to a real file; remove it"
            ) from None
        raise
    finally:
        os.close(folder)
    return os.fdopen(fd, "a", encoding="utf-8")


__all__ = [
    "AtomicFile",
    "OutsideFolder",
    "UnsafeFolder",
    "collect_skips",
    "contained",
    "copy_into",
    "inside",
    "open_append",
    "open_read",
    "output_folder",
    "read_bytes",
    "read_text",
    "skipped",
    "write_bytes",
    "write_text",
]
