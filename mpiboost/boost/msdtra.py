"""MSDTrA: multi-source dynamic TrAdaBoost (Zhang et al. 2014).

Each round trains one candidate f_k per source on source k and the target
rows (current weights), rates it on the target only (eps_k) and mixes all
of them: ``f_t = sum_k vt_k f_k`` with ``vt ∝ v_k = exp(1 - 2 eps_k)``. The
round's error is the mixture's soft error on the target,
``eps_t = sum_j w_j |f_t(x_j) - y_j| / sum_j w_j = sum_k vt_k eps_k``
(Eq. 16; ``hard_error`` thresholds f_t at 1/2 instead). With
``beta_t = eps_t / (1 - eps_t)`` and the dynamic factor ``C_t = 2 (1 - eps_t)``:
source rows ``w <- C_t w beta_a^e``, target rows ``w <- w beta_t^-e``, where e
is the row's (soft) error. The dynamic factor is what keeps correctly
classified source rows at their weight (Theorem 1): without it they lose
mass to the target every round. Output: class +1 iff
``sum_{t >= t0} ln(1/beta_t) (f_t(x) - 1/2) >= 0``, t0 = 1 as printed
(``vote_from = "half"``: t0 = ceil(M/2)); stored as one stump per candidate
with coefficient ``ln(1/beta_t) vt_k / 2`` (stumps vote -1/+1). That is
``--source-update paper --weights paper --candidates paper --initial-split paper
--eps-floor 0``.

The defaults go beyond the paper where it fails on real data (docs/results.md,
"Transfer"). With few target rows the sources hold ~99% of the mass, and the
paper's source update ``beta_a^e`` takes weight *away* from the source rows a
candidate gets wrong, so every candidate sees the same source-fitted rows round
after round and learns one stump; and a single stump's error on 10-50 target
rows (which decides both the mixture and the vote) is mostly noise. So:

* ``source_update = "boost"``: source k's rows get AdaBoost's update from
  candidate k's own weighted error on source k (``(1 - err_k) / err_k`` on its
  mistakes): candidate k's stumps form an AdaBoost chain on source k (plus the
  target rows).
* ``weights = "chain"``: candidate k votes with its own AdaBoost coefficient
  ``1/2 ln((1 - err_k) / err_k)``; at the end chain k's coefficients are scaled
  by its edge on the target, ``max(0, 1 - 2 E_k)``, E_k the target error of the
  whole chain (an ensemble's error on few rows is informative where a stump's is
  not). The target rows are updated as the paper does, with the round's
  mixture (weights: the chains' current edges) and ``beta_t`` (no update when the
  mixture has no edge); if no source chain ends with an edge on the target
  (misleading sources), the target-only chain is the model.
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

from .._ext import _weights
from ..model import Model
from .base import Hypothesis, Param
from .transfer import HALF_TOL, Plan, TransferBoosting


class MSDTrA(TransferBoosting):
    """MSDTrA: multi-source dynamic TrAdaBoost, a mixture of one candidate per source each round.

    Paper: Zhang, Li, Zhang & Li 2014. Each round fits one candidate per source (on that source's rows and the
    target's), rates each on the target rows only, and mixes them with weights ``exp(1 - 2 eps_k)``; source rows
    are down-weighted by the dynamic factor, so the sources that carry over keep their weight. Guarantee (the
    paper's): the target's training error falls as AdaBoost's does with the round errors ``eps_t``, and a source
    row's weight does not drain when it is classified correctly. mpiboost's: the same model bit for bit on any
    number of ranks; before training, the source trust (:mod:`mpiboost.driver.selection.source_trust`) may
    train AdaBoost on the target alone or on every row pooled instead, from held-out target rows.
    """

    name = "msdtra"
    paper = "Zhang, Li, Zhang & Li 2014 (multisource dynamic TrAdaBoost)"
    summary = "MSDTrA: multi-source dynamic TrAdaBoost, a mixture of one candidate per source each round"
    per_source = True
    dynamic = True  # the dynamic factor C_t on the source update
    parameters = (
        *TransferBoosting.parameters,
        Param("hard_error", bool, False, "a row's error is that of the mixture thresholded at 1/2 (default: soft error)"),
        Param(
            "source_update", str, "boost",
            "source rows: boost (the default: AdaBoost's update of source k's rows by candidate k's own error on "
            "source k, so each candidate keeps learning from its source) or paper (C_t w beta_a^e: a misclassified "
            "source row loses weight, so the sources teach the same stump every round)",
            choices=("boost", "paper"),
        ),
        Param(
            "weights", str, "chain",
            "how candidates vote: chain (the default: candidate k votes with its AdaBoost coefficient on source k, "
            "times its chain's edge on the target, max(0, 1 - 2 E_k), E_k the target error of candidate k's "
            "stumps of every round so far; needs --source-update boost) or paper (mixture v_k = exp(1 - 2 eps_k) "
            "from this round's stumps' target errors, vote ln(1/beta_t))",
            choices=("chain", "paper"),
        ),
    )

    @classmethod
    def check_params(cls, params: dict, given) -> None:
        super().check_params(params, given)
        if params["weights"] == "chain" and params["source_update"] != "boost":
            if "weights" in given and given["weights"] is not None:
                raise ValueError("--weights chain needs --source-update boost")
            params["weights"] = "paper"  # --source-update paper alone: the paper's rules

    def setup(self, data, proto, seed: int = 0) -> None:
        """:meth:`TransferBoosting.setup`, plus each candidate chain's score on the target rows (zero)."""
        super().setup(data, proto, seed)
        n_cands = len(self.candidate_domains())
        self._chain = np.zeros((n_cands, self.t_rows.size))  # each candidate chain's score on the target rows

    def apply(self, h: Hypothesis) -> dict:
        """The round's update (:meth:`TransferBoosting.apply`), then each chain's score on the target rows."""
        out = super().apply(h)
        stumps, plan = self._last_applied
        if plan.chain is not None:
            for j, s in enumerate(stumps):
                pred = s.predict(self.t_cols).astype(np.float64)
                self._chain[j] += plan.chain[j] * pred
        return out

    def _own_terms(self, stumps: list) -> list:
        """This rank's exact terms of each source candidate's right and wrong weight on its own source."""
        groups = []
        for j, k in enumerate(self.sources):
            rows = self._source_rows[j]
            s = stumps[j]
            col = np.ascontiguousarray(s.column(self.data.cols)[rows])
            groups += list(_weights.error_terms(col, self._source_y[j], np.ascontiguousarray(self.w[rows]), *s.args()))
        return groups

    def more_error_terms(self, stumps: list) -> list:
        # chain weights need each candidate's error on its own source: reduced with the target errors
        return self._own_terms(stumps) if self.params["weights"] == "chain" else []

    def own_errors(self, stumps: list, eps: np.ndarray) -> np.ndarray:
        """Each candidate's exact weighted error on its own source (the target-only one: on the target)."""
        sums = self.more_error_sums(stumps)
        if sums is None:
            sums = self.proto.reduce_terms(self._own_terms(stumps))
        out = np.array([sums[2 * j + 1] / max(sums[2 * j] + sums[2 * j + 1], 1e-300) for j in range(len(self.sources))])
        return np.concatenate([out, eps[len(self.sources):]])

    def chain_plan(self, stumps: list, eps: np.ndarray) -> Optional[Plan]:
        """``weights = "chain"``: own AdaBoost coefficients, scaled by each chain's edge on the target."""
        n_paper, has_target = self.split_candidates(stumps)
        own = self.own_errors(stumps, eps)
        counts = np.asarray(self.data.domain_counts, dtype=np.int64)
        floors = np.array([0.5 / max(int(counts[k]), 1) for k in self.sources] + [self.eps_floor] * (len(stumps) - n_paper))
        own_f = np.maximum(own, floors)
        alpha = np.where(own_f < 0.5 - HALF_TOL, 0.5 * np.log((1.0 - own_f) / own_f), 0.0)
        # the chains' target errors with this round's stumps added (counts over the target rows: exact)
        wrong = np.zeros(len(stumps), dtype=np.int64)
        for j, s in enumerate(stumps):
            score = self._chain[j] + alpha[j] * s.predict(self.t_cols)
            wrong[j] = np.count_nonzero(np.where(score >= 0, 1, -1) != self.t_y)
        wrong = np.asarray(self.proto.reduce_counts(wrong))
        chain_err = wrong / self.n_target
        rho = np.maximum(0.0, 1.0 - 2.0 * chain_err)
        rho[alpha == 0] = 0.0
        if has_target:
            # The target-only chain is rated on the rows it was fitted to (a stump on 10-50 rows
            # often has a small training error): its rating says nothing, so it never mixes in.
            rho[-1] = 0.0
        if not rho.any():
            # No source chain has an edge on the target yet (early rounds: one stump on few
            # rows is a coin toss): every source chain that learns its source drives the target
            # rows' update alike (letting the target-only stump drive it instead was worse on
            # Amazon: it boosts the target rows towards its own overfit). If none ends with an
            # edge (misleading sources), finish() keeps the target-only chain.
            if (alpha[:n_paper] > 0).any():
                rho[:n_paper] = (alpha[:n_paper] > 0).astype(np.float64)
            elif has_target and alpha[-1] > 0:
                rho[-1] = 1.0
        metrics = {"eps_sources": eps[:n_paper].tolist(), "own_errors": own.tolist(), "chain_errors": chain_err.tolist(),
                   "rho": rho.tolist(), "eps_t_raw": float("nan")}
        if has_target:
            metrics["eps_target_candidate"] = float(eps[-1])
        if not rho.any():
            self.stop_message = "no candidate has an edge on its own rows (each one's weighted error >= 1/2)"
            return None
        vt = rho / rho.sum()
        raw = math.fsum(vt * eps)
        metrics["eps_t_raw"] = float(raw)
        e = min(max(raw, self.eps_floor), 0.5)
        strength = math.log((1.0 - e) / e)  # 0 when the round has no edge on the target: target weights stay
        # Stored: each chain's own coefficient; finish() scales chain k by its final edge on the
        # target, so a chain's first (strongest) stumps are not lost to an early, noisy rating.
        # The target-only chain is stored every round too: it is the model if no source chain
        # ends with an edge on the target.
        coef = alpha.copy()
        metrics.update(eps_t=e, v=vt.tolist())
        plan = Plan(
            members=[(k, float(vt[k]), float(coef[k])) for k in range(len(stumps))],
            eps=e, hard=False, target=(1.0, strength), source=(1.0, 0.0), metrics=metrics, own_source=True,
        )
        plan.chain = alpha
        plan.own_alpha = own_f
        return plan

    def chain_errors(self) -> np.ndarray:
        """Each source chain's final error E_k on the target rows (one collective)."""
        n_src = len(self.sources)
        wrong = np.array([np.count_nonzero(np.where(self._chain[j] >= 0, 1, -1) != self.t_y) for j in range(n_src)],
                         dtype=np.int64)
        return np.asarray(self.proto.reduce_counts(wrong)) / self.n_target

    def finish(self) -> Model:
        """The model; with ``weights = "chain"`` each source chain's coefficients times its final target edge.

        A copy: the model of the rounds (a checkpoint's) keeps the coefficients a resumed run replays.
        """
        if self.params["weights"] != "chain" or self.model.n_rounds == 0:
            return self.model
        err = self.chain_errors()
        rho = np.maximum(0.0, 1.0 - 2.0 * err)
        n_src, n_c = len(self.sources), len(self.candidate_domains())
        scale = np.ones(n_c)
        # A chain is evidently misleading when its target error is above 1/2 by more than a
        # one-sided 5% binomial test allows (1.645 standard errors of 1/2 on n_b rows): with
        # 10 rows an error of 5/10 or 6/10 is what a good chain often gets (pooled AdaBoost
        # tests at ~0.27 on Amazon where every chain scored 0.5-0.6 on the 10 target rows).
        plausible = err <= 0.5 + 1.645 * 0.5 / math.sqrt(self.n_target)
        if rho.any():
            scale[:n_src] = rho
            scale[n_src:] = 0.0  # the target-only chain: only when no source chain may help
        elif plausible.any() or n_c == n_src:
            # no chain shows an edge, but not all are evidently wrong: the plausible ones vote alike
            # (--candidates paper: every source chain if none is plausible)
            scale[:n_src] = plausible if plausible.any() else 1.0
            scale[n_src:] = 0.0
        else:
            scale[:n_src] = 0.0  # every source chain evidently misleading: the target-only chain
        m = self.model.truncated(self.model.n_rounds)
        m.coef = (m.coef.reshape(-1, n_c) * scale).reshape(-1).astype(np.float64)
        return m

    def plan(self, stumps: list, eps: np.ndarray) -> Optional[Plan]:
        if self.params["weights"] == "chain":
            return self.chain_plan(stumps, eps)
        v = np.exp(1.0 - 2.0 * eps)
        n_paper, has_target = self.split_candidates(stumps)
        if self.target_candidate:
            # A candidate without an edge on the target only pulls the mixture towards 1/2
            # (or past it): it gets weight 0 (kept in the round, so a resumed run replans it).
            edge = eps < 0.5 - HALF_TOL
            if has_target:
                # The target-only candidate is rated on the rows it was fitted to, so its error
                # flatters it: it stands in only when no source candidate has an edge.
                edge[-1] = not edge[:n_paper].any() and edge[-1]
            if edge.any():
                v = np.where(edge, v, 0.0)
        vt = v / v.sum()
        hard = bool(self.params["hard_error"])
        if hard:
            raw = self.mixture_error(stumps, vt, True)
        else:
            raw = math.fsum(vt * eps)
        e, info = self.round_error(raw)
        metrics = {"eps_sources": eps[:n_paper].tolist(), "v": vt.tolist(), **info}
        if has_target:
            metrics["eps_target_candidate"] = float(eps[-1])  # v's last entry is its mixture weight
        if e is None:
            return None
        return mix_plan(self, vt, e, hard, metrics)


def mix_plan(algo: TransferBoosting, vt: np.ndarray, eps: float, hard: bool, metrics: dict,
             index: Optional[list] = None) -> Plan:
    """The (dynamic) TrAdaBoost update and vote for the mixture ``vt`` at round error ``eps``.

    Parameters
    ----------
    algo : TransferBoosting
        The algorithm (its ``dynamic`` flag and ``beta_a``).
    vt : numpy.ndarray
        Mixture weights of the voting candidates (sum 1).
    eps : float
        The round's error on the target, after the floor and the ``high_error`` rule.
    hard : bool
        Rows' errors of the thresholded mixture (True) or its soft error.
    metrics : dict
        The round's metrics so far (updated).
    index : list of int, optional
        The candidate index of each entry of ``vt`` (default ``0..len(vt) - 1``).

    Returns
    -------
    Plan
    """
    beta_t = eps / (1.0 - eps)
    c_t = 2.0 * (1.0 - eps) if algo.dynamic else 1.0
    strength = math.log(1.0 / beta_t)
    index = list(range(len(vt))) if index is None else index
    members = [(index[k], float(vt[k]), 0.5 * strength * float(vt[k])) for k in range(len(vt))]
    metrics.update(eps_t=eps, beta_t=beta_t, C_t=c_t, beta_a=algo.beta_a)
    # MSDTrA's source_update "boost": source rows are left here and updated by their own
    # candidate (TransferBoosting._boost_sources)
    own = algo.params.get("source_update") == "boost"
    source = (1.0, 0.0) if own else (c_t, math.log(algo.beta_a))  # C_t w beta_a^e
    return Plan(
        members=members,
        eps=eps,
        hard=hard,
        target=(1.0, strength),  # w beta_t^-e
        source=source,
        metrics=metrics,
        own_source=own,
    )
