"""Multinomial logistic regression kernels for the domain classifier Q(k|x).

Per-row arithmetic is in a fixed order (no BLAS), so a row's probabilities
are the same bits on every rank; the loss and gradient sums are exact int64
fixed-point sums of per-row terms, so they do not depend on the split either.
"""
import numpy as np
cimport numpy as cnp
from cython.parallel cimport prange
from libc.math cimport exp, log, fabs, ldexp, isnan

from _superacc cimport mb_get_max_threads, threads_for
from _typedefs cimport idx_t, fixed_t

cnp.import_array()

cdef enum:
    MAX_CLASSES = 64


cdef inline void _row_proba(const double* x, idx_t d, const double* W, idx_t p, double* prob) noexcept nogil:
    # W is (d + 1, p): rows 0..d-1 weights, row d the bias. Softmax with the max subtracted.
    cdef idx_t j, k
    cdef double z, zmax = -1e308, s = 0.0, v
    for k in range(p):
        z = W[d * p + k]
        for j in range(d):
            v = x[j]
            if not isnan(v):
                z = z + v * W[j * p + k]
        prob[k] = z
        if z > zmax:
            zmax = z
    for k in range(p):
        prob[k] = exp(prob[k] - zmax)
        s = s + prob[k]
    for k in range(p):
        prob[k] = prob[k] / s


def proba(const double[:, ::1] X, const double[:, ::1] W, double[:, ::1] out):
    """``out[i] = softmax(x_i . W[:d] + W[d])`` for standardized rows X (NaN counts as 0)."""
    cdef idx_t n = X.shape[0], d = X.shape[1], p = W.shape[1], i
    if W.shape[0] != d + 1 or out.shape[0] != n or out.shape[1] != p:
        raise ValueError("shape mismatch")
    if p > MAX_CLASSES:
        raise ValueError(f"at most {MAX_CLASSES} domains")
    if n == 0:
        return
    for i in prange(n, nogil=True, schedule="static", num_threads=threads_for(n)):
        _row_proba(&X[i, 0] if d else NULL, d, &W[0, 0], p, &out[i, 0])


cdef inline fixed_t _q(double v, double scale) noexcept nogil:
    v = v * scale
    return <fixed_t> (v + 0.5 if v >= 0 else v - 0.5)  # round half away from zero


def loss_grad(const double[:, ::1] X, const int[::1] label, const double[:, ::1] W, int shift):
    """Fixed-point sums over rows of the log-loss and of its gradient.

    Returns ``(loss, grad)``: int64 scalar and (d + 1, p) int64 array, in units
    of ``2**-shift``: loss = sum_i -log p_i[label_i] (p clipped at 1e-300),
    grad[j, k] = sum_i x_ij (p_ik - [label_i == k]) (x_i,d = 1 for the bias,
    NaN counts as 0). Each row's term is rounded on its own, so the integer
    sums are the same for any split of the rows.
    """
    cdef idx_t n = X.shape[0], d = X.shape[1], p = W.shape[1], i, j, k, t, nt, lo, hi
    cdef double scale = ldexp(1.0, shift), r, v
    cdef double* prob
    if W.shape[0] != d + 1 or label.shape[0] != n:
        raise ValueError("shape mismatch")
    if p > MAX_CLASSES:
        raise ValueError(f"at most {MAX_CLASSES} domains")
    nt = max(1, min(mb_get_max_threads(), n // 4096))
    acc = np.zeros((nt, (d + 1) * p + 8), dtype=np.int64)  # [grad..., loss, padding]
    cdef fixed_t[:, ::1] A = acc
    scratch = np.zeros((nt, MAX_CLASSES + 8))  # one probability buffer per thread
    cdef double[:, ::1] S = scratch
    cdef fixed_t* a
    if n:
        for t in prange(nt, nogil=True, schedule="static", num_threads=nt):
            lo = t * n // nt
            hi = (t + 1) * n // nt
            a = &A[t, 0]
            prob = &S[t, 0]
            for i in range(lo, hi):
                _row_proba(&X[i, 0] if d else NULL, d, &W[0, 0], p, prob)
                r = prob[label[i]]
                a[(d + 1) * p] += _q(-log(r if r > 1e-300 else 1e-300), scale)
                for k in range(p):
                    r = prob[k] - (1.0 if k == label[i] else 0.0)
                    for j in range(d):
                        v = X[i, j]
                        if not isnan(v):
                            a[j * p + k] += _q(v * r, scale)
                    a[d * p + k] += _q(r, scale)
    total = acc.sum(axis=0)
    return int(total[(d + 1) * p]), total[: (d + 1) * p].reshape(d + 1, p)


def standardize(const double[:, ::1] X, const double[::1] mean, const double[::1] inv_scale, double[:, ::1] out):
    """``out = (X - mean) * inv_scale``; NaN stays NaN (counted as 0 by the model)."""
    cdef idx_t n = X.shape[0], d = X.shape[1], i, j
    if out.shape[0] != n or out.shape[1] != d or mean.shape[0] != d or inv_scale.shape[0] != d:
        raise ValueError("shape mismatch")
    if n == 0:
        return
    for i in prange(n, nogil=True, schedule="static", num_threads=threads_for(n)):
        for j in range(d):
            out[i, j] = (X[i, j] - mean[j]) * inv_scale[j]
