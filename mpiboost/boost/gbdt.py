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

from dataclasses import replace

from .losses import LOGISTIC
from .params import GRAD_BINS_BINARY, GRAD_BINS_MULTICLASS
from .softmax import Softmax


def _own(p):
    """Softmax's parameter ``p`` as gbdt declares it: the weak learner of either loss, grad_bins by the classes."""
    if p.name == "weak_learner":
        return replace(p, help="the weak learner: tree (see --max-leaves) or stump (one split, Newton leaves)")
    if p.name == "grad_bins":
        return replace(p, default=None, help=p.help + f" (default: {GRAD_BINS_BINARY.default} for two classes, "
                                                      f"{GRAD_BINS_MULTICLASS.default} for more)")
    return p


class GBDT(Softmax):
    name = "gbdt"
    paper = "beyond the papers: gradient boosting with Newton steps (Friedman 2001; LightGBM's gbdt and defaults)"
    summary = "gradient boosted trees of the log-loss, binary or multiclass as the labels are (LightGBM's gbdt)"
    tasks = ("binary", "multiclass")
    parameters = tuple(_own(p) for p in Softmax.parameters)

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
