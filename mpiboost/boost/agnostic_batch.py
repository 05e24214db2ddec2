"""Statistical agnostic multiclass boosting over the row partition (the batch form of online agnostic boosting).

Every training row i keeps a distribution ``P_i`` over the K classes, uniform
at the start and never reset. Round t:

1. the center fits a class stump W_t to the rows relabelled by their P_i:
   ``fractional``: on exact per-(feature, bin, class) sums over all rows,
   where row i adds ``P_i[c] / n`` to class c (int64 fixed point, reduced
   like SAMME's histograms), the stump classifying the most relabelled
   mass correctly; ``random``: on m0 rows drawn uniformly with replacement
   (:meth:`Protocol.proportional_sample` on unit masses), each relabelled
   with a class drawn from its P_i by a uniform number that is a hash of
   (seed, t, global row id), so the draw does not depend on the partition;
2. W_t is broadcast and every rank moves its rows' distributions one
   projected gradient step on the linear loss
   ``(2 e_{W_t(x_i)} - 1) / gamma - (2 e_{y_i} - 1)``:
   ``P_i <- proj(P_i - (2 eta / gamma) e_{W_t(x_i)} + 2 eta e_{y_i})``,
   ``eta = gamma / sqrt(T)`` (the constant parts shift every coordinate alike,
   which the projection onto the simplex ignores).

The output is the unweighted vote of the T stumps: with
``v(x) = (1/T) sum_t e_{W_t(x)}`` the predicted class is the argmax of
``proj(v / gamma)``, which is the argmax of v (the projection keeps the
order of the coordinates); ties go to the highest class, the rule of every
class-stump model. So the model is a class-stump ensemble with coefficient 1
per stump and ``predict``/``evaluate``/``export`` read it unchanged.

The P update depends on the stump alone, so replaying a checkpoint's stumps
restores the state; every per-row quantity (P_i, its fixed-point units, its
relabel draw) is computed row by row, so the model is the same on any number
of ranks.

Defaults, measured (scripts/experiments/agnostic_batch_check.py: balance-scale,
car, yeast, 5 shuffles, 80/20, T = 100): gamma = 0.3 is the best or within
noise of the best of 0.1/0.3/0.5/0.7/1.0 for both relabellings on all three;
gamma >= 0.7 falls towards the majority class (car: 70.5%).

gamma is the advantage the weak learner is assumed to have, and the update
drives P_i onto the true class until the true class leads the least-voted
class by gamma in the vote. A class stump names two classes, so on K
balanced classes it is right on at most about 2/K of the relabelled mass: at
K = 10 (digits) gamma = 0.3 is out of its reach, every P_i locks onto e_y, the
rows are never reweighted and the same few stumps repeat (test accuracy
0.51 where SAMME gets 0.86). So by default gamma = min(0.3, a0 / 2), a0 the
weak learner's own accuracy on the true labels (one fit before round 1, from
exact histograms over all rows: the same on any number of ranks): 0.3 where
it was measured (a0 >= 0.6 on balance-scale, car and yeast) and 0.10 on
digits (accuracy 0.87). A class tree names up to min(leaves, K) classes:
gamma = min(0.3, min(leaves, K) / (2K)). ``fractional``
is the default: at gamma = 0.3 it is as accurate as ``random`` or slightly
more (89.9/80.2/54.1% against 89.9/79.9/53.3%), draws nothing, and sends
O(d bins K) per round instead of O(m0 d); ``random`` with fewer draws than
rows (m0 = 100, 300) was less accurate on car.

**Trees** (``weak_learner = "tree"``): W_t is a class tree (one-hot leaves,
:class:`mpiboost.weak.tree.TreeGrower`) grown by the Gini gain of the
relabelled masses (``fractional``: row i adds ``P_i[c] / n`` to class c in
exact histograms over all ranks; ``random``: the center grows it on the m0
drawn rows); a leaf predicts its heaviest class. The vote and the OGD step are
unchanged.
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

from .._ext import _exact, _multiclass, _simplex
from ..model import index_of_scores
from ..protocol import fixed_point
from ..weak.class_stump import PACKED_SIZE
from ..weak.stump import MAX_SAMPLES, Stump
from .base import Algorithm, Hypothesis, Param
from .losses import grows_trees
from .params import TREE_NEWTON, trees_by_default

WEAK_LEARNER = Param(
    "weak_learner", str, "stump",
    "the weak learner W_t: a class stump (the least relabelled error) or a class tree (leaf-wise by the Gini "
    "gain of the relabelled masses, see --max-leaves); histogram, the older spelling, means a stump",
    choices=("stump", "tree", "histogram"),
)

RELABEL = ("fractional", "random")
GAMMA_CAP = 0.3  # the measured default where the weak learner can reach it (balance-scale, car, yeast)
ERROR_SPLIT = 0  # best_class_stump's criterion: the most (relabelled) mass classified correctly

_MASK = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15
_M1, _M2 = 0xBF58476D1CE4E5B9, 0x94D049BB133111EB


def _mix_int(z: int) -> int:
    """SplitMix64's finalizer on a Python int (the per-round key)."""
    z = (z + _GOLDEN) & _MASK
    z = ((z ^ (z >> 30)) * _M1) & _MASK
    z = ((z ^ (z >> 27)) * _M2) & _MASK
    return z ^ (z >> 31)


