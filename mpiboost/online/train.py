"""``mpiboost train --algo <online algorithm>``: one prequential pass over the data files, then the model.

The center scans the files first (every row checked, the classes and the
nominal features found; a bad value ends the job with exit code 2 before
any learning), then every rank streams the examples in their global order
(or the ``--shuffle`` permutation) in chunks, and the driver
(:mod:`.driver`) predicts and learns them block by block. The center
writes the model, the ``--metrics`` records (the prequential accuracy as
the stream goes, then the summary) and prints the summary as one JSON line.
"""
from __future__ import annotations

import contextlib
import json
import math
import sys
import time
from typing import Optional

import numpy as np

from ..errors import CollectiveError, InputError
from . import ONLINE, driver, learners, source
from .model import OnlineModel

REPORTS = 100  # --metrics records over the stream (and the progress bar's refreshes)
MAX_BLOCK = 1 << 20
PRIMITIVES = ("block_labels",)  # what the stream exchanges (bytes summed over the ranks in the summary)


def check_options(args) -> None:
    """The online run's options (every rank alike: an agreed error, printed once)."""
    refused = [(args.valid, "--valid"), (args.valid_fraction is not None, "--valid-fraction"),
               (args.best_round, "--best-round"), (args.early_stop is not None, "--early-stop"),
               (args.checkpoint, "--checkpoint"), (args.resume, "--resume"), (args.target, "--target"),
               (args.source, "--source"), (args.rounds is not None, "--rounds")]
    for given, option in refused:
        if given:
            raise CollectiveError(
                f"{option} is not an option of {args.algo}: an online booster makes one prequential pass over "
                "the stream (every example predicted, then learnt) and reports the accuracy of those predictions "
                "(acc_test on the last --test-fraction of the stream)")
    if not args.data:
        raise CollectiveError(f"{args.algo} needs --data F.h5 [...] (the stream, in the files' order)")
    if not 1 <= args.block_size <= MAX_BLOCK:
        raise CollectiveError(f"--block-size must be in 1..{MAX_BLOCK:,}, got {args.block_size}")
    if not (math.isfinite(args.test_fraction) and 0 <= args.test_fraction < 1):
        raise CollectiveError(f"--test-fraction must be in [0, 1), got {args.test_fraction}")
    if args.shuffle is not None and not 0 <= args.shuffle < 2**63:
        raise CollectiveError(f"--shuffle must be a seed in 0..2**63-1, got {args.shuffle}")
    if not 0 <= args.seed < 2**63:
        raise CollectiveError(f"--seed must be in 0..2**63-1, got {args.seed}")
    args.nominal_parsed = source.parse_nominal(args.nominal)
    try:
        args.learner = learners.spec({"kind": args.weak_learner, "var_prior": args.var_prior,
                                      "grace_period": args.grace_period, "split_delta": args.split_delta,
                                      "split_tau": args.split_tau, "split_children": args.split_children})
    except ValueError as exc:
        raise CollectiveError(str(exc)) from None


class _Progress:
    """A tqdm bar of examples on the center (silent when stderr is not a terminal), with examples/s."""

    def __init__(self, enabled: Optional[bool], total: int, name: str) -> None:
        from tqdm import tqdm

        disable = (not sys.stderr.isatty()) if enabled is None else not enabled
        self.bar = tqdm(total=total, desc=name, unit="ex", unit_scale=True, disable=disable, file=sys.stderr)

    def update(self, n: int, acc: Optional[float]) -> None:
        if acc is not None:
            self.bar.set_postfix({"acc": f"{acc:.4f}"}, refresh=False)
        self.bar.update(n)

    def close(self) -> None:
        self.bar.close()


class _PredictionWriter:
    """``--predictions``: every example's row (in the files), label, randomised prediction and argmax, as CSV.

    Written as the stream goes to a temporary file that replaces the target
    at the end (a failed run leaves no partial file).
    """

    def __init__(self, stack, path: str, info, order) -> None:
        from ..atomic import atomic_path
        from ..data import labels as lab

        self.names = lab.as_array(info.classes)
        self.order = order
        self.f = stack.enter_context(open(stack.enter_context(atomic_path(path)), "w", encoding="utf-8",
                                          newline=""))
        import csv

        self.w = csv.writer(self.f, lineterminator="\n")
        self.w.writerow(["position", "row", "label", "prediction", "argmax"])

    def write(self, t0: int, y: np.ndarray, predictions: list) -> None:
        rows = np.arange(t0, t0 + len(y)) if self.order is None else self.order[t0:t0 + len(y)]
        guess = np.array([g for g, _ in predictions], dtype=np.int64)
        best = np.array([b for _, b in predictions], dtype=np.int64)
        self.w.writerows(zip(range(t0, t0 + len(y)), rows.tolist(), self.names[y].tolist(),
                             self.names[guess].tolist(), self.names[best].tolist()))


def _stream(comm, args, info, state, order, allgather, out, bar, records, every) -> None:
    """The prequential pass over the stream's blocks, with the progress records and predictions."""
    next_report, t_loop = 0, time.perf_counter()
    for t0, X, y in source.blocks(info, args.block_size, order):
        driver.process_block(state, X, y, t0, allgather)
        c = state.counts
        if out is not None:
            out.write(t0, y, state.predictions)
            state.predictions.clear()
        if c.n >= next_report or c.n == info.n:
            next_report = c.n + every
            seconds = time.perf_counter() - t_loop
            if comm.is_center:
                records.append({"examples": c.n, "acc_all": c.right / c.n, "argmax_all": c.argmax_right / c.n,
                                "exp_all": c.expected / c.n, "seconds": round(seconds, 6),
                                "examples_per_s": c.n / seconds if seconds > 0 else None})
                bar.update(c.n - bar.bar.n, c.right / c.n)


