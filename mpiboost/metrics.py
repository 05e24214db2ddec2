"""Ranking metrics computed where the rows' scores are gathered (the center), the same for any split of the rows."""
from __future__ import annotations

import math
from typing import Optional

import numpy as np


def auc(scores: np.ndarray, y: np.ndarray, weight: Optional[np.ndarray] = None) -> Optional[float]:
    """Area under the ROC curve of ``scores`` for labels ``y`` (> 0 positive): the Mann-Whitney statistic, a
    tied (positive, negative) pair counting one half; with ``weight``, each pair counts ``w_pos w_neg``
    (scikit-learn's ``roc_auc_score(sample_weight=)``). None where one class has no (weight of) rows.

    The pairs are counted per distinct score: each positive weight times the negative weight below it (plus
    half of that at its score), summed with :func:`math.fsum`; with unit weights every sum is an exact integer,
    so the value is the correctly rounded ``U / (n_pos n_neg)``.
    """
    scores = np.asarray(scores, dtype=np.float64)
    pos = np.asarray(y) > 0
    w = np.ones(scores.shape[0]) if weight is None else np.asarray(weight, dtype=np.float64)
    w_pos, w_neg = math.fsum(w[pos]), math.fsum(w[~pos])
    if not (w_pos > 0 and w_neg > 0):
        return None
    _, inv = np.unique(scores, return_inverse=True)
    at_pos = np.bincount(inv, weights=np.where(pos, w, 0.0))
    at_neg = np.bincount(inv, weights=np.where(pos, 0.0, w))
    below = np.cumsum(at_neg) - at_neg
    return float(math.fsum(at_pos * (below + 0.5 * at_neg)) / (w_pos * w_neg))
