"""What the LIBSVM and CSV converters share: the result type, label mapping,
label counts, value checks, chunk sizes and the checks made before parsing."""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Optional, Sequence, Union

import numpy as np

from ...errors import InputError

CHUNK_ROWS = 1 << 16
# Cap on one dense chunk, so a wide file (many features) streams in fewer rows
# per chunk instead of allocating CHUNK_ROWS x d values at once.
CHUNK_BYTES = 64 << 20
# Entries (or CSV fields) parsed at once. Parsing holds a few hundred bytes of
# Python strings per entry, so this keeps a batch near 80 MiB however long
# the rows are.
BATCH_TOKENS = 1 << 18
INDEX_MAX = 2**31 - 1
_LABEL_CACHE_MAX = 10_000

PathLike = Union[str, "os.PathLike[str]"]


@dataclass
class ConvertResult:
    """What one conversion wrote.

    Attributes
    ----------
    source : str
        Path of the input file, as given.
    out : str
        Path of the HDF5 file written.
    n, d : int
        Rows and features written.
    x_dtype : str
        dtype of ``X``.
    label_counts : dict[int, int]
        Rows per label (-1 and +1).
    n_domains : int or None
        Distinct domain ids, or None without a domain column.
    seconds : float
        Wall time of the conversion.
    """

    source: str
    out: str
    n: int
    d: int
    x_dtype: str
    label_counts: dict
    n_domains: Optional[int]
    seconds: float

    def summary(self) -> str:
        """One human-readable line about the conversion."""
        labels = " / ".join(f"{k:+d}: {v:,}" for k, v in sorted(self.label_counts.items()))
        doms = f", {self.n_domains} domains" if self.n_domains is not None else ""
        return (
            f"converted {self.source}: {self.n:,} rows x {self.d} features ({self.x_dtype}), "
            f"labels {labels}{doms} -> {self.out} in {self.seconds:.2f} s"
        )


class _Retry(Exception):
    """The vectorized path met something it does not accept; re-check row by row."""


class _Invalid(Exception):
    """A token is invalid; the message says why (the caller adds file and line)."""


class _BadRow(Exception):
    def __init__(self, row: int, message: str):
        super().__init__(message)
        self.row = row
        self.message = message



class _LabelMap:
    """Label tokens to -1/+1, caching every distinct token seen."""

    def __init__(self, positive: Optional[str], numeric: bool):
        self._cache: dict[str, int] = {}
        self._positive = None if positive is None else positive.strip()
        self._numeric = numeric
        self._pos_value = None
        self._negative: Optional[float] = None  # -1.0 or 0.0, whichever the file uses
        self.matched = False
        if self._positive is not None and numeric:
            try:
                self._pos_value = float(self._positive)
            except ValueError:
                raise InputError(
                    f"--positive-label {positive!r}: LIBSVM labels are numbers, so the positive label must be one"
                ) from None

    def map_all(self, tokens: Sequence[str]) -> list[int]:
        cache = self._cache
        try:
            return [cache[t] for t in tokens]
        except KeyError:
            return [cache[t] if t in cache else self.lookup(t) for t in tokens]

    def lookup(self, token: str) -> int:
        """Map one token; raises ``_Invalid`` when it is not a label."""
        hint = "use --positive-label VALUE to map VALUE to +1 and every other label to -1"
        if self._positive is None:
            try:
                v = float(token)
            except ValueError:
                raise _Invalid(f"label '{token}' is not a number; binary labels are +1/-1 or 1/0 ({hint})") from None
            if v == 1.0:
                out = 1
            elif v == -1.0 or v == 0.0:
                if self._negative is None:
                    self._negative = v
                elif self._negative != v:
                    # -1, 0 and 1 together are three classes, not a binary file.
                    raise _Invalid(
                        f"label '{token}': the file uses both -1 and 0 as labels, "
                        f"so it has more than two classes ({hint})"
                    )
                out = -1
            else:
                raise _Invalid(f"label '{token}' is not a binary label (+1/-1 or 1/0); {hint}")
        elif self._numeric:
            try:
                v = float(token)
            except ValueError:
                raise _Invalid(f"label '{token}' is not a number") from None
            out = 1 if v == self._pos_value else -1
        else:
            out = 1 if token.strip() == self._positive else -1
        if out == 1 and self._positive is not None:
            self.matched = True
        if len(self._cache) < _LABEL_CACHE_MAX:
            self._cache[token] = out
        return out


class _Counts:
    """Running label counts of the rows written."""

    def __init__(self) -> None:
        self.pos = 0
        self.neg = 0

    def add(self, y: np.ndarray) -> None:
        p = int(np.count_nonzero(y == 1))
        self.pos += p
        self.neg += int(y.size) - p

    def as_dict(self) -> dict:
        return {-1: self.neg, 1: self.pos}


def _chunk_rows(d: int, dtype: np.dtype) -> int:
    return int(max(1, min(CHUNK_ROWS, CHUNK_BYTES // max(1, d * dtype.itemsize))))


def _value_max(dtype: np.dtype) -> float:
    return float(np.finfo(dtype).max)


def _check_value(text: str, vmax: float, dtype: np.dtype) -> Optional[str]:
    """Why ``text`` is not a storable feature value, or None if it is."""
    try:
        v = float(text)
    except ValueError:
        return "is not a number"
    if v != v or v in (float("inf"), float("-inf")):
        return "is not a finite number"
    if abs(v) > vmax:
        return f"does not fit in {dtype} (use --dtype float64)"
    return None



def _check_common(path: PathLike, out: PathLike, limit: Optional[int]) -> None:
    """Checks that need no parsing, so they fail before a long first pass."""
    if limit is not None and limit < 1:
        raise InputError(f"--limit must be at least 1, got {limit}")
    if os.path.isdir(out):
        raise InputError(f"{os.fspath(out)}: is a directory; --out names the HDF5 file to write")
    parent = os.path.dirname(os.fspath(out)) or "."
    if not os.path.isdir(parent):
        raise InputError(f"{os.fspath(out)}: directory {parent} does not exist")
    if os.path.exists(path) and os.path.exists(out) and os.path.samefile(path, out):
        raise InputError(f"{os.fspath(out)}: the output file is the input file")


def _warn_unmatched(labels: _LabelMap, positive: Optional[str]) -> None:
    if positive is not None and not labels.matched:
        print(
            f"mpiboost: warning: --positive-label {positive!r} matched no row; every label is -1",
            file=sys.stderr,
        )
