"""Native categorical splits: features declared categorical (a data file's ``categorical`` attribute,
``convert --categorical-encoding native``, the API's ``categorical_feature=`` or a DataFrame's categories)
are split by gbdt's trees of one output many categories against the rest, with LightGBM's rules.

Twins: the split kernel against a plain reference (tests/test_tree_kernels.py); here LightGBM given our bins
grows the same trees; the LightGBM export predicts the same scores (unseen codes and NaN included) and the
same ``pred_contrib``; the contributions are the brute-force Shapley values; the model is the same on any
number of ranks, over either histogram exchange. Bad inputs exit 2 naming the file, row and feature.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

import mpiboost
from mpi_util import run_cli
from mpiboost.data.format import write_dataset
from mpiboost.errors import CollectiveError
from mpiboost.model import Model


def _data(n=4000, k=12, seed=1, missing=True, regression=True):
    rng = np.random.default_rng(seed)
    c = rng.integers(0, k, n).astype(np.float64)
    x = rng.normal(size=(n, 2))
    effect = rng.normal(size=k) * 2
    signal = effect[c.astype(int)] + x[:, 0]
    if missing:
        c[::37] = np.nan
        x[::41, 1] = np.nan
    noise = rng.standard_t(3, size=n) * 0.5
    y = (signal + noise).astype(np.float32).astype(np.float64) if regression else (signal + noise > 0).astype(int)
    return np.column_stack([c, x]), y


@pytest.mark.parametrize("k", [3, 4, 12, 40])
def test_categorical_trees_are_lightgbms_on_the_same_bins(k):
    """LightGBM given our bins, feature 0 declared categorical and its defaults (max_cat_to_onehot 4, counting
    the missing bin; max_cat_threshold 32, cat_smooth 10, cat_l2 10 in the gain and the children's leaves,
    min_data_per_group 100) grows the same trees: 3 categories split one against the rest, 4 and more many
    against many. Squared error, so LightGBM's row counts (from hessians) are the exact counts."""
    import lightgbm as lgb

    X, y = _data(k=k)
    rounds = 5
    model = mpiboost.train({"algo": "gbdt", "rounds": rounds, "objective": "regression"}, X, y,
                           categorical_feature=[0])
    assert sum(t.has_categorical for t in model.trees) >= 3
    n, d = X.shape
    cols = np.empty((d, n), dtype=np.uint8)
    model.bins.transform(X, out=cols.T)
    Xb = np.where(cols.T == 255, np.nan, cols.T.astype(np.float64))  # the missing bin as NaN, as LightGBM's
    params = dict(objective="regression", num_leaves=31, min_data_in_leaf=20, min_sum_hessian_in_leaf=1e-3,
                  lambda_l2=0.0, learning_rate=0.1, max_bin=1024, min_data_in_bin=1, verbose=-1,
                  feature_pre_filter=False, deterministic=True, num_threads=1)
    booster = lgb.train(params, lgb.Dataset(Xb, label=y, params=params, categorical_feature=[0]),
                        num_boost_round=rounds)
    theirs = booster.predict(Xb, raw_score=True)
    ours = model.decision_binned(cols)
    assert np.abs(ours - theirs).max() < 1e-6 * max(1.0, np.abs(theirs).max())
    dumped = booster.dump_model()["tree_info"]
    assert [t["num_leaves"] for t in dumped] == [t.n_leaves for t in model.trees]
    assert sum(json.dumps(t).count('"=="') for t in dumped) == sum(
        int(np.count_nonzero((t.feature >= 0) & (t.bin < 0))) for t in model.trees)


def test_categorical_split_finds_what_codes_in_order_cannot():
    """Every other category raises the label: no threshold on the codes in order separates them, the
    categorical split does (each tree's root splits the categories in two), so the model is more accurate
    than the same trees on the codes as numbers."""
    rng = np.random.default_rng(0)
    n, k = 6000, 10
    c = rng.integers(0, k, n)
    x = rng.normal(size=n)
    y = ((c % 2) * 2 - 1 + 0.3 * x + rng.normal(size=n) > 0).astype(int)
    X = np.column_stack([c, x]).astype(np.float64)
    Xt, yt = X[4000:], y[4000:]
    params = {"algo": "gbdt", "rounds": 10, "max-leaves": 4}
    native = mpiboost.train(params, X[:4000], y[:4000], categorical_feature=[0])
    codes = mpiboost.train(params, X[:4000], y[:4000])
    root = native.trees[1]
    assert root.bin[0] == -1 and root.left_bins(0) in ([0, 2, 4, 6, 8], [1, 3, 5, 7, 9])
    err_native, err_codes = np.mean(native.predict(Xt) != yt), np.mean(codes.predict(Xt) != yt)
    assert err_native < err_codes - 0.05, (err_native, err_codes)


