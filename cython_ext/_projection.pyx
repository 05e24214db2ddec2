"""Local steps of the distributed KL projection onto smooth distributions.

The search for the clipping threshold runs on the weights in int64 fixed
point (integer sums are exact, so every split of the rows takes the same
search path); only the final scale factor uses an exact float sum. The
window of candidate thresholds is a compacted copy of the fixed-point
weights strictly inside (lo, hi), so each step costs a pass over the
shrinking window only.
"""
import numpy as np
cimport numpy as cnp
from cython.parallel cimport prange
from libc.math cimport fabs, ldexp

from _superacc cimport mb_i128, mb_acc_add1, mb_acc_merge, mb_acc_terms, mb_get_max_threads, threads_for
from _typedefs cimport fixed_t, idx_t

cnp.import_array()

def quantize_window(const double[::1] w, int shift, fixed_t cap_q, fixed_t[::1] q, fixed_t[::1] window):
    """``q = round(w * 2**shift)``; copy the values below ``cap_q`` into ``window``.

    Returns ``(m, n_high, sum_high)``: the window length and the count and
    fixed-point sum of the values ``>= cap_q`` (known to be clipped).
    """
    cdef idx_t n = w.shape[0], i, m = 0
    cdef long long n_high = 0, s_high = 0, hi
    cdef double scale = ldexp(1.0, shift), big = 4503599627370496.0, v, a
    cdef fixed_t x
    if q.shape[0] != n or window.shape[0] < n:
        raise ValueError("shape mismatch")
    with nogil:
        for i in range(n):
            v = w[i] * scale
            a = fabs(v)
            if a < big:
                a = (a + big) - big
            x = <fixed_t> a
            q[i] = x
            # branch-free: which side of the cap a weight falls on is unpredictable
            hi = x >= cap_q
            n_high += hi
            s_high += x & -hi
            window[m] = x
            m += 1 - hi
    return m, n_high, s_high


def split_stats(const fixed_t[::1] v, idx_t m, fixed_t theta):
    """Counts of ``v[:m]`` below, at and above ``theta``, and the sums of the first two groups."""
    cdef idx_t i
    cdef fixed_t x
    cdef long long c0 = 0, c1 = 0, c2 = 0, s0 = 0, s1 = 0
    if m > v.shape[0]:
        raise ValueError("m beyond the array")
    cdef long long lt, eq
    with nogil:
        for i in range(m):
            x = v[i]
            lt = x < theta  # branch-free: the pivot splits the window unpredictably
            eq = x == theta
            c0 += lt
            c1 += eq
            s0 += x & -lt
            s1 += x & -eq
    c2 = m - c0 - c1
    return c0, c1, c2, s0, s1


ctypedef fused window_t:
    fixed_t
    double


def compact(window_t[::1] v, idx_t m, window_t lo, window_t hi):
    """Keep the values of ``v[:m]`` strictly inside (lo, hi), in order; return how many."""
    cdef idx_t i, k = 0
    cdef window_t x
    with nogil:
        for i in range(m):
            x = v[i]
            v[k] = x  # branch-free compaction
            k += (x > lo) & (x < hi)
    return k


def mass_below(const double[::1] w, const fixed_t[::1] q, fixed_t theta):
    """The rows with ``q[i] < theta`` stay unclipped: their exact mass and the
    extreme weights on both sides of the threshold.

    Returns ``(terms, max_below, min_above)``: exact sum terms of those rows'
    weights, their largest weight, and the smallest weight of the others.
    """
    cdef idx_t n = w.shape[0], i, t, nt, lo, hi
    cdef int bad = 0
    cdef double x
    nt = max(1, min(mb_get_max_threads(), n // 65536))
    store = np.zeros(nt * 2048 * 2, dtype=np.int64)
    cdef mb_i128* acc = <mb_i128*> cnp.PyArray_DATA(store)
    ext = np.zeros((nt, 2))
    cdef double[:, ::1] E = ext
    for t in range(nt):
        E[t, 0] = -1.0
        E[t, 1] = 1e308
    if n:
        for t in prange(nt, nogil=True, schedule="static", num_threads=nt):
            lo = t * n // nt
            hi = (t + 1) * n // nt
            for i in range(lo, hi):
                x = w[i]
                if q[i] < theta:
                    E[t, 0] = x if x > E[t, 0] else E[t, 0]
                else:
                    E[t, 1] = x if x < E[t, 1] else E[t, 1]
                # adding 0.0 is harmless and keeps the loop free of a branch
                if not mb_acc_add1(acc + t * 2048, x if q[i] < theta else 0.0):
                    bad += 1  # a reduction: an assignment in prange would keep the last thread's value only
    if bad:
        raise ValueError("non-finite weight in the projection")
    for t in range(1, nt):
        mb_acc_merge(acc, acc + t * 2048)
    buf = np.empty(3 * 2048, dtype=np.float64)
    cdef double[::1] b = buf
    return buf[: mb_acc_terms(acc, &b[0])].copy(), float(ext[:, 0].max()), float(ext[:, 1].min())


def apply_projection(double[::1] w, const fixed_t[::1] q, fixed_t theta, double cap, double lam):
    """``w[i] = cap if q[i] >= theta else min(cap, w[i] * lam)``."""
    cdef idx_t n = w.shape[0], i
    cdef double v
    for i in prange(n, nogil=True, schedule="static", num_threads=threads_for(n)):
        if q[i] >= theta:
            w[i] = cap
        else:
            v = w[i] * lam
            w[i] = v if v < cap else cap


# ---- exact float search: the fallback when fixed point cannot resolve the weights

def float_split_terms(const double[::1] v, idx_t m, double theta):
    """Counts of ``v[:m]`` below, at and above ``theta`` and exact sum terms of the first two groups."""
    cdef idx_t i, k
    cdef double x
    cdef long long c0 = 0, c1 = 0, c2 = 0
    store = np.zeros(2 * 2048 * 2, dtype=np.int64)
    cdef mb_i128* acc = <mb_i128*> cnp.PyArray_DATA(store)
    cdef int ok = 1
    with nogil:
        for i in range(m):
            x = v[i]
            if x < theta:
                c0 += 1
                ok &= mb_acc_add1(acc, x)
            elif x == theta:
                c1 += 1
                ok &= mb_acc_add1(acc + 2048, x)
            else:
                c2 += 1
    if not ok:
        raise ValueError("non-finite weight in the projection")
    buf = np.empty(3 * 2048, dtype=np.float64)
    cdef double[::1] b = buf
    low = buf[: mb_acc_terms(acc, &b[0])].copy()
    at = buf[: mb_acc_terms(acc + 2048, &b[0])].copy()
    return (c0, c1, c2), low, at


def float_apply_projection(double[::1] w, double theta, double cap, double lam):
    """``w[i] = cap if w[i] >= theta else min(cap, w[i] * lam)``."""
    cdef idx_t n = w.shape[0], i
    cdef double v
    for i in prange(n, nogil=True, schedule="static", num_threads=threads_for(n)):
        if w[i] >= theta:
            w[i] = cap
        else:
            v = w[i] * lam
            w[i] = v if v < cap else cap
