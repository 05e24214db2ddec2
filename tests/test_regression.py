"""Regression: ``--algo gbdt --objective regression|regression_l1|huber|quantile`` on numeric targets.

Twins: LightGBM on the same bins grows the same trees (starts, Newton leaves, the L1 and quantile leaf
percentiles); numpy gives the start (mean, median, quantile) and the metrics; the LightGBM export predicts
the same values. The model is the same on any number of ranks; integer weights are repeated rows; the
targets travel through convert, train, evaluate, predict and the scikit-learn regressor; every bad input
exits 2 before any work.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

import mpiboost
from mpi_util import run_cli
from mpiboost.boost.percentile import percentile
from mpiboost.data.format import inspect, write_dataset
from mpiboost.model import Model

OBJECTIVES = ("regression", "regression_l1", "huber", "quantile")


def _data(n=3000, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    # heavy-tailed noise: the four objectives part ways; float32 values, as LightGBM keeps its labels
    y = 3 * X[:, 0] - X[:, 1] * X[:, 2] + np.sin(3 * X[:, 3]) + rng.standard_t(3, size=n)
    return X, y.astype(np.float32).astype(np.float64)


# ------------------------------------------------------------------------------------------ twins
def test_percentile_is_lightgbms_start():
    """The start of the L1 and quantile objectives (a percentile of the targets, weighted or not) is
    LightGBM's own (its boost_from_average, read off a model that cannot split), to its float32 rounding;
    unweighted it is also numpy's linear percentile."""
    import lightgbm as lgb

    rng = np.random.default_rng(3)
    for trial in range(40):
        n = int(rng.integers(2, 60))
        X = rng.standard_normal((n, 2))
        y = rng.standard_normal(n).astype(np.float32).astype(np.float64)
        w = rng.uniform(0.05, 2.0, n) * rng.choice([0.3, 1.0, 3.0]) if trial % 2 else None
        alpha = float(rng.choice([0.5, 0.2, 0.8]))
        params = dict(objective="quantile", alpha=alpha, min_data_in_leaf=n, min_data_in_bin=1, verbose=-1,
                      num_threads=1)
        booster = lgb.train(params, lgb.Dataset(X, label=y, weight=w, params=params), num_boost_round=1)
        theirs = booster.predict(X[:1], raw_score=True)[0]
        assert percentile(y, alpha, w) == pytest.approx(theirs, abs=2e-6 * max(1.0, abs(theirs))), (trial, n, alpha)
        if w is None:
            assert percentile(y, alpha) == pytest.approx(np.quantile(y, alpha), abs=1e-12)


@pytest.mark.parametrize("objective", OBJECTIVES)
@pytest.mark.parametrize("rounds,weighted", [(1, False), (3, False), (1, True), (3, True)])
def test_regression_trees_are_lightgbms_on_the_same_bins(objective, rounds, weighted):
    """An independent twin of the start, the splits, the Newton leaves and the renewed leaves (L1: the median,
    quantile: the alpha percentile of each leaf's residuals): LightGBM given our bin indices as features and the
    same settings grows the same trees. Its gradients are float32, so the scores agree to about 1e-7; a wrong
    start, split or leaf rule moves them by 1e-2 or more. min_data_in_leaf is 0 on both sides: LightGBM
    estimates a child's row count from its hessian sum, which with weights can refuse a one-row child that
    mpiboost's exact count allows."""
    import lightgbm as lgb

    X, y = _data(seed=300 + rounds)
    n, d = X.shape
    w = np.random.default_rng(5).uniform(0.2, 3.0, n) if weighted else None
    params = {"algo": "gbdt", "rounds": rounds, "min-data-in-leaf": 0, "objective": objective}
    if objective in ("huber", "quantile"):
        params["alpha"] = 0.7
    model = mpiboost.train(params, X, y, weight=w)
    cols = np.empty((d, n), dtype=np.uint8)
    model.bins.transform(X, out=cols.T)
    ours = model.decision_binned(cols)
    Xb = cols.T.astype(np.float64)
    lgb_params = dict(objective=objective, alpha=0.7, num_leaves=31, min_data_in_leaf=0, min_sum_hessian_in_leaf=1e-3,
                      lambda_l2=0.0, learning_rate=0.1, max_bin=1024, min_data_in_bin=1, verbose=-1,
                      feature_pre_filter=False, deterministic=True, num_threads=1)
    booster = lgb.train(lgb_params, lgb.Dataset(Xb, label=y, weight=w, params=lgb_params), num_boost_round=rounds)
    theirs = booster.predict(Xb, raw_score=True)
    assert np.abs(ours - theirs).max() < 1e-6 * max(1.0, np.abs(theirs).max())
    assert [t["num_leaves"] for t in booster.dump_model()["tree_info"]] == [t.n_leaves for t in model.trees]


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_a_tree_that_cannot_split_predicts_numpys_start(objective):
    """No split allowed (min_data_in_leaf above the rows): the one-leaf model predicts the mean (squared error,
    Huber: the start, then a Newton step of mean residual 0), the median (L1) or the alpha quantile, as numpy
    computes them from the targets; weighted, the weighted mean."""
    X, y = _data(n=501)
    m = mpiboost.train({"algo": "gbdt", "rounds": 1, "objective": objective, "min-data-in-leaf": 600,
                        **({"alpha": 0.3} if objective == "quantile" else {})}, X, y)
    want = {"regression": np.mean(y), "huber": np.mean(y), "regression_l1": np.median(y),
            "quantile": np.quantile(y, 0.3)}[objective]
    if objective == "huber":  # the start is the mean; the leaf's Newton step is the mean clipped residual
        want = np.mean(y) - 0.1 * np.mean(np.clip(np.mean(y) - y, -0.9, 0.9))
    np.testing.assert_allclose(m.predict(X[:5]), want, rtol=0, atol=1e-12)
    w = np.random.default_rng(1).uniform(0.5, 3.0, len(y))
    mw = mpiboost.train({"algo": "gbdt", "rounds": 1, "objective": "regression", "min-data-in-leaf": 600}, X, y,
                        weight=w)
    np.testing.assert_allclose(mw.predict(X[:5]), np.average(y, weights=w), rtol=0, atol=1e-12)


