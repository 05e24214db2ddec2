"""Quantize features once to uint8 bins with edges that do not depend on the ranks.

Each feature gets at most 255 value bins (0..254) plus bin 255 for missing
values. A value ``v`` falls in bin ``b`` = number of edges strictly below
``v``, so a stump "bin <= b" is the real-valued rule "x <= edges[b]".

Edges come from global quantiles of a sample of rows chosen by *global row id*
(:func:`sample_rows`); every rank contributes the sampled rows it owns as
per-feature distinct values with counts, the center merges them and computes
the edges (:func:`edges_from_counts`), and broadcasts them. The merged
multiset, hence the edges, is the same for any number of ranks.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

MISSING_BIN = 255
MAX_VALUE_BINS = 255
# Most edges of one feature: MAX_VALUE_BINS value bins need one edge fewer,
# and one more would send values above the last edge to the missing bin.
MAX_EDGES = MAX_VALUE_BINS - 1
DEFAULT_SAMPLE = 200_000


def sample_rows(n: int, sample_size: int = DEFAULT_SAMPLE, seed: int = 0) -> np.ndarray:
    """Sorted global row ids of the binning sample (all rows if ``n <= sample_size``)."""
    if n <= sample_size:
        return np.arange(n, dtype=np.int64)
    rng = np.random.default_rng([int(seed), 0x5A3B1E])
    return np.sort(rng.choice(n, size=sample_size, replace=False)).astype(np.int64)


def edges_from_counts(values: np.ndarray, counts: np.ndarray, max_bins: int = MAX_VALUE_BINS) -> np.ndarray:
    """Bin edges of one feature from its distinct sampled values and their counts.

    ``values`` must be sorted, finite and distinct. With at most ``max_bins``
    distinct values each gets its own bin (edges at midpoints); otherwise the
    edges sit at midpoints next to the ``k/max_bins`` quantiles, deduplicated,
    so heavy values keep a bin of their own.
    """
    values = np.asarray(values, dtype=np.float64)
    counts = np.asarray(counts, dtype=np.int64)
    if not 2 <= max_bins <= MAX_VALUE_BINS:
        raise ValueError(f"max_bins must be in [2, {MAX_VALUE_BINS}], got {max_bins}")
    if values.size <= 1:
        return np.zeros(0)
    if values.size <= max_bins:
        left, right = values[:-1], values[1:]
    else:
        cum = np.cumsum(counts)
        targets = cum[-1] * np.arange(1, max_bins) / max_bins
        idx = np.searchsorted(cum, targets, side="left")
        idx = np.unique(np.minimum(idx, values.size - 2))
        left, right = values[idx], values[idx + 1]
    mid = left + (right - left) / 2.0
    # right - left overflows for values of opposite sign near the float64
    # limits; halving first keeps such an edge finite (and between them).
    wide = ~np.isfinite(mid)
    if wide.any():
        mid[wide] = left[wide] / 2.0 + right[wide] / 2.0
    return np.unique(mid)


def local_distinct(sample: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per-feature (sorted distinct non-missing values, counts) of a row sample."""
    out = []
    for j in range(sample.shape[1]):
        col = sample[:, j]
        if col.dtype.kind == "f":
            col = col[~np.isnan(col)]
        v, c = np.unique(col, return_counts=True)
        out.append((v, c))
    return out


