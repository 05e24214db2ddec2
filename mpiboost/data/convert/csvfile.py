"""Delimited text (CSV, TSV, whitespace) to HDF5: a label column, an optional
domain column, and numeric feature columns with missing values."""
from __future__ import annotations

import csv
import os
import re
import time
from itertools import chain
from operator import itemgetter
from typing import Iterable, Iterator, Optional, Union

import numpy as np

from ...errors import InputError
from ..format import DatasetWriter
from .common import (
    BATCH_TOKENS,
    INDEX_MAX,
    ConvertResult,
    PathLike,
    _BadRow,
    _check_common,
    _check_value,
    _chunk_rows,
    _Counts,
    _Invalid,
    _LabelMap,
    _Retry,
    _value_max,
    _warn_unmatched,
)
from .source import _Progress, _Source

MISSING_TOKENS = frozenset({"", "?", "NA", "NaN", "nan"})
_INT_RE = re.compile(r"[+-]?[0-9]+")


def _parse_delimiter(text: str) -> Optional[str]:
    """The csv-module delimiter, or None for runs of whitespace."""
    if text in (" ", "whitespace", "space", "spaces"):
        return None
    if text in ("tab", "\\t", "\t"):
        return "\t"
    if len(text) != 1:
        raise InputError(f"--delimiter must be one character, 'tab' or 'whitespace', got {text!r}")
    if text in ('"', "\r", "\n"):
        raise InputError(f"--delimiter {text!r} is not allowed")
    return text


def _csv_rows(src: _Source, delimiter: Optional[str]) -> Iterator[tuple[int, list[str]]]:
    """(physical line number, fields) of every non-blank record."""
    if delimiter is None:
        for lineno, line in enumerate(src.lines(), 1):
            fields = line.split()
            if fields:
                yield lineno, fields
        return
    reader = csv.reader(src.lines(), delimiter=delimiter, skipinitialspace=True)
    try:
        for fields in reader:
            if not fields or (len(fields) == 1 and not fields[0].strip()):
                continue
            yield reader.line_num, fields
    except csv.Error as exc:
        raise InputError(f"{src.name}:{reader.line_num}: {exc}") from None


def _resolve_column(spec: str, names: Optional[list[str]], ncols: int, option: str, where: str) -> int:
    """Column index of a header name or (negative) 0-based index."""
    spec = str(spec).strip()
    if names is not None and spec in names:
        if names.count(spec) > 1:
            raise InputError(
                f"{where}: {option} '{spec}' is ambiguous: the header has {names.count(spec)} columns of that name"
            )
        return names.index(spec)
    try:
        i = int(spec)
    except ValueError:
        if names is None:
            raise InputError(
                f"{where}: {option} '{spec}' is not a column index (with --no-header columns are numbered from 0)"
            ) from None
        shown = ", ".join(names[:20]) + (f", ... ({len(names)} in all)" if len(names) > 20 else "")
        raise InputError(f"{where}: {option}: no column named '{spec}' in the header ({shown})") from None
    if not -ncols <= i < ncols:
        raise InputError(f"{where}: {option} {i} is out of range: the file has {ncols} columns, numbered from 0")
    return i % ncols


