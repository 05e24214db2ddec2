"""The baseline guard: a special algorithm is kept only where it validates at least as well as the simplest
models a user would train instead.

MultiBoost's Q-ensemble, FedMultiBoost and Itakura-Saito multi-task boosting are built for data of several
domains or tasks, where pooling every row or training each task alone can be as good or better: the sets
of issue 42 (a 4-domain image set where MultiBoost ties pooled AdaBoost, a 29-task set where a model per
task is ahead). Each such algorithm declares its baselines (:attr:`mpiboost.boost.base.Algorithm.baselines`);
``--baseline-guard holdout`` (the default) settles it on the run's validation rows:

* the algorithm as configured and each baseline (the run's weak learner, tree shape and rounds carried over)
  are trained on the same training rows and scored on the same validation rows; with ``--best-round`` or
  ``--early-stop`` each is cut at its own best round, as the model kept would be, and scored without the
  bias of choosing that round on the rows it is scored on: each half of the validation rows at the round
  the other half chose (:class:`.best_round.CrossFitRounds`). A candidate that makes choices of its own on
  its validation rows (``chooses_on_valid``: IS multi-task's start forest, cut at its validation log-loss,
  and its per-task fits) is trained once per half instead (with or without a cut at the best round), each
  run seeing one half, and each half scored by the run that did not see it: otherwise that candidate alone
  would be judged on rows that shaped it;
* the measure is the run's: 0/1 errors (the paired per-row differences, :func:`.paired.paired_gain`); with
  ``--valid-metric logloss``, each row's log-loss under the candidate's own probabilities (the paired per-row
  differences again: :func:`.paired.paired_loss`); or, with ``--valid-metric auc``, the AUC (mean over the
  tasks of a task model), whose paired difference and standard error are DeLong's (:func:`.paired.paired_auc`);
* with sample weights each row's error counts its weight (:func:`.paired.weighted_gain`; the counts are kept
  beside), and the AUCs are the weighted ones, as the run's validation AUC (DeLong's variance in its
  weighted form: :func:`.paired.auc_difference`);
* the better model is kept: the candidate of fewest validation errors (least mean log-loss, largest AUC);
  on a tie, the algorithm, then the baselines in their declared order. Unlike the other selections here
  there is no incumbent to dislodge by a standard error: the guard's candidates stand level, and the
  algorithm earns its place by validating better, no more and no less (the one-standard-error rule, which
  kept the algorithm unless a baseline beat it by a standard error, fell behind a baseline by more than a
  standard error in 10 of 33 cells of docs/results/guards.md, against 8 for this rule, at the same mean
  error); the standard error of each paired difference is recorded beside it;
* the one chosen is the model, trained on the training rows as the run asked; the record, with each
  candidate's counts, is ``model.info["baseline_guard"]``, and a checkpoint keeps it.

MultiBoost and FedMultiBoost have among their baselines two models that score a row with its domain, as a
task model does: logistic trees on every row that may split on the domain (LightGBM with a domain id column)
and a model per domain (AdaBoost on each domain alone). ``--baseline-guard domain-free`` leaves such baselines
out, for a model that must score rows of unknown domain (MultiBoost's
agnostic setting); with a model per task among the candidates, the AUC is the mean over the tasks.

Without validation rows there is no guard (held-out rows would be taken from the training rows the user
gave, which the run asked to train on). ``--baseline-guard off`` trains the algorithm as asked (the paper).
The cost: one training per baseline, on the training rows, before the run (the summary's selection seconds).
"""
from __future__ import annotations

from typing import Optional, TYPE_CHECKING

import numpy as np

from ... import boost, watchdog
from ...boost.losses import grows_trees
from ...boost.params import BASELINE_GUARD_CHOICES
from ...callbacks import BestRound
from ...data.subsets import subset, valid_mask
from ...errors import CollectiveError
from ..inputs import Inputs
from ..record import selection_record
from .base import Context, Plan, candidate
from .best_round import CrossFitRounds, at_round
from ..validation import row_logloss
from .paired import count, paired_auc, paired_gain, paired_loss, row_weights, scores, weighted_gain

if TYPE_CHECKING:  # annotations only
    from ...comm import Comm
    from ...data.load import Shard

CHOICES = BASELINE_GUARD_CHOICES


