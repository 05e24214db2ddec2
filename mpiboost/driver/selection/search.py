"""The search over ``auto`` values: one training per grid point, the best on the validation rows kept."""
from __future__ import annotations

import itertools
import math
from typing import Optional, Sequence, TYPE_CHECKING

from ... import boost, watchdog
from ...callbacks import BestRound
from ...errors import CollectiveError
from ..algorithm import _with, auto_params
from ..record import selection_record
from .base import Context, Plan, candidate

if TYPE_CHECKING:  # annotations only
    from ...callbacks import Callback
    from ..inputs import Inputs
    from ...comm import Comm


def search(comm: Comm, algorithm: str, params: Optional[dict], auto: dict, rounds: int, inputs: Inputs, seed: int,
           patience: Optional[int], callbacks: Sequence[Callback] = ()) -> dict:
    """Collective: the grid of the ``auto`` parameters tried on validation data; the choice and every result.

    Each grid point is a full run (its best round, as :class:`BestRound`
    picks it); the lowest best-round validation error wins, the earlier grid
    point of equal ones. Every rank sees the same reduced errors, so every
    rank chooses alike.

    Parameters
    ----------
    comm : Comm
        The job's communicator.
    algorithm : str
        The algorithm's registry name.
    params : dict or None
        Its parameters, those of ``auto`` given as ``"auto"``.
    auto : dict
        Parameter name -> the grid of values to try.
    rounds : int
        The rounds of each grid point's run.
    inputs : Inputs
        The training and validation inputs.
    seed : int
        The run's seed.
    patience : int or None
        Early stopping's patience of each run (None: none).
    callbacks
        Told of each training (``on_fit_end``).

    Returns
    -------
    dict
        ``chosen`` (name -> value) and ``tried`` (each grid point's values and best-round validation error).
    """
    names = list(auto)
    tried = []
    grid = list(itertools.product(*(auto[k] for k in names)))
    flags = {k: boost.get(algorithm).declared(k).flag for k in names}
    for i, values in enumerate(grid):
        point = dict(zip(names, values))
        chooser = BestRound(patience)
        candidate(comm, algorithm, _with(params, point), rounds, inputs, seed, chooser,
                  phase="search of " + ", ".join(f"{flags[k]} auto" for k in names), step=i + 1, steps=len(grid),
                  callbacks=callbacks, label=", ".join(f"{flags[k]} {point[k]}" for k in names))
        watchdog.tick()
        tried.append({**point, "best_round": chooser.best_round, "best_error": chooser.best_error})
    # a run that trained no round (no weak edge at all) has no error: it never wins
    best = min(range(len(tried)), key=lambda i: (math.inf if tried[i]["best_error"] is None
                                                 else tried[i]["best_error"], i))
    return {"chosen": {k: tried[best][k] for k in names}, "tried": tried}


def _valid(rec: dict) -> bool:
    return isinstance(rec.get("chosen"), dict)


class AutoSearch:
    """The selection: the values of the parameters given as ``auto`` (:func:`search`)."""

    key = "search"

    def wanted(self, plan: Plan, ctx: Context) -> bool:
        return bool(plan.auto)

    def recorded(self, ctx: Context) -> Optional[dict]:
        auto = auto_params(ctx.algo.name, ctx.params)
        if ctx.resume is None or not auto:
            return None
        rec = selection_record(ctx.resume, self.key, _valid)
        if rec is None or set(rec["chosen"]) != set(auto):
            raise CollectiveError("--resume: the checkpoint does not record the choice of "
                                  + ", ".join(f"{k} auto" for k in auto) + " (made by another run)")
        return rec

    def trains(self, rec: dict, algorithm: str) -> str:
        return algorithm

    def prepare(self, plan: Plan, ctx: Context) -> None:
        pass

    def skipped(self, plan: Plan, ctx: Context) -> Optional[dict]:
        return None

    def choose(self, plan: Plan, ctx: Context) -> dict:
        return search(ctx.comm, plan.algorithm, plan.params, plan.auto, ctx.rounds, plan.inputs, ctx.seed,
                      ctx.patience, ctx.callbacks)

    def apply(self, rec: dict, plan: Plan, ctx: Context) -> Plan:
        return plan.but(params=_with(plan.params, rec["chosen"]))

    def describe(self, rec: dict) -> Optional[str]:
        return ", ".join(f"{k} {v}" for k, v in rec["chosen"].items()) + " chosen on validation"


__all__ = ["AutoSearch", "search"]
