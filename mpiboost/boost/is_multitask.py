"""Itakura–Saito multi-task boosting (Takenouchi, Komori, Eguchi et al., Entropy 2015), Case 2.

J binary tasks are the data's domains (one file per task or a domain
column); every task k has its own stump ensemble F_k, and a row is predicted
by its own task's ensemble (the model's ``vote = "task"``). Each round is one
exact Case-1 step (:mod:`.is_costs`) on one task: the outer round
``ceil(t / S)`` draws the task k uniformly from an RNG keyed by (seed, outer
round), and S consecutive rounds (``--steps-per-visit``) step F_k with every
other F_j at its current value. A step:

* per row i of task k: the costs a_i (of f(x_i) = +1) and b_i (of -1) from
  u_i = exp(-F_k y_i) and lambda e^{+-(F_k - F_j)} of every other task j;
* the stump chosen for pseudo-labels sign(b_i - a_i) and weights |a_i - b_i|
  (the ordinary weighted stump learner: histogram or sample mode);
* eps = the exact global sum of the chosen stump's costs over Z = sum(a + b),
  alpha = 1/2 ln((1 - eps) / eps), F_k += alpha f on the rows of every task
  (F_k enters every other task's regulariser).

``--lambda 0`` is AdaBoost on each task separately (method C of the paper);
``--lambda L`` with every lambda_kj = L is the paper's scenario A.
Every sum that decides anything is exact and the task draws depend on the
seed and round alone, so the model is the same on any number of ranks.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from ..weak.stump import StumpLearner
from . import is_costs
from .base import Algorithm, Hypothesis, Param
from .params import SAMPLING

_TASK_DRAW = 0x15A7  # RNG stream of the outer rounds' task draws
# `--lambda auto`: the paper's experiments' grid; 0 is in it (method C: the tasks alone)
LAMBDA_GRID = (0.0, 0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0)


class ISMultitask(Algorithm):
    name = "is-multitask"
    summary = ("Itakura-Saito multi-task boosting: one stump ensemble per task (domain), each step regularised "
               "toward the other tasks' ensembles")
    tasks = ("binary", "multi-domain")
    labels = "signed"
    vote = "task"
    parameters = (
        *SAMPLING,
        Param("lam", float, 0.1, "lambda: the weight of each other task's ensemble in a task's risk (0: AdaBoost "
              "on every task alone); auto: chosen from the grid with the rounds on validation rows", low=0.0,
              high=1e6, option="--lambda", grid=LAMBDA_GRID, metavar="LAMBDA|auto"),
        Param("steps_per_visit", int, 5, "steps S on a drawn task before the next task is drawn", low=1,
              high=10_000),
        Param("teacher", str, "all", "the regulariser: every other task's ensemble (all, the paper's Case 1) or "
              "their lambda-weighted mean as one teacher (average, Eq. 26)", choices=("all", "average")),
    )

    def setup(self, data, proto, seed: int = 0) -> None:
        self.check_data(data)
        self.data, self.proto, self.seed = data, proto, int(seed)
        self.J = max(int(data.n_domains), 1)
        self.task = np.asarray(data.domain, dtype=np.int64)
        self.F = np.zeros((data.n_local, self.J))  # every task's ensemble on every row of this rank
        self.lam = np.full(self.J, float(self.params["lam"]))
        self._labels = np.ones(data.n_local, dtype=np.int8)  # the step's pseudo-labels (the learner reads them)
        self.learner = StumpLearner(self.params.get("weak_learner", "histogram"), proto, data.cols, self._labels,
                                    data.bins.n_bins, self.sample_size(data), start=data.start)
        self.model = self.new_model(data, output="sign")

    def sample_size(self, data) -> int:
        from .reweighting import Reweighting

        return Reweighting.sample_size(self, data)

    def task_of(self, t: int) -> int:
        """The task of round t: drawn once per outer round of S steps."""
        outer = (int(t) - 1) // int(self.params["steps_per_visit"]) + 1
        return int(np.random.default_rng([self.seed, _TASK_DRAW, outer]).integers(self.J))

    def select(self, t: int) -> Optional[Hypothesis]:
        k = self.task_of(t)
        rows = np.flatnonzero(self.task == k)
        a, b = is_costs.costs(self.F[rows], self.data.y[rows], k, self.lam, self.params["teacher"])
        labels, w = is_costs.pseudo_labels(a, b)
        self._labels[:] = 1
        self._labels[rows] = labels
        weights = np.zeros(self.data.n_local)
        weights[rows] = w
        (total,) = self.proto.reduce_terms([weights])
        if not total > 0:
            return None  # every row of the task costs the same either way: no step can help
        stump = self.learner.fit(weights / total, self.rng(t)).stump
        h = stump.predict(self.data.cols)[rows]
        cost, Z = self.proto.reduce_terms([np.where(h > 0, a, b), a + b])
        eps = float(cost / Z) if Z > 0 else 0.5
        alpha = is_costs.step_alpha(eps, clip=not np.any(np.delete(self.lam, k) > 0))
        if alpha is None:
            return None
        return Hypothesis(stump, alpha, {"task": k, "weak_error": eps, "edge": 1.0 - 2.0 * eps}, domain=k)

    def apply(self, h: Hypothesis) -> dict:
        k = int(h.domain)
        self.F[:, k] += h.coef * h.stump.predict(self.data.cols)
        self.model.append(h.stump, h.coef, domain=k)
        own = self.F[np.arange(self.data.n_local), self.task] if self.data.n_local else np.zeros(0)
        errors = int(np.count_nonzero(np.where(own >= 0, 1, -1) != self.data.y))
        return {"train_errors": int(self.proto.reduce_counts(np.array([errors]))[0])}

    def finish(self):
        return self.model
