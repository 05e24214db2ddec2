"""DTrAdaBoost: TrAdaBoost with the dynamic factor (Al-Stouhi & Reddy 2011).

TrAdaBoost (:mod:`.tradaboost`) over the union of the sources, with the
source update multiplied by ``C_t = 2 (1 - eps_t)``: correctly classified
source rows then keep their weight from round to round instead of
draining to the target. With a single source it is MSDTrA's update.
Votes over rounds ceil(M/2)..M by default, as TrAdaBoost.
"""
from __future__ import annotations

from .tradaboost import TrAdaBoost


class DTrAdaBoost(TrAdaBoost):
    """DTrAdaBoost: TrAdaBoost with the dynamic factor, so correctly classified source rows keep their weight.

    Paper: Al-Stouhi & Reddy 2011. TrAdaBoost over the union of the sources, with the source update multiplied by
    ``C_t = 2 (1 - eps_t)``. Guarantee (the paper's): without the factor the source weights drain to the target
    even when the sources are right (TrAdaBoost's weight drift); with it a correctly classified source row keeps
    its weight. The same model bit for bit on any number of ranks; the source trust as for MSDTrA.
    """

    name = "dtradaboost"
    paper = "Al-Stouhi & Reddy 2011 (dynamic TrAdaBoost)"
    summary = "DTrAdaBoost: TrAdaBoost with the dynamic factor C_t, so correct source rows keep their weight"
    dynamic = True
