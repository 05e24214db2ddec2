"""Map raw feature values to uint8 bins (bin 255 = missing)."""
from cython.parallel cimport prange

from _typedefs cimport bin_t, feature_t, idx_t, MISSING_BIN


def apply_bins(const feature_t[:, :] X,
               const double[::1] edges,
               const long long[::1] offsets,
               bin_t[:, ::1] out):
    """Bin ``X`` in place into ``out``.

    Feature ``j`` has the sorted edges ``edges[offsets[j]:offsets[j+1]]``; the
    bin of a value ``v`` is the number of edges strictly below ``v`` (so
    ``v <= edges[b]`` iff ``bin <= b``). NaN goes to ``MISSING_BIN``.
    """
    cdef idx_t n = X.shape[0], d = X.shape[1]
    cdef idx_t i, j, lo, hi, mid
    cdef double v
    if out.shape[0] != n or out.shape[1] != d:
        raise ValueError("out has the wrong shape")
    if offsets.shape[0] != d + 1:
        raise ValueError("offsets must have d + 1 entries")
    for i in prange(n, nogil=True, schedule="static"):
        for j in range(d):
            v = <double> X[i, j]
            if v != v:
                out[i, j] = MISSING_BIN
                continue
            lo = offsets[j]
            hi = offsets[j + 1]
            while lo < hi:              # first edge >= v
                mid = (lo + hi) >> 1
                if edges[mid] < v:
                    lo = mid + 1
                else:
                    hi = mid
            out[i, j] = <bin_t> (lo - offsets[j])