class _CsvParser:
    """Parse batches of CSV records into X, y and domain arrays."""

    def __init__(
        self,
        name: str,
        ncols: int,
        columns: list[str],
        label: int,
        domain: Optional[int],
        domain_ints: bool,
        labels: _LabelMap,
        dtype: np.dtype,
        ncols_origin: str,
    ):
        self.name = name
        self.ncols = ncols
        self.columns = columns  # display name of every column
        self.label = label
        self.domain = domain
        self.domain_ints = domain_ints
        self.domain_names: dict[str, int] = {}
        self.domain_ids: set[int] = set()
        self.labels = labels
        self.dtype = dtype
        self.vmax = _value_max(dtype)
        self.features = [c for c in range(ncols) if c != label and c != domain]
        self.d = len(self.features)
        self.ncols_origin = ncols_origin
        self._get_label = itemgetter(label)
        self._get_domain = itemgetter(domain) if domain is not None else None
        self._get_features = itemgetter(*self.features) if self.features else None

    def parse(self, lines: list[int], rows: list[list[str]]):
        try:
            return self._fast(rows)
        except _Retry:
            pass
        try:
            self._check_rows(rows)
        except _BadRow as bad:
            raise InputError(f"{self.name}:{lines[bad.row]}: {bad.message}") from None
        raise AssertionError("CSV fast path rejected a batch the row checks accept")  # pragma: no cover

    def _fast(self, rows: list[list[str]]):
        m = len(rows)
        if min(map(len, rows)) != self.ncols or max(map(len, rows)) != self.ncols:
            raise _Retry
        try:
            y = np.asarray(self.labels.map_all(list(map(self._get_label, rows))), dtype=np.int8)
        except _Invalid:
            raise _Retry from None
        dom = None
        if self._get_domain is not None:
            dom = self._domains(list(map(self._get_domain, rows)))
            self.domain_ids.update(np.unique(dom).tolist())
        if self.d == 1:
            flat = list(map(self._get_features, rows))
        else:
            flat = list(chain.from_iterable(map(self._get_features, rows)))
        vals = self._floats(flat)
        ok = np.isnan(vals) | (np.abs(vals) <= self.vmax)
        if not ok.all():
            raise _Retry
        return vals.reshape(m, self.d).astype(self.dtype), y, dom

    @staticmethod
    def _floats(flat: list[str]) -> np.ndarray:
        n = len(flat)
        try:
            return np.fromiter(map(float, flat), dtype=np.float64, count=n)
        except ValueError:
            pass
        # Missing tokens are rare in most files, so they only cost when present.
        miss = MISSING_TOKENS
        try:
            return np.fromiter(
                map(float, ["nan" if t in miss or t.strip() in miss else t for t in flat]), dtype=np.float64, count=n
            )
        except ValueError:
            raise _Retry from None

    def _domains(self, tokens: list[str]) -> np.ndarray:
        if self.domain_ints:
            try:
                ids = np.fromiter(map(int, tokens), dtype=np.int64, count=len(tokens))
            except ValueError:
                raise _Retry from None
            if ids.size and (ids.min() < 0 or ids.max() > INDEX_MAX):
                raise _Retry
            return ids.astype(np.int32)
        names = self.domain_names
        stripped = [t.strip() for t in tokens]
        if not all(stripped):
            raise _Retry
        return np.asarray([names.setdefault(t, len(names)) for t in stripped], dtype=np.int32)

    def _check_rows(self, rows: list[list[str]]) -> None:
        """Raise ``_BadRow`` at the first invalid row (same rules as ``_fast``)."""
        for r, row in enumerate(rows):
            if len(row) != self.ncols:
                raise _BadRow(r, f"expected {self.ncols} columns ({self.ncols_origin}), found {len(row)}")
            try:
                self.labels.lookup(row[self.label])
            except _Invalid as exc:
                raise _BadRow(r, str(exc)) from None
            if self.domain is not None:
                tok = row[self.domain].strip()
                if self.domain_ints:
                    if not _INT_RE.fullmatch(tok):
                        raise _BadRow(
                            r,
                            f"domain column {self.columns[self.domain]}: '{tok}' is not an integer "
                            "(the first rows had integer domain ids)",
                        )
                    if not 0 <= int(tok) <= INDEX_MAX:
                        raise _BadRow(
                            r, f"domain column {self.columns[self.domain]}: id {tok} must be in 0..{INDEX_MAX}"
                        )
                elif not tok:
                    raise _BadRow(r, f"domain column {self.columns[self.domain]} is empty")
            for c in self.features:
                tok = row[c]
                if tok in MISSING_TOKENS or tok.strip() in MISSING_TOKENS:
                    continue
                why = _check_value(tok, self.vmax, self.dtype)
                if why == "is not a number":
                    raise _BadRow(
                        r,
                        f"column {self.columns[c]}: value '{tok}' is not a number; categorical features are "
                        "not supported yet (one-hot encoding is planned): encode the column as numbers or drop it",
                    )
                if why:
                    raise _BadRow(
                        r, f"column {self.columns[c]}: value '{tok}' {why} (missing values are written as "
                        + ", ".join(repr(t) for t in sorted(MISSING_TOKENS)) + ")",
                    )


