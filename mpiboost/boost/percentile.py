"""Percentiles of leaf residuals and of targets, by LightGBM's rule (its ``PercentileFun``).

The L1 and quantile objectives start from a percentile of the targets and set each leaf of a new tree to a
percentile of its rows' residuals ``y - F`` (LightGBM's ``RenewTreeOutput``), so these values match
LightGBM's on the same rows. Unweighted: with the ``n`` values in descending order ``d[0] >= d[1] >= ...``,
``p = (n - 1)(1 - alpha)``, ``pos = floor(p)``: ``d[pos] - (d[pos] - d[pos + 1]) (p - pos)`` (numpy's default
"linear" percentile, reached from the top). Weighted: the values in
ascending order with their cumulative weights ``c``; ``threshold = c[-1] alpha``; ``pos`` the first index with
``c[pos] > threshold`` (at most ``n - 1``); the value at ``pos`` if it is the first or last, else linear
interpolation between the values at ``pos - 1`` and ``pos`` (from ``c[pos - 1]`` to ``c[pos]``) where the
weight at ``pos`` is at least 1, else the value at ``pos - 1``. (Both rules were read off LightGBM 4's
outputs; ``tests/test_regression.py`` checks them against it.)
"""
from __future__ import annotations

from typing import Optional

import numpy as np


def percentile(values: np.ndarray, alpha: float, weight: Optional[np.ndarray] = None) -> float:
    """The ``alpha`` percentile of ``values`` (optionally weighted) by LightGBM's rule (module docstring)."""
    v = np.asarray(values, dtype=np.float64)
    n = v.shape[0]
    if n == 0:
        return 0.0
    if n == 1:
        return float(v[0])
    if weight is None:
        d = np.sort(v)[::-1]  # descending, as LightGBM reads it
        float_pos = (n - 1) * (1.0 - alpha)
        pos = int(float_pos)
        bias = float_pos - pos
        v1, v2 = d[pos], d[min(pos + 1, n - 1)]
        return float(v1 - (v1 - v2) * bias)
    order = np.argsort(v, kind="stable")
    a = v[order]
    cdf = np.cumsum(np.asarray(weight, dtype=np.float64)[order])  # sequential, as LightGBM's loop
    threshold = cdf[-1] * alpha
    pos = min(int(np.searchsorted(cdf, threshold, side="right")), n - 1)
    if pos == 0 or pos == n - 1:
        return float(a[pos])
    v1, v2 = a[pos - 1], a[pos]
    if cdf[pos] - cdf[pos - 1] >= 1.0:
        return float((threshold - cdf[pos - 1]) / (cdf[pos] - cdf[pos - 1]) * (v2 - v1) + v1)
    return float(v1)


def grouped_percentiles(values: np.ndarray, group: np.ndarray, n_groups: int, alpha: float,
                        weight: Optional[np.ndarray] = None) -> np.ndarray:
    """:func:`percentile` of the values of each group ``0 .. n_groups - 1`` (0 for an empty group)."""
    group = np.asarray(group, dtype=np.int64)
    order = np.argsort(group, kind="stable")  # each group's values in their row order (stable ties)
    bounds = np.searchsorted(group[order], np.arange(n_groups + 1))
    out = np.zeros(n_groups)
    for k in range(n_groups):
        idx = order[bounds[k]:bounds[k + 1]]
        if idx.size:
            out[k] = percentile(values[idx], alpha, None if weight is None else weight[idx])
    return out
