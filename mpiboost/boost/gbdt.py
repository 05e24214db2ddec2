"""Gradient boosted trees (``--algo gbdt``): LightGBM's ``gbdt``, its loss read from the labels or given.

Newton boosting (:mod:`.newton`) of the log-loss: two classes take the binary
logistic loss (one score a row, ``p = sigmoid(F)``, as ``adaboost --loss
logistic``), more take softmax (K scores a row, one tree of K-value leaves per
round, as ``softmax``, whose rounds it shares). The same trees, leaves and start
as those two, so a binary ``gbdt`` model is ``adaboost --loss logistic
--weak-learner tree``'s bit for bit and a multiclass one ``softmax``'s. The
gradients are rounded to ``--grad-bins`` levels, by default the accuracy study's:
4 for two classes, 16 for more.

``--objective regression`` (squared error), ``regression_l1``, ``huber`` or ``quantile`` fits numeric
targets instead (:mod:`.regression`): one score a row, the model's prediction; the gradients are kept
exact (``--grad-bins 0``) unless given.
"""
from __future__ import annotations

from dataclasses import replace

from typing import Optional

from .base import Hypothesis, Param
from .losses import LOGISTIC, REGRESSION
from .params import GRAD_BINS_BINARY, GRAD_BINS_MULTICLASS
from .softmax import Softmax

OBJECTIVES = ("auto", "binary", "multiclass", *REGRESSION)
OBJECTIVE = Param("objective", str, "auto",
                  "the loss: auto (binary or multiclass log-loss, from the labels), binary, multiclass, or a "
                  "regression objective of numeric targets: regression (squared error), regression_l1 (absolute "
                  "error), huber, quantile", choices=OBJECTIVES)
ALPHA = Param("alpha", float, 0.9, "huber: the residual where the loss turns linear; quantile: the percentile "
              "(0 < alpha < 1) (LightGBM's alpha)", low=0.0, low_open=True)


def _own(p):
    """Softmax's parameter ``p`` as gbdt declares it: the weak learner of either loss, grad_bins by the classes."""
    if p.name == "weak_learner":
        return replace(p, help="the weak learner: tree (see --max-leaves) or stump (one split, Newton leaves)")
    if p.name == "grad_bins":
        return replace(p, default=None, help=p.help + f" (default: {GRAD_BINS_BINARY.default} for two classes, "
                                                      f"{GRAD_BINS_MULTICLASS.default} for more, 0 for "
                                                      "regression)")
    return p


class GBDT(Softmax):
    """Gradient boosted trees, LightGBM's ``gbdt``: the log-loss (binary or multiclass, as the labels are) or a
    regression objective.

    Beyond the papers: Newton boosting with LightGBM's defaults (31 leaves, learning rate 0.1, its start and leaf
    rules). Guarantee: tested against LightGBM itself, which given the same bins grows the same trees (scores to
    1e-6 relative), and the same model bit for bit on any number of ranks. A binary model is ``adaboost --loss
    logistic --weak-learner tree``'s and a multiclass one ``softmax``'s.
    """

    name = "gbdt"
    paper = "beyond the papers: gradient boosting with Newton steps (Friedman 2001; LightGBM's gbdt and defaults)"
    summary = ("gradient boosted trees: the log-loss, binary or multiclass as the labels are, or a regression "
               "objective (LightGBM's gbdt)")
    tasks = ("binary", "multiclass", "regression")
    parameters = (*(_own(p) for p in Softmax.parameters), OBJECTIVE, ALPHA)

    @classmethod
    def check_params(cls, params: dict, given) -> None:
        super().check_params(params, given)
        objective = params.get("objective") or "auto"
        if given.get("alpha") is not None and objective not in ("huber", "quantile"):
            raise ValueError(f"--alpha applies to --objective huber or quantile, not {objective}")
        if objective == "quantile" and not 0.0 < float(params.get("alpha") or 0.9) < 1.0:
            raise ValueError(f"--alpha of --objective quantile is a percentile in (0, 1), got {params['alpha']}")

    @property
    def regression(self) -> bool:
        """Whether this configuration fits numeric targets (a regression objective)."""
        return (self.params.get("objective") or "auto") in REGRESSION

    def load_task(self) -> str:
        return "regression" if self.regression else super().load_task()

    def check_data(self, data) -> None:
        if self.regression:
            return
        super().check_data(data)
        objective = self.params.get("objective") or "auto"
        if objective == "binary" and int(data.n_classes) != 2:
            raise ValueError(f"--objective binary needs two classes; the labels hold {data.n_classes}")

    def setup(self, data, proto, seed: int = 0) -> None:
        from .newton import NewtonBoost

        self.check_data(data)
        self.data, self.proto, self.seed = data, proto, int(seed)
        if self.regression:
            from .regression import RegressionBoost

            if self.params.get("grad_bins") is None:
                self.params["grad_bins"] = 0  # exact gradients: the accuracy study of --grad-bins was of classes
            self.newton = RegressionBoost(data, proto, self.params, REGRESSION[self.params["objective"]],
                                          seed=self.seed)
            self.model = self.new_model(data, output="value")
            return
        binary = int(data.n_classes) == 2 and (self.params.get("objective") or "auto") != "multiclass"
        if self.params.get("grad_bins") is None:
            self.params["grad_bins"] = (GRAD_BINS_BINARY if binary else GRAD_BINS_MULTICLASS).default
        self.newton = NewtonBoost(data, proto, self.params, 1 if binary else int(data.n_classes), seed=self.seed)
        if binary:
            self.model = self.new_model(data, output="sign", link=LOGISTIC.link)
        else:
            self.model = self.new_model(data, output="argmax", link="softmax")

    def apply(self, h: Hypothesis) -> dict:
        if not self.regression:
            return super().apply(h)
        value = self.newton.apply(h)
        self.model.append(h.stump, h.coef)
        return {"train_metric": value, "metric": self.newton.loss.metric}
