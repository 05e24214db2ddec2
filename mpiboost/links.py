"""Links: how a model's scores become class probabilities, one object per link.

The model (``predict_proba``) and the LightGBM export read them from :data:`LINKS`; the losses
(:mod:`mpiboost.boost.losses`) name the link of their models.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Link(ABC):
    """How scores become probabilities (one subclass per link)."""

    name: str

    @abstractmethod
    def proba(self, score: np.ndarray) -> np.ndarray:
        """Class probabilities (n, K) of a model's scores."""

    @abstractmethod
    def lightgbm_objective(self, n_classes: int) -> str:
        """The objective line of a LightGBM model file whose raw scores are these."""


class LogisticLink(Link):
    """Binary: the score is the log-odds of the positive class."""

    def proba(self, score: np.ndarray) -> np.ndarray:
        score = score[:, 0] if score.ndim == 2 else score
        p1 = 0.5 * (1.0 + np.tanh(0.5 * score))  # the sigmoid without overflow
        return np.stack([1.0 - p1, p1], axis=1)

    def lightgbm_objective(self, n_classes: int) -> str:
        return "binary sigmoid:1"


class SoftmaxLink(Link):
    """K classes: the scores are log-probabilities up to a constant."""

    def proba(self, score: np.ndarray) -> np.ndarray:
        z = score - score.max(axis=1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=1, keepdims=True)

    def lightgbm_objective(self, n_classes: int) -> str:
        return f"multiclass num_class:{n_classes}"


class ExponentialLink(Link):
    """Binary votes of the exponential loss (AdaBoost): the loss is least at ``F = log(p / (1 - p)) / 2``
    (Friedman, Hastie & Tibshirani 2000), so ``p = sigmoid(2 F)``: LightGBM's ``sigmoid:2``."""

    def proba(self, score: np.ndarray) -> np.ndarray:
        return LINKS["logistic"].proba(2.0 * (score[:, 0] if score.ndim == 2 else score))

    def lightgbm_objective(self, n_classes: int) -> str:
        return "binary sigmoid:2"


class SammeLink(Link):
    """K-class votes of SAMME's multiclass exponential loss: ``p_k`` proportional to ``exp(F_k / (K - 1))``
    (Zhu, Zou, Rosset & Hastie 2009; scikit-learn's ``AdaBoostClassifier`` scales its votes alike)."""

    def proba(self, score: np.ndarray) -> np.ndarray:
        return LINKS["softmax"].proba(score / max(score.shape[1] - 1, 1))

    def lightgbm_objective(self, n_classes: int) -> str:
        return f"multiclass num_class:{n_classes}"


LINKS = {"logistic": LogisticLink("logistic"), "softmax": SoftmaxLink("softmax")}
# links of votes, used by predict_proba only (a model's stored link stays None: its scores are votes)
VOTE_LINKS = {"exponential": ExponentialLink("exponential"), "samme": SammeLink("samme")}
