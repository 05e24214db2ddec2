"""Categorical CSV columns: collecting the categories, one-hot codes, and the
categories file (``--categories-out`` / ``--categories-in``) that lets train and
test files share one encoding.

A categories file is JSON::

    {"mpiboost": "categories", "version": 1,
     "columns": {"workclass": ["Federal-gov", "Local-gov", ...], ...}}

with the columns in file order and each column's categories in the order of
its one-hot features (sorted by code point when collected here). Columns are
keyed by header name (or ``--names``), or by 0-based index without names.
"""
from __future__ import annotations

import json
import os
from operator import itemgetter
from typing import Optional, Sequence

import numpy as np

from ... import log
from ...errors import InputError
from .common import PathLike, _Retry, _write_text_atomic

# Empty, ?, NA, NaN and nan: a missing value, in numeric and categorical columns.
MISSING_TOKENS = frozenset({"", "?", "NA", "NaN", "nan"})
FILE_KIND = "categories"
FILE_VERSION = 1
MISSING = -1  # code of a missing value: NaN in every indicator column
UNKNOWN = -2  # code of a value that is not a category (see --unknown-category)
_CACHE_MAX = 100_000


def is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


class _CategoryColumn:
    """One categorical column: token -> category code, through a cache."""

    def __init__(self, key: str, values: Sequence[str]):
        self.key = key
        self.values = list(values)
        self.index = {v: i for i, v in enumerate(self.values)}
        self._cache: dict[str, int] = dict(self.index)
        self._cache.update((t, MISSING) for t in MISSING_TOKENS)
        self.n_unknown = 0
        self.unknown_seen: list[str] = []  # the first few distinct unknown values, for a message

    def code(self, token: str) -> int:
        s = token.strip()
        if s in MISSING_TOKENS:
            c = MISSING
        else:
            c = self.index.get(s, UNKNOWN)
            if c == UNKNOWN and len(self.unknown_seen) < 5 and s not in self.unknown_seen:
                self.unknown_seen.append(s)
        if len(self._cache) < _CACHE_MAX:
            self._cache[token] = c
        return c

    def codes(self, tokens: Sequence[str], allow_unknown: bool) -> np.ndarray:
        cache = self._cache
        try:
            out = [cache[t] for t in tokens]
        except KeyError:
            out = [cache[t] if t in cache else self.code(t) for t in tokens]
        arr = np.asarray(out, dtype=np.int64)
        if arr.size and arr.min() == UNKNOWN:
            if not allow_unknown:
                raise _Retry
        return arr


