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
``--lambda L`` with every lambda_kj = L is the paper's scenario A;
``--lambda-scale is`` makes lambda_kj = L / IS_kj (scenario B), IS_kj the
Itakura–Saito distance between per-task AdaBoost fits (``--is-rounds``
rounds each, fitted in set-up) on task k's rows.
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
        Param("lambda_scale", str, "shared", "lambda_kj: lambda for every pair of tasks (shared, the paper's "
              "scenario A) or lambda / IS_kj, the Itakura-Saito distance between the per-task AdaBoost fits of "
              "tasks k and j on task k's rows (is, scenario B)", choices=("shared", "is")),
        Param("is_rounds", int, 100, "with --lambda-scale is: the rounds of each per-task AdaBoost fit that "
              "measures the distances", low=1, high=100_000),
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
        self._labels = np.ones(data.n_local, dtype=np.int8)  # the step's pseudo-labels (the learner reads them)
        self.learner = StumpLearner(self.params.get("weak_learner", "histogram"), proto, data.cols, self._labels,
                                    data.bins.n_bins, self.sample_size(data), start=data.start)
        lam = float(self.params["lam"])
        # lam[k, j]: the weight of task j's ensemble in task k's risk (the diagonal is never used)
        self.lam = np.full((self.J, self.J), lam)
        if self.params["lambda_scale"] == "is" and lam > 0 and self.J > 1:
            self.distances = self.is_distances()
            self.lam = lam / np.maximum(self.distances, np.finfo(float).tiny)
        self.model = self.new_model(data, output="sign")

    def is_distances(self) -> np.ndarray:
        """IS_kj = (1/n_k) sum_{i in k} (e^D + e^-D - 2), D = F_k - F_j of the per-task AdaBoost fits (lambda 0).

        The fits are the lambda = 0 steps, ``is_rounds`` on each task in turn,
        on a scratch copy of the scores: they shape lambda only, not the model.
        Exact global sums, so the matrix is the same on any number of ranks.
        """
        F = np.zeros_like(self.F)
        zero = np.zeros(self.J)
        for k in range(self.J):
            rows = np.flatnonzero(self.task == k)
            for r in range(int(self.params["is_rounds"])):
                step = self._step(F, rows, k, zero, np.random.default_rng([self.seed, _TASK_DRAW + 1 + k, r]))
                if step is None:
                    break
                stump, alpha, _ = step
                F[:, k] += alpha * stump.predict(self.data.cols)
        out = np.zeros((self.J, self.J))
        counts = self.proto.reduce_counts(np.bincount(self.task, minlength=self.J).astype(np.int64))
        for k in range(self.J):
            rows = self.task == k
            D = F[rows][:, k:k + 1] - F[rows]  # (n_k, J)
            sums = self.proto.reduce_terms([np.exp(D[:, j]) + np.exp(-D[:, j]) - 2.0 for j in range(self.J)])
            out[k] = np.asarray(sums) / max(int(counts[k]), 1)
        return out

    def sample_size(self, data) -> int:
        from .reweighting import Reweighting

        return Reweighting.sample_size(self, data)

    def task_of(self, t: int) -> int:
        """The task of round t: drawn once per outer round of S steps."""
        outer = (int(t) - 1) // int(self.params["steps_per_visit"]) + 1
        return int(np.random.default_rng([self.seed, _TASK_DRAW, outer]).integers(self.J))

    def _step(self, F: np.ndarray, rows: np.ndarray, k: int, lam: np.ndarray, rng) -> Optional[tuple]:
        """The exact Case-1 step on task k for scores F: (stump, alpha, eps), or None without an edge."""
        a, b = is_costs.costs(F[rows], self.data.y[rows], k, lam, self.params["teacher"])
        labels, w = is_costs.pseudo_labels(a, b)
        self._labels[:] = 1
        self._labels[rows] = labels
        weights = np.zeros(self.data.n_local)
        weights[rows] = w
        (total,) = self.proto.reduce_terms([weights])
        if not total > 0:
            return None  # every row of the task costs the same either way: no step can help
        stump = self.learner.fit(weights / total, rng).stump
        h = stump.predict(self.data.cols)[rows]
        cost, Z = self.proto.reduce_terms([np.where(h > 0, a, b), a + b])
        eps = float(cost / Z) if Z > 0 else 0.5
        alpha = is_costs.step_alpha(eps, clip=not np.any(np.delete(lam, k) > 0))
        return None if alpha is None else (stump, alpha, eps)

    def select(self, t: int) -> Optional[Hypothesis]:
        k = self.task_of(t)
        step = self._step(self.F, np.flatnonzero(self.task == k), k, self.lam[k], self.rng(t))
        if step is None:
            return None
        stump, alpha, eps = step
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
