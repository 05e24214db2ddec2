"""The training driver: load -> set up -> replay a checkpoint -> rounds -> summary.

Everything around the boosting loop lives here (threads, loading, validation
scores, timing, byte counts, resuming), in one function per step; the
algorithm only sees its rows and the protocol (:class:`mpiboost.boost.Algorithm`),
and callbacks (:mod:`mpiboost.callbacks`) do the logging and checkpointing.
Nothing here depends on which algorithm runs: what differs is declared by
the algorithm class.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np

from . import boost, watchdog
from ._ext import _openmp
from .boost.base import Algorithm, Hypothesis
from .callbacks import Callback, RoundEnv
from .data import labels as lab
from .data.load import Shard, load, load_raw
from .errors import CollectiveError, InputError
from .model import Model, Scorer
from .protocol import Protocol


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


def peak_rss_bytes() -> int:
    """This process's peak resident set size so far."""
    import resource
    import sys

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


# ------------------------------------------------------------------ set-up
# The checks below decide from what every rank knows alike (arguments, global counts), so every rank
# raises the same error at the same point: a CollectiveError, printed once, every rank exits cleanly.
def make_algorithm(algorithm: str, params: Optional[dict], rounds: int) -> Algorithm:
    """The algorithm object with its parameters checked (an error naming the option)."""
    if not 1 <= rounds <= MAX_ROUNDS:
        raise CollectiveError(f"--rounds must be in 1..{MAX_ROUNDS:,}, got {rounds}")
    cls = boost.get(algorithm)
    params = dict(params or {})
    if cls.needs_rounds:
        params["rounds"] = int(rounds)  # part of the algorithm (the transfer algorithms' source factor)
    try:
        return cls(params)
    except ValueError as exc:
        raise CollectiveError(str(exc)) from None


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
                dedicated_coordinator: bool) -> _Inputs:
    """Collective: the training rows (labels as the algorithm takes them), validation rows and extra inputs."""
    t0 = time.perf_counter()
    cls = type(algo)
    raw = cls.needs_raw
    shard = load(comm, data, task="multiclass", dedicated_coordinator=dedicated_coordinator, seed=seed, keep_raw=raw)
    _check_task(cls, shard)
    task = "binary" if cls.labels == "signed" else "multiclass"
    if task == "binary":
        shard.y = lab.signed(shard.y)
    vshard = None
    if valid:
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
    try:
        algo.setup(inputs.shard, proto, seed)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    v = inputs.valid
    return None if v is None else algo.model.scorer(v.cols, v.X)


def _valid_error(scorer: Optional[Scorer], vshard: Optional[Shard], proto: Protocol) -> Optional[float]:
    """Collective: the validation error of the model so far (None without validation data)."""
    if scorer is None:
        return None
    scorer.update()
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
    from .data.fingerprint import fingerprint
    from .data.format import inspect

    with comm.collective_guard():
        for path in data:
            inspect(path)  # the schema first: a bad file is reported as such, not as a fingerprint failure
        fp = fingerprint(data)
    return {"seed": int(seed), "data": fp}


def checkpoint_record(ckpt: Model) -> Optional[dict]:
    """The run a checkpoint records (seed, data fingerprint), or None for a model saved otherwise."""
    record = ckpt.info.get("checkpoint") if isinstance(ckpt.info, dict) else None
    return record if isinstance(record, dict) else None


def check_resume(ckpt: Model, algo: Algorithm, run: Optional[dict] = None) -> None:
    """A checkpoint must come from this run: same algorithm, seed and training data (before loading).

    Raises CollectiveError saying what differs (every rank decides alike).
    The parameters are compared by :func:`check_resume_params` once the
    algorithm has resolved them against the data (domain names to ids).
    """
    from .data.fingerprint import differences

    if ckpt.algorithm != algo.name:
        raise CollectiveError(f"checkpoint was made by {ckpt.algorithm}, not {algo.name}")
    record = checkpoint_record(ckpt)
    if run is None or record is None:
        return  # a partial model without a record (the API): the caller vouches for it
    if record.get("seed") != run["seed"]:
        raise CollectiveError(f"checkpoint was made with --seed {record.get('seed')}, this run has --seed {run['seed']}")
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


