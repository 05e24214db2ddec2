"""Explanations of tree models: node statistics, importances and TreeSHAP contributions.

Each against an independent computation: LightGBM reading the exported model (its ``pred_contrib`` and
``feature_importance``), brute-force Shapley values over every subset of a 4-feature model, and the
model's own scores (contributions sum to them).
"""
from __future__ import annotations

import itertools
import json
import math

import lightgbm  # a test dependency: the twin of every explanation
import numpy as np
import pytest

import mpiboost
from mpiboost.export import to_lightgbm
from mpiboost.model import Model

def _data(n=700, d=5, K=2, seed=0, missing=0.1):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    s = X[:, 0] + X[:, 1] * X[:, 2] + 0.3 * rng.normal(size=n)
    y = np.digitize(s, np.quantile(s, np.linspace(0, 1, K + 1)[1:-1]))
    X[rng.random((n, d)) < missing] = np.nan
    return X, y


@pytest.fixture(scope="module", params=[2, 3], ids=["binary", "multiclass"])
def fitted(request):
    X, y = _data(K=request.param)
    return mpiboost.train({"algo": "gbdt", "rounds": 15}, X, y), X


def test_contributions_are_lightgbms_pred_contrib_and_sum_to_the_scores(fitted):
    model, X = fitted
    ours = model.contributions(X)
    booster = lightgbm.Booster(model_str=to_lightgbm(model))
    theirs = booster.predict(X, pred_contrib=True)
    assert ours.shape == theirs.shape == (len(X), (model.n_features + 1) * (1 if model.output == "sign" else 3))
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-9)
    score = model.decision_function(X)
    K = 1 if score.ndim == 1 else score.shape[1]
    np.testing.assert_allclose(ours.reshape(len(X), K, -1).sum(axis=2).reshape(score.shape), score, atol=1e-9)
    # some rows' values are missing: their path follows the missing direction, as the prediction does
    assert np.isnan(X).any()


def test_importances_are_lightgbms_of_the_export(fitted):
    model, _ = fitted
    booster = lightgbm.Booster(model_str=to_lightgbm(model))
    np.testing.assert_array_equal(booster.feature_importance("split"), model.feature_importance("split"))
    # LightGBM keeps split gains as float32
    np.testing.assert_allclose(booster.feature_importance("gain"), model.feature_importance("gain"), rtol=1e-6)
    assert model.feature_importance("gain").sum() > 0


def _brute_shapley(model, x):
    """Shapley values of one raw row from every subset of features, with the conditional expectation of
    TreeSHAP: a split on a feature in S follows the row, any other split averages its children by rows."""
    d = model.n_features
    cols = np.empty((d, 1), dtype=np.uint8)
    model.bins.transform(x[None, :], out=cols.T)
    coef = model.vote_coefficients()

    def expect(tree, node, S):
        if tree.feature[node] < 0:
            return tree.value[node, 0]
        f = int(tree.feature[node])
        if f in S:
            b = int(cols[f, 0])
            if tree.bin[node] < 0:  # a categorical split: the bins listed go left, missing right
                go_left = b != 255 and b in tree.left_bins(node)
            else:
                go_left = bool(tree.missing_left[node]) if b == 255 else b <= tree.bin[node]
            return expect(tree, int(tree.left[node] if go_left else tree.right[node]), S)
        lc, rc = int(tree.left[node]), int(tree.right[node])
        return (tree.count[lc] * expect(tree, lc, S) + tree.count[rc] * expect(tree, rc, S)) / tree.count[node]

    def v(S):
        return sum(c * expect(model.trees[int(t)], 0, S) for t, c in zip(model.tree, coef))

    phi = np.zeros(d + 1)
    for i in range(d):
        others = [j for j in range(d) if j != i]
        for size in range(d):
            for S in itertools.combinations(others, size):
                w = math.factorial(size) * math.factorial(d - size - 1) / math.factorial(d)
                phi[i] += w * (v(set(S) | {i}) - v(set(S)))
    phi[d] = v(set())
    return phi


def test_contributions_are_the_brute_force_shapley_values():
    X, y = _data(n=400, d=4, seed=3)
    model = mpiboost.train({"algo": "gbdt", "rounds": 4, "max-leaves": 8}, X, y)
    ours = model.contributions(X[:12])
    for i in range(12):
        np.testing.assert_allclose(ours[i], _brute_shapley(model, X[i]), rtol=0, atol=1e-12)


