"""Delimited text (CSV, TSV, whitespace) to HDF5: a label column, an optional
domain column (taken as it is or through ``--domain-map``), numeric feature
columns with missing values, and categorical columns written one-hot."""
from __future__ import annotations

import csv
import dataclasses
import json
import os
import re
import time
from dataclasses import dataclass
from itertools import chain
from operator import itemgetter
from typing import Iterable, Iterator, Optional, Sequence, Union

import numpy as np

from ... import log
from ...errors import InputError
from ..format import CATEGORICAL_ATTR, MAX_CATEGORIES as NATIVE_MAX, DatasetWriter, categorical_attr
from .categories import (
    MISSING,
    MISSING_TOKENS,
    UNKNOWN,
    _CategoryColumn,
    _Collector,
    read_categories,
    warn_unknown,
    write_categories,
)
from .common import (
    BATCH_TOKENS,
    ConvertResult,
    PathLike,
    _BadRow,
    _check_common,
    _check_side_out,
    _check_value,
    _chunk_rows,
    _Counts,
    _DomainCounts,
    _Invalid,
    _LabelMap,
    _Retry,
    _TargetCounts,
    _TargetMap,
    _value_max,
    _warn_unmatched,
    refuse_continuous,
)
from . import arrowcsv
from .domainmap import _DomainMap
from ..format import MAX_DOMAINS
from .source import _Progress, _Source

_INT_RE = re.compile(r"[+-]?[0-9]+")
CAP_HINT = ": is the label column right? see --label-column"
UNKNOWN_POLICIES = ("zero", "missing", "error")
MAX_CATEGORIES = 1000

ColumnSpec = Union[str, int]


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


def _kept_lines(src: _Source, skip_lines: int, comment: Optional[str], at: list) -> Iterator[str]:
    """Lines after the first ``skip_lines``, without comment lines; ``at[0]`` is the
    physical number of the line yielded last."""
    for lineno, line in enumerate(src.lines(), 1):
        if lineno <= skip_lines:
            continue
        if comment is not None and line.lstrip().startswith(comment):
            continue
        at[0] = lineno
        yield line


def _csv_rows(
    src: _Source, delimiter: Optional[str], skip_lines: int = 0, comment: Optional[str] = None
) -> Iterator[tuple[int, list[str]]]:
    """(physical line number, fields) of every non-blank record."""
    plain = not skip_lines and comment is None
    at = [0]
    lines = src.lines() if plain else _kept_lines(src, skip_lines, comment, at)
    if delimiter is None:
        if plain:
            for lineno, line in enumerate(lines, 1):
                fields = line.split()
                if fields:
                    yield lineno, fields
        else:
            for line in lines:
                fields = line.split()
                if fields:
                    yield at[0], fields
        return
    reader = csv.reader(lines, delimiter=delimiter, skipinitialspace=True)
    try:
        for fields in reader:
            if not fields or (len(fields) == 1 and not fields[0].strip()):
                continue
            # A record ends on the line read last (a quoted field may span lines).
            yield (reader.line_num if plain else at[0]), fields
    except csv.Error as exc:
        raise InputError(f"{src.name}:{reader.line_num if plain else at[0]}: {exc}") from None


def _resolve_column(
    spec: ColumnSpec, names: Optional[list[str]], ncols: int, option: str, where: str, names_from: str = "the header"
) -> int:
    """Column index of a header name or (negative) 0-based index."""
    spec = str(spec).strip()
    if names is not None and spec in names:
        if names.count(spec) > 1:
            raise InputError(
                f"{where}: {option} '{spec}' is ambiguous: {names_from} has {names.count(spec)} columns of that name"
            )
        return names.index(spec)
    try:
        i = int(spec)
    except ValueError:
        if names is None:
            raise InputError(
                f"{where}: {option} '{spec}' is not a column index (with --no-header columns are numbered from 0; "
                "--names gives them names)"
            ) from None
        shown = ", ".join(names[:20]) + (f", ... ({len(names)} in all)" if len(names) > 20 else "")
        raise InputError(f"{where}: {option}: no column named '{spec}' in {names_from} ({shown})") from None
    if not -ncols <= i < ncols:
        raise InputError(f"{where}: {option} {i} is out of range: the file has {ncols} columns, numbered from 0")
    return i % ncols


def _split_list(value: Union[None, str, Sequence], option: str) -> Optional[list[str]]:
    """A comma-separated option value (or a sequence) as stripped strings."""
    if value is None:
        return None
    items = [s.strip() for s in value.split(",")] if isinstance(value, str) else [str(v).strip() for v in value]
    if not items or any(not s for s in items):
        raise InputError(f"{option} {value!r}: empty name in the list (names are separated by ',')")
    return items


@dataclass
class _Table:
    """An opened CSV file: column names, the first data row, and the rest."""

    name: str
    names: Optional[list[str]]
    ncols: int
    where: str  # FILE:LINE of the header, or of the first row without one
    origin: str  # where the column count comes from, for messages
    names_from: str
    first_row: Optional[tuple[int, list[str]]]
    records: Iterator[tuple[int, list[str]]]

    def key(self, c: int) -> str:
        """Name of column ``c`` in a categories file: its name, else its index."""
        return self.names[c] if self.names is not None else str(c)

    def label(self, c: int) -> str:
        """Column ``c`` as messages show it."""
        return f"'{self.names[c]}'" if self.names is not None else str(c)

    def resolve(self, spec: ColumnSpec, option: str) -> int:
        return _resolve_column(spec, self.names, self.ncols, option, self.where, self.names_from)

    def find_key(self, key: str, what: str) -> int:
        """Column of a categories-file key in this file."""
        if self.names is not None:
            if key in self.names:
                if self.names.count(key) > 1:
                    raise InputError(
                        f"{self.where}: column '{key}' ({what}) is ambiguous: {self.names_from} has it twice"
                    )
                return self.names.index(key)
            raise InputError(f"{self.where}: column '{key}' ({what}) is not in {self.names_from}")
        if key.isdigit() and int(key) < self.ncols:
            return int(key)
        raise InputError(
            f"{self.where}: column '{key}' ({what}) is not a column index of this file "
            f"({self.ncols} columns); with named columns give --names"
        )


