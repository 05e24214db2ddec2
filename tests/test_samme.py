"""SAMME: against a naive reference round by round, as AdaBoost with two classes, and with the user's labels."""
import json
import math

import h5py
import numpy as np
import pytest

from mpiboost import cli
from mpiboost.boost import SAMME, AdaBoost
from mpiboost.comm import Comm, _mpi
from mpiboost.data import format as fmt
from mpiboost.data.binning import BinMapper
from mpiboost.data.load import Layout, Shard
from mpiboost.evaluate import class_report
from mpiboost.model import Model
from mpiboost.protocol import Protocol

MISSING = 255


def _shard(X, y, classes):
    n_bins = np.maximum(X.max(axis=0, where=X != MISSING, initial=0).astype(int) + 1, 1)
    bins = BinMapper([np.arange(k - 1, dtype=float) + 0.5 for k in n_bins])
    return Shard(
        cols=np.ascontiguousarray(X.T, dtype=np.uint8), y=y, domain=np.zeros(len(y), np.int32), start=0,
        n_global=len(y), n_domains=1, files=[], layout=Layout(len(y), 1), bins=bins, classes=classes,
    )


def _data(seed, n=300, d=4, K=4, noise=0.15):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 6, (n, d)).astype(np.uint8)
    X[rng.random((n, d)) < 0.05] = MISSING
    y = ((X[:, 0] > 2).astype(int) + 2 * (X[:, 1] < 2)) % K
    flip = rng.random(n) < noise
    y[flip] = rng.integers(0, K, flip.sum())
    return X, y.astype(np.int32)


def _run(cls, params, shard, rounds, seed=0):
    algo = cls(params)
    algo.setup(shard, Protocol(Comm(_mpi().COMM_SELF)), seed)
    out = []
    for t in range(1, rounds + 1):
        h = algo.select(t)
        if h is None:
            break
        algo.apply(h)
        out.append((h, algo.w.copy()))
    return algo, out


def _predict(X, feature, b, left, right, ml):
    if feature < 0:
        return np.full(X.shape[0], left)
    col = X[:, feature]
    go_left = np.where(col == MISSING, ml, col <= b)
    return np.where(go_left, left, right)


def _naive_min_error(X, y, w, n_bins, K):
    """The least weighted error over every class stump (exhaustive, exact sums)."""
    best = min(math.fsum(w[y != c]) for c in range(K))
    for j in range(X.shape[1]):
        for b in range(int(n_bins[j])):
            for ml in (False, True):
                for a in range(K):
                    for c in range(K):
                        pred = _predict(X, j, b, a, c, ml)
                        best = min(best, math.fsum(w[pred != y]))
    return best / math.fsum(w)


@pytest.mark.parametrize("seed", range(3))
def test_samme_matches_naive_reference(seed):
    K = 4
    X, y = _data(seed, K=K)
    shard = _shard(X, y, list(range(K)))
    algo, hist = _run(SAMME, {"weak_learner": "histogram"}, shard, 8)
    assert len(hist) == 8
    w = np.full(len(y), 1.0 / len(y))
    for h, w_after in hist:
        s = h.stump
        pred = _predict(X, s.feature, s.bin, s.left, s.right_value, s.missing_left)
        err = math.fsum(w[pred != y]) / math.fsum(w)
        assert err == pytest.approx(_naive_min_error(X, y, w, shard.bins.n_bins, K), rel=1e-12, abs=1e-15)
        assert h.metrics["weak_error"] == pytest.approx(err, rel=1e-12)
        e = min(max(err, 1e-12), 1 - 1 / K - 1e-12)
        alpha = math.log((1 - e) / e) + math.log(K - 1)
        assert h.coef == pytest.approx(alpha, rel=1e-12)
        w = w * np.exp(alpha * (pred != y))
        w = w / math.fsum(w)
        np.testing.assert_allclose(w_after, w, rtol=1e-12)
    # the vote: argmax of the coefficient sums per class
    scores = np.zeros((len(y), K))
    for h, _ in hist:
        s = h.stump
        scores[np.arange(len(y)), _predict(X, s.feature, s.bin, s.left, s.right_value, s.missing_left)] += h.coef
    np.testing.assert_allclose(algo.model.decision_binned(shard.cols), scores, rtol=1e-12)
    highest = K - 1 - np.argmax(scores[:, ::-1], axis=1)  # argmax, ties to the highest class
    assert np.array_equal(algo.model.predict_binned(shard.cols), highest)