@pytest.mark.parametrize("objective", ["regression", "huber"])
def test_integer_weights_are_repeated_rows(objective):
    """Squared error and Huber: weights of 1, 2, 3 give the model of the rows repeated, bit for bit. (L1 and
    quantile renew their leaves by LightGBM's weighted percentile, which interpolates by cumulative weight
    and so differs from the percentile of repeated rows: their weights are checked against LightGBM above.)"""
    rng = np.random.default_rng(2)
    X = rng.integers(0, 20, size=(500, 4)).astype(float)  # few distinct values: repeated rows bin alike
    y = X[:, 0] + rng.normal(0, 3, 500)
    w = rng.integers(1, 4, size=500).astype(float)
    params = {"algo": "gbdt", "rounds": 6, "objective": objective, "min-data-in-leaf": 0, "min-child-weight": 0}
    weighted = mpiboost.train(params, X, y, weight=w)
    idx = np.repeat(np.arange(len(y)), w.astype(int))
    repeated = mpiboost.train(params, X[idx], y[idx])
    np.testing.assert_array_equal(weighted.predict(X), repeated.predict(X))


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_the_lightgbm_export_predicts_the_same_values(objective, tmp_path):
    import lightgbm as lgb

    X, y = _data(n=1500, seed=4)
    X[np.random.default_rng(4).random(X.shape) < 0.05] = np.nan
    m = mpiboost.train({"algo": "gbdt", "rounds": 15, "objective": objective}, X, y)
    m.save(tmp_path / "m.h5")
    assert run_cli(["export", "--model", str(tmp_path / "m.h5"), "--format", "lightgbm", "--out",
                    str(tmp_path / "m.txt")]).returncode == 0
    booster = lgb.Booster(model_file=str(tmp_path / "m.txt"))
    assert f"objective={objective}" in (tmp_path / "m.txt").read_text()
    np.testing.assert_allclose(booster.predict(X), m.predict(X), rtol=0, atol=1e-12)
    np.testing.assert_allclose(booster.predict(X, pred_contrib=True), m.contributions(X), rtol=0, atol=1e-9)


def test_the_metrics_are_numpys():
    """The training metric each objective reports is numpy's on the training rows: RMSE, MAE, Huber, pinball."""
    X, y = _data(n=800, seed=6)
    for objective, metric in (("regression", lambda d: np.sqrt(np.mean(d * d))), ("regression_l1", lambda d:
                              np.mean(np.abs(d))),
                              ("huber", lambda d: np.mean(np.where(np.abs(d) <= 0.9, 0.5 * d * d,
                                                                   0.9 * (np.abs(d) - 0.45)))),
                              ("quantile", lambda d: np.mean(np.where(d <= 0, -0.9 * d, 0.1 * d)))):
        m = mpiboost.train({"algo": "gbdt", "rounds": 8, "objective": objective}, X, y)
        assert m.summary_["train_metric"] == pytest.approx(metric(m.predict(X) - y), rel=1e-12), objective
        assert m.summary_["metric"] == {"regression": "rmse", "regression_l1": "l1"}.get(objective, objective)


