"""Newton boosting of the logistic loss: binary (``--algo adaboost --loss logistic``) and softmax.

Gradient boosting as LightGBM and XGBoost do it, over the protocol: each
round every row's gradient ``g`` and hessian ``h`` of the loss at the current
scores are rounded to fixed-point units (:func:`mpiboost.weak.tree.gh_shift`),
a tree is grown on their exact sums (:class:`~mpiboost.weak.tree.TreeGrower`),
and each leaf moves the scores of its rows by the Newton step
``-learning_rate * G / (H + l2)``.

* binary: ``F`` one score per row, ``p = sigmoid(F)``, ``g = p - [y = +1]``,
  ``h = p (1 - p)``; the scores start at the log-odds of the global class
  counts (LightGBM's ``boost_from_average``), added to the first tree's leaves
  so the model is its trees alone;
* softmax: K scores per row, ``p = softmax(F)``, ``g_k = p_k - [y = k]``,
  ``h_k = K / (K - 1) p_k (1 - p_k)`` (LightGBM's scaling); one tree per round
  whose leaves hold K values (one histogram pass carries every class's
  gradients and hessians); the scores start at the log class frequencies.

With ``--weak-learner stump`` the tree has two leaves (a Newton stump). Every
row's arithmetic is its own (exp of its own scores), so the model is the same
on any number of ranks.
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

from .._ext import _tree
from ..weak.tree import TreeGrower, TreeSpec, gh_shift
from .base import Hypothesis
from .losses import LOGISTIC, SOFTMAX, grows_trees
from .params import bagging_freq


def _threads() -> int:
    from .._ext import _openmp

    return int(_openmp.get_max_threads())


class NewtonBoost:
    """The state and rounds of Newton boosting for one algorithm (``K`` = 1 binary, else classes).

    Parameters
    ----------
    data, proto
        This rank's :class:`~mpiboost.data.load.Shard` and the protocol.
    params
        The algorithm's resolved parameters (tree options, ``learning_rate``).
    K
        1 for the binary logistic loss (labels -1/+1), the number of classes for softmax.
    """

    def __init__(self, data, proto, params: dict, K: int, seed: int = 0) -> None:
        self.data, self.proto, self.K = data, proto, int(K)
        self.loss = LOGISTIC if self.K == 1 else SOFTMAX
        self._trees(params, seed)
        sums = self._weight_sums(proto) if self.w is not None else None  # per class, then all: exact
        total = sums[-1] if sums is not None else float(data.n_global)
        # every row's |g| <= 1 (h too) times its weight: the units leave the sum of the weights room in int64
        self.shift = gh_shift(max(int(data.n_global), int(math.ceil(total))))
        self.scale = math.ldexp(1.0, -self.shift)
        self.cls = np.ascontiguousarray(data.y, dtype=np.int32) if self.K > 1 else np.zeros(0, dtype=np.int32)
        # -1/+1 labels, or class indices 0/1 (gbdt): +1 is the second class either way
        self.sign = np.where(data.y > 0, 1, -1).astype(np.int8) if self.K == 1 else np.zeros(0, dtype=np.int8)
        if self.K == 1:
            self.target01 = (data.y > 0).astype(np.float64)
        if self.w is not None:
            # the start from the weighted class shares (LightGBM's boost_from_average with weights); exact sums
            self.init = self.loss.start(sums[:-1], sums[-1])
        else:
            if self.K == 1:
                local = np.array([np.count_nonzero(data.y > 0)], dtype=np.int64)
            else:
                local = np.bincount(np.asarray(data.y, dtype=np.int64), minlength=self.K).astype(np.int64)
            counts = proto.reduce_counts(local)
            self.init = self.loss.start(counts, int(data.n_global))

    def _trees(self, params: dict, seed: int) -> None:
        """What every Newton booster holds whatever its loss: the scores, weights, tree grower and sampling."""
        data, proto = self.data, self.proto
        n = data.n_local
        self.F = np.zeros((n, self.K))
        self.w = None if getattr(data, "weight", None) is None else np.ascontiguousarray(data.weight)
        if self.w is not None:
            whole = (self.w == np.floor(self.w)) & (self.w < 2.0**31)
            self._w_whole, self._w_int = whole[:, None], np.where(whole, self.w, 0).astype(np.int64)[:, None]
        self.gh = np.zeros((n, 2 * self.K + 1), dtype=np.int64)
        self.gh[:, 2 * self.K] = 1
        self.lr = float(params["learning_rate"])
        self.grad_bins = int(params.get("grad_bins") or 0)
        self.bag_fraction = float(params.get("bagging_fraction") or 1.0)
        self.bag_freq = bagging_freq(params)
        self.feature_fraction = float(params.get("feature_fraction") or 1.0)
        self._bag = None  # (bag index, this rank's rows in the bag)
        self.seed = int(seed) & ((1 << 64) - 1)
        spec = TreeSpec.from_params(params)
        if "weak_learner" in params and not grows_trees(params):
            spec = TreeSpec(**{**spec.__dict__, "max_leaves": 2})  # a Newton stump
        self.spec = spec
        # categorical features split many-vs-many (one class: LightGBM's rules, TreeSpec's cat_* fields)
        categorical = getattr(data.bins, "categorical", None) if self.K == 1 else None
        self.grower = TreeGrower(spec, proto, data.cols, data.bins.n_bins, categorical=categorical)
        self._cache = None  # (tree, each local row's leaf) of the tree last grown
        self._q = None  # the quantized channels (grad_bins), reused every round
        self.started = False  # a tree (holding the start in its leaves) was added

    def _weight_sums(self, proto) -> np.ndarray:
        """Exact global sums of the weights: of the positives (K = 1) or of each class, then of all rows."""
        from .._ext import _exact

        y = np.asarray(self.data.y)
        parts = [self.w[y > 0]] if self.K == 1 else [self.w[y == k] for k in range(self.K)]
        sums = np.asarray(proto.reduce_terms([_exact.partials(np.ascontiguousarray(p)) for p in parts + [self.w]]),
                          dtype=np.float64)
        if not sums[-1] > 0:
            raise ValueError("the sample weights sum to 0: no row to learn from")
        if sums[-1] >= 2.0**52:
            raise ValueError(f"the sample weights sum to {sums[-1]:.3g}, past 2**52: scale them down (the trees "
                             "depend on their ratios; --min-child-weight on their sums)")
        return sums

    def gradients(self) -> None:
        """Fill ``gh`` with the units of every row's gradients and hessians at ``F`` (+ the start), times the
        rows' weights (integers exactly; others rounded per row, the same on any rank)."""
        init = np.zeros(self.K) if self.started else self.init  # the start is in the first tree's leaves
        self.loss.units(self.F, init, self.target01 if self.K == 1 else self.cls, self.shift, self.gh)
        self._weigh()

    def _weigh(self) -> None:
        """The units of ``gh`` times the rows' weights: integers exactly, others rounded per row."""
        if self.w is not None:
            g = self.gh[:, :2 * self.K]
            g[...] = np.where(self._w_whole, g * self._w_int, np.rint(g * self.w[:, None]).astype(np.int64))

    def select(self, t: int) -> Optional[Hypothesis]:
        """Round t's tree; None when it cannot split (after the first round)."""
        first = not self.started
        self.gradients()
        K, lr, l2, sc = self.K, self.lr, float(self.spec.l2), self.scale
        init = self.init if first else np.zeros(K)

        def leaf_value(sums: np.ndarray) -> np.ndarray:
            G = sums[:, :K] * sc
            H = sums[:, K:2 * K] * sc
            step = np.where(H + l2 > 0, -G / np.where(H + l2 > 0, H + l2, 1.0), 0.0)
            return init + lr * step

        def leaf_l2(sums: np.ndarray, extra: np.ndarray) -> np.ndarray:
            """The leaves below a many-vs-many categorical split take cat_l2 more (LightGBM's outputs)."""
            G = sums[:, :K] * sc
            H = sums[:, K:2 * K] * sc
            lam = l2 + extra[:, None]
            step = np.where(H + lam > 0, -G / np.where(H + lam > 0, H + lam, 1.0), 0.0)
            return init + lr * step

        cat = leaf_l2 if self.grower.categorical is not None else None

        subset = self.bag(t)
        self.grower.features(self.features(t))
        if self.grad_bins:
            gq, g_scale, h_scale = self.quantized(t)
            tree, leaf = self.grower.grow(gq, K, g_scale, h_scale, leaf_value, "real", leaf_gh=self.gh, leaf_h_scale=sc,
                                          grad_bins=self.grad_bins, n_rows=int(self.data.n_global), subset=subset,
                                          leaf_l2=cat)
        else:
            tree, leaf = self.grower.grow(self.gh, K, sc, sc, leaf_value, "real", subset=subset, leaf_l2=cat)
        if subset is not None:
            leaf = tree.leaves(self.data.cols)  # the rows out of the bag follow the tree too
        if tree.n_leaves < 2 and not first:
            return None
        self._cache = (tree, leaf)
        metrics = {"leaves": tree.n_leaves, "bytes_tree": self.grower.bytes_per_tree[-1]}
        return Hypothesis(tree, 1.0, metrics)

    def bag(self, t: int) -> Optional[np.ndarray]:
        """Round ``t``'s rows to grow on (this rank's, sorted), or None for all of them.

        A new bag every ``bagging_freq`` rounds: each row in with probability ``bagging_fraction``, drawn from
        (seed, bag index, global row) (:func:`mpiboost._ext._quantize.bag`), so the bag, and the tree, are the
        same on any number of ranks.
        """
        if self.bag_freq <= 0 or self.bag_fraction >= 1.0:
            return None
        from .._ext import _quantize

        key = (max(int(t), 1) - 1) // self.bag_freq
        if self._bag is None or self._bag[0] != key:
            inside = np.empty(self.data.n_local, dtype=np.uint8)
            _quantize.bag(self.seed, key, int(self.data.start), self.bag_fraction, inside, threads=_threads())
            self._bag = (key, np.flatnonzero(inside))
        return self._bag[1]

    def features(self, t: int) -> Optional[np.ndarray]:
        """Round ``t``'s features a split may take (a (d,) mask), or None for all: ``round(d x feature_fraction)``
        of them (at least one), drawn from (seed, round) alike on every rank."""
        if self.feature_fraction >= 1.0 or int(self.data.d) <= 1:
            return None
        d = int(self.data.d)
        k = min(d, max(1, int(d * self.feature_fraction + 0.5)))
        rng = np.random.default_rng([self.seed, int(t), 0xFEA7])
        mask = np.zeros(d, dtype=bool)
        mask[rng.choice(d, size=k, replace=False)] = True
        return mask

    def quantized(self, t: int) -> tuple[np.ndarray, float, float]:
        """Round ``t``'s gradients and hessians as integers of ``grad_bins`` levels: ``(units, g_scale, h_scale)``.

        The scales come from the global largest ``|g|`` and ``h`` (one reduction): ``|g| / g_scale`` is at
        most ``bins / 2`` and ``h / h_scale`` at most ``bins``, as LightGBM's ``num_grad_quant_bins``.
        Each row rounds up or down at random, keyed by (seed, round, global row, class)
        (:mod:`mpiboost._ext._quantize`): the integers, their exact sums and the tree are the same on
        any number of ranks and threads. The row count channel stays exact.
        """
        from .._ext import _quantize

        K, sc, B = self.K, self.scale, self.grad_bins
        g_units, h_units = _quantize.unit_maxima(self.gh, K)
        g_max, h_max = self.proto.reduce_maxima(np.array([g_units * sc, h_units * sc]))  # exact: units < 2**53
        g_scale = g_max / (B / 2.0) if g_max > 0 else 1.0
        h_scale = h_max / B if h_max > 0 else 1.0
        if self._q is None:
            self._q = np.empty_like(self.gh)
        _quantize.quantize_units(self.gh, K, sc, g_scale, h_scale, self.seed, int(t), int(self.data.start),
                                 (B + 1) // 2, B, self._q, threads=_threads())
        return self._q, g_scale, h_scale

    def leaves_of(self, h: Hypothesis) -> tuple[np.ndarray, np.ndarray]:
        """(each local row's leaf, the leaf values times the coefficient) of round ``h``'s tree."""
        tree = h.stump
        if self._cache is not None and self._cache[0] is tree:
            leaf = self._cache[1]
        else:
            leaf = tree.leaves(self.data.cols)  # a replayed round (resume)
        return leaf, (tree.value if h.coef == 1.0 else tree.value * h.coef)

    def apply(self, h: Hypothesis) -> int:
        """Add the tree to the scores; the global count of training rows now misclassified."""
        leaf, value = self.leaves_of(h)
        wrong = _tree.add_leaves(self.F, np.ascontiguousarray(value), np.ascontiguousarray(leaf, dtype=np.int32),
                                 self.cls, self.sign)
        self.started = True
        return int(self.proto.reduce_counts(np.array([wrong]))[0])