@pytest.mark.parametrize("mode", ["histogram", "sample"])
def test_two_classes_is_adaboost(mode):
    """K = 2: the same stumps, coefficients 2 alpha exactly, the same weights bit for bit, the same labels."""
    rng = np.random.default_rng(5)
    X = rng.integers(0, 8, (2000, 6)).astype(np.uint8)
    X[rng.random(X.shape) < 0.03] = MISSING
    signed = np.where((X[:, 0] > 3) ^ (X[:, 2] < 2) ^ (rng.random(2000) < 0.1), 1, -1).astype(np.int8)
    params = {"weak_learner": mode, **({"n_samples": 300} if mode == "sample" else {})}
    ada, ha = _run(AdaBoost, params, _shard(X, signed, [-1, 1]), 25, seed=3)
    sam, hs = _run(SAMME, params, _shard(X, (signed == 1).astype(np.int32), [-1, 1]), 25, seed=3)
    assert len(ha) == len(hs) >= 5  # both stop in the same round (sample mode: exact error >= 1/2)
    for (h1, w1), (h2, w2) in zip(ha, hs):
        a, b = h1.stump, h2.stump
        assert (a.feature, a.bin, a.missing_left) == (b.feature, b.bin, b.missing_left)
        if a.feature >= 0:
            assert (b.left, b.right) == ((1, 0) if a.left == 1 else (0, 1))
        else:
            assert b.left == (1 if a.left == 1 else 0)
        assert h2.coef == 2 * h1.coef
        assert w1.tobytes() == w2.tobytes()
    labels_a = ada.model.predict_binned(ada.data.cols)
    labels_s = sam.model.predict_binned(sam.data.cols)
    assert np.array_equal(labels_a == 1, labels_s == 1)


def _write_label_files(tmp_path, n=3000):
    rng = np.random.default_rng(2)
    X = rng.standard_normal((n, 5)).astype(np.float32)
    pos = X[:, 0] + 0.5 * X[:, 1] + 0.4 * rng.standard_normal(n) > 0
    files = {
        "pm": (np.where(pos, 1, -1), None),
        "01": (pos.astype(np.int8), None),
        "text": (pos.astype(np.int8), ["<=50K", ">50K"]),
    }
    for key, (y, classes) in files.items():
        fmt.write_dataset(tmp_path / f"{key}.h5", X, y, classes=classes)
    return {k: tmp_path / f"{k}.h5" for k in files}, pos


def _core(path):
    doc = json.loads(Model.load(path).to_json())
    return doc["ensemble"], doc["bin_edges"]


@pytest.mark.parametrize("algo", ["adaboost", "samme", "smoothboost"])
def test_label_forms_give_one_model_and_predict_the_users_labels(tmp_path, algo):
    paths, pos = _write_label_files(tmp_path)
    expected = {"pm": np.where(pos, 1, -1), "01": pos.astype(int), "text": np.where(pos, ">50K", "<=50K")}
    cores = {}
    for key, path in paths.items():
        model = tmp_path / f"{key}-m.h5"
        # 12 rounds: SmoothBoost with the paper's step (its default 0.02 moves the weights slowly, for long runs)
        extra = ["--gamma", "0.15"] if algo == "smoothboost" else []
        assert cli.main(["train", "--algo", algo, "--data", str(path), "--rounds", "12", "--model", str(model),
                         "--quiet", *extra]) == 0
        cores[key] = _core(model)
        out = tmp_path / f"{key}.csv"
        assert cli.main(["predict", "--model", str(model), "--data", str(path), "--out", str(out)]) == 0
        got = np.array(out.read_text().split()[1:])
        assert Model.load(model).classes == {"pm": [-1, 1], "01": [0, 1], "text": ["<=50K", ">50K"]}[key]
        agree = np.mean(got == expected[key].astype(str))
        assert agree > 0.85, (key, agree)  # the labels are the file's own, and the model learnt them
        npy = tmp_path / f"{key}.npy"
        assert cli.main(["predict", "--model", str(model), "--data", str(path), "--out", str(npy)]) == 0
        assert np.array_equal(np.load(npy).astype(str), got)
    assert cores["pm"] == cores["01"] == cores["text"]


