"""Weights stored as one value per *cell* of rows that share a history.

SmoothBoost multiplies each row's weight by (1 - gamma) or 1, rescales all
weights by common factors and clips some to a cap, so rows with the same
history keep bitwise-equal weights: a round maps every (cell, outcome) pair
to one new cell. Storing a cell id per row and a value per cell turns the
round's sums and the projection into small exact computations on the cells
(global counts are integer sums, so every rank computes the same table), and
leaves only integer passes per row. The row-level arithmetic is the same as
for per-row weights, so the model is the same.
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

from .._ext import _cells, _exact
from ..protocol import FIXED_SHIFT


def _split(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Veltkamp split: a = hi + lo, each with at most 26 significant bits."""
    c = a * 134217729.0  # 2**27 + 1
    hi = c - (c - a)
    return hi, a - hi


def exact_dot(counts: np.ndarray, values: np.ndarray) -> float:
    """Correctly rounded ``sum(counts * values)`` (Dekker's exact products, then fsum)."""
    a = np.asarray(counts, dtype=np.float64)  # exact: counts < 2**53
    b = np.asarray(values, dtype=np.float64)
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    err = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return math.fsum(np.concatenate([p, err]))


def fixed_units(values: np.ndarray) -> np.ndarray:
    """int64 units of 2**-60 per cell, rounded exactly as per-row weights are."""
    out = np.empty(values.shape[0], dtype=np.int64)
    if not _exact.to_fixed(np.ascontiguousarray(values, dtype=np.float64), FIXED_SHIFT, out):
        raise FloatingPointError("weights must be normalized before fixed-point conversion")
    return out


def project(values: np.ndarray, counts: np.ndarray, cap: float) -> tuple[np.ndarray, int, float]:
    """KL projection of a weight multiset (``counts[c]`` rows of weight ``values[c]``) onto ``max <= cap``.

    The clipped rows are those of the m largest values, for the least m
    whose scale ``lam = (1 - C cap) / (exact mass of the rest)`` keeps the
    largest unclipped value under the cap. Returns ``(new values, clipped
    rows C, lam)``: clipped cells get ``cap``, the others ``min(cap, v * lam)``.
    """
    live = counts > 0
    if not live.any() or values[live].max() <= cap:
        return values.copy(), 0, 1.0
    order = np.argsort(-values, kind="stable")
    order = order[live[order]]
    v, c = values[order], counts[order]
    clipped_rows = np.concatenate([[0], np.cumsum(c)])

    def scale(m: int) -> float:
        below = exact_dot(c[m:], v[m:])
        return (1.0 - clipped_rows[m] * cap) / below if below > 0 else math.inf

    lo, hi = 1, len(v)  # the answer m is in [lo, hi]; m = len(v) clips everything
    while lo < hi:
        mid = (lo + hi) // 2
        if v[mid] * scale(mid) <= cap:
            hi = mid
        else:
            lo = mid + 1
    m = lo
    lam = scale(m) if m < len(v) else 1.0
    out = values.copy()
    top = order[:m]
    rest = np.setdiff1d(np.nonzero(live)[0], top)
    out[top] = cap
    out[rest] = np.minimum(cap, values[rest] * lam)
    return out, int(clipped_rows[m]), lam


class CellWeights:
    """A cell id per row and the global table of cell values and counts.

    Parameters
    ----------
    n_local, n_global
        Rows on this rank and in all.
    proto
        The protocol (only integer count reductions are used).
    """

    def __init__(self, n_local: int, n_global: int, proto, initial: float) -> None:
        self.proto = proto
        self.cell = np.zeros(n_local, dtype=np.int32)
        self.values = np.array([initial])
        self.counts = np.array([n_global], dtype=np.int64)
        self._units: Optional[np.ndarray] = None

    @property
    def n_cells(self) -> int:
        return int(self.values.shape[0])

    def units(self) -> np.ndarray:
        if self._units is None:
            self._units = fixed_units(self.values)
        return self._units

    def fill_cumsum(self, out: np.ndarray) -> int:
        return _cells.cell_cumsum(self.cell, self.units(), out)

    def fill_signed(self, y: np.ndarray, out: np.ndarray) -> int:
        return _cells.cell_signed(self.cell, self.units(), y, out)

    def outcomes(self, col: np.ndarray, y: np.ndarray, args: tuple) -> np.ndarray:
        """Global rows per (cell, right/wrong) for a stump (an exact integer reduction)."""
        local = _cells.count_outcomes(self.cell, col, y, *args, self.n_cells)
        return self.proto.reduce_counts(local.ravel()).reshape(self.n_cells, 2)

    def masses(self, outcomes: np.ndarray) -> tuple[float, float]:
        """Exact weight of the right and the wrong rows."""
        return exact_dot(outcomes[:, 0], self.values), exact_dot(outcomes[:, 1], self.values)

    def rebuild(self, new_values: np.ndarray, outcomes: np.ndarray) -> np.ndarray:
        """Make the cells of the next round; returns the (old cell, outcome) -> new cell table.

        ``new_values[c, k]`` is the new weight of the rows of cell c with
        outcome k; pairs with no rows get no cell, equal values share one.
        """
        live = outcomes > 0
        uniq, inverse = np.unique(new_values[live], return_inverse=True)
        table = np.zeros(outcomes.shape, dtype=np.int32)
        table[live] = inverse.ravel()
        counts = np.zeros(uniq.shape[0], dtype=np.int64)
        np.add.at(counts, inverse.ravel(), outcomes[live])
        self.values, self.counts, self._units = uniq, counts, None
        return table

    def merge_equal(self) -> Optional[np.ndarray]:
        """Merge cells whose values became equal (after clipping); returns the old -> new map."""
        uniq, inverse = np.unique(self.values, return_inverse=True)
        if uniq.shape[0] == self.values.shape[0]:
            return None
        counts = np.zeros(uniq.shape[0], dtype=np.int64)
        np.add.at(counts, inverse.ravel(), self.counts)
        self.values, self.counts, self._units = uniq, counts, None
        return inverse.astype(np.int32).ravel()

    def row_weights(self) -> np.ndarray:
        """Per-row weights (for switching to the per-row store, and for tests)."""
        return self.values[self.cell]
