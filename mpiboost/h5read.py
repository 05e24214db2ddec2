"""HDF5 files opened for reading without file locks.

HDF5 (1.10 and later) takes a ``flock`` on every file it opens, for reading too. NFS mounts without a
lock daemon and some Lustre and GPFS set-ups refuse it ("unable to lock file"), so a job could not read
its own data on the shared file systems clusters have. mpiboost never reads a file while it is being
written (every output is written to a temporary name and renamed into place), so reading needs no lock:
:func:`open_read` opens without one (h5py's ``locking=False``; ``HDF5_USE_FILE_LOCKING`` is left to the
user for other programs).
"""
from __future__ import annotations

import os
from typing import Any

from .errors import InputError


def open_read(path: str | os.PathLike) -> Any:
    """``h5py.File(path, "r")`` without HDF5's file lock (with it where the HDF5 library has no such switch)."""
    import h5py

    try:
        return h5py.File(path, "r", locking=False)
    except TypeError:  # h5py < 3.5 takes no ``locking``
        return h5py.File(path, "r")
    except ValueError as exc:  # HDF5 < 1.10.7 / 1.12.1: no switch (h5py names the version needed)
        if "lock" not in str(exc).lower():
            raise
        return h5py.File(path, "r")


def open_checked(path: str | os.PathLike, what: str = "HDF5 file") -> Any:
    """:func:`open_read` of a file given by the user, every failure an :class:`InputError` naming it.

    The path must name a regular file: a FIFO or a device would block the open or never end, and a missing
    file or a directory says so rather than what HDF5 makes of it. ``what`` names the kind of file expected
    ("HDF5 model file", ...) in the messages.
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise InputError(f"{path}: no such file")
    if not os.path.isfile(path):
        raise InputError(f"{path}: not a regular file (a directory, FIFO, device or socket)")
    try:
        return open_read(path)
    except (OSError, RuntimeError, ValueError) as exc:
        raise InputError(f"{path}: not a readable {what} ({exc})") from None
