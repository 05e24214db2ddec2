"""What the instance-transfer algorithms share (Dai et al. 2007; Yao & Doretto 2010; Zhang et al. 2014).

A target domain with few labelled rows and N source domains. Every round:

1. One histogram of the signed weights ``w y`` per domain, reduced to the
   center in one collective. Candidate k (trained on source k and the
   target, or on every row for TrAdaBoost) is the best stump of the sum of
   its domains' histograms, so N candidates cost one pass over the rows and
   ``(N + 1) d`` bins of communication.
2. The candidates' weighted errors on the target rows only, as exact sums
   (one ``reduce_stats``): ``eps_k``.
3. The algorithm (a subclass) turns the errors into the round's plan: which
   candidates vote and with what mixture weight ``vt_k`` (the round's
   hypothesis is ``f_t = sum_k vt_k f_k``), the round's error ``eps_t``, and
   the multiplicative factors of the weight update.
4. One pass: each row's error ``e`` (soft ``|f_t(x) - y|`` with labels in
   {0, 1}, or the hard error of ``f_t`` thresholded at 1/2) and
   ``w <- mult * w * exp(e * log)`` with the source or the target pair; then
   the exact mass of every domain (one collective, with the target's training
   errors) and the normalization to a total of 1.

Rounds where the combined target error ``eps_t >= 1/2 - 1e-9`` end training
(``high_error = "stop"``, the default) or go on with ``eps_t = 0.499``
(``"clip"``); ``eps_t = 0`` (every candidate right on every target row) is
raised to ``EPS_MIN`` so that ``beta_t = eps_t / (1 - eps_t) > 0``: such a
round's vote coefficient is ``ln(1 / beta_t) ~ 23`` and it leaves the
target weights as they are.

Beyond the papers (each rule of the papers is an option; see the parameters):

* ``candidates = "target"`` (default) adds a candidate trained on the target
  rows' histogram alone (one more sum of a histogram already reduced per
  domain). It has an edge on the target unless no stump has, and stands in when
  the papers' candidates have none, so a round no longer ends a run because the
  source-fitted stump comes back at target error 1/2; ``"paper"``: the papers'.
* ``eps_floor`` (default ``1/(2 n_b)``, half a target row) bounds the vote of a
  round with (almost) no target error: ``1/2 ln(2 n_b - 1)`` instead of ~11.5;
  0 restores the papers' ``EPS_MIN``.
* ``initial_split``: the papers' uniform start (the default: chosen on the
  synthetic transfer sets and Amazon, where giving the target more mass made
  every candidate overfit its few rows) or a given target share.

Every number every rank needs is an exact sum or a per-row value, so the
model does not depend on how the rows are split over ranks.
"""
from __future__ import annotations

import math
from abc import abstractmethod
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from .._ext import _exact, _histogram, _transfer, _weights
from ..protocol import FIXED_SHIFT, Protocol
from ..weak.stump import Stump
from .base import Algorithm, Hypothesis, Param, domain_index
from .losses import grows_trees
from .params import EXACT_TREES

EPS_MIN = 1e-10  # a round with no target error gets this one (beta_t > 0)
EPS_CLIP = 0.499  # high_error = "clip": rounds at or above 1/2 go on with this error
# Errors within this of 1/2 count as 1/2. TrAdaBoost's target update leaves the
# last stump at target error 1/2 exactly (as AdaBoost's does), and the next
# round often picks that stump again: whether its error then comes out as
# 0.5 or 0.49999999999999994 is rounding, and must not decide between
# stopping and a round with a vote of 1e-16.
HALF_TOL = 1e-9
HIGH_ERROR = ("stop", "clip")
VOTE_FROM = ("first", "half")


@dataclass
class Plan:
    """One round's hypothesis and weight update, decided from the candidates' target errors."""

    members: list  # [(candidate index, mixture weight vt, vote coefficient)]
    eps: float  # the round's error on the target (after clipping)
    hard: bool  # rows' errors: the thresholded mixture (True) or its soft error
    target: tuple  # (mult, log): target rows w <- mult w exp(e log)
    source: tuple  # (mult, log): source rows
    metrics: dict = field(default_factory=dict)
    own_source: bool = False  # source k's rows are boosted by candidate k's own error (source_update boost)
    chain: Optional[np.ndarray] = None  # MSDTrA weights "chain": each candidate's coefficient
    own_alpha: Optional[np.ndarray] = None  # each candidate's own (floored) error on its source