def baseline_run(algorithm: str, params: dict, name: str) -> tuple[str, dict]:
    """The algorithm and parameters of ``algorithm``'s baseline ``name`` (its declaration, the run's parameters
    that the baseline takes carried over)."""
    base, fixed, _, with_trees = boost.get(algorithm).baselines[name]
    out = boost.carried(algorithm, params, base, drop={"baseline_guard", *fixed, *with_trees})
    if grows_trees({**out, **fixed}):
        fixed = {**fixed, **with_trees}
    out.update(fixed)
    out = {k: v for k, v in out.items() if v is not None}  # None: the baseline's own default
    if boost.get(base).has("baseline_guard"):
        out["baseline_guard"] = "off"  # a baseline is not guarded in turn
    return base, out


def strategy_run(chosen: str, algorithm: str, params: dict) -> tuple[str, dict]:
    """The algorithm and parameters that train the choice ``chosen`` (``"algorithm"`` or a baseline's name)."""
    return (algorithm, dict(params)) if chosen == "algorithm" else baseline_run(algorithm, params, chosen)


def takes_task(algorithm: str, name: str) -> bool:
    """Whether the candidate ``name`` (``"algorithm"`` or a baseline's) of ``algorithm`` predicts with each row's
    task (domain): a model per task."""
    cls = boost.get(algorithm)
    return boost.get(algorithm if name == "algorithm" else cls.baselines[name][0]).vote == "task"


def candidates(algorithm: str, params: dict) -> list:
    """The candidates of a guarded run: ``"algorithm"`` and the baselines the run's ``--baseline-guard`` admits
    (with ``domain-free``, those that predict without a row's domain)."""
    names = list(boost.get(algorithm).baselines)
    if params.get("baseline_guard") == "domain-free":
        names = [k for k in names if not takes_task(algorithm, k)]
    return ["algorithm", *names]


