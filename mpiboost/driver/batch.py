"""The training driver: load -> set up -> replay a checkpoint -> rounds -> summary.

Everything around the boosting loop lives here (threads, loading, validation
scores, timing, byte counts, resuming), in one function per step; the
algorithm only sees its rows and the protocol (:class:`mpiboost.boost.Algorithm`),
and callbacks (:mod:`mpiboost.callbacks`) do the logging and checkpointing.
Nothing here depends on which algorithm runs: what differs is declared by
the algorithm class.
"""
from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np

from .. import boost, source_trust, watchdog
from .._ext import _openmp
from ..boost.base import Algorithm, Hypothesis
from ..callbacks import BestRound, Callback, RoundEnv, sorted_callbacks
from ..data import labels as lab
from ..data.load import Layout, Shard, load, load_raw
from ..errors import CollectiveError, InputError
from ..model import Model, Scorer
from ..protocol import Protocol


MAX_ROUNDS = 10**6  # the model holds up to 2^24 stumps, several per round for the multi-source algorithms


@dataclass
class TrainResult:
    model: Model
    summary: dict = field(default_factory=dict)


@dataclass
class _Inputs:
    """What :func:`load_inputs` read: the training rows and the validation rows with their scorer."""

    shard: Shard
    valid: Optional[Shard] = None
    seconds: float = 0.0
    valid_metric: str = "error"  # what the validation rows measure: "error", or "auc" (scored as 1 - AUC)


MAX_VALID_FRACTION = 0.5  # beyond this the validation part outgrows the rows the model is trained on


def _class_index(y: np.ndarray) -> np.ndarray:
    """Class indices 0..K-1 of labels held as -1/+1 (binary) or as indices already."""
    y = np.asarray(y)
    if y.dtype == np.int8:  # lab.signed: -1/+1 for classes 0/1
        return (y > 0).astype(np.int64)
    return y.astype(np.int64)


