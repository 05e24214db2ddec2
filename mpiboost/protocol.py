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

from ._ext import _exact, _projection, _weights

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
        cumq: np.ndarray,
        cols: np.ndarray,
        y: np.ndarray,
        n_samples: int,
        rng: np.random.Generator,
        *,
        start: int = 0,
        with_rows: bool = False,
    ) -> Optional[Sample]:
        """Draw ``n_samples`` rows with replacement, row i with probability q_i / sum(q).

        ``cumq`` holds this rank's inclusive prefix sums of the fixed-point
        weights q (see :func:`mpiboost._ext._weights.fixed_cumsum`). Sampling is
        defined on the global order: every rank draws the same sorted points in
        ``[0, total)`` from ``rng`` (no message needed), keeps those in its own
        prefix range and maps them to rows through ``cumq``. The center gathers
        the rows (binned, from the feature-major ``cols``) in rank order, which
        is the order of the points, so the sample is the same for any number of
        ranks.
        """
        local = int(cumq[-1]) if cumq.size else 0
        (total,), (offset,) = self.weight_sums(np.array([local]))
        if total <= 0:
            raise FloatingPointError("all weights are zero: nothing to sample")
        points = np.sort(rng.integers(0, total, size=n_samples, dtype=np.int64))
        lo, hi = np.searchsorted(points, [offset, offset + local], side="left")
        mine = points[lo:hi]
        rows = np.empty(mine.shape[0], dtype=np.intp)
        if mine.size:
            _weights.rows_for_points(cumq, mine, offset, rows)
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
    def reduce_histograms(self, hist: np.ndarray, n_bins: Optional[np.ndarray] = None,
                          total: Optional[int] = None) -> Optional[np.ndarray] | tuple:
        """Exact global (feature, bin) histograms of int64 units, on the center.

        ``hist`` is one histogram ``(d, 256)`` or several stacked ``(c, d, 256)``
        (reduced in one collective). With ``n_bins`` (value bins per feature),
        only the bins a row can fall in travel: ``0 .. n_bins[j] - 1`` and the
        missing bin 255 of each feature ``j``; the center gets the full array
        back, zeros elsewhere, bit for bit what the unpacked reduction gives
        (the bins left out are zero on every rank). With ``total`` (this rank's
        total of units), its global sum travels in the same message and the
        result is ``(histograms, global total)`` (``(None, None)`` off the center).
        """
        with self.comm.primitive("reduce_histograms"):
            if self.comm.size == 1:
                return (hist, int(total)) if total is not None else hist
            shape = hist.shape
            flat = np.ascontiguousarray(hist).reshape(-1, shape[-2] * 256)
            index = self._packing(shape[-2], n_bins) if n_bins is not None else None
            packed = flat[:, index].ravel() if index is not None else flat.ravel()
            if total is not None:
                packed = np.append(packed, np.int64(total))
            got = self.comm.reduce_int(np.ascontiguousarray(packed))
            if got is None:
                return (None, None) if total is not None else None
            whole = int(got[-1]) if total is not None else None
            if total is not None:
                got = got[:-1]
            if index is not None:
                out = np.zeros(flat.shape, dtype=np.int64)
                out[:, index] = got.reshape(flat.shape[0], -1)
            else:
                out = got.reshape(flat.shape)
            out = out.reshape(shape)
            return (out, whole) if total is not None else out

    def reduce_class_histograms(self, hist: np.ndarray, n_bins: np.ndarray,
                                total: Optional[int] = None) -> Optional[np.ndarray] | tuple:
        """Exact global (feature, bin, class) histograms ``(d, 256, K)`` of int64 units, on the center.

        As :meth:`reduce_histograms`, only the bins a row can fall in travel
        (``K`` sums each); the center gets the full array back; ``total`` as there.
        """
        with self.comm.primitive("reduce_histograms"):
            if self.comm.size == 1:
                return (hist, int(total)) if total is not None else hist
            d, K = hist.shape[0], hist.shape[2]
            index = self._packing(d, n_bins)
            flat = np.ascontiguousarray(hist).reshape(d * 256, K)
            packed = flat[index].ravel()
            if total is not None:
                packed = np.append(packed, np.int64(total))
            got = self.comm.reduce_int(np.ascontiguousarray(packed))
            if got is None:
                return (None, None) if total is not None else None
            out = np.zeros(flat.shape, dtype=np.int64)
            out[index] = (got[:-1] if total is not None else got).reshape(-1, K)
            out = out.reshape(hist.shape)
            return (out, int(got[-1])) if total is not None else out

    def _packing(self, d: int, n_bins: np.ndarray) -> np.ndarray:
        """Flat positions in a (d, 256) histogram of the bins that can be nonzero (cached)."""
        n_bins = np.asarray(n_bins, dtype=np.int64)
        key = (d, n_bins.tobytes())
        cached = getattr(self, "_packing_cache", None)
        if cached is not None and cached[0] == key:
            return cached[1]
        if n_bins.shape != (d,) or (n_bins < 0).any() or (n_bins > 255).any():
            raise ValueError("n_bins: one count in [0, 255] per feature")
        index = np.concatenate(
            [np.append(np.arange(int(nb)), 255) + 256 * j for j, nb in enumerate(n_bins)]
        ).astype(np.intp) if d else np.zeros(0, dtype=np.intp)
        self._packing_cache = (key, index)
        return index

    # ------------------------------------------------------ tree histograms
    def reduce_tree_histogram(self, hist: np.ndarray) -> Optional[np.ndarray]:
        """Exact global packed node histogram ``(slots, channels)`` of int64 units, on the center
        (``None`` elsewhere): the reduction to the center of histogram trees."""
        with self.comm.primitive("tree_histograms"):
            if self.comm.size == 1:
                return hist.copy()
            return self.comm.reduce_int(hist)

    def reduce_scatter_tree_histogram(self, hist: np.ndarray, counts: list) -> np.ndarray:
        """Exact global packed node histogram, rank r receiving slots of its feature block
        (``counts[r]`` slots, in rank order): LightGBM's data-parallel exchange, about
        1/size of the histogram per rank instead of all of it at the center."""
        with self.comm.primitive("tree_histograms"):
            if self.comm.size == 1:
                return hist.copy()
            return self.comm.reduce_scatter_int(hist, counts)

    def allgather_candidates(self, row: np.ndarray) -> np.ndarray:
        """Every rank's best split of its feature block (a few float64 values each), on every rank."""
        with self.comm.primitive("tree_splits"):
            row = np.asarray(row, dtype=np.float64)
            return self.comm.allgather_array(row) if self.comm.size > 1 else row[None, :]

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

    def reduce_round_stats(
        self, counts: np.ndarray, value: float, terms: list
    ) -> tuple[np.ndarray, float, np.ndarray]:
        """Integer sums, a maximum and correctly rounded sums, in one collective.

        ``counts``: int64 values summed exactly over ranks; ``value``: a float
        ``>= 0`` whose maximum over ranks is returned; ``terms[k]``: this
        rank's exact terms of sum k (partials, as from
        ``_exact.grouped_partials``), added exactly like :meth:`reduce_stats`
        does, hence the same bits (:meth:`mpiboost.comm.Comm.allreduce_exact`).
        """
        bits = np.array([float(value)]).view(np.int64)  # the bits of doubles >= 0 order like them
        with self.comm.primitive("reduce_stats"):
            total, top, sums = self.comm.allreduce_exact(counts, bits, [np.asarray(t, np.float64) for t in terms])
        return total, float(top.view(np.float64)[0]), sums

    def reduce_counts_max(self, counts: np.ndarray, value: float) -> tuple[np.ndarray, float]:
        """Exact global integer sums and the global maximum of a float ``>= 0``, in one collective."""
        bits = np.array([float(value)]).view(np.int64)
        with self.comm.primitive("reduce_stats"):
            total, top, _ = self.comm.allreduce_exact(counts, bits)
        return total, float(top.view(np.float64)[0])

    def reduce_maxima(self, values: np.ndarray) -> np.ndarray:
        """Global maxima of floats ``>= 0`` (e.g. the round's largest gradient and hessian), in one collective."""
        bits = np.ascontiguousarray(values, dtype=np.float64).view(np.int64)  # they order like the doubles
        with self.comm.primitive("reduce_stats"):
            _, top, _ = self.comm.allreduce_exact(maxima=bits)
        return top.view(np.float64)

    def reduce_max(self, value: float) -> float:
        with self.comm.primitive("reduce_stats"):
            return self.comm.allreduce_max(float(value))

    # ------------------------------------------------------- percentiles
    def leaf_percentiles(self, values: np.ndarray, group: np.ndarray, n_groups: int, alpha: float,
                         weight: Optional[np.ndarray] = None) -> np.ndarray:
        """The ``alpha`` percentile of the values of each group over all ranks, on every rank (LightGBM's rule,
        :mod:`mpiboost.boost.percentile`): the center gathers every row's value, group (and weight) in the
        global row order and sends the ``n_groups`` results back. Bytes: 12 a row (20 weighted) to the center,
        ``8 n_groups`` back to each rank; the same values for any number of ranks."""
        from .boost.percentile import grouped_percentiles

        comm = self.comm
        values = np.ascontiguousarray(values, dtype=np.float64)
        group = np.ascontiguousarray(group, dtype=np.int32)
        if comm.size == 1:
            return grouped_percentiles(values, group, n_groups, alpha, weight)
        with comm.primitive("leaf_percentiles"):
            v, g = comm.gatherv(values), comm.gatherv(group)
            w = None if weight is None else comm.gatherv(np.ascontiguousarray(weight, dtype=np.float64))
            out = grouped_percentiles(v, g, n_groups, alpha, w) if comm.is_center else np.zeros(n_groups)
            return comm.bcast_array(out)

    # ---------------------------------------------------- domain classifier
    def fit_domain_classifier(self, X: np.ndarray, domain: np.ndarray, n_domains: int, l2: float = 1.0):
        """Fit Q(k|x) on every rank's raw rows (exact fixed-point gradients, L-BFGS at the center)."""
        from . import domain_classifier

        with self.comm.primitive("domain_classifier"):
            return domain_classifier.fit(self.comm, X, domain, n_domains, l2=l2)

    def calibrate_domain_classifier(self, X: np.ndarray, domain: np.ndarray, ids: np.ndarray, n_domains: int,
                                    l2: float = 1.0, extra: Optional[tuple] = None) -> tuple:
        """Q's temperature of least held-out log-loss (:func:`mpiboost.domain_classifier.calibrate`)."""
        from . import domain_classifier

        with self.comm.primitive("domain_classifier"):
            return domain_classifier.calibrate(self.comm, X, domain, ids, n_domains, l2=l2, extra=extra)

    # -------------------------------------------------------- smooth_projection
    def smooth_projection(self, w: np.ndarray, cap: float, wmax: Optional[float] = None) -> ProjectionInfo:
        """KL projection of the normalized weights ``w`` onto ``{D : max D <= cap}``, in place.

        The result is ``min(cap, lam * w)`` with ``lam`` such that the weights
        sum to 1 (the KL projection of the SmoothBoost paper): the rows above a threshold are clipped to
        ``cap``, the others scaled by ``lam``. The threshold is found by a
        binary search over the global multiset of weights in int64 fixed point:
        pivots are window values at pseudo-random positions of the *global*
        row order and the masses are integer sums, so the search takes the
        same path for any split of the rows. Every value ``>= cap`` is clipped
        from the start (``lam >= 1``). Once the window holds at most
        ``SMALL_WINDOW`` values, every rank finishes the search on the gathered
        window. ``lam = (1 - C cap) / below`` uses the correctly rounded float
        sum of the unclipped weights, never ``1 - clipped mass`` (which loses
        all precision when the clipped mass nears 1). ``wmax``, the global
        largest weight if the caller knows it, saves a reduction when nothing
        needs clipping.
        """
        comm = self.comm
        with comm.primitive("smooth_projection"):
            if wmax is None:
                local = float(w.max()) if w.size else 0.0
                wmax = comm.allreduce_max(local) if comm.size > 1 else local
            if wmax <= cap:
                return ProjectionInfo(0, 1.0, math.inf, 0)
            cap_q = int(round(cap * 2.0**FIXED_SHIFT))
            q = np.empty(w.shape[0], dtype=np.int64)
            window = np.empty(w.shape[0], dtype=np.int64)
            m, n_high, s_high = _projection.quantize_window(w, FIXED_SHIFT, cap_q, q, window)
            search = _ProjectionSearch(cap, cap_q)
            table = self._allgather_ints([m, n_high])
            search.C = int(table[:, 1].sum())
            sizes = table[:, 0]
            rng = np.random.default_rng(0x5E1EC7)
            iterations = 0
            while True:
                M = int(sizes.sum())
                if M <= SMALL_WINDOW:
                    rest = comm.allgatherv(window[:m]) if comm.size > 1 else window[:m]
                    search.finish(rest)
                    break
                iterations += 1
                k = int(rng.integers(M))
                starts = np.concatenate([[0], np.cumsum(sizes)])
                owner = int(np.searchsorted(starts, k, side="right") - 1)
                pivot = np.array([window[k - starts[owner]] if comm.rank == owner else 0], dtype=np.int64)
                if comm.size > 1:
                    pivot = comm.Bcast(pivot, root=owner)
                theta = int(pivot[0])
                stats = self._allgather_ints(_projection.split_stats(window, m, theta))
                n_below, n_at, n_above, s_below, s_at = (int(x) for x in stats.sum(axis=0))
                if search.step(theta, n_at, n_above, s_below + s_at):
                    m = _projection.compact(window, m, _MIN_Q, theta)  # window becomes (lo, theta)
                    sizes = stats[:, 0]
                else:
                    m = _projection.compact(window, m, theta, _MAX_Q)  # window becomes (theta, hi)
                    sizes = stats[:, 2]
            theta_q = search.theta_clip_q
            terms, max_below, min_above = _projection.mass_below(w, q, theta_q) if w.size else (np.zeros(0), -1.0, 1e308)
            below = comm.sum_terms([terms])[0] if comm.size > 1 else math.fsum(terms)
            lam = (1.0 - search.C * cap) / below if below > 0 else 1.0
            # Fixed point resolves weights down to 2**-60; confirm that the
            # clipped set is the exact one (up to rounding), else search again
            # on the float weights (extreme dynamic ranges only).
            ext = np.array([max_below, -min_above])
            if comm.size > 1:
                ext = comm.allreduce_max(ext)
            exact = ext[0] * lam <= cap * (1 + 1e-12) and (search.C == 0 or -ext[1] * lam >= cap * (1 - 1e-12))
            if not exact:
                C, theta, lam, more = self._float_search(w, cap, rng)
                iterations += more
        if not w.size:
            pass
        elif exact:
            _projection.apply_projection(w, q, theta_q, cap, lam)
        else:
            _projection.float_apply_projection(w, theta, cap, lam)
        if exact:
            return ProjectionInfo(search.C, lam, theta_q / 2.0**FIXED_SHIFT, iterations)
        return ProjectionInfo(C, lam, theta, iterations)

    def relative_smooth_projection(self, w: np.ndarray, base: np.ndarray, kappa: float) -> ProjectionInfo:
        """KL projection of the normalized weights ``w`` onto ``{D : D_i <= kappa base_i}``, in place.

        The sample-weighted SmoothBoost: ``base`` is the distribution of the sample weights (summing to 1
        over all ranks) and no row may hold more than ``kappa = 1/epsilon`` times its base share. The
        result is ``min(kappa base_i, lam w_i)``: the rows whose ratio ``r_i = w_i / base_i`` is at least a
        threshold are clipped to their cap, the others scaled by ``lam`` so the total is 1. With equal base
        shares this is :meth:`smooth_projection` with ``cap = kappa / n``.

        The threshold is found by bisection over the bit patterns of the doubles (at most 64 steps, one
        fused collective each: the exact base mass of the clipped rows, the exact weight of the others
        and their largest ratio), so every rank takes the same path for any split of the rows. The
        rule (clip the top rows while the largest unclipped ratio times ``lam`` exceeds ``kappa``) is
        monotone: once a clipped set satisfies it, every larger one does.
        """
        from ._ext import _exact

        comm = self.comm
        r = np.zeros_like(w)
        np.divide(w, base, out=r, where=base > 0)  # rows of weight 0 are never clipped (their cap is 0 too)

        def stats(theta: float) -> tuple[float, float, float]:
            high = r >= theta
            low = ~high
            top = float(r[low].max()) if low.any() else 0.0
            bits = np.array([top]).view(np.int64)
            terms = [_exact.partials(np.ascontiguousarray(base[high])), _exact.partials(np.ascontiguousarray(w[low]))]
            _, m, sums = comm.allreduce_exact((), bits, terms)
            return float(sums[0]), float(sums[1]), float(m.view(np.float64)[0])

        with comm.primitive("smooth_projection"):
            local = float(r.max()) if r.size else 0.0
            _, top, sums = comm.allreduce_exact((), np.array([local]).view(np.int64),
                                                [_exact.partials(np.ascontiguousarray(w))])
            rmax, total = float(top.view(np.float64)[0]), float(sums[0])
            if rmax * (1.0 / total if total > 0 else 1.0) <= kappa:
                return ProjectionInfo(0, 1.0, math.inf, 0)

            def ok(theta: float) -> tuple[bool, float]:
                clipped, below, top_below = stats(theta)
                if below <= 0:
                    return True, 1.0
                lam = (1.0 - kappa * clipped) / below
                return top_below * lam <= kappa, lam

            # lo: a threshold that satisfies the rule (0 clips every row); hi: one that does not (above rmax)
            lo = 0
            hi = int(np.array([np.nextafter(rmax, math.inf)]).view(np.int64)[0])
            iterations = 0
            while hi - lo > 1:
                iterations += 1
                mid = (lo + hi) // 2
                if ok(float(np.array([mid], dtype=np.int64).view(np.float64)[0]))[0]:
                    lo = mid
                else:
                    hi = mid
            theta = float(np.array([lo], dtype=np.int64).view(np.float64)[0])
            _, lam = ok(theta)
        high = r >= theta
        capped = kappa * base
        np.copyto(w, np.where(high, capped, np.minimum(capped, lam * w)))
        return ProjectionInfo(int(self.reduce_counts(np.array([int(high.sum())]))[0]), lam, theta, iterations)

    def _float_search(self, w: np.ndarray, cap: float, rng: np.random.Generator) -> tuple[int, float, float, int]:
        """The same search on the float weights with exact (superaccumulator) masses.

        Every value ``>= cap`` is clipped from the start. Returns ``(C, theta,
        lam, iterations)``: rows ``>= theta`` are clipped.
        """
        comm = self.comm
        window = np.array(w, dtype=np.float64)
        high = window >= cap
        m = _projection.compact(window, window.shape[0], -math.inf, cap)
        C = int(self._allgather_ints([int(high.sum())])[:, 0].sum())
        below = np.zeros(0)  # exact partials of the mass known to stay unclipped
        theta_clip = cap
        sizes = self._allgather_ints([m])[:, 0]
        iterations = 0

        def decide(theta: float, n_at: int, n_above: int, low_and_at: np.ndarray) -> bool:
            nonlocal C, below, theta_clip
            U = math.fsum(np.concatenate([below, low_and_at]))
            if U > 0 and theta * ((1.0 - (C + n_above) * cap) / U) > cap:
                C += n_above + n_at
                theta_clip = theta
                return True
            below = _exact.partials(np.concatenate([below, low_and_at]))
            return False

        while True:
            M = int(sizes.sum())
            if M <= SMALL_WINDOW:
                v = np.sort(comm.allgatherv(window[:m]) if comm.size > 1 else window[:m].copy())
                lo, hi = 0, v.size
                while lo < hi:
                    theta = float(v[(lo + hi) // 2])
                    a = lo + int(np.searchsorted(v[lo:hi], theta, side="left"))
                    b = lo + int(np.searchsorted(v[lo:hi], theta, side="right"))
                    if decide(theta, b - a, hi - b, v[lo:b]):
                        hi = a
                    else:
                        lo = b
                break
            iterations += 1
            k = int(rng.integers(M))
            starts = np.concatenate([[0], np.cumsum(sizes)])
            owner = int(np.searchsorted(starts, k, side="right") - 1)
            pivot = np.array([window[k - starts[owner]] if comm.rank == owner else 0.0])
            if comm.size > 1:
                pivot = comm.Bcast(pivot, root=owner)
            theta = float(pivot[0])
            counts, low, at = _projection.float_split_terms(window, m, theta)
            table = self._allgather_ints(counts)
            low_at = comm.allgatherv(np.concatenate([low, at])) if comm.size > 1 else np.concatenate([low, at])
            tot = table.sum(axis=0)
            if decide(theta, int(tot[1]), int(tot[2]), low_at):
                m = _projection.compact(window, m, -math.inf, theta)
                sizes = table[:, 0]
            else:
                m = _projection.compact(window, m, theta, math.inf)
                sizes = table[:, 2]
        total_below = math.fsum(below)
        lam = (1.0 - C * cap) / total_below if total_below > 0 else 1.0
        return C, theta_clip, lam, iterations

    def _allgather_ints(self, values) -> np.ndarray:
        row = np.asarray(values, dtype=np.int64)[None, :]
        return self.comm.allgather_array(row[0]) if self.comm.size > 1 else row



_MIN_Q = -(2**63)
_MAX_Q = 2**63 - 1


class _ProjectionSearch:
    """The search state, identical on every rank (the projection search, in fixed point).

    ``C`` rows are known to be clipped (those ``>= theta_clip_q``);
    ``below_q`` is the fixed-point mass known to stay unclipped. Candidate
    ``theta`` is clipped iff, with everything above it clipped and everything
    up to it unclipped, its scaled value would exceed the cap.
    """

    def __init__(self, cap: float, cap_q: int) -> None:
        self.cap = cap
        self.C = 0
        self.below_q = 0
        self.theta_clip_q = cap_q

    def step(self, theta: int, n_at: int, n_above: int, mass_below_and_at: int) -> bool:
        """Decide whether ``theta`` is clipped; returns True if it is."""
        U = self.below_q + mass_below_and_at
        if U > 0 and float(theta) * (1.0 - (self.C + n_above) * self.cap) > self.cap * float(U):
            self.C += n_above + n_at
            self.theta_clip_q = theta
            return True
        self.below_q = U
        return False

    def finish(self, values: np.ndarray) -> None:
        """Finish the search on the last window values (any order) with exact medians."""
        v = np.sort(np.asarray(values, dtype=np.int64))
        cum = np.concatenate([[0], np.cumsum(v, dtype=object)]) if v.size else np.zeros(1, dtype=object)
        lo, hi = 0, v.size  # current window v[lo:hi]
        while lo < hi:
            theta = int(v[(lo + hi) // 2])
            a = lo + int(np.searchsorted(v[lo:hi], theta, side="left"))
            b = lo + int(np.searchsorted(v[lo:hi], theta, side="right"))
            if self.step(theta, b - a, hi - b, int(cum[b] - cum[lo])):
                hi = a
            else:
                lo = b
