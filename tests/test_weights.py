"""Sample weights: a 'weight' dataset in the data files, or the API's weight=.

The Newton boosters (gbdt, softmax, adaboost --loss logistic) weigh each row's gradient and hessian; AdaBoost
and SAMME start from the weights' distribution. With
integer weights the model is the model of the rows repeated that many times (the twin: the same trees,
leaf values and scores bit for bit, where the bins and the row-count rules cannot tell them apart); the
start is the weighted class share; the model is the same on any number of ranks (the weights' sums are
exact). Bad weights, and algorithms that do not take them, exit 2 before any work.
"""
from __future__ import annotations

import numpy as np
import pytest

import mpiboost
from mpi_util import run_cli
from mpiboost.data.format import write_dataset
from mpiboost.model import Model


def _data(n=600, K=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 20, size=(n, 4)).astype(float)  # few distinct values: repeated rows bin alike
    s = X[:, 0] + 0.3 * X[:, 1] + rng.normal(0, 3, n)
    y = np.digitize(s, np.quantile(s, np.linspace(0, 1, K + 1)[1:-1]))
    return X, y, rng.integers(1, 4, size=n).astype(float)


@pytest.mark.parametrize("algo,K", [("gbdt", 2), ("gbdt", 3), ("adaboost", 2)])
def test_integer_weights_are_repeated_rows(algo, K):
    X, y, w = _data(K=K)
    params = {"algo": algo, "rounds": 10, "grad-bins": 0, "min-data-in-leaf": 0, "min-child-weight": 0}
    if algo == "adaboost":
        params.update({"loss": "logistic", "weak-learner": "tree"})
    weighted = mpiboost.train(params, X, y, weight=w)
    idx = np.repeat(np.arange(len(y)), w.astype(int))
    repeated = mpiboost.train(params, X[idx], y[idx])
    for a, b in zip(weighted.trees, repeated.trees):
        for name in ("feature", "bin", "missing_left", "left", "right", "value"):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
        np.testing.assert_array_equal(a.weight, b.weight)  # the hessians covered, as the repeated rows'
    np.testing.assert_array_equal(weighted.decision_function(X), repeated.decision_function(X))
    ones = mpiboost.train(params, X, y, weight=np.ones(len(y)))
    plain = mpiboost.train(params, X, y)
    np.testing.assert_array_equal(ones.decision_function(X), plain.decision_function(X))


def test_every_batch_algorithm_states_its_weight_rule():
    """A new algorithm declares how it takes sample weights (docs/algorithms.md prints it), or says it does not."""
    from mpiboost.boost import ALGORITHMS

    assert all(cls.weight_rule for cls in ALGORITHMS.values()), [n for n, c in ALGORITHMS.items() if not c.weight_rule]


def test_the_start_is_the_weighted_class_share():
    X, y, _ = _data()
    w = np.where(y == 1, 3.0, 1.0)
    m = mpiboost.train({"algo": "gbdt", "rounds": 1, "learning-rate": 1e-9}, X, y, weight=w)
    share = (w * y).sum() / w.sum()
    np.testing.assert_allclose(m.decision_function(X[:3]), np.log(share / (1 - share)), rtol=1e-6)


def test_a_weight_dataset_trains_and_bad_weights_exit_2(tmp_path):
    X, y, w = _data()
    write_dataset(tmp_path / "w.h5", X.astype(np.float32), y, weight=w)
    base = ["train", "--data", str(tmp_path / "w.h5"), "--rounds", "5", "--quiet"]
    proc = run_cli([*base, "--algo", "gbdt", "--model", str(tmp_path / "m.h5")])
    assert proc.returncode == 0, proc.stderr
    api = mpiboost.train({"algo": "gbdt", "rounds": 5}, X.astype(np.float32).astype(float), y, weight=w)
    np.testing.assert_array_equal(Model.load(tmp_path / "m.h5").decision_function(X), api.decision_function(X))
    proc = run_cli([*base, "--algo", "agnostic-batch", "--model", str(tmp_path / "s.h5")])
    assert proc.returncode == 0, proc.stderr  # every batch algorithm takes weights
    proc = run_cli(["train", "--algo", "online-olm", "--data", str(tmp_path / "w.h5"), "--model", str(tmp_path / "o.h5")])
    assert proc.returncode == 2 and "w.h5 has sample weights" in proc.stderr, proc.stderr  # not silently dropped
    bad = w.copy()
    bad[7] = -1.0
    write_dataset(tmp_path / "neg.h5", X.astype(np.float32), y, weight=bad)
    proc = run_cli(["train", "--algo", "gbdt", "--data", str(tmp_path / "neg.h5"), "--rounds", "5", "--model",
                    str(tmp_path / "n.h5")])
    assert proc.returncode == 2 and "neg.h5: dataset 'weight' row 7: -1.0 is not a weight" in proc.stderr
    write_dataset(tmp_path / "plain.h5", X.astype(np.float32), y)
    proc = run_cli(["train", "--algo", "gbdt", "--data", str(tmp_path / "w.h5"), str(tmp_path / "plain.h5"),
                    "--rounds", "5", "--model", str(tmp_path / "x.h5")])
    assert proc.returncode == 2 and "plain.h5 has no 'weight' dataset while" in proc.stderr, proc.stderr
    assert not any((tmp_path / f).exists() for f in ("o.h5", "n.h5", "x.h5"))


