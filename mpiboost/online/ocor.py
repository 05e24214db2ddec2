"""The OCO-based realizable online booster (Appendix B of the paper on online agnostic multiclass boosting).

Prediction, the same projected vote as :mod:`.agnostic`: the vote counts v
of the N learners' classes give ``D = proj(v / (gamma N))`` (Euclidean
projection onto the simplex).

Update, for the revealed label y: a scalar ``p`` starts at 1/2 for every
example; for learner i = 1..N in order, learner i learns ``(x, y)`` (weight
1) with probability ``p_i``, the value of ``p`` *before* its own step (a draw
``u_i < p_i`` with the example's uniforms, :class:`.base.StreamRandom`), then

    g_i = (2 [l_i = y] - 1) / gamma - 1,   p <- clip_[0, 1](p - eta g_i),
    eta = 1 / ((1 + 1 / gamma) sqrt(N)),

so a right learner lowers the next learner's chance to learn the example and
a wrong one raises it. The booster keeps no state across examples.

Resolutions against the authors' code (algorithms/OCORealizableBoost.py and
onlineGradientDescentRealizable.py of their repository):

* their step size is ``1 / ((1 + 1/gamma) sqrt(100))``, the number of
  learners of their runs written in; here ``sqrt(N)`` (the same at N = 100);
* their learner's class is the argmax of its class probabilities with ties
  broken at random; the NBA learners here break ties to the lowest class
  (a learner that has learnt nothing predicts class 0).
"""
from __future__ import annotations

import math

import numpy as np

from .._ext import _simplex
from ..param import Param
from .agnostic import N_LEARNERS
from .base import OnlineBooster, Update

GAMMA = Param("gamma", float, 0.5, "the weak learners' assumed advantage gamma: D = proj(votes / (gamma N)), "
              "sampling step eta = 1 / ((1 + 1/gamma) sqrt(N))", low=0.0, low_open=True, high=1.0)


class OnlineOCOR(OnlineBooster):
    """The OCO-based realizable online booster (Appendix B of Raman & Tewari 2022).

    The same projected vote as the agnostic booster; each learner learns an example with a probability ``p``
    moved by the mistakes of the learners before it. Guarantee (the paper's): a mistake bound when the data are
    realizable by the weak learners' span. The same predictions on any number of ranks.
    """

    name = "online-ocor"
    paper = "Raman & Tewari 2022, Appendix B"
    summary = "OCO-based realizable online booster: projected vote, each learner learns with a probability p " \
              "moved by the earlier learners' mistakes"
    parameters = (N_LEARNERS, GAMMA)

    def __init__(self, n_classes, params=None, seed=0):
        super().__init__(n_classes, params, seed)
        self.gamma = float(self.params["gamma"])
        self.eta = 1.0 / ((1.0 + 1.0 / self.gamma) * math.sqrt(self.n_learners))
        # the step of a right and of a wrong learner
        self._step_right = self.eta * (1.0 / self.gamma - 1.0)
        self._step_wrong = self.eta * (-1.0 / self.gamma - 1.0)

    def distribution(self, labels, t):
        D = np.empty(self.n_classes)
        votes = np.bincount(labels, minlength=self.n_classes).astype(np.float64)
        _simplex.project(votes / (self.gamma * self.n_learners), D)
        return D

    def probabilities(self, labels, y):
        """p_1..p_N: learner i's chance to learn the example (labels of all N learners, label y)."""
        right = (np.asarray(labels) == y).tolist()
        p, out = 0.5, np.empty(self.n_learners)
        up, down = self._step_right, self._step_wrong
        for i, r in enumerate(right):
            out[i] = p
            p -= up if r else down
            p = 0.0 if p < 0.0 else (1.0 if p > 1.0 else p)
        return out

    def update(self, labels, y, t, rng):
        p = self.probabilities(labels, int(y))
        weights = (rng.random(self.n_learners) < p).astype(np.float64)
        return Update(labels=np.full(self.n_learners, int(y), dtype=np.int32), weights=weights)