def valid_mask(shard: Shard, fraction: float, seed: int, comm) -> np.ndarray:
    """Collective: which of this rank's rows form the validation part (a boolean mask).

    The rule is stratified and systematic on the global row order: the rows
    of each (domain, class) group are numbered 0, 1, ... in the files' order
    (an exclusive scan of the group counts over the ranks), and row k of a
    group is a validation row when ``floor((k + 1) F + u) > floor(k F + u)``,
    with ``u`` in [0, 1) drawn per group from ``seed``. Every group thus gives
    ``floor(F n_g)`` or ``ceil(F n_g)`` rows, spread evenly over the file
    order, and the split depends only on the global order and the seed, not
    on how the rows are spread over the ranks.
    """
    K = shard.n_classes
    group = shard.domain.astype(np.int64) * K + _class_index(shard.y)
    n_groups = max(1, shard.n_domains) * K
    counts = np.bincount(group, minlength=n_groups).astype(np.int64)
    table = comm.allgather_array(counts) if comm.size > 1 else counts[None, :]
    before = table[: comm.rank].sum(axis=0)
    order = np.argsort(group, kind="stable")
    k = np.empty(group.size, dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    k[order] = np.arange(group.size) - np.repeat(starts, counts)
    k += before[group]
    u = np.array([np.random.default_rng([int(seed), 0x5E1EC7, g]).random() for g in range(n_groups)])[group]
    return np.floor((k + 1) * fraction + u) > np.floor(k * fraction + u)


def _subset(shard: Shard, keep: np.ndarray, comm) -> Shard:
    """Collective: the shard of the rows ``keep`` of every rank, in the same global order."""
    n_local = int(keep.sum())
    table = comm.allgather_array(np.array([n_local], dtype=np.int64)) if comm.size > 1 else np.array([[n_local]])
    start = int(table[: comm.rank, 0].sum())
    n = int(table[:, 0].sum())
    domain = shard.domain[keep]
    dcounts = comm.allreduce_int(np.bincount(domain, minlength=shard.n_domains).astype(np.int64))
    index = _class_index(shard.y[keep])
    classes = shard.classes if shard.classes is not None else [-1, 1]
    local = np.bincount(index[index >= 0], minlength=len(classes)).astype(np.int64)
    labels = dict(zip(classes, comm.allreduce_int(local).tolist()))
    return Shard(
        cols=None if shard.cols is None else np.ascontiguousarray(shard.cols[:, keep]),
        X=None if shard.X is None else np.ascontiguousarray(shard.X[keep]),
        y=np.ascontiguousarray(shard.y[keep]),
        domain=np.ascontiguousarray(domain),
        start=start,
        n_global=n,
        n_domains=shard.n_domains,
        files=shard.files,
        # the rows are no longer the layout's even blocks; only the global order (start, n) is used from here on
        layout=Layout(n, shard.layout.size, shard.layout.dedicated_coordinator),
        bins=shard.bins,
        feature_names=shard.feature_names,
        domain_names=shard.domain_names,
        label_counts=labels,
        domain_counts=dcounts,
        timings=dict(shard.timings),
        classes=shard.classes,
        extra=shard.extra,
    )


def split_valid(comm, shard: Shard, fraction: float, seed: int) -> tuple[Shard, Shard]:
    """Collective: (training part, validation part) of ``shard`` by :func:`valid_mask`.

    Raises CollectiveError (every rank alike) when a part would hold no rows.
    """
    mask = valid_mask(shard, fraction, seed, comm)
    train_part, valid_part = _subset(shard, ~mask, comm), _subset(shard, mask, comm)
    if valid_part.n_global == 0:
        raise CollectiveError(f"--valid-fraction {fraction} of {shard.n_global:,} rows leaves no validation rows")
    return train_part, valid_part


def peak_rss_bytes() -> int:
    """This process's peak resident set size so far."""
    import resource
    import sys

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


# ------------------------------------------------------------------ set-up
# The checks below decide from what every rank knows alike (arguments, global counts), so every rank
# raises the same error at the same point: a CollectiveError, printed once, every rank exits cleanly.
def make_algorithm(algorithm: str, params: Optional[dict], rounds: int,
                   resume: Optional[Model] = None) -> Algorithm:
    """The algorithm object with its parameters checked (an error naming the option).

    Parameters left unset whose default depends on ``rounds``
    (:meth:`Algorithm.defaults_for_rounds`) take the value ``resume``, a
    checkpoint, recorded, else the one for ``rounds``.
    """
    if not 1 <= rounds <= MAX_ROUNDS:
        raise CollectiveError(f"--rounds must be in 1..{MAX_ROUNDS:,}, got {rounds}")
    cls = boost.get(algorithm)
    params = dict(params or {})
    for name, grid in auto_params(algorithm, params).items():
        params[name] = grid[0]  # "auto" is resolved by the search; the other parameters are checked with a value
    try:
        by_rounds = cls.defaults_for_rounds(params, int(rounds))
    except ValueError as exc:
        raise CollectiveError(str(exc)) from None
    recorded = resume.params if resume is not None and isinstance(resume.params, dict) else {}
    for name, value in by_rounds.items():
        if params.get(name) is None:
            params[name] = recorded[name] if recorded.get(name) is not None else value
    if cls.needs_rounds:
        params["rounds"] = int(rounds)  # part of the algorithm (the transfer algorithms' source factor)
    try:
        algo = cls(params)
    except ValueError as exc:
        raise CollectiveError(str(exc)) from None
    algo.planned_rounds = int(rounds)  # for defaults that follow the rounds and the data (set in setup)
    return algo


def _check_task(cls: type, shard: Shard) -> None:
    """The data must be of a kind the algorithm declares."""
    K = shard.n_classes
    shown = ", ".join(map(str, shard.classes[:8])) + (", ..." if K > 8 else "")
    files = ", ".join(os.path.basename(f.path) for f in shard.files[:4]) + (", ..." if len(shard.files) > 4 else "")
    if K < 2:
        raise CollectiveError(f"the training data ({files}) hold one class only ({shown}): nothing to learn")
    if K > 2 and "multiclass" not in cls.tasks:
        raise CollectiveError(
            f"{cls.name} is a binary algorithm but the training data ({files}) have {K} classes ({shown}); "
            f"for multiclass data use {', '.join(boost.with_task('multiclass'))}"
        )


def load_inputs(comm, algo: Algorithm, data: Sequence[str], valid: Optional[Sequence[str]], *, seed: int,
                dedicated_coordinator: bool, valid_fraction: Optional[float] = None,
                blocks: Optional[Sequence[int]] = None) -> _Inputs:
    """Collective: the training rows (labels as the algorithm takes them), validation rows and extra inputs.

    With ``valid_fraction`` the validation rows are a stratified part of the
    training files (:func:`split_valid`), binned with the same edges.
    """
    t0 = time.perf_counter()
    cls = type(algo)
    raw = cls.needs_raw
    shard = load(comm, data, task="multiclass", dedicated_coordinator=dedicated_coordinator, seed=seed, keep_raw=raw,
                 blocks=blocks)
    _check_task(cls, shard)
    task = "binary" if cls.labels == "signed" else "multiclass"
    if task == "binary":
        shard.y = lab.signed(shard.y)
    vshard = None
    if valid_fraction:
        shard, vshard = split_valid(comm, shard, valid_fraction, seed)
        _check_task(cls, shard)
        present = [c for c, k in shard.label_counts.items() if k > 0]  # global counts: every rank agrees
        if len(present) < 2:
            raise InputError(f"--valid-fraction {valid_fraction} leaves the training rows one class "
                             f"({present[0] if present else None!r}): too few rows of the others to hold some out")
    elif valid:
        # a validation row of a class the training rows lack counts as an error (no model predicts it)
        vshard = load(comm, valid, task=task, classes=shard.classes, unseen={},
                      dedicated_coordinator=dedicated_coordinator, bins=shard.bins, keep_raw=raw)
    for p in cls.parameters:
        if p.type is list and algo.params.get(p.name):
            # Files of extra rows (MultiBoost's --q-data): read raw, domains matched to the training domains
            # by name; the model keeps their file names only.
            shard.extra[p.name] = load_aligned_rows(comm, algo.params[p.name], shard, dedicated_coordinator, p.flag)
            algo.params[p.name] = [os.path.basename(str(f)) for f in algo.params[p.name]]
    return _Inputs(shard, vshard, time.perf_counter() - t0)


def load_aligned_rows(comm, paths: Sequence[str], shard: Shard, dedicated_coordinator: bool,
                      option: str) -> tuple[np.ndarray, np.ndarray]:
    """Collective: this rank's block of extra rows ``(X, domain)``, with the domain ids of the training data."""
    if shard.X is None:
        raise InputError(f"{option} needs an algorithm that keeps the raw features")
    extra = load_raw(comm, paths, task=None, dedicated_coordinator=dedicated_coordinator)
    if extra.d != shard.d:
        raise InputError(f"{option} files have {extra.d} features but the training data has {shard.d}")
    names = list(shard.domain_names or [])
    ids = np.arange(extra.n_domains)
    extra_names = extra.domain_names
    if len(extra.files) == 1 and not extra.files[0].has_domain:
        # One file without a domain column: all its rows are of the domain its attribute names.
        one = extra.files[0].attrs.get("domain_name")
        if not one:
            raise InputError(
                f"{extra.files[0].path}: {option} rows need a domain: a 'domain' column, a 'domain_name' "
                "attribute, or one file per domain"
            )
        extra_names = [str(one)]
    if extra_names and names:
        unknown = [nm for nm in extra_names if nm not in names]
        if unknown:
            raise InputError(
                f"{option} domain {unknown[0]!r} is not a training domain (training domains: {', '.join(names)})"
            )
        ids = np.array([names.index(nm) for nm in extra_names])
    elif extra.n_domains > shard.n_domains:
        raise InputError(f"{option} has {extra.n_domains} domains but the training data has {shard.n_domains}")
    return extra.X, ids[extra.domain].astype(np.int32)


def setup(algo: Algorithm, inputs: _Inputs, proto: Protocol, seed: int) -> Optional[Scorer]:
    """Collective: the algorithm's initial state; the validation scorer (None without validation data).

    The algorithm's checks of the data come first, agreed over the ranks (one
    message, a clean exit 2 on every rank).
    """
    with proto.comm.collective_guard():
        try:
            algo.check_data(inputs.shard)
        except ValueError as exc:
            raise InputError(str(exc)) from None
    algo.valid = inputs.valid
    try:
        algo.setup(inputs.shard, proto, seed)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    v = inputs.valid
    if v is None:
        return None
    scorer = algo.model.scorer(v.cols, v.X, v.domain if algo.model.vote == "task" else None)
    scorer.metric = inputs.valid_metric
    return scorer


VALID_METRICS = ("error", "auc")


def auc(scores: np.ndarray, y: np.ndarray) -> float:
    """The area under the ROC curve of ``scores`` for labels ``y`` (+1 positive): the Mann-Whitney statistic,
    tied scores counting one half; 0.5 where one class is absent (no ranking to judge)."""
    scores, pos = np.asarray(scores, dtype=np.float64), np.asarray(y) > 0
    n_pos, n_neg = int(pos.sum()), int((~pos).sum())
    if n_pos == 0 or n_neg == 0:
        return 0.5
    order = np.argsort(scores, kind="stable")
    sorted_scores = scores[order]
    ranks = np.empty(len(scores))
    # the mean rank of each run of equal scores (ranks 1..n)
    starts = np.flatnonzero(np.r_[True, sorted_scores[1:] != sorted_scores[:-1]])
    ends = np.r_[starts[1:], len(scores)]
    mean_rank = (starts + ends + 1) / 2.0
    ranks[order] = np.repeat(mean_rank, ends - starts)
    return float((ranks[pos].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def _valid_auc_loss(scorer: Scorer, vshard: Shard, proto: Protocol) -> float:
    """Collective: 1 - AUC of the validation rows (a task model: the mean over its tasks), the same on every
    rank: the center gathers the rows' scores in the global row order, computes it, and sends the one value.
    The labels and tasks do not change between rounds: they are gathered once."""
    comm = proto.comm
    if not hasattr(scorer, "_auc_rows"):
        y = comm.gatherv(np.ascontiguousarray(vshard.y, dtype=np.int64))
        task = comm.gatherv(np.ascontiguousarray(vshard.domain, dtype=np.int64)) \
            if scorer.model.vote == "task" else None
        scorer._auc_rows = (y, task)
    scores = comm.gatherv(np.ascontiguousarray(scorer.scores, dtype=np.float64))
    loss = None
    if comm.is_center:
        y, task = scorer._auc_rows
        if task is None:
            loss = 1.0 - auc(scores, y)
        else:
            values = [auc(scores[task == k], y[task == k]) for k in np.unique(task)]
            loss = 1.0 - float(np.mean(values)) if values else 0.5
    return float(comm.bcast(loss))


def _valid_error(scorer: Optional[Scorer], vshard: Optional[Shard], proto: Protocol) -> Optional[float]:
    """Collective: the validation error of the model so far (None without validation data).

    A model with one ensemble per task is judged by the mean of its tasks'
    errors (every task counts alike, however many validation rows it has);
    other models by the error over all validation rows.
    """
    if scorer is None:
        return None
    scorer.update()
    if getattr(scorer, "metric", "error") == "auc":
        return _valid_auc_loss(scorer, vshard, proto)
    if scorer.model.vote == "task":
        J = len(scorer.model.domain_names or []) or 1  # the model's tasks: the same on every rank
        task = np.asarray(vshard.domain, dtype=np.int64)
        local = np.concatenate([scorer.errors_by_group(vshard.y, task, J), np.bincount(task, minlength=J)])
        counts = proto.reduce_counts(local.astype(np.int64))
        wrong, rows = counts[:J], counts[J:]
        has = rows > 0
        return float(np.mean(wrong[has] / rows[has])) if has.any() else 0.0
    wrong = scorer.errors(vshard.y)
    return proto.reduce_counts(np.array([wrong]))[0] / vshard.n_global


# ---------------------------------------------------------------- resuming
def comparable_params(algo: Algorithm) -> dict:
    """The parameters as a model records them (files of list parameters by their names only)."""
    out = dict(algo.params)
    for p in type(algo).parameters:
        if p.type is list and out.get(p.name):
            out[p.name] = [os.path.basename(str(f)) for f in out[p.name]]
    return out


def run_record(comm, data: Sequence[str], seed: int) -> dict:
    """Collective: what a checkpoint of this run records (seed, fingerprint of the training files)."""
    from ..data.fingerprint import fingerprint
    from ..data.format import inspect

    if any(hasattr(f, "local") for f in data):  # in-memory rows (mpiboost.train on arrays)
        from ..data.memory import fingerprint_memory

        return {"seed": int(seed), "data": [fingerprint_memory(comm, f) for f in data]}
    with comm.collective_guard():
        for path in data:
            inspect(path)  # the schema first: a bad file is reported as such, not as a fingerprint failure
        fp = fingerprint(data)
    return {"seed": int(seed), "data": fp}


def checkpoint_record(ckpt: Model) -> Optional[dict]:
    """The run a checkpoint records (seed, data fingerprint), or None for a model saved otherwise."""
    record = ckpt.info.get("checkpoint") if isinstance(ckpt.info, dict) else None
    return record if isinstance(record, dict) else None


def check_resume(ckpt: Model, algorithm: str, run: Optional[dict] = None) -> None:
    """A checkpoint must come from this run: same algorithm, seed and training data (before loading).

    Raises CollectiveError saying what differs (every rank decides alike).
    The parameters are compared by :func:`check_resume_params` once the
    algorithm has resolved them against the data (domain names to ids).
    """
    from ..data.fingerprint import differences

    if ckpt.algorithm != algorithm:
        raise CollectiveError(f"checkpoint was made by {ckpt.algorithm}, not {algorithm}")
    record = checkpoint_record(ckpt)
    if run is None or record is None:
        return  # a partial model without a record (the API): the caller vouches for it
    if record.get("seed") != run["seed"]:
        raise CollectiveError(f"checkpoint was made with --seed {record.get('seed')}, this run has --seed {run['seed']}")
    if record.get("valid_fraction") != run.get("valid_fraction"):
        raise CollectiveError(f"checkpoint was made with --valid-fraction {record.get('valid_fraction')}, this run "
                              f"has {run.get('valid_fraction')}: other training rows")
    if record.get("valid_metric", "error") != run.get("valid_metric", "error"):
        raise CollectiveError(f"checkpoint was made with --valid-metric {record.get('valid_metric', 'error')}, this "
                              f"run has {run.get('valid_metric', 'error')}: the rounds are chosen otherwise")
    diff = differences(record.get("data") or [], run["data"])
    if diff:
        raise CollectiveError("checkpoint was made on other training data: " + "; ".join(diff[:4]))


def check_resume_params(ckpt: Model, algo: Algorithm) -> None:
    """The checkpoint's parameters must be this run's (CollectiveError naming each that differs)."""
    params = comparable_params(algo)
    differ = sorted(k for k in set(ckpt.params) | set(params) if ckpt.params.get(k) != params.get(k))
    if differ:
        shown = "; ".join(f"{k}: {ckpt.params.get(k)!r} then, {params.get(k)!r} now" for k in differ)
        raise CollectiveError("checkpoint parameters differ from this run's: " + shown)


def replay(algo: Algorithm, resume: Optional[Model], rounds: int, scorer, vshard, proto,
           history: Optional[list] = None) -> int:
    """Collective: re-apply a checkpoint's rounds (``apply`` only); the number of rounds done.

    With ``history`` (a list), the validation error after each replayed round
    is appended to it (the round choice of a resumed run needs the whole curve).
    """
    if resume is None:
        return 0
    check_resume_params(resume, algo)
    done = 0
    for r, members in resume.truncated(min(rounds, resume.n_rounds)).rounds():
        if r == 0:
            continue  # round 0: stumps the algorithm's setup builds itself (a start model), not a round
        (stump, coef, k), rest = members[0], members[1:]
        algo.apply(Hypothesis(stump, coef, domain=k, more=tuple((s, c) for s, c, _ in rest)))
        done += 1
        if history is not None:
            history.append(_valid_error(scorer, vshard, proto))
    _valid_error(scorer, vshard, proto)
    return done


# ------------------------------------------------------------------ rounds
def round_metrics(t: int, h: Hypothesis, out: dict, n_train: int, verr: Optional[float], per_primitive: dict,
                  seconds: dict) -> dict:
    """One round's metrics record (what the metrics log writes)."""
    metrics = {"round": t, **h.metrics}
    if "train_errors" in out:
        metrics["train_error"] = out.pop("train_errors") / n_train
    metrics.update(out)  # an algorithm may report its own train_error (the transfer ones: on the target)
    if verr is not None:
        metrics["valid_error"] = verr
    metrics["coef"] = h.coef
    if h.domain is not None:
        metrics["stump_domain"] = h.domain
    s = h.stump
    if hasattr(s, "n_leaves"):  # a tree: its size and its root split
        metrics["tree"] = {"leaves": s.n_leaves, "nodes": s.n_nodes, "root_feature": int(s.feature[0]),
                           "root_bin": int(s.bin[0])}
    else:
        metrics["stump"] = {"feature": s.feature, "bin": s.bin, "left": s.left, "missing_left": s.missing_left}
        if s.right is not None:
            metrics["stump"]["right"] = s.right
    metrics["bytes_sent"] = sum(v["sent"] for v in per_primitive.values())
    metrics["bytes_received"] = sum(v["received"] for v in per_primitive.values())
    metrics["bytes"] = per_primitive
    metrics["seconds"] = seconds
    return metrics


def run_rounds(comm, algo: Algorithm, inputs: _Inputs, scorer, proto, done: int, rounds: int,
               callbacks: Sequence[Callback], run: Optional[dict] = None,
               valid_history: Sequence[float] = ()) -> tuple[str, dict, dict]:
    """Collective: rounds ``done + 1 .. rounds``; (stop reason, last round's metrics, seconds per phase)."""
    clock = time.perf_counter
    callbacks = sorted_callbacks(callbacks)
    env = RoundEnv(t=done, rounds=rounds, model=algo.model, is_center=comm.is_center, run=run,
                   valid_history=list(valid_history))
    stop_now = False
    for cb in callbacks:
        stop_now = bool(cb.on_train_begin(env)) or stop_now  # a resumed run that had already stopped
    stop_reason = "stopped by a callback" if stop_now else "rounds"
    phase = {"select": 0.0, "apply": 0.0, "valid": 0.0}
    last: dict = {}
    for t in range(done + 1, rounds + 1 if not stop_now else done + 1):
        t0 = clock()
        h = algo.select(t)
        t1 = clock()
        if h is None:
            stop_reason = algo.stop_message
            break
        out = algo.apply(h)
        t2 = clock()
        verr = _valid_error(scorer, inputs.valid, proto)
        t3 = clock()
        phase["select"] += t1 - t0
        phase["apply"] += t2 - t1
        phase["valid"] += t3 - t2
        seconds = {"select": t1 - t0, "apply": t2 - t1, "valid": t3 - t2}
        last = round_metrics(t, h, out, algo.n_train(inputs.shard), verr, comm.bytes.take_round(), seconds)
        env.t, env.metrics = t, last
        watchdog.tick()
        stop = False
        for cb in callbacks:
            stop = bool(cb.on_round_end(env)) or stop
        if stop:
            stop_reason = "stopped by a callback"
            break
    return stop_reason, last, phase


# ----------------------------------------------------------------- summary
def summarize(comm, proto, algo: Algorithm, model: Model, inputs: _Inputs, *, stop_reason: str, last: dict,
              phase: dict, threads: int, seconds: dict, sent_before: int) -> dict:
    """Collective: the run's summary (rows, rounds, errors, time per phase, bytes, memory)."""
    shard = inputs.shard
    totals = comm.bytes.totals()
    all_ranks = proto.reduce_counts(np.array([comm.bytes.sent, comm.bytes.received, comm.bytes.sent - sent_before]))
    row = np.array([peak_rss_bytes(), shard.n_local], dtype=np.int64)
    rss = comm.allgather_array(row) if comm.size > 1 else row[None, :]
    comm_seconds = sum(v["seconds"] for k, v in totals.items() if k not in ("binning", "other"))
    return {
        "algorithm": algo.name,
        "rounds": model.n_rounds,
        "stop_reason": stop_reason,
        "n": algo.n_train(shard),
        "d": shard.d,
        "classes": model.n_classes,
        "ranks": comm.size,
        "threads": threads,
        "train_error": last.get("train_error"),
        "valid_error": last.get("valid_error"),
        "warning": chance_warning(last.get("train_error"), shard, algo, model),
        "seconds": {
            **seconds,
            "read": shard.timings.get("read", 0.0),
            "bin_edges": shard.timings.get("bin_edges", 0.0),
            "bin": shard.timings.get("bin", 0.0),
            "communication": comm_seconds,
            **phase,
        },
        "peak_rss_bytes": {"per_rank": rss[:, 0].tolist(), "rows_per_rank": rss[:, 1].tolist()},
        "bytes_center": totals,
        "bytes_all_ranks": {"sent": int(all_ranks[0]), "received": int(all_ranks[1])},
        "bytes_rounds_all_ranks": int(all_ranks[2]),  # sent during the rounds (no loading, binning, setup)
    }


def chance_warning(train_error: Optional[float], shard, algo: Algorithm, model: Model) -> Optional[str]:
    """A message when the model is no better on its own training rows than a coin (error 1 - 1/K) or
    than predicting the majority class, whichever is lower (within two standard errors); None otherwise (or for an empty model,
    which has its own message)."""
    if train_error is None or model.n_rounds == 0 or not np.isfinite(train_error):
        return None
    K = max(2, int(model.n_classes))
    chance, what = 1.0 - 1.0 / K, "a coin" if K == 2 else "a uniform guess"
    counts = [int(v) for v in (shard.label_counts or {}).values()]
    if counts and sum(counts) == algo.n_train(shard) and sum(counts) > 0:
        majority = 1.0 - max(counts) / sum(counts)
        if majority < chance:
            chance, what = majority, "predicting the majority class"
    # no better means within two standard errors of the guess's error over these rows (a vote that
    # cancels lands there, however many rounds went into it)
    n = max(1, algo.n_train(shard))
    if train_error < chance - 2.0 * math.sqrt(chance * (1.0 - chance) / n):
        return None
    hint = algo.chance_hint(model.n_rounds) if hasattr(algo, "chance_hint") else ""
    return (f"the model's training error {train_error:.4f} is no better than {what} ({chance:.4f}) on its own "
            f"training rows{': ' + hint if hint else ''}")


def auto_params(algorithm: str, params: Optional[dict]) -> dict:
    """The parameters given as ``"auto"``: name -> the grid of values to choose from on validation data."""
    cls = boost.get(algorithm)
    params = params or {}
    out = {}
    for p in cls.parameters:
        if not p.grid:
            continue
        is_auto = isinstance(params.get(p.name), str) and params[p.name] == "auto"
        custom = params.get(p.name + "_grid") if cls.has(p.name + "_grid") else None
        if is_auto:
            try:
                out[p.name] = cls.grid_values(p.name, custom)
            except ValueError as exc:
                raise CollectiveError(str(exc)) from None
    return out


def _with(params: Optional[dict], values: dict) -> dict:
    return {**(params or {}), **values}


def check_validation(algorithm: str, params: Optional[dict], *, valid: Optional[Sequence[str]],
                     valid_fraction: Optional[float], best_round: bool, patience: Optional[int]) -> None:
    """The validation options agree with each other (CollectiveError naming them; no data needed)."""
    if valid_fraction is not None:
        if not 0 < valid_fraction <= MAX_VALID_FRACTION:
            raise CollectiveError(f"--valid-fraction must be in (0, {MAX_VALID_FRACTION}], got {valid_fraction}")
        if valid:
            raise CollectiveError("give either --valid FILE or --valid-fraction F, not both")
        one = [k for k in ("train_domain", "target_domain") if (params or {}).get(k) is not None]
        if one:
            raise CollectiveError("--valid-fraction holds out rows of every domain, but this run trains on one "
                                  "(--target or --train-domain): give --valid with rows of that domain")
    has_valid = bool(valid) or valid_fraction is not None
    if patience is not None and patience < 1:
        raise CollectiveError(f"--early-stop must be at least 1 round, got {patience}")
    if (best_round or patience is not None) and not has_valid:
        flag = "--best-round" if best_round else "--early-stop"
        raise CollectiveError(f"{flag} chooses by validation error: give --valid FILE or --valid-fraction F")
    from ..boost.transfer import TransferBoosting

    if (best_round or patience is not None) and issubclass(boost.get(algorithm), TransferBoosting):
        # The per-round validation error scores the plain sum of the stored stumps; a transfer
        # model's vote is not that sum (its first voting round follows the rounds trained, MSDTrA
        # rescales each chain by its final edge), so a round chosen on it would not be the model kept.
        flag = "--best-round" if best_round else "--early-stop"
        raise CollectiveError(f"{flag} is not available for {algorithm}: its final vote depends on every round "
                              "trained, so the validation curve of the rounds does not score the model kept")
    cls = boost.get(algorithm)
    for p in cls.parameters:  # a grid of values given for a parameter that is not "auto" would be ignored
        given = (params or {}).get(p.name + "_grid") if p.grid and cls.has(p.name + "_grid") else None
        if given is not None and (params or {}).get(p.name) != "auto":
            raise CollectiveError(f"{cls.declared(p.name + '_grid').flag} applies only with {p.flag} auto")
    auto = auto_params(algorithm, params)
    if auto and not has_valid:
        cls = boost.get(algorithm)
        flags = ", ".join(f"{cls.declared(k).flag} auto" for k in auto)
        raise CollectiveError(f"{flags} chooses by validation error: give --valid FILE or --valid-fraction F")


def _run_once(comm, algorithm: str, params: dict, rounds: int, inputs: _Inputs, seed: int,
              callbacks: Sequence[Callback], run: Optional[dict], resume: Optional[Model],
              chooser: Optional[BestRound], info: Optional[dict] = None):
    """Collective: one training run on loaded inputs; (algorithm, stop reason, last metrics, phases, seconds)."""
    algo = make_algorithm(algorithm, params, rounds, resume)
    proto = Protocol(comm)
    scorer = setup(algo, inputs, proto, seed)
    if info:
        algo.model.info = dict(info)  # checkpoints carry what the run chose before its rounds (the search)
    history: Optional[list] = [] if chooser is not None else None
    done = replay(algo, resume, rounds, scorer, inputs.valid, proto, history)
    comm.bytes.take_round()  # loading, binning, setup and replay are not part of round 1
    t_rounds = time.perf_counter()
    sent_before = comm.bytes.sent
    cbs = list(callbacks) + ([chooser] if chooser is not None else [])
    stop_reason, last, phase = run_rounds(comm, algo, inputs, scorer, proto, done, rounds, cbs, run, history or ())
    return algo, proto, stop_reason, last, phase, time.perf_counter() - t_rounds, sent_before


def search(comm, algorithm: str, params: Optional[dict], auto: dict, rounds: int, inputs: _Inputs, seed: int,
           patience: Optional[int]) -> dict:
    """Collective: the grid of the ``auto`` parameters tried on validation data; the choice and every result.

    Each grid point is a full run (its best round, as :class:`BestRound`
    picks it); the lowest best-round validation error wins, the earlier grid
    point of equal ones. Every rank sees the same reduced errors, so every
    rank chooses alike.
    """
    import itertools

    names = list(auto)
    tried = []
    for values in itertools.product(*(auto[k] for k in names)):
        point = dict(zip(names, values))
        chooser = BestRound(patience)
        _run_once(comm, algorithm, _with(params, point), rounds, inputs, seed, (), None, None, chooser)
        watchdog.tick()
        tried.append({**point, "best_round": chooser.best_round, "best_error": chooser.best_error})
    # a run that trained no round (no weak edge at all) has no error: it never wins
    best = min(range(len(tried)), key=lambda i: (math.inf if tried[i]["best_error"] is None
                                                 else tried[i]["best_error"], i))
    return {"chosen": {k: tried[best][k] for k in names}, "tried": tried}


def trust_record(resume: Optional[Model], algo: Algorithm) -> Optional[dict]:
    """The source-trust choice a checkpoint recorded (:mod:`mpiboost.source_trust`), checked against this run."""
    rec = source_trust.recorded(resume)
    if rec is None:
        return None
    if not type(algo).has("source_trust"):
        raise CollectiveError(f"--resume: the checkpoint chose how to trust its sources, but {algo.name} has none")
    asked = algo.params["source_trust"]
    if asked != "cv" and asked != rec["chosen"]:
        raise CollectiveError(f"--resume: the checkpoint trained --source-trust {rec['chosen']}, this run asks "
                              f"for {asked}")
    return rec


def _validation_source(valid: Optional[Sequence[str]], valid_fraction: Optional[float], inputs: _Inputs) -> dict:
    if valid_fraction:
        return {"fraction": float(valid_fraction), "rule": "stratified by (domain, class), systematic on the "
                "global row order with a seeded offset", "n_valid": int(inputs.valid.n_global)}
    return {"files": [os.path.basename(str(getattr(f, "path", f))) for f in valid or ()],  # in memory: "<arrays>"
            "n_valid": int(inputs.valid.n_global)}


def train(
    comm,
    data: Sequence[str],
    *,
    algorithm: str,
    rounds: int,
    params: Optional[dict] = None,
    seed: int = 0,
    valid: Optional[Sequence[str]] = None,
    callbacks: Sequence[Callback] = (),
    dedicated_coordinator: bool = False,
    threads: Optional[int] = None,
    resume: Optional[Model] = None,
    valid_fraction: Optional[float] = None,
    best_round: bool = False,
    early_stop: Optional[int] = None,
    blocks: Optional[Sequence[int]] = None,
    valid_metric: str = "error",
) -> TrainResult:
    """Collective: train ``algorithm`` for ``rounds`` rounds on the rows of ``data``.

    Parameters
    ----------
    comm
        The job's communicator (:func:`mpiboost.comm.world`), or any
        :class:`mpiboost.comm.Comm`.
    data, valid
        Training and (optional) validation files; validation rows are binned
        with the training edges and must hold the training classes.
    algorithm, params, seed
        Algorithm name (see :data:`mpiboost.boost.ALGORITHMS`), its
        parameters (checked against its declarations; missing ones take
        their defaults), and the seed of every random choice.
    callbacks
        :class:`mpiboost.callbacks.Callback` objects.
    resume
        A partial model (checkpoint) of the same run: its rounds are replayed
        (``apply`` only) and training continues after them, giving the same
        model as an uninterrupted run. A checkpoint of another algorithm,
        parameters, seed, training data or validation split is refused
        (CollectiveError).
    valid_fraction
        Hold out this fraction of the training rows as validation rows
        (:func:`split_valid`: stratified, the same on any number of ranks)
        instead of ``valid`` files.
    best_round, early_stop
        Keep the model truncated to the round of lowest validation error
        (the earliest of equal ones); with ``early_stop`` K, stop once K
        rounds in a row did not improve on it. Parameters given as
        ``"auto"`` (a declared grid, e.g. SmoothBoost's ``epsilon``) are
        chosen by a run per grid value, by best-round validation error, and
        imply ``best_round``. The choice and the validation curve are in
        ``model.info["validation"]``.
    blocks
        Rows of the training files per rank (``comm.size`` counts, the same
        on every rank); ``None``: even blocks. The model does not depend on
        it.
    valid_metric
        What the validation rows measure, for the round choice and the
        ``auto`` search: ``"error"`` (the default) or ``"auc"`` (binary
        labels; scored as 1 - AUC, a task model's as the mean over its tasks,
        so imbalanced tasks are judged by their ranking, not by a majority
        vote that is right on most rows).

    Returns
    -------
    TrainResult
        The model (identical on every rank) and a summary of the run.
    """
    clock = time.perf_counter
    t_start = clock()
    check_validation(algorithm, params, valid=valid, valid_fraction=valid_fraction, best_round=best_round,
                     patience=early_stop)
    if valid_metric not in VALID_METRICS:
        raise CollectiveError(f"--valid-metric must be one of {', '.join(VALID_METRICS)}, got {valid_metric!r}")
    auto = auto_params(algorithm, params)
    algo = make_algorithm(algorithm, params, rounds, resume)  # with "auto" values: checks the rest before any work
    run = run_record(comm, data, seed)
    if valid_fraction:
        run["valid_fraction"] = float(valid_fraction)  # another split trains on other rows: resume refused
    if valid_metric != "error":
        run["valid_metric"] = valid_metric  # another metric chooses other rounds: resume refused
    searched = None
    trust = trust_record(resume, algo)
    if resume is not None:
        # a checkpoint of a run whose folds chose an AdaBoost baseline is that baseline's
        check_resume(resume, algo.name if trust is None or trust["chosen"] == "algorithm" else
                     source_trust.BASELINE, run)  # before any work
        if auto:
            searched = (resume.info or {}).get("search") if isinstance(resume.info, dict) else None
            if not isinstance(searched, dict) or set(searched.get("chosen") or {}) != set(auto):
                raise CollectiveError("--resume: the checkpoint does not record the choice of "
                                      + ", ".join(f"{k} auto" for k in auto) + " (made by another run)")
    n_threads = threads or comm.default_threads()
    _openmp.set_num_threads(n_threads)
    inputs = load_inputs(comm, algo, data, valid, seed=seed, dedicated_coordinator=dedicated_coordinator,
                         valid_fraction=valid_fraction, blocks=blocks)
    if valid_metric == "auc" and inputs.shard.n_classes != 2:
        raise CollectiveError(f"--valid-metric auc ranks two classes; the training data have {inputs.shard.n_classes}")
    inputs.valid_metric = valid_metric
    # load_inputs read the files of list parameters and left their names only: every run below records those
    params = _with(params, {p.name: algo.params[p.name] for p in type(algo).parameters
                            if p.type is list and algo.params.get(p.name)})
    choose = best_round or early_stop is not None or bool(auto)
    info: dict = {}
    if type(algo).has("source_trust"):
        # How far to trust the sources, from held-out target rows (source_trust.py): the run that follows
        # trains the way chosen, which may be an AdaBoost baseline instead of the transfer algorithm.
        with comm.collective_guard():
            try:
                algo.check_data(inputs.shard)  # resolves the target domain
            except ValueError as exc:
                raise InputError(str(exc)) from None
        if trust is None:
            if algo.params["source_trust"] == "cv":
                trust = source_trust.choose(comm, algorithm, params or {}, rounds, inputs, seed, algo.target,
                                            int(algo.params["source_folds"]), sorted_callbacks(callbacks))
            else:
                trust = {"chosen": algo.params["source_trust"], "rule": "given (--source-trust)"}
        info["source_trust"] = trust
        algorithm, params = source_trust.strategy_run(trust["chosen"], algorithm, params or {}, algo.target,
                                                      algo.n_target)
        if trust["chosen"] == "target":
            inputs = source_trust.target_only(comm, inputs, algo.target, seed)
        auto = auto_params(algorithm, params)
    if auto:
        if searched is None:
            searched = search(comm, algorithm, params, auto, rounds, inputs, seed, early_stop)
        info["search"] = searched
        params = _with(params, searched["chosen"])
    chooser = BestRound(early_stop) if choose else None
    algo, proto, stop_reason, last, phase, t_rounds, sent_before = _run_once(
        comm, algorithm, params, rounds, inputs, seed, callbacks, run, resume, chooser, info)
    t_end = clock()
    model = full = algo.finish()
    trained = model.n_rounds
    if stop_reason == "stopped by a callback" and chooser is not None and early_stop is not None \
            and trained - chooser.best_round >= early_stop:
        stop_reason = f"no better validation error in {early_stop} rounds"
    if chooser is not None and 0 < chooser.best_round < trained:
        model = model.truncated(chooser.best_round)
    model.info = {
        "n_train": algo.n_train(inputs.shard),
        "labels": {lab.text(k): int(v) for k, v in inputs.shard.label_counts.items()},
        "rounds": model.n_rounds,
        "stop_reason": stop_reason,
        "seed": seed,
        **info,
    }
    if inputs.valid is not None:
        model.info["validation"] = {
            **_validation_source(valid, valid_fraction, inputs),
            **(chooser.summary() if chooser is not None else {"last_error": last.get("valid_error")}),
            "rounds_chosen": bool(chooser is not None),
            "metric": valid_metric,  # "auc": the errors above are 1 - AUC
        }
    seconds = {"total": t_end - t_start, "load": inputs.seconds, "rounds": t_rounds}
    summary = summarize(comm, proto, algo, model, inputs, stop_reason=stop_reason, last=last, phase=phase,
                        threads=n_threads, seconds=seconds, sent_before=sent_before)
    summary["valid_metric"] = valid_metric  # "auc": the valid_error figures are 1 - AUC
    if chooser is not None:
        summary["valid_error"] = chooser.best_error  # the error of the model kept (truncated to the best round)
        summary["rounds_trained"] = trained
        summary["best_round"] = chooser.best_round
        summary["best_valid_error"] = chooser.best_error
    if auto:
        summary["chosen"] = dict(searched["chosen"])
    if trust is not None:
        summary["source_trust"] = trust
    # The callbacks see the model the rounds built (a checkpoint must hold every trained round, or a resumed run
    # would go on from the best round); the model kept is the result's.
    env = RoundEnv(t=full.n_rounds, rounds=rounds, model=full, is_center=comm.is_center, summary=summary, run=run)
    for cb in sorted_callbacks(callbacks):
        cb.on_train_end(env)
    return TrainResult(model, summary)
