"""The prequential pass of an online booster, on one rank or spread over several.

Every example of the stream is predicted, then learnt. The N weak learners
are split over the ranks (rank r holds learners ``N r / R .. N (r + 1) / R``)
and every rank reads the whole stream in its global order. Examples come in
blocks of ``block_size``: the learners predict every example of a block
while frozen at the block's start, one allgather gives every rank all N
labels of every example of the block, and then, example by example in
stream order, every rank runs the booster's own calls alike (they see the
learners only through these labels, :mod:`.base`) and its learners learn
their part of the update. So

* ``block_size = 1`` is the sequential algorithm exactly: each example is
  predicted by learners that have learnt every earlier one;
* for any block size the predictions and the final learners are the same
  on any number of ranks, bit for bit: a learner's arithmetic (the
  examples it learns, their weights and their order) does not depend on
  which rank holds it, and the booster's state is computed alike on all;
* a block costs one allgather of B x N class labels (2 bytes each), and the
  prediction and learning work is divided by the number of ranks.

Random draws come from a counter-based generator keyed by (seed, stream
position), :class:`.base.StreamRandom`: the prediction's draw first, then
the booster's (random relabelling).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional

import numpy as np

from .._ext import _nba, _simplex
from .base import OnlineBooster, StreamRandom
from .learners import make_bank, resolve

LABEL_DTYPE = np.int16  # a label on the wire; k <= MAX_CLASSES fits
MAX_CLASSES = np.iinfo(LABEL_DTYPE).max


def learner_slice(n_learners: int, size: int, rank: int) -> tuple[int, int]:
    """The learners rank ``rank`` of ``size`` holds: ``[a, b)``."""
    return n_learners * rank // size, n_learners * (rank + 1) // size


@dataclass
class StreamCounts:
    """What the prequential pass counted so far (the same on every rank)."""

    n: int = 0
    right: int = 0  # randomised predictions right
    argmax_right: int = 0
    expected: float = 0.0  # sum of D_t[y_t]
    n_test: int = 0
    right_test: int = 0
    argmax_right_test: int = 0
    expected_test: float = 0.0

    def summary(self) -> dict:
        """``acc_all``, ``acc_test``, ``exp_test``, ``argmax_test`` (and the train part's), as fractions."""
        def frac(a, b):
            return a / b if b else None

        n_train = self.n - self.n_test
        return {
            "n": self.n,
            "n_test": self.n_test,
            "acc_all": frac(self.right, self.n),
            "exp_all": frac(self.expected, self.n),
            "argmax_all": frac(self.argmax_right, self.n),
            "acc_test": frac(self.right_test, self.n_test),
            "exp_test": frac(self.expected_test, self.n_test),
            "argmax_test": frac(self.argmax_right_test, self.n_test),
            "acc_train": frac(self.right - self.right_test, n_train),
        }


@dataclass
class StreamState:
    """A prequential pass in progress: this rank's learners, the booster, the counts."""

    booster: OnlineBooster
    bank: Optional[_nba.NBABank]  # None on a rank that holds no learner
    lo: int
    hi: int
    size: int
    test_start: int
    seed: int
    counts: StreamCounts = field(default_factory=StreamCounts)
    predictions: Optional[list] = None  # kept when asked: (randomised, argmax) per example
    blocks: int = 0


def start(booster: OnlineBooster, values, *, rank: int = 0, size: int = 1, n: int, test_fraction: float = 0.2,
          seed: int = 0, keep_predictions: bool = False, learner: Optional[dict] = None) -> StreamState:
    """A fresh pass over a stream of ``n`` examples (``values``: per feature its nominal values, 0: numeric).

    ``learner``: the weak learners' spec (:func:`mpiboost.online.learners.spec`, resolved by the data:
    :func:`mpiboost.online.learners.resolve`; None or unresolved ``auto``: naive-Bayes-adaptive leaves).
    """
    if booster.n_classes > MAX_CLASSES:
        raise ValueError(f"at most {MAX_CLASSES} classes, got {booster.n_classes}")
    lo, hi = learner_slice(booster.n_learners, size, rank)
    learner = resolve(learner or {}, False)  # no rows seen here: "auto" is nba (the callers with data resolve it)
    bank = make_bank(learner, hi - lo, booster.n_classes, values) if hi > lo else None
    test_start = n - int(round(test_fraction * n))
    return StreamState(booster, bank, lo, hi, size, test_start, int(seed), predictions=[] if keep_predictions else None)


def predict_block(state: StreamState, X: np.ndarray) -> np.ndarray:
    """This rank's learners' classes for every row of the block ``X``: (B, own learners), learners frozen."""
    own = np.empty((X.shape[0], state.hi - state.lo), dtype=np.int32)
    if state.bank is not None:
        for i in range(X.shape[0]):
            state.bank.predict(X[i], own[i])
    return own


def join_labels(parts: list, n_learners: int) -> np.ndarray:
    """Every rank's (B, own learners) labels, in rank order, as (B, N)."""
    return np.ascontiguousarray(np.concatenate(parts, axis=1), dtype=np.int32)


def split_flat(flat: np.ndarray, B: int, n_learners: int, size: int) -> list:
    """The allgathered flat labels, cut back into every rank's (B, own learners) block."""
    parts, pos = [], 0
    for r in range(size):
        a, b = learner_slice(n_learners, size, r)
        parts.append(flat[pos:pos + B * (b - a)].reshape(B, b - a))
        pos += B * (b - a)
    return parts


def finish_block(state: StreamState, X: np.ndarray, y: np.ndarray, t0: int, labels: np.ndarray) -> None:
    """Predict and learn the block's examples in stream order, given all N learners' frozen ``labels`` (B, N)."""
    booster, bank = state.booster, state.bank
    c = state.counts
    for i in range(len(y)):
        t = t0 + i
        row = labels[i]
        rng = StreamRandom(state.seed, t)
        D = booster.distribution(row, t)
        yt = int(y[i])
        guess = _simplex.draw_index(D, rng.random())
        best = int(D.argmax())
        c.n += 1
        c.right += guess == yt
        c.argmax_right += best == yt
        c.expected += float(D[yt])
        if t >= state.test_start:
            c.n_test += 1
            c.right_test += guess == yt
            c.argmax_right_test += best == yt
            c.expected_test += float(D[yt])
        if state.predictions is not None:
            state.predictions.append((guess, best))
        # the update depends on the labels alone, so the learners may learn it at once
        upd = booster.update(row, yt, t, rng)
        if bank is None:
            continue
        if upd.P is not None:
            bank.learn(X[i], upd.P, state.lo)
        else:
            bank.learn_labels(X[i], np.ascontiguousarray(upd.labels[state.lo:state.hi], dtype=np.int32),
                              weights=np.ascontiguousarray(upd.weights[state.lo:state.hi], dtype=np.float64))
    state.blocks += 1


def process_block(state: StreamState, X: np.ndarray, y: np.ndarray, t0: int,
                  allgather: Optional[Callable[[np.ndarray], np.ndarray]] = None) -> None:
    """Predict, then learn, the examples ``t0 .. t0 + len(y) - 1`` (one block: learners frozen while predicting).

    ``allgather`` joins every rank's flat (B, own learners) labels, rank
    after rank (None: this rank holds all the learners).
    """
    own = predict_block(state, X)
    if allgather is None:
        labels = own
    else:
        flat = allgather(np.ascontiguousarray(own, dtype=LABEL_DTYPE).ravel())
        labels = join_labels(split_flat(flat, len(y), state.booster.n_learners, state.size), state.booster.n_learners)
    finish_block(state, X, y, t0, labels)


def run(state: StreamState, blocks: Iterable[tuple[int, np.ndarray, np.ndarray]], *, allgather=None,
        progress: Optional[Callable[[int], None]] = None) -> StreamState:
    """Process ``(t0, X, y)`` blocks in stream order; ``progress(examples)`` after each."""
    for t0, X, y in blocks:
        process_block(state, X, y, t0, allgather)
        if progress is not None:
            progress(len(y))
    return state


def blocks_of(X: np.ndarray, y: np.ndarray, block_size: int, t0: int = 0):
    """In-memory rows cut into blocks of ``block_size`` examples: ``(t0, X, y)``."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    for a in range(0, len(y), block_size):
        yield t0 + a, X[a:a + block_size], y[a:a + block_size]


def prequential(X: np.ndarray, y: np.ndarray, values, n_classes: int, *, algorithm: str = "online-agnostic",
                params: Optional[dict] = None, seed: int = 0, block_size: int = 1,
                test_fraction: float = 0.2, learner: Optional[dict] = None,
                threads: Optional[int] = None) -> dict:
    """One prequential pass over in-memory rows, on this process: the summary of :meth:`StreamCounts.summary`.

    Parameters
    ----------
    X : ndarray, shape (n, d)
        Features; nominal ones hold value indices ``0 .. values[j] - 1``, NaN is missing.
    y : ndarray of int, shape (n,)
        Class indices ``0 .. n_classes - 1``.
    values : sequence of int
        Per feature, its number of nominal values, or 0 for a numeric feature.
    algorithm, params
        A name of :data:`mpiboost.online.ONLINE` and its parameters (``n_learners``, ``gamma`` ...).
    seed, block_size, test_fraction
        The RNG seed, examples per block (1: the sequential algorithm), the
        last part of the stream whose accuracy is ``acc_test``.
    learner
        The weak learners (:func:`mpiboost.online.learners.spec`; None or ``kind = "auto"``: chosen by the
        data's kind, :func:`mpiboost.online.learners.resolve`: multinomial naive Bayes on counts and pixels,
        naive-Bayes-adaptive leaves otherwise).
    threads : int, optional
        OpenMP threads of this process's kernels from now on (None: as they are), e.g. 1 to compare with a
        single-threaded peer.
    """
    from . import ONLINE
    from .learners import counts_like

    if threads is not None:
        from .._ext import _openmp

        _openmp.set_num_threads(int(threads))
    learner = resolve(learner or {}, counts_like(X))
    if learner["kind"] == "mnb":
        values = [0] * len(values)  # counts: every feature a count, none nominal
    booster = ONLINE[algorithm](n_classes, params, seed)
    state = start(booster, values, n=len(y), test_fraction=test_fraction, seed=seed, learner=learner)
    run(state, blocks_of(X, np.asarray(y, dtype=np.int64), block_size))
    return state.counts.summary()
