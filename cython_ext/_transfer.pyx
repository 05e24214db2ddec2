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


cdef inline double _row_error(const bin_t** col, idx_t i, signed char yi, const int* bins,
                              const signed char* left, const unsigned char* ml, const double* vt, int m,
                              bint hard) noexcept nogil:
    """The row's error e: soft, the mixture weight of the wrong candidates;
    hard, 1 if the mixture thresholded at 1/2 is wrong."""
    cdef int k
    cdef signed char h
    cdef double wrong = 0.0, pos = 0.0
    for k in range(m):
        h = stump_value(col[k][i], bins[k], left[k], ml[k])
        if h != yi:
            wrong = wrong + vt[k]
        if h > 0:
            pos = pos + vt[k]
    if hard:
        # f_t(x) = weight of the candidates voting 1; class 1 iff f_t >= 1/2.
        return 1.0 if (1 if pos >= 0.5 else -1) != yi else 0.0
    return wrong


cdef class _Candidates:
    """Typed arrays of a round's candidate stumps and the column each reads."""
    cdef int[::1] b
    cdef signed char[::1] lv
    cdef unsigned char[::1] mlv
    cdef double[::1] v
    cdef double[::1] c
    cdef int m
    cdef object cols_ptr  # int64 addresses of the columns (kept with XT alive by the caller)

    def __init__(self, const bin_t[:, ::1] XT, feature, bins, left, missing_left, vt, coef):
        cdef int[::1] f = np.ascontiguousarray(feature, dtype=np.int32)
        self.b = np.ascontiguousarray(bins, dtype=np.int32)
        self.lv = np.ascontiguousarray(left, dtype=np.int8)
        self.mlv = np.ascontiguousarray(missing_left, dtype=np.uint8)
        self.v = np.ascontiguousarray(vt, dtype=np.float64)
        self.c = np.ascontiguousarray(coef, dtype=np.float64)
        self.m = f.shape[0]
        if (self.m == 0 or self.b.shape[0] != self.m or self.lv.shape[0] != self.m or self.mlv.shape[0] != self.m
                or self.v.shape[0] != self.m or self.c.shape[0] != self.m):
            raise ValueError("one (feature, bin, left, missing_left, vt, coef) per candidate, at least one")
        ptr = np.zeros(self.m, dtype=np.intp)
        cdef Py_ssize_t[::1] pv = ptr
        cdef int k
        for k in range(self.m):
            if f[k] < 0 or (f[k] >= XT.shape[0] and XT.shape[1] > 0):
                raise ValueError("feature out of range")
            if XT.shape[1] > 0:
                pv[k] = <Py_ssize_t> &XT[f[k], 0]
        self.cols_ptr = ptr


cdef enum:
    MAX_LOCAL = 256  # candidates (sources) per round


cdef struct _Update:
    const bin_t** col
    const int* bins
    const signed char* left
    const unsigned char* ml
    const double* vt
    const double* coef
    const double* F  # F[g * m + k]: factor of group g (0 target, 1 source) for wrong candidate k
    int m
    bint hard
    double mult[2]


cdef void _update_one(const _Update* u, double* w, double* score, const signed char* y,
                      const unsigned char* is_source, idx_t lo, idx_t hi, long long* errors) noexcept nogil:
    # One candidate (TrAdaBoost, DTrAdaBoost, MSTrA): everything in locals,
    # which the compiler cannot assume of u's fields while w is written.
    cdef const bin_t* col = u.col[0]
    cdef int bin = u.bins[0]
    cdef signed char left = u.left[0]
    cdef bint ml = u.ml[0]
    cdef double coef = u.coef[0]
    cdef double ft = u.F[0], fs = u.F[1], mt = u.mult[0], ms = u.mult[1]
    cdef idx_t i
    cdef int g, bad
    cdef signed char h, yi
    cdef double sc
    cdef long long te = 0, se = 0
    for i in range(lo, hi):
        yi = y[i]
        g = is_source[i]
        h = stump_value(col[i], bin, left, ml)
        bad = h != yi
        w[i] = w[i] * ((ms if g else mt) * ((fs if g else ft) if bad else 1.0))
        sc = score[i] + coef * h
        score[i] = sc
        bad = (1 if sc >= 0 else -1) != yi
        se += bad & g
        te += bad & (1 - g)
    errors[0] = te
    errors[1] = se


