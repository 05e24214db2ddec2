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


EXPONENTIAL = Loss("exponential", newton=False, link=None)  # AdaBoost's: fitted by reweighting
LOGISTIC = LogisticLoss("logistic", newton=True, link="logistic")
SOFTMAX = SoftmaxLoss("softmax", newton=True, link="softmax")
LOSSES = {loss.name: loss for loss in (EXPONENTIAL, LOGISTIC, SOFTMAX)}


def loss_of(params: dict, default: str = "exponential") -> Loss:
    """The loss an algorithm's resolved parameters name (``loss``; ``default`` where they name none)."""
    name = params.get("loss") or default
    if name not in LOSSES:
        raise ValueError(f"unknown loss {name!r}: one of {', '.join(LOSSES)}")
    return LOSSES[name]


def grows_trees(params: dict) -> bool:
    """Whether an algorithm's resolved parameters ask for trees as weak learners (else stumps)."""
    return params.get("weak_learner") == "tree"
