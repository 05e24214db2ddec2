"""SAMME: multi-class AdaBoost (Zhu, Zou, Rosset & Hastie 2009).

K classes, class stumps (each side of the threshold predicts a class,
:mod:`mpiboost.weak.class_stump`). Each round: the stump h_t with the
least weighted error e_t (exact global masses, one reduce_stats);
``alpha_t = lr (ln((1 - e_t) / e_t) + ln(K - 1))``; the weights of the rows
h_t gets wrong grow by ``exp(alpha_t)`` relative to the others. Training
stops when ``e_t >= 1 - 1/K`` (no better than guessing). Output
``argmax_c sum_t alpha_t [h_t(x) = c]``, ties to the highest class.

The update is written symmetrically, ``w <- w exp(-+alpha_t / 2) / Z`` with
``Z = e^{-alpha/2} W_right + e^{alpha/2} W_wrong`` from the exact masses, so
with K = 2 and ``lr = 1`` every number is AdaBoost's bit for bit
(``alpha_t / 2`` is AdaBoost's coefficient, the stumps are the binary
learner's): SAMME with two classes is AdaBoost.
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

from ..weak.class_stump import SPLITS, ClassStumpLearner
from .adaboost import ERROR_CLIP
from .base import Hypothesis, Param
from .losses import grows_trees
from .params import ROW_WEIGHTS, SAMPLING_CLASS, trees_by_default

SAMPLING = trees_by_default(SAMPLING_CLASS)
from .reweighting import Reweighting

MAX_EXP = 709.0  # math.exp(x) is finite up to about 709.78


class SAMME(Reweighting):
    """SAMME: multi-class AdaBoost with class stumps, what scikit-learn's AdaBoostClassifier runs.

    Paper: Zhu, Zou, Rosset & Hastie 2009. Forward stagewise fitting of the multi-class exponential loss:
    ``alpha_t = lr (ln((1 - e_t) / e_t) + ln(K - 1))``, so a weak learner needs only to beat random guessing
    (``e_t < 1 - 1/K``), and with K = 2 it is AdaBoost. Guarantee: each round with ``e_t < 1 - 1/K`` lowers the
    multi-class exponential loss, whose value bounds the training error. The same model bit for bit on any
    number of ranks.
    """

    name = "samme"
    paper = "Zhu, Zou, Rosset & Hastie 2009"
    summary = "SAMME: multi-class AdaBoost with class stumps (what scikit-learn's AdaBoostClassifier runs)"
    tasks = ("binary", "multiclass", "multi-domain")
    labels = "index"
    vote = "weighted"
    stop_message = "no weak edge left (weighted error >= 1 - 1/K)"
    weight_rule = "the first distribution is the weights' (as scikit-learn's sample_weight)"
    weak_learners = ("stump", "tree")
    parameters = (
        *SAMPLING,
        Param("split", str, "error",
              "how a class stump is chosen: the least weighted error (SAMME's rule) or the least weighted Gini "
              "impurity (the rule of scikit-learn's trees, which its AdaBoostClassifier boosts)", choices=SPLITS),
        Param("learning_rate", float, 1.0, "shrinkage of every coefficient alpha_t", low=0.0, low_open=True,
              high=100.0),
        *ROW_WEIGHTS,
    )

    def check_data(self, data) -> None:
        super().check_data(data)
        if data.n_classes < 2:
            raise ValueError("SAMME needs at least two classes")

    def make_learner(self, data, proto):
        self.K = int(data.n_classes)
        self.margin = np.zeros((data.n_local, self.K))  # per-class scores of the ensemble
        if grows_trees(self.params):
            # class trees grow by the weighted Gini gain (--split chooses the stump's rule)
            from ..weak.tree import TreeClassifierLearner, TreeSpec

            return TreeClassifierLearner(TreeSpec.from_params(self.params), proto, data.cols, data.y,
                                         data.bins.n_bins, data.n_global, search=self.params["search"],
                                         n_samples=self.sample_size(data), start=data.start, n_classes=self.K)
        return ClassStumpLearner(
            self.params["search"], proto, data.cols, data.y, self.K, data.bins.n_bins,
            self.sample_size(data), start=data.start, split=self.params["split"],
        )

    def select(self, t: int) -> Optional[Hypothesis]:
        stump, err, metrics = self.choose_and_rate(t)
        chance = 1.0 - 1.0 / self.K
        if err >= chance:
            return None
        e = min(max(err, ERROR_CLIP), chance - ERROR_CLIP)
        alpha = float(self.params["learning_rate"]) * (math.log((1.0 - e) / e) + math.log(self.K - 1))
        metrics["edge"] = chance - err  # how much better than guessing
        return Hypothesis(stump, alpha, metrics)

    def apply(self, h: Hypothesis) -> dict:
        half = 0.5 * h.coef
        right, wrong = self.masses(h.stump)
        # The new total is known before the pass, so the pass also normalizes.
        if half <= MAX_EXP:
            down, up = math.exp(-half), math.exp(half)
            total = down * right + up * wrong
            f_right, f_wrong = down / total, up / total
        else:
            # A large learning rate: e^half overflows. The same factors divided through by e^half; with no
            # wrong mass left (a perfect stump) the right rows keep their shares.
            r = math.exp(-h.coef)
            total = r * right + wrong
            f_right, f_wrong = (r / total, 1.0 / total) if total > 0 else (1.0 / right, 0.0)
        errors, _ = self.update_rows(h.stump, f_right, f_wrong, h.coef)
        self.model.append(h.stump, h.coef)
        return {"train_errors": errors}
