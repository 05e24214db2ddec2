"""Amazon multi-domain sentiment reviews (Blitzer et al., ``processed_acl``) to
HDF5: bag-of-words counts over a vocabulary of the most frequent tokens.

A review file has one review per line::

    token:count token:count ... #label#:positive

(tokens are unigrams and ``_``-joined bigrams; the label is the last entry).
The vocabulary is the V tokens found in the most reviews (document frequency)
of the vocabulary source files, ties broken by the token text; column j of
``X`` counts the j-th vocabulary token. A vocabulary file has one token a line
(``--vocab-out`` adds a tab and the document frequency, which ``--vocab-in``
ignores).
"""
from __future__ import annotations

import heapq
import os
import time
from collections import Counter
from itertools import repeat
from typing import Iterator, Optional, Sequence

import numpy as np

from ...errors import InputError
from ..format import DatasetWriter
from .common import (
    BATCH_TOKENS,
    ConvertResult,
    PathLike,
    _check_common,
    _check_side_out,
    _chunk_rows,
    _Counts,
    _DomainCounts,
    _value_max,
    _write_text_atomic,
)
from .source import _Progress, _Source

LABEL_PREFIX = "#label#:"
LABELS = {LABEL_PREFIX + "positive": 1, LABEL_PREFIX + "negative": -1}
VOCAB_SIZE = 5000
_NOT_SEPARATORS = bytes(b for b in range(256) if b not in b" :")
VOCAB_DATASET = "vocabulary"  # the vocabulary in the data file, one UTF-8 token per feature


def _reviews(src: _Source, name: str, vmax: float) -> Iterator[tuple[int, int, list[str], list[str]]]:
    """(line, label, tokens, counts) of every non-blank line; raises on a bad line."""
    for lineno, line in enumerate(src.lines(), 1):
        parts = line.split()
        if not parts:
            continue
        y = LABELS.get(parts[-1])
        if y is None:
            _bad_label(name, lineno, parts[-1])
        n = len(parts) - 1
        body = " ".join(parts[:-1])
        raw = body.encode("utf-8", "replace")
        # Every entry has exactly one ':' with text on both sides: then the
        # separators alternate ': : ...', and one split of the line does it all.
        if (
            raw.translate(None, _NOT_SEPARATORS) == b": " * (n - 1) + b":"
            and not (raw.startswith(b":") or raw.endswith(b":") or b" :" in raw or b": " in raw)
        ) or not n:
            flat = body.replace(":", " ").split()
            keys, counts = flat[0::2], flat[1::2]
        else:
            # A token may hold ':' itself; its count follows the last one.
            split = [t.rpartition(":") for t in parts[:-1]]
            keys = [k for k, _, _ in split]
            counts = [v for _, _, v in split]
        joined = "".join(counts)
        if not (
            all(keys)
            and all(counts)
            and joined.isascii()
            and joined.isdigit()
            and len(set(keys)) == len(keys)
            and "#label#" not in keys
        ):
            _bad_entries(name, lineno, parts[:-1])
        if counts and max(map(len, counts)) > 38:
            for key, c in zip(keys, counts):
                if float(c) > vmax:
                    raise InputError(
                        f"{name}:{lineno}: count {c} of token '{key}' is too large for the feature dtype "
                        "(use --dtype float64)"
                    )
        yield lineno, y, keys, counts


def _bad_label(name: str, lineno: int, last: str) -> None:
    if last.startswith(LABEL_PREFIX):
        raise InputError(f"{name}:{lineno}: label '{last[len(LABEL_PREFIX):]}' is not 'positive' or 'negative'")
    raise InputError(
        f"{name}:{lineno}: the last entry '{last}' is not the label "
        "(a review line ends with #label#:positive or #label#:negative)"
    )


def _bad_entries(name: str, lineno: int, entries: Sequence[str]) -> None:
    seen: set[str] = set()
    for tok in entries:
        key, sep, count = tok.rpartition(":")
        if not sep or not key:
            raise InputError(f"{name}:{lineno}: entry '{tok}' is not token:count")
        if key == "#label#":
            raise InputError(f"{name}:{lineno}: '{tok}': the label must be the last entry of the line")
        if not (count.isascii() and count.isdigit()):
            raise InputError(f"{name}:{lineno}: count '{count}' of token '{key}' is not a non-negative integer")
        if key in seen:
            raise InputError(f"{name}:{lineno}: token '{key}' appears twice")
        seen.add(key)
    raise AssertionError("review line rejected without a reason")  # pragma: no cover


