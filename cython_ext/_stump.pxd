# Evaluating one discrete stump on a binned value, shared by the kernels.
from _typedefs cimport bin_t, MISSING_BIN

cdef inline signed char stump_value(bin_t b, int bin, signed char left, bint missing_left) noexcept nogil:
    """h = left if b <= bin else -left; the missing bin goes left iff missing_left.

    The constant hypothesis is ``bin = MISSING_BIN, missing_left = True``
    (every bin, missing included, goes left).
    """
    if b == MISSING_BIN:
        return left if missing_left else -left
    return left if b <= bin else -left


cdef inline int class_stump_value(bin_t b, int bin, int left, int right, bint missing_left) noexcept nogil:
    """h = left if b <= bin else right (class indices); the missing bin goes left iff missing_left.

    The constant hypothesis ``left`` is ``bin = MISSING_BIN, missing_left = True``. ``bin < 0``:
    the column holds the class itself (a class tree's predictions, :class:`mpiboost.weak.tree.Tree`).
    """
    if bin < 0:
        return b
    if b == MISSING_BIN:
        return left if missing_left else right
    return left if b <= bin else right
