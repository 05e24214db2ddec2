"""A stream of examples from data files, read in chunks in its global order (never the whole file at once).

:func:`scan` is a first streamed pass that checks every row before any work
is done (exit code 2 naming the file, row and feature of a bad value) and
finds the class list and which features are nominal; :func:`blocks` then
yields the stream, in the files' order or in a seeded permutation of it, as
blocks of examples.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterator, Optional, Sequence

import numpy as np

from .. import watchdog
from ..data import labels as lab
from ..data.format import FileInfo, inspect
from ..data.load import _check_features, iter_block
from ..errors import InputError
from ..h5read import open_read

AUTO_NOMINAL_VALUES = 16  # `--nominal auto`: integer codes 0..15 make a nominal feature
MAX_NOMINAL_VALUES = 1 << 16
# Counts (words of a text, dark pixels of an image) are sparse: a table of integers >= 0 is taken as counts
# when at least this share of its values is 0 (8 x 8 digits: 49%, bags of words: ~99%). Integer levels that
# never reach 0 (multispectral pixel values 27..157 in satimage) are intensities, which Gaussian leaves model
# better (measured: docs/results.md, "Online boosting on pixel streams").
COUNTS_ZERO_SHARE = 0.25
SCAN_ROWS = 1 << 16  # rows per chunk of the scan and of the stream


@dataclass
class StreamInfo:
    """What the scan found: the files, the classes, and per feature its nominal values (0: numeric)."""

    files: list
    n: int
    d: int
    classes: list
    values: list
    feature_names: Optional[list] = None
    # every value an integer >= 0 (NaN aside), some beyond a nominal code, a quarter or more of them 0: counts
    # or dark-background pixels, the data multinomial naive-Bayes leaves model (mpiboost.online.learners.resolve)
    counts: bool = False
    nonnegative: bool = False  # every value >= 0 (NaN aside): what multinomial leaves accept

    @property
    def nominal(self) -> list:
        return [j for j, v in enumerate(self.values) if v > 0]


def parse_nominal(text: str, d: Optional[int] = None) -> object:
    """``--nominal``: ``auto``, ``none`` or comma-separated 0-based feature indices (InputError if malformed)."""
    if text in ("auto", "none"):
        return text
    try:
        cols = sorted({int(t) for t in text.split(",") if t.strip() != ""})
    except ValueError:
        raise InputError(f"--nominal {text!r}: expected auto, none or feature indices like 0,1,2") from None
    if not cols or cols[0] < 0 or (d is not None and cols[-1] >= d):
        raise InputError(f"--nominal {text!r}: feature indices must be in 0..{'d-1' if d is None else d - 1}")
    return cols


def scan(paths: Sequence[str | os.PathLike], nominal="auto", chunk_rows: int = SCAN_ROWS) -> StreamInfo:
    """Check every row of ``paths`` (concatenated in order); the classes and the nominal features.

    Parameters
    ----------
    paths
        Data files with the same features.
    nominal
        ``"auto"``: a feature is nominal when every value is an integer code
        0 .. 15 (value count = the largest code + 1); ``"none"``: all
        numeric (Gaussian); or a list of feature indices whose values must be
        integer codes >= 0 (missing values, NaN, are allowed everywhere).

    Raises
    ------
    InputError
        Naming the file, row and feature of the first bad value.
    """
    files: list[FileInfo] = [p if isinstance(p, FileInfo) else inspect(p) for p in paths]  # paths or in-memory rows
    if not files:
        raise InputError("no data files given")
    from ..data.load import refuse_unlabelled

    refuse_unlabelled(files, "stream")
    d = files[0].d
    for f in files[1:]:
        if f.d != d:
            raise InputError(f"{f.path} has {f.d} features but {files[0].path} has {d}")
    n = int(sum(f.n for f in files))
    if n == 0:
        raise InputError(f"{', '.join(f.path for f in files)}: no rows")
    listed = None if nominal in ("auto", "none") else list(nominal)
    if listed is not None and listed and max(listed) >= d:
        raise InputError(f"--nominal {max(listed)}: the data have {d} features (0..{d - 1})")
    integral = np.ones(d, dtype=bool)  # every value seen so far an integer code >= 0
    whole = np.ones(d, dtype=bool)  # every value seen so far an integer >= 0, of any size
    nonneg = True
    zeros = present = 0
    top = np.full(d, -1.0)
    seen: set = set()
    for g, fi, r0, arr in iter_block(files, 0, n, what=("X", "y"), chunk_rows=chunk_rows):
        path = files[fi].path
        X = arr["X"]
        _check_features(X, path, r0)
        seen.update(lab.values_of(arr["y"], files[fi].classes))
        if files[fi].classes is not None:
            bad = (arr["y"] < 0) | (arr["y"] >= len(files[fi].classes))
            if bad.any():
                r = int(np.argmax(bad))
                raise InputError(f"{path}: dataset 'y' row {r0 + r}: {int(arr['y'][r])} is not an index of the "
                                 f"file's {len(files[fi].classes)} classes")
        Xf = X.astype(np.float64, copy=False)
        ok = np.isnan(Xf) | ((Xf >= 0) & (Xf == np.floor(Xf)) & (Xf < MAX_NOMINAL_VALUES))
        if listed is not None:
            sub = ok[:, listed]
            if not sub.all():
                r, c = np.argwhere(~sub)[0]
                j = listed[c]
                raise InputError(f"{path}: dataset 'X' row {r0 + r}, feature {j}: value {X[r, j]} is not a nominal "
                                 f"code (an integer 0..{MAX_NOMINAL_VALUES - 1}; --nominal lists feature {j})")
        integral &= ok.all(axis=0)
        with np.errstate(invalid="ignore"):
            whole &= (np.isnan(Xf) | ((Xf >= 0) & (Xf == np.floor(Xf)))).all(axis=0)
            nonneg = nonneg and bool((np.isnan(Xf) | (Xf >= 0)).all())
        zeros += int(np.count_nonzero(Xf == 0))
        present += int(np.count_nonzero(~np.isnan(Xf)))
        with np.errstate(invalid="ignore"):
            top = np.fmax(top, np.nanmax(np.where(np.isnan(Xf), -1.0, Xf), axis=0)) if len(Xf) else top
    try:
        classes = lab.canonical(seen)
    except ValueError as exc:
        raise InputError(f"{', '.join(f.path for f in files)}: {exc}") from None
    if len(classes) < 2:
        raise InputError(f"{', '.join(f.path for f in files)}: the labels hold {len(classes)} class; "
                         "boosting needs at least two")
    values = [0] * d
    for j in range(d):
        if listed is not None:
            if j in listed:
                values[j] = max(int(top[j]) + 1, 1)
        elif nominal == "auto" and integral[j] and top[j] < AUTO_NOMINAL_VALUES:
            values[j] = max(int(top[j]) + 1, 1)
    counts = bool(d and whole.all() and float(np.max(top)) >= AUTO_NOMINAL_VALUES
                  and zeros >= COUNTS_ZERO_SHARE * max(present, 1))
    return StreamInfo(files, n, d, classes, values, files[0].feature_names, counts=counts, nonnegative=nonneg)


def order_of(n: int, shuffle: Optional[int]) -> Optional[np.ndarray]:
    """The stream order: None (the files' order) or ``numpy.random.default_rng(shuffle).permutation(n)``."""
    return None if shuffle is None else np.random.default_rng(int(shuffle)).permutation(n)


def blocks(info: StreamInfo, block_size: int, order: Optional[np.ndarray] = None,
           chunk_rows: int = SCAN_ROWS) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """``(t0, X, y)``: the stream's examples ``t0 ..`` in blocks of ``block_size`` (float64 features, class indices).

    Reads ``chunk_rows`` (rounded to whole blocks) at a time: in the files'
    order with contiguous reads, or, with ``order``, the rows at those
    positions (sorted reads within each chunk).
    """
    step = max(block_size, chunk_rows // block_size * block_size)
    for t0 in range(0, info.n, step):
        t1 = min(info.n, t0 + step)
        X, y = _read(info, t0, t1, order)
        for a in range(0, t1 - t0, block_size):
            yield t0 + a, X[a:a + block_size], y[a:a + block_size]


def _read(info: StreamInfo, t0: int, t1: int, order: Optional[np.ndarray]):
    X = np.empty((t1 - t0, info.d), dtype=np.float64)
    y = np.empty(t1 - t0, dtype=np.int64)
    if order is None:
        for g, fi, r0, arr in iter_block(info.files, t0, t1, what=("X", "y")):
            m = arr["y"].shape[0]
            X[g - t0:g - t0 + m] = arr["X"]
            y[g - t0:g - t0 + m] = lab.lookup(arr["y"], info.files[fi].classes, info.classes)
        return X, y
    import h5py

    rows = order[t0:t1]
    off = np.zeros(len(info.files) + 1, dtype=np.int64)
    off[1:] = np.cumsum([f.n for f in info.files])
    for fi, f in enumerate(info.files):
        here = np.flatnonzero((rows >= off[fi]) & (rows < off[fi + 1]))
        if not len(here):
            continue
        local = rows[here] - off[fi]
        sort = np.argsort(local, kind="stable")
        if hasattr(f, "local"):  # in-memory rows (data/memory.py), every row on this rank
            X[here[sort]] = f.local["X"][local[sort]]
            y[here[sort]] = lab.lookup(f.local["y"][local[sort]], f.classes, info.classes)
            continue
        with open_read(f.path) as h:
            try:
                Xs = h["X"][local[sort]]
                ys = h["y"][local[sort]]
            except (OSError, KeyError, TypeError, ValueError, RuntimeError) as exc:
                raise InputError(f"{f.path}: rows cannot be read ({exc})") from None
        X[here[sort]] = Xs
        y[here[sort]] = lab.lookup(ys, f.classes, info.classes)
        watchdog.tick()
    return X, y


__all__ = ["StreamInfo", "scan", "blocks", "order_of", "parse_nominal"]