def beta_a(n_source: int, rounds: int) -> float:
    """``1 / (1 + sqrt(2 ln(n_a) / M))``: the fixed source factor of TrAdaBoost (Dai et al. 2007)."""
    return 1.0 / (1.0 + math.sqrt(2.0 * math.log(max(n_source, 1)) / rounds))


TARGET_DOMAIN = Param(
    "target_domain", str, None,
    "with --data: the target domain (index or name; default: the one named 'target'); every other domain "
    "is a source (--target/--source set it)", metavar="K",
)
HIGH_ERROR_PARAM = Param(
    "high_error", str, "stop",
    "a round with target error >= 1/2 ends training (stop) or goes on with error 0.499 (clip)", choices=HIGH_ERROR, origin="beyond")
ROUNDS = Param("rounds", int, None, "the number of rounds M (part of the source factor; set by --rounds)",
               low=1, cli=False)
CANDIDATES = ("target", "paper")
CANDIDATES_PARAM = Param(
    "candidates", str, "target",
    "target: the paper's candidates plus one stump trained on the target rows alone, which stands in when no "
    "candidate of the paper has an edge on the target (target error < 1/2), so a round never has to stop; MSDTrA "
    "also leaves candidates without an edge out of its mixture; paper: the paper's candidates only",
    choices=CANDIDATES, origin="beyond", paper="paper")
INITIAL_SPLIT_PARAM = Param(
    "initial_split", str, "paper",
    "the initial weights: paper (the papers' rule and the default: uniform over all rows, so the target holds "
    "n_b/(n_a + n_b) of the mass), balanced (the target rows hold 1/2 of the mass, the sources 1/2), domains (every domain the same "
    "mass), or a number in (0, 1): the target's share (the sources share the rest by rows); uniform within a domain",
    metavar="SPLIT",
)
EPS_FLOOR_PARAM = Param(
    "eps_floor", float, None,
    "the least round error eps_t, which bounds the vote ln((1 - eps)/eps) of a round with (almost) no target "
    "error (default 1/(2 n_b), half a target row at uniform weights; 0: the papers' 1e-10)",
    low=0.0, high=0.25, metavar="EPS", paper=0.0,  # above 1/4 a perfect round would vote less than ln 3 / 2
)

SOURCE_TRUST = ("cv", "algorithm", "pooled", "balanced", "target")
SOURCE_TRUST_PARAM = Param(
    "source_trust", str, "cv",
    "how far the sources are trusted, from held-out evidence on the target: cv (the default: first AdaBoost "
    "with trees on each source alone is scored on every target row, and when no source's margins there are "
    "above 0 by a one-sided t-test at the family-wise level 0.1, the model is AdaBoost on the target rows "
    "alone; else k-fold over the target rows, see --source-folds, compares this algorithm, AdaBoost on every "
    "row pooled, AdaBoost on every row with the target rows weighing as much as all the source rows "
    "(balanced) and AdaBoost on the target rows alone, with the run's weak learner and rounds, by their errors "
    "on the held-out target rows; the incumbent, pooling when every source alone passes the test and this "
    "algorithm when only some do, is replaced when another has fewer errors by more than one standard error; "
    "the one chosen is trained on every row), algorithm (this algorithm, no folds: the papers' rule), pooled, "
    "balanced or target (that AdaBoost, no folds)",
    choices=SOURCE_TRUST, origin="beyond", paper="algorithm")
SOURCE_FOLDS_PARAM = Param(
    "source_folds", int, 10,
    "--source-trust cv: folds over the target rows (leave-one-out when the target has fewer rows; below 2 rows "
    "of a class, no folds and, when a source passes the screen, the algorithm as asked)", low=2, high=50, metavar="K", when=("source_trust", "cv"), origin="beyond")


