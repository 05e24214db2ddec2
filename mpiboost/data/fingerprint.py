"""A cheap fingerprint of data files: what a checkpoint must match to be resumed.

Names, shapes and dtypes, the label and domain attributes, and a SHA-256 of
a fixed sample of the rows (the first and last rows and evenly spaced windows
between them): a few small reads per file whatever its size, and the same on
every rank and every run. Regenerating the same data gives the same
fingerprint; another seed, another file or edited rows almost surely do not.
"""
from __future__ import annotations

import hashlib
import os
from typing import Sequence

import numpy as np

from ..h5read import open_read

WINDOW_ROWS = 64
WINDOWS = 16
ATTRS = ("classes", "feature_names", "domain_names", "domain_name")


def _windows(n: int) -> list[tuple[int, int]]:
    if n <= WINDOW_ROWS * (WINDOWS + 2):
        return [(0, n)]
    starts = np.linspace(0, n - WINDOW_ROWS, WINDOWS + 2).astype(np.int64)
    return [(int(s), int(s) + WINDOW_ROWS) for s in starts]


def fingerprint_file(path: str) -> dict:
    """``{"file", "n", "d", "X", "y", "domain", "sample_sha256"}`` of one data file (read only)."""
    import h5py

    digest = hashlib.sha256()
    with open_read(path) as f:
        X, y = f["X"], f["y"]
        n, d = (int(s) for s in X.shape)
        dom = f["domain"] if "domain" in f else None
        for name in ATTRS:
            if name in f.attrs:
                digest.update(name.encode() + repr(np.asarray(f.attrs[name]).tolist()).encode())
        for a, b in _windows(n):
            digest.update(np.ascontiguousarray(X[a:b]).tobytes())
            digest.update(np.ascontiguousarray(y[a:b]).tobytes())
            if dom is not None:
                digest.update(np.ascontiguousarray(dom[a:b]).tobytes())
        return {
            "file": os.path.basename(path),
            "n": n,
            "d": d,
            "X": str(X.dtype),
            "y": str(y.dtype),
            "domain": dom is not None,
            "sample_sha256": digest.hexdigest(),
        }


def fingerprint(paths: Sequence[str]) -> list[dict]:
    """The fingerprints of ``paths``, in order (files must have passed :func:`mpiboost.data.format.inspect`)."""
    return [fingerprint_file(os.fspath(p)) for p in paths]


def differences(recorded: Sequence[dict], current: Sequence[dict]) -> list[str]:
    """What differs between two fingerprints, in words (empty: the same data)."""
    if len(recorded) != len(current):
        return [f"{len(recorded)} training file(s) then, {len(current)} now"]
    out = []
    for i, (a, b) in enumerate(zip(recorded, current)):
        for key in ("file", "n", "d", "X", "y", "domain"):
            if a.get(key) != b.get(key):
                out.append(f"file {i + 1} {key}: {a.get(key)!r} then, {b.get(key)!r} now")
        if not out and a.get("sample_sha256") != b.get("sample_sha256"):
            out.append(f"file {i + 1} ({b.get('file')}): the rows differ (content hash)")
    return out
