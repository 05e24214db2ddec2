"""Per-row passes of a boosting round: stump predictions, weight updates,
fixed-point weights, and mapping sample points to rows."""
import numpy as np
cimport numpy as cnp
from cython.parallel cimport prange

from _typedefs cimport bin_t, fixed_t, idx_t
from _stump cimport stump_value

cnp.import_array()


def stump_predict(const bin_t[:, ::1] X, int feature, int bin, int left, bint missing_left,
                  signed char[::1] out):
    """``out[i] = h(x_i)`` in {-1, +1}."""
    cdef idx_t n = X.shape[0], i
    if out.shape[0] != n:
        raise ValueError("shape mismatch")
    if n == 0:
        return
    for i in prange(n, nogil=True, schedule="static"):
        out[i] = stump_value(&X[i, 0], feature, bin, <signed char> left, missing_left)


def apply_stump(double[::1] w, double[::1] margin, const bin_t[:, ::1] X, const signed char[::1] y,
                int feature, int bin, int left, bint missing_left,
                double factor_correct, double factor_wrong, double coef):
    """One fused pass for hypothesis h:

    ``w[i] *= factor_correct if h(x_i) == y_i else factor_wrong`` and
    ``margin[i] += coef * h(x_i)``. Returns the number of rows the updated
    ensemble ``sign(margin)`` (ties -> +1) gets wrong.
    """
    cdef idx_t n = X.shape[0], i
    cdef signed char h
    cdef long long errors = 0
    if w.shape[0] != n or margin.shape[0] != n or y.shape[0] != n:
        raise ValueError("shape mismatch")
    if n == 0:
        return 0
    for i in prange(n, nogil=True, schedule="static"):
        h = stump_value(&X[i, 0], feature, bin, <signed char> left, missing_left)
        w[i] = w[i] * (factor_correct if h == y[i] else factor_wrong)
        margin[i] = margin[i] + coef * h
        errors += (1 if margin[i] >= 0 else -1) != y[i]
    return errors


def margin_errors(const double[::1] margin, const signed char[::1] y):
    """Rows where ``sign(margin)`` (ties -> +1) differs from ``y``."""
    cdef idx_t n = margin.shape[0], i
    cdef long long errors = 0
    for i in prange(n, nogil=True, schedule="static"):
        errors += (1 if margin[i] >= 0 else -1) != y[i]
    return errors


def add_stump(double[::1] margin, const bin_t[:, ::1] X, int feature, int bin, int left,
              bint missing_left, double coef):
    """``margin[i] += coef * h(x_i)`` (validation margins)."""
    cdef idx_t n = X.shape[0], i
    if margin.shape[0] != n:
        raise ValueError("shape mismatch")
    if n == 0:
        return
    for i in prange(n, nogil=True, schedule="static"):
        margin[i] = margin[i] + coef * stump_value(&X[i, 0], feature, bin, <signed char> left, missing_left)


def scale(double[::1] w, double divisor):
    """``w[i] = w[i] / divisor`` (division, not multiplication by 1/divisor: exact
    same rounding as a sequential normalization)."""
    cdef idx_t n = w.shape[0], i
    for i in prange(n, nogil=True, schedule="static"):
        w[i] = w[i] / divisor


def signed_fixed(const fixed_t[::1] q, const signed char[::1] y, fixed_t[::1] out):
    """``out[i] = q[i] * y[i]``."""
    cdef idx_t n = q.shape[0], i
    for i in prange(n, nogil=True, schedule="static"):
        out[i] = q[i] * y[i]


def rows_for_points(const fixed_t[::1] cumq, const fixed_t[::1] points, fixed_t offset, idx_t[::1] rows):
    """Map sorted sample points to rows by the inclusive prefix sums ``cumq``.

    Point ``p`` (global, in ``[offset, offset + cumq[-1])``) selects the first
    row ``i`` with ``cumq[i] > p - offset``: row i is drawn with probability
    proportional to its weight. One merge walk, O(n + N).
    """
    cdef idx_t n = cumq.shape[0], m = points.shape[0], k, i = 0
    cdef fixed_t p
    if rows.shape[0] != m:
        raise ValueError("shape mismatch")
    with nogil:
        for k in range(m):
            p = points[k] - offset
            while i < n and cumq[i] <= p:
                i += 1
            rows[k] = i
    if m and rows[m - 1] >= n:
        raise ValueError("sample point beyond this rank's weight")
