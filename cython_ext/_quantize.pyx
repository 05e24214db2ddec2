"""Gradients and hessians quantized to small integers, the same for any number of ranks and threads.

The first brick of quantized-gradient trees (Shi et al., NeurIPS 2022; LightGBM's
``use_quantized_grad``): a row's gradient ``g`` becomes the integer ``floor(g / g_scale + u)`` and its
hessian ``floor(h / h_scale + v)``, with ``u`` and ``v`` uniform in ``[0, 1)``. That is stochastic
rounding: the expected integer is ``g / g_scale`` exactly, so sums over many rows stay unbiased.

LightGBM draws ``u`` from a table seeded per thread block, so its integers (and its model) change
with the thread count. Here ``u`` is a hash of ``(seed, round, global row index, stream)``
(:func:`uniform`): a counter-based generator with no state, so a row's integers are the same
whichever rank or thread rounds it, and integer sums of them are exact in any order.
"""
import numpy as np
cimport numpy as cnp
from libc.math cimport floor
from libc.stdint cimport uint64_t, int64_t
from cython.parallel cimport prange

from _typedefs cimport idx_t

cnp.import_array()

ctypedef fused qint_t:  # the integers: int16 (bins up to a few hundred) or int32
    cnp.npy_int16
    cnp.npy_int32

# Odd constants that spread each key over the 64 bits before the finalizer (splitmix64's
# increment and two large primes): the keys differ in few low bits.
cdef uint64_t _GOLDEN = 0x9E3779B97F4A7C15ULL
cdef uint64_t _K_ROUND = 0xC2B2AE3D27D4EB4FULL
cdef uint64_t _K_ROW = 0x165667B19E3779F9ULL
cdef uint64_t _K_STREAM = 0xD6E8FEB86659FD93ULL


cdef inline uint64_t _mix(uint64_t z) noexcept nogil:
    """splitmix64's finalizer: a bijection of 64-bit words whose output bits all depend on every input bit."""
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL
    return z ^ (z >> 31)


cdef inline double _uniform(uint64_t seed, uint64_t rnd, uint64_t row, uint64_t stream) noexcept nogil:
    cdef uint64_t z = _mix(seed * _GOLDEN + 1)
    z = _mix(z ^ (rnd * _K_ROUND))
    z = _mix(z ^ (row * _K_ROW))
    z = _mix(z ^ (stream * _K_STREAM))
    return <double>(z >> 11) * (1.0 / 9007199254740992.0)  # the top 53 bits: a multiple of 2**-53 in [0, 1)


cdef inline double _staged(uint64_t zr, uint64_t stream) noexcept nogil:
    """:func:`_uniform` from its key mixed up to the row (``zr``): the same number."""
    cdef uint64_t z = _mix(zr ^ (stream * _K_STREAM))
    return <double>(z >> 11) * (1.0 / 9007199254740992.0)


def uniform(uint64_t seed, uint64_t rnd, uint64_t row, uint64_t stream) -> float:
    """The uniform number in ``[0, 1)`` of ``(seed, round, global row, stream)`` (a multiple of ``2**-53``)."""
    return _uniform(seed, rnd, row, stream)


def quantize(const double[::1] g, const double[::1] h, double g_scale, double h_scale, uint64_t seed,
             uint64_t rnd, int64_t first_row, uint64_t stream, qint_t[::1] qg, qint_t[::1] qh,
             bint constant_hessian=False, int threads=1, int64_t g_bound=0, int64_t h_bound=0):
    """Stochastic rounding of this rank's rows: ``qg[i] = floor(g[i] * (1 / g_scale) + u_i)``, likewise ``qh``.

    The scales must bound the integers by the output type (``|g| / g_scale`` below ``2**15 - 1`` for int16).

    Parameters
    ----------
    g, h
        This rank's gradients and hessians (one class).
    g_scale, h_scale
        Units of the integers (e.g. ``max|g| / (bins / 2)`` and ``max h / bins``, agreed over the ranks).
    seed, rnd, first_row, stream
        The key of the row's random numbers: the run's seed, the round, the global index of this rank's
        first row (row ``i`` is ``first_row + i``) and the class (``g`` draws from stream ``2 * class``,
        ``h`` from ``2 * class + 1``).
    qg, qh
        Output integers (int16 or int32), one per row.
    constant_hessian
        Every ``h`` is the same: ``qh`` is 1 (``h_scale`` is that hessian) and draws nothing.
    threads
        OpenMP threads (the result does not depend on them).
    g_bound, h_bound
        When positive, ``|qg| <= g_bound`` and ``qh <= h_bound`` (a value a rounding error above the
        bound would otherwise round up past it): the packed histograms' field widths rely on them.
    """
    cdef idx_t n = g.shape[0], i
    cdef double x
    if h.shape[0] != n or qg.shape[0] != n or qh.shape[0] != n:
        raise ValueError("g, h, qg and qh must have one entry per row")
    if not (g_scale > 0 and h_scale > 0):
        raise ValueError("the scales must be positive")
    cdef double gi = 1.0 / g_scale, hi = 1.0 / h_scale
    cdef uint64_t sg = 2 * stream, sh = 2 * stream + 1
    for i in prange(n, nogil=True, schedule="static", num_threads=max(1, threads) if n >= 32768 else 1):
        x = g[i] * gi
        x = floor(x + _uniform(seed, rnd, <uint64_t>(first_row + i), sg))
        if g_bound > 0:
            x = min(max(x, <double> -g_bound), <double> g_bound)
        qg[i] = <qint_t> x
        if constant_hessian:
            qh[i] = 1
        else:
            x = floor(h[i] * hi + _uniform(seed, rnd, <uint64_t>(first_row + i), sh))
            if h_bound > 0:
                x = min(x, <double> h_bound)
            qh[i] = <qint_t> x


