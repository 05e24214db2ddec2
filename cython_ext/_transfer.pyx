"""Kernels of the instance-transfer algorithms (TrAdaBoost family, MSDTrA).

Every round needs one histogram per domain (candidate k is trained on
source k and the target, so its histogram is the sum of two of them) and one
pass that evaluates the round's N candidate stumps on every row, turns their
mistakes into the row's error ``e_i`` and multiplies the row's weight by a
per-group factor raised to ``e_i``.
"""
import numpy as np
cimport numpy as cnp
from cython.parallel cimport prange
from libc.math cimport exp

from _superacc cimport mb_get_max_threads, threads_for
from _typedefs cimport bin_t, fixed_t, idx_t
from _stump cimport stump_value

cnp.import_array()


def domain_histograms(const bin_t[:, ::1] XT, const fixed_t[::1] g, const int[::1] domain,
                      fixed_t[:, :, ::1] hists):
    """``hists[k, j, b] = sum of g[i]`` over rows i of domain k with ``XT[j, i] == b``.

    XT is (d, n) feature-major, hists (p, d, 256) and overwritten. Threads
    split the features, so every cell has one writer and the integer sums
    do not depend on the thread count.
    """
    cdef idx_t d = XT.shape[0], n = XT.shape[1], p = hists.shape[0], j, i, k
    cdef const bin_t* col
    if g.shape[0] != n or domain.shape[0] != n or hists.shape[1] != d or hists.shape[2] != 256:
        raise ValueError("shape mismatch")
    if n and (np.min(domain) < 0 or np.max(domain) >= p):
        raise ValueError(f"domain ids must lie in 0..{p - 1}")
    hists[:, :, :] = 0
    cdef fixed_t* h = &hists[0, 0, 0] if p and d else NULL
    cdef idx_t stride = d * 256
    if n == 0 or d == 0:
        return
    for j in prange(d, nogil=True, schedule="dynamic", num_threads=max(1, min(mb_get_max_threads(), d))):
        col = &XT[j, 0]
        for i in range(n):
            h[domain[i] * stride + j * 256 + col[i]] += g[i]


cdef inline double _row_error(const bin_t[:, ::1] XT, idx_t i, signed char yi, const int* feat, const int* bins,
                              const signed char* left, const unsigned char* ml, const double* vt, int m,
                              bint hard, double* score_add, const double* coef) noexcept nogil:
    """The row's error e (soft: the mixture's weight on wrong candidates; hard:
    whether the mixture, thresholded at 1/2, is wrong) and its score increment."""
    cdef int k
    cdef signed char h
    cdef double wrong = 0.0, pos = 0.0, s = 0.0
    for k in range(m):
        h = stump_value(XT[feat[k] if feat[k] >= 0 else 0, i], bins[k], left[k], ml[k])
        s = s + coef[k] * h
        if h != yi:
            wrong = wrong + vt[k]
        if h > 0:
            pos = pos + vt[k]
    score_add[0] = s
    if hard:
        # f_t(x) = weight of the candidates voting 1; class 1 iff f_t >= 1/2.
        return 1.0 if (1 if pos >= 0.5 else -1) != yi else 0.0
    return wrong


def transfer_update(double[::1] w, double[::1] score, const bin_t[:, ::1] XT, const signed char[::1] y,
                    const unsigned char[::1] is_source, feature, bins, left, missing_left, vt, coef,
                    bint hard, double mult_target, double log_target, double mult_source, double log_source):
    """One round's weight update, in place.

    For each row: ``e`` = the error of the round's hypothesis (the candidates
    ``(feature, bins, left, missing_left)`` mixed with weights ``vt``; soft or
    hard, see :func:`_row_error`); ``w *= mult * exp(e * log)`` with the
    source or the target pair; ``score += sum_k coef_k h_k(x)``.

    Returns
    -------
    (target_errors, source_errors)
        Rows of each group whose updated score has the wrong sign (0 -> +1).
    """
    cdef int[::1] f = np.ascontiguousarray(feature, dtype=np.int32)
    cdef int[::1] b = np.ascontiguousarray(bins, dtype=np.int32)
    cdef signed char[::1] lv = np.ascontiguousarray(left, dtype=np.int8)
    cdef unsigned char[::1] mlv = np.ascontiguousarray(missing_left, dtype=np.uint8)
    cdef double[::1] v = np.ascontiguousarray(vt, dtype=np.float64)
    cdef double[::1] c = np.ascontiguousarray(coef, dtype=np.float64)
    cdef int m = f.shape[0]
    cdef idx_t n = w.shape[0], i
    cdef double e, s, sc
    cdef long long te = 0, se = 0
    if score.shape[0] != n or XT.shape[1] != n or y.shape[0] != n or is_source.shape[0] != n:
        raise ValueError("shape mismatch")
    if m == 0 or b.shape[0] != m or lv.shape[0] != m or mlv.shape[0] != m or v.shape[0] != m or c.shape[0] != m:
        raise ValueError("one (feature, bin, left, missing_left, vt, coef) per candidate, at least one")
    for i in range(m):
        if f[i] >= XT.shape[0] and XT.shape[0] > 0:
            raise ValueError("feature out of range")
    if n == 0:
        return 0, 0
    for i in prange(n, nogil=True, schedule="static", num_threads=threads_for(n)):
        e = _row_error(XT, i, y[i], &f[0], &b[0], &lv[0], &mlv[0], &v[0], m, hard, &s, &c[0])
        if is_source[i]:
            w[i] = w[i] * mult_source * exp(e * log_source)
        else:
            w[i] = w[i] * mult_target * exp(e * log_target)
        sc = score[i] + s
        score[i] = sc
        if (1 if sc >= 0 else -1) != y[i]:
            if is_source[i]:
                se += 1
            else:
                te += 1
    return te, se


def row_errors(const bin_t[:, ::1] XT, const signed char[::1] y, feature, bins, left, missing_left, vt,
               bint hard, double[::1] out):
    """``out[i]`` = the row's error e of :func:`transfer_update` (no update)."""
    cdef int[::1] f = np.ascontiguousarray(feature, dtype=np.int32)
    cdef int[::1] b = np.ascontiguousarray(bins, dtype=np.int32)
    cdef signed char[::1] lv = np.ascontiguousarray(left, dtype=np.int8)
    cdef unsigned char[::1] mlv = np.ascontiguousarray(missing_left, dtype=np.uint8)
    cdef double[::1] v = np.ascontiguousarray(vt, dtype=np.float64)
    cdef double[::1] c = np.zeros(f.shape[0])
    cdef int m = f.shape[0]
    cdef idx_t n = y.shape[0], i
    cdef double s
    if XT.shape[1] != n or out.shape[0] != n or m == 0 or v.shape[0] != m:
        raise ValueError("shape mismatch")
    for i in prange(n, nogil=True, schedule="static", num_threads=threads_for(n)):
        out[i] = _row_error(XT, i, y[i], &f[0], &b[0], &lv[0], &mlv[0], &v[0], m, hard, &s, &c[0])
