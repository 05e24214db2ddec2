# The exact-summation accumulator (_superacc.h) and the OpenMP shim, for every kernel.
from _typedefs cimport idx_t

cdef extern from "_superacc.h":
    ctypedef struct mb_i128:
        pass
    int mb_acc_add1(mb_i128* acc, double v) nogil
    int mb_acc_add(mb_i128* acc, const double* x, idx_t n) nogil
    int mb_acc_add_grouped(mb_i128* acc, const double* x, const int* g, idx_t n, int n_groups) nogil
    void mb_acc_merge(mb_i128* into, const mb_i128* src) nogil
    idx_t mb_acc_terms(const mb_i128* acc, double* out) nogil

cdef extern from "_openmp_shim.h":
    int mb_get_max_threads() nogil


cdef inline int threads_for(Py_ssize_t n) noexcept nogil:
    """Threads for a simple pass over n rows: one below ~32k rows, where
    starting a parallel region costs more than it saves (and stalls when the
    machine is oversubscribed)."""
    cdef int t = mb_get_max_threads()
    if n < 32768:
        return 1
    return t if t > 1 else 1