# ---------------------------------------------------------------------- the same on any number of ranks
@pytest.mark.parametrize("objective", ["regression", "regression_l1", "quantile"])
def test_the_model_is_the_same_on_1_to_4_ranks(objective, tmp_path):
    X, y = _data(n=1200, seed=9)
    w = np.random.default_rng(9).uniform(0.5, 2.0, len(y))
    write_dataset(tmp_path / "r.h5", X.astype(np.float32), y, weight=w)
    preds = []
    for n in (1, 2, 3, 4):
        out = tmp_path / f"m{n}.h5"
        proc = run_cli(["train", "--algo", "gbdt", "--objective", objective, "--data", str(tmp_path / "r.h5"),
                        "--rounds", "12", "--bagging-fraction", "0.7", "--valid-fraction", "0.2", "--model",
                        str(out), "--quiet"], n=n)
        assert proc.returncode == 0, proc.stderr
        preds.append(Model.load(out).predict(X))
    for p in preds[1:]:
        np.testing.assert_array_equal(p, preds[0])


# ----------------------------------------------------------------------------- the command line
def _csv(path, n=400, distinct=True):
    rng = np.random.default_rng(1)
    X = rng.standard_normal((n, 3))
    y = 2 * X[:, 0] + rng.normal(0, 0.5, n)
    with open(path, "w") as f:
        f.write("price,a,b,c\n")
        for i in range(n):
            f.write((f"{y[i]:.4f}" if distinct else f"{int(i % 3)}") + "," + ",".join(f"{v:.5f}" for v in X[i]) + "\n")
    return X, np.round(y, 4)


def test_convert_train_evaluate_predict(tmp_path):
    X, y = _csv(tmp_path / "p.csv")
    # a numeric label of many values is not taken for classes: exit 2, naming --task regression
    proc = run_cli(["convert", str(tmp_path / "p.csv"), "--format", "csv", "--out", str(tmp_path / "c.h5")])
    assert proc.returncode == 2 and "--task regression" in proc.stderr and not (tmp_path / "c.h5").exists()
    proc = run_cli(["convert", str(tmp_path / "p.csv"), "--format", "csv", "--out", str(tmp_path / "r.h5"),
                    "--task", "regression", "--label-column", "price"])
    assert proc.returncode == 0, proc.stderr
    assert "numeric targets" in proc.stdout
    assert inspect(tmp_path / "r.h5").is_target
    # a classifier refuses the targets, naming the regression objective
    proc = run_cli(["train", "--algo", "adaboost", "--data", str(tmp_path / "r.h5"), "--rounds", "3", "--model",
                    str(tmp_path / "x.h5")])
    assert proc.returncode == 2 and "--objective regression" in proc.stderr
    proc = run_cli(["train", "--algo", "gbdt", "--objective", "regression", "--data", str(tmp_path / "r.h5"),
                    "--rounds", "200", "--valid-fraction", "0.25", "--early-stop", "10", "--model",
                    str(tmp_path / "m.h5"), "--log-every", "50"])
    assert proc.returncode == 0, proc.stderr
    assert "train RMSE" in proc.stdout and "valid RMSE" in proc.stdout
    m = Model.load(tmp_path / "m.h5")
    assert m.is_regression and m.n_rounds < 200  # stopped early
    proc = run_cli(["evaluate", "--model", str(tmp_path / "m.h5"), "--data", str(tmp_path / "r.h5")])
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    p = m.predict(X.astype(np.float32))
    assert report["rmse"] == pytest.approx(np.sqrt(np.mean((p - y) ** 2)), rel=1e-9)
    assert report["mae"] == pytest.approx(np.mean(np.abs(p - y)), rel=1e-9)
    assert report["r2"] == pytest.approx(1 - np.mean((p - y) ** 2) / np.var(y), rel=1e-9)
    assert run_cli(["predict", "--model", str(tmp_path / "m.h5"), "--data", str(tmp_path / "r.h5"), "--out",
                    str(tmp_path / "pred.csv")]).returncode == 0
    np.testing.assert_allclose(np.loadtxt(tmp_path / "pred.csv", skiprows=1), p, rtol=0, atol=1e-12)
    proc = run_cli(["predict", "--model", str(tmp_path / "m.h5"), "--data", str(tmp_path / "r.h5"), "--proba",
                    "--out", str(tmp_path / "q.csv")])
    assert proc.returncode == 2 and "regression" in proc.stderr
    # the recipe keeps the task: a test file converted by it holds targets too
    proc = run_cli(["convert", str(tmp_path / "p.csv"), "--format", "csv", "--out", str(tmp_path / "t.h5"),
                    "--recipe", str(tmp_path / "r.h5")])
    assert proc.returncode == 0 and inspect(tmp_path / "t.h5").is_target, proc.stderr


