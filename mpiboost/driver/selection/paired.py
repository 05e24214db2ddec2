"""Paired comparisons of two models on the same held-out rows: the rule every selection chooses by.

Two models scored on the same rows differ on few of them; the paired per-row differences of their 0/1 errors
measure the gain of one over the other with far less noise than two separate error rates. A selection keeps
its incumbent (the algorithm asked for, or the simplest use of the data) unless another model's mean gain is
positive and above ``SWITCH_SE`` standard errors of those differences: the one-standard-error rule of model
selection. All sums are exact integers, so every rank, on any number of ranks, chooses alike.
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

# An alternative replaces the incumbent when its held-out gain exceeds this many standard errors of the paired
# per-row differences: a preference for the incumbent that matters at 10-20 held-out rows, where a gain of one
# row is noise (compared with 0, 0.5 and 1.5 on generated helpful, mixed, unrelated and adversarial sources
# at 10, 20 and 50 target rows: docs/results.md, "Source trust").
SWITCH_SE = 1.0


def row_outcomes(model, shard, rows: np.ndarray, cols: Optional[np.ndarray] = None) -> tuple[np.ndarray, np.ndarray]:
    """(wrong 0/1, normalized margin ``y f(x) / sum |coef|``) of a binary ``model`` on this rank's ``rows``.

    ``cols``: those rows in the model's bins when they are not the shard's (a model of rows binned apart).
    """
    if not rows.size:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    cols = np.ascontiguousarray(shard.cols[:, rows]) if cols is None else cols
    y = np.asarray(shard.y[rows], dtype=np.float64)
    score = np.asarray(model.decision_binned(cols), dtype=np.float64)
    scale = float(np.abs(model.vote_coefficients()).sum()) or 1.0
    wrong = (np.where(score >= 0, 1.0, -1.0) != y).astype(np.int64)
    return wrong, y * score / scale


def paired_gain(comm, base_wrong: np.ndarray, wrong: np.ndarray, n: int) -> dict:
    """Collective: the paired comparison of ``wrong`` against ``base_wrong`` on the same held-out rows.

    ``base_wrong`` and ``wrong`` are this rank's 0/1 errors of two models on the same held-out rows; ``n`` the
    held-out rows of all ranks. The gain is the mean of the paired differences ``base_wrong - wrong`` (+1 where
    the second model is right and the first wrong), from exact integer sums: the same on any number of ranks.

    Returns
    -------
    dict
        ``errors`` (of ``wrong``), ``differ`` (the rows where one model is right and the other wrong: the sum
        of the squared differences), ``gain`` (their mean) and ``se`` (its standard error). The two counts and
        ``n`` with the incumbent's errors determine the rest (:func:`gain_and_se`).
    """
    d = base_wrong - wrong
    sums = comm.allreduce_int(np.array([wrong.sum(), d.sum(), (d * d).sum()], dtype=np.int64))
    gain, se = gain_and_se(int(sums[1]), int(sums[2]), n)
    return {"errors": int(sums[0]), "differ": int(sums[2]), "gain": gain, "se": se}


def gain_and_se(total: int, squares: int, n: int) -> tuple[float, float]:
    """The mean of ``n`` paired differences of sum ``total`` and sum of squares ``squares``, and its standard
    error (the sample variance over ``n - 1``)."""
    gain = total / n
    var = max(squares - total ** 2 / n, 0.0) / max(n - 1, 1)
    return gain, math.sqrt(var / n)


def switches(gain: float, se: float) -> bool:
    """Whether a mean paired ``gain`` over the incumbent, of standard error ``se``, replaces it."""
    return gain > 0 and gain > SWITCH_SE * se


def count(comm, values: np.ndarray) -> int:
    """Collective: the sum of this rank's integer ``values`` over every rank."""
    return int(comm.allreduce_int(np.array([int(np.sum(values))], dtype=np.int64))[0])


__all__ = ["SWITCH_SE", "count", "gain_and_se", "paired_gain", "row_outcomes", "switches"]
