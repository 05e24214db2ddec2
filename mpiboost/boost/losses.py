"""Losses as objects: the one place that says what each loss is.

A :class:`Loss` says whether it is fitted by Newton trees (gradients and hessians of the scores) or by
reweighting (AdaBoost's exponential loss), how a model of it starts (its start scores from the global
class counts), its gradient and hessian kernel, and the link of its scores (:mod:`mpiboost.links`).
Algorithms ask :func:`loss_of` which loss they fit and :func:`grows_trees` whether their weak learner
is a tree.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..links import LINKS  # noqa: F401  (the links of the losses' models)

MIN_FRACTION = 1e-15  # a class absent from the training rows starts at log(1e-15), not -inf


@dataclass(frozen=True)
class Loss:
    """A loss boosting minimises (see the module docstring); one subclass per loss."""

    name: str
    newton: bool  # fitted by Newton trees (gradients and hessians); else by reweighting rows
    link: Optional[str]  # the link of its models' scores (:data:`mpiboost.links.LINKS`; None: votes)

    def start(self, counts: np.ndarray, total: float) -> np.ndarray:
        """The start scores of a model from the global class counts or weights (K = 1: the positives')."""
        raise ValueError(f"the {self.name} loss has no start scores")

    def units(self, F: np.ndarray, init: np.ndarray, target: np.ndarray, shift: int, gh: np.ndarray) -> None:
        """Fill ``gh`` with every row's gradient and hessian of the loss at scores ``F`` (+ ``init``), as
        fixed-point units of ``2**-shift`` (``target``: 0/1 labels for logistic, class indices for softmax)."""
        raise ValueError(f"the {self.name} loss has no gradient kernel")


class LogisticLoss(Loss):
    """The binary log-loss: ``p = sigmoid(F)``, ``g = p - y``, ``h = p (1 - p)``."""

    def start(self, counts: np.ndarray, total: int) -> np.ndarray:
        # the log-odds of the positives (LightGBM's boost_from_average)
        pos = min(max(float(counts[0]) / max(float(total), 1e-300), MIN_FRACTION), 1.0 - MIN_FRACTION)
        return np.array([math.log(pos / (1.0 - pos))])

    def units(self, F, init, target, shift, gh) -> None:
        from .._ext import _tree

        _tree.logistic_units(np.ascontiguousarray(F[:, 0]), float(init[0]), target, shift, gh)


class SoftmaxLoss(Loss):
    """The multiclass log-loss: ``p = softmax(F)``, ``g_k = p_k - [y = k]``, ``h_k = K/(K-1) p_k (1 - p_k)``."""

    def start(self, counts: np.ndarray, total: int) -> np.ndarray:
        # the log class frequencies
        return np.array([math.log(max(float(c) / max(float(total), 1e-300), MIN_FRACTION)) for c in counts])

    def units(self, F, init, target, shift, gh) -> None:
        from .._ext import _tree

        _tree.softmax_units(F, np.ascontiguousarray(init), target, shift, gh)


@dataclass(frozen=True)
class RegressionLoss(Loss):
    """A regression objective of numeric targets ``y`` and one score ``F`` a row (LightGBM's definitions).

    :meth:`gradients` gives every row's ``g`` and ``h`` at residual ``d = F - y``; ``renew``: the leaves of
    each tree are then set to the ``alpha`` percentile of their rows' residuals ``y - F``
    (:mod:`.percentile`), and the start is that percentile of the targets; else the start is the (weighted)
    mean of the targets. ``metric``: what the validation rows measure.
    """

    renew: bool = False
    metric: str = "rmse"

    def gradients(self, d: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
        """``(g, h)`` of every row at residuals ``d = F - y``."""
        if self.name == "regression":
            g = d
        elif self.name == "regression_l1":
            g = np.sign(d)
        elif self.name == "huber":
            g = np.clip(d, -alpha, alpha)  # LightGBM's: d inside [-alpha, alpha], else alpha with d's sign
        elif self.name == "quantile":
            g = np.where(d >= 0, 1.0 - alpha, -alpha)
        else:
            raise ValueError(f"the {self.name} loss has no gradient")
        return np.ascontiguousarray(g, dtype=np.float64), np.ones_like(d, dtype=np.float64)

    def leaf_alpha(self, alpha: float) -> float:
        """The percentile of the residuals a renewed leaf takes (0.5 for L1, ``alpha`` for quantile)."""
        return 0.5 if self.name == "regression_l1" else float(alpha)

    def loss(self, d: np.ndarray, alpha: float) -> np.ndarray:
        """Every row's loss at residual ``d = F - y`` (what :attr:`metric` averages)."""
        if self.metric == "rmse":
            return d * d
        if self.metric == "l1":
            return np.abs(d)
        if self.metric == "huber":
            a = np.abs(d)
            return np.where(a <= alpha, 0.5 * d * d, alpha * (a - 0.5 * alpha))
        # the pinball loss of quantile alpha: the residual y - F = -d
        return np.where(d <= 0, -alpha * d, (1.0 - alpha) * d)


EXPONENTIAL = Loss("exponential", newton=False, link=None)  # AdaBoost's: fitted by reweighting
LOGISTIC = LogisticLoss("logistic", newton=True, link="logistic")
SOFTMAX = SoftmaxLoss("softmax", newton=True, link="softmax")
LOSSES = {loss.name: loss for loss in (EXPONENTIAL, LOGISTIC, SOFTMAX)}
# the regression objectives, by LightGBM's names: squared error, absolute error, Huber, quantile
L2 = RegressionLoss("regression", newton=True, link=None, metric="rmse")
L1 = RegressionLoss("regression_l1", newton=True, link=None, renew=True, metric="l1")
HUBER = RegressionLoss("huber", newton=True, link=None, metric="huber")
QUANTILE = RegressionLoss("quantile", newton=True, link=None, renew=True, metric="quantile")
REGRESSION = {loss.name: loss for loss in (L2, L1, HUBER, QUANTILE)}
METRIC_NAMES = {"rmse": "RMSE", "l1": "MAE", "huber": "Huber loss", "quantile": "quantile loss"}  # as printed


def loss_of(params: dict, default: str = "exponential") -> Loss:
    """The loss an algorithm's resolved parameters name (``loss``; ``default`` where they name none)."""
    name = params.get("loss") or default
    if name not in LOSSES:
        raise ValueError(f"unknown loss {name!r}: one of {', '.join(LOSSES)}")
    return LOSSES[name]


def grows_trees(params: dict) -> bool:
    """Whether an algorithm's resolved parameters ask for trees as weak learners (else stumps)."""
    return params.get("weak_learner") == "tree"