def convert_csv(
    path: PathLike,
    out: PathLike,
    *,
    header: bool = True,
    delimiter: Optional[str] = ",",
    label_column: Optional[Union[str, int]] = None,
    domain_column: Optional[Union[str, int]] = None,
    positive_label: Optional[str] = None,
    n_features: Optional[int] = None,
    dtype: str = "float32",
    compression: Optional[str] = None,
    limit: Optional[int] = None,
) -> ConvertResult:
    """Convert a delimited text file (one row per record) to an HDF5 data file.

    Parameters
    ----------
    path : str or os.PathLike
        Input file; ``.gz``, ``.bz2`` and ``.xz`` are decompressed on the fly.
    out : str or os.PathLike
        Output HDF5 file, written atomically.
    header : bool
        Whether the first non-blank line holds the column names.
    delimiter : str or None
        One character, ``"tab"``, or ``"whitespace"``/``" "``/None for any
        run of spaces and tabs.
    label_column, domain_column : str or int, optional
        A header name or 0-based index (negative counts from the end). The
        label defaults to the first column; without a domain column there is
        no ``domain`` dataset.
    positive_label : str, optional
        Label text mapped to +1 (all others to -1). Without it the labels must
        be +1/-1 or 1/0.
    n_features : int, optional
        Expected number of feature columns (a check only).
    dtype : {"float32", "float64"}
        dtype of ``X``.
    compression : {None, "gzip", "lzf"}
        HDF5 compression of the datasets.
    limit : int, optional
        Convert only the first ``limit`` data rows.

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
    delim = _parse_delimiter(delimiter) if delimiter is not None else None
    name = os.fspath(path)
    labels = _LabelMap(positive_label, numeric=False)
    counts = _Counts()

    # The csv module wants newline="" so quoted fields may hold line breaks.
    with _Source(path, newline="" if delim is not None else None) as src:
        records = _csv_rows(src, delim)
        first = next(records, None)
        if first is None:
            raise InputError(f"{name}: the file is empty")
        if header:
            names: Optional[list[str]] = [s.strip() for s in first[1]]
            ncols = len(names)
            where = f"{name}:{first[0]}"
            origin = f"as in the header on line {first[0]}"
            first_row = next(records, None)
        else:
            names = None
            ncols = len(first[1])
            where = f"{name}:{first[0]}"
            origin = f"as on line {first[0]}"
            first_row = first
        label = _resolve_column(0 if label_column is None else label_column, names, ncols, "--label-column", where)
        domain = None
        if domain_column is not None:
            domain = _resolve_column(domain_column, names, ncols, "--domain-column", where)
            if domain == label:
                raise InputError(f"{where}: --label-column and --domain-column are the same column")
        columns = [f"'{s}'" for s in names] if names is not None else [str(c) for c in range(ncols)]
        if ncols - 1 - (domain is not None) < 1:
            hint = "; is --delimiter right?" if ncols == 1 else ""
            raise InputError(f"{where}: no feature columns (the file has {ncols} column{'s' * (ncols != 1)}{hint})")
        if first_row is None:
            raise InputError(f"{name}: no data rows after the header")
        domain_ints = False
        if domain is not None and len(first_row[1]) > domain:
            # Decided on the first row so the file can be streamed in one pass.
            domain_ints = bool(_INT_RE.fullmatch(first_row[1][domain].strip()))
        parser = _CsvParser(name, ncols, columns, label, domain, domain_ints, labels, x_dtype, origin)
        d = parser.d
        if n_features is not None and n_features != d:
            raise InputError(f"{where}: --n-features {n_features}, but the file has {d} feature columns")
        feature_names = [names[c] for c in parser.features] if names is not None else None
        attrs = {"source": os.path.basename(name), "source_format": "csv"}

        step = min(_chunk_rows(d, x_dtype), max(1, BATCH_TOKENS // ncols))
        with _Progress(src, "converting"), DatasetWriter(
            out,
            d,
            x_dtype=x_dtype,
            with_domain=domain is not None,
            feature_names=feature_names,
            attrs=attrs,
            compression=compression,
        ) as w:
            for lines, rows in _record_batches(chain([first_row], records), step, limit):
                X, y, dom = parser.parse(lines, rows)
                w.append(X, y, dom)
                counts.add(y)
            if domain is not None and not domain_ints:
                w.domain_names = list(parser.domain_names)
            n = w.n
        n_domains = len(parser.domain_ids) if domain is not None else None
    _warn_unmatched(labels, positive_label)
    seconds = time.perf_counter() - t0
    return ConvertResult(name, os.fspath(out), n, d, str(x_dtype), counts.as_dict(), n_domains, seconds)


def _record_batches(
    records: Iterable[tuple[int, list[str]]], size: int, limit: Optional[int]
) -> Iterator[tuple[list[int], list[list[str]]]]:
    lines: list[int] = []
    rows: list[list[str]] = []
    total = 0
    for lineno, fields in records:
        if limit is not None and total >= limit:
            break
        lines.append(lineno)
        rows.append(fields)
        total += 1
        if len(rows) == size:
            yield lines, rows
            lines, rows = [], []
    if rows:
        yield lines, rows

