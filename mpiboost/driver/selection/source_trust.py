"""How far a transfer run trusts its sources, decided by held-out evidence on the target rows.

A transfer algorithm (TrAdaBoost's family, MSDTrA) rates its candidates on the
same few target rows it trains on, so a harmful source can look helpful: the
run has no way to notice that AdaBoost on the target rows alone would test
better. ``--source-trust cv`` (the default of every algorithm that declares the
parameter) settles it before training, by k-fold cross-validation over the
target rows only:

* the folds split the target rows, stratified by class, by a seeded
  permutation of each class's rows in the global row order (the same folds on
  any number of ranks); every source row is in every fold's training part;
* four ways to use the sources are trained on each fold's training part and
  scored on its held-out target rows: ``algorithm`` (the transfer algorithm as
  configured), ``pooled`` (AdaBoost on the target and source rows alike: full
  trust), ``balanced`` (AdaBoost on every row, the target rows weighing as much
  as all the source rows together: the sources trusted as one more target; see
  :func:`balanced`) and ``target`` (AdaBoost on the target rows alone: none),
  with the weak learner and rounds of the run;
* one way is the incumbent: ``pooled`` when every source alone passes the
  screen below (all of them carry a rule over: trusting them all is the simplest
  use), else ``algorithm`` (some do and some do not: the transfer algorithm is
  made to pick among them). It stays unless another has fewer held-out errors
  (exact integer counts) by more than ``SWITCH_SE`` standard errors of the paired
  per-row differences; of two such, the larger gain wins. The mean normalized
  margin ``y f(x) / sum |coef|`` of each is recorded too.

Before the folds, each source is **screened** on every target row: AdaBoost with
trees on that source's rows alone (the run's rounds; with several sources, also
gradient-boosted logistic trees on all of them together) never sees a target
row, so its
margins ``y f(x) / sum |coef|`` on all n_b of them are an unbiased sample of
how well the source's rule carries over, with no refitting noise. A source
shows a rule that carries over when their mean is above 0 by a one-sided
t-test at the family-wise level ``SCREEN_LEVEL`` over the screened models
(Sidak's correction: with four models, the best of four coins would pass a
test at the level of one about four times as often). When no source does
(unrelated sources: margins around 0; sources of the opposite rule: below
it), the sources are not used at all: the model is AdaBoost on the target
rows alone, without folds. At 10 target rows this settles what the folds
cannot (a chain that fits its 9 training rows whatever its source teaches,
scored on one held-out row); margins, not counts of errors, because a count
of 10 rows cannot tell a helpful source from a lucky coin at that level.
Trees whatever the run's weak learner: the test is valid for any model that
never saw the target rows, and the stronger the model, the larger a related
source's margins against their noise (Amazon reviews at 20 target rows: the
screen passed 20 of 24 runs with stumps, every run with trees), while sources
that carry nothing over stay at the test's level.

"The target rows alone" is the model AdaBoost would train on them alone: in
bins of their own (:func:`own_bins`), not the sources' finer ones, between
which a split of a few rows falls off the middle (0.013 more test error at
10 target rows, and a model that is not the baseline users compare with).

The chosen way is then trained on every row and is the model; the choice and
each way's held-out counts are in ``model.info["source_trust"]``. ``--source-trust
algorithm|pooled|target`` skips the folds and trains that one (``algorithm``:
the papers' rule, the sources trusted as the algorithm's own update decides).

The driver runs it as a selection (:class:`SourceTrust`); the algorithms know nothing of it.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Optional, TYPE_CHECKING

import numpy as np

from ... import boost, watchdog
from ..._ext import _exact
from ...boost.losses import grows_trees
from ...boost.transfer import SOURCE_TRUST as CHOICES
from ...data.binning import DEFAULT_SAMPLE, fit_edges, sample_rows
from ...data.load import iter_block
from ...data.subsets import class_index, subset
from ...errors import CollectiveError, InputError
from ...protocol import Protocol
from ..inputs import Inputs
from ..record import selection_record
from .base import Context, Plan, candidate
from .paired import SWITCH_SE, count, paired_gain, row_outcomes, switches

if TYPE_CHECKING:  # annotations only
    from ...comm import Comm
    from ...data.load import Shard

STRATEGIES = CHOICES[1:]  # ("algorithm", "pooled", "balanced", "target"); CHOICES[0] is "cv"
BASELINE = "adaboost"  # what "pooled", "balanced" and "target" train
# The screen (carries_over): the chance that a coin's sources pass it, all of them together. Compared with 0.05
# to 0.2 (and a count of errors instead of margins) on generated helpful, mixed, unrelated and adversarial sources
# at n_b = 10 and 20, 50 repetitions: the rule that kept every case within one standard error of the better of
# target-only and pooled in every block of 10 (docs/results.md, "Source trust").
SCREEN_LEVEL = 0.1
# The screen's models are trees whatever the run's weak learner (source_screen). Compared with the run's stumps on
# Amazon reviews (3 repetitions, 4 targets) and the generated unrelated and adversarial sources.
SCREEN_LEARNER = "tree"
MIN_CLASS_ROWS = 2  # a class with fewer target rows cannot be in both parts of a fold
# Parameters of the transfer run that are not the weak learner's: the baselines do not take them.
_NOT_CARRIED = {"rounds", "target_domain", "train_domain", "source_trust", "source_folds"}
TREE_ONLY = {"max_leaves", "max_depth", "min_data_in_leaf", "min_child_weight", "l2", "split_gain", "exchange"}


def strategy_run(strategy: str, algorithm: str, params: dict, target: int, n_target: int) -> tuple[str, dict]:
    """The algorithm and parameters that train ``strategy`` (see the module docstring).

    With trees, the pooled baseline is gradient-boosted trees of the logistic loss (AdaBoost's ``--loss
    logistic``: Newton leaves, the pooled learner LightGBM users know); the target-only one is AdaBoost
    with trees, or with stumps when the target rows are too few for a tree to split (fewer than
    ``4 * min_data_in_leaf``).

    Parameters
    ----------
    strategy : str
        ``"algorithm"``, ``"pooled"``, ``"balanced"`` (pooled's model; its weights are :func:`balanced`'s) or
        ``"target"``.
    algorithm, params
        The transfer run's algorithm name and parameters.
    target : int
        The target domain's index.
    n_target : int
        The target rows of the run (those the strategy trains on, for the folds).

    Returns
    -------
    tuple
        (algorithm name, parameters).
    """
    if strategy == "algorithm":
        return algorithm, dict(params)
    base = boost.get(BASELINE)
    out = {k: v for k, v in params.items() if k not in _NOT_CARRIED and v is not None and base.has(k)}
    out["weak_learner"] = boost.own_weak_learner(algorithm, params)  # the run's learner, not AdaBoost's default
    if grows_trees(out):
        leaf = int(out.get("min_data_in_leaf") or base.declared("min_data_in_leaf").default)
        if strategy in ("pooled", "balanced"):
            out.update(loss="logistic")
            out.pop("split_gain", None)  # the logistic loss grows trees by the Newton gain only
        elif n_target < 4 * leaf:
            out = {k: v for k, v in out.items() if k not in TREE_ONLY}
            out["weak_learner"] = "stump"
    if strategy == "target":
        out["train_domain"] = int(target)  # AdaBoost-k (exponential loss): weights on the target rows only
    return BASELINE, out


def balanced(comm: Comm, shard: Shard, target: int) -> Shard:
    """Collective: ``shard`` with its target rows' weights scaled so that they weigh, together, as much as all
    the source rows (the rows' sample weights, or 1 each, kept within each side).

    Pooling a few target rows with many source rows lets the sources outvote the target wherever they
    disagree; training on the target alone throws the sources away. Balancing the two totals is the middle way
    a user tries first (LightGBM pooled with the target rows up-weighted), and on sources that carry part of
    the target's rule (a scanner shifted by a pixel) it tests better than either end: docs/results/guards.md.
    The totals are correctly rounded sums over the ranks, so the weights, and the model, are the same on any
    number of ranks.

    Parameters
    ----------
    comm : Comm
        The job's communicator.
    shard : Shard
        This rank's rows (every domain's), with or without sample weights.
    target : int
        The target domain's index.

    Returns
    -------
    Shard
        ``shard`` with the new weights (itself where one side has no weight).
    """
    w = np.ones(shard.n_local) if shard.weight is None else np.asarray(shard.weight, dtype=np.float64)
    is_t = np.asarray(shard.domain) == target
    total = Protocol(comm).reduce_stats(np.ascontiguousarray(w), is_t.astype(np.int32), 2)
    sources, targets = float(total[0]), float(total[1])
    if sources <= 0.0 or targets <= 0.0:
        return shard
    out = w.copy()
    out[is_t] *= sources / targets
    return dataclasses.replace(shard, weight=out)


def target_folds(shard: Shard, target: int, k: int, seed: int, comm: Comm) -> np.ndarray:
    """Collective: the fold (0..k-1) of each of this rank's target rows, -1 for every other row.

    Each class's target rows are numbered in the global row order (an exclusive
    scan of the counts over the ranks) and permuted by ``seed``; row j of the
    permuted order of class c goes to fold ``(j + n_before_c) mod k``, with
    ``n_before_c`` the target rows of the classes before c, so the folds differ
    in size by at most one row and every class is spread over them evenly.

    Parameters
    ----------
    shard : Shard
        This rank's training rows (every domain's).
    target : int
        The target domain's index.
    k : int
        The number of folds (at most the target's rows).
    seed : int
        The run's seed: the permutation of each class's rows.
    comm : Comm
        The job's communicator.

    Returns
    -------
    numpy.ndarray
        int64, one per row of this rank: the row's fold, or -1 off the target.
    """
    is_t = shard.domain == target
    cls = class_index(shard.y)
    K = max(int(shard.n_classes), 2)
    counts = np.bincount(cls[is_t], minlength=K).astype(np.int64)
    table = comm.allgather_array(counts) if comm.size > 1 else counts[None, :]
    before, totals = table[: comm.rank].sum(axis=0), table.sum(axis=0)
    fold = np.full(shard.domain.size, -1, dtype=np.int64)
    rows = np.flatnonzero(is_t)
    offset = 0
    for c in range(K):
        mine = rows[cls[rows] == c]
        perm = np.random.default_rng([int(seed), 0xF01D5, c]).permutation(int(totals[c]))
        fold[mine] = (perm[before[c] + np.arange(mine.size)] + offset) % k
        offset += int(totals[c])
    return fold


def own_bins(comm: Comm, shard: Shard, keep: np.ndarray, seed: int = 0):
    """Collective: the rows ``keep`` of every rank alone, binned by bins of their own.

    A model of a few target rows binned by the edges of every source row would
    split between two target values at the first empty bin above the lower
    one; AdaBoost on the target rows alone, trained on their own file, splits
    halfway. Their raw values are read again and binned as a file of these
    rows alone would be: the same edges, so the model AdaBoost gives them alone.
    ``shard`` must hold its rows as the files do (``Shard.file_rows``: a
    transfer run refuses ``--valid-fraction``, so the driver's always do).

    Parameters
    ----------
    comm : Comm
        The job's communicator.
    shard : Shard
        This rank's rows, as the files hold them.
    keep : numpy.ndarray
        bool, one per row of this rank: the rows to keep.
    seed : int
        The seed of the bin edges' sample (the run's).

    Returns
    -------
    Shard
        The kept rows, binned by edges of their own.
    """
    if not shard.file_rows:
        raise RuntimeError("own_bins needs the rows as the files hold them, not a subset")
    part = subset(shard, keep, comm)
    raw = _raw_rows(shard, keep)
    counts = comm.allgather_array(np.array([raw.shape[0]], dtype=np.int64)) if comm.size > 1 else None
    before = int(counts[: comm.rank, 0].sum()) if counts is not None else 0
    ids = sample_rows(part.n_global, DEFAULT_SAMPLE, seed)  # as a load of these rows alone samples them
    lo, hi = np.searchsorted(ids, [before, before + raw.shape[0]])
    part.bins = fit_edges(comm, raw[ids[lo:hi] - before])
    part.cols = np.empty((raw.shape[1], raw.shape[0]), dtype=np.uint8)
    part.bins.transform(raw, out=part.cols.T)
    return part


def _raw_rows(shard: Shard, keep: np.ndarray) -> np.ndarray:
    """This rank's rows ``keep``, their raw values read again from the files (``(m, d)``, the files' dtype)."""
    dtype = np.result_type(*[f.x_dtype for f in shard.files])
    out = np.empty((int(keep.sum()), shard.files[0].d), dtype=dtype)
    filled = 0
    for g, _, _, arr in iter_block(shard.files, shard.start, shard.stop, what=("X",)):
        sel = keep[g - shard.start: g - shard.start + arr["X"].shape[0]]
        m = int(sel.sum())
        out[filled: filled + m] = arr["X"][sel]
        filled += m
    return out


def rebin(shard: Shard, rows: np.ndarray, bins) -> np.ndarray:
    """The binned columns ``(d, m)`` of this rank's ``rows`` (ascending) of ``shard``, in ``bins``."""
    keep = np.zeros(shard.n_local, dtype=bool)
    keep[rows] = True
    raw = _raw_rows(shard, keep)
    out = np.empty((raw.shape[1], raw.shape[0]), dtype=np.uint8)
    bins.transform(raw, out=out.T)
    return out


