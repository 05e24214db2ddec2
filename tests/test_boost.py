"""SmoothBoost and AdaBoost against naive single-process references."""
import functools
import math

import numpy as np
import pytest

import reference as ref
from mpiboost.boost import AdaBoost, SmoothBoost
from mpiboost.comm import Comm, _mpi
from mpiboost.data.binning import BinMapper
from mpiboost.data.load import Layout, Shard
from mpiboost.protocol import Protocol


def _shard(X, y):
    n_bins = np.maximum(X.max(axis=0, where=X != 255, initial=0).astype(int) + 1, 1)
    bins = BinMapper([np.arange(k - 1, dtype=float) + 0.5 for k in n_bins])
    return Shard(
        cols=np.ascontiguousarray(X.T, dtype=np.uint8), y=y.astype(np.int8), domain=np.zeros(len(y), np.int32), start=0,
        n_global=len(y), n_domains=1, files=[], layout=Layout(len(y), 1), bins=bins,
    )


def _data(seed, n=400, d=5, noise=0.15):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 6, (n, d)).astype(np.uint8)
    X[rng.random((n, d)) < 0.05] = 255
    y = np.where((X[:, 0] > 2) ^ (X[:, 1] < 2) ^ (rng.random(n) < noise), 1, -1).astype(np.int8)
    return X, y


def _naive_best(X, y, w, n_bins):
    """Best stump by exhaustive float search (same candidate order and tie rule)."""
    hist = np.zeros((X.shape[1], 256))
    for j in range(X.shape[1]):
        np.add.at(hist[j], X[:, j], w * y)
    # integer-valued proxy keeps the reference's ordering logic; scale so ties stay ties
    return ref.best_stump(np.round(hist * 2.0**60).astype(np.int64), n_bins)[:4]


def _weights(algo):
    cells = getattr(algo, "cells", None)
    return cells.row_weights() if cells is not None else algo.w.copy()


def _run(cls, params, X, y, rounds, seed=0):
    algo = cls(params)
    algo.setup(_shard(X, y), Protocol(Comm(_mpi().COMM_SELF)), seed)
    history = []
    for t in range(1, rounds + 1):
        h = algo.select(t)
        if h is None:
            break
        algo.apply(h)
        history.append((h, _weights(algo)))
    return algo, history


@pytest.mark.parametrize("seed", range(3))
def test_adaboost_histogram_matches_naive(seed):
    X, y = _data(seed)
    algo, hist = _run(AdaBoost, {"weak_learner": "histogram"}, X, y, 15)
    n_bins = algo.data.bins.n_bins
    w = np.full(len(y), 1.0 / len(y))
    for h, w_after in hist:
        f, b, left, ml = _naive_best(X, y, w, n_bins)
        assert (h.stump.feature, h.stump.bin, h.stump.left, h.stump.missing_left) == (f, b, left, ml)
        pred = np.array([ref.stump_value(X[i], f, b, left, ml) for i in range(len(y))])
        err = math.fsum(w[pred != y]) / math.fsum(w)
        e = min(max(err, 1e-12), 0.5 - 1e-12)
        alpha = 0.5 * math.log((1 - e) / e)
        assert h.coef == pytest.approx(alpha, rel=1e-12)
        w = w * np.exp(-alpha * y * pred)
        w = w / math.fsum(w)
        np.testing.assert_allclose(w_after, w, rtol=1e-12)


def _n_bins(X):
    """Every feature's number of value bins, as :func:`_shard` bins it (an all-missing feature has one)."""
    return [max(int(X[:, j][X[:, j] != 255].max(initial=0)) + 1, 1) for j in range(X.shape[1])]


def _skewed(seed, n=500):
    """Nine positives in ten; features piled into low bins, one with 40 bins, rare missing values."""
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.minimum(rng.geometric(0.6, n) - 1, 9), rng.integers(0, 40, n),
                         np.minimum(rng.geometric(0.3, n) - 1, 20)]).astype(np.uint8)
    X[rng.random(X.shape) < 0.01] = 255
    y = np.where((rng.random(n) < 0.9) ^ ((X[:, 0] > 2) & (X[:, 1] < 8)), 1, -1).astype(np.int8)
    return X, y


def _few_distinct(seed, n=90):
    """Eight distinct rows repeated (many stumps tie), a constant feature and an all-missing one."""
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 4, (8, 2)).astype(np.uint8)
    X = np.column_stack([base[np.arange(n) % 8], np.zeros(n), np.full(n, 255)]).astype(np.uint8)
    y = np.where(rng.random(8)[np.arange(n) % 8] < 0.5, 1, -1).astype(np.int8)
    return X, y


SMOOTH_CASES = {
    # name: (rows, labels), epsilon, gamma, rounds
    "random eps 0.1": (_data(7, n=600, noise=0.3), 0.1, 0.15, 25),
    "random eps 0.5": (_data(8, n=300, noise=0.1), 0.5, 0.15, 25),
    "skewed": (_skewed(1), 0.2, 0.15, 20),
    "skewed, small gamma": (_skewed(5), 0.6, 0.02, 20),
    "heavy clipping": (_data(9, n=200, noise=0.4), 0.8, 0.3, 20),
    "all positive": ((_data(2, n=50)[0], np.ones(50, dtype=np.int8)), 0.2, 0.15, 6),
    "few distinct rows, epsilon 1": (_few_distinct(3), 1.0, 0.15, 10),
    "few distinct rows": (_few_distinct(4), 0.3, 0.5, 15),
    "three rows": ((np.array([[0, 255], [1, 0], [1, 1]], dtype=np.uint8), np.array([1, -1, 1], dtype=np.int8)),
                   0.5, 0.15, 8),
}