def merge_distinct(parts: Sequence[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Merge several (distinct values, counts) pairs of one feature."""
    vals = np.concatenate([np.asarray(p[0], dtype=np.float64) for p in parts]) if parts else np.zeros(0)
    cnts = np.concatenate([np.asarray(p[1], dtype=np.int64) for p in parts]) if parts else np.zeros(0, np.int64)
    if vals.size == 0:
        return vals, cnts
    uniq, inv = np.unique(vals, return_inverse=True)
    return uniq, np.bincount(inv.ravel(), weights=cnts, minlength=uniq.size).astype(np.int64)


@dataclass
class BinMapper:
    """Per-feature bin edges and the transform from raw values to uint8 bins.

    A categorical feature of k categories (``categorical[j]``) holds codes 0 .. k-1 and has the edges
    0.5, 1.5, ..., k - 1.5: code c falls in bin c, a fraction in the bin of its integer part (as LightGBM
    casts a category); a negative value or a code of k or more is missing, so a category the training rows
    never had goes where missing values go.
    """

    edges: list[np.ndarray]
    categorical: Optional[np.ndarray] = None  # (d,) bool, or None: no categorical feature

    @property
    def n_features(self) -> int:
        return len(self.edges)

    @property
    def n_bins(self) -> np.ndarray:
        """Number of value bins per feature (missing bin excluded)."""
        return np.array([len(e) + 1 for e in self.edges], dtype=np.int64)

    def flat(self) -> tuple[np.ndarray, np.ndarray]:
        """Edges concatenated, and offsets (``d + 1``) into them."""
        offsets = np.zeros(self.n_features + 1, dtype=np.int64)
        offsets[1:] = np.cumsum([len(e) for e in self.edges])
        flat = np.concatenate(self.edges).astype(np.float64) if self.edges else np.zeros(0)
        return np.ascontiguousarray(flat), offsets

    @classmethod
    def from_flat(cls, flat: np.ndarray, offsets: np.ndarray, categorical=None) -> "BinMapper":
        """The mapper of :meth:`flat`'s arrays (trusted: :func:`check_flat` checks a file's)."""
        return cls([np.asarray(flat[offsets[j] : offsets[j + 1]], dtype=np.float64) for j in range(len(offsets) - 1)],
                   categorical_mask(categorical))

    def with_categories(self, categories: dict) -> "BinMapper":
        """This mapper with the features of ``categories`` ({feature: k}) categorical: one bin per code."""
        if not categories:
            return self
        edges = list(self.edges)
        mask = np.zeros(self.n_features, dtype=bool) if self.categorical is None else self.categorical.copy()
        for j, k in categories.items():
            edges[int(j)] = np.arange(int(k) - 1, dtype=np.float64) + 0.5
            mask[int(j)] = True
        return BinMapper(edges, mask)

    @property
    def categories(self) -> dict:
        """``{feature: number of categories}`` of the categorical features."""
        if self.categorical is None:
            return {}
        return {int(j): int(len(self.edges[j]) + 1) for j in np.flatnonzero(self.categorical)}

    def threshold(self, feature: int, bin_index: int) -> float:
        """The real threshold of the rule ``bin <= bin_index`` (``inf`` for the last bin)."""
        e = self.edges[feature]
        return float(e[bin_index]) if bin_index < len(e) else float("inf")

    def transform(self, X: np.ndarray, out: Optional[np.ndarray] = None) -> np.ndarray:
        """Bin a raw ``(n, d)`` chunk with the compiled kernels.

        ``out`` may be any ``(n, d)`` uint8 view, e.g. ``cols[:, a:b].T`` to
        write straight into feature-major storage.
        """
        from .._ext import _binning

        X = np.asarray(X)
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise ValueError(f"expected shape (n, {self.n_features}), got {X.shape}")
        if out is None:
            out = np.empty(X.shape, dtype=np.uint8)
        if X.dtype in (np.int8, np.uint8):
            _binning.apply_lut(np.ascontiguousarray(X).view(np.uint8), self._lut(X.dtype), out)
            self._missing_unknown(X, out)
            return out
        if X.dtype not in (np.float32, np.float64, np.int16, np.int32):
            X = X.astype(np.float64)
        flat, offsets = self._flat_cached()
        _binning.apply_bins(np.ascontiguousarray(X), flat, offsets, out)
        self._missing_unknown(X, out)
        return out

    def _missing_unknown(self, X: np.ndarray, out: np.ndarray) -> None:
        """A categorical feature's value goes to the bin of its integer part (LightGBM's cast of a category), or
        to the missing bin where that is no code 0 .. k-1 (negative, too large, NaN)."""
        for j, k in self.categories.items():
            v = X[:, j]
            if v.dtype.kind == "f":
                with np.errstate(invalid="ignore"):
                    code = np.trunc(v)
                bad = ~((v >= 0) & (code <= k - 1))  # NaN included
                code[bad] = MISSING_BIN
                out[:, j] = code.astype(np.uint8)
            else:
                bad = (v < 0) | (v > k - 1)
                if bad.any():
                    out[bad, j] = MISSING_BIN

    def _flat_cached(self) -> tuple[np.ndarray, np.ndarray]:
        if getattr(self, "_flat", None) is None:
            self._flat = self.flat()
        return self._flat

    def _lut(self, dtype: np.dtype) -> np.ndarray:
        """(d, 256) table: bin of every possible byte value, indexed by the raw byte."""
        cache = self.__dict__.setdefault("_luts", {})
        key = np.dtype(dtype).str
        if key not in cache:
            raw = np.arange(256, dtype=np.uint8).view(dtype).astype(np.float64)
            cache[key] = np.ascontiguousarray(
                np.stack([np.searchsorted(e, raw, side="left") for e in self.edges]).astype(np.uint8)
            ).reshape(self.n_features, 256)
        return cache[key]


def not_codes(v: np.ndarray, k: int) -> np.ndarray:
    """Where ``v`` is neither missing (NaN) nor a category code, a whole number in 0 .. k-1."""
    if v.dtype.kind != "f":
        return (v < 0) | (v > k - 1)
    with np.errstate(invalid="ignore"):
        return ~(((v >= 0) & (v <= k - 1) & (v == np.floor(v))) | np.isnan(v))


def categorical_mask(categorical) -> Optional[np.ndarray]:
    """A (d,) bool mask, or None where no feature is categorical."""
    if categorical is None:
        return None
    mask = np.asarray(categorical, dtype=bool)
    return mask if mask.any() else None


def check_flat(flat: np.ndarray, offsets: np.ndarray) -> None:
    """Check bin edges read from a file, as :meth:`BinMapper.flat` writes them.

    The binning kernel reads feature ``j``'s edges at ``offsets[j]`` without
    bounds checks, so the offsets must cut ``flat`` into consecutive pieces,
    and each piece must be what :func:`edges_from_counts` makes: at most
    :data:`MAX_EDGES` finite, strictly increasing edges.

    Parameters
    ----------
    flat : ndarray of float64
        The edges of every feature, concatenated.
    offsets : ndarray of int
        ``d + 1`` offsets into ``flat``.

    Raises
    ------
    ValueError
        Naming the array (``bins/edges``, ``bins/offsets``) and the feature.
    """
    if flat.ndim != 1 or offsets.ndim != 1:
        raise ValueError(f"bins/edges and bins/offsets must be 1-D, have shapes {flat.shape} and {offsets.shape}")
    if offsets.shape[0] < 1 or offsets[0] != 0 or offsets[-1] != flat.shape[0]:
        raise ValueError(f"bins/offsets must run from 0 to the {flat.shape[0]} edges of bins/edges")
    counts = np.diff(offsets)
    if counts.size and (counts.min() < 0 or counts.max() > MAX_EDGES):
        j = int(np.nonzero((counts < 0) | (counts > MAX_EDGES))[0][0])
        raise ValueError(f"bins/offsets gives feature {j} {int(counts[j])} edges (0..{MAX_EDGES} allowed)")
    if not np.isfinite(flat).all():
        raise ValueError("bins/edges holds a value that is not finite")
    step = np.diff(flat)
    # Edges of neighbouring features need not increase: skip the steps across features.
    within = np.ones(step.shape[0], dtype=bool)
    ends = offsets[1:-1] - 1
    within[ends[(ends >= 0) & (ends < step.shape[0])]] = False
    bad = np.nonzero(within & ~(step > 0))[0]
    if bad.size:
        j = int(np.searchsorted(offsets, bad[0], side="right") - 1)
        raise ValueError(f"bins/edges of feature {j} do not strictly increase")


def fit_edges(comm, local_sample: np.ndarray, max_bins: int = MAX_VALUE_BINS) -> BinMapper:
    """Collective: bin edges from every rank's share of the global row sample.

    ``local_sample`` is this rank's ``(m_local, d)`` sampled rows (any dtype,
    NaN = missing). Every rank gets the same :class:`BinMapper`.

    Feature-parallel: rank ``r`` owns the features of block ``r`` (:func:`feature_blocks`). Each rank
    sends every owner the distinct values and counts of the owner's features (one personalized
    exchange, so no rank holds more than its block of every rank's values); each owner merges its
    features' parts in rank order and cuts their edges; the edges are then gathered on every rank.
    Merging is order-free (a sort and integer counts), so the edges are those of one process.

    Parameters
    ----------
    comm : Comm
        The ranks that share the sample; each owns a block of the features while the edges are cut.
    local_sample : numpy.ndarray of shape (m_local, d)
        This rank's sampled rows (any dtype, NaN = missing).
    max_bins : int
        The most value bins of a feature, 2 .. :data:`MAX_VALUE_BINS` (missing values have a bin besides).

    Returns
    -------
    BinMapper
        The edges of every feature, the same on every rank.
    """
    d = local_sample.shape[1]
    distinct = local_distinct(local_sample)
    lengths = np.array([len(v) for v, _ in distinct], dtype=np.int64)
    # Ship in the file's float precision: the values are exact there.
    vdtype = np.float32 if local_sample.dtype in (np.float32, np.int8, np.uint8, np.int16) else np.float64
    values = np.concatenate([v for v, _ in distinct]).astype(vdtype) if d else np.zeros(0, vdtype)
    counts = np.concatenate([c for _, c in distinct]).astype(np.int64) if d else np.zeros(0, np.int64)
    if comm.size == 1:
        mapper = BinMapper([edges_from_counts(*merge_distinct([(v.astype(vdtype), c)]), max_bins=max_bins)
                            for v, c in distinct])
        flat, offsets = mapper.flat()
        return BinMapper.from_flat(flat, offsets)
    blocks = feature_blocks(d, comm.size)
    sizes = np.diff(blocks)
    lo, hi = int(blocks[comm.rank]), int(blocks[comm.rank + 1])
    with comm.primitive("binning"):
        # lengths[j] for the owner of j; every rank knows it gets sizes[me] lengths from each rank
        got_lengths, _ = comm.alltoallv(lengths, sizes, np.full(comm.size, hi - lo))
        got_lengths = got_lengths.reshape(comm.size, hi - lo)
        per_owner = np.add.reduceat(lengths, blocks[:-1]) if d else np.zeros(comm.size, np.int64)
        per_owner[sizes == 0] = 0  # reduceat gives an element, not 0, for an empty block
        from_each = got_lengths.sum(axis=1)
        got_values, _ = comm.alltoallv(values, per_owner, from_each)
        got_counts, _ = comm.alltoallv(counts, per_owner, from_each)
        # where feature lo + j's part from rank r starts in what arrived (ranks in order, features in order)
        first = (np.cumsum(got_lengths.ravel()) - got_lengths.ravel()).reshape(comm.size, hi - lo)
        mine = []
        for j in range(hi - lo):
            parts = [(got_values[a : a + m], got_counts[a : a + m])
                     for a, m in zip(first[:, j].tolist(), got_lengths[:, j].tolist())]
            mine.append(edges_from_counts(*merge_distinct(parts), max_bins=max_bins))
        n_edges = comm.allgatherv(np.array([len(e) for e in mine], dtype=np.int64), counts=sizes)
        flat = comm.allgatherv(np.concatenate(mine).astype(np.float64) if mine else np.zeros(0),
                               counts=np.add.reduceat(n_edges, blocks[:-1]) * (sizes > 0) if d else sizes)
    offsets = np.zeros(d + 1, dtype=np.int64)
    offsets[1:] = np.cumsum(n_edges)
    return BinMapper.from_flat(flat, offsets)


def feature_blocks(d: int, size: int) -> np.ndarray:
    """``size + 1`` boundaries cutting ``d`` features into contiguous blocks of sizes differing by at most one."""
    return np.array([r * d // size for r in range(size + 1)], dtype=np.int64)
