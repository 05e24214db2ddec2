"""The k-entity protocol: the only communication the algorithms use.

Rank 0 is the center; every rank (the center too, unless it is a dedicated
coordinator with no rows) is an entity owning a block of the global rows.
Each primitive runs the entity side and the center side over
:class:`mpiboost.comm.Comm`, attributes its bytes to its own name, and is
exact: its result does not depend on how the rows are split.

Weights enter as float64 (for the projection and exact sums) or as int64
fixed-point units (for sampling and histograms; see :func:`fixed_point`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ._ext import _exact, _histogram, _projection, _weights

FIXED_SHIFT = 60  # a unit weight is 2**60 fixed-point units
SMALL_WINDOW = 4096  # finish the projection search at the center below this many values


def fixed_point(w: np.ndarray, out: Optional[np.ndarray] = None) -> np.ndarray:
    """int64 units of 2**-60 of weights that sum to about 1.

    Rounding is per row, so it is the same on every partition; sums of units
    are exact integer sums. Rows lighter than 2**-61 count as 0 in samples and
    histograms (their total is below n * 2**-61).
    """
    if out is None:
        out = np.empty(w.shape[0], dtype=np.int64)
    if not _exact.to_fixed(np.ascontiguousarray(w, dtype=np.float64), FIXED_SHIFT, out):
        raise FloatingPointError("weights must be normalized (each at most 1) before fixed_point")
    return out


@dataclass
class Sample:
    """Rows drawn by :meth:`Protocol.proportional_sample` (on the center only)."""

    X: np.ndarray  # (N, d) uint8
    y: np.ndarray  # (N,)
    rows: Optional[np.ndarray] = None  # global row ids, if asked for


@dataclass
class ProjectionInfo:
    clipped: int
    lam: float
    theta: float
    iterations: int


class Protocol:
    """Protocol primitives over a communicator.

    Parameters
    ----------
    comm
        The job's :class:`mpiboost.comm.Comm`.
    """

    def __init__(self, comm) -> None:
        self.comm = comm

    @property
    def is_center(self) -> bool:
        return self.comm.is_center

    # ------------------------------------------------------------ weight_sums
    def weight_sums(self, local: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Entities send their int64 weight sums (one per domain, or one).

        Returns ``(totals, offset)``: the global sums and, per entry, the sum of
        the ranks before this one (its start in the global order).
        """
        local = np.atleast_1d(np.asarray(local, dtype=np.int64))
        with self.comm.primitive("weight_sums"):
            table = self.comm.allgather_array(local) if self.comm.size > 1 else local[None, :]
        return table.sum(axis=0), table[: self.comm.rank].sum(axis=0)

    # ---------------------------------------------------- proportional_sample
    def proportional_sample(
        self,
        q: np.ndarray,
        cols: np.ndarray,
        y: np.ndarray,
        n_samples: int,
        rng: np.random.Generator,
        *,
        start: int = 0,
        with_rows: bool = False,
    ) -> Optional[Sample]:
        """Draw ``n_samples`` rows with replacement, row i with probability q_i / sum(q).

        Sampling is defined on the global order: every rank draws the same
        sorted points in ``[0, total)`` from ``rng`` (no message needed), keeps
        those in its own prefix range and maps them to rows through its local
        prefix sums. The center gathers the rows (binned, from the
        feature-major ``cols``) in rank order, which is the order of the points,
        so the sample is the same for any number of ranks.
        """
        (total,), (offset,) = self.weight_sums(np.array([int(q.sum())]))
        if total <= 0:
            raise FloatingPointError("all weights are zero: nothing to sample")
        points = np.sort(rng.integers(0, total, size=n_samples, dtype=np.int64))
        lo, hi = np.searchsorted(points, [offset, offset + int(q.sum())], side="left")
        mine = points[lo:hi]
        rows = np.empty(mine.shape[0], dtype=np.intp)
        if mine.size:
            _weights.rows_for_points(np.cumsum(q), mine, offset, rows)
        with self.comm.primitive("proportional_sample"):
            picked = np.ascontiguousarray(cols[:, rows].T)
            if self.comm.size == 1:
                Xs, ys = picked, y[rows]
                ids = rows.astype(np.int64) + start if with_rows else None
            else:
                Xs = self.comm.gatherv(picked)
                ys = self.comm.gatherv(y[rows])
                ids = self.comm.gatherv(rows.astype(np.int64) + start) if with_rows else None
        return Sample(Xs, ys, ids) if self.is_center else None

    # ------------------------------------------------------ reduce_histograms
    def reduce_histograms(self, hist: np.ndarray) -> Optional[np.ndarray]:
        """Exact global (feature, bin) histogram of int64 units, on the center."""
        with self.comm.primitive("reduce_histograms"):
            if self.comm.size == 1:
                return hist
            return self.comm.reduce_int(hist)

    # --------------------------------------------------- broadcast_hypothesis
    def broadcast_hypothesis(self, packed: Optional[np.ndarray], size: int) -> np.ndarray:
        """The center's hypothesis (a small float64 vector) on every rank."""
        with self.comm.primitive("broadcast_hypothesis"):
            buf = np.asarray(packed, dtype=np.float64) if self.is_center else np.empty(size)
            if buf.shape != (size,):
                raise ValueError("hypothesis has the wrong size")
            if self.comm.size > 1:
                buf = self.comm.Bcast(buf)
        return buf

    # ------------------------------------------------------------ reduce_stats
    def reduce_stats(self, values: np.ndarray, groups: Optional[np.ndarray] = None, n_groups: int = 1) -> np.ndarray:
        """Correctly rounded global sums of ``values`` per group id, on every rank."""
        with self.comm.primitive("reduce_stats"):
            if groups is None:
                return np.array([self.comm.sum_exact(values)])
            return self.comm.sum_exact_grouped(values, groups, n_groups)

    def reduce_terms(self, groups: list) -> np.ndarray:
        """Correctly rounded global sums from per-rank exact terms (one array per group)."""
        with self.comm.primitive("reduce_stats"):
            return self.comm.sum_terms(groups)

    def reduce_counts(self, counts: np.ndarray | int) -> np.ndarray | int:
        """Exact global integer sums, on every rank."""
        with self.comm.primitive("reduce_stats"):
            return self.comm.allreduce_int(counts)

    def reduce_max(self, value: float) -> float:
        with self.comm.primitive("reduce_stats"):
            return self.comm.allreduce_max(float(value))

    # -------------------------------------------------------- smooth_projection
    def smooth_projection(self, w: np.ndarray, cap: float, wmax: Optional[float] = None) -> ProjectionInfo:
        """KL projection of the normalized weights ``w`` onto ``{D : max D <= cap}``, in place.

        The result is ``min(cap, lam * w)`` with ``lam`` such that the weights
        sum to 1 (ALGORITHMS §1.3). A binary search over the global multiset of
        weights finds the clipping threshold; pivots are the window values at
        pseudo-random positions of the *global* row order, and the masses are
        exact sums, so the search takes the same path, and gives the same
        bits, for any split of the rows. Once the window holds at most
        ``SMALL_WINDOW`` values, the center finishes the search alone.
        ``wmax``, the global largest weight if the caller knows it, saves a
        reduction when nothing needs clipping.
        """
        comm = self.comm
        with comm.primitive("smooth_projection"):
            if wmax is None:
                local = float(w.max()) if w.size else 0.0
                wmax = comm.allreduce_max(local) if comm.size > 1 else local
            if wmax <= cap:
                return ProjectionInfo(0, 1.0, math.inf, 0)
            search = _ProjectionSearch(cap)
            window = np.array(w, dtype=np.float64)
            m = window.shape[0]
            sizes = self._sizes(m)
            rng = np.random.default_rng(0x5E1EC7)
            iterations = 0
            while True:
                M = int(sizes.sum())
                if M <= SMALL_WINDOW:
                    vals = comm.gatherv(window[:m]) if comm.size > 1 else window[:m]
                    if self.is_center:
                        search.finish(vals)
                    break
                iterations += 1
                k = int(rng.integers(M))
                starts = np.concatenate([[0], np.cumsum(sizes)])
                owner = int(np.searchsorted(starts, k, side="right") - 1)
                pivot = np.array([window[k - starts[owner]] if comm.rank == owner else 0.0])
                if comm.size > 1:
                    pivot = comm.Bcast(pivot, root=owner)
                theta = float(pivot[0])
                counts, terms = _projection.split_stats(window, m, theta)
                if comm.size > 1:
                    all_counts = comm.gatherv(counts[None, :])
                    lens = comm.gatherv(np.array([[len(terms[0]), len(terms[1])]], dtype=np.int64))
                    flat = comm.gatherv(np.concatenate([terms[0], terms[1]]))
                else:
                    all_counts, lens, flat = counts[None, :], np.array([[len(terms[0]), len(terms[1])]]), np.concatenate(terms[:2])
                # The decision travels with the new window sizes, so the next
                # pivot's owner is known everywhere without another message.
                decision = np.zeros(1 + comm.size, dtype=np.int64)
                if self.is_center:
                    L, Mt = [], []
                    pos = 0
                    for a, b in lens:
                        L.append(flat[pos : pos + a])
                        Mt.append(flat[pos + a : pos + a + b])
                        pos += a + b
                    tot = all_counts.sum(axis=0)
                    clipped = search.step(theta, int(tot[1]), int(tot[2]), np.concatenate(L + Mt))
                    decision[0] = clipped
                    decision[1:] = all_counts[:, 0] if clipped else all_counts[:, 2]
                if comm.size > 1:
                    decision = comm.Bcast(decision)
                if decision[0]:  # theta is clipped: the window becomes (lo, theta)
                    m = _projection.compact(window, m, -math.inf, theta)
                else:  # theta stays unclipped: the window becomes (theta, hi)
                    m = _projection.compact(window, m, theta, math.inf)
                sizes = decision[1:]
            result = np.zeros(3)
            if self.is_center:
                result[:] = search.result()
            if comm.size > 1:
                result = comm.Bcast(result)
            clipped_n, lam, theta_clip = int(result[0]), float(result[1]), float(result[2])
        _projection.apply_projection(w, theta_clip, cap, lam)
        return ProjectionInfo(clipped_n, lam, theta_clip, iterations)

    def _sizes(self, m: int) -> np.ndarray:
        if self.comm.size == 1:
            return np.array([m], dtype=np.int64)
        return self.comm.allgather_array(np.array([m], dtype=np.int64))[:, 0]