class _Collector:
    """Distinct values of candidate columns over the rows of pass 1.

    ``explicit`` columns are categorical whatever their values; ``auto``
    columns become categorical at their first value that is not a number.
    At most ``max_categories`` distinct values are kept per column, so the
    pass needs memory for the categories only, however long the file.
    """

    def __init__(self, explicit: dict[str, int], auto: dict[str, int], max_categories: int):
        self.max = max_categories
        self.cols: dict[str, int] = {**auto, **explicit}  # key -> column index in the current file
        self.categorical: dict[str, bool] = {k: k in explicit for k in self.cols}
        self.values: dict[str, set] = {k: set() for k in self.cols}
        self.overflow: dict[str, bool] = {k: False for k in self.cols}
        # auto key -> (file, line, value) that made the column categorical
        self.first_text: dict[str, tuple[str, int, str]] = {}

    def rebind(self, cols: dict[str, int]) -> None:
        """Column indices in the next source file (same keys)."""
        self.cols = cols

    def add(self, name: str, lines: list[int], rows: list[list[str]], column_label) -> None:
        for key, c in self.cols.items():
            distinct = {t.strip() for t in set(map(itemgetter(c), rows))} - MISSING_TOKENS
            if not distinct:
                continue
            if not self.categorical[key]:
                text = {v for v in distinct if not is_number(v)}
                if not text:
                    self._keep(key, distinct, None, name, lines, rows, c, column_label)
                    continue
                self.categorical[key] = True
                first = next(r for r in range(len(rows)) if rows[r][c].strip() in text)
                self.first_text[key] = (name, lines[first], rows[first][c].strip())
            self._keep(key, distinct, True, name, lines, rows, c, column_label)

    def add_distinct(self, key: str, tokens: set) -> bool:
        """Add a categorical column's distinct tokens (read by pyarrow, without rows or lines); False when
        they pass the limit, whose message (naming the line) the row-by-row :meth:`add` gives."""
        assert self.categorical[key], "an explicit categorical column"
        vals = self.values[key]
        vals |= {t.strip() for t in tokens} - MISSING_TOKENS
        return len(vals) <= self.max

    def _keep(self, key, distinct, needed, name, lines, rows, c, column_label) -> None:
        vals = self.values[key]
        if self.overflow[key]:
            if needed:
                self._too_many(key, name, None, column_label)
            return
        vals |= distinct
        if len(vals) <= self.max:
            return
        if not needed:
            # An auto column that is numeric so far: stop collecting; it may stay numeric.
            self.overflow[key] = True
            vals.clear()
            return
        # Name the line where the column passed the limit.
        vals -= distinct
        for r, row in enumerate(rows):
            s = row[c].strip()
            if s not in MISSING_TOKENS:
                vals.add(s)
                if len(vals) > self.max:
                    self._too_many(key, name, lines[r], column_label)
        raise AssertionError("category limit passed without a row")  # pragma: no cover

    def _too_many(self, key, name, line, column_label) -> None:
        where = f"{name}:{line}" if line is not None else name
        why = ""
        if key in self.first_text:
            f, ln, v = self.first_text[key]
            why = f" (it was taken as categorical by --categorical auto because of value '{v}' on {f}:{ln})"
        raise InputError(
            f"{where}: categorical column {column_label(key)} has more than {self.max:,} distinct values{why}; "
            "raise --max-categories, or do not treat the column as categorical"
        )

    def result(self) -> dict[str, list[str]]:
        """Sorted categories of every column found categorical, in column order."""
        keys = sorted((k for k in self.cols if self.categorical[k]), key=lambda k: self.cols[k])
        return {k: sorted(self.values[k]) for k in keys}


def read_categories(path: PathLike) -> dict[str, list[str]]:
    """The columns of a categories file (``--categories-in``)."""
    name = os.fspath(path)
    if not os.path.isfile(name):
        raise InputError(f"{name}: no such file (--categories-in)")
    try:
        with open(name, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{name}: not a categories file written by --categories-out ({exc})") from None
    if not isinstance(doc, dict) or doc.get("mpiboost") != FILE_KIND or not isinstance(doc.get("columns"), dict):
        raise InputError(f"{name}: not a categories file written by --categories-out (no 'columns' object)")
    if doc.get("version") != FILE_VERSION:
        raise InputError(f"{name}: categories file version {doc.get('version')!r}; this mpiboost reads {FILE_VERSION}")
    out = {}
    for key, values in doc["columns"].items():
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise InputError(f"{name}: column {key!r}: the categories must be a list of strings")
        if len(set(values)) != len(values):
            raise InputError(f"{name}: column {key!r}: a category is listed twice")
        out[key] = values
    return out


def write_categories(path: PathLike, columns: dict[str, list[str]]) -> None:
    doc = {"mpiboost": FILE_KIND, "version": FILE_VERSION, "columns": columns}
    _write_text_atomic(path, json.dumps(doc, indent=1, ensure_ascii=False) + "\n")


def warn_unknown(columns: dict[int, _CategoryColumn], column_label, policy: str, source: Optional[str]) -> None:
    for c, col in columns.items():
        if col.n_unknown:
            shown = ", ".join(repr(v) for v in col.unknown_seen) + (", ..." if len(col.unknown_seen) == 5 else "")
            as_what = "all-zero indicators" if policy == "zero" else "missing (NaN)"
            log.warning(
                f"column {column_label(c)}: {col.n_unknown:,} rows have a value that is not "
                f"one of its {len(col.values)} categories{f' (from {source})' if source else ''}: {shown}; "
                f"written as {as_what} (--unknown-category)",
            )
