"""Row passes of MultiBoost: the weights of the stump search, the exact sums of
the step-size line search, and the margin update."""
import numpy as np
cimport numpy as cnp
from cython.parallel cimport prange
from libc.math cimport exp, ldexp

from _superacc cimport mb_i128, mb_acc_add1, mb_acc_merge, mb_acc_terms, mb_get_max_threads, threads_for
from _typedefs cimport bin_t, fixed_t, idx_t
from _stump cimport stump_value

cnp.import_array()

def domain_units(const double[::1] a, const double[:, ::1] Q, const int[::1] domain,
                 const double[::1] domain_scale, const signed char[::1] y, int shift, fixed_t[::1] g,
                 int column=-1):
    """``g[i] = round(a[i] * Q[i, c] * domain_scale[domain[i]] * 2**shift) * y[i]``.

    ``c`` is the row's own domain (``column = -1``) or the given domain;
    ``domain_scale[l]`` weighs the rows of domain l (0 leaves them out).
    """
    cdef idx_t n = a.shape[0], p = Q.shape[1], i
    cdef double scale = ldexp(1.0, shift), v
    if Q.shape[0] != n or domain.shape[0] != n or y.shape[0] != n or g.shape[0] != n:
        raise ValueError("shape mismatch")
    if column >= p:
        raise ValueError("column out of range")
    if n == 0:
        return
    for i in prange(n, nogil=True, schedule="static", num_threads=threads_for(n)):
        v = a[i] * Q[i, domain[i] if column < 0 else column] * domain_scale[domain[i]] * scale
        g[i] = (<fixed_t> (v + 0.5)) * y[i]


def step_directions(const bin_t[::1] col, const signed char[::1] y, const double[::1] qk,
                    int bin, int left, bint missing_left, double[::1] u):
    """``u[i] = y[i] * Q(k|x_i) * h(x_i)``: how much margin row i gains per unit step."""
    cdef idx_t n = col.shape[0], i
    if y.shape[0] != n or qk.shape[0] != n or u.shape[0] != n:
        raise ValueError("shape mismatch")
    if n == 0:
        return
    for i in prange(n, nogil=True, schedule="static", num_threads=threads_for(n)):
        u[i] = y[i] * qk[i] * stump_value(col[i], bin, <signed char> left, missing_left)


def moments(const double[::1] a, const double[::1] u, const int[::1] domain, double eta, int n_domains, int shift):
    """Per domain k, the sums of ``a_i e^{-eta u_i}``, ``u_i a_i e^{-eta u_i}`` and ``u_i^2 a_i e^{-eta u_i}``.

    Each row's terms are rounded to int64 units of ``2**-shift`` on their own,
    so the sums are exact integers and the same for any split of the rows; the
    caller picks ``shift`` from a global bound on the terms (|u| <= 1).
    Returns an int64 array ``(n_domains, 3)``.
    """
    cdef idx_t n = a.shape[0], i, t, nt, lo, hi, k
    cdef double e, ui, scale = ldexp(1.0, shift)
    if u.shape[0] != n or domain.shape[0] != n:
        raise ValueError("shape mismatch")
    nt = max(1, min(mb_get_max_threads(), n // 32768))
    acc = np.zeros((nt, 3 * n_domains + 8), dtype=np.int64)  # padded against false sharing
    cdef fixed_t[:, ::1] A = acc
    if n:
        for t in prange(nt, nogil=True, schedule="static", num_threads=nt):
            lo = t * n // nt
            hi = (t + 1) * n // nt
            for i in range(lo, hi):
                ui = u[i]
                e = a[i] * exp(-eta * ui) * scale
                k = 3 * domain[i]
                A[t, k] += <fixed_t> (e + 0.5)
                A[t, k + 1] += <fixed_t> (ui * e + (0.5 if ui >= 0 else -0.5))
                A[t, k + 2] += <fixed_t> (ui * ui * e + 0.5)
    return acc[:, : 3 * n_domains].sum(axis=0).reshape(n_domains, 3)


def update(double[::1] margin, double[::1] a, const double[::1] u, const signed char[::1] y, double eta):
    """``margin[i] += eta * u[i]`` (the margin y f(x)), ``a[i] = exp(-margin[i])``.

    Returns the rows whose prediction sign(f) (ties -> +1) is wrong.
    """
    cdef idx_t n = margin.shape[0], i
    cdef double m
    cdef long long errors = 0
    if a.shape[0] != n or u.shape[0] != n or y.shape[0] != n:
        raise ValueError("shape mismatch")
    if n == 0:
        return 0
    for i in prange(n, nogil=True, schedule="static", num_threads=threads_for(n)):
        m = margin[i] + eta * u[i]
        margin[i] = m
        a[i] = exp(-m)
        # f = y * margin; predicted +1 iff f >= 0
        errors += (1 if y[i] * m >= 0 else -1) != y[i]
    return errors