def row_uniforms(seed: int, t: int, rows: np.ndarray) -> np.ndarray:
    """A uniform number in [0, 1) per global row id, a function of (seed, t, row) alone.

    SplitMix64's finalizer of ``key(seed, t) xor row`` (uint64 arithmetic
    wraps), its top 53 bits as a double: the same for a row on any rank.
    """
    key = np.uint64(_mix_int(_mix_int(int(seed) & _MASK) ^ (int(t) & _MASK)))
    z = np.asarray(rows, dtype=np.uint64) ^ key
    z = z + np.uint64(_GOLDEN)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(_M1)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(_M2)
    z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) * (1.0 / 9007199254740992.0)


def draw_classes(P: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Row r's class drawn from ``P[r]`` with the uniform ``u[r]`` (inverse CDF), int32."""
    K = P.shape[1]
    cdf = np.cumsum(P, axis=1)
    cut = u * cdf[:, -1]
    return np.minimum((cdf <= cut[:, None]).sum(axis=1), K - 1).astype(np.int32)


def ogd_step(P: np.ndarray, predicted: np.ndarray, y: np.ndarray, gamma: float, eta: float) -> None:
    """``P[i] <- proj(P[i] - (2 eta / gamma) e_{predicted[i]} + 2 eta e_{y[i]})`` for every row, in place."""
    n = P.shape[0]
    if n == 0:
        return
    rows = np.arange(n)
    U = P.copy()
    U[rows, predicted] -= 2.0 * eta / gamma
    U[rows, y] += 2.0 * eta
    _simplex.project_rows(U, P)


class AgnosticBatch(Algorithm):
    """Statistical agnostic multiclass boosting: class stumps fitted to rows relabelled by per-row distributions.

    Beyond the papers: the batch form of Raman & Tewari's online agnostic multiclass boosting (2022). Every row
    keeps a distribution over the classes, moved by online gradient descent on the weak learners' mistakes and
    never reset; each round fits a class stump to the rows relabelled by their distributions (exactly, or by a
    seeded draw), and the vote is unweighted. No guarantee of its own is claimed: the online algorithm's regret
    bound motivates the rule, and docs/results.md measures it against SAMME. The same model bit for bit on any
    number of ranks.
    """

    name = "agnostic-batch"
    paper = "the batch form of Raman & Tewari 2022 (online agnostic multiclass boosting), beyond the paper"
    summary = ("statistical agnostic multiclass boosting: class stumps fitted to the rows relabelled by per-row OGD "
               "distributions, unweighted vote")
    weight_rule = ("each row's relabelled mass is P_i times its share of the weights (the fractional histograms "
                   "and trees); the random relabelling draws rows in proportion to the weights")
    tasks = ("binary", "multiclass")
    labels = "index"
    vote = "majority"
    needs_rounds = True
    stop_message = "rounds"  # select never ends training: every round adds a stump
    weak_learners = ("stump", "tree")
    parameters = (
        *trees_by_default((WEAK_LEARNER,)),  # class trees validate better; the paper: class stumps
        *TREE_NEWTON,
        Param("gamma", float, None,
              "the weak learner's assumed advantage gamma: the OGD step is eta = gamma / sqrt(T) and a "
              "stump's own class moves 1 / gamma times as far as the true class (default min(0.3, a0 / 2), a0 "
              "a class stump's accuracy on the true labels; class trees: min(0.3, min(leaves, K) / (2K)))",
              low=0.0, low_open=True, high=1.0),
        Param("relabel", str, "fractional",
              "how the stump sees the rows: every class with its mass P_i[c], from exact histograms over all "
              "rows (fractional), or m0 rows drawn uniformly, each with one class drawn from its P_i (random)",
              choices=RELABEL),
        Param("n_samples", int, 0, "random relabelling: rows m0 drawn per round (0: as many as the training rows)",
              low=0, high=MAX_SAMPLES, option="--samples", metavar="N", when=("relabel", "random")),
        Param("rounds", int, None, "the number of rounds T (the OGD step eta = gamma / sqrt(T); set by --rounds)",
              low=1, cli=False),
    )

    @classmethod
    def check_params(cls, params: dict, given) -> None:
        if params["rounds"] is None:
            raise ValueError(f"{cls.name} needs the number of rounds T (params['rounds'])")

    def check_data(self, data) -> None:
        if data.n_classes < 2:
            raise ValueError(f"{self.name} needs at least two classes")
        if self.params["relabel"] == "random" and not self.params["n_samples"] and data.n_global > MAX_SAMPLES:
            raise ValueError(f"{self.name}: {data.n_global:,} training rows are more than {MAX_SAMPLES:,} rows per "
                             "round for the center: give --samples N")

    # ------------------------------------------------------------------ setup
    def setup(self, data, proto, seed: int = 0) -> None:
        self.check_data(data)
        self.data, self.proto, self.seed = data, proto, int(seed)
        self.K = int(data.n_classes)
        n = data.n_local
        self.y = np.ascontiguousarray(data.y, dtype=np.int32)
        self.votes = np.zeros((n, self.K))  # the ensemble's vote counts, for the training error
        self.n_bins = np.ascontiguousarray(data.bins.n_bins, dtype=np.int64)
        self._pred = np.empty(n, dtype=np.int32)
        self._units = np.empty(n, dtype=np.int64)
        self._zeros = np.zeros(n, dtype=np.int32)
        self._one = np.zeros((data.cols.shape[0], 256, 1), dtype=np.int64)
        self._hist = np.zeros((data.cols.shape[0], 256, self.K), dtype=np.int64)
        self.sw, self.total_weight = self._sample_weights(data, proto)
        self.gamma = self._default_gamma() if self.params["gamma"] is None else float(self.params["gamma"])
        self.eta = self.gamma / math.sqrt(int(self.params["rounds"]))
        self.P = np.full((n, self.K), 1.0 / self.K)
        if self.params["relabel"] != "fractional":
            self.m0 = int(self.params["n_samples"]) or int(data.n_global)
            if self.sw is None:
                self._cum = np.arange(1, n + 1, dtype=np.int64)  # unit masses: uniform draws over the global rows
            else:  # draws in proportion to the sample weights (fixed point, rounded per row)
                self._cum = np.cumsum(fixed_point(self._mass(np.ones(n))))
            self._ids = np.arange(data.start, data.start + n, dtype=np.int64)
        self.model = self.new_model(data, output="argmax")
        self.spec = None
        if grows_trees(self.params):
            from ..weak.tree import TreeGrower, TreeSpec

            self.spec = TreeSpec.from_params(self.params)
            self.grower = TreeGrower(self.spec, proto, data.cols, self.n_bins) \
                if self.params["relabel"] == "fractional" else None

    @staticmethod
    def _sample_weights(data, proto) -> tuple[Optional[np.ndarray], float]:
        """The sample weights and their exact total W (None and n without weights)."""
        sw = getattr(data, "weight", None)
        if sw is None:
            return None, float(data.n_global)
        sw = np.ascontiguousarray(sw, dtype=np.float64)
        (total,) = proto.reduce_terms([_exact.partials(sw)])
        if not total > 0:
            raise ValueError("the sample weights sum to 0")
        return sw, float(total)

    def _mass(self, column: np.ndarray) -> np.ndarray:
        """``column`` times each row's mass, 1/n or its share of the sample weights w_i / W (as (column w_i) / W:
        weights of one power of two then give the unweighted masses bit for bit)."""
        return column / self.total_weight if self.sw is None else column * self.sw / self.total_weight

    def _default_gamma(self) -> float:
        """min(0.3, a0 / 2): a0 the weak learner's accuracy on the true labels (class trees: its reach)."""
        if grows_trees(self.params):
            return min(GAMMA_CAP, min(int(self.params["max_leaves"]), self.K) / (2.0 * self.K))
        self.P = np.eye(self.K)[self.y]  # the true labels as the relabelled masses
        v = self.proto.broadcast_hypothesis(self._fit_fractional(), PACKED_SIZE)
        return min(GAMMA_CAP, 0.5 * (1.0 - float(v[5])))

    # ----------------------------------------------------------------- select
    def select(self, t: int) -> Optional[Hypothesis]:
        if self.spec is not None:
            tree, err = self._tree_fractional() if self.grower is not None else self._tree_random(t)
            return Hypothesis(tree, 1.0, {"weak_error": err, "edge": 1.0 - 1.0 / self.K - err, "gamma": self.gamma})
        if self.params["relabel"] == "fractional":
            packed = self._fit_fractional()
        else:
            packed = self._fit_random(t)
        v = self.proto.broadcast_hypothesis(packed, PACKED_SIZE)
        stump = Stump(int(v[0]), int(v[1]), int(v[2]), bool(v[4]), right=int(v[3]))
        return Hypothesis(stump, 1.0, {"weak_error": float(v[5]), "edge": 1.0 - 1.0 / self.K - float(v[5]),
                                       "gamma": self.gamma})

    def _fit_fractional(self):
        """Exact class sums of P_i / n over all rows; on the center, the best stump and its relabelled error."""
        for c in range(self.K):
            fixed_point(self._mass(np.ascontiguousarray(self.P[:, c])), self._units)
            _multiclass.build_class_histogram(self.data.cols, self._units, self._zeros, self._one)
            self._hist[:, :, c] = self._one[:, :, 0]
        hist = self.proto.reduce_class_histograms(self._hist, self.n_bins)
        if not self.proto.is_center:
            return None
        f, b, left, right, ml, score = _multiclass.best_class_stump(hist, self.n_bins, ERROR_SPLIT)
        total = int(hist[0].sum())
        return [f, b, left, right, ml, (total - score) / total if total else 0.0]

    def _grow(self, grower, gh: np.ndarray, n: int):
        """A class tree for the relabelled masses ``gh`` and its relabelled error (every rank alike)."""
        from ..protocol import FIXED_SHIFT
        from ..weak.tree import class_leaf

        K, leaf_class, mass = self.K, class_leaf(self.K), [0, 0]

        def leaf(sums: np.ndarray) -> np.ndarray:
            # a leaf's class is its heaviest: this mass is right
            mass[0] += sum(int(x) for x in sums[:, :K].max(axis=1))
            mass[1] += sum(int(x) for x in sums[:, :K].ravel())
            return leaf_class(sums)

        scale = math.ldexp(1.0, -FIXED_SHIFT) * n  # the mean row weighs about 1
        tree, _ = grower.grow(gh, K, scale, scale, leaf, "class")
        return tree, (1.0 - mass[0] / mass[1]) if mass[1] else 0.0

    def _class_units(self, P: np.ndarray, n: int, mass=None) -> np.ndarray:
        """Channels of the class trees: ``P[i, c] / n`` per class (``mass(P[:, c])`` with sample weights, see
        :meth:`_mass`), the row's mass K times, the count."""
        from .._ext import _tree
        from ..protocol import FIXED_SHIFT

        K = self.K
        gh = np.zeros((P.shape[0], 2 * K + 1), dtype=np.int64)
        gh[:, 2 * K] = 1
        for c in range(K):
            col = np.ascontiguousarray(P[:, c])
            _tree.to_units(col / n if mass is None else mass(col), FIXED_SHIFT, gh, c)
        _tree.to_units(np.full(P.shape[0], 1.0 / n) if mass is None else mass(np.ones(P.shape[0])), FIXED_SHIFT, gh,
                       K, True)
        gh[:, K + 1:2 * K] = gh[:, K:K + 1]
        return gh

    def _tree_fractional(self):
        return self._grow(self.grower, self._class_units(self.P, float(self.data.n_global),
                                                         None if self.sw is None else self._mass),
                          self.data.n_global)

    def _tree_random(self, t: int):
        """m0 uniform draws relabelled from P; the center grows the tree on them and broadcasts it."""
        from ..weak.tree import TreeGrower, pack_tree, packed_size, unpack_tree

        labels = draw_classes(self.P, row_uniforms(self.seed, t, self._ids))
        sample = self.proto.proportional_sample(self._cum, self.data.cols, labels, self.m0, self.rng(t),
                                                start=self.data.start)
        K = self.K
        size = packed_size(self.spec.max_leaves, K)
        packed = None
        if self.proto.is_center:
            one_hot = np.zeros((sample.y.shape[0], K))
            one_hot[np.arange(sample.y.shape[0]), np.asarray(sample.y, dtype=np.int64)] = 1.0
            Xs = np.ascontiguousarray(sample.X.T)
            tree, err = self._grow(TreeGrower(self.spec, None, Xs, self.n_bins),
                                   self._class_units(one_hot, float(self.m0)), self.m0)
            packed = pack_tree(tree, err, size)
        return unpack_tree(self.proto.broadcast_hypothesis(packed, size), K, "class")

    def _fit_random(self, t: int):
        """m0 uniform draws, relabelled from P; on the center, the best stump on them and its sample error."""
        labels = draw_classes(self.P, row_uniforms(self.seed, t, self._ids))
        sample = self.proto.proportional_sample(self._cum, self.data.cols, labels, self.m0, self.rng(t),
                                                start=self.data.start)
        if not self.proto.is_center:
            return None
        hist = np.zeros((self.data.cols.shape[0], 256, self.K), dtype=np.int64)
        ones = np.ones(sample.y.shape[0], dtype=np.int64)
        _multiclass.build_class_histogram(np.ascontiguousarray(sample.X.T), ones,
                                          np.ascontiguousarray(sample.y, dtype=np.int32), hist)
        f, b, left, right, ml, score = _multiclass.best_class_stump(hist, self.n_bins, ERROR_SPLIT)
        return [f, b, left, right, ml, (self.m0 - score) / self.m0]

    # ------------------------------------------------------------------ apply
    def apply(self, h: Hypothesis) -> dict:
        s = h.stump
        _multiclass.class_stump_predict(s.column(self.data.cols), *s.class_args(), self._pred)
        ogd_step(self.P, self._pred, self.y, self.gamma, self.eta)
        rows = np.arange(self.P.shape[0])
        self.votes[rows, self._pred] += 1.0
        errors = int(np.count_nonzero(index_of_scores(self.votes) != self.y)) if rows.size else 0
        self.model.append(s, 1.0)
        return {"train_errors": int(self.proto.reduce_counts(np.array([errors]))[0])}