@functools.lru_cache(maxsize=None)
def _smooth_reference(case):
    """The reference's rounds of a case (computed once for both weight stores)."""
    (X, y), eps, gamma, rounds = SMOOTH_CASES[case]
    return ref.smoothboost(X, y, _n_bins(X), rounds, eps, gamma)


@pytest.mark.parametrize("store", ["rows", "cells"])
@pytest.mark.parametrize("case", list(SMOOTH_CASES))
def test_smoothboost_is_the_brute_force_reference_and_stays_smooth(case, store):
    """SmoothBoost against :func:`reference.smoothboost`, which picks its own stumps by trying every one.

    Every round's stump must be the reference's (every feature, bin,
    direction and missing side; the largest exact edge; ties to the constant,
    the lowest feature, then the lowest threshold), every coefficient 1, and
    the weights the reference's to 1e-12 relative: the implementation
    normalises with factors from the exact masses and projects with its
    distributed search, the reference divides by an exact sum and projects
    by sorting, so they agree to rounding, not bit for bit. The weights are
    epsilon-smooth after every round, and the model's majority vote is the
    reference's.
    """
    (X, y), eps, gamma, rounds = SMOOTH_CASES[case]
    params = {"weak_learner": "histogram", "epsilon": eps, "gamma": gamma, "weight_store": store}
    algo, hist = _run(SmoothBoost, params, X, y, rounds)
    assert list(algo.data.bins.n_bins) == _n_bins(X)
    want = _smooth_reference(case)
    n = len(y)
    cap = 1.0 / (eps * n)
    assert len(hist) == rounds
    for t, ((h, w_after), (stump, w)) in enumerate(zip(hist, want), 1):
        assert (h.stump.feature, h.stump.bin, h.stump.left, h.stump.missing_left) == stump, f"round {t}"
        assert h.coef == 1.0
        np.testing.assert_allclose(w_after, w, rtol=1e-12, atol=0, err_msg=f"round {t}")
        assert w_after.max() <= cap * (1 + 1e-12)  # epsilon-smooth after every round
        assert abs(w_after.sum() - 1.0) <= 1e-12
    m = algo.model
    assert list(zip(m.feature.tolist(), m.bin.tolist(), m.left.tolist(), m.missing_left.astype(bool).tolist())) == \
        [stump for stump, _ in want]
    assert np.all(m.coef == 1.0) and m.vote == "majority"
    votes = [sum(ref.stump_value(X[i], *stump) for stump, _ in want) for i in range(n)]
    np.testing.assert_array_equal(m.predict_binned(np.ascontiguousarray(X.T)), np.where(np.array(votes) >= 0, 1, -1))


def test_smoothboost_weighted_vote_removed_and_parameter_errors():
    with pytest.raises(ValueError, match="--vote weighted was removed"):
        SmoothBoost({"weak_learner": "histogram", "vote": "weighted"})
    X, y = _data(1)
    algo, hist = _run(SmoothBoost, {"weak_learner": "histogram"}, X, y, 5)
    assert algo.model.vote == "majority" and np.all(algo.model.coef == 1.0)
    with pytest.raises(ValueError):
        SmoothBoost({"epsilon": 0})
    with pytest.raises(ValueError):
        SmoothBoost({"gamma": 1.5})


def test_sample_mode_learns_on_clean_data():
    rng = np.random.default_rng(3)
    X = rng.integers(0, 6, (2000, 5)).astype(np.uint8)
    y = np.where((X[:, 0] > 2).astype(int) + (X[:, 1] < 2) + (X[:, 2] > 3) >= 2, 1, -1).astype(np.int8)
    algo, hist = _run(AdaBoost, {"weak_learner": "sample", "n_samples": 500}, X, y, 30)
    assert "weak_error_sample" in hist[0][0].metrics
    pred = algo.model.predict_binned(np.ascontiguousarray(X.T))
    assert np.mean(pred != y) < 0.05  # an additive rule: stumps can express it


def test_adaboost_stops_without_edge():
    X = np.zeros((100, 2), dtype=np.uint8)
    y = np.array([1, -1] * 50, dtype=np.int8)
    algo, hist = _run(AdaBoost, {"weak_learner": "histogram"}, X, y, 10)
    assert hist == []  # the constant hypothesis has error 1/2: stop at once


@pytest.mark.parametrize("weak", ["sample", "histogram"])
def test_cell_store_gives_the_row_store_model(weak):
    """Per-cell weights do the same arithmetic as per-row weights: the same model."""
    X, y = _data(11, n=3000, noise=0.1)
    models = {}
    for store, extra in (("rows", {}), ("cells", {}), ("cells", {"max_cells": 8})):
        params = {"weak_learner": weak, "weight_store": store, **extra}
        if weak == "sample":
            params["n_samples"] = 400
        algo, hist = _run(SmoothBoost, params, X, y, 40)
        models[(store, bool(extra))] = (algo.model.feature.tolist(), algo.model.bin.tolist(), algo.model.left.tolist())
        if extra:
            assert algo.cells is None  # switched to per-row weights when the cells grew past 8
    assert models[("rows", False)] == models[("cells", False)] == models[("cells", True)]
