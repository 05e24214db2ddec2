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
from libc.math cimport fabs, ldexp, fma, isnan, isinf
from libc.stdlib cimport malloc, realloc, free
from cython.parallel cimport prange

from _superacc cimport mb_i128, mb_acc_add, mb_acc_add_grouped, mb_acc_merge, mb_acc_terms, mb_get_max_threads, threads_for
from _typedefs cimport fixed_t, idx_t

cnp.import_array()

ctypedef fused real_t:
    float
    double


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


cdef struct _Partials:
    double* p
    idx_t m, cap


cdef int _push(_Partials* s, double x) noexcept nogil:
    """Add ``x`` to a growable list of partials; 0 when out of memory."""
    cdef double* q
    if s.m + 1 > s.cap:  # _grow adds at most one partial
        q = <double*> realloc(s.p, 2 * s.cap * sizeof(double))
        if q == NULL:
            return 0
        s.p, s.cap = q, 2 * s.cap
    s.m = _grow(s.p, s.m, x)
    return 1


def column_partials(const real_t[:, ::1] X, center=None):
    """Exact per-column sums of a row-major matrix's non-zero values, as partials.

    Without ``center``: the values of each column. With ``center`` (float64,
    one per column): the squares ``fl((x - center_j)**2)`` of each column's
    deviations, the terms whose correctly rounded sum is its sum of squares.
    NaN is skipped. Zeros are only counted: they add nothing to a sum of
    values, and ``z * fl(center_j**2)`` to a sum of squares, which the caller
    adds once for the global ``z`` (:func:`exact_products`). One pass over the
    rows, so the matrix is read once in memory order whatever its shape.

    Parameters
    ----------
    X : ndarray of float32 or float64, shape (n, d)
    center : ndarray of float64, shape (d,), optional

    Returns
    -------
    partials : list of d ndarrays of float64
        Terms whose exact sum is the column's sum over its non-zero values
        (for :meth:`mpiboost.comm.Comm.sum_terms`).
    present, zeros : ndarray of int64, shape (d,)
        Non-NaN values and zeros per column.

    Raises
    ------
    ValueError
        On an infinite value.
    """
    cdef idx_t n = X.shape[0], d = X.shape[1], i, j
    cdef double v, t
    cdef int ok = 1
    cdef const double* cp = NULL
    present = np.zeros(d, dtype=np.int64)
    zeros = np.zeros(d, dtype=np.int64)
    cdef cnp.int64_t[::1] pr = present, zr = zeros
    if center is not None:
        cen = np.ascontiguousarray(center, dtype=np.float64)
        if cen.shape != (d,):
            raise ValueError("center must have one value per column")
        cp = <const double*> cnp.PyArray_DATA(cen)
    cdef _Partials* acc = <_Partials*> malloc(max(d, 1) * sizeof(_Partials))
    if acc == NULL:
        raise MemoryError()
    for j in range(d):
        acc[j].m, acc[j].cap = 0, 4
        acc[j].p = <double*> malloc(4 * sizeof(double))
        if acc[j].p == NULL:
            ok = 0
    try:
        if ok:
            with nogil:
                for i in range(n):
                    for j in range(d):
                        v = X[i, j]
                        if v == 0:
                            zr[j] += 1
                        elif not isnan(v):
                            pr[j] += 1
                            if ok != 1:
                                continue
                            if isinf(v):
                                ok = -1
                                continue
                            if cp != NULL:
                                t = v - cp[j]
                                v = t * t
                            if not _push(&acc[j], v):
                                ok = 0
        if ok < 0:
            raise ValueError("exact sum of non-finite values")
        if ok == 0:
            raise MemoryError()
        out = []
        for j in range(d):
            part = np.empty(acc[j].m)
            for i in range(acc[j].m):
                part[i] = acc[j].p[i]
            out.append(part)
    finally:
        for j in range(d):
            free(acc[j].p)
        free(acc)
    return out, present + zeros, zeros


def exact_products(const double[::1] a, const double[::1] b):
    """``(hi, lo)`` with ``hi + lo == a * b`` exactly (barring underflow): ``hi = fl(a b)``."""
    cdef idx_t n = a.shape[0], i
    if b.shape[0] != n:
        raise ValueError("a and b must have the same length")
    hi = np.empty(n)
    lo = np.empty(n)
    cdef double[::1] h = hi, l = lo
    for i in range(n):
        h[i] = a[i] * b[i]
        l[i] = fma(a[i], b[i], -h[i])
    return hi, lo


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