def target_only(comm: Comm, inputs, target: int, seed: int):
    """Collective: the training inputs of the target rows alone (:func:`own_bins`), the validation rows
    binned as they are.

    Parameters
    ----------
    comm : Comm
        The job's communicator.
    inputs : Inputs
        The run's training (and validation) inputs.
    target : int
        The target domain's index.
    seed : int
        The run's seed.

    Returns
    -------
    Inputs
        The target rows alone, binned by their own edges, with the validation rows rebinned by them.
    """
    part = own_bins(comm, inputs.shard, inputs.shard.domain == target, seed)
    valid = inputs.valid
    if valid is not None:
        valid = dataclasses.replace(valid, cols=rebin(valid, np.arange(valid.n_local), part.bins), bins=part.bins)
    return Inputs(part, valid, inputs.seconds, inputs.valid_metric)


def source_screen(comm: Comm, params: dict, rounds: int, inputs, seed: int, target: int, n_target: int,
                  callbacks=()) -> dict:
    """Collective: each source alone, and with two or more sources all of them together, scored on every
    target row; source index (``"sources"`` for all of them) -> its target errors.

    The model of source k is AdaBoost with trees on source k's rows only (``train_domain = k``, the run's
    rounds and tree parameters; stumps for a tree that could not split that source's rows); that of all the
    sources is gradient-boosted logistic trees on every source row. Neither sees a target row. Trees whatever
    the run's weak learner (``SCREEN_LEARNER``): the screen's test holds its level for any such model, and a
    stronger one shows a related source's rule with fewer target rows.

    Parameters
    ----------
    comm : Comm
        The job's communicator.
    params, rounds, seed
        The transfer run as asked for (its tree parameters and rounds are the screened models').
    inputs : Inputs
        The training inputs (target and source rows).
    target : int
        The target domain's index.
    n_target : int
        The target's rows over every rank.
    callbacks
        Told of each training (``on_fit_end``).

    Returns
    -------
    dict
        ``str(source)`` (or ``"sources"``) -> ``errors``, ``margin_sum`` and ``margin_square`` over the
        target rows (exact sums, the same on any number of ranks).
    """
    shard = inputs.shard
    counts = np.asarray(shard.domain_counts if shard.domain_counts is not None else [], dtype=np.int64)
    rows = np.flatnonzero(shard.domain == target)

    sources = [k for k in range(int(shard.n_domains)) if k != target and k < counts.size and counts[k] > 0]
    steps = len(sources) + (1 if len(sources) > 1 else 0)

    def target_errors(run: tuple, on, label: str) -> int:
        model = candidate(comm, *run, rounds, on, seed, phase="source screen", step=len(out) + 1, steps=steps,
                          callbacks=callbacks, label=label).finish()
        wrong, m = row_outcomes(model, shard, rows)
        watchdog.tick()
        errors = count(comm, wrong)
        total, square = proto.reduce_terms([_exact.partials(np.ascontiguousarray(m)),
                                            _exact.partials(np.ascontiguousarray(m * m))])  # exact: any ranks
        return {"errors": errors, "margin_sum": float(total), "margin_square": float(square)}

    params = dict(params, weak_learner=SCREEN_LEARNER)
    out = {}
    proto = Protocol(comm)
    names = list(shard.domain_names or [])
    for k in sources:
        out[k] = target_errors(strategy_run("target", "adaboost", params, k, int(counts[k])), inputs,
                               f"source {names[k] if k < len(names) else k}")
    if len(out) > 1:  # the sources' union may carry a rule over that no single source shows alone
        union = Inputs(subset(shard, shard.domain != target, comm))
        out["sources"] = target_errors(strategy_run("pooled", "adaboost", params, target, n_target), union,
                                       "every source")
    return out