def choose(comm: Comm, algorithm: str, params: dict, rounds: int, inputs: Inputs, seed: int, *,
           rounds_chosen: bool, patience: Optional[int], callbacks=()) -> dict:
    """Collective: the algorithm or one of its baselines, by their scores on the validation rows.

    Parameters
    ----------
    comm : Comm
        The job's communicator.
    algorithm, params, rounds, seed
        The run as asked for (the baselines take the parameters they declare).
    inputs : Inputs
        The training and validation inputs (the guard needs validation rows).
    rounds_chosen : bool
        Each candidate is cut at its own best validation round (``--best-round`` / ``--early-stop``).
    patience : int or None
        Early stopping's patience (None: none).
    callbacks
        Told of each training (``on_fit_end``).

    Returns
    -------
    dict
        ``chosen``, ``rule``, ``metric`` (``"error"``, ``"logloss"`` or ``"auc"``), ``held_out`` (rows) and,
        per candidate, ``errors`` (and against the algorithm ``differ``, ``gain``, ``se``; against every other
        candidate ``differ_from``: the rows where exactly one of the two errs), or ``loss`` (the mean log-loss;
        against the algorithm ``gain`` and ``se``), or ``auc_gain`` and ``se``.
    """
    held = inputs.valid
    names = candidates(algorithm, params)
    metric = inputs.valid_metric if inputs.valid_metric in ("auc", "logloss") else "error"
    if metric != "auc" and inputs.shard.n_classes != 2:
        raise CollectiveError("the baseline guard compares binary models")
    n = count(comm, held.n_local)
    # each candidate cut at its best round is scored on the rows that round was not chosen on (cross-fitting),
    # and one that shapes itself on its validation rows on the rows it did not see, with or without a cut
    shaped = {k for k in names if boost.get(strategy_run(k, algorithm, params)[0]).chooses_on_valid}
    first, halves = split_halves(comm, held, seed) if rounds_chosen or shaped else (None, None)
    outcome, cut, per_half = {}, {}, []
    y = np.asarray(held.y)

    def measured(model) -> np.ndarray:
        """What the comparison needs of a candidate: its scores of this rank's rows, or their log-losses (under
        the candidate's own link: its scores alone would not say)."""
        s = scores(model, held)
        return row_logloss(model, s, y) if metric == "logloss" else s

    for i, key in enumerate(names):
        name, p = strategy_run(key, algorithm, params)
        train = dict(phase="baseline guard", step=i + 1, steps=len(names), callbacks=callbacks, label=key)
        if halves is not None and key in shaped:
            # a candidate that shapes itself on its validation rows (beyond the round) is trained once per
            # half, each run seeing one half only, and scored on the other
            got = []
            for half in halves:
                chooser = BestRound(patience) if rounds_chosen else None
                model = candidate(comm, name, p, rounds, Inputs(inputs.shard, half, inputs.seconds,
                                                                inputs.valid_metric), seed, chooser, **train).finish()
                r = chooser.best_round if chooser is not None else 0
                got.append((at_round(model, r), r))
            s = np.where(first, measured(got[1][0]), measured(got[0][0]))
            if rounds_chosen:
                cut[key] = [got[0][1], got[1][1]]
            per_half.append(key)
            outcome[key] = s
            watchdog.tick()
            continue
        chooser = BestRound(patience) if rounds_chosen else None
        cross = CrossFitRounds(comm, halves, inputs.valid_metric) if rounds_chosen and halves is not None else None
        model = candidate(comm, name, p, rounds, inputs, seed, chooser, watch=[cross] if cross else [],
                          **train).finish()
        if cross is not None:
            r_first, r_second = cross.best_rounds()
            # the first half scored at the round the second chose, and the other way round
            s = np.where(first, measured(at_round(model, r_second)), measured(at_round(model, r_first)))
            cut[key] = [r_first, r_second]
        else:
            s = measured(at_round(model, chooser.best_round if chooser is not None else 0))
        outcome[key] = s
        watchdog.tick()
    # AUC: the mean over the tasks where a candidate is a model per task (its scores of two tasks need not
    # share a scale), else over every row
    task = np.asarray(held.domain) if any(takes_task(algorithm, k) for k in names) else None
    tried: dict = {}
    # the rows' sample weights, where the data has them: each row's error counts that many times
    weight = row_weights(comm, held)
    weighted = weight is not None
    if metric == "error":
        wrong = {k: (np.where(s >= 0, 1, -1) != y).astype(np.int64) for k, s in outcome.items()}
        tried["algorithm"] = {"errors": count(comm, wrong["algorithm"])}
        if weighted:
            tried["algorithm"]["weighted_errors"] = weighted_gain(comm, wrong["algorithm"], wrong["algorithm"],
                                                                  weight)["weighted_errors"]
        for k in names[1:]:
            tried[k] = paired_gain(comm, wrong["algorithm"], wrong[k], n, weight)
        # every pair's rows where exactly one of the two errs: with the errors, any paired rule between any two
        # candidates can be applied to these rows afterwards (scripts/experiments/guard_rules.py)
        pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]
        differ = comm.allreduce_int(np.array([int(np.sum(wrong[a] != wrong[b])) for a, b in pairs], dtype=np.int64))
        for (a, b), d in zip(pairs, differ.tolist()):
            tried[a].setdefault("differ_from", {})[b] = int(d)
            tried[b].setdefault("differ_from", {})[a] = int(d)
    elif metric == "logloss":
        tried["algorithm"] = {"loss": paired_loss(comm, outcome["algorithm"], outcome["algorithm"], weight)["loss"]}
        for k in names[1:]:
            tried[k] = paired_loss(comm, outcome["algorithm"], outcome[k], weight)
    else:
        tried["algorithm"] = {}
        for k in names[1:]:
            gain, se = paired_auc(comm, y, task, outcome["algorithm"], outcome[k], weight)
            tried[k] = {"auc_gain": gain, "gain": gain, "se": se}
    for k, r in cut.items():
        tried[k]["rounds"] = r
    chosen = "algorithm"  # the better candidate; on a tie the earlier one (the algorithm first)
    for k in names[1:]:
        if tried[k]["gain"] > (0.0 if chosen == "algorithm" else tried[chosen]["gain"]):
            chosen = k
    what = ("held-out errors" + (" (by the rows' weights)" if weighted else "") if metric == "error" else
            "mean log-loss" + (" (by the rows' weights)" if weighted else "") if metric == "logloss" else
            "AUC" + (" (the mean over the tasks)" if task is not None else "") + (" (weighted)" if weighted else ""))
    by_weight = bool(weighted)
    return {"chosen": chosen, "metric": metric, "held_out": n, "tried": tried, "weighted": by_weight,
            "rule": f"the better of {algorithm} and its baselines ({', '.join(names[1:])}) in {what} on the "
                    "validation rows (on a tie the algorithm, then the baselines in this order)"
                    + ("; each half of the rows scored at the best round of the other half" if cut else "")
                    + (f" ({', '.join(per_half)}: trained once per half, each run validated on one half and "
                       "scored on the other)" if per_half else "")}


