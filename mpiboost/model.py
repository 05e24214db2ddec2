"""The trained ensemble: prediction, the HDF5 model file and its canonical JSON.

A model is a list of stumps with coefficients, the bin edges that turn raw
features into the bins the stumps test, the class list (the user's label
values), and what produced it (algorithm, parameters, mpiboost version).
Binary stumps predict -1/+1 (``left``, ``right = -left``) and the ensemble
``sign(sum_t coef_t h_t(x))`` (``output = "sign"``; a zero score gives +1,
class 1); an unweighted majority vote has all coefficients 1. Class stumps
predict class indices and the ensemble ``argmax_c sum_t coef_t [h_t(x) = c]``
(``output = "argmax"``; ties go to the highest class). A regression model's
trees sum to the prediction itself (``output = "value"``; no classes).
A round may add several stumps (MSDTrA's mixture of candidates): ``round``
says which round each stump belongs to, and the transfer algorithms that
vote with the later rounds only (``params["vote_from"] == "half"``, as in
TrAdaBoost) give the earlier rounds' stumps no vote.

The JSON export is canonical (sorted keys, shortest round-trip floats, no
timestamps or host names), so two models compare byte for byte.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from ._version import __version__
from .data import labels as lab
from .data.binning import BinMapper
from .errors import InputError
from .model_base import ModelBase
from .model_file import (ENSEMBLE_ARRAYS, LINKS, MODEL_FORMAT, OUTPUTS, TREE_ARRAYS, TREE_KINDS, TREE_STATS, _plain,
                         read_model, write_model)
from .links import LINKS as LINK_OF


@dataclass
class Model(ModelBase):
    """A stump ensemble over binned features."""

    algorithm: str
    params: dict
    bins: BinMapper
    feature: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    bin: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    left: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    missing_left: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.uint8))
    coef: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.float64))
    vote: str = "weighted"
    feature_names: Optional[list] = None
    info: dict = field(default_factory=dict)  # training facts (rows, labels, stopping reason)
    domain: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))  # -1: plain vote
    domain_classifier: Any = None  # Q(k|x) of a Q-ensemble (MultiBoost)
    domain_names: Optional[list] = None
    round: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))  # 1-based round of each stump
    right: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    classes: Optional[list] = None  # the user's label values; None: -1, +1
    output: str = "sign"
    # Tree members: tree[t] >= 0 is member t's index in ``trees`` (its stump fields are then unused:
    # feature -1, the constant). Scores of tree models are sum_t coef_t value_t(leaf of x).
    tree: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    trees: list = field(default_factory=list)
    link: Optional[str] = None

    def __post_init__(self) -> None:
        if self.classes is None:
            self.classes = [] if self.output == "value" else [-1, 1]
        if self.output not in OUTPUTS:
            raise ValueError(f"output must be one of {OUTPUTS}, not {self.output!r}")
        if self.link not in LINKS:
            raise ValueError(f"link must be one of {LINKS}, not {self.link!r}")
        if self.tree.shape[0] != self.feature.shape[0]:
            self.tree = np.full(self.feature.shape[0], -1, dtype=np.int32)

    @property
    def takes_task(self) -> bool:
        """One ensemble per task (``vote = "task"``): scoring a row needs its task id."""
        return self.vote == "task"

    @property
    def has_trees(self) -> bool:
        return bool(self.trees)

    @property
    def n_values(self) -> int:
        """Scores per row: the classes of an argmax model, else 1 (a sign's score, a regression's value)."""
        return self.n_classes if self.output == "argmax" else 1

    @property
    def is_regression(self) -> bool:
        """The model predicts numeric targets (``output = "value"``), not classes."""
        return self.output == "value"

    @property
    def needs_raw(self) -> bool:
        """True if prediction needs the raw features (a Q-ensemble)."""
        return self.domain_classifier is not None

    # ------------------------------------------------------------ building
    @property
    def n_stumps(self) -> int:
        return int(self.feature.shape[0])

    @property
    def n_features(self) -> int:
        return self.bins.n_features

    @property
    def n_rounds(self) -> int:
        return int(self.round[-1]) if self.round.shape[0] else 0

    def first_voting_round(self) -> int:
        """The first round whose stumps vote: 1, or ceil(M/2) of M rounds with ``vote_from = "half"``."""
        if (self.params or {}).get("vote_from") == "half":
            return max(1, -(-self.n_rounds // 2))
        return 1

    def vote_coefficients(self) -> np.ndarray:
        """Each stump's coefficient in the vote (0 for rounds before :meth:`first_voting_round`)."""
        t0 = self.first_voting_round()
        if t0 <= 1:
            return self.coef
        return np.where(self.round >= t0, self.coef, 0.0)

    def append(self, stump, coef: float, domain: Optional[int] = None, round: Optional[int] = None) -> None:
        """Add a stump; it starts a new round unless ``round`` names the current one."""
        r = self.n_rounds + 1 if round is None else int(round)
        if r < self.n_rounds:
            raise ValueError(f"round {r} comes before the model's last round {self.n_rounds}")
        from .weak.tree import Tree

        if isinstance(stump, Tree):
            self.tree = np.append(self.tree, np.int32(len(self.trees))).astype(np.int32)
            self.trees.append(stump)
            from .weak.stump import Stump

            stump = Stump(-1, 0, 1, False, 0 if self.output == "argmax" else None)
        else:
            if self.trees:
                raise ValueError("a model of trees takes trees only")
            self.tree = np.append(self.tree, np.int32(-1)).astype(np.int32)
        self.round = np.append(self.round, np.int32(r)).astype(np.int32)
        self.domain = np.append(self.domain, np.int32(-1 if domain is None else domain)).astype(np.int32)
        self.feature = np.append(self.feature, np.int32(stump.feature)).astype(np.int32)
        self.bin = np.append(self.bin, np.int32(stump.bin)).astype(np.int32)
        self.left = np.append(self.left, np.int32(stump.left)).astype(np.int32)
        self.right = np.append(self.right, np.int32(stump.right_value)).astype(np.int32)
        self.missing_left = np.append(self.missing_left, np.uint8(stump.missing_left)).astype(np.uint8)
        self.coef = np.append(self.coef, float(coef)).astype(np.float64)

    def stumps(self):
        from .weak.stump import Stump

        classes = self.output == "argmax"
        for t in range(self.n_stumps):
            if self.tree[t] >= 0:
                yield self.trees[int(self.tree[t])], float(self.coef[t])
                continue
            right = int(self.right[t]) if classes else None
            stump = Stump(int(self.feature[t]), int(self.bin[t]), int(self.left[t]), bool(self.missing_left[t]), right)
            yield stump, float(self.coef[t])

    def truncated(self, rounds: int) -> "Model":
        """The model of the first ``rounds`` rounds (stumps, for one stump per round)."""
        m = Model(**{k: v for k, v in self.__dict__.items() if not k.startswith("_")})
        keep = int(np.searchsorted(self.round, rounds, side="right"))
        for name in ENSEMBLE_ARRAYS:
            setattr(m, name, getattr(self, name)[:keep].copy())
        m.tree = self.tree[:keep].copy()
        m.trees = self.trees[: int(self.tree[:keep].max(initial=-1)) + 1]
        return m

    def rounds(self):
        """``(round, [(stump, coef, domain), ...])`` for each round, in order."""
        items = list(zip(self.stumps(), self.domain, self.round))
        out: list = []
        for (stump, coef), k, r in items:
            entry = (stump, coef, None if k < 0 else int(k))
            if out and out[-1][0] == int(r):
                out[-1][1].append(entry)
            else:
                out.append((int(r), [entry]))
        return out

    @property
    def feature_importances_(self) -> np.ndarray:
        """Split counts per feature, normalised to sum 1 (zeros if no split): LightGBM's ``split`` importance."""
        imp = self.feature_importances("split")
        total = imp.sum()
        return imp / total if total > 0 else imp

    def feature_importances(self, kind: str = "split") -> np.ndarray:
        """How much each feature is used, shape (d,): ``split`` counts its splits (stumps and tree nodes);
        ``gain`` sums the loss reductions of its tree splits as grown (zeros for stumps and for trees saved
        before model format 4, which kept no gains). Not normalised; members of every round count, voting or
        not. LightGBM's ``Booster.feature_importance`` of the exported model gives the same numbers.
        """
        if kind not in ("split", "gain"):
            raise ValueError(f"kind must be split or gain, not {kind!r}")
        out = np.zeros(self.n_features, dtype=np.float64)
        stump = (self.tree < 0) & (self.feature >= 0)
        if kind == "split":
            np.add.at(out, self.feature[stump], 1.0)
        used = {int(i) for i in self.tree if i >= 0}
        for i in sorted(used):
            tr = self.trees[i]
            inner = tr.feature >= 0
            np.add.at(out, tr.feature[inner], 1.0 if kind == "split" else tr.gain[inner])
        return out

    def feature_importance(self, importance_type: str = "split") -> np.ndarray:
        """:meth:`feature_importances` under LightGBM's ``Booster.feature_importance`` name and argument."""
        return self.feature_importances(importance_type)

    def thresholds(self) -> np.ndarray:
        """Real-valued threshold of each stump (``x <= threshold`` goes left)."""
        return np.array(
            [self.bins.threshold(f, b) if f >= 0 else np.inf for f, b in zip(self.feature, self.bin)], dtype=np.float64
        )

    # ---------------------------------------------------------- prediction
    def _arrays(self, start: int = 0, stop: Optional[int] = None, coef: Optional[np.ndarray] = None):
        sl = slice(start, stop)
        c = self.vote_coefficients() if coef is None else coef
        return (
            np.ascontiguousarray(self.feature[sl], dtype=np.int32),
            np.ascontiguousarray(self.bin[sl], dtype=np.int32),
            np.ascontiguousarray(self.left[sl], dtype=np.int32 if self.output == "argmax" else np.int8),
            *((np.ascontiguousarray(self.right[sl], dtype=np.int32),) if self.output == "argmax" else ()),
            np.ascontiguousarray(self.missing_left[sl], dtype=np.uint8),
            np.ascontiguousarray(c[sl], dtype=np.float64),
        )

    def decision_binned(self, cols: np.ndarray, X: Optional[np.ndarray] = None,
                        task: Optional[np.ndarray] = None) -> np.ndarray:
        """Ensemble scores for feature-major bins ``cols`` (d, n) uint8 (raw rows: :meth:`decision_function`).

        ``output = "sign"``: ``sum_t coef_t h_t(x)``, shape (n,); a Q-ensemble
        weighs stump t by ``Q(domain_t|x)`` and needs the raw rows ``X`` (n, d)
        for the domain classifier; a task model (``vote = "task"``) sums, for
        each row, the stumps of the row's own task (``task``: the rows' task
        ids). ``output = "argmax"``: per-class sums ``sum_t coef_t [h_t(x) = c]``,
        shape (n, K).
        """
        from ._ext import _predict

        cols = np.ascontiguousarray(cols, dtype=np.uint8)
        if self.trees and self.takes_task:
            return self._task_tree_scores(cols, task)
        if self.trees and self.domain_classifier is not None:
            return self._q_tree_scores(cols, X)
        if self.trees:
            out = self.tree_scores(cols, 0, self.n_stumps, self.vote_coefficients())
            return out if self.output == "argmax" else out[:, 0]
        if self.takes_task:
            return self._task_scores(cols, task)
        if self.output == "argmax":
            from ._ext import _multiclass

            out = np.zeros((cols.shape[1], self.n_classes), dtype=np.float64)
            _multiclass.add_class_stumps(cols, *self._arrays(), out)
            return out
        out = np.empty(cols.shape[1], dtype=np.float64)
        if self.domain_classifier is None:
            _predict.predict_binned(cols, *self._arrays(), out)
            return out
        if X is None:
            raise ValueError("this model weighs its stumps by Q(k|x): pass the raw features")
        Q = np.ascontiguousarray(self.domain_classifier.proba(X))
        _predict.predict_binned_q(cols, *self._arrays(), np.ascontiguousarray(self.domain, dtype=np.int32), Q, out)
        return out

    def forest(self) -> tuple:
        """The trees as flat arrays for the kernels: (feature, bin, missing_left, left, right, value, start)."""
        cached = getattr(self, "_forest", None)
        if cached is not None and cached[0] == len(self.trees):
            return cached[1]
        from .weak.tree import flatten

        arrays = flatten(self.trees, self.n_values)
        self._forest = (len(self.trees), arrays)
        return arrays

    def tree_scores(self, cols: np.ndarray, lo: int, hi: int, coef: np.ndarray,
                    out: Optional[np.ndarray] = None) -> np.ndarray:
        """``out[i, :] += sum over members lo..hi-1 of coef_t value_t(x_i)`` for a tree model, (n, V)."""
        from ._ext import _tree

        feature, bin_, ml, left, right, value, start, cat = self.forest()
        V = value.shape[1]
        if out is None:
            out = np.zeros((cols.shape[1], V))
        idx = self.tree[lo:hi]
        # members lo..hi-1 are trees idx[0]..idx[-1], consecutive
        if idx.size:
            a, b = int(idx[0]), int(idx[-1]) + 1
            s = start[a:b + 1]
            n0, n1 = int(s[0]), int(s[-1])
            _tree.add_trees(cols, feature[n0:n1], bin_[n0:n1], ml[n0:n1], left[n0:n1], right[n0:n1], cat[n0:n1],
                            value[n0:n1], np.ascontiguousarray(s - n0), np.ascontiguousarray(coef[lo:hi],
                                                                                               dtype=np.float64), out)
        return out

    def _q_tree_scores(self, cols: np.ndarray, X: Optional[np.ndarray]) -> np.ndarray:
        """Scores of a Q-ensemble of trees: ``sum_t coef_t Q(domain_t|x) h_t(x)`` (an ungated tree: Q = 1),
        member by member in order, as :class:`Scorer` adds them."""
        if X is None:
            raise ValueError("this model weighs its trees by Q(k|x): pass the raw features")
        Q = np.ascontiguousarray(self.domain_classifier.proba(X)) if cols.shape[1] else None
        out = np.zeros(cols.shape[1], dtype=np.float64)
        coef = self.vote_coefficients()
        for t in range(self.n_stumps if cols.shape[1] else 0):
            vals = self.trees[int(self.tree[t])].values(cols)[:, 0]
            k = int(self.domain[t])
            out += coef[t] * (vals if k < 0 else Q[:, k] * vals)
        return out

    def _task_tree_scores(self, cols: np.ndarray, task: Optional[np.ndarray]) -> np.ndarray:
        """:meth:`_task_scores` of a model of trees: a member outside a row's task votes 0 for it
        (a zero coefficient adds +-0, so the sums are the task's own, bit for bit)."""
        if task is None:
            if len(self.domain_names or []) > 1:
                raise ValueError("this model has one ensemble per task: pass every row's task")
            task = np.zeros(cols.shape[1], dtype=np.int64)
        task = np.asarray(task)
        out = np.zeros(cols.shape[1], dtype=np.float64)
        for k in np.unique(task):
            rows = np.flatnonzero(task == k)
            coef = np.where((self.domain == k) | (self.domain < 0), self.coef, 0.0)
            out[rows] = self.tree_scores(np.ascontiguousarray(cols[:, rows]), 0, self.n_stumps, coef)[:, 0]
        return out

    def proba_binned(self, cols: np.ndarray) -> np.ndarray:
        """Class probabilities (n, K) of a model with a logistic or softmax link, for feature-major bins."""
        return self.proba_of_scores(self.decision_binned(cols))

    @property
    def calibrated(self) -> bool:
        """Whether :meth:`predict_proba` gives the probabilities a log-loss fitted (a logistic or softmax link),
        rather than ones read off a vote (:meth:`proba_of_scores`)."""
        return self.link in LINK_OF

    def proba_of_scores(self, score: np.ndarray) -> np.ndarray:
        """Class probabilities (n, K) from :meth:`decision_binned`'s scores.

        A model with a link (the logistic loss, softmax, gbdt): its scores are log-odds, so the probabilities
        are calibrated as the log-loss fits them. A vote without one: a weighted vote of the exponential loss
        (AdaBoost, MultiBoost, the transfer and multi-task boosters) gives ``sigmoid(2 F)``, the link at which
        that loss is least; a weighted class vote (SAMME) ``softmax(F / (K - 1))``; a majority vote the share
        of the members voting for each class. These follow the training scores, not held-out frequencies:
        they rank rows, but they are not calibrated (``mpiboost train --loss logistic`` is).
        """
        from .links import VOTE_LINKS

        if self.link in LINK_OF:
            return LINK_OF[self.link].proba(score)
        if self.is_regression:
            raise ValueError("a regression model predicts values, not class probabilities")
        if self.vote == "majority":
            total = float(np.sum(self.vote_coefficients()))
            if self.output == "sign":
                p1 = 0.5 * (1.0 + score / total) if total > 0 else np.full(score.shape, 0.5)
                p = np.stack([1.0 - p1, p1], axis=1)
            else:
                p = score / total if total > 0 else np.full(score.shape, 1.0 / self.n_classes)
        elif self.output == "sign":
            p = VOTE_LINKS["exponential"].proba(score)
        else:  # argmax: SAMME's class vote
            p = VOTE_LINKS["samme"].proba(score)
        return ahead_on_ties(p)

    def _task_scores(self, cols: np.ndarray, task: Optional[np.ndarray]) -> np.ndarray:
        """Each row's score under its own task's ensemble: the stumps of the row's task and the shared ones.

        A stump of domain -1 (e.g. a start model fitted on every task's rows)
        belongs to every task's ensemble.
        """
        from ._ext import _predict

        if task is None:
            if len(self.domain_names or []) > 1:
                raise ValueError("this model has one ensemble per task: pass every row's task")
            task = np.zeros(cols.shape[1], dtype=np.int64)  # a single task
        task = np.asarray(task)
        out = np.zeros(cols.shape[1], dtype=np.float64)
        arrays = self._arrays()
        for k in np.unique(task):
            rows = np.flatnonzero(task == k)
            mine = (self.domain == k) | (self.domain < 0)
            if not mine.any():
                continue  # a task without a stump scores 0 (the first class's sign, +1)
            part = np.empty(len(rows), dtype=np.float64)
            _predict.predict_binned(np.ascontiguousarray(cols[:, rows]),
                                    *(np.ascontiguousarray(a[mine]) for a in arrays), part)
            out[rows] = part
        return out

    def predict_index(self, cols: np.ndarray, X: Optional[np.ndarray] = None,
                      task: Optional[np.ndarray] = None) -> np.ndarray:
        """Class index (into :attr:`classes`) of every row: argmax, or 1 where the sign score is >= 0."""
        return index_of_scores(self.decision_binned(cols, X, task))

    def predict_binned(self, cols: np.ndarray, X: Optional[np.ndarray] = None,
                       task: Optional[np.ndarray] = None) -> np.ndarray:
        """Internal codes for feature-major bins: -1/+1 (``output = "sign"``; a zero score gives +1) or class indices."""
        score = self.decision_binned(cols, X, task)
        if self.output == "argmax":
            return index_of_scores(score)
        return np.where(score >= 0, 1, -1).astype(np.int8)

    # -------------------------------------------------------------- raw rows (the user's API)
    def _rows(self, X, domain=None) -> tuple:
        """``(cols, raw, task)`` of raw rows ``X`` (n, d): binned with the model's edges, checked first."""
        from .data import frames
        from .data.rows import raw_rows

        X = raw_rows(frames.apply(X, self.info.get("categories")), self.n_features, self.feature_names,
                     " (bins already made, feature-major: decision_binned / predict_binned)")
        task = None
        if self.takes_task:
            if domain is None and len(self.domain_names or []) > 1:
                raise InputError(f"this model has one ensemble per task ({len(self.domain_names)} tasks): pass "
                                 "domain= (every row's task id)")
            task = None if domain is None else np.asarray(domain).reshape(-1)
            if task is not None and task.shape[0] != X.shape[0]:
                raise InputError(f"domain: {task.shape[0]} task ids for {X.shape[0]} rows")
        cols = np.empty((X.shape[1], X.shape[0]), dtype=np.uint8)
        self.bins.transform(X, out=cols.T)
        return cols, (np.asarray(X, dtype=np.float64) if self.needs_raw else None), task

    def decision_function(self, X, domain=None) -> np.ndarray:
        """Scores of raw rows ``X`` (n, d) (numpy, pandas with the model's columns in any order, scipy.sparse).

        ``output = "sign"``: one score a row, shape (n,), class ``classes[1]`` where it is >= 0;
        ``output = "argmax"``: one score per class, (n, K). ``domain``: the rows' task ids (multi-task models).
        """
        cols, raw, task = self._rows(X, domain)
        return self.decision_binned(cols, raw, task)

    def predict(self, X, domain=None) -> np.ndarray:
        """The user's labels of raw rows ``X`` (n, d), binned with the model's edges (see :meth:`decision_function`);
        a regression model's predicted values."""
        cols, raw, task = self._rows(X, domain)
        if self.is_regression:
            return self.decision_binned(cols, raw, task)
        return self.labels_of(self.predict_index(cols, raw, task))

    def predict_proba(self, X, domain=None) -> np.ndarray:
        """Class probabilities (n, K) of raw rows, in the order of :attr:`classes`.

        Calibrated for a model with a link (``--loss logistic``, softmax, gbdt): its scores are log-odds; an
        AdaBoost-family vote's are read off the vote (:meth:`proba_of_scores`), not calibrated.
        """
        cols, raw, task = self._rows(X, domain)
        return self.proba_of_scores(self.decision_binned(cols, raw, task))

    def contributions(self, X, domain=None) -> np.ndarray:
        """Each feature's TreeSHAP contribution to the scores of raw rows ``X`` (n, d), and the expected score.

        Exact Shapley values of the trees (Lundberg, Erion & Lee 2018), with each node's training rows as
        the background weight, as LightGBM's ``pred_contrib``: ``output = "sign"``, shape (n, d + 1), the
        last column the expected score; ``"argmax"``, shape (n, K (d + 1)), class k's block
        ``[:, k (d + 1) : (k + 1) (d + 1)]`` (LightGBM's layout). Each row's sum (per class) is its
        :meth:`decision_function` score, up to rounding.

        For models of trees whose members all vote on every row (not Q-ensembles nor per-task ensembles),
        saved by mpiboost with node counts (model format 4 or later); otherwise a ValueError says which.
        """
        self.check_contributions()
        cols, _, _ = self._rows(X, domain)
        return self.contributions_binned(cols)

    def check_contributions(self) -> None:
        """A ValueError saying why :meth:`contributions` cannot explain this model (None if it can)."""
        if not self.trees or bool((self.tree < 0).any()):
            raise ValueError(f"contributions need a model of trees; this {self.algorithm} model has stumps "
                             "(train with --weak-learner tree)")
        if self.domain_classifier is not None or self.takes_task:
            raise ValueError(f"a {self.algorithm} model weighs its members per row ({self.vote} vote): its "
                             "contributions are not a sum over its trees")
        if any(tr.n_nodes > 1 and not tr.count.any() for tr in self.trees):
            raise ValueError("this model keeps no node counts (saved before model format 4): train it again "
                             "for contributions")

    def contributions_binned(self, cols: np.ndarray) -> np.ndarray:
        """:meth:`contributions` of feature-major bins ``cols`` (d, n) uint8."""
        from ._ext import _shap

        self.check_contributions()
        cols = np.ascontiguousarray(cols, dtype=np.uint8)
        n, d = cols.shape[1], self.n_features
        V = self.n_values
        out = np.zeros((n, V, d + 1))
        coef = self.vote_coefficients()
        for t in range(self.n_stumps):
            tr = self.trees[int(self.tree[t])]
            _shap.add_contributions(cols, tr.feature, tr.bin, tr.missing_left, tr.cat, tr.left, tr.right, tr.value,
                                    tr.count.astype(np.float64), float(coef[t]), out)
        return out[:, 0, :] if V == 1 else out.reshape(n, V * (d + 1))

    def predict_raw(self, X: np.ndarray, task: Optional[np.ndarray] = None) -> np.ndarray:
        """The user's labels for raw ``(n, d)`` feature values (:meth:`predict`, kept for older scripts)."""
        return self.predict(X, task)

    def scorer(self, cols: np.ndarray, X: Optional[np.ndarray] = None, task: Optional[np.ndarray] = None) -> "Scorer":
        """A :class:`Scorer` of these rows that follows the model as stumps are added."""
        return Scorer(self, cols, X, task)

    # -------------------------------------------------------------- files
    def _header(self) -> dict:
        return {
            "format": MODEL_FORMAT,
            "mpiboost_version": __version__,
            "algorithm": self.algorithm,
            "params": self.params,
            "vote": self.vote,
            "output": self.output,
            "classes": [lab.plain(c) for c in self.classes],
            "n_features": self.n_features,
            "feature_names": self.feature_names,
            "info": self.info,
            "domain_names": self.domain_names,
            "domain_classifier": None if self.domain_classifier is None else self.domain_classifier.to_dict(),
            "link": self.link,
        }

    def save(self, path: str | os.PathLike) -> None:
        """Write the model as HDF5, atomically (temporary file, then rename): :func:`.model_file.write_model`."""
        write_model(path, self._header(), self._datasets())

    def _datasets(self) -> dict:
        """The arrays of the model file (format 5), ``"group/name"`` -> array."""
        out = {f"ensemble/{name}": getattr(self, name) for name in ENSEMBLE_ARRAYS}
        out["ensemble/threshold"] = self.thresholds()
        if self.trees:
            out["ensemble/tree"] = self.tree
            forest = self.forest()
            out.update({f"trees/{name}": a for name, a in zip(TREE_ARRAYS, forest)})
            # format 5: each node's categorical bins going left, 4 words a node (zeros but at bin -1)
            out["trees/cat"] = forest[7].ravel()
            out["trees/kind"] = np.array([TREE_KINDS.index(tr.kind) for tr in self.trees], np.uint8)
            # what the grower knew of each node (format 4): split gains, rows and hessian covered
            for name in TREE_STATS:
                out[f"trees/{name}"] = np.concatenate([getattr(tr, name) for tr in self.trees])
        flat, offsets = self.bins.flat()
        out["bins/edges"], out["bins/offsets"] = flat, offsets
        if self.bins.categorical is not None:  # format 5: the features binned one category a bin
            out["bins/categorical"] = self.bins.categorical.astype(np.uint8)
        return out

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Model":
        """Read a model file (formats 1 to 5), everything in it checked first: :func:`.model_file.read_model`.

        Raises
        ------
        InputError
            Naming the file and the field or dataset, for anything that is not a model this version reads.
        """
        model = read_model(cls, path)
        model.validate(path)
        return model

    def validate(self, where: str = "model") -> None:
        """Check that every array fits the others, the bins and the header (InputError naming the field).

        The prediction kernels index bins by ``feature``, Q by ``domain`` and
        class sums by ``left``/``right`` without bounds checks: every value
        must be in range.
        """
        n = self.n_stumps
        for name in ENSEMBLE_ARRAYS:
            if getattr(self, name).shape != (n,):
                raise InputError(f"{where}: ensemble/{name} has {getattr(self, name).shape[0]} entries, not {n}")
        d = self.n_features
        if d < 1:
            raise InputError(f"{where}: the model has no features (bins/offsets)")
        if self.feature_names is not None and len(self.feature_names) != d:
            raise InputError(
                f"{where}: header field 'feature_names' has {len(self.feature_names)} names for {d} features"
            )
        if n and (self.feature.max() >= d or self.feature.min() < -1):
            raise InputError(f"{where}: ensemble/feature holds a feature outside -1..{d - 1}")
        if n and (self.bin.min() < 0 or self.bin.max() > 255):
            raise InputError(f"{where}: ensemble/bin holds a bin outside 0..255")
        used = self.feature >= 0
        # A stump "bin <= b" of a feature with m value bins has b in 0..m-1.
        over = np.nonzero(used)[0][self.bin[used] >= self.bins.n_bins[self.feature[used]]] if n else []
        if len(over):
            t = int(over[0])
            raise InputError(
                f"{where}: ensemble/bin of stump {t} is {int(self.bin[t])}, but feature {int(self.feature[t])} "
                f"has {int(self.bins.n_bins[self.feature[t]])} value bins"
            )
        if n and (self.missing_left.max() > 1):
            raise InputError(f"{where}: ensemble/missing_left must be 0 or 1")
        if not np.isfinite(self.coef).all():
            raise InputError(f"{where}: ensemble/coef holds a value that is not finite")
        if self.trees or (n and self.tree.max() >= 0):
            self._validate_trees(where)
        if self.output == "argmax":
            K = self.n_classes
            for name in ("left", "right"):
                v = getattr(self, name)
                if n and (v.min() < 0 or v.max() >= K):
                    raise InputError(f"{where}: ensemble/{name} holds a class outside 0..{K - 1}")
        elif n and not (np.isin(self.left, (-1, 1)).all() and np.array_equal(self.right, -self.left)):
            raise InputError(f"{where}: ensemble/left and right must be -1/+1 and opposite in a sign model")
        if self.output == "sign" and self.n_classes != 2:
            raise InputError(f"{where}: a sign model has two classes, not {self.n_classes}")
        if self.output == "value" and (self.classes or self.link is not None or not self.trees and n):
            raise InputError(f"{where}: a regression model (output value) has trees, and no classes or link")
        clf = self.domain_classifier
        if self.vote == "task":
            J = len(self.domain_names or []) or 1
            # -1: a stump shared by every task (a start model), in round 0 only; round 0 may also hold
            # members of one task (a start forest whose trees split on the task)
            if n and (self.domain.min() < -1 or self.domain.max() >= J
                      or np.any((self.domain < 0) & (self.round != 0))):
                raise InputError(f"{where}: ensemble/domain holds a task outside 0..{J - 1} (or -1, shared, in "
                                 "round 0 only)")
        elif clf is None:
            if n and np.any(self.domain != -1):
                raise InputError(f"{where}: ensemble/domain must be -1 in a model without a domain classifier")
        else:
            if clf.mean.shape[0] != d:
                raise InputError(f"{where}: the domain classifier has {clf.mean.shape[0]} features, the model {d}")
            p = clf.n_domains
            if n and (self.domain.min() < -1 or self.domain.max() >= p):
                raise InputError(f"{where}: ensemble/domain holds a domain outside -1..{p - 1}")
        # round 0: a start the algorithm's setup rebuilds (a task model's shared start, a Q-ensemble's prior)
        first = 0 if self.vote in ("task", "q-weighted") else 1
        if n and self.round.min() < first:
            raise InputError(f"{where}: ensemble/round must be at least {first}")
        if n and np.any(np.diff(self.round) < 0):
            raise InputError(f"{where}: ensemble/round must not decrease")

    def _tree_json(self, tr) -> dict:
        doc = tr.to_dict()
        doc["threshold"] = [_threshold_or_none(self.bins, int(f), int(b)) if f >= 0 and b >= 0 else None
                            for f, b in zip(tr.feature, tr.bin)]
        return doc

    def _validate_trees(self, where: str) -> None:
        """Tree members: consecutive tree indices, every tree a proper binary tree within the bins."""
        n, T = self.n_stumps, len(self.trees)
        if self.tree.shape != (n,) or not np.array_equal(self.tree, np.arange(n, dtype=np.int32)):
            raise InputError(f"{where}: ensemble/tree must number the {n} members' trees 0..{n - 1} (a model of trees "
                             f"holds trees only), has {T} trees")
        if self.vote not in ("weighted", "majority", "task", "q-weighted") \
                or (self.domain_classifier is not None) != (self.vote == "q-weighted"):
            raise InputError(f"{where}: a model of trees votes weighted, by majority, per task or by Q(k|x) "
                             f"with a domain classifier (not {self.vote})")
        V = self.n_values
        d = self.n_features
        for k, tr in enumerate(self.trees):
            m = tr.n_nodes
            if m < 1 or tr.value.shape != (m, V):
                raise InputError(f"{where}: tree {k} has {m} nodes and values of shape {tr.value.shape}, "
                                 f"not ({m}, {V})")
            split = tr.feature >= 0
            if (tr.feature >= d).any() or (tr.feature < -1).any():
                raise InputError(f"{where}: tree {k} splits on a feature outside 0..{d - 1}")
            numeric = split & (tr.bin >= 0)
            if numeric.any() and (tr.bin[numeric] >= self.bins.n_bins[tr.feature[numeric]]).any():
                raise InputError(f"{where}: tree {k} holds a threshold bin outside its feature's value bins")
            categorical = split & (tr.bin < 0)
            if categorical.any():
                # a categorical split (bin -1): on a categorical feature, missing values right, and only bins of
                # its categories set (the kernels read the 4 words of any bin below 256)
                mask = self.bins.categorical
                feats = tr.feature[categorical]
                if (tr.bin[categorical] != -1).any() or mask is None or not mask[feats].all() \
                        or (tr.missing_left[categorical] != 0).any():
                    raise InputError(f"{where}: tree {k} holds a categorical split (bin -1) that is not on a "
                                     "categorical feature with missing values right")
                for node, f in zip(np.flatnonzero(categorical), feats):
                    if max(tr.left_bins(int(node)), default=-1) >= int(self.bins.n_bins[f]):
                        raise InputError(f"{where}: tree {k} node {int(node)}: a categorical split sends a bin "
                                         f"beyond feature {int(f)}'s {int(self.bins.n_bins[f])} categories left")
            if (tr.missing_left > 1).any():
                raise InputError(f"{where}: tree {k}: missing_left must be 0 or 1")
            # children of node i are after i (so a walk from the root ends), each node has one parent
            kids = np.concatenate([tr.left[split], tr.right[split]])
            ids = np.flatnonzero(split)
            if (kids.size and (kids.min() < 1 or kids.max() >= m)) or np.unique(kids).size != kids.size \
                    or kids.size != m - 1 or (tr.left[split] <= ids).any() or (tr.right[split] <= ids).any():
                raise InputError(f"{where}: tree {k} is not a binary tree (children must follow their parent, once)")
            if not np.isfinite(tr.value).all():
                raise InputError(f"{where}: tree {k} holds a leaf value that is not finite")
            if tr.kind == "sign" and (V != 1 or not np.isin(tr.value[~split], (-1.0, 1.0)).all()):
                raise InputError(f"{where}: tree {k} of sign leaves holds a leaf value other than -1/+1")
            leaves = tr.value[~split]
            if tr.kind == "class" and (self.output != "argmax" or not np.isin(leaves, (0.0, 1.0)).all()
                                       or not (leaves.sum(axis=1) == 1.0).all()):
                raise InputError(f"{where}: tree {k} of class leaves must hold one 1 per leaf (one-hot)")

    def to_json(self) -> str:
        """Canonical JSON (sorted keys, exact floats, no volatile fields)."""
        doc = self._header()
        doc["ensemble"] = [
            {
                "feature": int(f),
                "bin": int(b),
                "threshold": float(th) if np.isfinite(th) else None,
                "left": int(lv),
                "right": int(rv),
                "missing_left": bool(ml),
                "coef": float(c),
                "domain": int(k) if k >= 0 else None,
                "round": int(r),
            }
            for f, b, th, lv, rv, ml, c, k, r in zip(
                self.feature, self.bin, self.thresholds(), self.left, self.right, self.missing_left, self.coef,
                self.domain, self.round,
            )
        ]
        if self.trees:
            for e, t in zip(doc["ensemble"], self.tree):
                e["tree"] = int(t)
            doc["trees"] = [self._tree_json(tr) for tr in self.trees]
        doc["first_voting_round"] = self.first_voting_round()
        doc["bin_edges"] = [e.tolist() for e in self.bins.edges]
        if self.bins.categorical is not None:
            doc["categorical_features"] = [int(j) for j in np.flatnonzero(self.bins.categorical)]
        return json.dumps(_plain(doc), sort_keys=True, allow_nan=True, separators=(",", ":"))


