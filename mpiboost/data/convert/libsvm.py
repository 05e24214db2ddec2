"""LIBSVM/svmlight text to HDF5: `label idx:val idx:val ...`, one row a line."""
from __future__ import annotations

import math
import os
import time
from typing import Iterator, Optional

import numpy as np

from ...errors import InputError
from ..format import MAX_FEATURES, DatasetWriter
from . import common
from .common import (
    BATCH_TOKENS,
    ConvertResult,
    PathLike,
    _BadRow,
    _check_common,
    _check_value,
    _chunk_rows,
    _Counts,
    _TargetCounts,
    _TargetMap,
    refuse_continuous,
    _Invalid,
    _LabelMap,
    _Retry,
    _value_max,
    _warn_unmatched,
)
from .source import _Progress, _Source

_INDEX_CACHE_MAX = 1 << 20
# Largest feature index taken without --n-features. Rows are stored dense,
# so the largest index sets the width of every row: one corrupt or mistyped
# index (a 12:0.5 garbled into 1200000000:0.5) would make every row that
# many floats wide. Wider data must say how wide it is.
AUTO_INDEX_MAX = 1_000_000
CAP_HINT = (
    ": is this classification data? (LIBSVM regression targets are real numbers; "
    "--positive-label V makes V +1 and every other label -1)"
)
_NOT_SEPARATORS = bytes(b for b in range(256) if b not in b" :")


class _LibsvmBatch:
    __slots__ = ("lines", "labels", "counts", "tokens")

    def __init__(self) -> None:
        self.lines: list[int] = []
        self.labels: list[str] = []
        self.counts: list[int] = []
        self.tokens: list[str] = []

    def __len__(self) -> int:
        return len(self.labels)


def _libsvm_batches(src: _Source, rows: int, limit: Optional[int]) -> Iterator[_LibsvmBatch]:
    """Split lines into label and entry tokens; parsing happens per batch.

    A batch ends after ``rows`` rows or about ``BATCH_TOKENS`` entries, which
    bounds the memory of the token lists for files with long rows.
    """
    numbered = enumerate(src.lines(), 1)
    total = 0
    while True:
        batch = _LibsvmBatch()
        add_line, add_label, add_count = batch.lines.append, batch.labels.append, batch.counts.append
        tokens = batch.tokens
        cap = rows if limit is None else min(rows, limit - total)
        m = 0
        for lineno, line in numbered:
            if "#" in line:
                line = line[: line.index("#")]
            parts = line.split()
            if not parts:
                continue
            if ":" in parts[0]:
                # "1:0.5 3:2" with its label missing would read the first entry as a label
                raise InputError(f"{src.name}:{lineno}: the line starts with the entry {parts[0]!r}, not a label "
                                 "(LIBSVM lines are: LABEL INDEX:VALUE ...)")
            add_line(lineno)
            add_label(parts[0])
            add_count(len(parts) - 1)
            tokens += parts[1:]
            m += 1
            if m == cap or len(tokens) >= BATCH_TOKENS:
                break
        else:
            if m:
                yield batch
            return
        total += m
        yield batch
        if limit is not None and total >= limit:
            return


