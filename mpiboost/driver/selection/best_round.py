"""The round of the model kept: the one of lowest validation error, chosen during the model's own run.

Unlike the selections made before the rounds (:mod:`.base`), this one watches the final run: a
:class:`mpiboost.callbacks.BestRound` tracks the validation error of every round (and may stop the run early),
and the model kept is the run's, truncated to that round. A checkpoint holds every round trained, so a resumed
run replays the whole validation curve and chooses as the uninterrupted run would.
"""
from __future__ import annotations

from typing import Optional, TYPE_CHECKING

from ...callbacks import BestRound

if TYPE_CHECKING:  # annotations only
    from ...model import Model


def chooser(best_round: bool, patience: Optional[int], searched: bool) -> Optional[BestRound]:
    """The callback that chooses the round (None: the last round is kept).

    The round is chosen with ``--best-round``, with ``--early-stop`` (``patience`` rounds), and after a search
    of ``auto`` values (whose candidates were judged by their best rounds).
    """
    return BestRound(patience) if best_round or patience is not None or searched else None


def keep(model: Model, choice: Optional[BestRound]) -> Model:
    """The model kept: ``model`` truncated to the chosen round (itself when the last round is best)."""
    if choice is not None and 0 < choice.best_round < model.n_rounds:
        return model.truncated(choice.best_round)
    return model


def stop_reason(reason: str, choice: Optional[BestRound], trained: int) -> str:
    """Why the rounds ended, saying so when ``--early-stop`` ended them (its callback stopped the run)."""
    if reason == "stopped by a callback" and choice is not None and choice.patience is not None \
            and trained - choice.best_round >= choice.patience:
        return f"no better validation error in {choice.patience} rounds"
    return reason


def summary(choice: BestRound, trained: int) -> dict:
    """The summary's figures of the choice: the error of the model kept, the rounds trained, the round chosen."""
    return {"valid_error": choice.best_error, "rounds_trained": trained, "best_round": choice.best_round,
            "best_valid_error": choice.best_error}


__all__ = ["chooser", "keep", "stop_reason", "summary"]