def test_export_and_contributions_are_lightgbms():
    """The LightGBM export (categorical decisions, the codes going left as a bitset) predicts our scores bit for
    bit, unseen codes (13, 200, -1) and NaN going right as ours do, a fraction to its integer part's side (as
    LightGBM casts a category); its pred_contrib is ours to
    1e-9, and ours are the brute-force Shapley values of a small model."""
    import lightgbm as lgb

    from mpiboost.export import to_lightgbm
    from test_explain import _brute_shapley

    X, y = _data(regression=False)
    model = mpiboost.train({"algo": "gbdt", "rounds": 12}, X, y, categorical_feature=[0])
    booster = lgb.Booster(model_str=to_lightgbm(model))
    Xt = X[:400].copy()
    Xt[:7, 0] = [13, 200, -1, 2.5, np.nan, 3, 0.4]
    np.testing.assert_allclose(booster.predict(Xt, raw_score=True), model.decision_function(Xt), rtol=0, atol=1e-12)
    np.testing.assert_allclose(booster.predict(Xt, pred_contrib=True), model.contributions(Xt), rtol=0, atol=1e-9)
    small = mpiboost.train({"algo": "gbdt", "rounds": 3, "max-leaves": 6, "min-data-per-group": 20}, X[:800],
                           y[:800], categorical_feature=[0])
    assert any(t.has_categorical for t in small.trees)
    for i in range(6):
        np.testing.assert_allclose(small.contributions(Xt[i:i + 1])[0], _brute_shapley(small, Xt[i]),
                                   rtol=0, atol=1e-12)


def test_the_model_file_keeps_the_splits(tmp_path):
    """Format 5 keeps each node's bins going left and the categorical features: the loaded model predicts the
    same bits; the canonical JSON lists the bins; a file whose categorical split is on a numeric feature, sends
    a bin beyond the feature's categories left, or whose mask of categorical features is the wrong size is
    refused (exit 2)."""
    import h5py

    X, y = _data(regression=False)
    model = mpiboost.train({"algo": "gbdt", "rounds": 6}, X, y, categorical_feature=[0])
    model.save(tmp_path / "m.h5")
    loaded = Model.load(tmp_path / "m.h5")
    np.testing.assert_array_equal(loaded.decision_function(X), model.decision_function(X))
    doc = json.loads(loaded.to_json())
    assert doc["categorical_features"] == [0] and any(t.get("left_bins") for t in doc["trees"])
    import shutil

    for name, edit, word in (
            ("nomask", lambda f: f.__delitem__("bins/categorical"), "not on a categorical feature"),
            ("beyond", lambda f: f["trees/cat"].__setitem__(int(np.flatnonzero(f["trees/cat"][()])[0]),
                                                               np.uint64(1) << np.uint64(63)), "beyond feature 0's"),
            ("mask", lambda f: (f.__delitem__("bins/categorical"),
                                f["bins"].create_dataset("categorical", data=np.ones(2, np.uint8))),
             "bins/categorical")):
        bad = tmp_path / f"{name}.h5"
        shutil.copy(tmp_path / "m.h5", bad)
        with h5py.File(bad, "r+") as f:
            edit(f)
        proc = run_cli(["predict", "--model", str(bad), "--data", str(bad), "--out", str(tmp_path / "p.csv")])
        assert proc.returncode == 2 and word in proc.stderr, (name, proc.stderr)


def test_the_same_model_on_any_number_of_ranks(tmp_path):
    """A data file's categorical attribute, 1, 2 and 3 ranks, the center's histograms and reduce-scatter (the
    best categorical split agreed between feature blocks): one model."""
    X, y = _data(n=3000, k=20, regression=False)
    write_dataset(tmp_path / "c.h5", X.astype(np.float32), y, categorical={0: 20})
    exports = set()
    for n, exchange in ((1, "center"), (2, "center"), (3, "reduce-scatter")):
        model = tmp_path / f"m{n}.h5"
        proc = run_cli(["train", "--algo", "gbdt", "--data", str(tmp_path / "c.h5"), "--rounds", "6",
                        "--tree-exchange", exchange, "--model", str(model), "--quiet"], n=n)
        assert proc.returncode == 0, proc.stderr
        doc = json.loads(run_cli(["export", "--model", str(model)]).stdout)
        exports.add(json.dumps([doc["trees"], doc["ensemble"]]))  # the header names the exchange
    assert len(exports) == 1
    assert any(t.has_categorical for t in Model.load(tmp_path / "m1.h5").trees)


