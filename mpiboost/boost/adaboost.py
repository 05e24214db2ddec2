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

from .base import Hypothesis, Param
from .losses import loss_of
from .params import (GRAD_BINS_BINARY, LEARNING_RATE, NEWTON_SAMPLING, ROW_WEIGHTS, SAMPLING, check_newton_sampling,
                     trees_by_default)
from .reweighting import Reweighting

ERROR_CLIP = 1e-12


class AdaBoost(Reweighting):
    """Distributed AdaBoost, and with ``--loss logistic`` Newton-boosted logistic trees.

    Paper: Freund & Schapire 1997, distributed as in Balcan, Blum, Fine & Mansour 2012: the SmoothBoost paper's
    baseline over the same protocol, without the projection. Guarantee (the paper's): the training error is at
    most ``prod_t 2 sqrt(e_t (1 - e_t)) <= exp(-2 sum_t gamma_t^2)`` for weak errors ``e_t = 1/2 - gamma_t``.
    With domains it boosts every domain's rows (AdaBoost-all) or one (``--train-domain``, AdaBoost-k). The
    same model bit for bit on any number of ranks.
    """

    name = "adaboost"
    paper = "Freund & Schapire 1997; distributed as in Balcan, Blum, Fine & Mansour 2012"
    summary = "AdaBoost: the SmoothBoost paper's baseline; with domains AdaBoost-all or, one domain, AdaBoost-k"
    tasks = ("binary", "multi-domain", "transfer")
    vote = "weighted"
    weight_rule = ("the exponential loss starts from the weights' distribution (the training domain's with "
                   "--train-domain); the logistic loss weighs each row's gradient and hessian")
    weak_learners = ("stump", "tree")
    losses = ("exponential", "logistic")
    parameters = (
        *trees_by_default(SAMPLING),
        Param("loss", str, "exponential",
              "exponential: AdaBoost's reweighting, leaves -1/+1 with a coefficient per round; logistic: "
              "gradient boosting of the log-loss, Newton leaves, calibrated probabilities (predict --proba)",
              choices=("exponential", "logistic"), origin="beyond"),
        Param("learning_rate", float, 0.1, LEARNING_RATE.help, low=0.0, high=1.0, low_open=True,
              when=("loss", "logistic")),
        Param(**{**GRAD_BINS_BINARY.__dict__, "when": ("loss", "logistic")}),
        *(Param(**{**p.__dict__, "when": ("loss", "logistic")}) for p in NEWTON_SAMPLING),
        *ROW_WEIGHTS,
    )

    @classmethod
    def check_params(cls, params: dict, given) -> None:
        if loss_of(params).newton:
            check_newton_sampling(params, given)
            bad = [flag for name, flag in (("search", "--search sample"), ("train_domain", "--train-domain"),
                                           ("entity_balanced", "--entity-balanced"))
                   if given.get(name) not in (None, False, "histogram")]
            if bad:
                raise ValueError(f"{bad[0]} applies to adaboost's exponential loss only (not --loss logistic)")
            if given.get("split_gain") == "error":
                raise ValueError("--split-gain error is for trees of -1/+1 leaves: --loss logistic grows trees by "
                                 "the Newton gain")

    def setup(self, data, proto, seed: int = 0) -> None:
        if not loss_of(self.params).newton:
            return super().setup(data, proto, seed)
        from .newton import NewtonBoost

        self.check_data(data)
        self.data, self.proto, self.seed = data, proto, int(seed)
        self.newton = NewtonBoost(data, proto, self.params, 1, seed=self.seed)
        self.model = self.new_model(data, output="sign", link=loss_of(self.params).link)

    def select(self, t: int) -> Optional[Hypothesis]:
        if loss_of(self.params).newton:
            return self.newton.select(t)
        stump, err, metrics = self.choose_and_rate(t)
        if err >= 0.5:
            return None  # no weak learner edge left: stop
        e = min(max(err, ERROR_CLIP), 0.5 - ERROR_CLIP)
        alpha = 0.5 * math.log((1.0 - e) / e)
        return Hypothesis(stump, alpha, metrics)

    def apply(self, h: Hypothesis) -> dict:
        if loss_of(self.params).newton:
            errors = self.newton.apply(h)
            self.model.append(h.stump, h.coef)
            return {"train_errors": errors}
        alpha = h.coef
        right, wrong = self.masses(h.stump)
        down, up = math.exp(-alpha), math.exp(alpha)
        # The new total is known before the pass, so the pass also normalizes.
        total = down * right + up * wrong
        errors, _ = self.update_rows(h.stump, down / total, up / total, alpha)
        self.model.append(h.stump, h.coef)
        return {"train_errors": errors}
