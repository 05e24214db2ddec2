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
with coefficient ``ln(1/beta_t) vt_k / 2`` (stumps vote -1/+1).
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

from .base import Param
from .transfer import Plan, TransferBoosting


class MSDTrA(TransferBoosting):
    name = "msdtra"
    summary = "MSDTrA: multi-source dynamic TrAdaBoost, a mixture of one candidate per source each round"
    per_source = True
    dynamic = True  # the dynamic factor C_t on the source update
    parameters = (
        *TransferBoosting.parameters,
        Param("hard_error", bool, False, "a row's error is that of the mixture thresholded at 1/2 (default: soft error)"),
    )

    def plan(self, stumps: list, eps: np.ndarray) -> Optional[Plan]:
        v = np.exp(1.0 - 2.0 * eps)
        vt = v / v.sum()
        hard = bool(self.params["hard_error"])
        if hard:
            raw = self.mixture_error(stumps, vt, True)
        else:
            raw = math.fsum(vt * eps)
        e, info = self.round_error(raw)
        metrics = {"eps_sources": eps.tolist(), "v": vt.tolist(), **info}
        if e is None:
            return None
        return mix_plan(self, vt, e, hard, metrics)


def mix_plan(algo: TransferBoosting, vt: np.ndarray, eps: float, hard: bool, metrics: dict) -> Plan:
    """The (dynamic) TrAdaBoost update and vote for the mixture ``vt`` at round error ``eps``."""
    beta_t = eps / (1.0 - eps)
    c_t = 2.0 * (1.0 - eps) if algo.dynamic else 1.0
    strength = math.log(1.0 / beta_t)
    members = [(k, float(vt[k]), 0.5 * strength * float(vt[k])) for k in range(len(vt))]
    metrics.update(eps_t=eps, beta_t=beta_t, C_t=c_t, beta_a=algo.beta_a)
    return Plan(
        members=members,
        eps=eps,
        hard=hard,
        target=(1.0, strength),  # w beta_t^-e
        source=(c_t, math.log(algo.beta_a)),  # C_t w beta_a^e
        metrics=metrics,
    )
