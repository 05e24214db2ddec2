# What the online leaves (_nba, _mnb) share: the argmax rules of their predictions.
from libc.math cimport INFINITY

from _typedefs cimport idx_t


cdef inline int first_best(const double* scores, idx_t k) noexcept nogil:
    """The first class of the largest finite score; -1 if none is finite (no class has weight)."""
    cdef idx_t c
    cdef int best = -1
    cdef double top = -INFINITY
    for c in range(k):
        if scores[c] > top:
            top, best = scores[c], <int> c
    return best


cdef inline int heaviest(const double* weight, idx_t k) noexcept nogil:
    """The first class of the largest weight (0 when every weight is 0): the majority class."""
    cdef idx_t c
    cdef int best = 0
    for c in range(1, k):
        if weight[c] > weight[best]:
            best = <int> c
    return best
