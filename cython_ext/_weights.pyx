"""Per-row passes of a boosting round over one binned column.

A stump reads a single feature, so these passes touch one byte of the
feature-major bins per row. The constant hypothesis is evaluated on any
column with ``bin = 255, missing_left = True``.
"""
import numpy as np
cimport numpy as cnp
from cython.parallel cimport prange
from libc.math cimport ldexp

from _superacc cimport mb_i128, mb_acc_add1, mb_acc_merge, mb_acc_terms, mb_get_max_threads, threads_for
from _typedefs cimport bin_t, fixed_t, idx_t
from _stump cimport stump_value

cnp.import_array()

def stump_predict(const bin_t[::1] col, int bin, int left, bint missing_left, signed char[::1] out):
    """``out[i] = h(x_i)`` in {-1, +1}."""
    cdef idx_t n = col.shape[0], i
    if out.shape[0] != n:
        raise ValueError("shape mismatch")
    for i in prange(n, nogil=True, schedule="static", num_threads=threads_for(n)):
        out[i] = stump_value(col[i], bin, <signed char> left, missing_left)


def error_terms(const bin_t[::1] col, const signed char[::1] y, const double[::1] w,
                int bin, int left, bint missing_left):
    """Exact sums of ``w`` over the rows h classifies correctly and wrongly.

    Returns two float64 arrays of terms whose exact sums are those masses
    (merge over ranks with ``math.fsum``).
    """
    cdef idx_t n = col.shape[0], i, t, nt, lo, hi
    cdef int bad = 0
    cdef signed char h
    if y.shape[0] != n or w.shape[0] != n:
        raise ValueError("shape mismatch")
    nt = max(1, min(mb_get_max_threads(), n // 65536))
    store = np.zeros(nt * 2 * 2048 * 2, dtype=np.int64)
    cdef mb_i128* acc = <mb_i128*> cnp.PyArray_DATA(store)
    cdef mb_i128* a
    if n:
        for t in prange(nt, nogil=True, schedule="static", num_threads=nt):
            lo = t * n // nt
            hi = (t + 1) * n // nt
            a = acc + t * 4096
            for i in range(lo, hi):
                h = stump_value(col[i], bin, <signed char> left, missing_left)
                if not mb_acc_add1(a + (0 if h == y[i] else 2048), w[i]):
                    bad += 1  # a reduction: an assignment in prange would keep the last thread's value only
    if bad:
        raise ValueError("non-finite weight")
    for t in range(1, nt):
        mb_acc_merge(acc, acc + t * 4096)
        mb_acc_merge(acc + 2048, acc + t * 4096 + 2048)
    buf = np.empty(3 * 2048, dtype=np.float64)
    cdef double[::1] b = buf
    right = buf[: mb_acc_terms(acc, &b[0])].copy()
    wrong = buf[: mb_acc_terms(acc + 2048, &b[0])].copy()
    return right, wrong


cdef void _apply_range(double* w, double* margin, const bin_t* col, const signed char* y, idx_t lo, idx_t hi,
                       int bin, signed char left, bint missing_left, double fc, double fw, double coef,
                       double* wmax_out, long long* errors_out) noexcept nogil:
    # Locals, not shared arrays: the running max and count stay in registers.
    cdef idx_t i
    cdef signed char h
    cdef double v, m, wmax = 0.0
    cdef long long errors = 0
    for i in range(lo, hi):
        h = stump_value(col[i], bin, left, missing_left)
        v = w[i] * (fc if h == y[i] else fw)
        w[i] = v
        wmax = v if v > wmax else wmax
        m = margin[i] + coef * h
        margin[i] = m
        errors += (1 if m >= 0 else -1) != y[i]
    wmax_out[0] = wmax
    errors_out[0] = errors


def apply_stump(double[::1] w, double[::1] margin, const bin_t[::1] col, const signed char[::1] y,
                int bin, int left, bint missing_left,
                double factor_correct, double factor_wrong, double coef):
    """One fused pass for hypothesis h:

    ``w[i] *= factor_correct if h(x_i) == y_i else factor_wrong`` and
    ``margin[i] += coef * h(x_i)``. Returns ``(errors, wmax)``: the rows the
    updated ensemble ``sign(margin)`` (ties -> +1) gets wrong, and the
    largest new weight.
    """
    cdef idx_t n = col.shape[0], t, nt
    if w.shape[0] != n or margin.shape[0] != n or y.shape[0] != n:
        raise ValueError("shape mismatch")
    if n == 0:
        return 0, 0.0
    nt = max(1, min(mb_get_max_threads(), n // 16384))
    maxes = np.zeros(8 * nt)  # one cache line per thread
    counts = np.zeros(8 * nt, dtype=np.int64)
    cdef double[::1] mx = maxes
    cdef long long[::1] ct = counts
    for t in prange(nt, nogil=True, schedule="static", num_threads=nt):
        _apply_range(&w[0], &margin[0], &col[0], &y[0], t * n // nt, (t + 1) * n // nt,
                     bin, <signed char> left, missing_left, factor_correct, factor_wrong, coef,
                     &mx[8 * t], &ct[8 * t])
    return int(counts.sum()), float(maxes.max())


def fixed_cumsum(const double[::1] w, int shift, fixed_t[::1] cum):
    """Inclusive prefix sums of the fixed-point weights ``round(w * 2**shift)``; returns the total.

    What proportional sampling needs, in one pass (no separate weight array).
    """
    cdef idx_t n = w.shape[0], i
    cdef double scale = ldexp(1.0, shift), big = 4503599627370496.0, v
    cdef fixed_t total = 0
    if cum.shape[0] != n:
        raise ValueError("shape mismatch")
    with nogil:
        for i in range(n):
            v = w[i] * scale
            if v < big:
                v = (v + big) - big  # round half to even (weights are >= 0)
            total += <fixed_t> v
            cum[i] = total
    return int(total)


def fixed_signed(const double[::1] w, const signed char[::1] y, int shift, fixed_t[::1] g):
    """``g[i] = round(w[i] * 2**shift) * y[i]``; returns the total of the unsigned units."""
    cdef idx_t n = w.shape[0], i
    cdef double scale = ldexp(1.0, shift), big = 4503599627370496.0, v
    cdef fixed_t x, total = 0
    if g.shape[0] != n or y.shape[0] != n:
        raise ValueError("shape mismatch")
    for i in prange(n, nogil=True, schedule="static", num_threads=threads_for(n)):
        v = w[i] * scale
        if v < big:
            v = (v + big) - big
        x = <fixed_t> v
        total += x
        g[i] = x * y[i]
    return int(total)


def margin_errors(const double[::1] margin, const signed char[::1] y):
    """Rows where ``sign(margin)`` (ties -> +1) differs from ``y``."""
    cdef idx_t n = margin.shape[0], i
    cdef long long errors = 0
    for i in prange(n, nogil=True, schedule="static", num_threads=threads_for(n)):
        errors += (1 if margin[i] >= 0 else -1) != y[i]
    return errors


def add_stump(double[::1] margin, const bin_t[::1] col, int bin, int left, bint missing_left, double coef):
    """``margin[i] += coef * h(x_i)`` (validation margins)."""
    cdef idx_t n = col.shape[0], i
    if margin.shape[0] != n:
        raise ValueError("shape mismatch")
    for i in prange(n, nogil=True, schedule="static", num_threads=threads_for(n)):
        margin[i] = margin[i] + coef * stump_value(col[i], bin, <signed char> left, missing_left)


def scale(double[::1] w, double divisor):
    """``w[i] = w[i] / divisor`` (a division, the same rounding as a sequential normalization)."""
    cdef idx_t n = w.shape[0], i
    for i in prange(n, nogil=True, schedule="static", num_threads=threads_for(n)):
        w[i] = w[i] / divisor


def signed_fixed(const fixed_t[::1] q, const signed char[::1] y, fixed_t[::1] out):
    """``out[i] = q[i] * y[i]``."""
    cdef idx_t n = q.shape[0], i
    for i in prange(n, nogil=True, schedule="static", num_threads=threads_for(n)):
        out[i] = q[i] * y[i]


def rows_for_points(const fixed_t[::1] cumq, const fixed_t[::1] points, fixed_t offset, idx_t[::1] rows):
    """Map sorted sample points to rows by the inclusive prefix sums ``cumq``.

    Point ``p`` (global, in ``[offset, offset + cumq[-1])``) selects the first
    row ``i`` with ``cumq[i] > p - offset``: row i is drawn with probability
    proportional to its weight. A binary search per point, O(N log n): the
    sample is small and the rows are many.
    """
    cdef idx_t n = cumq.shape[0], m = points.shape[0], k, lo, hi, mid, start = 0
    cdef fixed_t p
    if rows.shape[0] != m:
        raise ValueError("shape mismatch")
    with nogil:
        for k in range(m):
            p = points[k] - offset
            lo = start  # points are sorted: search right of the previous row
            hi = n
            while lo < hi:
                mid = (lo + hi) >> 1
                if cumq[mid] <= p:
                    lo = mid + 1
                else:
                    hi = mid
            rows[k] = lo
            start = lo
    if m and rows[m - 1] >= n:
        raise ValueError("sample point beyond this rank's weight")