def replay(algo: Algorithm, resume: Optional[Model], rounds: int, scorer, vshard, proto) -> int:
    """Collective: re-apply a checkpoint's rounds (``apply`` only); the number of rounds done."""
    if resume is None:
        return 0
    check_resume_params(resume, algo)
    done = 0
    for _, members in resume.truncated(min(rounds, resume.n_rounds)).rounds():
        (stump, coef, k), rest = members[0], members[1:]
        algo.apply(Hypothesis(stump, coef, domain=k, more=tuple((s, c) for s, c, _ in rest)))
        done += 1
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
    metrics["stump"] = {"feature": s.feature, "bin": s.bin, "left": s.left, "missing_left": s.missing_left}
    if s.right is not None:
        metrics["stump"]["right"] = s.right
    metrics["bytes_sent"] = sum(v["sent"] for v in per_primitive.values())
    metrics["bytes_received"] = sum(v["received"] for v in per_primitive.values())
    metrics["bytes"] = per_primitive
    metrics["seconds"] = seconds
    return metrics


def run_rounds(comm, algo: Algorithm, inputs: _Inputs, scorer, proto, done: int, rounds: int,
               callbacks: Sequence[Callback], run: Optional[dict] = None) -> tuple[str, dict, dict]:
    """Collective: rounds ``done + 1 .. rounds``; (stop reason, last round's metrics, seconds per phase)."""
    clock = time.perf_counter
    env = RoundEnv(t=done, rounds=rounds, model=algo.model, is_center=comm.is_center, run=run)
    for cb in callbacks:
        cb.on_train_begin(env)
    stop_reason = "rounds"
    phase = {"select": 0.0, "apply": 0.0, "valid": 0.0}
    last: dict = {}
    for t in range(done + 1, rounds + 1):
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
        parameters, seed or training data is refused (CollectiveError).

    Returns
    -------
    TrainResult
        The model (identical on every rank) and a summary of the run.
    """
    clock = time.perf_counter
    t_start = clock()
    algo = make_algorithm(algorithm, params, rounds)
    run = run_record(comm, data, seed)
    if resume is not None:
        check_resume(resume, algo, run)  # before any work
    n_threads = threads or comm.default_threads()
    _openmp.set_num_threads(n_threads)
    inputs = load_inputs(comm, algo, data, valid, seed=seed, dedicated_coordinator=dedicated_coordinator)
    proto = Protocol(comm)
    scorer = setup(algo, inputs, proto, seed)
    done = replay(algo, resume, rounds, scorer, inputs.valid, proto)
    comm.bytes.take_round()  # loading, binning, setup and replay are not part of round 1
    t_rounds = clock()
    sent_before = comm.bytes.sent
    stop_reason, last, phase = run_rounds(comm, algo, inputs, scorer, proto, done, rounds, callbacks, run)
    t_end = clock()
    model = algo.finish()
    model.info = {
        "n_train": algo.n_train(inputs.shard),
        "labels": {lab.text(k): int(v) for k, v in inputs.shard.label_counts.items()},
        "rounds": model.n_rounds,
        "stop_reason": stop_reason,
        "seed": seed,
    }
    seconds = {"total": t_end - t_start, "load": inputs.seconds, "rounds": t_end - t_rounds}
    summary = summarize(comm, proto, algo, model, inputs, stop_reason=stop_reason, last=last, phase=phase,
                        threads=n_threads, seconds=seconds, sent_before=sent_before)
    env = RoundEnv(t=model.n_rounds, rounds=rounds, model=model, is_center=comm.is_center, summary=summary, run=run)
    for cb in callbacks:
        cb.on_train_end(env)
    return TrainResult(model, summary)
