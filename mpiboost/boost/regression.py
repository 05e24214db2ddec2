"""Newton boosting of a regression objective (``--algo gbdt --objective regression|regression_l1|huber|quantile``).

LightGBM's regression objectives over the protocol, one score ``F`` a row and the targets ``y`` as numbers:

* ``regression`` (squared error): ``g = F - y``, ``h = 1``; the start is the mean of the targets;
* ``huber``: ``g = F - y`` clipped to ``[-alpha, alpha]``, ``h = 1``; the start is the mean;
* ``regression_l1`` (absolute error) and ``quantile``: ``g = sign(F - y)`` (L1) or ``1 - alpha`` / ``-alpha``
  (quantile), ``h = 1``; the trees are grown on those, then each leaf is set to the median (L1) or the
  ``alpha`` percentile (quantile) of its rows' residuals ``y - F`` (LightGBM's leaf renewal,
  :meth:`~mpiboost.protocol.Protocol.leaf_percentiles`), and the start is that percentile of the targets.

Weights multiply ``g`` and ``h`` (and weigh the means and percentiles). The gradients are unbounded, so each
round's fixed-point scale comes from the round's largest ``|g|`` over all ranks (one reduction): the units of
every row and their sums stay exact in int64, hence the trees are the same on any number of ranks.
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

from ..weak.tree import GH_BITS, MAX_GH_SHIFT
from .base import Hypothesis
from .losses import RegressionLoss
from .newton import NewtonBoost


class RegressionBoost(NewtonBoost):
    """The state and rounds of Newton boosting of a regression objective (one score a row).

    Parameters
    ----------
    data, proto
        This rank's :class:`~mpiboost.data.load.Shard` (``regression``: ``y`` the float targets) and the protocol.
    params
        The algorithm's resolved parameters (tree options, ``learning_rate``, ``alpha``).
    loss
        The objective (:data:`mpiboost.boost.losses.REGRESSION`).
    """

    def __init__(self, data, proto, params: dict, loss: RegressionLoss, seed: int = 0) -> None:
        self.data, self.proto, self.K = data, proto, 1
        self.loss = loss
        self.alpha = float(params.get("alpha") or 0.9)
        self._trees(params, seed)
        self.y = np.ascontiguousarray(data.y, dtype=np.float64)
        self.cls, self.sign = np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int8)
        self.shift, self.scale = 0, 1.0
        self._wsum = None
        if self.w is not None:
            total = self._wsum = float(proto.reduce_stats(self.w)[0])
            if not total > 0:
                raise ValueError("the sample weights sum to 0: no row to learn from")
            if total >= 2.0**52:
                raise ValueError(f"the sample weights sum to {total:.3g}, past 2**52: scale them down")
            self._rows = max(int(data.n_global), int(math.ceil(total)))
        else:
            self._rows = int(data.n_global)
        self.init = np.array([self._start()])

    def _start(self) -> float:
        """The start score: the (weighted) mean of the targets, or their percentile (L1, quantile)."""
        if self.loss.renew:
            every = np.zeros(self.data.n_local, dtype=np.int32)
            return float(self.proto.leaf_percentiles(self.y, every, 1, self.loss.leaf_alpha(self.alpha), self.w)[0])
        if self.w is None:
            return float(self.proto.reduce_stats(self.y)[0]) / int(self.data.n_global)
        from .._ext import _exact

        hi, lo = _exact.exact_products(self.y, self.w)  # sum(w y) exactly rounded: the products' two parts
        num = self.proto.reduce_terms([np.concatenate([_exact.partials(hi), _exact.partials(lo)])])[0]
        return float(num) / self._wsum

    def residuals(self) -> np.ndarray:
        """``F - y`` of every local row (the start included before the first tree)."""
        return self.F[:, 0] + (0.0 if self.started else float(self.init[0])) - self.y

    def gradients(self) -> None:
        g, h = self.loss.gradients(self.residuals(), self.alpha)
        top = float(np.abs(g).max()) if g.size else 0.0
        top = float(self.proto.reduce_maxima(np.array([top]))[0])
        # n rows of |g| <= 2**e (h = 1 <= 2**e) sum below 2**GH_BITS: the round's scale
        e = math.frexp(max(top, 1.0))[1]
        self.shift = min(MAX_GH_SHIFT, GH_BITS - int(self._rows).bit_length() - e)
        self.scale = math.ldexp(1.0, -self.shift)
        self.gh[:, 0] = np.rint(np.ldexp(g, self.shift))
        self.gh[:, 1] = np.rint(np.ldexp(h, self.shift))
        self._weigh()

    def select(self, t: int) -> Optional[Hypothesis]:
        first = not self.started
        h = super().select(t)
        if h is None or not self.loss.renew:
            return h
        tree, leaf = self._cache
        leaves = np.flatnonzero(tree.feature < 0)
        slot = np.full(tree.n_nodes, -1, dtype=np.int32)
        slot[leaves] = np.arange(leaves.size, dtype=np.int32)
        rows = self.bag(t)  # LightGBM renews a leaf from the rows it was grown on
        resid = -self.residuals()
        group = slot[leaf]
        if rows is not None:
            resid, group = resid[rows], group[rows]
        w = None if self.w is None else (self.w if rows is None else self.w[rows])
        pct = self.proto.leaf_percentiles(resid, group, leaves.size, self.loss.leaf_alpha(self.alpha), w)
        tree.value[leaves, 0] = (float(self.init[0]) if first else 0.0) + self.lr * pct
        return h

    def apply(self, h: Hypothesis) -> float:
        """Add the tree to the scores; the objective's metric on the training rows (exact sums)."""
        leaf, value = self.leaves_of(h)
        self.F[:, 0] += value[leaf, 0]
        self.started = True
        return self.metric(self.F[:, 0], self.y, self.w)

    def metric(self, F: np.ndarray, y: np.ndarray, w: Optional[np.ndarray]) -> float:
        """Collective: the objective's metric of scores ``F`` for targets ``y`` over all ranks' rows."""
        return regression_metric(self.proto, self.loss.metric, F - y, self.alpha, w, int(self.data.n_global))


def regression_metric(proto, metric: str, d: np.ndarray, alpha: float, w: Optional[np.ndarray], n: int) -> float:
    """Collective: ``metric`` (rmse, l1, huber, quantile) of residuals ``d = F - y`` over all ranks' rows,
    from exact sums (the same on any number of ranks); weighted by ``w`` if given."""
    from .losses import REGRESSION

    loss = next(obj for obj in REGRESSION.values() if obj.metric == metric).loss(d, alpha)
    if w is None:
        total, weight = float(proto.reduce_stats(loss)[0]), float(n)
    else:
        total, weight = proto.reduce_stats(np.concatenate([loss * w, w]),
                                           np.repeat(np.array([0, 1], dtype=np.int32), d.size), 2)
    mean = float(total) / float(weight) if weight > 0 else 0.0
    return math.sqrt(mean) if metric == "rmse" else mean
