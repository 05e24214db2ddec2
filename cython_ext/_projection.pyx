"""Local steps of the distributed KL projection onto smooth distributions.

The window of candidate thresholds is kept per rank as a compacted copy of
the weights that lie strictly inside (lo, hi), in row order, so each search
step costs a pass over the shrinking window only.
"""
import numpy as np
cimport numpy as cnp

from _typedefs cimport idx_t

cnp.import_array()

cdef extern from "_superacc.h":
    ctypedef struct mb_i128:
        pass
    int mb_acc_add1(mb_i128* acc, double v) nogil
    idx_t mb_acc_terms(const mb_i128* acc, double* out) nogil


def split_stats(const double[::1] v, idx_t m, double theta):
    """Counts and exact sum terms of ``v[:m]`` below, at and above ``theta``.

    Returns ``(counts, terms)``: ``counts`` = [#<, #=, #>] (int64) and
    ``terms`` a list of three float64 arrays whose exact sums are the sums of
    the values in each group (see :func:`mpiboost._ext._exact.partials`).
    """
    cdef idx_t i, k
    cdef double x
    cdef long long c0 = 0, c1 = 0, c2 = 0
    store = np.zeros(3 * 2048 * 2, dtype=np.int64)
    cdef mb_i128* acc = <mb_i128*> cnp.PyArray_DATA(store)
    cdef int ok = 1
    if m > v.shape[0]:
        raise ValueError("m beyond the array")
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
                ok &= mb_acc_add1(acc + 4096, x)
    if not ok:
        raise ValueError("non-finite weight in the projection")
    terms = []
    buf = np.empty(3 * 2048, dtype=np.float64)
    cdef double[::1] b = buf
    for k in range(3):
        terms.append(buf[: mb_acc_terms(acc + k * 2048, &b[0])].copy())
    return np.array([c0, c1, c2], dtype=np.int64), terms


def compact(double[::1] v, idx_t m, double lo, double hi):
    """Keep the values of ``v[:m]`` strictly inside (lo, hi), in order; return how many."""
    cdef idx_t i, k = 0
    cdef double x
    with nogil:
        for i in range(m):
            x = v[i]
            if x > lo and x < hi:
                v[k] = x
                k += 1
    return k


def nth_in_window(const double[::1] v, idx_t m, idx_t k):
    """The k-th value of the compacted window (bounds-checked)."""
    if not 0 <= k < m:
        raise IndexError(k)
    return v[k]


def apply_projection(double[::1] w, double theta_clip, double cap, double lam):
    """``w[i] = cap if w[i] >= theta_clip else w[i] * lam``."""
    cdef idx_t n = w.shape[0], i
    with nogil:
        for i in range(n):
            w[i] = cap if w[i] >= theta_clip else w[i] * lam
