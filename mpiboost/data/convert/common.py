"""What the LIBSVM and CSV converters share: the result type, label mapping,
label counts, value checks, chunk sizes and the checks made before parsing."""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Optional, Sequence, Union

import numpy as np

from ...atomic import atomic_path
from ... import log
from ...errors import InputError
from .. import labels as _labels

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
    label_counts : dict
        Rows per label value (int, float or str) in class order: -1 and +1
        with --positive-label (and for Amazon reviews), else every class
        present.
    n_domains : int or None
        Distinct domain ids, or None without a domain column.
    seconds : float
        Wall time of the conversion.
    domain_counts : dict or None
        Rows per domain (keyed by domain name where there are names, else by
        id), or None without a domain column.
    """

    source: str
    out: str
    n: int
    d: int
    x_dtype: str
    label_counts: dict
    n_domains: Optional[int]
    seconds: float
    domain_counts: Optional[dict] = None
    targets: Optional[dict] = None  # a regression file's targets: n, min, max, mean

    def summary(self) -> str:
        """One human-readable line about the conversion."""
        items = list(self.label_counts.items())
        shown = items if len(items) <= 12 else items[:10]
        labels = " / ".join(f"{_labels.text(k)}: {v:,}" for k, v in shown)
        if len(items) > len(shown):
            labels += f" / ... ({len(items)} classes)"
        doms = f", {self.n_domains} domain{'s' * (self.n_domains != 1)}" if self.n_domains is not None else ""
        if self.domain_counts and len(self.domain_counts) <= 12:
            doms += " (" + ", ".join(f"{k}: {v:,}" for k, v in self.domain_counts.items()) + ")"
        labels = f"labels {labels}" if items else "no labels (rows to score)"
        if self.targets:
            t = self.targets
            labels = f"numeric targets {t['min']:.6g} .. {t['max']:.6g} (mean {t['mean']:.6g})"
        return (
            f"converted {self.source}: {self.n:,} rows x {self.d} features ({self.x_dtype}), "
            f"{labels}{doms} -> {self.out} in {self.seconds:.2f} s"
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



# Label tokens that mean "no label" (the missing-value tokens of CSV features).
LABEL_MISSING = frozenset({"", "?", "NA", "NaN", "nan"})
# Distinct label spellings one conversion keeps (all-number files may spell one
# class several ways, "1", "1.0", "+1"; beyond this something is wrong).
_LABEL_TOKENS_MAX = 1 << 16


class _LabelMap:
    """Label tokens to codes, caching every distinct token seen.

    With ``positive`` (--positive-label V) the codes are the final labels:
    +1 for V, -1 for every other label. Without it the labels are kept as the
    user has them: every distinct (stripped) token gets a *provisional* code
    in order of first appearance, and :meth:`resolve` decides at the end what
    the classes are (:func:`mpiboost.data.labels.classes_from_tokens`) and
    what ``y`` holds for each code. More than ``labels.MAX_CLASSES`` classes
    is an error at the first label beyond the cap; ``hint`` ends its message.
    """

    def __init__(self, positive: Optional[str], numeric: bool, strip: Optional[str] = None, hint: str = ""):
        self._cache: dict[str, int] = {}
        # --label-strip: characters removed from both ends of every label (and of V).
        self._strip = strip or None
        self._positive = None if positive is None else self._clean(positive)
        self._numeric = numeric
        self._pos_value = None
        self._hint = hint
        self.matched = False
        # Provisional codes (no --positive-label): cleaned token -> code, and what decides the class count.
        self._tokens: dict[str, int] = {}
        self._numbers: set = set()
        self._text = False
        if self._positive is not None and numeric:
            try:
                self._pos_value = float(self._positive)
            except ValueError:
                raise InputError(
                    f"--positive-label {positive!r}: LIBSVM labels are numbers, so the positive label must be one"
                ) from None

    @property
    def deferred(self) -> bool:
        """True if the codes are provisional (no --positive-label): see :meth:`resolve`."""
        return self._positive is None

    @property
    def code_dtype(self) -> np.dtype:
        return np.dtype(np.int32) if self.deferred else np.dtype(np.int8)

    def _clean(self, token: str) -> str:
        token = token.strip()
        return token.strip(self._strip) if self._strip else token

    def map_all(self, tokens: Sequence[str]) -> list[int]:
        cache = self._cache
        try:
            return [cache[t] for t in tokens]
        except KeyError:
            return [cache[t] if t in cache else self.lookup(t) for t in tokens]

    def lookup(self, token: str) -> int:
        """Map one token; raises ``_Invalid`` when it is not a label."""
        if self._positive is None:
            out = self._provisional(token)
        elif self._numeric:
            text = self._clean(token) if self._strip else token
            try:
                v = float(text)
            except ValueError:
                raise _Invalid(f"label '{token}' is not a number") from None
            out = 1 if v == self._pos_value else -1
        else:
            out = 1 if self._clean(token) == self._positive else -1
        if out == 1 and self._positive is not None:
            self.matched = True
        if len(self._cache) < _LABEL_CACHE_MAX:
            self._cache[token] = out
        return out

    def _provisional(self, token: str) -> int:
        text = self._clean(token)
        code = self._tokens.get(text)
        if code is not None:
            return code
        if text in LABEL_MISSING:
            what = "empty" if not text else f"'{text}', a missing value"
            raise _Invalid(f"the label is {what}: every row needs a label (drop the rows without one)")
        value = _labels.parse_token(text)
        is_text = self._text or isinstance(value, str)
        numbers = self._numbers if is_text else self._numbers | {value}
        n_classes = len(self._tokens) + 1 if is_text else len(numbers)
        if n_classes > _labels.MAX_CLASSES or len(self._tokens) >= _LABEL_TOKENS_MAX:
            if not is_text:
                raise _Invalid(f"label '{text}': more than {_labels.MAX_CLASSES} distinct numbers: a continuous "
                               "target? give --task regression to keep them as numbers (for --algo gbdt "
                               "--objective regression)")
            raise _Invalid(f"label '{text}': more than {_labels.MAX_CLASSES} distinct labels{self._hint}")
        code = self._tokens[text] = len(self._tokens)
        self._numbers, self._text = numbers, is_text
        return code

    def resolve(self) -> "_Resolved":
        """The classes of the tokens seen and ``y`` of every provisional code."""
        tokens = list(self._tokens)  # in code order
        classes, index = _labels.classes_from_tokens(tokens)
        if _labels.stores_as_values(classes):
            table = np.asarray([classes[i] for i in index], dtype=np.int64)
            file_classes = None
        else:
            table = index
            file_classes = classes
        return _Resolved(classes, index, table, _labels.y_dtype(classes), file_classes)


MANY_NUMERIC_CLASSES = 30  # beyond this many numeric label values, a continuous target is the likelier reading


def refuse_continuous(where: str, values, task: str) -> None:
    """``--task auto`` (the default): a label of more than :data:`MANY_NUMERIC_CLASSES` distinct numbers is
    refused (InputError naming ``where``), not silently made that many classes."""
    values = list(values)
    numeric = all(isinstance(k, (int, float)) and not isinstance(k, bool) for k in values)
    if task == "auto" and numeric and len(values) > MANY_NUMERIC_CLASSES:
        raise InputError(f"{where} has {len(values)} distinct numeric values: a continuous target? give --task "
                         "regression to keep them as numbers (for --algo gbdt --objective regression), or --task "
                         "classification to make each value a class")


class _TargetMap:
    """Label tokens as numeric regression targets (``--task regression``): each token read as a float.

    The same interface as :class:`_LabelMap` (never deferred): ``y`` is written as float64 as it is read.
    An empty, missing or non-numeric label, or one that is not finite, is ``_Invalid`` (naming the row).
    """

    deferred = False
    code_dtype = np.dtype(np.float64)
    matched = True

    def __init__(self, strip: Optional[str] = None) -> None:
        self._strip = strip or None

    def map_all(self, tokens: Sequence[str]) -> list[float]:
        return [self.lookup(t) for t in tokens]

    def lookup(self, token: str) -> float:
        text = token.strip()
        text = text.strip(self._strip) if self._strip else text
        if text in LABEL_MISSING:
            what = "empty" if not text else f"'{text}', a missing value"
            raise _Invalid(f"the target is {what}: every row needs one (drop the rows without one)")
        try:
            v = float(text)
        except ValueError:
            raise _Invalid(f"target '{text}' is not a number (--task regression)") from None
        if not math.isfinite(v):
            raise _Invalid(f"target '{text}' is not finite")
        return v


class _TargetCounts:
    """Running count, range and sum of the targets written (``--task regression``)."""

    deferred = False

    def __init__(self) -> None:
        self.n, self.lo, self.hi, self.total = 0, math.inf, -math.inf, 0.0

    def add(self, y: np.ndarray) -> None:
        if y.size:
            self.n += int(y.size)
            self.lo, self.hi = min(self.lo, float(y.min())), max(self.hi, float(y.max()))
            self.total += float(np.sum(y, dtype=np.float64))

    def as_dict(self, resolved=None) -> dict:
        """No class counts: a regression file's targets are numbers (see :meth:`describe`)."""
        return {}

    def describe(self) -> dict:
        return {"n": self.n, "min": self.lo, "max": self.hi, "mean": self.total / self.n if self.n else None}


