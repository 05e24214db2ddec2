"""Map raw feature values to uint8 bins (bin 255 = missing).

The bin of a value ``v`` of feature ``j`` is the number of edges of ``j``
strictly below ``v`` (so ``v <= edges[b]`` iff ``bin <= b``); NaN goes to
``MISSING_BIN``. Two kernels: a branch-free binary search for floats and wide
integers, and a 256-entry lookup table per feature for 8-bit inputs.
"""
from cython.parallel cimport prange

from _superacc cimport threads_for
from _typedefs cimport bin_t, idx_t, MISSING_BIN

ctypedef fused search_t:
    float
    double
    signed short
    signed int


cdef inline idx_t _count_below(const double* e, idx_t n, double v) noexcept nogil:
    # Branch-free lower bound: the comparison result selects the half with a
    # conditional move, which beats a mispredicted branch per level.
    cdef const double* base = e
    cdef idx_t half
    if n == 0:
        return 0
    while n > 1:
        half = n >> 1
        base = base + half if base[half] < v else base
        n -= half
    return (base - e) + (base[0] < v)


def apply_bins(const search_t[:, ::1] X,
               const double[::1] edges,
               const long long[::1] offsets,
               bin_t[:, :] out):
    """Bin ``X`` into ``out`` (any strides: a transposed view writes feature-major);
    feature ``j`` has edges ``edges[offsets[j]:offsets[j+1]]``."""
    cdef idx_t n = X.shape[0], d = X.shape[1]
    cdef idx_t i, j
    cdef double v
    if out.shape[0] != n or out.shape[1] != d:
        raise ValueError("out has the wrong shape")
    if offsets.shape[0] != d + 1:
        raise ValueError("offsets must have d + 1 entries")
    if n == 0 or d == 0:
        return
    for i in prange(n, nogil=True, schedule="static", num_threads=threads_for(n)):
        for j in range(d):
            v = <double> X[i, j]
            if v != v:
                out[i, j] = MISSING_BIN
            else:
                out[i, j] = <bin_t> _count_below(&edges[offsets[j]], offsets[j + 1] - offsets[j], v)


def apply_lut(const unsigned char[:, ::1] X, const bin_t[:, ::1] lut, bin_t[:, :] out):
    """Bin 8-bit data by table: ``out[i, j] = lut[j, X[i, j]]``.

    ``X`` holds the raw bytes (int8 data viewed as uint8); the caller builds
    ``lut`` (d, 256) accordingly.
    """
    cdef idx_t n = X.shape[0], d = X.shape[1]
    cdef idx_t i, j
    if out.shape[0] != n or out.shape[1] != d or lut.shape[0] != d or lut.shape[1] != 256:
        raise ValueError("shape mismatch")
    if n == 0 or d == 0:
        return
    for i in prange(n, nogil=True, schedule="static", num_threads=threads_for(n)):
        for j in range(d):
            out[i, j] = lut[j, X[i, j]]
