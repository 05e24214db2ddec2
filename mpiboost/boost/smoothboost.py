"""Distributed SmoothBoost (ALGORITHMS §1; Chen, Balcan, Chau, AISTATS 2016).

Each round: choose h_t for the current distribution D (sample or histogram
learner); shrink the weight of every correctly classified row by (1 - gamma)
and normalize in the same pass (the new total (1 - gamma) W_right + W_wrong
follows from the exact masses of the rows h_t gets right and wrong); project
onto the epsilon-smooth
distributions {D : max_i D(i) <= 1/(epsilon n)} (KL projection, the
distributed search of :meth:`Protocol.smooth_projection`). No row ever holds
more than 1/(epsilon n) of the mass, which is what makes the algorithm
tolerate label noise.

Output: the unweighted majority vote sign(sum_t h_t) (the paper), or with
``vote="weighted"`` sign(sum_t alpha_t h_t), alpha_t = 1/2 ln((1-e_t)/e_t)
for the exact weighted error e_t of h_t under D_t.
"""
from __future__ import annotations

import math
from typing import Optional

from .adaboost import ERROR_CLIP
from .base import Hypothesis, StumpBoosting


def default_gamma(beta: float) -> float:
    """gamma = 1/2 (1/2 - beta), the paper's choice for a beta-agnostic learner."""
    return 0.5 * (0.5 - beta)


class SmoothBoost(StumpBoosting):
    name = "smoothboost"

    def __init__(self, params: dict) -> None:
        super().__init__(params)
        self.vote = "weighted" if params.get("vote", "majority") == "weighted" else "majority"
        self.epsilon = float(params.get("epsilon", 0.1))
        self.gamma = float(params.get("gamma") or default_gamma(float(params.get("beta", 0.2))))
        if not 0 < self.epsilon <= 1:
            raise ValueError(f"epsilon must be in (0, 1], got {self.epsilon}")
        if not 0 < self.gamma < 1:
            raise ValueError(f"gamma must be in (0, 1), got {self.gamma}")

    def setup(self, data, proto, seed: int = 0) -> None:
        super().setup(data, proto, seed)
        self.cap = 1.0 / (self.epsilon * data.n_global)

    def select(self, t: int) -> Optional[Hypothesis]:
        stump, err, metrics = self.choose_and_rate(t)
        if self.vote == "weighted":
            e = min(max(err, ERROR_CLIP), 1.0 - ERROR_CLIP)
            coef = 0.5 * math.log((1.0 - e) / e)
        else:
            coef = 1.0
        return Hypothesis(stump, coef, metrics)

    def apply(self, h: Hypothesis) -> dict:
        right, wrong = self.masses(h.stump)
        shrink = 1.0 - self.gamma
        # The new total is known before the pass, so the pass also normalizes.
        total = shrink * right + wrong
        errors, local_max = self.update_rows(h.stump, shrink / total, 1.0 / total, h.coef)
        wmax = self.proto.reduce_max(local_max)
        info = self.proto.smooth_projection(self.w, self.cap, wmax=wmax)
        if info.clipped:
            wmax = self.cap
        self.model.append(h.stump, h.coef)
        return {
            "train_errors": errors,
            "clipped": info.clipped,
            "projection_iterations": info.iterations,
            "max_weight_eps_n": wmax * self.epsilon * self.data.n_global,
        }