def margin_t(stats: dict, n_target: int) -> float:
    """The t statistic of the mean normalized margin over ``n_target`` rows (``inf``/``-inf``/0 for no spread)."""
    n = int(n_target)
    mean = stats["margin_sum"] / max(n, 1)
    var = max(stats["margin_square"] - stats["margin_sum"] ** 2 / max(n, 1), 0.0) / max(n - 1, 1)
    if var <= 0.0:
        return math.copysign(math.inf, mean) if mean != 0.0 else 0.0
    return mean / math.sqrt(var / n)


def _finite(x: float):
    """``x``, or None where it is not finite (the model's JSON header holds numbers only)."""
    return x if math.isfinite(x) else None


def carries_over(stats: dict, n_target: int, candidates: int = 1) -> bool:
    """Whether one screened model's target margins show a rule that carries over.

    One-sided t-test of "mean normalized margin ``y f(x) / sum |coef|`` > 0" over the ``n_target`` rows (Student's
    t with ``n_target - 1`` degrees of freedom) at the family-wise level ``SCREEN_LEVEL`` over ``candidates``
    models (Sidak: each at ``1 - (1 - SCREEN_LEVEL) ** (1 / candidates)``). The margin is a rule's vote on a
    row, not only its sign: at 10 rows it tells a helpful source from a coin that a count of errors cannot.
    """
    from scipy.stats import t as student

    n = int(n_target)
    if n < 2:
        return False
    level = 1.0 - (1.0 - SCREEN_LEVEL) ** (1.0 / max(int(candidates), 1))
    return margin_t(stats, n) > float(student.ppf(1.0 - level, n - 1))