def test_the_same_model_on_any_number_of_ranks(tmp_path):
    """Each rank's weights in its block of rows: the exact sums make the shift, the start and the trees the
    same as on one rank."""
    X, y, _ = _data(n=900)
    w = np.random.default_rng(5).uniform(0.1, 3.0, size=len(y))  # not integers: rounded per row
    write_dataset(tmp_path / "w.h5", X.astype(np.float32), y, weight=w)
    Xt, yt, dom, wt = _transfer_data()
    write_dataset(tmp_path / "t.h5", Xt.astype(np.float32), yt, dom, weight=wt * 0.37)
    for algo, data, sizes, extra in (("gbdt", "w.h5", (1, 2, 3), ["--bagging-fraction", "0.7"]),
                                     ("smoothboost", "w.h5", (1, 3), ["--noise-check", "off", "--epsilon", "0.3"]),
                                     ("msdtra", "t.h5", (1, 3), ["--target-domain", "0"]),
                                     ("is-multitask", "t.h5", (1, 3), ["--start-rounds", "5"]),
                                     ("multiboost", "t.h5", (1, 3), [])):
        exports = set()
        for n in sizes:
            model = tmp_path / f"{algo}{n}.h5"
            proc = run_cli(["train", "--algo", algo, "--data", str(tmp_path / data), "--rounds", "6", *extra,
                            "--model", str(model), "--quiet"], n=n)
            assert proc.returncode == 0, proc.stderr
            exports.add(run_cli(["export", "--model", str(model)]).stdout)
        assert len(exports) == 1, algo


def test_the_estimators_fit_takes_sample_weight_where_the_algorithm_does():
    import inspect

    from mpiboost.sklearn import AdaBoostClassifier, GBDTClassifier, MpiboostClassifier, SoftmaxClassifier

    X, y, w = _data()
    est = GBDTClassifier(rounds=6).fit(X, y, sample_weight=w)
    api = mpiboost.train({"algo": "gbdt", "rounds": 6}, X, y, weight=w)
    assert est.model_.to_json() == api.to_json()
    for cls in (GBDTClassifier, SoftmaxClassifier, MpiboostClassifier):
        assert "sample_weight" in inspect.signature(cls.fit).parameters
    assert "sample_weight" in inspect.signature(AdaBoostClassifier.fit).parameters
    with pytest.raises(ValueError, match="(?i)negative"):
        GBDTClassifier(rounds=3).fit(X, y, sample_weight=-w)


@pytest.mark.parametrize("algo,K", [("adaboost", 2), ("samme", 3)])
def test_the_reweighting_algorithms_start_from_the_weights(algo, K):
    """AdaBoost's and SAMME's first distribution is the weights' (exact shares). Weights of 1, 2 and 4 give
    the repeated rows' stumps and coefficients bit for bit (a power of two scales a row's weight exactly
    through every update); other integers the same stumps, coefficients to rounding."""
    X, y, w = _data(K=K)
    params = {"algo": algo, "rounds": 12, "weak-learner": "stump"}
    plain = mpiboost.train(params, X, y)
    for weights, exact in ((2.0 ** (w - 1), True), (w, False)):  # 1, 2, 4; then 1, 2, 3
        weighted = mpiboost.train(params, X, y, weight=weights)
        idx = np.repeat(np.arange(len(y)), weights.astype(int))
        repeated = mpiboost.train(params, X[idx], y[idx])
        for name in ("feature", "bin", "left", "right", "missing_left"):
            np.testing.assert_array_equal(getattr(weighted, name), getattr(repeated, name))
        if exact:
            np.testing.assert_array_equal(weighted.coef, repeated.coef)
        else:
            np.testing.assert_allclose(weighted.coef, repeated.coef, rtol=1e-12)
        assert not np.array_equal(weighted.coef, plain.coef)


