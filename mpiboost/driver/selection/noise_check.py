"""Whether a SmoothBoost run's labels are noisy enough for SmoothBoost, decided on held-out rows.

SmoothBoost caps every row's weight at 1/(epsilon n) and shrinks the weights
slowly, so that rows whose labels are wrong cannot take over the run. When no
label is wrong, the cap costs accuracy: the weak learner never sees the few
truly hard rows weighted more than the cap allows. AdaBoost, the algorithm's
simplest baseline, then tests better (with trees at 0% flips: ijcnn1 0.78%
against 2.28%, cod-rna 4.02% against 5.37%; with stumps cod-rna 6.96% against
9.81%), while at 10-30% flips SmoothBoost wins by as much. No fixed epsilon or
gamma serves both (see docs/results/special.md, "SmoothBoost on clean labels"),
and the noise rate is not known before training.

``--noise-check holdout`` (the default) settles it with held-out rows. Flipped
labels are flipped in the held-out rows too, but that does not bias the
comparison: for labels flipped at random at rate eta, a model's error on noisy
rows is eta + (1 - 2 eta) times its error on clean ones, the same increasing
function for every model, so the model with fewer noisy held-out errors is
the better one on clean rows too.

* The held-out rows are the validation rows of the run (``--valid`` or
  ``--valid-fraction``) when it has any, else ``HOLDOUT_FRACTION`` of the
  training rows, stratified and systematic on the global row order
  (:func:`mpiboost.data.subsets.valid_mask`: the same rows on any number
  of ranks); below ``MIN_ROWS`` training rows there is no check.
* SmoothBoost as asked and AdaBoost with the same weak learner and rounds are
  trained on the other rows and scored on the held-out ones (exact integer
  counts, summed over the ranks).
* SmoothBoost, the algorithm asked for, stays unless AdaBoost has fewer
  held-out errors by more than ``SWITCH_SE`` standard errors of the paired
  per-row differences (the one-standard-error rule, as for the sources of a
  transfer run: :mod:`.paired`).
* The one chosen is trained on every training row and is the model; the
  record, with both counts, is ``model.info["noise_check"]``; a checkpoint
  keeps it, so ``--resume`` trains the chosen one on without a new check.

``--noise-check off`` trains SmoothBoost as asked (the paper). With
``--epsilon auto`` the search over epsilon is the run's own validation and
there is no check; nor with ``--train-domain`` or ``--entity-balanced``, whose
rows and weights AdaBoost does not share.

The driver runs it as a selection (:class:`NoiseCheck`); the algorithm knows nothing of it.
"""
from __future__ import annotations

from typing import Optional, TYPE_CHECKING

import numpy as np

from ... import boost, watchdog
from ...boost.smoothboost import NOISE_CHECK
from ...data.subsets import subset, valid_mask
from ...errors import CollectiveError
from ..inputs import Inputs
from ..record import selection_record
from .base import Context, Plan, candidate
from .paired import SWITCH_SE, count, paired_gain, row_outcomes, row_weights, switches

if TYPE_CHECKING:  # annotations only
    from ...comm import Comm

CHOICES = NOISE_CHECK
BASELINE = "adaboost"
# The held-out part when the run has no validation rows: the usual 80/20 split of model selection.
HOLDOUT_FRACTION = 0.2
# Below this many training rows the held-out part (HOLDOUT_FRACTION of them, 200 rows at the bound) cannot show
# a difference of a few points beyond its noise at one standard error, and the check would triple the cost of
# runs too small to need it.
MIN_ROWS = 1000
# SmoothBoost's own parameters, which AdaBoost does not take; the rest (the weak learner's) are carried.
_OWN = {"epsilon", "gamma", "vote", "weight_store", "max_cells", "noise_check"}
_SEED_SALT = 0x0015E  # the check's held-out rows are not the rows a --valid-fraction with the same seed takes


def baseline_run(params: dict) -> tuple[str, dict]:
    """AdaBoost's name and parameters for a SmoothBoost run's ``params``: the same weak learner and options."""
    return BASELINE, boost.carried("smoothboost", params, BASELINE, drop=_OWN)


def strategy_run(chosen: str, algorithm: str, params: dict) -> tuple[str, dict]:
    """The algorithm and parameters that train the choice ``chosen`` (``"algorithm"`` or ``"adaboost"``)."""
    return (algorithm, dict(params)) if chosen == "algorithm" else baseline_run(params)


def skipped(params: dict, auto: dict) -> Optional[str]:
    """Why this run makes no check (None when it makes one)."""
    if params.get("noise_check", "holdout") == "off":
        return "--noise-check off: SmoothBoost as asked"
    if auto:
        return "--" + ", --".join(k.replace("_", "-") for k in auto) + " auto: chosen on validation, no check"
    if params.get("train_domain") is not None or params.get("entity_balanced"):
        return "--train-domain / --entity-balanced: AdaBoost does not weigh the rows alike, no check"
    return None


