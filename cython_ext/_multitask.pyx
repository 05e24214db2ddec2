"""The per-row costs of an Itakura–Saito multi-task step (see ``mpiboost.boost.is_costs``, their reference).

One pass over a rank's rows of task k: for each row the costs a_i (of
f(x_i) = +1) and b_i (of -1), its pseudo-label sign(b_i - a_i) and weight
|a_i - b_i|, which the ordinary weighted stump search takes.
"""
import numpy as np
cimport numpy as cnp
from cython.parallel cimport prange
from libc.math cimport exp, fabs

from _superacc cimport mb_i128, mb_acc_add1, mb_acc_terms, threads_for
from _typedefs cimport bin_t, idx_t
from _stump cimport stump_value

cnp.import_array()


def task_costs(const double[::1] fk, const double[:, ::1] teachers, const double[::1] lam,
               const signed char[::1] y, double[::1] a, double[::1] b, signed char[::1] labels,
               double[::1] weights):
    """Fill ``a``, ``b``, ``labels``, ``weights`` for a step on task k, over task k's rows.

    ``fk``: F_k on task k's rows; ``teachers`` (m, n): the teachers' scores on them
    (every other task's F_j, or the one averaged teacher), ``lam`` (m,) their
    weights (a teacher of weight <= 0 is skipped). Per row, in this order:
    u = exp(-F_k y), then for each teacher e = exp(F_k - F_j), a += lam e,
    b += lam / e (one exponential per teacher). Each row's arithmetic is its
    own, so the values do not depend on how the rows are split over ranks.
    """
    cdef idx_t n = fk.shape[0], m = teachers.shape[0], i, j
    cdef double u, e, ai, bi, d
    if (teachers.shape[1] != n and m) or lam.shape[0] != m or y.shape[0] != n \
            or a.shape[0] != n or b.shape[0] != n or labels.shape[0] != n or weights.shape[0] != n:
        raise ValueError("shape mismatch")
    for i in prange(n, nogil=True, schedule="static", num_threads=threads_for(n)):
        u = exp(-fk[i] * y[i])
        ai = u if y[i] < 0 else 0.0
        bi = u if y[i] > 0 else 0.0
        for j in range(m):
            if lam[j] > 0:
                e = exp(fk[i] - teachers[j, i])
                ai = ai + lam[j] * e
                bi = bi + lam[j] / e
        a[i] = ai
        b[i] = bi
        d = bi - ai
        labels[i] = 1 if d >= 0 else -1
        weights[i] = fabs(d)


def stump_cost_terms(const bin_t[::1] col, const double[::1] a, const double[::1] b,
                     int bin, int left, bint missing_left):
    """Exact terms of the stump's cost: the sum of a_i where h(x_i) = +1 and of b_i where h(x_i) = -1."""
    cdef idx_t n = col.shape[0], i
    cdef int bad = 0
    cdef signed char h
    if a.shape[0] != n or b.shape[0] != n:
        raise ValueError("shape mismatch")
    store = np.zeros(2048 * 2, dtype=np.int64)
    cdef mb_i128* acc = <mb_i128*> cnp.PyArray_DATA(store)
    with nogil:
        for i in range(n):
            h = stump_value(col[i], bin, <signed char> left, missing_left)
            if not mb_acc_add1(acc, a[i] if h > 0 else b[i]):
                bad = 1
    if bad:
        raise ValueError("non-finite cost")
    buf = np.empty(3 * 2048, dtype=np.float64)
    cdef double[::1] out = buf
    return buf[: mb_acc_terms(acc, &out[0])].copy()
