"""Atomic file writes: write a temporary file beside the target, then rename it.

A reader never sees a half-written model, checkpoint or data file, and a
failed write leaves the previous file (if any) untouched and no temporary
file behind. Temporary names say who made them
(``.NAME.mpiboost-HOST-PID-RANDOM.tmp``), so a later run can remove those a
killed process left (:func:`clean_stale`) without touching a live job's.
"""
from __future__ import annotations

import os
import platform
import re
import tempfile
import time
from contextlib import contextmanager
from typing import Iterator

_STALE = re.compile(r"^\.(?P<base>.+)\.mpiboost-(?P<host>[^.]*)-(?P<pid>\d+)-[^.]*\.tmp$")
STALE_ELSEWHERE_SECONDS = 24 * 3600  # a temporary file of another host: removed only when this old


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", platform.node())[:64]


def temporary_beside(path: str | os.PathLike) -> str:
    """Create an empty temporary file in ``path``'s directory; returns its name."""
    path = os.fspath(path)
    prefix = f".{os.path.basename(path)}.mpiboost-{_host()}-{os.getpid()}-"
    fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=os.path.dirname(path) or ".")
    os.close(fd)
    # mkstemp makes the file private (0600); give it the permissions a plain open() would.
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)
    return tmp


def why(exc: BaseException) -> str:
    """A short reason for a failed write (h5py's messages bury the errno in a page of detail)."""
    if getattr(exc, "strerror", None):
        return str(exc.strerror)
    m = re.search(r"errno = (\d+)", str(exc))
    if m:
        return os.strerror(int(m.group(1)))
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def discard(tmp: str) -> None:
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def clean_stale(path: str | os.PathLike) -> list[str]:
    """Remove the temporary files of ``path`` that a dead mpiboost process left; the names removed.

    Ours only: a name of our pattern for this very target, made on this host
    by a process that no longer runs, or on another host over a day ago.
    """
    path = os.fspath(path)
    folder = os.path.dirname(path) or "."
    base = os.path.basename(path)
    removed = []
    try:
        names = os.listdir(folder)
    except OSError:
        return removed
    host, now = _host(), time.time()
    for name in names:
        m = _STALE.match(name)
        if m is None or m["base"] != base:
            continue
        full = os.path.join(folder, name)
        try:
            if m["host"] == host:
                if _alive(int(m["pid"])):
                    continue
            elif now - os.lstat(full).st_mtime < STALE_ELSEWHERE_SECONDS:
                continue
            os.unlink(full)
            removed.append(full)
        except OSError:
            continue
    return removed


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[str]:
    """Yield a temporary name to write to; it replaces ``path`` when the block succeeds."""
    tmp = temporary_beside(path)
    try:
        yield tmp
        os.replace(tmp, os.fspath(path))
    except BaseException:
        discard(tmp)
        raise


def write_bytes(path: str | os.PathLike, data) -> None:
    """Write ``data`` (bytes or a buffer) to ``path`` atomically, flushed to disk before the rename.

    Models are built in memory and written with plain file I/O: a full disk
    then raises OSError, where HDF5's own failed writes can leave its library
    in a state that crashes the process.
    """
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
