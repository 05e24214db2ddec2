"""Weighted (feature, bin) histograms over feature-major bins, and the
best-stump scan over them.

Weights are int64 fixed-point units, so per-thread histograms and their sum
over threads and ranks are exact: the histogram, and the stump chosen from
it, do not depend on how rows are split.

Layout (measured in scripts/bench/bench_kernels.py): bins are stored
feature-major (d, n). Rows are processed in blocks that keep their weights in
cache; within a block each feature's column is scanned into four interleaved
sub-histograms, so that consecutive rows falling in the same bin (common with
few bins) do not serialize on one counter.
"""
import numpy as np
cimport numpy as cnp
from cython.parallel cimport prange

from _superacc cimport mb_get_max_threads
from _typedefs cimport bin_t, fixed_t, idx_t, MISSING_BIN

cnp.import_array()

cdef enum:
    BLOCK = 2048  # rows per block: their weights stay in L1 while every feature is scanned


cdef void _block_hist(const bin_t[:, ::1] XT, const fixed_t* g, const unsigned char* binary,
                      idx_t lo, idx_t hi, fixed_t* sub) noexcept nogil:
    """Add rows [lo, hi) into sub (d x 4 x 256)."""
    cdef idx_t d = XT.shape[0], j, i, b0, b1
    cdef const bin_t* col
    cdef fixed_t* h0
    cdef fixed_t* h1
    cdef fixed_t* h2
    cdef fixed_t* h3
    cdef fixed_t block_total, ones
    b0 = lo
    while b0 < hi:
        b1 = min(hi, b0 + BLOCK)
        block_total = 0
        for i in range(b0, b1):
            block_total += g[i]
        for j in range(d):
            col = &XT[j, 0]
            h0 = sub + j * 1024
            if binary[j]:
                # Only bins 0 and 1: one masked sum, which the compiler vectorizes.
                ones = 0
                for i in range(b0, b1):
                    ones += g[i] & (-<fixed_t> col[i])
                h0[1] += ones
                h0[0] += block_total - ones
                continue
            h1 = h0 + 256
            h2 = h0 + 512
            h3 = h0 + 768
            i = b0
            while i + 4 <= b1:
                h0[col[i]] += g[i]
                h1[col[i + 1]] += g[i + 1]
                h2[col[i + 2]] += g[i + 2]
                h3[col[i + 3]] += g[i + 3]
                i += 4
            while i < b1:
                h0[col[i]] += g[i]
                i += 1
        b0 = b1


def binary_columns(const bin_t[:, ::1] XT):
    """1 for the columns that only hold bins 0 and 1 (no missing values): their
    histogram is a masked sum."""
    cdef idx_t d = XT.shape[0], n = XT.shape[1], j, i
    out = np.ones(d, dtype=np.uint8)
    cdef unsigned char[::1] o = out
    with nogil:
        for j in range(d):
            for i in range(n):
                if XT[j, i] > 1:
                    o[j] = 0
                    break
    return out


def build_histogram(const bin_t[:, ::1] XT, const fixed_t[::1] g, fixed_t[:, ::1] hist, binary=None,
                    idx_t lo=0, idx_t hi=-1):
    """``hist[j, b] = sum of g[i] over rows i with XT[j, i] == b``; XT is (d, n), hist (d, 256).

    ``binary`` (from :func:`binary_columns`) lets 0/1 columns use a masked sum;
    the result is the same either way. ``lo, hi``: only rows ``lo <= i < hi``
    (default all).
    """
    cdef idx_t d = XT.shape[0], n_all = XT.shape[1], n
    cdef idx_t t, nt, k, j, b
    if hi < 0:
        hi = n_all
    if not 0 <= lo <= hi <= n_all:
        raise ValueError("row range out of bounds")
    n = hi - lo
    if g.shape[0] != n_all or hist.shape[0] != d or hist.shape[1] != 256:
        raise ValueError("shape mismatch")
    flags = np.zeros(max(d, 1), dtype=np.uint8) if binary is None else np.ascontiguousarray(binary, dtype=np.uint8)
    if flags.shape[0] < d:
        raise ValueError("binary flags: one per feature")
    cdef const unsigned char[::1] bf = flags
    nt = max(1, min(mb_get_max_threads(), n // 16384))
    local = np.zeros((nt, d * 1024), dtype=np.int64)
    cdef fixed_t[:, ::1] L = local
    if n and d:
        for t in prange(nt, nogil=True, schedule="static", num_threads=nt):
            _block_hist(XT, &g[0], &bf[0], lo + t * n // nt, lo + (t + 1) * n // nt, &L[t, 0])
    for j in range(d):
        for b in range(256):
            hist[j, b] = 0
            for t in range(nt):
                k = j * 1024 + b
                hist[j, b] += L[t, k] + L[t, k + 256] + L[t, k + 512] + L[t, k + 768]


def build_histogram_rows(const bin_t[:, ::1] XT, const fixed_t[::1] g, const idx_t[::1] rows,
                         fixed_t[:, ::1] hist):
    """Like :func:`build_histogram` over the listed rows only (``g`` indexed like the columns)."""
    cdef idx_t m = rows.shape[0], d = XT.shape[0], r, i, j
    if hist.shape[0] != d or hist.shape[1] != 256 or g.shape[0] != XT.shape[1]:
        raise ValueError("shape mismatch")
    hist[:, :] = 0
    with nogil:
        for j in range(d):
            for r in range(m):
                i = rows[r]
                hist[j, XT[j, i]] += g[i]


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


def build_histogram_row_major(const bin_t[:, ::1] X, const fixed_t[::1] g, fixed_t[:, ::1] hist):
    """The plain row-major loop over (n, d) bins, one thread.

    Not used by training: kept so scripts/bench/bench_kernels.py can show why
    the feature-major blocked layout was chosen.
    """
    cdef idx_t n = X.shape[0], d = X.shape[1], i, j
    cdef fixed_t gi
    cdef const bin_t* row
    if g.shape[0] != n or hist.shape[0] != d or hist.shape[1] != 256:
        raise ValueError("shape mismatch")
    hist[:, :] = 0
    cdef fixed_t* h = &hist[0, 0]
    with nogil:
        for i in range(n):
            gi = g[i]
            row = &X[i, 0]
            for j in range(d):
                h[j * 256 + row[j]] += gi