def test_multiclass_evaluate_and_scores(tmp_path, capsys):
    rng = np.random.default_rng(4)
    n, K = 3000, 3
    X = rng.standard_normal((n, 4)).astype(np.float32)
    y = np.digitize(X[:, 0] + 0.3 * rng.standard_normal(n), [-0.5, 0.5])  # 0, 1, 2
    names = ["bird", "cat", "dog"]
    fmt.write_dataset(tmp_path / "d.h5", X, y.astype(np.int8), classes=names)
    model = tmp_path / "m.h5"
    assert cli.main(["train", "--algo", "samme", "--data", str(tmp_path / "d.h5"), "--rounds", "20",
                     "--model", str(model), "--quiet"]) == 0
    capsys.readouterr()
    assert cli.main(["evaluate", "--model", str(model), "--data", str(tmp_path / "d.h5")]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["classes"] == names and report["n"] == n
    out = tmp_path / "s.npy"
    assert cli.main(["predict", "--model", str(model), "--data", str(tmp_path / "d.h5"), "--out", str(out),
                     "--scores"]) == 0
    scores = np.load(out)
    assert scores.shape == (n, K)
    pred = np.argmax(scores, axis=1)
    conf = np.zeros((K, K), dtype=int)
    np.add.at(conf, (y, pred), 1)
    assert report["confusion"]["matrix"] == conf.tolist()
    assert report["accuracy"] == pytest.approx(np.mean(pred == y), abs=1e-12) and report["accuracy"] > 0.8
    from sklearn.metrics import f1_score, recall_score

    assert report["macro_f1"] == pytest.approx(f1_score(y, pred, average="macro"), abs=1e-12)
    rec = recall_score(y, pred, average=None)
    assert [report["per_class"][c]["recall"] for c in names] == pytest.approx(list(rec), abs=1e-12)
    csv = tmp_path / "s.csv"
    assert cli.main(["predict", "--model", str(model), "--data", str(tmp_path / "d.h5"), "--out", str(csv),
                     "--scores"]) == 0
    assert csv.read_text().splitlines()[0] == "score_bird,score_cat,score_dog"
    # a binary algorithm refuses three classes, naming the algorithms that take them
    code = cli.main(["train", "--algo", "adaboost", "--data", str(tmp_path / "d.h5"), "--rounds", "2", "--model",
                     str(tmp_path / "x.h5"), "--quiet"])
    assert code == 2 and "samme" in capsys.readouterr().err and not (tmp_path / "x.h5").exists()


def test_class_report_by_hand():
    conf = np.array([[3, 1, 0], [0, 2, 0], [1, 0, 0]])
    r = class_report(conf, ["a", "b", "c"])
    assert r["n"] == 7 and r["accuracy"] == 5 / 7
    assert r["per_class"]["a"] == {"n": 4, "recall": 0.75, "precision": 0.75, "f1": 0.75}
    assert r["per_class"]["c"]["recall"] == 0.0 and r["per_class"]["c"]["precision"] is None
    assert r["macro_f1"] == pytest.approx((0.75 + 0.8 + 0.0) / 3)


def test_sample_mode_learns_and_validation_tracks_the_model(tmp_path, capsys):
    from mpiboost.data.synth import multiclass

    g = multiclass.generate(n=6000, noise=0.0, seed=1, task_seed=2, classes=5, d=8, separation=2.0)
    v = multiclass.generate(n=3000, noise=0.0, seed=2, task_seed=2, classes=5, d=8, separation=2.0)
    fmt.write_dataset(tmp_path / "t.h5", g.X, g.y)
    fmt.write_dataset(tmp_path / "v.h5", v.X, v.y)
    metrics = tmp_path / "m.jsonl"
    for mode in ("sample", "histogram"):
        assert cli.main(["train", "--algo", "samme", "--weak-learner", mode, "--data", str(tmp_path / "t.h5"),
                         "--valid", str(tmp_path / "v.h5"), "--rounds", "40", "--model", str(tmp_path / f"{mode}.h5"),
                         "--metrics", str(metrics), "--quiet"]) == 0
        rows = [json.loads(line) for line in metrics.read_text().splitlines()[:-1]]
        assert rows[-1]["valid_error"] < 0.35 and rows[-1]["train_error"] < 0.35
        capsys.readouterr()
        assert cli.main(["evaluate", "--model", str(tmp_path / f"{mode}.h5"), "--data", str(tmp_path / "v.h5")]) == 0
        report = json.loads(capsys.readouterr().out)
        assert report["error"] == pytest.approx(rows[-1]["valid_error"], abs=1e-12)
    with h5py.File(tmp_path / "histogram.h5") as f:
        assert json.loads(f.attrs["header"])["output"] == "argmax"


def test_gini_split_is_scikit_learns_samme():
    """split='gini' boosts the stumps scikit-learn's AdaBoostClassifier boosts: the same predictions."""
    from sklearn.ensemble import AdaBoostClassifier
    from sklearn.tree import DecisionTreeClassifier

    rng = np.random.default_rng(9)
    n, d, K = 1500, 5, 4
    X = rng.integers(0, 12, (n, d)).astype(np.uint8)
    y = ((X[:, 0] + X[:, 1] // 2 + rng.integers(0, 4, n)) // 5 % K).astype(np.int32)
    algo, hist = _run(SAMME, {"split": "gini", "preset": "paper"}, _shard(X, y, list(range(K))), 30)  # stumps
    assert len(hist) == 30
    sk = AdaBoostClassifier(estimator=DecisionTreeClassifier(max_depth=1), n_estimators=30, learning_rate=1.0,
                            random_state=0).fit(X.astype(float), y)
    ours = algo.model.predict_binned(algo.data.cols)
    assert np.array_equal(ours, sk.predict(X.astype(float)))
    # round by round: the same feature and threshold (bin b <-> x <= b + 0.5 here), the same coefficient
    for (h, _), tree, coef in zip(hist, sk.estimators_, sk.estimator_weights_):
        assert (h.stump.feature, h.stump.bin + 0.5) == (tree.tree_.feature[0], tree.tree_.threshold[0])
        assert h.coef == pytest.approx(coef, rel=1e-12)
    error, _ = _run(SAMME, {"preset": "paper"}, _shard(X, y, list(range(K))), 30)
    assert error.model.feature.tolist() != algo.model.feature.tolist()  # the criterion matters


def test_evaluate_counts_labels_the_model_never_saw(tmp_path, capsys):
    """A rare class missing from the training rows: its test rows are errors, listed under 'unseen'."""
    rng = np.random.default_rng(1)
    X = rng.standard_normal((600, 3)).astype(np.float32)
    y = (X[:, 0] > 0).astype(np.int8)
    fmt.write_dataset(tmp_path / "train.h5", X, y, classes=["a", "b"])
    yt = y.copy()
    yt[:7] = 2
    fmt.write_dataset(tmp_path / "test.h5", X, yt, classes=["a", "b", "zzz"])
    model = tmp_path / "m.h5"
    for algo in ("samme", "adaboost"):
        assert cli.main(["train", "--algo", algo, "--data", str(tmp_path / "train.h5"), "--rounds", "5", "--model",
                         str(model), "--valid", str(tmp_path / "test.h5"), "--quiet"]) == 0
        capsys.readouterr()
        assert cli.main(["evaluate", "--model", str(model), "--data", str(tmp_path / "test.h5")]) == 0
        report = json.loads(capsys.readouterr().out)
        assert report["unseen"] == {"zzz": 7} and report["n"] == 600
        pred = Model.load(model).predict_raw(X)
        expected = np.mean(np.where(pred == "b", 1, 0)[7:] != y[7:]) * 593 / 600 + 7 / 600
        assert report["error"] == pytest.approx(expected, abs=1e-12)
    # a file none of whose labels is a class of the model is refused
    fmt.write_dataset(tmp_path / "other.h5", X, np.full(600, 5, np.int8))
    assert cli.main(["evaluate", "--model", str(model), "--data", str(tmp_path / "other.h5")]) == 2
    assert "no row holds one of the model's classes" in capsys.readouterr().err
