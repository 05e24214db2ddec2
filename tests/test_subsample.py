"""Row bagging and feature fraction of the Newton tree boosters (LightGBM's bagging_fraction, bagging_freq,
feature_fraction), each draw keyed by the seed and the global row or the round.

Twins: the bag is the rows whose uniform number of (seed, bag, global row) is below the fraction, computed
here row by row; the features are numpy's draw from (seed, round). The same model on 1-4 ranks is the
conformance test's (tests/test_conformance.py runs gbdt with all three set).
"""
from __future__ import annotations

import numpy as np
import pytest

import mpiboost
from mpi_util import run_cli
from mpiboost._ext import _quantize
from mpiboost.data.format import write_dataset


def _data(n=1500, d=8, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (X[:, 0] + X[:, 1] * X[:, 2] + rng.normal(0, 0.5, n) > 0).astype(int)
    return X, y


def test_each_tree_grows_on_its_bag_and_every_row_follows_it():
    X, y = _data()
    n, fraction, freq, seed = len(y), 0.6, 3, 7
    m = mpiboost.train({"algo": "gbdt", "rounds": 7, "bagging-fraction": fraction, "bagging-freq": freq,
                        "seed": seed}, X, y)
    for t, tree in enumerate(m.trees, start=1):
        key = (t - 1) // freq
        bag = sum(_quantize.uniform(seed, key, i, 0x7FFFFFFF) < fraction for i in range(n))  # the twin
        assert tree.count[0] == bag, (t, tree.count[0], bag)
        assert tree.count[tree.feature < 0].sum() == bag  # leaf values from the bag's rows only
    roots = [int(tr.count[0]) for tr in m.trees]
    assert roots[0] == roots[1] == roots[2] != roots[3] == roots[4] == roots[5] != roots[6]  # a bag per 3 rounds
    assert abs(roots[0] / n - fraction) < 0.05
    # without --bagging-freq, a fraction below 1 draws a new bag every round (not LightGBM's silent no-op)
    each = mpiboost.train({"algo": "gbdt", "rounds": 3, "bagging-fraction": fraction, "seed": seed}, X, y)
    assert len({int(tr.count[0]) for tr in each.trees}) == 3 and all(tr.count[0] < n for tr in each.trees)
    # the rows out of the bag are scored by the tree too: the training error is the model's on every row
    assert m.info["n_train"] == n
    full = mpiboost.train({"algo": "gbdt", "rounds": 7, "seed": seed}, X, y)
    assert all(int(tr.count[0]) == n for tr in full.trees)


def test_each_tree_splits_on_its_drawn_features():
    X, y = _data(d=10)
    seed, fraction = 3, 0.35
    m = mpiboost.train({"algo": "gbdt", "rounds": 6, "feature-fraction": fraction, "seed": seed,
                        "min-data-in-leaf": 5}, X, y)
    k = int(10 * fraction + 0.5)
    for t, tree in enumerate(m.trees, start=1):
        rng = np.random.default_rng([seed, t, 0xFEA7])
        allowed = set(rng.choice(10, size=k, replace=False).tolist())  # the twin of the draw
        used = set(tree.feature[tree.feature >= 0].tolist())
        assert used and used <= allowed, (t, used, allowed)
    # fraction 1 (the default) is the model without it, bit for bit
    a = mpiboost.train({"algo": "gbdt", "rounds": 6, "seed": seed, "feature-fraction": 1.0}, X, y)
    b = mpiboost.train({"algo": "gbdt", "rounds": 6, "seed": seed}, X, y)
    assert a.to_json() == b.to_json()


@pytest.mark.parametrize("algo", [["--algo", "gbdt"], ["--algo", "softmax"],
                                  ["--algo", "adaboost", "--loss", "logistic", "--weak-learner", "tree"]])
def test_bagging_options_are_checked_before_any_work(algo, tmp_path):
    X, y = _data(n=200)
    write_dataset(tmp_path / "d.h5", X.astype(np.float32), y)
    base = ["train", *algo, "--data", str(tmp_path / "d.h5"), "--rounds", "3", "--model", str(tmp_path / "m.h5")]
    proc = run_cli([*base, "--bagging-fraction", "0.5", "--bagging-freq", "0"])
    assert proc.returncode == 2 and "--bagging-fraction 0.5 with --bagging-freq 0" in proc.stderr, proc.stderr
    for bad in (["--feature-fraction", "0"], ["--bagging-fraction", "1.5"], ["--bagging-freq", "-1"]):
        assert run_cli([*base, *bad]).returncode == 2
    assert not (tmp_path / "m.h5").exists()
    assert run_cli([*base, "--bagging-fraction", "0.5", "--bagging-freq", "1", "--feature-fraction", "0.5",
                    "--quiet"]).returncode == 0
