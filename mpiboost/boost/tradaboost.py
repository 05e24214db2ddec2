"""TrAdaBoost (Dai, Yang, Xue, Yu 2007).

The sources form one source. Each round one stump is trained on every row
(current weights), rated on the target rows only (eps_t);
``beta_t = eps_t / (1 - eps_t)``, ``beta = 1 / (1 + sqrt(2 ln n_a / M))``;
source rows ``w <- w beta^e``, target rows ``w <- w beta_t^-e`` (e = 1 on a
mistake). Output: class +1 iff ``sum_{t >= ceil(M/2)} ln(1/beta_t) (h_t(x) - 1/2) >= 0``
(``vote_from = "first"`` counts every round). Without the dynamic factor
of :mod:`.dtradaboost`, source rows lose weight every round even when
classified correctly (Theorem 1 of the MSDTrA paper, Zhang et al. 2014).
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from .msdtra import mix_plan
from .transfer import HIGH_ERROR_PARAM, ROUNDS, TARGET_DOMAIN, Plan, TransferBoosting, vote_from_param
from .params import WEAK_LEARNER_EXACT


class TrAdaBoost(TransferBoosting):
    name = "tradaboost"
    summary = "TrAdaBoost: the sources pooled, source rows down-weighted when misclassified"
    per_source = False  # one candidate trained on every row
    multi_stump_rounds = False
    dynamic = False
    parameters = (WEAK_LEARNER_EXACT, TARGET_DOMAIN, vote_from_param("half"), HIGH_ERROR_PARAM, ROUNDS)

    def plan(self, stumps: list, eps: np.ndarray) -> Optional[Plan]:
        e, info = self.round_error(float(eps[0]))
        metrics = {"eps_sources": eps.tolist(), **info}
        if e is None:
            return None
        return mix_plan(self, np.ones(1), e, True, metrics)