def held_out(comm: Comm, algorithm: str, params: dict, rounds: int, inputs, seed: int, target: int,
             fold: np.ndarray, k: int, n_target: int, callbacks=()) -> dict:
    """Collective: each strategy's outcome on each of this rank's target rows when that row's fold was held out.

    Parameters
    ----------
    comm : Comm
        The job's communicator.
    algorithm, params, rounds, seed
        The transfer run as asked for.
    inputs : Inputs
        The training inputs (target and source rows).
    target : int
        The target domain's index.
    fold : numpy.ndarray
        Each row's fold (:func:`target_folds`; -1 off the target).
    k : int
        The number of folds.
    n_target : int
        The target's rows over every rank.
    callbacks
        Told of each training (``on_fit_end``).

    Returns
    -------
    dict
        strategy -> (wrong, margin), arrays over this rank's rows (zeros off the target).
    """
    shard = inputs.shard
    out = {s: (np.zeros(shard.domain.size, dtype=np.int64), np.zeros(shard.domain.size)) for s in STRATEGIES}
    for f in range(k):
        part = subset(shard, fold != f, comm)  # every source row and the other folds' target rows
        held = np.flatnonzero(fold == f)
        for s in STRATEGIES:
            name, p = strategy_run(s, algorithm, params, target, n_target)
            rows, cols = part, None
            if s == "target":  # the target rows alone in their own bins, as the final model would be
                rows = own_bins(comm, shard, (fold != f) & (shard.domain == target), seed)
                cols = rebin(shard, held, rows.bins)
            elif s == "balanced":  # this fold's target rows weighing as much as the sources
                rows = balanced(comm, part, target)
            done = f * len(STRATEGIES) + STRATEGIES.index(s) + 1
            model = candidate(comm, name, p, rounds, Inputs(rows), seed, phase="source trust folds", step=done,
                              steps=k * len(STRATEGIES), callbacks=callbacks, label=f"fold {f + 1}: {s}").finish()
            wrong, margin = row_outcomes(model, shard, held, cols)
            out[s][0][held], out[s][1][held] = wrong, margin
            watchdog.tick()
    return out


