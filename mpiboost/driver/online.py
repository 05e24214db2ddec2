"""The online pass: ``mpiboost train --algo <online algorithm>`` and ``mpiboost.train`` of an online booster.

The center scans the files first (in-memory rows: every rank its copy) (every row checked, the classes and the
nominal features found; a bad value ends the job with exit code 2 before
any learning), then every rank streams the examples in their global order
(or the ``--shuffle`` permutation) in chunks, and the driver
(:mod:`.driver`) predicts and learns them block by block. The command
line (:mod:`mpiboost.cli.online`) writes the model, the ``--metrics`` records
(the prequential accuracy as the stream goes, then the summary) and prints
the summary as one JSON line.
"""
from __future__ import annotations

import contextlib
import sys
import time
from typing import Optional, TYPE_CHECKING

import numpy as np

from ..data.format import FileInfo, inspect
from ..errors import CollectiveError, InputError
from ..online import ONLINE, driver, learners, source
from ..online.model import OnlineModel
from ..online.options import resolve as resolve_stream

if TYPE_CHECKING:  # annotations only
    from ..comm import Comm

REPORTS = 100  # --metrics records over the stream (and the progress bar's refreshes)
PRIMITIVES = ("block_labels", "signal_check")  # what the stream exchanges (bytes summed over the ranks)
SIGNAL_EXAMPLES = 256  # how often (examples) the ranks agree whether a SIGTERM / SIGUSR1 came


def stream_options(given: dict) -> dict:
    """:func:`mpiboost.online.options.resolve` with its errors agreed (CollectiveError)."""
    try:
        return resolve_stream(given)
    except (ValueError, InputError) as exc:
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


