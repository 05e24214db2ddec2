"""Row passes for weights stored as a cell id per row and one value per cell.

SmoothBoost's weights take few distinct values (rows with the same history
share one), so a round needs only integer work per row: fixed-point units
looked up by cell, outcome counts per cell, and moving rows to their new cell.
"""
import numpy as np
cimport numpy as cnp
from cython.parallel cimport prange

from _superacc cimport mb_get_max_threads, threads_for
from _typedefs cimport bin_t, fixed_t, idx_t
from _stump cimport stump_value

cnp.import_array()


def cell_cumsum(const int[::1] cell, const fixed_t[::1] units, fixed_t[::1] cum):
    """Inclusive prefix sums of ``units[cell[i]]``; returns the total."""
    cdef idx_t n = cell.shape[0], i
    cdef fixed_t total = 0
    if cum.shape[0] != n:
        raise ValueError("shape mismatch")
    with nogil:
        for i in range(n):
            total += units[cell[i]]
            cum[i] = total
    return int(total)


def cell_signed(const int[::1] cell, const fixed_t[::1] units, const signed char[::1] y, fixed_t[::1] g):
    """``g[i] = units[cell[i]] * y[i]``; returns the total of the units."""
    cdef idx_t n = cell.shape[0], i
    cdef fixed_t total = 0, u
    if g.shape[0] != n or y.shape[0] != n:
        raise ValueError("shape mismatch")
    for i in prange(n, nogil=True, schedule="static", num_threads=threads_for(n)):
        u = units[cell[i]]
        total += u
        g[i] = u * y[i]
    return int(total)


def count_outcomes(const int[::1] cell, const bin_t[::1] col, const signed char[::1] y,
                   int bin, int left, bint missing_left, int n_cells):
    """Rows per (cell, outcome): ``out[c, 0]`` right, ``out[c, 1]`` wrong (int64, (n_cells, 2))."""
    cdef idx_t n = cell.shape[0], i, t, nt, lo, hi, k
    cdef signed char h
    if col.shape[0] != n or y.shape[0] != n:
        raise ValueError("shape mismatch")
    nt = max(1, min(mb_get_max_threads(), n // 65536))
    local = np.zeros((nt, 2 * n_cells + 8), dtype=np.int64)  # padded against false sharing
    cdef fixed_t[:, ::1] L = local
    if n:
        for t in prange(nt, nogil=True, schedule="static", num_threads=nt):
            lo = t * n // nt
            hi = (t + 1) * n // nt
            for i in range(lo, hi):
                h = stump_value(col[i], bin, <signed char> left, missing_left)
                L[t, 2 * cell[i] + (h != y[i])] += 1
    return local[:, : 2 * n_cells].sum(axis=0).reshape(n_cells, 2)


def move_rows(int[::1] cell, double[::1] margin, const bin_t[::1] col, const signed char[::1] y,
              int bin, int left, bint missing_left, const int[:, ::1] table, double coef):
    """``cell[i] = table[cell[i], h(x_i) != y_i]`` and ``margin[i] += coef * h(x_i)``.

    Returns the rows the updated ensemble ``sign(margin)`` (ties -> +1) gets wrong.
    """
    cdef idx_t n = cell.shape[0], i, t, nt
    cdef signed char h
    cdef double m
    if col.shape[0] != n or y.shape[0] != n or margin.shape[0] != n:
        raise ValueError("shape mismatch")
    if n == 0:
        return 0
    nt = max(1, min(mb_get_max_threads(), n // 16384))
    counts = np.zeros(8 * nt, dtype=np.int64)
    cdef fixed_t[::1] ct = counts
    for t in prange(nt, nogil=True, schedule="static", num_threads=nt):
        ct[8 * t] = _move_range(&cell[0], &margin[0], &col[0], &y[0], t * n // nt, (t + 1) * n // nt,
                                bin, <signed char> left, missing_left, table, coef)
    return int(counts.sum())


cdef fixed_t _move_range(int* cell, double* margin, const bin_t* col, const signed char* y, idx_t lo, idx_t hi,
                         int bin, signed char left, bint missing_left, const int[:, ::1] table,
                         double coef) noexcept nogil:
    cdef idx_t i
    cdef signed char h
    cdef double m
    cdef fixed_t errors = 0
    for i in range(lo, hi):
        h = stump_value(col[i], bin, left, missing_left)
        cell[i] = table[cell[i], h != y[i]]
        m = margin[i] + coef * h
        margin[i] = m
        errors += (1 if m >= 0 else -1) != y[i]
    return errors
