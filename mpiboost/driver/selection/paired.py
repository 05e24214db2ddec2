"""Paired comparisons of two models on the same held-out rows: the rule every selection chooses by.

Two models scored on the same rows differ on few of them; the paired per-row differences of their 0/1 errors
measure the gain of one over the other with far less noise than two separate error rates. A selection keeps
its incumbent (the algorithm asked for, or the simplest use of the data) unless another model's mean gain is
positive and above ``SWITCH_SE`` standard errors of those differences: the one-standard-error rule of model
selection. All sums are exact integers, so every rank, on any number of ranks, chooses alike.
"""
from __future__ import annotations

import math
from typing import Optional, TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # annotations only
    from ...comm import Comm
    from ...data.load import Shard

# An alternative replaces the incumbent when its held-out gain exceeds this many standard errors of the paired
# per-row differences: a preference for the incumbent that matters at 10-20 held-out rows, where a gain of one
# row is noise (compared with 0, 0.5 and 1.5 on generated helpful, mixed, unrelated and adversarial sources
# at 10, 20 and 50 target rows: docs/results.md, "Source trust").
SWITCH_SE = 1.0


def row_outcomes(model, shard: Shard, rows: np.ndarray, cols: Optional[np.ndarray] = None,
                 scores: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(wrong 0/1, normalized margin ``y f(x) / sum |coef|``) of a binary ``model`` on this rank's ``rows``;
    with ``scores``, (wrong 0/1, the raw scores ``f(x)``) instead.

    ``cols``: those rows in the model's bins when they are not the shard's (a model of rows binned apart).
    """
    if not rows.size:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    cols = np.ascontiguousarray(shard.cols[:, rows]) if cols is None else cols
    y = np.asarray(shard.y[rows], dtype=np.float64)
    score = np.asarray(model.decision_binned(cols), dtype=np.float64)
    scale = float(np.abs(model.vote_coefficients()).sum()) or 1.0
    wrong = (np.where(score >= 0, 1.0, -1.0) != y).astype(np.int64)
    return (wrong, score) if scores else (wrong, y * score / scale)


def paired_gain(comm: Comm, base_wrong: np.ndarray, wrong: np.ndarray, n: int,
                weight: Optional[np.ndarray] = None) -> dict:
    """Collective: the paired comparison of ``wrong`` against ``base_wrong`` on the same held-out rows.

    Parameters
    ----------
    comm : Comm
        The job's communicator.
    base_wrong, wrong : numpy.ndarray
        int64, this rank's 0/1 errors of the incumbent and of the other model on the same held-out rows.
    n : int
        The held-out rows of all ranks.
    weight : numpy.ndarray, optional
        This rank's weights of those rows: ``gain`` and ``se`` are then by the weights
        (:func:`weighted_gain`), the counts kept beside them.

    The gain is the mean of the paired differences ``base_wrong - wrong`` (+1 where The gain is the mean of the paired differences ``base_wrong - wrong`` (+1 where
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
    out = {"errors": int(sums[0]), "differ": int(sums[2]), "gain": gain, "se": se}
    if weight is not None:
        out.update(weighted_gain(comm, base_wrong, wrong, weight))
    return out


def row_weights(comm: Comm, shard: Shard, rows: Optional[np.ndarray] = None) -> Optional[np.ndarray]:
    """Collective: this rank's sample weights of ``shard``'s ``rows`` (every row if None) where the data has
    weights on some rank (ones on a rank without), else None: the ``weight`` of :func:`paired_gain`.

    Parameters
    ----------
    comm : Comm
        The job's communicator.
    shard : Shard
        This rank's held-out rows (or the rows ``rows`` index).
    rows : numpy.ndarray, optional
        Indices into ``shard``'s rows.

    Returns
    -------
    numpy.ndarray or None
        float64 weights, one per row.
    """
    if count(comm, np.array([shard.weight is not None], dtype=np.int64)) == 0:
        return None
    n = shard.n_local if rows is None else rows.size
    if shard.weight is None:
        return np.ones(n)
    w = np.asarray(shard.weight, dtype=np.float64)
    return w if rows is None else w[rows]


def weighted_gain(comm: Comm, base_wrong: np.ndarray, wrong: np.ndarray, weight: np.ndarray) -> dict:
    """Collective: :func:`paired_gain` with each row counted ``weight`` times (the rows' sample weights).

    The gain is the weighted mean of the paired differences, ``sum w d / sum w``, and its standard error the
    sandwich estimate ``sqrt(sum w^2 (d - gain)^2) / sum w`` (with equal weights, the unweighted one but for
    the factor ``sqrt((n - 1) / n)``). Every sum is correctly rounded from exact per-rank terms, so the result
    is the same on any number of ranks.

    Parameters
    ----------
    comm : Comm
        The job's communicator.
    base_wrong, wrong : numpy.ndarray
        int64, this rank's 0/1 errors of the incumbent and of the other model on the same held-out rows.
    weight : numpy.ndarray
        float64, those rows' weights (>= 0).

    Returns
    -------
    dict
        ``weighted_errors`` (``sum w wrong``), ``weight`` (``sum w``), and ``gain`` and ``se`` by the weights.
    """
    errors, total, gain, se, _ = _weighted_sums(comm, base_wrong, wrong, np.ascontiguousarray(weight, dtype=np.float64))
    return {"weighted_errors": errors, "weight": total, "gain": gain, "se": se}


def _weighted_sums(comm: Comm, base: np.ndarray, other: np.ndarray, w: np.ndarray) -> tuple:
    """Collective: ``sum w other``, ``sum w``, the weighted mean gain ``sum w (base - other) / sum w``, its
    sandwich standard error ``sqrt(sum w^2 (d - gain)^2) / sum w``, and the plain one (the sample variance
    over ``n - 1``, taking ``sum w`` for ``n``: right for weights of 1), each sum correctly rounded from
    exact per-rank terms."""
    from ..._ext import _exact

    d = (np.asarray(base, dtype=np.float64) - np.asarray(other, dtype=np.float64))
    terms = [w * other, w, w * d, w * w * d * d, w * w * d, w * w]
    value, total, wd, w2d2, w2d, w2 = (float(v) for v in comm.sum_terms(
        [_exact.partials(np.ascontiguousarray(t, dtype=np.float64)) for t in terms]))
    if total <= 0.0:
        return value, total, 0.0, 0.0, 0.0
    gain = wd / total
    sandwich = math.sqrt(max(w2d2 - 2.0 * gain * w2d + gain * gain * w2, 0.0)) / total
    plain = math.sqrt(max(w2d2 - wd * wd / total, 0.0) / max(total - 1.0, 1.0) / total)
    return value, total, gain, sandwich, plain


def gain_and_se(total: int, squares: int, n: int) -> tuple[float, float]:
    """The mean of ``n`` paired differences of sum ``total`` and sum of squares ``squares``, and its standard
    error (the sample variance over ``n - 1``)."""
    gain = total / n
    var = max(squares - total ** 2 / n, 0.0) / max(n - 1, 1)
    return gain, math.sqrt(var / n)


def paired_loss(comm: Comm, base_loss: np.ndarray, loss: np.ndarray,
                weight: Optional[np.ndarray] = None) -> dict:
    """Collective: the paired comparison of two models' per-row losses (log-loss) on the same held-out rows.

    Parameters
    ----------
    comm : Comm
        The job's communicator.
    base_loss, loss : numpy.ndarray
        float64, this rank's per-row losses of the incumbent and of the other model.
    weight : numpy.ndarray, optional
        This rank's weights of those rows: every mean is then weighted, and the standard error the sandwich
        one of :func:`weighted_gain`.

    The gain is the mean of ``base_loss - loss`` (positive where the other model's loss is lower), its standard
    error that of a mean of paired differences (the sample variance over ``n - 1``). Every sum is correctly
    rounded from exact per-rank terms: the same on any number of ranks.

    Returns
    -------
    dict
        ``loss`` (the other model's mean loss), ``gain`` and ``se``.
    """
    loss = np.asarray(loss, dtype=np.float64)
    w = np.ones(loss.size) if weight is None else np.ascontiguousarray(weight, dtype=np.float64)
    value, total, gain, sandwich, plain = _weighted_sums(comm, base_loss, loss, w)
    if total <= 0.0:
        return {"loss": 0.0, "gain": 0.0, "se": 0.0}
    # n rows of weight 1: the plain standard error of a mean, as paired_gain's
    return {"loss": value / total, "gain": gain, "se": plain if weight is None else sandwich}


def scores(model, shard: Shard) -> np.ndarray:
    """``model``'s scores of this rank's rows of ``shard`` (its raw rows for a domain classifier, its tasks for a
    task model)."""
    if not shard.n_local:
        return np.zeros(0)
    return np.asarray(model.decision_binned(shard.cols, shard.X if model.needs_raw else None,
                                            shard.domain if model.takes_task else None), dtype=np.float64)


def _placements(pos: np.ndarray, neg: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """DeLong's structural components: for each positive, the share of negatives it outscores (ties count
    half); for each negative, the share of positives that outscore it. Their means are the AUC."""
    from scipy.stats import rankdata

    m, n = pos.size, neg.size
    both = rankdata(np.concatenate([pos, neg]))
    v10 = (both[:m] - rankdata(pos)) / n
    v01 = 1.0 - (both[m:] - rankdata(neg)) / m
    return v10, v01


def _weighted_placements(pos: np.ndarray, neg: np.ndarray, wp: np.ndarray, wn: np.ndarray
                         ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_placements` with each row counted its weight: for each positive, the weighted share of negatives
    it outscores (ties count half); for each negative, the weighted share of positives that outscore it."""
    order = np.argsort(neg, kind="stable")
    ns, cw = neg[order], np.concatenate([[0.0], np.cumsum(wn[order])])
    below, at_or_below = cw[np.searchsorted(ns, pos, "left")], cw[np.searchsorted(ns, pos, "right")]
    v10 = (below + 0.5 * (at_or_below - below)) / cw[-1]
    order = np.argsort(pos, kind="stable")
    ps, cw = pos[order], np.concatenate([[0.0], np.cumsum(wp[order])])
    # the weight of the positives at or below each negative's score, and strictly below it
    at_or_below, below = cw[np.searchsorted(ps, neg, "right")], cw[np.searchsorted(ps, neg, "left")]
    v01 = (cw[-1] - at_or_below + 0.5 * (at_or_below - below)) / cw[-1]
    return v10, v01


def auc_difference(y: np.ndarray, task: Optional[np.ndarray], base: np.ndarray, other: np.ndarray,
                   weight: Optional[np.ndarray] = None) -> tuple[float, float]:
    """The AUC of ``other`` scores minus that of ``base`` on the same rows, and its standard error (DeLong,
    DeLong & Clarke-Pearson 1988: the two AUCs' covariance from their structural components).

    With ``task``, the AUC is the mean over the tasks of each task's AUC (a task of one class counts 0.5 for
    both, no difference), and the tasks' differences are independent: the variance is their sum over K^2.

    With ``weight`` (the rows' sample weights), each AUC is the weighted one, ``sum_ij w_i w_j [s_i > s_j] /
    (W+ W-)`` over positives i and negatives j (ties half), as the run's validation AUC, and the variance the
    weighted form of DeLong's: ``sum_i w_i^2 (D_i - d)^2 / W+^2 + sum_j w_j^2 (D_j - d)^2 / W-^2``, with
    ``D`` the rows' paired differences of the structural components and ``d`` the AUC difference (with equal
    weights, DeLong's but for the factors ``(m - 1) / m`` and ``(n - 1) / n`` of the two sums).
    """
    y = np.asarray(y) > 0
    groups = [np.ones(y.size, dtype=bool)] if task is None else [task == k for k in np.unique(task)]
    total, var = 0.0, 0.0
    for g in groups:
        pos, neg = g & y, g & ~y
        m, n = int(pos.sum()), int(neg.sum())
        if m == 0 or n == 0:
            continue
        if weight is not None:
            wp, wn = np.asarray(weight, dtype=np.float64)[pos], np.asarray(weight, dtype=np.float64)[neg]
            W1, W0 = float(wp.sum()), float(wn.sum())
            if W1 <= 0.0 or W0 <= 0.0:
                continue
            a10, a01 = _weighted_placements(base[pos], base[neg], wp, wn)
            b10, b01 = _weighted_placements(other[pos], other[neg], wp, wn)
            d10, d01 = b10 - a10, b01 - a01
            gain = float(wp @ d10) / W1
            total += gain
            var += float(wp ** 2 @ (d10 - gain) ** 2) / W1 ** 2 + float(wn ** 2 @ (d01 - gain) ** 2) / W0 ** 2
            continue
        a10, a01 = _placements(base[pos], base[neg])
        b10, b01 = _placements(other[pos], other[neg])
        total += float(b10.mean() - a10.mean())
        d10, d01 = b10 - a10, b01 - a01  # the variance of a difference: that of the paired components
        var += (float(np.var(d10, ddof=1)) if m > 1 else 0.0) / m + (float(np.var(d01, ddof=1)) if n > 1 else 0.0) / n
    k = max(len(groups), 1)
    return total / k, math.sqrt(var) / k


def paired_auc(comm: Comm, y: np.ndarray, task: Optional[np.ndarray], base: np.ndarray, other: np.ndarray,
               weight: Optional[np.ndarray] = None) -> tuple[float, float]:
    """Collective: :func:`auc_difference` of every rank's rows (the center gathers them in the global row
    order, computes, and sends the two numbers): the same on any number of ranks.

    Parameters
    ----------
    comm : Comm
        The job's communicator.
    y : numpy.ndarray
        This rank's labels (-1/+1) of the held-out rows.
    task : numpy.ndarray or None
        Their tasks: the AUC is then the mean over the tasks.
    base, other : numpy.ndarray
        The two models' scores of those rows.
    weight : numpy.ndarray, optional
        Their sample weights (:func:`row_weights`): the weighted AUCs.

    Returns
    -------
    tuple of float
        The AUC of ``other`` minus that of ``base``, and its standard error.
    """
    parts = [comm.gatherv(np.ascontiguousarray(a)) for a in
             (np.asarray(y, dtype=np.int64), np.zeros(0, dtype=np.int64) if task is None else
              np.asarray(task, dtype=np.int64), np.asarray(base, dtype=np.float64),
              np.asarray(other, dtype=np.float64),
              np.zeros(0) if weight is None else np.asarray(weight, dtype=np.float64))]
    out = None
    if comm.is_center:
        yy, tt, a, b, w = parts
        out = auc_difference(yy, None if task is None else tt, a, b, None if weight is None else w)
    return tuple(comm.bcast(out))


def switches(gain: float, se: float) -> bool:
    """Whether a mean paired ``gain`` over the incumbent, of standard error ``se``, replaces it."""
    return gain > 0 and gain > SWITCH_SE * se


def count(comm: Comm, values: np.ndarray) -> int:
    """Collective: the sum of this rank's integer ``values`` over every rank.

    Parameters
    ----------
    comm : Comm
        The job's communicator.
    values : numpy.ndarray
        This rank's integers.

    Returns
    -------
    int
        Their sum over every rank (exact).
    """
    return int(comm.allreduce_int(np.array([int(np.sum(values))], dtype=np.int64))[0])


__all__ = ["SWITCH_SE", "auc_difference", "count", "gain_and_se", "paired_auc", "paired_gain", "paired_loss",
           "row_outcomes", "row_weights", "scores", "switches", "weighted_gain"]
