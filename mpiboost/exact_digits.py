"""Exact sums of doubles as integer digits, so that MPI's integer ``SUM`` adds them in O(log P).

A finite double is an integer multiple of ``2**-1074``. The exact sum of a
rank's terms (Shewchuk partials, say) is therefore an integer ``I`` in units of
``2**lo`` for any ``lo`` at or below the smallest unit among the terms. Cut
into base-``2**32`` digits, each of magnitude below ``2**32`` and carrying the
sign of ``I``, the digits of up to ``2**31`` ranks add in int64 without
overflow, in any order and any tree shape. The digit sums give the exact
global sum back as a Python integer, and one correctly rounded division turns
it into the double nearest to it: the same double :func:`math.fsum` gives on
all the terms together, bit for bit, however the terms were split over ranks.

A *window* ``(lo, n)`` says where the digits start and how many there are.
:data:`FULL` covers every double (67 digits); :func:`local_window` and
:func:`window_from_extents` give a narrower one agreed over the ranks with a
``MAX`` reduction of :func:`extents` (for many sums at once).
"""
from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

DIGIT_BITS = 32
LOWEST = -1074  # the unit of the smallest subnormal double
HIGHEST = 1025  # |exact sum of a rank's non-overlapping partials| < 2**1025
FULL = (LOWEST, -(-(HIGHEST - LOWEST + 1) // DIGIT_BITS))  # every double: 66 digits
EMPTY = -(1 << 20)  # extent of a sum with no nonzero term (below any exponent)


def _scaled(terms: Iterable[float], lo: int) -> int:
    """The exact sum of ``terms`` in units of ``2**lo`` (an integer; lo at or below every term's unit)."""
    total = 0
    for t in terms:
        num, den = float(t).as_integer_ratio()  # den = 2**k
        if num:
            shift = -lo - (den.bit_length() - 1)
            if shift < 0:
                raise ValueError(f"term {t!r} has a unit below 2**{lo}")
            total += num << shift
    return total


def to_digits(terms: Iterable[float], window: tuple = FULL) -> np.ndarray:
    """The digits (int64, little end first) of the exact sum of ``terms`` in ``window``.

    Raises
    ------
    ValueError
        A non-finite term, or a sum that does not fit the window.
    """
    lo, n = window
    total = _scaled(terms, lo)
    mag = abs(total)
    if mag.bit_length() > DIGIT_BITS * n:
        raise ValueError(f"an exact sum needs more than the {n} digits of its window")
    out = np.frombuffer(mag.to_bytes(4 * n, "little"), dtype="<u4").astype(np.int64)
    return -out if total < 0 else out


def from_digits(digits: Sequence[int], lo: int) -> float:
    """The double nearest (ties to even) to ``sum(digits[i] * 2**(32 i)) * 2**lo``, digits of any size.

    Raises
    ------
    OverflowError
        The sum is beyond the largest double (as :func:`math.fsum` does).
    """
    total = 0
    for i, d in enumerate(digits):
        if d:
            total += int(d) << (DIGIT_BITS * i)
    if lo < 0:
        return total / (1 << -lo)  # int / int is correctly rounded, subnormals included
    return float(total << lo)


def extents(terms: Sequence[float]) -> tuple[int, int]:
    """``(top, -unit)`` of a rank's terms: ``|sum| < 2**top`` and every term a multiple of ``2**unit``.

    Both are maximized over the ranks (one ``MAX`` reduction) to agree on a
    window; a sum with no nonzero term gives :data:`EMPTY` for both.
    """
    top = unit = None
    for t in terms:
        num, den = float(t).as_integer_ratio()
        if not num:
            continue
        k = den.bit_length() - 1
        top = max(top, abs(num).bit_length() - k) if top is not None else abs(num).bit_length() - k
        unit = min(unit, -k) if unit is not None else -k
    if top is None:
        return EMPTY, EMPTY
    # m terms below 2**top sum below 2**(top + bits of m)
    return top + len(terms).bit_length(), -unit


def window_from_extents(top: int, neg_unit: int) -> tuple[int, int]:
    """The window of one sum from its extents maximized over the ranks (at least one digit)."""
    if top == EMPTY:
        return 0, 1
    lo = -neg_unit
    return lo, max(1, -(-(top - lo) // DIGIT_BITS))