@dataclass
class _Resolved:
    """What :meth:`_LabelMap.resolve` decided."""

    classes: list  # the class values, canonical order
    index: np.ndarray  # class index of every provisional code
    table: np.ndarray  # y of every provisional code (the value itself, or the class index)
    y_dtype: np.dtype
    file_classes: Optional[list]  # the classes attribute to write, or None (y holds the values)


class _Counts:
    """Running label counts of the rows written (of -1/+1, or of provisional codes)."""

    def __init__(self, deferred: bool = False) -> None:
        self.deferred = deferred
        self.pos = 0
        self.neg = 0
        self.codes = np.zeros(0, dtype=np.int64)

    def add(self, y: np.ndarray) -> None:
        if self.deferred:
            if y.size:
                c = np.bincount(np.asarray(y, dtype=np.intp))
                if c.size < self.codes.size:
                    c = np.pad(c, (0, self.codes.size - c.size))
                c[: self.codes.size] += self.codes
                self.codes = c
            return
        p = int(np.count_nonzero(y == 1))
        self.pos += p
        self.neg += int(y.size) - p

    def as_dict(self, resolved: "Optional[_Resolved]" = None) -> dict:
        """Rows per label value: -1 and +1, or (with ``resolved``) each class present, in class order."""
        if not self.deferred:
            return {-1: self.neg, 1: self.pos}
        assert resolved is not None
        per_class = np.zeros(len(resolved.classes), dtype=np.int64)
        np.add.at(per_class, resolved.index[: self.codes.size], self.codes[: resolved.index.size])
        return {v: int(c) for v, c in zip(resolved.classes, per_class.tolist()) if c}