class _ProjectionSearch:
    """Center-side state of the projection search (ALGORITHMS §1.3).

    ``C`` values are known to be clipped (all >= ``theta_clip``); ``below`` is
    the exact mass known to stay unclipped, kept as non-overlapping partials
    and never computed as ``1 - clipped mass`` (which loses all precision when
    the clipped mass nears 1).
    """

    def __init__(self, cap: float) -> None:
        self.cap = cap
        self.C = 0
        self.below = np.zeros(0)
        self.theta_clip = math.inf

    def step(self, theta: float, n_at: int, n_above: int, mass_below_and_at: np.ndarray) -> bool:
        """Decide whether ``theta`` is clipped; returns True if it is."""
        U = math.fsum(np.concatenate([self.below, mass_below_and_at]))
        if U > 0 and theta * ((1.0 - (self.C + n_above) * self.cap) / U) > self.cap:
            self.C += n_above + n_at
            self.theta_clip = theta
            return True
        self.below = _exact.partials(np.concatenate([self.below, mass_below_and_at]))
        return False

    def finish(self, values: np.ndarray) -> None:
        """Finish the search on the last window values (any order) with exact medians."""
        v = np.sort(np.asarray(values, dtype=np.float64))
        lo, hi = 0, v.size  # current window v[lo:hi]
        while lo < hi:
            theta = v[(lo + hi) // 2]
            a = lo + int(np.searchsorted(v[lo:hi], theta, side="left"))
            b = lo + int(np.searchsorted(v[lo:hi], theta, side="right"))
            if self.step(theta, b - a, hi - b, v[lo:b]):
                hi = a
            else:
                lo = b

    def result(self) -> tuple[int, float, float]:
        below = math.fsum(self.below)
        lam = (1.0 - self.C * self.cap) / below if below > 0 else 1.0
        return self.C, lam, self.theta_clip
