"""Building blocks of partition-independent sums.

``partials`` turns a vector into Shewchuk's non-overlapping partials: a short
list of doubles whose exact (real) sum equals the exact sum of the input. The
center merges every rank's partials with ``math.fsum``, which is correctly
rounded, so the total is the same bits however the rows are split.

``to_fixed`` quantizes values onto a global grid of ``2**-shift`` units; the
int64 sums of such units are exact and associative.
"""
import numpy as np
cimport numpy as cnp
from libc.math cimport fabs, isfinite, nearbyint, ldexp
from cython.parallel cimport prange

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


def partials(const double[::1] x):
    """Non-overlapping partials of ``x`` (exact representation of its sum).

    Raises ``ValueError`` on NaN or infinite input (such sums are not exact).
    """
    cdef idx_t n = x.shape[0], i, m = 0
    # At most ~40 partials can be non-overlapping in the double range.
    cdef double buf[80]
    cdef bint bad = False
    with nogil:
        for i in range(n):
            if not isfinite(x[i]):
                bad = True
                break
            m = _grow(buf, m, x[i])
            if m > 70:        # cannot happen for finite doubles; defensive
                bad = True
                break
    if bad:
        raise ValueError("exact sum of non-finite values")
    out = np.empty(m, dtype=np.float64)
    cdef double[::1] o = out
    for i in range(m):
        o[i] = buf[i]
    return out


def grouped_partials(const double[::1] x, const int[::1] group, int n_groups):
    """Partials of ``x`` per group id (``0 <= group[i] < n_groups``).

    Returns a list of ``n_groups`` float64 arrays.
    """
    cdef idx_t n = x.shape[0], i, g
    if group.shape[0] != n:
        raise ValueError("x and group must have the same length")
    bufs = np.zeros((n_groups, 80), dtype=np.float64)
    lens = np.zeros(n_groups, dtype=np.intp)
    cdef double[:, ::1] b = bufs
    cdef idx_t[::1] m = lens
    cdef bint bad = False
    with nogil:
        for i in range(n):
            g = group[i]
            if g < 0 or g >= n_groups or not isfinite(x[i]):
                bad = True
                break
            m[g] = _grow(&b[g, 0], m[g], x[i])
    if bad:
        raise ValueError("group id out of range or non-finite value in exact sum")
    return [bufs[k, :lens[k]].copy() for k in range(n_groups)]


def to_fixed(const double[::1] x, int shift, fixed_t[::1] out):
    """``out[i] = round(x[i] * 2**shift)`` (ties to even) as int64.

    The caller picks ``shift`` from global quantities (e.g. the total mass) so
    that every rank quantizes identically; returns False if a value overflows.
    """
    cdef idx_t n = x.shape[0], i
    cdef double v
    cdef bint ok = True
    if out.shape[0] != n:
        raise ValueError("out has the wrong length")
    for i in prange(n, nogil=True, schedule="static"):
        v = nearbyint(ldexp(x[i], shift))
        if not (fabs(v) < 9.2e18):
            ok = False
            out[i] = 0
        else:
            out[i] = <fixed_t> v
    return bool(ok)
