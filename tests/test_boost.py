"""SmoothBoost and AdaBoost against naive single-process references."""
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


@pytest.mark.parametrize("store", ["rows", "cells"])
@pytest.mark.parametrize("eps", [0.1, 0.5])
def test_smoothboost_matches_naive_and_stays_smooth(eps, store):
    X, y = _data(7, n=600, noise=0.3)
    gamma = 0.15
    params = {"weak_learner": "histogram", "epsilon": eps, "gamma": gamma, "weight_store": store}
    algo, hist = _run(SmoothBoost, params, X, y, 25)
    n = len(y)
    cap = 1.0 / (eps * n)
    w = np.full(n, 1.0 / n)
    for h, w_after in hist:
        pred = h.stump.predict(np.ascontiguousarray(X.T))
        w = np.where(pred == y, w * (1 - gamma), w)
        w = ref.projection(w / math.fsum(w), cap)
        np.testing.assert_allclose(w_after, w, rtol=1e-12)
        assert w_after.max() <= cap * (1 + 1e-12)  # epsilon-smooth after every round
        assert abs(w_after.sum() - 1.0) <= 1e-12
    assert len(hist) == 25
    # the vote is an unweighted majority
    assert np.all(algo.model.coef == 1.0)


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
    pred = algo.model.predict(np.ascontiguousarray(X.T))
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
