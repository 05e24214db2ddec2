"""Model selection: the choices made on held-out rows, one module each, run in order by the training driver.

* :mod:`.source_trust`: how far a transfer run trusts its sources (k-fold over the target rows);
* :mod:`.noise_check`: SmoothBoost, or AdaBoost when held-out rows show the labels clean;
* :mod:`.search`: the values of the parameters given as ``auto``;
* :mod:`.baseline_guard`: a special algorithm, or its simplest baseline where that validates better;
* :mod:`.best_round`: the round of the model kept, chosen during its own run.

Each of the first four is a :class:`.base.Selection`; :mod:`.paired` holds the paired comparison they choose by.
"""
from __future__ import annotations

from .base import Context, Plan, Selection
from .baseline_guard import BaselineGuard
from .noise_check import NoiseCheck
from .search import AutoSearch
from .source_trust import SourceTrust

# The order they run in: a transfer run's way of using its sources first (it may leave a plain AdaBoost run),
# then SmoothBoost's noise check, then the search over the auto values the run left, then the guard of the
# special algorithms against their baselines (the algorithm with the values the search chose).
SELECTIONS: tuple = (SourceTrust(), NoiseCheck(), AutoSearch(), BaselineGuard())



def describe(records: dict) -> list:
    """One line per choice recorded in ``records`` (a run's summary or a model's info, keyed by selection)."""
    lines = []
    for sel in SELECTIONS:
        rec = records.get(sel.key)
        text = sel.describe(rec) if isinstance(rec, dict) else None
        if text:
            lines.append(text)
    return lines


__all__ = ["Context", "Plan", "SELECTIONS", "Selection", "describe"]
