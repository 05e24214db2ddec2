"""The round of the model kept: the one of lowest validation error, chosen during the model's own run.

Unlike the selections made before the rounds (:mod:`.base`), this one watches the final run: a
:class:`mpiboost.callbacks.BestRound` tracks the validation error of every round (and may stop the run early),
and the model kept is the run's, truncated to that round. A checkpoint holds every round trained, so a resumed
run replays the whole validation curve and chooses as the uninterrupted run would.
"""
from __future__ import annotations

from typing import Optional, TYPE_CHECKING

import numpy as np

from ...callbacks import BestRound, Callback
from ...protocol import Protocol
from ..validation import _valid_error

if TYPE_CHECKING:  # annotations only
    from ...comm import Comm
    from ...model import Model


def chooser(best_round: bool, patience: Optional[int], searched: bool) -> Optional[BestRound]:
    """The callback that chooses the round (None: the last round is kept).

    The round is chosen with ``--best-round``, with ``--early-stop`` (``patience`` rounds), and after a search
    of ``auto`` values (whose candidates were judged by their best rounds).
    """
    return BestRound(patience) if best_round or patience is not None or searched else None


def keep(model: Model, choice: Optional[BestRound]) -> Model:
    """The model kept: ``model`` truncated to the chosen round (itself when the last round is best)."""
    return model if choice is None else at_round(model, choice.best_round)


def at_round(model: Model, r: int) -> Model:
    """``model`` cut at round ``r`` (itself for 0, no round chosen, or its last round)."""
    return model.truncated(r) if 0 < r < model.n_rounds else model


def stop_reason(reason: str, choice: Optional[BestRound], trained: int) -> str:
    """Why the rounds ended, saying so when ``--early-stop`` ended them (its callback stopped the run)."""
    if reason == "stopped by a callback" and choice is not None and choice.patience is not None \
            and trained - choice.best_round >= choice.patience:
        return f"no better validation error in {choice.patience} rounds"
    return reason


def summary(choice: BestRound, trained: int, start_error: Optional[float] = None) -> dict:
    """The summary's figures of the choice: the error of the model kept, the rounds trained, the round chosen.

    ``start_error``: the validation error of the model before its first round (a fitted start, such as IS
    multi-task's forest with ``--refine off``), the model kept where no round ran."""
    error = choice.best_error if choice.best_error is not None else start_error
    return {"valid_error": error, "rounds_trained": trained, "best_round": choice.best_round,
            "best_valid_error": error}



class CrossFitRounds(Callback):
    """The best round of a candidate on each half of the validation rows, for scoring each half at the round
    the other chose (cross-fitting).

    A candidate cut at its best validation round and then scored on those same rows is scored with a bias
    toward it: the round was chosen for those rows' noise. A candidate of many rounds and a jagged validation
    curve gains the most from it, which is how a guard comparing such candidates can keep the wrong one
    (MultiBoost on Adult at 1,000 rounds: ahead on its validation rows, behind on the test rows). Scoring
    each half of the rows at the round chosen on the other half removes the bias; every row still counts
    once. The halves are stratified by domain and class (:func:`mpiboost.data.subsets.valid_mask` at 0.5),
    and each half's curve is the run's validation measure (:func:`mpiboost.driver.validation._valid_error`):
    the same on any number of ranks.
    """

    order = 31

    def __init__(self, comm: "Comm", halves: tuple, metric: str) -> None:
        self.comm = comm
        self.halves = halves
        self.metric = metric
        self.curves: tuple = ([], [])
        self._scorers: tuple = ()

    def on_train_begin(self, env) -> None:
        takes = env.model.takes_task
        scorers = []
        for h in self.halves:
            s = env.model.scorer(h.cols, h.X, h.domain if takes else None)
            s.metric = self.metric
            scorers.append(s)
        self._scorers = tuple(scorers)
        self.curves = ([], [])
        return None

    def on_round_end(self, env) -> None:
        proto = Protocol(self.comm)
        for curve, s, h in zip(self.curves, self._scorers, self.halves):
            del curve[env.t - 1:]
            curve.append(float(_valid_error(s, h, proto)))
        return None

    def best_rounds(self) -> tuple[int, int]:
        """The earliest round of the lowest error on each half (0 where no round was trained)."""
        return tuple(int(np.argmin(np.asarray(c))) + 1 if c else 0 for c in self.curves)


__all__ = ["CrossFitRounds", "at_round", "chooser", "keep", "stop_reason", "summary"]
