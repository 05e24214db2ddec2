"""Row passes of MultiBoost: the weights of the stump search and their
histograms, the exact sums of the step-size line search, and the margin update."""
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


cdef void _update_range(double* margin, double* a, const double* u, const signed char* y, idx_t lo, idx_t hi,
                        double eta, long long* errors_out, double* amax_out) noexcept nogil:
    # Locals, not shared arrays: the count and the running max stay in registers.
    cdef idx_t i
    cdef double m, v, amax = 0.0
    cdef long long errors = 0
    for i in range(lo, hi):
        m = margin[i] + eta * u[i]
        margin[i] = m
        v = exp(-m)
        a[i] = v
        amax = v if v > amax else amax
        # f = y * margin; predicted +1 iff f >= 0
        errors += (1 if y[i] * m >= 0 else -1) != y[i]
    errors_out[0] = errors
    amax_out[0] = amax


def update(double[::1] margin, double[::1] a, const double[::1] u, const signed char[::1] y, double eta):
    """``margin[i] += eta * u[i]`` (the margin y f(x)), ``a[i] = exp(-margin[i])``.

    Returns ``(errors, amax)``: the rows whose prediction sign(f) (ties -> +1)
    is wrong, and the largest new ``a[i]`` (0 without rows).
    """
    cdef idx_t n = margin.shape[0], t, nt
    if a.shape[0] != n or u.shape[0] != n or y.shape[0] != n:
        raise ValueError("shape mismatch")
    if n == 0:
        return 0, 0.0
    nt = max(1, min(mb_get_max_threads(), n // 32768))
    counts = np.zeros(8 * nt, dtype=np.int64)  # one cache line per thread
    maxes = np.zeros(8 * nt)
    cdef long long[::1] ct = counts
    cdef double[::1] mx = maxes
    for t in prange(nt, nogil=True, schedule="static", num_threads=nt):
        _update_range(&margin[0], &a[0], &u[0], &y[0], t * n // nt, (t + 1) * n // nt, eta, &ct[8 * t], &mx[8 * t])
    return int(counts.sum()), float(maxes.max())


cdef extern from "_chebyshev.h":
    ctypedef struct mb_v2i:
        pass
    void mb_chebyshev_rows(const double* a, const double* u, const int* domain, idx_t lo, idx_t hi,
                           double center, double scale, int K, mb_v2i* acc2) noexcept nogil


cdef object _lanes_sum(object acc, idx_t n_domains, int order):
    """(threads, 2 * n_domains * (order + 1) + pad) lane accumulators -> (n_domains, order + 1) sums."""
    cdef idx_t width = n_domains * (order + 1)
    return acc[:, : 2 * width].reshape(-1, width, 2).sum(axis=(0, 2)).reshape(n_domains, order + 1)


def chebyshev_moments(const double[::1] a, const double[::1] u, const int[::1] domain, double center,
                      int n_domains, int order, int shift):
    """Per domain k and ``j = 0..order``, the sums ``C[k, j]`` of ``a_i e^{-center u_i} T_j(u_i)``.

    ``T_j`` are the Chebyshev polynomials (``T_0 = 1``, ``T_1 = u``,
    ``T_{j+1} = 2u T_j - T_{j-1}``, all in [-1, 1] for |u| <= 1). Since
    ``e^{-s u} = I_0(s) + 2 sum_{j>=1} I_j(-s) T_j(u)`` (modified Bessel
    functions), ``F_k(center + s) = sum_{i in k} a_i e^{-(center + s) u_i}``
    is ``I_0(s) C[k, 0] + 2 sum_j I_j(-s) C[k, j]`` up to a tail below
    ``2 C[k, 0] sum_{j>order} I_j(|s|)``: one pass gives every domain's loss
    and its derivatives on an interval around ``center``
    (:mod:`mpiboost.boost.multiboost`). ``C[:, 0]`` and ``C[:, 1]`` are the
    sums of ``a e^{-center u}`` and ``u a e^{-center u}``.

    Each term is rounded to int64 units of ``2**-shift`` on its own (to
    nearest, ties to even; see _chebyshev.h), so the sums are exact and the
    same for any split of the rows or threads. The caller picks ``shift``
    from a global bound on ``a_i e^{-center u_i}``: every term must stay below
    ``2**50`` units and their sums below ``2**62``. ``center = 0`` skips the
    exponential. Returns an int64 array ``(n_domains, order + 1)``.
    """
    cdef idx_t n = a.shape[0], t, nt, width = (order + 1) * n_domains
    cdef double scale = ldexp(1.0, shift)
    if u.shape[0] != n or domain.shape[0] != n:
        raise ValueError("shape mismatch")
    if order < 0 or n_domains < 1:
        raise ValueError("order must be >= 0 and n_domains >= 1")
    nt = max(1, min(mb_get_max_threads(), n // 32768))
    acc = np.zeros((nt, 2 * width + 8), dtype=np.int64)  # two lanes per sum; padded against false sharing
    cdef fixed_t[:, ::1] A = acc
    if n:
        for t in prange(nt, nogil=True, schedule="static", num_threads=nt):
            mb_chebyshev_rows(&a[0], &u[0], &domain[0], t * n // nt, (t + 1) * n // nt, center, scale, order,
                              <mb_v2i*> &A[t, 0])
    return _lanes_sum(acc, n_domains, order)


def directions_chebyshev(const bin_t[::1] col, const signed char[::1] y, const double[:, ::1] QT, int k,
                         int bin, int left, bint missing_left, const double[::1] a, const int[::1] domain,
                         int order, int shift, double[::1] u):
    """:func:`step_directions` and :func:`chebyshev_moments` at ``center = 0`` in one pass.

    ``QT`` is Q(k|x) domain-major, ``(p, n)``. Writes ``u[i] = y[i] * QT[k, i] * h(x_i)``
    and returns the per-domain sums of ``a_i T_j(u_i)``, ``j = 0..order``, for
    the p domains: the same integers as ``chebyshev_moments(a, u, domain, 0, p, order, shift)``.
    """
    cdef idx_t n = col.shape[0], p = QT.shape[0], i, t, nt, lo, hi, width
    cdef double scale = ldexp(1.0, shift)
    if y.shape[0] != n or QT.shape[1] != n or u.shape[0] != n or a.shape[0] != n or domain.shape[0] != n:
        raise ValueError("shape mismatch")
    if order < 0 or k < 0 or k >= p:
        raise ValueError("order must be >= 0 and k a domain")
    width = (order + 1) * p
    nt = max(1, min(mb_get_max_threads(), n // 32768))
    acc = np.zeros((nt, 2 * width + 8), dtype=np.int64)
    cdef fixed_t[:, ::1] A = acc
    if n:
        for t in prange(nt, nogil=True, schedule="static", num_threads=nt):
            lo = t * n // nt
            hi = (t + 1) * n // nt
            for i in range(lo, hi):
                u[i] = y[i] * QT[k, i] * stump_value(col[i], bin, <signed char> left, missing_left)
            mb_chebyshev_rows(&a[0], &u[0], &domain[0], lo, hi, 0.0, scale, order, <mb_v2i*> &A[t, 0])
    return _lanes_sum(acc, p, order)


# ------------------------------------------------------------------ candidate histograms
cdef extern from "_multihist.h":
    enum:
        MB_CH_BLOCK
        MB_CH_MAX
    void mb_multihist(int C, const bin_t* XT, idx_t n, idx_t d, const unsigned char* binary,
                      const double* a, const double* QT, const int* domain,
                      const double* dscale, const signed char* y, double scale, const int* cand,
                      idx_t lo, idx_t hi, fixed_t* G, fixed_t* L) noexcept nogil


def candidate_histograms(const bin_t[:, ::1] XT, const double[::1] a, const double[:, ::1] QT,
                         const int[::1] domain, const double[::1] domain_scale, const signed char[::1] y,
                         int shift, candidates, fixed_t[:, :, ::1] hist, binary=None):
    """The histograms of :func:`domain_units` for several candidate domains at once.

    ``QT`` is Q(k|x) domain-major, ``(p, n)``. ``hist[c]`` (d x 256) equals
    ``domain_units(a, QT.T, domain, domain_scale, y, shift, g, candidates[c])``
    followed by ``build_histogram(XT, g, hist[c])``,
    bit for bit: the units are computed block by block and never stored, and
    each pass over the columns serves up to four candidates. ``binary`` (from
    ``_histogram.binary_columns``) lets 0/1 columns use masked sums.
    """
    cdef idx_t d = XT.shape[0], n = XT.shape[1], p = QT.shape[0]
    cdef idx_t t, nt, g0, j, b, k, c, cp, C
    cdef double scale = ldexp(1.0, shift)
    cand = np.ascontiguousarray(candidates, dtype=np.int32)
    cdef int[::1] cd = cand
    cdef idx_t nc = cand.shape[0]
    if a.shape[0] != n or QT.shape[1] != n or domain.shape[0] != n or y.shape[0] != n:
        raise ValueError("shape mismatch")
    if hist.shape[0] != nc or hist.shape[1] != d or hist.shape[2] != 256:
        raise ValueError("hist must be (candidates, d, 256)")
    for c in range(nc):
        if cd[c] < 0 or cd[c] >= p:
            raise ValueError("candidate out of range")
    flags = np.zeros(max(d, 1), dtype=np.uint8) if binary is None else np.ascontiguousarray(binary, dtype=np.uint8)
    if flags.shape[0] < d:
        raise ValueError("binary flags: one per feature")
    cdef const unsigned char[::1] bf = flags
    out = np.asarray(hist)
    out[...] = 0
    if n == 0 or d == 0 or nc == 0:
        return
    nt = max(1, min(mb_get_max_threads(), n // 16384))
    cdef idx_t width = d * 512 * MB_CH_MAX + MB_CH_BLOCK * MB_CH_MAX + 8  # histograms, units, padding
    local = np.empty((nt, width), dtype=np.int64)
    cdef fixed_t[:, ::1] Lv = local
    g0 = 0
    while g0 < nc:
        C = min(nc - g0, <idx_t> MB_CH_MAX)
        local[:, : d * 512 * C] = 0
        for t in prange(nt, nogil=True, schedule="static", num_threads=nt):
            mb_multihist(<int> C, &XT[0, 0], n, d, &bf[0], &a[0], &QT[0, 0], &domain[0], &domain_scale[0],
                         &y[0], scale, &cd[g0], t * n // nt, (t + 1) * n // nt,
                         &Lv[t, d * 512 * MB_CH_MAX], &Lv[t, 0])
        summed = local[:, : d * 512 * C].reshape(nt, d, 2, 256, C).sum(axis=(0, 2))  # (d, 256, C), exact
        out[g0 : g0 + C] = summed.transpose(2, 0, 1)
        g0 += C