def document_frequencies(paths: Sequence[PathLike], vmax: float = float("inf")) -> Counter:
    """Number of reviews each token occurs in, over ``paths``."""
    df: Counter = Counter()
    for path in paths:
        with _Source(path) as src, _Progress(src, "vocabulary"):
            for _, _, keys, _ in _reviews(src, src.name, vmax):
                df.update(keys)
    return df


def top_tokens(df: Counter, size: int) -> list[tuple[str, int]]:
    """The ``size`` tokens of highest document frequency, ties by token text."""
    return heapq.nsmallest(size, df.items(), key=lambda kv: (-kv[1], kv[0]))


def read_vocabulary(path: PathLike) -> list[str]:
    name = os.fspath(path)
    tokens: list[str] = []
    where: dict[str, int] = {}
    with _Source(path) as src:
        for lineno, line in enumerate(src.lines(), 1):
            tok = line.split("\t", 1)[0].strip()
            if not tok:
                continue
            if len(tok.split()) != 1:
                raise InputError(f"{name}:{lineno}: vocabulary entry '{tok}' holds whitespace")
            if tok in where:
                raise InputError(f"{name}:{lineno}: token '{tok}' is already on line {where[tok]}")
            where[tok] = lineno
            tokens.append(tok)
    if not tokens:
        raise InputError(f"{name}: the vocabulary file is empty")
    return tokens


def write_vocabulary(path: PathLike, ranked: Sequence[tuple[str, Optional[int]]]) -> None:
    text = "".join(f"{tok}\t{df}\n" if df is not None else f"{tok}\n" for tok, df in ranked)
    _write_text_atomic(path, text)


def _domain_of(path: PathLike) -> str:
    return os.path.basename(os.path.dirname(os.path.abspath(os.fspath(path)))) or "/"


