"""Online agnostic multiclass boosting (Algorithm 1), one prequential pass over a stream.

For each example: every weak learner predicts (cached labels l_i); the vote
counts v project to the booster's distribution ``D = proj(v / (gamma N))``;
the prediction is a draw from D (``randomized``) or its argmax; then the label
is revealed, the OCO chain p^1..p^{N+1} is computed from the cached labels
(:func:`mpiboost._ext._simplex.ogd_chain`, ``eta = gamma / sqrt(N)``) and
learner i learns the example relabelled by p^i: every label with its weight
(``fractional``) or one label drawn from p^i (``random``).

Random draws come from an RNG keyed by (seed, example index), so a run is
reproducible and does not depend on how the stream is cut.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._ext import _nba, _simplex

RELABEL = ("fractional", "random")


@dataclass
class StreamResult:
    """What a prequential pass measured (fractions of the examples)."""

    acc_test: float  # randomized predictions right, last ``test_fraction`` of the stream
    acc_all: float  # randomized predictions right, whole stream
    exp_test: float  # mean D[y] on the test part: the expected accuracy of the randomized rule
    argmax_test: float  # argmax D right, test part
    n: int


def _draw(P: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Row r's class drawn from the distribution ``P[r]`` with the uniform number ``u[r]`` (inverse CDF)."""
    cdf = np.cumsum(P, axis=1)
    cut = u * cdf[:, -1]
    return np.minimum((cdf <= cut[:, None]).sum(axis=1), P.shape[1] - 1).astype(np.int32)


def prequential(X: np.ndarray, y: np.ndarray, values, n_classes: int, *, n_learners: int = 100,
                gamma: float = 0.5, relabel: str = "fractional", seed: int = 0,
                test_fraction: float = 0.2) -> StreamResult:
    """One pass of Algorithm 1 over the rows of ``X`` in order; predicted, then learnt.

    Parameters
    ----------
    X : ndarray, shape (n, d)
        Features; nominal ones hold value indices ``0 .. values[j] - 1``, NaN is missing.
    y : ndarray of int, shape (n,)
        Class indices ``0 .. n_classes - 1``.
    values : sequence of int
        Per feature, its number of nominal values, or 0 for a numeric feature.
    n_classes, n_learners, gamma, relabel, seed
        k, N, the advantage (0, 1], ``fractional`` or ``random``, the RNG seed.
    test_fraction : float
        The last part of the stream whose accuracy is ``acc_test`` (0.2 in the paper's protocol).
    """
    if relabel not in RELABEL:
        raise ValueError(f"relabel must be one of {RELABEL}, not {relabel!r}")
    if not 0 < gamma <= 1:
        raise ValueError(f"gamma must be in (0, 1], got {gamma}")
    X = np.ascontiguousarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.int64)
    n, k, N = X.shape[0], int(n_classes), int(n_learners)
    bank = _nba.NBABank(N, k, values)
    labels = np.empty(N, dtype=np.int32)
    P = np.empty((N + 1, k))
    votes = np.empty(k)
    D = np.empty(k)
    eta = gamma / math.sqrt(N)
    start = n - int(round(test_fraction * n))
    right = np.zeros(n, dtype=bool)
    expected = np.zeros(n)
    argmax_right = np.zeros(n, dtype=bool)
    for t in range(n):
        x = X[t]
        rng = np.random.default_rng([seed, t])
        bank.predict(x, labels)
        votes[:] = np.bincount(labels, minlength=k)
        _simplex.project(votes / (gamma * N), D)
        yt = int(y[t])
        right[t] = int(_draw(D[None, :], rng.random(1))[0]) == yt
        expected[t] = D[yt]
        argmax_right[t] = int(np.argmax(D)) == yt
        _simplex.ogd_chain(labels, yt, gamma, eta, P)
        if relabel == "fractional":
            bank.learn(x, P)
        else:
            bank.learn_labels(x, _draw(P[:N], rng.random(N)))
    test = slice(start, n)
    return StreamResult(acc_test=float(right[test].mean()), acc_all=float(right.mean()),
                        exp_test=float(expected[test].mean()), argmax_test=float(argmax_right[test].mean()), n=n)