def test_bad_categorical_inputs_exit_2(tmp_path):
    """A value that is no category code, validation rows of other categories, an attribute naming a feature
    that is not there: exit 2 naming the file (and row and feature) before training."""
    X, y = _data(n=600, regression=False)
    write_dataset(tmp_path / "ok.h5", X, y, categorical={0: 12})
    bad = X.copy()
    bad[17, 0] = 12.0
    write_dataset(tmp_path / "bad.h5", bad, y, categorical={0: 12})
    write_dataset(tmp_path / "other.h5", X, y, categorical={0: 13})
    base = ["train", "--algo", "gbdt", "--rounds", "3", "--quiet"]
    proc = run_cli([*base, "--data", str(tmp_path / "bad.h5"), "--model", str(tmp_path / "a.h5")])
    assert proc.returncode == 2 and "bad.h5: dataset 'X' row 17, feature 0: value 12.0 is not a category code" \
        in proc.stderr, proc.stderr
    proc = run_cli([*base, "--data", str(tmp_path / "ok.h5"), "--valid", str(tmp_path / "other.h5"), "--model",
                    str(tmp_path / "b.h5")])
    assert proc.returncode == 2 and "other.h5: column 0 has 13 categories but" in proc.stderr, proc.stderr
    import h5py

    with h5py.File(tmp_path / "ok.h5", "r+") as f:
        f.attrs["categorical"] = json.dumps({"7": 3})
    proc = run_cli([*base, "--data", str(tmp_path / "ok.h5"), "--model", str(tmp_path / "c.h5")])
    assert proc.returncode == 2 and "names feature 7, outside 0..2" in proc.stderr, proc.stderr
    assert not any((tmp_path / f).exists() for f in ("a.h5", "b.h5", "c.h5"))
    with pytest.raises(CollectiveError, match="feature 1 holds"):
        mpiboost.train({"algo": "gbdt", "rounds": 2}, X, y, categorical_feature=[1])


def test_dataframe_categories_and_csv_native_encoding(tmp_path):
    """A DataFrame's category column is categorical without being named; convert's native encoding writes
    one code feature and the attribute, the same from both CSV parsers, and the recipe keeps the encoding."""
    import os

    import pandas as pd

    rng = np.random.default_rng(2)
    n = 2000
    colors = np.array(["red", "green", "blue", "black", "white", "pink", "grey", "cyan"])
    c = rng.integers(0, 8, n)
    x = rng.normal(size=n)
    y = ((c % 2) * 2 - 1 + x + rng.normal(size=n) > 0).astype(int)
    df = pd.DataFrame({"color": pd.Categorical(colors[c]), "x": x})
    model = mpiboost.train({"algo": "gbdt", "rounds": 5}, df, y)
    assert any(t.has_categorical for t in model.trees) and model.bins.categories == {0: 8}
    path = tmp_path / "d.csv"
    with open(path, "w") as f:
        f.write("y,color,x\n" + "".join(f"{y[i]},{colors[c[i]] if i % 97 else ''},{x[i]:.5f}\n" for i in range(n)))
    outs = {}
    for parser in ("python", "auto"):
        outs[parser] = tmp_path / f"{parser}.h5"
        proc = run_cli(["convert", "--format", "csv", "--categorical", "color", "--categorical-encoding", "native",
                        str(path), "--out", str(outs[parser])], env={**os.environ, "MPIBOOST_CSV_PARSER": parser})
        assert proc.returncode == 0, proc.stderr
    import h5py

    with h5py.File(outs["python"]) as a, h5py.File(outs["auto"]) as b:
        assert a.attrs["categorical"] == b.attrs["categorical"] == '{"0": 8}'
        np.testing.assert_array_equal(a["X"][()], b["X"][()])
        assert list(a.attrs["feature_names"]) == ["color", "x"] and np.isnan(a["X"][0, 0])
        codes = a["X"][:, 0]
    given = np.arange(n) % 97 != 0  # every 97th row's color is missing (NaN)
    assert np.isnan(codes[~given]).all()
    np.testing.assert_array_equal(codes[given], np.searchsorted(np.sort(colors), colors[c[given]]))
    proc = run_cli(["convert", "--format", "csv", "--recipe", str(outs["python"]), str(path), "--out",
                    str(tmp_path / "again.h5")])
    assert proc.returncode == 0, proc.stderr
    with h5py.File(tmp_path / "again.h5") as f:
        assert f.attrs["categorical"] == '{"0": 8}'


def test_the_estimators_split_a_dataframes_categories():
    """GBDTClassifier and MpiboostRegressor fitted on a DataFrame with a category column split it natively and
    predict a DataFrame by its category names; a mapping gives the number of categories, checked."""
    import pandas as pd

    from mpiboost.sklearn import GBDTClassifier, MpiboostRegressor

    rng = np.random.default_rng(0)
    n = 3000
    names = np.array(list("abcdefghij"))
    c = rng.integers(0, 10, n)
    x = rng.normal(size=n)
    df = pd.DataFrame({"col": pd.Categorical(names[c]), "x": x})
    y = ((c % 2) * 2 - 1 + 0.3 * x + rng.normal(size=n) > 0).astype(int)
    clf = GBDTClassifier(rounds=10, max_leaves=4).fit(df, y)
    reg = MpiboostRegressor(rounds=10).fit(df, (c % 2) + x)
    for est in (clf, reg):
        assert any(t.has_categorical for t in est.model_.trees)
    assert np.mean(clf.predict(df.iloc[::-1]) == y[::-1]) > 0.8  # by name, in any row order
    X = np.column_stack([c, x])
    m = mpiboost.train({"algo": "gbdt", "rounds": 3}, X, y, categorical_feature={0: 12})
    assert m.bins.categories == {0: 12}
    with pytest.raises(CollectiveError, match="is not its number of categories"):
        mpiboost.train({"algo": "gbdt", "rounds": 3}, X, y, categorical_feature={0: 5})