def _exchange(comm):
    """The block's labels joined over the ranks (bytes counted as ``block_labels``)."""
    def allgather(flat: np.ndarray) -> np.ndarray:
        with comm.primitive("block_labels"):
            return comm.allgatherv(flat)

    return allgather


def run(comm, args, params: dict) -> int:
    """Collective: the whole online run (after :func:`check_options`); the exit code."""
    from ..atomic import atomic_path
    from ..outputs import check_outputs
    from ..train_cli import save_model

    t_start = time.perf_counter()
    cls = ONLINE[args.algo]
    try:
        cls.resolve(params)
    except ValueError as exc:
        raise CollectiveError(str(exc)) from None
    with comm.collective_guard():
        if comm.is_center:
            check_outputs([("--model", args.model), ("--metrics", args.metrics),
                           ("--predictions", args.predictions)], [("--data", f) for f in args.data])
    with comm.collective_guard():
        info = source.scan(args.data, args.nominal_parsed) if comm.is_center else None
    info = comm.bcast(info)
    args.learner = learners.resolve(args.learner, info.counts)  # auto: by the data's kind; the model records it
    if args.learner["kind"] == "mnb":
        if not info.nonnegative:
            raise InputError(f"{', '.join(args.data)}: --weak-learner mnb models counts, but the data hold negative "
                             "values (use nba)")
        if args.nominal not in ("auto", "none"):
            raise InputError("--nominal lists nominal features, but --weak-learner mnb takes every feature as a count")
        info.values = [0] * info.d  # counts: none nominal
    if len(info.classes) > driver.MAX_CLASSES:
        raise InputError(f"{', '.join(args.data)}: {len(info.classes)} classes; at most {driver.MAX_CLASSES}")
    t_scan = time.perf_counter()
    booster = cls(len(info.classes), params, args.seed)
    state = driver.start(booster, info.values, rank=comm.rank, size=comm.size, n=info.n,
                         test_fraction=args.test_fraction, seed=args.seed,
                         keep_predictions=bool(args.predictions) and comm.is_center, learner=args.learner)
    order = source.order_of(info.n, args.shuffle)
    allgather = _exchange(comm) if comm.size > 1 else None  # one rank holds every learner: nothing to exchange
    bar = _Progress(False if args.quiet else None, info.n, args.algo) if comm.is_center else None
    records, every, t_loop = [], max(1, info.n // REPORTS), time.perf_counter()
    with contextlib.ExitStack() as stack:
        out = _PredictionWriter(stack, args.predictions, info, order) if state.predictions is not None else None
        _stream(comm, args, info, state, order, allgather, out, bar, records, every)
    if bar is not None:
        bar.close()
    t_stream = time.perf_counter()
    parts = comm.gather(state.bank.get_state() if state.bank is not None else None)
    totals = comm.bytes.totals()
    mine = np.array([totals.get(p, {}).get(k, 0) for p in PRIMITIVES for k in ("sent", "received")], dtype=np.int64)
    every_rank = comm.allreduce_int(mine).reshape(len(PRIMITIVES), 2)
    sent = int(every_rank[:, 0].sum())
    code = 0
    if comm.is_center:
        parts = [p for p in parts if p is not None]
        stats = {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}
        stream_s = t_stream - t_loop
        summary = {
            "algorithm": args.algo,
            **state.counts.summary(),
            "classes": len(info.classes),
            "d": info.d,
            "nominal": info.nominal,
            "n_learners": booster.n_learners,
            "weak_learner": args.learner,
            "block_size": args.block_size,
            "blocks": state.blocks,
            "ranks": comm.size,
            "shuffle": args.shuffle,
            "seed": args.seed,
            "bytes_sent": sent,  # by all ranks together
            "bytes_per_block": sent / state.blocks if state.blocks else 0,
            "bytes": {p: {"sent": int(every_rank[i, 0]), "received": int(every_rank[i, 1])}
                      for i, p in enumerate(PRIMITIVES)},
            "seconds": {"total": round(time.perf_counter() - t_start, 6), "scan": round(t_scan - t_start, 6),
                        "stream": round(stream_s, 6)},
            "us_per_example": 1e6 * stream_s / info.n,
            "examples_per_s": info.n / stream_s if stream_s > 0 else None,
            "model": args.model,
        }
        model = OnlineModel(args.algo, booster.params, info.classes, info.values, stats, booster.get_state(),
                            info.feature_names, {k: summary[k] for k in ("n", "acc_test", "acc_all", "exp_test",
                                                                         "argmax_test", "block_size", "seed",
                                                                         "shuffle")}, args.learner)
        message = save_model(model, args.model) or ""
        if args.metrics:
            try:
                with atomic_path(args.metrics) as tmp:
                    with open(tmp, "w", encoding="utf-8") as f:
                        for r in records:
                            f.write(json.dumps(r, sort_keys=True) + "\n")
                        f.write(json.dumps({"summary": summary}, sort_keys=True) + "\n")
            except OSError as exc:
                message += ("; " if message else "") + f"could not write --metrics {args.metrics} ({exc})"
        if not message:
            print(json.dumps(summary, sort_keys=True), flush=True)
    else:
        message = ""
    comm.check(not message, message)
    return code
