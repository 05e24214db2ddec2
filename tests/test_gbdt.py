"""``--algo gbdt``: plain gradient boosting, its loss from the labels.

Two classes: the model of ``adaboost --loss logistic --weak-learner tree`` bit for bit (the same Newton
trees, start and quantized gradients); more: ``softmax``'s. Class names of any kind keep their order, and
the binary default rounds gradients to 4 levels, the multiclass one to 16 (the accuracy study's choices).
The same model on 1-4 ranks is the registry-wide conformance test's (tests/test_conformance.py).
"""
from __future__ import annotations

import numpy as np
import pytest

import mpiboost


def _data(K, n=600, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    s = X[:, 0] + 0.7 * X[:, 1] * X[:, 2] + rng.normal(0, 0.4, n)
    y = np.digitize(s, np.quantile(s, np.linspace(0, 1, K + 1)[1:-1]))
    return X, y


@pytest.mark.parametrize("K", [2, 4])
def test_gbdt_is_the_newton_booster_of_its_labels(K):
    X, y = _data(K)
    gb = mpiboost.train({"algo": "gbdt", "rounds": 12}, X, y)
    if K == 2:
        same = mpiboost.train({"algo": "adaboost", "loss": "logistic", "weak-learner": "tree", "rounds": 12}, X, y)
        assert gb.params["grad_bins"] == 4
    else:
        same = mpiboost.train({"algo": "softmax", "rounds": 12}, X, y)
        assert gb.params["grad_bins"] == 16
    assert len(gb.trees) == len(same.trees) == 12
    assert all(a.same_as(b) for a, b in zip(gb.trees, same.trees))
    np.testing.assert_array_equal(gb.predict_proba(X), same.predict_proba(X))  # bit for bit
    np.testing.assert_array_equal(gb.predict(X), same.predict(X))
    assert (gb.predict(X) == y).mean() > 0.7


def test_gbdt_binary_classes_keep_their_names_and_order():
    X, y = _data(2)
    names = np.where(y == 1, "yes", "no")
    m = mpiboost.train({"algo": "gbdt", "rounds": 10}, X, names)
    p = m.predict_proba(X)
    assert list(m.classes) == ["no", "yes"] and p.shape == (len(y), 2)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    np.testing.assert_array_equal(m.predict(X), np.where(p[:, 1] >= 0.5, "yes", "no"))
    # the second class's probability rises with the score, as LightGBM's binary objective
    assert np.corrcoef(p[:, 1], y)[0, 1] > 0.5


def test_gbdt_refuses_one_class():
    X, y = _data(2)
    with pytest.raises(Exception, match="one class only"):
        mpiboost.train({"algo": "gbdt", "rounds": 3}, X, np.zeros_like(y))


@pytest.mark.parametrize("K", [2, 3])
def test_gbdt_validation_rows_choose_the_round(K):
    """Validation rows of class indices score a two-class (sign) model too: the round chosen is the one of the
    lowest validation error, as adaboost --loss logistic's on -1/+1 labels."""
    X, y = _data(K, n=900)
    params = {"rounds": 40, "valid-fraction": 0.25, "best-round": True, "learning-rate": 0.5}
    gb = mpiboost.train({"algo": "gbdt", **params}, X, y)
    val = gb.info["validation"]
    assert val["rounds_chosen"] and gb.n_rounds == val["best_round"] <= 40
    if K == 2:
        same = mpiboost.train({"algo": "adaboost", "loss": "logistic", "weak-learner": "tree", **params}, X, y)
        assert same.n_rounds == gb.n_rounds and same.info["validation"]["best_error"] == val["best_error"]