def convert_amazon(
    paths: Sequence[PathLike],
    out: PathLike,
    *,
    vocab_size: Optional[int] = None,
    vocab_from: Optional[Sequence[PathLike]] = None,
    vocab_in: Optional[PathLike] = None,
    vocab_out: Optional[PathLike] = None,
    binary: bool = False,
    domain_per_file: bool = False,
    domain: Optional[str] = None,
    dtype: str = "float32",
    compression: Optional[str] = None,
    limit: Optional[int] = None,
) -> ConvertResult:
    """Convert Amazon review files to one HDF5 data file (rows in file order).

    Parameters
    ----------
    paths : sequence of paths
        Review files; their rows are concatenated in this order.
    out : path
        Output HDF5 file, written atomically.
    vocab_size : int, optional
        V, the vocabulary size (default 5000; fewer when the sources have
        fewer distinct tokens). Not with ``vocab_in``.
    vocab_from : sequence of paths, optional
        Files whose document frequencies choose the vocabulary (default:
        ``paths``). Not with ``vocab_in``.
    vocab_in, vocab_out : path, optional
        Read the vocabulary from a file instead of choosing it; write the one
        used to a file (so a test split can share a training vocabulary).
    binary : bool
        Write 1 for a token present instead of its count.
    domain_per_file : bool
        A ``domain`` column with one domain per parent directory of the input
        files (``books/positive.review`` and ``books/negative.review`` are
        both domain ``books``), ids in order of first appearance.
    domain : str, optional
        Put every row in one domain of this name (a ``domain`` column of zeros,
        ``domain_names`` and the file attribute ``domain_name``).
    dtype, compression, limit
        As for the other converters; ``limit`` counts the rows written.

    Returns
    -------
    ConvertResult
    """
    t0 = time.perf_counter()
    x_dtype = np.dtype(dtype)
    paths = [os.fspath(p) for p in paths]
    if not paths:
        raise InputError("no input files")
    for p in paths:
        _check_common(p, out, limit)
    if vocab_in is not None and (vocab_from or vocab_size is not None):
        other = "--vocab-from" if vocab_from else "--vocab-size"
        raise InputError(f"--vocab-in gives the vocabulary; it does not go with {other}")
    if vocab_size is not None and vocab_size < 1:
        raise InputError(f"--vocab-size must be at least 1, got {vocab_size}")
    if domain_per_file and domain is not None:
        raise InputError("--domain-per-file and --domain are two ways to set the domains; use one")
    if domain is not None and not domain.strip():
        raise InputError("--domain needs a non-empty name")
    _check_side_out(vocab_out, "--vocab-out", out, [*paths, *(vocab_from or [])])
    vmax = _value_max(x_dtype)

    if vocab_in is not None:
        vocab = read_vocabulary(vocab_in)
        ranked: list[tuple[str, Optional[int]]] = [(tok, None) for tok in vocab]
        vocab_source = os.path.basename(os.fspath(vocab_in))
    else:
        sources = [os.fspath(p) for p in vocab_from] if vocab_from else paths
        ranked = list(top_tokens(document_frequencies(sources, vmax), vocab_size or VOCAB_SIZE))
        if not ranked:
            raise InputError(f"{', '.join(sources)}: no tokens to build a vocabulary from")
        vocab = [tok for tok, _ in ranked]
        vocab_source = ",".join(_short(p) for p in sources)
    index = {tok: j for j, tok in enumerate(vocab)}
    d = len(vocab)

    dom_names: list[str] = []
    dom_ids: list[int] = []
    if domain_per_file:
        for p in paths:
            name = _domain_of(p)
            if name not in dom_names:
                dom_names.append(name)
            dom_ids.append(dom_names.index(name))
    elif domain is not None:
        dom_names = [domain.strip()]
        dom_ids = [0] * len(paths)
    with_domain = bool(dom_names)

    attrs = {
        "source": ",".join(_short(p) for p in paths),
        "source_format": "amazon",
        "vocabulary": vocab_source,
        "values": "binary" if binary else "counts",
    }
    if domain is not None:
        attrs["domain_name"] = domain.strip()
    counts = _Counts()
    dcounts = _DomainCounts()
    rows_per_chunk = _chunk_rows(d, x_dtype)
    total = 0
    with DatasetWriter(
        out,
        d,
        x_dtype=x_dtype,
        with_domain=with_domain,
        feature_names=vocab,
        domain_names=dom_names if with_domain else None,
        attrs=attrs,
        compression=compression,
    ) as w:
        for fi, path in enumerate(paths):
            if limit is not None and total >= limit:
                break
            with _Source(path) as src, _Progress(src, "converting"):
                reviews = _reviews(src, src.name, vmax)
                while limit is None or total < limit:
                    cap = rows_per_chunk if limit is None else min(rows_per_chunk, limit - total)
                    labels: list[int] = []
                    lengths: list[int] = []
                    keys: list[str] = []
                    vals: list[str] = []
                    for _, y, k, v in reviews:
                        labels.append(y)
                        lengths.append(len(k))
                        keys += k
                        vals += v
                        if len(labels) == cap or len(keys) >= BATCH_TOKENS:
                            break
                    if not labels:
                        break
                    m = len(labels)
                    X = np.zeros((m, d), dtype=x_dtype)
                    if keys:
                        cols = np.fromiter(map(index.get, keys, repeat(-1)), dtype=np.int64, count=len(keys))
                        rows = np.repeat(np.arange(m), lengths)
                        hit = cols >= 0
                        if binary:
                            X[rows[hit], cols[hit]] = 1
                        else:
                            # Digit strings that fit the dtype (checked line by line).
                            X[rows[hit], cols[hit]] = np.fromiter(
                                map(float, vals), dtype=np.float64, count=len(vals)
                            )[hit]
                    y_arr = np.asarray(labels, dtype=np.int8)
                    dom = np.full(m, dom_ids[fi], dtype=np.int32) if with_domain else None
                    w.append(X, y_arr, dom)
                    counts.add(y_arr)
                    if dom is not None:
                        dcounts.add(dom)
                    total += m
                    if m < cap and len(keys) < BATCH_TOKENS:
                        break  # the file is done
        if w.n == 0:
            raise InputError(f"{', '.join(paths)}: no reviews")
        # The vocabulary also as a dataset: one UTF-8 token per feature, for other tools.
        w.add_array(VOCAB_DATASET, np.array([tok.encode("utf-8") for tok in vocab]))
        if vocab_out is not None:
            write_vocabulary(vocab_out, ranked)
        n = w.n
    return ConvertResult(
        ", ".join(paths), os.fspath(out), n, d, str(x_dtype), counts.as_dict(),
        len(dcounts.ids()) if with_domain else None, time.perf_counter() - t0,
        domain_counts=dcounts.as_dict(dom_names) if with_domain else None,
    )


def _short(path: PathLike) -> str:
    """``parent/name`` of a path: enough to tell books/positive.review from dvd/positive.review."""
    p = os.path.abspath(os.fspath(path))
    return os.path.join(os.path.basename(os.path.dirname(p)), os.path.basename(p))
