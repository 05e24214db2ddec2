"""Weighted (feature, bin) histograms and the best-stump scan over them.

Weights are int64 fixed-point units, so per-thread histograms and their sum
over threads and ranks are exact: the histogram, and the stump chosen from
it, do not depend on how rows are split.
"""
import numpy as np
cimport numpy as cnp
from cython.parallel cimport prange

from _typedefs cimport bin_t, fixed_t, idx_t, MISSING_BIN

cnp.import_array()

cdef extern from "_openmp_shim.h":
    int mb_get_max_threads() nogil


def build_histogram(const bin_t[:, ::1] X, const fixed_t[::1] g, fixed_t[:, ::1] hist):
    """``hist[j, b] = sum of g[i] over rows i with X[i, j] == b`` (shape (d, 256)).

    Row-major: each thread scans a block of rows into a private histogram
    (a few KB per feature, cache resident); the private histograms are then
    added up, which is exact for integers.
    """
    cdef idx_t n = X.shape[0], d = X.shape[1]
    cdef idx_t i, j, t, k, nt, lo, hi
    cdef fixed_t gi
    cdef const bin_t* row
    cdef fixed_t* h
    if g.shape[0] != n or hist.shape[0] != d or hist.shape[1] != 256:
        raise ValueError("shape mismatch")
    nt = max(1, min(mb_get_max_threads(), n // 8192))
    local = np.zeros((nt, d * 256), dtype=np.int64)
    cdef fixed_t[:, ::1] L = local
    if n and d:
        for t in prange(nt, nogil=True, schedule="static", num_threads=nt):
            lo = t * n // nt
            hi = (t + 1) * n // nt
            h = &L[t, 0]
            for i in range(lo, hi):
                gi = g[i]
                row = &X[i, 0]
                for j in range(d):
                    h[j * 256 + row[j]] += gi
    cdef fixed_t* out = &hist[0, 0] if d else NULL
    for k in range(d * 256):
        out[k] = L[0, k]
    for t in range(1, nt):
        for k in range(d * 256):
            out[k] += L[t, k]


def build_histogram_rows(const bin_t[:, ::1] X, const fixed_t[::1] g, const idx_t[::1] rows,
                         fixed_t[:, ::1] hist):
    """Like :func:`build_histogram` over the listed rows only (``g`` indexed like ``X``)."""
    cdef idx_t m = rows.shape[0], d = X.shape[1]
    cdef idx_t r, i, j, k
    cdef fixed_t gi
    if hist.shape[0] != d or hist.shape[1] != 256 or g.shape[0] != X.shape[0]:
        raise ValueError("shape mismatch")
    hist[:, :] = 0
    with nogil:
        for r in range(m):
            i = rows[r]
            gi = g[i]
            for j in range(d):
                hist[j, X[i, j]] += gi


def best_stump(const fixed_t[:, ::1] hist, const long long[::1] n_bins):
    """The stump with the largest |edge| from a histogram of ``w * y``.

    For feature j with value bins 0..n_bins[j]-1 and missing bin 255, the
    stump "bin <= b -> a, else -a" with missing values sent left or right has
    edge ``a * (left - right)``. Candidates are scanned in the order: the
    constant hypothesis, then feature, threshold bin, missing right before
    left; a later candidate wins only with a strictly larger |edge|, so ties
    go to the lowest feature, then the lowest threshold.

    Returns
    -------
    (feature, bin, left_value, missing_left, edge)
        ``feature == -1`` is the constant hypothesis ``left_value``; ``edge``
        is the (integer) edge of the returned stump, >= 0.
    """
    cdef idx_t d = hist.shape[0], j, b, nb
    cdef fixed_t total = 0, L, M, left, e, ae
    cdef fixed_t best
    cdef int bf = -1, bb = 0, bml = 0, ml
    cdef signed char bleft
    if n_bins.shape[0] != d or hist.shape[1] != 256:
        raise ValueError("shape mismatch")
    if d:
        for b in range(256):
            total += hist[0, b]
    best = total if total >= 0 else -total
    bleft = 1 if total >= 0 else -1
    with nogil:
        for j in range(d):
            nb = n_bins[j]
            M = hist[j, MISSING_BIN]
            L = 0
            for b in range(nb):
                L += hist[j, b]
                for ml in range(2):
                    if b == nb - 1 and (ml == 1 or M == 0):
                        continue  # not a split: the constant hypothesis
                    left = L + (M if ml else 0)
                    e = 2 * left - total
                    ae = e if e >= 0 else -e
                    if ae > best:
                        best = ae
                        bf = <int> j
                        bb = <int> b
                        bml = ml
                        bleft = 1 if e >= 0 else -1
    return bf, bb, int(bleft), bool(bml), int(best)