def test_node_statistics_survive_the_model_file(fitted, tmp_path):
    model, X = fitted
    path = tmp_path / "m.h5"
    model.save(path)
    back = Model.load(path)
    for a, b in zip(model.trees, back.trees):
        np.testing.assert_array_equal(a.gain, b.gain)
        np.testing.assert_array_equal(a.count, b.count)
        np.testing.assert_array_equal(a.weight, b.weight)
    np.testing.assert_array_equal(back.contributions(X), model.contributions(X))
    tree = model.trees[0]
    assert tree.count[0] == len(X) and (tree.gain[tree.feature >= 0] > 0).all()


def test_estimator_predict_pred_contrib_and_refusals():
    X, y = _data()
    from mpiboost.sklearn import AdaBoostClassifier, GBDTClassifier

    est = GBDTClassifier(rounds=8).fit(X, y)
    c = est.predict(X, pred_contrib=True)
    np.testing.assert_allclose(c.sum(axis=1), est.model_.decision_function(X), atol=1e-9)
    stumps = mpiboost.train({"algo": "adaboost", "rounds": 3, "weak-learner": "stump"}, X, y)
    with pytest.raises(ValueError, match="stumps"):
        stumps.contributions(X)
    with pytest.raises(ValueError, match="stumps"):
        AdaBoostClassifier(rounds=3, weak_learner="stump").fit(X, y).predict(X, pred_contrib=True)


def test_predict_contrib_on_the_command_line(tmp_path):
    from mpiboost.cli import main
    from mpiboost.data import format as fmt

    X, y = _data(K=3)
    data = tmp_path / "d.h5"
    fmt.write_dataset(str(data), X.astype(np.float32), y)
    model = tmp_path / "m.h5"
    assert main(["train", "--algo", "gbdt", "--data", str(data), "--rounds", "6", "--model", str(model),
                 "--quiet"]) == 0
    out = tmp_path / "c.csv"
    assert main(["predict", "--model", str(model), "--data", str(data), "--contrib", "--out", str(out)]) == 0
    header = out.read_text().splitlines()[0].split(",")
    assert header[:2] == ["contrib_x0_0", "contrib_x1_0"] and header[-1] == "expected_2" and len(header) == 18
    got = np.loadtxt(out, delimiter=",", skiprows=1)
    m = Model.load(model)
    X32 = X.astype(np.float32).astype(np.float64)
    np.testing.assert_allclose(got, m.contributions(X32), rtol=1e-12, atol=1e-12)
    stumps = tmp_path / "s.h5"
    assert main(["train", "--algo", "samme", "--weak-learner", "stump", "--data", str(data), "--rounds", "3",
                 "--model", str(stumps), "--quiet"]) == 0
    assert main(["predict", "--model", str(stumps), "--data", str(data), "--contrib", "--out",
                 str(tmp_path / "s.csv")]) == 2
    assert not (tmp_path / "s.csv").exists()  # refused before any work: nothing written


def test_importance_command_table_and_chart(tmp_path, capsys):
    from mpiboost.cli import main
    from mpiboost.data import format as fmt

    X, y = _data()
    data = tmp_path / "d.h5"
    fmt.write_dataset(str(data), X.astype(np.float32), y)
    model = tmp_path / "m.h5"
    assert main(["train", "--algo", "gbdt", "--data", str(data), "--rounds", "10", "--model", str(model),
                 "--quiet"]) == 0
    capsys.readouterr()
    assert main(["importance", "--model", str(model)]) == 0
    rows = [line.split(",") for line in capsys.readouterr().out.splitlines()]
    assert rows[0] == ["feature", "split", "split_share", "gain"]
    gains = [float(r[3]) for r in rows[1:]]
    assert gains == sorted(gains, reverse=True) and rows[1][0] in ("x0", "x1", "x2")  # the signal's features
    want = Model.load(model).feature_importance("gain")
    np.testing.assert_allclose(sorted(gains, reverse=True), sorted(want, reverse=True), rtol=1e-5)

    fig = tmp_path / "imp.png"
    assert main(["importance", "--model", str(model), "--out", str(fig), "--top", "3"]) == 0
    assert fig.stat().st_size > 1000 and len(json.loads(capsys.readouterr().out)["features"]) == 3
    assert main(["importance", "--model", str(model), "--top", "0"]) == 2