def _stream(comm: Comm, opts, info, state, order, allgather, out, bar, records, every) -> Optional[str]:
    """The prequential pass over the stream's blocks, with the progress records and predictions.

    Returns the signal (SIGTERM, SIGUSR1) that stopped the pass after a block, agreed by every rank, or None.
    """
    from .. import signals

    next_report, t_loop = 0, time.perf_counter()
    # The ranks agree on a signal every SIGNAL_EXAMPLES examples (the same blocks on every rank), so a
    # one-example block does not pay an extra message each
    check_every = max(1, SIGNAL_EXAMPLES // opts["block_size"]) if signals.armed() else 0
    for t0, X, y in source.blocks(info, opts["block_size"], order):
        driver.process_block(state, X, y, t0, allgather)
        if check_every and state.blocks % check_every == 0:
            got = signals.agreed(comm)
            if got is not None and state.counts.n < info.n:
                return got
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
                if bar is not None:
                    bar.update(c.n - bar.bar.n, c.right / c.n)


def _exchange(comm: Comm):
    """The block's labels joined over the ranks (bytes counted as ``block_labels``)."""
    def allgather(flat: np.ndarray) -> np.ndarray:
        with comm.primitive("block_labels"):
            return comm.allgatherv(flat)

    return allgather


def stream(comm: Comm, algo: str, params: dict, data, opts: dict, seed: int = 0, *, predictions: Optional[str] = None,
           progress: Optional[bool] = False, model_path: Optional[str] = None):
    """Collective: one prequential pass of online booster ``algo`` over ``data``; ``(model, summary, records)``.

    The model is the same on every rank; ``records`` (the progress of the accuracy over the stream) and the
    summary are the center's.

    Parameters
    ----------
    comm : Comm
        The ranks that hold the weak learners, each its share; they exchange each block's labels.
    algo : str
        The online booster's name (:data:`mpiboost.online.ONLINE`).
    params : dict
        The booster's own parameters, checked against its declarations.
    data : sequence
        The stream's files (paths, or :class:`mpiboost.data.format.FileInfo` such as the in-memory rows of
        :mod:`mpiboost.data.memory`, every row on every rank), in order.
    opts : dict
        The resolved stream options (:func:`mpiboost.online.options.resolve`).
    seed : int
        The seed of the booster's and the pass's random draws (the ``shuffle`` option seeds the order).
    predictions : str, optional
        A CSV file the center writes every example's prediction to (``--predictions``).
    progress : bool, optional
        A progress bar on the center: True always, False never, None when standard error is a terminal.
    model_path : str, optional
        Where the model will be saved, recorded in the summary.

    Returns
    -------
    model : OnlineModel
        The trained booster.
    summary : dict
        The pass's figures: accuracies, examples, blocks, bytes, seconds.
    records : list of dict
        The accuracy so far at about :data:`REPORTS` points of the stream (empty on the other ranks).

    Raises
    ------
    Stopped
        On every rank alike, when a SIGTERM or SIGUSR1 stopped the pass before its end (no model).
    """
    t_start = time.perf_counter()
    cls = ONLINE[algo]
    try:
        cls.resolve(params)
    except ValueError as exc:
        raise CollectiveError(str(exc)) from None
    with comm.collective_guard():
        weighted = [str(getattr(f, "path", f)) for f in data
                    if getattr(f if isinstance(f, FileInfo) else inspect(f), "has_weight", False)]
        if weighted:  # not silently dropped: the online updates have no weighted form yet
            raise InputError(f"{weighted[0]} has sample weights (a 'weight' dataset), which the online algorithms "
                             "do not take (yet): train a batch algorithm, or convert the stream without "
                             "--weight-column")
    in_memory = all(hasattr(f, "local") for f in data)  # every rank holds the rows: each scans its own copy
    with comm.collective_guard():
        info = source.scan(data, opts["nominal_parsed"]) if comm.is_center or in_memory else None
    if comm.size > 1 and not in_memory:
        info = comm.bcast(info)
    learner = learners.resolve(opts["learner"], info.counts)  # auto: by the data's kind; the model records it
    where = ", ".join(str(getattr(f, "path", f)) for f in data)
    if learner["kind"] == "mnb":
        if not info.nonnegative:
            raise CollectiveError(f"{where}: --weak-learner mnb models counts, but the data hold negative values "
                                  "(use nba)")
        if opts["nominal"] not in ("auto", "none"):
            raise CollectiveError("--nominal lists nominal features, but --weak-learner mnb takes every feature as "
                                  "a count")
        info.values = [0] * info.d  # counts: none nominal
    if len(info.classes) > driver.MAX_CLASSES:
        raise CollectiveError(f"{where}: {len(info.classes)} classes; at most {driver.MAX_CLASSES}")
    t_scan = time.perf_counter()
    booster = cls(len(info.classes), params, seed)
    state = driver.start(booster, info.values, rank=comm.rank, size=comm.size, n=info.n,
                         test_fraction=opts["test_fraction"], seed=seed,
                         keep_predictions=bool(predictions) and comm.is_center, learner=learner)
    order = source.order_of(info.n, opts["shuffle"])
    allgather = _exchange(comm) if comm.size > 1 else None  # one rank holds every learner: nothing to exchange
    bar = _Progress(progress, info.n, algo) if comm.is_center and progress is not False else None
    records, every, t_loop = [], max(1, info.n // REPORTS), time.perf_counter()
    with contextlib.ExitStack() as stack:
        out = _PredictionWriter(stack, predictions, info, order) if state.predictions is not None else None
        stopped = _stream(comm, opts, info, state, order, allgather, out, bar, records, every)
        if stopped is not None:  # no predictions file: the temporary one is removed
            raise Stopped(stopped, state.counts.n, info.n)
    if bar is not None:
        bar.close()
    t_stream = time.perf_counter()
    mine = state.bank.get_state() if state.bank is not None else None
    parts = comm.allgather(mine) if comm.size > 1 else [mine]
    totals = comm.bytes.totals()
    sent_recv = np.array([totals.get(p, {}).get(k, 0) for p in PRIMITIVES for k in ("sent", "received")],
                         dtype=np.int64)
    every_rank = comm.allreduce_int(sent_recv).reshape(len(PRIMITIVES), 2)
    sent = int(every_rank[:, 0].sum())
    parts = [p for p in parts if p is not None]
    stats = {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}
    stream_s = t_stream - t_loop
    summary = {
        "algorithm": algo,
        **state.counts.summary(),
        "classes": len(info.classes),
        "d": info.d,
        "nominal": info.nominal,
        "n_learners": booster.n_learners,
        "weak_learner": learner,
        "block_size": opts["block_size"],
        "blocks": state.blocks,
        "ranks": comm.size,
        "shuffle": opts["shuffle"],
        "seed": seed,
        "bytes_sent": sent,  # by all ranks together
        "bytes_per_block": sent / state.blocks if state.blocks else 0,
        "bytes": {p: {"sent": int(every_rank[i, 0]), "received": int(every_rank[i, 1])}
                  for i, p in enumerate(PRIMITIVES)},
        "seconds": {"total": round(time.perf_counter() - t_start, 6), "scan": round(t_scan - t_start, 6),
                    "stream": round(stream_s, 6)},
        "us_per_example": 1e6 * stream_s / info.n,
        "examples_per_s": info.n / stream_s if stream_s > 0 else None,
        "model": model_path,
    }
    model = OnlineModel(algo, booster.params, info.classes, info.values, stats, booster.get_state(),
                        info.feature_names, {k: summary[k] for k in ("n", "acc_test", "acc_all", "exp_test",
                                                                     "argmax_test", "block_size", "seed",
                                                                     "shuffle")}, learner)
    return model, summary, records


class Stopped(Exception):
    """The pass stopped by a signal after ``done`` of ``n`` examples."""

    def __init__(self, name: str, done: int, n: int) -> None:
        super().__init__(name)
        self.name, self.done, self.n = name, done, n


class Stream:
    """A prequential pass fed batch after batch (``partial_fit``): the state kept between the calls.

    Every rank holds its share of the learners, as in :func:`stream`; :meth:`feed` takes a batch (every row
    on every rank, class indices into ``classes``) and continues the stream where the last batch ended, in
    blocks of ``block_size`` (a batch's last block may be shorter). With ``block_size`` 1, feeding the rows
    in batches is the same pass as one :func:`stream` over them.
    """

    def __init__(self, comm: Comm, algo: str, params: dict, opts: dict, seed: int, classes: list, values: list,
                 learner: dict, feature_names=None, booster_state=None, learner_state=None, counts=None) -> None:
        self.comm, self.algo, self.opts, self.seed = comm, algo, opts, int(seed)
        self.classes, self.values, self.learner, self.feature_names = list(classes), list(values), learner, \
            feature_names
        if len(self.classes) > driver.MAX_CLASSES:
            raise CollectiveError(f"{len(self.classes)} classes; at most {driver.MAX_CLASSES}")
        booster = ONLINE[algo](len(self.classes), params, self.seed)
        # no test part: a stream fed in batches has no known end (acc_all is its prequential accuracy)
        self.state = driver.start(booster, self.values, rank=comm.rank, size=comm.size, n=0, test_fraction=0.0,
                                  seed=self.seed, learner=learner)
        self.state.test_start = 2**62
        if booster_state:
            booster.set_state(booster_state)
        if learner_state is not None and self.state.bank is not None:
            lo, hi = self.state.lo, self.state.hi
            self.state.bank.set_state({k: np.ascontiguousarray(v[lo:hi]) for k, v in learner_state.items()})
        if counts is not None:
            self.state.counts = counts
        self.allgather = _exchange(comm) if comm.size > 1 else None

    @classmethod
    def from_model(cls, comm: Comm, model: OnlineModel, opts: dict, counts=None) -> "Stream":
        """The stream that continues where ``model`` ended (its learners and booster state, at position ``n``).

        Parameters
        ----------
        comm : Comm
            The ranks that hold the learners: this rank takes its share of the model's, so every rank of
            ``comm`` builds its stream from the same model.
        model : OnlineModel
            The model of the stream so far.
        opts : dict
            The resolved stream options (:func:`mpiboost.online.options.resolve`).
        counts : StreamCounts, optional
            The pass's :class:`mpiboost.online.driver.StreamCounts`; by default rebuilt from the model's record
            (``n`` and the accuracy over the stream).

        Returns
        -------
        Stream
            The stream, at position ``n``; :meth:`feed` continues it.
        """
        if counts is None:
            n = int(model.info.get("n") or 0)
            acc = model.info.get("acc_all")
            counts = driver.StreamCounts(n=n, right=int(round((acc or 0.0) * n)))
        return cls(comm, model.algorithm, model.params, opts, int(model.info.get("seed", 0)), model.classes,
                   model.values, model.learner, model.feature_names, model.booster, model.learners, counts)

    def feed(self, X: np.ndarray, y: np.ndarray) -> None:
        """Collective: predict, then learn, the rows of ``X`` (float64, every row on every rank), labels ``y``."""
        t0 = self.state.counts.n
        for t, Xb, yb in driver.blocks_of(X, np.asarray(y, dtype=np.int64), self.opts["block_size"], t0):
            driver.process_block(self.state, Xb, yb, t, self.allgather)

    def model(self) -> OnlineModel:
        """Collective: the model of the stream so far (every rank's learners joined), the same on every rank."""
        st = self.state
        mine = st.bank.get_state() if st.bank is not None else None
        parts = self.comm.allgather(mine) if self.comm.size > 1 else [mine]
        parts = [p for p in parts if p is not None]
        stats = {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}
        summary = st.counts.summary()
        info = {**{k: summary[k] for k in ("n", "acc_test", "acc_all", "exp_test", "argmax_test")},
                "block_size": self.opts["block_size"], "seed": self.seed, "shuffle": None}
        return OnlineModel(self.algo, st.booster.params, self.classes, self.values, stats, st.booster.get_state(),
                           self.feature_names, info, self.learner)
