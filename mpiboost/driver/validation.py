"""Validation rows: the held-out split (the same rows on any number of ranks), the metrics, the option checks."""
from __future__ import annotations

import os
from typing import Optional, Sequence, TYPE_CHECKING

import numpy as np

from .. import boost, metrics
from ..data.load import Shard
from ..errors import CollectiveError
from .algorithm import auto_params

if TYPE_CHECKING:  # annotations only
    from ..model import Scorer
    from ..protocol import Protocol
    from .inputs import Inputs


MAX_VALID_FRACTION = 0.5  # beyond this the validation part outgrows the rows the model is trained on


REGRESSION_METRICS = ("rmse", "l1", "huber", "quantile")  # the regression objectives' (boost.losses)
CLASS_METRICS = ("error", "auc", "logloss")
VALID_METRICS = (*CLASS_METRICS, *REGRESSION_METRICS)
# a probability below this counts as this (LightGBM's binary_logloss and multi_logloss clip alike), so one row
# the model is sure of and wrong about costs -log(1e-15) = 34.5, not infinity
LOGLOSS_FLOOR = 1e-15


def auc(scores: np.ndarray, y: np.ndarray, weight: Optional[np.ndarray] = None) -> float:
    """:func:`mpiboost.metrics.auc`, 0.5 where one class is absent (no ranking to judge)."""
    value = metrics.auc(scores, y, weight)
    return 0.5 if value is None else value


def _valid_auc_loss(scorer: Scorer, vshard: Shard, proto: Protocol) -> float:
    """Collective: 1 - AUC of the validation rows (a task model: the mean over its tasks), the same on every
    rank: the center gathers the rows' scores in the global row order, computes it, and sends the one value.
    The labels and tasks do not change between rounds: they are gathered once."""
    comm = proto.comm
    if not hasattr(scorer, "_auc_rows"):
        y = comm.gatherv(np.ascontiguousarray(vshard.y, dtype=np.int64))
        task = comm.gatherv(np.ascontiguousarray(vshard.domain, dtype=np.int64)) \
            if scorer.model.takes_task else None
        # the files' sample weights: the weighted AUC, as LightGBM weighs its metrics
        w = None if vshard.weight is None else comm.gatherv(np.ascontiguousarray(vshard.weight, dtype=np.float64))
        scorer._auc_rows = (y, task, w)
    scores = comm.gatherv(np.ascontiguousarray(scorer.scores, dtype=np.float64))
    loss = None
    if comm.is_center:
        y, task, w = scorer._auc_rows
        if task is None:
            loss = 1.0 - auc(scores, y, w)
        else:
            values = [auc(scores[task == k], y[task == k], None if w is None else w[task == k])
                      for k in np.unique(task)]
            loss = 1.0 - float(np.mean(values)) if values else 0.5
    return float(comm.bcast(loss))