def choose(comm: Comm, algorithm: str, params: dict, rounds: int, inputs, seed: int, target: int,
           folds: int, callbacks=()) -> dict:
    """Collective: the k-fold choice of how to use the sources; the record kept in the model's info.

    Parameters
    ----------
    comm
        The job's communicator.
    algorithm, params, rounds, seed
        The transfer run as asked for.
    inputs
        The loaded training inputs (``inputs.shard`` holds the target and source rows).
    target : int
        The target domain's index.
    folds : int
        The number of folds asked for; at most one per target row.
    callbacks
        :class:`mpiboost.callbacks.Callback` objects, told of each training (``on_fit_end``).

    Returns
    -------
    dict
        ``chosen`` (a strategy), ``folds``, ``rule``, and per strategy its
        held-out ``errors``, ``error`` (their fraction) and ``margin``; ``vs_target``: each strategy's
        paired counts against the target alone (:func:`.paired.paired_gain`).
    """
    shard = inputs.shard
    counts = target_class_counts(comm, shard, target)
    smallest = int(counts.min()) if counts.size else 0
    n_target = int(counts.sum())
    k = min(int(folds), n_target)  # at most leave-one-out
    screen = source_screen(comm, params, rounds, inputs, seed, target, n_target, callbacks)
    shown = {str(src): {"errors": v["errors"], "error": v["errors"] / n_target,
                        "margin": v["margin_sum"] / max(n_target, 1), "t": _finite(margin_t(v, n_target)),
                        "carries_over": carries_over(v, n_target, len(screen))} for src, v in screen.items()}
    if screen and not any(v["carries_over"] for v in shown.values()):
        return {"chosen": "target", "folds": 0, "n_target": n_target, "screen": shown,
                "rule": f"no source's margins on the {n_target} target rows are above 0 at the family-wise level "
                        f"{SCREEN_LEVEL} (one-sided t-test): the target rows alone"}
    if smallest < MIN_CLASS_ROWS:
        return {"chosen": "algorithm", "screen": shown, "n_target": n_target,
                "rule": f"no folds: the target holds {smallest} row(s) of a class (at least {MIN_CLASS_ROWS} "
                        "needed), the algorithm as asked", "folds": 0}
    fold = target_folds(shard, target, k, seed, comm)
    outcomes = held_out(comm, algorithm, params, rounds, inputs, seed, target, fold, k, n_target, callbacks)
    proto = Protocol(comm)
    # Every source shows a rule that carries over: trusting them all (pooling) is the simplest use of them and
    # the one kept unless beaten; some do and some do not: the transfer algorithm, made to pick among them.
    singles = [v for src, v in shown.items() if src != "sources"]
    incumbent = "pooled" if singles and all(v["carries_over"] for v in singles) else "algorithm"
    tried = {}
    base_wrong = outcomes[incumbent][0]
    for s in STRATEGIES:
        wrong, margin = outcomes[s]
        paired = paired_gain(comm, base_wrong, wrong, n_target)
        total = float(proto.reduce_terms([_exact.partials(np.ascontiguousarray(margin))])[0])  # exact: any ranks
        tried[s] = {**paired, "error": paired["errors"] / n_target, "margin": total / n_target}
    # each way against the target alone too: the counts a rule with another incumbent would choose by
    vs_target = {s: paired_gain(comm, outcomes["target"][0], outcomes[s][0], n_target) for s in STRATEGIES}
    chosen = incumbent
    for s in STRATEGIES:
        t = tried[s]
        if s != incumbent and switches(t["gain"], t["se"]) \
                and (chosen == incumbent or t["gain"] > tried[chosen]["gain"]):
            chosen = s
    others = " or ".join(s for s in STRATEGIES if s != incumbent)
    why = ("every source alone carries over" if incumbent == "pooled" else
           "some source alone does not carry over" if singles and any(v["carries_over"] for v in singles) else
           "no single source alone carries over")
    return {"chosen": chosen, "folds": k, "n_target": n_target, "screen": shown, "incumbent": incumbent,
            "rule": f"{why}: {incumbent} unless {others} has fewer held-out target errors, by more than "
                    f"{SWITCH_SE} standard error of the paired per-row differences (the larger gain wins)",
            "tried": tried, "vs_target": vs_target}


