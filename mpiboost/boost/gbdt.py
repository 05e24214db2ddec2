"""Gradient boosted trees (``--algo gbdt``): LightGBM's ``gbdt``, its loss read from the labels.

Newton boosting (:mod:`.newton`) of the log-loss: two classes take the binary
logistic loss (one score a row, ``p = sigmoid(F)``, as ``adaboost --loss
logistic``), more take softmax (K scores a row, one tree of K-value leaves per
round, as ``softmax``, whose rounds it shares). The same trees, leaves and start
as those two, so a binary ``gbdt`` model is ``adaboost --loss logistic
--weak-learner tree``'s bit for bit and a multiclass one ``softmax``'s. The
gradients are rounded to ``--grad-bins`` levels, by default the accuracy study's:
4 for two classes, 16 for more.
"""
from __future__ import annotations

from .base import Param
from .losses import LOGISTIC
from .params import GRAD_BINS, GRAD_BINS_BINARY, GRAD_BINS_MULTICLASS, LEARNING_RATE, NEWTON_SAMPLING, TREE_NEWTON
from .softmax import Softmax

WEAK = Param("weak_learner", str, "tree",
             "the weak learner: tree (see --max-leaves) or stump (one split, Newton leaves)",
             choices=("tree", "stump"))


class GBDT(Softmax):
    name = "gbdt"
    paper = "beyond the papers: gradient boosting with Newton steps (Friedman 2001; LightGBM's gbdt and defaults)"
    summary = "gradient boosted trees of the log-loss, binary or multiclass as the labels are (LightGBM's gbdt)"
    tasks = ("binary", "multiclass")
    parameters = (
        WEAK,
        *(p if p.when is None else Param(**{**p.__dict__, "when": ("weak_learner", "tree")}) for p in TREE_NEWTON),
        LEARNING_RATE,
        Param(**{**GRAD_BINS.__dict__, "default": None,
                 "help": GRAD_BINS.help + f" (default: {GRAD_BINS_BINARY.default} for two classes, "
                                          f"{GRAD_BINS_MULTICLASS.default} for more)"}),
        *NEWTON_SAMPLING,
    )

    def setup(self, data, proto, seed: int = 0) -> None:
        from .newton import NewtonBoost

        self.check_data(data)
        self.data, self.proto, self.seed = data, proto, int(seed)
        binary = int(data.n_classes) == 2
        if self.params.get("grad_bins") is None:
            self.params["grad_bins"] = (GRAD_BINS_BINARY if binary else GRAD_BINS_MULTICLASS).default
        self.newton = NewtonBoost(data, proto, self.params, 1 if binary else int(data.n_classes), seed=self.seed)
        if binary:
            self.model = self.new_model(data, output="sign", link=LOGISTIC.link)
        else:
            self.model = self.new_model(data, output="argmax", link="softmax")
