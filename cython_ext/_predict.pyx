"""Stump-ensemble prediction on feature-major bins."""
from cython.parallel cimport prange

from _superacc cimport threads_for
from _typedefs cimport bin_t, idx_t
from _stump cimport stump_value


def predict_binned(const bin_t[:, ::1] XT, const int[::1] feature, const int[::1] bin,
                   const signed char[::1] left, const unsigned char[::1] missing_left,
                   const double[::1] coef, double[::1] out):
    """``out[i] = sum_t coef[t] * h_t(x_i)``, stumps summed in order ``t = 0..T-1``.

    ``feature[t] < 0`` is the constant hypothesis ``left[t]``.
    """
    cdef idx_t n = XT.shape[1], T = feature.shape[0], i, t, f
    cdef double s
    if out.shape[0] != n:
        raise ValueError("shape mismatch")
    if n == 0:
        return
    for i in prange(n, nogil=True, schedule="static", num_threads=threads_for(n)):
        s = 0.0
        for t in range(T):
            f = feature[t]
            if f < 0:
                s = s + coef[t] * left[t]
            else:
                s = s + coef[t] * stump_value(XT[f, i], bin[t], left[t], missing_left[t])
        out[i] = s


def predict_binned_q(const bin_t[:, ::1] XT, const int[::1] feature, const int[::1] bin,
                     const signed char[::1] left, const unsigned char[::1] missing_left,
                     const double[::1] coef, const int[::1] domain, const double[:, ::1] Q, double[::1] out):
    """Q-ensemble: ``out[i] = sum_t coef[t] * Q[i, domain[t]] * h_t(x_i)`` (``domain[t] < 0``: weight 1)."""
    cdef idx_t n = XT.shape[1], T = feature.shape[0], i, t, f
    cdef double s, q
    cdef signed char h
    if out.shape[0] != n or Q.shape[0] != n:
        raise ValueError("shape mismatch")
    if n == 0:
        return
    for i in prange(n, nogil=True, schedule="static", num_threads=threads_for(n)):
        s = 0.0
        for t in range(T):
            f = feature[t]
            h = left[t] if f < 0 else stump_value(XT[f, i], bin[t], left[t], missing_left[t])
            q = Q[i, domain[t]] if domain[t] >= 0 else 1.0
            s = s + coef[t] * q * h
        out[i] = s