def target_class_counts(comm: Comm, shard: Shard, target: int) -> np.ndarray:
    """Collective: the global count of each class among the target rows.

    Parameters
    ----------
    comm : Comm
        The job's communicator.
    shard : Shard
        This rank's training rows.
    target : int
        The target domain's index.

    Returns
    -------
    numpy.ndarray
        int64, one count per class (at least two).
    """
    K = max(int(shard.n_classes), 2)
    local = np.bincount(class_index(shard.y[shard.domain == target]), minlength=K).astype(np.int64)
    return comm.allreduce_int(local)


def _valid(rec: dict) -> bool:
    """A record of a choice this version makes."""
    return rec.get("chosen") in STRATEGIES


MEANING = {"algorithm": "the transfer algorithm", "pooled": "AdaBoost on every row pooled",
           "balanced": "AdaBoost on every row, the target rows weighing as much as the sources",
           "target": "AdaBoost on the target rows alone"}


def describe(rec: dict) -> str:
    """One line for the run's output."""
    what = MEANING[rec["chosen"]]
    if rec.get("screen") and not rec.get("tried"):
        parts = ", ".join(f"{v['errors']}/{rec['n_target']}" for v in rec["screen"].values())
        return f"source trust: {rec['chosen']}, the model is {what} (each source alone on the target rows: {parts})"
    if not rec.get("tried"):
        return f"source trust: {rec['chosen']}, the model is {what} ({rec.get('rule', 'given')})"
    parts = ", ".join(f"{s} {rec['tried'][s]['errors']}/{rec['n_target']}" for s in STRATEGIES if s in rec["tried"])
    return f"source trust: {rec['chosen']}, the model is {what} ({rec['folds']}-fold held-out target errors: {parts})"


