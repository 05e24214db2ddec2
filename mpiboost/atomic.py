"""Atomic file writes: write a temporary file beside the target, then rename it.

A reader never sees a half-written model, checkpoint or data file, and a
failed write leaves the previous file (if any) untouched.
"""
from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from typing import Iterator


def temporary_beside(path: str | os.PathLike) -> str:
    """Create an empty temporary file in ``path``'s directory; returns its name."""
    path = os.fspath(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=os.path.dirname(path) or ".")
    os.close(fd)
    # mkstemp makes the file private (0600); give it the permissions a plain open() would.
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)
    return tmp


def discard(tmp: str) -> None:
    if os.path.exists(tmp):
        os.unlink(tmp)


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