class _DomainCounts:
    """Running row counts per domain id."""

    def __init__(self) -> None:
        self.counts = np.zeros(0, dtype=np.int64)

    def add(self, dom: np.ndarray) -> None:
        if dom.size:
            c = np.bincount(dom)
            if c.size > self.counts.size:
                c[: self.counts.size] += self.counts
                self.counts = c
            else:
                self.counts[: c.size] += c

    def ids(self) -> set:
        return set(np.nonzero(self.counts)[0].tolist())

    def as_dict(self, names: Optional[Sequence[str]] = None) -> dict:
        """Rows per domain present, keyed by name where ``names`` has one."""
        out = {}
        for k in np.nonzero(self.counts)[0].tolist():
            key = names[k] if names is not None and k < len(names) else k
            out[key] = int(self.counts[k])
        return out


def _check_side_out(path: Optional[PathLike], option: str, out: PathLike, inputs: Sequence[PathLike] = ()) -> None:
    """Checks on a side file written beside the data (--vocab-out, --categories-out)."""
    if path is None:
        return
    p = os.fspath(path)
    if os.path.isdir(p):
        raise InputError(f"{p}: is a directory; {option} names the file to write")
    parent = os.path.dirname(p) or "."
    if not os.path.isdir(parent):
        raise InputError(f"{p}: directory {parent} does not exist ({option})")
    if os.path.abspath(p) == os.path.abspath(os.fspath(out)):
        raise InputError(f"{p}: {option} is the same file as --out")
    for q in inputs:
        if os.path.exists(p) and os.path.exists(q) and os.path.samefile(p, q):
            raise InputError(f"{p}: {option} would overwrite an input file")


def _write_text_atomic(path: PathLike, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename."""
    with atomic_path(path) as tmp:
        with open(tmp, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)


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
        log.warning(
            f"--positive-label {positive!r} matched no row; every label is -1",
        )