class SourceTrust:
    """The selection: how far a transfer run trusts its sources (the module docstring); the run that follows
    trains the way chosen, which may be an AdaBoost baseline instead of the transfer algorithm."""

    key = "source_trust"

    def wanted(self, plan: Plan, ctx: Context) -> bool:
        return type(ctx.algo).has("source_trust")

    def recorded(self, ctx: Context) -> Optional[dict]:
        rec = selection_record(ctx.resume, self.key, _valid)
        if rec is None:
            return None
        algo = ctx.algo
        if not type(algo).has("source_trust"):
            raise CollectiveError(f"--resume: the checkpoint chose how to trust its sources, but {algo.name} has none")
        asked = algo.params["source_trust"]
        if asked != "cv" and asked != rec["chosen"]:
            raise CollectiveError(f"--resume: the checkpoint trained --source-trust {rec['chosen']}, this run asks "
                                  f"for {asked}")
        return rec

    def trains(self, rec: dict, algorithm: str) -> str:
        return algorithm if rec["chosen"] == "algorithm" else BASELINE

    def skipped(self, plan: Plan, ctx: Context) -> Optional[dict]:
        asked = ctx.algo.params["source_trust"]
        return None if asked == "cv" else {"chosen": asked, "rule": "given (--source-trust)"}

    def choose(self, plan: Plan, ctx: Context) -> dict:
        return choose(ctx.comm, plan.algorithm, plan.params, ctx.rounds, plan.inputs, ctx.seed, ctx.algo.target,
                      int(ctx.algo.params["source_folds"]), ctx.callbacks)

    def apply(self, rec: dict, plan: Plan, ctx: Context) -> Plan:
        algo = ctx.algo
        algorithm, params = strategy_run(rec["chosen"], plan.algorithm, plan.params, algo.target, algo.n_target)
        inputs = plan.inputs
        if rec["chosen"] == "target":
            inputs = target_only(ctx.comm, plan.inputs, algo.target, ctx.seed)
        elif rec["chosen"] == "balanced":
            inputs = dataclasses.replace(plan.inputs, shard=balanced(ctx.comm, plan.inputs.shard, algo.target))
        return plan.but(algorithm=algorithm, params=params, inputs=inputs)

    def describe(self, rec: dict) -> Optional[str]:
        return describe(rec)

    def prepare(self, plan: Plan, ctx: Context) -> None:
        """Collective: the target domain of the rows resolved (its name to its index), agreed over the ranks."""
        with ctx.comm.collective_guard():
            try:
                ctx.algo.check_data(plan.inputs.shard)
            except ValueError as exc:
                raise InputError(str(exc)) from None


def check_value(value) -> None:
    if value not in CHOICES:
        raise CollectiveError(f"--source-trust must be one of {', '.join(CHOICES)}, got {value!r}")


__all__ = ["CHOICES", "STRATEGIES", "SourceTrust", "balanced", "carries_over", "choose", "describe", "source_screen",
           "strategy_run", "target_folds"]