def initial_masses(split: str, counts: np.ndarray, target: int) -> Optional[np.ndarray]:
    """Each domain's share of the initial mass for ``--initial-split`` (None: the paper's uniform weights).

    Parameters
    ----------
    split : str
        ``"paper"``, ``"balanced"``, ``"domains"`` or a number in (0, 1) as text (the target's share).
    counts : numpy.ndarray
        Global row count of each domain.
    target : int
        The target domain.

    Returns
    -------
    numpy.ndarray or None
        The mass of each domain (sum 1), or None for uniform weights over every row.
    """
    if split == "paper":
        return None
    counts = np.asarray(counts, dtype=np.float64)
    src = np.arange(counts.size) != target
    if split == "domains":
        # every domain with rows the same mass: in each per-source candidate the target
        # and its source weigh alike
        out = (counts > 0).astype(np.float64)
        return out / out.sum()
    if split == "balanced":
        share = 0.5
    else:
        try:
            share = float(split)
        except ValueError:
            raise ValueError(f"--initial-split {split!r}: paper, balanced, domains or a number in (0, 1)") from None
        if not 0.0 < share < 1.0:
            raise ValueError(f"--initial-split {split!r}: the target's share must lie in (0, 1)")
    out = np.where(src, (1.0 - share) * counts / max(counts[src].sum(), 1.0), 0.0)
    out[target] = share
    return out


def vote_from_param(default: str) -> Param:
    return Param(
        "vote_from", str, default,
        "the final vote counts rounds 1..M (first) or ceil(M/2)..M (half)", choices=VOTE_FROM,
    )


