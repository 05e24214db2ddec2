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
