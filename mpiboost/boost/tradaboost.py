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
from .transfer import (CANDIDATES_PARAM, EPS_FLOOR_PARAM, HIGH_ERROR_PARAM, INITIAL_SPLIT_PARAM, ROUNDS,
                       SOURCE_FOLDS_PARAM, SOURCE_TRUST_PARAM, TARGET_DOMAIN, Plan, TransferBoosting,
                       vote_from_param)
from .params import EXACT_TREES


class TrAdaBoost(TransferBoosting):
    """TrAdaBoost: boosting on a target with the sources pooled, source rows down-weighted when misclassified.

    Paper: Dai, Yang, Xue & Yu 2007. Each round fits a stump on every row, rates it on the target rows only, and
    multiplies a misclassified source row's weight by ``beta = 1 / (1 + sqrt(2 ln n_a / M))`` and a
    misclassified target row's by ``1 / beta_t``; the vote is over the later half of the rounds. Guarantee (the
    paper's): the target's training error bound of AdaBoost, and the weight of the source rows that disagree
    with the target decays geometrically. The same model bit for bit on any number of ranks; the source trust
    as for MSDTrA.
    """

    name = "tradaboost"
    paper = "Dai, Yang, Xue & Yu 2007"
    summary = "TrAdaBoost: the sources pooled, source rows down-weighted when misclassified"
    per_source = False  # one candidate trained on every row
    multi_stump_rounds = False
    dynamic = False
    parameters = (*EXACT_TREES, TARGET_DOMAIN, vote_from_param("half"), HIGH_ERROR_PARAM, ROUNDS,
                  CANDIDATES_PARAM, INITIAL_SPLIT_PARAM, EPS_FLOOR_PARAM, SOURCE_TRUST_PARAM, SOURCE_FOLDS_PARAM)

    def plan(self, stumps: list, eps: np.ndarray) -> Optional[Plan]:
        _, has_target = self.split_candidates(stumps)
        choice = 0
        if has_target and not self.has_edge(float(eps[0])):
            # The stump of every row has no edge on the target (typically the last round's
            # stump again, which the target update left at exactly 1/2): the target-only one has.
            choice = len(stumps) - 1
        e, info = self.round_error(float(eps[choice]))
        metrics = {"eps_sources": eps[:1].tolist(), "chosen": choice, **info}
        if has_target:
            metrics["eps_target_candidate"] = float(eps[-1])
        if e is None:
            return None
        return mix_plan(self, np.ones(1), e, True, metrics, index=[choice])