class _LibsvmParser:
    """Parse LIBSVM batches into (row, column, value) triplets and labels."""

    def __init__(self, name: str, labels: _LabelMap, n_features: Optional[int], dtype: np.dtype):
        self.name = name
        self.labels = labels
        self.n_features = n_features
        self.dtype = dtype
        self.vmax = _value_max(dtype)
        self._index_cache: dict[str, int] = {}

    def parse(self, batch: _LibsvmBatch) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Labels, row ids, 0-based columns and values of one batch."""
        try:
            return self._fast(batch)
        except _Retry:
            pass
        try:
            self._check_rows(batch)
        except _BadRow as bad:
            raise InputError(f"{self.name}:{batch.lines[bad.row]}: {bad.message}") from None
        raise AssertionError("LIBSVM fast path rejected a batch the row checks accept")  # pragma: no cover

    def _fast(self, batch: _LibsvmBatch):
        try:
            y = np.asarray(self.labels.map_all(batch.labels), dtype=self.labels.code_dtype)
        except _Invalid:
            raise _Retry from None
        toks = batch.tokens
        n = len(toks)
        counts = np.asarray(batch.counts, dtype=np.int64)
        if n == 0:
            empty = np.zeros(0, dtype=np.int64)
            return y, empty, empty, np.zeros(0)
        joined = " ".join(toks)
        # Every token must be exactly "index:value": then the separators of the
        # joined batch alternate ': : ...' with nothing empty around them. One
        # bytes.translate checks that for the whole batch at C speed.
        raw = joined.encode("utf-8", "replace")
        if raw.translate(None, _NOT_SEPARATORS) != b": " * (n - 1) + b":":
            raise _Retry
        if raw.startswith(b":") or raw.endswith(b":") or b" :" in raw or b": " in raw:
            raise _Retry
        # One split of the joined batch is much faster than a split per token.
        flat = joined.replace(":", " ").split()
        idx_s, val_s = flat[0::2], flat[1::2]
        cols = self._indices(idx_s)
        try:
            vals = np.fromiter(map(float, val_s), dtype=np.float64, count=n)
        except ValueError:
            raise _Retry from None
        top = self.n_features if self.n_features is not None else AUTO_INDEX_MAX
        if cols.min() < 1 or cols.max() > top:
            raise _Retry
        # Also rejects NaN and inf (comparisons with NaN are false).
        if not (np.abs(vals) <= self.vmax).all():
            raise _Retry
        rows = np.repeat(np.arange(len(batch), dtype=np.int64), counts)
        key = rows * (int(cols.max()) + 1) + cols
        step = np.diff(key)
        if step.size and not (step > 0).all():
            # Unsorted indices are fine, repeated ones are not.
            s = np.sort(key)
            if (np.diff(s) == 0).any():
                raise _Retry
        return y, rows, cols - 1, vals

    def _indices(self, idx_s: list[str]) -> np.ndarray:
        """Index strings to integers, through a cache of the (few) distinct strings."""
        cache = self._index_cache
        n = len(idx_s)
        try:
            return np.fromiter(map(cache.__getitem__, idx_s), dtype=np.int64, count=n)
        except KeyError:
            pass
        new = set(idx_s).difference(cache)
        digits = "".join(new)
        if not (digits.isascii() and digits.isdigit()):
            raise _Retry
        try:
            if len(cache) + len(new) > _INDEX_CACHE_MAX:
                # So many distinct indices that a cache would cost more than it saves.
                return np.fromiter(map(int, idx_s), dtype=np.int64, count=n)
            cache.update((text, int(text)) for text in new)
            return np.fromiter(map(cache.__getitem__, idx_s), dtype=np.int64, count=n)
        except (OverflowError, ValueError):  # ValueError: more digits than int() converts
            raise _Retry from None

    def _too_large(self, index: str) -> str:
        """Why feature index ``index`` is refused: above --n-features, or above the limit without it."""
        if self.n_features is not None:
            return f"feature index {index} is above --n-features {self.n_features}"
        return (
            f"feature index {index} is above {AUTO_INDEX_MAX:,}: give the number of features with --n-features "
            "(rows are stored dense, so the largest index sets the width of every row)"
        )

    def _check_rows(self, batch: _LibsvmBatch) -> None:
        """Raise ``_BadRow`` at the first invalid row (same rules as ``_fast``)."""
        top = self.n_features
        start = 0
        for r, (label, count) in enumerate(zip(batch.labels, batch.counts)):
            try:
                self.labels.lookup(label)
            except _Invalid as exc:
                raise _BadRow(r, str(exc)) from None
            seen = set()
            for tok in batch.tokens[start : start + count]:
                idx, sep, val = tok.partition(":")
                if not sep:
                    raise _BadRow(r, f"entry '{tok}' is not index:value")
                if idx == "qid":
                    raise _BadRow(r, "'qid:' entries (ranking data) are not supported")
                if not (idx.isascii() and idx.isdigit()):
                    raise _BadRow(r, f"feature index '{idx}' in '{tok}' is not a positive integer")
                digits = idx.lstrip("0")
                if len(digits) > 18:  # beyond any limit, and beyond what int() converts in full
                    shown = f"{digits[:12]}... ({len(digits)} digits)"
                    raise _BadRow(r, self._too_large(shown))
                k = int(idx)
                if k == 0:
                    raise _BadRow(r, f"feature index 0 in '{tok}': LIBSVM indices start at 1")
                if k > (AUTO_INDEX_MAX if top is None else top):
                    raise _BadRow(r, self._too_large(str(k)))
                if k in seen:
                    raise _BadRow(r, f"feature index {k} appears twice")
                seen.add(k)
                if ":" in val:
                    raise _BadRow(r, f"entry '{tok}' has more than one ':'")
                if not val:
                    raise _BadRow(r, f"entry '{tok}' has no value")
                why = _check_value(val, self.vmax, self.dtype)
                if why:
                    raise _BadRow(r, f"value '{val}' of feature {k} {why}")
            start += count


def convert_libsvm(
    path: PathLike,
    out: PathLike,
    *,
    n_features: Optional[int] = None,
    positive_label: Optional[str] = None,
    dtype: str = "float32",
    compression: Optional[str] = None,
    limit: Optional[int] = None,
    task: str = "auto",
    weights: Optional[PathLike] = None,
) -> ConvertResult:
    """Convert a LIBSVM/svmlight file to an HDF5 data file.

    Parameters
    ----------
    path : str or os.PathLike
        Input file; ``.gz``, ``.bz2`` and ``.xz`` are decompressed on the fly.
    out : str or os.PathLike
        Output HDF5 file, written atomically.
    n_features : int, optional
        Number of features ``d`` (at most ``format.MAX_FEATURES``); indices
        must be in ``1..d``. When omitted a first pass over the file finds
        the largest index, which must be at most :data:`AUTO_INDEX_MAX`.
    positive_label : str, optional
        A number: labels equal to it become +1, all others -1. Without it the
        labels are kept as they are (see :func:`mpiboost.data.labels.classes_from_tokens`):
        integer labels are written as ``y`` itself (-1/+1, 0/1, 1..7 ...);
        other numbers or text become indices into the file's ``classes``
        attribute. At most ``labels.MAX_CLASSES`` distinct labels.
    dtype : {"float32", "float64"}
        dtype of ``X``.
    compression : {None, "gzip", "lzf"}
        HDF5 compression of the datasets.
    limit : int, optional
        Convert only the first ``limit`` rows.
    task : {"auto", "classification", "regression"}
        ``"regression"``: the labels are numeric targets, written as float64 (LIBSVM regression sets).
    weights : str or os.PathLike, optional
        A text file of sample weights, one a line in the rows' order (LightGBM's ``.weight`` file), as
        many as the rows converted: written as the ``weight`` dataset.

    Returns
    -------
    ConvertResult

    Raises
    ------
    InputError
        ``FILE:LINE: reason`` for invalid input; no output file is left behind.
    """
    t0 = time.perf_counter()
    x_dtype = np.dtype(dtype)
    _check_common(path, out, limit)
    if weights is not None:
        _check_common(weights, out, limit)  # the output never replaces the weights file either
    if n_features is not None and n_features < 1:
        raise InputError(f"--n-features must be at least 1, got {n_features}")
    if n_features is not None and n_features > MAX_FEATURES:
        raise InputError(f"--n-features {n_features:,} is above the most features a data file has ({MAX_FEATURES:,})")
    name = os.fspath(path)
    if task == "regression" and positive_label is not None:
        raise InputError("--positive-label makes binary classes; not with --task regression (numeric targets)")

    def label_map():
        return _TargetMap() if task == "regression" else _LabelMap(positive_label, numeric=True, hint=CAP_HINT)

    if n_features is None:
        # Validates everything too, so pass 2 cannot fail on the same data.
        scan = _LibsvmParser(name, label_map(), None, x_dtype)
        top, n_rows = 0, 0
        with _Source(path) as src, _Progress(src, "scanning"):
            # common.CHUNK_ROWS read at call time (as _chunk_rows does): one setting sizes both passes.
            for batch in _libsvm_batches(src, common.CHUNK_ROWS, limit):
                _, _, cols, _ = scan.parse(batch)
                n_rows += len(batch)
                if cols.size:
                    top = max(top, int(cols.max()) + 1)
        if n_rows == 0:
            raise InputError(f"{name}: no data rows")
        if top == 0:
            raise InputError(f"{name}: no feature entries in any row; give the number of features with --n-features")
        d = top
    else:
        d = int(n_features)

    wt = None if weights is None else read_weight_file(weights)
    labels = label_map()
    parser = _LibsvmParser(name, labels, d, x_dtype)
    counts = _TargetCounts() if task == "regression" else _Counts(labels.deferred)
    resolved = None
    attrs = {"source": os.path.basename(name), "source_format": "libsvm"}
    with _Source(path) as src, _Progress(src, "converting"):
        with DatasetWriter(
            out, d, x_dtype=x_dtype, attrs=attrs, compression=compression, deferred_y=labels.deferred,
            y_dtype=np.float64 if task == "regression" else np.int8, with_weight=wt is not None,
        ) as w:
            for batch in _libsvm_batches(src, _chunk_rows(d, x_dtype), limit):
                y, rows, cols, vals = parser.parse(batch)
                X = np.zeros((len(batch), d), dtype=x_dtype)
                X[rows, cols] = vals
                part = None
                if wt is not None:
                    if w.n + len(batch) > wt.size:
                        raise InputError(f"{weights}: {wt.size:,} weights, but {name} has more rows")
                    part = wt[w.n:w.n + len(batch)]
                w.append(X, y, weight=part)
                counts.add(y)
            if w.n == 0:
                raise InputError(f"{name}: no data rows")
            if wt is not None and limit is None and wt.size != w.n:
                raise InputError(f"{weights}: {wt.size:,} weights for the {w.n:,} rows of {name}")
            if labels.deferred:
                resolved = labels.resolve()
                refuse_continuous(f"{name}: the label", resolved.classes, task)
                w.relabel(resolved.table, resolved.y_dtype, classes=resolved.file_classes)
            n = w.n
    _warn_unmatched(labels, positive_label)
    return ConvertResult(
        name, os.fspath(out), n, d, str(x_dtype), counts.as_dict(resolved), None, time.perf_counter() - t0,
        targets=counts.describe() if task == "regression" else None,
    )


def read_weight_file(path: PathLike) -> np.ndarray:
    """Sample weights from a text file, one a line (blank lines skipped); InputError naming the line of a
    weight that is not a finite number >= 0."""
    out = []
    try:
        with open(path, encoding="utf-8") as f:
            for i, line in enumerate(f, 1):
                tok = line.strip()
                if not tok:
                    continue
                try:
                    v = float(tok)
                except ValueError:
                    v = float("nan")
                if not (math.isfinite(v) and v >= 0):
                    raise InputError(f"{path}:{i}: '{tok}' is not a weight (a finite number >= 0)")
                out.append(v)
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read the weights ({exc})") from None
    return np.asarray(out, dtype=np.float64)