@pytest.mark.parametrize("store", ["cells", "rows"])
def test_smoothboost_weighted_is_the_repeated_rows(store):
    """SmoothBoost starts from the weights' distribution and caps each row at 1/epsilon times its share of the
    weights: integer weights give the repeated rows' stumps (whose caps add up to the weighted row's), with
    clipping in most rounds."""
    X, y, w = _data()
    params = {"algo": "smoothboost", "rounds": 40, "weak-learner": "stump", "noise-check": "off", "epsilon": 0.5,
              "weight-store": store}
    plain = mpiboost.train(params, X, y)
    for weights in (2.0 ** (w - 1), w):
        weighted = mpiboost.train(params, X, y, weight=weights)
        idx = np.repeat(np.arange(len(y)), weights.astype(int))
        repeated = mpiboost.train(params, X[idx], y[idx])
        for name in ("feature", "bin", "left", "right", "missing_left"):
            np.testing.assert_array_equal(getattr(weighted, name), getattr(repeated, name))
        assert not (np.array_equal(weighted.feature, plain.feature) and np.array_equal(weighted.bin, plain.bin))


def _transfer_data(n=600):
    rng = np.random.default_rng(0)
    X = rng.integers(0, 20, size=(n, 4)).astype(float)
    dom = np.repeat([0, 1, 2], [n // 6, 5 * n // 12, n - n // 6 - 5 * n // 12])  # 0: the target
    s = X[:, 0] + 0.3 * X[:, 1] * (1 + dom) + rng.normal(0, 3, n)
    return X, np.where(s > np.median(s), 1, -1), dom, rng.integers(1, 4, n).astype(float)


@pytest.mark.parametrize("algo,split", [("msdtra", "paper"), ("mstra", "paper"), ("tradaboost", "paper"),
                                        ("dtradaboost", "paper"), ("mstra", "balanced"), ("tradaboost", "0.3")])
def test_transfer_starts_from_the_weights(algo, split):
    """The transfer family's first distribution is the weights' (each domain's start mass spread by them): the
    first round's stumps are the repeated rows'. Later rounds need not be, since the papers' factors count rows
    (TrAdaBoost's source factor from the source rows, the error floor from the target rows). --initial-split
    shares the start by the domains' weight sums, as the repeated rows' counts. Weights of one constant are
    the unweighted model; others change it."""
    X, y, dom, w = _transfer_data()
    # the source screen's folds split rows, which the repeated rows are not: the algorithm's own rule here
    params = {"algo": algo, "rounds": 1, "weak-learner": "stump", "source-trust": "algorithm", "initial-split": split}
    weighted = mpiboost.train(params, X, y, dom, weight=w)
    idx = np.repeat(np.arange(len(y)), w.astype(int))
    repeated = mpiboost.train(params, X[idx], y[idx], dom[idx])
    for name in ("feature", "bin", "left", "right", "missing_left"):
        np.testing.assert_array_equal(getattr(weighted, name), getattr(repeated, name))
    if algo != "msdtra":  # MSDTrA's coefficient floors the error at half a target row, a count
        np.testing.assert_allclose(weighted.coef, repeated.coef, rtol=1e-12)
    params = {"algo": algo, "rounds": 10, "weak-learner": "stump"}
    plain = mpiboost.train(params, X, y, dom)
    assert mpiboost.train(params, X, y, dom, weight=np.full(len(y), 3.0)).to_json() == plain.to_json()
    assert mpiboost.train(params, X, y, dom, weight=w).to_json() != plain.to_json()


@pytest.mark.parametrize("start", ["zero", "pooled"])
def test_is_multitask_weighs_each_rows_cost(start):
    """IS multi-task: each row's cost counts its weight times in its task's risk (and the pooled start's AdaBoost
    starts from the weights): weights of 1, 2 and 4 give the repeated rows' steps bit for bit; weights of one
    power of two the unweighted model (other constants too, up to the rounding of the stumps' fixed-point
    weights); other weights another model."""
    X, y, dom, w = _transfer_data(900)
    w = 2.0 ** (w - 1)
    params = {"algo": "is-multitask", "rounds": 15, "weak-learner": "stump", "start": start, "lam": 0.5,
              "learning-rate": 1.0, "start-rounds": 5}
    weighted = mpiboost.train(params, X, y, dom, weight=w)
    idx = np.repeat(np.arange(len(y)), w.astype(int))
    repeated = mpiboost.train(params, X[idx], y[idx], dom[idx])
    for name in ("feature", "bin", "left", "right", "missing_left", "coef", "domain"):
        np.testing.assert_array_equal(getattr(weighted, name), getattr(repeated, name))
    plain = mpiboost.train(params, X, y, dom)
    assert mpiboost.train(params, X, y, dom, weight=np.full(len(y), 4.0)).to_json() == plain.to_json()
    assert not np.array_equal(weighted.coef, plain.coef)


@pytest.mark.parametrize("algo", ["multiboost", "fedmultiboost"])
@pytest.mark.parametrize("learner", ["stump", "tree"])
def test_multiboost_weights_scale_free_and_used(algo, learner):
    """MultiBoost and FedMultiBoost: weights of one power of two are the unweighted model bit for bit (each
    domain's weighted mean loss does not see a common scale); other weights change it (their twins against
    numpy and AdaBoost are in test_multiboost)."""
    X, y, dom, w = _transfer_data()
    params = {"algo": algo, "rounds": 6, "weak-learner": learner}
    plain = mpiboost.train(params, X, y, dom)
    assert mpiboost.train(params, X, y, dom, weight=np.full(len(y), 4.0)).to_json() == plain.to_json()
    assert mpiboost.train(params, X, y, dom, weight=w).to_json() != plain.to_json()


def test_agnostic_batch_relabelled_masses_are_weighted():
    """agnostic-batch: each row's relabelled mass is P_i times its share of the weights, so weights of 1, 2 and 4
    give the repeated rows' class stumps (fractional relabelling); with class trees (whose first round is all
    ties) weights of one power of two give the unweighted model and others another; the random relabelling
    draws by the weights."""
    X, y, w = _data(K=3)
    w = 2.0 ** (w - 1)
    idx = np.repeat(np.arange(len(y)), w.astype(int))
    params = {"algo": "agnostic-batch", "rounds": 15, "weak-learner": "stump"}
    weighted = mpiboost.train(params, X, y, weight=w)
    repeated = mpiboost.train(params, X[idx], y[idx])
    for name in ("feature", "bin", "left", "right", "missing_left"):
        np.testing.assert_array_equal(getattr(weighted, name), getattr(repeated, name))
    for extra in ({"weak-learner": "tree"}, {"relabel": "random", "samples": 300}):
        params = {"algo": "agnostic-batch", "rounds": 15, "weak-learner": "stump", **extra}
        plain = mpiboost.train(params, X, y)
        if "relabel" not in extra:
            assert mpiboost.train(params, X, y, weight=np.full(len(y), 4.0)).to_json() == plain.to_json()
        assert mpiboost.train(params, X, y, weight=w).to_json() != plain.to_json()


def test_convert_weight_column_gives_the_weight_dataset(tmp_path):
    """CSV and Parquet --weight-column: the weights become the file's weight dataset (not a feature), the model is
    the API's with weight=; a recipe takes the column where the file has it; a bad weight exits 2 naming the line."""
    import h5py
    import pandas as pd

    X, y, w = _data(n=300)
    path = tmp_path / "w.csv"
    with open(path, "w") as f:
        f.write("y,a,wt,b,c,d\n")
        for i in range(len(y)):
            f.write(f"{y[i]},{X[i, 0]:g},{w[i]:g},{X[i, 1]:g},{X[i, 2]:g},{X[i, 3]:g}\n")
    out = tmp_path / "w.h5"
    proc = run_cli(["convert", str(path), "--format", "csv", "--label-column", "y", "--weight-column", "wt",
                    "--out", str(out)])
    assert proc.returncode == 0, proc.stderr
    with h5py.File(out) as f:
        np.testing.assert_array_equal(f["weight"][()], w)
        assert [v.decode() if isinstance(v, bytes) else v for v in f.attrs["feature_names"]] == ["a", "b", "c", "d"]
    params = ["train", "--algo", "gbdt", "--rounds", "5", "--quiet", "--grad-bins", "0"]
    assert run_cli([*params, "--data", str(out), "--model", str(tmp_path / "m.h5")]).returncode == 0
    api = mpiboost.train({"algo": "gbdt", "rounds": 5, "grad-bins": 0}, X.astype(np.float32), y, weight=w)
    np.testing.assert_array_equal(Model.load(tmp_path / "m.h5").decision_function(X), api.decision_function(X))
    # a file of the same columns without wt, converted by the recipe: no weights, the same features
    with open(tmp_path / "new.csv", "w") as f:
        f.write("y,a,b,c,d\n1,0,1,2,3\n0,1,1,1,1\n")
    proc = run_cli(["convert", str(tmp_path / "new.csv"), "--format", "csv", "--recipe", str(out), "--out",
                    str(tmp_path / "new.h5")])
    assert proc.returncode == 0, proc.stderr
    with h5py.File(tmp_path / "new.h5") as f:
        assert "weight" not in f and f["X"].shape == (2, 4)
    (tmp_path / "bad.csv").write_text("y,a,wt\n1,0.5,1\n0,0.2,-2\n")
    proc = run_cli(["convert", str(tmp_path / "bad.csv"), "--format", "csv", "--label-column", "y", "--weight-column",
                    "wt", "--out", str(tmp_path / "bad.h5")])
    assert proc.returncode == 2 and "bad.csv:3: weight column 'wt': '-2'" in proc.stderr
    assert not (tmp_path / "bad.h5").exists()
    pd.DataFrame({"a": X[:, 0], "wt": w, "y": y}).to_parquet(tmp_path / "w.parquet")
    proc = run_cli(["convert", str(tmp_path / "w.parquet"), "--format", "parquet", "--label-column", "y",
                    "--weight-column", "wt", "--out", str(tmp_path / "p.h5")])
    assert proc.returncode == 0, proc.stderr
    with h5py.File(tmp_path / "p.h5") as f:
        np.testing.assert_array_equal(f["weight"][()], w)
        assert f["X"].shape == (len(y), 1)


def test_convert_libsvm_weights_file(tmp_path):
    """LIBSVM with --weights W (LightGBM's .weight file, one a line): the weight dataset, the same model as the
    API's weight=; a bad weight exits 2 naming the line, a count that is not the rows' naming both files."""
    import h5py

    X, y, w = _data(n=300)
    w = w * 0.5
    lines = [f"{int(y[i])} " + " ".join(f"{j + 1}:{X[i, j]:g}" for j in range(X.shape[1]) if X[i, j] != 0)
             for i in range(len(y))]
    (tmp_path / "d.svm").write_text("\n".join(lines) + "\n")
    (tmp_path / "d.svm.weight").write_text("\n".join(f"{v:g}" for v in w) + "\n")
    proc = run_cli(["convert", "--format", "libsvm", "--n-features", "4", str(tmp_path / "d.svm"), "--weights",
                    str(tmp_path / "d.svm.weight"), "--out", str(tmp_path / "d.h5")])
    assert proc.returncode == 0, proc.stderr
    with h5py.File(tmp_path / "d.h5") as f:
        np.testing.assert_array_equal(f["weight"][()], w)
    proc = run_cli(["train", "--algo", "gbdt", "--data", str(tmp_path / "d.h5"), "--rounds", "5", "--model",
                    str(tmp_path / "m.h5"), "--quiet"])
    assert proc.returncode == 0, proc.stderr
    api = mpiboost.train({"algo": "gbdt", "rounds": 5}, X.astype(np.float32).astype(float), y, weight=w)
    np.testing.assert_array_equal(Model.load(tmp_path / "m.h5").decision_function(X), api.decision_function(X))
    (tmp_path / "bad.weight").write_text("1\n2\n-3\n")
    proc = run_cli(["convert", "--format", "libsvm", str(tmp_path / "d.svm"), "--weights", str(tmp_path / "bad.weight"),
                    "--out", str(tmp_path / "b.h5")])
    assert proc.returncode == 2 and "bad.weight:3: '-3' is not a weight" in proc.stderr, proc.stderr
    (tmp_path / "short.weight").write_text("1\n2\n")
    proc = run_cli(["convert", "--format", "libsvm", str(tmp_path / "d.svm"), "--weights",
                    str(tmp_path / "short.weight"), "--out", str(tmp_path / "s.h5")])
    assert proc.returncode == 2 and "short.weight: 2 weights, but" in proc.stderr, proc.stderr
    assert not (tmp_path / "b.h5").exists() and not (tmp_path / "s.h5").exists()
    proc = run_cli(["convert", "--format", "libsvm", str(tmp_path / "d.svm"), "--weights",
                    str(tmp_path / "d.svm.weight"), "--out", str(tmp_path / "d.svm.weight")])
    assert proc.returncode == 2 and "the output file is the input file" in proc.stderr, proc.stderr
    assert (tmp_path / "d.svm.weight").read_text().startswith(f"{w[0]:g}")  # untouched


def test_weighted_validation_error_and_evaluate(tmp_path):
    """Validation rows with weights: the error that picks rounds is sum(w [wrong]) / sum(w), numpy's on the
    model's predictions; evaluate reports it as weighted_error beside the plain error, and weighted_auc
    (scikit-learn's roc_auc_score with sample_weight) beside the AUC; --valid-metric auc weighs too."""
    import json

    rng = np.random.default_rng(4)
    X = rng.normal(size=(1600, 4))
    y = (X[:, 0] + rng.normal(size=1600) > 0).astype(int)
    w = rng.uniform(0.1, 3.0, 400)
    write_dataset(tmp_path / "tr.h5", X[:1200].astype(np.float32), y[:1200])
    write_dataset(tmp_path / "va.h5", X[1200:].astype(np.float32), y[1200:], weight=w)
    proc = run_cli(["train", "--algo", "gbdt", "--data", str(tmp_path / "tr.h5"), "--valid", str(tmp_path / "va.h5"),
                    "--rounds", "15", "--model", str(tmp_path / "m.h5"), "--metrics", str(tmp_path / "m.jsonl"),
                    "--quiet"])
    assert proc.returncode == 0, proc.stderr
    last = [json.loads(line) for line in open(tmp_path / "m.jsonl")][-2]
    wrong = Model.load(tmp_path / "m.h5").predict(X[1200:].astype(np.float32)) != y[1200:]
    assert last["valid_error"] == pytest.approx(np.sum(w * wrong) / np.sum(w), rel=1e-12)
    assert abs(last["valid_error"] - wrong.mean()) > 1e-4  # the weights matter here
    proc = run_cli(["evaluate", "--model", str(tmp_path / "m.h5"), "--data", str(tmp_path / "va.h5")])
    report = json.loads(proc.stdout)
    assert report["weighted_error"] == pytest.approx(np.sum(w * wrong) / np.sum(w), rel=1e-12)
    assert report["error"] == pytest.approx(wrong.mean())
    from sklearn.metrics import roc_auc_score

    scores = Model.load(tmp_path / "m.h5").decision_function(X[1200:].astype(np.float32))
    assert report["weighted_auc"] == pytest.approx(roc_auc_score(y[1200:], scores, sample_weight=w), abs=1e-12)
    assert report["auc"] == pytest.approx(roc_auc_score(y[1200:], scores), abs=1e-12)
    assert abs(report["weighted_auc"] - report["auc"]) > 1e-4
    # --valid-metric auc on weighted validation rows: 1 - the weighted AUC (on 2 ranks: the same figure)
    proc = run_cli(["train", "--algo", "gbdt", "--data", str(tmp_path / "tr.h5"), "--valid", str(tmp_path / "va.h5"),
                    "--valid-metric", "auc", "--rounds", "15", "--model", str(tmp_path / "a.h5"), "--metrics",
                    str(tmp_path / "a.jsonl"), "--quiet"], n=2)
    assert proc.returncode == 0, proc.stderr
    last = [json.loads(line) for line in open(tmp_path / "a.jsonl")][-2]
    scores = Model.load(tmp_path / "a.h5").decision_function(X[1200:].astype(np.float32))
    assert last["valid_error"] == pytest.approx(1 - roc_auc_score(y[1200:], scores, sample_weight=w), abs=1e-12)