def split_halves(comm: Comm, held: Shard, seed: int) -> tuple:
    """Collective: the two halves of the validation rows that cross-fitting scores apart.

    Parameters
    ----------
    comm : Comm
        The job's communicator.
    held : Shard
        This rank's validation rows.
    seed : int
        The run's seed (the halves are drawn with ``seed + 1``, stratified by domain and class on the global
        row order: :func:`mpiboost.data.subsets.valid_mask` at 0.5).

    Returns
    -------
    tuple
        This rank's boolean mask of the first half and the two halves' shards; ``(None, None)`` where a half
        would be empty (the rounds are then chosen on every row).
    """
    first = valid_mask(held, 0.5, seed + 1, comm)
    sizes = comm.allreduce_int(np.array([first.sum(), (~first).sum()], dtype=np.int64))
    if min(int(v) for v in sizes) == 0:
        return None, None
    return first, (subset(held, first, comm), subset(held, ~first, comm))


def _valid(rec: dict) -> bool:
    return isinstance(rec.get("chosen"), str) and isinstance(rec.get("rule"), str)


class BaselineGuard:
    """The selection: the algorithm, or a baseline of it that validates better (the module docstring)."""

    key = "baseline_guard"

    def wanted(self, plan: Plan, ctx: Context) -> bool:
        cls = boost.get(plan.algorithm)
        return bool(cls.baselines) and cls.has("baseline_guard") and type(ctx.algo).has("baseline_guard")

    def recorded(self, ctx: Context) -> Optional[dict]:
        rec = selection_record(ctx.resume, self.key, _valid)
        if rec is None:
            return None
        cls = type(ctx.algo)
        if rec["chosen"] != "algorithm" and rec["chosen"] not in cls.baselines:
            raise CollectiveError(f"--resume: the checkpoint's baseline_guard record names {rec['chosen']!r}, not a "
                                  f"baseline of {cls.name}")
        if rec["chosen"] != "algorithm" and rec["chosen"] not in candidates(cls.name, ctx.algo.params):
            raise CollectiveError(f"--resume: the checkpoint's baseline guard chose {rec['chosen']}, a model per "
                                  "domain; --baseline-guard domain-free leaves it out (train anew, or resume without it)")
        if rec["chosen"] != "algorithm" and ctx.algo.params.get("baseline_guard") == "off":
            raise CollectiveError(f"--resume: the checkpoint's baseline guard chose {rec['chosen']}; "
                                  "--baseline-guard off asks for the algorithm (train anew, or resume without it)")
        return rec

    def trains(self, rec: dict, algorithm: str) -> str:
        if rec["chosen"] == "algorithm" or rec["chosen"] not in boost.get(algorithm).baselines:
            return algorithm
        return boost.get(algorithm).baselines[rec["chosen"]][0]

    def prepare(self, plan: Plan, ctx: Context) -> None:
        pass

    def skipped(self, plan: Plan, ctx: Context) -> Optional[dict]:
        if ctx.algo.params.get("baseline_guard", "holdout") == "off":
            why = "--baseline-guard off: the algorithm as asked"
        elif plan.inputs.valid is None:
            why = "no validation rows (--valid or --valid-fraction): no guard"
        elif ctx.resume is not None:
            why = "resumed from a checkpoint that made no guard"
        else:
            return None
        return {"chosen": "algorithm", "rule": why}

    def choose(self, plan: Plan, ctx: Context) -> dict:
        return choose(ctx.comm, plan.algorithm, plan.params, ctx.rounds, plan.inputs, ctx.seed,
                      rounds_chosen=ctx.rounds_chosen, patience=ctx.patience, callbacks=ctx.callbacks)

    def apply(self, rec: dict, plan: Plan, ctx: Context) -> Plan:
        algorithm, params = strategy_run(rec["chosen"], plan.algorithm, plan.params)
        return plan.but(algorithm=algorithm, params=params)

    def describe(self, rec: dict) -> Optional[str]:
        if not rec.get("tried"):
            return None
        t = rec["tried"]
        if rec["metric"] == "error":
            parts = ", ".join(f"{k} {v['errors']:,}" for k, v in t.items())
            return f"baseline guard: the model is {rec['chosen']} (errors on {rec['held_out']:,} validation rows: {parts})"
        if rec["metric"] == "logloss":
            parts = ", ".join(f"{k} {v['loss']:.4f}" for k, v in t.items())
            return (f"baseline guard: the model is {rec['chosen']} (log-loss on {rec['held_out']:,} validation rows: "
                    f"{parts})")
        parts = ", ".join(f"{k} {v['auc_gain']:+.4f} ± {v['se']:.4f}" for k, v in t.items() if k != "algorithm")
        return f"baseline guard: the model is {rec['chosen']} (AUC against the algorithm's: {parts})"


__all__ = ["BaselineGuard", "CHOICES", "baseline_run", "candidates", "choose", "split_halves", "strategy_run",
           "takes_task"]
