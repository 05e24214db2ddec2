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
from .params import WEAK_LEARNER_EXACT

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
    "a round with target error >= 1/2 ends training (stop) or goes on with error 0.499 (clip)", choices=HIGH_ERROR,
)
ROUNDS = Param("rounds", int, None, "the number of rounds M (part of the source factor; set by --rounds)",
               low=1, cli=False)


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
    per_source = True
    multi_stump_rounds = True
    needs_rounds = True  # the source factor depends on the number of rounds M
    stop_message = "the round's target error reached 1/2 (--high-error clip goes on)"
    parameters = (WEAK_LEARNER_EXACT, TARGET_DOMAIN, vote_from_param("first"), HIGH_ERROR_PARAM, ROUNDS)

    @classmethod
    def check_params(cls, params: dict, given) -> None:
        if params["rounds"] is None:
            raise ValueError(f"{cls.name} needs the number of rounds M (params['rounds'])")

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
        self.w = np.full(n, 1.0 / data.n_global)
        self.score = np.zeros(n)
        t_rows = np.nonzero(self.domain == self.target)[0]
        self.t_rows = t_rows
        self.t_cols = np.ascontiguousarray(data.cols[:, t_rows])
        self.t_y = np.ascontiguousarray(data.y[t_rows])
        self._g = np.empty(n, dtype=np.int64)
        # One candidate on every row (TrAdaBoost) needs one histogram, not one per domain.
        self._hists = np.zeros((self.p if self.per_source else 1, data.d, 256), dtype=np.int64)
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
            return [(self.target, k) for k in self.sources]
        return [(0,)]  # the single histogram of every row

    def candidates(self) -> list:
        """This round's candidate stumps, one per entry of :meth:`candidate_domains` (same on every rank)."""
        groups = self.candidate_domains()
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
        sums = self.proto.reduce_terms(groups)
        total = sums[-1]
        if not total > 0:
            raise ValueError("the target rows' weights vanished (underflow): use fewer rounds")
        return sums[:-1] / total

    def mixture_error(self, stumps: list, vt: np.ndarray, hard: bool) -> float:
        """Exact weighted target error of the mixture ``sum_k vt_k f_k`` (soft or thresholded)."""
        e = np.empty(self.t_rows.size)
        f, b, lv, ml = self._stump_arrays(stumps)
        _transfer.row_errors(self.t_cols, self.t_y, f, b, lv, ml, vt, hard, e)
        wt = np.ascontiguousarray(self.w[self.t_rows])
        sums = self.proto.reduce_terms([_exact.partials(wt * e), _exact.partials(wt)])
        return float(sums[0] / sums[1])

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
        """The round's error after the ``high_error`` rule and the floor ``EPS_MIN``; None: stop."""
        info = {"eps_t_raw": float(eps)}
        if eps >= 0.5 - HALF_TOL:
            if self.params["high_error"] == "stop":
                return None, info
            eps = EPS_CLIP
            info["eps_clipped"] = True
        if eps < EPS_MIN:
            eps = EPS_MIN
            info["eps_clipped"] = True
        return float(eps), info

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

    def replay_candidates(self, voted: list) -> list:
        """The candidate list to re-plan a stored round from its voting stumps."""
        return list(voted)

    def apply(self, h: Hypothesis) -> dict:
        stumps, plan = self._replan(h)
        members = [(stumps[i], vt, coef) for i, vt, coef in plan.members]
        f, b, lv, ml = self._stump_arrays([s for s, _, _ in members])
        vt = np.array([v for _, v, _ in members])
        coef = np.array([c for _, _, c in members])
        te, se = _transfer.transfer_update(
            self.w, self.score, self.data.cols, self.data.y, self.is_source, f, b, lv, ml, vt, coef, plan.hard,
            plan.target[0], plan.target[1], plan.source[0], plan.source[1],
        )
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
