"""Online agnostic multiclass boosting (Algorithm 1 of the paper on online agnostic boosting).

For each example: every weak learner predicts (cached labels l_i); the vote
counts v project to the booster's distribution ``D = proj(v / (gamma N))``
(Euclidean projection onto the simplex); the prediction is a draw from D, or
its argmax. Then the label y is revealed and the online-convex-optimisation
chain p^1..p^{N+1} is computed from the cached labels alone
(:func:`mpiboost._ext._simplex.ogd_chain`: p^1 uniform, step
``-(2 eta / gamma) e_{l_i} + 2 eta e_y`` then the projection,
``eta = gamma / sqrt(N)``, the chain restarted every example); learner i
learns the example relabelled by p^i: every label with its weight
(``fractional``, the paper's rule) or one label drawn from p^i (``random``,
what the authors' code runs). ``start = label`` begins the chain at e_y
instead of the uniform point (beyond the paper: the first learner learns the
true label, and later ones the examples their predecessors got wrong).

At gamma = 1 a right learner moves nothing and D is the plain vote share;
with two classes this is the binary online agnostic booster of Brukhim,
Chen, Hazan and Moran (2020).
"""
from __future__ import annotations

import math

import numpy as np

from .._ext import _simplex
from ..param import Param
from .base import OnlineBooster, Update, draw

RELABEL = ("fractional", "random")
STARTS = ("uniform", "label")

N_LEARNERS = Param("n_learners", int, 100, "weak learners N (online naive-Bayes-adaptive leaves)", low=1,
                   high=100_000)
GAMMA = Param("gamma", float, 1.0, "the weak learners' assumed advantage gamma: D = proj(votes / (gamma N)), "
              "OGD step eta = gamma / sqrt(N)", low=0.0, low_open=True, high=1.0)


class OnlineAgnostic(OnlineBooster):
    """Online agnostic multiclass boosting (Algorithm 1 of Raman & Tewari 2022).

    For each example the weak learners' votes are projected onto the simplex (``proj(v / (gamma N))``) and the
    prediction is drawn from that distribution (or its argmax); then the label is revealed and an online convex
    optimisation chain, restarted every example, tells each learner what to learn. Guarantee (the paper's): an
    expected-mistake bound against the best in the span of the weak learners, without assuming the data
    realizable. mpiboost's: the same predictions on any number of ranks (the learners are spread over them).
    """

    name = "online-agnostic"
    paper = "Raman & Tewari 2022, Algorithm 1"
    summary = "online agnostic multiclass boosting: projected vote, OGD relabelling restarted every example"
    parameters = (
        N_LEARNERS,
        GAMMA,
        Param("relabel", str, "fractional", "how a learner is taught an example: every label with its weight in "
              "the learner's OGD point p^i (fractional, the paper's rule) or one label drawn from p^i (random, the "
              "authors' code)", choices=RELABEL),
        Param("start", str, "uniform", "the OGD chain's start p^1: the uniform distribution (the paper's) or the "
              "example's label e_y (the first learner learns the true label; projected OGD's regret bound holds "
              "from any start in the simplex)", choices=STARTS),
    )

    def __init__(self, n_classes, params=None, seed=0):
        super().__init__(n_classes, params, seed)
        self.gamma = float(self.params["gamma"])
        self.eta = self.gamma / math.sqrt(self.n_learners)
        self._votes = np.empty(self.n_classes)
        self._P = np.empty((self.n_learners + 1, self.n_classes))

    def distribution(self, labels, t):
        D = np.empty(self.n_classes)
        _simplex.vote_distribution(labels, self.gamma, D)
        return D

    def update(self, labels, y, t, rng):
        P = self._P
        if self.params["start"] == "label":
            P[0] = 0.0
            P[0, int(y)] = 1.0
            _simplex.ogd_chain(labels, int(y), self.gamma, self.eta, P, True)
        else:
            _simplex.ogd_chain(labels, int(y), self.gamma, self.eta, P)
        if self.params["relabel"] == "fractional":
            return Update(P=P[: self.n_learners])
        return Update(labels=draw(P[: self.n_learners], rng.random(self.n_learners)),
                      weights=np.ones(self.n_learners))