def _open_table(
    src: _Source,
    delim: Optional[str],
    header: bool,
    names: Optional[list[str]],
    skip_lines: int,
    comment: Optional[str],
) -> _Table:
    name = src.name
    records = _csv_rows(src, delim, skip_lines, comment)
    first = next(records, None)
    if first is None:
        extra = " after the skipped lines and comment lines" if skip_lines or comment is not None else ""
        raise InputError(f"{name}: the file is empty{extra}")
    where = f"{name}:{first[0]}"
    if header:
        file_names = [s.strip() for s in first[1]]
        if names is not None:
            if len(names) != len(file_names):
                raise InputError(
                    f"{where}: --names gives {len(names)} names, but the header on this line has "
                    f"{len(file_names)} columns (--names replaces the header; with --no-header it names a file "
                    "without one)"
                )
            origin, names_from = "as in --names", "--names"
        else:
            names = file_names
            origin, names_from = f"as in the header on line {first[0]}", "the header"
        first_row = next(records, None)
    else:
        origin = "as in --names" if names is not None else f"as on line {first[0]}"
        names_from = "--names"
        first_row = first
    ncols = len(names) if names is not None else len(first[1])
    return _Table(name, names, ncols, where, origin, names_from, first_row, records)


class _CsvParser:
    """Parse batches of CSV records into X, y and domain arrays.

    ``categorical`` maps a column index to (key, categories): such a column
    becomes ``len(categories)`` indicator features in place, 1 for the row's
    category and 0 for the others; all NaN for a missing value. With
    ``native`` it becomes one feature, the category's code (its index in the
    categories), NaN for a missing value (and an unknown one, unless refused).
    """

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
        *,
        categorical: Optional[dict[int, tuple[str, Sequence[str]]]] = None,
        domain_map: Optional[_DomainMap] = None,
        keep_domain: bool = False,
        unknown: str = "zero",
        categories_source: Optional[str] = None,
        drop: Iterable[int] = (),
        weight: Optional[int] = None,
        native: bool = False,
    ):
        self.name = name
        self.native = native  # categorical columns as one code feature each, not one-hot
        self.weight = weight  # the sample-weight column (read as a number, not a feature), or None
        self.ncols = ncols
        self.columns = columns  # display name of every column
        self.label = label
        self.domain = domain
        self.domain_ints = domain_ints and domain_map is None
        self.domain_map = domain_map
        self.domain_names: dict[str, int] = {}
        self.domain_ids: set[int] = set()
        self.labels = labels
        self.dtype = dtype
        self.vmax = _value_max(dtype)
        dropped = set(drop) | ({weight} if weight is not None else set())
        self.features = [
            c for c in range(ncols) if c != label and (c != domain or keep_domain) and c not in dropped
        ]
        self.cat = {c: _CategoryColumn(key, values) for c, (key, values) in (categorical or {}).items()}
        self.unknown = unknown
        self.categories_source = categories_source
        self.numeric = [c for c in self.features if c not in self.cat]
        self.n_feature_num = len(self.numeric)
        if weight is not None:
            self.numeric.append(weight)  # parsed with the numbers, last; split off in assemble
        self.n_num = len(self.numeric)
        self.num_pos: list[int] = []
        self.cat_pos: dict[int, int] = {}
        pos = 0
        for c in self.features:
            if c in self.cat:
                self.cat_pos[c] = pos
                pos += 1 if native else len(self.cat[c].values)
            else:
                self.num_pos.append(pos)
                pos += 1
        self.d = pos
        self._num_idx = np.asarray(self.num_pos, dtype=np.intp)
        self.ncols_origin = ncols_origin
        self._get_label = itemgetter(label) if label != NO_LABEL else None
        self._get_domain = itemgetter(domain) if domain is not None else None
        self._get_features = itemgetter(*self.numeric) if self.numeric else None
        self._get_cat = {c: itemgetter(c) for c in self.cat}

    def feature_names(self, names: Optional[list[str]]) -> Optional[list[str]]:
        """Names of the output features: column names, and ``column=category`` one-hot."""
        if names is None and not self.cat:
            return None
        out = []
        for c in self.features:
            key = names[c] if names is not None else str(c)
            if c in self.cat and not self.native:
                out += [f"{key}={v}" for v in self.cat[c].values]
            else:
                out.append(key)
        return out

    def native_categories(self) -> dict:
        """``{output feature: number of categories}`` of the columns written as codes (native encoding)."""
        if not self.native:
            return {}
        return {self.cat_pos[c]: max(1, len(col.values)) for c, col in self.cat.items()}

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
        labels = list(map(self._get_label, rows)) if self._get_label is not None else None
        doms = list(map(self._get_domain, rows)) if self._get_domain is not None else None
        num = None
        if self.n_num:
            if self.n_num == 1:
                flat = list(map(self._get_features, rows))
            else:
                flat = list(chain.from_iterable(map(self._get_features, rows)))
            num = self._floats(flat).reshape(m, self.n_num)
        cats = {c: list(map(get, rows)) for c, get in self._get_cat.items()}
        return self.assemble(m, labels, doms, num, cats)

    def assemble(self, m: int, labels: Optional[list], doms: Optional[list], num: Optional[np.ndarray],
                 cats: dict):
        """X, y and domain of ``m`` rows from their label, domain and categorical tokens and numeric values
        (``num``: float64, (m, numeric columns), NaN where missing); ``_Retry`` if any row is not valid.

        A token column is a list, or an :class:`arrowcsv.Coded` (distinct tokens in order of first
        appearance and each row's index): each distinct token is then mapped once, which gives the same
        codes, since every mapping here is of one token at a time and numbers new ones in order."""

        def each(f, tokens):
            if isinstance(tokens, arrowcsv.Coded):
                return np.asarray(f(tokens.values))[tokens.index]
            return f(tokens)

        if labels is None:  # no labels: y holds zeros, and the file says it is unlabelled
            y = np.zeros(m, dtype=np.int8)
        else:
            try:
                y = np.asarray(each(self.labels.map_all, labels), dtype=self.labels.code_dtype)
            except _Invalid:
                raise _Retry from None
        dom = None
        if doms is not None:
            dom = np.asarray(each(self._domains, doms), dtype=np.int32)
            self.domain_ids.update(np.unique(dom).tolist())
        w = None
        if self.weight is not None:
            w, num = num[:, -1].copy(), (num[:, :-1] if self.n_feature_num else None)
            if not (np.isfinite(w) & (w >= 0)).all():
                raise _Retry  # the row checks name the row
        if num is not None:
            ok = np.isnan(num) | (np.abs(num) <= self.vmax)
            if not ok.all():
                raise _Retry
            if not self.cat:
                return num.astype(self.dtype), y, dom, w
        X = np.zeros((m, self.d), dtype=self.dtype)
        if num is not None:
            X[:, self._num_idx] = num
        allow_unknown = self.unknown != "error"
        codes_of = {c: each(lambda t, col=col: col.codes(t, allow_unknown), cats[c]) for c, col in self.cat.items()}
        # Nothing below rejects the batch, so the counts are of rows written.
        every = np.arange(m)
        for c, codes in codes_of.items():
            col = self.cat[c]
            a, k = self.cat_pos[c], len(col.values)
            if self.native:  # the code itself; missing, and unknown (not refused), NaN
                col.n_unknown += int(np.count_nonzero(codes == UNKNOWN))
                X[:, a] = np.where(codes >= 0, codes, np.nan)
                continue
            hit = codes >= 0
            X[every[hit], a + codes[hit]] = 1
            unknown = codes == UNKNOWN
            col.n_unknown += int(np.count_nonzero(unknown))
            blank = codes == MISSING
            if self.unknown == "missing":
                blank |= unknown
            if blank.any():
                X[blank, a : a + k] = np.nan
        return X, y, dom, w

    @property
    def text_columns(self) -> list[int]:
        """The columns read as text (label, domain, categorical); the numeric ones are ``self.numeric``."""
        out = [] if self._get_label is None else [self.label]
        if self._get_domain is not None:
            out.append(self.domain)
        return out + [c for c in self.cat if c not in out]

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
        if self.domain_map is not None:
            return self.domain_map.map_all(tokens)
        if self.domain_ints:
            try:
                ids = np.fromiter(map(int, tokens), dtype=np.int64, count=len(tokens))
            except ValueError:
                raise _Retry from None
            if ids.size and (ids.min() < 0 or ids.max() >= MAX_DOMAINS):
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
                if self.label != NO_LABEL:
                    self.labels.lookup(row[self.label])
            except _Invalid as exc:
                raise _BadRow(r, str(exc)) from None
            if self.weight is not None:
                tok = row[self.weight].strip()
                try:
                    v = float(tok)
                except ValueError:
                    v = float("nan")
                if not (np.isfinite(v) and v >= 0):
                    raise _BadRow(r, f"weight column {self.columns[self.weight]}: '{tok}' is not a finite number "
                                  ">= 0 (every row needs its weight)")
            if self.domain is not None:
                if self.domain_map is not None:
                    if self.domain_map.lookup(row[self.domain]) is None:
                        raise _BadRow(r, self.domain_map.unmapped_message(self.columns[self.domain], row[self.domain]))
                else:
                    self._check_domain(r, row[self.domain].strip())
            for c in self.features:
                tok = row[c]
                if c in self.cat:
                    if self.unknown == "error" and self.cat[c].code(tok) == UNKNOWN:
                        col = self.cat[c]
                        src = f" (from {self.categories_source})" if self.categories_source else ""
                        raise _BadRow(
                            r,
                            f"column {self.columns[c]}: value '{tok.strip()}' is not one of its "
                            f"{len(col.values)} categories{src}; --unknown-category zero or missing accepts it",
                        )
                    continue
                if tok in MISSING_TOKENS or tok.strip() in MISSING_TOKENS:
                    continue
                why = _check_value(tok, self.vmax, self.dtype)
                if why == "is not a number":
                    raise _BadRow(
                        r,
                        f"column {self.columns[c]}: value '{tok}' is not a number; for a categorical column give "
                        f"--categorical {self.columns[c]} (or --categorical auto) to encode it one-hot",
                    )
                if why:
                    raise _BadRow(
                        r, f"column {self.columns[c]}: value '{tok}' {why} (missing values are written as "
                        + ", ".join(repr(t) for t in sorted(MISSING_TOKENS)) + ")",
                    )

    def _check_domain(self, r: int, tok: str) -> None:
        if self.domain_ints:
            if not _INT_RE.fullmatch(tok):
                raise _BadRow(
                    r,
                    f"domain column {self.columns[self.domain]}: '{tok}' is not an integer "
                    "(the first rows had integer domain ids; --domain-map maps text values)",
                )
            if not 0 <= int(tok) < MAX_DOMAINS:
                raise _BadRow(r, f"domain column {self.columns[self.domain]}: id {tok} must be in 0..{MAX_DOMAINS - 1}")
        elif not tok:
            raise _BadRow(r, f"domain column {self.columns[self.domain]} is empty")


