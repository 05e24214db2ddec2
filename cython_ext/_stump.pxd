# Evaluating one discrete stump on a binned row, shared by the kernels.
from _typedefs cimport bin_t, MISSING_BIN

cdef inline signed char stump_value(const bin_t* row, int feature, int bin, signed char left,
                                    bint missing_left) noexcept nogil:
    """h(x) = left if bin(x_f) <= bin else -left; missing goes left iff missing_left.

    feature < 0 is the constant hypothesis ``left``.
    """
    cdef int b
    if feature < 0:
        return left
    b = row[feature]
    if b == MISSING_BIN:
        return left if missing_left else -left
    return left if b <= bin else -left
