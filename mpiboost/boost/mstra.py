"""MSTrA: multi-source TrAdaBoost (Yao & Doretto 2010).

Each round trains one candidate per source on source k and the target rows
(current weights) and keeps the one with the lowest weighted error on the
target (ties: the first source). ``alpha_t = 1/2 ln((1 - eps) / eps)``;
source rows ``w <- w exp(-alpha_a [miss])`` with
``alpha_a = 1/2 ln(1 + sqrt(2 ln n_a / M))``, target rows
``w <- w exp(alpha_t [miss])``. Output ``sign(sum_t alpha_t h_t)``.
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

from .transfer import Plan, TransferBoosting


def alpha_a(n_source: int, rounds: int) -> float:
    return 0.5 * math.log(1.0 + math.sqrt(2.0 * math.log(max(n_source, 1)) / rounds))


class MSTrA(TransferBoosting):
    """MSTrA: multi-source TrAdaBoost, the best of one candidate per source each round.

    Paper: Yao & Doretto 2010. Each round fits one candidate per source (that source's rows and the target's)
    and keeps the one of least weighted target error; target rows are reweighted as AdaBoost's, source rows
    down-weighted on their mistakes. Guarantee (the paper's): the target's training error bound of AdaBoost for
    the chosen candidates' errors. The same model bit for bit on any number of ranks; the source trust as for
    MSDTrA.
    """

    name = "mstra"
    paper = "Yao & Doretto 2010 (multi-source TrAdaBoost)"
    summary = "MSTrA: multi-source TrAdaBoost, the best of one candidate per source each round"
    per_source = True
    multi_stump_rounds = False

    def plan(self, stumps: list, eps: np.ndarray) -> Optional[Plan]:
        n_paper, has_target = self.split_candidates(stumps)
        best = int(np.argmin(eps[:n_paper]))  # the first of equal errors
        if has_target and not self.has_edge(float(eps[best])):
            best = len(stumps) - 1  # no source candidate has an edge on the target: the target-only one
        e, info = self.round_error(float(eps[best]))
        metrics = {"eps_sources": eps[:n_paper].tolist(), "chosen": best, **info}
        if has_target:
            metrics["eps_target_candidate"] = float(eps[-1])
        if e is None:
            return None
        alpha = 0.5 * math.log((1.0 - e) / e)
        a_src = alpha_a(self.n_source, self.rounds)
        metrics.update(eps_t=e, alpha_t=alpha, alpha_a=a_src)
        return Plan(
            members=[(best, 1.0, alpha)],
            eps=e,
            hard=True,
            target=(1.0, alpha),
            source=(1.0, -a_src),
            metrics=metrics,
        )