@dataclass
class _ReadOptions:
    """How every CSV file of one conversion is read (input and category sources)."""

    delim: Optional[str]
    header: bool
    names: Optional[list[str]]
    skip_lines: int
    comment: Optional[str]
    encoding: str = "utf-8-sig"  # strict: bytes that are not this encoding are an error naming the line

    def open(self, src: _Source) -> _Table:
        return _open_table(src, self.delim, self.header, self.names, self.skip_lines, self.comment)

    def source(self, path: PathLike) -> _Source:
        # The csv module wants newline="" so quoted fields may hold line breaks.
        return _Source(path, newline="" if self.delim is not None else None, encoding=self.encoding)


NO_LABEL = -1  # the label "column" of a file without labels (--no-label): every column is a feature
# Column names that say "I am the label": without --label-column, such a column elsewhere than first is an error
# (the first column would be taken silently), and a first column named otherwise is taken with a warning.
LABEL_NAMES = frozenset({"label", "labels", "class", "classes", "target", "y", "outcome", "response", "category"})


def header_names(path: PathLike, recipe: dict) -> Optional[list]:
    """The column names of ``path``'s header, read as ``recipe`` reads it (None: no header)."""
    delim = _parse_delimiter(recipe.get("delimiter") if recipe.get("delimiter") is not None else ",")
    names = recipe.get("names")
    opts = _ReadOptions(delim, bool(recipe.get("header", True)), names, int(recipe.get("skip_lines") or 0),
                        recipe.get("comment_char"), recipe.get("encoding") or "utf-8-sig")
    with opts.source(path) as src:
        return opts.open(src).names


