"""Write a fixed file so that a crash at any moment leaves either the old bytes or the new ones."""

from __future__ import annotations

import os
import stat
import tempfile


class ChangedOnDisk(Exception):
    """The file no longer holds the text the fix was computed from; nothing was written."""


def atomic_write(path: str, data: bytes, expected: bytes | None = None) -> None:
    """Replace `path` with `data`: temp file in the same folder, fsync, os.replace.

    The file keeps its permission bits; a symlink keeps pointing at the file, which is the one
    rewritten. With `expected`, refuse (ChangedOnDisk) if the file changed since it was read,
    so an editor's save between our read and our write is never overwritten.
    """
    target = os.path.realpath(path)
    directory = os.path.dirname(target)
    mode = stat.S_IMODE(os.stat(target).st_mode)
    fd, temp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(target)}.", suffix=".accumlint-tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, mode)
        if expected is not None:
            with open(target, "rb") as current:
                if current.read() != expected:
                    raise ChangedOnDisk(f"{path} changed while it was being fixed")
        os.replace(temp, target)
    except BaseException:
        try:
            os.unlink(temp)
        except FileNotFoundError:
            pass
        raise
    _fsync_dir(directory)


def _fsync_dir(directory: str) -> None:
    # Makes the rename itself durable; not possible on every platform, and not worth failing for.
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