@pytest.mark.parametrize("extra,message", [
    (["--objective", "regression", "--alpha", "0.5"], "--alpha applies"),
    (["--objective", "quantile", "--alpha", "1.5"], "(0, 1)"),
    (["--objective", "regression", "--valid-fraction", "0.2", "--valid-metric", "auc"], "regression run takes"),
    (["--objective", "regression", "--valid-fraction", "0.2", "--valid-metric", "rmse", "--best-round"], None),
])
def test_bad_options_exit_2(tmp_path, extra, message):
    X, y = _data(n=300)
    write_dataset(tmp_path / "r.h5", X.astype(np.float32), y)
    proc = run_cli(["train", "--algo", "gbdt", "--data", str(tmp_path / "r.h5"), "--rounds", "5", "--model",
                    str(tmp_path / "m.h5"), "--quiet", *extra])
    if message is None:
        assert proc.returncode == 0, proc.stderr
    else:
        assert proc.returncode == 2 and message in proc.stderr, proc.stderr


def test_targets_too_large_to_square_exit_2(tmp_path):
    X, y = _data(n=300)
    y[7] = 1e200  # finite, but its square (RMSE, R^2) and residuals would not be
    write_dataset(tmp_path / "r.h5", X.astype(np.float32), y)
    proc = run_cli(["train", "--algo", "gbdt", "--objective", "regression", "--data", str(tmp_path / "r.h5"),
                    "--rounds", "3", "--model", str(tmp_path / "m.h5")])
    assert proc.returncode == 2 and "row 7" in proc.stderr and "scale the targets" in proc.stderr, proc.stderr
    assert not (tmp_path / "m.h5").exists()


def test_a_classifier_metric_on_a_regression_and_the_reverse_exit_2(tmp_path):
    X, y = _data(n=300)
    write_dataset(tmp_path / "c.h5", X.astype(np.float32), (y > 0).astype(np.int8))
    proc = run_cli(["train", "--algo", "gbdt", "--data", str(tmp_path / "c.h5"), "--rounds", "3", "--model",
                    str(tmp_path / "m.h5"), "--valid-fraction", "0.2", "--valid-metric", "rmse"])
    assert proc.returncode == 2 and "numeric targets" in proc.stderr
    # integer labels train a regression too: their values are the targets
    m = mpiboost.train({"algo": "gbdt", "rounds": 3, "objective": "regression", "min-data-in-leaf": 300}, X,
                       (y > 0).astype(int))
    np.testing.assert_allclose(m.predict(X[:2]), np.mean(y > 0), atol=1e-12)


# ------------------------------------------------------------------------------------ the API
def test_the_scikit_learn_regressor():
    from sklearn.utils.estimator_checks import check_estimator

    from mpiboost.sklearn import GBDTClassifier, MpiboostRegressor

    failed = [r for r in check_estimator(MpiboostRegressor(rounds=20), on_fail=None) if r["status"] == "failed"]
    assert not failed, [(r["check_name"], str(r["exception"])[:200]) for r in failed]
    X, y = _data(n=1000, seed=11)
    reg = MpiboostRegressor(rounds=50, objective="huber", alpha=1.0).fit(X[:800], y[:800],
                                                                          eval_set=[(X[800:], y[800:])])
    api = mpiboost.train({"algo": "gbdt", "rounds": 50, "objective": "huber", "alpha": 1.0}, X[:800], y[:800],
                         valid=(X[800:], y[800:]))
    np.testing.assert_array_equal(reg.predict(X), api.predict(X))
    assert reg.score(X[800:], y[800:]) > 0.5
    with pytest.raises(ValueError, match="MpiboostRegressor"):
        GBDTClassifier(objective="regression").fit(X, y)
    with pytest.raises(ValueError, match="regressor fits"):
        MpiboostRegressor(objective="binary").fit(X, y)


def test_defaults_come_near_lightgbm_on_held_out_rows():
    """Squared error at LightGBM's defaults (100 rounds, 31 leaves, learning rate 0.1): the held-out RMSE within
    2% of LightGBM's on the same rows."""
    import lightgbm as lgb

    X, y = _data(n=6000, seed=12)
    tr, te = slice(0, 4000), slice(4000, None)
    ours = mpiboost.train({"algo": "gbdt", "rounds": 100, "objective": "regression"}, X[tr], y[tr]).predict(X[te])
    theirs = lgb.train({"objective": "regression", "verbose": -1}, lgb.Dataset(X[tr], y[tr]), 100).predict(X[te])
    rmse = lambda p: float(np.sqrt(np.mean((p - y[te]) ** 2)))  # noqa: E731
    assert rmse(ours) < 1.02 * rmse(theirs), (rmse(ours), rmse(theirs))