cdef void _update_range(const _Update* u, double* w, double* score, const signed char* y,
                        const unsigned char* is_source, idx_t lo, idx_t hi, long long* errors) noexcept nogil:
    # Branch-free where the data decide (h != y is close to a coin flip early
    # on): selects instead of jumps; multiplying by 1.0 or adding 0.0 for the
    # candidates a row gets right changes no bit of the result. The
    # candidates are copied to the stack so they stay in cache lines the
    # compiler knows are not written.
    cdef const bin_t* col[MAX_LOCAL]
    cdef int bins[MAX_LOCAL]
    cdef signed char left[MAX_LOCAL]
    cdef unsigned char ml[MAX_LOCAL]
    cdef double vt[MAX_LOCAL]
    cdef double coef[MAX_LOCAL]
    cdef double F[2 * MAX_LOCAL]
    cdef int m = u.m
    cdef bint hard = u.hard
    cdef double mt = u.mult[0], ms = u.mult[1]
    cdef idx_t i
    cdef int k, g, bad
    cdef signed char h, yi
    cdef double fac, s, pos, sc
    cdef long long te = 0, se = 0
    cdef const double* Fg
    for k in range(m):
        col[k] = u.col[k]
        bins[k] = u.bins[k]
        left[k] = u.left[k]
        ml[k] = u.ml[k]
        vt[k] = u.vt[k]
        coef[k] = u.coef[k]
        F[k] = u.F[k]
        F[MAX_LOCAL + k] = u.F[m + k]
    for i in range(lo, hi):
        yi = y[i]
        g = is_source[i]
        Fg = &F[g * MAX_LOCAL]
        fac = ms if g else mt
        s = 0.0
        pos = 0.0
        for k in range(m):
            h = stump_value(col[k][i], bins[k], left[k], ml[k])
            s = s + coef[k] * h
            if not hard:
                fac = fac * (Fg[k] if h != yi else 1.0)
            pos = pos + (vt[k] if h > 0 else 0.0)
        if hard:
            # f_t(x) = weight of the candidates voting 1; class 1 iff f_t >= 1/2.
            fac = fac * (Fg[0] if (1 if pos >= 0.5 else -1) != yi else 1.0)
        w[i] = w[i] * fac
        sc = score[i] + s
        score[i] = sc
        bad = (1 if sc >= 0 else -1) != yi
        se += bad & g
        te += bad & (1 - g)
    errors[0] = te
    errors[1] = se


def transfer_update(double[::1] w, double[::1] score, const bin_t[:, ::1] XT, const signed char[::1] y,
                    const unsigned char[::1] is_source, feature, bins, left, missing_left, vt, coef,
                    bint hard, double mult_target, double log_target, double mult_source, double log_source):
    """One round's weight update, in place.

    For each row: ``e`` = the error of the round's hypothesis (the candidates
    ``(feature, bins, left, missing_left)`` mixed with weights ``vt``; soft:
    the mixture weight of the wrong candidates; hard: 1 if the mixture
    thresholded at 1/2 is wrong); ``w *= mult * exp(e * log)`` with the
    source or the target pair; ``score += sum_k coef_k h_k(x)``.
    ``exp(e * log)`` is taken as the product of the wrong candidates'
    factors ``exp(vt_k * log)`` (precomputed), so no row calls ``exp``.
    ``is_source`` holds 0 (target) or 1 (source).

    Returns
    -------
    (target_errors, source_errors)
        Rows of each group whose updated score has the wrong sign (0 -> +1).
    """
    cdef _Candidates C = _Candidates(XT, feature, bins, left, missing_left, vt, coef)
    cdef int m = C.m, k
    cdef idx_t n = w.shape[0], t, nt
    if score.shape[0] != n or XT.shape[1] != n or y.shape[0] != n or is_source.shape[0] != n:
        raise ValueError("shape mismatch")
    if n == 0:
        return 0, 0
    factors = np.empty(2 * m)
    for k in range(m):
        factors[k] = np.exp((1.0 if hard else C.v[k]) * log_target)
        factors[m + k] = np.exp((1.0 if hard else C.v[k]) * log_source)
    cdef double[::1] F = factors
    cdef Py_ssize_t[::1] pv = C.cols_ptr
    cdef _Update u
    u.col = <const bin_t**> &pv[0]
    u.bins = &C.b[0]
    u.left = &C.lv[0]
    u.ml = &C.mlv[0]
    u.vt = &C.v[0]
    u.coef = &C.c[0]
    u.F = &F[0]
    u.m = m
    u.hard = hard
    u.mult[0] = mult_target
    u.mult[1] = mult_source
    nt = max(1, min(mb_get_max_threads(), n // 32768))
    counts = np.zeros(8 * nt, dtype=np.int64)  # one cache line per thread
    cdef long long[::1] ct = counts
    if m > MAX_LOCAL:
        raise ValueError(f"at most {MAX_LOCAL} candidates per round")
    for t in prange(nt, nogil=True, schedule="static", num_threads=nt):
        if m == 1:
            _update_one(&u, &w[0], &score[0], &y[0], &is_source[0], t * n // nt, (t + 1) * n // nt, &ct[8 * t])
        else:
            _update_range(&u, &w[0], &score[0], &y[0], &is_source[0], t * n // nt, (t + 1) * n // nt,
                          &ct[8 * t])
    return int(counts[0::8].sum()), int(counts[1::8].sum())


def row_errors(const bin_t[:, ::1] XT, const signed char[::1] y, feature, bins, left, missing_left, vt,
               bint hard, double[::1] out):
    """``out[i]`` = the row's error e of :func:`transfer_update` (no update)."""
    cdef idx_t n = y.shape[0], i
    cdef _Candidates C = _Candidates(XT, feature, bins, left, missing_left, vt, np.zeros(len(vt)))
    if XT.shape[1] != n or out.shape[0] != n:
        raise ValueError("shape mismatch")
    if n == 0:
        return
    cdef Py_ssize_t[::1] pv = C.cols_ptr
    cdef const bin_t** col = <const bin_t**> &pv[0]
    for i in prange(n, nogil=True, schedule="static", num_threads=threads_for(n)):
        out[i] = _row_error(col, i, y[i], &C.b[0], &C.lv[0], &C.mlv[0], &C.v[0], C.m, hard)