def _threshold_or_none(bins, f: int, b: int):
    th = bins.threshold(f, b)
    return float(th) if np.isfinite(th) else None




def ahead_on_ties(score: np.ndarray) -> np.ndarray:
    """``score`` (n, K) with, in each row of tied highest values, the last of them one ulp ahead: predict's rule
    (a tie goes to the later class), so that an argmax of the result agrees with it. Modified in place."""
    top = score.max(axis=1, keepdims=True)
    tied = np.flatnonzero((score == top).sum(axis=1) > 1)
    if tied.size:
        last = score.shape[1] - 1 - np.argmax(score[tied, ::-1] == top[tied], axis=1)
        score[tied, last] = np.nextafter(score[tied, last], np.inf)
    return score


def index_of_scores(score: np.ndarray) -> np.ndarray:
    """Class indices from ensemble scores: argmax of (n, K) (ties: highest class), or 1 where a sign score >= 0."""
    if score.ndim == 2:
        from ._ext import _multiclass

        out = np.empty(score.shape[0], dtype=np.int32)
        _multiclass.argmax_classes(np.ascontiguousarray(score), out)
        return out
    return (score >= 0).astype(np.int32)


class Scorer:
    """Ensemble scores of fixed rows (e.g. validation data), kept up to date as stumps are added.

    :meth:`update` adds the stumps appended to the model since the last call,
    each with its own coefficient (every round votes), in order.
    """

    def __init__(self, model: Model, cols: np.ndarray, X: Optional[np.ndarray] = None,
                 task: Optional[np.ndarray] = None) -> None:
        self.model, self.cols = model, np.ascontiguousarray(cols, dtype=np.uint8)
        n = self.cols.shape[1]
        self.Q = None
        if model.takes_task:
            if task is None:
                if len(model.domain_names or []) > 1:
                    raise ValueError("this model has one ensemble per task: pass every row's task")
                task = np.zeros(n, dtype=np.int64)
            # the "Q" of a task model: row r counts stump t iff r's task is t's task
            J = len(model.domain_names or []) or 1  # every rank alike (not this rank's largest task id)
            if len(task) and (int(np.min(task)) < 0 or int(np.max(task)) >= J):
                raise ValueError(f"a row's task is outside the model's {J} tasks")
            self.Q = np.zeros((n, J))
            self.Q[np.arange(n), np.asarray(task, dtype=np.int64)] = 1.0
        elif model.domain_classifier is not None:
            if X is None:
                raise ValueError("this model weighs its stumps by Q(k|x): pass the raw features")
            self.Q = model.domain_classifier.proba(X) if n else np.zeros((0, model.domain_classifier.n_domains))
        self.scores = np.zeros((n, model.n_classes) if model.output == "argmax" else n)
        self.done = 0

    def update(self) -> None:
        from ._ext import _weights

        m, lo, hi = self.model, self.done, self.model.n_stumps
        if m.trees:
            if hi > lo and self.Q is not None:  # one ensemble per task: member t counts for its task's rows
                for t in range(lo, hi):
                    k = int(m.domain[t])
                    vals = m.trees[int(m.tree[t])].values(self.cols)[:, 0]
                    self.scores[:] += m.coef[t] * (vals if k < 0 else self.Q[:, k] * vals)
            elif hi > lo:
                out = self.scores if m.output == "argmax" else self.scores[:, None]
                m.tree_scores(self.cols, lo, hi, m.coef, out)
            self.done = hi
            return
        if m.output == "argmax":
            from ._ext import _multiclass

            _multiclass.add_class_stumps(self.cols, *m._arrays(lo, hi, m.coef), self.scores)
        else:
            for t, (stump, coef) in zip(range(lo, hi), list(m.stumps())[lo:hi]):
                k = int(m.domain[t])
                if k >= 0:
                    self.scores[:] += coef * self.Q[:, k] * stump.predict(self.cols)
                else:
                    _weights.add_stump(self.scores, stump.column(self.cols), *stump.args(), coef)
        self.done = hi

    def _signed(self, y: np.ndarray) -> np.ndarray:
        """A sign model's labels as -1/+1 (int8): as given, or from class indices (an algorithm that takes
        them, e.g. gbdt on two classes; -1, a class the model does not know, becomes 0, never predicted)."""
        y = np.asarray(y)
        return y if y.dtype == np.int8 else lab.signed(y)

    def errors(self, y: np.ndarray) -> int:
        """This rank's rows whose predicted class differs from ``y`` (internal codes)."""
        from ._ext import _weights

        if self.model.is_regression:
            raise ValueError("a regression model has no errors: score it by its metric (regression_metric)")
        if self.model.output == "argmax":
            from ._ext import _multiclass

            return int(_multiclass.class_errors(self.scores, np.ascontiguousarray(y, dtype=np.int32)))
        return int(_weights.margin_errors(self.scores, self._signed(y)))

    def wrong(self, y: np.ndarray) -> np.ndarray:
        """Which of this rank's rows the model gets wrong (a boolean mask; ties as :meth:`errors`)."""
        if self.model.output == "argmax":
            return index_of_scores(self.scores) != np.asarray(y)
        return np.where(self.scores >= 0, 1, -1) != self._signed(y)  # ties -> +1, as margin_errors

    def errors_by_group(self, y: np.ndarray, group: np.ndarray, n_groups: int) -> np.ndarray:
        """This rank's wrong rows per group id (e.g. per task): int64 counts of length ``n_groups``."""
        wrong = self.wrong(y)
        return np.bincount(np.asarray(group, dtype=np.int64)[wrong], minlength=n_groups).astype(np.int64)
