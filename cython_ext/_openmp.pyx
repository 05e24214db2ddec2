"""OpenMP thread control shared by all kernels."""

cdef extern from "_openmp_shim.h":
    int mb_have_openmp()
    void mb_set_num_threads(int n)
    int mb_get_max_threads()


def set_num_threads(int n):
    """Set the number of OpenMP threads used by every later parallel kernel."""
    if n < 1:
        raise ValueError(f"thread count must be >= 1, got {n}")
    mb_set_num_threads(n)


def get_max_threads():
    """Number of threads the next parallel region may use (1 without OpenMP)."""
    return mb_get_max_threads()


def openmp_enabled():
    """True if the kernels were compiled with OpenMP."""
    return bool(mb_have_openmp())