def _feature_permutation(where: str, have: Optional[list], want: Optional[Sequence[str]]) -> Optional[list]:
    """Column order that turns the file's features ``have`` into ``want`` (None: already so, or no order asked)."""
    if want is None:
        return None
    want = list(want)
    if have is None:
        raise InputError(f"{where}: the recipe names its features, but this file's columns have no names "
                         "(give a header, or --names)")
    if have == want:
        return None
    missing = [c for c in want if c not in have]
    extra = [c for c in have if c not in want]
    if missing or extra:
        raise InputError(f"{where}: the columns are not the recipe's (missing: {', '.join(missing[:5]) or 'none'}; "
                         f"not in the recipe: {', '.join(extra[:5]) or 'none'})")
    return [have.index(c) for c in want]


TASKS = ("auto", "classification", "regression")


def _check_label_values(name: str, column: str, counts: dict, task: str, by_default: bool) -> None:
    """One class from the first-column default is refused (the wrong column, most likely); many numeric values
    are announced (a continuous target?)."""
    present = {k: v for k, v in counts.items() if v}
    if len(present) == 1 and by_default:
        (value, n), = present.items()
        raise InputError(f"{name}: the label column '{column}' (the first column: the default) holds one value, "
                         f"{value!r}, in all {n:,} rows: nothing to learn; give --label-column (or --no-label for "
                         "rows to score)")
    refuse_continuous(f"{name}: the label column '{column}'", present, task)


def _default_label(t: "_Table", label_column, no_label: bool) -> Optional[str]:
    """Refuse the first-column default of the label where another column is named like it; else the warning
    to give once the conversion succeeds (None: none to give). Only when no --label-column is given."""
    if label_column is not None or no_label:
        return None
    names = t.names
    if not names:
        return None  # no header: the first column is the documented default (LIBSVM-like files)
    first = names[0].strip().lower()
    if first in LABEL_NAMES:
        return None
    named = [(c, n) for c, n in enumerate(names) if n.strip().lower() in LABEL_NAMES]
    if named:
        c, n = named[0]
        raise InputError(f"{t.where}: no --label-column given, and column {c} '{n}' looks like the label while the "
                         f"default, the first column, is '{names[0]}': give --label-column {n} (or --label-column "
                         f"{names[0]} to use the first)")
    return (f"{t.where}: the label is the first column, '{names[0]}' (the default; give "
            "--label-column NAME to choose another, or --no-label for rows to score)")


def _feature_columns(
    t: _Table,
    label_column: Optional[ColumnSpec],
    domain_column: Optional[ColumnSpec],
    keep_domain: bool,
    drop: Optional[Sequence[ColumnSpec]] = None,
    no_label: bool = False,
) -> tuple[int, Optional[int], list[int]]:
    label = NO_LABEL if no_label else t.resolve(0 if label_column is None else label_column, "--label-column")
    domain = None
    if domain_column is not None:
        domain = t.resolve(domain_column, "--domain-column")
        if domain == label:
            raise InputError(f"{t.where}: --label-column and --domain-column are the same column")
    dropped = _dropped_columns(t, drop, label, domain)
    features = [c for c in range(t.ncols) if c != label and (c != domain or keep_domain) and c not in dropped]
    return label, domain, features


def _dropped_columns(
    t: _Table, drop: Optional[Sequence[ColumnSpec]], label: int, domain: Optional[int]
) -> set[int]:
    """Columns ``--drop-columns`` lists (neither features nor labels)."""
    out: set[int] = set()
    for s in drop or ():
        c = t.resolve(s, "--drop-columns")
        if c == label:
            raise InputError(f"{t.where}: --drop-columns {s}: column {t.label(c)} is the label column")
        if c == domain:
            raise InputError(f"{t.where}: --drop-columns {s}: column {t.label(c)} is the domain column")
        out.add(c)
    return out


def _categorical_columns(
    t: _Table,
    spec: list[str],
    label: int,
    domain: Optional[int],
    keep_domain: bool,
    dropped: Iterable[int] = (),
) -> dict[str, int]:
    """Key -> column of the columns ``--categorical`` lists."""
    out: dict[str, int] = {}
    dropped = set(dropped)
    for s in spec:
        c = t.resolve(s, "--categorical")
        if c == label:
            raise InputError(f"{t.where}: --categorical {s}: column {t.label(c)} is the label column")
        if c in dropped:
            raise InputError(f"{t.where}: --categorical {s}: column {t.label(c)} is dropped (--drop-columns)")
        if c == domain and not keep_domain:
            raise InputError(
                f"{t.where}: --categorical {s}: column {t.label(c)} is the domain column, which is not a feature "
                "(give --keep-domain-feature to keep it as one)"
            )
        out[t.key(c)] = c
    return out