def unit_maxima(const int64_t[:, ::1] gh, int K):
    """``(max |g|, max h)`` over this rank's rows and classes of fixed-point channels ``gh`` (n, 2K+1), in units."""
    cdef idx_t n = gh.shape[0], i, k
    cdef int64_t gm = 0, hm = 0, a
    if gh.shape[1] != 2 * K + 1:
        raise ValueError("gh must be (n, 2K + 1)")
    with nogil:
        for i in range(n):
            for k in range(K):
                a = gh[i, k]
                if a < 0:
                    a = -a
                if a > gm:
                    gm = a
                if gh[i, K + k] > hm:
                    hm = gh[i, K + k]
    return int(gm), int(hm)


def quantize_units(const int64_t[:, ::1] gh, int K, double unit, double g_scale, double h_scale, uint64_t seed,
                   uint64_t rnd, int64_t first_row, int64_t g_bound, int64_t h_bound, int64_t[:, ::1] out,
                   int threads=1):
    """:func:`quantize` of every class of fixed-point channels at once: ``out[i] = (qg_1..qg_K, qh_1..qh_K, 1)``
    of ``g = gh[i, k] * unit`` and ``h = gh[i, K + k] * unit`` (exact doubles: units below 2**53), class k
    drawing from streams ``2k`` and ``2k + 1``; the same integers as :func:`quantize` class by class."""
    cdef idx_t n = gh.shape[0], i, k
    cdef double x, gi, hi
    if gh.shape[1] != 2 * K + 1 or out.shape[0] != n or out.shape[1] != 2 * K + 1:
        raise ValueError("gh and out must be (n, 2K + 1)")
    if not (g_scale > 0 and h_scale > 0):
        raise ValueError("the scales must be positive")
    cdef uint64_t base = _mix(_mix(seed * _GOLDEN + 1) ^ (rnd * _K_ROUND)), zr
    gi = 1.0 / g_scale
    hi = 1.0 / h_scale
    for i in prange(n, nogil=True, schedule="static", num_threads=max(1, threads) if n >= 32768 else 1):
        # _uniform's key mixed in stages: (seed, round) once per call, the row once per row
        zr = _mix(base ^ (<uint64_t>(first_row + i) * _K_ROW))
        for k in range(K):
            x = floor((gh[i, k] * unit) * gi + _staged(zr, <uint64_t>(2 * k)))
            if g_bound > 0:
                x = min(max(x, <double> -g_bound), <double> g_bound)
            out[i, k] = <int64_t> x
            x = floor((gh[i, K + k] * unit) * hi + _staged(zr, <uint64_t>(2 * k + 1)))
            if h_bound > 0:
                x = min(x, <double> h_bound)
            out[i, K + k] = <int64_t> x
        out[i, 2 * K] = 1


# The stream of the bagging draws: apart from the quantization's (2 class, 2 class + 1 < 2**10)
cdef uint64_t _BAG_STREAM = 0x7FFFFFFF


def bag(uint64_t seed, uint64_t key, int64_t first_row, double fraction, unsigned char[::1] out, int threads=1):
    """Row bagging: ``out[i] = 1`` where the uniform number of ``(seed, key, global row first_row + i)`` is below
    ``fraction``, else 0 (each row in with probability ``fraction``, independently; the same rows on any number
    of ranks and threads). Returns the rows in."""
    cdef idx_t n = out.shape[0], i
    cdef long long inside = 0
    for i in prange(n, nogil=True, schedule="static", num_threads=max(1, threads) if n >= 32768 else 1):
        out[i] = _uniform(seed, key, <uint64_t>(first_row + i), _BAG_STREAM) < fraction
        inside += out[i]
    return int(inside)