def row_logloss(model, score: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Each row's log-loss ``-log p(y | x)`` under ``model``'s probabilities of its scores
    (:meth:`mpiboost.model.Model.proba_of_scores`: the link of its loss, or ``sigmoid(2 F)`` of an
    exponential-loss vote), ``p`` floored at :data:`LOGLOSS_FLOOR`.

    Parameters
    ----------
    model : Model
        A classifier.
    score : numpy.ndarray
        Its scores of the rows (``decision_binned``'s, or a :class:`~mpiboost.model.Scorer`'s).
    y : numpy.ndarray
        The rows' labels in internal codes: -1/+1 for a model of signs, class indices for a model of K scores.
    """
    y = np.asarray(y)
    if not y.size:
        return np.zeros(0)
    p = model.proba_of_scores(np.asarray(score, dtype=np.float64))
    if model.output == "argmax":
        k = y.astype(np.int64)
    else:
        k = (y > 0).astype(np.int64)  # column 1 is the positive class
    # a class the model does not know (-1; 0 for a model of signs) has no probability: the floor's loss
    known = (k >= 0) & (k < p.shape[1]) if model.output == "argmax" else y != 0
    got = p[np.arange(y.size), np.where(known, k, 0)]
    return -np.log(np.maximum(np.where(known, got, 0.0), LOGLOSS_FLOOR))


def _valid_logloss(scorer: Scorer, vshard: Shard, proto: Protocol) -> float:
    """Collective: the validation log-loss, ``sum(w l) / sum(w)`` over the rows (``w``: the rows' sample
    weights, else 1; a task model: the mean over its tasks), from correctly rounded sums: the same on any
    number of ranks."""
    y = np.asarray(vshard.y)
    if scorer.model.output != "argmax":
        y = scorer._signed(y)
    loss = row_logloss(scorer.model, scorer.scores, y)
    w = np.ones(loss.size) if vshard.weight is None else np.asarray(vshard.weight, dtype=np.float64)
    J = (len(scorer.model.domain_names or []) or 1) if scorer.model.takes_task else 1
    task = np.asarray(vshard.domain, dtype=np.int32) if J > 1 else np.zeros(w.size, dtype=np.int32)
    sums = proto.reduce_stats(np.concatenate([w * loss, w]), np.concatenate([task, task + J]), 2 * J)
    total, weight = sums[:J], sums[J:]
    has = weight > 0
    return float(np.mean(total[has] / weight[has])) if has.any() else 0.0


def _valid_error(scorer: Optional[Scorer], vshard: Optional[Shard], proto: Protocol) -> Optional[float]:
    """Collective: the validation error of the model so far (None without validation data).

    A model with one ensemble per task is judged by the mean of its tasks'
    errors (every task counts alike, however many validation rows it has);
    other models by the error over all validation rows. The scorer's ``metric`` may ask for another measure,
    lower being better alike: ``"auc"`` (1 - AUC), ``"logloss"``, or a regression's.
    """
    if scorer is None:
        return None
    scorer.update()
    if scorer.model.is_regression:
        from ..boost.regression import regression_metric

        alpha = float((scorer.model.params or {}).get("alpha") or 0.9)
        return regression_metric(proto, scorer.metric, scorer.scores - vshard.y, alpha, vshard.weight,
                                 int(vshard.n_global))
    if getattr(scorer, "metric", "error") == "auc":
        return _valid_auc_loss(scorer, vshard, proto)
    if getattr(scorer, "metric", "error") == "logloss":
        return _valid_logloss(scorer, vshard, proto)
    if vshard.weight is not None:
        return _weighted_error(scorer, vshard, proto)
    if scorer.model.takes_task:
        J = len(scorer.model.domain_names or []) or 1  # the model's tasks: the same on every rank
        task = np.asarray(vshard.domain, dtype=np.int64)
        local = np.concatenate([scorer.errors_by_group(vshard.y, task, J), np.bincount(task, minlength=J)])
        counts = proto.reduce_counts(local.astype(np.int64))
        wrong, rows = counts[:J], counts[J:]
        has = rows > 0
        return float(np.mean(wrong[has] / rows[has])) if has.any() else 0.0
    wrong = scorer.errors(vshard.y)
    return proto.reduce_counts(np.array([wrong]))[0] / vshard.n_global


def _weighted_error(scorer: Scorer, vshard: Shard, proto: Protocol) -> float:
    """Collective: the weighted validation error, sum(w [wrong]) / sum(w) from exact sums (a task model: the
    mean of its tasks' weighted errors), as LightGBM weighs its metrics by a validation set's weights."""
    w = np.asarray(vshard.weight, dtype=np.float64)
    wrong = scorer.wrong(vshard.y)
    J = (len(scorer.model.domain_names or []) or 1) if scorer.model.takes_task else 1
    task = np.asarray(vshard.domain, dtype=np.int32) if J > 1 else np.zeros(w.size, dtype=np.int32)
    sums = proto.reduce_stats(np.concatenate([np.where(wrong, w, 0.0), w]), np.concatenate([task, task + J]),
                              2 * J)
    bad, total = sums[:J], sums[J:]
    has = total > 0
    return float(np.mean(bad[has] / total[has])) if has.any() else 0.0


def resolve_metric(valid_metric: str, shard: Shard, algo) -> str:
    """The validation metric of a run: a regression run's "error" is its objective's metric (RMSE for
    squared error, L1, Huber, quantile), and only regression runs take those (CollectiveError otherwise)."""
    if shard.regression:
        if valid_metric == "error":
            from ..boost.losses import REGRESSION

            return REGRESSION[algo.params["objective"]].metric
        if valid_metric not in REGRESSION_METRICS:
            raise CollectiveError(f"--valid-metric {valid_metric} scores classes; a regression run takes "
                                  f"{', '.join(REGRESSION_METRICS)}")
    elif valid_metric in REGRESSION_METRICS:
        raise CollectiveError(f"--valid-metric {valid_metric} scores numeric targets; a classifier takes "
                              f"{', '.join(CLASS_METRICS)}")
    return valid_metric


def check_validation(algorithm: str, params: Optional[dict], *, valid: Optional[Sequence[str]],
                     valid_fraction: Optional[float], best_round: bool, patience: Optional[int]) -> None:
    """The validation options agree with each other (CollectiveError naming them; no data needed)."""
    if valid_fraction is not None:
        if not 0 < valid_fraction <= MAX_VALID_FRACTION:
            raise CollectiveError(f"--valid-fraction must be in (0, {MAX_VALID_FRACTION}], got {valid_fraction}")
        if valid:
            raise CollectiveError("give either --valid FILE or --valid-fraction F, not both")
        one = [k for k in ("train_domain", "target_domain") if (params or {}).get(k) is not None]
        if one:
            raise CollectiveError("--valid-fraction holds out rows of every domain, but this run trains on one "
                                  "(--target or --train-domain): give --valid with rows of that domain")
    has_valid = bool(valid) or valid_fraction is not None
    if patience is not None and patience < 1:
        raise CollectiveError(f"--early-stop must be at least 1 round, got {patience}")
    if (best_round or patience is not None) and not has_valid:
        flag = "--best-round" if best_round else "--early-stop"
        raise CollectiveError(f"{flag} chooses by validation error: give --valid FILE or --valid-fraction F")
    if (best_round or patience is not None) and not boost.get(algorithm).curve_scores_model:
        # The per-round validation error scores the plain sum of the stored stumps; such a model's vote is
        # not that sum, so a round chosen on it would not be the model kept.
        flag = "--best-round" if best_round else "--early-stop"
        raise CollectiveError(f"{flag} is not available for {algorithm}: its final vote depends on every round "
                              "trained, so the validation curve of the rounds does not score the model kept")
    cls = boost.get(algorithm)
    for p in cls.parameters:  # a grid of values given for a parameter that is not "auto" would be ignored
        given = (params or {}).get(p.name + "_grid") if p.grid and cls.has(p.name + "_grid") else None
        if given is not None and (params or {}).get(p.name) != "auto":
            raise CollectiveError(f"{cls.declared(p.name + '_grid').flag} applies only with {p.flag} auto")
    auto = auto_params(algorithm, params)
    if auto and not has_valid:
        cls = boost.get(algorithm)
        flags = ", ".join(f"{cls.declared(k).flag} auto" for k in auto)
        raise CollectiveError(f"{flags} chooses by validation error: give --valid FILE or --valid-fraction F")


def _validation_source(valid: Optional[Sequence[str]], valid_fraction: Optional[float], inputs: Inputs) -> dict:
    if valid_fraction:
        return {"fraction": float(valid_fraction), "rule": "stratified by (domain, class), systematic on the "
                "global row order with a seeded offset", "n_valid": int(inputs.valid.n_global)}
    return {"files": [os.path.basename(str(getattr(f, "path", f))) for f in valid or ()],  # in memory: "<arrays>"
            "n_valid": int(inputs.valid.n_global)}