def _collect_categories(
    sources: Sequence[PathLike],
    opts: _ReadOptions,
    spec: Union[str, list[str]],
    label_column: Optional[ColumnSpec],
    domain_column: Optional[ColumnSpec],
    keep_domain: bool,
    max_categories: int,
    limit: Optional[int],
    drop: Optional[Sequence[ColumnSpec]] = None,
    no_label: bool = False,
    arrow: bool = False,
) -> dict[str, list[str]]:
    """Pass 1: the sorted categories of the categorical columns, over ``sources``; with ``arrow``, pyarrow reads
    them where it may (:class:`arrowcsv.Fallback` where it may not): explicit columns, and ``auto`` over one file."""
    collector: Optional[_Collector] = None
    for path in sources:
        with opts.source(path) as src, _Progress(src, "categories"):
            t = opts.open(src)
            label, domain, features = _feature_columns(t, label_column, domain_column, keep_domain, drop, no_label)
            if collector is None:
                if spec == "auto":
                    collector = _Collector({}, {t.key(c): c for c in features}, max_categories)
                else:
                    dropped = _dropped_columns(t, drop, label, domain)
                    collector = _Collector(
                        _categorical_columns(t, spec, label, domain, keep_domain, dropped), {}, max_categories
                    )
            else:
                collector.rebind({k: t.find_key(k, "categorical") for k in collector.cols})
            if t.first_row is None:
                continue
            if arrow and spec == "auto" and len(sources) == 1 and arrowcsv.usable(path, opts.delim, opts.comment,
                                                                                   opts.encoding):
                cols = dict(collector.cols)  # every feature column is a candidate
                found = arrowcsv.auto_categories(path, t.first_row[0], t.first_row[1], t.ncols, opts.delim,
                                                 sorted(set(cols.values())), limit, max_categories)
                for k, c in cols.items():
                    if c in found:
                        collector.categorical[k] = True
                        collector.values[k] = set(found[c])
                continue
            if arrow and spec != "auto" and arrowcsv.usable(path, opts.delim, opts.comment, opts.encoding):
                try:  # the explicit columns' categories, read by pyarrow (ours names the line of any error)
                    cols = {k: c for k, c in collector.cols.items()}
                    found = arrowcsv.distinct(path, t.first_row[0], t.ncols, opts.delim, sorted(set(cols.values())),
                                              limit)
                    # pyarrow began on the row our reader found first; a quote after spaces is unquoted by ours only
                    if all(t.first_row[1][c].strip() in {v.strip() for v in found[c]} for c in found) and not any(
                            '"' in v for c in found for v in found[c]) and all(
                            collector.add_distinct(k, found[c]) for k, c in cols.items()):
                        continue
                except arrowcsv.Fallback:
                    pass
                raise arrowcsv.Fallback("the categories")
            step = max(1, BATCH_TOKENS // t.ncols)
            for lines, rows in _record_batches(chain([t.first_row], t.records), step, limit):
                for r, row in enumerate(rows):
                    if len(row) != t.ncols:
                        raise InputError(
                            f"{t.name}:{lines[r]}: expected {t.ncols} columns ({t.origin}), found {len(row)}"
                        )
                collector.add(t.name, lines, rows, lambda k, t=t: t.label(t.find_key(k, "categorical")))
    assert collector is not None
    return collector.result()


@dataclass
class CsvOptions:
    """How :func:`convert_csv` reads a delimited text file and what it writes (its keyword arguments, documented
    there): one object, checked once (:meth:`check`), that the conversion's steps share."""

    header: bool = True
    delimiter: Optional[str] = ","
    label_column: Optional[ColumnSpec] = None
    domain_column: Optional[ColumnSpec] = None
    positive_label: Optional[str] = None
    n_features: Optional[int] = None
    dtype: str = "float32"
    compression: Optional[str] = None
    limit: Optional[int] = None
    names: Union[None, str, Sequence[str]] = None
    skip_lines: int = 0
    comment_char: Optional[str] = None
    label_strip: Optional[str] = None
    categorical: Union[None, str, Sequence[ColumnSpec]] = None
    categories_from: Optional[Sequence[PathLike]] = None
    categories_in: Optional[PathLike] = None
    categories_out: Optional[PathLike] = None
    unknown_category: str = "zero"
    max_categories: int = MAX_CATEGORIES
    domain_map: Optional[str] = None
    keep_domain_feature: bool = False
    drop_columns: Union[None, str, Sequence[ColumnSpec]] = None
    no_label: bool = False
    task: str = "auto"
    encoding: Optional[str] = None
    categories: Optional[dict] = None
    feature_order: Optional[Sequence[str]] = None
    parser: str = "auto"
    weight_column: Optional[ColumnSpec] = None
    categorical_encoding: str = "onehot"

    def check(self, path: PathLike, out: PathLike) -> "_Resolved":
        """The options checked against each other (InputError naming the option), before the file is read;
        what they resolve to."""
        _check_common(path, out, self.limit)
        if self.parser not in ("auto", "python", "arrow"):
            raise InputError(f"the CSV parser must be auto or python, not {self.parser!r}")
        skip = 0 if self.skip_lines is None else self.skip_lines
        if skip < 0:
            raise InputError(f"--skip-lines must be at least 0, got {skip}")
        if self.comment_char is not None and not self.comment_char.strip():
            raise InputError("--comment-char must be a non-blank character")
        if self.categorical_encoding not in ("onehot", "native"):
            raise InputError(f"--categorical-encoding must be onehot or native, not {self.categorical_encoding!r}")
        if self.unknown_category not in UNKNOWN_POLICIES:
            raise InputError(f"--unknown-category must be one of {', '.join(UNKNOWN_POLICIES)}, not "
                             f"{self.unknown_category!r}")
        if self.max_categories < 1:
            raise InputError(f"--max-categories must be at least 1, got {self.max_categories}")
        if self.domain_column is None and (self.domain_map is not None or self.keep_domain_feature):
            option = "--domain-map" if self.domain_map is not None else "--keep-domain-feature"
            raise InputError(f"{option} needs --domain-column")
        if isinstance(self.categorical, str) and self.categorical.strip() == "auto":
            cat_spec: Union[None, str, list[str]] = "auto"
        else:
            cat_spec = _split_list(self.categorical, "--categorical")
        if self.categories_from and self.categories_in is not None:
            raise InputError("--categories-from and --categories-in both give the categories; use one")
        if self.categories_from and cat_spec is None:
            raise InputError("--categories-from needs --categorical (the columns to collect categories of)")
        if self.categories_out is not None and cat_spec is None and self.categories_in is None:
            raise InputError("--categories-out needs --categorical or --categories-in")
        _check_side_out(self.categories_out, "--categories-out", out, [path, *(self.categories_from or [])])
        if self.task not in TASKS:
            raise InputError(f"--task must be one of {', '.join(TASKS)}, not {self.task!r}")
        if self.no_label and (self.label_column is not None or self.positive_label is not None
                              or self.label_strip is not None):
            given = [o for o, v in (("--label-column", self.label_column), ("--positive-label", self.positive_label),
                                    ("--label-strip", self.label_strip)) if v is not None]
            raise InputError(f"{', '.join(given)}: not with --no-label (the file has no label column)")
        if self.task == "regression" and self.positive_label is not None:
            raise InputError("--positive-label makes binary classes; not with --task regression (numeric targets)")
        delim = _parse_delimiter(self.delimiter) if self.delimiter is not None else None
        given_names = _split_list(self.names, "--names")
        return _Resolved(
            delim=delim, given_names=given_names, skip_lines=skip, cat_spec=cat_spec,
            drop_spec=_split_list(self.drop_columns, "--drop-columns"),
            dmap=_DomainMap(self.domain_map) if self.domain_map is not None else None,
            read=_ReadOptions(delim, self.header, given_names, skip, self.comment_char,
                              self.encoding or "utf-8-sig"))


@dataclass
class _Resolved:
    """What the checked options resolve to: the delimiter, the names, the column lists, the domain map."""

    delim: Optional[str]
    given_names: Optional[list]
    skip_lines: int
    cat_spec: Union[None, str, list]
    drop_spec: Optional[list]
    dmap: Optional[_DomainMap]
    read: _ReadOptions


def convert_csv(path: PathLike, out: PathLike, **options) -> ConvertResult:
    """Convert a delimited text file (one row per record) to an HDF5 data file.

    ``weight_column``: a column of sample weights (finite numbers >= 0), written as the ``weight`` dataset
    and not a feature; an empty or bad weight is an error naming the line.

    ``parser``: ``"auto"`` reads a plain delimited UTF-8 file with pyarrow when it is installed (several times
    faster) and anything pyarrow might read differently, or refuses, with mpiboost's own parser, which names
    the line of an error (:mod:`.arrowcsv`); ``"python"``: mpiboost's parser only. The output is the same.

    ``categories``: the categorical columns' categories, given (a recipe's; as ``categories_in`` holds them);
    ``feature_order``: the feature names the output must have, in order (a recipe's): the file's columns are
    reordered by name, and a missing or extra column is an error naming it.
    ``encoding``: the file's text encoding (default UTF-8, with or without a byte-order mark); a byte that is
    not of it is an error naming the line, never replaced. ``task``: ``"classification"`` confirms a numeric label of many values (``"auto"`` warns about it: a
    continuous target read as classes).

    ``no_label``: the file has no label column (new rows to score): every column not dropped is a feature,
    and the output is marked unlabelled (``predict`` scores it; ``train`` and ``evaluate`` refuse it).

    Parameters
    ----------
    path : str or os.PathLike
        Input file; ``.gz``, ``.bz2`` and ``.xz`` are decompressed on the fly.
    out : str or os.PathLike
        Output HDF5 file, written atomically.
    header : bool
        Whether the first record (after skipped and comment lines) holds the
        column names.
    delimiter : str or None
        One character, ``"tab"``, or ``"whitespace"``/``" "``/None for any
        run of spaces and tabs. Spaces after a delimiter are skipped and
        values are compared stripped, so ``a, b, c`` files parse.
    label_column, domain_column : str or int, optional
        A column name or 0-based index (negative counts from the end). The
        label defaults to the first column; without a domain column there is
        no ``domain`` dataset. The domain column is not a feature unless
        ``keep_domain_feature``.
    positive_label : str, optional
        Label text mapped to +1 (all others to -1). Without it the labels are
        kept as they are (see :func:`mpiboost.data.labels.classes_from_tokens`):
        if every label reads as a number the labels are numbers (``1``,
        ``+1`` and ``1.0`` are one class), else each is its (stripped) text;
        integer labels are written as ``y`` itself (-1/+1, 0/1, 1..7 ...),
        anything else as indices into the ``classes`` attribute (the class
        list in canonical order). At most ``labels.MAX_CLASSES`` distinct
        labels; empty labels (and ``?``, ``NA``, ``NaN``, ``nan``) are errors.
    n_features : int, optional
        Expected number of features written (after one-hot encoding; a check only).
    dtype : {"float32", "float64"}
        dtype of ``X``.
    compression : {None, "gzip", "lzf"}
        HDF5 compression of the datasets.
    limit : int, optional
        Convert only the first ``limit`` data rows (categories are collected
        from those rows too when they come from the input).
    names : str or sequence of str, optional
        Column names (a comma-separated string or a list): the header of a
        file without one (``header=False``), or a replacement for the file's
        header.
    skip_lines : int
        Physical lines skipped at the start of the file (before the header).
    comment_char : str, optional
        Lines whose first non-blank characters are this text are skipped.
    label_strip : str, optional
        Characters removed from both ends of every label and of
        ``positive_label`` before comparing (``"."`` for UCI Adult's test file).
    categorical : "auto", str or sequence, optional
        Columns to encode one-hot: names or indices (a list or a
        comma-separated string), or ``"auto"`` for every feature column with
        a value that is not a number. Categories are the distinct stripped
        values other than the missing tokens, sorted by code point; column
        ``c`` with categories ``v1..vk`` becomes features ``c=v1 .. c=vk`` in
        its place. A missing value is NaN in all k of them.
    categories_from : sequence of paths, optional
        CSV files (read with the same options) to collect the categories
        from, instead of the input.
    categories_in, categories_out : path, optional
        Read the categorical columns and their categories from a categories
        file (JSON, see :mod:`.categories`) instead of collecting them; write
        the ones used to such a file.
    unknown_category : {"zero", "missing", "error"}
        A value that is not one of its column's categories (possible with
        ``categories_in``/``categories_from``): all-zero indicators, NaN, or
        an error.
    max_categories : int
        Most categories allowed in one column.
    domain_map : str, optional
        Map the domain column's text values to domains:
        ``"V1,V2=NAME;V3=NAME2;*=OTHER"`` (see :mod:`.domainmap`).
    keep_domain_feature : bool
        Keep the domain column as a feature too.
    drop_columns : str or sequence, optional
        Columns to ignore entirely (names or indices, a list or a
        comma-separated string): neither features nor labels, e.g. an id
        column. Not the label or the domain column.

    Returns
    -------
    ConvertResult

    Raises
    ------
    InputError
        ``FILE:LINE: reason`` for invalid input; no output file is left behind.
    """
    o = CsvOptions(**options)
    if o.parser == "auto":
        if arrowcsv.usable(path, _parse_delimiter(o.delimiter) if o.delimiter is not None else None,
                           o.comment_char, o.encoding):
            try:
                result = _convert(path, out, dataclasses.replace(o, parser="arrow"))
                arrowcsv.last_reader = "pyarrow"
                return result
            except arrowcsv.Fallback:  # nothing was written; warnings and messages come from the run below
                pass
        arrowcsv.last_reader = "mpiboost"
        return _convert(path, out, dataclasses.replace(o, parser="python"))
    return _convert(path, out, o)


def _label_maps(o: CsvOptions):
    """The label map and the counts of the labels (class counts, or a regression's target summary)."""
    if o.task == "regression":
        return _TargetMap(o.label_strip), _TargetCounts()
    labels = _LabelMap(o.positive_label, numeric=False, strip=o.label_strip, hint=CAP_HINT)
    return labels, _Counts(labels.deferred)


def _categories(path: PathLike, out: PathLike, o: CsvOptions, r: _Resolved) -> tuple[dict, Optional[str]]:
    """The categorical columns' categories (given, read from a categories file or collected from the data), and
    where they come from (None: this file)."""
    if o.categories is not None:
        return {str(k): [str(v) for v in vals] for k, vals in o.categories.items()}, "the recipe"
    if o.categories_in is not None:
        return read_categories(o.categories_in), os.fspath(o.categories_in)
    if r.cat_spec is None:
        return {}, None
    sources = list(o.categories_from) if o.categories_from else [path]
    for s in sources:
        if os.path.exists(s) and os.path.exists(out) and os.path.samefile(s, out):
            raise InputError(f"{os.fspath(out)}: the output file is a --categories-from file")
    cats = _collect_categories(
        sources, r.read, r.cat_spec, o.label_column, o.domain_column, o.keep_domain_feature, o.max_categories,
        o.limit if not o.categories_from else None, r.drop_spec, o.no_label, arrow=o.parser == "arrow",
    )
    return cats, (", ".join(os.fspath(s) for s in o.categories_from) if o.categories_from else None)


@dataclass
class _Columns:
    """The roles of the file's columns: label, domain, weight, features, dropped ones, categorical ones."""

    label: Optional[int]
    domain: Optional[int]
    weight: Optional[int]
    features: list
    dropped: set
    categorical: dict  # column -> (its key, its categories)


def _columns(t: _Table, o: CsvOptions, r: _Resolved, cats: dict, cats_source: Optional[str]) -> _Columns:
    """Each column's role, checked against the others (InputError naming the file and the column)."""
    label, domain, features = _feature_columns(t, o.label_column, o.domain_column, o.keep_domain_feature,
                                               r.drop_spec, o.no_label)
    dropped = _dropped_columns(t, r.drop_spec, label, domain)
    wcol = None
    if o.weight_column is not None:
        wcol = t.resolve(o.weight_column, "--weight-column")
        if wcol in (label, domain) or wcol in dropped:
            raise InputError(f"{t.where}: --weight-column {o.weight_column!r} is the label, the domain or a "
                             "dropped column")
        features = [c for c in features if c != wcol]
    categorical_cols: dict[int, tuple[str, list[str]]] = {}
    what = f"from {cats_source}" if cats_source else "categorical"
    for key, values in cats.items():
        c = t.find_key(key, what)
        if c == label:
            raise InputError(f"{t.where}: categorical column '{key}' ({what}) is the label column")
        if c == wcol:
            raise InputError(f"{t.where}: categorical column '{key}' ({what}) is the weight column")
        if c in dropped:
            raise InputError(f"{t.where}: categorical column '{key}' ({what}) is dropped (--drop-columns)")
        if c == domain and not o.keep_domain_feature:
            raise InputError(
                f"{t.where}: categorical column '{key}' ({what}) is the domain column, which is not a feature "
                "(give --keep-domain-feature to keep it as one)"
            )
        categorical_cols[c] = (key, values)
    if o.categories_in is not None and r.cat_spec not in (None, "auto"):
        listed = set(_categorical_columns(t, r.cat_spec, label, domain, o.keep_domain_feature, dropped).values())
        if listed != set(categorical_cols):
            raise InputError(
                f"{t.where}: --categorical lists {', '.join(sorted(t.label(c) for c in listed))}, but "
                f"{cats_source} has {', '.join(sorted(t.label(c) for c in categorical_cols)) or 'no columns'}"
            )
    if not features:
        hint = "; is --delimiter right?" if t.ncols == 1 else ""
        raise InputError(
            f"{t.where}: no feature columns (the file has {t.ncols} column{'s' * (t.ncols != 1)}{hint})"
        )
    return _Columns(label, domain, wcol, features, dropped, categorical_cols)


def _attrs(name: str, t: _Table, o: CsvOptions, r: _Resolved, cols: _Columns, csv_parser: "_CsvParser",
           x_dtype, feature_names: list, perm: Optional[list]) -> dict:
    """The output file's attributes: its source, the recipe that converts more files alike, the categorical
    and dropped columns, the domain map."""
    attrs = {"source": os.path.basename(name), "source_format": "csv"}
    label, domain, wcol, dropped = cols.label, cols.domain, cols.weight, cols.dropped
    attrs["recipe"] = json.dumps({
        "format": "csv", "header": o.header, "delimiter": o.delimiter, "names": r.given_names,
        "skip_lines": r.skip_lines, "comment_char": o.comment_char, "encoding": o.encoding,
        "label_column": None if o.no_label else t.key(label), "positive_label": o.positive_label,
        "label_strip": o.label_strip, "domain_column": None if domain is None else t.key(domain),
        "domain_map": o.domain_map, "keep_domain_feature": o.keep_domain_feature,
        "drop_columns": sorted(t.key(c) for c in dropped) or None,
        "categories": {key: list(values) for key, values in cols.categorical.values()} or None,
        "unknown_category": o.unknown_category, "dtype": str(x_dtype), "feature_names": feature_names,
        **({"task": o.task} if o.task == "regression" else {}),
        **({"weight_column": t.key(wcol)} if wcol is not None else {}),
        **({"categorical_encoding": "native"} if csv_parser.native else {}),
    }, sort_keys=True)
    if o.no_label:
        attrs["unlabelled"] = 1  # y holds zeros: rows to score, not to train or evaluate on
    if cols.categorical:
        attrs["categorical_columns"] = ",".join(key for key, _ in cols.categorical.values())
    native = csv_parser.native_categories()
    if native:
        if perm is not None:  # output column i holds the file's column perm[i]
            native = {perm.index(j): k for j, k in native.items()}
        attrs[CATEGORICAL_ATTR] = categorical_attr(native)
    if r.dmap is not None:
        attrs["domain_map"] = r.dmap.spec
    if dropped:
        attrs["dropped_columns"] = ",".join(t.key(c) for c in sorted(dropped))
    return attrs


def _convert(path: PathLike, out: PathLike, o: CsvOptions) -> ConvertResult:
    """The conversion with one parser (``o.parser``: ``"python"`` or ``"arrow"``), step by step: the options,
    the categories, the columns' roles, the parser of the rows, the attributes, the rows written."""
    t0 = time.perf_counter()
    x_dtype = np.dtype(o.dtype)
    r = o.check(path, out)
    name = os.fspath(path)
    labels, counts = _label_maps(o)
    dcounts = _DomainCounts()
    cats, cats_source = _categories(path, out, o, r)
    dmap = r.dmap
    with r.read.source(path) as src:
        t = r.read.open(src)
        cols = _columns(t, o, r, cats, cats_source)
        label, domain = cols.label, cols.domain
        default_warning = _default_label(t, o.label_column, o.no_label)
        columns = [t.label(c) for c in range(t.ncols)]
        if t.first_row is None:
            raise InputError(f"{name}: no data rows after the header")
        domain_ints = False
        if domain is not None and dmap is None and len(t.first_row[1]) > domain:
            # Decided on the first row so the file can be streamed in one pass.
            domain_ints = bool(_INT_RE.fullmatch(t.first_row[1][domain].strip()))
        csv_parser = _CsvParser(
            name, t.ncols, columns, label, domain, domain_ints, labels, x_dtype, t.origin,
            categorical=cols.categorical, domain_map=dmap, keep_domain=o.keep_domain_feature,
            unknown=o.unknown_category, categories_source=cats_source, drop=cols.dropped, weight=cols.weight,
            native=o.categorical_encoding == "native",
        )
        d = csv_parser.d
        if d == 0:
            raise InputError(f"{t.where}: no features: every feature column is categorical without categories")
        wide = [key for key, values in cols.categorical.values() if len(values) > NATIVE_MAX]
        if csv_parser.native and wide:
            raise InputError(f"{t.where}: column {wide[0]} has {len(dict(cols.categorical.values())[wide[0]])} "
                             f"categories; --categorical-encoding native takes at most {NATIVE_MAX} a column "
                             "(one bin each): use --categorical-encoding onehot for it")
        if o.n_features is not None and o.n_features != d:
            raise InputError(f"{t.where}: --n-features {o.n_features}, but the file gives {d} features")
        feature_names = csv_parser.feature_names(t.names)
        perm = _feature_permutation(t.where, feature_names, o.feature_order)
        if perm is not None:
            feature_names = list(o.feature_order)
        attrs = _attrs(name, t, o, r, cols, csv_parser, x_dtype, feature_names, perm)

        step = min(_chunk_rows(d, x_dtype), max(1, BATCH_TOKENS // t.ncols))
        with _Progress(src, "converting"), DatasetWriter(
            out,
            d,
            x_dtype=x_dtype,
            with_domain=domain is not None,
            feature_names=feature_names,
            attrs=attrs,
            compression=o.compression,
            deferred_y=labels.deferred and not o.no_label,
            y_dtype=np.float64 if o.task == "regression" and not o.no_label else np.int8,
            with_weight=cols.weight is not None,
        ) as w:
            if o.parser == "arrow":
                parsed = _arrow_parsed(path, t, csv_parser, r.delim, o.limit)
            else:
                parsed = (csv_parser.parse(lines, rows)
                          for lines, rows in _record_batches(chain([t.first_row], t.records), step, o.limit))
            for X, y, dom, wt in parsed:  # a Fallback from pyarrow's batches discards the output (see the top)
                if perm is not None:
                    X = np.ascontiguousarray(X[:, perm])
                w.append(X, y, dom, weight=wt)
                counts.add(y)
                if dom is not None:
                    dcounts.add(dom)
            domain_names: Optional[list[str]] = None
            if dmap is not None:
                domain_names = list(dmap.names)
            elif domain is not None and not domain_ints:
                domain_names = list(csv_parser.domain_names)
            w.domain_names = domain_names
            resolved = None
            if labels.deferred and not o.no_label:
                resolved = labels.resolve()
                w.relabel(resolved.table, resolved.y_dtype, classes=resolved.file_classes)
            if not o.no_label and o.task != "regression":  # before the file is kept
                _check_label_values(name, columns[label], counts.as_dict(resolved), o.task,
                                    o.label_column is None and o.positive_label is None)
            if o.categories_out is not None:
                write_categories(o.categories_out, {key: list(values) for key, values in cols.categorical.values()})
            n = w.n
    n_domains = len(dcounts.ids()) if domain is not None else None
    if default_warning:
        log.warning(default_warning)
    _warn_unmatched(labels, o.positive_label)
    warn_unknown(csv_parser.cat, lambda c: columns[c], o.unknown_category, cats_source)
    if dmap is not None:
        dmap.warn_unused()
    seconds = time.perf_counter() - t0
    return ConvertResult(
        name, os.fspath(out), n, d, str(x_dtype), {} if o.no_label else counts.as_dict(resolved), n_domains,
        seconds, domain_counts=dcounts.as_dict(domain_names) if domain is not None else None,
        targets=counts.describe() if isinstance(counts, _TargetCounts) else None,
    )


def _arrow_parsed(path, t: _Table, parser: _CsvParser, delim: str, limit: Optional[int]):
    """(X, y, domain) of the data rows, read by pyarrow; :class:`arrowcsv.Fallback` where it may not be ours."""
    first_line, first = t.first_row
    checked = False
    batches = arrowcsv.batches(path, first_line, t.ncols, delim, parser.text_columns, parser.numeric)
    for batch in arrowcsv.limited(batches, limit):
        parts = arrowcsv.columns(batch, parser)
        if not checked:  # pyarrow starts on the row our reader found first, with the same values
            arrowcsv.check_first_row(parts, first, parser)
            checked = True
        try:
            out = parser.assemble(*parts)
        except _Retry:
            raise arrowcsv.Fallback("a row the checks refuse") from None
        yield out


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
