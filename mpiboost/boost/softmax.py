"""Softmax boosting: multiclass gradient boosting with vector leaves (beside SAMME).

The multinomial log-loss of K class scores per row, minimized by Newton
steps (:mod:`.newton`): each round one tree whose leaves hold K values, grown
on one histogram pass of every class's gradients and hessians (the split gain
sums the K classes' Newton gains). LightGBM and XGBoost grow K trees per round
instead, one per class; a vector-leaf tree costs one pass and one exchange of
histograms per round. Output ``argmax_k F_k(x)``, probabilities
``softmax(F(x))`` (``predict --proba``).
"""
from __future__ import annotations

from typing import Optional

from .base import Algorithm, Hypothesis, Param
from .params import (CATEGORICAL_SPLITS, GRAD_BINS_MULTICLASS, LEARNING_RATE, NEWTON_SAMPLING, TREE_NEWTON,
                     check_newton_sampling)

WEAK = Param("weak_learner", str, "tree",
             "the weak learner: tree (vector leaves, see --max-leaves) or stump (one split, K values per side)",
             choices=("tree", "stump"))


class Softmax(Algorithm):
    """Softmax boosting: multiclass gradient boosting of the log-loss, one tree of K-value leaves a round.

    Beyond the papers: Friedman's gradient boosting (2001) with Newton steps and LightGBM's defaults, for K
    classes at once: one histogram pass of every class's gradients and curvatures grows one tree whose leaves
    hold K values (LightGBM and XGBoost grow K trees a round). Guarantee: each round takes a Newton step on the
    multinomial log-loss, shrunk by the learning rate, which lowers the training loss for small enough steps.
    The same model bit for bit on any number of ranks.
    """

    name = "softmax"
    paper = "beyond the papers: multiclass gradient boosting with Newton steps (Friedman 2001; LightGBM's defaults)"
    summary = "softmax boosting: multiclass gradient boosting of the log-loss, one tree of K-value leaves per round"
    tasks = ("binary", "multiclass", "multi-domain")
    labels = "index"
    vote = "weighted"
    weak_learners = ("stump", "tree")
    losses = ("logistic",)
    stop_message = "no split left that lowers the loss"
    weight_rule = "each row's gradient and hessian times its weight (LightGBM's rule)"
    parameters = (WEAK, *(p if p.when is None else Param(**{**p.__dict__, "when": ("weak_learner", "tree")})
                          for p in (*TREE_NEWTON, *CATEGORICAL_SPLITS)), LEARNING_RATE, GRAD_BINS_MULTICLASS,
                  *NEWTON_SAMPLING)

    @classmethod
    def check_params(cls, params: dict, given) -> None:
        check_newton_sampling(params, given)

    def check_data(self, data) -> None:
        if data.n_classes < 2:
            raise ValueError(f"{self.name} needs at least two classes")

    def setup(self, data, proto, seed: int = 0) -> None:
        from .newton import NewtonBoost

        self.check_data(data)
        self.data, self.proto, self.seed = data, proto, int(seed)
        self.newton = NewtonBoost(data, proto, self.params, int(data.n_classes), seed=self.seed)
        self.model = self.new_model(data, output="argmax", link="softmax")

    def select(self, t: int) -> Optional[Hypothesis]:
        return self.newton.select(t)

    def apply(self, h: Hypothesis) -> dict:
        errors = self.newton.apply(h)
        self.model.append(h.stump, h.coef)
        return {"train_errors": errors}
