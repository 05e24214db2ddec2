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
  transfer run: :mod:`.paired`). With ``--valid-metric logloss`` the check still compares errors: on
  flipped labels a model's expected log-loss ``(1 - eta) l(y) + eta l(-y)`` need not order two models as
  on clean labels, and AdaBoost's sure votes would pay most for each flip. With ``--valid-metric auc`` the run is
  judged by its ranking, and so is the check: AdaBoost replaces SmoothBoost
  when its held-out AUC is higher by more than ``SWITCH_SE`` standard errors
  of the AUC difference (DeLong's, weighted where the rows have weights:
  :func:`.paired.paired_auc`). Random flips leave that rule fair too, even
  at rates that differ by class (eta+ and eta-, below 1 together): the noisy
  positives are a mix of clean positives and negatives in shares that do not
  depend on the model, and so are the noisy negatives, so each model's AUC on
  noisy rows is ``c + (a - b) AUC_clean`` with ``c``, ``a`` and ``b`` the same
  for every model and ``a > b`` (the share of clean positives among the noisy
  positives and among the noisy negatives).
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
from .paired import SWITCH_SE, count, paired_auc, paired_gain, row_outcomes, row_weights, switches

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
        ``chosen`` (``"algorithm"`` or ``"adaboost"``), ``rule``, ``metric`` (``"error"`` or ``"auc"``),
        ``held_out`` (rows), ``rows`` (where they came from) and, per candidate, its held-out ``errors`` and
        ``error``; AdaBoost's ``gain``, ``se`` and ``differ`` (the held-out rows where exactly one of the two
        errs). With the AUC, the gain and its standard error are AdaBoost's AUC minus SmoothBoost's
        (``auc_gain``), and each candidate's ``auc`` is kept beside its errors.
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
    metric = "auc" if inputs.valid_metric == "auc" else "error"
    wrong, score = {}, {}
    names = (("algorithm", algorithm, params), ("adaboost", *baseline_run(params)))
    for i, (key, name, p) in enumerate(names):
        model = candidate(comm, name, p, rounds, Inputs(train), seed, phase="noise check", step=i + 1,
                          steps=len(names), callbacks=callbacks,
                          label="SmoothBoost" if key == "algorithm" else "AdaBoost").finish()
        wrong[key], score[key] = row_outcomes(model, held, rows, scores=True)
        watchdog.tick()
    n = count(comm, rows.size)  # at least 1: split_valid refuses none
    mine = count(comm, wrong["algorithm"])
    weight = row_weights(comm, held, rows)  # with sample weights each row's error counts its weight
    ada = paired_gain(comm, wrong["algorithm"], wrong["adaboost"], n, weight)
    tried = {"algorithm": {"errors": mine, "error": mine / n}, "adaboost": {**ada, "error": ada["errors"] / n}}
    what = "fewer errors"
    if metric == "auc":
        y = np.asarray(held.y)[rows]
        gain, se = paired_auc(comm, y, None, score["algorithm"], score["adaboost"], weight)
        # the AUCs themselves, for the record: each model against a constant (AUC 1/2)
        flat = np.zeros(rows.size)
        tried["algorithm"]["auc"] = 0.5 + paired_auc(comm, y, None, flat, score["algorithm"], weight)[0]
        tried["adaboost"].update(auc=0.5 + paired_auc(comm, y, None, flat, score["adaboost"], weight)[0],
                                 auc_gain=gain, gain=gain, se=se)
        what = "a higher AUC" + (" (weighted)" if weight is not None else "")
    chosen = "adaboost" if switches(tried["adaboost"]["gain"], tried["adaboost"]["se"]) else "algorithm"
    return {"chosen": chosen, "metric": metric, "held_out": n, "rows": where,
            "rule": f"SmoothBoost unless AdaBoost has {what} on {where} by more than {SWITCH_SE:g} standard "
                    "error of the paired " + ("per-row differences" if metric == "error" else
                                              "difference (DeLong)"),
            "tried": tried}


def _valid(rec: dict) -> bool:
    """A record of a choice this version makes: without counts (no check made), or with the counts that
    :func:`describe` prints."""
    if rec.get("chosen") not in ("algorithm", "adaboost"):
        return False
    if "tried" not in rec:
        return True
    tried = rec["tried"]
    return (isinstance(rec.get("held_out"), int) and isinstance(tried, dict)
            and rec.get("metric", "error") in ("error", "auc")
            and all(isinstance(tried.get(k), dict) and isinstance(tried[k].get("errors"), int)
                    for k in ("algorithm", "adaboost"))
            and (rec.get("metric", "error") == "error"
                 or all(isinstance(tried[k].get("auc"), float) for k in ("algorithm", "adaboost"))))


def describe(rec: dict) -> str:
    """One line for the run's output, for a record of a check that was made (one with ``tried``)."""
    t, n = rec["tried"], rec["held_out"]
    what = "AdaBoost (the labels look clean)" if rec["chosen"] == "adaboost" else "SmoothBoost"
    if rec.get("metric", "error") == "auc":
        return (f"noise check: the model is {what}; AUC on {n:,} held-out rows: SmoothBoost "
                f"{t['algorithm']['auc']:.4f}, AdaBoost {t['adaboost']['auc']:.4f} "
                f"(difference {t['adaboost']['gain']:+.4f} ± {t['adaboost']['se']:.4f})")
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