def choose(comm: Comm, algorithm: str, params: dict, rounds: int, inputs, seed: int, callbacks=()) -> dict:
    """Collective: SmoothBoost or AdaBoost, by their errors on held-out rows; the record kept in the model's info.

    Parameters
    ----------
    comm
        The job's communicator.
    algorithm, params, rounds, seed
        The SmoothBoost run as asked for.
    inputs
        The loaded inputs (:class:`mpiboost.driver.inputs.Inputs`); its validation rows, if any, are the
        held-out rows.
    callbacks
        :class:`mpiboost.callbacks.Callback` objects, told of each training (``on_fit_end``).

    Returns
    -------
    dict
        ``chosen`` (``"algorithm"`` or ``"adaboost"``), ``rule``, ``held_out`` (rows), ``rows`` (where they
        came from) and, per candidate, its held-out ``errors`` and ``error``; AdaBoost's ``gain``, ``se`` and
        ``differ`` (the held-out rows where exactly one of the two errs).
    """
    shard = inputs.shard
    if inputs.valid is not None:
        train, held, rows = inputs.shard, inputs.valid, np.arange(inputs.valid.n_local)
        where = "the validation rows"
    elif shard.n_global < MIN_ROWS:
        return {"chosen": "algorithm", "rule": f"no check: fewer than {MIN_ROWS:,} training rows"}
    else:
        mask = valid_mask(shard, HOLDOUT_FRACTION, int(seed) ^ _SEED_SALT, comm)
        train, held, rows = subset(shard, ~mask, comm), shard, np.flatnonzero(mask)
        where = f"{HOLDOUT_FRACTION:g} of the training rows"
    wrong = {}
    names = (("algorithm", algorithm, params), ("adaboost", *baseline_run(params)))
    for i, (key, name, p) in enumerate(names):
        model = candidate(comm, name, p, rounds, Inputs(train), seed, phase="noise check", step=i + 1,
                          steps=len(names), callbacks=callbacks,
                          label="SmoothBoost" if key == "algorithm" else "AdaBoost").finish()
        wrong[key] = row_outcomes(model, held, rows)[0]
        watchdog.tick()
    n = count(comm, rows.size)  # at least 1: split_valid refuses none
    mine = count(comm, wrong["algorithm"])
    weight = row_weights(comm, held, rows)  # with sample weights each row's error counts its weight
    ada = paired_gain(comm, wrong["algorithm"], wrong["adaboost"], n, weight)
    chosen = "adaboost" if switches(ada["gain"], ada["se"]) else "algorithm"
    return {"chosen": chosen, "held_out": n, "rows": where,
            "rule": f"SmoothBoost unless AdaBoost has fewer errors on {where} by more than {SWITCH_SE:g} standard "
                    "error of the paired per-row differences",
            "tried": {"algorithm": {"errors": mine, "error": mine / n},
                      "adaboost": {**ada, "error": ada["errors"] / n}}}


def _valid(rec: dict) -> bool:
    """A record of a choice this version makes: without counts (no check made), or with the counts that
    :func:`describe` prints."""
    if rec.get("chosen") not in ("algorithm", "adaboost"):
        return False
    if "tried" not in rec:
        return True
    tried = rec["tried"]
    return (isinstance(rec.get("held_out"), int) and isinstance(tried, dict)
            and all(isinstance(tried.get(k), dict) and isinstance(tried[k].get("errors"), int)
                    for k in ("algorithm", "adaboost")))


def describe(rec: dict) -> str:
    """One line for the run's output, for a record of a check that was made (one with ``tried``)."""
    t, n = rec["tried"], rec["held_out"]
    what = "AdaBoost (the labels look clean)" if rec["chosen"] == "adaboost" else "SmoothBoost"
    return (f"noise check: the model is {what}; errors on {n:,} held-out rows: SmoothBoost "
            f"{t['algorithm']['errors']:,}, AdaBoost {t['adaboost']['errors']:,}")


class NoiseCheck:
    """The selection: SmoothBoost as asked, or AdaBoost when held-out rows show the labels clean (:func:`choose`)."""

    key = "noise_check"

    def wanted(self, plan: Plan, ctx: Context) -> bool:
        return type(ctx.algo).has("noise_check") and boost.get(plan.algorithm).has("noise_check")

    def recorded(self, ctx: Context) -> Optional[dict]:
        rec = selection_record(ctx.resume, self.key, _valid)
        if rec is not None and rec["chosen"] == "adaboost" and ctx.algo.params.get("noise_check") == "off":
            raise CollectiveError("--resume: the checkpoint's noise check chose AdaBoost; --noise-check off asks for "
                                  "SmoothBoost (train anew, or resume without it)")
        return rec

    def trains(self, rec: dict, algorithm: str) -> str:
        return BASELINE if rec["chosen"] == "adaboost" else algorithm

    def prepare(self, plan: Plan, ctx: Context) -> None:
        pass

    def skipped(self, plan: Plan, ctx: Context) -> Optional[dict]:
        why = skipped(ctx.algo.params, plan.auto)
        if why is None and ctx.resume is not None:
            why = "resumed from a checkpoint that made no check"
        return None if why is None else {"chosen": "algorithm", "rule": why}

    def choose(self, plan: Plan, ctx: Context) -> dict:
        return choose(ctx.comm, plan.algorithm, plan.params, ctx.rounds, plan.inputs, ctx.seed, ctx.callbacks)

    def apply(self, rec: dict, plan: Plan, ctx: Context) -> Plan:
        algorithm, params = strategy_run(rec["chosen"], plan.algorithm, plan.params)
        return plan.but(algorithm=algorithm, params=params)

    def describe(self, rec: dict) -> Optional[str]:
        return describe(rec) if rec.get("tried") else None


__all__ = ["BASELINE", "CHOICES", "HOLDOUT_FRACTION", "MIN_ROWS", "NoiseCheck", "baseline_run", "choose", "describe",
           "skipped", "strategy_run"]
