"""The training driver: load -> bin -> rounds -> callbacks -> model.

Everything around the boosting loop lives here (threads, loading, validation
margins, timing, byte counts, resuming); the algorithm only sees its rows and
the protocol, and callbacks do the logging and checkpointing.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np

from . import boost
from ._ext import _openmp, _weights
from .boost.base import Hypothesis
from .callbacks import Callback, RoundEnv
from .data.load import load, load_raw
from .errors import InputError
from .model import Model
from .protocol import Protocol


@dataclass
class TrainResult:
    model: Model
    summary: dict = field(default_factory=dict)


def peak_rss_bytes() -> int:
    """This process's peak resident set size so far."""
    import resource
    import sys

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


def _check_resume(ckpt: Model, algorithm: str, params: dict) -> None:
    if ckpt.algorithm != algorithm:
        raise InputError(f"checkpoint was made by {ckpt.algorithm}, not {algorithm}")
    differ = sorted(k for k in set(ckpt.params) | set(params) if ckpt.params.get(k) != params.get(k))
    if differ:
        raise InputError("checkpoint parameters differ from this run's: " + ", ".join(differ))


def _load_q_data(comm, paths: Sequence[str], shard, dedicated_coordinator: bool) -> tuple[np.ndarray, np.ndarray]:
    """Collective: this rank's block of the extra Q rows, with domain ids of the training data."""
    extra = load_raw(comm, paths, task=None, dedicated_coordinator=dedicated_coordinator)
    if extra.d != shard.d:
        raise InputError(f"--q-data files have {extra.d} features but the training data has {shard.d}")
    names = list(shard.domain_names or [])
    ids = np.arange(extra.n_domains)
    extra_names = extra.domain_names
    if len(extra.files) == 1 and not extra.files[0].has_domain:
        # One file without a domain column: all its rows are of the domain its attribute names.
        one = extra.files[0].attrs.get("domain_name")
        if not one:
            raise InputError(
                f"{extra.files[0].path}: --q-data rows need a domain: a 'domain' column, a 'domain_name' "
                "attribute, or one file per domain"
            )
        extra_names = [str(one)]
    if extra_names and names:
        unknown = [nm for nm in extra_names if nm not in names]
        if unknown:
            raise InputError(
                f"--q-data domain {unknown[0]!r} is not a training domain (training domains: {', '.join(names)})"
            )
        ids = np.array([names.index(nm) for nm in extra_names])
    elif extra.n_domains > shard.n_domains:
        raise InputError(f"--q-data has {extra.n_domains} domains but the training data has {shard.n_domains}")
    return extra.X, ids[extra.domain].astype(np.int32)


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
    q_data: Optional[Sequence[str]] = None,
) -> TrainResult:
    """Collective: train ``algorithm`` for ``rounds`` rounds on the rows of ``data``.

    Parameters
    ----------
    comm
        The job's communicator (:func:`mpiboost.comm.world`).
    data, valid
        Training and (optional) validation files; validation rows are binned
        with the training edges.
    algorithm, params, seed
        Algorithm name (see :data:`mpiboost.boost.ALGORITHMS`), its
        parameters, and the seed of every random choice.
    callbacks
        :class:`mpiboost.callbacks.Callback` objects.
    resume
        A partial model (checkpoint) of the same run: its rounds are replayed
        (``apply`` only) and training continues after them, giving the same
        model as an uninterrupted run.
    q_data
        Extra files whose rows only train the domain classifier Q(k|x) of
        MultiBoost / FedMultiBoost (their labels are not used). Their domains
        are matched to the training domains by name.

    Returns
    -------
    TrainResult
        The model (identical on every rank) and a summary of the run.
    """
    if rounds < 1:
        raise InputError(f"--rounds must be at least 1, got {rounds}")
    params = dict(params or {})
    cls = boost.get(algorithm)
    if getattr(cls, "needs_rounds", False):
        params["rounds"] = int(rounds)  # part of the algorithm (the transfer algorithms' source factor)
    n_threads = threads or comm.default_threads()
    _openmp.set_num_threads(n_threads)
    clock = time.perf_counter
    t_start = clock()

    raw = bool(getattr(cls, "needs_raw", False))
    shard = load(comm, data, task="binary", dedicated_coordinator=dedicated_coordinator, seed=seed, keep_raw=raw)
    vshard = None
    if valid:
        vshard = load(
            comm, valid, task="binary", dedicated_coordinator=dedicated_coordinator, bins=shard.bins, keep_raw=raw
        )
    if q_data:
        if not raw:
            raise InputError(f"--q-data is for the algorithms with a domain classifier, not {algorithm}")
        shard.q_extra = _load_q_data(comm, q_data, shard, dedicated_coordinator)
    t_loaded = clock()

    proto = Protocol(comm)
    if "n_samples" not in params and params.get("weak_learner") == "sample":
        from .weak.stump import sample_size

        params["n_samples"] = sample_size(shard.d, float(params.get("beta", 0.2)), float(params.get("sample_factor", 1.0)))
    try:
        algo = cls(params)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    try:
        algo.setup(shard, proto, seed)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    vmargin = np.zeros(vshard.n_local) if vshard is not None else None
    vQ = None
    if vshard is not None and raw and vshard.n_local:
        vQ = algo.model.domain_classifier.proba(vshard.X)

    def add_valid(h: Hypothesis) -> Optional[float]:
        if vshard is None:
            return None
        if vshard.n_local and h.domain is not None:
            vmargin[:] += h.coef * vQ[:, h.domain] * h.stump.predict(vshard.cols)
        elif vshard.n_local:
            for stump, coef in h.members():
                _weights.add_stump(vmargin, stump.column(vshard.cols), *stump.args(), coef)
        wrong = _weights.margin_errors(vmargin, vshard.y)
        return proto.reduce_counts(np.array([wrong]))[0] / vshard.n_global

    done = 0
    if resume is not None:
        _check_resume(resume, algorithm, algo.params)
        part = resume.truncated(min(rounds, resume.n_rounds))
        for _, members in part.rounds():
            (stump, coef, k), rest = members[0], members[1:]
            h = Hypothesis(stump, coef, domain=k, more=tuple((s, c) for s, c, _ in rest))
            algo.apply(h)
            add_valid(h)
            done += 1
        comm.bytes.take_round()

    comm.bytes.take_round()  # loading, binning and setup are not part of round 1
    env = RoundEnv(t=done, rounds=rounds, model=algo.model, is_center=comm.is_center)
    for cb in callbacks:
        cb.on_train_begin(env)

    stop_reason = "rounds"
    phase = {"select": 0.0, "apply": 0.0, "valid": 0.0}
    last: dict = {}
    t_rounds = clock()
    sent_before = comm.bytes.sent
    for t in range(done + 1, rounds + 1):
        t0 = clock()
        h = algo.select(t)
        t1 = clock()
        if h is None:
            stop_reason = getattr(algo, "stop_message", "no weak edge left (weighted error >= 1/2)")
            break
        out = algo.apply(h)
        t2 = clock()
        verr = add_valid(h)
        t3 = clock()
        phase["select"] += t1 - t0
        phase["apply"] += t2 - t1
        phase["valid"] += t3 - t2
        per_primitive = comm.bytes.take_round()
        metrics = {"round": t, **h.metrics}
        if "train_errors" in out:
            metrics["train_error"] = out.pop("train_errors") / shard.n_global
        metrics.update(out)  # an algorithm may report its own train_error (the transfer ones: on the target)
        if verr is not None:
            metrics["valid_error"] = verr
        metrics["coef"] = h.coef
        if h.domain is not None:
            metrics["stump_domain"] = h.domain
        metrics["stump"] = {
            "feature": h.stump.feature,
            "bin": h.stump.bin,
            "left": h.stump.left,
            "missing_left": h.stump.missing_left,
        }
        metrics["bytes_sent"] = sum(v["sent"] for v in per_primitive.values())
        metrics["bytes_received"] = sum(v["received"] for v in per_primitive.values())
        metrics["bytes"] = per_primitive
        metrics["seconds"] = {"select": t1 - t0, "apply": t2 - t1, "valid": t3 - t2}
        env.t, env.metrics = t, metrics
        last = metrics
        stop = False
        for cb in callbacks:
            stop = bool(cb.on_round_end(env)) or stop
        if stop:
            stop_reason = "stopped by a callback"
            break
    t_end = clock()

    model = algo.finish()
    model.info = {
        "n_train": shard.n_global,
        "labels": {str(k): int(v) for k, v in shard.label_counts.items()},
        "rounds": model.n_rounds,
        "stop_reason": stop_reason,
        "seed": seed,
    }
    totals = comm.bytes.totals()
    all_ranks = proto.reduce_counts(np.array([comm.bytes.sent, comm.bytes.received, comm.bytes.sent - sent_before]))
    rss = comm.allgather_array(np.array([peak_rss_bytes(), shard.n_local], dtype=np.int64)) if comm.size > 1 else (
        np.array([[peak_rss_bytes(), shard.n_local]])
    )
    comm_seconds = sum(v["seconds"] for k, v in totals.items() if k not in ("binning", "other"))
    summary = {
        "algorithm": algorithm,
        "rounds": model.n_rounds,
        "stop_reason": stop_reason,
        "n": shard.n_global,
        "d": shard.d,
        "ranks": comm.size,
        "threads": n_threads,
        "train_error": last.get("train_error"),
        "valid_error": last.get("valid_error"),
        "seconds": {
            "total": t_end - t_start,
            "load": t_loaded - t_start,
            "read": shard.timings.get("read", 0.0),
            "bin_edges": shard.timings.get("bin_edges", 0.0),
            "bin": shard.timings.get("bin", 0.0),
            "rounds": t_end - t_rounds,
            "communication": comm_seconds,
            **phase,
        },
        "peak_rss_bytes": {"per_rank": rss[:, 0].tolist(), "rows_per_rank": rss[:, 1].tolist()},
        "bytes_center": totals,
        "bytes_all_ranks": {"sent": int(all_ranks[0]), "received": int(all_ranks[1])},
        "bytes_rounds_all_ranks": int(all_ranks[2]),  # sent during the rounds (no loading, binning, setup)
    }
    env.summary = summary
    for cb in callbacks:
        cb.on_train_end(env)
    return TrainResult(model, summary)
