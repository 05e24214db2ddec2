"""Distributed AdaBoost (Freund & Schapire 1997; distributed as in Balcan, Blum, Fine, Mansour 2012).

The SmoothBoost paper's baseline: the same sampling protocol (or the exact
histogram learner), no projection, the AdaBoost update. Each round:
alpha_t = 1/2 ln((1 - e_t) / e_t) with e_t the exact global weighted error of
h_t (one reduce_stats) clipped into [1e-12, 1/2 - 1e-12];
w_i <- w_i exp(-alpha_t y_i h_t(x_i)) / Z_t in one pass, where the new total
Z_t = e^-alpha W_right + e^alpha W_wrong comes from the same exact masses that
gave e_t (so every rank normalizes by the same number). Training
stops early when e_t >= 1/2. Output sign(sum_t alpha_t h_t).
"""
from __future__ import annotations

import math
from typing import Optional

from .base import Hypothesis
from .params import ROW_WEIGHTS, SAMPLING
from .reweighting import Reweighting

ERROR_CLIP = 1e-12


class AdaBoost(Reweighting):
    name = "adaboost"
    summary = "AdaBoost: the SmoothBoost paper's baseline; with domains AdaBoost-all or, one domain, AdaBoost-k"
    tasks = ("binary", "multi-domain", "transfer")
    vote = "weighted"
    parameters = (*SAMPLING, *ROW_WEIGHTS)

    def select(self, t: int) -> Optional[Hypothesis]:
        stump, err, metrics = self.choose_and_rate(t)
        if err >= 0.5:
            return None  # no weak learner edge left: stop
        e = min(max(err, ERROR_CLIP), 0.5 - ERROR_CLIP)
        alpha = 0.5 * math.log((1.0 - e) / e)
        return Hypothesis(stump, alpha, metrics)

    def apply(self, h: Hypothesis) -> dict:
        alpha = h.coef
        right, wrong = self.masses(h.stump)
        down, up = math.exp(-alpha), math.exp(alpha)
        # The new total is known before the pass, so the pass also normalizes.
        total = down * right + up * wrong
        errors, _ = self.update_rows(h.stump, down / total, up / total, alpha)
        self.model.append(h.stump, h.coef)
        return {"train_errors": errors}