class TransferBoosting(Algorithm):
    """Row state and round mechanics of the transfer algorithms.

    Subclasses set ``name``, ``per_source`` (one candidate per source, trained
    on source k and the target; otherwise one candidate on every row) and
    their ``vote_from`` default, and implement :meth:`plan`.
    """

    tasks = ("transfer",)
    vote = "weighted"
    weak_learners = ("stump", "tree")
    needs_target = True
    weight_rule = ("the first distribution is the weights' (--initial-split shares it by the domains' weight "
                   "sums); the papers' factors still count rows (TrAdaBoost's source factor, the error floor of "
                   "half a target row, the source screen's folds)")
    # the final vote depends on every round trained (the voting rounds follow the rounds trained; MSDTrA
    # rescales each chain by its final edge), so the rounds' validation curve does not score the model kept
    curve_scores_model = False
    # a constant prediction ignores the target's few labels, all the user asked the run to use
    empty_model_fails = True
    per_source = True
    multi_stump_rounds = True
    needs_rounds = True  # the source factor depends on the number of rounds M
    stop_message = "the round's target error reached 1/2 (--high-error clip goes on)"
    parameters = (*EXACT_TREES, TARGET_DOMAIN, vote_from_param("first"), HIGH_ERROR_PARAM, ROUNDS,
                  CANDIDATES_PARAM, INITIAL_SPLIT_PARAM, EPS_FLOOR_PARAM, SOURCE_TRUST_PARAM, SOURCE_FOLDS_PARAM)

    @classmethod
    def check_params(cls, params: dict, given) -> None:
        if params["rounds"] is None:
            raise ValueError(f"{cls.name} needs the number of rounds M (params['rounds'])")
        initial_masses(params["initial_split"], np.ones(2), 0)  # the text is checked here, agreed

    def __init__(self, params=None) -> None:
        super().__init__(params)
        self.rounds = int(self.params["rounds"])

    # ----------------------------------------------------------------- setup
    def check_data(self, data) -> None:
        self.data = data
        self.p = int(data.n_domains)
        which = self.params.get("target_domain")
        if which is None:
            names = list(data.domain_names or [])
            if "target" not in names:
                raise ValueError(
                    f"{self.name} needs to know the target domain: --target T.h5 --source S.h5 ..., or "
                    f"--target-domain NAME with a domain column (domains: {names or self.p})"
                )
            which = "target"
        self.target = domain_index(which, data)
        self.params["target_domain"] = self.target
        self.sources = [k for k in range(self.p) if k != self.target]
        counts = np.asarray(data.domain_counts, dtype=np.int64)
        self.n_target = int(counts[self.target])
        self.n_source = int(counts[self.sources].sum()) if self.sources else 0
        if self.n_target == 0:
            raise ValueError(f"the target domain {self._name(self.target)!r} has no rows")
        if not self.sources or self.n_source == 0:
            raise ValueError(f"{self.name} needs at least one source domain with rows besides the target")
        empty = [self._name(k) for k in self.sources if counts[k] == 0]
        if empty:
            raise ValueError(f"source domain {empty[0]!r} has no rows")

    def setup(self, data, proto: Protocol, seed: int = 0) -> None:
        self.check_data(data)
        self.data, self.proto, self.seed = data, proto, int(seed)
        n = data.n_local
        self.domain = np.ascontiguousarray(data.domain, dtype=np.int32)
        self.is_source = (self.domain != self.target).astype(np.uint8)
        counts = np.asarray(data.domain_counts, dtype=np.int64)
        sw = getattr(data, "weight", None)
        if sw is not None:
            # Sample weights: the domains' shares from their weight sums (exact), as the repeated rows' counts
            # would give, each domain's mass spread over its rows in proportion to their weights.
            sw = np.ascontiguousarray(sw, dtype=np.float64)
            sums = proto.reduce_terms(list(_exact.grouped_partials(sw, self.domain, self.p)))
            empty = [self._name(k) for k in range(self.p) if counts[k] > 0 and not sums[k] > 0]
            if empty:
                raise ValueError(f"the sample weights of domain {empty[0]!r} sum to 0")
            masses = initial_masses(self.params["initial_split"], sums, self.target)
            if masses is None:
                self.w = sw / math.fsum(sums)
            else:
                self.w = np.ascontiguousarray((masses / np.where(sums > 0, sums, 1.0))[self.domain] * sw)
        elif (masses := initial_masses(self.params["initial_split"], counts, self.target)) is None:
            self.w = np.full(n, 1.0 / data.n_global)  # the papers' uniform start
        else:
            # Per-row values from global counts, so the start does not depend on the split over ranks.
            per_row = masses / np.maximum(counts, 1)
            self.w = np.ascontiguousarray(per_row[self.domain], dtype=np.float64)
        self.target_candidate = self.params["candidates"] != "paper"
        floor = self.params.get("eps_floor")
        # Half a target row at uniform target weights: a round with no target error votes
        # ln(2 n_b - 1), more than one with one error (ln(n_b - 1)) but never ~23.
        self.eps_floor = 0.5 / self.n_target if floor is None else float(floor)
        self.eps_floor = max(min(self.eps_floor, 0.25), EPS_MIN)
        self.score = np.zeros(n)
        t_rows = np.nonzero(self.domain == self.target)[0]
        self.t_rows = t_rows
        self.t_cols = np.ascontiguousarray(data.cols[:, t_rows])
        self.t_y = np.ascontiguousarray(data.y[t_rows])
        self._source_rows = [np.flatnonzero(self.domain == k) for k in self.sources]
        self._source_y = [np.ascontiguousarray(data.y[r]) for r in self._source_rows]
        self._g = np.empty(n, dtype=np.int64)
        # One candidate on every row (TrAdaBoost) needs one histogram, not one per domain;
        # with the target-only candidate two: the sources' and the target's.
        n_hists = self.p if self.per_source else (2 if self.target_candidate else 1)
        self._hists = np.zeros((n_hists, data.d, 256), dtype=np.int64)
        self._is_target = np.ascontiguousarray(1 - self.is_source, dtype=np.int32)
        # Domains usually come as a few contiguous runs of rows (one file per
        # domain): the blocked histogram kernel then runs once per run. Rows
        # of interleaved domains take the one-pass kernel with domain ids.
        cut = np.flatnonzero(np.diff(self.domain)) + 1
        starts = np.concatenate([[0], cut]).astype(np.intp)
        stops = np.concatenate([cut, [n]]).astype(np.intp)
        self._runs = list(zip(starts.tolist(), stops.tolist(), self.domain[starts].tolist())) if n else []
        self._use_runs = len(self._runs) <= 4 * self.p
        self._binary = _histogram.binary_columns(data.cols) if self._use_runs or not self.per_source else None
        self._tmp = np.zeros((data.d, 256), dtype=np.int64)
        self.n_bins = np.ascontiguousarray(data.bins.n_bins, dtype=np.int64)
        self.beta_a = beta_a(self.n_source, self.rounds)
        self.tree_learner = None
        if grows_trees(self.params):
            from ..weak.tree import TreeClassifierLearner, TreeSpec

            self.tree_learner = TreeClassifierLearner(TreeSpec.from_params(self.params), proto, data.cols, data.y,
                                                      data.bins.n_bins, data.n_global)
        self._cache: Optional[tuple] = None
        self._version = 0
        self.model = self.new_model(data)

    def _name(self, k: int) -> str:
        names = self.data.domain_names
        return str(names[k]) if names and k < len(names) else str(k)

    # ---------------------------------------------------------- candidates
    def candidate_domains(self) -> list:
        """Indices into :meth:`local_histograms` whose sum trains each candidate."""
        if self.per_source:
            groups = [(self.target, k) for k in self.sources]
            return groups + [(self.target,)] if self.target_candidate else groups
        if self.target_candidate:
            return [(0, 1), (1,)]  # every row (sources + target), then the target alone
        return [(0,)]  # the single histogram of every row

    def _group_rows(self, doms: tuple) -> np.ndarray:
        """This rank's rows behind a :meth:`candidate_domains` entry (histogram indices)."""
        if self.per_source:
            return np.flatnonzero(np.isin(self.domain, doms)).astype(np.intp)
        if doms == (0,) or doms == (0, 1):
            return np.arange(self.data.n_local, dtype=np.intp)  # every row
        return np.flatnonzero(self._is_target == 1).astype(np.intp)  # (1,): the target alone

    def candidates(self) -> list:
        """This round's candidate stumps (or trees), one per entry of :meth:`candidate_domains` (same on every rank).

        A tree candidate is grown on its group's rows only, with their current weights: the tree
        counterpart of the stump chosen from the group's histogram."""
        groups = self.candidate_domains()
        if self.tree_learner is not None:
            return [self.tree_learner.fit(self.w, subset=self._group_rows(doms)).stump for doms in groups]
        self.local_histograms()
        hists = self.proto.reduce_histograms(self._hists, self.n_bins)
        packed = None
        if self.proto.is_center:
            packed = []
            for doms in groups:
                hist = hists[list(doms)].sum(axis=0)
                f, b, left, ml, _ = _histogram.best_stump(np.ascontiguousarray(hist), self.n_bins)
                packed += [f, b, left, ml]
        v = self.proto.broadcast_hypothesis(packed, 4 * len(groups))
        return [Stump(int(v[i]), int(v[i + 1]), int(v[i + 2]), bool(v[i + 3])) for i in range(0, len(v), 4)]

    def local_histograms(self) -> np.ndarray:
        """This rank's histogram of the signed weights (fixed point) per domain, ``(p, d, 256)``
        (``(1, d, 256)`` over every row when the candidate is trained on every row)."""
        hists = self._hists
        _weights.fixed_signed(self.w, self.data.y, FIXED_SHIFT, self._g)
        if not self.per_source:
            if self.target_candidate:
                _transfer.domain_histograms(self.data.cols, self._g, self._is_target, hists)
                return hists
            _histogram.build_histogram(self.data.cols, self._g, hists[0], self._binary)
            return hists
        if not self._use_runs:
            _transfer.domain_histograms(self.data.cols, self._g, self.domain, hists)
            return hists
        hists[...] = 0
        for lo, hi, k in self._runs:
            _histogram.build_histogram(self.data.cols, self._g, self._tmp, self._binary, lo, hi)
            hists[k] += self._tmp
        return hists

    def target_errors(self, stumps: list) -> np.ndarray:
        """Exact weighted error of each stump on the target rows (one reduce_stats)."""
        wt = np.ascontiguousarray(self.w[self.t_rows])
        groups = []
        for s in stumps:
            _, wrong = _weights.error_terms(s.column(self.t_cols), self.t_y, wt, *s.args())
            groups.append(wrong)
        groups.append(_exact.partials(wt))
        extra = self.more_error_terms(stumps)
        sums = self.proto.reduce_terms(groups + extra)
        # the extra sums ride along (one collective for both); more_error_sums() hands them on once
        self._more_sums = (tuple(stumps), sums[len(groups):]) if extra else None
        sums = sums[: len(groups)]
        total = sums[-1]
        if not total > 0:
            raise ValueError("the target rows' weights vanished (underflow): use fewer rounds")
        return sums[:-1] / total

    def more_error_terms(self, stumps: list) -> list:
        """Exact terms of further sums a plan will need for these candidates, reduced with the target
        errors (none by default)."""
        return []

    def more_error_sums(self, stumps: list) -> Optional[np.ndarray]:
        """The sums of :meth:`more_error_terms` reduced with :meth:`target_errors` for ``stumps``, once
        (None: not reduced for these candidates; the caller reduces them itself)."""
        got, self._more_sums = getattr(self, "_more_sums", None), None
        return got[1] if got is not None and got[0] == tuple(stumps) else None

    def mixture_error(self, stumps: list, vt: np.ndarray, hard: bool) -> float:
        """Exact weighted target error of the mixture ``sum_k vt_k f_k`` (soft or thresholded)."""
        e = np.empty(self.t_rows.size)
        cols, f, b, lv, ml = self._view(stumps, self.t_cols)
        _transfer.row_errors(cols, self.t_y, f, b, lv, ml, vt, hard, e)
        wt = np.ascontiguousarray(self.w[self.t_rows])
        sums = self.proto.reduce_terms([_exact.partials(wt * e), _exact.partials(wt)])
        return float(sums[0] / sums[1])

    @classmethod
    def _view(cls, hyps: list, cols: np.ndarray) -> tuple:
        """``(cols, feature, bin, left, missing_left)`` for the kernels that index columns by feature:
        stumps read ``cols``; with a tree among them, every member reads its own column (a tree's
        column of predictions, a stump's feature), stacked in member order."""
        if not any(hasattr(h, "n_leaves") for h in hyps):
            return (cols, *cls._stump_arrays(hyps))
        view = np.ascontiguousarray(np.stack([h.column(cols) for h in hyps])) if hyps else cols[:0]
        args = [h.args() for h in hyps]
        return (view, np.arange(len(hyps), dtype=np.int32), np.array([a[0] for a in args], dtype=np.int32),
                np.array([a[1] for a in args], dtype=np.int8), np.array([a[2] for a in args], dtype=np.uint8))

    @staticmethod
    def _stump_arrays(stumps: list):
        args = [s.args() for s in stumps]
        return (
            np.array([max(s.feature, 0) for s in stumps], dtype=np.int32),
            np.array([a[0] for a in args], dtype=np.int32),
            np.array([a[1] for a in args], dtype=np.int8),
            np.array([a[2] for a in args], dtype=np.uint8),
        )

    # --------------------------------------------------------------- error
    def round_error(self, eps: float) -> tuple[Optional[float], dict]:
        """The round's error after the ``high_error`` rule and the floor ``eps_floor``; None: stop."""
        info = {"eps_t_raw": float(eps)}
        if eps >= 0.5 - HALF_TOL:
            if self.params["high_error"] == "stop":
                return None, info
            eps = EPS_CLIP
            info["eps_clipped"] = True
        if eps < self.eps_floor:
            eps = self.eps_floor
            info["eps_clipped"] = True
        return float(eps), info

    def has_edge(self, eps: float) -> bool:
        """Whether a target error counts as below 1/2 (an edge on the target)."""
        return eps < 0.5 - HALF_TOL

    def split_candidates(self, stumps: list) -> tuple[int, bool]:
        """How many of ``stumps`` are the paper's candidates, and whether the last is the target-only one.

        A replayed round (resume) may hold fewer stumps than a live one: only the voting ones are stored.
        """
        full = len(self.candidate_domains())
        if self.target_candidate and len(stumps) == full:
            return full - 1, True
        return len(stumps), False

    @abstractmethod
    def plan(self, stumps: list, eps: np.ndarray) -> Optional[Plan]:
        """The round's plan from the candidates and their target errors ``eps``; None: stop."""

    # -------------------------------------------------------------- rounds
    def _decide(self, stumps: list) -> Optional[Plan]:
        key = (tuple(stumps), self._version)
        if self._cache is None or self._cache[0] != key:
            eps = self.target_errors(stumps)
            self._cache = (key, self.plan(stumps, eps))
        return self._cache[1]

    def select(self, t: int) -> Optional[Hypothesis]:
        stumps = self.candidates()
        plan = self._decide(stumps)
        if plan is None:
            return None
        members = [(stumps[i], coef) for i, _, coef in plan.members]
        metrics = dict(plan.metrics)
        metrics["candidates"] = [
            {"leaves": s.n_leaves, "root_feature": int(s.feature[0])} if hasattr(s, "n_leaves") else
            {"feature": s.feature, "bin": s.bin, "left": s.left, "missing_left": s.missing_left} for s in stumps
        ]
        (s0, c0), rest = members[0], members[1:]
        return Hypothesis(s0, c0, metrics, more=tuple(rest))

    def _replan(self, h: Hypothesis) -> tuple[list, Plan]:
        """The plan behind a hypothesis (recomputed for a replayed round)."""
        voted = [s for s, _ in h.members()]
        if self._cache is not None and self._cache[0][1] == self._version and self._cache[1] is not None:
            stumps = list(self._cache[0][0])
            plan = self._cache[1]
            if [stumps[i] for i, _, _ in plan.members] == voted:
                return stumps, plan
        # A replayed round (resume): only the voting candidates are stored.
        # With one candidate per source they are all stored (MSDTrA) or the
        # best is (MSTrA), and the plan needs the errors of those stored.
        stumps = self.replay_candidates(voted)
        self._cache = None
        plan = self._decide(stumps)
        if plan is None:
            raise ValueError("a replayed round no longer has an error below 1/2")
        return stumps, plan

    def _boost_sources(self, stumps: list, own: Optional[np.ndarray] = None) -> None:
        """AdaBoost's update of each source's rows by its own candidate (``source_update = "boost"``).

        Candidate k sees only source k and the target, so source k's rows that it gets wrong
        are the ones the next candidate k must attend to: they are multiplied by
        ``(1 - err_k) / err_k``, err_k the candidate's exact weighted error on source k
        (no change when err_k >= 1/2). One collective for every source's error.
        """
        cols = [np.ascontiguousarray(stumps[j].column(self.data.cols)[self._source_rows[j]])
                for j in range(len(self.sources))]
        counts = np.asarray(self.data.domain_counts, dtype=np.int64)
        if own is None:
            groups = []
            for j, k in enumerate(self.sources):
                rows = self._source_rows[j]
                groups += list(_weights.error_terms(cols[j], self._source_y[j], np.ascontiguousarray(self.w[rows]),
                                                    *stumps[j].args()))
            sums = self.proto.reduce_terms(groups)
        for j, k in enumerate(self.sources):
            if own is not None:
                err = float(own[j])
            else:
                right, wrong = float(sums[2 * j]), float(sums[2 * j + 1])
                if not right + wrong > 0:
                    continue
                err = max(wrong / (right + wrong), 0.5 / max(int(counts[k]), 1))  # half a row: a bounded factor
            if err >= 0.5 - HALF_TOL:
                continue
            s = stumps[j]
            pred = np.empty(cols[j].size, dtype=np.int8)
            _weights.stump_predict(cols[j], *s.args(), pred)
            rows = self._source_rows[j]
            miss = rows[pred != self._source_y[j]]
            self.w[miss] *= (1.0 - err) / err

    def replay_candidates(self, voted: list) -> list:
        """The candidate list to re-plan a stored round from its voting stumps."""
        return list(voted)

    def apply(self, h: Hypothesis) -> dict:
        stumps, plan = self._replan(h)
        members = [(stumps[i], vt, coef) for i, vt, coef in plan.members]
        cols, f, b, lv, ml = self._view([s for s, _, _ in members], self.data.cols)
        vt = np.array([v for _, v, _ in members])
        coef = np.array([c for _, _, c in members])
        te, se = _transfer.transfer_update(
            self.w, self.score, cols, self.data.y, self.is_source, f, b, lv, ml, vt, coef, plan.hard,
            plan.target[0], plan.target[1], plan.source[0], plan.source[1],
        )
        if plan.own_source:
            self._boost_sources(stumps, plan.own_alpha)
        self._last_applied = (stumps, plan)
        self._version += 1
        terms = _exact.grouped_partials(self.w, self.domain, self.p)
        counts, _, masses = self.proto.reduce_round_stats(np.array([te, se]), 0.0, list(terms))
        total = math.fsum(masses)
        if not (total > 0 and math.isfinite(total)):
            raise ValueError(f"the weights' total is {total} after round {self.model.n_rounds + 1}")
        _weights.scale(self.w, total)
        r = self.model.n_rounds + 1
        for s, _, c in members:
            self.model.append(s, c, round=r)
        frac = masses / total
        out = {
            "train_error": int(counts[0]) / self.n_target,  # the ensemble (every round voting) on the target rows
            "source_train_error": int(counts[1]) / self.n_source,
            "target_mass": float(frac[self.target]),
            "source_mass": float(math.fsum(frac[self.sources])),
            "source_masses": [float(frac[k]) for k in self.sources],
        }
        return out
