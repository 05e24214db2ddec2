"""Building blocks of partition-independent sums.

``partials`` turns a vector into Shewchuk's non-overlapping partials: a short
list of doubles whose exact (real) sum equals the exact sum of the input
(accumulated per binary exponent in 128-bit integers, see ``_superacc.h``). The
center merges every rank's partials with ``math.fsum``, which is correctly
rounded, so the total is the same bits however the rows are split.

``to_fixed`` quantizes values onto a global grid of ``2**-shift`` units; the
int64 sums of such units are exact and associative.
"""
import numpy as np
cimport numpy as cnp
from libc.math cimport fabs, ldexp
from cython.parallel cimport prange

from _superacc cimport mb_i128, mb_acc_add, mb_acc_add_grouped, mb_acc_merge, mb_acc_terms, mb_get_max_threads, threads_for
from _typedefs cimport fixed_t, idx_t

cnp.import_array()


cdef inline idx_t _grow(double* p, idx_t m, double x) noexcept nogil:
    """Add ``x`` to the partials ``p[0:m]`` (Shewchuk 1997); return the new length."""
    cdef idx_t i = 0, k
    cdef double y, hi, lo
    for k in range(m):
        y = p[k]
        if fabs(x) < fabs(y):
            x, y = y, x
        hi = x + y
        lo = y - (hi - x)
        if lo != 0.0:
            p[i] = lo
            i += 1
        x = hi
    p[i] = x
    return i + 1


cdef object _terms_to_partials(mb_i128* acc):
    """Exact non-overlapping partials of one accumulator."""
    cdef double terms[3 * 2048]
    cdef double buf[80]
    cdef idx_t k, i, m = 0
    k = mb_acc_terms(acc, terms)
    for i in range(k):
        m = _grow(buf, m, terms[i])
    out = np.empty(m, dtype=np.float64)
    cdef double[::1] o = out
    for i in range(m):
        o[i] = buf[i]
    return out


def partials(const double[::1] x):
    """Non-overlapping partials of ``x`` (an exact representation of its sum).

    Every value goes into a per-exponent 128-bit integer bucket (exact,
    order-free, split across threads); the buckets are then turned into a few
    Shewchuk partials. Raises ``ValueError`` on NaN or infinite input.
    """
    cdef idx_t n = x.shape[0], t, nt, lo, hi
    cdef int bad = 0
    nt = max(1, min(mb_get_max_threads(), n // 65536))
    # per thread: 4 scratch accumulators of 2048 int128 buckets
    store = np.zeros(nt * 4 * 2048 * 2, dtype=np.int64)
    cdef mb_i128* acc = <mb_i128*> cnp.PyArray_DATA(store)
    if n:
        for t in prange(nt, nogil=True, schedule="static", num_threads=nt):
            lo = t * n // nt
            hi = (t + 1) * n // nt
            if not mb_acc_add(acc + t * 4 * 2048, &x[lo], hi - lo):
                bad = 1
    if bad:
        raise ValueError("exact sum of non-finite values")
    for t in range(1, nt):
        mb_acc_merge(acc, acc + t * 4 * 2048)
    return _terms_to_partials(acc)


def grouped_partials(const double[::1] x, const int[::1] group, int n_groups):
    """Partials of ``x`` per group id (``0 <= group[i] < n_groups``).

    Returns a list of ``n_groups`` float64 arrays.
    """
    cdef idx_t n = x.shape[0], k
    cdef int ok = 1
    if group.shape[0] != n:
        raise ValueError("x and group must have the same length")
    store = np.zeros(max(n_groups, 1) * 2048 * 2, dtype=np.int64)
    cdef mb_i128* acc = <mb_i128*> cnp.PyArray_DATA(store)
    if n:
        with nogil:
            ok = mb_acc_add_grouped(acc, &x[0], &group[0], n, n_groups)
    if not ok:
        raise ValueError("group id out of range or non-finite value in exact sum")
    return [_terms_to_partials(acc + k * 2048) for k in range(n_groups)]


def to_fixed(const double[::1] x, int shift, fixed_t[::1] out):
    """``out[i] = round(x[i] * 2**shift)`` (ties to even) as int64.

    The caller picks ``shift`` from global quantities so that every rank
    quantizes identically; returns False if a value overflows int64.
    """
    cdef idx_t n = x.shape[0], i
    cdef double v, a, scale = ldexp(1.0, shift)
    cdef double big = 4503599627370496.0  # 2**52: adding and removing it rounds to an integer
    cdef bint ok = True
    if out.shape[0] != n:
        raise ValueError("out has the wrong length")
    for i in prange(n, nogil=True, schedule="static", num_threads=threads_for(n)):
        v = x[i] * scale  # exact: a power-of-two scaling
        a = fabs(v)
        if a < big:
            a = (a + big) - big  # round half to even in the current (nearest) mode
        if not (a < 9.2e18):
            ok = False
            out[i] = 0
        else:
            out[i] = <fixed_t> (a if v >= 0 else -a)
    return bool(ok)
